//! BlobDB-class value files (`ValueStoreKind::BlobFiles`, preset `blob`): every flush writes
//! the values at or above `min_blob_size` into one new immutable blob file, and its tables
//! hold pointers to them. Compactions carry the pointers and count the ones they drop as the
//! blob file's garbage (manifest records); a blob file all of whose records are garbage
//! leaves the version, and its file is deleted like a table's.
//!
//! Format: docs/format/blob-file.md. A file: a 16-byte header (magic, version), records
//! (`masked crc32c | key length varint32 | value length varint32 | key | value`, the CRC over
//! everything after it), and a 24-byte footer (record count, record bytes, magic).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use crate::error::{Error, Result};
use crate::filename::FileNumber;
use crate::fs::{Fs, RandomAccessFile, ReadAccess, WritableFile};
use crate::placement::{FileKind, PathId, Placement};
use crate::vstore::{record, FlushSeparator, ValueFile, ValueFileKind, ValuePointer, ValueStore};

/// First bytes of a blob file.
pub(crate) const MAGIC: &[u8; 8] = b"strblob\x01";
/// Last bytes of a complete blob file.
const FOOTER_MAGIC: &[u8; 8] = b"strblobE";
/// The format version in the header.
const VERSION: u32 = 1;
/// Header: magic + version u32 LE + 4 reserved zero bytes.
pub(crate) const HEADER_LEN: u64 = 16;
/// Footer: record count u64 LE + record bytes u64 LE + magic.
pub(crate) const FOOTER_LEN: u64 = 24;

/// The format feature a database with blob files names in its manifest.
pub(crate) const FEATURE: &str = "blob-files";

/// Writes one blob file.
pub(crate) struct BlobWriter {
    file: Box<dyn WritableFile>,
    number: FileNumber,
    path_id: PathId,
    offset: u64,
    records: u64,
    record_bytes: u64,
    buf: Vec<u8>,
}

impl BlobWriter {
    /// Creates blob file `number` in the value directory.
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(fs: &dyn Fs, placement: &Placement, number: FileNumber) -> Result<BlobWriter> {
        let path_id = placement.path_id(FileKind::Value);
        let path = placement.value_path(number, path_id);
        let mut file = fs.create(&path)?;
        let mut header = Vec::with_capacity(HEADER_LEN as usize);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(&[0; 4]);
        file.append(&header)?;
        Ok(BlobWriter {
            file,
            number,
            path_id,
            offset: HEADER_LEN,
            records: 0,
            record_bytes: 0,
            buf: Vec::new(),
        })
    }

    /// Appends `user_key`'s `value`; returns the pointer to it.
    ///
    /// # Errors
    /// I/O errors; `InvalidArgument` for a record over 4 GiB.
    pub fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<ValuePointer> {
        self.buf.clear();
        let size = record::encode(&mut self.buf, user_key, value)?;
        self.file.append(&self.buf)?;
        let p = ValuePointer {
            store: ValuePointer::BLOB_FILE,
            file: self.number.0,
            offset: self.offset,
            size,
        };
        self.offset += u64::from(size);
        self.records += 1;
        self.record_bytes += u64::from(size);
        Ok(p)
    }

    /// Writes the footer and syncs the file (not its directory).
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(mut self) -> Result<ValueFile> {
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend_from_slice(&self.records.to_le_bytes());
        footer.extend_from_slice(&self.record_bytes.to_le_bytes());
        footer.extend_from_slice(FOOTER_MAGIC);
        self.file.append(&footer)?;
        self.file.sync()?;
        Ok(ValueFile {
            kind: ValueFileKind::Blob,
            number: self.number.0,
            path_id: self.path_id,
            size: self.offset + FOOTER_LEN,
            records: self.records,
            record_bytes: self.record_bytes,
            garbage_records: 0,
            garbage_bytes: 0,
        })
    }
}

/// Reads records out of blob files and value-log segments, keeping each file open once read.
pub(crate) struct BlobReader {
    fs: Arc<dyn Fs>,
    placement: Placement,
    open: RwLock<HashMap<u64, Arc<dyn RandomAccessFile>>>,
}

impl BlobReader {
    pub fn new(fs: Arc<dyn Fs>, placement: Placement) -> Self {
        BlobReader {
            fs,
            placement,
            open: RwLock::new(HashMap::new()),
        }
    }

    fn file(&self, f: &ValueFile) -> Result<Arc<dyn RandomAccessFile>> {
        let read = self.open.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(h) = read.get(&f.number) {
            return Ok(h.clone());
        }
        drop(read);
        let path = f.path(&self.placement);
        // A value-log segment may be the head, still appended to while its handle is kept:
        // opened `Growing`, a read sees every record flushed before it, however long ago the
        // handle was opened (the fs module's contract; opened otherwise, a read past the size
        // at open failed: issue 34). A blob file is complete before it is named.
        let access = match f.kind {
            ValueFileKind::VlogSegment => ReadAccess::Growing,
            ValueFileKind::Blob => ReadAccess::default(),
        };
        let h = self.fs.open_with(&path, access)?;
        self.open
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(f.number, h.clone());
        Ok(h)
    }
}

/// Decodes the record `bytes` read at `p`, checking it is `user_key`'s (the record format
/// of blob files and value-log segments).
pub(crate) fn decode_record<'a>(
    bytes: &'a [u8],
    user_key: &[u8],
    path: &std::path::Path,
    p: &ValuePointer,
) -> Result<&'a [u8]> {
    let bad = |what: &str| Error::corruption(path, p.offset, format!("blob record: {what}"));
    let r = record::parse(bytes).map_err(bad)?;
    if r.size != bytes.len() {
        return Err(bad("lengths do not add up to the record size"));
    }
    if r.key != user_key {
        return Err(bad("the record belongs to another key"));
    }
    Ok(r.value)
}

