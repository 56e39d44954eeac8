//! [`TableCache`]: open tables, bounded by `max_open_files`.
//!
//! Read path: every table lookup goes through here; a miss opens the file (footer, index,
//! filter). Evicted tables close when their last reader lets go.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::cache::ClockCache;
use crate::error::{Error, Result};
use crate::file_meta::FileMeta;
use crate::filename::FileNumber;
use crate::fs::{FileBytes, Fs, RandomAccessFile, ReadAccess};
use crate::key::{self, SeqNo};
use crate::memtable::Lookup;
use crate::placement::Placement;
use crate::sst::{BlockCache, Table};

/// What a point lookup in one table found ([`TableCache::probe`]).
pub enum Probe {
    /// The table's filter ruled the key out: nothing was read.
    Excluded,
    /// The table was searched and holds no version of the key.
    Absent,
    /// The newest version at or below the lookup's sequence, with its sequence.
    Found(SeqNo, Lookup),
}

/// Whether files of `bytes` in all are beyond what the page cache can be expected to hold
/// (`budget`, `Options::page_cache_budget`), given whether they were judged so last time:
/// beyond once over the budget, back within below nine tenths of it, so that a tree
/// hovering at the budget does not switch on every new version.
pub(crate) fn beyond_memory(was: bool, bytes: u64, budget: u64) -> bool {
    if bytes > budget {
        true
    } else if bytes < budget / 10 * 9 {
        false
    } else {
        was
    }
}

/// How a [`TableCache`] chooses the way it reads the tables it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableReads {
    /// Always this way (`Options::table_reads` set).
    Fixed(ReadAccess),
    /// By the size of the live tables (`Options::table_reads` unset): maps while they hold
    /// at most `budget` bytes, `pread` beyond; back to maps below nine
    /// tenths of it, so a tree hovering at the budget does not switch on every flush.
    BySize {
        /// Table bytes the page cache can be expected to hold.
        budget: u64,
    },
}

impl TableReads {
    /// How `opts` asks tables to be read: `table_reads` if set, else by size against three
    /// quarters of what the memtables and block cache leave of `memory_limit` (or of the
    /// memory detected, when that is unset).
    pub(crate) fn of(opts: &crate::options::Options) -> Self {
        match opts.table_reads {
            Some(a) => TableReads::Fixed(a),
            None => TableReads::BySize {
                budget: opts.page_cache_budget(),
            },
        }
    }
}

/// What the cache's tables asked of their files (compactions' reads included): while
/// opening (footer, index, filter, properties) and afterwards (data blocks, and the index
/// and filter of tables that read them through a map without pinning them). For a table
/// read with `pread` these are reads the page cache or the disk served; for a mapped one,
/// bytes looked at through the map, which the disk serves only on a page fault.
#[derive(Debug, Default)]
pub struct TableFileReads {
    /// Reads while opening tables, and their bytes.
    pub open_reads: AtomicU64,
    pub open_bytes: AtomicU64,
    /// Reads after opening (blocks), and their bytes.
    pub block_reads: AtomicU64,
    pub block_bytes: AtomicU64,
}

/// A table file that counts what is read from it into [`TableFileReads`].
struct CountingFile {
    inner: Arc<dyn RandomAccessFile>,
    reads: Arc<TableFileReads>,
    /// The table is still being opened.
    opening: AtomicBool,
}

impl CountingFile {
    fn count(&self, len: usize) {
        let (n, b) = if self.opening.load(Ordering::Relaxed) {
            (&self.reads.open_reads, &self.reads.open_bytes)
        } else {
            (&self.reads.block_reads, &self.reads.block_bytes)
        };
        n.fetch_add(1, Ordering::Relaxed);
        b.fetch_add(len as u64, Ordering::Relaxed);
    }
}

impl RandomAccessFile for CountingFile {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.count(len);
        self.inner.read_at(offset, len)
    }
    fn read_shared(&self, offset: u64, len: usize) -> Result<FileBytes> {
        self.count(len);
        self.inner.read_shared(offset, len)
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn is_mapped(&self) -> bool {
        self.inner.is_mapped()
    }
    fn prefetch(&self, offset: u64, len: usize) {
        self.inner.prefetch(offset, len);
    }
}

/// Cache of open tables.
pub struct TableCache {
    fs: Arc<dyn Fs>,
    placement: Placement,
    tables: ClockCache<FileNumber, Arc<Table>>,
    block_cache: Option<Arc<BlockCache>>,
    reads: TableReads,
    /// The `ReadAccess` tables open with now (`access_code`).
    access: AtomicU8,
    pin_metadata: bool,
    file_reads: Arc<TableFileReads>,
}

