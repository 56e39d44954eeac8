//! Flush: turns the oldest immutable memtable into L0 tables (as the L0 layout cuts it) and
//! installs them, in L0 or, where nothing overlaps, placed deeper
//! (`Options::max_mem_compaction_level`).
//!
//! Runs on the flush thread (or the shared background thread). The tables are written, then
//! the edit (new L0 files + the oldest WAL still needed) is queued for the manifest and the
//! memtable leaves; the manifest's next sync makes the tables and their directory durable
//! and then writes and syncs the record, and only then may the WAL be deleted. A crash
//! before the record is durable leaves tables no manifest names: open deletes them.

use std::sync::Arc;

use super::{lock, DbInner};
use crate::compaction_filter::{FilterReason, Filtering};
use crate::error::{Error, ErrorKind, Result};
use crate::filename::FileNumber;
use crate::fs::DurableFirst;
use crate::l0::Ingest;
use crate::memtable::MemTable;
use crate::options::{LevelSizing, Options};
use crate::placement::{FileKind, PathId, Placement};
use crate::sst::TableOptions;
use crate::stats::{Stats, MAX_LEVELS};
use crate::version::set::PendingSync;
use crate::version::{Version, VersionEdit};

/// How many manifest records (with the tables they name) may wait for their sync before a
/// flush or compaction waits for them: the tables and WALs of that many edits stay in the
/// page cache, unsynced, and the files they drop on disk, meanwhile.
const SYNCS_AHEAD: u64 = 8;

impl DbInner {
    /// Hands an installed edit's sync to the sync thread (`bg::sync_work`, which poisons
    /// the database if it fails), then waits, syncing if no other thread is, while more
    /// than `SYNCS_AHEAD` records are not durable.
    ///
    /// # Errors
    /// A failed sync (the database is then poisoned).
    pub(crate) fn sync_later(&self, pending: PendingSync) -> Result<()> {
        // The sync thread's next sync covers this record with every other queued.
        let sync = pending.manifest_sync();
        *lock(&self.sync_wanted) = true;
        self.sync_cv.notify_all();
        sync.wait_within(SYNCS_AHEAD).inspect_err(|e| {
            self.poison(&e.clone().context("syncing the manifest"));
        })
    }

