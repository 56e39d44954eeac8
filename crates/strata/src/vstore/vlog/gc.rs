//! The value log's garbage collection (WiscKey's, the HashKV paper's vLog baseline): read
//! the tail segment, keep the records whose key's newest entry still points to them (a
//! lookup in the LSM per record), write those values again at the head through the write
//! path (a put for each key that no user wrote since the GC began looking: the write leader
//! notes the keys users write meanwhile, so a user write in between wins without a second
//! lookup per record), synced; then, once no snapshot older than that write remains, remove
//! the tail segment from the version (its file goes when no reader holds an older version).
//!
//! No journal is needed: nothing is overwritten in place. A crash before the moved values'
//! write is durable leaves the tail as it was; after it, before the removal is logged, the
//! next GC finds nothing live in the tail (the replayed write points elsewhere) and removes
//! it; after the removal, open deletes the file the manifest no longer names.
//!
//! A live value the compaction filter removes or changes is not moved: the key's deletion
//! or its new value is written instead (`GcContext::filter`).

use std::sync::Mutex;

use super::{ValueLog, ID};
use crate::error::Result;
use crate::fs::Fs;
use crate::key::SeqNo;
use crate::memtable::Lookup;
use crate::placement::Placement;
use crate::stats::Stats;
use crate::sync::lock;
use crate::version::{Version, VersionEdit};
use crate::vstore::{
    files_of, GcContext, Move, Relocated, Store, StoreEnv, ValueFile, ValueGc, ValuePointer,
};

/// The value log's GC job of one database.
pub(super) struct LogGc {
    fs: std::sync::Arc<dyn Fs>,
    placement: Placement,
    /// Whether the log is configured (its head takes appends).
    configured: bool,
    segment_size: u64,
    garbage_ratio: f64,
    capacity: Option<u64>,
    /// The segment whose live values were moved, and the sequence after the move: removed
    /// once no snapshot below that sequence remains.
    collected: Mutex<Option<(u64, SeqNo)>>,
}

impl LogGc {
    pub fn new(env: &StoreEnv) -> LogGc {
        LogGc {
            fs: env.fs.clone(),
            placement: env.placement.clone(),
            configured: ValueLog.configured(&env.opts),
            segment_size: env.opts.vlog_segment_size,
            garbage_ratio: env.opts.blob_gc_garbage_ratio,
            capacity: env.opts.vlog_capacity,
            collected: Mutex::new(None),
        }
    }

    /// Bytes the log takes: its segments (the head counted full).
    fn size(&self, v: &Version) -> u64 {
        files_of(v, ID).count() as u64 * self.segment_size
    }

    /// The records of segment `tail` whose key's newest entry points to them, and their
    /// value bytes; `None` if the database is closing.
    fn live_records(
        &self,
        ctx: &dyn GcContext,
        tail: &ValueFile,
    ) -> Result<Option<(Vec<Relocated>, u64)>> {
        let bytes = crate::fs::read_all(&*self.fs, &tail.path(&self.placement))?;
        Stats::add(&ctx.stats().value_gc_bytes_read, bytes.len() as u64);
        let mut moved = Vec::new();
        let mut moved_bytes = 0u64;
        // Up to the first record that does not decode (the tail a crash cut off the head
        // segment it then was: no recovered pointer reaches past it, see
        // docs/format/value-log.md). Looked up in key order: neighbouring lookups share the
        // upper levels of the memtables' skiplists and the tables' index blocks in cache,
        // and the moved values reach the memtable in key order too.
        let (mut records, _) = ValueLog.walk(&bytes);
        records.sort_unstable_by(|a, b| a.1.key.cmp(b.1.key));
        let mut encoded = Vec::with_capacity(16);
        for (offset, r) in records {
            if ctx.closing() {
                return Ok(None);
            }
            let from = ValuePointer {
                store: ID,
                file: tail.number,
                offset: offset as u64,
                size: r.size as u32,
            };
            encoded.clear();
            from.encode_to(&mut encoded);
            if let Some(Lookup::Pointer(now)) = ctx.newest_entry(r.key)? {
                if now == encoded {
                    if let Some(f) = Relocated::filtered(r.key, ctx.filter(r.key, r.value)?) {
                        moved.push(f);
                        continue;
                    }
                    moved_bytes += r.value.len() as u64;
                    moved.push(Relocated {
                        key: r.key.to_vec(),
                        value: r.value.to_vec(),
                        kind: Move::Value,
                    });
                }
            }
        }
        Ok(Some((moved, moved_bytes)))
    }

    /// Removes the tail segment whose live values were moved, once no snapshot may still
    /// read it. `None` if no segment waits; `Some(false)` if one waits for a snapshot.
    fn remove_collected_tail(&self, ctx: &dyn GcContext) -> Result<Option<bool>> {
        let Some((segment, moved_at)) = *lock(&self.collected) else {
            return Ok(None);
        };
        if ctx.snapshot_below(moved_at) {
            return Ok(Some(false));
        }
        ctx.apply(VersionEdit {
            deleted_value_files: vec![segment],
            ..VersionEdit::default()
        })?;
        *lock(&self.collected) = None;
        Ok(Some(true))
    }
}

impl ValueGc for LogGc {
    fn thread_name(&self) -> &'static str {
        "strata-vlog-gc"
    }

    fn store(&self) -> crate::vstore::StoreId {
        ID
    }

    /// At least two segments while the log is configured (its head takes appends and is
    /// never collected; with another store configured nothing appends and the last segment
    /// is collected too), and the garbage compactions and flushes counted in them at least
    /// `blob_gc_garbage_ratio` of their size, or the log larger than `vlog_capacity`.
    fn due(&self, v: &Version) -> bool {
        let min_segments = if self.configured { 2 } else { 1 };
        let (count, garbage) =
            files_of(v, ID).fold((0u64, 0u64), |(n, g), f| (n + 1, g + f.garbage_bytes));
        let size = count * self.segment_size;
        count >= min_segments
            && (garbage as f64 >= self.garbage_ratio * size as f64
                || self.capacity.is_some_and(|c| size > c))
    }

    fn step(&self, ctx: &dyn GcContext) -> Result<bool> {
        if let Some(done) = self.remove_collected_tail(ctx)? {
            return Ok(done);
        }
        let v = ctx.version();
        if !self.due(&v) {
            return Ok(false);
        }
        let Some(tail) = files_of(&v, ID).next().cloned() else {
            return Ok(false);
        };
        // From here on the write leader notes the keys users write (before any lookup, so
        // a write that lands after a key's lookup is never missed).
        ctx.watch();
        let (moved, moved_bytes) = match self.live_records(ctx, &tail) {
            Ok(Some(m)) => m,
            other => {
                ctx.unwatch();
                return other.map(|_| false);
            }
        };
        let at = ctx.write_relocated(moved)?;
        Stats::add(&ctx.stats().value_bytes_relocated, moved_bytes);
        Stats::add(&ctx.stats().value_gc_runs, 1);
        *lock(&self.collected) = Some((tail.number, at));
        self.remove_collected_tail(ctx)?;
        Ok(true)
    }

    fn may_pace(&self) -> bool {
        self.capacity.is_some()
    }

    /// While the log is larger than `vlog_capacity`, unless a collected segment waits for
    /// a snapshot (GC can free nothing until it is released).
    fn pace_writes(&self, v: &Version) -> bool {
        self.capacity.is_some_and(|c| self.size(v) > c) && lock(&self.collected).is_none()
    }
}
