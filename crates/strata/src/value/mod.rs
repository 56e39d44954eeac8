//! What the engine knows of separated values below the value stores: where a value lives
//! ([`ValuePointer`]), a value file as the manifest describes it ([`ValueFile`], carrying
//! its store's [`ValueFormat`]), the record format most stores share ([`record`]), and
//! what flushes hand to the stores' separators and report of dropped pointers
//! ([`FlushSeparator`], [`DroppedValues`]). The stores themselves (`vstore/`, `coalesce/`)
//! sit above the version and the L0 layouts, which see only this; the list of stores is in
//! `registry.rs`, and reaches the version as a list of formats (docs/design/seams.md).

use crate::coding::{get_varint32, get_varint64, put_varint32, put_varint64};
use crate::error::{Error, Result};
use crate::filename::FileNumber;
use crate::options::Options;
use crate::placement::{PathId, Placement};

mod flush;
mod format;
pub(crate) mod record;

pub(crate) use flush::*;
pub(crate) use format::*;

/// Where a separated value lives. On-disk format (docs/format/value-pointer.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ValuePointer {
    /// The store that wrote it.
    pub store: StoreId,
    /// The file (or segment) number.
    pub file: u64,
    /// Offset of the record in the file.
    pub offset: u64,
    /// Length of the whole record (header, key and value).
    pub size: u32,
}

impl ValuePointer {
    /// Appends the encoding to `dst`.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        dst.push(self.store.0);
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
            store: StoreId(store),
            file,
            offset,
            size,
        })
    }
}

pub use crate::filename::StoreId;

/// One value file as the manifest describes it: its records, and how many of them
/// compactions and flushes found dropped (garbage). What the counts mean, and when a file
/// leaves the version, is its store's (docs/format/manifest.md, "Value files").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueFile {
    /// The format of the store the file belongs to (what reads, names and records it).
    pub format: Format,
    /// The file number (names the file).
    pub number: u64,
    /// Which directory the file lives in.
    pub path_id: PathId,
    /// File size in bytes (0 where the store does not record it).
    pub size: u64,
    /// Records written (0 where the store does not count them).
    pub records: u64,
    /// Bytes of those records.
    pub record_bytes: u64,
    /// Records whose pointers compactions dropped.
    pub garbage_records: u64,
    /// Bytes of those records.
    pub garbage_bytes: u64,
    /// What the store keeps per file beside the counts (the hash store: the file's segment
    /// group and kind), encoded by its own manifest records; 0 for stores that keep nothing.
    pub meta: u64,
}

impl ValueFile {
    /// A file of `format`'s store with nothing counted yet.
    pub(crate) fn new(format: Format, number: u64, path_id: PathId) -> ValueFile {
        ValueFile {
            format,
            number,
            path_id,
            size: 0,
            records: 0,
            record_bytes: 0,
            garbage_records: 0,
            garbage_bytes: 0,
            meta: 0,
        }
    }

    /// The id of the store the file belongs to.
    pub(crate) fn store(&self) -> StoreId {
        self.format.id()
    }

    /// Whether no live pointer can reach the file any more: it leaves the version.
    pub(crate) fn all_garbage(&self) -> bool {
        self.format.all_garbage(self)
    }

    /// The file's path.
    pub(crate) fn path(&self, placement: &Placement) -> std::path::PathBuf {
        file_path(
            &*self.format,
            FileNumber(self.number),
            self.path_id,
            placement,
        )
    }

    /// Whether compactions move the file's live values out (its store decides, from
    /// `opts`).
    pub(crate) fn collectable(&self, opts: &Options) -> bool {
        self.format.compaction_collects(self, opts)
    }
}

/// Appends a store's file record: `tag`, `f`'s number and path id, then `fields` as
/// varint64s (each store chooses which of its file's counts it records).
pub(crate) fn put_file_record(dst: &mut Vec<u8>, tag: u32, f: &ValueFile, fields: &[u64]) {
    put_varint32(dst, tag);
    put_varint64(dst, f.number);
    dst.push(f.path_id.0);
    for &v in fields {
        put_varint64(dst, v);
    }
}

/// Reads a file record [`put_file_record`] wrote for `store`: its number and path id,
/// then one varint64 into each of `fields(&mut file)`, in order. `None` if they do not
/// decode.
pub(crate) fn get_file_record(
    src: &mut &[u8],
    format: Format,
    fields: impl FnOnce(&mut ValueFile) -> Vec<&mut u64>,
) -> Option<ValueFile> {
    let number = get_varint64(src)?;
    let (&path_id, rest) = src.split_first()?;
    *src = rest;
    let mut f = ValueFile::new(format, number, PathId(path_id));
    for x in fields(&mut f) {
        *x = get_varint64(src)?;
    }
    Some(f)
}

/// The counts a file record of a store that counts its records carries, in order (blob
/// files, group files): size, records, record bytes, garbage records, garbage bytes; with
/// `meta`, the store's per-file value after them.
pub(crate) fn counts(f: &ValueFile, meta: bool) -> Vec<u64> {
    let mut v = vec![
        f.size,
        f.records,
        f.record_bytes,
        f.garbage_records,
        f.garbage_bytes,
    ];
    if meta {
        v.push(f.meta);
    }
    v
}

/// The fields [`counts`] lists, to decode into.
pub(crate) fn counts_mut(f: &mut ValueFile, meta: bool) -> Vec<&mut u64> {
    let ValueFile {
        size,
        records,
        record_bytes,
        garbage_records,
        garbage_bytes,
        meta: m,
        ..
    } = f;
    let mut v = vec![size, records, record_bytes, garbage_records, garbage_bytes];
    if meta {
        v.push(m);
    }
    v
}

/// The file `repair` keeps of a store that counts its records: file `number` of
/// `store`, `size` bytes, whose records a walk `found` and kept pointers reach (`refs`
/// records, `ref_bytes` bytes); records no pointer reaches are garbage.
pub(crate) fn counted_file(
    format: Format,
    number: u64,
    path_id: PathId,
    size: u64,
    found: &[(usize, record::Parsed<'_>)],
    (refs, ref_bytes): (u64, u64),
) -> ValueFile {
    let mut f = ValueFile::new(format, number, path_id);
    f.size = size;
    f.records = (found.len() as u64).max(refs);
    f.record_bytes = found
        .iter()
        .map(|(_, r)| r.size as u64)
        .sum::<u64>()
        .max(ref_bytes);
    f.garbage_records = f.records - refs;
    f.garbage_bytes = f.record_bytes - ref_bytes;
    f
}

/// The path of file `n` of `store` in directory `id`: `NNNNNN.<extension>`.
pub(crate) fn file_path(
    store: &dyn ValueFormat,
    n: FileNumber,
    id: PathId,
    placement: &Placement,
) -> std::path::PathBuf {
    placement
        .dir(id)
        .join(crate::filename::value_name(n, store.extension()))
}
