//! What a value store's GC job reaches of the database ([`GcContext`], implemented here by
//! [`GcJob`] so that `vstore` imports nothing from `db`), and the pacing of writes to it. The jobs
//! themselves live with their stores (the value log's: `vstore/vlog/gc.rs`); `bg` runs
//! each on a thread of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{lock, write, DbInner};
use crate::error::Result;
use crate::key::SeqNo;
use crate::memtable::Lookup;
use crate::stats::Stats;
use crate::version::{Version, VersionEdit};
use crate::vstore::{GcContext, GcView, NewValueFiles, Relocated};

/// GC job `job` (its index in `DbInner::values.gcs()`) of a database: what the job reaches.
pub(crate) struct GcJob<'a> {
    pub db: &'a DbInner,
    pub job: usize,
}

impl GcContext for GcJob<'_> {
    fn version(&self) -> Arc<Version> {
        self.db.super_version().version.clone()
    }

    fn closing(&self) -> bool {
        self.db.shutting_down.load(Ordering::Acquire)
    }

    fn stats(&self) -> &Stats {
        &self.db.stats
    }

    fn watch(&self) {
        lock(&self.db.gc_watch).insert(self.job, Default::default());
    }

    fn unwatch(&self) {
        lock(&self.db.gc_watch).remove(&self.job);
    }

    fn newest_entry(&self, user_key: &[u8]) -> Result<Option<Lookup>> {
        self.db.newest_entry(user_key)
    }

    fn view(&self) -> Box<dyn GcView + '_> {
        Box::new(self.db.super_version())
    }

    fn write_relocated(&self, moved: Vec<Relocated>) -> Result<SeqNo> {
        write::write_relocated(self.db, self.job, moved)
    }

    fn files(&self) -> &dyn NewValueFiles {
        self.db
    }

    fn snapshot_below(&self, seq: SeqNo) -> bool {
        self.db.snapshots.sequences().iter().any(|&s| s < seq)
    }

    fn apply(&self, edit: VersionEdit) -> Result<()> {
        let db = self.db;
        let mut versions = lock(&db.versions);
        let v = versions.log_and_apply(edit)?;
        let mut st = lock(&db.state);
        db.install_super_version(&mut st, v);
        st.progress += 1;
        drop(st);
        drop(versions);
        // Writes paced to the GC (`wait_for_value_space`) go on.
        db.done_cv.notify_all();
        Ok(())
    }
}

impl GcView for Arc<super::SuperVersion> {
    fn version(&self) -> &Arc<Version> {
        &self.version
    }

    fn memtable_entry(&self, user_key: &[u8]) -> Option<Lookup> {
        std::iter::once(&self.mem)
            .chain(self.imms.iter())
            .find_map(|m| m.get(user_key, SeqNo::MAX))
    }
}

/// Paces writes to the value stores' GC: while a store's GC asks for it (the value log
/// larger than `vlog_capacity`, the hash store's reserve used up), the write-queue leader
/// waits for the GC to finish a step (or anything else in the background to progress, at
/// most 100 ms per write group), so
/// the store's size stays near its capacity instead of outrunning its collection. Counted
/// as a stall. Never waits for ever: if the live values alone exceed the capacity, GC
/// moves whole files and writes go at its pace; and not at all while GC can free nothing
/// (the store's `pace_writes` says so while a collected file waits for a snapshot).
pub(crate) fn wait_for_value_space(db: &DbInner) {
    if !db.values.pace_writes(|| db.super_version().version.clone()) {
        return;
    }
    let started = std::time::Instant::now();
    // The progress count is read before the queue is looked at: a GC write queued after
    // the look raises it (`write::commit`), so this wait cannot miss it.
    let progress = lock(&db.state).progress;
    if write::relocation_queued(db) {
        return;
    }
    let st = lock(&db.state);
    let asleep =
        |s: &mut super::State| !db.shutting_down.load(Ordering::Acquire) && s.progress == progress;
    drop(
        db.done_cv
            .wait_timeout_while(st, std::time::Duration::from_millis(100), asleep),
    );
    Stats::add(&db.stats.stalls, 1);
    let took = db.note_wait(crate::stats::WaitCause::ValueSpace, started);
    Stats::add(&db.stats.stall_micros, took.as_micros() as u64);
}
