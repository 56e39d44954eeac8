//! Persistent memory as a layout uses it: one region (`Fs::open_region`) cut into pages of
//! [`PAGE`] bytes, handed out by a page table that counts, for each page, the holders that
//! may still read it (docs/design/matrixkv.md, "The matrix layout").
//!
//! A page is free when nothing holds it: no layout of a live version names it and no writer
//! has reserved it. A page that an edit stopped naming stays held while older versions
//! (readers, iterators, a running compaction) keep the layout that names it: MatrixKV's
//! lazy deletion, with the versions as the reference counts. Nothing of the table is
//! persisted: the manifest's layout record names every page in use, and the table is
//! rebuilt from it at open.
//!
//! Read-only views of a live database (`Db::open_read_only`, other processes) hold no
//! pages: the writer reuses pages their manifest still names. Each page has a generation
//! in a file beside the region (`pages.gen`, docs/format/pmem_generations.md)
//! that the writer bumps when it hands the page out, before anything is written to it; a
//! view takes the generations before it reads the manifest and checks, after each read,
//! that the pages it read from still have them ([`ErrorKind::Stale`] otherwise).

use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, ErrorKind, Result};
use crate::fs::{Fs, PmemRegion};

/// Bytes of a page: the unit rows are written in and freed by.
pub(crate) const PAGE: usize = 4096;

/// A run of consecutive pages: `(first page, pages)`.
pub(crate) type Run = (u32, u32);

/// The pages' generations, in the persistent-memory directory beside the region.
const GENERATIONS_NAME: &str = "pages.gen";

/// The pages' generations file in persistent-memory directory `dir`.
fn generations_path(dir: &Path) -> PathBuf {
    dir.join(GENERATIONS_NAME)
}

/// A generation per page of a region: a `u32` each, little-endian, in a file of its own
/// (docs/format/pmem_generations.md). Shared by the processes that map it: the writer
/// bumps a page's generation when it hands the page out, views compare.
struct Generations {
    file: GenerationsFile,
}

/// How a process reaches the generations: mapped (the writer, and a view that may map the
/// file), or read through the file system (a view without write permission on it: the
/// kernel's page cache is the one the writer's map stores into).
enum GenerationsFile {
    Mapped(Arc<dyn PmemRegion>),
    Read(Arc<dyn crate::fs::RandomAccessFile>),
}

impl Generations {
    /// The file at `path` for `pages` pages: created zeroed if `create` and missing, or
    /// made again if it is of another size (a region of another size before); `None`
    /// when not `create` and it is missing or of another size.
    ///
    /// A file made here is made whole under a temporary name and renamed into place: a
    /// process killed while making it leaves no file of the wrong size under the name,
    /// which would make every view `Stale` until the next writable open.
    fn open(fs: &dyn Fs, path: &Path, pages: usize, create: bool) -> Result<Option<Self>> {
        let len = pages * 4;
        match fs.file_size(path) {
            Ok(size) if size == len as u64 => {}
            Ok(_) | Err(_) if create => {
                let temp = crate::fs::temp_path(path);
                if fs.exists(&temp) {
                    fs.remove(&temp)?;
                }
                let file = fs.open_region(&temp, len)?;
                fs.rename(&temp, path)?;
                return Ok(Some(Generations {
                    file: GenerationsFile::Mapped(file),
                }));
            }
            Ok(_) | Err(_) => return Ok(None),
        }
        let file = match fs.open_region(path, len) {
            Ok(file) => GenerationsFile::Mapped(file),
            // A view that may not map the file read-write reads it.
            Err(_) if !create => GenerationsFile::Read(fs.open(path)?),
            Err(e) => return Err(e),
        };
        Ok(Some(Generations { file }))
    }

    /// Page `page`'s generation.
    fn get(&self, page: usize) -> Result<u32> {
        let region = match &self.file {
            GenerationsFile::Mapped(region) => region,
            GenerationsFile::Read(file) => {
                let b = file.read_at(page as u64 * 4, 4)?;
                let b: [u8; 4] = b[..].try_into().map_err(|_| {
                    Error::corrupt("pages' generations: a short read of a generation")
                })?;
                return Ok(u32::from_le_bytes(b));
            }
        };
        match region.atomic_u32(page * 4) {
            Some(a) => Ok(a.load(Ordering::Acquire)),
            None => {
                let mut b = [0u8; 4];
                region.read_into(page * 4, &mut b)?;
                Ok(u32::from_le_bytes(b))
            }
        }
    }

