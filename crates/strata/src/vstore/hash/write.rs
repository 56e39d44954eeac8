//! The hash store at write time (`hash_write_time`, preset `hashkv-wt`; not the paper's):
//! a write group's values go to their groups' open files before its WAL record, which
//! then holds pointers; deletes, small puts and other stores' pointers leave a tombstone
//! in their key's group (where the group holds records), as the flush-time separator
//! does for what a flush keeps.
//!
//! Files (docs/format/hash-store.md, docs/design/hashkv.md "Write-time separation"):
//! - A *generation* is one open file per group (format version 2: no footer), created
//!   together on the first record after a memtable switch, synced into their directory
//!   and named in one manifest edit (`SegmentKind::Open`, extent unknown) before any
//!   pointer into them exists.
//! - The switch freezes the generation with its memtable (`rotate`); that memtable's
//!   flush seals it (`seal`): each file synced and named again, with its extent, as a log
//!   segment in the flush's edit (a file without records leaves the version). So a
//!   sealed file holds only records of flushed writes, and the group GC, which reads
//!   sealed files and checks the memtables for anything newer, sees what it saw with
//!   flush-time separation.
//! - A crash leaves open files whose last records may belong to writes the WAL never
//!   logged: their sequences are reused after recovery, so such a record would win a
//!   later group GC by sequence. Recovery (`recover`) cuts each open file after the last
//!   record whose sequence the WAL replay reached and names that extent; the bytes past
//!   it are never read. Records are appended in sequence order (the write leader
//!   separates one group at a time), so the cut is a prefix.
//! - Writes without the WAL are refused (`WriteSeparator::needs_wal`): a record of one
//!   that the crash lost would lie below the cut, indistinguishable from the replayed ones.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use super::{files_of, WRITE_TIME};
use super::{
    group, group_of, groups_in, groups_of, kind_of, meta, record, SegmentKind, FORMAT, ID,
};
use crate::batch::WriteBatch;
use crate::error::Result;
use crate::filename::FileNumber;
use crate::fs::{Fs, WritableFile};
use crate::key::{SeqNo, ValueKind};
use crate::placement::{FileKind, PathId, Placement};
use crate::sync::lock;
use crate::version::Version;
use crate::vstore::{file_path, NewValueFiles, StoreEnv, ValueFile, ValuePointer, WriteSeparator};

/// One group's open file.
struct OpenFile {
    file: Box<dyn WritableFile>,
    number: u64,
    path_id: PathId,
    group: u32,
    offset: u64,
    records: u64,
    /// Appended to since its last sync.
    unsynced: bool,
    /// A record appended since its last flush to the OS (a new file's header waits for
    /// its first record).
    unflushed: bool,
}

impl OpenFile {
    /// The file as the manifest names it once sealed: a log segment of its extent.
    fn sealed(&self, groups: u32) -> ValueFile {
        sealed_segment(
            (self.number, self.path_id),
            (self.group, groups),
            self.offset,
            self.records,
        )
    }
}

/// Write-time file `number` (in `path_id`) of `group` (of `groups`) named as a sealed log
/// segment holding `records` records up to byte `end`.
fn sealed_segment(
    (number, path_id): (u64, PathId),
    (group, groups): (u32, u32),
    end: u64,
    records: u64,
) -> ValueFile {
    let mut f = ValueFile::new(FORMAT, number, path_id);
    f.size = end;
    f.records = records;
    f.record_bytes = end - record::HEADER_LEN;
    f.meta = meta(group, groups, SegmentKind::Log) | WRITE_TIME;
    f
}

