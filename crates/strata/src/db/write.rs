//! The write path: group commit, memtable switches and write stalls.
//!
//! Writers queue up; the one at the front becomes the leader, takes the batches behind it
//! (up to a size cap, and never a sync write behind a non-sync leader), makes room (may stall
//! or switch the memtable), assigns sequences, appends one WAL record for the group, syncs if
//! any member asked, inserts into the memtable, publishes the last sequence, and wakes the
//! group. Only the leader touches the WAL and switches memtables, so neither needs more
//! locking than the queue provides.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar};
use std::time::{Duration, Instant};

use super::{lock, DbInner, State};
use crate::batch::WriteBatch;
use crate::compaction::picker;
use crate::error::{Error, ErrorKind, Result};
use crate::filename::FileNumber;
use crate::fs::WritableFile;
use crate::key::{SeqNo, ValueKind};
use crate::memtable::MemTable;
use crate::options::{WriteOptions, WriteSlowdown};
use crate::stats::{Stats, WaitCause};
use crate::wal::LogWriter;

use crate::vstore::Move;
pub(crate) use crate::vstore::Relocated;

/// How long the writer next behind the leader waits awake (a few spins, then yielding the
/// CPU) for its write or its turn before it sleeps (`commit`): a group of small puts takes
/// a few microseconds, a sleep and its wakeup about as long again on a machine whose other
/// core may be idle (measured with 2-8 writer threads: docs/design/core-engine.md, "Many
/// writers").
const SPIN: Duration = Duration::from_micros(20);
/// Largest group a leader assembles, in encoded bytes.
const MAX_GROUP_BYTES: usize = 1 << 20;
/// Entries of a write group whose memtable probes are prefetched before its WAL record is
/// written (`MemTable::prefetch`): enough to cover a batch of small puts, bounded so that a
/// large group does not evict what its first entries fetched.
const PREFETCH_ENTRIES: usize = 32;

pub(crate) struct Writer {
    /// Taken by the leader.
    batch: Option<WriteBatch>,
    sync: bool,
    disable_wal: bool,
    /// Switch the memtable even if it is not full (flush()).
    force_switch: bool,
    /// A value store's GC: the live values it moves; the leader writes a put for each key
    /// no user wrote since the GC found it live, and ends the watch unless the GC writes
    /// more of the same step (`true`). Never grouped with others.
    relocate: Option<(usize, Vec<Relocated>, bool)>,
    done: bool,
    result: Result<()>,
}

struct Slot {
    cv: Condvar,
    w: std::sync::Mutex<Writer>,
    /// Raised by a leader when it marks the slot done or hands it the lead: what a waiter
    /// spins on before it sleeps.
    signal: AtomicBool,
}

/// Writers waiting to commit, front = current leader.
#[derive(Default)]
pub(crate) struct WriteQueue {
    slots: VecDeque<Arc<Slot>>,
}

