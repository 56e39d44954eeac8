//! [`MemFs`]: an in-memory file system that remembers what is durable.
//!
//! Each file is an inode with its appended bytes and how many of them were synced. Each
//! directory entry exists twice: in the live namespace (what a running process sees) and in
//! the durable namespace (what survives a crash), which catches up with the live one only on
//! `sync_dir` of the parent. [`MemFs::crash_clone`] builds the file system a restarted machine
//! would see: only durable entries, each file cut to its synced length (or, with
//! [`CrashMode::TornTail`], to a random prefix of its unsynced tail).
//!
//! Directories themselves are durable once created (the engine creates them before use).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{FileLock, Fs, PmemRegion, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, ErrorKind, Result};
use crate::sync::lock;

/// How [`MemFs::crash_clone`] treats bytes that were appended but not synced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashMode {
    /// Every unsynced byte is lost.
    DropUnsynced,
    /// Each file keeps a random prefix (chosen from `seed`) of its unsynced tail.
    TornTail {
        /// Seeds the choice of prefix lengths.
        seed: u64,
    },
    /// A process killed, the machine still up: every byte handed to the OS survives, synced
    /// or not, and every directory entry; bytes still held in the process are lost. The last
    /// write into a log or a region, if nothing has yet waited for it to be durable (a log
    /// group not synced, region bytes not persisted), was in the middle of its copy: its
    /// head is lost (a log's zeroed, a region's old bytes back) and its tail kept, the
    /// split chosen from `seed` (docs/format/wal.md, "What a crash leaves"). What was
    /// durable stays just that: a power cut of the image (a second `crash_clone`) loses
    /// what no sync had covered, as it would after the restart.
    Kill {
        /// Seeds the choice of split.
        seed: u64,
    },
}

#[derive(Debug, Default)]
struct Inode {
    data: Vec<u8>,
    synced: usize,
    /// While a log writer has it open: the preallocated size (>= `data.len()`), zero-filled
    /// beyond `data`, as RealFs leaves a log it writes through a memory map. A crash keeps
    /// the zeros; closing the writer truncates them away.
    prealloc: usize,
    /// A persistent-memory region (`Fs::open_region`): the bytes persisted so far, as long
    /// as `data`, which holds the bytes written. A crash keeps these (and, torn, some
    /// cache lines of `data` written since).
    persisted: Option<Vec<u8>>,
    /// The last write a kill may catch in the middle of its copy: a log's last group
    /// (written out at `flush`), or a region's last `write_at` with the bytes it replaced.
    last_write: Option<LastWrite>,
    /// Stamped at every change of `data` (`next_stamp`): with the inode, what
    /// `file_identity` gives.
    modified: u64,
}

/// See [`Inode::last_write`].
#[derive(Debug)]
struct LastWrite {
    /// When, among every log's (or every region's) writes: the newest of each kind is the
    /// one a kill catches in the middle of its copy (each kind is written by one thread at
    /// a time: the WAL's writer, a flush's rows; a region write of another thread, caught
    /// too in a real kill, is not torn here).
    stamp: u64,
    at: usize,
    /// A region's bytes before the write (a log's were zeros).
    before: Option<Vec<u8>>,
    len: usize,
}

/// The next of a crash's pseudo-random choices (xorshift64; `rng` must not be 0).
fn xorshift(rng: &mut u64) -> u64 {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    *rng
}

/// Orders writes for [`LastWrite::stamp`].
static WRITE_STAMP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn next_stamp() -> u64 {
    WRITE_STAMP.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The unit a torn crash keeps or loses of a region's unpersisted bytes: a cache line.
const CACHE_LINE: usize = 64;

/// Preallocation step of [`Fs::create_log`] logs (smaller than RealFs's, same behaviour).
const LOG_CHUNK: usize = 64 * 1024;

type InodeRef = Arc<Mutex<Inode>>;

#[derive(Debug, Default)]
struct State {
    live: BTreeMap<PathBuf, InodeRef>,
    durable: BTreeMap<PathBuf, InodeRef>,
    dirs: BTreeSet<PathBuf>,
    /// Directories whose entries a power cut keeps: a root, or one whose parent was synced
    /// after it was created (and whose parent is durable itself).
    durable_dirs: BTreeSet<PathBuf>,
    locks: BTreeSet<PathBuf>,
}

/// Whether directory `dir` survives a power cut: it and every directory above it that has
/// a parent are durable (whatever is under a lost directory is lost with it).
fn dir_durable(durable_dirs: &BTreeSet<PathBuf>, dir: &Path) -> bool {
    dir.ancestors()
        .filter(|d| d.parent().is_some_and(|p| !p.as_os_str().is_empty()))
        .all(|d| durable_dirs.contains(d))
}

/// An in-memory file system with crash simulation. Cheap to clone (shared state).
#[derive(Debug, Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<State>>,
}

fn not_found(op: &str, path: &Path) -> Error {
    Error::io(
        op,
        path,
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
    )
}

impl MemFs {
    /// An empty file system.
    pub fn new() -> Self {
        Self::default()
    }

