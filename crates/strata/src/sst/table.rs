//! [`Table`]: an open, immutable table file.
//!
//! Read path: `get` checks the bloom filter, seeks the index, and reads at most two data
//! blocks (through the block cache); `iter` returns a two-level iterator. Every block read
//! verifies its checksum: damage is `Corruption` naming the file and offset, never a panic.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::block::{Block, BlockIterator};
use super::filter;
use super::format::{
    BlockHandle, Compression, Footer, BLOCK_TRAILER_LEN, FILTER_KEY, FOOTER_LEN, MAX_BLOCK_LEN,
    PROPERTIES_KEY, TABLE_FORMAT_VERSION,
};
use super::properties::TableProperties;
use crate::cache::ClockCache;
use crate::coding::{masked_crc2, u32_at};
use crate::error::{Error, ErrorKind, Result};
use crate::fs::{FileBytes, RandomAccessFile};
use crate::iter::{InternalIterator, Opener, TwoLevelIterator};
use crate::key;

/// The shared block cache: (table cache id, block offset) -> block.
pub type BlockCache = ClockCache<(u64, u64), Arc<Block>>;

static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);

/// An open table.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    cache_id: u64,
    cache: Option<Arc<BlockCache>>,
    index: Arc<Block>,
    /// The bloom filter; for a mapped table, borrowed from the map (index blocks are too), so
    /// table metadata lives in the page cache rather than on the heap.
    filter: Option<FileBytes>,
    props: TableProperties,
    /// Present when the file is memory-mapped.
    mapped: Option<MappedBlocks>,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Table({})", self.path.display())
    }
}

fn read_block_raw(file: &dyn RandomAccessFile, path: &Path, h: BlockHandle) -> Result<FileBytes> {
    read_block(file, path, h, false).map(|(b, _)| b)
}

/// Reads block `h`, verifies its checksum unless `trusted`, and returns its (decompressed)
/// bytes and whether it was stored compressed.
fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    h: BlockHandle,
    trusted: bool,
) -> Result<(FileBytes, bool)> {
    let end = block_end(file, path, h)?;
    let buf = file.read_shared(h.offset, (end - h.offset) as usize)?;
    check_block(buf, path, h, trusted)
}

/// Where block `h` (its bytes and trailer) ends in `file`; `Corruption` if the handle is
/// out of range.
fn block_end(file: &dyn RandomAccessFile, path: &Path, h: BlockHandle) -> Result<u64> {
    (h.size <= MAX_BLOCK_LEN)
        .then(|| h.offset.checked_add(h.size + BLOCK_TRAILER_LEN as u64))
        .flatten()
        .filter(|&e| e <= file.size())
        .ok_or_else(|| {
            Error::corruption(
                path,
                h.offset,
                format!("block handle (size {}) out of range", h.size),
            )
        })
}

/// The block `h` out of `buf`, its stored bytes and trailer: verifies the checksum unless
/// `trusted` and decompresses.
fn check_block(
    buf: FileBytes,
    path: &Path,
    h: BlockHandle,
    trusted: bool,
) -> Result<(FileBytes, bool)> {
    let n = h.size as usize;
    if buf.len() < n + BLOCK_TRAILER_LEN {
        return Err(Error::corruption(
            path,
            h.offset,
            "block shorter than its handle",
        ));
    }
    let kind = buf[n];
    if !trusted {
        let crc = u32_at(&buf, n + 1).unwrap_or(0);
        if masked_crc2(&buf[..n], &[kind]) != crc {
            return Err(Error::corruption(path, h.offset, "block checksum mismatch"));
        }
    }
    match Compression::from_u8(kind) {
        Some(Compression::None) => Ok((buf.prefix(n), false)),
        Some(Compression::Lz4) => {
            let len = u32_at(&buf, 0)
                .ok_or_else(|| Error::corruption(path, h.offset, "lz4 block too short"))?
                as usize;
            if len as u64 > MAX_BLOCK_LEN {
                return Err(Error::corruption(
                    path,
                    h.offset,
                    "lz4 block claims an absurd size",
                ));
            }
            lz4_flex::block::decompress(&buf[4..n], len)
                .map(|v| (FileBytes::from(v), true))
                .map_err(|e| Error::corruption(path, h.offset, format!("lz4: {e}")))
        }
        None => Err(Error::corruption(
            path,
            h.offset,
            format!("unknown compression type {kind}"),
        )),
    }
}

