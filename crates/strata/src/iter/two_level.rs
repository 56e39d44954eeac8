//! [`TwoLevelIterator`]: an index iterator whose values open data iterators.
//!
//! Used for a table (index block -> data blocks) and, as [`LevelIterator`], for a sorted level
//! (file list -> tables), so a scan opens one block or table at a time.

use super::InternalIterator;
use crate::error::Result;

/// Opens the data iterator an index entry's value points at.
pub type OpenFn = Box<dyn Fn(&[u8]) -> Result<Box<dyn InternalIterator>> + Send>;

/// Iterates data iterators in index order.
pub struct TwoLevelIterator {
    index: Box<dyn InternalIterator>,
    open: OpenFn,
    data: Option<Box<dyn InternalIterator>>,
    /// The index value `data` was opened from, to avoid reopening it.
    data_handle: Vec<u8>,
    status: Result<()>,
}

/// A level >= 1: files sorted by key, each opened lazily.
pub type LevelIterator = TwoLevelIterator;

impl TwoLevelIterator {
    /// Builds the iterator from an index and an opener.
    pub fn new(index: Box<dyn InternalIterator>, open: OpenFn) -> Self {
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
        match (self.open)(handle) {
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

    fn note_data_error(&mut self) {
        if let Some(d) = &self.data {
            if let Err(e) = d.status() {
                if self.status.is_ok() {
                    self.status = Err(e);
                }
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

impl InternalIterator for TwoLevelIterator {
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
        match &self.data {
            Some(d) => d.status(),
            None => Ok(()),
        }
    }
}
