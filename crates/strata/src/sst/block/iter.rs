//! [`BlockIterator`]: a cursor over one block.

use std::cmp::Ordering;
use std::sync::Arc;

use super::{Block, Comparator};
use crate::coding::get_varint32;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;

/// Iterates a block; holds it alive. Malformed entries end iteration with `Corruption`.
pub struct BlockIterator {
    block: Arc<Block>,
    cmp: Comparator,
    /// Offset of the current entry (== restarts_offset when invalid at the end).
    current: usize,
    /// Offset of the entry after the current one.
    next_offset: usize,
    restart_index: usize,
    key: Vec<u8>,
    value: (usize, usize),
    valid: bool,
    status: Result<()>,
}

impl BlockIterator {
    pub(super) fn new(block: Arc<Block>, cmp: Comparator) -> Self {
        let end = block.restarts_offset;
        BlockIterator {
            block,
            cmp,
            current: end,
            next_offset: end,
            restart_index: 0,
            key: Vec::new(),
            value: (0, 0),
            valid: false,
            status: Ok(()),
        }
    }

    fn corrupt(&mut self) {
        self.valid = false;
        self.current = self.block.restarts_offset;
        if self.status.is_ok() {
            self.status = Err(Error::corrupt(format!(
                "bad entry in block at block offset {}",
                self.next_offset
            )));
        }
    }

    /// Decodes the entry at `next_offset`; false at the end or on corruption.
    fn parse_next(&mut self) -> bool {
        self.current = self.next_offset;
        let end = self.block.restarts_offset;
        if self.current >= end {
            self.valid = false;
            self.current = end;
            self.restart_index = self.block.num_restarts;
            return false;
        }
        let data = &self.block.data[..end];
        let mut src = &data[self.current..];
        let (Some(shared), Some(non_shared), Some(vlen)) = (
            get_varint32(&mut src),
            get_varint32(&mut src),
            get_varint32(&mut src),
        ) else {
            self.corrupt();
            return false;
        };
        let (shared, non_shared, vlen) = (shared as usize, non_shared as usize, vlen as usize);
        let header = data.len() - self.current - src.len();
        if shared > self.key.len() || src.len() < non_shared.saturating_add(vlen) {
            self.corrupt();
            return false;
        }
        self.key.truncate(shared);
        self.key.extend_from_slice(&src[..non_shared]);
        let vstart = self.current + header + non_shared;
        self.value = (vstart, vlen);
        self.next_offset = vstart + vlen;
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
        self.valid = true;
        true
    }

    fn seek_to_restart(&mut self, index: usize) {
        self.key.clear();
        self.restart_index = index;
        self.next_offset = self.block.restart(index);
    }

    /// The key stored whole at restart point `i`, if decodable.
    fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let off = self.block.restart(i);
        let data = &self.block.data[..self.block.restarts_offset];
        let mut src = data.get(off..)?;
        let shared = get_varint32(&mut src)?;
        let non_shared = get_varint32(&mut src)? as usize;
        get_varint32(&mut src)?;
        if shared != 0 {
            return None;
        }
        src.get(..non_shared)
    }
}

impl InternalIterator for BlockIterator {
    fn valid(&self) -> bool {
        self.valid
    }

    fn seek_to_first(&mut self) {
        self.status = Ok(());
        self.seek_to_restart(0);
        self.parse_next();
    }

    fn seek_to_last(&mut self) {
        self.status = Ok(());
        self.seek_to_restart(self.block.num_restarts - 1);
        while self.parse_next() && self.next_offset < self.block.restarts_offset {}
    }

    fn seek(&mut self, target: &[u8]) {
        self.status = Ok(());
        // Binary search for the last restart whose key is < target.
        let (mut lo, mut hi) = (0usize, self.block.num_restarts - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            match self.restart_key(mid) {
                Some(k) if (self.cmp)(k, target) == Ordering::Less => lo = mid,
                Some(_) => hi = mid - 1,
                None => {
                    self.corrupt();
                    return;
                }
            }
        }
        self.seek_to_restart(lo);
        while self.parse_next() {
            if (self.cmp)(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn next(&mut self) {
        self.parse_next();
    }

    fn prev(&mut self) {
        let original = self.current;
        // Back up to a restart point strictly before the current entry.
        while self.block.restart(self.restart_index) >= original {
            if self.restart_index == 0 {
                self.valid = false;
                self.current = self.block.restarts_offset;
                self.restart_index = self.block.num_restarts;
                return;
            }
            self.restart_index -= 1;
        }
        self.seek_to_restart(self.restart_index);
        while self.parse_next() && self.next_offset < original {}
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        &self.block.data[self.value.0..self.value.0 + self.value.1]
    }

    fn status(&self) -> Result<()> {
        self.status.clone()
    }
}
