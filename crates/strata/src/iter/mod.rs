//! Internal iterators: positioned cursors over internal-key-ordered entries.
//!
//! Every sorted source (block, table, memtable, level, merge of them) implements
//! [`InternalIterator`]. Keys are internal keys (user key + trailer); the database iterator
//! ([`crate::db::DbIterator`]) turns them into user-visible entries.

mod merge;
mod two_level;

pub use merge::MergingIterator;
pub use two_level::{Opener, TwoLevelIterator};

use crate::error::Result;

/// A cursor over entries sorted by internal key.
///
/// When `valid()` is false, `key`/`value` must not be called. An I/O or corruption error makes
/// the iterator invalid and is reported by `status()`.
pub trait InternalIterator: Send {
    /// Whether the cursor is at an entry.
    fn valid(&self) -> bool;
    /// Moves to the first entry.
    fn seek_to_first(&mut self);
    /// Moves to the last entry.
    fn seek_to_last(&mut self);
    /// Moves to the first entry with key >= `target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// Moves to the next entry. REQUIRES: `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. REQUIRES: `valid()`.
    fn prev(&mut self);
    /// The current internal key. REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. REQUIRES: `valid()`.
    fn value(&self) -> &[u8];
    /// The first error met, if any.
    fn status(&self) -> Result<()>;
}

/// An iterator over nothing, or over an error.
pub struct EmptyIterator(pub Result<()>);

impl InternalIterator for EmptyIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _target: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> Result<()> {
        self.0.clone()
    }
}
