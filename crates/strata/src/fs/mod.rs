//! The file-system seam: every byte strata reads or writes goes through [`Fs`].
//!
//! Three implementations: [`RealFs`] (the only code in the engine that touches `std::fs`),
//! [`MemFs`] (in memory, with a live and a durable image per file so that a crash can be
//! simulated), and [`FaultFs`] (wraps any `Fs` and injects errors by op kind and path).
//!
//! Contract every implementation keeps, and the engine relies on:
//! - files are append-only once created; `create` truncates (a new, empty file);
//! - `WritableFile::sync` makes the file's bytes durable, but a *new directory entry* (create,
//!   rename, remove; a new directory too) is durable only after `sync_dir` on its parent
//!   directory ([`create_dir_durable`] creates directories that way);
//! - reads past the end of a file are an error, never a short read the caller must notice;
//! - a reader sees only bytes a writer handed to the OS: appended *and* `flush`ed (or
//!   `sync`ed); bytes still in a writer's buffer are invisible, and lost if the writer is
//!   dropped without a flush (RealFs buffers 64 KiB in the process);
//! - a file that grows while it is read: a [`RandomAccessFile`] opened with
//!   [`ReadAccess::Growing`] reads every byte flushed before each read starts, including
//!   bytes appended after it was opened. Opened any other way, a reader may read only the
//!   bytes the file held when it was opened (RealFs maps tables, and checks `pread`s against
//!   the size it saw at open; MemFs enforces the same limit, so that a test on it fails
//!   where RealFs would). The engine opens a file that may still grow (the value log's head
//!   segment, any store's open segment) only with `Growing`; tables, blob files, WALs and
//!   manifests are complete whenever they are read.

mod fault;
mod mem;
mod real;

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

pub use fault::{FaultFs, FaultRule, FsOp};
pub use mem::{CrashMode, MemFs};
pub(crate) use real::memory_limit;
pub use real::RealFs;

use crate::error::{Error, ErrorKind, Result};

/// A file system as the engine sees it.
pub trait Fs: Send + Sync + Debug + 'static {
    /// Creates (or truncates) `path` for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) a log: a file appended to in many small pieces and read back
    /// only after it was closed or after a crash. An implementation may preallocate space and
    /// write through a memory map (RealFs does); the file then ends in zeros until it is
    /// closed, and after a crash it keeps them, which the log format reads as its end
    /// (docs/format/wal.md). Default: [`Fs::create`].
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens `path` for positional reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens `path` for positional reads the way `access` says the engine will read it (a
    /// hint: an implementation that does not map files or advise the kernel ignores it, and a
    /// decorator passes it on). Default: [`Fs::open`].
    fn open_with(&self, path: &Path, access: ReadAccess) -> Result<Arc<dyn RandomAccessFile>> {
        let _ = access;
        self.open(path)
    }
    /// Opens `path` for reading front to back.
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>>;
    /// Whether `path` exists (file or directory).
    fn exists(&self, path: &Path) -> bool;
    /// The names (not paths) of the entries directly inside `dir`.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Removes the file `path`.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Atomically renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Gives the file `from` a second name, `to` (a hard link: both name the same bytes),
    /// where the file system allows it.
    ///
    /// # Errors
    /// `NotSupported` where it does not (a caller then copies); I/O errors (across devices
    /// too: callers copy then as well).
    fn link(&self, from: &Path, _to: &Path) -> Result<()> {
        Err(Error::new(
            ErrorKind::NotSupported,
            format!("{}: this file system makes no hard links", from.display()),
        ))
    }
    /// Creates `dir` and its parents.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Makes the entries of `dir` (creations, renames, removals) durable.
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Makes the bytes of the existing file `path` durable: a file written by an earlier
    /// process, found after a crash, or one a writer of this process appends to (the
    /// manifest, synced after the versions' lock is let go), of which every byte its writer
    /// flushed before the call. May run while that writer appends and flushes more.
    fn sync_file(&self, path: &Path) -> Result<()>;
    /// Size of the file in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// What identifies the file at `path` and its contents as they are: the same value
    /// later means the same file, not written since (a backup then takes the checksums
    /// it computed of it before instead of reading it again). `None` where the file
    /// system cannot tell (the default): the caller reads.
    fn file_identity(&self, _path: &Path) -> Option<u128> {
        None
    }
    /// Takes an exclusive advisory lock on `path` (created if missing); dropped = released.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
    /// Opens the persistent-memory region `path` of `len` bytes, creating it zero-filled
    /// (and durable as zeros) if it does not exist; its directory entry is durable after
    /// `sync_dir`, as any file's. An existing region keeps its bytes and must be `len`
    /// bytes long. Default: `NotSupported`.
    ///
    /// # Errors
    /// `NotSupported` where the file system has no regions; `InvalidArgument` for an
    /// existing file of another size; I/O errors.
    fn open_region(&self, path: &Path, len: usize) -> Result<Arc<dyn PmemRegion>> {
        let _ = len;
        Err(Error::new(
            ErrorKind::NotSupported,
            format!(
                "{}: this file system has no persistent-memory regions",
                path.display()
            ),
        ))
    }
}

