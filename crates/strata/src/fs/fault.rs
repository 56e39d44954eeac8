//! [`FaultFs`]: wraps a file system and injects I/O errors by op kind and path.
//!
//! Rules are matched in order against each operation; a rule can let its first `skip`
//! matches through, then fail the next `times` (or all) of them. Counters of every op kind
//! are kept so a test can first count the ops of a workload, then sweep a failure across
//! each of them. Over a [`MemFs`], [`FaultFs::crash_clone`] also simulates a power cut.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::{
    CrashMode, FileLock, Fs, MemFs, PmemRegion, RandomAccessFile, SequentialFile, WritableFile,
};
use crate::error::{Error, Result};

/// The kinds of operation a rule can target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FsOp {
    /// `Fs::create`, `Fs::create_log`, `Fs::open_region`.
    Create,
    /// `Fs::open` and `Fs::open_sequential`.
    Open,
    /// Reads through an open file.
    Read,
    /// `WritableFile::append` and `flush`; `PmemRegion::write_at`.
    Append,
    /// `WritableFile::sync`; `PmemRegion::persist`.
    Sync,
    /// `Fs::sync_dir`.
    SyncDir,
    /// `Fs::rename`.
    Rename,
    /// `Fs::remove`.
    Remove,
    /// `Fs::list`, `create_dir_all`, `file_size`, `lock`.
    Meta,
}

/// One injected failure.
#[derive(Debug, Clone)]
pub struct FaultRule {
    /// Which op kind fails.
    pub op: FsOp,
    /// Only paths containing this substring match ("" matches all).
    pub path_contains: String,
    /// Let this many matching ops succeed first.
    pub skip: u64,
    /// Fail this many matching ops after the skipped ones; `None` fails all later ones.
    pub times: Option<u64>,
    /// The `io::ErrorKind` reported (`StorageFull` models ENOSPC, `Other` models EIO).
    pub error: std::io::ErrorKind,
}

impl FaultRule {
    /// Fails every `op` on every path with EIO from now on.
    pub fn always(op: FsOp) -> Self {
        FaultRule {
            op,
            path_contains: String::new(),
            skip: 0,
            times: None,
            error: std::io::ErrorKind::Other,
        }
    }

    /// Fails the `n`-th (0-based) matching `op` once, with `error`.
    pub fn nth(op: FsOp, n: u64, error: std::io::ErrorKind) -> Self {
        FaultRule {
            op,
            path_contains: String::new(),
            skip: n,
            times: Some(1),
            error,
        }
    }

    /// Restricts the rule to paths containing `s`.
    #[must_use]
    pub fn on_paths(mut self, s: &str) -> Self {
        self.path_contains = s.to_string();
        self
    }
}

#[derive(Debug, Default)]
struct Faults {
    rules: Vec<(FaultRule, u64)>,
    counts: HashMap<FsOp, u64>,
    injected: u64,
}

#[derive(Debug)]
struct Shared {
    inner: Arc<dyn Fs>,
    mem: Option<MemFs>,
    faults: Mutex<Faults>,
}

impl Shared {
    fn check(&self, op: FsOp, path: &Path) -> Result<()> {
        let mut f = self
            .faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *f.counts.entry(op).or_default() += 1;
        let p = path.to_string_lossy();
        let mut fail = None;
        for (rule, seen) in &mut f.rules {
            if rule.op != op || !p.contains(&rule.path_contains) {
                continue;
            }
            *seen += 1;
            let n = *seen - 1;
            if n >= rule.skip && rule.times.is_none_or(|t| n < rule.skip + t) {
                fail = Some(rule.error);
                break;
            }
        }
        match fail {
            Some(kind) => {
                f.injected += 1;
                Err(Error::io(
                    &format!("{op:?} (injected)"),
                    path,
                    std::io::Error::new(kind, "injected fault"),
                ))
            }
            None => Ok(()),
        }
    }
}

/// A fault-injecting file system. Cheap to clone (shared rules and counters).
#[derive(Debug, Clone)]
pub struct FaultFs {
    shared: Arc<Shared>,
}

impl FaultFs {
    /// Wraps an in-memory file system; crashes can be simulated.
    pub fn new(mem: MemFs) -> Self {
        FaultFs {
            shared: Arc::new(Shared {
                inner: Arc::new(mem.clone()),
                mem: Some(mem),
                faults: Mutex::default(),
            }),
        }
    }

