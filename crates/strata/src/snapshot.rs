//! [`Snapshot`]: a pinned sequence number. While it lives, compaction keeps every version it
//! can see. (Ground: read options name it, and it needs only a sequence and a lock.)

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::key::SeqNo;

/// Live snapshots: sequence -> how many handles pin it.
#[derive(Debug, Default)]
pub(crate) struct SnapshotList {
    live: Mutex<BTreeMap<u64, usize>>,
}

impl SnapshotList {
    /// A snapshot at the sequence `current` returns, read while the list is locked: a
    /// reader of `sequences` sees the snapshot or runs before its sequence was read.
    pub fn take_with(self: &Arc<Self>, current: impl FnOnce() -> SeqNo) -> Snapshot {
        let mut live = crate::sync::lock(&self.live);
        let seq = current();
        *live.entry(seq.0).or_default() += 1;
        drop(live);
        Snapshot {
            inner: Arc::new(Pin {
                seq,
                list: self.clone(),
            }),
        }
    }

    /// Every pinned sequence, ascending.
    pub fn sequences(&self) -> Vec<SeqNo> {
        crate::sync::lock(&self.live)
            .keys()
            .map(|&s| SeqNo(s))
            .collect()
    }
}

#[derive(Debug)]
struct Pin {
    seq: SeqNo,
    list: Arc<SnapshotList>,
}

impl Drop for Pin {
    fn drop(&mut self) {
        let mut live = crate::sync::lock(&self.list.live);
        if let Some(n) = live.get_mut(&self.seq.0) {
            *n -= 1;
            if *n == 0 {
                live.remove(&self.seq.0);
            }
        }
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
}