    /// The file system a machine would find after a power cut right now.
    ///
    /// The clone shares nothing with `self`: a process still running against `self` cannot
    /// change it.
    pub fn crash_clone(&self, mode: CrashMode) -> MemFs {
        let st = lock(&self.state);
        let mut rng = match mode {
            CrashMode::DropUnsynced => 0,
            CrashMode::TornTail { seed } => seed | 1,
            CrashMode::Kill { seed } => {
                return Self::kill_clone(&st, seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
            }
        };
        // A power cut is one instant: every file is locked before any is copied, so no
        // write can land in one after it was copied and before another is (a process that
        // syncs one file, then writes another that counts on it, must not crash into the
        // second without the first). Only this holds more than one inode lock, always with
        // the state locked, so the order cannot deadlock.
        let mut held: BTreeMap<*const Mutex<Inode>, MutexGuard<'_, Inode>> = BTreeMap::new();
        for inode in st.durable.values() {
            held.entry(Arc::as_ptr(inode))
                .or_insert_with(|| lock(inode));
        }
        let mut copies: BTreeMap<*const Mutex<Inode>, InodeRef> = BTreeMap::new();
        let mut durable = BTreeMap::new();
        for (path, inode) in &st.durable {
            if !path
                .parent()
                .is_none_or(|d| dir_durable(&st.durable_dirs, d))
            {
                continue;
            }
            let key = Arc::as_ptr(inode);
            let copy = copies
                .entry(key)
                .or_insert_with(|| {
                    let ino = &held[&key];
                    if let Some(persisted) = &ino.persisted {
                        // Each cache line written since it was persisted: kept or lost.
                        let mut data = persisted.clone();
                        if rng != 0 {
                            for (i, line) in ino.data.chunks(CACHE_LINE).enumerate() {
                                if xorshift(&mut rng) & 1 == 1 {
                                    let at = i * CACHE_LINE;
                                    data[at..at + line.len()].copy_from_slice(line);
                                }
                            }
                        }
                        return Arc::new(Mutex::new(Inode {
                            synced: data.len(),
                            persisted: Some(data.clone()),
                            data,
                            prealloc: 0,
                            last_write: None,
                            modified: next_stamp(),
                        }));
                    }
                    let mut keep = ino.synced.min(ino.data.len());
                    let tail = ino.data.len() - keep;
                    if rng != 0 && tail > 0 {
                        keep += (xorshift(&mut rng) % (tail as u64 + 1)) as usize;
                    }
                    let mut data = ino.data[..keep].to_vec();
                    if ino.prealloc > data.len() {
                        data.resize(ino.prealloc, 0);
                    }
                    let synced = data.len();
                    Arc::new(Mutex::new(Inode {
                        data,
                        synced,
                        prealloc: 0,
                        persisted: None,
                        last_write: None,
                        modified: next_stamp(),
                    }))
                })
                .clone();
            durable.insert(path.clone(), copy);
        }
        MemFs {
            state: Arc::new(Mutex::new(State {
                live: durable.clone(),
                durable,
                dirs: st
                    .dirs
                    .iter()
                    .filter(|d| dir_durable(&st.durable_dirs, d))
                    .cloned()
                    .collect(),
                durable_dirs: st.durable_dirs.clone(),
                locks: BTreeSet::new(),
            })),
        }
    }

    /// [`CrashMode::Kill`]: the live namespace, each file as the OS holds it, the last
    /// write of each log and region torn if nothing waited for it.
    fn kill_clone(st: &State, mut rng: u64) -> MemFs {
        let mut copies: BTreeMap<*const Mutex<Inode>, InodeRef> = BTreeMap::new();
        let mut live = BTreeMap::new();
        // Every inode locked first, as for a power cut: the kill is one instant.
        let mut held: BTreeMap<*const Mutex<Inode>, MutexGuard<'_, Inode>> = BTreeMap::new();
        for inode in st.live.values().chain(st.durable.values()) {
            held.entry(Arc::as_ptr(inode))
                .or_insert_with(|| lock(inode));
        }
        // The newest log write and the newest region write.
        let newest = |region: bool| {
            held.values()
                .filter_map(|i| i.last_write.as_ref())
                .filter(|w| w.before.is_some() == region)
                .map(|w| w.stamp)
                .max()
        };
        let in_copy = [newest(false), newest(true)];
        let mut durable = BTreeMap::new();
        for (in_live, (path, inode)) in st
            .live
            .iter()
            .map(|e| (true, e))
            .chain(st.durable.iter().map(|e| (false, e)))
        {
            let key = Arc::as_ptr(inode);
            let copy = copies
                .entry(key)
                .or_insert_with(|| {
                    let ino = &held[&key];
                    let mut data = ino.data.clone();
                    if let Some(w) = ino
                        .last_write
                        .as_ref()
                        .filter(|w| in_copy.contains(&Some(w.stamp)))
                    {
                        let end = (w.at + w.len).min(data.len());
                        let waited = match &ino.persisted {
                            Some(p) => p[w.at..end] == data[w.at..end],
                            None => ino.synced >= end,
                        };
                        if !waited && end > w.at {
                            // Lost: the first `cut` bytes (all, none, or a split).
                            let n = end - w.at;
                            let cut = match xorshift(&mut rng) % 4 {
                                0 => 0,
                                1 => n,
                                _ => (xorshift(&mut rng) % (n as u64 + 1)) as usize,
                            };
                            let head = w.at..w.at + cut;
                            match &w.before {
                                Some(b) => data[head].copy_from_slice(&b[..cut]),
                                None => data[head].fill(0),
                            }
                        }
                    }
                    if ino.prealloc > data.len() {
                        data.resize(ino.prealloc, 0);
                    }
                    // What is durable stays as it was: the machine is still up, and a power
                    // cut after the restart loses what no sync has covered yet.
                    Arc::new(Mutex::new(Inode {
                        synced: ino.synced.min(data.len()),
                        persisted: ino.persisted.clone(),
                        data,
                        prealloc: 0,
                        last_write: None,
                        modified: next_stamp(),
                    }))
                })
                .clone();
            if in_live {
                live.insert(path.clone(), copy);
            } else {
                durable.insert(path.clone(), copy);
            }
        }
        MemFs {
            state: Arc::new(Mutex::new(State {
                live,
                durable,
                dirs: st.dirs.clone(),
                durable_dirs: st.durable_dirs.clone(),
                locks: BTreeSet::new(),
            })),
        }
    }

    /// Total bytes held in live files (for tests measuring space).
    pub fn live_bytes(&self) -> u64 {
        lock(&self.state)
            .live
            .values()
            .map(|i| lock(i).data.len() as u64)
            .sum()
    }

    /// Overwrites byte(s) of a live file in place, as a bit rot would (test helper).
    ///
    /// # Errors
    /// `Io` if the file does not exist; `InvalidArgument` if the range is out of bounds.
    pub fn corrupt(&self, path: &Path, offset: usize, f: impl FnOnce(&mut [u8])) -> Result<()> {
        let inode = lock(&self.state)
            .live
            .get(path)
            .cloned()
            .ok_or_else(|| not_found("corrupt", path))?;
        let mut ino = lock(&inode);
        let len = ino.data.len();
        let slice = ino
            .data
            .get_mut(offset..)
            .ok_or_else(|| Error::invalid(format!("offset {offset} beyond {len}")))?;
        f(slice);
        Ok(())
    }

    /// Truncates a live file (and its durable image) to `len` bytes (test helper).
    ///
    /// # Errors
    /// `Io` if the file does not exist.
    pub fn truncate(&self, path: &Path, len: usize) -> Result<()> {
        let inode = lock(&self.state)
            .live
            .get(path)
            .cloned()
            .ok_or_else(|| not_found("truncate", path))?;
        let mut ino = lock(&inode);
        ino.data.truncate(len);
        ino.modified = next_stamp();
        ino.synced = ino.synced.min(len);
        Ok(())
    }
}

/// [`crate::fs::SyncHandle`] of a [`MemFs`] file: the length it had when taken becomes
/// durable (not more: bytes appended since stay unsynced, the strictest a real sync may be).
struct MemSync {
    inode: InodeRef,
    len: usize,
}

impl crate::fs::SyncHandle for MemSync {
    fn sync(&self) -> Result<()> {
        let mut ino = lock(&self.inode);
        ino.synced = ino.synced.max(self.len.min(ino.data.len()));
        Ok(())
    }
}

/// A file being appended to. As RealFs's writer, it keeps appended bytes in the process
/// until `flush` or `sync` hands them to the "OS" (the inode): readers and crashes see
/// nothing before that, and a writer dropped without a flush loses them (the fs module's
/// contract). A log (`Fs::create_log`) keeps the inode's preallocated size a chunk ahead
/// while open, and gives it up when closed (RealFs truncates); as RealFs's mapped log, it
/// writes out what it holds when dropped, and each write out is a group a kill may tear
/// ([`CrashMode::Kill`]).
struct MemWritable {
    inode: InodeRef,
    log: bool,
    /// Appended, not yet flushed.
    pending: Vec<u8>,
}

impl MemWritable {
    fn write_out(&mut self) {
        if !self.pending.is_empty() {
            let mut ino = lock(&self.inode);
            let at = ino.data.len();
            ino.data.extend_from_slice(&self.pending);
            ino.modified = next_stamp();
            if self.log {
                ino.last_write = Some(LastWrite {
                    stamp: next_stamp(),
                    at,
                    before: None,
                    len: self.pending.len(),
                });
                if ino.prealloc < ino.data.len() {
                    ino.prealloc = ino.data.len().div_ceil(LOG_CHUNK) * LOG_CHUNK;
                }
            }
            self.pending.clear();
        }
    }
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.pending.extend_from_slice(data);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_out();
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.write_out();
        let mut ino = lock(&self.inode);
        ino.synced = ino.data.len();
        Ok(())
    }

