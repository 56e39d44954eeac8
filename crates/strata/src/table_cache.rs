//! [`TableCache`]: open tables, bounded by `max_open_files`.
//!
//! Read path: every table lookup goes through here; a miss opens the file (footer, index,
//! filter). Evicted tables close when their last reader lets go.

use std::sync::Arc;

use crate::cache::ClockCache;
use crate::error::Result;
use crate::filename::FileNumber;
use crate::fs::Fs;
use crate::placement::Placement;
use crate::sst::{BlockCache, Table};
use crate::version::FileMeta;

/// Cache of open tables.
pub struct TableCache {
    fs: Arc<dyn Fs>,
    placement: Placement,
    tables: ClockCache<FileNumber, Arc<Table>>,
    block_cache: Option<Arc<BlockCache>>,
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
        }
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
        let file = self.fs.open(&path)?;
        let t = Arc::new(Table::open(file, &path, self.block_cache.clone())?);
        self.tables.insert(f.number, t.clone(), 1);
        Ok(t)
    }

    /// Forgets table `n` (its file is being deleted).
    pub fn evict(&self, n: FileNumber) {
        self.tables.remove(&n);
    }

    /// The shared block cache, if any.
    pub fn block_cache(&self) -> Option<&Arc<BlockCache>> {
        self.block_cache.as_ref()
    }
}