/// Records closer than this in one file are read ahead as one range (the gap read with them).
const READ_AHEAD_GAP: u64 = 4096;

impl ValueStore for BlobReader {
    fn read(&self, user_key: &[u8], p: &ValuePointer, f: &ValueFile) -> Result<Vec<u8>> {
        let path = || f.path(&self.placement);
        let fits = match f.kind {
            ValueFileKind::Blob => {
                p.store == ValuePointer::BLOB_FILE
                    && p.offset >= HEADER_LEN
                    && p.offset + u64::from(p.size) + FOOTER_LEN <= f.size
            }
            // A segment's length is not recorded: a record past its end fails the read.
            ValueFileKind::VlogSegment => p.store == ValuePointer::VLOG,
        };
        if !fits {
            return Err(Error::corruption(
                &path(),
                p.offset,
                format!("value pointer {p:?} is outside the blob file's records"),
            ));
        }
        let bytes = self.file(f)?.read_at(p.offset, p.size as usize)?;
        decode_record(&bytes, user_key, &path(), p).map(<[u8]>::to_vec)
    }

    fn read_ahead(&self, pointers: &mut [(ValuePointer, &ValueFile)]) {
        // In file order, neighbours joined into one request: a blob file holds a flush's
        // values in key order, so a scan's next values are mostly one range of it.
        pointers.sort_unstable_by_key(|(p, _)| (p.file, p.offset));
        let mut i = 0;
        while i < pointers.len() {
            let (first, f) = pointers[i];
            let mut end = first.offset + u64::from(first.size);
            let mut j = i + 1;
            while j < pointers.len()
                && pointers[j].0.file == first.file
                && pointers[j].0.offset <= end + READ_AHEAD_GAP
            {
                end = end.max(pointers[j].0.offset + u64::from(pointers[j].0.size));
                j += 1;
            }
            if let Ok(h) = self.file(f) {
                h.prefetch(
                    first.offset,
                    usize::try_from(end - first.offset).unwrap_or(0),
                );
            }
            i = j;
        }
    }

    fn evict(&self, number: u64) {
        self.open
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&number);
    }
}

/// Writes the values of one flush of at least `min` bytes into one new blob file.
pub(crate) struct BlobSeparator {
    fs: Arc<dyn Fs>,
    placement: Placement,
    min: usize,
    writer: Option<BlobWriter>,
}

impl BlobSeparator {
    pub fn new(fs: Arc<dyn Fs>, placement: Placement, min: usize) -> Self {
        BlobSeparator {
            fs,
            placement,
            min,
            writer: None,
        }
    }
}

impl FlushSeparator for BlobSeparator {
    fn separate(
        &mut self,
        new_file_number: &mut dyn FnMut() -> FileNumber,
        user_key: &[u8],
        value: &[u8],
    ) -> Result<Option<ValuePointer>> {
        if value.len() < self.min {
            return Ok(None);
        }
        let w = match &mut self.writer {
            Some(w) => w,
            None => self.writer.insert(BlobWriter::create(
                &*self.fs,
                &self.placement,
                new_file_number(),
            )?),
        };
        Ok(Some(w.add(user_key, value)?))
    }

    fn finish(&mut self) -> Result<Vec<ValueFile>> {
        let Some(w) = self.writer.take() else {
            return Ok(Vec::new());
        };
        let f = w.finish()?;
        self.fs.sync_dir(self.placement.dir(f.path_id))?;
        Ok(vec![f])
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fs::MemFs;

    #[test]
    fn records_read_back_and_damage_is_corruption() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        fs.create_dir_all(Path::new("/db")).unwrap();
        let placement = Placement::new(Path::new("/db"), None, None);
        let mut w = BlobWriter::create(&*fs, &placement, FileNumber(9)).unwrap();
        let big = vec![7u8; 5000];
        let p1 = w.add(b"k1", b"v1").unwrap();
        let p2 = w.add(b"key-two", &big).unwrap();
        let f = w.finish().unwrap();
        assert_eq!(
            (f.records, f.size),
            (2, HEADER_LEN + u64::from(p1.size + p2.size) + FOOTER_LEN)
        );
        let r = BlobReader::new(fs.clone(), placement.clone());
        assert_eq!(r.read(b"k1", &p1, &f).unwrap(), b"v1");
        assert_eq!(r.read(b"key-two", &p2, &f).unwrap(), big);
        let e = r.read(b"k2", &p1, &f).unwrap_err();
        assert!(e.to_string().contains("another key"), "{e}");
        let outside = ValuePointer {
            offset: f.size - 10,
            ..p1
        };
        assert!(r.read(b"k1", &outside, &f).is_err());
        // Flip every byte of the first record in turn: never the value, always an error.
        let path = placement.value_path(FileNumber(9), f.path_id);
        let good = fs.open(&path).unwrap().read_at(0, f.size as usize).unwrap();
        for i in p1.offset..p1.offset + u64::from(p1.size) {
            let mut bad = good.clone();
            bad[i as usize] ^= 0x40;
            let mut out = fs.create(&path).unwrap();
            out.append(&bad).unwrap();
            out.sync().unwrap();
            let r = BlobReader::new(fs.clone(), placement.clone());
            let e = r.read(b"k1", &p1, &f).unwrap_err();
            assert_eq!(
                e.kind(),
                crate::error::ErrorKind::Corruption,
                "byte {i}: {e}"
            );
        }
    }
}
