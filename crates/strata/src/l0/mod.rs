//! Level-0 layouts: the one place that knows how level 0 is arranged.
//!
//! A layout ([`Level0`]) owns L0 end to end: it turns an immutable memtable into L0 tables
//! (flush and WAL recovery), orders and checks L0's files when a version is built, answers
//! point lookups and gives iterators over L0 (user reads and compaction inputs), says which
//! L0 tables a seek positions in (read-triggered compaction), picks what moves from L0 to L1
//! (by its own trigger, by reads, or for `compact_range`), and measures the write pressure L0
//! puts on the write path. The rest of the engine never looks inside L0.
//!
//! The layout in force is part of each [`Version`](crate::version::Version) and is recorded
//! in the manifest with its persistent state ([`L0Record`]), so a database is always read
//! with the layout that wrote it (docs/format/manifest.md, "L0 layout").
//!
//! [`Flat`] is LevelDB's layout; OHDB's buckets (`l0/buckets.rs`) and MatrixKV's matrix
//! (`l0/matrix/`) come with their issues, each in its own file or folder.
//!
//! A layout must never: write outside the `Ingest` it is given, keep mutable state outside
//! its record (a layout is immutable; a change of state is a new layout in a new version),
//! or let a point read see an older version of a key while a newer one sits in L0.

pub(crate) mod buckets;
pub(crate) mod flat;
pub(crate) mod matrix;

use std::any::Any;
use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex};

pub use flat::Flat;

use crate::compaction_filter::{Filtering, Outcome};
use crate::error::{Error, ErrorKind, Result};
use crate::file_meta::{FileMeta, Held};
use crate::filename::FileNumber;
use crate::fs::DurableFirst;
use crate::fs::Fs;
use crate::iter::{EmptyIterator, InternalIterator};
use crate::key::{self, SeqNo, ValueKind};
use crate::memtable::{Lookup, MemTable};
use crate::options::{BucketBoundaries, L0Layout, Options};
use crate::placement::{PathId, Placement};
use crate::sst::{TableBuilder, TableOptions};
use crate::table_cache::TableCache;
use crate::value::{DroppedValues, FlushSeparator, OldestValueFile, ValueFile};
use crate::version_filter::{Verdict, VersionFilter};

/// A layout of level 0. Every method that looks at L0 gets its files (`files`, in the
/// order [`Level0::arrange`] left them) from the version the caller holds.
pub(crate) trait Level0: Send + Sync + fmt::Debug {
    /// Which layout this is.
    fn kind(&self) -> L0Layout;

    /// The layout as `Any`, so that a change it made ([`L0Change`]) can read the current
    /// layout's state when it is applied.
    fn as_any(&self) -> &dyn Any;

    /// The layout and its persistent state, as the manifest records it (its id: its
    /// [`Layout::id`]).
    fn record(&self) -> L0Record;

