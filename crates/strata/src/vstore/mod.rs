//! The value store seam: values kept outside the LSM, the LSM holding key -> pointer
//! (key-value separation: WiscKey, RocksDB's BlobDB, HashKV).
//!
//! An entry of kind [`ValueKind::Pointer`](crate::key::ValueKind) carries an encoded
//! [`ValuePointer`] instead of its value; [`ValueStore::read`] turns it back into the value.
//! Reads go through one resolve step (`DbInner::resolve`), used by `get` and `DbIterator`.
//! Compactions and flushes carry pointers unchanged and report the ones they dropped
//! ([`DroppedValues`]), so a store counts its garbage without scanning.
//!
//! A store separates at flush ([`FlushSeparator`]) or at write ([`WriteSeparator`]).
//! Stores, each in its own folder: `blob/` (BlobDB-class immutable blob files written by
//! flushes, `ValueStoreKind::BlobFiles`) and `vlog/` (WiscKey's value log, written as the
//! writes happen, `ValueStoreKind::VLog`). Design: docs/design/kv-separation.md; formats:
//! docs/format/value-pointer.md, docs/format/blob-file.md, docs/format/value-log.md.

pub(crate) mod blob;
pub(crate) mod record;
pub(crate) mod vlog;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::coding::{get_varint32, get_varint64, put_varint32, put_varint64};
use crate::error::{Error, Result};
use crate::filename::FileNumber;
use crate::fs::Fs;
use crate::options::{Options, ValueStoreKind};
use crate::placement::{PathId, Placement};

/// Where a separated value lives. On-disk format (docs/format/value-pointer.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ValuePointer {
    /// Which kind of store wrote it ([`ValuePointer::BLOB_FILE`], ...).
    pub store: u8,
    /// The file (or segment) number.
    pub file: u64,
    /// Offset of the record in the file.
    pub offset: u64,
    /// Length of the whole record (header, key and value).
    pub size: u32,
}

impl ValuePointer {
    /// Store tag of a record in a blob file.
    pub const BLOB_FILE: u8 = 1;
    /// Store tag of a record in the value log.
    pub const VLOG: u8 = 2;

    /// Appends the encoding to `dst`.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        dst.push(self.store);
        put_varint64(dst, self.file);
        put_varint64(dst, self.offset);
        put_varint32(dst, self.size);
    }

    /// The encoding.
    #[cfg(test)]
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16);
        self.encode_to(&mut v);
        v
    }

    /// Decodes a pointer: exactly the bytes `encode` wrote.
    ///
    /// # Errors
    /// `Corruption` if the bytes are not a pointer.
    pub fn decode(mut src: &[u8]) -> Result<ValuePointer> {
        let all = src;
        let bad = || Error::corrupt(format!("malformed value pointer {all:02x?}"));
        let (&store, rest) = src.split_first().ok_or_else(bad)?;
        src = rest;
        let file = get_varint64(&mut src).ok_or_else(bad)?;
        let offset = get_varint64(&mut src).ok_or_else(bad)?;
        let size = get_varint32(&mut src).ok_or_else(bad)?;
        if !src.is_empty() {
            return Err(Error::corrupt(format!(
                "malformed value pointer {all:02x?}: trailing bytes"
            )));
        }
        Ok(ValuePointer {
            store,
            file,
            offset,
            size,
        })
    }
}

/// One value file as the manifest describes it: its records, and how many of them
/// compactions and flushes found dropped (garbage). A blob file whose every record is
/// garbage leaves the version (docs/format/manifest.md, "Value files").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueFile {
    /// Which kind of file.
    pub kind: ValueFileKind,
    /// The file number (names the file).
    pub number: u64,
    /// Which directory the file lives in.
    pub path_id: PathId,
    /// File size in bytes.
    pub size: u64,
    /// Records written.
    pub records: u64,
    /// Bytes of those records.
    pub record_bytes: u64,
    /// Records whose pointers compactions dropped.
    pub garbage_records: u64,
    /// Bytes of those records.
    pub garbage_bytes: u64,
}

/// The kinds of value file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueFileKind {
    /// An immutable blob file (`NNNNNN.blob`): records, counts and size known when named.
    Blob,
    /// A segment of the value log (`NNNNNN.vlog`): named before its first record is
    /// written; its records are counted only as garbage, and it leaves the version by the
    /// value log's garbage collection.
    VlogSegment,
}

impl ValueFile {
    /// A value-log segment about to be written.
    pub fn vlog_segment(number: u64, path_id: PathId) -> ValueFile {
        ValueFile {
            kind: ValueFileKind::VlogSegment,
            number,
            path_id,
            size: 0,
            records: 0,
            record_bytes: 0,
            garbage_records: 0,
            garbage_bytes: 0,
        }
    }

    /// Whether no live pointer can reach the file any more (blob files; a value-log
    /// segment's records are not counted).
    pub fn all_garbage(&self) -> bool {
        self.kind == ValueFileKind::Blob && self.garbage_records >= self.records
    }

    /// The file's path.
    pub fn path(&self, placement: &Placement) -> std::path::PathBuf {
        match self.kind {
            ValueFileKind::Blob => placement.value_path(FileNumber(self.number), self.path_id),
            ValueFileKind::VlogSegment => {
                placement.vlog_path(FileNumber(self.number), self.path_id)
            }
        }
    }

