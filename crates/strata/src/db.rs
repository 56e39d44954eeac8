//! [`Db`]: the public face of the engine.
//!
//! A thin facade: opening and recovery live in `db/open.rs`, the write path (group commit,
//! memtable switches, write stalls) in `db/write.rs`, point reads in `db/read.rs`, the user
//! iterator in `db/iter.rs`, flush in `db/flush.rs`, compaction and file cleanup in
//! `db/compact.rs`, and the background threads in `db/bg.rs`.
//!
//! `Db` is `Send + Sync`: share it by `&` or `Arc`. Dropping it closes it.

mod bg;
pub(crate) mod checkpoint;
mod compact;
mod filter;
mod flush;
mod iter;
pub(crate) mod open;
mod read;
pub(crate) mod value_gc;
mod write;

use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

pub use crate::snapshot::Snapshot;
pub(crate) use crate::snapshot::SnapshotList;
pub use iter::DbIterator;

use crate::batch::WriteBatch;
use crate::error::{Error, ErrorKind, Result};
use crate::filename::FileNumber;
use crate::fs::{FileLock, Fs};
use crate::key::SeqNo;
use crate::memtable::MemTable;
use crate::options::{Options, ReadOptions, WriteOptions};
use crate::placement::Placement;
use crate::stats::{Stats, StatsSnapshot};
use crate::table_cache::TableCache;
use crate::version::{Version, VersionSet};
use crate::wal::LogWriter;

/// What a read needs: the memtables and the version, captured together.
pub(crate) struct SuperVersion {
    pub mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    pub imms: Vec<Arc<MemTable>>,
    pub version: Arc<Version>,
    /// `version`'s pending compaction bytes (`picker::pending_compaction_bytes`), computed
    /// once per super version, not once per write (its level targets were 4 % of a put).
    pub pending_compaction_bytes: u64,
}

impl SuperVersion {
    /// The range tombstones a read of this view meets: the memtables' (their newest as of
    /// now: a read ignores those above its sequence) and the version's.
    pub(crate) fn ranges(&self) -> crate::range_del::Covering {
        let mut c = crate::range_del::Covering::default();
        // (Asked first: the pieces of a memtable without any are a new empty `Arc`.)
        for m in std::iter::once(&self.mem).chain(self.imms.iter()) {
            if m.has_ranges() {
                c.add(&m.range_pieces());
            }
        }
        c.add(self.version.ranges.pieces());
        c
    }
}

/// State guarded by `DbInner::state`.
pub(crate) struct State {
    pub mem: Arc<MemTable>,
    /// Immutable memtables waiting for flush, oldest first.
    pub imms: VecDeque<Arc<MemTable>>,
    pub super_version: Arc<SuperVersion>,
    /// Files inputs of running compactions.
    pub busy: HashSet<FileNumber>,
    /// Per level, running compactions that read or write it (a flushed table is never
    /// placed in such a level: `Options::max_mem_compaction_level`).
    pub busy_levels: Vec<usize>,
    /// Set once a background job fails: writes then return `Poisoned`.
    pub bg_error: Option<Error>,
    pub flush_running: bool,
    pub compactions_running: usize,
    /// Bumped after every flush or compaction install (waiters re-check their condition).
    pub progress: u64,
    /// A job finished since the deletion thread's last pass began: it runs another
    /// (`bg::delete_work`).
    pub deletion_due: bool,
}

impl State {
    /// Marks `c`'s input files and both its levels as in use by a running compaction.
    pub fn start_compaction(&mut self, c: &crate::compaction::Compaction) {
        for f in c.all_inputs() {
            self.busy.insert(f.number);
        }
        if let Some(p) = &c.l0_part {
            self.busy.insert(p.token);
        }
        for l in [c.level, c.output_level] {
            if let Some(n) = self.busy_levels.get_mut(l) {
                *n += 1;
            }
        }
        self.compactions_running += 1;
    }

    /// Undoes [`State::start_compaction`] once `c` finished (or failed).
    pub fn end_compaction(&mut self, c: &crate::compaction::Compaction) {
        for f in c.all_inputs() {
            self.busy.remove(&f.number);
        }
        if let Some(p) = &c.l0_part {
            self.busy.remove(&p.token);
        }
        for l in [c.level, c.output_level] {
            if let Some(n) = self.busy_levels.get_mut(l) {
                *n = n.saturating_sub(1);
            }
        }
        self.compactions_running -= 1;
    }
}

/// A WAL's sync taken under its lock ([`WalState::sync_handles`]), with the number of the
/// earlier WAL it syncs (`None`: the current one).
pub(crate) type WalSyncHandle = (Option<FileNumber>, Box<dyn crate::fs::SyncHandle>);

/// The current WAL; only the group-commit leader touches it.
pub(crate) struct WalState {
    pub writer: Option<LogWriter>,
    pub number: FileNumber,
    /// Earlier WALs, oldest first, not synced since they were closed and whose memtables
    /// are not flushed yet. A synced write syncs them before its own WAL, so no synced
    /// write can follow a hole; the obsolete-file pass drops those the obsolete list names.
    pub unsynced: Vec<(FileNumber, LogWriter)>,
    /// The last sequence of the last batch appended to any WAL: the link record that starts
    /// the next WAL.
    pub last_logged: SeqNo,
    /// Where a closed WAL goes, with its size, once synced: the manifest's edits record it
    /// while it is live (`VersionSet::synced_wals`).
    pub synced: crate::version::SyncedWals,
    /// A WAL was created since the WAL directory was last synced: its entry may not
    /// survive a power cut yet. The next synced write syncs the directory first; until then
    /// the WAL holds only unsynced writes, which a power cut may lose anyway.
    pub dir_unsynced: bool,
}