impl WriteQueue {
    /// Whether no writer is queued or leading.
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

pub(crate) fn write(db: &DbInner, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
    batch.validate()?;
    let batch = batch.resolve_expiry(&db.now, opts.ttl.or(db.opts.default_ttl))?;
    if batch.is_empty() && !opts.sync {
        return Ok(());
    }
    // (An empty batch with `sync` is a barrier: it goes through the queue, logs nothing,
    // and syncs the WAL, so every write acknowledged before it is durable when it returns.)
    if opts.disable_wal && db.values.write_separator().is_some_and(|w| w.needs_wal()) {
        return Err(Error::invalid(
            "writes without the WAL (disable_wal) are refused with hash_write_time: a value \
             the store holds for a write the WAL never logged could not be told apart after \
             a crash",
        ));
    }
    if let Some(why) = db
        .values
        .refuses(&batch, || db.super_version().version.clone())
    {
        return Err(Error::new(ErrorKind::NoSpace, why));
    }
    // Only a write that goes ahead marks the database as holding what older releases cannot
    // read (a refused one leaves it as it was).
    if batch.has_expiring() {
        db.record_expiring()?;
    }
    if batch.has_range_delete() {
        db.record_range_deletes()?;
    }
    commit(
        db,
        Writer {
            batch: Some(batch),
            sync: opts.sync,
            disable_wal: opts.disable_wal,
            force_switch: false,
            relocate: None,
            done: false,
            result: Ok(()),
        },
    )
}

/// Freezes the current memtable (if it holds anything) through the write queue.
pub(crate) fn force_switch(db: &DbInner) -> Result<()> {
    commit(
        db,
        Writer {
            batch: None,
            sync: false,
            disable_wal: true,
            force_switch: true,
            relocate: None,
            done: false,
            result: Ok(()),
        },
    )
}

thread_local! {
    /// The slot this thread's last write queued, kept for its next write: a write allocates
    /// no slot of its own unless its last is still held (a leader that has not yet let go of
    /// the group it woke this thread from).
    static SLOT: std::cell::RefCell<Option<Arc<Slot>>> = const { std::cell::RefCell::new(None) };
}

/// A slot holding `writer`: this thread's kept one when no one else holds it, else a new one.
fn slot_for(writer: Writer) -> Arc<Slot> {
    SLOT.with(|kept| {
        let mut kept = kept.borrow_mut();
        if let Some(slot) = kept.as_mut().and_then(Arc::get_mut) {
            *slot
                .w
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = writer;
            *slot.signal.get_mut() = false;
            return kept.clone().expect("a kept slot");
        }
        let slot = Arc::new(Slot {
            cv: Condvar::new(),
            w: std::sync::Mutex::new(writer),
            signal: AtomicBool::new(false),
        });
        *kept = Some(slot.clone());
        slot
    })
}

fn commit(db: &DbInner, writer: Writer) -> Result<()> {
    let relocating = writer.relocate.is_some();
    let slot = slot_for(writer);
    let mut q = lock(&db.writers);
    q.slots.push_back(slot.clone());
    if relocating {
        // A leader waiting for value space (`wait_for_value_space`) waits for this very
        // write, queued behind it: wake it so that it goes on and this write can follow.
        drop(q);
        lock(&db.state).progress += 1;
        db.done_cv.notify_all();
        q = lock(&db.writers);
    }
    // A slot at the front of the queue is not done: a leader pops the slots it wrote
    // before it marks them done (both under the queue's lock). So an uncontended write
    // leads at once, without looking at its slot.
    let mut spun = false;
    while !q.slots.front().is_some_and(|f| Arc::ptr_eq(f, &slot)) {
        if !spun && q.slots.get(1).is_some_and(|s| Arc::ptr_eq(s, &slot)) {
            // Next behind the leader: wait for it a little awake first (`SPIN`). Spins
            // first, then yields: on two cores the leader or the flush may need this one.
            spun = true;
            drop(q);
            let until = Instant::now() + SPIN;
            let mut round = 0u32;
            while !slot.signal.load(Ordering::Acquire) && Instant::now() < until {
                if round < 8 {
                    for _ in 0..32 {
                        std::hint::spin_loop();
                    }
                } else {
                    std::thread::yield_now();
                }
                round += 1;
            }
            q = lock(&db.writers);
        } else {
            q = slot
                .cv
                .wait(q)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        let w = lock(&slot.w);
        if w.done {
            return w.result.clone();
        }
    }
    // We lead. Gather a group.
    let (force, lead_sync, lead_disable_wal, alone, mut bytes) = {
        let w = lock(&slot.w);
        (
            w.force_switch,
            w.sync,
            w.disable_wal,
            w.relocate.is_some(),
            w.batch.as_ref().map_or(0, WriteBatch::encoded_len),
        )
    };
    // The writers behind the leader that join its group (no allocation when none does).
    let mut followers: Vec<Arc<Slot>> = Vec::new();
    if !force && !alone {
        let cap = if bytes <= 128 << 10 {
            bytes + (128 << 10)
        } else {
            MAX_GROUP_BYTES
        };
        for s in q.slots.iter().skip(1) {
            let w = lock(&s.w);
            if w.force_switch
                || w.relocate.is_some()
                || (w.sync && !lead_sync)
                || w.disable_wal != lead_disable_wal
            {
                break;
            }
            let n = w.batch.as_ref().map_or(0, WriteBatch::encoded_len);
            if bytes + n > cap.min(MAX_GROUP_BYTES) {
                break;
            }
            bytes += n;
            drop(w);
            followers.push(s.clone());
        }
    }
    drop(q);

    let result = if db.shutting_down.load(Ordering::Acquire) && !alone {
        // `close` has begun: it waits for the queue to drain, then syncs the WAL and
        // releases the lock; a group written after that would be acknowledged unsynced and
        // written by a process that no longer holds the database. (The value log's GC, a
        // background thread `close` has already joined, is the one writer let through.)
        Err(Error::new(ErrorKind::Closed, "database is closing"))
    } else if force {
        make_room(db, true, 0, 0).map(|_| ())
    } else {
        lead_group(db, &slot, &followers)
    };

    let mut q = lock(&db.writers);
    let front = q.slots.pop_front();
    debug_assert!(front.is_some_and(|f| Arc::ptr_eq(&f, &slot)));
    // The followers: done, under the queue's lock (a follower looks at `done` only under
    // it, after each wait). (The leader's own slot is no one's to wait on.)
    for s in &followers {
        let front = q.slots.pop_front();
        debug_assert!(front.is_some_and(|f| Arc::ptr_eq(&f, s)));
        let mut w = lock(&s.w);
        w.done = true;
        w.result = result.clone();
        s.signal.store(true, Ordering::Release);
    }
    let next = q.slots.front().cloned();
    if let Some(next) = &next {
        next.signal.store(true, Ordering::Release);
    }
    drop(q);
    // Woken once the lock is free: a waiter woken under it would only block again on the
    // lock (two switches per follower instead of one; docs/design/core-engine.md, "Many
    // writers"). No wakeup is lost: a follower not yet waiting holds or waits for the lock,
    // and finds `done` (or itself at the front) when it gets it.
    for s in &followers {
        s.cv.notify_one();
    }
    if let Some(next) = next {
        next.cv.notify_one();
    }
    result
}

/// Writes a value store GC's moves: for each key no user wrote since the GC started
/// watching (a user write that came meanwhile wins), a put of the value through the write
/// path, not synced (the caller syncs the WAL outside the queue: [`sync_wal_unqueued`]).
/// Returns the sequence after it.
pub(crate) fn write_relocated(
    db: &DbInner,
    job: usize,
    moved: Vec<Relocated>,
    more: bool,
) -> Result<SeqNo> {
    commit(
        db,
        Writer {
            batch: None,
            sync: false,
            disable_wal: false,
            force_switch: false,
            relocate: Some((job, moved, more)),
            done: false,
            result: Ok(()),
        },
    )?;
    Ok(SeqNo(db.last_sequence.load(Ordering::Acquire)))
}

/// Makes every write logged so far durable without holding the write queue through the
/// sync (a GC's moves, written unsynced, must be durable before the files they replace
/// go; synced in their own write group, they held up every user write queued behind them
/// for the sync: docs/design/core-engine.md, "A GC's moves are synced outside the write
/// queue").
/// The write-time store's values are synced first, as a leader does before a synced
/// write: every record logged so far then has its value durable, and a record logged
/// during the sync whose value is not (its WAL bytes may become durable with ours) comes
/// after the moves, so a replay that stops at it keeps them. The WAL's files are synced
/// through handles taken under the WAL's lock and used after it is let go; writers append
/// meanwhile. A failed sync poisons the database and closes the WAL, as a leader's does.
pub(crate) fn sync_wal_unqueued(db: &DbInner) -> Result<()> {
    let fail = |e: Error| {
        lock(&db.wal).writer = None;
        db.poison(&e);
        e
    };
    db.sync_values().map_err(fail)?;
    let handles = {
        let mut wal = lock(&db.wal);
        if wal.writer.is_none() {
            return Err(Error::new(
                ErrorKind::Poisoned,
                "no WAL is open (an earlier WAL error)",
            ));
        }
        match wal.sync_handles(&*db.fs, db.placement.wal_dir()) {
            Ok(Some(h)) => h,
            Ok(None) => {
                // A file system without handles: synced under the lock.
                let r = wal.sync_all(&db.stats, &*db.fs, db.placement.wal_dir());
                drop(wal);
                return r.map_err(fail);
            }
            Err(e) => {
                drop(wal);
                return Err(fail(e));
            }
        }
    };
    let mut earlier = Vec::new();
    for (n, h) in handles {
        h.sync().map_err(fail)?;
        Stats::add(&db.stats.wal_syncs, 1);
        earlier.extend(n);
    }
    if !earlier.is_empty() {
        lock(&db.wal).synced_earlier(&earlier);
    }
    Ok(())
}

/// Whether a value store GC's write waits in the queue (a leader that waited for space
/// would hold up the write that makes it).
pub(crate) fn relocation_queued(db: &DbInner) -> bool {
    lock(&db.writers)
        .slots
        .iter()
        .any(|s| lock(&s.w).relocate.is_some())
}

fn lead_group(db: &DbInner, leader: &Slot, followers: &[Arc<Slot>]) -> Result<()> {
    let (mut batch, relocating, mut sync, disable_wal) = {
        let mut w = lock(&leader.w);
        (
            w.batch.take().unwrap_or_default(),
            w.relocate.take(),
            w.sync,
            w.disable_wal,
        )
    };
    if let Some((job, moved, more)) = &relocating {
        // The GC found each moved key's newest entry pointing to the record it moves;
        // keys written since it started looking (the watch) may point elsewhere now: they
        // stay as they are. NB: the leader serialises writes: none lands between this and
        // the insert below.
        let mut watches = lock(&db.gc_watch);
        let ended;
        let watched = if *more {
            watches.get(job)
        } else {
            ended = watches.remove(job);
            super::value_gc::note_oldest_watch(db, &watches);
            ended.as_ref()
        };
        for m in moved {
            if watched.is_some_and(|w| w.contains(&m.key)) {
                continue;
            }
            match m.kind {
                Move::Pointer => {
                    batch.put_pointer(&m.key, &m.value);
                }
                Move::Value => {
                    batch.put(&m.key, &m.value);
                }
                Move::Delete => {
                    batch.delete(&m.key);
                }
            }
        }
    }
    for s in followers {
        let mut w = lock(&s.w);
        if let Some(b) = w.batch.take() {
            batch.append(&b);
        }
        sync |= w.sync;
    }
    let mem = make_room(db, false, batch.encoded_len(), batch.len())?;
    let user_bytes = if relocating.is_some() {
        0
    } else {
        batch.payload_bytes() as u64
    };
    if relocating.is_none() {
        // Any store's GC may pace writes: the value log's at write time, the hash store's
        // for the values its flushes will take.
        super::value_gc::wait_for_value_space(db);
    }
    // The group's first sequence (the leader serialises writes: nothing else takes one
    // before this group is published).
    let first = SeqNo(db.last_sequence.load(Ordering::Acquire) + 1);
    if let Some(w) = db.values.write_separator() {
        // Values to the value log (and the OS) before the WAL record that points to them.
        if let Some(separated) = w.separate(&batch, first, db)? {
            batch = separated;
        }
    }
    if db.straight_reads.load(Ordering::Relaxed) != 0 {
        db.straight_reads.store(0, Ordering::Relaxed);
    }
    if db.opts.idle_compaction_delay.is_some() {
        db.last_write_nanos
            .store(db.nanos_since_open(), Ordering::Relaxed);
    }
    batch.set_sequence(first);
    if mem.has_side() {
        // What the memtable will probe for the first entries, fetched while the WAL
        // record is written (50-byte puts into the coalescing buffer: +7 % fill,
        // docs/design/cleveldb.md "Fourth pass").
        for e in batch.iter().take(PREFETCH_ENTRIES).flatten() {
            mem.prefetch(e.kind, e.key, e.value);
        }
    }
    if !disable_wal {
        let mut wal = lock_timed(db, &db.wal, WaitCause::WalLock);
        let Some(writer) = wal.writer.as_mut() else {
            return Err(Error::new(
                ErrorKind::Poisoned,
                "no WAL is open (an earlier WAL error)",
            ));
        };
        let (before, before_mapped) = (writer.len(), writer.mapped_bytes());
        // An empty batch is not logged: a record without entries is a link record.
        let mut res = if batch.is_empty() {
            Ok(())
        } else {
            writer
                .add_record(batch.encoded())
                .and_then(|()| writer.flush())
        };
        Stats::add(&db.stats.wal_bytes, writer.len() - before);
        Stats::add(
            &db.stats.wal_mapped_bytes,
            writer.mapped_bytes() - before_mapped,
        );
        if res.is_ok() && !batch.is_empty() {
            wal.last_logged = SeqNo(first.0 + batch.len() as u64 - 1);
        }
        if res.is_ok() && sync {
            res = db
                .sync_values()
                .and_then(|()| wal.sync_all(&db.stats, &*db.fs, db.placement.wal_dir()));
        }
        if let Err(e) = res {
            // The WAL's tail is now unknown: nothing more may be appended to it.
            wal.writer = None;
            drop(wal);
            db.poison(&e);
            return Err(e);
        }
    }
    let mut seq = first;
    let mut coalesced = 0;
    for e in batch.iter() {
        let e = e?;
        coalesced += u64::from(mem.add(seq, e.kind, e.key, e.value));
        seq = seq.next();
    }
    if coalesced > 0 {
        Stats::add(&db.stats.coalesced_items, coalesced);
    }
    db.last_sequence.store(seq.0 - 1, Ordering::Release);
    Stats::add(&db.stats.user_bytes, user_bytes);
    if relocating.is_none() {
        Stats::add(&db.stats.user_writes, 1 + followers.len() as u64);
        // Noted once visible: a GC that starts watching after this point finds these
        // entries by its lookups. Whatever store is configured: a store's GC runs under any
        // (issue 31); the lock is taken only where one may run.
        if db.watch_writes {
            let mut watches = lock(&db.gc_watch);
            for watch in watches.values_mut() {
                for e in batch.iter().flatten() {
                    if e.kind == ValueKind::RangeDelete {
                        watch.insert_range(e.key, e.value);
                    } else {
                        watch.insert(e.key);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Makes sure the memtable has room (or, with `force`, freezes it if non-empty), stalling
/// while flush or compaction is behind; `bytes` and `entries` are the size of the write
/// about to happen (for pacing and `Level0::admits`). Returns the memtable to write into.
/// REQUIRES: called by the write-queue leader.
fn make_room(db: &DbInner, mut force: bool, bytes: usize, entries: usize) -> Result<Arc<MemTable>> {
    let mut allow_delay = !force;
    let mut stopped: Option<(Instant, u64)> = None;
    let mut st = lock_timed(db, &db.state, WaitCause::StateLock);
    loop {
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if db.shutting_down.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "database is closing"));
        }
        let sv = &st.super_version;
        let pressure =
            picker::WritePressure::with_pending(&sv.version, &db.opts, sv.pending_compaction_bytes);
        let l0 = pressure.l0;
        if allow_delay && pressure.slows(&db.opts) {
            // Give compaction room, once per write: pace writes to `delayed_write_rate`
            // (`Pacer`: a write waits for what the rate's credit lacks), or with a rate of 0
            // sleep 1 ms per write as LevelDB does; or sleep a microsecond per L0 run above
            // the slowdown point as HyperLevelDB does.
            drop(st);
            let rate = db.opts.delayed_write_rate;
            let sleep = match db.opts.write_slowdown {
                WriteSlowdown::PerExcessRun => {
                    let excess = l0.level.saturating_sub(l0.slowdown) as u64;
                    (excess > 0).then(|| Duration::from_micros(excess))
                }
                WriteSlowdown::Paced if rate == 0 => Some(Duration::from_millis(1)),
                WriteSlowdown::Paced => lock(&db.pacer).delay(bytes, rate, Instant::now()),
            };
            if sleep.is_some() || db.opts.write_slowdown == WriteSlowdown::Paced {
                Stats::add(&db.stats.slowdowns, 1);
            }
            if let Some(d) = sleep {
                let t = Instant::now();
                std::thread::sleep(d);
                let took = db.note_wait(WaitCause::Slowdown, t);
                Stats::add(&db.stats.stall_micros, took.as_micros() as u64);
            }
            allow_delay = false;
            st = lock_timed(db, &db.state, WaitCause::StateLock);
            continue;
        }
        // NB: an empty memtable is never frozen, however large a single entry makes it.
        // (A write-time store's files since the switch past a memtable's worth: a flush
        // seals them, and only sealed files are collected.)
        let full = st.mem.is_full(db.opts.write_buffer_size)
            || (db.values.wants_rotation() && !st.mem.is_empty());
        // L0 may have to take every unflushed memtable at once (a recovery): room for them
        // and this write, or wait (`Level0::admits`).
        // (A switch of its own, `force`, writes nothing: it is not held back.)
        let no_room = !force && !full && bytes > 0 && {
            let unflushed =
                || st.mem.memory_usage() + st.imms.iter().map(|m| m.memory_usage()).sum::<usize>();
            !sv.version.l0.admits(&unflushed, bytes, entries, &db.opts)
        };
        if !force && !full && !no_room {
            return Ok(st.mem.clone());
        }
        if force && st.mem.is_empty() {
            return Ok(st.mem.clone());
        }
        let memtables = !no_room && st.imms.len() + 1 >= db.opts.max_write_buffer_number;
        if no_room || memtables || pressure.stops(&db.opts) {
            let t = Instant::now();
            if stopped.is_none() {
                Stats::add(&db.stats.stalls, 1);
            }
            let cause = if memtables {
                WaitCause::Memtables
            } else if no_room || pressure.l0.stops() {
                WaitCause::L0
            } else {
                WaitCause::PendingBytes
            };
            db.bg_cv.notify_all();
            // Since when, and at which progress, writes have stood still.
            let (since, progress) = *stopped.get_or_insert((t, st.progress));
            // NB: woken by progress, or every `STOP_POLL`: a matrix's pages are freed when
            // the last reader or iterator of an older version lets go of it, which no
            // background job reports (a writer waiting for progress then waited forever
            // when no job was due).
            let (s, _) = db
                .done_cv
                .wait_timeout_while(st, STOP_POLL, |s| {
                    s.progress == progress
                        && s.bg_error.is_none()
                        && !db.shutting_down.load(Ordering::Acquire)
                })
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            st = s;
            if st.progress != progress {
                stopped = None;
                // One wait per stop, from its start to the progress that ended it.
                let _ = db.note_wait(cause, since);
            } else if let Some(limit) = db.opts.write_stall_limit {
                let idle = !st.flush_running && st.compactions_running == 0;
                if since.elapsed() >= limit
                    && idle
                    && st.bg_error.is_none()
                    && !db.shutting_down.load(Ordering::Acquire)
                {
                    return Err(stalled(db, &st, limit, pressure, no_room));
                }
            }
            Stats::add(&db.stats.stall_micros, t.elapsed().as_micros() as u64);
            continue;
        }
        // Switch: a new WAL, the old memtable becomes immutable.
        drop(st);
        let switch_started = Instant::now();
        let number = FileNumber(db.next_file.fetch_add(1, Ordering::SeqCst));
        if let Err(e) = switch_wal(db, number) {
            db.poison(&e);
            return Err(e);
        }
        st = lock(&db.state);
        // (The leader switches: no write is between taking its sequence and publishing it.)
        let last = db.last_sequence.load(Ordering::Acquire);
        let fresh = writable_memtable(&db.opts, number.0, last, &db.arena_pool);
        let old = std::mem::replace(&mut st.mem, Arc::new(fresh));
        // What the write-time store separated so far belongs to `old`: before its flush
        // can begin (the flush thread finds it under this lock).
        db.values.rotate(old.wal_number());
        st.imms.push_back(old);
        let v = st.super_version.version.clone();
        db.install_super_version(&mut st, v);
        db.bg_cv.notify_all();
        let _ = db.note_wait(WaitCause::Switch, switch_started);
        force = false;
    }
}

/// Locks `m`; when another thread holds it, times the wait and notes it as `cause` (an
/// uncontended lock costs no clock read).
fn lock_timed<'a, T>(
    db: &DbInner,
    m: &'a std::sync::Mutex<T>,
    cause: WaitCause,
) -> std::sync::MutexGuard<'a, T> {
    match m.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => {
            let t = Instant::now();
            let g = lock(m);
            let _ = db.note_wait(cause, t);
            g
        }
    }
}

/// How often a write stopped by the tree looks at it again when no progress wakes it.
const STOP_POLL: Duration = Duration::from_millis(10);

/// A memtable for a database's writes into WAL `wal_number`, after sequence `last` (the
/// last one written before it): its key filter, arena chunks from `pool`, and the side
/// `opts` configure (the coalescing buffer).
pub(crate) fn writable_memtable(
    opts: &crate::options::Options,
    wal_number: u64,
    last: u64,
    pool: &Arc<crate::memtable::ChunkPool>,
) -> MemTable {
    MemTable::for_writes(wal_number, opts.memtable_filter_bytes(), pool.clone())
        .with_side(crate::registry::memtable_side(opts, pool))
        .taking_writes_after(last)
}

/// The error of a write that waited `limit` with writes stopped while no background job ran
/// or finished (`Options::write_stall_limit`): the tree's shape, for the bug report.
/// REQUIRES: `state` locked.
fn stalled(
    db: &DbInner,
    st: &State,
    limit: Duration,
    p: picker::WritePressure,
    no_room: bool,
) -> Error {
    let v = &st.super_version.version;
    Error::new(
        ErrorKind::Stalled,
        format!(
            "writes stopped for {limit:?} with no flush or compaction running or finishing \
             (a scheduling bug): files per level {}, level bytes [{}], L0 pressure {} \
             (stop at {}), pending compaction bytes {} (stop at {}), immutable memtables {} \
             of {}, picker {:?}, L0 layout {:?}{}",
            v.level_summary(),
            (0..v.num_levels())
                .map(|l| v.level_bytes(l).to_string())
                .collect::<Vec<_>>()
                .join(" "),
            p.l0.level,
            p.l0.stop,
            p.pending,
            db.opts.hard_pending_compaction_bytes_limit,
            st.imms.len(),
            db.opts.max_write_buffer_number - 1,
            db.opts.compaction_picker,
            db.opts.l0_layout,
            if no_room {
                ", the write held back: L0 has no room for a recovery of the unflushed \
                 memtables with it (Level0::admits)"
            } else {
                ""
            },
        ),
    )
}

/// A writer for a new WAL `file`, its link record written: every WAL starts with one
/// (docs/format/wal.md, "Link records").
///
/// The link record is written out on its own: each write out of a WAL holds one record, so
/// that a kill in the middle of one (which may leave its head zeroed and its tail there)
/// leaves no whole record after the damage, and the reader takes it for the torn tail it is
/// (docs/format/wal.md, "What a crash leaves"). Sharing a write with the first batch, a
/// torn link record was followed by that batch, whole: "zeroed header inside the log".
pub(crate) fn start_wal(file: Box<dyn WritableFile>, last_logged: SeqNo) -> Result<LogWriter> {
    let mut writer = LogWriter::new(file);
    writer.add_record(WriteBatch::link(last_logged).encoded())?;
    writer.flush()?;
    Ok(writer)
}

/// Starts WAL `number` (its link record first). Neither its directory entry nor the old
/// WAL is synced here: the next synced write syncs the directory and the old WAL (in
/// `unsynced`) first, and recovery detects a hole a power cut may leave meanwhile through
/// the link record (docs/design/core-engine.md, "Closed WALs are synced lazily"). Syncing
/// the directory here held up the put that switched for 1-20 ms.
fn switch_wal(db: &DbInner, number: FileNumber) -> Result<()> {
    let mut wal = lock(&db.wal);
    let path = db.placement.wal_path(number);
    let file = db.fs.create_log(&path)?;
    wal.dir_unsynced = true;
    let writer = start_wal(file, wal.last_logged)?;
    if let Some(old) = wal.writer.replace(writer) {
        let old_number = wal.number;
        wal.unsynced.push((old_number, old));
    }
    wal.number = number;
    Ok(())
}

impl DbInner {
    /// Before the first expiring entry reaches the WAL: the manifest names the format
    /// feature `expiring-entries`, durably, so that no build that would read such entries
    /// as plain values opens the database from then on.
    ///
    /// # Errors
    /// I/O errors writing the manifest (the database is then poisoned).
    pub(crate) fn record_expiring(&self) -> Result<()> {
        self.record_feature(&self.expiring, crate::version::EXPIRING_FEATURE, |v| {
            v.expiring
        })
    }

    /// Names the `range-deletes` format feature in the manifest before the first range
    /// deletion is written (a build that does not know them must refuse the database
    /// rather than replay a WAL or read a version without them). Once per database.
    ///
    /// # Errors
    /// As for [`DbInner::record_expiring`].
    pub(crate) fn record_range_deletes(&self) -> Result<()> {
        self.record_feature(
            &self.range_deletes,
            crate::version::RANGE_DELETES_FEATURE,
            |v| v.range_deletes,
        )
    }

    /// Names format feature `feature` in the manifest unless `named` (cached in `done`)
    /// says the current version names it already.
    fn record_feature(
        &self,
        done: &std::sync::atomic::AtomicBool,
        feature: &str,
        named: fn(&crate::version::Version) -> bool,
    ) -> Result<()> {
        use std::sync::atomic::Ordering;
        if done.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut versions = super::lock(&self.versions);
        // (Under the versions' lock: a close records its last edit under it, after which
        // nothing may be logged.)
        if self.shutting_down.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "database is closing"));
        }
        // (A poisoned database changes nothing, its manifest included.)
        if let Some(e) = &super::lock(&self.state).bg_error {
            return Err(e.clone());
        }
        if !named(&versions.current()) {
            let edit = crate::version::VersionEdit {
                features: vec![feature.to_string()],
                ..Default::default()
            };
            let v = versions.log_and_apply(edit).inspect_err(|e| {
                self.poison(
                    &e.clone()
                        .context(format!("recording the {feature} feature")),
                );
            })?;
            let mut st = super::lock(&self.state);
            self.install_super_version(&mut st, v);
        }
        done.store(true, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(sync: bool) -> Writer {
        Writer {
            batch: None,
            sync,
            disable_wal: false,
            force_switch: false,
            relocate: None,
            done: false,
            result: Ok(()),
        }
    }

    #[test]
    fn a_thread_reuses_its_slot_only_once_no_one_else_holds_it() {
        let first = slot_for(writer(false));
        lock(&first.w).done = true;
        // A leader still holding the group it woke this thread from.
        let held = first.clone();
        drop(first);
        let second = slot_for(writer(true));
        assert!(
            !Arc::ptr_eq(&held, &second),
            "a slot another thread still holds was handed out again"
        );
        assert!(lock(&held.w).done, "the held slot was overwritten");
        drop(held);
        let kept = Arc::as_ptr(&second);
        drop(second);
        let third = slot_for(writer(false));
        assert_eq!(Arc::as_ptr(&third), kept, "the kept slot was not reused");
        let w = lock(&third.w);
        assert!(
            !w.done && !w.sync,
            "a reused slot keeps its last writer's state"
        );
    }

    /// A closed WAL synced through its handle is forgotten, so the next synced write
    /// syncs only what it wrote to; the current WAL stays, and what was synced survives a
    /// power cut.
    #[test]
    fn earlier_wals_synced_through_handles_are_not_synced_again() {
        use crate::db::WalState;
        use crate::fs::{CrashMode, Fs, MemFs};
        use crate::stats::Stats;
        use std::path::Path;

        let fs = MemFs::new();
        let dir = Path::new("/w");
        fs.create_dir_all(dir).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let mut earlier = start_wal(fs.create(&dir.join("1.log")).unwrap(), SeqNo(0)).unwrap();
        earlier.add_record(b"earlier").unwrap();
        let mut current = start_wal(fs.create(&dir.join("2.log")).unwrap(), SeqNo(1)).unwrap();
        current.add_record(b"current").unwrap();
        let mut wal = WalState {
            writer: Some(current),
            number: FileNumber(2),
            unsynced: vec![(FileNumber(1), earlier)],
            last_logged: SeqNo(1),
            synced: Default::default(),
            dir_unsynced: true,
        };
        let handles = wal
            .sync_handles(&fs, dir)
            .unwrap()
            .expect("MemFs gives handles");
        assert_eq!(handles.len(), 2);
        let mut synced = Vec::new();
        for (n, h) in handles {
            h.sync().unwrap();
            synced.extend(n);
        }
        assert_eq!(synced, vec![FileNumber(1)]);
        wal.synced_earlier(&synced);
        assert!(
            wal.unsynced.is_empty(),
            "a synced closed WAL is still listed"
        );
        assert!(wal.writer.is_some());
        let after = fs.crash_clone(CrashMode::DropUnsynced);
        for name in ["1.log", "2.log"] {
            let len = after.file_size(&dir.join(name)).unwrap();
            assert!(len > 0, "{name} lost its records");
        }
        let stats = Stats::default();
        wal.sync_all(&stats, &fs, dir).unwrap();
        assert_eq!(
            stats.snapshot().wal_syncs,
            1,
            "only the current WAL is synced"
        );
    }
}