    /// Moves page `page` to its next generation; anything written to the page afterwards
    /// is seen by other processes only after the new generation is.
    fn bump(&self, page: usize) -> Result<()> {
        let GenerationsFile::Mapped(region) = &self.file else {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "pages' generations opened for reading only",
            ));
        };
        match region.atomic_u32(page * 4) {
            // (Acquire and release: the page's later writes stay after it.)
            Some(a) => {
                a.fetch_add(1, Ordering::AcqRel);
            }
            None => {
                let g = self.get(page)?.wrapping_add(1);
                // SAFETY: only the writing process writes these bytes, and it bumps a page
                // under the page table's lock, one page at a time; readers of a region
                // without atomics (an in-memory file system) are in this process and go
                // through the same file system's lock.
                unsafe { region.write_at(page * 4, &g.to_le_bytes())? };
            }
        }
        fence(Ordering::SeqCst);
        Ok(())
    }
}

/// What a read-only view took of the pages' generations before it read the manifest.
pub(crate) struct ViewStart(Start);

enum Start {
    /// Every page's generation, as the file held them.
    Taken { gens: Generations, seen: Vec<u32> },
    /// No file, or an empty one (an older build killed while making it): no writer of this
    /// build has had the region since the file was last made, so none handed a page out
    /// unseen. One that opens makes the file before it hands out any page: from then on
    /// the view can vouch for none.
    Unmade { fs: Arc<dyn Fs>, path: PathBuf },
}

impl std::fmt::Debug for ViewStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Start::Taken { seen, .. } => f
                .debug_struct("ViewStart")
                .field("pages", &seen.len())
                .finish_non_exhaustive(),
            Start::Unmade { path, .. } => {
                f.debug_struct("ViewStart").field("unmade", path).finish()
            }
        }
    }
}

impl ViewStart {
    /// The generations in `dir` as they are now (`Unmade` when there is no file, or an
    /// empty one); `None` when they cannot be read (a view then checks nothing, as views of
    /// older builds did).
    pub fn take(fs: &Arc<dyn Fs>, dir: &Path) -> Option<Arc<ViewStart>> {
        let path = generations_path(dir);
        let size = fs.file_size(&path).unwrap_or(0);
        let pages = usize::try_from(size / 4).ok()?;
        if pages == 0 {
            return Some(Arc::new(ViewStart(Start::Unmade {
                fs: fs.clone(),
                path,
            })));
        }
        let gens = Generations::open(&**fs, &path, pages, false).ok()??;
        let seen = (0..pages)
            .map(|p| gens.get(p))
            .collect::<Result<Vec<u32>>>()
            .ok()?;
        Some(Arc::new(ViewStart(Start::Taken { gens, seen })))
    }

    /// Whether page `page` was handed out since the view took the generations (or lies
    /// past them): the view's manifest may name a row written on it meanwhile, whose reads
    /// would all fail, or a row whose page went to another since. (Without generations:
    /// whether a writer of this build made them since, after which any page may have.)
    fn moved(&self, page: usize) -> bool {
        match &self.0 {
            Start::Taken { gens, seen } => {
                let seen = seen.get(page).copied();
                seen.is_none() || gens.get(page).ok() != seen
            }
            Start::Unmade { fs, path } => fs.file_size(path).is_ok_and(|s| s > 0),
        }
    }

    /// The first of `pages` handed out since the view started, if any. (Without
    /// generations, one look at the file answers for every page.)
    fn first_moved(&self, mut pages: impl Iterator<Item = usize>) -> Option<usize> {
        match &self.0 {
            Start::Taken { .. } => pages.find(|&p| self.moved(p)),
            Start::Unmade { .. } => pages.next().filter(|&p| self.moved(p)),
        }
    }