impl WalState {
    /// Syncs the WAL directory if a WAL was created since it was last synced, then every
    /// unsynced earlier WAL, then the current one.
    pub fn sync_all(&mut self, stats: &Stats, fs: &dyn Fs, dir: &Path) -> Result<()> {
        self.sync_dir_if_new(fs, dir)?;
        let earlier = self.unsynced.iter_mut().map(|(_, w)| w);
        for w in earlier.chain(self.writer.as_mut()) {
            w.sync()?;
            Stats::add(&stats.wal_syncs, 1);
        }
        let synced: Vec<FileNumber> = self.unsynced.iter().map(|(n, _)| *n).collect();
        self.synced_earlier(&synced);
        Ok(())
    }

    /// [`Self::sync_all`] in two halves: the WAL directory is synced now if it must be,
    /// and the handles returned make every earlier unsynced WAL and the current one
    /// durable up to what they hold now, when called after this lock is let go. `None` if
    /// a file offers no handle (the caller syncs under the lock instead). Each handle
    /// comes with the number of the earlier WAL it syncs (`None`: the current one), for
    /// [`Self::synced_earlier`] once they all succeeded.
    pub fn sync_handles(&mut self, fs: &dyn Fs, dir: &Path) -> Result<Option<Vec<WalSyncHandle>>> {
        self.sync_dir_if_new(fs, dir)?;
        let mut handles = Vec::new();
        let earlier = self.unsynced.iter_mut().map(|(n, w)| (Some(*n), w));
        for (n, w) in earlier.chain(self.writer.as_mut().map(|w| (None, w))) {
            match w.sync_handle()? {
                Some(h) => handles.push((n, h)),
                None => return Ok(None),
            }
        }
        Ok(Some(handles))
    }

    /// Forgets the earlier WALs in `synced`, made durable through [`Self::sync_handles`]:
    /// a closed WAL takes no more appends, so a later synced write need not sync it again.
    pub fn synced_earlier(&mut self, synced: &[FileNumber]) {
        let (done, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.unsynced)
            .into_iter()
            .partition(|(n, _)| synced.contains(n));
        self.unsynced = kept;
        lock(&self.synced).extend(done.iter().map(|(n, w)| (n.0, w.len())));
        // (The writers go after the list's lock: dropping a mapped log truncates it, which
        // the versions' lock, under which edits read the list, must not wait for.)
        drop(done);
    }

    /// Syncs the WAL directory if a WAL was created since it was last synced.
    fn sync_dir_if_new(&mut self, fs: &dyn Fs, dir: &Path) -> Result<()> {
        if self.dir_unsynced {
            fs.sync_dir(dir)?;
            self.dir_unsynced = false;
        }
        Ok(())
    }
}

/// How much of the rate a paced writer may run ahead (and a quiet spell may bank): a
/// write that takes the debt past it sleeps the whole debt off.
const PACE_QUANTUM_SECS: f64 = 0.0005;

/// `Options::delayed_write_rate` as a token bucket (RocksDB's `WriteController`): a
/// slowed-down write takes its bytes from a credit that refills at the rate as time
/// passes. Writes that come slower than the rate never wait. Faster ones run into debt,
/// and the write that takes the debt past `PACE_QUANTUM_SECS` of the rate sleeps it all
/// off: a burst waits as long as the rate needs, half a millisecond every few writes
/// rather than a little in every write, which measured p99 9x worse for 0.23x the p99.9
/// (docs/design/core-engine.md, "Slowed-down writes are paced, not put to sleep one by
/// one"; RocksDB's credit refills by the millisecond, which put every paced put above
/// 1.2 ms).
#[derive(Debug, Default)]
pub(crate) struct Pacer {
    /// Bytes writes may take without waiting; negative: the debt not slept off yet.
    credit: f64,
    /// When the credit was last brought up to date (after a wait: when the wait ends).
    at: Option<std::time::Instant>,
}

impl Pacer {
    /// How long a slowed-down write of `bytes` waits at `rate` bytes per second, arriving
    /// `now`; `None` if it need not. The credit never grows past a quantum of the rate,
    /// so a slowdown that starts after a quiet spell starts paced.
    pub fn delay(
        &mut self,
        bytes: usize,
        rate: u64,
        now: std::time::Instant,
    ) -> Option<std::time::Duration> {
        let rate = rate.max(1) as f64;
        let quantum = rate * PACE_QUANTUM_SECS;
        let at = self.at.unwrap_or(now).max(now);
        if let Some(last) = self.at {
            let elapsed = now.saturating_duration_since(last).as_secs_f64();
            self.credit = (self.credit + elapsed * rate).min(quantum);
        }
        self.credit -= bytes as f64;
        if self.credit >= -quantum {
            self.at = Some(at);
            return None;
        }
        let wait = std::time::Duration::from_secs_f64(-self.credit / rate);
        self.credit = 0.0;
        self.at = Some(at + wait);
        Some(wait)
    }
}

