//! The matrix's region and pages: the region file and its page table shared by every
//! layout of one database, the rows decoded from it (each checked once, with its filter),
//! and a row's pages held while a layout names it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use super::directory;
use super::row::Row;
use super::REGION_NAME;
use crate::error::{Error, Result};
use crate::fs::PmemRegion;
use crate::l0::L0Context;
use crate::placement::PathId;
use crate::pmem::{Held, Pages};
use crate::sst::filter;

/// The region, its page table and the rows decoded so far, shared by every layout of one
/// database (kept in the `L0Context`).
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) pages: Arc<Pages>,
    /// Where the rows are, for a repair with no manifest (`directory.rs`).
    pub(super) directory: directory::Directory,
    /// Rows by id, so successive layouts share one `Row` (and its checked flag).
    pub(super) rows: Mutex<HashMap<u64, Weak<CheckedRow>>>,
}

/// A row, whether its checksums were verified in this process, and its Bloom filter
/// (`matrix_row_bloom_bits`; DRAM only, rebuilt from the row after a reopen).
#[derive(Debug)]
pub(super) struct CheckedRow {
    pub(super) row: Arc<Row>,
    pub(super) checked: AtomicBool,
    /// The filter, and the first entry it was built from (0: the flush's, all entries).
    pub(super) filter: OnceLock<(u32, Vec<u8>)>,
}

impl CheckedRow {
    /// Verifies the row's checksums on first read, its entries from page `first_page` on
    /// (the pages still held; a row written by this process is checked already). Not at
    /// decode: a manifest's older records name rows whose pages were reused since.
    pub(super) fn check(&self, region: &dyn PmemRegion, first_page: u32) -> Result<()> {
        if !self.checked.load(Ordering::Acquire) {
            self.row.verify(region, first_page)?;
            self.checked.store(true, Ordering::Release);
        }
        Ok(())
    }

    /// Whether the row's entries from `live_from` on may hold a key of filter hash `h`, by
    /// its filter of `bits` bits per key: the flush's, or else built on first use (after a
    /// reopen) from the entries still held. Never from the entries below `live_from`: a
    /// column compaction took them and their pages may hold another row's bytes (reading
    /// them failed gets after reopens with "entry N runs past the entries' end"). A filter
    /// built from a later first entry than a reader's (an older version's) leaves out
    /// entries that reader still sees: it is not used for it.
    pub(super) fn may_contain(
        &self,
        region: &dyn PmemRegion,
        bits: u32,
        h: u64,
        live_from: u32,
    ) -> Result<bool> {
        let (from, f) = match self.filter.get() {
            Some(f) => f,
            None => {
                let f = filter::build(&self.row.key_hashes(region, live_from)?, bits);
                self.filter.get_or_init(|| (live_from, f))
            }
        };
        Ok(*from > live_from || filter::may_contain(f, h))
    }
}

/// A row of the matrix and how much of it is still in L0.
#[derive(Debug, Clone)]
pub(super) struct LiveRow {
    pub(super) row: Arc<CheckedRow>,
    /// The first entry still in L0 (0 unless a column compaction took some).
    pub(super) live_from: u32,
    /// The first page still held: the page of entry `live_from`.
    pub(super) first_page: u32,
    /// The row's pages from `first_page` on, held while any layout (or a column or a
    /// change being applied) names this row so: successive layouts share it, so a layout
    /// holds its pages for the price of one reference count per row rather than one per
    /// page (docs/design/matrixkv.md, "What a flush paid for the layout's record").
    pub(super) _hold: Arc<Held>,
}

impl LiveRow {
    /// `row` from entry `live_from` (on page `first_page`) on, its pages held.
    ///
    /// # Errors
    /// `Corruption` when its pages are past the region.
    pub(super) fn new(
        pages: &Arc<Pages>,
        row: Arc<CheckedRow>,
        live_from: u32,
        first_page: u32,
    ) -> Result<Self> {
        let hold = Arc::new(pages.hold(row.row.runs_from(first_page))?);
        Ok(LiveRow {
            row,
            live_from,
            first_page,
            _hold: hold,
        })
    }