    /// The manifest format feature this layout needs a reader to know, if any: its
    /// registration's [`Layout::feature`] (a build that registers the layout reads it).
    fn feature(&self) -> Option<&'static str> {
        None
    }

    /// Orders L0's files after an edit and checks the layout's invariants.
    ///
    /// # Errors
    /// `Corruption` when the files break them (a manifest the layout did not write).
    fn arrange(&self, files: &mut Vec<Arc<FileMeta>>) -> Result<()>;

    /// Writes the immutable memtable `mem` as L0 tables, synced with their directory, given
    /// L0's current `files`. Returns the tables written (none if nothing survived the
    /// snapshots) and, if the layout changed its state for them (bucket boundaries chosen
    /// while L0 was empty; a matrix's new row), the change: the caller applies it to the
    /// layout current when the flush lands (a column compaction may have changed it
    /// meanwhile) and records the result in the same edit as the tables, which it then
    /// arranges.
    ///
    /// # Errors
    /// I/O errors; tables written before the error are left for obsolete-file cleanup.
    fn ingest(
        &self,
        job: &mut Ingest<'_>,
        mem: &Arc<MemTable>,
        files: &[Arc<FileMeta>],
    ) -> Result<Ingested>;

    /// The newest version of `user_key` in L0 at or below the sequence of `target`.
    /// `searched` is told of each table before it is searched (read-triggered compaction
    /// charges tables from it).
    ///
    /// # Errors
    /// I/O errors and `Corruption` from the tables searched.
    fn get<'a>(
        &self,
        files: &'a [Arc<FileMeta>],
        tables: &TableCache,
        target: &[u8],
        user_key: &[u8],
        searched: &mut dyn FnMut(&'a Arc<FileMeta>),
    ) -> Result<Option<(SeqNo, Lookup)>>;

    /// Appends iterators that together cover every L0 entry (a user read's sources); by
    /// default one per table (a table that fails to open yields its error).
    fn iterators(
        &self,
        files: &[Arc<FileMeta>],
        tables: &Arc<TableCache>,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) {
        for f in files {
            match tables.table(f) {
                Ok(t) => out.push(Box::new(t.iter())),
                Err(e) => out.push(Box::new(EmptyIterator(Err(e)))),
            }
        }
    }

    /// Appends iterators over what a compaction takes from L0: `inputs`, L0 files (by
    /// default one iterator per table), and `part`, the layout's own part when it picked
    /// one ([`L0Part::iterators`]).
    ///
    /// # Errors
    /// I/O errors and `Corruption` opening the tables or reading the part.
    fn input_iterators(
        &self,
        inputs: &[Arc<FileMeta>],
        part: Option<&L0Part>,
        tables: &Arc<TableCache>,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) -> Result<()> {
        if let Some(p) = part {
            p.column.iterators(out)?;
        }
        for f in inputs {
            out.push(Box::new(tables.table(f)?.iter()));
        }
        Ok(())
    }

    /// Calls `visit` for each L0 table a seek to `user_key` positions in, newest first
    /// (read-triggered compaction charges all but the deepest source a seek searched).
    fn seek_sources<'a>(
        &self,
        files: &'a [Arc<FileMeta>],
        user_key: &[u8],
        visit: &mut dyn FnMut(&'a Arc<FileMeta>),
    );

    /// How hard L0 presses on the write path, and where writes slow down and stop.
    fn pressure(&self, files: &[Arc<FileMeta>], opts: &Options) -> Pressure;

    /// Whether a write of `bytes` (`entries` entries, as a write batch encodes them) may go
    /// into the memtable now, with `unflushed()` bytes in
    /// memtables not yet flushed (the one being filled and the immutable ones). A layout
    /// whose L0 has a hard bound on its room (a matrix region) says no while all of it
    /// might not fit in the room left and a compaction is there to make more: a recovery
    /// after a crash writes every unflushed memtable into L0 at once, with no compaction to
    /// wait for (docs/design/matrixkv.md, "Room for a recovery"). Checked for every write
    /// group; the default says yes.
    fn admits(
        &self,
        _unflushed: &dyn Fn() -> usize,
        _bytes: usize,
        _entries: usize,
        _opts: &Options,
    ) -> bool {
        true
    }

    /// Whether an L0 compaction takes all of L0 (and so most of L1): HyperLevelDB's picker
    /// then lets L0 gather tables while L1 is over its limit. A layout that compacts a part
    /// at a time (one bucket) starts it at its own trigger.
    fn compacts_all_of_l0(&self) -> bool {
        true
    }

    /// Compaction urgency of L0; >= 1 means compact now.
    fn score(&self, files: &[Arc<FileMeta>], opts: &Options) -> f64;

    /// Whether L0 may hold a version of a key in `[start, end)` of the kind `held` asks
    /// for. By default: one of its tables may (`FileMeta::may_hold`). A layout that keeps
    /// data outside tables answers for it too.
    fn may_hold(&self, files: &[Arc<FileMeta>], start: &[u8], end: &[u8], held: Held) -> bool {
        files.iter().any(|f| f.may_hold(start, end, held))
    }

    /// Whether L0 holds no data (migration and layout changes wait for it). By default:
    /// no tables. A layout that keeps data outside tables answers for it too.
    fn is_empty(&self, files: &[Arc<FileMeta>]) -> bool {
        files.is_empty()
    }

    /// Bytes L0 holds (stats, space, the table cache's live bytes). By default: its
    /// tables' sizes.
    fn bytes(&self, files: &[Arc<FileMeta>]) -> u64 {
        files.iter().map(|f| f.size).sum()
    }

    /// Acquires what the layout keeps open (the matrix's region) when a database opens
    /// with it, so the first flush does not pay for it with writers waiting, and a
    /// directory that cannot hold it fails the open with a clear error instead of that
    /// flush. By default nothing.
    ///
    /// # Errors
    /// What acquiring it returns.
    fn prepare(&self) -> Result<()> {
        Ok(())
    }

    /// For a read-only view beside a writing process: whether what this layout names
    /// outside tables is still what it was when the view started (the matrix: no page its
    /// rows hold was handed out since the view took the pages' generations). A view opens
    /// again when it is not. By default yes.
    ///
    /// # Errors
    /// `Stale` when it moved.
    fn check_view(&self) -> Result<()> {
        Ok(())
    }

    /// Checks, writing nothing, that the files this layout keeps data in outside tables are
    /// there (the matrix's region, when it holds rows): an open runs it before its first
    /// write, so that a database opened without the directory those files are in is
    /// refused unchanged. By default there are none.
    ///
    /// # Errors
    /// `Corruption` naming a missing file.
    fn check_files(&self) -> Result<()> {
        Ok(())
    }

    /// The files that hold this layout's data outside tables and what locates it: the data
    /// first, what locates it last (the matrix's region, its pages' generations, its row
    /// directory). `repair` reads them, then moves them aside; `destroy` removes them. By
    /// default none.
    fn own_files(&self) -> Vec<std::path::PathBuf> {
        Vec::new()
    }

    /// Whether [`Level0::write_copy`] copies what this layout keeps outside tables (a
    /// checkpoint or backup is refused otherwise). By default: when it keeps nothing there.
    fn copies_own_files(&self) -> bool {
        self.own_files().is_empty()
    }

    /// Writes into `dir`, synced, what this layout keeps outside tables as this layout
    /// names it (the matrix: a region holding the pages of its rows), for a copy of the
    /// database whose one directory `dir` is (a checkpoint's, a backup's): opened with no
    /// `pmem_dir`, the copy finds it there under the same names. The caller holds the
    /// version naming this layout, so nothing it names is reused meanwhile. By default
    /// nothing.
    ///
    /// # Errors
    /// I/O errors.
    fn write_copy(&self, _fs: &Arc<dyn Fs>, _dir: &std::path::Path) -> Result<()> {
        Ok(())
    }

    /// Writes, durably, what lets `repair` find this layout's data outside tables with no
    /// manifest (the matrix's row directory). Called under the versions lock on a layout
    /// about to be recorded, before the manifest edit that records it, and at open on the
    /// layout the manifest holds: what it writes is never behind the manifest, and ahead of
    /// it only by an edit whose data is durable elsewhere too (a flush's WAL, a
    /// compaction's tables). By default nothing.
    ///
    /// # Errors
    /// I/O errors: the edit is not made.
    fn write_locator(&self) -> Result<()> {
        Ok(())
    }

    /// The parts of L0 this layout's own files locate without a manifest (the matrix's
    /// rows, through its row directory), as [`parts_outside_tables`] gives them; `None`
    /// when its files locate nothing (no directory). Asked of the configured layout by
    /// `repair`. By default `None`.
    ///
    /// # Errors
    /// I/O errors, and `Corruption` when what locates the parts is damaged.
    fn located_parts(&self) -> Result<Option<CheckedParts>> {
        Ok(None)
    }

    /// Bytes L0 holds when it is due for compaction (`LevelSizing::Flattened` sizes L1 by
    /// it): by default `level0_file_num_compaction_trigger` memtables.
    fn capacity(&self, opts: &Options) -> u64 {
        (opts.level0_file_num_compaction_trigger as u64)
            .saturating_mul(opts.write_buffer_size as u64)
    }

    /// The L0 files to move into L1 now, if any can move (`busy` files are inputs of
    /// running compactions). The compaction picker adds the L1 side.
    fn pick(
        &self,
        files: &[Arc<FileMeta>],
        busy: &HashSet<FileNumber>,
        opts: &Options,
    ) -> Option<Vec<Arc<FileMeta>>>;

    /// The L0 files a manual compaction of [`lo`, `hi`] (user keys, `None` = unbounded)
    /// must move together; empty if none overlaps.
    fn manual_inputs(
        &self,
        files: &[Arc<FileMeta>],
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>>;

    /// A part of the layout's own data (not tables) to move into L1 now, if any is due and
    /// none is moving (a matrix's column). `below` is the output level's files: a part may
    /// be cut at their bounds. Asked before [`Level0::pick`]; by default none.
    fn pick_part(&self, below: &[Arc<FileMeta>], busy: &HashSet<FileNumber>) -> Option<L0Part> {
        let _ = (below, busy);
        None
    }

    /// Whether the layout holds data it would move into L1 once the database goes idle
    /// (`Options::idle_compaction_delay`; [`Level0::idle_part`]). By default none.
    fn idle_work(&self) -> bool {
        false
    }

    /// A part of the layout's own data to move into L1 because the database has gone idle
    /// (`Options::idle_compaction_delay`) though nothing is due: a matrix drains its
    /// receiver. Asked before the picker's own idle rule; by default none.
    fn idle_part(&self, below: &[Arc<FileMeta>], busy: &HashSet<FileNumber>) -> Option<L0Part> {
        let _ = (below, busy);
        None
    }

    /// The part of the layout's own data a manual compaction of [`lo`, `hi`] must move, if
    /// any (besides [`Level0::manual_inputs`]); by default none.
    fn manual_part(
        &self,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        busy: &HashSet<FileNumber>,
    ) -> Option<L0Part> {
        let _ = (lo, hi, busy);
        None
    }
}

