//! What a value store's GC job reaches of the database ([`GcContext`], implemented here by
//! [`GcJob`] so that `vstore` imports nothing from `db`), and the pacing of writes to it. The jobs
//! themselves live with their stores (the value log's: `vstore/vlog/gc.rs`); `bg` runs
//! each on a thread of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{lock, write, DbInner};
use crate::compaction_filter::{FilterReason, Outcome};
use crate::error::Result;
use crate::key::SeqNo;
use crate::key::ValueKind;
use crate::memtable::Lookup;
use crate::stats::Stats;
use crate::version::{Version, VersionEdit};
use crate::vstore::{GcContext, GcView, NewValueFiles, Relocated};

/// GC job `job` (its index in `DbInner::values.gcs()`) of a database: what the job reaches.
pub(crate) struct GcJob<'a> {
    pub db: &'a DbInner,
    pub job: usize,
}

impl GcContext for GcJob<'_> {
    fn version(&self) -> Arc<Version> {
        self.db.super_version().version.clone()
    }

    fn closing(&self) -> bool {
        self.db.shutting_down.load(Ordering::Acquire)
    }

    fn stats(&self) -> &Stats {
        &self.db.stats
    }

    fn watch(&self) {
        let mut watches = lock(&self.db.gc_watch);
        // (Under the lock: no write is published between this sequence and the watch.
        // The write leader adds to the watches under it too.)
        let since = self.db.last_sequence.load(Ordering::SeqCst);
        watches.insert(
            self.job,
            KeyWatch {
                since,
                ..Default::default()
            },
        );
        note_oldest_watch(self.db, &watches);
    }

    fn unwatch(&self) {
        let mut watches = lock(&self.db.gc_watch);
        watches.remove(&self.job);
        note_oldest_watch(self.db, &watches);
    }

    fn newest_entry(&self, user_key: &[u8]) -> Result<Option<Lookup>> {
        self.db.newest_entry(user_key)
    }

    fn view(&self) -> Box<dyn GcView + '_> {
        Box::new(self.db.super_version())
    }

    fn write_relocated(&self, moved: Vec<Relocated>) -> Result<SeqNo> {
        let at = write::write_relocated(self.db, self.job, moved, false)?;
        write::sync_wal_unqueued(self.db)?;
        Ok(at)
    }

    fn write_relocated_part(&self, moved: Vec<Relocated>) -> Result<()> {
        write::write_relocated(self.db, self.job, moved, true)?;
        write::sync_wal_unqueued(self.db)
    }

    fn files(&self) -> &dyn NewValueFiles {
        self.db
    }

    fn snapshot_below(&self, seq: SeqNo) -> bool {
        self.db.snapshots.sequences().iter().any(|&s| s < seq)
    }

    fn filter(&self, key: &[u8], value: &[u8]) -> Result<Outcome> {
        if self.db.opts.compaction_filter.is_none() {
            return Ok(Outcome::Keep);
        }
        let version = self.db.super_version().version.clone();
        let env = super::filter::JobEnv {
            db: self.db,
            version: &version,
        };
        // (No snapshot is in the way: what the step writes instead is a new write.)
        let snaps = super::filter::JobSnapshots {
            seqs: Vec::new(),
            time: self.db.now.now(),
            hold: None,
        };
        let outcome = match env.filtering(FilterReason::ValueGc, &snaps) {
            Some(mut f) => f.decide(key, SeqNo::MAX, ValueKind::Put, value)?,
            None => Outcome::Keep,
        };
        if outcome != Outcome::Keep {
            Stats::add(&self.db.stats.filtered_entries, 1);
            Stats::add(&self.db.stats.gc_filtered_entries, 1);
        }
        Ok(outcome)
    }

    fn apply(&self, mut edit: VersionEdit) -> Result<()> {
        let db = self.db;
        let mut versions = lock(&db.versions);
        // A file a GC replaced may have left the version on its own meanwhile (every
        // pointer into it dropped: all garbage) while a snapshot kept its removal waiting.
        if !edit.deleted_value_files.is_empty() {
            let current = versions.current();
            edit.deleted_value_files
                .retain(|n| current.values.contains_key(n));
            if edit == VersionEdit::default() {
                return Ok(());
            }
        }
        let v = versions.log_and_apply(edit)?;
        let mut st = lock(&db.state);
        db.install_super_version(&mut st, v);
        st.progress += 1;
        drop(st);
        drop(versions);
        // Writes paced to the GC (`wait_for_value_space`) go on.
        db.done_cv.notify_all();
        Ok(())
    }
}