/// How the engine will read a file it opens with [`Fs::open_with`]. [`RealFs`] maps table
/// files for `Mapped` and `MappedRandom` and reads them with `pread` for `Positional`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadAccess {
    /// Through a memory map where the file system maps the file; a page fault reads the
    /// kernel's read-around window (`Fs::open`'s behaviour).
    #[default]
    Mapped,
    /// Through a memory map, the kernel told to expect random access (`MADV_RANDOM`): a page
    /// fault reads its page and no more.
    MappedRandom,
    /// Positional reads (`pread`) into the reader's own buffers, no map, the kernel told to
    /// expect random access (`POSIX_FADV_RANDOM`): what is read is what is asked for.
    Positional,
    /// Positional reads of a file a writer may still be appending to: each read sees every
    /// byte flushed before it starts, however long ago the file was opened (the module's
    /// contract). No map, no advice. Not a way to read tables (`Options::table_reads`
    /// refuses it): a table is complete before it is opened.
    Growing,
}

/// A region of persistent memory, or a file standing in for one (`Fs::open_region`): a
/// fixed number of bytes written in place. Written bytes are visible to reads at once and
/// durable only once persisted: a power cut keeps each unpersisted byte or loses it, cache
/// line by cache line (docs/design/matrixkv.md, "Persistent memory through `Fs`").
pub trait PmemRegion: Send + Sync {
    /// The region's size in bytes.
    fn len(&self) -> usize;
    /// Whether the region has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copies `data` into the region at `offset` (not durable yet).
    ///
    /// # Errors
    /// `InvalidArgument` for a range past the end; I/O errors of the implementation.
    ///
    /// # Safety
    /// No other thread reads or writes `offset..offset + data.len()` while this runs (the
    /// caller writes only bytes no reader can reach yet, such as free pages).
    unsafe fn write_at(&self, offset: usize, data: &[u8]) -> Result<()>;
    /// A copy of bytes `offset..offset + len`.
    ///
    /// # Errors
    /// `InvalidArgument` for a range past the end; I/O errors of the implementation.
    fn read_at(&self, offset: usize, len: usize) -> Result<Vec<u8>>;
    /// Copies bytes `offset..offset + out.len()` into `out`: `read_at` without allocating
    /// (reads that probe a few bytes at a time, such as a RowTable's binary search). By
    /// default through `read_at`.
    ///
    /// # Errors
    /// As `read_at`.
    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        out.copy_from_slice(&self.read_at(offset, out.len())?);
        Ok(())
    }
    /// Bytes `offset..offset + len` in place, where the region is memory this process
    /// reads directly (a map): a reader that only passes bytes on (a column compaction
    /// copying values into tables) then copies them once, not twice. `None` where the
    /// region has no such memory; the caller then copies with `read_into`. By default
    /// `None`.
    ///
    /// # Safety
    /// No thread writes these bytes while the returned slice lives (`write_at`'s contract
    /// seen from the reader: the caller holds what keeps writers off them, such as the
    /// pages' hold).
    unsafe fn bytes(&self, offset: usize, len: usize) -> Option<&[u8]> {
        let _ = (offset, len);
        None
    }
    /// The four bytes at `offset` (a multiple of 4) as one atomic counter, where the
    /// region is memory this process maps and other processes may map too: counters that
    /// a writing process and read-only views share (the pages' generations). `None` where
    /// the region has no such memory; callers then go through `read_into` and `write_at`.
    /// By default `None`.
    fn atomic_u32(&self, offset: usize) -> Option<&std::sync::atomic::AtomicU32> {
        let _ = offset;
        None
    }
    /// Makes bytes `offset..offset + len` durable: a power cut from now on keeps them.
    ///
    /// # Errors
    /// I/O errors: the bytes may or may not be durable.
    fn persist(&self, offset: usize, len: usize) -> Result<()>;
}

