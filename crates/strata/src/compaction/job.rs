//! [`CompactionJob`]: merges a [`Compaction`]'s inputs into new tables of the output level.
//!
//! Runs on a background thread without holding any database lock. Versions are dropped by
//! [`VersionFilter`]: within each snapshot stripe only the newest version of a key survives,
//! and a tombstone visible to every snapshot is dropped when no deeper level can hold the key.
//! Output files are cut by size and by grandparent overlap, never between two versions of one
//! user key (so a key's versions are never split across files of one level).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use super::picker::Compaction;
use crate::compaction_filter::{Filtering, Outcome};
use crate::error::{Error, Result};
use crate::file_meta::FileMeta;
use crate::filename::FileNumber;
use crate::fs::Fs;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, SeqNo, ValueKind};
use crate::options::TableCut;
use crate::placement::{FileKind, PathId, Placement};
use crate::sst::{TableBuilder, TableOptions, UnsyncedTable};
use crate::table_cache::TableCache;
use crate::version::{level_iterator, Version};
use crate::version_filter::{Verdict, VersionFilter};
use crate::vstore::{
    DroppedValues, FlushSeparator, OldestValueFile, ValueFile, ValuePointer, ValueStore,
};

/// What a compaction produced.
#[derive(Debug, Default)]
pub struct CompactionOutput {
    /// New tables, in key order.
    pub files: Vec<FileMeta>,
    /// Bytes read from inputs.
    pub bytes_read: u64,
    /// Bytes written to outputs.
    pub bytes_written: u64,
    /// Entries dropped as hidden or obsolete.
    pub dropped: u64,
    /// The value pointers among them, and those whose values moved, per value file: the
    /// value store's garbage.
    pub dropped_values: DroppedValues,
    /// Value files written for the values moved out of collected files.
    pub new_value_files: Vec<ValueFile>,
    /// Bytes of values moved.
    pub relocated_bytes: u64,
    /// Entries the compaction filter removed or changed.
    pub filtered: u64,
    /// Entries removed as expired (docs/design/ttl.md).
    pub expired: u64,
}

/// Moves the live values a compaction meets in value files being collected into a new
/// value file (`Options::blob_gc_garbage_ratio`).
pub struct Relocate<'a> {
    /// The files whose values move.
    pub from: BTreeSet<u64>,
    /// Reads them.
    pub store: &'a dyn ValueStore,
    /// Writes the moved values.
    pub writer: Box<dyn FlushSeparator>,
}

/// Everything a compaction needs, borrowed from the database.
pub struct CompactionJob<'a> {
    /// What to compact.
    pub compaction: &'a Compaction,
    /// The version the compaction was picked from.
    pub version: &'a Version,
    /// Live snapshots.
    pub snapshots: Vec<SeqNo>,
    /// Opens input tables.
    pub tables: &'a Arc<TableCache>,
    /// Writes outputs.
    pub fs: &'a dyn Fs,
    /// Where outputs go.
    pub placement: &'a Placement,
    /// Table shape.
    pub table_opts: TableOptions,
    /// Where outputs are cut.
    pub cut: TableCut,
    /// (smallest, largest) output table: always cut at the largest; with
    /// `TableCut::GrandparentBoundaries`, at a grandparent boundary from the smallest on.
    pub table_sizes: (u64, u64),
    /// Grandparent overlap after which an output is cut (`TableCut::GrandparentOverlap`).
    pub max_grandparent_overlap: u64,
    /// Hands out (and registers as pending) output file numbers.
    pub new_file_number: &'a mut dyn FnMut() -> FileNumber,
    /// Checked between entries; true aborts the job (database closing).
    pub should_stop: &'a dyn Fn() -> bool,
    /// Value files being collected, if any.
    pub relocate: Option<Relocate<'a>>,
    /// The compaction filter, if one is configured.
    pub filter: Option<Filtering<'a>>,
}

/// Where a compaction stands among its grandparents, for cutting its outputs.
struct Cuts<'c> {
    /// Grandparent boundaries for `TableCut::GrandparentBoundaries`: the first and last
    /// user key of each grandparent overlapping the upper level's inputs (HyperLevelDB's
    /// `SetupOtherInputs`), in order; `bound_index` is the first not yet passed.
    bounds: Vec<&'c [u8]>,
    bound_index: usize,
    /// The first grandparent not passed, and the bytes of those passed since the last cut.
    gp_index: usize,
    gp_overlap: u64,
    seen_key: bool,
    last_user_key: Vec<u8>,
}