    /// Flushes the oldest immutable memtable through the L0 layout of the current version.
    /// REQUIRES: the caller set `flush_running`.
    pub(crate) fn flush_one(&self) -> Result<()> {
        let Some(mem) = lock(&self.state).imms.front().cloned() else {
            return Ok(());
        };
        let base = lock(&self.versions).current();
        let layout = base.l0.clone();
        let path_id = self.flush_dir(&base, &mem);
        let mut outputs: Vec<FileNumber> = Vec::new();
        let mut new_number = || {
            let n = lock(&self.versions).new_output_number();
            outputs.push(n);
            n
        };
        // With a compaction filter, held until the result is installed (every snapshot
        // taken meanwhile reads the view it was taken on).
        let mut snaps = self.job_snapshots();
        let _filtering = snaps.hold.take();
        let env = super::filter::JobEnv {
            db: self,
            version: &base,
        };
        let filter = env.filtering(FilterReason::Flush, &snaps);
        let mut job = Ingest {
            fs: &*self.fs,
            placement: &self.placement,
            path_id,
            table_opts: TableOptions::from(&self.opts),
            snapshots: snaps.seqs.clone(),
            new_file_number: &mut new_number,
            values: self.values.flush_separator(self.opts.min_blob_size, &base),
            dropped_values: Default::default(),
            stage: true,
            staged: Vec::new(),
            // The tables are synced with the edit's record, by whichever thread syncs the
            // manifest next (docs/design/core-engine.md, "A flush's tables are synced with
            // its record").
            durable_first: Some(DurableFirst::default()),
            filter,
        };
        let mut run = || -> Result<_> {
            let ingested = layout.ingest(&mut job, &mem, base.files(0))?;
            let ranges = job.write_ranges(&mem)?;
            let value_files = job.finish_values()?;
            let dropped = job.dropped_values.take();
            Stats::add(&self.stats.flush_bytes, ingested.other_bytes);
            // The values this memtable's pointers reach, durable before the tables naming
            // them (the value log's; blob files were synced above), and the write-time files
            // holding only this memtable's values sealed; only then do the tables take their
            // names.
            self.sync_values()?;
            let sealed = self.values.seal(mem.wal_number())?;
            job.publish()?;
            for m in &ingested.tables {
                Stats::add(&self.stats.flush_bytes, m.size);
                self.tables.table(m)?.verify_new()?;
            }
            Ok((ingested, value_files, dropped, sealed, ranges))
        };
        let result = run();
        let filtered = job.filter.as_ref().map_or(0, Filtering::decided);
        // What the filter decided from may be writes not synced yet (see `compact`): made
        // durable before the record that makes its removals durable.
        let result = match result {
            Ok(t) if filtered > 0 => super::write::sync_wal_unqueued(self).map(|()| t),
            r => r,
        };
        if result.is_err() {
            job.discard_staged();
        }
        Stats::add(&self.stats.filtered_entries, filtered);
        Stats::add(
            &self.stats.expired_entries,
            job.filter.as_ref().map_or(0, |f| f.expired),
        );
        let mut first = job.durable_first.take().unwrap_or_default();
        // The edit names the next memtable's WAL as the oldest one needed (its log number),
        // and an open refuses a database whose named WAL is missing: the WAL directory's
        // entry for it, left unsynced when the WAL was started (`switch_wal`), is made
        // durable before the record (no extra sync when the tables share the directory).
        let wal_dir = self.placement.wal_dir().to_path_buf();
        if !first.dirs.contains(&wal_dir) {
            first.dirs.push(wal_dir);
        }
        let mut versions = lock(&self.versions);
        let (ingested, value_files, dropped, sealed, ranges) = match result {
            Ok(t) => t,
            Err(e) => {
                versions.release_outputs(&outputs);
                return Err(e);
            }
        };
        let mut edit = VersionEdit::default();
        let v = versions.current();
        // The layout's change applies to the layout current now: a compaction of part of
        // L0 (a matrix's column) may have changed it since the flush began.
        match ingested
            .change
            .as_ref()
            .map(|c| c.apply(&*v.l0))
            .transpose()
        {
            Ok(l) => {
                if let Some(l) = l {
                    edit.set_l0_layout(l);
                }
            }
            Err(e) => {
                versions.release_outputs(&outputs);
                return Err(e);
            }
        }
        let written: Vec<u64> = value_files.iter().map(|f| f.number).collect();
        edit.new_value_files = value_files;
        crate::vstore::reseal(&mut edit, &v, sealed);
        edit.value_garbage = dropped.into_records();
        edit.new_range_files.extend(ranges);
        let tables = ingested.tables;
        let busy_levels = lock(&self.state).busy_levels.clone();
        for m in tables {
            let range = (m.smallest_user_key(), m.largest_user_key());
            let level = flush_level(
                &v,
                &self.opts,
                &self.placement,
                &busy_levels,
                range,
                m.path_id,
            );
            Stats::add(&self.stats.flushed_to[level.min(MAX_LEVELS - 1)], 1);
            edit.new_files.push((level, m));
        }
        // Every WAL older than the next memtable's is now redundant.
        let next_wal = {
            let st = lock(&self.state);
            st.imms
                .get(1)
                .map_or(st.mem.wal_number(), |m| m.wal_number())
        };
        edit.log_number = Some(FileNumber(next_wal));
        edit.last_sequence = Some(self.visible_sequence());
        // The memtable leaves as soon as the edit's record is written, before the manifest
        // is synced: a writer stopped for a memtable's place goes on then. (The sync under
        // the compaction's writeback took up to 135 ms, while `matrixkv`'s 8 MiB memtable
        // fills in 30 ms: docs/design/core-engine.md, "A flush's memtable leaves before its
        // manifest sync".) The sync itself runs after the versions' lock is let go, so the
        // next flush need not wait for it ("Manifest syncs outside the versions' lock");
        // nothing the edit drops (WALs below its log number) is deleted before it is
        // durable: the obsolete-file pass waits for the manifest to be.
        let hand_over = |v: &Arc<Version>| {
            let mut st = lock(&self.state);
            let popped = st.imms.pop_front();
            debug_assert!(popped.is_some_and(|p| Arc::ptr_eq(&p, &mem)));
            self.install_super_version(&mut st, v.clone());
            st.progress += 1;
            drop(st);
            self.done_cv.notify_all();
        };
        // A filter's removals and changes reach readers only once their record is durable:
        // a replayed WAL is not filtered, so a power cut before it would bring back what a
        // reader saw removed while a later synced write survives. The memtable is handed
        // over after the sync then, with the versions' lock held meanwhile so that no later
        // version shows the result first (docs/design/compaction-filters.md, "Durability of
        // a filter's result").
        let applied = if filtered > 0 {
            versions
                .log_and_apply_unsynced(edit, first, |_| ())
                .and_then(|(v, pending)| {
                    pending.wait()?;
                    hand_over(&v);
                    Ok(None)
                })
        } else {
            versions
                .log_and_apply_unsynced(edit, first, hand_over)
                .map(|(_, pending)| Some(pending))
        };
        versions.release_outputs(&outputs);
        let pending = match applied {
            Ok(pending) => pending,
            Err(e) => {
                // Before the lock is let go: a poisoned database deletes nothing.
                self.poison(&e.clone().context("flush"));
                return Err(e);
            }
        };
        drop(versions);
        // The sync thread syncs the tables and the record: this thread may take the next
        // memtable meanwhile, whose record a sync then covers too.
        if let Some(pending) = pending {
            self.sync_later(pending)?;
        }
        // WALs older than `next_wal` are obsolete, but stay among the WALs a synced write
        // syncs first until the obsolete list names them (`delete_obsolete_files`, which
        // drops them): a repair, which has no manifest, reads a WAL the list does not name,
        // and one torn before a later WAL's synced writes would make it stop short of them.
        Stats::add(&self.stats.flushes, 1);
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
        self.warm_values(&written);
        Ok(())
    }