pub(crate) struct DbInner {
    pub opts: Options,
    pub fs: Arc<dyn Fs>,
    pub placement: Placement,
    pub tables: Arc<TableCache>,
    /// The value stores: every store's reader and GC (whatever `Options::value_store` says
    /// now: a database keeps reading and collecting the values it separated before), and the
    /// configured store's separator.
    pub values: Arc<crate::vstore::Stores>,
    /// Whether scans read separated values ahead now (`Options::value_read_ahead`).
    pub read_ahead_gate: iter::ReadAheadGate,
    /// Whether a store's GC job runs (decided at open): only then does the write leader
    /// fill `gc_watch`.
    pub watch_writes: bool,
    /// Per GC job (its index in `values.gcs()`), while it judges records live, the keys
    /// users write (the write-queue leader adds them): its move skips them instead of
    /// looking every key up again. One set per job: two stores' jobs may run at once.
    pub gc_watch: Mutex<std::collections::HashMap<usize, value_gc::KeyWatch>>,
    /// The versions' `gc_watch_from`: the last sequence written when the oldest watch in
    /// `gc_watch` began (`u64::MAX`: none), kept under `gc_watch`'s lock.
    pub gc_watch_from: Arc<std::sync::atomic::AtomicU64>,
    /// Lock order: `versions` before `state`.
    pub versions: Mutex<VersionSet>,
    pub state: Mutex<State>,
    /// Wakes background threads: work arrived, or shutdown.
    pub bg_cv: Condvar,
    /// Wakes waiters (stalled writers, flush(), compact_range()): background work finished.
    pub done_cv: Condvar,
    pub wal: Mutex<WalState>,
    pub writers: Mutex<write::WriteQueue>,
    /// Chunks of flushed memtables, faulted in, for the next memtables' arenas.
    pub arena_pool: Arc<crate::memtable::ChunkPool>,
    /// The newest sequence visible to readers.
    pub last_sequence: AtomicU64,
    /// The file-number counter, shared with the `VersionSet`.
    pub next_file: Arc<AtomicU64>,
    /// The time expiring entries are judged by (never going back).
    pub now: crate::ttl::Now,
    /// The manifest names the `expiring-entries` feature (`DbInner::record_expiring`).
    pub expiring: AtomicBool,
    /// The manifest names the `range-deletes` feature (`DbInner::record_range_deletes`).
    pub range_deletes: AtomicBool,
    pub snapshots: Arc<SnapshotList>,
    pub stats: Stats,
    /// Paces slowed-down writes to `delayed_write_rate`; touched only by the write-queue
    /// leader.
    pub pacer: Mutex<Pacer>,
    /// Reads (gets, new iterators) since the last write
    /// (`Options::read_compaction_min_straight_reads`).
    pub straight_reads: AtomicU64,
    /// Set by a read (a get, a new iterator) while `Options::idle_compaction_delay` is set,
    /// cleared by the compaction thread that looks for idleness: reads keep the database
    /// from being idle. A flag, not a count: a read pays a load of a line that stays shared
    /// (and a store only when the flag was clear), not an add on it.
    pub read_seen: AtomicBool,
    /// When the last write group was applied, in nanoseconds since `opened`
    /// (`Options::idle_compaction_delay`). Stamped by each write group, not raised as a
    /// flag as reads are: a stop of writes noticed only when a compaction thread looks
    /// (up to a quarter of the delay late) let `Db::wait_for_compactions`, which waits the
    /// delay and a second for the idle compaction, give up before it started.
    pub last_write_nanos: AtomicU64,
    /// When a compaction thread last found `read_seen` raised, in nanoseconds since `opened`.
    pub last_read_nanos: AtomicU64,
    pub opened: std::time::Instant,
    /// [`coarse_nanos`] at the open.
    pub opened_coarse: u64,
    pub shutting_down: AtomicBool,
    pub closed: AtomicBool,
    /// Opened with `Db::open_read_only`: writes, flushes and compactions are refused.
    pub read_only: bool,
    /// A read-only view's manifest as it read it (what CURRENT named, and how long that
    /// manifest was): an error a read meets once the database has moved on from it is the
    /// writer's doing, `Stale` (`DbInner::view_error`).
    pub view_of: Option<open::ManifestState>,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
    /// Set when a flush or background compaction leaves its manifest record's sync to the
    /// sync thread (`DbInner::sync_later`), which clears it and makes everything queued for
    /// the manifest durable: the flush thread takes the next memtable meanwhile, the
    /// compaction thread the next compaction.
    pub sync_wanted: Mutex<bool>,
    /// Wakes the sync thread: a record to sync, or shutdown.
    pub sync_cv: Condvar,
    /// The obsolete list's state; held while a list is written, not across deletions.
    pub obsolete: Mutex<compact::ObsoleteFiles>,
    /// Held through each pass of `delete_obsolete_files` (one pass at a time).
    pub deletion_pass: Mutex<()>,
    pub _lock: Mutex<Option<Box<dyn FileLock>>>,
}

/// An open database.
pub struct Db {
    pub(crate) inner: Arc<DbInner>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Db({})", self.inner.placement.db_dir().display())
    }
}

impl crate::vstore::NewValueFiles for DbInner {
    fn reserve(&self) -> u64 {
        lock(&self.versions).new_output_number().0
    }

    fn name_all(&self, files: Vec<crate::vstore::ValueFile>) -> Result<()> {
        let numbers: Vec<_> = files
            .iter()
            .map(|f| crate::filename::FileNumber(f.number))
            .collect();
        let mut versions = lock(&self.versions);
        let edit = crate::version::VersionEdit {
            new_value_files: files,
            ..Default::default()
        };
        let applied = versions.log_and_apply(edit);
        versions.release_outputs(&numbers);
        match applied {
            Ok(v) => {
                let mut st = lock(&self.state);
                self.install_super_version(&mut st, v);
                // A new value file may make GC due (the value log past its capacity):
                // wake the background threads now, not at their next timeout.
                st.progress += 1;
                drop(st);
                self.bg_cv.notify_all();
                Ok(())
            }
            Err(e) => {
                drop(versions);
                self.poison(&e);
                Err(e)
            }
        }
    }

