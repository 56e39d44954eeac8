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

mod backup;
mod batch;
mod cache;
mod coalesce;
mod coding;
mod compaction;
mod compaction_filter;
mod db;
mod error;
mod file_meta;
mod filename;
pub mod fs;
mod hint;
pub mod inspect;
mod iter;
mod key;
mod l0;
mod memtable;
mod obsolete;
mod options;
mod placement;
mod pmem;
mod range_del;
mod registry;
mod repair;
mod snapshot;
mod sst;
mod stats;
mod sync;
mod table_cache;
mod ttl;
mod value;
mod version;
mod version_filter;
mod vstore;
mod wal;

pub use backup::{BackupEngine, BackupInfo};
pub use batch::WriteBatch;
pub use compaction_filter::{CompactionFilter, Decision, FilterEntry, FilterReason};
pub use db::{Db, DbIterator, Snapshot};
pub use error::{Error, ErrorKind, Result};
pub use options::{
    BucketBoundaries, CompactionPicker, CompactionPriority, HashGcPolicy, HashWhenFull, InfoLog,
    L0Layout, LevelSizing, Options, ReadCharging, ReadOptions, SeekCharging, TableCut,
    ValueStoreKind, WriteOptions, WriteSlowdown,
};
pub use repair::{destroy, repair, RepairReport};
pub use sst::Compression;
pub use stats::StatsSnapshot;
pub use ttl::{Clock, SystemClock};
pub use wal::WalRecoveryMode;

/// Tells glibc's `malloc` to give freed memory back instead of keeping it: a fixed mmap
/// threshold of 128 KiB (glibc raises its own after each large free, after which the
/// engine's multi-megabyte transient buffers come from heaps that keep their pages) and
/// one arena per core. Process-wide, so it is the program's call, not the engine's:
/// `strata-bench` and `strata-server` make it at start. Measured (issue 33, 10M items of
/// 50 B, `cleveldb`, under a 256 MiB memory cgroup): anonymous memory 252 MiB and the
/// process killed without it, 173 MiB with it. Does nothing with another C library or
/// allocator.
pub fn limit_malloc_retention() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let arenas = libc::c_int::try_from(cores.max(2)).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only changes glibc's allocator parameters; it is safe to call
        // at any time, from any thread, and failing leaves the defaults.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}

/// The engine's insides, for strata's own tests, fuzz targets and micro-benchmarks: not part
/// of the API, not covered by semantic versioning, hidden from the documentation.
#[doc(hidden)]
pub mod internals {
    /// Shared-capacity caches.
    pub mod cache {
        pub use crate::cache::*;
    }
    /// File names and numbers.
    pub mod filename {
        pub use crate::filename::*;
    }
    /// Internal iterators.
    pub mod iter {
        pub use crate::iter::*;
    }
    /// Internal keys.
    pub mod key {
        pub use crate::key::*;
    }
    /// The memtable.
    pub mod memtable {
        pub use crate::memtable::*;
    }
    /// Tables, blocks, filters.
    pub mod sst {
        pub use crate::sst::*;
    }
    /// Manifest records.
    pub mod version {
        pub use crate::version::{L0Record, VersionEdit};

        /// Decodes a manifest record with the value formats this build registers.
        ///
        /// # Errors
        /// As the manifest's reader reports a record it cannot decode.
        pub fn decode_edit(src: &[u8]) -> crate::Result<VersionEdit> {
            VersionEdit::decode(src, crate::registry::registered())
        }
    }
    /// Which directory each kind of file lives in.
    pub mod placement {
        pub use crate::placement::{Directories, PathId};
    }
    /// The record log of WALs and manifests.
    pub mod wal {
        pub use crate::wal::*;
    }
}
