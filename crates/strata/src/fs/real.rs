//! [`RealFs`]: the operating system's file system. The only module that touches `std::fs`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FileLock, Fs, PmemRegion, RandomAccessFile, SequentialFile, WritableFile};
use crate::error::{Error, Result};

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealFs;

impl RealFs {
    /// A handle to the real file system.
    pub fn new() -> Self {
        RealFs
    }
}

const WRITE_BUFFER: usize = 64 * 1024;

/// Written bytes after which a file's writeback is started without waiting.
const WRITEBACK_EVERY: u64 = 1 << 20;

/// Starts writing bytes `from..from + len` of `file` back to the disk without waiting for it
/// (`sync_file_range(SYNC_FILE_RANGE_WRITE)`, as RocksDB's `bytes_per_sync`): with much RAM,
/// the kernel otherwise keeps a whole file dirty until its `fdatasync`, which then makes the
/// syncing thread wait for all of it. Best effort (a no-op off Linux); errors surface at the
/// next sync.
fn start_writeback(file: &File, from: u64, len: u64) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if let (Ok(off), Ok(n)) = (libc::off64_t::try_from(from), libc::off64_t::try_from(len)) {
            // SAFETY: plain system call on a descriptor we own; no memory is passed.
            unsafe {
                libc::sync_file_range(file.as_raw_fd(), off, n, libc::SYNC_FILE_RANGE_WRITE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (file, from, len);
}

/// [`crate::fs::SyncHandle`] of a real file: a duplicate of its descriptor.
struct RealSync {
    file: File,
    path: PathBuf,
}

impl RealSync {
    fn of(file: &File, path: &Path) -> Result<Option<Box<dyn crate::fs::SyncHandle>>> {
        let file = file.try_clone().map_err(|e| Error::io("dup", path, e))?;
        Ok(Some(Box::new(RealSync {
            file,
            path: path.to_path_buf(),
        })))
    }
}

impl crate::fs::SyncHandle for RealSync {
    fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io("fsync", &self.path, e))
    }
}

struct RealWritable {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    len: u64,
    /// Writeback was started for the file's bytes below this offset.
    writeback_started: u64,
}

impl RealWritable {
    fn write_out(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.file
                .write_all(&self.buf)
                .map_err(|e| Error::io("write", &self.path, e))?;
            self.buf.clear();
            self.written_out();
        }
        Ok(())
    }

    /// After bytes went to the kernel (everything appended but `buf`): starts writeback
    /// of each finished megabyte, so that a table's closing `fdatasync` finds little left and
    /// a flush or compaction thread spends its time merging rather than waiting.
    fn written_out(&mut self) {
        let written = self.len - self.buf.len() as u64;
        if written - self.writeback_started >= WRITEBACK_EVERY {
            start_writeback(
                &self.file,
                self.writeback_started,
                written - self.writeback_started,
            );
            self.writeback_started = written;
        }
    }
}

impl WritableFile for RealWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.buf.len() + data.len() > WRITE_BUFFER {
            self.write_out()?;
            if data.len() > WRITE_BUFFER {
                self.file
                    .write_all(data)
                    .map_err(|e| Error::io("write", &self.path, e))?;
                self.len += data.len() as u64;
                self.written_out();
                return Ok(());
            }
        }
        self.buf.extend_from_slice(data);
        self.len += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_out()
    }

    fn sync(&mut self) -> Result<()> {
        self.write_out()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io("fsync", &self.path, e))
    }

    fn sync_handle(&mut self) -> Result<Option<Box<dyn crate::fs::SyncHandle>>> {
        self.write_out()?;
        RealSync::of(&self.file, &self.path)
    }

    fn len(&self) -> u64 {
        self.len
    }
}

/// Logs grow in preallocated chunks of this size (a multiple of every page size in use).
/// Larger chunks measured worse (p99 of 1 KiB puts 14 us with chunks growing to 8 MiB, 7 us
/// with 1 MiB): writing back part of a large unwritten extent splits it, under the lock
/// that `pwrite` takes to map the same file's blocks.
const LOG_CHUNK: u64 = 1 << 20;
/// A log is mapped this many bytes at a time (a multiple of `LOG_CHUNK`): address space
/// only, so large enough that a log is mapped once (unmapping 8 MiB of written pages took
/// 0.5 ms, inside one put).
const LOG_WINDOW: u64 = 256 << 20;
/// Groups of appends of at least this many bytes are written with `pwrite`, smaller ones
/// copied through the map (1 KiB puts: p99 14 us through the map, 7 us with `pwrite`; 100 B
/// puts lost a tenth of their throughput to `pwrite`).
const LOG_DIRECT: usize = 512;
/// Appends are held until `flush` up to this many bytes.
const LOG_BUFFER: usize = 256 << 10;
/// A group copied through the map has its first this many bytes stored last: a WAL group
/// starts with its record's header, behind at most a 6-byte block trailer (docs/format/wal.md),
/// so a header in the page cache means the rest of its group is.
const LOG_HEAD: usize = 16;

