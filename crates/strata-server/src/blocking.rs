//! Blocking list pops: BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BLMPOP.
//!
//! A client that finds every list it names empty takes a ticket and joins the queue of
//! each of its keys, then waits. Every push bumps a generation number and wakes the
//! waiters; a waiter may take from a key only while its ticket is first in that key's
//! queue, so clients blocked on one key are served in the order they blocked (Redis's
//! rule). A waiter leaves every queue when it is served, times out, or finds its client
//! gone (checked every 100 ms, so a vanished client does not hold its place).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::keyspace::{record_key, LIST, ZSET};
use crate::lists::Moved;
use crate::resp::Out;
use crate::types::WRONGTYPE;
use crate::{check_arity, lock, stripe_of, upper, Server};

#[derive(Default)]
pub(crate) struct Blocking {
    state: Mutex<State>,
    woken: Condvar,
    /// Clients waiting now (pushes skip the lock when there are none).
    waiting: AtomicUsize,
}

#[derive(Default)]
struct State {
    next_ticket: u64,
    /// Bumped by every push while anyone waits.
    generation: u64,
    queues: HashMap<Vec<u8>, VecDeque<u64>>,
    /// The connections waiting, by client id, and how CLIENT UNBLOCK ended the wait (None:
    /// not ended; Some(true): with an error).
    blocked: HashMap<u64, Option<bool>>,
}

impl Blocking {
    /// CLIENT UNBLOCK: ends client `id`'s wait, as its timeout would (or with an error);
    /// whether it was waiting.
    pub(crate) fn unblock(&self, id: u64, error: bool) -> bool {
        let mut st = lock(&self.state);
        match st.blocked.get_mut(&id) {
            Some(how @ None) => {
                *how = Some(error);
                st.generation += 1;
                drop(st);
                self.woken.notify_all();
                true
            }
            _ => false,
        }
    }

    /// Clients blocked now (INFO's `blocked_clients`).
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

impl State {
    fn leave(&mut self, ticket: u64, keys: &[Vec<u8>]) {
        for k in keys {
            if let Some(q) = self.queues.get_mut(k) {
                q.retain(|&t| t != ticket);
                if q.is_empty() {
                    self.queues.remove(k);
                }
            }
        }
    }
}

/// Whether `name` (in capitals) is a blocking command.
pub(crate) fn blocks(name: &str) -> bool {
    matches!(
        name,
        "BLPOP" | "BRPOP" | "BRPOPLPUSH" | "BLMOVE" | "BLMPOP" | "BZPOPMIN" | "BZPOPMAX" | "BZMPOP"
    )
}

/// A blocking command's timeout in seconds (fractions allowed; 0: forever).
fn timeout(arg: &[u8], out: &mut Out) -> Option<Option<Duration>> {
    match crate::parse_float(arg) {
        Some(t) if t < 0.0 => {
            out.error("ERR timeout is negative");
            None
        }
        Some(t) if t.is_finite() && t < 1e12 => Some((t > 0.0).then(|| Duration::from_secs_f64(t))),
        _ => {
            out.error("ERR timeout is not a float or out of range");
            None
        }
    }
}

impl Server {
    /// Tells blocked clients that `k` may have items now.
    pub(crate) fn wake_blocked(&self, _k: &[u8]) {
        if self.blocking.waiting.load(Ordering::Acquire) == 0 {
            return;
        }
        lock(&self.blocking.state).generation += 1;
        self.blocking.woken.notify_all();
    }