/// A change of a layout's state made by a flush or a compaction against the layout it
/// started from, applied under the versions lock to the layout current when the job
/// lands: a flush and a compaction that change the same layout concurrently both land,
/// in either order. The result is recorded whole in the job's manifest edit.
pub(crate) trait L0Change: Send + Sync + fmt::Debug {
    /// The layout `current` with this change made.
    ///
    /// # Errors
    /// `Corruption` when `current` cannot take the change (a layout of another kind, or a
    /// state the change cannot follow from).
    fn apply(&self, current: &dyn Level0) -> Result<Arc<dyn Level0>>;
}

/// A change that replaces the layout it was made against by `to`, and refuses any other
/// (bucket boundaries chosen by a flush: only flushes, one at a time, change them).
#[derive(Debug)]
pub(crate) struct Replace {
    /// The record of the layout the change was made against.
    pub from: L0Record,
    /// The layout after it.
    pub to: Arc<dyn Level0>,
}

impl L0Change for Replace {
    fn apply(&self, current: &dyn Level0) -> Result<Arc<dyn Level0>> {
        if current.record() != self.from {
            return Err(Error::corrupt("the L0 layout changed during a flush"));
        }
        Ok(self.to.clone())
    }
}

/// What a compaction takes from a layout that is not whole tables (a matrix's column): the
/// entries' data and what the layout becomes once they are in L1.
pub(crate) trait L0Column: Send + Sync + fmt::Debug {
    /// Appends iterators over the part's entries (only those the part takes), in
    /// internal-key order each.
    ///
    /// # Errors
    /// I/O errors and `Corruption` reading the layout's data.
    fn iterators(&self, out: &mut Vec<Box<dyn InternalIterator>>) -> Result<()>;