    /// The row from entry `live_from` (on page `first_page`) on: the same pages held if
    /// the first page is the same, else the fewer pages it keeps.
    pub(super) fn cut(&self, pages: &Arc<Pages>, live_from: u32, first_page: u32) -> Result<Self> {
        if first_page == self.first_page {
            return Ok(LiveRow {
                live_from,
                ..self.clone()
            });
        }
        Self::new(pages, self.row.clone(), live_from, first_page)
    }

    pub(super) fn r(&self) -> &Row {
        &self.row.row
    }
}

/// The `Shared` of the database `ctx` belongs to, created on first use with a region of
/// `container` bytes (`None`: as `matrix_container_size` says; an existing one keeps its
/// size, which a record's `Some` must match).
pub(super) fn shared(ctx: &L0Context, container: Option<u64>) -> Result<Arc<Shared>> {
    let mut slot = ctx
        .shared
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(s) = slot
        .as_ref()
        .and_then(|s| s.clone().downcast::<Shared>().ok())
    {
        if let Some(c) = container.filter(|&c| c != s.pages.len() as u64) {
            return Err(Error::corrupt(format!(
                "the matrix region is {} bytes, a record says {c}",
                s.pages.len()
            )));
        }
        return Ok(s);
    }
    let len = usize::try_from(container.unwrap_or(ctx.config.matrix_container))
        .map_err(|_| Error::invalid("matrix_container_size does not fit in memory"))?;
    let dir = region_dir(&*ctx.fs, &ctx.placement);
    let other = ctx.placement.dir(PathId::PMEM).join(REGION_NAME);
    if dir != ctx.placement.dir(PathId::PMEM) && ctx.fs.exists(&other) {
        // (Which one the manifest's rows are in cannot be told: taking either could read
        // stale pages and hand out pages the other's rows hold.)
        return Err(Error::corrupt(format!(
            "two matrix regions: {} and {}; the database uses the one in its own directory \
             when it holds one: move the other away, or this one into pmem_dir. Nothing \
             was changed",
            dir.join(REGION_NAME).display(),
            other.display()
        )));
    }
    let pages = Pages::new(ctx.fs.clone(), dir.join(REGION_NAME), len);
    let s = Arc::new(Shared {
        pages: Arc::new(if ctx.salvage {
            pages.salvaging()
        } else if let Some(start) = &ctx.view {
            pages.viewing(start.clone())
        } else {
            pages
        }),
        directory: directory::Directory::new(
            ctx.fs.clone(),
            dir.join(directory::DIRECTORY_NAME),
            len as u64,
        ),
        rows: Mutex::default(),
    });
    *slot = Some(s.clone());
    Ok(s)
}

/// The directory the region is in: the database directory when it holds one (a checkpoint
/// or a restored backup keeps every file in its one directory: an open of it with a
/// `pmem_dir` of its own uses the copy's region where the copy put it, with its row
/// directory and pages' generations beside it; to have it in persistent memory, move those
/// files into `pmem_dir` before that first open), else the persistent-memory directory.
/// (The database directory first: a region another database left in `pmem_dir` is never
/// taken for this one's own.)
pub(super) fn region_dir(
    fs: &dyn crate::fs::Fs,
    placement: &crate::placement::Placement,
) -> std::path::PathBuf {
    let db = placement.db_dir();
    if fs.exists(&db.join(REGION_NAME)) {
        return db.to_path_buf();
    }
    placement.dir(PathId::PMEM).to_path_buf()
}

/// The shared `CheckedRow` for `row` (one per id while any layout names it).
pub(super) fn intern(
    shared: &Shared,
    row: Row,
    checked: bool,
    filter: Option<Vec<u8>>,
) -> Arc<CheckedRow> {
    let mut rows = shared
        .rows
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(r) = rows.get(&row.id).and_then(Weak::upgrade) {
        return r;
    }
    rows.retain(|_, w| w.strong_count() > 0);
    let id = row.id;
    let r = Arc::new(CheckedRow {
        row: Arc::new(row),
        checked: AtomicBool::new(checked),
        filter: filter.map(|f| OnceLock::from((0, f))).unwrap_or_default(),
    });
    rows.insert(id, Arc::downgrade(&r));
    r
}