struct State {
    /// Groups holding records: only they need tombstones.
    active: Vec<bool>,
    /// The generation being appended to (indexed by group), if one was made since the
    /// last switch.
    open: Option<Vec<OpenFile>>,
    /// Generations frozen with their memtable (its WAL number), oldest first.
    frozen: VecDeque<(u64, Vec<OpenFile>)>,
    /// Files sealed for the flush of a memtable, kept until a later flush (a flush that
    /// fails and runs again seals the same files).
    sealed: Vec<(u64, ValueFile)>,
    record: Vec<u8>,
    /// Why writes are refused: a separation failed after it may have appended records
    /// the WAL will never log, whose sequences the next writes would reuse (a GC could
    /// then take such a record for a key's newest). Reopening cuts them off.
    failed: Option<crate::error::Error>,
}

/// The hash store's write-time separator of one database.
pub(super) struct HashWriter {
    fs: Arc<dyn Fs>,
    placement: Placement,
    min: usize,
    groups: u32,
    /// Bytes of records after which the open generation asks for a memtable switch.
    rotate_at: u64,
    /// Bytes of records appended to the open generation.
    open_bytes: std::sync::atomic::AtomicU64,
    state: Mutex<State>,
    /// Held by `sync` and `seal` while they sync files outside `state` (a write appends
    /// meanwhile: 64 syncs under `state` held every write behind them).
    syncing: Mutex<()>,
}

impl HashWriter {
    /// The separator for a database whose version is `v` at open.
    pub fn new(env: &StoreEnv, v: &Version) -> HashWriter {
        let groups = groups_in(v, &env.opts);
        let mut active = vec![false; groups as usize];
        for f in files_of(v, ID) {
            if let Some(a) = active.get_mut(group_of(f) as usize) {
                *a = true;
            }
        }
        HashWriter {
            fs: env.fs.clone(),
            placement: env.placement.clone(),
            min: env.opts.min_blob_size,
            groups,
            // What a memtable of values holds with flush-time separation: the store's
            // files are sealed (and collectable) as often as they would be written then.
            rotate_at: env.opts.write_buffer_size as u64,
            open_bytes: std::sync::atomic::AtomicU64::new(0),
            syncing: Mutex::new(()),
            state: Mutex::new(State {
                active,
                open: None,
                frozen: VecDeque::new(),
                sealed: Vec::new(),
                record: Vec::new(),
                failed: None,
            }),
        }
    }

    /// Creates a generation: a file per group, synced into its directory and named in one
    /// edit. On error, the numbers not named are released (their files are obsolete).
    fn generation(&self, files: &dyn NewValueFiles) -> Result<Vec<OpenFile>> {
        let path_id = self.placement.path_id(FileKind::Value);
        let mut made: Vec<OpenFile> = Vec::with_capacity(self.groups as usize);
        let release = |made: &[OpenFile]| {
            for f in made {
                files.release(f.number);
            }
        };
        for g in 0..self.groups {
            let number = files.reserve();
            let path = file_path(
                &super::HashStore,
                FileNumber(number),
                path_id,
                &self.placement,
            );
            let created = self.fs.create(&path).and_then(|mut f| {
                f.append(&record::header_of(
                    record::VERSION_WRITE_TIME,
                    g,
                    self.groups,
                ))?;
                Ok(f)
            });
            match created {
                Ok(file) => made.push(OpenFile {
                    file,
                    number,
                    path_id,
                    group: g,
                    offset: record::HEADER_LEN,
                    records: 0,
                    unsynced: true,
                    // (The header goes to the OS with the first record.)
                    unflushed: false,
                }),
                Err(e) => {
                    files.release(number);
                    release(&made);
                    return Err(e);
                }
            }
        }
        if let Err(e) = self.fs.sync_dir(self.placement.dir(path_id)) {
            release(&made);
            return Err(e);
        }
        let named = made
            .iter()
            .map(|o| {
                let mut f = ValueFile::new(FORMAT, o.number, o.path_id);
                f.meta = meta(o.group, self.groups, SegmentKind::Open) | WRITE_TIME;
                f
            })
            .collect();
        // Naming releases the numbers (and an error poisons the database).
        files.name_all(named)?;
        Ok(made)
    }

