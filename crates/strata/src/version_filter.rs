//! [`VersionFilter`]: which versions of each key survive a flush or a compaction.
//!
//! Within each snapshot stripe only the newest version of a key survives, and a tombstone
//! visible to every snapshot is dropped when no deeper level can hold the key. Used by L0
//! ingest (flush, recovery) and by compaction jobs; it decides, it does no I/O.

use std::sync::Arc;

use crate::key::{SeqNo, ValueKind};
use crate::range_del::Fragments;

/// Decides which versions of each key survive a flush or compaction.
pub struct VersionFilter {
    /// Live snapshots, ascending.
    snapshots: Vec<SeqNo>,
    current_key: Vec<u8>,
    has_key: bool,
    last_stripe: Option<usize>,
    /// Range tombstones that may cover the entries judged (empty: none).
    ranges: Arc<Fragments>,
}

/// The filter's verdict on one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Write it out.
    Keep,
    /// A newer version of the key is visible to every reader that could see this one.
    Hidden,
    /// A tombstone nobody needs any more.
    ObsoleteTombstone,
}

impl VersionFilter {
    /// A filter for the given live snapshots (any order).
    pub fn new(mut snapshots: Vec<SeqNo>) -> Self {
        snapshots.sort();
        snapshots.dedup();
        VersionFilter {
            snapshots,
            current_key: Vec::new(),
            has_key: false,
            last_stripe: None,
            ranges: Arc::default(),
        }
    }

    /// This filter, also dropping entries that range tombstones in `ranges` hide from
    /// every reader that could see them (the deletion in the entry's own snapshot stripe).
    #[must_use]
    pub fn with_ranges(mut self, ranges: Arc<Fragments>) -> Self {
        self.ranges = ranges;
        self
    }

    /// Judges the next entry, in internal-key order. `bottom(user_key)` says whether no deeper
    /// data can hold the key (tombstones are dropped only then).
    pub fn judge(
        &mut self,
        user_key: &[u8],
        seq: SeqNo,
        kind: ValueKind,
        bottom: impl FnOnce() -> bool,
    ) -> Verdict {
        if !self.has_key || self.current_key != user_key {
            self.current_key.clear();
            self.current_key.extend_from_slice(user_key);
            self.has_key = true;
            self.last_stripe = None;
        }
        // Stripe i holds sequences in (snapshots[i-1], snapshots[i]]; the last stripe is
        // everything newer than every snapshot.
        let stripe = self.snapshots.partition_point(|&s| s < seq);
        if self.last_stripe == Some(stripe) {
            return Verdict::Hidden;
        }
        self.last_stripe = Some(stripe);
        if !self.ranges.is_empty() {
            // The oldest deletion newer than the entry: if no snapshot lies between them,
            // every reader that sees the entry sees it deleted (older versions in the
            // stripe are hidden behind it as before).
            if let Some(t) = self.ranges.oldest_newer(user_key, seq) {
                if self.snapshots.partition_point(|&s| s < t) == stripe {
                    return Verdict::Hidden;
                }
            }
        }
        if kind == ValueKind::Delete && stripe == 0 && bottom() {
            // Every reader sees this tombstone, and all older versions are in stripe 0 too,
            // so they are dropped as hidden: the key simply disappears.
            return Verdict::ObsoleteTombstone;
        }
        Verdict::Keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(
        snapshots: Vec<u64>,
        entries: &[(&str, u64, ValueKind)],
        bottom: bool,
    ) -> Vec<(String, u64)> {
        let mut f = VersionFilter::new(snapshots.into_iter().map(SeqNo).collect());
        entries
            .iter()
            .filter(|(k, s, kind)| {
                f.judge(k.as_bytes(), SeqNo(*s), *kind, || bottom) == Verdict::Keep
            })
            .map(|(k, s, _)| (k.to_string(), *s))
            .collect()
    }

    use ValueKind::{Delete as D, Put as P};

    #[test]
    fn range_tombstones_hide_what_every_reader_sees_deleted() {
        use crate::range_del::Tombstone;
        let ranges = Arc::new(Fragments::build(&[Tombstone {
            start: b"b".to_vec(),
            end: b"d".to_vec(),
            seq: SeqNo(10),
        }]));
        let e = [
            ("a", 5, P),
            ("b", 12, P),
            ("b", 8, P),
            ("b", 3, P),
            ("c", 7, D),
            ("d", 2, P),
        ];
        let run = |snaps: Vec<u64>| -> Vec<(String, u64)> {
            let mut f = VersionFilter::new(snaps.into_iter().map(SeqNo).collect())
                .with_ranges(ranges.clone());
            e.iter()
                .filter(|(k, s, kind)| {
                    f.judge(k.as_bytes(), SeqNo(*s), *kind, || true) == Verdict::Keep
                })
                .map(|(k, s, _)| (k.to_string(), *s))
                .collect()
        };
        let want = |v: &[(&str, u64)]| -> Vec<(String, u64)> {
            v.iter().map(|(k, s)| (k.to_string(), *s)).collect()
        };
        // b@12 is newer than the deletion; b@8, b@3 and c@7 are covered.
        assert_eq!(run(vec![]), want(&[("a", 5), ("b", 12), ("d", 2)]));
        // A snapshot at 9 still sees b@8 (the tombstone c@7, with nothing below it, goes
        // as any tombstone at the bottom does).
        assert_eq!(
            run(vec![9]),
            want(&[("a", 5), ("b", 12), ("b", 8), ("d", 2)])
        );
        // A snapshot at 4 sees b@3 only.
        assert_eq!(
            run(vec![4]),
            want(&[("a", 5), ("b", 12), ("b", 3), ("d", 2)])
        );
    }

    #[test]
    fn keeps_newest_per_stripe() {
        let e = [
            ("a", 9, P),
            ("a", 7, P),
            ("a", 5, P),
            ("a", 3, P),
            ("b", 4, P),
        ];
        assert_eq!(
            run(vec![], &e, true),
            vec![("a".into(), 9), ("b".into(), 4)]
        );
        // Snapshot 6 sees a@5; snapshot 3 sees a@3.
        assert_eq!(
            run(vec![6, 3], &e, true),
            vec![
                ("a".into(), 9),
                ("a".into(), 5),
                ("a".into(), 3),
                ("b".into(), 4)
            ]
        );
    }

    #[test]
    fn tombstones_dropped_only_when_safe() {
        let e = [("a", 9, D), ("a", 5, P)];
        assert_eq!(run(vec![], &e, true), vec![]);
        assert_eq!(run(vec![], &e, false), vec![("a".into(), 9)]);
        // A snapshot at 6 still sees a@5, so the tombstone must stay to hide it from newer reads.
        assert_eq!(
            run(vec![6], &e, true),
            vec![("a".into(), 9), ("a".into(), 5)]
        );
    }
}
