//! [`InterceptFs`]: a file system that passes every call on to another one, except the calls
//! a test takes over (file creation, opening for reads, removal, syncing a file by path), to
//! slow a file down, fail it, panic in it, or record what the engine did.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{
    FileLock, Fs, PmemRegion, RandomAccessFile, ReadAccess, SequentialFile, WritableFile,
};
use strata::Result;

/// What [`Fs::create`] does instead, given the path and the file system below.
pub type OnCreate = dyn Fn(&Path, &dyn Fs) -> Result<Box<dyn WritableFile>> + Send + Sync;
/// What [`Fs::open_with`] does instead.
pub type OnOpen =
    dyn Fn(&Path, ReadAccess, &dyn Fs) -> Result<Arc<dyn RandomAccessFile>> + Send + Sync;
/// What [`Fs::remove`] does instead.
pub type OnRemove = dyn Fn(&Path, &dyn Fs) -> Result<()> + Send + Sync;
/// What [`Fs::sync_file`] does instead.
pub type OnSyncFile = dyn Fn(&Path, &dyn Fs) -> Result<()> + Send + Sync;
/// What [`Fs::open_region`] does instead.
pub type OnOpenRegion = dyn Fn(&Path, usize, &dyn Fs) -> Result<Arc<dyn PmemRegion>> + Send + Sync;

/// Passes every call on to the file system below, but those a hook takes over.
pub struct InterceptFs {
    inner: Arc<dyn Fs>,
    on_create: Option<Box<OnCreate>>,
    on_open: Option<Box<OnOpen>>,
    on_remove: Option<Box<OnRemove>>,
    on_sync_file: Option<Box<OnSyncFile>>,
    on_open_region: Option<Box<OnOpenRegion>>,
}

impl InterceptFs {
    /// `inner`, with no call taken over yet.
    pub fn new(inner: Arc<dyn Fs>) -> Self {
        InterceptFs {
            inner,
            on_create: None,
            on_open: None,
            on_remove: None,
            on_sync_file: None,
            on_open_region: None,
        }
    }

    /// Takes over [`Fs::open_region`] (persistent-memory regions and the pages'
    /// generations).
    #[must_use]
    pub fn on_open_region(
        mut self,
        f: impl Fn(&Path, usize, &dyn Fs) -> Result<Arc<dyn PmemRegion>> + Send + Sync + 'static,
    ) -> Self {
        self.on_open_region = Some(Box::new(f));
        self
    }

    /// Takes over [`Fs::create`].
    #[must_use]
    pub fn on_create(
        mut self,
        f: impl Fn(&Path, &dyn Fs) -> Result<Box<dyn WritableFile>> + Send + Sync + 'static,
    ) -> Self {
        self.on_create = Some(Box::new(f));
        self
    }

    /// Takes over [`Fs::open_with`] (the way the engine opens tables and value files).
    #[must_use]
    pub fn on_open(
        mut self,
        f: impl Fn(&Path, ReadAccess, &dyn Fs) -> Result<Arc<dyn RandomAccessFile>>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.on_open = Some(Box::new(f));
        self
    }

    /// Takes over [`Fs::remove`].
    #[must_use]
    pub fn on_remove(
        mut self,
        f: impl Fn(&Path, &dyn Fs) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.on_remove = Some(Box::new(f));
        self
    }

    /// Takes over [`Fs::sync_file`] (how the engine syncs the manifest after letting go of
    /// the versions' lock).
    #[must_use]
    pub fn on_sync_file(
        mut self,
        f: impl Fn(&Path, &dyn Fs) -> Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.on_sync_file = Some(Box::new(f));
        self
    }
}

/// A file whose every append waits `delay` first (while its switch, if it has one, is
/// on): a flush or compaction writing it falls behind, so that a test (or the kill loop)
/// lands inside one.
pub struct SlowFile {
    inner: Box<dyn WritableFile>,
    delay: std::time::Duration,
    switch: Option<Arc<std::sync::atomic::AtomicBool>>,
}

impl SlowFile {
    /// `inner`, each append delayed by `delay`.
    pub fn new(inner: Box<dyn WritableFile>, delay: std::time::Duration) -> Self {
        SlowFile {
            inner,
            delay,
            switch: None,
        }
    }

    /// `inner`, each append delayed by `delay` while `switch` is on.
    pub fn switched(
        inner: Box<dyn WritableFile>,
        delay: std::time::Duration,
        switch: Arc<std::sync::atomic::AtomicBool>,
    ) -> Self {
        SlowFile {
            inner,
            delay,
            switch: Some(switch),
        }
    }
}

impl WritableFile for SlowFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self
            .switch
            .as_ref()
            .is_none_or(|on| on.load(std::sync::atomic::Ordering::SeqCst))
        {
            std::thread::sleep(self.delay);
        }
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
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
        match &self.on_create {
            Some(f) => f(path, &*self.inner),
            None => self.inner.create(path),
        }
    }
    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.inner.create_log(path)
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn open_with(&self, path: &Path, access: ReadAccess) -> Result<Arc<dyn RandomAccessFile>> {
        match &self.on_open {
            Some(f) => f(path, access, &*self.inner),
            None => self.inner.open_with(path, access),
        }
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
        match &self.on_remove {
            Some(f) => f(path, &*self.inner),
            None => self.inner.remove(path),
        }
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
        match &self.on_sync_file {
            Some(f) => f(path, &*self.inner),
            None => self.inner.sync_file(path),
        }
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn file_identity(&self, path: &Path) -> Option<u128> {
        self.inner.file_identity(path)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
    fn open_region(&self, path: &Path, len: usize) -> Result<Arc<dyn PmemRegion>> {
        match &self.on_open_region {
            Some(f) => f(path, len, &*self.inner),
            None => self.inner.open_region(path, len),
        }
    }
}

/// How many files in `dir` have names ending in `suffix` (`.sst`, `.log`, `.hkv`...); 0 for
/// a directory that cannot be listed.
pub fn count_files(fs: &dyn Fs, dir: &Path, suffix: &str) -> usize {
    fs.list(dir)
        .unwrap_or_default()
        .iter()
        .filter(|n| n.ends_with(suffix))
        .count()
}
