//! How values leave the LSM: at write ([`WriteSeparator`]), and the files a store writes
//! ([`FileWriter`], [`OneFile`], [`NewValueFiles`]). What a flush hands its separators
//! ([`FlushSeparator`]) and what flushes and compactions report of the pointers they drop
//! sit below, in `value/`.

use std::sync::Arc;

use crate::error::Result;
use crate::fs::Fs;
use crate::placement::Placement;

use super::*;

/// A writer of one value file: records added, then finished (written and synced).
pub(crate) trait FileWriter: Send {
    /// Appends a record of `value` for `user_key`; its pointer.
    ///
    /// # Errors
    /// I/O errors.
    fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<ValuePointer>;
    /// Writes what is left and syncs the file; its description.
    ///
    /// # Errors
    /// I/O errors.
    fn finish(self) -> Result<ValueFile>;
}

/// The one value file a flush separator writes (blob files, group files): created when
/// the first value is taken, finished with its directory synced when the flush finishes.
pub(crate) struct OneFile<W> {
    fs: Arc<dyn Fs>,
    placement: Placement,
    writer: Option<W>,
}

impl<W: FileWriter> OneFile<W> {
    pub fn new(fs: Arc<dyn Fs>, placement: Placement) -> Self {
        OneFile {
            fs,
            placement,
            writer: None,
        }
    }

    /// Adds `value` to the file, `create` making it first if this is its first value.
    ///
    /// # Errors
    /// I/O errors.
    pub fn add(
        &mut self,
        create: impl FnOnce(&dyn Fs, &Placement) -> Result<W>,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<ValuePointer> {
        let w = match &mut self.writer {
            Some(w) => w,
            None => self.writer.insert(create(&*self.fs, &self.placement)?),
        };
        w.add(user_key, value)
    }

    /// `FlushSeparator::finish`: the file, if one was made, durable.
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(&mut self) -> Result<Vec<ValueFile>> {
        let Some(w) = self.writer.take() else {
            return Ok(Vec::new());
        };
        let f = w.finish()?;
        self.fs.sync_dir(self.placement.dir(f.path_id))?;
        Ok(vec![f])
    }
}

/// How a store that writes outside flushes and compactions gets its files named in the
/// manifest (the database implements it).
pub(crate) trait NewValueFiles {
    /// A number for a new value file: obsolete-file deletion spares it until it is named
    /// or released.
    fn reserve(&self) -> u64;
    /// Names `file` in the manifest and in the version readers see, and releases its
    /// number. Errors poison the database (the manifest's state is unknown).
    ///
    /// # Errors
    /// The manifest write's.
    fn name(&self, file: ValueFile) -> Result<()> {
        self.name_all(vec![file])
    }
    /// Names `files` in one manifest edit, as [`NewValueFiles::name`] does one.
    ///
    /// # Errors
    /// The manifest write's.
    fn name_all(&self, files: Vec<ValueFile>) -> Result<()>;
    /// Releases a reserved number that will not be named (its file, if any, is then
    /// obsolete).
    fn release(&self, number: u64);
}

/// Separates values as writes happen (stores that separate at write: the value log).
pub(crate) trait WriteSeparator: Send + Sync {
    /// `batch` with the values this store takes replaced by pointers (the values written
    /// and handed to the OS), or `None` if it takes none. A new file is created, then named
    /// through `files`, before any pointer into it exists.
    /// `first` is the sequence the batch's first entry will have (records may carry it).
    ///
    /// # Errors
    /// I/O errors; errors naming a file.
    fn separate(
        &self,
        batch: &crate::batch::WriteBatch,
        first: crate::key::SeqNo,
        files: &dyn NewValueFiles,
    ) -> Result<Option<crate::batch::WriteBatch>>;

    /// Makes every value handed out so far durable.
    ///
    /// # Errors
    /// I/O errors.
    fn sync(&self) -> Result<()>;

    /// Whether every write it separates must be logged: its records cannot be told from
    /// those of replayed writes after a crash otherwise (writes with `disable_wal` are
    /// refused). Default: `false`.
    fn needs_wal(&self) -> bool {
        false
    }

    /// Whether the memtable should be frozen for this store's sake (what it separated
    /// since the last switch has grown past what a memtable holds: its files are sealed,
    /// and collectable, only by a flush). Default: `false`.
    fn wants_rotation(&self) -> bool {
        false
    }

    /// The memtable `tag` (its WAL number) was frozen: what was separated so far belongs
    /// to it, what comes next to the next one. Called by the write leader, before the
    /// flush of memtable `tag` can begin. Default: nothing.
    fn rotate(&self, _tag: u64) {}

    /// The flush of memtable `tag` is about to name its tables: the files holding only
    /// values of memtables up to `tag`, made durable, with their final extent (named
    /// again with the flush's edit, [`reseal`]). Default: none.
    ///
    /// # Errors
    /// I/O errors.
    fn seal(&self, _tag: u64) -> Result<Vec<ValueFile>> {
        Ok(Vec::new())
    }
}
