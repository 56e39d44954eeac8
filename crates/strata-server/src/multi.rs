//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Commands after MULTI are checked (known, right number of arguments) and queued; one
//! that fails the check is answered with its error and makes EXEC refuse the whole
//! transaction (EXECABORT), as in Redis. EXEC runs the queue holding the server's
//! transaction lock exclusively, while every other command holds it shared: no other
//! client's command runs between the transaction's first and last effect. A command's
//! runtime error is its reply in EXEC's array, and the others still run (Redis does not
//! roll back either).
//!
//! WATCH notes, per key, a counter of writes to the key's stripe (bumped by every write of
//! any key of that stripe: a write to another key of the same stripe, one in 1024, fails
//! the EXEC spuriously, which clients of WATCH retry anyway), the FLUSHALL epoch, and the
//! key's expiry. EXEC answers a null array, running nothing, when a watched key's stripe
//! was written, a FLUSHALL ran while the key existed, or the key expired since.

use std::sync::atomic::Ordering;

use crate::keyspace::{now_ms, record_key};
use crate::resp::Out;
use crate::{admin, stripe_of, upper, Server, Session};

/// One watched key.
pub(crate) struct Watched {
    stripe: usize,
    writes: u64,
    flushes: u64,
    /// Whether the key was live when watched, and its expiry then (0: none).
    live: bool,
    expire: u64,
}

thread_local! {
    /// Whether this thread is running an EXEC's queue (blocking commands do not wait,
    /// and nothing takes the transaction lock again).
    pub(crate) static IN_EXEC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub(crate) fn in_exec() -> bool {
    IN_EXEC.with(|c| c.get())
}

impl Server {
    /// Queues `args` inside MULTI, or answers the error that will make EXEC refuse.
    pub(crate) fn queue(&self, s: &mut Session, name: &str, args: &[Vec<u8>], out: &mut Out) {
        let Some(spec) = admin::index(name).map(|i| &admin::COMMANDS[i]) else {
            let shown: Vec<String> = args[1..]
                .iter()
                .take(3)
                .map(|a| format!("'{}'", String::from_utf8_lossy(a)))
                .collect();
            out.error(&format!(
                "ERR unknown command '{}', with args beginning with: {}",
                String::from_utf8_lossy(&args[0]),
                shown.join(" ")
            ));
            s.multi_error = true;
            return;
        };
        let n = args.len() as i64;
        if (spec.arity > 0 && n != spec.arity) || (spec.arity < 0 && n < -spec.arity) {
            out.error(&format!(
                "ERR wrong number of arguments for '{}' command",
                name.to_ascii_lowercase()
            ));
            s.multi_error = true;
            return;
        }
        s.queue.push(args.to_vec());
        out.simple("QUEUED");
    }

    /// WATCH key...: notes each key's state now.
    pub(crate) fn watch(
        &self,
        s: &mut Session,
        args: &[Vec<u8>],
        out: &mut Out,
    ) -> strata::Result<()> {
        if s.in_multi {
            out.error("ERR WATCH inside MULTI is not allowed");
            return Ok(());
        }
        for k in &args[1..] {
            let stripe = stripe_of(&record_key(k));
            // The counters before the read: a write between them fails the EXEC (safe).
            let writes = self.touched[stripe].load(Ordering::Acquire);
            let flushes = self.flushes.load(Ordering::Acquire);
            let m = self.lookup(k)?;
            s.watched.push(Watched {
                stripe,
                writes,
                flushes,
                live: m.is_some(),
                expire: m.map_or(0, |m| m.expire),
            });
        }
        out.simple("OK");
        Ok(())
    }

    /// EXEC: the queued commands, or EXECABORT, or a null array when a watched key changed.
    pub(crate) fn exec(&self, s: &mut Session, out: &mut Out) {
        let queue = std::mem::take(&mut s.queue);
        let watched = std::mem::take(&mut s.watched);
        let refused = std::mem::replace(&mut s.multi_error, false);
        s.in_multi = false;
        if refused {
            out.error("EXECABORT Transaction discarded because of previous errors.");
            return;
        }
        let _all = self
            .transactions
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = now_ms();
        let changed = watched.iter().any(|w| {
            self.touched[w.stripe].load(Ordering::Acquire) != w.writes
                || (w.live && self.flushes.load(Ordering::Acquire) != w.flushes)
                || (w.live && w.expire != 0 && w.expire <= now)
        });
        if changed {
            out.null_array();
            return;
        }
        out.array(queue.len());
        IN_EXEC.with(|c| c.set(true));
        for args in &queue {
            let name = upper(&args[0]);
            self.run(s, &name, args, out);
        }
        IN_EXEC.with(|c| c.set(false));
    }
}

/// The stripes of the keys `b` writes (WATCH's counters), each once.
pub(crate) fn stripes_written(b: &strata::WriteBatch) -> Vec<usize> {
    let mut v: Vec<usize> = b
        .iter()
        .flatten()
        .filter_map(|e| crate::keyspace::owner(e.key).map(|k| stripe_of(&record_key(k))))
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}