    /// The directory a flush of `mem` writes its tables in. L0's, unless levels >= 1 live
    /// in another directory (`Options::level_dir`) and the memtable's key range would be
    /// placed below L0 in `base` (`Options::max_mem_compaction_level`): then the levels'
    /// directory, so that the placement is not refused for crossing directories. The level
    /// is chosen again at install from the version then; should it have become L0 (a
    /// compaction wrote into the range meanwhile), the tables join L0 from the levels'
    /// directory, which the manifest records per table.
    fn flush_dir(&self, base: &Version, mem: &Arc<MemTable>) -> PathId {
        let l0 = self.placement.path_id(FileKind::L0Table);
        let levels = self.placement.path_id(FileKind::table(1));
        if levels == l0 || self.opts.max_mem_compaction_level == 0 {
            return l0;
        }
        let Some((lo, hi)) = mem.user_key_range() else {
            return l0;
        };
        let busy_levels = lock(&self.state).busy_levels.clone();
        let range = (lo.as_slice(), hi.as_slice());
        if flush_level(
            base,
            &self.opts,
            &self.placement,
            &busy_levels,
            range,
            levels,
        ) > 0
        {
            levels
        } else {
            l0
        }
    }
}

/// The level a flushed table of user keys `range`, written under `path_id`, goes to: L0,
/// or with `Options::max_mem_compaction_level` the deepest level down to it such that the
/// range overlaps nothing in L0 or on the way, the level below the chosen one holds at most
/// `max_grandparent_overlap_factor` x `target_file_size_base` bytes of the range, no
/// running compaction reads or writes the level, and the level's tables live where the
/// table was written. LevelDB's and HyperLevelDB's `PickLevelForMemTableOutput`.
fn flush_level(
    v: &Version,
    opts: &Options,
    placement: &Placement,
    busy_levels: &[usize],
    range: (&[u8], &[u8]),
    path_id: PathId,
) -> usize {
    // With dynamic level sizing the levels above the base level stay empty: no placement.
    if opts.max_mem_compaction_level == 0 || opts.level_sizing == LevelSizing::Dynamic {
        return 0;
    }
    let (lo, hi) = (Some(range.0), Some(range.1));
    if !v.manual_inputs(0, lo, hi).is_empty() {
        return 0;
    }
    let limit = opts.max_grandparent_overlap_factor * opts.target_file_size_base;
    let mut level = 0;
    while level < opts.max_mem_compaction_level && level + 1 < v.num_levels() {
        let next = level + 1;
        if busy_levels.get(next).copied().unwrap_or(0) > 0
            || placement.path_id(FileKind::table(next)) != path_id
            || !v.overlapping(next, lo, hi).is_empty()
        {
            break;
        }
        if v.overlapping_bytes(next + 1, lo, hi) > limit {
            break;
        }
        level = next;
    }
    level
}

/// `Db::flush`: freeze the memtable, then wait until no immutable memtable is left.
pub(crate) fn flush_and_wait(db: &DbInner) -> Result<()> {
    super::write::force_switch(db)?;
    let mut st = lock(&db.state);
    loop {
        if let Some(e) = &st.bg_error {
            return Err(e.clone());
        }
        if st.imms.is_empty() {
            // A flush hands its memtable back before its manifest record is synced: wait
            // for the manifest to be durable up to every record appended so far (a failed
            // sync fails here, and poisons the database in the flush).
            drop(st);
            let sync = lock(&db.versions).manifest_sync();
            sync.wait_all()?;
            st = lock(&db.state);
            return match &st.bg_error {
                Some(e) => Err(e.clone()),
                None => Ok(()),
            };
        }
        if db.shutting_down.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "database is closing"));
        }
        db.bg_cv.notify_all();
        st = db
            .done_cv
            .wait(st)
            .unwrap_or_else(std::sync::PoisonError::into_inner);
    }
}