/// A log reserved with `fallocate` and written through a shared, writable memory map
/// (docs/design/core-engine.md, "WAL through a memory map"). Appends are held until `flush`
/// (the WAL flushes once per commit group); a small group is then a copy into the page cache
/// with no system call, and survives the process being killed exactly as a `write(2)` would
/// (the pages belong to the kernel); `sync` is `fdatasync`, which writes back pages dirtied
/// through the map like any others. Space is reserved in chunks, so a full disk is an error
/// from `flush`, never a SIGBUS from a page fault. Dropping the writer truncates the file to
/// what was written; after a crash the preallocated tail stays zero-filled, which the log
/// reader takes as the end.
///
/// A group of `LOG_DIRECT` bytes or more is written with `pwrite` instead, into the same
/// reserved space (a map and `pwrite` share the page cache): through the map, each of its
/// pages costs a page fault, and the first fault in a reserved chunk reads around it, up to
/// the device's read-ahead (8 MiB where measured, so the whole chunk: ~0.3 ms inside one
/// put). Page faults were where the put latency's tail came from (docs/design/core-engine.md,
/// "Tail latency of a put"); a small group still pays that first fault, once per megabyte.
///
/// What a process killed in the middle of a write leaves (docs/format/wal.md, "What a
/// crash leaves"): the groups before, whole, and some of the bytes of the group being
/// written. A memory copy stores its bytes in whatever order the C library chooses (the
/// first vector after the loop, for a few hundred bytes), so a small group's head is
/// stored explicitly after its tail (`LOG_HEAD`); the kernel copies a `pwrite` front to back
/// and stops for a fatal signal only between pages, leaving a prefix. The log reader takes
/// either, or any other order, as the torn tail it is.
#[cfg(target_os = "linux")]
struct MappedLog {
    path: PathBuf,
    file: File,
    /// The window being filled: file bytes `map_start..map_start + window`, of which
    /// those below `reserved` may be touched. Windows start at multiples of `window`.
    map: Option<memmap2::MmapMut>,
    map_start: u64,
    /// `LOG_WINDOW` (tests: smaller).
    window: u64,
    /// Bytes in the page cache (the file's length, less the zero tail).
    written: u64,
    /// Appends not yet written out (`flush`).
    buf: Vec<u8>,
    /// File bytes below this offset are allocated (`fallocate`).
    reserved: u64,
    /// Of `written`, the bytes copied through the map (the rest went by `pwrite`).
    mapped: u64,
}