    fn sync_handle(&mut self) -> Result<Option<Box<dyn crate::fs::SyncHandle>>> {
        self.write_out();
        let len = lock(&self.inode).data.len();
        Ok(Some(Box::new(MemSync {
            inode: self.inode.clone(),
            len,
        })))
    }

    fn len(&self) -> u64 {
        (lock(&self.inode).data.len() + self.pending.len()) as u64
    }
}

impl Drop for MemWritable {
    fn drop(&mut self) {
        if self.log {
            self.write_out();
            // (Its last write stays a kill's to tear if no later log write came: a writer
            // dropped after a failed write leaves the last one that succeeded the newest.)
            lock(&self.inode).prealloc = 0;
        }
    }
}

struct MemRandom {
    path: PathBuf,
    inode: InodeRef,
    size: u64,
    /// Opened `ReadAccess::Growing`: reads see bytes flushed after the open. Otherwise
    /// reads stop at `size`, as RealFs's maps and size-checked `pread`s do.
    growing: bool,
}

impl RandomAccessFile for MemRandom {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let ino = lock(&self.inode);
        let mut end = ino.data.len();
        if !self.growing {
            end = end.min(usize::try_from(self.size).unwrap_or(usize::MAX));
        }
        let range = super::checked_range(&self.path, offset, len, end)?;
        Ok(ino.data[range].to_vec())
    }

    fn size(&self) -> u64 {
        self.size
    }
}

