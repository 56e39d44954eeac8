//! RowTables: one flushed memtable in the matrix's pages (docs/format/row_table.md).
//!
//! A row is a byte stream laid over its pages in order: the entries (internal key and value,
//! each readable from its offset), the metadata array (per entry: its offset and its forward
//! pointer into the row it was written after), and a footer with both checksums. Reads go
//! through the metadata array in the region, as MatrixKV's do; nothing of a row is kept in
//! DRAM but its bounds and its page list.

use std::any::Any;
use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::{get_varint32, put_varint32};
use crate::error::{Error, Result};
use crate::fs::PmemRegion;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo, ValueKind};
use crate::l0::EntrySink;
use crate::pmem::{Held, Pages, Run, PAGE};
use crate::sst::filter;

/// `MXRT`: the footer's magic number.
const MAGIC: u32 = 0x4D58_5254;
/// Bytes of the footer: magic, entries, data length, the page checksums' CRC, metadata's
/// CRC.
pub(crate) const FOOTER: usize = 20;
/// Bytes of a metadata element: the entry's offset and its forward pointer.
const META: usize = 8;
/// Most bytes of an entry's header (two 32-bit varints).
const MAX_HEADER: usize = 10;
/// Most bytes an entry takes in a row beyond its user key and value: its header, the
/// internal key's trailer and its metadata element.
pub(crate) const ENTRY_OVERHEAD: usize = MAX_HEADER + 8 + META;
/// Bytes a key probe reads at once: the header and a key of up to 54 bytes.
const HEAD: usize = 64;

/// A RowTable as its layout records it.
#[derive(Debug)]
pub(crate) struct Row {
    /// Unique in the database (a file number).
    pub id: u64,
    /// The row whose indexes the forward pointers hold (0: none).
    pub prev: u64,
    /// Entries in the row.
    pub entries: u32,
    /// Bytes of the entries (the metadata array starts here).
    pub data_len: u32,
    /// The smallest user key.
    pub smallest: Vec<u8>,
    /// The largest user key.
    pub largest: Vec<u8>,
    /// The pages the row was written in, in order, from logical page `skipped` on.
    pages: Vec<u32>,
    /// Logical pages before `pages` that are not known: a row located by the row directory
    /// names only the pages it still holds ([`Row::located`]); 0 for a recorded row.
    skipped: u32,
    /// `pages` as runs (each as long as it can be), kept: every layout record and row
    /// directory names them, and a flush's record names every row's.
    runs: Vec<Run>,
}

/// Pages the entries of a row with `data_len` bytes of them touch: one checksum each.
fn data_pages(data_len: u32) -> u32 {
    data_len.div_ceil(PAGE as u32)
}

/// The runs of `pages` (in order).
fn runs_of(pages: &[u32]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for &p in pages {
        match runs.last_mut() {
            Some((s, l)) if *s + *l == p => *l += 1,
            _ => runs.push((p, 1)),
        }
    }
    runs
}

/// The pages `runs` name, in order.
fn pages_of(runs: &[Run]) -> Vec<u32> {
    runs.iter()
        .flat_map(|&(s, l)| s..s.saturating_add(l))
        .collect()
}

impl Row {
    /// A row as recorded: `runs` (its pages, in order) must cover its bytes.
    ///
    /// # Errors
    /// `Corruption` when the runs hold fewer bytes than the row.
    pub fn new(
        id: u64,
        prev: u64,
        entries: u32,
        data_len: u32,
        bounds: (Vec<u8>, Vec<u8>),
        runs: Vec<Run>,
    ) -> Result<Self> {
        let pages = pages_of(&runs);
        let row = Row {
            id,
            prev,
            entries,
            data_len,
            smallest: bounds.0,
            largest: bounds.1,
            runs: runs_of(&pages),
            pages,
            skipped: 0,
        };
        row.check_pages()?;
        Ok(row)
    }

