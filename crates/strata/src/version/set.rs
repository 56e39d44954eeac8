//! [`VersionSet`]: the current [`Version`], the manifest that records how it came to be, and
//! the counters (file numbers, sequence, live WAL) persisted with it.
//!
//! Concurrency: the database keeps the `VersionSet` behind its own mutex, taken by flush,
//! compaction and open (never by reads or the write path). `log_and_apply` queues the
//! edit's record and syncs it under that mutex; `log_and_apply_unsynced` queues it and makes
//! the new version current, and the caller syncs it (`PendingSync::wait`) after letting go of
//! the mutex, so that a slow sync holds up no other flush or compaction (docs/design/
//! core-engine.md, "Manifest syncs outside the versions' lock"). A record reaches the file
//! only in a sync, after the files it names unsynced ([`DurableFirst`]). Until it is
//! durable the version the edit replaced is held, and the obsolete-file pass waits for the
//! manifest to be durable up to what it saw: nothing an edit drops is deleted or reused
//! before the edit is durable.
//! Lock order: `VersionSet` before the database state mutex.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};

use super::edit::VersionEdit;
use super::version::Version;
use crate::error::{Error, ErrorKind, Result};
use crate::filename::{self, FileNumber};
use crate::fs::{self, DurableFirst, Fs};
use crate::key::{self, SeqNo};
use crate::l0;
use crate::placement::Placement;
use crate::value::Formats;
use crate::wal::{LogEvent, LogReader, LogWriter};

/// The manifest format version this build writes and the highest it reads. Version 2 added
/// the L0 layout record and format features (docs/format/manifest.md); a version-1 manifest
/// has neither and describes a flat L0.
pub const MANIFEST_FORMAT_VERSION: u32 = 2;

/// The comparator name LevelDB's and RocksDB's manifests record for their default order
/// (strata's record no comparator): a manifest that fails to decode and holds it is
/// another engine's database.
const FOREIGN_COMPARATORS: [&str; 1] = ["leveldb.BytewiseComparator"];

/// The live version and its manifest.
pub struct VersionSet {
    fs: Arc<dyn Fs>,
    placement: Placement,
    num_levels: usize,
    max_manifest_size: u64,
    /// What layouts recorded in the manifest are built with.
    l0: l0::L0Context,
    /// What value files recorded in the manifest are read with (`registry::formats`).
    formats: Formats,
    current: Arc<Version>,
    /// Every version handed out that may still be in use (for obsolete-file detection).
    versions: Vec<Weak<Version>>,
    /// Shared with the write path, which takes WAL numbers without this lock.
    next_file_number: Arc<AtomicU64>,
    /// The largest time expiring entries have been judged by (ms since the Unix epoch):
    /// recovered from the manifest, raised by the engine's clock, recorded in each edit once
    /// the database has expiring entries.
    clock_high: Arc<AtomicU64>,
    /// The last sequence written when the oldest value-store GC step still judging
    /// records began to watch user writes (`u64::MAX`: none). Shared with the GC jobs.
    /// A range-tombstone file is retired only once no such step began before its
    /// tombstones: one that did may write a covered key's record into a file numbered
    /// past the retirement (`Version::spent_range_files`).
    gc_watch_from: Arc<AtomicU64>,
    last_sequence: SeqNo,
    log_number: FileNumber,
    compact_pointers: Vec<Vec<u8>>,
    /// Files being written by flush or compaction, not yet in any version.
    pending_outputs: HashSet<FileNumber>,
    /// The manifest's writer and its durability (shared with the threads syncing it).
    sync: Arc<ManifestSync>,
    /// What the current manifest's first record says of the directories.
    recorded: crate::placement::Directories,
    /// The files the open found named by the version it recovered, or replayed: in a
    /// directory only the manifest's record led it to, the only files the obsolete-file
    /// pass may delete (another database may use that directory by now, with numbers of
    /// its own; this session writes no numbered file there).
    known: Arc<HashSet<PathBuf>>,
    /// The closed WALs synced since they were closed, and their sizes: every edit records
    /// those its log number still needs (docs/format/manifest.md, "WAL sizes").
    synced_wals: SyncedWals,
}

/// The closed WALs made durable since they were closed, each with the bytes of records it
/// holds: added to by the WAL when it syncs one (no append follows), recorded by every
/// manifest edit while the log number needs them. A leaf lock: taken under the WAL's lock
/// or the versions', never the other way.
pub(crate) type SyncedWals = Arc<Mutex<std::collections::BTreeMap<u64, u64>>>;

/// The manifest's writer and how much of it is durable, shared by the threads that sync
/// edits after letting go of the versions' lock. An edit's record waits in a queue until a
/// thread syncs: that thread first makes durable the files the queued records name but
/// whose writers left unsynced ([`DurableFirst`]: a flush's tables), then writes the records
/// to the file and syncs it, one sync at a time, each covering every record queued before
/// it began (group commit). So no record is in the file, where any sync would make it
/// durable, before what it names is durable.
pub(crate) struct ManifestSync {
    fs: Arc<dyn Fs>,
    placement: Placement,
    state: Mutex<SyncState>,
    cv: Condvar,
    /// The live manifest's writer: written only by the thread that set
    /// `SyncState::syncing` (lock order: `state` before `writer`, never the reverse).
    writer: Mutex<Option<LogWriter>>,
}

#[derive(Default)]
struct SyncState {
    /// The manifest written to now (0: none yet).
    number: u64,
    /// Records appended by this process (queued or written), across manifests.
    appended: u64,
    /// Of those, how many are known durable (a prefix).
    synced: u64,
    /// Records not yet written to the file, oldest first.
    queue: Vec<Queued>,
    /// The live manifest's length once the queue is written (when to start a new one).
    len: u64,
    /// Bytes written to manifests by this process.
    bytes: u64,
    /// Whether a thread is writing and syncing the queue now (or starting a manifest).
    syncing: bool,
    /// Threads dropping versions taken out of `held` (outside the lock): a wait returns
    /// only once none is, so that what a durable edit dropped is no longer live by then.
    releasing: usize,
    /// The first failed sync: what is durable of the manifest is unknown from then on, so
    /// nothing more is appended and every wait fails.
    failed: Option<Error>,
    /// The versions edits not yet durable replaced, each with where its edit's record
    /// ends: held until a sync covers the record (whoever syncs), so that nothing they hold
    /// (tables, value files, a matrix's persistent-memory pages) is deleted or reused while
    /// the durable manifest may still name it. After a failed sync, held for good.
    held: Vec<(ManifestMark, Arc<Version>)>,
}

