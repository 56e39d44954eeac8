//! Reading value files, for every store: one cache of open handles, each file opened the
//! way its store says (`Store::read_access`), records checked by their store
//! (`Store::pointer_fits`, `Store::value_of`), and a scan's next records read ahead as
//! ranges.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};

use crate::cache::IntBuild;
use crate::error::{Error, Result};
use crate::fs::{Fs, RandomAccessFile};
use crate::placement::Placement;
use crate::vstore::{ValueFile, ValuePointer};

/// Records closer than this in one file are read ahead as one range (the gap read with them).
const READ_AHEAD_GAP: u64 = 4096;

/// An open value file and its path (kept, not formatted again per read: the path was
/// ~10 % of a scan over coalesced items).
pub(crate) struct OpenFile {
    handle: Arc<dyn RandomAccessFile>,
    path: PathBuf,
}

/// Reads records out of any store's files, keeping each file open once read.
pub(crate) struct ValueFiles {
    fs: Arc<dyn Fs>,
    placement: Placement,
    open: RwLock<HashMap<u64, Arc<OpenFile>, IntBuild>>,
}

impl ValueFiles {
    pub fn new(fs: Arc<dyn Fs>, placement: Placement) -> Self {
        ValueFiles {
            fs,
            placement,
            open: RwLock::new(HashMap::default()),
        }
    }

    /// File `f` open (opened now if it was not).
    ///
    /// # Errors
    /// I/O errors opening it.
    pub fn file(&self, f: &ValueFile) -> Result<Arc<OpenFile>> {
        if let Some(h) = self
            .open
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&f.number)
        {
            return Ok(h.clone());
        }
        // A file still appended to (a value-log segment at the head) is opened `Growing`:
        // a read sees every record flushed before it, however long ago the handle was
        // opened (the fs module's contract; opened otherwise, a read past the size at open
        // failed: issue 34).
        let path = f.path(&self.placement);
        let handle = self.fs.open_with(&path, f.format.read_access(f))?;
        let h = Arc::new(OpenFile { handle, path });
        self.open
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(f.number, h.clone());
        Ok(h)
    }

    /// The value `p` points to in file `f`, written for `user_key`; `forward`: read by a
    /// forward scan (the store's `cache_ahead` bytes after the record are fetched).
    ///
    /// # Errors
    /// `Corruption` naming file and offset when the pointer is outside the file's records
    /// or the record is damaged or another key's; I/O errors.
    pub fn read(
        &self,
        user_key: &[u8],
        p: &ValuePointer,
        f: &ValueFile,
        forward: bool,
    ) -> Result<Vec<u8>> {
        self.read_in(user_key, p, f, &*self.file(f)?, forward)
    }

    /// [`ValueFiles::read`] in `open`, file `f` open ([`ValueFiles::file`]).
    ///
    /// # Errors
    /// As for [`ValueFiles::read`].
    pub fn read_in(
        &self,
        user_key: &[u8],
        p: &ValuePointer,
        f: &ValueFile,
        open: &OpenFile,
        forward: bool,
    ) -> Result<Vec<u8>> {
        let store = f.format;
        if p.store != f.store() || !store.pointer_fits(p, f) {
            return Err(Error::corruption(
                &f.path(&self.placement),
                p.offset,
                format!(
                    "value pointer {p:?} is outside the file's records ({})",
                    store.name()
                ),
            ));
        }
        // The record borrowed from the file's map where it is mapped: the value is copied
        // once, and the map takes no reference count. (Not read under the handle map's
        // lock, though that spared two more atomics per read: a read that faults or waits
        // on the disk would hold up every reader behind a file being opened.)
        let mut value = Err(Error::corrupt("unreachable: read_with did not call back"));
        open.handle
            .read_with(p.offset, p.size as usize, &mut |bytes| {
                value = store
                    .value_of(bytes, user_key, &open.path, p)
                    .map(<[u8]>::to_vec);
            })?;
        let ahead = if forward { store.cache_ahead() } else { 0 };
        if ahead > 0 {
            open.handle.cache_ahead(p.offset + u64::from(p.size), ahead);
        }
        value
    }

    /// Asks for the records `pointers` reach to be read ahead, neighbours in one file as
    /// one range. Only a hint: nothing fails.
    pub fn read_ahead(&self, pointers: &mut [(ValuePointer, &ValueFile)]) {
        // In file order, neighbours joined into one request: a blob file holds a flush's
        // values in key order, so a scan's next values are mostly one range of it.
        pointers.sort_unstable_by_key(|(p, _)| (p.file, p.offset));
        let mut i = 0;
        while i < pointers.len() {
            let (first, f) = pointers[i];
            let mut end = first.offset.saturating_add(u64::from(first.size));
            let mut j = i + 1;
            while j < pointers.len()
                && pointers[j].0.file == first.file
                && pointers[j].0.offset <= end.saturating_add(READ_AHEAD_GAP)
            {
                end = end.max(
                    pointers[j]
                        .0
                        .offset
                        .saturating_add(u64::from(pointers[j].0.size)),
                );
                j += 1;
            }
            if let Ok(h) = self.file(f) {
                h.handle.prefetch(
                    first.offset,
                    usize::try_from(end - first.offset).unwrap_or(0),
                );
            }
            i = j;
        }
    }

    /// Opens `f`, if its store reads it through a random-access map, and maps all its
    /// pages in (`RandomAccessFile::populate`): called by the job that wrote it, while the
    /// database fits in memory, so that reads do not each take a page fault on a page that
    /// is in the page cache already (first gets of coalesced items were 1.6x slower than
    /// later ones without it, issue 33). Only a hint: nothing fails.
    pub fn warm(&self, f: &ValueFile) {
        if f.format.read_access(f) != crate::fs::ReadAccess::MappedRandom {
            return;
        }
        if let Ok(h) = self.file(f) {
            h.handle.populate();
        }
    }

    /// Forgets the open handle to file `number` (it was deleted).
    pub fn evict(&self, number: u64) {
        self.open
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&number);
    }
}