    fn release(&self, number: u64) {
        lock(&self.versions).release_outputs(&[crate::filename::FileNumber(number)]);
    }
}

/// A monotonic clock in nanoseconds, read cheaply and only a few milliseconds fine: on
/// Linux `CLOCK_MONOTONIC_COARSE` (the kernel's last tick, read from the vDSO without the
/// time-stamp counter). Each write group stamps it for the idle watch, whose delays are
/// seconds: the precise clock cost a 50-byte put 3 % of its time (docs/design/core-engine.md,
/// "The write path's fixed cost").
pub(crate) fn coarse_nanos() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec for the call's duration, and
        // CLOCK_MONOTONIC_COARSE is a clock every Linux since 2.6.32 has.
        if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) } == 0 {
            return (ts.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec as u64);
        }
    }
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let origin = *ORIGIN.get_or_init(std::time::Instant::now);
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

pub(crate) use crate::sync::lock;

impl DbInner {
    /// Now, in nanoseconds since the open, on the coarse clock ([`coarse_nanos`]): what the
    /// idle stamps (`last_write_nanos`, `last_read_nanos`) are kept in.
    pub fn nanos_since_open(&self) -> u64 {
        coarse_nanos().saturating_sub(self.opened_coarse)
    }

    /// Notes in the write-stall log a wait for `cause` that began at `started` and ends now;
    /// returns how long it took.
    pub(crate) fn note_wait(
        &self,
        cause: crate::stats::WaitCause,
        started: std::time::Instant,
    ) -> std::time::Duration {
        let now = std::time::Instant::now();
        let took = now.saturating_duration_since(started);
        self.stats
            .waits
            .note(cause, took, now.saturating_duration_since(self.opened));
        took
    }

    /// How long the database has seen no write and no read (since the open, if none came).
    /// Writes are stamped as they come; a read only raises `read_seen`, which the caller
    /// turns into a stamp here, so a stop of reads counts from when it was first looked for.
    pub fn quiet_for(&self) -> std::time::Duration {
        let now = self.nanos_since_open();
        if self.read_seen.swap(false, Ordering::Relaxed) {
            self.last_read_nanos.fetch_max(now, Ordering::Relaxed);
        }
        let last = self
            .last_write_nanos
            .load(Ordering::Relaxed)
            .max(self.last_read_nanos.load(Ordering::Relaxed));
        std::time::Duration::from_nanos(now.saturating_sub(last))
    }

    pub fn visible_sequence(&self) -> SeqNo {
        SeqNo(self.last_sequence.load(Ordering::Acquire))
    }

    pub fn super_version(&self) -> Arc<SuperVersion> {
        lock(&self.state).super_version.clone()
    }

    /// What a read reads: the sequence (the snapshot's, or the newest visible) and the
    /// super version to read it in. Without a snapshot both are taken at one instant
    /// (under the state lock): the super version then holds every write at or below the
    /// sequence, and every value file an entry visible at it points into. Read one after
    /// the other, a value log GC could move a value and remove its old segment in between:
    /// the older sequence sees the old pointer, the newer super version no longer holds its
    /// file (a `Corruption` on a healthy database; `tests/value_log.rs`,
    /// `reads_race_value_log_gc`). A snapshot's files stay while it is registered.
    /// A snapshot taken while a compaction filter ran reads the view it pinned.
    pub fn read_view(&self, snapshot: Option<&Snapshot>) -> (SeqNo, Arc<SuperVersion>) {
        if let Some(s) = snapshot {
            if let Some(v) = s
                .view()
                .and_then(|v| v.clone().downcast::<SuperVersion>().ok())
            {
                return (s.sequence(), v);
            }
        }
        let st = lock(&self.state);
        let seq = snapshot.map_or_else(|| self.visible_sequence(), Snapshot::sequence);
        (seq, st.super_version.clone())
    }

    /// A snapshot of the newest visible sequence, registered before anything can remove
    /// what it reads (the sequence is read under the snapshot list's lock: compaction and
    /// the value log's GC read that list after their own writes are visible, so they
    /// either see this snapshot or it sees their writes).
    /// While a job runs a compaction filter, the snapshot pins the super version current
    /// at its sequence (read under the state lock, as `read_view` reads them: it holds
    /// every write at or below it), and reads it for as long as it lives.
    pub fn snapshot(self: &Arc<Self>) -> Snapshot {
        let st = lock(&self.state);
        self.snapshots.take_with(
            || self.visible_sequence(),
            || st.super_version.clone() as crate::snapshot::View,
            || self.now.now(),
        )
    }

    /// Rebuilds the super version after `mem`, `imms` or the version changed, and tells the
    /// table cache the live table bytes (it may read tables another way from now on).
    /// REQUIRES: `state` locked; `version` is the VersionSet's current one.
    /// Makes the values handed to the write-time value store durable (before a WAL sync,
    /// a flush's edit, or close).
    pub fn sync_values(&self) -> Result<()> {
        self.values.sync()
    }

    /// Maps in the pages of the value files numbered `files` that this job wrote, while
    /// the database fits in memory (read-ahead is off then): `ValueFiles::warm`. Beyond
    /// memory it would read whole files for reads that take tens of bytes of them.
    pub fn warm_values(&self, files: &[u64]) {
        if files.is_empty() || self.read_ahead_gate.on() {
            return;
        }
        // Only files the current version holds, and it held meanwhile: a file a later job
        // collected may be gone, and a handle opened after its eviction would stay open.
        let v = self.super_version().version.clone();
        for f in files.iter().filter_map(|n| v.values.get(n)) {
            self.values.warm(f);
        }
    }