    /// Wraps any file system (e.g. the real one); `crash_clone` is then unavailable.
    pub fn wrap(inner: Arc<dyn Fs>) -> Self {
        FaultFs {
            shared: Arc::new(Shared {
                inner,
                mem: None,
                faults: Mutex::default(),
            }),
        }
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.shared
            .faults
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds a rule.
    pub fn inject(&self, rule: FaultRule) {
        self.faults().rules.push((rule, 0));
    }

    /// Removes every rule (counters stay).
    pub fn clear(&self) {
        self.faults().rules.clear();
    }

    /// How many ops of `op` were attempted so far.
    pub fn count(&self, op: FsOp) -> u64 {
        self.faults().counts.get(&op).copied().unwrap_or(0)
    }

    /// How many errors were injected so far.
    pub fn injected(&self) -> u64 {
        self.faults().injected
    }

    /// The underlying in-memory file system, if any.
    pub fn mem(&self) -> Option<&MemFs> {
        self.shared.mem.as_ref()
    }

    /// A fresh, rule-free `FaultFs` over the post-crash image of the wrapped [`MemFs`].
    ///
    /// # Panics
    /// If this `FaultFs` wraps something other than a `MemFs` (a test-setup mistake).
    pub fn crash_clone(&self, mode: CrashMode) -> FaultFs {
        let mem = self
            .shared
            .mem
            .as_ref()
            .expect("crash_clone needs a FaultFs over a MemFs");
        FaultFs::new(mem.crash_clone(mode))
    }
}

/// A sync handle that injects faults as [`FaultWritable::sync`] does.
struct FaultSync {
    shared: Arc<Shared>,
    path: std::path::PathBuf,
    inner: Box<dyn crate::fs::SyncHandle>,
}

impl crate::fs::SyncHandle for FaultSync {
    fn sync(&self) -> Result<()> {
        self.shared.check(FsOp::Sync, &self.path)?;
        self.inner.sync()
    }
}

struct FaultWritable {
    shared: Arc<Shared>,
    path: std::path::PathBuf,
    inner: Box<dyn WritableFile>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.shared.check(FsOp::Append, &self.path)?;
        self.inner.append(data)
    }

    fn flush(&mut self) -> Result<()> {
        self.shared.check(FsOp::Append, &self.path)?;
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        self.shared.check(FsOp::Sync, &self.path)?;
        self.inner.sync()
    }

    fn sync_handle(&mut self) -> Result<Option<Box<dyn crate::fs::SyncHandle>>> {
        self.shared.check(FsOp::Append, &self.path)?;
        Ok(self.inner.sync_handle()?.map(|inner| {
            Box::new(FaultSync {
                shared: self.shared.clone(),
                path: self.path.clone(),
                inner,
            }) as Box<dyn crate::fs::SyncHandle>
        }))
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    fn mapped_bytes(&self) -> u64 {
        self.inner.mapped_bytes()
    }
}

struct FaultRandom {
    shared: Arc<Shared>,
    path: std::path::PathBuf,
    inner: Arc<dyn RandomAccessFile>,
}

impl RandomAccessFile for FaultRandom {
    fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        self.shared.check(FsOp::Read, &self.path)?;
        self.inner.read_at(offset, len)
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

struct FaultSequential {
    shared: Arc<Shared>,
    path: std::path::PathBuf,
    inner: Box<dyn SequentialFile>,
}

impl SequentialFile for FaultSequential {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize> {
        self.shared.check(FsOp::Read, &self.path)?;
        self.inner.read(buf)
    }
}

impl FaultFs {
    /// Checks the `Create` rules for `path`, then wraps what `create` makes of it in the
    /// inner file system.
    fn create_with(
        &self,
        path: &Path,
        create: impl FnOnce(&dyn Fs) -> Result<Box<dyn WritableFile>>,
    ) -> Result<Box<dyn WritableFile>> {
        self.shared.check(FsOp::Create, path)?;
        let inner = create(&*self.shared.inner)?;
        Ok(Box::new(FaultWritable {
            shared: self.shared.clone(),
            path: path.to_path_buf(),
            inner,
        }))
    }
}

impl Fs for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_with(path, |fs| fs.create(path))
    }

