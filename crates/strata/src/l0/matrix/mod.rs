//! MatrixKV's matrix container (seeds/matrixkv-matrix-l0.txt, section 3) as an L0 layout.
//!
//! L0 lives in a persistent-memory region (`pmem/`), not in tables: each flush writes its
//! memtable as one RowTable (`row.rs`) into free pages of the region. Rows go to the
//! *receiver*; once the receiver holds `matrix_receiver_percent` of the container and the
//! *compactor* is empty, the receiver becomes the compactor (a record change; no data
//! moves). The compactor is merged into L1 one *column* at a time: the compactor's entries
//! in a key range cut at L1's table bounds, sized between half and all of
//! `matrix_column_tables` x `target_file_size_base` bytes, starting where the last column
//! ended (the compactor's cursor). Pages wholly below the cursor are freed once no version
//! names them. Point reads search rows newest first with the forward pointers as hints.
//!
//! The layout's state (the rows, their pages and first live entries, the compactor and its
//! cursor) is its manifest record (docs/format/row_table.md): a flush's new row and a
//! column's progress are changes applied to the layout current when the job lands, so a
//! flush and a column compaction running together both land. Free pages are the pages no
//! live version's layout and no writer holds (the page table in `pmem/`), derived from the
//! record at open. Design: docs/design/matrixkv.md, "The matrix layout".
//!
//! Here: the layout (its record, reads, column cutting, `Level0`). Beside it: `region.rs`
//! (the region and its pages, the rows decoded from it), `changes.rs` (what a flush, a
//! column compaction and a manual compaction change), `row.rs` (a RowTable's bytes),
//! `directory.rs` (where the rows are, for a repair with no manifest).

mod changes;
mod directory;
mod region;
mod row;

use std::any::Any;
use std::collections::HashSet;
use std::sync::{Arc, OnceLock};

use self::changes::{AddRow, Column, ColumnDone, RemoveRows, Unreadable};
use self::region::{intern, shared, LiveRow, Shared};
use self::row::{Row, RowIter, RowWriter};
use super::{Ingest, Ingested, L0Change, L0Config, L0Context, L0Part, Level0, Pressure};
use crate::coding::{get_length_prefixed, get_varint32, get_varint64, put_length_prefixed};
use crate::coding::{put_varint32, put_varint64};
use crate::error::{Error, Result};
use crate::file_meta::FileMeta;
use crate::filename::FileNumber;
use crate::fs::PmemRegion;
use crate::iter::{EmptyIterator, InternalIterator};
use crate::key::{self, SeqNo};
use crate::memtable::{Lookup, MemTable};
use crate::options::{L0Layout, Options};
use crate::pmem::PAGE;
use crate::sst::filter;
use crate::table_cache::TableCache;

/// The manifest format feature of a database whose L0 is a matrix.
pub const MATRIX_FEATURE: &str = "l0-matrix";

/// The region's file name in `pmem_dir` (one region per database).
pub const REGION_NAME: &str = "matrix.pmem";

/// The busy mark of a running column compaction (no file has this number).
const TOKEN: FileNumber = FileNumber(u64::MAX);

/// The record's version byte.
const RECORD_VERSION: u8 = 1;

/// The matrix container: rows oldest first, the oldest `compactor` of them the compactor.
#[derive(Debug)]
struct State {
    shared: Arc<Shared>,
    cfg: L0Config,
    rows: Vec<LiveRow>,
    compactor: usize,
    /// The compactor's first user key still in L0.
    cursor: Vec<u8>,
    /// `encode()`, once asked: every flush and column compaction records the layout it
    /// makes and compares the layout it replaces.
    encoded: OnceLock<Vec<u8>>,
}

/// The matrix layout (`L0Layout::Matrix`).
#[derive(Debug, Clone)]
pub struct Matrix(Arc<State>);

impl Matrix {
    /// An empty matrix for a database opened with `ctx`.
    ///
    /// # Errors
    /// `InvalidArgument` for a container that does not fit in memory.
    pub(crate) fn initial(ctx: &L0Context) -> Result<Self> {
        // A database whose record named a matrix keeps its region's size.
        Self::build(shared(ctx, None)?, ctx.config, Vec::new(), 0, Vec::new())
    }

    fn build(
        shared: Arc<Shared>,
        cfg: L0Config,
        rows: Vec<LiveRow>,
        compactor: usize,
        cursor: Vec<u8>,
    ) -> Result<Self> {
        Ok(Matrix(Arc::new(State {
            shared,
            cfg,
            rows,
            compactor,
            cursor,
            encoded: OnceLock::new(),
        })))
    }

