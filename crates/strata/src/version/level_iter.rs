//! [`LevelIterator`]: a lazy iterator over the sorted, disjoint tables of one level >= 1
//! (a two-level walk: the file list is the index, tables open as the cursor reaches them).
//! Used by user iterators and by compaction inputs.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::coding::{get_varint64, put_varint64};
use crate::error::Result;
use crate::file_meta::FileList;
use crate::iter::{InternalIterator, Opener, TwoLevelIterator};
use crate::key;
use crate::sst::TableIterator;
use crate::table_cache::TableCache;

/// A level >= 1: files sorted by key, each opened lazily.
pub type LevelIterator = TwoLevelIterator<FileListIterator, TableOpener>;

/// A lazy iterator over the sorted files of one level.
pub fn level_iterator(files: FileList, tables: Arc<TableCache>) -> LevelIterator {
    let index = FileListIterator {
        files: files.clone(),
        pos: files.len(),
        value: Vec::new(),
    };
    TwoLevelIterator::new(index, TableOpener { files, tables })
}

/// Opens the tables of a level for [`LevelIterator`].
pub struct TableOpener {
    files: FileList,
    tables: Arc<TableCache>,
}

impl Opener for TableOpener {
    type Data = TableIterator;

    fn open(&self, handle: &[u8]) -> Result<TableIterator> {
        let i = get_varint64(&mut { handle }).unwrap_or(u64::MAX) as usize;
        let f = self
            .files
            .get(i)
            .ok_or_else(|| crate::Error::corrupt("bad level index entry"))?;
        Ok(self.tables.table(f)?.iter())
    }
}

/// Index over a sorted file list: key = file's largest key, value = its position.
pub struct FileListIterator {
    files: FileList,
    pos: usize,
    value: Vec<u8>,
}

impl FileListIterator {
    fn set(&mut self, pos: usize) {
        self.pos = pos;
        self.value.clear();
        put_varint64(&mut self.value, pos as u64);
    }
}

impl InternalIterator for FileListIterator {
    fn valid(&self) -> bool {
        self.pos < self.files.len()
    }
    fn seek_to_first(&mut self) {
        self.set(0);
    }
    fn seek_to_last(&mut self) {
        match self.files.len() {
            0 => self.pos = 0,
            n => self.set(n - 1),
        }
    }
    fn seek(&mut self, target: &[u8]) {
        let p = self
            .files
            .partition_point(|f| key::compare(&f.largest, target) == Ordering::Less);
        self.set(p);
    }
    fn next(&mut self) {
        self.set(self.pos + 1);
    }
    fn prev(&mut self) {
        if self.pos == 0 {
            self.pos = self.files.len();
        } else {
            self.set(self.pos - 1);
        }
    }
    fn key(&self) -> &[u8] {
        &self.files[self.pos].largest
    }
    fn value(&self) -> &[u8] {
        &self.value
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
