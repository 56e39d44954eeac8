//! [`Placement`]: which directory each kind of file lives in.
//!
//! The database directory holds CURRENT, LOCK, manifests and L0 tables; `wal_dir` (default:
//! the database directory) holds WALs; `level_dir` (default: the database directory) holds
//! tables of levels >= 1. This is OHDB's "two disk components" and RocksDB's
//! `wal_dir`/`db_paths`. Each table records a path id in the manifest, so a table is found
//! where it was written even if the options change later.

use std::path::{Path, PathBuf};

use crate::filename::{self, FileNumber};

/// Path id of the database directory. Persisted in the manifest: never renumber.
pub const PATH_DB: u8 = 0;
/// Path id of the directory for levels >= 1. Persisted in the manifest: never renumber.
pub const PATH_LEVELS: u8 = 1;

/// Maps file kinds to directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    db_dir: PathBuf,
    wal_dir: PathBuf,
    level_dir: PathBuf,
}

impl Placement {
    /// Placement for a database at `db_dir` with optional separate WAL and level directories.
    pub fn new(db_dir: &Path, wal_dir: Option<&Path>, level_dir: Option<&Path>) -> Self {
        Placement {
            db_dir: db_dir.to_path_buf(),
            wal_dir: wal_dir.unwrap_or(db_dir).to_path_buf(),
            level_dir: level_dir.unwrap_or(db_dir).to_path_buf(),
        }
    }

    /// The database directory (CURRENT, LOCK, manifests, L0 tables).
    pub fn db_dir(&self) -> &Path {
        &self.db_dir
    }

    /// The WAL directory.
    pub fn wal_dir(&self) -> &Path {
        &self.wal_dir
    }

    /// Every distinct directory in use.
    pub fn dirs(&self) -> Vec<&Path> {
        let mut v = vec![self.db_dir.as_path()];
        for d in [&self.wal_dir, &self.level_dir] {
            if !v.contains(&d.as_path()) {
                v.push(d);
            }
        }
        v
    }

    /// The path id new tables of `level` get.
    pub fn path_id_for_level(&self, level: usize) -> u8 {
        if level == 0 || self.level_dir == self.db_dir {
            PATH_DB
        } else {
            PATH_LEVELS
        }
    }

    /// The directory of path id `id`.
    pub fn dir_of(&self, id: u8) -> &Path {
        if id == PATH_LEVELS {
            &self.level_dir
        } else {
            &self.db_dir
        }
    }

    /// Full path of table `n` stored under path id `id`.
    pub fn table_path(&self, n: FileNumber, id: u8) -> PathBuf {
        self.dir_of(id).join(filename::table_name(n))
    }

    /// Full path of WAL `n`.
    pub fn wal_path(&self, n: FileNumber) -> PathBuf {
        self.wal_dir.join(filename::wal_name(n))
    }

    /// Full path of manifest `n`.
    pub fn manifest_path(&self, n: FileNumber) -> PathBuf {
        self.db_dir.join(filename::manifest_name(n))
    }

    /// Full path of CURRENT.
    pub fn current_path(&self) -> PathBuf {
        self.db_dir.join(filename::CURRENT)
    }
}
