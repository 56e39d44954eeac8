//! Background threads and the policy that schedules them: a flush thread and compaction
//! threads (HyperLevelDB's split, so a flush never waits behind a compaction's I/O), or one
//! shared thread that flushes first (LevelDB). What runs next is decided in one place,
//! [`next_job`]; later kinds of background work (value-store GC) join it there.
//!
//! Each job runs inside `catch_unwind`: an error or a panic poisons the database (writes fail
//! with `Poisoned`, reads go on) instead of taking the process down or losing data silently.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::{lock, DbInner, State};
use crate::compaction::Compaction;
use crate::error::{Error, ErrorKind, Result};

/// Starts the threads the options ask for.
pub(crate) fn start(db: &Arc<DbInner>) {
    let mut threads = lock(&db.threads);
    if db.opts.separate_flush_thread {
        let d = db.clone();
        threads.push(spawn("strata-flush", move || work(&d, Worker::Flush)));
        for i in 0..db.opts.max_background_compactions {
            let d = db.clone();
            threads.push(spawn(&format!("strata-compact-{i}"), move || {
                work(&d, Worker::Compaction)
            }));
        }
    } else {
        let d = db.clone();
        threads.push(spawn("strata-bg", move || work(&d, Worker::Shared)));
    }
    let d = db.clone();
    threads.push(spawn("strata-delete", move || delete_work(&d)));
    if !db.read_only {
        let d = db.clone();
        threads.push(spawn("strata-sync", move || sync_work(&d)));
    }
    for i in 0..db.values.gcs().len() {
        // A thread of its own per store GC job: GC writes through the write path, which
        // may wait for the flush and compaction threads.
        let d = db.clone();
        let name = db.values.gcs()[i].thread_name();
        threads.push(spawn(name, move || gc_work(&d, i)));
    }
}