    /// A row as the row directory lists it (docs/format/row_table.md): only its pages from
    /// logical page `first_page` on are known (`runs`), and no bounds (a repair reads it
    /// whole from its first live entry). Reading below `first_page` is an error.
    ///
    /// # Errors
    /// `Corruption` when the runs cannot hold the row's bytes.
    pub fn located(
        id: u64,
        entries: u32,
        data_len: u32,
        first_page: u32,
        runs: &[Run],
    ) -> Result<Self> {
        let pages = pages_of(runs);
        let row = Row {
            id,
            prev: 0,
            entries,
            data_len,
            smallest: Vec::new(),
            largest: Vec::new(),
            runs: runs_of(&pages),
            pages,
            skipped: first_page,
        };
        row.check_pages()?;
        Ok(row)
    }

    fn check_pages(&self) -> Result<()> {
        let pages = u64::from(self.skipped) + self.pages.len() as u64;
        if pages * (PAGE as u64) < self.len() {
            return Err(Error::corrupt(format!(
                "RowTable {}: {pages} pages cannot hold its {} bytes",
                self.id,
                self.len()
            )));
        }
        Ok(())
    }

    /// Bytes of the whole row.
    pub fn len(&self) -> u64 {
        u64::from(self.data_len)
            + u64::from(self.entries) * META as u64
            + 4 * u64::from(data_pages(self.data_len))
            + FOOTER as u64
    }

    /// The runs of the row's pages (what the layout record names; a recorded row knows
    /// them all).
    pub fn runs(&self) -> &[Run] {
        debug_assert_eq!(self.skipped, 0, "a located row's first pages are not known");
        &self.runs
    }

    /// The runs of pages from logical page `first` on (what a layout holds of the row):
    /// the kept runs less their first `first` pages, as `runs_of` would cut them from the
    /// pages (which the test `runs_from_cuts_the_kept_runs_as_the_pages_would` checks).
    pub fn runs_from(&self, first: u32) -> Vec<Run> {
        let mut skip = first.saturating_sub(self.skipped);
        let mut out = Vec::new();
        for &(start, len) in &self.runs {
            if skip >= len {
                skip -= len;
                continue;
            }
            out.push((start + skip, len - skip));
            skip = 0;
        }
        out
    }

    /// Pages of the row.
    pub fn page_count(&self) -> u32 {
        self.skipped + self.pages.len() as u32
    }

    /// Bytes `off..off + len` of the row's stream.
    fn read(&self, region: &dyn PmemRegion, off: u64, len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        self.read_into(region, off, &mut out)?;
        Ok(out)
    }

    /// Bytes `off..off + out.len()` of the row's stream, into `out`.
    fn read_into(&self, region: &dyn PmemRegion, off: u64, out: &mut [u8]) -> Result<()> {
        let len = out.len();
        if off + len as u64 > self.len() {
            return Err(Error::corrupt(format!(
                "RowTable {}: a read of bytes {off}..+{len} past its end ({})",
                self.id,
                self.len()
            )));
        }
        let mut done = 0;
        while done < len {
            let at = off + done as u64;
            let logical = (at / PAGE as u64) as usize;
            let Some(&page) = logical
                .checked_sub(self.skipped as usize)
                .and_then(|i| self.pages.get(i))
            else {
                return Err(self.bad(format!(
                    "its page {logical} is not held (a read below its first live entry)"
                )));
            };
            let page = page as usize;
            let in_page = (at % PAGE as u64) as usize;
            let n = (PAGE - in_page).min(len - done);
            region.read_into(page * PAGE + in_page, &mut out[done..done + n])?;
            done += n;
        }
        Ok(())
    }

    /// Where bytes `off..off + len` of the row's stream lie in the region, if on pages
    /// that follow each other there (so that they can be read in place); `None` if they
    /// cross from one run of pages to another, or lie outside the pages held.
    fn region_span(&self, off: u64, len: usize) -> Option<usize> {
        if len == 0 || off + len as u64 > self.len() {
            return None;
        }
        let first = usize::try_from(off / PAGE as u64).ok()?;
        let last = usize::try_from((off + len as u64 - 1) / PAGE as u64).ok()?;
        let skipped = self.skipped as usize;
        let pages = self
            .pages
            .get(first.checked_sub(skipped)?..=last.checked_sub(skipped)?)?;
        let start = pages[0];
        if pages
            .iter()
            .enumerate()
            .any(|(k, &p)| u64::from(p) != u64::from(start) + k as u64)
        {
            return None;
        }
        Some(start as usize * PAGE + (off % PAGE as u64) as usize)
    }