    /// Rows as a change leaves them, with the receiver turned into the compactor if it is
    /// due (the compactor empty, the receiver at its share of the container).
    fn rebuilt(
        &self,
        rows: Vec<LiveRow>,
        mut compactor: usize,
        mut cursor: Vec<u8>,
    ) -> Result<Arc<dyn Level0>> {
        let st = &self.0;
        if compactor == 0 {
            let receiver: u64 = rows.iter().map(|r| r.r().len()).sum();
            if receiver >= switch_bytes(&st.cfg) {
                compactor = rows.len();
                cursor = Vec::new();
            }
        }
        Ok(Arc::new(Self::build(
            st.shared.clone(),
            st.cfg,
            rows,
            compactor,
            cursor,
        )?))
    }

    /// The layout a manifest record's state describes.
    ///
    /// # Errors
    /// `Corruption` when the state does not decode or names pages past the region.
    pub(crate) fn decode(state: &[u8], ctx: &L0Context) -> Result<Self> {
        let bad = |what: &str| Error::corrupt(format!("L0 matrix layout record: {what}"));
        let mut s = state;
        let (&version, rest) = s.split_first().ok_or_else(|| bad("empty"))?;
        if version != RECORD_VERSION {
            return Err(bad(&format!("version {version} is not known")));
        }
        s = rest;
        let container = get_varint64(&mut s).ok_or_else(|| bad("container size"))?;
        if container == 0 || !container.is_multiple_of(PAGE as u64) {
            return Err(bad("container size is not a whole number of pages"));
        }
        let compactor = get_varint32(&mut s).ok_or_else(|| bad("compactor"))? as usize;
        let cursor = get_length_prefixed(&mut s)
            .ok_or_else(|| bad("cursor"))?
            .to_vec();
        let n = get_varint32(&mut s).ok_or_else(|| bad("row count"))? as usize;
        if compactor > n {
            return Err(bad("more compactor rows than rows"));
        }
        let shared = shared(ctx, Some(container))?;
        let mut rows = Vec::with_capacity(n.min(1 << 16));
        for _ in 0..n {
            let id = get_varint64(&mut s).ok_or_else(|| bad("row id"))?;
            let prev = get_varint64(&mut s).ok_or_else(|| bad("row prev"))?;
            let entries = get_varint32(&mut s).ok_or_else(|| bad("row entries"))?;
            let data_len = get_varint32(&mut s).ok_or_else(|| bad("row data length"))?;
            let smallest = get_length_prefixed(&mut s).ok_or_else(|| bad("row smallest"))?;
            let largest = get_length_prefixed(&mut s).ok_or_else(|| bad("row largest"))?;
            let live_from = get_varint32(&mut s).ok_or_else(|| bad("row live entry"))?;
            let first_page = get_varint32(&mut s).ok_or_else(|| bad("row live page"))?;
            let nruns = get_varint32(&mut s).ok_or_else(|| bad("row runs"))? as usize;
            let mut runs = Vec::with_capacity(nruns.min(1 << 16));
            for _ in 0..nruns {
                let start = get_varint32(&mut s).ok_or_else(|| bad("run start"))?;
                let len = get_varint32(&mut s).ok_or_else(|| bad("run length"))?;
                runs.push((start, len));
            }
            if entries == 0 || live_from > entries || smallest > largest {
                return Err(bad(&format!("row {id} is malformed")));
            }
            let row = Row::new(
                id,
                prev,
                entries,
                data_len,
                (smallest.to_vec(), largest.to_vec()),
                runs,
            )?;
            if first_page > row.page_count() {
                return Err(bad(&format!("row {id}'s live page is past its pages")));
            }
            rows.push(LiveRow::new(
                &shared.pages,
                intern(&shared, row, false, None),
                live_from,
                first_page,
            )?);
        }
        if !s.is_empty() {
            return Err(bad("trailing bytes"));
        }
        Self::build(shared, ctx.config, rows, compactor, cursor)
    }

    fn encode(&self) -> &[u8] {
        self.0.encoded.get_or_init(|| self.encode_now())
    }

    fn encode_now(&self) -> Vec<u8> {
        let st = &self.0;
        let mut b = vec![RECORD_VERSION];
        put_varint64(&mut b, st.shared.pages.len() as u64);
        put_varint32(&mut b, st.compactor as u32);
        put_length_prefixed(&mut b, &st.cursor);
        put_varint32(&mut b, st.rows.len() as u32);
        for lr in &st.rows {
            let r = lr.r();
            put_varint64(&mut b, r.id);
            put_varint64(&mut b, r.prev);
            put_varint32(&mut b, r.entries);
            put_varint32(&mut b, r.data_len);
            put_length_prefixed(&mut b, &r.smallest);
            put_length_prefixed(&mut b, &r.largest);
            put_varint32(&mut b, lr.live_from);
            put_varint32(&mut b, lr.first_page);
            let runs = r.runs();
            put_varint32(&mut b, runs.len() as u32);
            for &(start, len) in runs {
                put_varint32(&mut b, start);
                put_varint32(&mut b, len);
            }
        }
        b
    }