    /// The separator's state is `st`.
    fn separate_locked(
        &self,
        st: &mut State,
        batch: &WriteBatch,
        first: SeqNo,
        files: &dyn NewValueFiles,
    ) -> Result<Option<WriteBatch>> {
        let takes =
            |kind: ValueKind, value: &[u8]| kind == ValueKind::Put && value.len() >= self.min;
        // The batch is rebuilt (values replaced by pointers) only if it has a value to
        // take; otherwise only tombstones are written and the batch goes on as it is.
        let mut out = batch
            .iter()
            .any(|e| e.is_ok_and(|e| takes(e.kind, e.value)))
            .then(|| WriteBatch::with_capacity(batch.encoded_len()));
        let mut seq = first;
        let mut pointer = Vec::with_capacity(16);
        // Groups appended to by this batch: flushed to the OS below.
        let mut touched: Vec<usize> = Vec::new();
        for e in batch.iter() {
            let e = e?;
            let g = group(e.key, self.groups) as usize;
            let take = takes(e.kind, e.value);
            let ours = e.kind == ValueKind::Pointer
                && ValuePointer::decode(e.value).is_ok_and(|p| p.store == ID);
            let mut moved = None;
            // (A range deletion is no key's record: the GC judges the keys it covers
            // against the LSM, which holds it.)
            let point = e.kind != ValueKind::RangeDelete;
            if take || (point && !ours && st.active.get(g).copied().unwrap_or(true)) {
                if st.open.is_none() {
                    st.open = Some(self.generation(files)?);
                }
                let Some(f) = st.open.as_mut().and_then(|o| o.get_mut(g)) else {
                    return Err(crate::error::Error::corrupt(
                        "hash store: no open file for a group",
                    ));
                };
                st.record.clear();
                let (kind, value) = if take {
                    (record::Kind::Value, e.value)
                } else {
                    (record::Kind::Tombstone, &[][..])
                };
                let size = record::encode(&mut st.record, kind, seq, e.key, value)?;
                f.file.append(&st.record)?;
                if take {
                    moved = Some(ValuePointer {
                        store: ID,
                        file: f.number,
                        offset: f.offset,
                        size,
                    });
                }
                f.offset += u64::from(size);
                f.records += 1;
                self.open_bytes
                    .fetch_add(u64::from(size), std::sync::atomic::Ordering::Relaxed);
                f.unsynced = true;
                if !f.unflushed {
                    f.unflushed = true;
                    touched.push(g);
                }
                if take {
                    st.active[g] = true;
                }
            }
            seq = seq.next();
            let Some(out) = out.as_mut() else {
                continue;
            };
            match (moved, e.kind) {
                (Some(p), _) => {
                    pointer.clear();
                    p.encode_to(&mut pointer);
                    out.put_pointer(e.key, &pointer);
                }
                (None, kind) => out.push_entry(kind, e.key, e.value),
            }
        }
        if let Some(open) = st.open.as_mut() {
            // To the OS before the WAL record that points here.
            for g in touched {
                open[g].file.flush()?;
                open[g].unflushed = false;
            }
        }
        Ok(out)
    }
}

impl WriteSeparator for HashWriter {
    fn separate(
        &self,
        batch: &WriteBatch,
        first: SeqNo,
        files: &dyn NewValueFiles,
    ) -> Result<Option<WriteBatch>> {
        let mut st = lock(&self.state);
        if let Some(e) = &st.failed {
            return Err(e.clone());
        }
        let res = self.separate_locked(&mut st, batch, first, files);
        if let Err(e) = &res {
            st.failed = Some(crate::error::Error::new(
                crate::error::ErrorKind::Poisoned,
                format!("the hash store failed a write ({e}); reopen the database"),
            ));
        }
        res
    }

