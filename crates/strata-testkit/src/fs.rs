//! [`InterceptFs`]: a file system that passes every call on to another one, except file
//! creation, which a test takes over (to slow a file down, fail it, or panic in it).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{
    FileLock, Fs, PmemRegion, RandomAccessFile, ReadAccess, SequentialFile, WritableFile,
};
use strata::Result;

/// What [`InterceptFs::create`] does instead: given the path and the file system below.
pub type OnCreate = dyn Fn(&Path, &dyn Fs) -> Result<Box<dyn WritableFile>> + Send + Sync;

/// Passes every call on to `inner`; [`Fs::create`] goes through the test's `on_create`.
pub struct InterceptFs {
    inner: Arc<dyn Fs>,
    on_create: Box<OnCreate>,
}

impl InterceptFs {
    /// `inner` with its `create` replaced by `on_create`.
    pub fn new(
        inner: Arc<dyn Fs>,
        on_create: impl Fn(&Path, &dyn Fs) -> Result<Box<dyn WritableFile>> + Send + Sync + 'static,
    ) -> Self {
        InterceptFs {
            inner,
            on_create: Box::new(on_create),
        }
    }
}

impl fmt::Debug for InterceptFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InterceptFs")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl Fs for InterceptFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        (self.on_create)(path, &*self.inner)
    }
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.inner.create_log(path)
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn open_with(&self, path: &Path, access: ReadAccess) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open_with(path, access)
    }
    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.inner.open_sequential(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn sync_file(&self, path: &Path) -> Result<()> {
        self.inner.sync_file(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
    fn open_region(&self, path: &Path, len: usize) -> Result<Arc<dyn PmemRegion>> {
        self.inner.open_region(path, len)
    }
}
