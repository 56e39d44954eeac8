//! The value log's garbage collection (`ValueStoreKind::VLog`; WiscKey's, the HashKV
//! paper's vLog baseline): read the tail segment, keep the records whose key's newest
//! entry still points to them (a lookup in the LSM per record), write those values again
//! at the head through the write path (a put for each key that no user wrote since the GC
//! began looking: the write leader notes the keys users write meanwhile, so a user write
//! in between wins without a second lookup per record), synced; then,
//! once no snapshot older than that write remains, remove the tail segment from the
//! version (its file goes when no reader holds an older version).
//!
//! No journal is needed: nothing is overwritten in place. A crash before the moved values'
//! write is durable leaves the tail as it was; after it, before the removal is logged, the
//! next GC finds nothing live in the tail (the replayed write points elsewhere) and removes
//! it; after the removal, open deletes the file the manifest no longer names.

use std::sync::atomic::Ordering;

use super::{lock, write, DbInner};
use crate::error::Result;
use crate::memtable::Lookup;
use crate::options::{Options, ValueStoreKind};
use crate::stats::Stats;
use crate::version::{Version, VersionEdit};
use crate::vstore::{vlog, ValueFileKind, ValuePointer};

/// Whether the value log holds garbage enough to collect its tail: at least two segments
/// while the log is configured (its head takes appends and is never collected; with
/// another store configured nothing appends and the last segment is collected too), and the
/// garbage compactions and flushes counted in them at least `blob_gc_garbage_ratio` of
/// their size, or the log larger than `vlog_capacity`. Whatever store is configured now:
/// a database keeps collecting the log it has (issue 31).
pub(crate) fn vlog_gc_due(v: &Version, opts: &Options) -> bool {
    let min_segments = if opts.value_store == ValueStoreKind::VLog {
        2
    } else {
        1
    };
    let (count, garbage) = v
        .values
        .values()
        .filter(|f| f.kind == ValueFileKind::VlogSegment)
        .fold((0u64, 0u64), |(n, g), f| (n + 1, g + f.garbage_bytes));
    let size = count * opts.vlog_segment_size;
    count >= min_segments
        && (garbage as f64 >= opts.blob_gc_garbage_ratio * size as f64
            || opts.vlog_capacity.is_some_and(|c| size > c))
}

/// Bytes the value log takes: its segments (the head counted full).
fn vlog_size(v: &Version, opts: &Options) -> u64 {
    let segments = v
        .values
        .values()
        .filter(|f| f.kind == ValueFileKind::VlogSegment)
        .count() as u64;
    segments * opts.vlog_segment_size
}

/// Paces writes to the value log's GC: while the log is larger than `vlog_capacity`, the
/// write-queue leader waits for the GC to finish a step (or anything else in the
/// background to progress, at most 100 ms per write group), so the log's size stays near
/// its capacity instead of outrunning its collection. Counted as a stall. Never waits for
/// ever: if the live values alone exceed the capacity, GC moves whole segments and writes
/// go at its pace; and not at all while a collected segment waits for a snapshot (GC can
/// free nothing until it is released).
pub(crate) fn wait_for_value_space(db: &DbInner) {
    let Some(capacity) = db.opts.vlog_capacity else {
        return;
    };
    if vlog_size(&db.super_version().version, &db.opts) <= capacity
        || lock(&db.vlog_collected).is_some()
    {
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
    Stats::add(&db.stats.stall_micros, started.elapsed().as_micros() as u64);
}

impl DbInner {
    /// One step of the value log's GC. Returns whether it changed anything.
    ///
    /// # Errors
    /// I/O and corruption errors; the caller poisons the database.
    pub(crate) fn vlog_gc_step(&self) -> Result<bool> {
        if let Some(done) = self.remove_collected_tail()? {
            return Ok(done);
        }
        let v = self.super_version().version.clone();
        if !vlog_gc_due(&v, &self.opts) {
            return Ok(false);
        }
        let Some(tail) = v
            .values
            .values()
            .find(|f| f.kind == ValueFileKind::VlogSegment)
            .cloned()
        else {
            return Ok(false);
        };
        // From here on the write leader notes the keys users write (before any lookup, so
        // a write that lands after a key's lookup is never missed).
        *lock(&self.vlog_gc_watch) = Some(Default::default());
        let found = self.live_records(&tail);
        let (moved, moved_bytes) = match found {
            Ok(Some(m)) => m,
            other => {
                *lock(&self.vlog_gc_watch) = None;
                return other.map(|_| false);
            }
        };
        let at = write::write_relocated(self, moved)?;
        Stats::add(&self.stats.value_bytes_relocated, moved_bytes);
        Stats::add(&self.stats.value_gc_runs, 1);
        *lock(&self.vlog_collected) = Some((tail.number, at));
        self.remove_collected_tail()?;
        Ok(true)
    }

    /// The records of segment `tail` whose key's newest entry points to them, and their
    /// value bytes; `None` if the database is closing.
    fn live_records(
        &self,
        tail: &crate::vstore::ValueFile,
    ) -> Result<Option<(Vec<write::Relocated>, u64)>> {
        let bytes = crate::fs::read_all(&*self.fs, &tail.path(&self.placement))?;
        Stats::add(&self.stats.value_gc_bytes_read, bytes.len() as u64);
        let mut moved = Vec::new();
        let mut moved_bytes = 0u64;
        // Looked up in key order: neighbouring lookups share the upper levels of the
        // memtables' skiplists and the tables' index blocks in cache, and the moved values
        // reach the memtable in key order too.
        let mut records = vlog::records(&bytes);
        records.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        for r in records {
            if self.shutting_down.load(Ordering::Acquire) {
                return Ok(None);
            }
            let from = ValuePointer {
                store: ValuePointer::VLOG,
                file: tail.number,
                offset: r.offset,
                size: r.size,
            };
            let mut encoded = Vec::with_capacity(16);
            from.encode_to(&mut encoded);
            if let Some(Lookup::Pointer(now)) = self.newest_entry(&r.key)? {
                if now == encoded {
                    moved_bytes += r.value.len() as u64;
                    moved.push(write::Relocated {
                        key: r.key,
                        value: r.value,
                    });
                }
            }
        }
        Ok(Some((moved, moved_bytes)))
    }

    /// Removes the tail segment whose live values were moved, once no snapshot may still
    /// read it. `None` if no segment waits; `Some(false)` if one waits for a snapshot.
    fn remove_collected_tail(&self) -> Result<Option<bool>> {
        let Some((segment, moved_at)) = *lock(&self.vlog_collected) else {
            return Ok(None);
        };
        if self.snapshots.sequences().iter().any(|&s| s < moved_at) {
            return Ok(Some(false));
        }
        let mut versions = lock(&self.versions);
        let edit = VersionEdit {
            deleted_value_files: vec![segment],
            ..VersionEdit::default()
        };
        let v = versions.log_and_apply(edit)?;
        let mut st = lock(&self.state);
        self.install_super_version(&mut st, v);
        st.progress += 1;
        drop(st);
        drop(versions);
        *lock(&self.vlog_collected) = None;
        // Writes paced to the GC (`wait_for_value_space`) go on.
        self.done_cv.notify_all();
        Ok(Some(true))
    }
}