struct MemSequential {
    inode: InodeRef,
    pos: usize,
}

impl SequentialFile for MemSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        let ino = lock(&self.inode);
        let avail = ino.data.len().saturating_sub(self.pos);
        let n = avail.min(buf.len());
        buf[..n].copy_from_slice(&ino.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

struct MemLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        lock(&self.state).locks.remove(&self.path);
    }
}

impl MemFs {
    fn check_parent(st: &State, path: &Path) -> Result<()> {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() && !st.dirs.contains(p) => {
                Err(not_found("open parent of", path))
            }
            _ => Ok(()),
        }
    }

    /// Creates (or truncates) `path` for appending; a `log` starts with a chunk preallocated.
    fn create_file(&self, path: &Path, log: bool) -> Result<Box<dyn WritableFile>> {
        let mut st = lock(&self.state);
        Self::check_parent(&st, path)?;
        let inode = InodeRef::default();
        if log {
            lock(&inode).prealloc = LOG_CHUNK;
        }
        st.live.insert(path.to_path_buf(), inode.clone());
        Ok(Box::new(MemWritable {
            inode,
            log,
            pending: Vec::new(),
        }))
    }

    fn inode(&self, op: &str, path: &Path) -> Result<InodeRef> {
        lock(&self.state)
            .live
            .get(path)
            .cloned()
            .ok_or_else(|| not_found(op, path))
    }
}

/// A region of a [`MemFs`]: writes change the inode's bytes, `persist` copies them to its
/// persisted image, which is what a crash keeps.
struct MemRegion {
    path: PathBuf,
    inode: InodeRef,
    len: usize,
}

impl PmemRegion for MemRegion {
    fn len(&self) -> usize {
        self.len
    }

    unsafe fn write_at(&self, offset: usize, data: &[u8]) -> Result<()> {
        let r = super::region_range(&self.path, offset, data.len(), self.len)?;
        let mut ino = lock(&self.inode);
        let before = ino.data[r.clone()].to_vec();
        ino.data[r].copy_from_slice(data);
        ino.modified = next_stamp();
        ino.last_write = Some(LastWrite {
            stamp: next_stamp(),
            at: offset,
            before: Some(before),
            len: data.len(),
        });
        Ok(())
    }

    fn read_at(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        let r = super::region_range(&self.path, offset, len, self.len)?;
        Ok(lock(&self.inode).data[r].to_vec())
    }

    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let r = super::region_range(&self.path, offset, out.len(), self.len)?;
        out.copy_from_slice(&lock(&self.inode).data[r]);
        Ok(())
    }

    fn persist(&self, offset: usize, len: usize) -> Result<()> {
        let r = super::region_range(&self.path, offset, len, self.len)?;
        let mut ino = lock(&self.inode);
        let Inode {
            data, persisted, ..
        } = &mut *ino;
        if let Some(p) = persisted.as_mut() {
            p[r.clone()].copy_from_slice(&data[r]);
        }
        Ok(())
    }
}