    fn region(&self) -> Result<&Arc<dyn PmemRegion>> {
        self.0.shared.pages.region(!self.0.rows.is_empty())
    }

    /// The rows as the row directory lists them.
    fn listing(&self) -> directory::Listing {
        directory::Listing {
            container: self.0.shared.pages.len() as u64,
            rows: self
                .0
                .rows
                .iter()
                .map(|lr| directory::Listed {
                    id: lr.r().id,
                    entries: lr.r().entries,
                    data_len: lr.r().data_len,
                    live_from: lr.live_from,
                    first_page: lr.first_page,
                    runs: lr.r().runs_from(lr.first_page),
                })
                .collect(),
        }
    }

    fn receiver(&self) -> &[LiveRow] {
        &self.0.rows[self.0.compactor..]
    }

    fn compactor(&self) -> &[LiveRow] {
        &self.0.rows[..self.0.compactor]
    }

    /// Bytes of a row still in L0 (its pages from the first live one).
    fn live_bytes(r: &LiveRow) -> u64 {
        u64::from(r.r().page_count() - r.first_page) * PAGE as u64
    }

    /// The newest entry of `user_key` visible at `target` (an internal seek key), searching
    /// rows newest first; with `hints`, each row's search is narrowed by the forward
    /// pointers of the row searched before it.
    fn search(
        &self,
        target: &[u8],
        user_key: &[u8],
        hints: bool,
    ) -> Result<Option<(SeqNo, Lookup)>> {
        let st = &self.0;
        if st.rows.is_empty() {
            return Ok(None);
        }
        let region = &**self.region()?;
        let bits = st.cfg.matrix_row_bloom_bits;
        let h = (bits > 0).then(|| filter::filter_hash(user_key));
        // (row id, first index, last index) the forward pointers allow in that row.
        let mut hint: Option<(u64, u32, u32)> = None;
        for (i, lr) in st.rows.iter().enumerate().rev() {
            if i < st.compactor && user_key < st.cursor.as_slice() {
                // The compactor holds no key below its cursor: those are in L1 now.
                break;
            }
            let r = lr.r();
            lr.row.check(region, lr.first_page)?;
            if let Some(h) = h {
                if !lr.row.may_contain(region, bits, h, lr.live_from)? {
                    // Skipped: the next row is searched without a hint.
                    hint = None;
                    continue;
                }
            }
            let n = r.entries;
            let p = if user_key < r.smallest.as_slice() {
                0
            } else if user_key > r.largest.as_slice() {
                n
            } else {
                let (mut lo, mut hi) = (lr.live_from, n);
                if let Some((_, a, b)) = hint.filter(|h| hints && h.0 == r.id) {
                    lo = lo.max(a).min(n);
                    hi = hi.min(b).max(lo);
                }
                let p = r.lower_bound(region, target, lo, hi)?;
                if p < n {
                    if let Some((seq, kind, v)) = r.value_if(region, p, user_key)? {
                        return Ok(Some((seq, Lookup::of(kind, v))));
                    }
                }
                p
            };
            if hints && r.prev != 0 {
                // Entry `p - 1`'s pointer bounds the search below, if that entry is still
                // held: below `live_from` a column compaction took it, and its page may
                // hold another row's bytes by now (read, it made a garbage hint, and the
                // next row's search read freed entries: "runs past the entries' end").
                let lo = if p > lr.live_from {
                    r.meta(region, p - 1)?.1
                } else {
                    0
                };
                let hi = if p < n {
                    r.meta(region, p)?.1
                } else {
                    u32::MAX
                };
                hint = Some((r.prev, lo, hi));
            } else {
                hint = None;
            }
        }
        Ok(None)
    }

    /// Entries of `lr` with user keys below `end` (`None`: all) from its first live one:
    /// the index past the last.
    fn end_index(region: &dyn PmemRegion, lr: &LiveRow, end: Option<&[u8]>) -> Result<u32> {
        let r = lr.r();
        match end {
            None => Ok(r.entries),
            Some(e) if e > r.largest.as_slice() => Ok(r.entries),
            Some(e) => r.lower_bound(
                region,
                &key::seek_key(e, SeqNo::MAX),
                lr.live_from,
                r.entries,
            ),
        }
    }

    /// Bytes of the compactor's entries from the cursor up to `end`.
    fn column_bytes(&self, region: &dyn PmemRegion, end: Option<&[u8]>) -> Result<u64> {
        let mut total = 0u64;
        for lr in self.compactor() {
            let r = lr.r();
            let to = Self::end_index(region, lr, end)?;
            total += u64::from(r.offset(region, to)? - r.offset(region, lr.live_from)?);
        }
        Ok(total)
    }