    /// Entry `i`'s offset and forward pointer.
    pub fn meta(&self, region: &dyn PmemRegion, i: u32) -> Result<(u32, u32)> {
        let mut b = [0u8; META];
        self.read_into(
            region,
            u64::from(self.data_len) + u64::from(i) * META as u64,
            &mut b,
        )?;
        Ok((
            u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        ))
    }

    /// The offset of entry `i`; the entries' end for `i == entries`.
    pub fn offset(&self, region: &dyn PmemRegion, i: u32) -> Result<u32> {
        if i >= self.entries {
            return Ok(self.data_len);
        }
        let (off, _) = self.meta(region, i)?;
        if off >= self.data_len {
            return Err(self.bad(format!("entry {i} at {off}, past the entries' end")));
        }
        Ok(off)
    }

    fn bad(&self, what: String) -> Error {
        Error::corrupt(format!("RowTable {}: {what}", self.id))
    }

    /// Entry `i`'s internal key, in `head` when it fits there with the header (one read of
    /// the region for short keys) or else in `long`, and where its value lies (offset in the
    /// stream, length).
    fn key_in<'b>(
        &self,
        region: &dyn PmemRegion,
        i: u32,
        head: &'b mut [u8; HEAD],
        long: &'b mut Vec<u8>,
    ) -> Result<(&'b [u8], u64, usize)> {
        let off = self.offset(region, i)?;
        let avail = (self.data_len - off) as usize;
        let got = avail.min(HEAD);
        self.read_into(region, u64::from(off), &mut head[..got])?;
        let mut s = &head[..got];
        let (Some(klen), Some(vlen)) = (get_varint32(&mut s), get_varint32(&mut s)) else {
            return Err(self.bad(format!("entry {i} has a malformed header")));
        };
        let hlen = got - s.len();
        let (klen, vlen) = (klen as usize, vlen as usize);
        if hlen + klen + vlen > avail || klen < 8 {
            return Err(self.bad(format!("entry {i} runs past the entries' end")));
        }
        let value_at = u64::from(off) + (hlen + klen) as u64;
        if hlen + klen <= got {
            return Ok((&head[hlen..hlen + klen], value_at, vlen));
        }
        long.resize(klen, 0);
        self.read_into(region, u64::from(off) + hlen as u64, long)?;
        Ok((&long[..], value_at, vlen))
    }

    /// Entry `i`: its internal key and, if `with_value`, its value.
    pub fn entry(
        &self,
        region: &dyn PmemRegion,
        i: u32,
        with_value: bool,
    ) -> Result<(Vec<u8>, Vec<u8>)> {
        let (mut head, mut long) = ([0u8; HEAD], Vec::new());
        let (k, value_at, vlen) = self.key_in(region, i, &mut head, &mut long)?;
        let key = k.to_vec();
        let value = if with_value {
            self.read(region, value_at, vlen)?
        } else {
            Vec::new()
        };
        Ok((key, value))
    }

    /// Entry `i`'s value when its user key is `user_key`, with the entry's kind.
    pub fn value_if(
        &self,
        region: &dyn PmemRegion,
        i: u32,
        user_key: &[u8],
    ) -> Result<Option<(SeqNo, ValueKind, Vec<u8>)>> {
        let (mut head, mut long) = ([0u8; HEAD], Vec::new());
        let (k, value_at, vlen) = self.key_in(region, i, &mut head, &mut long)?;
        let parsed = key::parse(k).ok_or_else(|| self.bad(format!("entry {i} has a bad key")))?;
        if parsed.user_key != user_key {
            return Ok(None);
        }
        let (seq, kind) = (parsed.seq, parsed.kind);
        Ok(Some((seq, kind, self.read(region, value_at, vlen)?)))
    }

    /// Filter hashes of the row's user keys from entry `from` on, read from the region (a
    /// row's filter after a reopen, from its first live entry; a flush collects them as it
    /// writes).
    ///
    /// # Errors
    /// `Corruption` for a malformed entry; region errors.
    pub fn key_hashes(&self, region: &dyn PmemRegion, from: u32) -> Result<Vec<u64>> {
        let (mut head, mut long) = ([0u8; HEAD], Vec::new());
        let mut out = Vec::with_capacity(self.entries.saturating_sub(from) as usize);
        let mut last: Option<u64> = None;
        for i in from..self.entries {
            let (k, _, _) = self.key_in(region, i, &mut head, &mut long)?;
            let h = filter::filter_hash(key::user_key(k));
            if last != Some(h) {
                out.push(h);
                last = Some(h);
            }
        }
        Ok(out)
    }

    /// The first index in `lo..hi` whose internal key is >= `target` (`hi` if none).
    pub fn lower_bound(
        &self,
        region: &dyn PmemRegion,
        target: &[u8],
        mut lo: u32,
        mut hi: u32,
    ) -> Result<u32> {
        let (mut head, mut long) = ([0u8; HEAD], Vec::new());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (k, _, _) = self.key_in(region, mid, &mut head, &mut long)?;
            if key::compare(k, target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Checks the footer against the record, the metadata array and the page checksums
    /// against their CRCs, and the entries on pages `first_page` on against theirs: the
    /// pages before it hold entries a column compaction took, and may hold other rows now.
    ///
    /// # Errors
    /// `Corruption` naming what does not match.
    pub fn verify(&self, region: &dyn PmemRegion, first_page: u32) -> Result<()> {
        let meta_at = u64::from(self.data_len);
        let meta_len = self.entries as usize * META;
        let sums_at = meta_at + meta_len as u64;
        let pages = data_pages(self.data_len);
        let f = self.read(region, sums_at + 4 * u64::from(pages), FOOTER)?;
        let word = |i: usize| u32::from_le_bytes([f[i], f[i + 1], f[i + 2], f[i + 3]]);
        if word(0) != MAGIC || word(4) != self.entries || word(8) != self.data_len {
            return Err(self.bad("its footer does not match the manifest's record".into()));
        }
        let meta = self.read(region, meta_at, meta_len)?;
        if crc32c::crc32c(&meta) != word(16) {
            return Err(self.bad("its metadata array fails its checksum".into()));
        }
        let sums = self.read(region, sums_at, 4 * pages as usize)?;
        if crc32c::crc32c(&sums) != word(12) {
            return Err(self.bad("its page checksums fail their checksum".into()));
        }
        let mut page = vec![0u8; PAGE];
        for p in first_page..pages {
            let at = u64::from(p) * PAGE as u64;
            let n = (meta_at - at).min(PAGE as u64) as usize;
            self.read_into(region, at, &mut page[..n])?;
            let i = 4 * p as usize;
            let want = u32::from_le_bytes([sums[i], sums[i + 1], sums[i + 2], sums[i + 3]]);
            if crc32c::crc32c(&page[..n]) != want {
                return Err(self.bad(format!("the entries on its page {p} fail their checksum")));
            }
        }
        Ok(())
    }
}

/// What [`RowWriter::finish`] gives.
pub(crate) struct Written {
    pub row: Row,
    /// Holds the row's pages until a version's layout names them.
    pub held: Held,
    /// The row's Bloom filter (`RowWriter::with_filter`).
    pub filter: Option<Vec<u8>>,
}

/// Writes one row into free pages as a flush gives its entries ([`EntrySink`]).
pub(crate) struct RowWriter {
    pages: Arc<Pages>,
    region: Arc<dyn PmemRegion>,
    /// The row written before this one, and its first live entry: the forward pointers'
    /// target.
    prev: Option<(Arc<Row>, u32)>,
    prev_pos: u32,
    prev_key: Option<Vec<u8>>,
    id: u64,
    /// The pages written so far, in order.
    held: Held,
    buf: Vec<u8>,
    written: u64,
    meta: Vec<u8>,
    entries: u32,
    /// The checksum of each full page of entries written so far.
    page_sums: Vec<u8>,
    /// The entries are all written: pages from here on hold the metadata and footer.
    entries_done: bool,
    smallest: Vec<u8>,
    largest: Vec<u8>,
    header: Vec<u8>,
    /// Bits per key of the row's Bloom filter, and its user keys' filter hashes so far
    /// (`with_filter`).
    filter: Option<(u32, Vec<u64>)>,
}

impl RowWriter {
    /// A writer of a row after `prev` (with its first live entry).
    pub fn new(
        pages: Arc<Pages>,
        region: Arc<dyn PmemRegion>,
        prev: Option<(Arc<Row>, u32)>,
    ) -> Self {
        let prev_pos = prev.as_ref().map_or(0, |p| p.1);
        RowWriter {
            held: Held::empty(&pages),
            pages,
            region,
            prev,
            prev_pos,
            prev_key: None,
            id: 0,
            buf: Vec::with_capacity(2 * PAGE),
            written: 0,
            meta: Vec::new(),
            entries: 0,
            page_sums: Vec::new(),
            entries_done: false,
            smallest: Vec::new(),
            largest: Vec::new(),
            header: Vec::with_capacity(MAX_HEADER),
            filter: None,
        }
    }

    /// Builds a Bloom filter of `bits` bits per key over the row's user keys (`finish`
    /// gives it); 0: none.
    pub fn with_filter(mut self, bits: u32) -> Self {
        self.filter = (bits > 0).then(|| (bits, Vec::new()));
        self
    }

    fn push(&mut self, bytes: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(bytes);
        self.written += bytes.len() as u64;
        while self.buf.len() >= PAGE {
            self.write_page()?;
        }
        Ok(())
    }

    /// Writes the buffer's first page (the last one zero-padded).
    fn write_page(&mut self) -> Result<()> {
        let page = self.pages.allocate(&mut self.held)?;
        if !self.entries_done {
            let sum = crc32c::crc32c(&self.buf[..PAGE]);
            self.page_sums.extend_from_slice(&sum.to_le_bytes());
        }
        self.buf.resize(self.buf.len().max(PAGE), 0);
        // SAFETY: the page was free until `allocate` gave it to this writer's `Held`: no
        // layout names it, so no reader reaches it, and no other writer holds it.
        unsafe {
            self.region
                .write_at(page as usize * PAGE, &self.buf[..PAGE])?
        };
        self.buf.drain(..PAGE);
        Ok(())
    }

    /// The forward pointer of `ikey`: the first index of the previous row, from its first
    /// live entry on, whose key is >= `ikey`.
    fn forward(&mut self, ikey: &[u8]) -> Result<u32> {
        let Some((prev, _)) = &self.prev else {
            return Ok(0);
        };
        while self.prev_pos < prev.entries {
            if self.prev_key.is_none() {
                self.prev_key = Some(prev.entry(&*self.region, self.prev_pos, false)?.0);
            }
            let k = self.prev_key.as_deref().unwrap_or_default();
            if key::compare(k, ikey) != Ordering::Less {
                break;
            }
            self.prev_pos += 1;
            self.prev_key = None;
        }
        Ok(self.prev_pos)
    }

    /// Writes the metadata array and footer, persists the pages, and returns the row with
    /// the guard holding its pages and its filter (`with_filter`); `None` if no entry came.
    ///
    /// # Errors
    /// I/O errors of the region; `NoSpace` when the pages ran out.
    pub fn finish(mut self) -> Result<Option<Written>> {
        if self.entries == 0 {
            return Ok(None);
        }
        let data_len = self.written as u32;
        if !self.buf.is_empty() {
            // The last page of entries: its checksum covers the entries' bytes only.
            let sum = crc32c::crc32c(&self.buf);
            self.page_sums.extend_from_slice(&sum.to_le_bytes());
        }
        self.entries_done = true;
        debug_assert_eq!(self.page_sums.len(), 4 * data_pages(data_len) as usize);
        let meta = std::mem::take(&mut self.meta);
        let sums = std::mem::take(&mut self.page_sums);
        let mut footer = Vec::with_capacity(FOOTER);
        for w in [
            MAGIC,
            self.entries,
            data_len,
            crc32c::crc32c(&sums),
            crc32c::crc32c(&meta),
        ] {
            footer.extend_from_slice(&w.to_le_bytes());
        }
        self.push(&meta)?;
        self.push(&sums)?;
        self.push(&footer)?;
        if !self.buf.is_empty() {
            self.write_page()?;
        }
        for &(start, len) in self.held.runs() {
            self.region
                .persist(start as usize * PAGE, len as usize * PAGE)?;
        }
        let row = Row::new(
            self.id,
            self.prev.as_ref().map_or(0, |p| p.0.id),
            self.entries,
            data_len,
            (
                std::mem::take(&mut self.smallest),
                std::mem::take(&mut self.largest),
            ),
            self.held.runs().to_vec(),
        )?;
        let filter = self
            .filter
            .take()
            .map(|(bits, hashes)| filter::build(&hashes, bits));
        Ok(Some(Written {
            row,
            held: self.held,
            filter,
        }))
    }
}

impl EntrySink for RowWriter {
    fn begin(
        &mut self,
        new_file_number: &mut dyn FnMut() -> crate::filename::FileNumber,
    ) -> Result<()> {
        self.id = new_file_number().0;
        Ok(())
    }

    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let user_key = key::user_key(ikey);
        if self.entries == 0 {
            self.smallest = user_key.to_vec();
        }
        if self.largest.as_slice() != user_key || self.entries == 0 {
            self.largest = user_key.to_vec();
            if let Some((_, hashes)) = self.filter.as_mut() {
                hashes.push(filter::filter_hash(user_key));
            }
        }
        let offset = u32::try_from(self.written)
            .ok()
            .filter(|o| {
                o.checked_add((MAX_HEADER + ikey.len() + value.len()) as u32)
                    .is_some()
            })
            .ok_or_else(|| Error::invalid("a memtable too large for one RowTable (4 GiB)"))?;
        let fwd = self.forward(ikey)?;
        self.meta.extend_from_slice(&offset.to_le_bytes());
        self.meta.extend_from_slice(&fwd.to_le_bytes());
        let mut header = std::mem::take(&mut self.header);
        header.clear();
        put_varint32(&mut header, ikey.len() as u32);
        put_varint32(&mut header, value.len() as u32);
        for part in [&header[..], ikey, value] {
            self.push(part)?;
        }
        self.header = header;
        self.entries += 1;
        Ok(())
    }
}

