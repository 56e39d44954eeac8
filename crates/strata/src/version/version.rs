//! [`Version`]: an immutable snapshot of which table files make up each level.
//!
//! Readers take an `Arc<Version>` and use it without locks; flush and compaction build a new
//! version from the current one plus a [`super::VersionEdit`] and install it atomically.
//! Level 0 files are ordered newest first and may overlap; deeper levels are sorted by key and
//! do not overlap.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use crate::coding::{get_varint64, put_varint64};
use crate::error::Result;
use crate::filename::FileNumber;
use crate::iter::{InternalIterator, Opener, TwoLevelIterator};
use crate::key::{self, SeqNo};
use crate::sst::TableIterator;
use crate::table_cache::TableCache;

/// One table file as the manifest describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// The file number (names the file).
    pub number: FileNumber,
    /// Which directory the file lives in (see [`crate::placement`]).
    pub path_id: u8,
    /// File size in bytes.
    pub size: u64,
    /// Smallest internal key.
    pub smallest: Vec<u8>,
    /// Largest internal key.
    pub largest: Vec<u8>,
    /// Smallest sequence number inside.
    pub smallest_seq: SeqNo,
    /// Largest sequence number inside.
    pub largest_seq: SeqNo,
    /// Entries inside.
    pub num_entries: u64,
    /// Tombstones inside.
    pub num_deletions: u64,
    /// Reads that consulted this file in vain (not persisted; see [`ReadCharges`]).
    pub read_charges: ReadCharges,
}

/// How many reads consulted a table of a sorted level and then had to go on to a deeper
/// level: the count behind read-triggered compaction (docs/design/core-engine.md,
/// "Read-triggered compaction"). Runtime state, not part of the manifest: a clone (a file
/// moved to another level) and a reopened database start from zero, and two metas that
/// differ only here are equal.
#[derive(Default)]
pub struct ReadCharges(AtomicU64);

impl ReadCharges {
    /// Adds one charge; returns the new total.
    pub fn add(&self) -> u64 {
        self.0.fetch_add(1, AtomicOrdering::Relaxed) + 1
    }

    /// The charges so far.
    pub fn get(&self) -> u64 {
        self.0.load(AtomicOrdering::Relaxed)
    }
}

impl Clone for ReadCharges {
    fn clone(&self) -> Self {
        ReadCharges::default()
    }
}

impl PartialEq for ReadCharges {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ReadCharges {}

impl std::fmt::Debug for ReadCharges {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

impl FileMeta {
    /// Smallest user key.
    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }

    /// Largest user key.
    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.largest)
    }

    /// Whether the file's user-key range intersects [`lo`, `hi`] (`None` = unbounded).
    pub fn overlaps(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> bool {
        !(lo.is_some_and(|lo| self.largest_user_key() < lo)
            || hi.is_some_and(|hi| self.smallest_user_key() > hi))
    }
}

/// One level's files, shared: versions that did not change a level share its list, and an
/// iterator over a level holds the list without copying it (copying a 1,000-file level for
/// every `Db::iter` was a quarter of a seekrandom profile).
pub type FileList = Arc<Vec<Arc<FileMeta>>>;

/// The files of every level at one point in time.
#[derive(Debug, Clone, Default)]
pub struct Version {
    /// `levels[0]` newest first; deeper levels sorted by smallest key.
    pub levels: Vec<FileList>,
}

impl Version {
    /// An empty version with `num_levels` levels.
    pub fn new(num_levels: usize) -> Self {
        Version {
            levels: vec![FileList::default(); num_levels],
        }
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Files of `level`.
    pub fn files(&self, level: usize) -> &[Arc<FileMeta>] {
        self.levels.get(level).map_or(&[], |v| v.as_slice())
    }

    /// Total bytes of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.files(level).iter().map(|f| f.size).sum()
    }

    /// Index of the first file in sorted `level` (>= 1) whose largest key >= `ikey`.
    pub fn find_file(&self, level: usize, ikey: &[u8]) -> usize {
        self.files(level)
            .partition_point(|f| key::compare(&f.largest, ikey) == Ordering::Less)
    }

    /// Files of `level` overlapping the user-key range [`lo`, `hi`]. For level 0 the range is
    /// widened until it covers every overlapping file transitively (so that all versions of a
    /// key in L0 move together).
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        let files = self.files(level);
        if level > 0 {
            let start = match lo {
                Some(lo) => files.partition_point(|f| f.largest_user_key() < lo),
                None => 0,
            };
            return files[start..]
                .iter()
                .take_while(|f| f.overlaps(None, hi))
                .cloned()
                .collect();
        }
        let (mut lo, mut hi) = (lo.map(<[u8]>::to_vec), hi.map(<[u8]>::to_vec));
        loop {
            let picked: Vec<Arc<FileMeta>> = files
                .iter()
                .filter(|f| f.overlaps(lo.as_deref(), hi.as_deref()))
                .cloned()
                .collect();
            let mut widened = false;
            for f in &picked {
                if lo.as_deref().is_some_and(|l| f.smallest_user_key() < l) {
                    lo = Some(f.smallest_user_key().to_vec());
                    widened = true;
                }
                if hi.as_deref().is_some_and(|h| f.largest_user_key() > h) {
                    hi = Some(f.largest_user_key().to_vec());
                    widened = true;
                }
            }
            if !widened {
                return picked;
            }
        }
    }

    /// The file of sorted `level` (>= 1) whose user-key range holds `user_key`, if any.
    pub fn file_holding(&self, level: usize, user_key: &[u8]) -> Option<&Arc<FileMeta>> {
        let files = self.files(level);
        let i = files.partition_point(|f| f.largest_user_key() < user_key);
        files.get(i).filter(|f| f.smallest_user_key() <= user_key)
    }

    /// Whether any level deeper than `level` may hold `user_key` (tombstone elision asks).
    pub fn key_may_exist_below(&self, level: usize, user_key: &[u8]) -> bool {
        (level + 1..self.num_levels()).any(|l| self.file_holding(l, user_key).is_some())
    }

    /// Per-level file counts, e.g. `[4 3 10 0 0 0 0]`.
    pub fn level_summary(&self) -> String {
        let counts: Vec<String> = self.levels.iter().map(|l| l.len().to_string()).collect();
        format!("[{}]", counts.join(" "))
    }

    /// Iterators over every table, L0 file by file, then one lazy iterator per deeper level.
    pub fn iterators(&self, tables: &Arc<TableCache>) -> Vec<Box<dyn InternalIterator>> {
        let mut out: Vec<Box<dyn InternalIterator>> = Vec::new();
        for f in self.files(0) {
            match tables.table(f) {
                Ok(t) => out.push(Box::new(t.iter())),
                Err(e) => out.push(Box::new(crate::iter::EmptyIterator(Err(e)))),
            }
        }
        for level in 1..self.num_levels() {
            if !self.files(level).is_empty() {
                out.push(Box::new(level_iterator(
                    self.levels[level].clone(),
                    tables.clone(),
                )));
            }
        }
        out
    }
}

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