    /// Whether the pages under `offset..offset + len` of the region still hold what they
    /// held when the view started; called after the bytes were copied.
    fn check(&self, path: &Path, offset: usize, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        fence(Ordering::Acquire);
        // (A page past the generations the view took: it took them while the writer was
        // creating the file, so it cannot vouch for any page.)
        match self.first_moved(offset / PAGE..=(offset + len - 1) / PAGE) {
            None => Ok(()),
            Some(page) => Err(Error::new(
                ErrorKind::Stale,
                format!(
                    "{}: page {page} was reused by the process writing the database since \
                     this read-only view opened (its L0 moved on): open a new view to read \
                     the database as it is now",
                    path.display()
                ),
            )),
        }
    }
}

/// A region as a read-only view reads it: every read checked against the generations the
/// view started with, nothing read in place, nothing written.
struct ViewRegion {
    inner: Arc<dyn PmemRegion>,
    start: Arc<ViewStart>,
    path: PathBuf,
}

impl PmemRegion for ViewRegion {
    fn len(&self) -> usize {
        self.inner.len()
    }

    unsafe fn write_at(&self, _offset: usize, _data: &[u8]) -> Result<()> {
        Err(Error::new(
            ErrorKind::NotSupported,
            "a read-only view writes no persistent memory",
        ))
    }

    fn read_at(&self, offset: usize, len: usize) -> Result<Vec<u8>> {
        let out = self.inner.read_at(offset, len)?;
        self.start.check(&self.path, offset, len)?;
        Ok(out)
    }

    fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<()> {
        self.inner.read_into(offset, out)?;
        self.start.check(&self.path, offset, out.len())
    }

    fn persist(&self, _offset: usize, _len: usize) -> Result<()> {
        Ok(())
    }
}

/// How many holders each page has.
#[derive(Debug)]
pub(crate) struct PageTable {
    refs: Vec<u32>,
    free: usize,
    /// Where the next allocation starts looking (first fit from here, wrapping).
    hint: usize,
}

impl PageTable {
    fn new(pages: usize) -> Self {
        PageTable {
            refs: vec![0; pages],
            free: pages,
            hint: 0,
        }
    }

    fn hold(&mut self, runs: &[Run]) -> Result<()> {
        for &(start, len) in runs {
            let end = start as usize + len as usize;
            if end > self.refs.len() {
                return Err(Error::corrupt(format!(
                    "pages {start}..{end} are past the region's {} pages",
                    self.refs.len()
                )));
            }
        }
        for &(start, len) in runs {
            for r in &mut self.refs[start as usize..(start + len) as usize] {
                if *r == 0 {
                    self.free -= 1;
                }
                *r += 1;
            }
        }
        Ok(())
    }

    fn release(&mut self, runs: &[Run]) {
        for &(start, len) in runs {
            for r in &mut self.refs[start as usize..(start + len) as usize] {
                debug_assert!(*r > 0, "page released more often than held");
                *r = r.saturating_sub(1);
                if *r == 0 {
                    self.free += 1;
                }
            }
        }
    }

    /// One free page, now held once; `None` if every page is held.
    fn allocate(&mut self) -> Option<u32> {
        if self.free == 0 {
            return None;
        }
        let n = self.refs.len();
        let at = (0..n)
            .map(|i| (self.hint + i) % n)
            .find(|&i| self.refs[i] == 0)?;
        self.refs[at] = 1;
        self.free -= 1;
        self.hint = (at + 1) % n;
        Some(at as u32)
    }
}

/// A region and its page table, shared by every layout of one database.
pub(crate) struct Pages {
    fs: Arc<dyn Fs>,
    path: PathBuf,
    len: usize,
    region: OnceLock<Arc<dyn PmemRegion>>,
    table: Mutex<PageTable>,
    /// The table's free count as of its last change (read on every write group, which
    /// should not take the table's lock: `Level0::admits`).
    free: std::sync::atomic::AtomicUsize,
    /// An existing region shorter than `len` is opened as long as it is (repair).
    salvage: bool,
    /// The pages' generations, bumped as pages are handed out (opened on first use; `None`
    /// for a view or a repair, which hand out none).
    gens: OnceLock<Option<Generations>>,
    /// A read-only view's start: every read of the region is checked against it.
    view: Option<Arc<ViewStart>>,
}