#[cfg(test)]
thread_local! {
    /// Tests: while set, a mapped log's copy routine (through the map and `pwrite` alike) is
    /// a byte-by-byte copy in reverse order that stops, with an error as if the process had
    /// died, once it has stored this many bytes.
    static KILL_AFTER: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

#[cfg(target_os = "linux")]
impl MappedLog {
    fn create(path: &Path, file: File, window: u64) -> Result<MappedLog> {
        let mut log = MappedLog {
            path: path.to_path_buf(),
            file,
            map: None,
            map_start: 0,
            window,
            written: 0,
            buf: Vec::with_capacity(LOG_BUFFER),
            reserved: 0,
            mapped: 0,
        };
        log.map_window(0)?;
        log.reserve(1)?;
        Ok(log)
    }

    /// Maps the window starting at `start` (a multiple of `window`).
    fn map_window(&mut self, start: u64) -> Result<()> {
        self.map = None;
        // SAFETY: the file is only changed by this writer; bytes of the window past
        // `reserved` are never touched before `reserve` allocates them (touching them first
        // would be a SIGBUS), and nothing truncates the file while it is mapped (the engine
        // never truncates a live log, and `Drop` unmaps before truncating).
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(start)
                .len(self.window as usize)
                .map_mut(&self.file)
        }
        .map_err(|e| Error::io("mmap", &self.path, e))?;
        self.map = Some(map);
        self.map_start = start;
        Ok(())
    }

    /// Allocates file bytes below `end`, a chunk at a time.
    fn reserve(&mut self, end: u64) -> Result<()> {
        use std::os::fd::AsRawFd;
        while self.reserved < end {
            // No early writeback of finished chunks: a WAL that is never synced is usually
            // deleted (its memtable flushed) before the kernel writes it back, and then it
            // costs the device nothing (docs/design/core-engine.md, "Closed WALs are synced
            // lazily").
            let (Ok(off), Ok(n)) = (
                libc::off_t::try_from(self.reserved),
                libc::off_t::try_from(LOG_CHUNK),
            ) else {
                return Err(Error::io(
                    "fallocate",
                    &self.path,
                    std::io::Error::other("log too large"),
                ));
            };
            // SAFETY: plain system call on a descriptor we own; no memory is passed.
            let rc = unsafe { libc::fallocate(self.file.as_raw_fd(), 0, off, n) };
            if rc != 0 {
                return Err(Error::io(
                    "fallocate",
                    &self.path,
                    std::io::Error::last_os_error(),
                ));
            }
            self.reserved += LOG_CHUNK;
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
impl MappedLog {
    /// Writes the buffered appends to the page cache: a small group of bytes as a copy
    /// through the map, a large one with `pwrite`.
    fn write_out(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let data = std::mem::take(&mut self.buf);
        let res = self.write_at_end(&data);
        self.buf = data;
        self.buf.clear();
        res
    }

    fn write_at_end(&mut self, data: &[u8]) -> Result<()> {
        self.reserve(self.written + data.len() as u64)?;
        if data.len() >= LOG_DIRECT {
            self.pwrite(data, self.written)?;
            self.written += data.len() as u64;
            return Ok(());
        }
        // The tail first, then the head: a kill in between leaves the head zeroed, never a
        // header whose record is not all there.
        let head = data.len().min(LOG_HEAD);
        self.copy_in(self.written + head as u64, &data[head..])?;
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        self.copy_in(self.written, &data[..head])?;
        self.written += data.len() as u64;
        self.mapped += data.len() as u64;
        Ok(())
    }

    fn pwrite(&mut self, data: &[u8], at: u64) -> Result<()> {
        #[cfg(test)]
        if KILL_AFTER.get().is_some() {
            return self.test_copy(data, |log, i, b| {
                log.file
                    .write_all_at(&[b], at + i as u64)
                    .map_err(|e| Error::io("write", &log.path, e))
            });
        }
        self.file
            .write_all_at(data, at)
            .map_err(|e| Error::io("write", &self.path, e))
    }

    /// Copies `data` through the map to file offset `at` (below `reserved`).
    fn copy_in(&mut self, mut at: u64, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            // `pwrite`s may have taken the end past any number of windows.
            let window = at / self.window * self.window;
            if self.map.is_none() || self.map_start != window {
                self.map_window(window)?;
            }
            let pos = (at - self.map_start) as usize;
            let n = data.len().min(self.window as usize - pos);
            #[cfg(test)]
            if KILL_AFTER.get().is_some() {
                self.test_copy(&data[..n], |log, i, b| {
                    if let Some(map) = log.map.as_mut() {
                        map[pos + i] = b;
                    }
                    Ok(())
                })?;
                at += n as u64;
                data = &data[n..];
                continue;
            }
            let Some(map) = self.map.as_mut() else {
                unreachable!("a window is mapped above");
            };
            map[pos..pos + n].copy_from_slice(&data[..n]);
            at += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    /// Tests' copy routine: `data` byte by byte, last byte first, through `store`; once
    /// `KILL_AFTER` bytes are stored, an error (the process is dead).
    #[cfg(test)]
    fn test_copy(
        &mut self,
        data: &[u8],
        mut store: impl FnMut(&mut Self, usize, u8) -> Result<()>,
    ) -> Result<()> {
        for (i, &b) in data.iter().enumerate().rev() {
            let left = KILL_AFTER.get().unwrap_or(usize::MAX);
            if left == 0 {
                return Err(Error::io(
                    "write",
                    &self.path,
                    std::io::Error::other("killed in the middle of a copy"),
                ));
            }
            KILL_AFTER.set(Some(left - 1));
            store(self, i, b)?;
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
impl WritableFile for MappedLog {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        // Held until `flush` (which the WAL calls once per commit group), so that a record's
        // header and payload, and a group's records, reach the page cache in one piece.
        if self.buf.len() + data.len() > LOG_BUFFER {
            self.write_out()?;
        }
        if data.len() > LOG_BUFFER {
            self.write_at_end(data)?;
        } else {
            self.buf.extend_from_slice(data);
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.write_out()
    }

    fn sync(&mut self) -> Result<()> {
        self.write_out()?;
        self.file
            .sync_data()
            .map_err(|e| Error::io("fsync", &self.path, e))
    }

    fn sync_handle(&mut self) -> Result<Option<Box<dyn crate::fs::SyncHandle>>> {
        // (Bytes copied in through the map are the file's pages: `fdatasync` writes them
        // back as it does those written by `pwrite`.)
        self.write_out()?;
        RealSync::of(&self.file, &self.path)
    }

    fn len(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    fn mapped_bytes(&self) -> u64 {
        self.mapped
    }
}

#[cfg(target_os = "linux")]
impl Drop for MappedLog {
    fn drop(&mut self) {
        // Tests: a process killed in a copy runs no more code.
        #[cfg(test)]
        if KILL_AFTER.get() == Some(0) {
            return;
        }
        // Best effort, as a `write(2)` that was never made.
        let _ = self.write_out();
        self.map = None;
        // Best effort: a log that keeps its zero tail reads the same.
        let _ = self.file.set_len(self.written);
    }
}

struct RealRandom {
    path: PathBuf,
    file: File,
    size: u64,
    /// Opened `ReadAccess::Growing`: reads are not limited to `size`.
    growing: bool,
}

impl RandomAccessFile for RealRandom {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        if !self.growing {
            super::checked_range(
                &self.path,
                offset,
                len,
                usize::try_from(self.size).unwrap_or(usize::MAX),
            )?;
        }
        let mut buf = vec![0u8; len];
        match self.file.read_exact_at(&mut buf, offset) {
            Ok(()) => Ok(buf),
            // Past the end of a file still being written: the same error as past the end
            // of a complete one, with the size the file has now.
            Err(e) if self.growing && e.kind() == std::io::ErrorKind::UnexpectedEof => {
                let now = self.file.metadata().map_or(0, |m| m.len());
                super::checked_range(
                    &self.path,
                    offset,
                    len,
                    usize::try_from(now).unwrap_or(usize::MAX),
                )?;
                Err(Error::io("read", &self.path, e))
            }
            Err(e) => Err(Error::io("read", &self.path, e)),
        }
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn prefetch(&self, offset: u64, len: usize) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (Ok(off), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len))
            else {
                return;
            };
            // SAFETY: the descriptor is open for as long as `self.file` lives; the call only
            // reads its arguments. Only a hint: a failure costs the read-ahead, nothing else.
            let _ = unsafe {
                libc::posix_fadvise(self.file.as_raw_fd(), off, len, libc::POSIX_FADV_WILLNEED)
            };
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (offset, len);
    }
}

/// A table file read through a read-only memory map: a block read is a copy out of the page
/// cache, with no system call (LevelDB and RocksDB read tables this way too). Sound because
/// table files are never modified after they are written (only unlinked, which keeps the
/// mapping valid).
struct MappedRandom {
    path: PathBuf,
    map: Arc<memmap2::Mmap>,
    /// Advised `MADV_RANDOM`: the kernel reads nothing around a fault, so `prefetch` asks.
    random: bool,
}

impl RandomAccessFile for MappedRandom {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let range = super::checked_range(&self.path, offset, len, self.map.len())?;
        Ok(self.map[range].to_vec())
    }

    fn read_shared(&self, offset: u64, len: usize) -> Result<super::FileBytes> {
        let range = super::checked_range(&self.path, offset, len, self.map.len())?;
        Ok(super::FileBytes::mapped(
            self.map.clone(),
            range.start,
            range.end,
        ))
    }

    fn read_with(&self, offset: u64, len: usize, f: &mut dyn FnMut(&[u8])) -> Result<()> {
        let range = super::checked_range(&self.path, offset, len, self.map.len())?;
        f(&self.map[range]);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.map.len() as u64
    }

    fn is_mapped(&self) -> bool {
        true
    }

    fn prefetch(&self, offset: u64, len: usize) {
        if !self.random {
            return; // the kernel's read-around does it
        }
        let Ok(start) = usize::try_from(offset) else {
            return;
        };
        if start < self.map.len() {
            let len = len.min(self.map.len() - start);
            // Only a hint: a failure costs the read-ahead, nothing else.
            let _ = self.map.advise_range(memmap2::Advice::WillNeed, start, len);
        }
    }

    fn cache_ahead(&self, offset: u64, len: usize) {
        let Ok(start) = usize::try_from(offset) else {
            return;
        };
        let end = start.saturating_add(len).min(self.map.len());
        for line in self.map.get(start..end).unwrap_or_default().chunks(64) {
            crate::hint::prefetch(line.as_ptr());
        }
    }

    fn populate(&self) {
        // Only a hint: a kernel without MADV_POPULATE_READ (before 5.14) faults as before.
        #[cfg(target_os = "linux")]
        let _ = self.map.advise(memmap2::Advice::PopulateRead);
    }
}

struct RealSequential {
    path: PathBuf,
    file: File,
}

impl SequentialFile for RealSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.file
            .read(buf)
            .map_err(|e| Error::io("read", &self.path, e))
    }
}

struct RealLock {
    _file: File,
}

impl FileLock for RealLock {}

/// How long after its last change a file has an identity (`Fs::file_identity`).
const IDENTITY_SETTLE: std::time::Duration = std::time::Duration::from_secs(3);

impl Fs for RealFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        Ok(Box::new(RealWritable {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(WRITE_BUFFER),
            len: 0,
            writeback_started: 0,
        }))
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        #[cfg(target_os = "linux")]
        {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)
                .map_err(|e| Error::io("create", path, e))?;
            // A file system without fallocate or shared maps (or with no room for a first
            // chunk) gets plain writes, which report their own errors.
            if let Ok(log) = MappedLog::create(path, file, LOG_WINDOW) {
                return Ok(Box::new(log));
            }
        }
        self.create(path)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_with(path, super::ReadAccess::Mapped)
    }

    fn open_with(
        &self,
        path: &Path,
        access: super::ReadAccess,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        use super::ReadAccess;
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        let size = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        // Tables when mapped, and any file whose reader asks for a random-access map (group
        // files of coalesced items, whose reads take tens of bytes each: a `pread` per item
        // cost more than the item's table lookup, issue 33). Other files opened `Mapped`
        // (the default) keep positional reads.
        let mapped = match access {
            ReadAccess::MappedRandom => true,
            ReadAccess::Mapped => path.extension().is_some_and(|e| e == "sst"),
            _ => false,
        };
        if size > 0 && mapped {
            // SAFETY: what is opened this way is immutable once written (see
            // `MappedRandom`); a file changed by someone else under us is outside the
            // engine's contract, as for LevelDB.
            if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
                if access == ReadAccess::MappedRandom {
                    // Only a hint: a kernel that refuses it reads around faults as before.
                    let _ = map.advise(memmap2::Advice::Random);
                }
                return Ok(Arc::new(MappedRandom {
                    path: path.to_path_buf(),
                    map: Arc::new(map),
                    random: access == ReadAccess::MappedRandom,
                }));
            }
        }
        #[cfg(target_os = "linux")]
        if access == ReadAccess::Positional {
            use std::os::fd::AsRawFd;
            // SAFETY: `file` is an open descriptor for the duration of the call; the advice
            // changes only the kernel's read-ahead for it, and a failure is harmless.
            unsafe {
                libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM);
            }
        }
        Ok(Arc::new(RealRandom {
            path: path.to_path_buf(),
            file,
            size,
            growing: access == ReadAccess::Growing,
        }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        Ok(Box::new(RealSequential {
            path: path.to_path_buf(),
            file,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))? {
            let entry = entry.map_err(|e| Error::io("list", dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
    }

    fn link(&self, from: &Path, to: &Path) -> Result<()> {
        fs::hard_link(from, to).map_err(|e| Error::io("link", from, e))
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io("mkdir", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let f = File::open(dir).map_err(|e| Error::io("open dir", dir, e))?;
        f.sync_all().map_err(|e| Error::io("fsync dir", dir, e))
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        let f = File::open(path).map_err(|e| Error::io("open", path, e))?;
        f.sync_all().map_err(|e| Error::io("fsync", path, e))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path)
            .map_err(|e| Error::io("stat", path, e))?
            .len())
    }

    /// The device, inode, size, modification time (to the nanosecond) and creation time
    /// where the file system keeps one. None for a file modified in the last
    /// [`IDENTITY_SETTLE`]: a timestamp ticks coarsely (1 s on some file systems, 2 s on
    /// FAT, the kernel's clock tick everywhere), so a write within the tick, or a file made
    /// in the same tick on a reused inode, could show the same identity; one older than
    /// that shows a later write or a new file by a later modification time.
    fn file_identity(&self, path: &Path) -> Option<u128> {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(path).ok()?;
        let modified = m.modified().ok()?;
        if std::time::SystemTime::now()
            .duration_since(modified)
            .map_or(true, |age| age < IDENTITY_SETTLE)
        {
            return None;
        }
        let born = m
            .created()
            .ok()
            .and_then(|c| c.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as u64);
        let mut b = Vec::with_capacity(48);
        for v in [
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime() as u64,
            m.mtime_nsec() as u64,
            born,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        Some(xxhash_rust::xxh3::xxh3_128(&b))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = open_or_create(path, "open lock")?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(RealLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Err(Error::new(
                crate::ErrorKind::Busy,
                format!("{}: database is locked by another process", path.display()),
            )),
            Err(fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
        }
    }

    fn open_region(&self, path: &Path, len: usize) -> Result<Arc<dyn PmemRegion>> {
        let file = open_or_create(path, "open region")?;
        let size = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        if size == 0 && len > 0 {
            // Reserved, not just sized: a store into a hole of a full file system would be a
            // SIGBUS rather than an error.
            reserve(&file, path, len as u64)?;
            file.sync_all().map_err(|e| Error::io("fsync", path, e))?;
        } else if size != len as u64 {
            return Err(super::region_size_error(path, size, len));
        }
        let map = memmap2::MmapOptions::new()
            .len(len.max(1))
            .map_raw(&file)
            .map_err(|e| Error::io("mmap", path, e))?;
        Ok(Arc::new(RealRegion {
            path: path.to_path_buf(),
            _file: file,
            map,
            len,
        }))
    }
}

/// `path` opened for reading and writing, created empty if missing, never truncated.
fn open_or_create(path: &Path, op: &str) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io(op, path, e))
}

/// Allocates the first `len` bytes of an empty `file` (zeros).
fn reserve(file: &File, path: &Path, len: u64) -> Result<()> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let n = libc::off_t::try_from(len)
            .map_err(|_| Error::invalid(format!("{}: region too large", path.display())))?;
        // SAFETY: plain system call on a descriptor we own; no memory is passed.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, n) };
        if rc == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EOPNOTSUPP) {
            return Err(Error::io("fallocate", path, e));
        }
    }
    file.set_len(len)
        .map_err(|e| Error::io("truncate", path, e))
}

