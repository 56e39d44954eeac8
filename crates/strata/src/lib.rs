//! strata: an embeddable, persistent, ordered key-value store built on an LSM tree.

pub mod batch;
pub mod cache;
pub mod coding;
pub mod compaction;
pub mod error;
pub mod filename;
pub mod fs;
pub mod iter;
pub mod key;
pub mod l0;
pub mod memtable;
pub mod options;
pub mod placement;
pub mod sst;
pub mod table_cache;
pub mod version;
pub mod wal;

pub use batch::WriteBatch;
pub use error::{Error, ErrorKind, Result};
pub use options::{Options, ReadOptions, WriteOptions};

/// Placeholder until the db module lands.
#[derive(Clone, Debug)]
pub struct Snapshot;