    /// The change that removes the part from L0 once its entries are in L1.
    fn change(&self) -> Arc<dyn L0Change>;
}

/// A part of L0 a compaction takes that is not whole tables ([`Level0::pick_part`]).
#[derive(Debug, Clone)]
pub(crate) struct L0Part {
    /// The smallest user key among the part's entries.
    pub smallest: Vec<u8>,
    /// The largest user key among them.
    pub largest: Vec<u8>,
    /// The bytes of its entries (compaction statistics).
    pub bytes: u64,
    /// Marked busy while the compaction runs, so that the layout picks no second part
    /// meanwhile (the number of the layout's region).
    pub token: FileNumber,
    /// The entries and the layout's change.
    pub column: Arc<dyn L0Column>,
}

/// Write pressure from L0 in a layout's own unit (for `Flat`, sorted runs; for a matrix,
/// container pages): writes slow down at `slowdown` and stop at `stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pressure {
    /// The current pressure.
    pub level: usize,
    /// Writes are slowed down from this level on.
    pub slowdown: usize,
    /// Writes stop from this level on, until compaction lowers it.
    pub stop: usize,
}

impl Pressure {
    /// Whether writes must be slowed down.
    pub fn slows(&self) -> bool {
        self.level >= self.slowdown
    }

    /// Whether writes must stop.
    pub fn stops(&self) -> bool {
        self.level >= self.stop
    }
}

/// An L0 layout as the manifest records it: the layout's id and its persistent state (empty
/// for `Flat`; bucket boundaries and row tables for the layouts to come).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct L0Record {
    /// The layout's persisted id (0 = flat).
    pub layout: u32,
    /// Layout-defined bytes.
    pub state: Vec<u8>,
}

/// One L0 layout as the registry lists it (`registry::LAYOUTS`): the option value naming
/// it, its persisted id, the format feature it needs, and how it is built, read back from
/// its record and checked against the options. Each layout defines its own in its file or
/// folder; nothing in this module names one but `Flat`, the default.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The `Options::l0_layout` value that configures it.
    pub kind: L0Layout,
    /// Its id in the manifest's layout record (docs/format/manifest.md): never renumbered.
    pub id: u32,
    /// The format feature a manifest lists while it is in force, if any.
    pub feature: Option<&'static str>,
    /// The layout in its initial state.
    pub initial: fn(&L0Context) -> Built,
    /// The layout a record's `state` describes.
    pub decode: fn(&[u8], &L0Context) -> Built,
    /// The options' checks that are the layout's own (run while it is configured).
    pub check_options: fn(&Options) -> Result<()>,
    /// For a layout that keeps files in persistent memory: the directory they are in,
    /// found from the files on disk alone (a read-only view takes the pages' generations
    /// there before it reads the manifest).
    pub persistent_dir: Option<fn(&dyn Fs, &Placement) -> std::path::PathBuf>,
}

/// Where the layouts keep their persistent-memory files in the database at `placement`
/// (the first registered layout that says; else the persistent-memory directory).
pub(crate) fn persistent_dir(
    layouts: LayoutList,
    fs: &dyn Fs,
    placement: &Placement,
) -> std::path::PathBuf {
    layouts
        .iter()
        .find_map(|l| l.persistent_dir.map(|f| f(fs, placement)))
        .unwrap_or_else(|| placement.dir(crate::placement::PathId::PMEM).to_path_buf())
}

/// A layout built by its registration, or why it could not be.
pub(crate) type Built = Result<Arc<dyn Level0>>;

/// The layouts a database knows, in registration order (`registry::LAYOUTS`).
pub(crate) type LayoutList = &'static [Layout];

/// The format features of `layouts`.
pub(crate) fn features(layouts: LayoutList) -> impl Iterator<Item = &'static str> {
    layouts.iter().filter_map(|l| l.feature)
}

/// The entry of `layouts` that `kind` names.
///
/// # Errors
/// `InvalidArgument` if none does (a layout this build does not register).
fn entry(layouts: LayoutList, kind: L0Layout) -> Result<&'static Layout> {
    layouts.iter().find(|l| l.kind == kind).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("Options::l0_layout: {kind:?} is not registered in this build"),
        )
    })
}