    /// The end (exclusive user key; `None`: the compactor's end) of the next column: L1's
    /// table bounds from the cursor on are added until the column holds at least half of
    /// `matrix_column_tables` tables' bytes; a range that alone would take it past all of
    /// them is cut at a key of the compactor's largest row instead.
    fn column_end(
        &self,
        region: &dyn PmemRegion,
        below: &[Arc<FileMeta>],
    ) -> Result<Option<Vec<u8>>> {
        let st = &self.0;
        let upper = st.cfg.matrix_column_bytes.max(1);
        let lower = upper / 2;
        let cuts = below
            .iter()
            .map(|f| f.smallest_user_key())
            .filter(|k| *k > st.cursor.as_slice());
        let mut start: Option<Vec<u8>> = None;
        let mut before = 0u64;
        for end in cuts.map(Some).chain(std::iter::once(None)) {
            let bytes = self.column_bytes(region, end)?;
            if bytes < lower && end.is_some() {
                start = end.map(<[u8]>::to_vec);
                before = bytes;
                continue;
            }
            if bytes <= upper || before >= lower {
                return Ok(end.map(<[u8]>::to_vec));
            }
            // Too much between `start` and `end`: cut it at a key of the row with the most
            // entries there, the first at which the column reaches the lower bound.
            return Ok(self
                .split(region, start.as_deref(), end, lower)?
                .or_else(|| end.map(<[u8]>::to_vec)));
        }
        Ok(None)
    }

    /// A user key in (`start`, `end`) at which the column from the cursor holds at least
    /// `lower` bytes, chosen among the keys of the compactor row with the most entries
    /// there; `None` if no key there is usable.
    fn split(
        &self,
        region: &dyn PmemRegion,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
        lower: u64,
    ) -> Result<Option<Vec<u8>>> {
        let mut best: Option<(u32, &LiveRow, u32, u32)> = None;
        for lr in self.compactor() {
            let a = match start {
                Some(s) => Self::end_index(region, lr, Some(s))?,
                None => lr.live_from,
            };
            let b = Self::end_index(region, lr, end)?;
            if best.is_none_or(|(n, ..)| b - a > n) {
                best = Some((b - a, lr, a, b));
            }
        }
        let Some((_, lr, mut lo, mut hi)) = best else {
            return Ok(None);
        };
        let r = lr.r();
        let floor = start.unwrap_or(self.0.cursor.as_slice()).to_vec();
        // The first index whose user key, as the column's end, reaches `lower`.
        let key_at = |i: u32| -> Result<Vec<u8>> {
            Ok(key::user_key(&r.entry(region, i, false)?.0).to_vec())
        };
        lo += 1;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = key_at(mid)?;
            if k.as_slice() > floor.as_slice() && self.column_bytes(region, Some(&k))? >= lower {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        if lo >= r.entries {
            return Ok(None);
        }
        let k = key_at(lo)?;
        Ok((k.as_slice() > floor.as_slice() && end.is_none_or(|e| k.as_slice() < e)).then_some(k))
    }

    /// A part taking `ranges` (row index, first entry, end entry) of the rows, with `change`.
    fn part(
        &self,
        region: &dyn PmemRegion,
        ranges: Vec<(usize, u32, u32)>,
        change: Arc<dyn L0Change>,
    ) -> Result<Option<L0Part>> {
        let mut smallest: Option<Vec<u8>> = None;
        let mut largest: Option<Vec<u8>> = None;
        let mut bytes = 0;
        for &(i, lo, hi) in &ranges {
            if lo >= hi {
                continue;
            }
            let lr = &self.0.rows[i];
            lr.row.check(region, lr.first_page)?;
            let r = lr.r();
            let first = key::user_key(&r.entry(region, lo, false)?.0).to_vec();
            let last = key::user_key(&r.entry(region, hi - 1, false)?.0).to_vec();
            bytes += u64::from(r.offset(region, hi)? - r.offset(region, lo)?);
            if smallest.as_ref().is_none_or(|s| first < *s) {
                smallest = Some(first);
            }
            if largest.as_ref().is_none_or(|l| last > *l) {
                largest = Some(last);
            }
        }
        let (Some(smallest), Some(largest)) = (smallest, largest) else {
            return Ok(None);
        };
        Ok(Some(L0Part {
            smallest,
            largest,
            bytes,
            token: TOKEN,
            column: Arc::new(Column {
                source: self.clone(),
                ranges,
                change,
            }),
        }))
    }

    /// The next column of the compactor as a part; with `promote`, the compactor is the
    /// receiver, promoted when the column lands.
    fn column_part(&self, below: &[Arc<FileMeta>], promote: bool) -> Option<L0Part> {
        match self.pick_column(below, promote) {
            Ok(part) => part,
            // Without the column the compactor never drains and writes would wait for
            // the container forever: the error becomes the compaction's (which stops the
            // database with it), through a part that fails when it is read.
            Err(e) => Some(L0Part {
                smallest: self.0.cursor.clone(),
                largest: self.0.cursor.clone(),
                bytes: 0,
                token: TOKEN,
                column: Arc::new(Unreadable(e)),
            }),
        }
    }

    fn pick_column(&self, below: &[Arc<FileMeta>], promote: bool) -> Result<Option<L0Part>> {
        let region = &**self.region()?;
        let end = self.column_end(region, below)?;
        let mut ranges = Vec::new();
        let mut after = Vec::new();
        let mut expect = Vec::new();
        let mut done = true;
        for (i, lr) in self.compactor().iter().enumerate() {
            let r = lr.r();
            let to = Self::end_index(region, lr, end.as_deref())?;
            ranges.push((i, lr.live_from, to));
            expect.push((r.id, lr.live_from));
            let off = r.offset(region, to)?;
            after.push((to, off / PAGE as u32));
            done &= to == r.entries;
        }
        let change = Arc::new(ColumnDone {
            promote,
            expect,
            after,
            cursor: if done { None } else { end },
        });
        self.part(region, ranges, change)
    }
}

/// Bytes of receiver at which it becomes the compactor.
fn switch_bytes(cfg: &L0Config) -> u64 {
    (cfg.matrix_container / 100).saturating_mul(u64::from(cfg.matrix_receiver_percent))
}

/// The matrix layout's registration (id 2).
pub(crate) const LAYOUT: super::Layout = super::Layout {
    kind: L0Layout::Matrix,
    id: 2,
    feature: Some(MATRIX_FEATURE),
    initial: |ctx| Ok(Arc::new(Matrix::initial(ctx)?)),
    decode: |state, ctx| Ok(Arc::new(Matrix::decode(state, ctx)?)),
    check_options,
    persistent_dir: Some(region::region_dir),
};

impl Level0 for Matrix {
    fn kind(&self) -> L0Layout {
        L0Layout::Matrix
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn record(&self) -> super::L0Record {
        super::L0Record {
            layout: LAYOUT.id,
            state: self.encode().to_vec(),
        }
    }

    fn feature(&self) -> Option<&'static str> {
        Some(MATRIX_FEATURE)
    }