    pub fn install_super_version(&self, state: &mut State, version: Arc<Version>) {
        // NB: a memtable switch keeps the version; its bytes are what the cache was told.
        if !Arc::ptr_eq(&state.super_version.version, &version) {
            self.tables.set_live_bytes(version.total_bytes());
            self.read_ahead_gate.set_version(&version);
        }
        state.super_version = Arc::new(SuperVersion {
            mem: state.mem.clone(),
            imms: state.imms.iter().rev().cloned().collect(),
            pending_compaction_bytes: crate::compaction::picker::pending_compaction_bytes(
                &version, &self.opts,
            ),
            version,
        });
    }

    /// Charges table `f` with one read that searched it in vain; wakes a
    /// compaction thread when that makes it a read-triggered compaction candidate
    /// (`Options::read_compaction_bytes`).
    pub fn charge_read(&self, f: &crate::version::FileMeta) {
        let Some(allowed) = self.opts.allowed_read_charges(f.size) else {
            return;
        };
        if f.read_charges.add() == allowed {
            lock(&self.state).progress += 1;
            self.bg_cv.notify_all();
        }
    }

    /// Counts a read (a get or a new iterator) for `read_compaction_min_straight_reads`;
    /// wakes a compaction thread when the count passes it, since read-triggered
    /// compactions may run from then on.
    pub fn count_read(&self) {
        if self.opts.idle_compaction_delay.is_some() && !self.read_seen.load(Ordering::Relaxed) {
            self.read_seen.store(true, Ordering::Relaxed);
        }
        let min = self.opts.read_compaction_min_straight_reads;
        if min == 0 {
            return;
        }
        if self.straight_reads.fetch_add(1, Ordering::Relaxed) == min {
            lock(&self.state).progress += 1;
            self.bg_cv.notify_all();
        }
    }

    /// Records a background failure: writes fail from now on. Wakes every waiter.
    pub fn poison(&self, err: &Error) {
        let mut st = lock(&self.state);
        if st.bg_error.is_none() && err.kind() != ErrorKind::Closed {
            st.bg_error = Some(Error::new(
                ErrorKind::Poisoned,
                format!("background error: {err}"),
            ));
        }
        drop(st);
        self.done_cv.notify_all();
        self.bg_cv.notify_all();
    }

    pub fn check_open(&self) -> Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::new(ErrorKind::Closed, "database is closed"));
        }
        Ok(())
    }

    /// `NotSupported` for a database opened read-only; `Closed` once closed.
    pub fn check_writable(&self) -> Result<()> {
        self.check_open()?;
        if self.read_only {
            return Err(Error::new(
                ErrorKind::NotSupported,
                "the database was opened read-only (Db::open_read_only): writes, flushes and \
                 compactions are refused",
            ));
        }
        Ok(())
    }
}

impl Db {
    /// Opens (or creates, per `opts.create_if_missing`) the database at `path`, replaying
    /// its WALs.
    ///
    /// # Errors
    /// `InvalidArgument` for bad options (naming the field) or a missing database;
    /// `Busy` if another process holds it; `Corruption` naming file and offset for damaged
    /// files; `NotSupported` for a newer format; I/O errors.
    pub fn open(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Ok(Db {
            inner: open::open(path.as_ref(), opts)?,
        })
    }

    /// Opens the database at `path` for reading only (RocksDB's `OpenForReadOnly`): nothing
    /// is written, created or deleted. No lock is taken, so it may run while another
    /// process holds the database. The WALs are replayed into memory, so reads see every
    /// write acknowledged before the open (and synced or handed to the OS: the writer's
    /// unflushed buffer is invisible); writes, flushes and compactions fail with
    /// `NotSupported`.
    ///
    /// It is a view as of the open: writes another process makes later are not seen (reopen
    /// for a newer view), and tables or value files that process deletes after its
    /// compactions become unreadable here unless already open; reads of them then fail with
    /// an I/O error. Beside a writing `matrixkv` database (L0 in persistent memory), reads of
    /// L0 fail with `Corruption` once the writer's column compactions reuse the pages of the
    /// rows this view opened with: reopen the view (a check per page read is planned). The
    /// open itself reads the newer manifest when the writer deletes files it named while
    /// it opens. The L0 layout is the one the manifest records, whatever the options say.
    ///
    /// # Errors
    /// `InvalidArgument` for bad options or a missing database; `Corruption` naming file and
    /// offset for damaged files (and for a directory without CURRENT that holds a database's
    /// files); `NotSupported` for a newer format; I/O errors.
    pub fn open_read_only(path: impl AsRef<Path>, opts: Options) -> Result<Db> {
        Ok(Db {
            inner: open::open_read_only(path.as_ref(), opts)?,
        })
    }

    /// Bytes of the tables that hold keys in [`lo`, `hi`] (user keys; `None` = unbounded):
    /// whole tables, so an estimate at table granularity (LevelDB's
    /// `GetApproximateSizes`, plyvel's `approximate_sizes`). Memtables and separated values
    /// are not counted.
    ///
    /// # Errors
    /// `Closed` after close.
    pub fn approximate_size(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<u64> {
        self.inner.check_open()?;
        let v = self.inner.super_version().version.clone();
        Ok((0..v.num_levels())
            .flat_map(|l| v.files(l).iter())
            .filter(|f| f.overlaps(lo, hi))
            .map(|f| f.size)
            .sum())
    }

    /// Whether the database was opened with [`Db::open_read_only`].
    pub fn is_read_only(&self) -> bool {
        self.inner.read_only
    }

    /// The value of `key`, or `None`.
    ///
    /// # Errors
    /// `Corruption` or I/O errors reading tables; `Closed` after close.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_opt(&ReadOptions::default(), key)
    }