impl<'c> Cuts<'c> {
    fn new(c: &'c Compaction, cut: TableCut, upper: Option<&(Vec<u8>, Vec<u8>)>) -> Self {
        let bounds = match (cut, upper) {
            (TableCut::GrandparentBoundaries, Some((lo, hi))) => c
                .grandparents
                .iter()
                .filter(|f| f.overlaps(Some(lo), Some(hi)))
                .flat_map(|f| [f.smallest_user_key(), f.largest_user_key()])
                .collect(),
            _ => Vec::new(),
        };
        Cuts {
            bounds,
            bound_index: 0,
            gp_index: 0,
            gp_overlap: 0,
            seen_key: false,
            last_user_key: Vec::new(),
        }
    }

    /// At entry `ikey` of user key `user_key`: `None` if the user key is the previous
    /// entry's; otherwise the grandparents ending before it are passed (their bytes
    /// counted after the first key), and whether a grandparent boundary lies between the
    /// previous key and this one.
    fn at_key(&mut self, c: &Compaction, ikey: &[u8], user_key: &[u8]) -> Option<bool> {
        if self.seen_key && user_key == self.last_user_key.as_slice() {
            return None;
        }
        while self.gp_index < c.grandparents.len()
            && key::compare(ikey, &c.grandparents[self.gp_index].largest)
                == std::cmp::Ordering::Greater
        {
            if self.seen_key {
                self.gp_overlap += c.grandparents[self.gp_index].size;
            }
            self.gp_index += 1;
        }
        // A boundary b with previous key <= b < this key lies between them (those below the
        // previous key were passed at it).
        let mut crossed = false;
        while self.bound_index < self.bounds.len() && self.bounds[self.bound_index] < user_key {
            crossed |= self.seen_key;
            self.bound_index += 1;
        }
        self.seen_key = true;
        self.last_user_key.clear();
        self.last_user_key.extend_from_slice(user_key);
        Some(crossed)
    }
}

struct Output {
    builder: TableBuilder,
    number: FileNumber,
    path: PathBuf,
    oldest: OldestValueFile,
}

