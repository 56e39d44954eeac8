//! [`TwoLevelIterator`]: an index iterator whose values open data iterators.
//!
//! Used for a table (index block -> data blocks, `sst::TableIterator`) and for a sorted level
//! (file list -> tables, `version::LevelIterator`), so a scan opens one block or table at a
//! time.

use super::InternalIterator;
use crate::error::{Error, Result};

/// Opens the data iterator an index entry's value (a "handle") points at.
pub trait Opener: Send {
    /// The data iterator type.
    type Data: InternalIterator;
    /// Opens the data iterator for `handle`.
    ///
    /// # Errors
    /// Whatever opening fails with (I/O, corruption of the handle or of what it names).
    fn open(&self, handle: &[u8]) -> Result<Self::Data>;
    /// Gives an error of the data iterator opened from `handle` its context (file, offset).
    fn data_error(&self, e: Error, _handle: &[u8]) -> Error {
        e
    }
}

/// Iterates data iterators in index order. Generic, so a table's walk (index block ->
/// data blocks) and a level's (file list -> tables) are monomorphised: no boxed iterator or
/// closure per table or block (boxing them was about 70 allocations per `Db::iter` seek).
pub struct TwoLevelIterator<I, O: Opener> {
    index: I,
    open: O,
    data: Option<O::Data>,
    /// The index value `data` was opened from, to avoid reopening it.
    data_handle: Vec<u8>,
    status: Result<()>,
}

impl<I: InternalIterator, O: Opener> TwoLevelIterator<I, O> {
    /// Builds the iterator from an index and an opener.
    pub fn new(index: I, open: O) -> Self {
        TwoLevelIterator {
            index,
            open,
            data: None,
            data_handle: Vec::new(),
            status: Ok(()),
        }
    }

    fn init_data(&mut self) {
        if !self.index.valid() {
            self.data = None;
            return;
        }
        let handle = self.index.value();
        if self.data.is_some() && handle == self.data_handle.as_slice() {
            return;
        }
        match self.open.open(handle) {
            Ok(it) => {
                self.data_handle.clear();
                self.data_handle.extend_from_slice(handle);
                self.data = Some(it);
            }
            Err(e) => {
                if self.status.is_ok() {
                    self.status = Err(e);
                }
                self.data = None;
            }
        }
    }

    fn data_valid(&self) -> bool {
        self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn data_status(&self) -> Result<()> {
        match &self.data {
            Some(d) => d
                .status()
                .map_err(|e| self.open.data_error(e, &self.data_handle)),
            None => Ok(()),
        }
    }

    fn note_data_error(&mut self) {
        if let Err(e) = self.data_status() {
            if self.status.is_ok() {
                self.status = Err(e);
            }
        }
    }

    fn skip_forward(&mut self) {
        while !self.data_valid() {
            self.note_data_error();
            if self.status.is_err() || !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.next();
            self.init_data();
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    fn skip_backward(&mut self) {
        while !self.data_valid() {
            self.note_data_error();
            if self.status.is_err() || !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.prev();
            self.init_data();
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl<I: InternalIterator, O: Opener> InternalIterator for TwoLevelIterator<I, O> {
    fn valid(&self) -> bool {
        self.status.is_ok() && self.data_valid()
    }

    fn seek_to_first(&mut self) {
        self.index.seek_to_first();
        self.init_data();
        if let Some(d) = &mut self.data {
            d.seek_to_first();
        }
        self.skip_forward();
    }

    fn seek_to_last(&mut self) {
        self.index.seek_to_last();
        self.init_data();
        if let Some(d) = &mut self.data {
            d.seek_to_last();
        }
        self.skip_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.index.seek(target);
        self.init_data();
        if let Some(d) = &mut self.data {
            d.seek(target);
        }
        self.skip_forward();
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_forward();
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[][..], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[][..], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        self.status.clone()?;
        self.index.status()?;
        self.data_status()
    }
}
