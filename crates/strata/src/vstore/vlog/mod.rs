//! WiscKey's value log (`ValueStoreKind::VLog`, preset `wisckey`): values of at least
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

use std::sync::{Arc, Mutex, MutexGuard};

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::filename::FileNumber;
use crate::fs::{Fs, WritableFile};
use crate::key::ValueKind;
use crate::placement::{FileKind, Placement};
use crate::vstore::{record, NewValueFiles, ValueFile, ValuePointer, WriteSeparator};

/// Locks `m` whether or not a panicking thread poisoned it, as the database's own helper
/// does; kept here because a store sits below the database and does not import from it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

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

/// One record of a segment, as the value log's GC reads it.
pub(crate) struct Record {
    pub offset: u64,
    pub size: u32,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

/// The records of segment `bytes`, front to back, up to the first that does not decode
/// (the tail a crash cut off the head segment it then was: no recovered pointer reaches
/// past it, see docs/format/value-log.md).
pub(crate) fn records(bytes: &[u8]) -> Vec<Record> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while let Ok(r) = record::parse(&bytes[at..]) {
        out.push(Record {
            offset: at as u64,
            size: r.size as u32,
            key: r.key.to_vec(),
            value: r.value.to_vec(),
        });
        at += r.size;
    }
    out
}

impl WriteSeparator for VLog {
    fn separate(
        &self,
        batch: &WriteBatch,
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
                match e.kind {
                    ValueKind::Put => out.put(e.key, e.value),
                    ValueKind::Delete => out.delete(e.key),
                    ValueKind::Pointer => out.put_pointer(e.key, e.value),
                };
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
                let created = self
                    .fs
                    .create(&self.placement.vlog_path(FileNumber(number), path_id))
                    .and_then(|f| self.fs.sync_dir(self.placement.dir(path_id)).map(|()| f));
                let file = match created {
                    Ok(f) => f,
                    Err(e) => {
                        files.release(number);
                        return Err(e);
                    }
                };
                files.name(ValueFile::vlog_segment(number, path_id))?;
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
                store: ValuePointer::VLOG,
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