/// A record waiting to be written, with what must be durable before it is.
struct Queued {
    record: Vec<u8>,
    first: DurableFirst,
}

impl SyncState {
    /// Whether the manifest is durable up to `mark`.
    fn covers(&self, mark: ManifestMark) -> bool {
        self.synced >= mark.0
    }

    /// Takes out the versions whose edits are durable now (dropped outside the lock:
    /// [`ManifestSync::release_covered`]).
    fn take_covered(&mut self) -> Vec<Arc<Version>> {
        if self.failed.is_some() {
            return Vec::new();
        }
        let (done, held): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .partition(|(m, _)| self.covers(*m));
        self.held = held;
        done.into_iter().map(|(_, v)| v).collect()
    }
}

/// How many records had been appended: a record is durable once this many are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ManifestMark(u64);

impl ManifestSync {
    fn new(fs: Arc<dyn Fs>, placement: Placement) -> Self {
        ManifestSync {
            fs,
            placement,
            state: Mutex::new(SyncState::default()),
            cv: Condvar::new(),
            writer: Mutex::new(None),
        }
    }

    fn state(&self) -> MutexGuard<'_, SyncState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn writer(&self) -> MutexGuard<'_, Option<LogWriter>> {
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What has been appended so far.
    pub(crate) fn appended(&self) -> ManifestMark {
        ManifestMark(self.state().appended)
    }

    /// Waits until the manifest is durable up to `mark`, writing and syncing what is queued
    /// unless another thread is (then its sync, or the next, covers the mark).
    ///
    /// # Errors
    /// The sync's error, and from then on that error for every wait.
    pub(crate) fn wait_for(&self, mark: ManifestMark) -> Result<()> {
        let mut st = self.state();
        loop {
            if let Some(e) = &st.failed {
                return Err(e.clone());
            }
            if st.covers(mark) {
                st = self.release_covered(st);
                while st.releasing > 0 {
                    st = self.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
                }
                return Ok(());
            }
            if st.syncing {
                st = self.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            st.syncing = true;
            let batch = std::mem::take(&mut st.queue);
            let (number, upto) = (st.number, st.appended);
            drop(st);
            let written = self.write_and_sync(number, &batch);
            st = self.state();
            st.syncing = false;
            match written {
                Ok(bytes) => {
                    st.synced = st.synced.max(upto);
                    st.bytes += bytes;
                }
                Err(e) => st.failed = Some(e),
            }
            self.cv.notify_all();
        }
    }

    /// Drops the versions held for edits now durable, outside the lock (the last holder of
    /// a layout frees its pages), counted in `releasing` meanwhile.
    fn release_covered<'a>(
        &'a self,
        mut st: MutexGuard<'a, SyncState>,
    ) -> MutexGuard<'a, SyncState> {
        let released = st.take_covered();
        if released.is_empty() {
            return st;
        }
        st.releasing += 1;
        drop(st);
        drop(released);
        let mut st = self.state();
        st.releasing -= 1;
        self.cv.notify_all();
        st
    }

    /// Waits until everything appended so far is durable.
    ///
    /// # Errors
    /// As [`ManifestSync::wait_for`].
    pub(crate) fn wait_all(&self) -> Result<()> {
        self.wait_for(self.appended())
    }

    /// Waits until at most `n` of the records appended so far are not durable, syncing if
    /// no other thread is (a flush running ahead of the syncs: the tables and WALs of those
    /// records wait in the page cache meanwhile).
    ///
    /// # Errors
    /// As [`ManifestSync::wait_for`].
    pub(crate) fn wait_within(&self, n: u64) -> Result<()> {
        let target = self.state().appended.saturating_sub(n);
        self.wait_for(ManifestMark(target))
    }

    /// Syncs the files `batch` names as unsynced, then writes its records to manifest
    /// `number` and syncs it. Returns the bytes written. REQUIRES: `syncing` set by the
    /// caller.
    fn write_and_sync(&self, number: u64, batch: &[Queued]) -> Result<u64> {
        self.sync_first(batch)?;
        let bytes = {
            let mut w = self.writer();
            let Some(w) = w.as_mut() else {
                return Err(Error::new(ErrorKind::Io, "no manifest open"));
            };
            let before = w.len();
            for q in batch {
                w.add_record(&q.record)?;
            }
            w.flush()?;
            w.len() - before
        };
        let path = self.placement.manifest_path(FileNumber(number));
        self.fs
            .sync_file(&path)
            .map_err(|e| e.context("syncing the manifest"))?;
        Ok(bytes)
    }