    /// The value of `key` as of `opts.snapshot` (or now).
    ///
    /// # Errors
    /// As for [`Db::get`].
    pub fn get_opt(&self, opts: &ReadOptions, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.inner.check_open()?;
        read::get(&self.inner, opts, key.as_ref()).map_err(|e| self.inner.view_error(e))
    }

    /// Sets `key` to `value`.
    ///
    /// # Errors
    /// `InvalidArgument` for an oversized key (> 64 KiB) or value (> 64 MiB); `Poisoned`
    /// after a background failure; `Closed`; I/O errors writing the WAL.
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut b = WriteBatch::with_capacity(WriteBatch::entry_capacity(key.len(), value.len()));
        b.put(key, value);
        self.write(&WriteOptions::default(), b)
    }

    /// Sets `key` to `value` for `ttl`: from then on no read returns it (it reads as
    /// deleted, hiding older versions of the key as a delete does), and compactions
    /// remove it. A ttl of zero writes a value that is never read. docs/design/ttl.md
    /// says how expiry meets snapshots, clocks and restarts.
    ///
    /// # Errors
    /// As for [`Db::put`].
    pub fn put_with_ttl(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ttl: std::time::Duration,
    ) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        let mut b =
            WriteBatch::with_capacity(WriteBatch::entry_capacity(key.len(), value.len() + 8));
        b.put_with_ttl(key, value, ttl);
        self.write(&WriteOptions::default(), b)
    }

    /// Deletes `key` (a no-op if absent).
    ///
    /// # Errors
    /// As for [`Db::put`].
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete(key);
        self.write(&WriteOptions::default(), b)
    }

    /// Deletes every key in `[start, end)`: one write, whatever the number of keys it
    /// covers. Reads stop seeing them at once; their space comes back as compactions
    /// rewrite the tables holding them (`compact_range` over the range does it now).
    /// Snapshots taken before it still see the keys. An empty range (`start == end`)
    /// deletes nothing (docs/design/range-deletes.md).
    ///
    /// # Errors
    /// `InvalidArgument` if `start` is above `end`; otherwise as for [`Db::put`].
    pub fn delete_range(&self, start: impl AsRef<[u8]>, end: impl AsRef<[u8]>) -> Result<()> {
        let mut b = WriteBatch::new();
        b.delete_range(start, end);
        self.write(&WriteOptions::default(), b)
    }

    /// Applies `batch` atomically: readers see all of it or none of it, and so does recovery.
    ///
    /// # Errors
    /// As for [`Db::put`].
    pub fn write(&self, opts: &WriteOptions, batch: WriteBatch) -> Result<()> {
        self.inner.check_writable()?;
        write::write(&self.inner, opts, batch)
    }

    /// An iterator over the database (unpositioned: call a seek first, or use it as a Rust
    /// `Iterator`, which starts at the lower bound).
    ///
    /// # Errors
    /// `Closed` after close.
    pub fn iter(&self, opts: ReadOptions) -> Result<DbIterator> {
        self.inner.check_open()?;
        Ok(iter::new(&self.inner, opts))
    }

    /// A consistent point-in-time view for `get_opt` and `iter`; released on drop.
    pub fn snapshot(&self) -> Snapshot {
        self.inner.snapshot()
    }

    /// Flushes the memtable to an L0 table and waits until every memtable is flushed.
    ///
    /// # Errors
    /// `Poisoned` if a background job failed; `Closed`; I/O errors.
    pub fn flush(&self) -> Result<()> {
        self.inner.check_writable()?;
        flush::flush_and_wait(&self.inner)
    }

    /// Waits until background work is idle: no memtable waiting for or in its flush, no
    /// compaction running, and no level over its target (compactions that reads would
    /// trigger are not waited for). What a benchmark measures space with, and what a test
    /// waits for before it inspects the tree (RocksDB's `WaitForCompact`). Writes made
    /// meanwhile may keep it waiting.
    ///
    /// # Errors
    /// `Poisoned` if a background job failed; `Closed`.
    pub fn wait_for_compactions(&self) -> Result<()> {
        self.inner.check_open()?;
        if self.inner.read_only {
            return Ok(()); // nothing runs
        }
        compact::wait_idle(&self.inner)
    }

    /// Compacts every file overlapping [`lo`, `hi`] (user keys, inclusive; `None` = unbounded)
    /// down to the deepest populated level, dropping overwritten versions and tombstones.
    ///
    /// # Errors
    /// As for [`Db::flush`], plus errors of the compaction.
    pub fn compact_range(&self, lo: Option<&[u8]>, hi: Option<&[u8]>) -> Result<()> {
        self.inner.check_writable()?;
        compact::compact_range(&self.inner, lo, hi)
    }

    /// Writes a consistent, openable copy of the database to the new directory `dir` (RocksDB's
    /// `Checkpoint`): every write acknowledged before the call, none begun after it returns,
    /// all files in `dir` alone (linked where the file system allows, copied where not), as
    /// of one instant between the two. Open it as any database (with the same options, or
    /// with others as any reopen may). docs/design/checkpoints.md says what it holds and
    /// which databases it refuses for now.
    ///
    /// # Errors
    /// `InvalidArgument` if `dir` exists or its parent does not; `NotSupported` for a
    /// database opened read-only; the flush's and the copy's I/O errors (`dir` is then not
    /// created). A matrix L0's region is copied into `dir` with the rest
    /// (docs/design/checkpoints.md says how to open such a copy with a `pmem_dir`).
    pub fn checkpoint(&self, dir: impl AsRef<Path>) -> Result<()> {
        checkpoint::checkpoint(&self.inner, dir.as_ref())
    }

    /// Counters and level shape.
    pub fn stats(&self) -> StatsSnapshot {
        let mut s = self.inner.stats.snapshot();
        s.manifest_bytes = lock(&self.inner.versions).manifest_bytes();
        let v = self.inner.super_version().version.clone();
        s.files_per_level = v.levels.iter().map(|l| l.len()).collect();
        s.bytes_per_level = (0..v.num_levels()).map(|l| v.level_bytes(l)).collect();
        let r = self.inner.tables.file_reads();
        let l = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        s.table_open_reads = l(&r.open_reads);
        s.table_open_read_bytes = l(&r.open_bytes);
        s.table_block_reads = l(&r.block_reads);
        s.table_block_read_bytes = l(&r.block_bytes);
        s
    }

    /// A named text property: `strata.stats` (the stats report), `strata.levels` (files per
    /// level), `strata.num-files-at-level<N>`, `strata.num-running-flushes`,
    /// `strata.num-running-compactions`, `strata.num-immutable-memtables`,
    /// `strata.l0-layout` (the L0 layout's name), `strata.kept-files` (`none`, or the files
    /// kept unnamed for `repair` after an open dropped a damaged manifest record, and what
    /// was dropped), `strata.table-reads` (how tables open
    /// now: `Mapped`, `MappedRandom` or `Positional`; see `Options::table_reads`), and OHDB's columns:
    /// `strata.level-compactions` (C), `strata.tables` (SN), `strata.total-bytes-written`
    /// (TW), `strata.compaction-bytes-read` (CR), `strata.compaction-bytes-written` (CW);
    /// the value store's `strata.value-files`, `strata.value-bytes` (their size),
    /// `strata.value-live-bytes` and `strata.value-garbage-bytes` (records whose pointers
    /// compactions dropped), `strata.value-stores` (each value store's state and GC
    /// counters), `strata.write-stalls` (what writes waited for since the open, by cause:
    /// stops for the memtables, L0 or pending compaction bytes, slowdowns, memtable switches,
    /// value space, contended locks; with the count, total and longest wait of each, and the
    /// latest waits of 20 ms or more with when they ended, in seconds since the open; empty
    /// if no write waited), `strata.range-tombstones` (the flushed range deletions still
    /// held, and the files holding them: `N in F files`), and `strata.options` (the options this open was given, as
    /// written to the `OPTIONS` file: docs/format/options.md).
    pub fn property(&self, name: &str) -> Option<String> {
        self.property_value(name)
    }

    /// Every name [`Db::property`] knows (`strata.num-files-at-level<N>` for each level).
    pub const PROPERTY_NAMES: &'static [&'static str] = &[
        "strata.stats",
        "strata.levels",
        "strata.num-files-at-level<N>",
        "strata.num-running-flushes",
        "strata.num-running-compactions",
        "strata.num-immutable-memtables",
        "strata.l0-layout",
        "strata.kept-files",
        "strata.table-reads",
        "strata.features",
        "strata.level-compactions",
        "strata.tables",
        "strata.total-bytes-written",
        "strata.compaction-bytes-read",
        "strata.compaction-bytes-written",
        "strata.value-files",
        "strata.value-bytes",
        "strata.value-live-bytes",
        "strata.value-garbage-bytes",
        "strata.value-stores",
        "strata.write-stalls",
        "strata.range-tombstones",
        "strata.options",
    ];

    fn property_value(&self, name: &str) -> Option<String> {
        match name {
            "strata.options" => Some(open::options_file_text(
                &self.inner.opts,
                lock(&self.inner.versions).recorded(),
            )),
            "strata.table-reads" => Some(format!("{:?}", self.inner.tables.access())),
            "strata.range-tombstones" => {
                let v = self.inner.super_version().version.clone();
                let files = v.ranges.live().count();
                let tombstones: usize = v.ranges.live().map(|f| f.tombstones.len()).sum();
                let retired = v.ranges.files().count() - files;
                Some(if retired == 0 {
                    format!("{tombstones} in {files} files")
                } else {
                    let held: usize = v.ranges.files().map(|f| f.tombstones.len()).sum();
                    format!(
                        "{tombstones} in {files} files; {} more in {retired} files kept for \
                         the value store's GC",
                        held - tombstones
                    )
                })
            }
            // What the manifest records that reading depends on (tuning options are only
            // recorded for people, in OPTIONS: a database opens with whatever it is given).
            "strata.features" => Some(
                crate::version::set::features_of(
                    &self.inner.super_version().version,
                    crate::registry::formats(),
                )
                .join(","),
            ),
            "strata.l0-layout" => Some(format!(
                "{:?}",
                self.inner.super_version().version.l0.kind()
            )),
            "strata.level-compactions" => Some(self.stats().level_compactions().to_string()),
            "strata.tables" => Some(self.stats().tables().to_string()),
            "strata.total-bytes-written" => Some(self.stats().total_bytes_written().to_string()),
            "strata.compaction-bytes-read" => {
                Some(self.stats().compaction_bytes_read().to_string())
            }
            "strata.compaction-bytes-written" => {
                Some(self.stats().compaction_bytes_written().to_string())
            }
            "strata.stats" => Some(self.stats().to_text()),
            // What writes waited for, by cause, and the latest long waits.
            "strata.write-stalls" => Some(self.inner.stats.waits.to_text()),
            // The value store: files, their size, and the bytes of records compactions found
            // dropped (garbage) and of the rest (live).
            "strata.value-files"
            | "strata.value-bytes"
            | "strata.value-live-bytes"
            | "strata.value-garbage-bytes" => {
                let v = self.inner.super_version().version.clone();
                let files = v.values.values();
                // (A store that records no size (the value log's segments, which take
                // appends): the file's size on disk; no count of its records' bytes: the
                // size, less what is garbage.)
                let size = |f: &crate::value::ValueFile| {
                    if f.size > 0 {
                        f.size
                    } else {
                        self.inner
                            .fs
                            .file_size(&f.path(&self.inner.placement))
                            .unwrap_or(0)
                    }
                };
                Some(
                    match name {
                        "strata.value-files" => v.values.len() as u64,
                        "strata.value-bytes" => files.map(size).sum(),
                        "strata.value-live-bytes" => files
                            .map(|f| {
                                let held = if f.record_bytes > 0 {
                                    f.record_bytes
                                } else {
                                    size(f)
                                };
                                held.saturating_sub(f.garbage_bytes)
                            })
                            .sum(),
                        _ => files.map(|f| f.garbage_bytes).sum(),
                    }
                    .to_string(),
                )
            }
            "strata.levels" => Some(self.inner.super_version().version.level_summary()),
            // Each value store's state and its GC's counters.
            "strata.value-stores" => Some(
                self.inner
                    .values
                    .describe(&self.inner.super_version().version),
            ),
            // Files kept, unnamed, after an open dropped a damaged manifest record.
            "strata.kept-files" => Some(match &self.inner.super_version().version.kept {
                None => "none".to_string(),
                Some(k) => format!(
                    "{} file(s) kept for repair: {}; dropped: {}",
                    k.files.len(),
                    k.files
                        .iter()
                        .map(|n| format!("{n:06}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    k.reason
                ),
            }),
            "strata.num-running-flushes" => {
                Some(u8::from(lock(&self.inner.state).flush_running).to_string())
            }
            "strata.num-running-compactions" => {
                Some(lock(&self.inner.state).compactions_running.to_string())
            }
            "strata.num-immutable-memtables" => {
                Some(lock(&self.inner.state).imms.len().to_string())
            }
            _ => {
                let n: usize = name
                    .strip_prefix("strata.num-files-at-level")?
                    .parse()
                    .ok()?;
                Some(
                    self.inner
                        .super_version()
                        .version
                        .files(n)
                        .len()
                        .to_string(),
                )
            }
        }
    }

    /// Stops background work, syncs the WAL and releases the lock. Later calls return
    /// `Closed`. Called by `drop`.
    ///
    /// # Errors
    /// I/O errors syncing the WAL.
    pub fn close(&self) -> Result<()> {
        open::close(&self.inner)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

#[cfg(test)]
mod pacer_tests {
    use std::time::{Duration, Instant};

    use super::Pacer;

    const RATE: u64 = 16 << 20;

    #[test]
    fn writes_slower_than_the_rate_never_wait() {
        // 4 KiB every 500 us is 8 MiB/s, half the rate: no write waits. (Charging each
        // write without crediting the time between them, the rule before, made every
        // fourth write sleep a millisecond.)
        let mut p = Pacer::default();
        let t0 = Instant::now();
        for i in 0..1000u32 {
            let now = t0 + Duration::from_micros(500) * i;
            assert_eq!(p.delay(4096, RATE, now), None, "write {i} waited");
        }
    }

    /// The credit (and the debt run up free) at `RATE`: 8 KiB.
    const QUANTUM: usize = (RATE as f64 * super::PACE_QUANTUM_SECS) as usize;

    #[test]
    fn a_burst_waits_as_long_as_the_rate_needs_a_quantum_at_a_time() {
        let mut p = Pacer::default();
        let now = Instant::now();
        let (mut total, mut waits) = (Duration::ZERO, 0);
        // Each wait follows a quantum of debt run up free, and pays it and its own write.
        let per_wait = QUANTUM / 4096 + 1;
        let longest = Duration::from_secs_f64((QUANTUM + 4096) as f64 / RATE as f64);
        for _ in 0..4096 {
            if let Some(wait) = p.delay(4096, RATE, now) {
                assert!(wait <= longest, "{wait:?} in one write");
                total += wait;
                waits += 1;
            }
        }
        let want_waits = 4096 / per_wait;
        assert!(
            (want_waits - 10..=want_waits + 10).contains(&waits),
            "{waits} waits: one per {per_wait} writes"
        );
        // 16 MiB at 16 MiB/s: a second.
        let want = Duration::from_secs(1);
        assert!(
            total > want - Duration::from_millis(2) && total < want + Duration::from_millis(2),
            "{total:?}"
        );
    }

    #[test]
    fn a_quiet_spell_buys_at_most_a_quantum_of_credit() {
        let mut p = Pacer::default();
        let t0 = Instant::now();
        while p.delay(4096, RATE, t0).is_none() {}
        let later = t0 + Duration::from_secs(10);
        let free = (0..100)
            .take_while(|_| p.delay(4096, RATE, later).is_none())
            .count();
        assert_eq!(
            free,
            2 * QUANTUM / 4096,
            "a quantum of credit and a quantum of debt"
        );
    }
}
