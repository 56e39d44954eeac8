//! BlobDB-class value files (store [`ID`] 1, `ValueStoreKind::BlobFiles`, preset `blob`): every flush writes
//! the values at or above `min_blob_size` into one new immutable blob file, and its tables
//! hold pointers to them. Compactions carry the pointers and count the ones they drop as the
//! blob file's garbage (manifest records); a blob file all of whose records are garbage
//! leaves the version, and its file is deleted like a table's.
//!
//! Format: docs/format/blob-file.md. A file: a 16-byte header (magic, version), records
//! (`masked crc32c | key length varint32 | value length varint32 | key | value`, the CRC over
//! everything after it), and a 24-byte footer (record count, record bytes, magic).

use std::sync::Arc;

use crate::error::Result;
use crate::filename::FileNumber;
use crate::fs::{Fs, WritableFile};
use crate::options::{Options, ValueStoreKind};
use crate::placement::{FileKind, PathId, Placement};
use crate::vstore::{
    record, FileWriter, FlushEntry, FlushSeparator, OneFile, Store, StoreEnv, StoreId, ValueFile,
    ValueFormat, ValuePointer,
};

/// The store's id: the tag of its pointers (docs/format/value-pointer.md).
pub(crate) const ID: StoreId = StoreId(1);
/// Its files' format, as each of them carries it.
pub(crate) const FORMAT: crate::value::Format = crate::value::Format(&BlobFiles);

/// Manifest tag of `new_value_file`, the record naming a blob file (docs/format/manifest.md).
const TAG_NEW_BLOB_FILE: u32 = 10;

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
        let path = crate::vstore::file_path(&BlobFiles, number, path_id, placement);
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
}

impl FileWriter for BlobWriter {
    /// Appends `user_key`'s `value`; returns the pointer to it.
    ///
    /// # Errors
    /// I/O errors; `InvalidArgument` for a record over 4 GiB.
    fn add(&mut self, user_key: &[u8], value: &[u8]) -> Result<ValuePointer> {
        self.buf.clear();
        let size = record::encode(&mut self.buf, user_key, value)?;
        self.file.append(&self.buf)?;
        let p = ValuePointer {
            store: ID,
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
    fn finish(mut self) -> Result<ValueFile> {
        let mut footer = Vec::with_capacity(FOOTER_LEN as usize);
        footer.extend_from_slice(&self.records.to_le_bytes());
        footer.extend_from_slice(&self.record_bytes.to_le_bytes());
        footer.extend_from_slice(FOOTER_MAGIC);
        self.file.append(&footer)?;
        self.file.sync()?;
        Ok(ValueFile {
            format: FORMAT,
            number: self.number.0,
            path_id: self.path_id,
            size: self.offset + FOOTER_LEN,
            records: self.records,
            record_bytes: self.record_bytes,
            garbage_records: 0,
            garbage_bytes: 0,
            meta: 0,
        })
    }
}

/// Blob files, as the engine sees them (one static object, registered in
/// `registry::STORES`).
pub(crate) struct BlobFiles;

impl ValueFormat for BlobFiles {
    fn checkpoint_copy(&self, _f: &ValueFile) -> crate::value::CheckpointCopy {
        crate::value::CheckpointCopy::Link
    }

    fn id(&self) -> StoreId {
        ID
    }

    fn name(&self) -> &'static str {
        "blob files"
    }

    fn feature(&self) -> &'static str {
        FEATURE
    }

    fn extension(&self) -> &'static str {
        "blob"
    }

    fn pointer_fits(&self, p: &ValuePointer, f: &ValueFile) -> bool {
        p.offset >= HEADER_LEN
            && p.offset
                .saturating_add(u64::from(p.size))
                .saturating_add(FOOTER_LEN)
                <= f.size
    }

    fn all_garbage(&self, f: &ValueFile) -> bool {
        f.garbage_records >= f.records
    }

    fn manifest_tags(&self) -> &'static [u32] {
        &[TAG_NEW_BLOB_FILE]
    }

    fn encode_file(&self, f: &ValueFile, dst: &mut Vec<u8>) {
        crate::vstore::put_file_record(dst, TAG_NEW_BLOB_FILE, f, &crate::vstore::counts(f, false));
    }

    fn decode_file(&self, _tag: u32, src: &mut &[u8]) -> Option<ValueFile> {
        crate::vstore::get_file_record(src, FORMAT, |f| crate::vstore::counts_mut(f, false))
    }

    fn compaction_collects(&self, f: &ValueFile, opts: &Options) -> bool {
        f.garbage_bytes as f64 >= opts.blob_gc_garbage_ratio * f.record_bytes as f64
    }
}

impl Store for BlobFiles {
    fn configured(&self, opts: &Options) -> bool {
        opts.value_store == ValueStoreKind::BlobFiles
    }