fn access_code(a: ReadAccess) -> u8 {
    match a {
        ReadAccess::Mapped => 0,
        ReadAccess::MappedRandom => 1,
        // Refused for tables by `Options::validate`; read as positional.
        ReadAccess::Positional | ReadAccess::Growing => 2,
    }
}

fn access_of(code: u8) -> ReadAccess {
    match code {
        0 => ReadAccess::Mapped,
        1 => ReadAccess::MappedRandom,
        _ => ReadAccess::Positional,
    }
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
            reads: TableReads::Fixed(ReadAccess::default()),
            access: AtomicU8::new(access_code(ReadAccess::default())),
            pin_metadata: false,
            file_reads: Arc::default(),
        }
    }

    /// Reads tables the way `reads` says (starting with maps when it decides by size), with
    /// the index and filter of mapped tables on the heap if `pin_metadata`
    /// (`Options::table_reads`, `Options::pin_table_metadata`).
    #[must_use]
    pub fn reading(mut self, reads: TableReads, pin_metadata: bool) -> Self {
        let first = match reads {
            TableReads::Fixed(a) => a,
            TableReads::BySize { .. } => ReadAccess::Mapped,
        };
        self.reads = reads;
        self.access = AtomicU8::new(access_code(first));
        self.pin_metadata = pin_metadata;
        self
    }

    /// What tables asked of their files so far.
    pub fn file_reads(&self) -> &TableFileReads {
        &self.file_reads
    }

    /// How tables open now.
    pub fn access(&self) -> ReadAccess {
        access_of(self.access.load(Ordering::SeqCst))
    }

    /// Tells the cache the live tables now hold `bytes`. When that moves reads by size to
    /// another way of reading, every open table is closed, to reopen that way when next
    /// read (readers holding one keep it until they let go). Called with each new version.
    pub fn set_live_bytes(&self, bytes: u64) {
        let TableReads::BySize { budget } = self.reads else {
            return;
        };
        let now = self.access();
        let next = if beyond_memory(now == ReadAccess::Positional, bytes, budget) {
            ReadAccess::Positional
        } else {
            ReadAccess::Mapped
        };
        if next != now {
            self.access.store(access_code(next), Ordering::SeqCst);
            self.tables.clear();
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
        let access = self.access();
        let file = Arc::new(CountingFile {
            inner: self.fs.open_with(&path, access)?,
            reads: self.file_reads.clone(),
            opening: AtomicBool::new(true),
        });
        let t = Arc::new(Table::open_with(
            file.clone(),
            &path,
            self.block_cache.clone(),
            self.pin_metadata,
        )?);
        file.opening.store(false, Ordering::Relaxed);
        self.tables.insert(f.number, t.clone(), 1);
        // NB: a switch of the way of reading (`set_live_bytes`) stores the new way, then
        // clears the cache. If it stored before this check, the table opened the old way
        // leaves the cache here; if after, its clear removes it.
        if self.access() != access {
            self.tables.remove(&f.number);
        }
        Ok(t)
    }

    /// The newest version of `user_key` in table `f` at or below the sequence of `target`
    /// (its seek key), if the table holds one.
    ///
    /// # Errors
    /// I/O errors and `Corruption` naming the table.
    pub fn get(
        &self,
        f: &FileMeta,
        target: &[u8],
        user_key: &[u8],
    ) -> Result<Option<(SeqNo, Lookup)>> {
        Ok(match self.probe(f, target, user_key)? {
            Probe::Found(seq, l) => Some((seq, l)),
            Probe::Excluded | Probe::Absent => None,
        })
    }

    /// [`TableCache::get`], saying whether the table's filter ruled the key out (no block
    /// was read) or the table was searched and did not hold it.
    ///
    /// # Errors
    /// As for [`TableCache::get`].
    pub fn probe(&self, f: &FileMeta, target: &[u8], user_key: &[u8]) -> Result<Probe> {
        let t = self.table(f)?;
        if !t.may_contain(user_key) {
            return Ok(Probe::Excluded);
        }
        let Some((k, v)) = t.search(target, user_key)? else {
            return Ok(Probe::Absent);
        };
        let p = key::parse(&k)
            .ok_or_else(|| Error::corruption(t.path(), 0, "malformed internal key"))?;
        Ok(Probe::Found(p.seq, Lookup::of(p.kind, v)))
    }

    /// Forgets table `n` (its file is being deleted).
    pub fn evict(&self, n: FileNumber) {
        self.tables.remove(&n);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::{Arc, Barrier, Mutex};

    use super::{TableCache, TableReads};
    use crate::file_meta::FileMeta;
    use crate::filename::{self, FileNumber};
    use crate::fs::{
        FileLock, Fs, MemFs, RandomAccessFile, ReadAccess, SequentialFile, WritableFile,
    };
    use crate::key::{self, SeqNo, ValueKind};
    use crate::placement::{PathId, Placement};
    use crate::sst::{TableBuilder, TableOptions};
    use crate::Result;

    /// MemFs that records how tables open, and holds the first open inside `open_with`
    /// until the test lets it go (two barrier waits: "in", "go on").
    #[derive(Debug)]
    struct Held {
        mem: MemFs,
        opened: Mutex<Vec<ReadAccess>>,
        hold: Mutex<Option<Arc<Barrier>>>,
    }

    impl Fs for Held {
        fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
            self.mem.create(path)
        }
        fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
            self.mem.open(path)
        }
        fn open_with(&self, path: &Path, a: ReadAccess) -> Result<Arc<dyn RandomAccessFile>> {
            self.opened.lock().unwrap().push(a);
            let hold = self.hold.lock().unwrap().take();
            if let Some(b) = hold {
                b.wait();
                b.wait();
            }
            self.mem.open_with(path, a)
        }
        fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
            self.mem.open_sequential(path)
        }
        fn exists(&self, path: &Path) -> bool {
            self.mem.exists(path)
        }
        fn list(&self, dir: &Path) -> Result<Vec<String>> {
            self.mem.list(dir)
        }
        fn remove(&self, path: &Path) -> Result<()> {
            self.mem.remove(path)
        }
        fn rename(&self, from: &Path, to: &Path) -> Result<()> {
            self.mem.rename(from, to)
        }
        fn create_dir_all(&self, dir: &Path) -> Result<()> {
            self.mem.create_dir_all(dir)
        }
        fn sync_dir(&self, dir: &Path) -> Result<()> {
            self.mem.sync_dir(dir)
        }
        fn sync_file(&self, path: &Path) -> Result<()> {
            self.mem.sync_file(path)
        }
        fn file_size(&self, path: &Path) -> Result<u64> {
            self.mem.file_size(path)
        }
        fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
            self.mem.lock(path)
        }
    }

    /// A table opened the old way while reads switch ways must not stay cached: the next
    /// read opens it the new way. The open is held inside the file system while the switch
    /// runs, so the race is hit every time (the test fails without the re-check after
    /// inserting).
    #[test]
    fn a_table_opened_during_a_switch_is_not_kept() {
        let fs = Arc::new(Held {
            mem: MemFs::new(),
            opened: Mutex::new(Vec::new()),
            hold: Mutex::new(None),
        });
        fs.create_dir_all(Path::new("/db")).unwrap();
        let placement = Placement::new(Path::new("/db"), None, None);
        let n = FileNumber(7);
        let path = placement.table_path(n, PathId::DB);
        assert!(path.ends_with(filename::table_name(n)));
        let mut b = TableBuilder::new(
            fs.create(&path).unwrap(),
            path.clone(),
            TableOptions::default(),
        );
        let (first, last) = (
            key::internal_key(b"a", SeqNo(1), ValueKind::Put),
            key::internal_key(b"b", SeqNo(2), ValueKind::Put),
        );
        b.add(&first, b"1").unwrap();
        b.add(&last, b"2").unwrap();
        let props = b.finish().unwrap();
        let f = FileMeta::from_properties(n, PathId::DB, &props, first, last);
        let cache = Arc::new(
            TableCache::new(fs.clone(), placement, 100, None)
                .reading(TableReads::BySize { budget: 1000 }, true),
        );
        let barrier = Arc::new(Barrier::new(2));
        *fs.hold.lock().unwrap() = Some(barrier.clone());
        let reader = {
            let (cache, f) = (cache.clone(), f.clone());
            std::thread::spawn(move || cache.table(&f).map(|_| ()))
        };
        barrier.wait(); // the reader is inside open_with, the old way (maps)
        cache.set_live_bytes(2000);
        barrier.wait(); // let it finish opening and insert
        reader.join().unwrap().unwrap();
        cache.table(&f).unwrap();
        assert_eq!(
            *fs.opened.lock().unwrap(),
            vec![ReadAccess::Mapped, ReadAccess::Positional],
            "the table opened during the switch was kept"
        );
    }
}
