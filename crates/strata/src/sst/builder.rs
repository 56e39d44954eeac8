//! [`TableBuilder`]: writes a table from internal keys added in order.
//!
//! Write path: flush and compaction stream sorted entries in; `finish` writes the filter,
//! properties, meta-index, index and footer, then syncs (or, with `finish_unsynced`, leaves
//! the sync to the caller). Nothing is readable until `finish`.

use std::path::PathBuf;

use super::block::BlockBuilder;
use super::filter;
use super::format::{
    BlockHandle, Compression, Footer, BLOCK_TRAILER_LEN, FILTER_KEY, PROPERTIES_KEY,
    TABLE_FORMAT_VERSION,
};
use super::properties::TableProperties;
use crate::coding::masked_crc2;
use crate::error::Result;
use crate::fs::WritableFile;
use crate::key;

/// Options that shape a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableOptions {
    /// Target uncompressed data block size in bytes.
    pub block_size: usize,
    /// Full keys every this many entries in data blocks.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Data block compression.
    pub compression: Compression,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
        }
    }
}

/// Builds one table file.
pub struct TableBuilder {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    opts: TableOptions,
    data: BlockBuilder,
    index: BlockBuilder,
    offset: u64,
    /// Handle of the last finished data block, whose index entry waits for the next key.
    pending: Option<BlockHandle>,
    last_key: Vec<u8>,
    first_key: Vec<u8>,
    hashes: Vec<u64>,
    last_user_key_hashed: Option<Vec<u8>>,
    props: TableProperties,
    compressed: Vec<u8>,
}