/// For a table read through a memory map: which data blocks passed their checksum.
///
/// Uncompressed blocks of a mapped table are used in place and not put in the block cache
/// (LevelDB does the same with its mmap reads): the page cache already holds them, and the
/// block cache's lookup, insert and eviction were pure overhead. What the block cache also
/// gave was "verified once, trusted while cached"; this keeps that: a block's checksum is
/// checked the first time it is read and trusted afterwards while the table is open
/// (docs/design/core-engine.md, "Mapped tables bypass the block cache").
struct MappedBlocks {
    /// Block at offset `o` owns bit `o >> shift`: `1 << shift` is at most the smallest gap
    /// between two data blocks' offsets, so no two blocks share a bit (a binary search over
    /// the offsets instead cost 10 % of a seekrandom profile in cache misses).
    shift: u32,
    /// Checksum verified, one bit per block.
    verified: Vec<AtomicU64>,
    /// Set once a compressed block is seen: the table's blocks then go through the cache.
    compressed: AtomicBool,
}

impl MappedBlocks {
    /// `None` if the index's offsets are not strictly ascending (then every read verifies).
    fn new(index: &Arc<Block>, file_size: u64) -> Option<MappedBlocks> {
        let mut last: Option<u64> = None;
        let mut min_gap = u64::MAX;
        let mut it = index.iter(key::compare);
        it.seek_to_first();
        while it.valid() {
            let h = BlockHandle::decode(it.value())?;
            if let Some(l) = last {
                if l >= h.offset {
                    return None;
                }
                min_gap = min_gap.min(h.offset - l);
            }
            last = Some(h.offset);
            it.next();
        }
        it.status().ok()?;
        let shift = min_gap.ilog2();
        let words = (file_size >> shift) / 64 + 1;
        let verified = (0..words).map(|_| AtomicU64::new(0)).collect();
        Some(MappedBlocks {
            shift,
            verified,
            compressed: AtomicBool::new(false),
        })
    }

    /// The bit of the data block at `offset` (a handle from the index), if in range.
    fn slot(&self, offset: u64) -> Option<usize> {
        let bit = usize::try_from(offset >> self.shift).ok()?;
        (bit / 64 < self.verified.len()).then_some(bit)
    }

    fn is_verified(&self, slot: usize) -> bool {
        self.verified[slot / 64].load(Ordering::Acquire) & (1 << (slot % 64)) != 0
    }

    fn set_verified(&self, slot: usize) {
        self.verified[slot / 64].fetch_or(1 << (slot % 64), Ordering::Release);
    }
}

fn decode_handle(v: &[u8], path: &Path, at: u64) -> Result<BlockHandle> {
    BlockHandle::decode(v).ok_or_else(|| Error::corruption(path, at, "bad block handle"))
}

