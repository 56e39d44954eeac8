//! Background threads: a flush thread and compaction threads (HyperLevelDB's split, so a flush
//! never waits behind a compaction's I/O), or one shared thread that flushes first (LevelDB).
//!
//! Each job runs inside `catch_unwind`: an error or a panic poisons the database (writes fail
//! with `Poisoned`, reads go on) instead of taking the process down or losing data silently.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::db::{lock, DbInner};
use crate::error::{Error, ErrorKind, Result};

/// Starts the threads the options ask for.
pub(crate) fn start(db: &Arc<DbInner>) {
    let mut threads = lock(&db.threads);
    if db.opts.separate_flush_thread {
        let d = db.clone();
        threads.push(spawn("strata-flush", move || flush_loop(&d)));
        for i in 0..db.opts.max_background_compactions {
            let d = db.clone();
            threads.push(spawn(&format!("strata-compact-{i}"), move || {
                compaction_loop(&d, false)
            }));
        }
    } else {
        let d = db.clone();
        threads.push(spawn("strata-bg", move || compaction_loop(&d, true)));
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
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            Error::new(ErrorKind::Poisoned, format!("{what} panicked: {msg}"))
        }
    };
    db.poison(&err);
}

fn flush_step(db: &DbInner) {
    guarded(db, "flush", || crate::db::flush_one_pub(db));
    let mut st = lock(&db.state);
    st.flush_running = false;
    drop(st);
    crate::db::delete_obsolete_pub(db);
}

fn flush_loop(db: &DbInner) {
    loop {
        let mut st = lock(&db.state);
        while !db.shutting_down.load(Ordering::Acquire)
            && (st.imms.is_empty() || st.bg_error.is_some())
        {
            st = db
                .bg_cv
                .wait(st)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        if db.shutting_down.load(Ordering::Acquire) {
            return;
        }
        st.flush_running = true;
        drop(st);
        flush_step(db);
    }
}

fn compaction_loop(db: &DbInner, also_flush: bool) {
    loop {
        {
            let mut st = lock(&db.state);
            if db.shutting_down.load(Ordering::Acquire) {
                return;
            }
            if also_flush && !st.imms.is_empty() && st.bg_error.is_none() {
                st.flush_running = true;
                drop(st);
                flush_step(db);
                continue;
            }
        }
        // NB: read before picking, so progress made while we pick wakes us up below.
        let progress = lock(&db.state).progress;
        if let Some(c) = crate::db::pick_background_pub(db) {
            guarded(db, "compaction", || crate::db::run_compaction_pub(db, &c));
            crate::db::delete_obsolete_pub(db);
            continue;
        }
        let st = lock(&db.state);
        if db.shutting_down.load(Ordering::Acquire)
            || (also_flush && !st.imms.is_empty() && st.bg_error.is_none())
        {
            continue;
        }
        // Sleep until something changes (a flush, a compaction, a write switching memtables).
        let _st = db
            .bg_cv
            .wait_while(st, |s| {
                !db.shutting_down.load(Ordering::Acquire)
                    && s.progress == progress
                    && (!also_flush || s.imms.is_empty())
            })
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}