/// The sync thread: makes the manifest durable whenever a flush or background compaction
/// leaves its record's sync to it (`DbInner::sync_wanted`), so that the flush thread takes
/// the next memtable, and the compaction thread the next compaction, while the last
/// record (and a flush's tables) are being synced (docs/design/core-engine.md, "Manifest
/// syncs outside the versions' lock"). One sync covers every record queued before it. A
/// failed sync poisons the database. At shutdown it ends once nothing is wanted; `close`
/// syncs what came after.
fn sync_work(db: &DbInner) {
    let sync = lock(&db.versions).manifest_sync();
    loop {
        {
            let mut wanted = lock(&db.sync_wanted);
            while !*wanted {
                if db.shutting_down.load(Ordering::Acquire) {
                    return;
                }
                wanted = db
                    .sync_cv
                    .wait(wanted)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
            *wanted = false;
        }
        if let Err(e) = sync.wait_all() {
            db.poison(&e.context("syncing the manifest"));
        }
    }
}

/// A value store's GC thread (job `i` of `DbInner::values`): steps while the job finds
/// work; otherwise sleeps until a flush or compaction changes something (garbage is
/// counted by them), or 100 ms (a snapshot a collected file waits for may be released).
fn gc_work(db: &DbInner, i: usize) {
    let gc = &db.values.gcs()[i];
    // Deletion passes still owed after a removal: a reader that held an older version
    // during the first pass keeps the segment's file until a later one. The passes run on
    // the deletion thread, as a flush's and a compaction's do: a pass lists the database's
    // directories, and a GC stepping through hundreds of small groups made it pass after
    // every step (a sixth of the CPU with 640 groups; docs/design/core-engine.md).
    let mut owed = 0;
    loop {
        if db.shutting_down.load(Ordering::Acquire) {
            return;
        }
        let progress = lock(&db.state).progress;
        let mut changed = false;
        guarded(db, "value store GC", || {
            changed = gc.step(&crate::db::value_gc::GcJob { db, job: i })?;
            Ok(())
        });
        if changed || owed > 0 {
            lock(&db.state).deletion_due = true;
            db.bg_cv.notify_all();
            owed = if changed { 3 } else { owed - 1 };
        }
        if changed {
            continue;
        }
        let st = lock(&db.state);
        let asleep =
            |s: &mut State| !db.shutting_down.load(Ordering::Acquire) && s.progress == progress;
        drop(
            db.bg_cv
                .wait_timeout_while(st, Duration::from_millis(100), asleep),
        );
    }
}

/// After a job at most this often, the deletion thread runs a pass; requests within it wait
/// for its end and are served by one pass. A pass that deletes a table or WAL not yet named
/// writes the obsolete list first (two syncs): the `leveldb` preset's small tables make
/// about 40 jobs a second, and a list per job cost its overwrites 5 % (docs/bench/log.md, "The
/// obsolete list, before and after").
const DELETION_INTERVAL: Duration = Duration::from_millis(100);

/// The deletion thread: the obsolete-file pass after flushes and compactions
/// (`DbInner::delete_obsolete_files`), run here rather than by the job's own thread. On
/// some file systems an `unlink` waits for the freed blocks' discard (3.7 ms per 8 MiB
/// table on this project's machines, 10 s of a 53 s `matrixkv` fill on the flush thread),
/// and a flush thread busy deleting leaves writes waiting for a memtable
/// (docs/design/core-engine.md, "Obsolete files are deleted on a thread of their own").
fn delete_work(db: &DbInner) {
    loop {
        {
            let st = lock(&db.state);
            let mut st = db
                .bg_cv
                .wait_while(st, |s| {
                    !db.shutting_down.load(Ordering::Acquire) && !s.deletion_due
                })
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if db.shutting_down.load(Ordering::Acquire) {
                return;
            }
            st.deletion_due = false;
        }
        guarded(db, "deleting obsolete files", || {
            db.delete_obsolete_files();
            Ok(())
        });
        // Jobs finishing meanwhile set `deletion_due` again: one pass after the pause.
        let st = lock(&db.state);
        drop(db.bg_cv.wait_timeout_while(st, DELETION_INTERVAL, |_| {
            !db.shutting_down.load(Ordering::Acquire)
        }));
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .unwrap_or_else(|e| {
            // Without a thread the database cannot make progress; fail loudly at open.
            panic!("cannot spawn background thread {name}: {e}")
        })
}

/// Runs `job`, turning an error or a panic into poison.
fn guarded(db: &DbInner, what: &str, job: impl FnOnce() -> Result<()>) {
    let outcome = catch_unwind(AssertUnwindSafe(job));
    let err = match outcome {
        Ok(Ok(())) => return,
        Ok(Err(e)) if e.kind() == ErrorKind::Closed => return,
        Ok(Err(e)) => e.context(what),
        Err(panic) => panicked(what, &*panic),
    };
    db.poison(&err);
}

/// The error a panic in `what` poisons the database with.
fn panicked(what: &str, panic: &(dyn std::any::Any + Send)) -> Error {
    let msg = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    Error::new(ErrorKind::Poisoned, format!("{what} panicked: {msg}"))
}

/// Tests: the address of the database whose next compaction pick panics (0: none).
#[cfg(test)]
static PANIC_IN_PICK: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// What a background thread may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Worker {
    /// Flushes only (HyperLevelDB's memtable-compaction thread).
    Flush,
    /// Compactions only.
    Compaction,
    /// Both, one at a time (LevelDB's single background thread).
    Shared,
}

impl Worker {
    fn flushes(self) -> bool {
        self != Worker::Compaction
    }

    fn compacts(self) -> bool {
        self != Worker::Flush
    }
}

/// A unit of background work.
enum Job {
    Flush,
    Compaction(Compaction),
}

/// The scheduling policy: the one place that decides what a thread runs next. A waiting
/// immutable memtable goes first (a full memtable stops writes, a compaction only slows
/// them); then the most urgent compaction the picker finds, unless
/// `Options::compaction_yields_to_flush` holds compactions back while a flush is due or
/// running. Marks what it hands out as running (`flush_running`, busy inputs).
fn next_job(db: &DbInner, worker: Worker, idle: bool) -> Option<Job> {
    if worker.flushes() {
        let mut st = lock(&db.state);
        if flush_due(&st) {
            st.flush_running = true;
            return Some(Job::Flush);
        }
    }
    if worker.compacts() {
        #[cfg(test)]
        if PANIC_IN_PICK
            .compare_exchange(
                std::ptr::from_ref(db) as usize,
                0,
                std::sync::atomic::Ordering::SeqCst,
                std::sync::atomic::Ordering::SeqCst,
            )
            .is_ok()
        {
            panic!("a pick that panics (test)");
        }
        if db.opts.compaction_yields_to_flush && worker == Worker::Compaction {
            // OHDB's flush priority: no new compaction while a memtable waits for its flush.
            let st = lock(&db.state);
            if st.flush_running || flush_due(&st) {
                return None;
            }
        }
        return db.pick_compaction(idle).map(Job::Compaction);
    }
    None
}

/// Whether a flush can start. REQUIRES: `state` locked.
fn flush_due(st: &State) -> bool {
    !st.imms.is_empty() && st.bg_error.is_none() && !st.flush_running
}

/// When the database counts as idle for `Options::idle_compaction_delay`: no write and no
/// read for that long (`DbInner::quiet_for`; none for a worker that does not compact).
struct IdleWatch {
    delay: Option<Duration>,
}

impl IdleWatch {
    fn new(db: &DbInner, worker: Worker) -> Self {
        IdleWatch {
            delay: db.opts.idle_compaction_delay.filter(|_| worker.compacts()),
        }
    }

    /// Whether the database has been idle for the delay.
    fn idle(&self, db: &DbInner) -> bool {
        self.delay.is_some_and(|d| db.quiet_for() >= d)
    }

    /// How long a worker with nothing to do may sleep before it looks again: until the
    /// database could count as idle, at most a quarter of the delay (a stop of reads is
    /// noticed when looked for); without a delay, until woken.
    fn sleep(&self, db: &DbInner) -> Option<Duration> {
        let delay = self.delay?;
        let left = delay.saturating_sub(db.quiet_for());
        Some(left.min(delay / 4).max(Duration::from_millis(1)))
    }
}

/// A background thread: runs jobs the policy hands `worker` until shutdown; sleeps while
/// there is none.
fn work(db: &DbInner, worker: Worker) {
    let watch = IdleWatch::new(db, worker);
    loop {
        // NB: read before asking for a job, so progress made meanwhile wakes us below.
        let progress = lock(&db.state).progress;
        if db.shutting_down.load(Ordering::Acquire) {
            return;
        }
        // Picking runs under the same guard as the jobs: a panic there (a layout's pick
        // on a state it did not expect) ended the thread, and writes waiting for its
        // compactions stopped for ever.
        let job = catch_unwind(AssertUnwindSafe(|| next_job(db, worker, watch.idle(db))))
            .unwrap_or_else(|panic| {
                db.poison(&panicked("picking a background job", &*panic));
                None
            });
        match job {
            Some(Job::Flush) => {
                guarded(db, "flush", || db.flush_one());
                // NB: a compaction thread that yields to flushes may have looked while this
                // flush was still marked running (after its install woke it): wake it again,
                // or it sleeps until the next flush and compactions starve.
                let mut st = lock(&db.state);
                st.flush_running = false;
                st.progress += 1;
                st.deletion_due = true;
                drop(st);
                db.bg_cv.notify_all();
            }
            Some(Job::Compaction(c)) => {
                guarded(db, "compaction", || db.run_compaction(c));
                lock(&db.state).deletion_due = true;
                db.bg_cv.notify_all();
            }
            None => {
                // Sleep until something changes (a flush, a compaction, a write switching
                // memtables) or a flush this worker may take is due, or the database may
                // have gone idle.
                let mut st = lock(&db.state);
                let asleep = |s: &mut State| {
                    !db.shutting_down.load(Ordering::Acquire)
                        && s.progress == progress
                        && !(worker.flushes() && flush_due(s))
                };
                // (And a compaction thread wakes when a table's expiring entries have all
                // expired.)
                let expiry = if worker.compacts() {
                    drop(st);
                    let t = db.until_expiry();
                    st = lock(&db.state);
                    t
                } else {
                    None
                };
                let sleep = match (watch.sleep(db), expiry) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                match sleep {
                    Some(t) => drop(db.bg_cv.wait_timeout_while(st, t, asleep)),
                    None => drop(db.bg_cv.wait_while(st, asleep)),
                }
            }
        }
    }
}

#[cfg(test)]
mod pick_tests {
    use super::*;

    /// A panic while picking a job poisons the database, as one in a job does: the writes
    /// then fail instead of waiting for ever for the compaction thread the panic ended.
    #[test]
    fn a_panic_while_picking_poisons_the_database() {
        let db = Arc::new(
            crate::Db::open(
                "/db",
                crate::Options {
                    fs: Arc::new(crate::fs::MemFs::new()),
                    write_buffer_size: 64 << 10,
                    level0_file_num_compaction_trigger: 1,
                    level0_slowdown_writes_trigger: 2,
                    level0_stop_writes_trigger: 3,
                    idle_compaction_delay: None,
                    ..crate::Options::default()
                },
            )
            .unwrap(),
        );
        PANIC_IN_PICK.store(
            Arc::as_ptr(&db.inner) as usize,
            std::sync::atomic::Ordering::SeqCst,
        );
        let (tx, rx) = std::sync::mpsc::channel();
        let writer = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut outcome = Ok(());
                for i in 0..100_000u32 {
                    outcome = db.put(format!("key{i:08}"), [1u8; 100]);
                    if outcome.is_err() {
                        break;
                    }
                }
                let _ = tx.send(outcome);
            })
        };
        let outcome = rx.recv_timeout(Duration::from_secs(30));
        PANIC_IN_PICK.store(0, std::sync::atomic::Ordering::SeqCst);
        let err = match outcome {
            Ok(Err(e)) => e,
            Ok(Ok(())) => panic!("the writes never failed: the pick did not panic"),
            Err(_) => panic!("writes stopped for ever behind a compaction thread a panic ended"),
        };
        assert_eq!(err.kind(), ErrorKind::Poisoned, "{err}");
        assert!(
            err.to_string()
                .contains("picking a background job panicked"),
            "{err}"
        );
        writer.join().unwrap();
    }
}
