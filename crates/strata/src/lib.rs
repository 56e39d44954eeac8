//! strata: an embeddable, persistent, ordered key-value store built on an LSM tree.

pub mod batch;
pub mod cache;
pub mod coding;
pub mod error;
pub mod fs;
pub mod iter;
pub mod key;
pub mod memtable;
pub mod sst;
pub mod wal;

pub use batch::WriteBatch;
pub use error::{Error, ErrorKind, Result};
