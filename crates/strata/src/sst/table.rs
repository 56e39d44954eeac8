//! [`Table`]: an open, immutable table file.
//!
//! Read path: `get` checks the bloom filter, seeks the index, and reads at most two data
//! blocks (through the block cache); `iter` returns a two-level iterator. Every block read
//! verifies its checksum: damage is `Corruption` naming the file and offset, never a panic.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::block::Block;
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
use crate::iter::{InternalIterator, TwoLevelIterator};
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
    filter: Option<Vec<u8>>,
    props: TableProperties,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Table({})", self.path.display())
    }
}

fn read_block_raw(file: &dyn RandomAccessFile, path: &Path, h: BlockHandle) -> Result<FileBytes> {
    if h.size > MAX_BLOCK_LEN
        || h.offset
            .checked_add(h.size + BLOCK_TRAILER_LEN as u64)
            .is_none_or(|e| e > file.size())
    {
        return Err(Error::corruption(
            path,
            h.offset,
            format!("block handle (size {}) out of range", h.size),
        ));
    }
    let n = h.size as usize;
    let buf = file.read_shared(h.offset, n + BLOCK_TRAILER_LEN)?;
    let kind = buf[n];
    let crc = u32_at(&buf, n + 1).unwrap_or(0);
    if masked_crc2(&buf[..n], &[kind]) != crc {
        return Err(Error::corruption(path, h.offset, "block checksum mismatch"));
    }
    match Compression::from_u8(kind) {
        Some(Compression::None) => Ok(buf.prefix(n)),
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
                .map(FileBytes::from)
                .map_err(|e| Error::corruption(path, h.offset, format!("lz4: {e}")))
        }
        None => Err(Error::corruption(
            path,
            h.offset,
            format!("unknown compression type {kind}"),
        )),
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
            read_block_raw(&*file, path, footer.index)?,
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
                FILTER_KEY => filter = Some(read_block_raw(&*file, path, h)?.to_vec()),
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
        Ok(Table {
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
        if let Some(c) = &self.cache {
            if let Some(b) = c.get(&(self.cache_id, h.offset)) {
                return Ok(b);
            }
        }
        let b = Arc::new(Block::new(
            read_block_raw(&*self.file, &self.path, h)?,
            &self.path,
            h.offset,
        )?);
        if let Some(c) = &self.cache {
            c.insert((self.cache_id, h.offset), b.clone(), b.size());
        }
        Ok(b)
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

    /// An iterator over every entry.
    pub fn iter(self: &Arc<Self>) -> TwoLevelIterator {
        let table = self.clone();
        TwoLevelIterator::new(
            Box::new(self.index.iter(key::compare)),
            Box::new(move |v| {
                let h = decode_handle(v, &table.path, 0)?;
                let block = table.block(h)?;
                Ok(Box::new(CheckedBlockIter {
                    it: block.iter(key::compare),
                    path: table.path.clone(),
                    offset: h.offset,
                }) as Box<dyn InternalIterator>)
            }),
        )
    }
}

/// A block iterator whose errors name the table file and block offset.
struct CheckedBlockIter {
    it: super::block::BlockIterator,
    path: PathBuf,
    offset: u64,
}

impl InternalIterator for CheckedBlockIter {
    fn valid(&self) -> bool {
        self.it.valid()
    }
    fn seek_to_first(&mut self) {
        self.it.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.it.seek_to_last();
    }
    fn seek(&mut self, target: &[u8]) {
        self.it.seek(target);
    }
    fn next(&mut self) {
        self.it.next();
    }
    fn prev(&mut self) {
        self.it.prev();
    }
    fn key(&self) -> &[u8] {
        self.it.key()
    }
    fn value(&self) -> &[u8] {
        self.it.value()
    }
    fn status(&self) -> Result<()> {
        self.it
            .status()
            .map_err(|e| Error::corruption(&self.path, self.offset, e.message()))
    }
}