/// What layouts take from `Options` that is not persisted with them: how to choose their
/// state when they may change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct L0Config {
    /// `Options::l0_buckets`.
    pub buckets: usize,
    /// `Options::bucket_boundaries`.
    pub boundaries: BucketBoundaries,
    /// `Options::matrix_container_size` (a new matrix's region).
    pub matrix_container: u64,
    /// `Options::matrix_receiver_percent`.
    pub matrix_receiver_percent: u32,
    /// `Options::matrix_column_tables` x `Options::target_file_size_base`: a column's upper
    /// bound in bytes (its lower bound is half).
    pub matrix_column_bytes: u64,
    /// `Options::matrix_hints`.
    pub matrix_hints: bool,
    /// `Options::matrix_row_bloom_bits`.
    pub matrix_row_bloom_bits: u32,
}

impl From<&Options> for L0Config {
    fn from(o: &Options) -> Self {
        L0Config {
            buckets: o.l0_buckets,
            boundaries: o.bucket_boundaries,
            matrix_container: o.matrix_container_size,
            matrix_receiver_percent: o.matrix_receiver_percent,
            matrix_column_bytes: u64::from(o.matrix_column_tables)
                .saturating_mul(o.target_file_size_base),
            matrix_hints: o.matrix_hints,
            matrix_row_bloom_bits: o.matrix_row_bloom_bits,
        }
    }
}

/// A flat L0 (the layout of a manifest that records none).
pub(crate) fn flat() -> Arc<dyn Level0> {
    Arc::new(Flat)
}

/// What a layout is built with: the options it takes that are not persisted with it, and
/// where it may keep data that is not in tables (a matrix's region in `pmem_dir`). One per
/// `VersionSet`, cloned into each layout that needs it.
#[derive(Debug, Clone)]
pub(crate) struct L0Context {
    /// Every layout the database knows (`registry::LAYOUTS`).
    pub layouts: LayoutList,
    /// The options the layout takes.
    pub config: L0Config,
    /// The database's file system.
    pub fs: Arc<dyn Fs>,
    /// Where each kind of file lives.
    pub placement: Placement,
    /// What the layout keeps open for the database's life and shares between the
    /// layouts of successive versions (a matrix's region and page table); set by the
    /// layout on first use.
    pub shared: Arc<Mutex<Option<Arc<dyn Any + Send + Sync>>>>,
    /// Set by repair: a layout's files are read for what they still hold, so a matrix
    /// region shorter than its recorded size is opened as long as it is (its rows past
    /// the end fail on their own) instead of refused whole.
    pub salvage: bool,
    /// Set by a read-only open: the layout reads as a view beside a writing process, which
    /// may reuse persistent-memory pages the view's manifest names. `Some(start)`: what the
    /// view took of the pages' generations before it read the manifest (`None` inside: no
    /// generations to check).
    pub view: Option<Option<Arc<crate::pmem::ViewStart>>>,
}

impl L0Context {
    /// The context of a database at `placement` opened with `opts`, knowing `layouts`.
    pub fn new(layouts: LayoutList, opts: &Options, placement: &Placement) -> Self {
        L0Context {
            layouts,
            config: L0Config::from(opts),
            fs: opts.fs.clone(),
            placement: placement.clone(),
            shared: Arc::default(),
            salvage: false,
            view: None,
        }
    }
}

/// The layout the options ask for, in its initial state.
///
/// # Errors
/// Errors of a layout that keeps data outside tables and cannot set it up.
pub(crate) fn configured(opts: &Options, ctx: &L0Context) -> Result<Arc<dyn Level0>> {
    (entry(ctx.layouts, opts.l0_layout)?.initial)(ctx)
}

/// The options' checks that are the configured layout's own, `layouts` being those the
/// database knows.
///
/// # Errors
/// `InvalidArgument` naming the first bad field.
pub(crate) fn check_options(layouts: LayoutList, opts: &Options) -> Result<()> {
    (entry(layouts, opts.l0_layout)?.check_options)(opts)
}

/// Every layout of `layouts`, in its initial state with the options of `opts` and a
/// context of its own each (the configured one first): `repair` asks each for the data it
/// keeps outside tables, whatever the options name now, since a database opened with
/// another layout may have been killed while it migrated L0 away from this one. Layouts
/// that cannot be set up with these options are left out.
pub(crate) fn every_layout(
    layouts: LayoutList,
    opts: &Options,
    placement: &Placement,
) -> Vec<Arc<dyn Level0>> {
    let configured = layouts.iter().filter(|l| l.kind == opts.l0_layout);
    let others = layouts.iter().filter(|l| l.kind != opts.l0_layout);
    configured
        .chain(others)
        .filter_map(|l| (l.initial)(&L0Context::new(layouts, opts, placement)).ok())
        .collect()
}

/// The layout a manifest record describes.
///
/// # Errors
/// `NotSupported` naming the layout id when this build does not know it; `Corruption` when
/// its state does not decode.
pub(crate) fn from_record(rec: &L0Record, ctx: &L0Context) -> Result<Arc<dyn Level0>> {
    match ctx.layouts.iter().find(|l| l.id == rec.layout) {
        Some(l) => (l.decode)(&rec.state, ctx),
        None => Err(Error::new(
            ErrorKind::NotSupported,
            format!(
                "the database's L0 layout (id {}) is not known to this build",
                rec.layout
            ),
        )),
    }
}