/// Entries `lo..hi` of a row, in order.
pub(crate) struct RowIter {
    region: Arc<dyn PmemRegion>,
    row: Arc<Row>,
    /// Keeps the row's pages from being reused while the iterator lives.
    _keep: Arc<dyn Any + Send + Sync>,
    lo: u32,
    hi: u32,
    pos: u32,
    key: Vec<u8>,
    /// The value, where it was copied out of the region.
    value: Vec<u8>,
    /// Where the value lies in the region (offset, length), where it is read in place.
    in_place: Option<(usize, usize)>,
    err: Option<Error>,
}

impl RowIter {
    pub fn new(
        region: Arc<dyn PmemRegion>,
        row: Arc<Row>,
        keep: Arc<dyn Any + Send + Sync>,
        lo: u32,
        hi: u32,
    ) -> Self {
        RowIter {
            region,
            row,
            _keep: keep,
            lo,
            hi,
            pos: hi,
            key: Vec::new(),
            value: Vec::new(),
            in_place: None,
            err: None,
        }
    }

    fn load(&mut self) {
        if self.pos < self.lo || self.pos >= self.hi {
            self.pos = self.hi;
            return;
        }
        if let Err(e) = self.read_entry() {
            self.err = Some(e);
            self.pos = self.hi;
        }
    }