    fn arrange(&self, files: &mut Vec<Arc<FileMeta>>) -> Result<()> {
        if let Some(f) = files.first() {
            return Err(Error::corrupt(format!(
                "table {} is in level 0, whose layout (the matrix) keeps no tables",
                f.number
            )));
        }
        Ok(())
    }

    fn ingest(
        &self,
        job: &mut Ingest<'_>,
        mem: &Arc<MemTable>,
        _files: &[Arc<FileMeta>],
    ) -> Result<Ingested> {
        let st = &self.0;
        let region = self.region()?.clone();
        let prev = st.rows.last().map(|r| (r.row.row.clone(), r.live_from));
        let mut writer = RowWriter::new(st.shared.pages.clone(), region, prev)
            .with_filter(st.cfg.matrix_row_bloom_bits);
        job.entries(mem, None, None, &mut writer)?;
        let Some(row::Written { row, held, filter }) = writer.finish()? else {
            return Ok(Ingested::default());
        };
        // The writer's pages are the row's from page 0 on: they become its hold.
        debug_assert_eq!(held.runs(), row.runs_from(0));
        let row = LiveRow {
            row: intern(&st.shared, row, true, filter),
            live_from: 0,
            first_page: 0,
            _hold: Arc::new(held),
        };
        Ok(Ingested {
            tables: Vec::new(),
            other_bytes: row.r().len(),
            change: Some(Arc::new(AddRow { row })),
        })
    }

    fn get<'a>(
        &self,
        _files: &'a [Arc<FileMeta>],
        _tables: &TableCache,
        target: &[u8],
        user_key: &[u8],
        _searched: &mut dyn FnMut(&'a Arc<FileMeta>),
    ) -> Result<Option<(SeqNo, Lookup)>> {
        self.search(target, user_key, self.0.cfg.matrix_hints)
    }

    fn iterators(
        &self,
        _files: &[Arc<FileMeta>],
        _tables: &Arc<TableCache>,
        out: &mut Vec<Box<dyn InternalIterator>>,
    ) {
        let st = &self.0;
        if st.rows.is_empty() {
            return;
        }
        let region = match self.region() {
            Ok(r) => r.clone(),
            Err(e) => {
                out.push(Box::new(EmptyIterator(Err(e))));
                return;
            }
        };
        let keep: Arc<dyn Any + Send + Sync> = st.clone();
        for lr in st.rows.iter().rev() {
            if let Err(e) = lr.row.check(&*region, lr.first_page) {
                out.push(Box::new(EmptyIterator(Err(e))));
                continue;
            }
            out.push(Box::new(RowIter::new(
                region.clone(),
                lr.row.row.clone(),
                keep.clone(),
                lr.live_from,
                lr.r().entries,
            )));
        }
    }