impl std::fmt::Debug for Pages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pages")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// The existing region at `path`, recorded as `len` bytes, opened to read what it holds:
/// as long as the file is if it was cut short (a copy or a restore that stopped, a file
/// system that ran out of room), so the rows within it are read and each row past its end
/// fails on its own (repair and `check`; an open refuses such a region).
///
/// # Errors
/// I/O errors of the file system.
pub(crate) fn open_cut_short(
    fs: &dyn Fs,
    path: &std::path::Path,
    len: usize,
) -> Result<Arc<dyn PmemRegion>> {
    let size = usize::try_from(fs.file_size(path)?).unwrap_or(usize::MAX);
    fs.open_region(path, len.min(size))
}

impl Pages {
    /// The pages of a region of `len` bytes (a whole number of pages) at `path`, opened
    /// when first read or written.
    pub fn new(fs: Arc<dyn Fs>, path: PathBuf, len: usize) -> Self {
        Pages {
            fs,
            path,
            len,
            region: OnceLock::new(),
            table: Mutex::new(PageTable::new(len / PAGE)),
            free: std::sync::atomic::AtomicUsize::new(len / PAGE),
            salvage: false,
            gens: OnceLock::new(),
            view: None,
        }
    }

    /// These pages, as a read-only view that took `start` before it read the manifest
    /// reads them (`None`: no generations to check).
    pub fn viewing(mut self, start: Option<Arc<ViewStart>>) -> Self {
        self.view = start;
        self.gens = OnceLock::from(None);
        self
    }

    /// For a read-only view: whether pages `first..first + n` still have the generations
    /// the view took before it read the manifest (the pages of a row that manifest names).
    ///
    /// # Errors
    /// `Stale` when one was handed out since.
    pub fn check_view(&self, first: u32, n: u32) -> Result<()> {
        let Some(start) = &self.view else {
            return Ok(());
        };
        match start.first_moved((first..first + n).map(|p| p as usize)) {
            None => Ok(()),
            Some(p) => Err(Error::new(
                ErrorKind::Stale,
                format!(
                    "{}: page {p}, of a row the manifest names, was handed out while this \
                     read-only view read the manifest",
                    self.path.display()
                ),
            )),
        }
    }

    /// Opens (or creates) the generations a writing process bumps, before it hands out
    /// any page: a view that started without them answers `Stale` from then on.
    ///
    /// # Errors
    /// I/O errors creating the file.
    pub fn start_generations(&self) -> Result<()> {
        self.generations().map(|_| ())
    }

    /// Where the pages' generations are: beside the region.
    pub fn generations_path(&self) -> PathBuf {
        generations_path(self.path.parent().unwrap_or(Path::new(".")))
    }

    /// The generations this process bumps, opened (or created) on first use. (A view's and
    /// a repair's pages are made with none: `viewing`, `salvaging`.)
    fn generations(&self) -> Result<Option<&Generations>> {
        if let Some(g) = self.gens.get() {
            return Ok(g.as_ref());
        }
        let path = self.generations_path();
        let g = Generations::open(&*self.fs, &path, self.pages(), true).map_err(|e| {
            e.context(format!(
                "creating {} (4 bytes per page of the region: what read-only views check \
                 the pages they read against)",
                path.display()
            ))
        })?;
        Ok(self.gens.get_or_init(|| g).as_ref())
    }

    /// These pages, for repair: an existing region shorter than `len` (a file cut short)
    /// is opened as long as it is, and reads past its end fail, instead of the open.
    pub fn salvaging(mut self) -> Self {
        self.salvage = true;
        self.gens = OnceLock::from(None);
        self
    }

    /// The file system the region is in.
    pub fn fs(&self) -> &Arc<dyn Fs> {
        &self.fs
    }

    /// Where the region's file is.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// The region's size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Pages of the region.
    pub fn pages(&self) -> usize {
        self.len / PAGE
    }