impl Table {
    /// Opens a table: reads and verifies the footer, index, filter and properties.
    ///
    /// # Errors
    /// `Corruption` (naming the file and offset) for any malformed part; `NotSupported` for a
    /// table written by a newer format version; I/O errors.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: &Path,
        cache: Option<Arc<BlockCache>>,
    ) -> Result<Table> {
        Table::open_with(file, path, cache, false)
    }

    /// [`Table::open`], with the index and filter copied to the heap if `pin_metadata` and
    /// the file is mapped (so that they stay in memory whatever the page cache drops).
    ///
    /// # Errors
    /// As for [`Table::open`].
    pub fn open_with(
        file: Arc<dyn RandomAccessFile>,
        path: &Path,
        cache: Option<Arc<BlockCache>>,
        pin_metadata: bool,
    ) -> Result<Table> {
        let meta_block = |h: BlockHandle| -> Result<FileBytes> {
            let b = read_block_raw(&*file, path, h)?;
            Ok(if pin_metadata && b.is_mapped() {
                FileBytes::from(b.to_vec())
            } else {
                b
            })
        };
        let size = file.size();
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                path,
                0,
                format!("file of {size} bytes is too short to be a table"),
            ));
        }
        let foot_at = size - FOOTER_LEN as u64;
        let footer = Footer::decode(&file.read_at(foot_at, FOOTER_LEN)?)
            .map_err(|e| Error::corruption(path, foot_at, e))?;
        if footer.format_version > TABLE_FORMAT_VERSION || footer.format_version == 0 {
            return Err(Error::new(
                ErrorKind::NotSupported,
                format!(
                    "{}: table format version {} is not supported (this build reads up to {TABLE_FORMAT_VERSION})",
                    path.display(),
                    footer.format_version
                ),
            ));
        }
        let index = Arc::new(Block::new(
            meta_block(footer.index)?,
            path,
            footer.index.offset,
        )?);
        let meta = Arc::new(Block::new(
            read_block_raw(&*file, path, footer.metaindex)?,
            path,
            footer.metaindex.offset,
        )?);
        let mut filter = None;
        let mut props = None;
        let mut it = meta.iter(|a, b| a.cmp(b));
        it.seek_to_first();
        while it.valid() {
            let h = decode_handle(it.value(), path, footer.metaindex.offset)?;
            match it.key() {
                FILTER_KEY => filter = Some(meta_block(h)?),
                PROPERTIES_KEY => {
                    props = Some(TableProperties::decode(
                        read_block_raw(&*file, path, h)?.to_vec(),
                        path,
                        h.offset,
                    )?)
                }
                _ => {}
            }
            it.next();
        }
        it.status()
            .map_err(|e| Error::corruption(path, footer.metaindex.offset, e.message()))?;
        let mut props = props.ok_or_else(|| {
            Error::corruption(path, footer.metaindex.offset, "no properties block")
        })?;
        props.file_size = size;
        let mapped = if file.is_mapped() {
            MappedBlocks::new(&index, size)
        } else {
            None
        };
        Ok(Table {
            mapped,
            file,
            path: path.to_path_buf(),
            cache_id: NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed),
            cache,
            index,
            filter,
            props,
        })
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn block(&self, h: BlockHandle) -> Result<Arc<Block>> {
        self.block_via(h, None)
    }

    /// [`Table::block`], reading a table that is not mapped through `ra`, an iterator's
    /// read-ahead: once blocks are read in file order, one read fetches the next ones too.
    fn block_via(&self, h: BlockHandle, ra: Option<&RefCell<Readahead>>) -> Result<Arc<Block>> {
        // A mapped table whose blocks are uncompressed (so far) reads in place, past the
        // cache, verifying each block once; everything else goes through the cache.
        let mapped = self
            .mapped
            .as_ref()
            .filter(|m| !m.compressed.load(Ordering::Relaxed))
            .and_then(|m| Some((m, m.slot(h.offset)?)));
        if mapped.is_none() {
            if let Some(b) = self
                .cache
                .as_ref()
                .and_then(|c| c.get(&(self.cache_id, h.offset)))
            {
                return Ok(b);
            }
        }
        let trusted = mapped.is_some_and(|(m, slot)| m.is_verified(slot));
        let (bytes, compressed) = match ra {
            Some(ra) if self.mapped.is_none() => {
                let raw = ra.borrow_mut().read(&*self.file, &self.path, h)?;
                check_block(raw, &self.path, h, false)?
            }
            Some(ra) => {
                ra.borrow_mut().prefetch(&*self.file, h);
                read_block(&*self.file, &self.path, h, trusted)?
            }
            None => read_block(&*self.file, &self.path, h, trusted)?,
        };
        let b = Arc::new(Block::new(bytes, &self.path, h.offset)?);
        if let Some((m, slot)) = mapped {
            if !compressed {
                if !trusted {
                    m.set_verified(slot);
                }
                return Ok(b);
            }
            m.compressed.store(true, Ordering::Relaxed);
        }
        if let Some(c) = &self.cache {
            c.insert((self.cache_id, h.offset), b.clone(), b.size());
        }
        Ok(b)
    }

    /// Checks a table this process just wrote before it is installed: opening it verified the
    /// footer, index, filter and properties; for a memory-mapped table this also verifies
    /// every data block's checksum once, sequentially, and marks the blocks verified, so
    /// that foreground reads of tables written by this process never spend their time in
    /// checksums (docs/design/core-engine.md, "Mapped tables bypass the block cache").
    ///
    /// # Errors
    /// `Corruption` naming the file and offset of the first bad block.
    pub fn verify_new(&self) -> Result<()> {
        let Some(m) = &self.mapped else {
            return Ok(());
        };
        let mut index = self.index.iter(key::compare);
        index.seek_to_first();
        while index.valid() {
            let h = decode_handle(index.value(), &self.path, 0)?;
            if let Some(slot) = m.slot(h.offset) {
                if !m.is_verified(slot) {
                    read_block(&*self.file, &self.path, h, false)?;
                    m.set_verified(slot);
                }
            }
            index.next();
        }
        index
            .status()
            .map_err(|e| Error::corruption(&self.path, 0, e.message()))
    }

    /// The data blocks, in key order: each one's last key (its index separator) and handle.
    ///
    /// # Errors
    /// `Corruption` for a malformed index entry.
    pub(crate) fn data_blocks(&self) -> Result<Vec<(Vec<u8>, BlockHandle)>> {
        let mut out = Vec::new();
        let mut index = self.index.iter(key::compare);
        index.seek_to_first();
        while index.valid() {
            out.push((
                index.key().to_vec(),
                decode_handle(index.value(), &self.path, 0)?,
            ));
            index.next();
        }
        index
            .status()
            .map_err(|e| Error::corruption(&self.path, 0, e.message()))?;
        Ok(out)
    }

    /// Data block `h`, its checksum verified (whatever was verified before), bypassing the
    /// cache: for inspection.
    ///
    /// # Errors
    /// `Corruption` naming the file and the block's offset; I/O errors.
    pub(crate) fn read_verified(&self, h: BlockHandle) -> Result<Arc<Block>> {
        let (bytes, _) = read_block(&*self.file, &self.path, h, false)?;
        Ok(Arc::new(Block::new(bytes, &self.path, h.offset)?))
    }

    /// Whether the bloom filter allows `user_key` (true without a filter).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| filter::may_contain(f, filter::filter_hash(user_key)))
    }

    /// The first entry with internal key >= `target`, if its user key is `user_key`.
    /// REQUIRES: `user_key == key::user_key(target)`.
    ///
    /// # Errors
    /// `Corruption` or I/O errors reading blocks.
    pub fn get(&self, target: &[u8], user_key: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if !self.may_contain(user_key) {
            return Ok(None);
        }
        self.search(target, user_key)
    }

    /// [`Table::get`] without asking the filter first.
    ///
    /// # Errors
    /// As for [`Table::get`].
    pub fn search(&self, target: &[u8], user_key: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut index = self.index.iter(key::compare);
        index.seek(target);
        while index.valid() {
            let h = decode_handle(index.value(), &self.path, 0)?;
            let block = self.block(h)?;
            let mut it = block.iter(key::compare);
            it.seek(target);
            it.status()
                .map_err(|e| Error::corruption(&self.path, h.offset, e.message()))?;
            if it.valid() {
                if key::user_key(it.key()) == user_key {
                    return Ok(Some((it.key().to_vec(), it.value().to_vec())));
                }
                return Ok(None);
            }
            index.next();
        }
        index
            .status()
            .map_err(|e| Error::corruption(&self.path, 0, e.message()))?;
        Ok(None)
    }

    /// An iterator over the table's entries.
    pub fn iter(self: &Arc<Self>) -> TableIterator {
        TwoLevelIterator::new(
            self.index.iter(key::compare),
            BlockOpener {
                table: self.clone(),
                readahead: RefCell::new(Readahead::default()),
            },
        )
    }
}