/// A region as a shared, writable map of a file (docs/design/matrixkv.md, "Persistent
/// memory through `Fs`"): a write is a copy into the mapped pages (on a DAX file system,
/// into the persistent memory itself; on a tmpfs, into memory), and `persist` is `msync`
/// of the pages the range touches.
struct RealRegion {
    path: PathBuf,
    _file: File,
    map: memmap2::MmapRaw,
    len: usize,
}

impl PmemRegion for RealRegion {
    fn len(&self) -> usize {
        self.len
    }

    unsafe fn write_at(&self, offset: usize, data: &[u8]) -> Result<()> {
        let r = super::region_range(&self.path, offset, data.len(), self.len)?;
        // SAFETY: `r` lies inside the mapping (checked above), which lives as long as
        // `self`; the caller guarantees no other thread touches these bytes meanwhile.
        unsafe {
            std::ptr::copy_nonoverlapping(
                data.as_ptr(),
                self.map.as_mut_ptr().add(r.start),
                r.len(),
            );
        }
        Ok(())
    }

    fn read_at(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        self.read_into(offset, &mut out)?;
        Ok(out)
    }

    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        let r = super::region_range(&self.path, offset, out.len(), self.len)?;
        // SAFETY: `r` lies inside the mapping, which lives as long as `self`, and `out` is
        // `r.len()` bytes of the caller's memory, which the mapping cannot overlap; writers
        // never write bytes a reader may be reading (`write_at`'s contract).
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.map.as_ptr().add(r.start),
                out.as_mut_ptr(),
                r.len(),
            );
        }
        Ok(())
    }

    unsafe fn bytes(&self, offset: usize, len: usize) -> Option<&[u8]> {
        let r = super::region_range(&self.path, offset, len, self.len).ok()?;
        // SAFETY: `r` lies inside the mapping (checked above), which lives as long as
        // `self` and so as long as the slice; the caller guarantees no thread writes these
        // bytes while the slice lives, so reading them as shared memory races with nothing.
        Some(unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(r.start), r.len()) })
    }

    fn atomic_u32(&self, offset: usize) -> Option<&std::sync::atomic::AtomicU32> {
        let r = super::region_range(&self.path, offset, 4, self.len).ok()?;
        if r.start % 4 != 0 {
            return None;
        }
        // SAFETY: `r` lies inside the mapping (checked above), which lives as long as `self`
        // and so as long as the reference; the map starts on a page boundary and `r.start`
        // is a multiple of 4, so the address is aligned for a `u32`. The pointer comes from
        // the raw map, not from a shared reference, and the map is writable. Every access to
        // these bytes, in this process and in others mapping the file, goes through atomics
        // (the callers' contract: bytes used as counters are never read or written
        // otherwise while mapped).
        Some(unsafe {
            std::sync::atomic::AtomicU32::from_ptr(self.map.as_mut_ptr().add(r.start).cast())
        })
    }

    fn persist(&self, offset: usize, len: usize) -> Result<()> {
        let r = super::region_range(&self.path, offset, len, self.len)?;
        if r.is_empty() {
            return Ok(());
        }
        self.map
            .flush_range(r.start, r.len())
            .map_err(|e| Error::io("msync", &self.path, e))
    }
}