    fn seek_sources<'a>(
        &self,
        _files: &'a [Arc<FileMeta>],
        _user_key: &[u8],
        _visit: &mut dyn FnMut(&'a Arc<FileMeta>),
    ) {
    }

    fn pressure(&self, _files: &[Arc<FileMeta>], opts: &Options) -> Pressure {
        let pages = &self.0.shared.pages;
        let total = pages.pages();
        // Room kept for every memtable that may be waiting to flush when writes stop.
        let reserve = opts.max_write_buffer_number * row_pages(opts.write_buffer_size);
        let stop = total.saturating_sub(reserve).max(1);
        Pressure {
            level: total - pages.free(),
            slowdown: stop - stop / 10,
            stop,
        }
    }

    fn admits(
        &self,
        unflushed: &dyn Fn() -> usize,
        bytes: usize,
        entries: usize,
        opts: &Options,
    ) -> bool {
        // Held back only while a column can free pages: a writer waiting here waits for one.
        // (With an empty compactor, the receiver below its switch point leaves the rest of
        // the container, at least `100 - matrix_receiver_percent` percent, for a recovery.)
        if self.0.compactor == 0 {
            return true;
        }
        // The group as a row holds it (a memtable's entries already take more than that).
        let group = bytes + entries * row::ENTRY_OVERHEAD;
        let needed = recovery_pages(unflushed() + group, opts.write_buffer_size);
        self.0.shared.pages.free() >= needed
    }

    fn compacts_all_of_l0(&self) -> bool {
        false
    }

    fn own_files(&self) -> Vec<std::path::PathBuf> {
        let sh = &self.0.shared;
        vec![
            sh.pages.path().to_path_buf(),
            sh.pages.generations_path(),
            sh.directory.path().to_path_buf(),
        ]
    }

    fn copies_own_files(&self) -> bool {
        true
    }

    /// A region of the same size whose pages are this layout's rows' (the pages it holds,
    /// at the same offsets, so the record names them unchanged), zeros elsewhere, and a row
    /// directory listing them (a repair of a copy whose manifest is damaged before any
    /// open finds its rows). The pages' generations are not copied: a writer's start anew.
    fn write_copy(&self, fs: &Arc<dyn crate::fs::Fs>, dir: &std::path::Path) -> Result<()> {
        const CHUNK: usize = 64 * PAGE;
        if self.0.rows.is_empty() {
            // (The copy's first flush makes its region, as a new database's does.)
            return Ok(());
        }
        let pages = &self.0.shared.pages;
        let to = fs.open_region(&dir.join(REGION_NAME), pages.len())?;
        {
            let from = self.region()?;
            for row in &self.0.rows {
                for &(first, n) in row._hold.runs() {
                    let (start, end) = (first as usize * PAGE, (first + n) as usize * PAGE);
                    let mut at = start;
                    while at < end {
                        let len = CHUNK.min(end - at);
                        let bytes = from.read_at(at, len)?;
                        // SAFETY: the region was created just above and this process alone
                        // has it; nothing reads it until the copy is opened.
                        unsafe { to.write_at(at, &bytes)? };
                        at += len;
                    }
                }
            }
        }
        to.persist(0, to.len())?;
        drop(to);
        directory::Directory::new(
            fs.clone(),
            dir.join(directory::DIRECTORY_NAME),
            pages.len() as u64,
        )
        .write(&self.listing())
    }

    fn check_view(&self) -> Result<()> {
        let pages = &self.0.shared.pages;
        for row in &self.0.rows {
            for &(first, n) in row._hold.runs() {
                pages.check_view(first, n)?;
            }
        }
        Ok(())
    }

    fn check_files(&self) -> Result<()> {
        let path = self.0.shared.pages.path();
        let fs = self.0.shared.pages.fs();
        if fs.exists(path) {
            let size = fs.file_size(path)?;
            let len = self.0.shared.pages.len() as u64;
            if size != len {
                return Err(crate::fs::region_size_error(path, size, len as usize));
            }
        }
        if !self.0.rows.is_empty() && !fs.exists(path) {
            return Err(Error::corrupt(format!(
                "{}: the persistent-memory region the manifest's L0 layout names is missing \
                 (it holds {} of L0's rows)",
                path.display(),
                self.0.rows.len()
            )));
        }
        Ok(())
    }

    fn prepare(&self) -> Result<()> {
        // Creating the region reserves (zero-fills) all of it: 0.2 s for 1 GiB on a tmpfs.
        self.region()?;
        // The pages' generations, for read-only views started from now on.
        self.0.shared.pages.start_generations()
    }

    fn write_locator(&self) -> Result<()> {
        self.0.shared.directory.write(&self.listing())
    }