    /// The files appended to since their last sync, synced by path outside the state
    /// lock (every append reached the OS before `separate` returned); `syncing` keeps a
    /// second caller from returning while the first still syncs what both need.
    fn sync(&self) -> Result<()> {
        let _syncing = lock(&self.syncing);
        let paths: Vec<std::path::PathBuf> = {
            let mut st = lock(&self.state);
            let st = &mut *st;
            let frozen = st.frozen.iter_mut().flat_map(|(_, g)| g.iter_mut());
            st.open
                .iter_mut()
                .flatten()
                .chain(frozen)
                .filter(|f| f.unsynced)
                .map(|f| {
                    f.unsynced = false;
                    file_path(
                        &super::HashStore,
                        FileNumber(f.number),
                        f.path_id,
                        &self.placement,
                    )
                })
                .collect()
        };
        for p in paths {
            self.fs.sync_file(&p)?;
        }
        Ok(())
    }

    fn needs_wal(&self) -> bool {
        true
    }

    fn wants_rotation(&self) -> bool {
        self.open_bytes.load(std::sync::atomic::Ordering::Relaxed) >= self.rotate_at
    }

    fn rotate(&self, tag: u64) {
        let mut st = lock(&self.state);
        if let Some(open) = st.open.take() {
            st.frozen.push_back((tag, open));
        }
        self.open_bytes
            .store(0, std::sync::atomic::Ordering::Relaxed);
    }

    fn seal(&self, tag: u64) -> Result<Vec<ValueFile>> {
        let _syncing = lock(&self.syncing);
        // The generations of memtables up to `tag`: no write appends to them any more, so
        // they are synced outside the state lock.
        let mut due: VecDeque<(u64, Vec<OpenFile>)> = VecDeque::new();
        {
            let mut st = lock(&self.state);
            // Flushes run in memtable order: a file sealed for an earlier one is named.
            st.sealed.retain(|&(t, _)| t >= tag);
            while st.frozen.front().is_some_and(|&(t, _)| t <= tag) {
                due.extend(st.frozen.pop_front());
            }
        }
        let mut sealed = Vec::new();
        while let Some((t, mut generation)) = due.pop_front() {
            let mut failed = None;
            for f in generation
                .iter_mut()
                .filter(|f| f.records > 0 && f.unsynced)
            {
                if let Err(e) = f.file.sync() {
                    failed = Some(e);
                    break;
                }
                f.unsynced = false;
            }
            if let Some(e) = failed {
                // Not sealed: they stay frozen for a flush that runs again.
                let mut st = lock(&self.state);
                st.frozen.push_front((t, generation));
                while let Some(g) = due.pop_back() {
                    st.frozen.push_front(g);
                }
                return Err(e);
            }
            sealed.extend(generation.iter().map(|f| (t, f.sealed(self.groups))));
        }
        let mut st = lock(&self.state);
        st.sealed.extend(sealed);
        Ok(st
            .sealed
            .iter()
            .filter(|&&(t, _)| t <= tag)
            .map(|(_, f)| f.clone())
            .collect())
    }
}

/// The open files of `v` named with their extent after a WAL replay whose newest write
/// was sequence `last`: each cut after its last whole record of a sequence at most `last`
/// (and synced: its bytes may be only in the page cache, the process died, the machine
/// did not).
///
/// # Errors
/// I/O errors reading or syncing them.
pub(super) fn recover(env: &StoreEnv, v: &Version, last: SeqNo) -> Result<Vec<ValueFile>> {
    let mut out = Vec::new();
    for f in files_of(v, ID).filter(|f| kind_of(f) == SegmentKind::Open) {
        let path = f.path(&env.placement);
        let bytes = if env.fs.exists(&path) {
            crate::fs::read_all(&*env.fs, &path)?
        } else {
            Vec::new()
        };
        let (records, _) = record::walk(&bytes);
        let (mut end, mut count) = (record::HEADER_LEN, 0u64);
        for (at, r) in &records {
            if r.seq > last {
                break;
            }
            end = (at + r.size) as u64;
            count += 1;
        }
        if count > 0 {
            env.fs.sync_file(&path)?;
        }
        out.push(sealed_segment(
            (f.number, f.path_id),
            (group_of(f), groups_of(f)),
            end,
            count,
        ));
    }
    Ok(out)
}