/// The layout's own files, and one checked iterator per part of L0 kept outside tables
/// ([`parts_outside_tables`]).
pub(crate) type OutsideTables = (Vec<std::path::PathBuf>, CheckedParts);

/// One iterator per part of L0 kept outside tables, each positioned at its first entry
/// after the part's checks, or the error that failed them.
pub(crate) type CheckedParts = Vec<Result<Box<dyn InternalIterator>>>;

/// What layout record `rec` keeps of L0 outside tables (the matrix's rows), as one
/// iterator per part, each positioned at its first entry after the part's checks (`Err`
/// for a part that fails them), with the layout's own file (`check` and `repair` read L0
/// this way without opening the database).
///
/// # Errors
/// `from_record`'s.
pub(crate) fn parts_outside_tables(rec: &L0Record, ctx: &L0Context) -> Result<OutsideTables> {
    let l0 = from_record(rec, ctx)?;
    let tables = Arc::new(TableCache::new(
        ctx.fs.clone(),
        ctx.placement.clone(),
        1,
        None,
    ));
    let mut parts = Vec::new();
    l0.iterators(&[], &tables, &mut parts);
    let parts = parts
        .into_iter()
        .map(|mut it| {
            it.seek_to_first();
            it.status().map(|()| it)
        })
        .collect();
    Ok((l0.own_files(), parts))
}

/// The newest version of `user_key` in `files` (newest first, possibly overlapping): each
/// table whose range holds the key, in order, until one has it. `searched` is told of each
/// table searched.
///
/// # Errors
/// I/O errors and `Corruption` from the tables searched.
pub(crate) fn search_newest_first<'a>(
    files: &'a [Arc<FileMeta>],
    tables: &TableCache,
    target: &[u8],
    user_key: &[u8],
    searched: &mut dyn FnMut(&'a Arc<FileMeta>),
) -> Result<Option<(SeqNo, Lookup)>> {
    for f in files {
        if user_key < f.smallest_user_key() || user_key > f.largest_user_key() {
            continue;
        }
        searched(f);
        if let Some(found) = tables.get(f, target, user_key)? {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// `Corruption` if a table is in `files` twice (arranged: duplicates are neighbours).
pub(crate) fn refuse_duplicates(files: &[Arc<FileMeta>]) -> Result<()> {
    match files.windows(2).find(|w| w[0].number == w[1].number) {
        Some(w) => Err(Error::corrupt(format!(
            "file {} is twice in level 0",
            w[0].number
        ))),
        None => Ok(()),
    }
}

/// What an ingest produced.
#[derive(Debug, Default)]
pub(crate) struct Ingested {
    /// The tables written, in key order.
    pub tables: Vec<FileMeta>,
    /// The change of the layout's state, if the ingest made one.
    pub change: Option<Arc<dyn L0Change>>,
    /// Bytes written that are not in `tables` (a matrix's row): flush statistics.
    pub other_bytes: u64,
}

/// What [`Ingest::entries`] gives a flush's entries to.
pub(crate) trait EntrySink {
    /// Called once, before the first entry, with the flush's source of file numbers.
    ///
    /// # Errors
    /// The sink's own (creating its file).
    fn begin(&mut self, new_file_number: &mut dyn FnMut() -> FileNumber) -> Result<()>;
    /// One entry, in internal-key order.
    ///
    /// # Errors
    /// The sink's own (writing it).
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()>;
}

/// [`Ingest::write_table`]'s sink: one table, created when the first entry comes.
struct TableSink<'a> {
    fs: &'a dyn Fs,
    placement: &'a Placement,
    path_id: PathId,
    table_opts: TableOptions,
    /// Under a temporary name ([`Ingest::stage`]).
    stage: bool,
    out: Option<(TableBuilder, FileNumber)>,
}

impl EntrySink for TableSink<'_> {
    fn begin(&mut self, new_file_number: &mut dyn FnMut() -> FileNumber) -> Result<()> {
        let number = new_file_number();
        let mut path = self.placement.table_path(number, self.path_id);
        if self.stage {
            path = crate::fs::temp_path(&path);
        }
        let file = self.fs.create(&path)?;
        self.out = Some((TableBuilder::new(file, path, self.table_opts), number));
        Ok(())
    }

    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        match self.out.as_mut() {
            Some((b, _)) => b.add(ikey, value),
            None => Err(Error::corrupt(
                "a flush entry came before its table was begun",
            )),
        }
    }
}