    /// The blocking list commands; false for another command.
    pub(crate) fn blocking_command(
        &self,
        name: &str,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<bool> {
        let argc = args.len();
        match name {
            "BLPOP" | "BRPOP" => {
                if !check_arity(name, argc >= 3, out) {
                    return Ok(true);
                }
                let Some(t) = timeout(&args[argc - 1], out) else {
                    return Ok(true);
                };
                let left = name == "BLPOP";
                self.block(LIST, false, &args[1..argc - 1], t, out, &mut |k, out| {
                    let _g = lock(&self.stripes[stripe_of(&record_key(k))]);
                    let m = match self.lookup_for_update(k)? {
                        None => return Ok(false),
                        Some(m) if m.kind != LIST => {
                            out.error(WRONGTYPE);
                            return Ok(true);
                        }
                        Some(m) => m,
                    };
                    let mut new = m.clone();
                    let mut b = strata::WriteBatch::new();
                    let taken = self.list_take(&mut b, k, &mut new, left, 1)?;
                    let Some(v) = taken.first() else {
                        return Ok(false);
                    };
                    self.finish(b, k, Some(&m), &new)?;
                    out.array(2);
                    out.bulk(k);
                    out.bulk(v);
                    Ok(true)
                })?;
            }
            "BRPOPLPUSH" | "BLMOVE" => {
                let want = if name == "BLMOVE" { 6 } else { 4 };
                if !check_arity(name, argc == want, out) {
                    return Ok(true);
                }
                let sides = if name == "BLMOVE" {
                    let s = |a: &[u8]| match upper(a).as_str() {
                        "LEFT" => Some(true),
                        "RIGHT" => Some(false),
                        _ => None,
                    };
                    match (s(&args[3]), s(&args[4])) {
                        (Some(a), Some(b)) => (a, b),
                        _ => {
                            out.error("ERR syntax error");
                            return Ok(true);
                        }
                    }
                } else {
                    (false, true)
                };
                let Some(t) = timeout(&args[argc - 1], out) else {
                    return Ok(true);
                };
                let to = args[2].clone();
                self.block(LIST, true, &args[1..2], t, out, &mut |k, out| {
                    match self.list_move(k, &to, sides.0, sides.1)? {
                        Moved::Nothing => return Ok(false),
                        Moved::WrongType => out.error(WRONGTYPE),
                        Moved::Item(v) => out.bulk(&v),
                    }
                    Ok(true)
                })?;
            }
            "BLMPOP" => {
                if !check_arity(name, argc >= 5, out) {
                    return Ok(true);
                }
                let Some(t) = timeout(&args[1], out) else {
                    return Ok(true);
                };
                let Some((keys, left, n)) = self.mpop_args(name, args, 2, out) else {
                    return Ok(true);
                };
                self.block(LIST, false, &keys, t, out, &mut |k, out| {
                    self.try_mpop(std::slice::from_ref(&k.to_vec()), left, n, out)
                })?;
            }
            "BZPOPMIN" | "BZPOPMAX" => {
                if !check_arity(name, argc >= 3, out) {
                    return Ok(true);
                }
                let Some(t) = timeout(&args[argc - 1], out) else {
                    return Ok(true);
                };
                let min = name == "BZPOPMIN";
                self.block(ZSET, false, &args[1..argc - 1], t, out, &mut |k, out| {
                    match self.zpop(k, min, 1)? {
                        Err(()) => out.error(WRONGTYPE),
                        Ok(items) => {
                            let Some((score, member)) = items.first() else {
                                return Ok(false);
                            };
                            out.array(3);
                            out.bulk(k);
                            out.bulk(member);
                            out.double(&crate::types::fmt_score(*score));
                        }
                    }
                    Ok(true)
                })?;
            }
            "BZMPOP" => {
                if !check_arity(name, argc >= 5, out) {
                    return Ok(true);
                }
                let Some(t) = timeout(&args[1], out) else {
                    return Ok(true);
                };
                let Some((keys, min, n)) = self.zmpop_args(name, args, 2, out) else {
                    return Ok(true);
                };
                self.block(ZSET, false, &keys, t, out, &mut |k, out| {
                    self.try_zmpop(std::slice::from_ref(&k.to_vec()), min, n, out)
                })?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Serves a blocking command over `keys` (of type `kind`): `attempt(key, out)` takes from one key and
    /// answers (true), or finds it empty (false); `moves` for BLMOVE and BRPOPLPUSH. Tried at once on the keys nobody waits
    /// for; else waits its turn until a push lets an attempt succeed, or the timeout
    /// (None: forever) passes, answering a null array then.
    fn block(
        &self,
        kind: u8,
        moves: bool,
        keys: &[Vec<u8>],
        timeout: Option<Duration>,
        out: &mut Out,
        attempt: &mut dyn FnMut(&[u8], &mut Out) -> strata::Result<bool>,
    ) -> strata::Result<()> {
        let b = &self.blocking;
        // Inside EXEC a blocking command does not wait (Redis's rule): one try, and the
        // transaction lock is already held.
        if crate::multi::in_exec() {
            for k in keys {
                if attempt(k, out)? {
                    return Ok(());
                }
            }
            // (BLMOVE and BRPOPLPUSH answer there as LMOVE does: a null bulk string.)
            if moves {
                out.null();
            } else {
                out.null_array();
            }
            return Ok(());
        }
        // Each attempt holds the transaction lock shared, as any command does. Once
        // waiting, a key that became another type does not wake the client with an error
        // (Redis keeps it blocked): only the first try answers WRONGTYPE. (The type is
        // read under the lock too: an EXEC's intermediate state is never seen.)
        let mut attempt = |k: &[u8], out: &mut Out, waiting: bool| -> strata::Result<bool> {
            let _shared = self
                .transactions
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if waiting && self.lookup(k)?.is_some_and(|m| m.kind != kind) {
                return Ok(false);
            }
            attempt(k, out)
        };
        for k in keys {
            let queued = lock(&b.state).queues.contains_key(k);
            if !queued && attempt(k, out, false)? {
                return Ok(());
            }
        }
        let deadline = timeout.map(|t| Instant::now() + t);
        let ticket = {
            let mut st = lock(&b.state);
            st.next_ticket += 1;
            let t = st.next_ticket;
            for k in keys {
                let q = st.queues.entry(k.clone()).or_default();
                if !q.contains(&t) {
                    q.push_back(t);
                }
            }
            st.blocked.insert(out.client_id, None);
            t
        };
        b.waiting.fetch_add(1, Ordering::AcqRel);
        // The replies of the requests before this one go out while it waits.
        out.flush_now();
        let client = out.client_id;
        let leave = |out_of_turn: bool| {
            let mut st = lock(&b.state);
            st.leave(ticket, keys);
            st.blocked.remove(&client);
            drop(st);
            b.waiting.fetch_sub(1, Ordering::AcqRel);
            if out_of_turn {
                // Those behind may be first now.
                b.woken.notify_all();
            }
        };
        loop {
            let (generation, unblocked) = {
                let st = lock(&b.state);
                (st.generation, st.blocked.get(&client).copied().flatten())
            };
            // CLIENT UNBLOCK is final: checked before the keys are tried again.
            if let Some(error) = unblocked {
                leave(true);
                if error {
                    out.error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
                } else {
                    out.null_array();
                }
                return Ok(());
            }
            for k in keys {
                let first = lock(&b.state)
                    .queues
                    .get(k)
                    .and_then(|q| q.front().copied())
                    == Some(ticket);
                if first {
                    let r = attempt(k, out, true);
                    if !matches!(r, Ok(false)) {
                        leave(true);
                        return r.map(|_| ());
                    }
                }
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                leave(true);
                out.null_array();
                return Ok(());
            }
            if self.shutting_down.load(Ordering::Acquire) || !out.client_alive() {
                leave(true);
                out.failed = true;
                return Ok(());
            }
            let st = lock(&b.state);
            if st.generation != generation {
                continue;
            }
            let wait = deadline.map_or(Duration::from_millis(100), |d| {
                (d - now).min(Duration::from_millis(100))
            });
            let _ = b
                .woken
                .wait_timeout(st, wait)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}