    fn walk<'a>(&self, bytes: &'a [u8]) -> record::Walk<'a> {
        let end = bytes.len().saturating_sub(FOOTER_LEN as usize);
        record::walk(bytes, HEADER_LEN as usize, end, false)
    }

    fn describe(
        &self,
        path: &std::path::Path,
        bytes: &[u8],
    ) -> std::result::Result<String, String> {
        let (h, f) = (HEADER_LEN as usize, FOOTER_LEN as usize);
        if bytes.len() < h + f || &bytes[..8] != MAGIC {
            return Err("not a complete blob file (header or footer)".into());
        }
        let foot = &bytes[bytes.len() - f..];
        let n = u64::from_le_bytes(foot[..8].try_into().expect("8 bytes"));
        let b = u64::from_le_bytes(foot[8..16].try_into().expect("8 bytes"));
        Ok(format!(
            "blob file {}: {} B, footer says {n} records, {b} B",
            path.display(),
            bytes.len()
        ))
    }

    fn rebuilt(
        &self,
        number: u64,
        path_id: PathId,
        read: &mut dyn FnMut() -> Result<Vec<u8>>,
        reached: (u64, u64),
    ) -> Result<ValueFile> {
        let bytes = read()?;
        let (found, _) = self.walk(&bytes);
        Ok(crate::vstore::counted_file(
            FORMAT,
            number,
            path_id,
            bytes.len() as u64,
            &found,
            reached,
        ))
    }

    /// While configured.
    fn flush_separator(
        &self,
        env: &StoreEnv,
        min: usize,
        _v: &crate::version::Version,
    ) -> Option<Box<dyn FlushSeparator>> {
        self.configured(&env.opts).then(|| {
            Box::new(BlobSeparator::new(
                env.fs.clone(),
                env.placement.clone(),
                min,
            )) as Box<dyn FlushSeparator>
        })
    }

    /// Live values of collected blob files move into new blob files, whatever store is
    /// configured now (a database reopened with another store still collects the blob
    /// files it has; issue 31).
    fn relocation_writer(&self, env: &StoreEnv) -> Option<Box<dyn FlushSeparator>> {
        Some(Box::new(BlobSeparator::new(
            env.fs.clone(),
            env.placement.clone(),
            0,
        )))
    }
}

/// Writes the values of one flush of at least `min` bytes into one new blob file.
pub(crate) struct BlobSeparator {
    min: usize,
    file: OneFile<BlobWriter>,
}

impl BlobSeparator {
    pub fn new(fs: Arc<dyn Fs>, placement: Placement, min: usize) -> Self {
        BlobSeparator {
            min,
            file: OneFile::new(fs, placement),
        }
    }
}

impl FlushSeparator for BlobSeparator {
    fn separate(
        &mut self,
        new_file_number: &mut dyn FnMut() -> FileNumber,
        e: FlushEntry<'_>,
    ) -> Result<Option<ValuePointer>> {
        let (user_key, value) = (e.user_key, e.value);
        if e.kind != crate::key::ValueKind::Put || value.len() < self.min {
            return Ok(None);
        }
        let create = |fs: &dyn Fs, placement: &Placement| {
            BlobWriter::create(fs, placement, new_file_number())
        };
        Ok(Some(self.file.add(create, user_key, value)?))
    }

    fn finish(&mut self) -> Result<Vec<ValueFile>> {
        self.file.finish()
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
        let r = crate::vstore::files::ValueFiles::new(fs.clone(), placement.clone());
        assert_eq!(r.read(b"k1", &p1, &f, false).unwrap(), b"v1");
        assert_eq!(r.read(b"key-two", &p2, &f, false).unwrap(), big);
        let e = r.read(b"k2", &p1, &f, false).unwrap_err();
        assert!(e.to_string().contains("another key"), "{e}");
        let outside = ValuePointer {
            offset: f.size - 10,
            ..p1
        };
        assert!(r.read(b"k1", &outside, &f, false).is_err());
        // Flip every byte of the first record in turn: never the value, always an error.
        let path = f.path(&placement);
        let good = fs.open(&path).unwrap().read_at(0, f.size as usize).unwrap();
        for i in p1.offset..p1.offset + u64::from(p1.size) {
            let mut bad = good.clone();
            bad[i as usize] ^= 0x40;
            let mut out = fs.create(&path).unwrap();
            out.append(&bad).unwrap();
            out.sync().unwrap();
            let r = crate::vstore::files::ValueFiles::new(fs.clone(), placement.clone());
            let e = r.read(b"k1", &p1, &f, false).unwrap_err();
            assert_eq!(
                e.kind(),
                crate::error::ErrorKind::Corruption,
                "byte {i}: {e}"
            );
        }
    }
}