    /// Makes durable what `batch`'s records name unsynced: files first, then directories.
    fn sync_first(&self, batch: &[Queued]) -> Result<()> {
        let mut dirs: Vec<&PathBuf> = Vec::new();
        for q in batch {
            for f in &q.first.files {
                self.fs.sync_file(f).map_err(|e| {
                    e.context(format!(
                        "syncing {} before the manifest names it",
                        f.display()
                    ))
                })?;
            }
            for d in &q.first.dirs {
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
        for d in dirs {
            self.fs.sync_dir(d)?;
        }
        Ok(())
    }
}

/// An edit appended to the manifest and made current, not yet known durable: `wait` syncs
/// it (or waits for a sync that covers it). Until a sync covers it (this one's or any
/// other's), the version the edit replaced is held (`SyncState::held`), so that nothing
/// that version holds is deleted or reused.
#[must_use = "an edit is durable only once `wait` returns `Ok`"]
pub(crate) struct PendingSync {
    sync: Arc<ManifestSync>,
    mark: ManifestMark,
}

impl PendingSync {
    /// Makes the edit durable.
    ///
    /// # Errors
    /// The sync's error: the database must be poisoned (what is durable of the manifest is
    /// unknown).
    pub(crate) fn wait(self) -> Result<()> {
        self.sync.wait_for(self.mark)
    }

    /// The manifest's durability this edit waits on.
    pub(crate) fn manifest_sync(&self) -> Arc<ManifestSync> {
        self.sync.clone()
    }
}

/// What recovery learned from the manifest.
#[derive(Debug)]
pub struct Recovered {
    /// WALs numbered at or above this must be replayed.
    pub log_number: FileNumber,
    /// The last sequence number the manifest knows.
    pub last_sequence: SeqNo,
    /// A damaged last record recovery dropped: where, and why.
    pub dropped_tail: Option<String>,
    /// The WALs the manifest's last record lists as synced, with the bytes of records each
    /// holds: every WAL a clean close left, or, after a session that ended otherwise, the
    /// closed WALs synced since they were closed (empty when the last record was dropped).
    pub wal_sizes: Vec<(u64, u64)>,
    /// The WAL the open found at the log number, as the manifest expects (set by the open's
    /// checks): a replay that then does not find it lost a race with a writer that deleted
    /// it (a read-only view's), and would miss its writes.
    pub expected_wal: Option<FileNumber>,
}

fn apply(
    base: &Version,
    edit: &VersionEdit,
    num_levels: usize,
    ctx: &l0::L0Context,
) -> Result<Version> {
    let mut v = base.clone();
    for &(level, n) in &edit.deleted_files {
        let files = Arc::make_mut(
            v.levels
                .get_mut(level)
                .ok_or_else(|| Error::corrupt(format!("edit deletes from level {level}")))?,
        );
        let before = files.len();
        files.retain(|f| f.number != n);
        if files.len() == before {
            return Err(Error::corrupt(format!(
                "edit deletes file {n} which is not in level {level}"
            )));
        }
    }
    if let Some(k) = &edit.kept {
        v.kept = (!k.files.is_empty() || !k.reason.is_empty()).then(|| Arc::new(k.clone()));
    }
    if edit
        .features
        .iter()
        .any(|f| f == super::edit::EXPIRING_FEATURE)
    {
        v.expiring = true;
    }
    if edit
        .features
        .iter()
        .any(|f| f == super::edit::RANGE_DELETES_FEATURE)
    {
        v.range_deletes = true;
    }
    // NB: the layout changes after the edit's deletions and before its additions: the tables
    // an edit adds to L0 (a manifest's snapshot, a flush that chose new bucket boundaries)
    // were cut for the layout it records.
    if let Some(rec) = &edit.l0_layout {
        if rec != &v.l0.record() {
            let layout = match &edit.l0_built {
                Some(built) => {
                    debug_assert!(built.0.record() == *rec, "a built layout is its record's");
                    built.0.clone()
                }
                None => l0::from_record(rec, ctx)?,
            };
            if !v.l0_is_empty() && layout.kind() != v.l0.kind() {
                return Err(Error::corrupt(
                    "edit changes the L0 layout while level 0 holds tables",
                ));
            }
            v.l0 = layout;
        }
    }
    for (level, f) in &edit.new_files {
        if *level >= num_levels {
            return Err(Error::corrupt(format!(
                "edit adds file {} to level {level} of {num_levels}",
                f.number
            )));
        }
        Arc::make_mut(&mut v.levels[*level]).push(Arc::new(f.clone()));
    }
    if !edit.new_value_files.is_empty()
        || !edit.value_garbage.is_empty()
        || !edit.deleted_value_files.is_empty()
    {
        let values = Arc::make_mut(&mut v.values);
        for n in &edit.deleted_value_files {
            if values.remove(n).is_none() {
                return Err(Error::corrupt(format!(
                    "edit deletes value file {n}, which is not live"
                )));
            }
        }
        for f in &edit.new_value_files {
            if values.insert(f.number, f.clone()).is_some() {
                return Err(Error::corrupt(format!(
                    "edit adds value file {} twice",
                    f.number
                )));
            }
        }
        for &(n, records, bytes) in &edit.value_garbage {
            // NB: garbage for a file already gone is dropped: the value log's GC removes a
            // segment while stale pointers into it still wait for compaction.
            if let Some(f) = values.get_mut(&n) {
                f.garbage_records += records;
                f.garbage_bytes += bytes;
            }
        }
        // A file no live pointer reaches leaves the version; its file is then obsolete.
        values.retain(|_, f| !f.all_garbage());
    }
    if !edit.new_range_files.is_empty()
        || !edit.deleted_range_files.is_empty()
        || !edit.retired_range_files.is_empty()
    {
        v.ranges = Arc::new(
            v.ranges
                .apply(
                    &edit.new_range_files,
                    &edit.deleted_range_files,
                    &edit.retired_range_files,
                )
                .map_err(Error::corrupt)?,
        );
    }
    let layout = v.l0.clone();
    layout.arrange(Arc::make_mut(&mut v.levels[0]))?;
    for level in 1..num_levels {
        let files = Arc::make_mut(&mut v.levels[level]);
        files.sort_by(|a, b| key::compare(&a.smallest, &b.smallest));
        for w in files.windows(2) {
            if w[0].largest_user_key() >= w[1].smallest_user_key() {
                return Err(Error::corrupt(format!(
                    "files {} and {} overlap in level {level}",
                    w[0].number, w[1].number
                )));
            }
        }
    }
    Ok(v)
}

/// The format features `v` uses: its L0 layout's, its value files' (in the order of
/// `formats`) and the manifest's own (`SUPPORTED_FEATURES`).
pub(crate) fn features_of(v: &Version, formats: Formats) -> Vec<String> {
    let mut f: Vec<String> = v.l0.feature().into_iter().map(str::to_string).collect();
    f.extend(crate::value::features(formats, v.values.values()));
    if v.kept.is_some() {
        f.push(super::edit::KEPT_FILES_FEATURE.to_string());
    }
    if v.expiring {
        f.push(super::edit::EXPIRING_FEATURE.to_string());
    }
    if v.range_deletes || !v.ranges.is_empty() {
        f.push(super::edit::RANGE_DELETES_FEATURE.to_string());
    }
    f
}

/// The record a manifest this build writes starts with: where the database keeps its
/// files ([`crate::placement::Directories`]).
pub(crate) fn directories_record(dirs: crate::placement::Directories) -> Vec<u8> {
    VersionEdit {
        directories: Some(dirs),
        ..VersionEdit::default()
    }
    .encode()
}

/// Where the database at `placement`'s database directory keeps its files, as the first
/// record of the manifest CURRENT names says; `None` when there is no such record (a
/// manifest an older build wrote) or it cannot be read (recovery reports what is wrong).
/// Reads CURRENT and the manifest's first block only.
pub(crate) fn recorded_directories(
    fs: &dyn Fs,
    placement: &Placement,
    reg: super::edit::Registered,
) -> Option<crate::placement::Directories> {
    let name = fs::read_all(fs, &placement.current_path()).ok()?;
    let name = std::str::from_utf8(&name).ok()?.strip_suffix('\n')?;
    let Some(filename::FileType::Manifest(n)) = filename::parse(name) else {
        return None;
    };
    let file = fs.open(&placement.manifest_path(n)).ok()?;
    let len = file.size().min(crate::wal::format::BLOCK_SIZE as u64) as usize;
    let head = file.read_at(0, len).ok()?;
    match LogReader::strict(head).next_event() {
        LogEvent::Record { data, .. } => VersionEdit::decode(&data, reg).ok()?.directories,
        _ => None,
    }
}

/// A file the current version names that is missing (`None`), or a table whose size on
/// disk (first) is not the recorded one (second): [`VersionSet::unsound_files`].
pub type UnsoundFile = (PathBuf, Option<(u64, u64)>);

impl VersionSet {
    /// A version set for the database at `placement` (nothing read or written yet).
    pub fn new(
        fs: Arc<dyn Fs>,
        placement: Placement,
        num_levels: usize,
        max_manifest_size: u64,
        l0: l0::L0Context,
        formats: Formats,
    ) -> Self {
        let sync = Arc::new(ManifestSync::new(fs.clone(), placement.clone()));
        VersionSet {
            fs,
            placement,
            num_levels,
            max_manifest_size,
            l0,
            formats,
            current: Arc::new(Version::new(num_levels)),
            versions: Vec::new(),
            next_file_number: Arc::new(AtomicU64::new(2)),
            clock_high: Arc::default(),
            gc_watch_from: Arc::new(AtomicU64::new(u64::MAX)),
            last_sequence: SeqNo::ZERO,
            log_number: FileNumber(0),
            compact_pointers: vec![Vec::new(); num_levels],
            pending_outputs: HashSet::new(),
            sync,
            recorded: crate::placement::Directories::default(),
            known: Arc::default(),
            synced_wals: Arc::default(),
        }
    }

    /// What this set reads manifests with: its layouts and value formats.
    fn registered(&self) -> super::edit::Registered {
        super::edit::Registered {
            layouts: self.l0.layouts,
            formats: self.formats,
        }
    }

    /// The closed WALs synced since they were closed, shared with the WAL that adds to it.
    pub(crate) fn synced_wals(&self) -> SyncedWals {
        self.synced_wals.clone()
    }

    /// What this set builds L0 layouts with (for a layout built outside an edit: the
    /// configured one at open).
    pub fn l0_context(&self) -> &l0::L0Context {
        &self.l0
    }

    /// Adds `files` to the current version, recording nothing: a read-only view's, for the
    /// value files a newer manifest names (`open_read_only`).
    ///
    /// # Errors
    /// `Corruption` if they do not apply.
    pub(crate) fn adopt_value_files(&mut self, files: Vec<crate::value::ValueFile>) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let edit = VersionEdit {
            new_value_files: files,
            ..VersionEdit::default()
        };
        let v = apply(&self.current, &edit, self.num_levels, &self.l0)?;
        self.install(v);
        Ok(())
    }

    /// Makes this a read-only view's set (before `recover`): its L0 layouts read as views,
    /// checked against `start` (`l0::L0Context::view`).
    pub(crate) fn set_view(&mut self, start: Option<Arc<crate::pmem::ViewStart>>) {
        self.l0.view = Some(start);
    }

    /// Loads the version named by CURRENT.
    ///
    /// # Errors
    /// `Corruption` naming the manifest and offset for damaged records; `NotSupported` for
    /// a newer format; I/O errors.
    pub fn recover(&mut self) -> Result<Recovered> {
        let current = self.placement.current_path();
        let raw = fs::read_all(&*self.fs, &current)?;
        let name = std::str::from_utf8(&raw)
            .ok()
            .and_then(|s| s.strip_suffix('\n'))
            .unwrap_or("");
        let Some(filename::FileType::Manifest(mnum)) = filename::parse(name) else {
            return Err(Error::corruption(
                &current,
                0,
                format!(
                    "CURRENT is not a manifest's name and a newline (it holds {:?}; cut short \
                     or damaged): `strata repair` rewrites it",
                    String::from_utf8_lossy(&raw)
                ),
            ));
        };
        let path = self.placement.manifest_path(mnum);
        if !self.fs.exists(&path) {
            // A damaged CURRENT (a flipped digit) or a lost manifest: the damage is CURRENT's
            // to report, not an I/O failure of a file that was never there.
            return Err(Error::corruption(
                &current,
                0,
                format!(
                    "CURRENT names {name}, which does not exist (CURRENT damaged, or the \
                     manifest lost): `strata repair` rebuilds the database from its files"
                ),
            ));
        }
        let data = fs::read_all(&*self.fs, &path)?;
        // A LevelDB or RocksDB database: the same file names, another manifest format, whose
        // records name the key comparator (strata's never do).
        let foreign = FOREIGN_COMPARATORS
            .iter()
            .find(|c| data.windows(c.len()).any(|w| w == c.as_bytes()));
        // Written by `write(2)`: a crash leaves a prefix of a write, never its tail alone.
        let mut reader = LogReader::strict(data);
        let mut v = Version::new(self.num_levels);
        let (mut log_number, mut next_file, mut last_seq) = (None, None, None);
        let mut records = 0;
        let mut dropped_tail = None;
        let mut wal_sizes = Vec::new();
        loop {
            match reader.next_event() {
                LogEvent::Record { data, offset } => {
                    let edit =
                        VersionEdit::decode(&data, self.registered()).map_err(|e| {
                            match (e.kind(), foreign) {
                                (_, Some(c)) => Error::new(
                                    ErrorKind::NotSupported,
                                    format!(
                                        "{}: not a strata database: its manifest is a LevelDB or \
                                 RocksDB one (it names the comparator {c:?}), which strata \
                                 does not read. Nothing was changed; copy the data over with \
                                 that engine's tools (a dump `strata load` reads)",
                                        self.placement.db_dir().display()
                                    ),
                                ),
                                (ErrorKind::NotSupported, None) => Error::new(
                                    e.kind(),
                                    format!("{}: {}", path.display(), e.message()),
                                ),
                                _ => Error::corruption(&path, offset, e.message()),
                            }
                        })?;
                    if let Some(fv) = edit.format_version {
                        if fv > MANIFEST_FORMAT_VERSION {
                            return Err(Error::new(
                                ErrorKind::NotSupported,
                                format!(
                                    "{}: manifest format version {fv} is newer than this build supports ({MANIFEST_FORMAT_VERSION})",
                                    path.display()
                                ),
                            ));
                        }
                    }
                    v = apply(&v, &edit, self.num_levels, &self.l0).map_err(|e| {
                        match e.kind() {
                            ErrorKind::NotSupported => {
                                Error::new(e.kind(), format!("{}: {}", path.display(), e.message()))
                            }
                            _ => Error::corruption(&path, offset, e.message()),
                        }
                    })?;
                    // (Only the last record's count: any record after a close's is an
                    // edit of a later session, whose WALs it does not describe.)
                    wal_sizes = edit.wal_sizes.clone();
                    if let Some(c) = edit.clock {
                        self.clock_high.fetch_max(c, Ordering::SeqCst);
                    }
                    if let Some(dirs) = &edit.directories {
                        self.recorded = dirs.clone();
                    }
                    log_number = edit.log_number.or(log_number);
                    next_file = edit.next_file_number.or(next_file);
                    last_seq = edit.last_sequence.or(last_seq);
                    for (level, k) in edit.compact_pointers {
                        if level < self.num_levels {
                            self.compact_pointers[level] = k;
                        }
                    }
                    records += 1;
                }
                LogEvent::End => break,
                // An edit is synced before anything depends on it: a torn last record is an
                // edit whose effects never became visible, so it is safely ignored.
                LogEvent::Torn { .. } => break,
                // A damaged last record is most likely a torn write too, but it may be a
                // synced edit damaged since (a flush whose WAL is gone): the open keeps
                // every file the manifest does not name (`KeptFiles`) instead of deleting
                // it, and reports the drop.
                LogEvent::Corrupt {
                    offset,
                    reason,
                    at_tail: true,
                } if records > 0 => {
                    dropped_tail = Some(format!(
                        "{} at offset {offset}: {reason} (the last record, dropped)",
                        path.display()
                    ));
                    wal_sizes.clear();
                    break;
                }
                LogEvent::Corrupt { offset, reason, .. } => {
                    return Err(Error::corruption(&path, offset, reason))
                }
            }
        }
        let (Some(log_number), Some(next_file), Some(last_seq)) = (log_number, next_file, last_seq)
        else {
            return Err(Error::corruption(
                &path,
                0,
                "manifest lacks log number, next file number or last sequence",
            ));
        };
        self.next_file_number
            .store(next_file.0.max(mnum.0 + 1), Ordering::SeqCst);
        self.last_sequence = last_seq;
        self.log_number = log_number;
        self.current = Arc::new(v);
        Ok(Recovered {
            log_number,
            last_sequence: last_seq,
            dropped_tail,
            wal_sizes,
            expected_wal: None,
        })
    }

    /// Starts a new manifest holding a snapshot of the current state and points CURRENT at it.
    /// Records still queued are dropped (the snapshot holds their edits), once the files
    /// they name unsynced are durable; a sync running meanwhile is waited for.
    ///
    /// # Errors
    /// I/O errors. If records were queued, the manifest is failed for good (they are in no
    /// file).
    pub fn write_new_manifest(&mut self) -> Result<()> {
        let mut st = self.sync.state();
        while st.syncing {
            st = self
                .sync
                .cv
                .wait(st)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if let Some(e) = &st.failed {
            return Err(e.clone());
        }
        st.syncing = true;
        let batch = std::mem::take(&mut st.queue);
        let upto = st.appended;
        drop(st);
        let written = self
            .sync
            .sync_first(&batch)
            .and_then(|()| self.write_snapshot());
        let mut st = self.sync.state();
        st.syncing = false;
        let result = match written {
            Ok((n, w)) => {
                st.number = n.0;
                st.len = w.len();
                st.bytes += w.len();
                st.synced = upto;
                *self.sync.writer() = Some(w);
                Ok(())
            }
            Err(e) => {
                if !batch.is_empty() {
                    st.failed = Some(e.clone());
                }
                Err(e)
            }
        };
        drop(self.sync.release_covered(st));
        self.sync.cv.notify_all();
        result
    }

    /// Writes a new manifest holding the current state, synced, and points CURRENT at it.
    fn write_snapshot(&mut self) -> Result<(FileNumber, LogWriter)> {
        let n = self.new_file_number();
        let path = self.placement.manifest_path(n);
        let mut w = LogWriter::new(self.fs.create(&path)?);
        // Where this session keeps its files, in a record of its own ahead of the snapshot:
        // an open reads it from the manifest's first block before anything else
        // (`recorded_directories`).
        let dirs = self.directories_in_use();
        w.add_record(&directories_record(dirs.clone()))?;
        self.recorded = dirs;
        let snap = self.snapshot_edit();
        w.add_record(&snap.encode())?;
        w.sync()?;
        self.fs.sync_dir(self.placement.db_dir())?;
        let name = format!("{}\n", filename::manifest_name(n));
        fs::write_file_atomic(&*self.fs, &self.placement.current_path(), name.as_bytes())?;
        Ok((n, w))
    }

    /// The record a new manifest starts with after its directories: the current version
    /// whole, with the numbers and pointers an open needs (what `write_snapshot` writes, and
    /// a checkpoint's manifest starts from).
    pub(crate) fn snapshot_edit(&self) -> VersionEdit {
        let mut snap = VersionEdit {
            features: features_of(&self.current, self.formats),
            l0_layout: Some(self.current.l0.record()),
            format_version: Some(MANIFEST_FORMAT_VERSION),
            log_number: Some(self.log_number),
            next_file_number: Some(FileNumber(self.next_file_number.load(Ordering::SeqCst))),
            last_sequence: Some(self.last_sequence),
            ..Default::default()
        };
        for (level, k) in self.compact_pointers.iter().enumerate() {
            if !k.is_empty() {
                snap.compact_pointers.push((level, k.clone()));
            }
        }
        for (level, files) in self.current.levels.iter().enumerate() {
            for f in files.iter() {
                snap.new_files.push((level, (**f).clone()));
            }
        }
        snap.new_value_files = self.current.values.values().cloned().collect();
        snap.new_range_files = self.current.ranges.files().cloned().collect();
        snap.retired_range_files = self.current.ranges.retired().collect();
        snap.kept = self.current.kept.as_deref().cloned();
        snap.clock = self.clock_mark();
        snap
    }

    /// The largest time expiring entries have been judged by, shared with the engine's
    /// clock (`ttl::Now`), which raises it.
    pub(crate) fn clock_high(&self) -> Arc<AtomicU64> {
        self.clock_high.clone()
    }

    /// See `gc_watch_from`: the GC jobs keep it.
    pub(crate) fn gc_watch_from(&self) -> Arc<AtomicU64> {
        self.gc_watch_from.clone()
    }

    /// What an edit records of the clock: once the database has expiring entries, the
    /// largest time they have been judged by.
    fn clock_mark(&self) -> Option<u64> {
        let c = self.clock_high.load(Ordering::SeqCst);
        (self.current.expiring && c > 0).then_some(c)
    }

    /// Applies `edit` to the current version, logs it durably, and makes the result current.
    /// Fills in `next_file_number` and, if unset, `last_sequence`.
    ///
    /// # Errors
    /// I/O errors writing the manifest (the caller must poison the database: the manifest's
    /// durable content is then unknown), or `Corruption` if the edit does not apply.
    pub fn log_and_apply(&mut self, edit: VersionEdit) -> Result<Arc<Version>> {
        let (v, pending) = self.log_and_apply_unsynced(edit, DurableFirst::default(), |_| ())?;
        pending.wait()?;
        Ok(v)
    }

    /// Applies `edit`, queues its record for the manifest and makes the result current,
    /// calling `written` with the new version then; the record is durable once the returned
    /// [`PendingSync`] is waited for (which syncs `first` before the record is written), which the caller does after letting go of the
    /// versions' lock (docs/design/core-engine.md, "Manifest syncs outside the versions'
    /// lock"). Whatever the caller makes of the version before that must not need the edit
    /// durable: a flush hands its memtable's place to the writers (its WAL stays until the
    /// obsolete-file pass finds the edit durable), a compaction installs its outputs for
    /// readers. Nothing the edit drops is deleted or reused before it is durable: the
    /// version it replaced is held until a sync covers its record, and the obsolete-file
    /// pass waits for the manifest to be durable up to what it saw.
    ///
    /// # Errors
    /// `Corruption` if the edit does not apply, I/O errors starting a new manifest (the
    /// version is then unchanged); and once a sync has failed, every call fails with its
    /// error.
    pub(crate) fn log_and_apply_unsynced(
        &mut self,
        mut edit: VersionEdit,
        first: DurableFirst,
        written: impl FnOnce(&Arc<Version>),
    ) -> Result<(Arc<Version>, PendingSync)> {
        if let Some(e) = &self.sync.state().failed {
            return Err(e.clone());
        }
        let mut v = apply(&self.current, &edit, self.num_levels, &self.l0)?;
        let drops_files = !edit.deleted_files.is_empty()
            || edit.l0_layout.is_some()
            || !edit.deleted_value_files.is_empty()
            || !edit.value_garbage.is_empty();
        if drops_files && !v.ranges.is_empty() {
            // Range tombstones whose covered versions the edit's compaction dropped leave
            // with it, or retire while a value store's files may still hold records they
            // cover; a retired one leaves with the last such file.
            let until = self.next_file_number.load(Ordering::SeqCst);
            let watching_from = SeqNo(self.gc_watch_from.load(Ordering::SeqCst));
            let (mut gone, mut retired) = v.spent_range_files(until, watching_from);
            // (One the edit adds waits for the next: an edit removes before it adds.)
            let added = |n: u64| edit.new_range_files.iter().any(|f| f.number == n);
            gone.retain(|&n| !added(n));
            retired.retain(|&(n, _)| !added(n));
            if !gone.is_empty() || !retired.is_empty() {
                edit.deleted_range_files.extend(gone);
                edit.retired_range_files.extend(retired);
                v = apply(&self.current, &edit, self.num_levels, &self.l0)?;
            }
        }
        if !Arc::ptr_eq(&v.l0, &self.current.l0) {
            // What lets a repair find the layout's data without a manifest, before the edit
            // that records the layout (the matrix's row directory).
            v.l0.write_locator()
                .map_err(|e| e.context("recording where L0 is"))?;
        }
        if edit.l0_layout.is_some()
            || !edit.new_value_files.is_empty()
            || edit.kept.is_some()
            || !edit.new_range_files.is_empty()
        {
            // Named with the record that starts using them, before it (encoded first).
            edit.features = features_of(&v, self.formats);
        }
        if let Some(n) = edit.log_number {
            debug_assert!(n >= self.log_number);
        }
        if v.expiring {
            let c = self.clock_high.load(Ordering::SeqCst);
            edit.clock = (c > 0).then_some(c);
        }
        if edit.wal_sizes.is_empty() {
            // The closed WALs recovery still replays after this edit, synced whole: each
            // shorter later is damage, not a torn tail (a clean close's edit lists every
            // WAL itself).
            let log = edit.log_number.unwrap_or(self.log_number).0;
            let mut synced = crate::sync::lock(&self.synced_wals);
            synced.retain(|&n, _| n >= log);
            edit.wal_sizes = synced.iter().map(|(&n, &size)| (n, size)).collect();
        }
        edit.next_file_number = Some(FileNumber(self.next_file_number.load(Ordering::SeqCst)));
        let last_seq = edit
            .last_sequence
            .unwrap_or(self.last_sequence)
            .max(self.last_sequence);
        edit.last_sequence = Some(last_seq);
        let full = {
            let st = self.sync.state();
            st.number == 0 || st.len > self.max_manifest_size
        };
        if full {
            self.write_new_manifest()?;
        }
        let record = edit.encode();
        let mark = {
            let mut st = self.sync.state();
            st.len += record.len() as u64;
            st.queue.push(Queued { record, first });
            st.appended += 1;
            let mark = ManifestMark(st.appended);
            st.held.push((mark, self.current.clone()));
            mark
        };
        if let Some(n) = edit.log_number {
            self.log_number = n;
        }
        self.last_sequence = last_seq;
        for (level, k) in edit.compact_pointers {
            if level < self.num_levels {
                self.compact_pointers[level] = k;
            }
        }
        let v = self.install(v);
        written(&v);
        Ok((
            v,
            PendingSync {
                sync: self.sync.clone(),
                mark,
            },
        ))
    }

    /// The manifest's durability, for waiting on it without this set's lock.
    pub(crate) fn manifest_sync(&self) -> Arc<ManifestSync> {
        self.sync.clone()
    }

    fn install(&mut self, v: Version) -> Arc<Version> {
        let v = Arc::new(v);
        self.versions.retain(|w| w.strong_count() > 0);
        self.versions.push(Arc::downgrade(&v));
        self.current = v.clone();
        v
    }

    /// The directories the placement reads from and writes to, each recorded directory
    /// it reads from that the options did not give only while files of its slot remain
    /// there: a table or value file the current version names with that slot (or, for
    /// persistent memory, the L0 layout's own files), a WAL the log number still needs.
    fn directories_in_use(&self) -> crate::placement::Directories {
        let v = &self.current;
        let fs = &*self.fs;
        let log_number = self.log_number;
        self.placement.directories_where(|id, dir| {
            match id {
            crate::placement::PathId::WAL => fs.list(dir).unwrap_or_default().iter().any(|n| {
                matches!(filename::parse(n), Some(filename::FileType::Wal(w)) if w >= log_number)
            }),
            _ => {
                (0..v.num_levels()).any(|l| v.files(l).iter().any(|f| f.path_id == id))
                    || v.values.values().any(|f| f.path_id == id)
                    // Files kept for repair after a dropped manifest record.
                    || v.kept.as_ref().is_some_and(|k| {
                        fs.list(dir).unwrap_or_default().iter().any(|n| {
                            // (A table or a value file: any numbered file. The value
                            // stores' extensions are theirs, above this module.)
                            filename::number_of(n).is_some_and(|f| k.files.contains(&f.0))
                                && filename::parse(n).is_none_or(|t| {
                                    matches!(t, filename::FileType::Table(_))
                                })
                        })
                    })
                    || id == crate::placement::PathId::PMEM
                        && v.l0
                            .own_files()
                            .iter()
                            .any(|f| f.starts_with(dir) && fs.exists(f))
            }
        }
        })
    }

    /// Notes, at open, which files are the database's: the recovered version's tables and
    /// value files and the WALs `wals` it replays. The obsolete-file pass deletes nothing
    /// else in a directory only the manifest's record led the open to (another database
    /// may use it by now).
    pub(crate) fn note_session_start(&mut self, wals: &[PathBuf]) {
        let v = &self.current;
        let p = &self.placement;
        let mut known: HashSet<PathBuf> = wals.iter().cloned().collect();
        for l in 0..v.num_levels() {
            known.extend(v.files(l).iter().map(|f| p.table_path(f.number, f.path_id)));
        }
        known.extend(v.values.values().map(|f| f.path(p)));
        self.known = Arc::new(known);
    }

    /// The files, by path, the open found to be the database's
    /// ([`VersionSet::note_session_start`]).
    pub(crate) fn known_files(&self) -> Arc<HashSet<PathBuf>> {
        self.known.clone()
    }

    /// Starts a new manifest if the directories in use are no longer those the current one
    /// records: a recorded directory the database has left (its last WAL replayed and
    /// deleted, its last table compacted away) stops being named at once, not at the next
    /// manifest, which may be months away: until then a later open would still read (and
    /// delete in) a directory that may hold another database's files by then.
    ///
    /// Whether it wrote one (the copy of the record in `OPTIONS` is then behind).
    ///
    /// # Errors
    /// I/O errors writing the manifest.
    pub(crate) fn record_directories_again(&mut self) -> Result<bool> {
        if self.directories_in_use() == self.recorded {
            return Ok(false);
        }
        self.write_new_manifest()?;
        Ok(true)
    }

    /// What the current manifest records of the directories (empty before the first).
    pub(crate) fn recorded(&self) -> &crate::placement::Directories {
        &self.recorded
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        self.current.clone()
    }

    /// The current version with the value files `edit` adds, drops and charges garbage to:
    /// what a value store must see of an edit still being built (a recovery's, whose every
    /// flush may write value files the next flush's separator must know of).
    ///
    /// # Errors
    /// `Corruption` if the edit does not apply.
    pub(crate) fn current_with_values_of(&self, edit: &VersionEdit) -> Result<Version> {
        let values = VersionEdit {
            new_value_files: edit.new_value_files.clone(),
            value_garbage: edit.value_garbage.clone(),
            deleted_value_files: edit.deleted_value_files.clone(),
            ..VersionEdit::default()
        };
        apply(&self.current, &values, self.num_levels, &self.l0)
    }

    /// The shared file-number counter.
    pub fn file_number_counter(&self) -> Arc<AtomicU64> {
        self.next_file_number.clone()
    }

    /// Makes sure no number up to `n` is handed out again (a file found on disk that the
    /// manifest's counter does not cover, such as a WAL started after the last manifest
    /// write).
    pub fn mark_file_number_used(&self, n: FileNumber) {
        self.next_file_number.fetch_max(n.0 + 1, Ordering::SeqCst);
    }

    /// Hands out a new file number.
    pub fn new_file_number(&self) -> FileNumber {
        FileNumber(self.next_file_number.fetch_add(1, Ordering::SeqCst))
    }

    /// Hands out a file number and marks it as a pending output.
    pub fn new_output_number(&mut self) -> FileNumber {
        let n = self.new_file_number();
        self.pending_outputs.insert(n);
        n
    }

    /// Forgets pending outputs (after they were installed, or abandoned).
    pub fn release_outputs(&mut self, numbers: &[FileNumber]) {
        for n in numbers {
            self.pending_outputs.remove(n);
        }
    }

    /// The oldest WAL still needed.
    pub fn log_number(&self) -> FileNumber {
        self.log_number
    }

    /// The round-robin cursor of `level`.
    pub fn compact_pointer(&self, level: usize) -> &[u8] {
        self.compact_pointers
            .get(level)
            .map_or(&[], |v| v.as_slice())
    }

    /// Bytes written to manifests by this process.
    pub fn manifest_bytes(&self) -> u64 {
        self.sync.state().bytes
    }

    /// The live manifest's number.
    pub fn manifest_number(&self) -> FileNumber {
        FileNumber(self.sync.state().number)
    }

    /// Files that must be kept: tables and value files in some live version, and files
    /// being written.
    pub fn live_files(&mut self) -> HashSet<FileNumber> {
        let mut live: HashSet<FileNumber> = self.pending_outputs.clone();
        self.versions.retain(|w| w.strong_count() > 0);
        let versions: Vec<Arc<Version>> = self
            .versions
            .iter()
            .filter_map(Weak::upgrade)
            .chain(std::iter::once(self.current.clone()))
            .collect();
        for v in versions {
            for level in &v.levels {
                live.extend(level.iter().map(|f| f.number));
            }
            live.extend(v.values.keys().map(|&n| FileNumber(n)));
            live.extend(v.ranges.files().map(|f| FileNumber(f.number)));
            // Not live, but never deleted: they wait for a repair (`KeptFiles`).
            if let Some(k) = &v.kept {
                live.extend(k.files.iter().map(|&n| FileNumber(n)));
            }
        }
        live
    }

    /// The tables the current version names or keeps for a repair (`KeptFiles`), and the
    /// outputs being written: every table that is not obsolete.
    pub fn current_tables(&self) -> HashSet<FileNumber> {
        let mut out: HashSet<FileNumber> = self.pending_outputs.clone();
        let v = &self.current;
        for level in &v.levels {
            out.extend(level.iter().map(|f| f.number));
        }
        if let Some(k) = &v.kept {
            out.extend(k.files.iter().map(|&n| FileNumber(n)));
        }
        out
    }

    /// The files the current version names that are missing (`None` beside the path), and
    /// the tables whose size on disk is not the one recorded (`Some((on disk, recorded))`):
    /// a table cut short or grown is no longer the table the manifest describes. One
    /// `stat` a file.
    ///
    /// # Errors
    /// The error of a `stat` that fails on a file that is there.
    pub fn unsound_files(&self) -> Result<Vec<UnsoundFile>> {
        let mut unsound = Vec::new();
        for files in &self.current.levels {
            for f in files.iter() {
                let p = self.placement.table_path(f.number, f.path_id);
                match self.fs.file_size(&p) {
                    Ok(size) if size == f.size => {}
                    Ok(size) => unsound.push((p, Some((size, f.size)))),
                    Err(_) if !self.fs.exists(&p) => unsound.push((p, None)),
                    Err(e) => return Err(e),
                }
            }
        }
        for f in self.current.values.values() {
            let p = f.path(&self.placement);
            if !self.fs.exists(&p) {
                unsound.push((p, None));
            }
        }
        Ok(unsound)
    }

    /// The range-tombstone files the current version names that are missing or not of the
    /// recorded size, with their path. Reads take the tombstones from the manifest, never
    /// from these files: they are the copy a repair finds, which a writable open rewrites.
    ///
    /// # Errors
    /// The error of a `stat` that fails on a file that is there.
    pub fn unsound_range_files(&self) -> Result<Vec<(PathBuf, crate::range_del::RangeFile)>> {
        let mut unsound = Vec::new();
        for f in self.current.ranges.files() {
            let p = self
                .placement
                .db_dir()
                .join(filename::ranges_name(FileNumber(f.number)));
            match self.fs.file_size(&p) {
                Ok(size) if size == f.size => {}
                Ok(_) => unsound.push((p, f.clone())),
                Err(_) if !self.fs.exists(&p) => unsound.push((p, f.clone())),
                Err(e) => return Err(e),
            }
        }
        Ok(unsound)
    }
}