/// An iterator's read-ahead over a table read with positional reads (RocksDB's implicit
/// auto-readahead): after two blocks read in file order, each read fetches the following
/// bytes too, in a window that doubles from 16 KiB up to 256 KiB; a jump elsewhere (a seek)
/// starts over. A mapped table has the kernel's read-around instead; a positional one has
/// `POSIX_FADV_RANDOM`, so without this a scan or a compaction would read block by block.
#[derive(Default)]
pub(crate) struct Readahead {
    /// Bytes read ahead and the file offset they start at.
    buf: Option<(u64, FileBytes)>,
    /// Where the next block starts if the reader goes on in file order.
    next: u64,
    /// Blocks read in file order so far.
    run: u32,
    /// The current window in bytes (0: not reading ahead).
    window: usize,
    /// Mapped files: the end of the range last prefetched.
    ahead: u64,
}

/// The first and largest read-ahead window.
const READAHEAD_MIN: usize = 16 << 10;
const READAHEAD_MAX: usize = 256 << 10;

impl Readahead {
    /// For a mapped file: once blocks come in file order, asks the file to prefetch the
    /// window after block `h` whenever the reader nears the end of what it asked for last
    /// (`RandomAccessFile::prefetch`: with `MADV_RANDOM` the kernel reads nothing ahead).
    fn prefetch(&mut self, file: &dyn RandomAccessFile, h: BlockHandle) {
        let end = h.offset.saturating_add(h.size + BLOCK_TRAILER_LEN as u64);
        if !self.in_order(h.offset, end) {
            self.ahead = 0;
            return;
        }
        if end + (self.window as u64) / 2 >= self.ahead {
            self.grow();
            let from = self.ahead.max(end);
            file.prefetch(from, self.window);
            self.ahead = from + self.window as u64;
        }
    }

