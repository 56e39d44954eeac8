//! The hash store at flush: each entry the flush keeps goes to its key's group, as a value
//! record (a put the store takes) or a tombstone (an entry whose value is not here: a
//! delete, a value kept inline, another store's pointer), one new file per group touched.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{group, meta, record, SegmentKind, FORMAT, ID};
use crate::error::Result;
use crate::filename::FileNumber;
use crate::fs::{Fs, WritableFile};
use crate::key::{SeqNo, ValueKind};
use crate::placement::{FileKind, PathId, Placement};
use crate::vstore::{file_path, FlushEntry, FlushSeparator, StoreEnv, ValueFile, ValuePointer};

/// One group's file being written.
pub(super) struct GroupWriter {
    file: Box<dyn WritableFile>,
    number: FileNumber,
    path_id: PathId,
    group: u32,
    groups: u32,
    offset: u64,
    records: u64,
    buf: Vec<u8>,
}

impl GroupWriter {
    /// Creates file `number` of `group` (of `groups`).
    pub fn create(
        fs: &dyn Fs,
        placement: &Placement,
        number: FileNumber,
        group: u32,
        groups: u32,
    ) -> Result<GroupWriter> {
        let path_id = placement.path_id(FileKind::Value);
        let mut file = fs.create(&file_path(&super::HashStore, number, path_id, placement))?;
        file.append(&record::header(group, groups))?;
        Ok(GroupWriter {
            file,
            number,
            path_id,
            group,
            groups,
            offset: record::HEADER_LEN,
            records: 0,
            buf: Vec::new(),
        })
    }

    /// Appends a record; returns the pointer to it.
    ///
    /// # Errors
    /// I/O errors; `InvalidArgument` for a record over 4 GiB.
    pub fn add(
        &mut self,
        kind: record::Kind,
        seq: crate::key::SeqNo,
        key: &[u8],
        value: &[u8],
    ) -> Result<ValuePointer> {
        self.buf.clear();
        let size = record::encode(&mut self.buf, kind, seq, key, value)?;
        self.file.append(&self.buf)?;
        let p = ValuePointer {
            store: ID,
            file: self.number.0,
            offset: self.offset,
            size,
        };
        self.offset += u64::from(size);
        self.records += 1;
        Ok(p)
    }

    /// Bytes written so far (header and records).
    pub fn len(&self) -> u64 {
        self.offset
    }

    /// Writes the footer and syncs the file (not its directory): the file of `kind`.
    ///
    /// # Errors
    /// I/O errors.
    pub fn finish(mut self, kind: SegmentKind) -> Result<ValueFile> {
        let bytes = self.offset - record::HEADER_LEN;
        self.file.append(&record::footer(self.records, bytes))?;
        self.file.sync()?;
        let mut f = ValueFile::new(FORMAT, self.number.0, self.path_id);
        f.size = self.offset + record::FOOTER_LEN;
        f.records = self.records;
        f.record_bytes = bytes;
        f.meta = meta(self.group, self.groups, kind);
        Ok(f)
    }
}

/// The hash store's separator for one flush.
pub(super) struct HashSeparator {
    fs: Arc<dyn Fs>,
    placement: Placement,
    /// Values of at least this many bytes are taken (while `take`).
    min: usize,
    /// Whether the store is configured (takes values) or only notes what supersedes its
    /// records.
    take: bool,
    groups: u32,
    /// Groups that hold files: only they need tombstones.
    active: Vec<bool>,
    writers: BTreeMap<u32, GroupWriter>,
    /// The user key of the last entry seen, and the sequence of its newest entry if that
    /// entry is not in this store and its group was not told (it had no file then). A
    /// flush meets a key's entries newest first: an older version the store then takes
    /// (a snapshot kept it) is followed by a tombstone at that sequence, or the group's
    /// GC, which keeps each key's newest record, would take it for the key's value.
    untold: (Vec<u8>, Option<SeqNo>),
}

impl HashSeparator {
    pub fn new(env: &StoreEnv, min: usize, take: bool, groups: u32, active: Vec<bool>) -> Self {
        HashSeparator {
            fs: env.fs.clone(),
            placement: env.placement.clone(),
            min,
            take,
            groups,
            active,
            writers: BTreeMap::new(),
            untold: (Vec::new(), None),
        }
    }