    fn create_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create_with(path, |fs| fs.create_log(path))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_with(path, super::ReadAccess::default())
    }

    fn open_with(
        &self,
        path: &Path,
        access: super::ReadAccess,
    ) -> Result<Arc<dyn RandomAccessFile>> {
        self.shared.check(FsOp::Open, path)?;
        let inner = self.shared.inner.open_with(path, access)?;
        Ok(Arc::new(FaultRandom {
            shared: self.shared.clone(),
            path: path.to_path_buf(),
            inner,
        }))
    }

    fn open_sequential(&self, path: &Path) -> Result<Box<dyn SequentialFile>> {
        self.shared.check(FsOp::Open, path)?;
        let inner = self.shared.inner.open_sequential(path)?;
        Ok(Box::new(FaultSequential {
            shared: self.shared.clone(),
            path: path.to_path_buf(),
            inner,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.shared.inner.exists(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.shared.check(FsOp::Meta, dir)?;
        self.shared.inner.list(dir)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        self.shared.check(FsOp::Remove, path)?;
        self.shared.inner.remove(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.shared.check(FsOp::Rename, to)?;
        self.shared.inner.rename(from, to)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.shared.check(FsOp::Meta, dir)?;
        self.shared.inner.create_dir_all(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.shared.check(FsOp::SyncDir, dir)?;
        self.shared.inner.sync_dir(dir)
    }

    fn sync_file(&self, path: &Path) -> Result<()> {
        self.shared.check(FsOp::Sync, path)?;
        self.shared.inner.sync_file(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        self.shared.check(FsOp::Meta, path)?;
        self.shared.inner.file_size(path)
    }

    fn file_identity(&self, path: &Path) -> Option<u128> {
        self.shared.check(FsOp::Meta, path).ok()?;
        self.shared.inner.file_identity(path)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.shared.check(FsOp::Meta, path)?;
        self.shared.inner.lock(path)
    }

    fn open_region(&self, path: &Path, len: usize) -> Result<Arc<dyn PmemRegion>> {
        self.shared.check(FsOp::Create, path)?;
        let inner = self.shared.inner.open_region(path, len)?;
        Ok(Arc::new(FaultRegion {
            shared: self.shared.clone(),
            path: path.to_path_buf(),
            inner,
        }))
    }
}

/// A region whose writes and persists can fail (a failed persist persists nothing; a
/// failed write writes nothing).
struct FaultRegion {
    shared: Arc<Shared>,
    path: std::path::PathBuf,
    inner: Arc<dyn PmemRegion>,
}

impl PmemRegion for FaultRegion {
    fn len(&self) -> usize {
        self.inner.len()
    }

    unsafe fn write_at(&self, offset: usize, data: &[u8]) -> Result<()> {
        self.shared.check(FsOp::Append, &self.path)?;
        // SAFETY: the caller's guarantee, passed on.
        unsafe { self.inner.write_at(offset, data) }
    }

    fn read_at(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        self.shared.check(FsOp::Read, &self.path)?;
        self.inner.read_at(offset, len)
    }

    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.shared.check(FsOp::Read, &self.path)?;
        self.inner.read_into(offset, out)
    }

    fn persist(&self, offset: usize, len: usize) -> Result<()> {
        self.shared.check(FsOp::Sync, &self.path)?;
        self.inner.persist(offset, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn region_persists_and_writes_fail_as_injected() {
        let fs = FaultFs::new(MemFs::new());
        fs.create_dir_all(Path::new("/pm")).unwrap();
        super::super::check_region_contract(&fs, Path::new("/pm"));
        let r = fs.open_region(Path::new("/pm/1.pmem"), 128).unwrap();
        fs.inject(FaultRule::nth(FsOp::Sync, 0, std::io::ErrorKind::Other).on_paths(".pmem"));
        // SAFETY: no other thread uses the region.
        unsafe { r.write_at(0, b"x").unwrap() };
        assert_eq!(r.persist(0, 1).unwrap_err().kind(), ErrorKind::Io);
        r.persist(0, 1).unwrap();
        fs.inject(FaultRule::always(FsOp::Append));
        // SAFETY: as above.
        assert!(unsafe { r.write_at(1, b"y") }.is_err());
        assert_eq!(
            r.read_at(0, 2).unwrap(),
            b"x\0",
            "a failed write writes nothing"
        );
    }

    #[test]
    fn nth_rule_fails_once() {
        let fs = FaultFs::new(MemFs::new());
        fs.create_dir_all(Path::new("/d")).unwrap();
        fs.inject(
            FaultRule::nth(FsOp::Create, 1, std::io::ErrorKind::StorageFull).on_paths(".sst"),
        );
        fs.create(Path::new("/d/1.sst")).unwrap();
        fs.create(Path::new("/d/2.log")).unwrap();
        let e = fs.create(Path::new("/d/3.sst")).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::Io);
        assert_eq!(e.io_kind(), Some(std::io::ErrorKind::StorageFull));
        fs.create(Path::new("/d/4.sst")).unwrap();
        assert_eq!(fs.injected(), 1);
        assert_eq!(fs.count(FsOp::Create), 4);
    }
}