    /// The stored bytes and trailer of block `h`, from the buffer or from `file`.
    fn read(
        &mut self,
        file: &dyn RandomAccessFile,
        path: &Path,
        h: BlockHandle,
    ) -> Result<FileBytes> {
        let end = block_end(file, path, h)?;
        let len = (end - h.offset) as usize;
        let in_order = self.in_order(h.offset, end);
        if let Some((at, buf)) = &self.buf {
            if h.offset >= *at && end <= *at + buf.len() as u64 {
                return Ok(slice(buf, (h.offset - at) as usize, len));
            }
        }
        if !in_order {
            self.buf = None;
            return file.read_shared(h.offset, len);
        }
        self.grow();
        let want = (self.window as u64)
            .max(len as u64)
            .min(file.size() - h.offset);
        let buf = file.read_shared(h.offset, want as usize)?;
        let out = slice(&buf, 0, len);
        self.buf = Some((h.offset, buf));
        Ok(out)
    }

    /// Notes a block at `offset..end`; whether the reader is in a run of at least three
    /// blocks in file order (read ahead from the third). A jump resets the window.
    fn in_order(&mut self, offset: u64, end: u64) -> bool {
        self.run = if offset == self.next { self.run + 1 } else { 0 };
        self.next = end;
        if self.run < 2 {
            self.window = 0;
            return false;
        }
        true
    }

    /// Doubles the window, within its bounds.
    fn grow(&mut self) {
        self.window = (self.window * 2).clamp(READAHEAD_MIN, READAHEAD_MAX);
    }
}

/// A copy of `len` bytes of `buf` from `from`: a block may live on in the block cache,
/// which charges its own size, so it must not keep the whole read-ahead buffer alive.
fn slice(buf: &FileBytes, from: usize, len: usize) -> FileBytes {
    FileBytes::from(buf[from..from + len].to_vec())
}

/// A table's iterator: the index block leads to data blocks, one at a time.
pub type TableIterator = TwoLevelIterator<BlockIterator, BlockOpener>;

/// Opens a table's data blocks for [`TableIterator`]; errors name the file and block.
pub struct BlockOpener {
    table: Arc<Table>,
    readahead: RefCell<Readahead>,
}

impl Opener for BlockOpener {
    type Data = BlockIterator;

    fn open(&self, handle: &[u8]) -> Result<BlockIterator> {
        let h = decode_handle(handle, &self.table.path, 0)?;
        Ok(self
            .table
            .block_via(h, Some(&self.readahead))?
            .iter(key::compare))
    }

    fn data_error(&self, e: Error, handle: &[u8]) -> Error {
        let offset = BlockHandle::decode(handle).map_or(0, |h| h.offset);
        Error::corruption(&self.table.path, offset, e.message())
    }
}
