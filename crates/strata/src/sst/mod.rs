//! Sorted string tables: immutable files of sorted internal keys (docs/format/sstable.md).
//!
//! Written once by flush or compaction ([`TableBuilder`]), then only read ([`Table`]).

pub mod block;
pub mod builder;
pub mod filter;
pub mod format;
pub mod properties;
pub mod range_file;
pub mod table;

pub use builder::{TableBuilder, TableOptions, UnsyncedTable};
pub use format::Compression;
pub use properties::TableProperties;
pub use table::{BlockCache, Table, TableIterator};

#[cfg(test)]
mod tests;