/// The memory this process may use, as the kernel reports it: the smallest limit of its
/// memory cgroup and the cgroups above it (v2 `memory.max`, v1 `memory.limit_in_bytes`; a
/// container's limit, and `memlimit`'s), and the machine's `MemTotal`. `None` when none of
/// them can be read (not Linux). Reads kernel files, never the database's.
pub(crate) fn memory_limit() -> Option<u64> {
    let total = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| meminfo_total(&s));
    let cgroups = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut limit = total;
    for (dir, file) in cgroup_limit_files(&cgroups) {
        // The group's own file and those of its ancestors that this mount shows.
        let mut rel = PathBuf::from(dir.trim_start_matches('/'));
        loop {
            let path = Path::new(file.0).join(&rel).join(file.1);
            if let Some(v) = fs::read_to_string(&path).ok().and_then(|s| parse_limit(&s)) {
                limit = Some(limit.map_or(v, |l| l.min(v)));
            }
            if !rel.pop() {
                break;
            }
        }
    }
    limit
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn meminfo_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// For each memory cgroup in `/proc/self/cgroup`: its path, and where its limit file is
/// (mount point, file name).
fn cgroup_limit_files(cgroups: &str) -> Vec<(&str, (&'static str, &'static str))> {
    let mut out = Vec::new();
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if controllers.is_empty() {
            out.push((path, ("/sys/fs/cgroup", "memory.max")));
        } else if controllers.split(',').any(|c| c == "memory") {
            out.push((path, ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")));
        }
    }
    out
}

/// A cgroup limit file's value: `None` for "max" and for v1's "no limit" (a page-rounded
/// `i64::MAX`), or anything unreadable.
fn parse_limit(s: &str) -> Option<u64> {
    let v: u64 = s.trim().parse().ok()?;
    (v < 1 << 62).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::format::HEADER_SIZE;
    use crate::wal::{LogEvent, LogReader, LogWriter};

    fn temp_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("strata-realfs-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn records(path: &Path) -> (Vec<Vec<u8>>, LogEvent) {
        let mut r = LogReader::new(fs::read(path).unwrap());
        let mut out = Vec::new();
        loop {
            match r.next_event() {
                LogEvent::Record { data, .. } => out.push(data),
                e => return (out, e),
            }
        }
    }

    #[test]
    fn mapped_log_counts_only_what_it_copies_through_the_map() {
        // The WAL's device bytes are `wchar` plus these: counting a `pwrite` group here too
        // counted the WAL twice for puts of 512 B and up (strata-bench's write-amp).
        let dir = temp_dir("logcount");
        let mut w = RealFs.create_log(&dir.join("000001.log")).unwrap();
        w.append(&[1; 100]).unwrap();
        w.flush().unwrap();
        assert_eq!((w.len(), w.mapped_bytes()), (100, 100));
        w.append(&[2; LOG_DIRECT]).unwrap();
        w.flush().unwrap();
        assert_eq!((w.len(), w.mapped_bytes()), (100 + LOG_DIRECT as u64, 100));
        // Held appends are not counted until they are written out.
        w.append(&[3; 10]).unwrap();
        assert_eq!(w.mapped_bytes(), 100);
        w.sync().unwrap();
        assert_eq!(w.mapped_bytes(), 110);
        drop(w);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn mapped_log_spans_chunks_and_truncates_on_close() {
        let dir = temp_dir("log");
        let path = dir.join("000001.log");
        // Records from 10 B to 9 KiB: groups copied through the map and groups written with
        // `pwrite`, interleaved on the same pages.
        let want: Vec<Vec<u8>> = (0..900u32)
            .map(|i| {
                let len = if i % 3 == 0 {
                    10 + (i as usize * 7) % 1500
                } else {
                    1000 + (i as usize * 37) % 9000
                };
                vec![(i % 251) as u8 + 1; len]
            })
            .collect();
        let total = {
            let mut w = LogWriter::new(RealFs.create_log(&path).unwrap());
            for r in &want {
                w.add_record(r).unwrap();
                w.flush().unwrap();
            }
            w.sync().unwrap();
            w.len()
        };
        assert!(total > 3 * LOG_CHUNK, "the test must cross reserved chunks");
        assert_eq!(fs::metadata(&path).unwrap().len(), total);
        let (got, end) = records(&path);
        assert_eq!(end, LogEvent::End);
        assert_eq!(got, want);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn mapped_log_crosses_windows_whichever_way_groups_are_written() {
        // Windows of 2 MiB: large groups (`pwrite`) leave the end anywhere, small ones
        // (through the map) must then map the window holding it, not one starting there.
        let dir = temp_dir("windows");
        let path = dir.join("000003.log");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let want: Vec<Vec<u8>> = (0..3000u32)
            .map(|i| {
                vec![
                    (i % 251) as u8 + 1;
                    if i % 4 == 0 {
                        9000
                    } else {
                        100 + (i as usize % 300)
                    }
                ]
            })
            .collect();
        {
            let log = MappedLog::create(&path, file, 2 << 20).unwrap();
            let mut w = LogWriter::new(Box::new(log));
            for r in &want {
                w.add_record(r).unwrap();
                w.flush().unwrap();
            }
            assert!(w.len() > 3 * (2 << 20), "the test must cross windows");
        }
        let (got, end) = records(&path);
        assert_eq!(end, LogEvent::End);
        assert_eq!(got, want);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn mapped_log_left_open_reads_to_its_zero_tail() {
        // What a killed process leaves: the preallocated chunk, zeros after the last record.
        let dir = temp_dir("killed");
        let path = dir.join("000002.log");
        let mut w = LogWriter::new(RealFs.create_log(&path).unwrap());
        w.add_record(b"one").unwrap();
        w.add_record(b"two").unwrap();
        w.flush().unwrap();
        let (got, end) = records(&path);
        assert_eq!(fs::metadata(&path).unwrap().len(), LOG_CHUNK);
        assert_eq!(end, LogEvent::End);
        assert_eq!(got, vec![b"one".to_vec(), b"two".to_vec()]);
        drop(w);
        assert_eq!(fs::metadata(&path).unwrap().len(), 2 * (7 + 3));
        let _ = fs::remove_dir_all(&dir);
    }

    /// A database whose process was killed in the middle of copying a WAL group, with the
    /// copy routine storing the group's bytes last first (as the C library's copy may, in
    /// part): for groups through the map and by `pwrite`, starting across a page boundary
    /// and a block boundary, every count of bytes the kill let through leaves a database
    /// that opens to exactly the writes before the torn one (all of it, if it was all
    /// there). Failed with "zeroed header inside the log" before the reader took the torn
    /// group as the tail.
    #[test]
    fn a_kill_in_the_middle_of_a_wal_copy_leaves_a_database_that_opens() {
        use crate::{Db, Options};
        let dir = temp_dir("killcopy");
        let mut cases = 0;
        // Starts of the torn group in the WAL (the first of them across a page boundary, the
        // rest at the end of the first block: the group then begins with a trailer).
        for start in [4096 - 1, 4096 - 150, 32768 - 3, 32768 - 40] {
            // A block trailer the group starts with (zeros, whole or not).
            let trailer = if 32768 - start % 32768 < HEADER_SIZE {
                32768 - start % 32768
            } else {
                0
            };
            for value_len in [30, 480, 600, 5000, 40_000] {
                let value: Vec<u8> = (0..value_len).map(|i| (i % 250) as u8 + 1).collect();
                // The group's length: the record framed as the log writer would at `start`.
                let payload_len =
                    12 + 1 + 1 + 4 + crate::coding::varint_len(value_len as u64) + value_len;
                let n = {
                    let mem = crate::fs::MemFs::new();
                    mem.create_dir_all(Path::new("/x")).unwrap();
                    let mut f = mem.create(Path::new("/x/log")).unwrap();
                    f.append(&vec![1; start]).unwrap();
                    let mut w = LogWriter::new(f);
                    w.add_record(&vec![0; payload_len]).unwrap();
                    w.len() as usize - start
                };
                for kept in [0, 1, 17, n / 2, n - 1, n] {
                    let (db_dir, image) = (dir.join("db"), dir.join("image"));
                    let _ = fs::remove_dir_all(&db_dir);
                    let _ = fs::remove_dir_all(&image);
                    let db = Db::open(&db_dir, Options::default()).unwrap();
                    let wal = fs::read_dir(&db_dir)
                        .unwrap()
                        .map(|e| e.unwrap().path())
                        .find(|p| p.extension().is_some_and(|x| x == "log"))
                        .unwrap();
                    let wal_len = || {
                        let data = fs::read(&wal).unwrap();
                        data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
                    };
                    // Fillers up to `start`: every byte of a filler record is non-zero at
                    // its end, so the WAL's length is its last non-zero byte.
                    let mut fillers: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
                    loop {
                        let gap = start - wal_len();
                        let key = format!("k{:05}", fillers.len()).into_bytes();
                        // A record of 7 + 12 + 1 + 1 + 6 + 1 + v bytes (v < 128): 128 at a
                        // time, then the one that ends exactly at `start`.
                        let v = if gap > 155 {
                            100
                        } else {
                            gap - HEADER_SIZE - 21
                        };
                        let val: Vec<u8> = vec![b'a' + (fillers.len() % 26) as u8; v];
                        db.put(&key, &val).unwrap();
                        fillers.push((key, val));
                        if wal_len() >= start {
                            break;
                        }
                    }
                    assert_eq!(wal_len(), start, "fillers must end at {start}");
                    KILL_AFTER.set(Some(kept));
                    let put = db.put(b"torn", &value);
                    KILL_AFTER.set(None);
                    assert_eq!(put.is_ok(), kept == n, "kept {kept} of {n}");
                    // What the killed process leaves: its files as the page cache holds them.
                    fs::create_dir_all(&image).unwrap();
                    for e in fs::read_dir(&db_dir).unwrap() {
                        let p = e.unwrap().path();
                        fs::copy(&p, image.join(p.file_name().unwrap())).unwrap();
                    }
                    drop(db);
                    let ctx =
                        format!("group at {start} ({value_len} B value, {n} B), {kept} B kept");
                    let reopened = Db::open(&image, Options::default())
                        .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                    for (k, v) in &fillers {
                        assert_eq!(reopened.get(k).unwrap().as_ref(), Some(v), "{ctx}");
                    }
                    let want = (kept + trailer >= n).then(|| value.clone());
                    assert_eq!(reopened.get(b"torn").unwrap(), want, "{ctx}");
                    drop(reopened);
                    cases += 1;
                }
            }
        }
        assert_eq!(cases, 4 * 5 * 6);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn tables_open_as_the_access_hint_says() {
        use super::super::ReadAccess;
        let dir = temp_dir("access");
        let path = dir.join("000007.sst");
        fs::write(&path, b"0123456789").unwrap();
        for (access, mapped) in [
            (ReadAccess::Mapped, true),
            (ReadAccess::MappedRandom, true),
            (ReadAccess::Positional, false),
        ] {
            let f = RealFs::new().open_with(&path, access).unwrap();
            assert_eq!(f.is_mapped(), mapped, "{access:?}");
            assert_eq!(&*f.read_shared(2, 3).unwrap(), b"234", "{access:?}");
            assert!(f.read_at(8, 3).is_err(), "{access:?}: past the end");
            // Mapping the pages in is a hint: reads are the same after it.
            f.populate();
            assert_eq!(f.read_at(0, 10).unwrap(), b"0123456789", "{access:?}");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn growing_files_keep_the_fs_contract() {
        let dir = temp_dir("growing");
        super::super::check_growing_file_contract(&RealFs::new(), &dir);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn regions_keep_the_fs_contract() {
        let dir = temp_dir("region");
        super::super::check_region_contract(&RealFs::new(), &dir);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn memory_limits_parse_as_the_kernel_writes_them() {
        assert_eq!(
            super::meminfo_total("MemTotal:       24684096 kB\nMemFree: 1 kB\n"),
            Some(24_684_096 * 1024)
        );
        assert_eq!(super::parse_limit("max\n"), None);
        assert_eq!(super::parse_limit("9223372036854771712\n"), None);
        assert_eq!(super::parse_limit("268435456\n"), Some(256 << 20));
        let v1 = "9:name=systemd:/\n4:memory:/memlimit-7\n1:cpu,cpuacct:/\n";
        assert_eq!(
            super::cgroup_limit_files(v1),
            vec![(
                "/memlimit-7",
                ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
            )]
        );
        let v2 = "0::/user.slice/a.scope\n";
        assert_eq!(
            super::cgroup_limit_files(v2),
            vec![("/user.slice/a.scope", ("/sys/fs/cgroup", "memory.max"))]
        );
        // Whatever this machine says, it says something on Linux, and no more than it has.
        #[cfg(target_os = "linux")]
        {
            let total = super::meminfo_total(&std::fs::read_to_string("/proc/meminfo").unwrap());
            let limit = super::memory_limit().unwrap();
            assert!(limit <= total.unwrap());
        }
    }

    /// A file changed within the last seconds has no identity (a timestamp tick could hide a
    /// change); an older one has, and a later change gives another.
    #[test]
    fn a_file_has_an_identity_once_settled_and_a_change_gives_another() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("strata-identity-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        std::fs::write(&path, b"abc").unwrap();
        let fs = RealFs::new();
        assert_eq!(fs.file_identity(&path), None, "just written");
        let age = |secs: u64| {
            let f = std::fs::File::options().write(true).open(&path).unwrap();
            f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(secs))
                .unwrap();
        };
        age(10);
        let first = fs.file_identity(&path).expect("settled");
        assert_eq!(fs.file_identity(&path), Some(first));
        let mut f = std::fs::File::options().append(true).open(&path).unwrap();
        f.write_all(b"d").unwrap();
        drop(f);
        assert_eq!(fs.file_identity(&path), None, "just changed");
        age(5);
        let second = fs.file_identity(&path).expect("settled");
        assert_ne!(first, second);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