    fn located_parts(&self) -> Result<Option<super::CheckedParts>> {
        let sh = &self.0.shared;
        let fs = sh.pages.fs();
        let Some(listing) = directory::read(&**fs, sh.directory.path())? else {
            return Ok(None);
        };
        if listing.rows.is_empty() {
            return Ok(Some(Vec::new()));
        }
        // The region as the directory sizes it (the options may name another size).
        let path = sh.pages.path();
        if !fs.exists(path) {
            return Err(Error::corrupt(format!(
                "{}: the region the row directory lists {} rows in is missing",
                path.display(),
                listing.rows.len()
            )));
        }
        let len = usize::try_from(listing.container)
            .map_err(|_| Error::corrupt("the row directory's region does not fit in memory"))?;
        let region = crate::pmem::open_cut_short(&**fs, path, len)?;
        let keep: Arc<dyn Any + Send + Sync> = Arc::new(());
        let parts = listing
            .rows
            .iter()
            .map(|l| {
                let row = Row::located(l.id, l.entries, l.data_len, l.first_page, &l.runs)?;
                if l.first_page >= row.page_count() {
                    return Err(Error::corrupt(format!(
                        "the row directory's row {} starts past its pages",
                        l.id
                    )));
                }
                row.verify(&*region, l.first_page)?;
                let mut it: Box<dyn InternalIterator> = Box::new(RowIter::new(
                    region.clone(),
                    Arc::new(row),
                    keep.clone(),
                    l.live_from,
                    l.entries,
                ));
                it.seek_to_first();
                it.status().map(|()| it)
            })
            .collect();
        Ok(Some(parts))
    }

    fn score(&self, _files: &[Arc<FileMeta>], _opts: &Options) -> f64 {
        let st = &self.0;
        if st.compactor > 0 {
            let left: u64 = self.compactor().iter().map(Self::live_bytes).sum();
            1.0 + left as f64 / st.cfg.matrix_column_bytes.max(1) as f64
        } else {
            let receiver: u64 = self.receiver().iter().map(|r| r.r().len()).sum();
            receiver as f64 / switch_bytes(&st.cfg).max(1) as f64
        }
    }

    fn is_empty(&self, _files: &[Arc<FileMeta>]) -> bool {
        self.0.rows.is_empty()
    }

    fn may_hold(
        &self,
        _files: &[Arc<FileMeta>],
        start: &[u8],
        end: &[u8],
        _held: crate::file_meta::Held,
    ) -> bool {
        // Rows keep no sequence range: any row overlapping the range may.
        self.0.rows.iter().any(|lr| {
            let r = lr.r();
            r.smallest.as_slice() < end && r.largest.as_slice() >= start
        })
    }

    fn bytes(&self, _files: &[Arc<FileMeta>]) -> u64 {
        self.0.rows.iter().map(Self::live_bytes).sum()
    }

    fn capacity(&self, _opts: &Options) -> u64 {
        self.0.shared.pages.len() as u64
    }

    fn pick(
        &self,
        _files: &[Arc<FileMeta>],
        _busy: &HashSet<FileNumber>,
        _opts: &Options,
    ) -> Option<Vec<Arc<FileMeta>>> {
        None
    }

    fn manual_inputs(
        &self,
        _files: &[Arc<FileMeta>],
        _lo: Option<&[u8]>,
        _hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        Vec::new()
    }

    fn pick_part(&self, below: &[Arc<FileMeta>], busy: &HashSet<FileNumber>) -> Option<L0Part> {
        if self.0.compactor == 0 || busy.contains(&TOKEN) {
            return None;
        }
        self.column_part(below, false)
    }

    fn idle_work(&self) -> bool {
        !self.0.rows.is_empty()
    }

    fn idle_part(&self, below: &[Arc<FileMeta>], busy: &HashSet<FileNumber>) -> Option<L0Part> {
        let st = &self.0;
        if st.compactor > 0 || st.rows.is_empty() || busy.contains(&TOKEN) {
            return None;
        }
        // The receiver drains as if it had reached its switch point: its rows become the
        // compactor when the first column cut from them lands (`ColumnDone::promote`).
        let promoted = Self::build(
            st.shared.clone(),
            st.cfg,
            st.rows.clone(),
            st.rows.len(),
            Vec::new(),
        )
        .ok()?;
        promoted.column_part(below, true)
    }

    fn manual_part(
        &self,
        _lo: Option<&[u8]>,
        _hi: Option<&[u8]>,
        busy: &HashSet<FileNumber>,
    ) -> Option<L0Part> {
        let st = &self.0;
        if st.rows.is_empty() || busy.contains(&TOKEN) {
            return None;
        }
        // The whole matrix: its rows cannot leave L0 by key range but through the
        // compactor's cursor, and a manual compaction must move every key it covers.
        let region = self.region().ok()?;
        let ranges = st
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.live_from, r.r().entries))
            .collect();
        let change = Arc::new(RemoveRows {
            taken: st.rows.iter().map(|r| (r.r().id, r.live_from)).collect(),
        });
        self.part(&**region, ranges, change).ok().flatten()
    }
}