impl CompactionJob<'_> {
    /// Runs the merge. On error, outputs written so far are left for obsolete-file cleanup.
    ///
    /// # Errors
    /// I/O or corruption errors from inputs or outputs.
    pub fn run(&mut self) -> Result<CompactionOutput> {
        let c = self.compaction;
        let mut input = self.merged_inputs()?;
        let mut out = CompactionOutput {
            bytes_read: c.input_bytes(),
            ..Default::default()
        };
        // The range tombstones flushed by the time the compaction was picked (those
        // flushed later hide these inputs from readers all the same; a later compaction
        // drops what they cover).
        let mut filter = VersionFilter::new(self.snapshots.clone())
            .with_ranges(self.version.ranges.pieces().clone());
        let path_id = self.placement.path_id(FileKind::table(c.output_level));
        let mut current: Option<Output> = None;
        let upper = c.upper_range();
        let mut cuts = Cuts::new(c, self.cut, upper.as_ref());
        let mut moved = Vec::new();
        let mut changed: Vec<u8>;
        let mut changed_key = Vec::new();
        let mut syncer = TableSyncer::default();
        input.seek_to_first();
        while input.valid() {
            if (self.should_stop)() {
                return Err(Error::new(
                    crate::ErrorKind::Closed,
                    "compaction stopped: database closing",
                ));
            }
            let ikey = input.key();
            let p = key::parse(ikey).ok_or_else(|| {
                Error::corrupt(format!(
                    "compaction met a malformed key of {} bytes",
                    ikey.len()
                ))
            })?;
            if let Some(crossed) = cuts.at_key(c, ikey, p.user_key) {
                // Cut only between user keys.
                let (min_size, max_size) = self.table_sizes;
                let cut = current.as_ref().is_some_and(|o| {
                    let size = o.builder.estimated_size();
                    size >= max_size
                        || match self.cut {
                            TableCut::GrandparentOverlap => {
                                cuts.gp_overlap > self.max_grandparent_overlap
                            }
                            TableCut::GrandparentBoundaries => size >= min_size && crossed,
                            TableCut::Size => false,
                        }
                });
                if cut {
                    cuts.gp_overlap = 0;
                    self.finish_output(current.take(), path_id, &mut out, Some(&mut syncer))?;
                }
            }
            let verdict = filter.judge(p.user_key, p.seq, p.kind, || {
                !self.version.key_may_exist_below(c.output_level, p.user_key)
            });
            if verdict != Verdict::Keep {
                out.dropped += 1;
                if p.kind == ValueKind::Pointer {
                    out.dropped_values.add(input.value());
                }
                input.next();
                continue;
            }
            // The compaction filter's word: a removed entry leaves a tombstone, unless no
            // snapshot needs older versions and nothing below can hold the key (then the
            // key is gone, as an obsolete tombstone is); a changed one a put of its value.
            let (mut ikey, mut kind, mut value) = (ikey, p.kind, input.value());
            let outcome = match self.filter.as_mut() {
                Some(f) => f.decide(p.user_key, p.seq, p.kind, value)?,
                None => Outcome::Keep,
            };
            if outcome != Outcome::Keep {
                if outcome == Outcome::Expire {
                    out.expired += 1;
                } else {
                    out.filtered += 1;
                }
                if p.kind == ValueKind::Pointer {
                    out.dropped_values.add(value);
                }
                (kind, value) = match outcome {
                    Outcome::Change(k, v) => {
                        changed = v;
                        (k, changed.as_slice())
                    }
                    _ => (ValueKind::Delete, &[][..]),
                };
                if kind == ValueKind::Delete
                    && !self.filter.as_ref().is_some_and(Filtering::has_snapshots)
                    && !self.version.key_may_exist_below(c.output_level, p.user_key)
                {
                    out.dropped += 1;
                    input.next();
                    continue;
                }
                changed_key.clear();
                key::append_internal_key(&mut changed_key, p.user_key, p.seq, kind);
                ikey = &changed_key;
            }
            if current.is_none() {
                let number = (self.new_file_number)();
                let path = self.placement.table_path(number, path_id);
                let file = self.fs.create(&path)?;
                current = Some(Output {
                    builder: TableBuilder::new(file, path.clone(), self.table_opts),
                    number,
                    path,
                    oldest: OldestValueFile::default(),
                });
            }
            if kind == ValueKind::Pointer && self.relocated(&p, value, &mut moved, &mut out)? {
                value = &moved;
            }
            if let Some(o) = current.as_mut() {
                o.oldest.note_entry(kind, value);
                o.builder.add(ikey, value)?;
            }
            input.next();
        }
        input.status()?;
        // The last table is synced here: the job waits for it anyway.
        self.finish_output(current.take(), path_id, &mut out, None)?;
        syncer.wait()?;
        if let Some(r) = self.relocate.as_mut() {
            // Before the tables' directory sync: both precede the edit.
            out.new_value_files = r.writer.finish()?;
        }
        if !out.files.is_empty() {
            self.fs.sync_dir(self.placement.dir(path_id))?;
        }
        Ok(out)
    }

    /// The inputs merged: L0's as its layout reads them (or the upper level's), then the
    /// next level's.
    fn merged_inputs(&self) -> Result<MergingIterator> {
        let c = self.compaction;
        let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
        if c.level == 0 {
            self.version.l0.input_iterators(
                &c.inputs,
                c.l0_part.as_ref(),
                self.tables,
                &mut children,
            )?;
        } else {
            children.push(Box::new(level_iterator(
                Arc::new(c.inputs.clone()),
                self.tables.clone(),
            )));
        }
        if !c.next_inputs.is_empty() {
            children.push(Box::new(level_iterator(
                Arc::new(c.next_inputs.clone()),
                self.tables.clone(),
            )));
        }
        Ok(MergingIterator::new(children))
    }

    /// Whether the pointer `value` of entry `p` goes into a value file being collected: its
    /// value is then written again through the collecting store, and the new pointer put in
    /// `moved`.
    fn relocated(
        &mut self,
        p: &key::ParsedKey<'_>,
        value: &[u8],
        moved: &mut Vec<u8>,
        out: &mut CompactionOutput,
    ) -> Result<bool> {
        let Some(r) = self.relocate.as_mut() else {
            return Ok(false);
        };
        let old = ValuePointer::decode(value)?;
        if !r.from.contains(&old.file) {
            return Ok(false);
        }
        let file = self.version.values.get(&old.file).ok_or_else(|| {
            Error::corrupt(format!(
                "compaction met a pointer into value file {}, which the version does not hold",
                old.file
            ))
        })?;
        // (In key order, as a forward scan reads.)
        let v = r.store.read(p.user_key, &old, file, true)?;
        let new = r
            .writer
            .separate(
                &mut *self.new_file_number,
                crate::vstore::FlushEntry::put(p.seq, p.user_key, &v),
            )?
            .ok_or_else(|| Error::corrupt("a relocated value was not written"))?;
        out.dropped_values.add(value);
        out.relocated_bytes += v.len() as u64;
        moved.clear();
        new.encode_to(moved);
        Ok(true)
    }

    /// Finishes an output table: synced here, or handed to `syncer` to sync while the merge
    /// goes on.
    fn finish_output(
        &self,
        o: Option<Output>,
        path_id: PathId,
        out: &mut CompactionOutput,
        syncer: Option<&mut TableSyncer>,
    ) -> Result<()> {
        let Some(o) = o else { return Ok(()) };
        let smallest = o.builder.first_key().to_vec();
        let largest = o.builder.last_key().to_vec();
        let (props, mut unsynced) = o
            .builder
            .finish_unsynced()
            .map_err(|e| e.context(o.path.display()))?;
        match syncer {
            Some(s) => s.submit(unsynced)?,
            None => unsynced.sync()?,
        }
        out.bytes_written += props.file_size;
        let mut meta = FileMeta::from_properties(o.number, path_id, &props, smallest, largest);
        meta.oldest_value_file = o.oldest.0;
        meta.range_clean = self.version.ranges.pieces().clean_upto(&self.snapshots);
        out.files.push(meta);
        Ok(())
    }
}