/// The error for opening an existing region of `size` bytes as one of `len`.
pub(crate) fn region_size_error(path: &Path, size: u64, len: usize) -> Error {
    Error::invalid(format!(
        "{}: a region of {size} bytes, opened as {len}",
        path.display()
    ))
}

/// `offset..offset + len` of a region of `size` bytes, or `InvalidArgument`.
pub(crate) fn region_range(
    path: &Path,
    offset: usize,
    len: usize,
    size: usize,
) -> Result<std::ops::Range<usize>> {
    match offset.checked_add(len) {
        Some(end) if end <= size => Ok(offset..end),
        _ => Err(Error::invalid(format!(
            "{}: bytes {offset}..+{len} are past the region's end ({size} bytes)",
            path.display()
        ))),
    }
}

/// A file being appended to.
pub trait WritableFile: Send {
    /// Appends `data` (may be buffered).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Pushes buffered bytes to the OS (not durable).
    fn flush(&mut self) -> Result<()>;
    /// Makes every appended byte durable.
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far.
    fn len(&self) -> u64;
    /// Whether nothing was appended.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Of the bytes pushed to the OS so far, those copied in through a shared memory map
    /// rather than written with a system call: a process's `write(2)` accounting (`wchar`
    /// in `/proc/self/io`) does not see them. Default 0: nothing goes through a map.
    fn mapped_bytes(&self) -> u64 {
        0
    }
    /// Pushes buffered bytes to the OS and returns a handle that makes every byte appended
    /// so far durable when called, from any thread and without this file: a WAL synced
    /// outside its lock while writers go on appending. `None` (the default) if the file
    /// offers none; callers then sync through [`WritableFile::sync`].
    ///
    /// # Errors
    /// As for [`WritableFile::flush`].
    fn sync_handle(&mut self) -> Result<Option<Box<dyn SyncHandle>>> {
        Ok(None)
    }
}

/// Makes durable the bytes a file held when the handle was taken
/// ([`WritableFile::sync_handle`]); later appends may become durable with them.
pub trait SyncHandle: Send {
    /// Syncs.
    ///
    /// # Errors
    /// The sync's I/O error.
    fn sync(&self) -> Result<()>;
}

/// Bytes read from a file: owned, or a range of a memory map that they keep alive.
///
/// Holds the range as a pointer and length next to its owner, so that dereferencing (done
/// for every entry a block iterator decodes) is free of branches and bounds checks.
#[derive(Clone)]
pub struct FileBytes {
    ptr: *const u8,
    len: usize,
    owner: Owner,
}

/// What keeps the bytes alive; held, never read.
#[derive(Clone)]
#[allow(dead_code)]
enum Owner {
    Heap(Arc<Vec<u8>>),
    Map(Arc<memmap2::Mmap>),
}