/// Pages a row of a memtable of `write_buffer_size` bytes may take (its entries, metadata
/// and footer are no larger than the memtable's arena, with slack).
fn row_pages(write_buffer_size: usize) -> usize {
    (write_buffer_size + write_buffer_size / 4) / PAGE + 2
}

/// Pages the rows of a recovery that replays `unflushed` bytes of memtables may take: it
/// cuts a row once its memtable reaches `write_buffer_size` (at least that much in each
/// row but the last, which may follow one that a large batch took past it), each row as
/// [`row_pages`] bounds it.
fn recovery_pages(unflushed: usize, write_buffer_size: usize) -> usize {
    let rows = unflushed / write_buffer_size.max(1) + 2;
    (unflushed + unflushed / 4) / PAGE + 2 * rows
}

/// Bytes a row of a memtable of `write_buffer_size` bytes may take.
fn row_bytes(write_buffer_size: usize) -> u64 {
    (row_pages(write_buffer_size) * PAGE) as u64
}

/// The options' checks that are the matrix layout's: its container's size against the rows
/// of the memtables it must hold, its receiver and column settings.
///
/// # Errors
/// `InvalidArgument` naming the first bad field.
pub(crate) fn check_options(o: &crate::Options) -> crate::error::Result<()> {
    let bad = |field: &str, why: &str| {
        Err(crate::error::Error::invalid(format!(
            "Options::{field}: {why}"
        )))
    };
    let pages = PAGE as u64;
    let row = row_bytes(o.write_buffer_size);
    let least = 4 * o.max_write_buffer_number.max(1) as u64 * row;
    if !o.matrix_container_size.is_multiple_of(pages)
        || o.matrix_container_size < least
        || usize::try_from(o.matrix_container_size).is_err()
    {
        return bad(
            "matrix_container_size",
            &format!(
                "must be a whole number of 4 KiB pages and at least {least} bytes \
                     (4 x max_write_buffer_number memtables of write_buffer_size)"
            ),
        );
    }
    if !(10..=90).contains(&o.matrix_receiver_percent) {
        return bad("matrix_receiver_percent", "must be between 10 and 90");
    }
    if o.matrix_column_tables == 0 {
        return bad("matrix_column_tables", "must be at least 1");
    }
    if o.matrix_row_bloom_bits > 64 {
        return bad("matrix_row_bloom_bits", "must be at most 64");
    }
    if o.max_mem_compaction_level > 0 {
        return bad(
            "max_mem_compaction_level",
            "must be 0 with l0_layout = Matrix (a flush writes a RowTable into the \
                 matrix, never a table below L0)",
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::region::CheckedRow;
    use super::*;
    use crate::fs::{Fs, MemFs};
    use crate::pmem::{Held, Pages};
    use std::sync::atomic::AtomicBool;

    /// A layout holds a row's pages through the row's hold, shared by every layout that
    /// names the row at the same first page: a column's cut holds only the pages from its
    /// new first page on, and the pages below it are free once no older layout is left.
    #[test]
    fn a_cut_row_frees_the_pages_below_its_cut_once_older_layouts_are_gone() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        fs.create_dir_all(std::path::Path::new("/p")).unwrap();
        let pages = Arc::new(Pages::new(fs, std::path::PathBuf::from("/p/r"), 64 * PAGE));
        let mut held = Held::empty(&pages);
        for _ in 0..8 {
            pages.allocate(&mut held).unwrap();
        }
        let row = Row::new(
            1,
            0,
            1,
            10,
            (b"a".to_vec(), b"z".to_vec()),
            held.runs().to_vec(),
        )
        .unwrap();
        let live = LiveRow {
            row: Arc::new(CheckedRow {
                row: Arc::new(row),
                checked: AtomicBool::new(true),
                filter: OnceLock::new(),
            }),
            live_from: 0,
            first_page: 0,
            _hold: Arc::new(held),
        };
        assert_eq!(pages.free(), 56);
        let older = live.clone();
        let cut = live.cut(&pages, 5, 3).unwrap();
        drop(live);
        assert_eq!(
            pages.free(),
            56,
            "an older layout still names all eight pages"
        );
        drop(older);
        assert_eq!(pages.free(), 59, "pages 0..3 are below the cut");
        let same_page = cut.cut(&pages, 6, 3).unwrap();
        drop(cut);
        assert_eq!(pages.free(), 59, "a cut on the same page keeps its hold");
        drop(same_page);
        assert_eq!(pages.free(), 64);
    }
}
