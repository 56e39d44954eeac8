//! [`TableProperties`]: statistics about a table, stored in its properties block.

use std::path::Path;
use std::sync::Arc;

use super::block::{Block, BlockBuilder};
use crate::coding::{get_varint64, put_varint64};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;

/// What a table holds, recorded when it is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableProperties {
    /// Entries (including tombstones).
    pub num_entries: u64,
    /// Tombstones.
    pub num_deletions: u64,
    /// Sum of internal key lengths.
    pub raw_key_size: u64,
    /// Sum of value lengths.
    pub raw_value_size: u64,
    /// Bytes of data blocks (with trailers).
    pub data_size: u64,
    /// Bytes of the index block.
    pub index_size: u64,
    /// Bytes of the filter block.
    pub filter_size: u64,
    /// Number of data blocks.
    pub num_data_blocks: u64,
    /// Smallest sequence number in the table.
    pub smallest_seq: u64,
    /// Largest sequence number in the table.
    pub largest_seq: u64,
    /// Total file size.
    pub file_size: u64,
    /// Expiring entries (kind 3, `ttl.md`).
    pub num_expiring: u64,
    /// The latest expiry among them, ms since the Unix epoch (0: none).
    pub latest_expiry: u64,
}

impl TableProperties {
    fn fields(&self) -> Vec<(&'static str, u64)> {
        // Sorted by name: a block needs increasing keys.
        let mut f = vec![
            ("strata.data.blocks", self.num_data_blocks),
            ("strata.data.size", self.data_size),
        ];
        // (Only in a table holding expiring entries: the others' bytes stay as they were.)
        if self.num_expiring > 0 {
            f.push(("strata.expiry.latest", self.latest_expiry));
        }
        f.extend([
            ("strata.filter.size", self.filter_size),
            ("strata.index.size", self.index_size),
            ("strata.num.deletions", self.num_deletions),
            ("strata.num.entries", self.num_entries),
        ]);
        if self.num_expiring > 0 {
            f.push(("strata.num.expiring", self.num_expiring));
        }
        f.extend([
            ("strata.raw.key.size", self.raw_key_size),
            ("strata.raw.value.size", self.raw_value_size),
            ("strata.seq.largest", self.largest_seq),
            ("strata.seq.smallest", self.smallest_seq),
        ]);
        f
    }

    /// Encodes as a block of name -> varint64.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = BlockBuilder::new(1);
        for (name, v) in self.fields() {
            let mut val = Vec::new();
            put_varint64(&mut val, v);
            b.add(name.as_bytes(), &val);
        }
        b.finish()
    }

    /// Decodes a properties block. Unknown names are ignored (forward compatible).
    ///
    /// # Errors
    /// `Corruption` on malformed contents.
    pub fn decode(data: Vec<u8>, file: &Path, offset: u64) -> Result<TableProperties> {
        let block = Arc::new(Block::new(data, file, offset)?);
        let mut it = block.iter(|a, b| a.cmp(b));
        let mut p = TableProperties::default();
        it.seek_to_first();
        while it.valid() {
            let v = get_varint64(&mut { it.value() })
                .ok_or_else(|| Error::corruption(file, offset, "bad property value"))?;
            match it.key() {
                b"strata.data.blocks" => p.num_data_blocks = v,
                b"strata.data.size" => p.data_size = v,
                b"strata.filter.size" => p.filter_size = v,
                b"strata.index.size" => p.index_size = v,
                b"strata.num.deletions" => p.num_deletions = v,
                b"strata.num.entries" => p.num_entries = v,
                b"strata.num.expiring" => p.num_expiring = v,
                b"strata.expiry.latest" => p.latest_expiry = v,
                b"strata.raw.key.size" => p.raw_key_size = v,
                b"strata.raw.value.size" => p.raw_value_size = v,
                b"strata.seq.largest" => p.largest_seq = v,
                b"strata.seq.smallest" => p.smallest_seq = v,
                _ => {}
            }
            it.next();
        }
        it.status().map_err(|e| e.context(file.display()))?;
        Ok(p)
    }
}