// SAFETY: `ptr` points into memory owned by `owner` (an immutable `Vec` or a read-only map,
// both `Send + Sync` behind their `Arc`), which lives as long as `self`; nothing mutates it.
unsafe impl Send for FileBytes {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for FileBytes {}

impl FileBytes {
    /// Bytes `start..end` of a shared map. REQUIRES: `start <= end <= map.len()` (checked:
    /// an out-of-range request yields the clamped range).
    pub fn mapped(map: Arc<memmap2::Mmap>, start: usize, end: usize) -> Self {
        let end = end.min(map.len());
        let start = start.min(end);
        // SAFETY: `start <= map.len()`, so the pointer stays within (or one past) the map.
        let ptr = unsafe { map.as_ptr().add(start) };
        FileBytes {
            ptr,
            len: end - start,
            owner: Owner::Map(map),
        }
    }

    /// The first `n` bytes (all of them if `n` is larger).
    #[must_use]
    pub fn prefix(mut self, n: usize) -> Self {
        self.len = self.len.min(n);
        self
    }

    /// Whether the bytes live in a memory map (no copy was made).
    pub fn is_mapped(&self) -> bool {
        matches!(self.owner, Owner::Map(_))
    }
}

impl From<Vec<u8>> for FileBytes {
    fn from(v: Vec<u8>) -> Self {
        let v = Arc::new(v);
        FileBytes {
            ptr: v.as_ptr(),
            len: v.len(),
            owner: Owner::Heap(v),
        }
    }
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr..ptr + len` lies inside the memory `owner` keeps alive and never changes
        // (see the Send/Sync note above); `prefix` only shrinks `len`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A file read at positions; shared by readers.
pub trait RandomAccessFile: Send + Sync {
    /// Reads exactly `len` bytes at `offset`; reading past the end is an error.
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>>;
    /// Like `read_at`, but may return bytes borrowed from a memory map (no copy).
    ///
    /// # Errors
    /// As for `read_at`.
    fn read_shared(&self, offset: u64, len: usize) -> Result<FileBytes> {
        self.read_at(offset, len).map(FileBytes::from)
    }
    /// Calls `f` with the `len` bytes at `offset`: borrowed from the memory map where the
    /// file is mapped (no copy and no reference count taken: a small record read out of a
    /// map costs what `f` does with it), read into a buffer otherwise.
    ///
    /// # Errors
    /// As for `read_at`.
    fn read_with(&self, offset: u64, len: usize, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let bytes = self.read_at(offset, len)?;
        f(&bytes);
        Ok(())
    }
    /// The file's size when it was opened (a file opened [`ReadAccess::Growing`] may hold
    /// more by the time it is read).
    fn size(&self) -> u64;
    /// Whether `read_shared` borrows from a memory map (then reads cost no copy, and callers
    /// may skip caching what they read). Default: false.
    fn is_mapped(&self) -> bool {
        false
    }
    /// Asks for `offset..offset + len` to be read into memory ahead of use, without
    /// waiting (a mapped file advised random access reads nothing around its faults, so an
    /// in-order reader says what comes next). Default: nothing.
    fn prefetch(&self, offset: u64, len: usize) {
        let _ = (offset, len);
    }
    /// Asks for the bytes at `offset..offset + len` of a mapped file to be brought into
    /// the CPU's cache: no system call and no page fault (lines of pages not mapped in are
    /// skipped). Only a hint, for an in-memory reader that knows what it reads next.
    /// Default: nothing.
    fn cache_ahead(&self, offset: u64, len: usize) {
        let _ = (offset, len);
    }
    /// Maps every page of a mapped file into the process now, reading any the page cache
    /// lacks, so that later reads take no page fault each. Only a hint, for a file known
    /// to be read at random while it fits in memory. Default: nothing.
    fn populate(&self) {}
}

/// A file read front to back.
pub trait SequentialFile: Send {
    /// Reads up to `buf.len()` bytes; 0 means end of file.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize>;
}

/// A held lock; dropping it releases the lock.
pub trait FileLock: Send + Sync {}

/// The byte range `offset..offset + len` of a file of `size` bytes: reading past the end
/// is `Corruption` naming the file (a handle or length read from disk was wrong).
///
/// # Errors
/// `Corruption` when the range does not fit.
pub(crate) fn checked_range(
    path: &Path,
    offset: u64,
    len: usize,
    size: usize,
) -> Result<std::ops::Range<usize>> {
    let start = usize::try_from(offset).unwrap_or(usize::MAX);
    match start.checked_add(len).filter(|&end| end <= size) {
        Some(end) => Ok(start..end),
        None => Err(crate::Error::corruption(
            path,
            offset,
            format!("read of {len} bytes past end of file ({size} bytes)"),
        )),
    }
}

/// Reads a whole file into memory.
///
/// # Errors
/// Any error of `open_sequential` or `read`.
pub fn read_all(fs: &dyn Fs, path: &Path) -> Result<Vec<u8>> {
    let mut f = fs.open_sequential(path)?;
    // Read straight into a buffer of the file's size (one byte more, to meet the end
    // without growing it): a GC reads whole value files of megabytes, and copying them
    // through a small buffer into a vector grown by doubling cost it a copy and the
    // growth's page faults per file. The size is a hint: the file is read to its end
    // whatever it says.
    let hint = fs
        .file_size(path)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0)
        .min(1 << 30);
    let mut out = vec![0u8; hint + 1];
    let mut len = 0;
    loop {
        if len == out.len() {
            out.resize(2 * len.max(32 * 1024), 0);
        }
        let n = f.read(&mut out[len..])?;
        if n == 0 {
            out.truncate(len);
            return Ok(out);
        }
        len += n;
    }
}

/// Writes `data` to `path` through a temporary file, syncs it, renames it into place and syncs
/// the directory: after return, `path` holds `data` durably, and a crash at any point leaves
/// either the old or the new content.
///
/// # Errors
/// Any I/O error; the temporary file may be left behind (it is removed at the next open).
pub fn write_file_atomic(fs: &dyn Fs, path: &Path, data: &[u8]) -> Result<()> {
    replace_file(fs, path, data)?;
    fs.sync_dir(path.parent().unwrap_or(Path::new(".")))
}

/// [`write_file_atomic`] without the directory sync: after return a crash leaves the old
/// content or the new, and the new is durable once the caller syncs the directory.
///
/// # Errors
/// Any I/O error; the temporary file may be left behind (it is removed at the next open).
pub(crate) fn replace_file(fs: &dyn Fs, path: &Path, data: &[u8]) -> Result<()> {
    let tmp = temp_path(path);
    let mut f = fs.create(&tmp)?;
    f.append(data)?;
    f.sync()?;
    drop(f);
    fs.rename(&tmp, path)
}

/// Where `path` is written until it takes its name (`NAME.dbtmp`: removed at open, never
/// read by repair).
pub(crate) fn temp_path(path: &Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".dbtmp");
    path.with_file_name(name)
}

/// Creates `dir` and any missing parents, and makes each new directory's entry durable by
/// syncing its parent (a directory created and written into, then lost with its entry at a
/// power cut, loses every file in it however well they were synced).
///
/// # Errors
/// I/O errors of the creation or the syncs.
pub(crate) fn create_dir_durable(fs: &dyn Fs, dir: &Path) -> Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !fs.exists(d))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    fs.create_dir_all(dir)?;
    // Outermost first: a directory's entry is durable once its parent is synced, and the
    // parent's own entry was made durable the step before.
    for d in missing.iter().rev() {
        if let Some(parent) = d.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs.sync_dir(parent)?;
        }
    }
    Ok(())
}

/// The contract for a file that grows while it is read (the module doc), checked the same
/// way against every implementation (`real` and `mem` tests call it).
#[cfg(test)]
pub(crate) fn check_growing_file_contract(fs: &dyn Fs, dir: &Path) {
    use crate::error::ErrorKind;
    let path = dir.join("000001.vlog");
    let mut w = fs.create(&path).unwrap();
    w.append(b"first").unwrap();
    w.flush().unwrap();
    let mapped = fs.open(&path).unwrap();
    let positional = fs.open_with(&path, ReadAccess::Positional).unwrap();
    let growing = fs.open_with(&path, ReadAccess::Growing).unwrap();
    w.append(b"second").unwrap();
    let past_end = |r: Result<Vec<u8>>, what: &str| {
        let e = r.expect_err(what);
        assert_eq!(e.kind(), ErrorKind::Corruption, "{what}: {e}");
        assert!(e.to_string().contains("past end of file"), "{what}: {e}");
    };
    past_end(
        growing.read_at(5, 6),
        "appended, not flushed: no reader sees it",
    );
    w.flush().unwrap();
    assert_eq!(growing.read_at(5, 6).unwrap(), b"second");
    assert_eq!(growing.read_at(0, 11).unwrap(), b"firstsecond");
    past_end(growing.read_at(5, 7), "growing: past what was flushed");
    for (r, what) in [(&mapped, "open"), (&positional, "positional")] {
        assert_eq!(r.read_at(0, 5).unwrap(), b"first", "{what}");
        past_end(
            r.read_at(5, 6),
            &format!("{what}: limited to the size at open"),
        );
    }
    assert_eq!(
        fs.open(&path).unwrap().read_at(0, 11).unwrap(),
        b"firstsecond"
    );
    w.append(b"third").unwrap();
    drop(w);
    assert_eq!(
        fs.file_size(&path).unwrap(),
        11,
        "dropped unflushed bytes are lost"
    );
}

/// The contract of a persistent-memory region (`Fs::open_region`, `PmemRegion`), checked the
/// same way against every implementation (`real` and `mem` tests call it).
#[cfg(test)]
pub(crate) fn check_region_contract(fs: &dyn Fs, dir: &Path) {
    use crate::error::ErrorKind;
    let path = dir.join("000001.pmem");
    let r = fs.open_region(&path, 8192).unwrap();
    assert_eq!(r.len(), 8192);
    assert_eq!(
        r.read_at(0, 8192).unwrap(),
        vec![0; 8192],
        "a new region is zeros"
    );
    // SAFETY: no other thread uses the region.
    unsafe { r.write_at(100, b"hello").unwrap() };
    assert_eq!(
        r.read_at(98, 9).unwrap(),
        b"\0\0hello\0\0",
        "writes are read at once"
    );
    r.persist(100, 5).unwrap();
    r.persist(0, 0).unwrap();
    // Out of range: refused, never a partial write or a crash.
    // SAFETY: as above.
    let e = unsafe { r.write_at(8190, b"abc") }.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert_eq!(
        r.read_at(8192, 1).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        r.persist(usize::MAX, 2).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    drop(r);
    // Reopened: its bytes kept, its size fixed.
    let r = fs.open_region(&path, 8192).unwrap();
    assert_eq!(r.read_at(100, 5).unwrap(), b"hello");
    assert_eq!(
        fs.open_region(&path, 4096).err().unwrap().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(fs.file_size(&path).unwrap(), 8192);
    drop(r);
    fs.remove(&path).unwrap();
}

/// Files an edit names that their writer left unsynced: synced (files, then directories)
/// before the edit's record is written to the manifest. A flush hands its tables over this
/// way, so that its memtable leaves without waiting for their sync (docs/design/
/// core-engine.md, "A flush's tables are synced with its record").
#[derive(Debug, Default)]
pub(crate) struct DurableFirst {
    /// Files to sync.
    pub files: Vec<std::path::PathBuf>,
    /// Directories whose entries for them to sync.
    pub dirs: Vec<std::path::PathBuf>,
}
