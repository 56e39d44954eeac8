//! [`TableCache`]: open tables, bounded by `max_open_files`.
//!
//! Read path: every table lookup goes through here; a miss opens the file (footer, index,
//! filter). Evicted tables close when their last reader lets go.

use std::sync::Arc;

use crate::cache::ClockCache;
use crate::error::{Error, Result};
use crate::file_meta::FileMeta;
use crate::filename::FileNumber;
use crate::fs::{Fs, ReadAccess};
use crate::key::{self, ValueKind};
use crate::memtable::Lookup;
use crate::placement::Placement;
use crate::sst::{BlockCache, Table};

/// Cache of open tables.
pub struct TableCache {
    fs: Arc<dyn Fs>,
    placement: Placement,
    tables: ClockCache<FileNumber, Arc<Table>>,
    block_cache: Option<Arc<BlockCache>>,
    access: ReadAccess,
    pin_metadata: bool,
}

impl TableCache {
    /// A cache keeping up to `max_open` tables open.
    pub fn new(
        fs: Arc<dyn Fs>,
        placement: Placement,
        max_open: usize,
        block_cache: Option<Arc<BlockCache>>,
    ) -> Self {
        TableCache {
            fs,
            placement,
            tables: ClockCache::new(max_open),
            block_cache,
            access: ReadAccess::default(),
            pin_metadata: false,
        }
    }

    /// Reads tables the way `access` says, with their index and filter on the heap if
    /// `pin_metadata` (`Options::table_reads`, `Options::pin_table_metadata`).
    #[must_use]
    pub fn reading(mut self, access: ReadAccess, pin_metadata: bool) -> Self {
        self.access = access;
        self.pin_metadata = pin_metadata;
        self
    }

    /// The open table for `f`, opening it on a miss.
    ///
    /// # Errors
    /// I/O errors and `Corruption` from opening the table.
    pub fn table(&self, f: &FileMeta) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.get(&f.number) {
            return Ok(t);
        }
        let path = self.placement.table_path(f.number, f.path_id);
        let file = self.fs.open_with(&path, self.access)?;
        let t = Arc::new(Table::open_with(
            file,
            &path,
            self.block_cache.clone(),
            self.pin_metadata,
        )?);
        self.tables.insert(f.number, t.clone(), 1);
        Ok(t)
    }

    /// The newest version of `user_key` in table `f` at or below the sequence of `target`
    /// (its seek key), if the table holds one.
    ///
    /// # Errors
    /// I/O errors and `Corruption` naming the table.
    pub fn get(&self, f: &FileMeta, target: &[u8], user_key: &[u8]) -> Result<Option<Lookup>> {
        let t = self.table(f)?;
        let Some((k, v)) = t.get(target, user_key)? else {
            return Ok(None);
        };
        let p = key::parse(&k)
            .ok_or_else(|| Error::corruption(t.path(), 0, "malformed internal key"))?;
        Ok(Some(match p.kind {
            ValueKind::Put => Lookup::Value(v),
            ValueKind::Delete => Lookup::Deleted,
        }))
    }

    /// Forgets table `n` (its file is being deleted).
    pub fn evict(&self, n: FileNumber) {
        self.tables.remove(&n);
    }
}