/// Syncs a compaction's finished tables on a thread of its own while the merge goes on.
///
/// A table's `fdatasync` waits for the device (its writeback was started as it grew, so what
/// is left is the tail and the file system's commit: about 1.4 ms per 8 MiB table here, a
/// tenth of a compaction thread's time in a 4 KiB fill); the merge needs a core, the sync
/// none. The thread is started when a job cuts its first table (a one-table job never starts
/// it) and at most [`SYNCS_QUEUED`] tables wait for it. [`TableSyncer::wait`] returns once every
/// table handed over is durable, and the job calls it before it reports its outputs: nothing
/// names a table before it is synced, as before. Dropped on an error path, it still waits
/// (the caller may then delete the tables).
#[derive(Default)]
struct TableSyncer {
    queue: Option<std::sync::mpsc::SyncSender<UnsyncedTable>>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

/// Finished tables that may wait for the syncing thread before the merge itself waits.
const SYNCS_QUEUED: usize = 4;

impl TableSyncer {
    /// Hands `table` to the syncing thread (started on first use; if it cannot be started,
    /// the table is synced here).
    fn submit(&mut self, mut table: UnsyncedTable) -> Result<()> {
        if self.queue.is_none() {
            let (tx, rx) = std::sync::mpsc::sync_channel::<UnsyncedTable>(SYNCS_QUEUED);
            let spawned = std::thread::Builder::new()
                .name("strata-sync".into())
                .spawn(move || -> Result<()> {
                    for mut t in rx {
                        t.sync()?;
                    }
                    Ok(())
                });
            if let Ok(h) = spawned {
                self.queue = Some(tx);
                self.thread = Some(h);
            }
        }
        let Some(queue) = &self.queue else {
            return table.sync();
        };
        if queue.send(table).is_err() {
            // The thread stopped at a failed sync; that error is the job's.
            return Err(self.wait().err().unwrap_or_else(|| {
                Error::new(crate::ErrorKind::Io, "the table-sync thread stopped early")
            }));
        }
        Ok(())
    }

    /// Waits until every table handed over is synced.
    ///
    /// # Errors
    /// The first failed sync.
    fn wait(&mut self) -> Result<()> {
        self.queue = None;
        match self.thread.take() {
            None => Ok(()),
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(Error::new(
                    crate::ErrorKind::Io,
                    "a thread syncing compaction outputs panicked",
                ))
            }),
        }
    }
}

impl Drop for TableSyncer {
    fn drop(&mut self) {
        let _ = self.wait();
    }
}