impl TableBuilder {
    /// A builder writing to `file` (at `path`, for messages).
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf, opts: TableOptions) -> Self {
        TableBuilder {
            file,
            path,
            opts,
            data: BlockBuilder::new(opts.block_restart_interval),
            index: BlockBuilder::new(1),
            offset: 0,
            pending: None,
            last_key: Vec::new(),
            first_key: Vec::new(),
            hashes: Vec::new(),
            last_user_key_hashed: None,
            props: TableProperties {
                smallest_seq: u64::MAX,
                ..Default::default()
            },
            compressed: Vec::new(),
        }
    }

    /// Adds an entry. REQUIRES: `ikey` is a valid internal key greater than every earlier one.
    ///
    /// # Errors
    /// I/O errors while writing a finished block.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if let Some(h) = self.pending.take() {
            let sep = key::separator(&self.last_key, Some(ikey));
            self.index.add(&sep, &h.encode());
        }
        if self.props.num_entries == 0 {
            self.first_key = ikey.to_vec();
        }
        let uk = key::user_key(ikey);
        if self.opts.bloom_bits_per_key > 0 && self.last_user_key_hashed.as_deref() != Some(uk) {
            self.hashes.push(filter::filter_hash(uk));
            // Reuse the buffer: a fresh Vec per user key was a malloc/free per entry.
            let last = self.last_user_key_hashed.get_or_insert_with(Vec::new);
            last.clear();
            last.extend_from_slice(uk);
        }
        let t = key::trailer(ikey);
        let seq = t >> 8;
        self.props.smallest_seq = self.props.smallest_seq.min(seq);
        self.props.largest_seq = self.props.largest_seq.max(seq);
        if t & 0xff == key::ValueKind::Delete as u64 {
            self.props.num_deletions += 1;
        } else if t & 0xff == key::ValueKind::Expiring as u64 {
            self.props.num_expiring += 1;
            if let Some((at, _)) = key::split_expiring(value) {
                self.props.latest_expiry = self.props.latest_expiry.max(at);
            }
        }
        self.props.num_entries += 1;
        self.props.raw_key_size += ikey.len() as u64;
        self.props.raw_value_size += value.len() as u64;
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);
        self.data.add(ikey, value);
        if self.data.size_estimate() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        let raw = self.data.finish();
        let h = self.write_block(&raw, self.opts.compression)?;
        self.data.recycle(raw);
        self.props.data_size += h.size + BLOCK_TRAILER_LEN as u64;
        self.props.num_data_blocks += 1;
        self.pending = Some(h);
        Ok(())
    }

    fn write_block(&mut self, raw: &[u8], compression: Compression) -> Result<BlockHandle> {
        let (body, kind): (&[u8], Compression) = match compression {
            Compression::Lz4 => {
                self.compressed.clear();
                self.compressed
                    .extend_from_slice(&(raw.len() as u32).to_le_bytes());
                self.compressed
                    .extend_from_slice(&lz4_flex::block::compress(raw));
                // Keep the compressed form only if it saves at least 1/8.
                if self.compressed.len() < raw.len() - raw.len() / 8 {
                    (&self.compressed, Compression::Lz4)
                } else {
                    (raw, Compression::None)
                }
            }
            Compression::None => (raw, Compression::None),
        };
        let handle = BlockHandle {
            offset: self.offset,
            size: body.len() as u64,
        };
        let crc = masked_crc2(body, &[kind as u8]);
        self.file.append(body)?;
        let mut trailer = [0u8; BLOCK_TRAILER_LEN];
        trailer[0] = kind as u8;
        trailer[1..].copy_from_slice(&crc.to_le_bytes());
        self.file.append(&trailer)?;
        self.offset += (body.len() + BLOCK_TRAILER_LEN) as u64;
        Ok(handle)
    }

    /// Number of entries added.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the open block: when to cut the file.
    pub fn estimated_size(&self) -> u64 {
        self.offset + self.data.size_estimate() as u64
    }

    /// The first key added.
    pub fn first_key(&self) -> &[u8] {
        &self.first_key
    }

    /// The last key added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Writes the remaining blocks and the footer, and syncs the file.
    ///
    /// # Errors
    /// I/O errors; the file is then incomplete and must be deleted by the caller.
    pub fn finish(self) -> Result<TableProperties> {
        let (props, mut unsynced) = self.finish_unsynced()?;
        unsynced.sync()?;
        Ok(props)
    }

    /// Writes the remaining blocks and the footer and hands the file back written out (in
    /// the page cache) but not synced: the caller syncs it ([`UnsyncedTable::sync`]) before
    /// anything names the table.
    ///
    /// # Errors
    /// I/O errors; the file is then incomplete and must be deleted by the caller.
    pub fn finish_unsynced(mut self) -> Result<(TableProperties, UnsyncedTable)> {
        self.flush_data_block()?;
        if let Some(h) = self.pending.take() {
            let sep = key::separator(&self.last_key, None);
            self.index.add(&sep, &h.encode());
        }
        let mut meta = BlockBuilder::new(1);
        if self.opts.bloom_bits_per_key > 0 {
            let f = filter::build(&self.hashes, self.opts.bloom_bits_per_key);
            let h = self.write_block(&f, Compression::None)?;
            self.props.filter_size = h.size;
            meta.add(FILTER_KEY, &h.encode());
        }
        let index = self.index.finish();
        self.props.index_size = index.len() as u64;
        if self.props.num_entries == 0 {
            self.props.smallest_seq = 0;
        }
        let props_block = self.props.encode();
        let ph = self.write_block(&props_block, Compression::None)?;
        meta.add(PROPERTIES_KEY, &ph.encode());
        let meta_raw = meta.finish();
        let metaindex = self.write_block(&meta_raw, Compression::None)?;
        let index = self.write_block(&index, Compression::None)?;
        let footer = Footer {
            metaindex,
            index,
            format_version: TABLE_FORMAT_VERSION,
        };
        self.file.append(&footer.encode())?;
        self.offset += super::format::FOOTER_LEN as u64;
        self.file
            .flush()
            .map_err(|e| e.context(format!("finishing table {}", self.path.display())))?;
        self.props.file_size = self.offset;
        Ok((
            self.props,
            UnsyncedTable {
                file: self.file,
                path: self.path,
            },
        ))
    }
}

/// A finished table whose bytes are written but not yet synced.
pub struct UnsyncedTable {
    file: Box<dyn WritableFile>,
    path: PathBuf,
}

impl UnsyncedTable {
    /// Makes the table durable.
    ///
    /// # Errors
    /// I/O errors; the table must then be deleted by the caller.
    pub fn sync(&mut self) -> Result<()> {
        self.file
            .sync()
            .map_err(|e| e.context(format!("finishing table {}", self.path.display())))
    }
}
