//! strata: an embeddable, persistent, ordered key-value store built on an LSM tree.
//!
//! ```
//! use strata::{Db, Options};
//! # let dir = std::env::temp_dir().join(format!("strata-doc-{}", std::process::id()));
//! let db = Db::open(&dir, Options::default())?;
//! db.put(b"hello", b"world")?;
//! assert_eq!(db.get(b"hello")?, Some(b"world".to_vec()));
//! # drop(db); std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), strata::Error>(())
//! ```
//!
//! Start at [`Db`]; ARCHITECTURE.md maps the write and read paths to the modules below.

pub mod batch;
mod bg;
pub mod cache;
pub mod coding;
pub mod compaction;
mod db;
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
pub mod stats;
pub mod table_cache;
pub mod version;
pub mod wal;

pub use batch::WriteBatch;
pub use db::{Db, DbIterator, Snapshot};
pub use error::{Error, ErrorKind, Result};
pub use options::{CompactionPriority, L0Layout, Options, ReadOptions, WriteOptions};
pub use sst::Compression;
pub use stats::StatsSnapshot;
pub use wal::WalRecoveryMode;
