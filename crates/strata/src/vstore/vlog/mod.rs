//! WiscKey's value log (store [`ID`] 2, `ValueStoreKind::VLog`, preset `wisckey`): values of at least
//! `min_blob_size` bytes are appended, as the write happens, at the head of one log, and the
//! WAL and memtable hold pointers to them.
//!
//! The log is a sequence of segment files (`NNNNNN.vlog`, `vlog_segment_size` each, in
//! `value_dir`) rather than one file whose space is reused in place: its head is the newest
//! segment, its tail the oldest, and reclaiming the tail deletes a file (docs/design/
//! kv-separation.md says why). A segment is created, then named in the manifest, before the
//! first pointer into it is written anywhere. Records have the blob-file record format
//! (docs/format/blob-file.md): `crc | key_len | value_len | key | value`.
//!
//! Durability order (DESIGN.md section 4): a group's values reach the OS before its WAL
//! record is written; a synced write syncs the head segment before the WAL; a segment is
//! synced when the head moves past it; a flush syncs the head before its manifest edit.
//! Without a sync, a crash may keep WAL records whose values the log lost: recovery stops
//! replaying at the first such record (a torn tail), so what survives is a prefix of the
//! writes.

mod gc;

use std::sync::{Arc, Mutex};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::filename::FileNumber;
use crate::fs::{Fs, ReadAccess, WritableFile};
use crate::key::ValueKind;
use crate::options::{Options, ValueStoreKind};
use crate::placement::{FileKind, PathId, Placement};
use crate::sync::lock;
use crate::version::Version;
use crate::vstore::{
    files_of, record, NewValueFiles, Store, StoreEnv, StoreId, ValueFile, ValueFormat, ValueGc,
    ValuePointer, WriteSeparator,
};

/// The store's id: the tag of its pointers (docs/format/value-pointer.md).
pub(crate) const ID: StoreId = StoreId(2);
/// Its files' format, as each of them carries it.
pub(crate) const FORMAT: crate::value::Format = crate::value::Format(&ValueLog);

/// Manifest tag of `new_vlog_segment`, the record naming a segment (docs/format/manifest.md).
const TAG_NEW_SEGMENT: u32 = 13;

/// The format feature a database with value-log segments names in its manifest.
pub(crate) const FEATURE: &str = "vlog";

/// The head segment being appended to.
struct Head {
    number: u64,
    file: Box<dyn WritableFile>,
    offset: u64,
    unsynced: bool,
}

/// The write side of the value log.
pub(crate) struct VLog {
    fs: Arc<dyn Fs>,
    placement: Placement,
    min: usize,
    segment_size: u64,
    head: Mutex<Option<Head>>,
}

impl VLog {
    pub fn new(fs: Arc<dyn Fs>, placement: Placement, min: usize, segment_size: u64) -> Self {
        VLog {
            fs,
            placement,
            min,
            segment_size,
            head: Mutex::new(None),
        }
    }

    fn separates(&self, kind: ValueKind, value: &[u8]) -> bool {
        kind == ValueKind::Put && value.len() >= self.min
    }
}

/// The value log, as the engine sees it (one static object, registered in
/// `registry::STORES`).
pub(crate) struct ValueLog;

impl ValueFormat for ValueLog {
    fn filtered_by_own_gc(&self) -> bool {
        true
    }

    fn checkpoint_copy(&self, _f: &ValueFile) -> crate::value::CheckpointCopy {
        // The head takes appends; records past what the LSM points to are garbage to the
        // GC, which looks each record's key up.
        crate::value::CheckpointCopy::Copy
    }

    fn id(&self) -> StoreId {
        ID
    }

    fn name(&self) -> &'static str {
        "value log"
    }

    fn feature(&self) -> &'static str {
        FEATURE
    }

    fn extension(&self) -> &'static str {
        "vlog"
    }

    /// The head segment is appended to while readers hold its handle.
    fn read_access(&self, _f: &ValueFile) -> ReadAccess {
        ReadAccess::Growing
    }

    /// A segment's length is not recorded: a record past its end fails the read.
    fn pointer_fits(&self, _p: &ValuePointer, _f: &ValueFile) -> bool {
        true
    }

    fn manifest_tags(&self) -> &'static [u32] {
        &[TAG_NEW_SEGMENT]
    }

    /// Garbage counted so far (a manifest's snapshot); a segment's records are not counted.
    fn encode_file(&self, f: &ValueFile, dst: &mut Vec<u8>) {
        let fields = [f.garbage_records, f.garbage_bytes];
        crate::vstore::put_file_record(dst, TAG_NEW_SEGMENT, f, &fields);
    }

    fn decode_file(&self, _tag: u32, src: &mut &[u8]) -> Option<ValueFile> {
        crate::vstore::get_file_record(src, FORMAT, |f| {
            vec![&mut f.garbage_records, &mut f.garbage_bytes]
        })
    }
}

impl Store for ValueLog {
    fn check_options(&self, o: &Options) -> Result<()> {
        if o.vlog_segment_size < 64 << 10 {
            return crate::vstore::bad_option("vlog_segment_size", "must be at least 64 KiB");
        }
        Ok(())
    }