    /// Pages nothing holds.
    pub fn free(&self) -> usize {
        self.free.load(std::sync::atomic::Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PageTable> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `f` on the locked table, then publishes its free count.
    fn change<T>(&self, f: impl FnOnce(&mut PageTable) -> T) -> T {
        let mut table = self.lock();
        let out = f(&mut table);
        self.free
            .store(table.free, std::sync::atomic::Ordering::Release);
        out
    }

    /// The region, opened (or created, zero-filled, with its directory synced) on first use.
    /// `must_exist`: its pages hold recorded data, so a missing region is corruption.
    ///
    /// # Errors
    /// I/O errors; `Corruption` when `must_exist` and the region is missing.
    pub fn region(&self, must_exist: bool) -> Result<&Arc<dyn PmemRegion>> {
        if let Some(r) = self.region.get() {
            return Ok(r);
        }
        let existed = self.fs.exists(&self.path);
        if must_exist && !existed {
            return Err(Error::corrupt(format!(
                "{}: the persistent-memory region the manifest's L0 layout names is missing \
                 (open with the pmem_dir the database was created with)",
                self.path.display()
            )));
        }
        let r = if self.salvage && existed {
            open_cut_short(&*self.fs, &self.path, self.len)?
        } else {
            self.fs.open_region(&self.path, self.len)?
        };
        if !existed {
            if let Some(dir) = self.path.parent() {
                self.fs.sync_dir(dir)?;
            }
        }
        let r = match &self.view {
            Some(start) => Arc::new(ViewRegion {
                inner: r,
                start: start.clone(),
                path: self.path.clone(),
            }),
            None => r,
        };
        Ok(self.region.get_or_init(|| r))
    }

    /// Holds `runs` for as long as the returned guard lives.
    ///
    /// # Errors
    /// `Corruption` for pages past the region's end.
    pub fn hold(self: &Arc<Self>, runs: Vec<Run>) -> Result<Held> {
        self.change(|t| t.hold(&runs))?;
        Ok(Held {
            pages: self.clone(),
            runs,
        })
    }

    /// One free page, held by `into` from now on.
    ///
    /// # Errors
    /// `NoSpace` when every page is held.
    pub fn allocate(&self, into: &mut Held) -> Result<u32> {
        let gens = self.generations()?;
        let page = self.change(PageTable::allocate).ok_or_else(|| {
            Error::new(
                ErrorKind::NoSpace,
                format!(
                    "{}: every page of the persistent-memory region is in use",
                    self.path.display()
                ),
            )
        })?;
        match into.runs.last_mut() {
            Some((start, len)) if *start + *len == page => *len += 1,
            _ => into.runs.push((page, 1)),
        }
        // Before anything is written to it: a view that reads the page after this sees
        // the new generation.
        if let Some(g) = gens {
            g.bump(page as usize)?;
        }
        Ok(page)
    }
}

/// Pages held while this lives (a layout's, a writer's reservation).
#[derive(Debug)]
pub(crate) struct Held {
    pages: Arc<Pages>,
    runs: Vec<Run>,
}

impl Held {
    /// A guard holding nothing yet (a writer's, before it allocates).
    pub fn empty(pages: &Arc<Pages>) -> Self {
        Held {
            pages: pages.clone(),
            runs: Vec::new(),
        }
    }

    /// The runs held.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.pages.change(|t| t.release(&self.runs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn pages_are_free_once_no_holder_is_left() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        fs.create_dir_all(std::path::Path::new("/p")).unwrap();
        let pages = Arc::new(Pages::new(fs, PathBuf::from("/p/r"), 8 * PAGE));
        let mut w = Held::empty(&pages);
        for _ in 0..3 {
            pages.allocate(&mut w).unwrap();
        }
        assert_eq!(w.runs(), &[(0, 3)]);
        assert_eq!(pages.free(), 5);
        // A second holder of the same pages (a newer version's layout) keeps them after
        // the first lets go.
        let layout = pages.hold(w.runs().to_vec()).unwrap();
        drop(w);
        assert_eq!(pages.free(), 5);
        let mut w2 = Held::empty(&pages);
        for _ in 0..5 {
            pages.allocate(&mut w2).unwrap();
        }
        assert_eq!(w2.runs(), &[(3, 5)]);
        assert_eq!(
            pages.allocate(&mut w2).unwrap_err().kind(),
            ErrorKind::NoSpace
        );
        drop(layout);
        assert_eq!(pages.free(), 3);
        assert!(pages.hold(vec![(7, 2)]).is_err(), "past the end");
    }
}
