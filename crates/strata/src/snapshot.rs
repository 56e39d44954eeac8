//! [`Snapshot`]: a pinned sequence number. While it lives, compaction keeps every version it
//! can see. (Ground: read options name it, and it needs only a sequence and a lock.)
//!
//! A job running a compaction filter changes what the newest versions read, and a snapshot
//! taken while it runs could see them before and after it installs its result; such a
//! snapshot therefore also pins the read view it was taken on (the memtables and version),
//! and reads that view for as long as it lives ([`SnapshotList::begin_filtering`]).

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::key::SeqNo;

/// A read view a snapshot pins (the engine's super version).
pub(crate) type View = Arc<dyn Any + Send + Sync>;

/// Live snapshots: sequence -> how many handles pin it, and the filtering jobs running.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<Live>,
}

#[derive(Debug, Default)]
struct Live {
    pins: BTreeMap<u64, usize>,
    /// Jobs running a compaction filter ([`FilteringJob`]s alive).
    filtering: usize,
}

impl SnapshotList {
    /// A snapshot at the sequence `current` returns, read while the list is locked: a
    /// reader of `sequences` sees the snapshot or runs before its sequence was read. While a
    /// filtering job runs, the snapshot also pins `view()` (the read view holding every
    /// write at or below that sequence), and reads it for as long as it lives.
    pub fn take_with(
        self: &Arc<Self>,
        current: impl FnOnce() -> SeqNo,
        view: impl FnOnce() -> View,
        now: impl FnOnce() -> u64,
    ) -> Snapshot {
        let mut live = crate::sync::lock(&self.live);
        let seq = current();
        // Read under the list's lock, as jobs read their time with the snapshots: a
        // snapshot a job does not see reads at a time no earlier than the job's.
        let time = now();
        *live.pins.entry(seq.0).or_default() += 1;
        let view = (live.filtering > 0).then(view);
        drop(live);
        Snapshot {
            inner: Arc::new(Pin {
                seq,
                time,
                list: self.clone(),
                view,
            }),
        }
    }

    /// Every pinned sequence, ascending, and the engine's time read with them (`now`, under
    /// the list's lock): what a job judges expiry by.
    pub fn sequences_at(&self, now: impl FnOnce() -> u64) -> (Vec<SeqNo>, u64) {
        let live = crate::sync::lock(&self.live);
        let time = now();
        (live.pins.keys().map(|&s| SeqNo(s)).collect(), time)
    }

    /// Every pinned sequence, ascending.
    pub fn sequences(&self) -> Vec<SeqNo> {
        crate::sync::lock(&self.live)
            .pins
            .keys()
            .map(|&s| SeqNo(s))
            .collect()
    }

    /// A job about to run a compaction filter: the snapshots live now (the filter is not
    /// offered what they see), and a guard, held until the job's result is installed (or
    /// dropped), while which every new snapshot pins its read view. Taken in one step, so a
    /// snapshot is either among those returned or pins a view from before the install.
    /// The engine's time is read with them (`now`), as in [`SnapshotList::sequences_at`].
    pub fn begin_filtering(
        self: &Arc<Self>,
        now: impl FnOnce() -> u64,
    ) -> (Vec<SeqNo>, u64, FilteringJob) {
        let mut live = crate::sync::lock(&self.live);
        live.filtering += 1;
        let time = now();
        let seqs = live.pins.keys().map(|&s| SeqNo(s)).collect();
        drop(live);
        (seqs, time, FilteringJob { list: self.clone() })
    }
}

/// A filtering job's hold on the snapshot list ([`SnapshotList::begin_filtering`]).
#[derive(Debug)]
pub(crate) struct FilteringJob {
    list: Arc<SnapshotList>,
}

impl Drop for FilteringJob {
    fn drop(&mut self) {
        crate::sync::lock(&self.list.live).filtering -= 1;
    }
}

#[derive(Debug)]
struct Pin {
    seq: SeqNo,
    /// The engine's time when it was taken: what its reads judge expiry by.
    time: u64,
    list: Arc<SnapshotList>,
    view: Option<View>,
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut live = crate::sync::lock(&self.list.live);
        if let Some(n) = live.pins.get_mut(&self.seq.0) {
            *n -= 1;
            if *n == 0 {
                live.pins.remove(&self.seq.0);
            }
        }
        drop(live);
        // (The view, dropped after the lock: it may hold the last reference to memtables
        // and a version.)
        self.view.take();
    }
}

/// A consistent read view; cheap to clone, released when the last clone drops.
#[derive(Debug, Clone)]
pub struct Snapshot {
    inner: Arc<Pin>,
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SeqNo {
        self.inner.seq
    }

    /// The engine's time when the snapshot was taken (ms since the Unix epoch): its reads
    /// judge expiring entries by it, so they repeat (docs/design/ttl.md).
    pub(crate) fn time(&self) -> u64 {
        self.inner.time
    }

    /// The read view this snapshot pinned, if it was taken while a filtering job ran.
    pub(crate) fn view(&self) -> Option<&View> {
        self.inner.view.as_ref()
    }
}