impl Fs for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, false)
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_file(path, true)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_with(path, super::ReadAccess::default())
    }

    fn open_with(
        &self,
        path: &Path,
        access: super::ReadAccess,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        let inode = self.inode("open", path)?;
        let size = lock(&inode).data.len() as u64;
        Ok(Arc::new(MemRandom {
            path: path.to_path_buf(),
            inode,
            size,
            growing: access == super::ReadAccess::Growing,
        }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        Ok(Box::new(MemSequential {
            inode: self.inode("open", path)?,
            pos: 0,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        let st = lock(&self.state);
        st.live.contains_key(path) || st.dirs.contains(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let st = lock(&self.state);
        if !st.dirs.contains(dir) {
            return Err(not_found("list", dir));
        }
        let mut names: Vec<String> = st
            .live
            .keys()
            .chain(st.dirs.iter())
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        lock(&self.state)
            .live
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| not_found("remove", path))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = lock(&self.state);
        Self::check_parent(&st, to)?;
        if st.dirs.contains(from) {
            // A directory, with everything under it. (Its entries keep their durability:
            // a power cut after the rename finds the tree under its new name, as if the
            // parent had been synced; callers sync the parent anyway.)
            if st.dirs.contains(to) || st.live.contains_key(to) {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("rename {}: {} exists", from.display(), to.display()),
                ));
            }
            let moved = |p: &Path| -> Option<PathBuf> {
                p.strip_prefix(from).ok().map(|rest| to.join(rest))
            };
            fn rekey<V>(m: &mut BTreeMap<PathBuf, V>, moved: &dyn Fn(&Path) -> Option<PathBuf>) {
                let keys: Vec<PathBuf> = m.keys().filter(|k| moved(k).is_some()).cloned().collect();
                for k in keys {
                    if let (Some(v), Some(n)) = (m.remove(&k), moved(&k)) {
                        m.insert(n, v);
                    }
                }
            }
            fn reset(s: &mut BTreeSet<PathBuf>, moved: &dyn Fn(&Path) -> Option<PathBuf>) {
                let keys: Vec<PathBuf> = s.iter().filter(|k| moved(k).is_some()).cloned().collect();
                for k in keys {
                    s.remove(&k);
                    if let Some(n) = moved(&k) {
                        s.insert(n);
                    }
                }
            }
            rekey(&mut st.live, &moved);
            rekey(&mut st.durable, &moved);
            reset(&mut st.dirs, &moved);
            reset(&mut st.durable_dirs, &moved);
            return Ok(());
        }
        let inode = st
            .live
            .remove(from)
            .ok_or_else(|| not_found("rename", from))?;
        st.live.insert(to.to_path_buf(), inode);
        Ok(())
    }

    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = lock(&self.state);
        Self::check_parent(&st, to)?;
        if st.live.contains_key(to) {
            return Err(Error::new(
                ErrorKind::Io,
                format!("link {}: {} exists", from.display(), to.display()),
            ));
        }
        let inode = st
            .live
            .get(from)
            .cloned()
            .ok_or_else(|| not_found("link", from))?;
        st.live.insert(to.to_path_buf(), inode);
        Ok(())
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let mut st = lock(&self.state);
        let mut d = Some(dir);
        while let Some(p) = d {
            if p.as_os_str().is_empty() {
                break;
            }
            if st.live.contains_key(p) {
                return Err(Error::new(
                    ErrorKind::Io,
                    format!("mkdir {}: a file is in the way", p.display()),
                ));
            }
            if st.dirs.insert(p.to_path_buf())
                && p.parent().is_none_or(|q| q.as_os_str().is_empty())
            {
                // A root has no entry to lose.
                st.durable_dirs.insert(p.to_path_buf());
            }
            d = p.parent();
        }
        Ok(())
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        let ino = self.inode("fsync", path)?;
        let mut ino = lock(&ino);
        ino.synced = ino.data.len();
        if ino.persisted.is_some() {
            ino.persisted = Some(ino.data.clone());
        }
        Ok(())
    }

    fn open_region(&self, path: &Path, len: usize) -> Result<Arc<dyn PmemRegion>> {
        let mut st = lock(&self.state);
        let inode = match st.live.get(path) {
            Some(inode) => {
                let mut ino = lock(inode);
                if ino.data.len() != len {
                    return Err(super::region_size_error(path, ino.data.len() as u64, len));
                }
                if ino.persisted.is_none() {
                    // A file found after a crash or written otherwise: all of it is durable.
                    ino.persisted = Some(ino.data.clone());
                }
                drop(ino);
                inode.clone()
            }
            None => {
                Self::check_parent(&st, path)?;
                let inode = Arc::new(Mutex::new(Inode {
                    data: vec![0; len],
                    synced: len,
                    prealloc: 0,
                    persisted: Some(vec![0; len]),
                    last_write: None,
                    modified: next_stamp(),
                }));
                st.live.insert(path.to_path_buf(), inode.clone());
                inode
            }
        };
        Ok(Arc::new(MemRegion {
            path: path.to_path_buf(),
            inode,
            len,
        }))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = lock(&self.state);
        if !st.dirs.contains(dir) {
            return Err(not_found("fsync dir", dir));
        }
        let in_dir = |p: &PathBuf| p.parent() == Some(dir);
        let subdirs: Vec<PathBuf> = st.dirs.iter().filter(|d| in_dir(d)).cloned().collect();
        st.durable_dirs.extend(subdirs);
        st.durable.retain(|p, _| !in_dir(p));
        let live: Vec<(PathBuf, InodeRef)> = st
            .live
            .iter()
            .filter(|(p, _)| in_dir(p))
            .map(|(p, i)| (p.clone(), i.clone()))
            .collect();
        st.durable.extend(live);
        Ok(())
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let inode = self.inode("stat", path)?;
        let len = lock(&*inode).data.len() as u64;
        Ok(len)
    }

    fn file_identity(&self, path: &Path) -> Option<u128> {
        let inode = self.inode("stat", path).ok()?;
        let ino = lock(&*inode);
        // (The inode's address, while it lives, and its last change: no two changes
        // share a stamp.)
        let mut b = Vec::with_capacity(24);
        for v in [
            Arc::as_ptr(&inode) as usize as u64,
            ino.modified,
            ino.data.len() as u64,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        Some(xxhash_rust::xxh3::xxh3_128(&b))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut st = lock(&self.state);
        if !st.locks.insert(path.to_path_buf()) {
            return Err(Error::new(
                ErrorKind::Busy,
                format!("{}: database is locked", path.display()),
            ));
        }
        if !st.live.contains_key(path) {
            Self::check_parent(&st, path)?;
            st.live.insert(path.to_path_buf(), InodeRef::default());
        }
        Ok(Box::new(MemLock {
            state: self.state.clone(),
            path: path.to_path_buf(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (MemFs, PathBuf) {
        let fs = MemFs::new();
        let dir = PathBuf::from("/db");
        super::super::create_dir_durable(&fs, &dir).unwrap();
        (fs, dir)
    }

    #[test]
    fn a_new_directory_is_lost_until_its_parent_is_synced() {
        let fs = MemFs::new();
        let dir = PathBuf::from("/db/wal");
        fs.create_dir_all(&dir).unwrap();
        let mut f = fs.create(&dir.join("a")).unwrap();
        f.append(b"x").unwrap();
        f.sync().unwrap();
        fs.sync_dir(&dir).unwrap();
        // The file and its entry are synced, but not the directories' own entries.
        let lost = fs.crash_clone(CrashMode::DropUnsynced);
        assert!(!lost.exists(&dir.join("a")) && !lost.exists(&dir));
        fs.sync_dir(Path::new("/db")).unwrap();
        // `/db`'s own entry is still not durable ("/" never synced): both still lost.
        assert!(!fs
            .crash_clone(CrashMode::DropUnsynced)
            .exists(&dir.join("a")));
        fs.sync_dir(Path::new("/")).unwrap();
        let kept = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(super::super::read_all(&kept, &dir.join("a")).unwrap(), b"x");
        // create_dir_durable syncs every new directory's parent.
        let fs = MemFs::new();
        super::super::create_dir_durable(&fs, &dir).unwrap();
        let mut f = fs.create(&dir.join("a")).unwrap();
        f.append(b"y").unwrap();
        f.sync().unwrap();
        fs.sync_dir(&dir).unwrap();
        let kept = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(super::super::read_all(&kept, &dir.join("a")).unwrap(), b"y");
    }

    #[test]
    fn unsynced_bytes_and_entries_are_lost() {
        let (fs, dir) = setup();
        let mut f = fs.create(&dir.join("a")).unwrap();
        f.append(b"hello").unwrap();
        f.sync().unwrap();
        f.append(b" world").unwrap();
        // Entry not durable yet: the file vanishes.
        assert!(!fs
            .crash_clone(CrashMode::DropUnsynced)
            .exists(&dir.join("a")));
        fs.sync_dir(&dir).unwrap();
        let after = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(
            super::super::read_all(&after, &dir.join("a")).unwrap(),
            b"hello"
        );
    }

    #[test]
    fn open_log_crashes_with_a_zero_tail_and_closes_exact() {
        let (fs, dir) = setup();
        let path = dir.join("1.log");
        let mut f = fs.create_log(&path).unwrap();
        f.append(b"abc").unwrap();
        f.sync().unwrap();
        f.append(b"def").unwrap();
        fs.sync_dir(&dir).unwrap();
        let c = fs.crash_clone(CrashMode::DropUnsynced);
        let data = super::super::read_all(&c, &path).unwrap();
        assert_eq!(data.len(), LOG_CHUNK);
        assert_eq!(&data[..3], b"abc");
        assert!(data[3..].iter().all(|&b| b == 0));
        drop(f);
        assert_eq!(super::super::read_all(&fs, &path).unwrap(), b"abcdef");
    }

    #[test]
    fn torn_tail_keeps_a_prefix() {
        let (fs, dir) = setup();
        let mut f = fs.create(&dir.join("a")).unwrap();
        f.append(b"0123").unwrap();
        f.sync().unwrap();
        f.append(b"456789").unwrap();
        f.flush().unwrap();
        fs.sync_dir(&dir).unwrap();
        let mut seen = BTreeSet::new();
        for seed in 0..64 {
            let c = fs.crash_clone(CrashMode::TornTail { seed });
            let data = super::super::read_all(&c, &dir.join("a")).unwrap();
            assert!(b"0123456789".starts_with(&data) && data.len() >= 4);
            seen.insert(data.len());
        }
        assert!(seen.len() > 2, "torn tails should vary: {seen:?}");
    }

    /// A crash is one instant, whatever runs meanwhile: a process that syncs file `a` and
    /// only then writes and syncs file `b` (a value log's relocation, then the manifest edit
    /// that counts on it) must never crash into a `b` that holds more than `a` does. Copied
    /// one file after another without holding them all, the clone could see `a` before the
    /// write and `b` after it (this test caught the crash test's rare "value file N, which
    /// the version does not hold").
    #[test]
    fn crash_is_one_instant_across_files() {
        let (fs, dir) = setup();
        let (a, b) = (dir.join("a"), dir.join("b"));
        let mut fa = fs.create(&a).unwrap();
        let mut fb = fs.create(&b).unwrap();
        fs.sync_dir(&dir).unwrap();
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let rounds = std::sync::Arc::new(AtomicU64::new(0));
        let writer = {
            let (stop, rounds) = (stop.clone(), rounds.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    fa.append(&[1]).unwrap();
                    fa.sync().unwrap();
                    fb.append(&[1]).unwrap();
                    fb.sync().unwrap();
                    rounds.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let started = std::time::Instant::now();
        let mut clones = 0;
        // Until 20,000 rounds or 5 s, and in any case until the writer has done a round (on a
        // loaded machine the cloning loop once kept it from finishing one in 5 s).
        let secs = |n| std::time::Duration::from_secs(n);
        loop {
            let done = rounds.load(Ordering::Relaxed);
            let elapsed = started.elapsed();
            // And until one clone was taken: the writer once did its 20,000 rounds first.
            if (done >= 20_000 || elapsed >= secs(5))
                && (done > 0 || elapsed >= secs(60))
                && clones > 0
            {
                break;
            }
            let c = fs.crash_clone(CrashMode::DropUnsynced);
            let la = c.file_size(&a).unwrap();
            let lb = c.file_size(&b).unwrap();
            assert!(lb <= la, "clone {clones}: b has {lb} bytes, a only {la}");
            clones += 1;
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert!(clones > 0 && rounds.load(Ordering::Relaxed) > 0);
    }

    #[test]
    fn rename_durable_only_after_dir_sync() {
        let (fs, dir) = setup();
        for (name, body) in [("CURRENT", &b"old"[..]), ("tmp", &b"new"[..])] {
            let mut f = fs.create(&dir.join(name)).unwrap();
            f.append(body).unwrap();
            f.sync().unwrap();
        }
        fs.sync_dir(&dir).unwrap();
        fs.rename(&dir.join("tmp"), &dir.join("CURRENT")).unwrap();
        let c = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(
            super::super::read_all(&c, &dir.join("CURRENT")).unwrap(),
            b"old"
        );
        fs.sync_dir(&dir).unwrap();
        let c = fs.crash_clone(CrashMode::DropUnsynced);
        assert_eq!(
            super::super::read_all(&c, &dir.join("CURRENT")).unwrap(),
            b"new"
        );
        assert!(!c.exists(&dir.join("tmp")));
    }

    #[test]
    fn lock_is_exclusive() {
        let (fs, dir) = setup();
        let l = fs.lock(&dir.join("LOCK")).unwrap();
        assert_eq!(
            fs.lock(&dir.join("LOCK")).err().unwrap().kind(),
            ErrorKind::Busy
        );
        drop(l);
        fs.lock(&dir.join("LOCK")).unwrap();
    }

    #[test]
    fn read_past_end_is_error() {
        let (fs, dir) = setup();
        let mut f = fs.create(&dir.join("a")).unwrap();
        f.append(b"abc").unwrap();
        f.flush().unwrap();
        let r = fs.open(&dir.join("a")).unwrap();
        assert_eq!(r.read_at(1, 2).unwrap(), b"bc");
        assert!(r.read_at(2, 2).is_err());
    }

    #[test]
    fn growing_files_keep_the_fs_contract() {
        let (fs, dir) = setup();
        super::super::check_growing_file_contract(&fs, &dir);
    }

    #[test]
    fn regions_keep_the_fs_contract() {
        let fs = MemFs::new();
        let dir = PathBuf::from("/pm");
        fs.create_dir_all(&dir).unwrap();
        super::super::check_region_contract(&fs, &dir);
    }

    /// A process kill keeps every byte handed to the OS and every entry, synced or not,
    /// and catches the last group written to an open log in the middle of its copy: head
    /// zeroed, tail kept; a group a sync covered is never torn.
    #[test]
    fn a_kill_keeps_what_the_os_holds_and_tears_the_last_log_group() {
        let (fs, dir) = setup();
        let mut f = fs.create(&dir.join("table")).unwrap();
        f.append(b"flushed").unwrap();
        f.flush().unwrap();
        f.append(b" held").unwrap();
        let log = dir.join("000001.log");
        let mut w = fs.create_log(&log).unwrap();
        w.append(b"first group").unwrap();
        w.flush().unwrap();
        w.append(b"second ").unwrap();
        w.append(b"group").unwrap();
        w.flush().unwrap();
        let mut shapes = BTreeSet::new();
        for seed in 0..64 {
            let k = fs.crash_clone(CrashMode::Kill { seed });
            assert_eq!(
                super::super::read_all(&k, &dir.join("table")).unwrap(),
                b"flushed",
                "entry kept without a directory sync, flushed bytes without a sync"
            );
            let data = super::super::read_all(&k, &log).unwrap();
            assert_eq!(data.len(), LOG_CHUNK, "the preallocated tail stays");
            assert_eq!(&data[..11], b"first group");
            let second = &data[11..23];
            let cut = second.iter().take_while(|&&b| b == 0).count();
            assert_eq!(&second[cut..], &b"second group"[cut..], "seed {seed}");
            assert!(data[23..].iter().all(|&b| b == 0));
            shapes.insert(cut);
        }
        assert!(
            shapes.len() > 3 && shapes.contains(&0) && shapes.contains(&12),
            "{shapes:?}"
        );
        // Synced: nothing waits on a copy any more.
        w.sync().unwrap();
        for seed in 0..16 {
            let data =
                super::super::read_all(&fs.crash_clone(CrashMode::Kill { seed }), &log).unwrap();
            assert_eq!(&data[..23], b"first groupsecond group");
        }
        drop(w);
        assert_eq!(
            super::super::read_all(&fs, &log).unwrap(),
            b"first groupsecond group"
        );
    }

    /// A kill in the middle of a region write that was not persisted yet: the write's head
    /// holds the old bytes, its tail the new; persisted writes stay whole.
    #[test]
    fn a_kill_tears_the_last_unpersisted_region_write() {
        let fs = MemFs::new();
        let dir = PathBuf::from("/pm");
        fs.create_dir_all(&dir).unwrap();
        let path = dir.join("000002.pmem");
        let r = fs.open_region(&path, 4096).unwrap();
        // SAFETY: no other thread uses the region.
        unsafe { r.write_at(0, &[1u8; 4096]).unwrap() };
        r.persist(0, 4096).unwrap();
        // SAFETY: as above.
        unsafe { r.write_at(100, &[2u8; 200]).unwrap() };
        let mut cuts = BTreeSet::new();
        for seed in 0..64 {
            let k = fs.crash_clone(CrashMode::Kill { seed });
            let bytes = k
                .open_region(&path, 4096)
                .unwrap()
                .read_at(0, 4096)
                .unwrap();
            let cut = bytes[100..300].iter().take_while(|&&b| b == 1).count();
            assert!(bytes[100 + cut..300].iter().all(|&b| b == 2), "seed {seed}");
            assert!(bytes[..100].iter().chain(&bytes[300..]).all(|&b| b == 1));
            cuts.insert(cut);
        }
        assert!(cuts.len() > 3, "{cuts:?}");
        r.persist(100, 200).unwrap();
        let k = fs.crash_clone(CrashMode::Kill { seed: 1 });
        let bytes = k
            .open_region(&path, 4096)
            .unwrap()
            .read_at(0, 4096)
            .unwrap();
        assert!(bytes[100..300].iter().all(|&b| b == 2));
    }

    #[test]
    fn a_crash_keeps_persisted_region_bytes_and_tears_the_rest_by_cache_line() {
        let fs = MemFs::new();
        let dir = PathBuf::from("/pm");
        fs.create_dir_all(&dir).unwrap();
        fs.sync_dir(Path::new("/")).unwrap();
        let path = dir.join("000002.pmem");
        let r = fs.open_region(&path, 64 * 64).unwrap();
        fs.sync_dir(&dir).unwrap();
        // SAFETY: no other thread uses the region.
        unsafe { r.write_at(0, &[1u8; 64 * 64]).unwrap() };
        r.persist(0, 64 * 8).unwrap();
        // A persisted line written again and not persisted: its old bytes or its new ones.
        // SAFETY: as above.
        unsafe { r.write_at(0, &[2u8; 64]).unwrap() };
        let lost = fs.crash_clone(CrashMode::DropUnsynced);
        let after = lost.open_region(&path, 64 * 64).unwrap();
        let bytes = after.read_at(0, 64 * 64).unwrap();
        assert_eq!(
            &bytes[..64 * 8],
            &[1u8; 64 * 8][..],
            "persisted lines survive"
        );
        assert_eq!(
            &bytes[64 * 8..],
            &[0u8; 64 * 56][..],
            "unpersisted lines are lost"
        );
        let torn = fs.crash_clone(CrashMode::TornTail { seed: 7 });
        let bytes = torn
            .open_region(&path, 64 * 64)
            .unwrap()
            .read_at(0, 64 * 64)
            .unwrap();
        let lines: Vec<u8> = bytes.chunks(64).map(|l| l[0]).collect();
        for (i, l) in bytes.chunks(64).enumerate() {
            assert!(l.iter().all(|&b| b == l[0]), "line {i} torn inside itself");
        }
        assert!(lines[..8].iter().skip(1).all(|&b| b == 1));
        assert!(lines[0] == 1 || lines[0] == 2);
        assert!(lines[8..].iter().all(|&b| b == 0 || b == 1));
        assert!(
            lines[8..].contains(&0) && lines[8..].contains(&1),
            "{lines:?}"
        );
        // The region's entry itself is durable only once its directory was synced.
        let other = dir.join("000003.pmem");
        fs.open_region(&other, 64).unwrap();
        assert!(!fs.crash_clone(CrashMode::DropUnsynced).exists(&other));
    }
}