    /// Whether garbage collection moves the file's live values out
    /// (`Options::blob_gc_garbage_ratio`).
    pub fn collectable(&self, ratio: f64) -> bool {
        self.kind == ValueFileKind::Blob
            && self.garbage_bytes as f64 >= ratio * self.record_bytes as f64
    }
}

/// A value store, as reads see it.
pub(crate) trait ValueStore: Send + Sync {
    /// The value `p` points to in file `f`, written for `user_key`.
    ///
    /// # Errors
    /// `Corruption` naming file and offset when the record fails its checksum or is not
    /// `user_key`'s; I/O errors.
    fn read(&self, user_key: &[u8], p: &ValuePointer, f: &ValueFile) -> Result<Vec<u8>>;

    /// Asks for the records `pointers` reach to be read into memory ahead of their reads,
    /// without waiting (a scan's next values; WiscKey's range-query prefetch). Only a hint:
    /// nothing fails.
    fn read_ahead(&self, pointers: &mut [(ValuePointer, &ValueFile)]);

    /// Forgets open handles to file `number` (it was deleted).
    fn evict(&self, number: u64);
}

/// Separates values while a flush writes its tables (stores that separate at flush).
pub(crate) trait FlushSeparator: Send {
    /// The pointer, if `user_key`'s `value` went to the store. File numbers for new
    /// value files come from `new_file_number` (registered as pending outputs).
    ///
    /// # Errors
    /// I/O errors.
    fn separate(
        &mut self,
        new_file_number: &mut dyn FnMut() -> FileNumber,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<Option<ValuePointer>>;

    /// The value files written, durable (files and their directory synced): for the edit
    /// that installs the tables pointing into them.
    ///
    /// # Errors
    /// I/O errors.
    fn finish(&mut self) -> Result<Vec<ValueFile>>;
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
    fn name(&self, file: ValueFile) -> Result<()>;
    /// Releases a reserved number that will not be named (its file, if any, is then
    /// obsolete).
    fn release(&self, number: u64);
}

/// Separates values as writes happen (stores that separate at write: the value log).
pub(crate) trait WriteSeparator: Send + Sync {
    /// `batch` with the values this store takes replaced by pointers (the values written
    /// and handed to the OS), or `None` if it takes none. A new file is created, then named
    /// through `files`, before any pointer into it exists.
    ///
    /// # Errors
    /// I/O errors; errors naming a file.
    fn separate(
        &self,
        batch: &crate::batch::WriteBatch,
        files: &dyn NewValueFiles,
    ) -> Result<Option<crate::batch::WriteBatch>>;

    /// Makes every value handed out so far durable.
    ///
    /// # Errors
    /// I/O errors.
    fn sync(&self) -> Result<()>;
}

/// The write-time separator `opts` asks for, if any.
pub(crate) fn write_separator(
    opts: &Options,
    fs: Arc<dyn Fs>,
    placement: &Placement,
) -> Option<Box<dyn WriteSeparator>> {
    match opts.value_store {
        ValueStoreKind::VLog => Some(Box::new(vlog::VLog::new(
            fs,
            placement.clone(),
            opts.min_blob_size,
            opts.vlog_segment_size,
        ))),
        ValueStoreKind::Inline | ValueStoreKind::BlobFiles => None,
    }
}

/// The flush-time separator `opts` asks for, if any, taking values of at least `min`
/// bytes: `opts.min_blob_size` for a flush, 0 for the writer a compaction moves the live
/// values of collected files into.
pub(crate) fn flush_separator(
    opts: &Options,
    fs: Arc<dyn Fs>,
    placement: &Placement,
    min: usize,
) -> Option<Box<dyn FlushSeparator>> {
    match opts.value_store {
        ValueStoreKind::Inline | ValueStoreKind::VLog => None,
        ValueStoreKind::BlobFiles => Some(Box::new(blob::BlobSeparator::new(
            fs,
            placement.clone(),
            min,
        ))),
    }
}

/// The writer a compaction moves the live values of collectable blob files into: blob
/// files, whatever `Options::value_store` names now (a database reopened with another
/// store still collects the blob files it has; issue 31).
pub(crate) fn blob_relocation_writer(
    fs: Arc<dyn Fs>,
    placement: &Placement,
) -> Box<dyn FlushSeparator> {
    Box::new(blob::BlobSeparator::new(fs, placement.clone(), 0))
}

/// What reads separated values: every store's reader (a database keeps reading the values
/// it separated whatever `Options::value_store` says now).
pub(crate) fn reader(fs: Arc<dyn Fs>, placement: &Placement) -> Arc<dyn ValueStore> {
    Arc::new(blob::BlobReader::new(fs, placement.clone()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_round_trip_and_garbage_is_rejected() {
        let p = ValuePointer {
            store: ValuePointer::BLOB_FILE,
            file: 123_456,
            offset: 1 << 40,
            size: 70_000,
        };
        let e = p.encode();
        assert_eq!(ValuePointer::decode(&e).unwrap(), p);
        for cut in 0..e.len() {
            assert!(ValuePointer::decode(&e[..cut]).is_err(), "cut {cut}");
        }
        let mut long = e.clone();
        long.push(0);
        assert!(ValuePointer::decode(&long).is_err());
    }
}