/// What a layout's ingest writes with: the file system, where tables go, their shape, the
/// live snapshots, and a source of file numbers (registered as pending outputs).
pub(crate) struct Ingest<'a> {
    pub fs: &'a dyn Fs,
    pub placement: &'a Placement,
    /// The directory the tables are written in: L0's, or the levels' when the flush expects
    /// to place them below L0 (`Options::max_mem_compaction_level` with a `level_dir`).
    pub path_id: PathId,
    pub table_opts: TableOptions,
    pub snapshots: Vec<SeqNo>,
    pub new_file_number: &'a mut dyn FnMut() -> FileNumber,
    /// Takes the values a flush separates (`Options::value_store` = `BlobFiles`); the flush
    /// collects the value files it wrote with [`Ingest::finish_values`].
    pub values: Option<Box<dyn FlushSeparator>>,
    /// Value pointers the flush dropped (older versions of a key in the memtable): the value
    /// log's garbage.
    pub dropped_values: DroppedValues,
    /// Write tables under a temporary name (`NNNNNN.sst.dbtmp`) until [`Ingest::publish`]
    /// (a live flush: its tables may point into value files not durable yet).
    pub stage: bool,
    /// The tables written under a temporary name: (temporary path, final path).
    pub staged: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    /// `Some`: leave the tables and their directory entries unsynced and list them here,
    /// for the manifest to make durable before the record naming them (a live flush:
    /// `VersionSet::log_and_apply_unsynced`); `None`: sync them here (recovery at open).
    pub durable_first: Option<DurableFirst>,
    /// The compaction filter, if one is configured (a live flush; not at recovery).
    pub filter: Option<Filtering<'a>>,
}