    fn writer(
        &mut self,
        new_file_number: &mut dyn FnMut() -> FileNumber,
        g: u32,
    ) -> Result<&mut GroupWriter> {
        if !self.writers.contains_key(&g) {
            let w = GroupWriter::create(
                &*self.fs,
                &self.placement,
                new_file_number(),
                g,
                self.groups,
            )?;
            self.writers.insert(g, w);
        }
        Ok(self.writers.get_mut(&g).expect("just inserted"))
    }
}

impl FlushSeparator for HashSeparator {
    fn separate(
        &mut self,
        new_file_number: &mut dyn FnMut() -> FileNumber,
        e: FlushEntry<'_>,
    ) -> Result<Option<ValuePointer>> {
        let g = group(e.user_key, self.groups);
        if self.untold.0 != e.user_key {
            self.untold.0.clear();
            self.untold.0.extend_from_slice(e.user_key);
            self.untold.1 = None;
        }
        if self.take && e.kind == ValueKind::Put && e.value.len() >= self.min {
            let untold = self.untold.1.take();
            let w = self.writer(new_file_number, g)?;
            let p = w.add(record::Kind::Value, e.seq, e.user_key, e.value)?;
            if let Some(newer) = untold {
                w.add(record::Kind::Tombstone, newer, e.user_key, &[])?;
            }
            return Ok(Some(p));
        }
        if e.kind == ValueKind::Pointer
            && ValuePointer::decode(e.value).is_ok_and(|p| p.store == ID)
        {
            // Already here (a GC's move): its record is the group's newest.
            return Ok(None);
        }
        // The key's newest entry is not in this store: older records of it in its group
        // are dead. Only a group with records needs to know.
        if self.active.get(g as usize).copied().unwrap_or(true) || self.writers.contains_key(&g) {
            let w = self.writer(new_file_number, g)?;
            w.add(record::Kind::Tombstone, e.seq, e.user_key, &[])?;
        } else if self.untold.1.is_none() {
            self.untold.1 = Some(e.seq);
        }
        Ok(None)
    }

    fn finish(&mut self) -> Result<Vec<ValueFile>> {
        let writers = std::mem::take(&mut self.writers).into_values().collect();
        let files = finish_all(writers, SegmentKind::Log)?;
        if let Some(f) = files.first() {
            self.fs.sync_dir(self.placement.dir(f.path_id))?;
        }
        Ok(files)
    }
}

/// Threads that finish a flush's group files at once.
const SYNC_THREADS: usize = 4;

/// Finishes `writers` as files of `kind` (footer, sync), in their order. A flush touches up
/// to every group, each file a sync: the syncs wait for the device, not the CPU, and a
/// file system commits syncs that arrive together in one journal commit, so with many
/// files they run on up to [`SYNC_THREADS`] threads (measured with 640 groups,
/// docs/bench/log.md).
///
/// # Errors
/// The first file's error, in order.
pub(super) fn finish_all(writers: Vec<GroupWriter>, kind: SegmentKind) -> Result<Vec<ValueFile>> {
    if writers.len() < 2 * SYNC_THREADS {
        return writers.into_iter().map(|w| w.finish(kind)).collect();
    }
    let per = writers.len().div_ceil(SYNC_THREADS);
    let mut chunks: Vec<Vec<GroupWriter>> = Vec::with_capacity(SYNC_THREADS);
    let mut rest = writers.into_iter();
    loop {
        let chunk: Vec<GroupWriter> = rest.by_ref().take(per).collect();
        if chunk.is_empty() {
            break;
        }
        chunks.push(chunk);
    }
    std::thread::scope(|scope| {
        let running: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .into_iter()
                        .map(|w| w.finish(kind))
                        .collect::<Result<Vec<_>>>()
                })
            })
            .collect();
        let mut files = Vec::new();
        for r in running {
            let done = r.join().map_err(|_| {
                crate::error::Error::new(
                    crate::error::ErrorKind::Io,
                    "a thread syncing hash-store files panicked",
                )
            })?;
            files.extend(done?);
        }
        Ok(files)
    })
}