impl GcView for Arc<super::SuperVersion> {
    fn version(&self) -> &Arc<Version> {
        &self.version
    }

    fn memtable_entry(&self, user_key: &[u8]) -> Option<Lookup> {
        std::iter::once(&self.mem)
            .chain(self.imms.iter())
            .find_map(|m| m.get(user_key, SeqNo::MAX).map(|(_, found)| found))
    }

    fn ranges_touch(&self, user_key: &[u8]) -> bool {
        std::iter::once(&self.mem)
            .chain(self.imms.iter())
            .any(|m| m.has_ranges() && m.range_pieces().touches(user_key))
            || self.version.ranges.every_piece().touches(user_key)
    }
}

/// Paces writes to the value stores' GC: while a store's GC asks for it (the value log
/// larger than `vlog_capacity`, the hash store's reserve used up), the write-queue leader
/// waits for the GC to finish a step (or anything else in the background to progress, at
/// most 100 ms per write group), so
/// the store's size stays near its capacity instead of outrunning its collection. Counted
/// as a stall. Never waits for ever: if the live values alone exceed the capacity, GC
/// moves whole files and writes go at its pace; and not at all while GC can free nothing
/// (the store's `pace_writes` says so while a collected file waits for a snapshot).
pub(crate) fn wait_for_value_space(db: &DbInner) {
    if !db.values.pace_writes(|| db.super_version().version.clone()) {
        return;
    }
    let started = std::time::Instant::now();
    // The progress count is read before the queue is looked at: a GC write queued after
    // the look raises it (`write::commit`), so this wait cannot miss it.
    let progress = lock(&db.state).progress;
    if write::relocation_queued(db) {
        return;
    }
    let st = lock(&db.state);
    let asleep =
        |s: &mut super::State| !db.shutting_down.load(Ordering::Acquire) && s.progress == progress;
    drop(
        db.done_cv
            .wait_timeout_while(st, std::time::Duration::from_millis(100), asleep),
    );
    Stats::add(&db.stats.stalls, 1);
    let took = db.note_wait(crate::stats::WaitCause::ValueSpace, started);
    Stats::add(&db.stats.stall_micros, took.as_micros() as u64);
}

/// Records in `DbInner::gc_watch_from` the start of the oldest of `watches` (called under
/// their lock whenever one begins or ends).
pub(crate) fn note_oldest_watch(
    db: &DbInner,
    watches: &std::collections::HashMap<usize, KeyWatch>,
) {
    let oldest = watches.values().map(|w| w.since).min().unwrap_or(u64::MAX);
    db.gc_watch_from.store(oldest, Ordering::SeqCst);
}

