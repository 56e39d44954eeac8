//! [`BlockBuilder`]: builds a block from keys added in order.

use crate::coding::put_varint32;

/// Builds one block. Keys must be added in increasing order.
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    counter: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    /// A builder storing a full key every `restart_interval` entries.
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            last_key: Vec::new(),
        }
    }

    /// Adds an entry. REQUIRES: `key` > every key added before.
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let mut shared = 0;
        if self.counter < self.restart_interval {
            shared = self
                .last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count();
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
        }
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, (key.len() - shared) as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(&key[shared..]);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(&key[shared..]);
        self.counter += 1;
    }

    /// Estimated size of the finished block.
    pub fn size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The last key added.
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Finishes the block, returning its bytes and resetting the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        out
    }

    /// Gives back a block [`finish`](Self::finish) returned, once written, so that the next
    /// block is built in its allocation: a fresh buffer per block grew by doubling from
    /// nothing (a dozen reallocations for a 4 KiB block), and those past the allocator's
    /// per-thread cache took its arena lock, which the compaction thread waited on.
    pub fn recycle(&mut self, mut block: Vec<u8>) {
        if self.buf.is_empty() && block.capacity() > self.buf.capacity() {
            block.clear();
            self.buf = block;
        }
    }
}