impl Ingest<'_> {
    /// Writes the entries of `mem` from user key `from` (inclusive; `None` = the start) up
    /// to `to` (exclusive; `None` = the end) as one L0 table, as [`Ingest::entries`] gives
    /// them. `None` if nothing is left. The table is synced (or listed in
    /// [`Ingest::durable_first`]); its directory is not (see [`Ingest::sync_dir`]).
    ///
    /// # Errors
    /// I/O errors; `Corruption` for a malformed memtable key.
    pub fn write_table(
        &mut self,
        mem: &Arc<MemTable>,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
    ) -> Result<Option<FileMeta>> {
        let path_id = self.path_id;
        let mut sink = TableSink {
            fs: self.fs,
            placement: self.placement,
            path_id,
            table_opts: self.table_opts,
            stage: self.stage,
            out: None,
        };
        let oldest = self.entries(mem, from, to, &mut sink)?;
        let Some((b, number)) = sink.out else {
            return Ok(None);
        };
        if self.stage {
            let path = self.placement.table_path(number, path_id);
            self.staged.push((crate::fs::temp_path(&path), path));
        }
        let (smallest, largest) = (b.first_key().to_vec(), b.last_key().to_vec());
        let props = match self.durable_first.as_mut() {
            Some(first) => {
                let (props, _unsynced) = b.finish_unsynced()?;
                first.files.push(self.placement.table_path(number, path_id));
                props
            }
            None => b.finish()?,
        };
        let mut meta = FileMeta::from_properties(number, path_id, &props, smallest, largest);
        meta.oldest_value_file = oldest.0;
        // (Older tombstones than the memtable's own cover none of its entries.)
        meta.range_clean = mem.range_pieces().clean_upto(&self.snapshots);
        Ok(Some(meta))
    }

    /// Writes the range tombstones of `mem`, if it holds any, as a range-tombstone file in
    /// the database directory: staged and unsynced as the tables are (a live flush: named at
    /// [`Ingest::publish`], so a repair finds it no sooner than the tables written with it;
    /// made durable before the record naming it), else synced with its directory (recovery
    /// at open).
    ///
    /// # Errors
    /// I/O errors; a file written is left for obsolete-file cleanup (or, staged, for
    /// [`Ingest::discard_staged`]).
    pub fn write_ranges(&mut self, mem: &MemTable) -> Result<Option<crate::range_del::RangeFile>> {
        let mut tombstones = mem.range_tombstones();
        if tombstones.is_empty() {
            return Ok(None);
        }
        tombstones.sort_by(crate::range_del::file_order);
        let number = (self.new_file_number)();
        let dir = self.placement.db_dir();
        let path = dir.join(crate::filename::ranges_name(number));
        let written = if self.stage {
            let tmp = crate::fs::temp_path(&path);
            self.staged.push((tmp.clone(), path.clone()));
            tmp
        } else {
            path.clone()
        };
        let sync = self.durable_first.is_none();
        let size = crate::sst::range_file::write(self.fs, &written, &tombstones, sync)?;
        match self.durable_first.as_mut() {
            Some(first) => {
                first.files.push(path);
                if !first.dirs.iter().any(|d| d == dir) {
                    first.dirs.push(dir.to_path_buf());
                }
            }
            None => self.fs.sync_dir(dir)?,
        }
        Ok(Some(crate::range_del::RangeFile {
            number: number.0,
            size,
            tombstones: tombstones.into(),
        }))
    }

    /// Gives `sink` the entries of `mem` from user key `from` (inclusive; `None` = the
    /// start) up to `to` (exclusive; `None` = the end) as a flush writes them, in key order:
    /// versions no snapshot needs are dropped (tombstones are kept: older versions may live
    /// below; a dropped value pointer is counted as the value store's garbage), and a value
    /// the flush separates is replaced by its pointer. `sink` begins before the first entry
    /// kept, with the flush's source of file numbers (so a table is numbered before the
    /// value files its entries go to). Returns the oldest value file the entries point
    /// into. A layout that writes something other than tables (the matrix's RowTables)
    /// writes what this gives.
    ///
    /// # Errors
    /// `sink`'s errors; the value store's; `Corruption` for a malformed memtable key.
    pub fn entries(
        &mut self,
        mem: &Arc<MemTable>,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
        sink: &mut dyn EntrySink,
    ) -> Result<OldestValueFile> {
        let mut begun = false;
        // A memtable's entries are older than its own range tombstones only: the flush
        // drops what they hide (the tombstones go to a file named in the same edit).
        let mut filter = VersionFilter::new(self.snapshots.clone()).with_ranges(mem.range_pieces());
        let mut it = mem.iter();
        match from {
            Some(k) => it.seek(&key::seek_key(k, SeqNo::MAX)),
            None => it.seek_to_first(),
        }
        let mut pointer_key = Vec::new();
        let mut pointer = Vec::new();
        let mut changed_key = Vec::new();
        let mut changed: Vec<u8>;
        let mut oldest = OldestValueFile::default();
        while it.valid() {
            let p = key::parse(it.key())
                .ok_or_else(|| Error::corrupt("memtable holds a malformed key"))?;
            if to.is_some_and(|to| p.user_key >= to) {
                break;
            }
            if filter.judge(p.user_key, p.seq, p.kind, || false) != Verdict::Keep {
                if p.kind == ValueKind::Pointer {
                    self.dropped_values.add(it.value());
                }
            } else {
                // The compaction filter's word: a removed entry leaves a tombstone (older
                // versions may be below), a changed one a put of its new value.
                let (mut kind, mut value, mut ikey) = (p.kind, it.value(), it.key());
                let outcome = match self.filter.as_mut() {
                    Some(f) => f.decide(p.user_key, p.seq, p.kind, value)?,
                    None => Outcome::Keep,
                };
                if outcome != Outcome::Keep {
                    if p.kind == ValueKind::Pointer {
                        self.dropped_values.add(it.value());
                    }
                    (kind, value) = match outcome {
                        Outcome::Change(k, v) => {
                            changed = v;
                            (k, changed.as_slice())
                        }
                        _ => (ValueKind::Delete, &[][..]),
                    };
                    changed_key.clear();
                    key::append_internal_key(&mut changed_key, p.user_key, p.seq, kind);
                    ikey = &changed_key;
                }
                if !begun {
                    sink.begin(&mut *self.new_file_number)?;
                    begun = true;
                }
                let separated = match self.values.as_mut() {
                    Some(v) => v.separate(
                        &mut *self.new_file_number,
                        crate::value::FlushEntry {
                            kind,
                            seq: p.seq,
                            user_key: p.user_key,
                            value,
                        },
                    )?,
                    None => None,
                };
                match separated {
                    Some(p_to) => {
                        oldest.note(p_to.file);
                        pointer.clear();
                        p_to.encode_to(&mut pointer);
                        pointer_key.clear();
                        key::append_internal_key(
                            &mut pointer_key,
                            p.user_key,
                            p.seq,
                            ValueKind::Pointer,
                        );
                        sink.add(&pointer_key, &pointer)?;
                    }
                    None => {
                        oldest.note_entry(kind, value);
                        sink.add(ikey, value)?;
                    }
                }
            }
            it.next();
        }
        Ok(oldest)
    }

    /// The value files the flush wrote, durable.
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish_values(&mut self) -> Result<Vec<ValueFile>> {
        match self.values.as_mut() {
            Some(v) => v.finish(),
            None => Ok(Vec::new()),
        }
    }

    /// Syncs the tables' directory, so the tables written are found after a crash (or
    /// lists it in [`Ingest::durable_first`]).
    ///
    /// # Errors
    /// I/O errors.
    pub fn sync_dir(&mut self) -> Result<()> {
        let dir = self.placement.dir(self.path_id);
        match self.durable_first.as_mut() {
            Some(first) => {
                if !first.dirs.iter().any(|d| d == dir) {
                    first.dirs.push(dir.to_path_buf());
                }
                Ok(())
            }
            None => self.fs.sync_dir(dir),
        }
    }

    /// Gives the tables written under a temporary name their own, and syncs their
    /// directory. A live flush calls it once the values its tables point to are durable:
    /// until then a crash leaves temporary files, which `repair` does not read and an open
    /// deletes. (Without it, a table found by a repair could point into a value file whose
    /// entry or bytes the crash lost, while its WAL's copy of the same writes was torn off.)
    ///
    /// # Errors
    /// I/O errors.
    pub fn publish(&mut self) -> Result<()> {
        if self.staged.is_empty() {
            return Ok(());
        }
        for (tmp, path) in &self.staged {
            self.fs.rename(tmp, path)?;
        }
        self.staged.clear();
        self.sync_dir()
    }

    /// Removes the tables still under a temporary name (a flush that failed).
    pub fn discard_staged(&mut self) {
        for (tmp, _) in self.staged.drain(..) {
            let _ = self.fs.remove(&tmp);
        }
    }
}
