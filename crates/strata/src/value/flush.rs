//! What a flush hands the value stores' separators ([`FlushSeparator`], [`FlushEntry`]),
//! and what flushes and compactions report of the pointers they drop ([`DroppedValues`],
//! [`OldestValueFile`]): the L0 layouts and the compaction see only these.

use std::collections::BTreeMap;

use crate::error::Result;
use crate::filename::FileNumber;
use crate::key::SeqNo;

use super::{ValueFile, ValuePointer};

/// One entry a flush keeps, as its separators see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FlushEntry<'a> {
    pub kind: crate::key::ValueKind,
    pub seq: SeqNo,
    pub user_key: &'a [u8],
    pub value: &'a [u8],
}

impl<'a> FlushEntry<'a> {
    /// A put of `value` (what a compaction's relocation hands its writer).
    pub fn put(seq: SeqNo, user_key: &'a [u8], value: &'a [u8]) -> Self {
        FlushEntry {
            kind: crate::key::ValueKind::Put,
            seq,
            user_key,
            value,
        }
    }
}

/// Separates values while a flush writes its tables (stores that separate at flush), and
/// sees every entry the flush keeps: puts, deletes and pointers, with their sequences (a
/// store whose GC judges liveness without the LSM notes in its own files that a key's
/// newest entry went elsewhere).
pub(crate) trait FlushSeparator: Send {
    /// The pointer, if the store took `e`'s value (only puts are taken). File numbers for
    /// new value files come from `new_file_number` (registered as pending outputs).
    ///
    /// # Errors
    /// I/O errors.
    fn separate(
        &mut self,
        new_file_number: &mut dyn FnMut() -> FileNumber,
        e: FlushEntry<'_>,
    ) -> Result<Option<ValuePointer>>;

    /// The value files written, durable (files and their directory synced): for the edit
    /// that installs the tables pointing into them.
    ///
    /// # Errors
    /// I/O errors.
    fn finish(&mut self) -> Result<Vec<ValueFile>>;
}

/// The lowest value file number the pointers of one table lead to (0: none yet).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct OldestValueFile(pub u64);

impl OldestValueFile {
    /// Notes a pointer to `file`.
    pub fn note(&mut self, file: u64) {
        if self.0 == 0 || file < self.0 {
            self.0 = file;
        }
    }

    /// Notes the entry `value` of kind `kind` (a pointer's file; others are ignored).
    pub fn note_entry(&mut self, kind: crate::key::ValueKind, value: &[u8]) {
        if kind == crate::key::ValueKind::Pointer {
            if let Ok(p) = ValuePointer::decode(value) {
                self.note(p.file);
            }
        }
    }
}

/// Garbage found by one compaction or flush, per value file: the pointers it dropped
/// (overwritten, deleted, or hidden from every snapshot), counted and summed by record size.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct DroppedValues {
    /// File number -> (records, bytes).
    pub per_file: BTreeMap<u64, (u64, u64)>,
}

impl DroppedValues {
    /// Takes the counts, leaving none.
    pub fn take(&mut self) -> DroppedValues {
        std::mem::take(self)
    }

    /// The counts as manifest records: (number, records, bytes).
    pub fn into_records(self) -> Vec<(u64, u64, u64)> {
        self.per_file
            .into_iter()
            .map(|(n, (records, bytes))| (n, records, bytes))
            .collect()
    }

    /// Counts a dropped entry of kind Pointer whose value is `encoded`. A value that does not
    /// decode is ignored here: the read that meets it reports the corruption.
    pub fn add(&mut self, encoded: &[u8]) {
        if let Ok(p) = ValuePointer::decode(encoded) {
            let e = self.per_file.entry(p.file).or_default();
            e.0 += 1;
            e.1 += u64::from(p.size);
        }
    }
}
