//! [`RealFs`]: the operating system's file system. The only module that touches `std::fs`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FileLock, Fs, RandomAccessFile, SequentialFile, WritableFile};
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

struct RealWritable {
    path: PathBuf,
    file: File,
    buf: Vec<u8>,
    len: u64,
}

impl RealWritable {
    fn write_out(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.file
                .write_all(&self.buf)
                .map_err(|e| Error::io("write", &self.path, e))?;
            self.buf.clear();
        }
        Ok(())
    }
}

impl WritableFile for RealWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.len += data.len() as u64;
        if self.buf.len() + data.len() > WRITE_BUFFER {
            self.write_out()?;
            if data.len() > WRITE_BUFFER {
                return self
                    .file
                    .write_all(data)
                    .map_err(|e| Error::io("write", &self.path, e));
            }
        }
        self.buf.extend_from_slice(data);
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

    fn len(&self) -> u64 {
        self.len
    }
}

struct RealRandom {
    path: PathBuf,
    file: File,
    size: u64,
}

impl RandomAccessFile for RealRandom {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        super::checked_range(
            &self.path,
            offset,
            len,
            usize::try_from(self.size).unwrap_or(usize::MAX),
        )?;
        let mut buf = vec![0u8; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| Error::io("read", &self.path, e))?;
        Ok(buf)
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// A table file read through a read-only memory map: a block read is a copy out of the page
/// cache, with no system call (LevelDB and RocksDB read tables this way too). Sound because
/// table files are never modified after they are written (only unlinked, which keeps the
/// mapping valid).
struct MappedRandom {
    path: PathBuf,
    map: Arc<memmap2::Mmap>,
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

    fn size(&self) -> u64 {
        self.map.len() as u64
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
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
        let size = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        if size > 0 && path.extension().is_some_and(|e| e == "sst") {
            // SAFETY: tables are immutable once written (see `MappedRandom`); a file changed
            // by someone else under us is outside the engine's contract, as for LevelDB.
            if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
                return Ok(Arc::new(MappedRandom {
                    path: path.to_path_buf(),
                    map: Arc::new(map),
                }));
            }
        }
        Ok(Arc::new(RealRandom {
            path: path.to_path_buf(),
            file,
            size,
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

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io("mkdir", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let f = File::open(dir).map_err(|e| Error::io("open dir", dir, e))?;
        f.sync_all().map_err(|e| Error::io("fsync dir", dir, e))
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path)
            .map_err(|e| Error::io("stat", path, e))?
            .len())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io("open lock", path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(RealLock { _file: file })),
            Err(fs::TryLockError::WouldBlock) => Err(Error::new(
                crate::ErrorKind::Busy,
                format!("{}: database is locked by another process", path.display()),
            )),
            Err(fs::TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
        }
    }
}