    fn configured(&self, opts: &Options) -> bool {
        opts.value_store == ValueStoreKind::VLog
    }

    /// Up to the zeros a crash left after the head's last record.
    fn walk<'a>(&self, bytes: &'a [u8]) -> record::Walk<'a> {
        record::walk(bytes, 0, bytes.len(), true)
    }

    fn describe(
        &self,
        path: &std::path::Path,
        bytes: &[u8],
    ) -> std::result::Result<String, String> {
        Ok(format!(
            "value-log segment {}: {} B",
            path.display(),
            bytes.len()
        ))
    }

    /// A segment's records are not counted (only its garbage).
    fn rebuilt(
        &self,
        number: u64,
        path_id: PathId,
        _: &mut dyn FnMut() -> Result<Vec<u8>>,
        _: (u64, u64),
    ) -> Result<ValueFile> {
        Ok(ValueFile::new(FORMAT, number, path_id))
    }

    fn write_separator(&self, env: &StoreEnv, _v: &Version) -> Option<Box<dyn WriteSeparator>> {
        Some(Box::new(VLog::new(
            env.fs.clone(),
            env.placement.clone(),
            env.opts.min_blob_size,
            env.opts.vlog_segment_size,
        )))
    }

    /// Whenever the log is configured or the version holds segments (whatever store is
    /// configured now: a database keeps collecting the log it has, issue 31; no segment
    /// appears later unless the log is configured).
    fn background_gc(&self, env: &StoreEnv, v: &Version) -> Option<Box<dyn ValueGc>> {
        (self.configured(&env.opts) || files_of(v, ID).next().is_some())
            .then(|| Box::new(gc::LogGc::new(env)) as Box<dyn ValueGc>)
    }

    fn lost_value(
        &self,
        p: &ValuePointer,
        v: &Version,
        len: &mut dyn FnMut(&ValueFile) -> u64,
        placement: &Placement,
    ) -> Option<String> {
        if files_of(v, ID)
            .next()
            .is_some_and(|tail| p.file < tail.number)
        {
            // Below the log's tail: its GC moved every live value of that segment before
            // removing it, in a write the WAL replays after this one.
            return None;
        }
        crate::vstore::file_reaches(self.name(), p, v, len, placement)
    }
}

impl WriteSeparator for VLog {
    fn separate(
        &self,
        batch: &WriteBatch,
        _first: crate::key::SeqNo,
        files: &dyn NewValueFiles,
    ) -> Result<Option<WriteBatch>> {
        let mut any = false;
        for e in batch.iter() {
            let e = e?;
            any |= self.separates(e.kind, e.value);
        }
        if !any {
            return Ok(None);
        }
        let mut head = lock(&self.head);
        let mut out = WriteBatch::with_capacity(batch.encoded_len());
        let mut record = Vec::new();
        let mut pointer = Vec::new();
        for e in batch.iter() {
            let e = e?;
            if !self.separates(e.kind, e.value) {
                out.push_entry(e.kind, e.key, e.value);
                continue;
            }
            if head.as_ref().is_none_or(|h| h.offset >= self.segment_size) {
                if let Some(mut old) = head.take() {
                    // A sealed segment is durable: only the head is synced from now on.
                    old.file.sync()?;
                }
                // Created and its entry synced, then named: a crash in between leaves a
                // file the manifest does not name, which open deletes.
                let number = files.reserve();
                let path_id = self.placement.path_id(FileKind::Value);
                let path = crate::vstore::file_path(
                    &ValueLog,
                    FileNumber(number),
                    path_id,
                    &self.placement,
                );
                let created = self
                    .fs
                    .create(&path)
                    .and_then(|f| self.fs.sync_dir(self.placement.dir(path_id)).map(|()| f));
                let file = match created {
                    Ok(f) => f,
                    Err(e) => {
                        files.release(number);
                        return Err(e);
                    }
                };
                files.name(ValueFile::new(FORMAT, number, path_id))?;
                *head = Some(Head {
                    number,
                    file,
                    offset: 0,
                    unsynced: false,
                });
            }
            let Some(h) = head.as_mut() else {
                return Err(Error::corrupt("value log without a head segment"));
            };
            record.clear();
            record::encode(&mut record, e.key, e.value)?;
            h.file.append(&record)?;
            let p = ValuePointer {
                store: ID,
                file: h.number,
                offset: h.offset,
                size: record.len() as u32,
            };
            h.offset += record.len() as u64;
            h.unsynced = true;
            pointer.clear();
            p.encode_to(&mut pointer);
            out.put_pointer(e.key, &pointer);
        }
        if let Some(h) = head.as_mut() {
            // To the OS before the WAL record that points here.
            h.file.flush()?;
        }
        Ok(Some(out))
    }

    fn sync(&self) -> Result<()> {
        let mut head = lock(&self.head);
        if let Some(h) = head.as_mut().filter(|h| h.unsynced) {
            h.file.sync()?;
            h.unsynced = false;
        }
        Ok(())
    }
}
