//! [`Block`]: a sorted run of prefix-compressed entries with restart points.
//!
//! Layout (docs/format/sstable.md, "Block"): entries `shared | non_shared | value_len |
//! key_delta | value` (three varint32s), then `restarts: [u32]`, then `num_restarts: u32`.
//! At each restart point the key is stored whole, so a seek binary-searches restarts and then
//! scans at most `restart_interval` entries.

mod builder;
mod iter;

use std::path::Path;
use std::sync::Arc;

pub use builder::BlockBuilder;
pub use iter::BlockIterator;

use crate::coding::u32_at;
use crate::error::{Error, Result};

/// How keys in a block compare.
pub type Comparator = fn(&[u8], &[u8]) -> std::cmp::Ordering;

/// An immutable, decoded block. Its bytes may be borrowed from a table's memory map.
pub struct Block {
    data: crate::fs::FileBytes,
    restarts_offset: usize,
    num_restarts: usize,
}

impl std::fmt::Debug for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Block({} bytes, {} restarts)",
            self.data.len(),
            self.num_restarts
        )
    }
}

impl Block {
    /// Parses block contents; `file` and `offset` name it in errors.
    ///
    /// # Errors
    /// `Corruption` if the restart array does not fit.
    pub fn new(data: impl Into<crate::fs::FileBytes>, file: &Path, offset: u64) -> Result<Block> {
        let data = data.into();
        let bad = |what| Error::corruption(file, offset, what);
        if data.len() < 4 {
            return Err(bad("block too short for its restart count"));
        }
        let num_restarts = u32_at(&data, data.len() - 4).unwrap_or(0) as usize;
        let max = (data.len() - 4) / 4;
        if num_restarts == 0 || num_restarts > max {
            return Err(bad("block restart count out of range"));
        }
        let restarts_offset = data.len() - 4 - 4 * num_restarts;
        Ok(Block {
            data,
            restarts_offset,
            num_restarts,
        })
    }

    /// Bytes held (for cache charging).
    pub fn size(&self) -> usize {
        self.data.len()
    }

    /// An iterator over the block ordered by `cmp`.
    pub fn iter(self: &Arc<Self>, cmp: Comparator) -> BlockIterator {
        BlockIterator::new(self.clone(), cmp)
    }

    fn restart(&self, i: usize) -> usize {
        u32_at(&self.data, self.restarts_offset + 4 * i).unwrap_or(0) as usize
    }
}

#[cfg(test)]
mod tests;