    /// Entry `pos` into the iterator's own buffers (kept from entry to entry), its value
    /// left in place where the region offers its memory and the value lies on pages that
    /// follow each other: a column compaction then copies each value once, into the table
    /// it writes (the copy out of the region was ~5 % of its thread).
    fn read_entry(&mut self) -> Result<()> {
        let (mut head, mut long) = ([0u8; HEAD], Vec::new());
        let (k, value_at, vlen) = self
            .row
            .key_in(&*self.region, self.pos, &mut head, &mut long)?;
        self.key.clear();
        self.key.extend_from_slice(k);
        self.in_place = None;
        if let Some(at) = self.row.region_span(value_at, vlen) {
            // SAFETY: `_keep` holds the row's pages for as long as the iterator lives, so
            // no writer is given them meanwhile; the slice is dropped at once.
            if unsafe { self.region.bytes(at, vlen) }.is_some() {
                self.in_place = Some((at, vlen));
                return Ok(());
            }
        }
        self.value.resize(vlen, 0);
        self.row.read_into(&*self.region, value_at, &mut self.value)
    }
}

impl InternalIterator for RowIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.pos >= self.lo && self.pos < self.hi
    }
    fn seek_to_first(&mut self) {
        self.pos = self.lo;
        self.load();
    }
    fn seek_to_last(&mut self) {
        self.pos = if self.hi > self.lo {
            self.hi - 1
        } else {
            self.hi
        };
        self.load();
    }
    fn seek(&mut self, target: &[u8]) {
        match self
            .row
            .lower_bound(&*self.region, target, self.lo, self.hi)
        {
            Ok(p) => {
                self.pos = p;
                self.load();
            }
            Err(e) => {
                self.err = Some(e);
                self.pos = self.hi;
            }
        }
    }
    fn next(&mut self) {
        self.pos += 1;
        self.load();
    }
    fn prev(&mut self) {
        if self.pos == self.lo {
            self.pos = self.hi;
        } else {
            self.pos -= 1;
            self.load();
        }
    }
    fn key(&self) -> &[u8] {
        &self.key
    }
    fn value(&self) -> &[u8] {
        match self.in_place {
            // SAFETY: `_keep` holds the row's pages while the iterator lives, and the slice
            // lives no longer than this borrow of it: no writer is given these bytes meanwhile.
            // (`read_entry` found the range inside the region.)
            Some((at, len)) => unsafe { self.region.bytes(at, len) }.unwrap_or_default(),
            None => &self.value,
        }
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_in_place_never_crosses_from_one_run_to_another() {
        // Five pages in two runs: 5, 6, 7 and 20, 21.
        let data_len = 5 * PAGE as u32 - 200;
        let bounds = (b"a".to_vec(), b"b".to_vec());
        let row = Row::new(7, 0, 1, data_len, bounds, vec![(5, 3), (20, 2)]).unwrap();
        let p = PAGE as u64;
        assert_eq!(row.region_span(0, 100), Some(5 * PAGE));
        // Across pages 0 and 1 (5 and 6: neighbours).
        assert_eq!(row.region_span(4000, 200), Some(5 * PAGE + 4000));
        // Across pages 2 and 3 (7 and 20): not in place.
        assert_eq!(row.region_span(3 * p - 10, 20), None);
        assert_eq!(row.region_span(3 * p + 5, 10), Some(20 * PAGE + 5));
        assert_eq!(row.region_span(3 * p, PAGE + 8), Some(20 * PAGE));
        // Past the row's end, or nothing at all.
        assert_eq!(row.region_span(row.len() - 1, 2), None);
        assert_eq!(row.region_span(10, 0), None);
    }

    #[test]
    fn runs_from_cuts_the_kept_runs_as_the_pages_would() {
        // Runs as a record may give them: the first two touch, so they are one run.
        let given = vec![(5, 3), (8, 2), (20, 1), (30, 4), (2, 2)];
        let row = Row::new(7, 0, 1, 10, (b"a".to_vec(), b"b".to_vec()), given).unwrap();
        assert_eq!(row.runs(), &[(5, 5), (20, 1), (30, 4), (2, 2)]);
        let pages: Vec<u32> = row.pages.clone();
        for first in 0..=pages.len() as u32 + 2 {
            let from = (first as usize).min(pages.len());
            assert_eq!(
                row.runs_from(first),
                runs_of(&pages[from..]),
                "from page {first}"
            );
        }
        // A located row knows its pages from `skipped` on.
        // (Spans in place: see `a_span_in_place_never_crosses_from_one_run_to_another`.)
        let located = Row::located(7, 1, 10, 3, &[(8, 2), (20, 1)]).unwrap();
        assert_eq!(located.runs_from(0), vec![(8, 2), (20, 1)]);
        assert_eq!(located.runs_from(4), vec![(9, 1), (20, 1)]);
        assert_eq!(located.runs_from(6), vec![]);
    }
}