/// The keys users wrote while a GC job watched (`DbInner::gc_watch`): exact membership
/// without an allocation per key. The write leader adds every key of every write group
/// while a job judges records live, so under a GC that runs most of the time (the hash
/// store's first-GC wave) a set of copied keys cost the writing thread an allocation, a
/// SipHash and a share of the set's rehashing per key, and the GC thread, which drops the
/// set, freed those allocations from the writer's malloc arena while the writer allocated
/// in it (both threads waiting on the arena's lock; docs/design/hashkv.md, "Where phase
/// 2's time goes, and what was cut"). Here the keys' bytes go to one buffer and a map from
/// each key's seeded xxh3 hash to where the first key with that hash lies; a key whose
/// hash is taken by a different key (rare, and not steerable by users: the seed is drawn
/// per watch) goes to a plain set, so a lookup is exact whatever the hashes.
pub(crate) struct KeyWatch {
    seed: u64,
    bytes: Vec<u8>,
    /// Hash -> (offset, length) in `bytes` of the first key written with that hash (the
    /// block cache's integer hasher: its keys are hashes already).
    first: std::collections::HashMap<u64, (usize, usize), crate::cache::IntBuild>,
    /// Keys whose hash an earlier, different key holds in `first`.
    others: std::collections::HashSet<Vec<u8>>,
    /// Ranges deleted since the watch began (`[start, end)`): every key in them counts as
    /// written.
    ranges: Vec<(Vec<u8>, Vec<u8>)>,
    /// The last sequence written when the watch began.
    pub since: u64,
    /// Tests: every key hashes alike.
    #[cfg(test)]
    all_collide: bool,
}

impl Default for KeyWatch {
    fn default() -> Self {
        use std::hash::BuildHasher;
        KeyWatch {
            seed: std::collections::hash_map::RandomState::new().hash_one(0u64),
            bytes: Vec::new(),
            first: Default::default(),
            others: Default::default(),
            ranges: Vec::new(),
            since: 0,
            #[cfg(test)]
            all_collide: false,
        }
    }
}

impl KeyWatch {
    fn hash(&self, key: &[u8]) -> u64 {
        #[cfg(test)]
        if self.all_collide {
            return 7;
        }
        xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed)
    }

    /// Notes that `key` was written.
    pub(crate) fn insert(&mut self, key: &[u8]) {
        use std::collections::hash_map::Entry;
        let h = self.hash(key);
        match self.first.entry(h) {
            Entry::Vacant(e) => {
                e.insert((self.bytes.len(), key.len()));
                self.bytes.extend_from_slice(key);
            }
            Entry::Occupied(e) => {
                let (at, len) = *e.get();
                if &self.bytes[at..at + len] != key && !self.others.contains(key) {
                    self.others.insert(key.to_vec());
                }
            }
        }
    }

    /// Notes that every key in `[start, end)` was deleted.
    pub(crate) fn insert_range(&mut self, start: &[u8], end: &[u8]) {
        if start < end {
            self.ranges.push((start.to_vec(), end.to_vec()));
        }
    }

    /// Whether `key` was written (or deleted by a range) since the watch began.
    pub(crate) fn contains(&self, key: &[u8]) -> bool {
        if self
            .ranges
            .iter()
            .any(|(s, e)| s.as_slice() <= key && key < e.as_slice())
        {
            return true;
        }
        match self.first.get(&self.hash(key)) {
            None => false,
            Some(&(at, len)) => &self.bytes[at..at + len] == key || self.others.contains(key),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KeyWatch;

    fn check(w: &mut KeyWatch) {
        for i in 0..2_000u32 {
            w.insert(format!("key{i}").as_bytes());
        }
        w.insert(b"key17"); // again
        for i in 0..2_000u32 {
            assert!(w.contains(format!("key{i}").as_bytes()), "key{i}");
        }
        assert!(!w.contains(b"key2000"));
        assert!(!w.contains(b"key"));
        assert!(!w.contains(b""));
        w.insert_range(b"x", b"y");
        w.insert_range(b"b", b"b");
        assert!(w.contains(b"x") && w.contains(b"xz"));
        assert!(!w.contains(b"y") && !w.contains(b"b"));
    }

    #[test]
    fn a_key_watch_is_exact_even_when_hashes_collide() {
        let mut w = KeyWatch::default();
        check(&mut w);
        assert!(w.others.is_empty());
        // Every key hashing alike: membership must still be exact.
        let mut w = KeyWatch {
            all_collide: true,
            ..KeyWatch::default()
        };
        check(&mut w);
        assert_eq!(w.first.len(), 1);
        assert_eq!(w.others.len(), 1_999);
    }
}
