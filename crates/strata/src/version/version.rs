//! [`Version`]: an immutable snapshot of which table files make up each level, and of the
//! L0 layout that arranges level 0.
//!
//! Readers take an `Arc<Version>` and use it without locks; flush and compaction build a new
//! version from the current one plus a [`super::VersionEdit`] and install it atomically.
//! Levels >= 1 are sorted by key and do not overlap; level 0 is whatever its layout
//! ([`crate::l0::Level0`]) makes of it, and every question about L0 goes to the layout.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::level_iter::level_iterator;
use crate::file_meta::{FileList, FileMeta, Held};
use crate::iter::InternalIterator;
use crate::key;
use crate::l0::{self, Level0};
use crate::table_cache::TableCache;
use crate::value::ValueFile;

/// The files of every level at one point in time.
#[derive(Debug, Clone)]
pub struct Version {
    /// `levels[0]` in the order its layout keeps; deeper levels sorted by smallest key.
    pub levels: Vec<FileList>,
    /// The layout of level 0 (recorded in the manifest with its persistent state).
    pub l0: Arc<dyn Level0>,
    /// The value store's files that live pointers may reach, by number.
    pub values: Arc<BTreeMap<u64, ValueFile>>,
    /// Files kept for repair after an open dropped a damaged manifest record.
    pub kept: Option<Arc<crate::version::KeptFiles>>,
    /// Whether the database has written expiring entries (format feature
    /// `expiring-entries`: named from the first one on, for good).
    pub expiring: bool,
    /// Whether the database has written range deletions (format feature
    /// `range-deletes`: named from the first one on, for good).
    pub range_deletes: bool,
    /// The range tombstones flushed so far and still needed (crate::range_del).
    pub ranges: Arc<crate::range_del::RangeSet>,
}

impl Default for Version {
    fn default() -> Self {
        Version::new(0)
    }
}

impl Version {
    /// An empty version with `num_levels` levels and a flat L0 (what a manifest without an
    /// L0 layout record describes).
    pub fn new(num_levels: usize) -> Self {
        Version {
            levels: vec![FileList::default(); num_levels],
            l0: l0::flat(),
            values: Arc::default(),
            kept: None,
            expiring: false,
            range_deletes: false,
            ranges: Arc::default(),
        }
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Files of `level`.
    pub fn files(&self, level: usize) -> &[Arc<FileMeta>] {
        self.levels.get(level).map_or(&[], |v| v.as_slice())
    }

    /// Total bytes of `level` (for L0, as its layout counts them: data outside tables too).
    pub fn level_bytes(&self, level: usize) -> u64 {
        if level == 0 {
            return self.l0.bytes(self.files(0));
        }
        self.files(level).iter().map(|f| f.size).sum()
    }

    /// Whether L0 holds no data (tables, or whatever else its layout keeps).
    pub fn l0_is_empty(&self) -> bool {
        self.l0.is_empty(self.files(0))
    }

    /// Total bytes of every live table.
    pub fn total_bytes(&self) -> u64 {
        (0..self.num_levels()).map(|l| self.level_bytes(l)).sum()
    }

    /// Index of the first file in sorted `level` (>= 1) whose largest key >= `ikey`.
    pub fn find_file(&self, level: usize, ikey: &[u8]) -> usize {
        self.files(level)
            .partition_point(|f| key::compare(&f.largest, ikey) == Ordering::Less)
    }

    /// Files of sorted `level` (>= 1) overlapping the user-key range [`lo`, `hi`]
    /// (`None` = unbounded).
    pub fn overlapping(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        self.overlapping_iter(level, lo, hi).cloned().collect()
    }

    /// Bytes of the files of sorted `level` overlapping [`lo`, `hi`]; 0 below the last
    /// level (the grandparent overlap a move or a flush placement is held to).
    pub fn overlapping_bytes(&self, level: usize, lo: Option<&[u8]>, hi: Option<&[u8]>) -> u64 {
        if level >= self.num_levels() {
            return 0;
        }
        self.overlapping_iter(level, lo, hi).map(|f| f.size).sum()
    }

    fn overlapping_iter<'a>(
        &'a self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&'a [u8]>,
    ) -> impl Iterator<Item = &'a Arc<FileMeta>> + 'a {
        debug_assert!(level > 0, "level 0 belongs to its layout");
        let files = self.files(level);
        let start = match lo {
            Some(lo) => files.partition_point(|f| f.largest_user_key() < lo),
            None => 0,
        };
        files[start..]
            .iter()
            .take_while(move |f| f.overlaps(None, hi))
    }

    /// The files a manual compaction of [`lo`, `hi`] takes from `level`: for L0, what its
    /// layout says must move together; for a sorted level, the overlapping files.
    pub fn manual_inputs(
        &self,
        level: usize,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        if level == 0 {
            self.l0.manual_inputs(self.files(0), lo, hi)
        } else {
            self.overlapping(level, lo, hi)
        }
    }

    /// The file of sorted `level` (>= 1) whose user-key range holds `user_key`, if any.
    pub fn file_holding(&self, level: usize, user_key: &[u8]) -> Option<&Arc<FileMeta>> {
        let files = self.files(level);
        let i = files.partition_point(|f| f.largest_user_key() < user_key);
        files.get(i).filter(|f| f.smallest_user_key() <= user_key)
    }

    /// Whether any level deeper than `level` may hold `user_key` (tombstone elision asks).
    pub fn key_may_exist_below(&self, level: usize, user_key: &[u8]) -> bool {
        (level + 1..self.num_levels()).any(|l| self.file_holding(l, user_key).is_some())
    }

    /// Per-level file counts, e.g. `[4 3 10 0 0 0 0]`.
    pub fn level_summary(&self) -> String {
        let counts: Vec<String> = self.levels.iter().map(|l| l.len().to_string()).collect();
        format!("[{}]", counts.join(" "))
    }

    /// The range-tombstone files no reader or job needs any more: no table or L0 part can
    /// hold a version older than one of their tombstones of a key it covers (flushes and
    /// compactions dropped them all). Returned as those to delete and those to retire,
    /// with `until` (the next file number): kept for a value store that judges records by
    /// its own files while one of its files numbered below `until` may hold a record they
    /// cover, which its GC must not take for live. A retired file is deleted once no such
    /// file is numbered below its `until`. A file is retired only if every such GC step
    /// still running began to watch writes after its tombstones (`watching_from`: the
    /// oldest step's start): one that began before may not have them in its view and write
    /// a covered key's record into a file numbered past `until`. Nothing while files wait
    /// for a repair (it would merge them back).
    pub fn spent_range_files(
        &self,
        until: u64,
        watching_from: crate::key::SeqNo,
    ) -> (Vec<u64>, Vec<(u64, u64)>) {
        if self.ranges.is_empty() || self.kept.is_some() {
            return (Vec::new(), Vec::new());
        }
        // The oldest file of a store that judges records by its own files.
        let oldest_judging = self
            .values
            .values()
            .filter(|f| f.format.judges_by_own_records())
            .map(|f| f.number)
            .min();
        let mut gone: Vec<u64> = self
            .ranges
            .retired()
            .filter(|&(_, u)| oldest_judging.is_none_or(|o| o >= u))
            .map(|(n, _)| n)
            .collect();
        let mut retired = Vec::new();
        for f in self.ranges.live() {
            if f.tombstones.iter().any(|t| self.may_hold_older(t)) {
                continue;
            }
            if oldest_judging.is_some() {
                if f.tombstones.iter().all(|t| t.seq <= watching_from) {
                    retired.push((f.number, until));
                }
            } else {
                gone.push(f.number);
            }
        }
        (gone, retired)
    }

    /// Whether a table or L0 part may hold a version of a key in `[start, end)` of the
    /// kind `held` asks for.
    pub fn may_hold(&self, start: &[u8], end: &[u8], held: Held) -> bool {
        self.l0.may_hold(self.files(0), start, end, held)
            || (1..self.num_levels()).any(|level| {
                self.overlapping_iter(level, Some(start), Some(end))
                    .any(|f| f.may_hold(start, end, held))
            })
    }

    /// Whether table `f` may hold a version a range tombstone of this version covers.
    pub fn may_hold_covered(&self, f: &FileMeta) -> bool {
        self.ranges
            .live()
            .flat_map(|r| r.tombstones.iter())
            .any(|t| t.start < t.end && f.may_hold(&t.start, &t.end, Held::Older(t.seq)))
    }

    /// Whether a table or L0 part may hold a version older than `t` of a key it covers.
    fn may_hold_older(&self, t: &crate::range_del::Tombstone) -> bool {
        t.start < t.end && self.may_hold(&t.start, &t.end, Held::Older(t.seq))
    }

    /// Iterators over every table: L0's as its layout gives them, then one lazy iterator
    /// per deeper level.
    pub fn iterators(&self, tables: &Arc<TableCache>) -> Vec<Box<dyn InternalIterator>> {
        let mut out: Vec<Box<dyn InternalIterator>> = Vec::new();
        self.l0.iterators(self.files(0), tables, &mut out);
        for level in 1..self.num_levels() {
            if !self.files(level).is_empty() {
                out.push(Box::new(level_iterator(
                    self.levels[level].clone(),
                    tables.clone(),
                )));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::SeqNo;
    use crate::range_del::{RangeFile, Tombstone};

    /// A version whose only tables are none, holding range-tombstone file 10 (one
    /// tombstone at sequence 50) and, with `hash`, hash-store file 5.
    fn version(hash: bool) -> Version {
        let mut v = Version::new(3);
        let file = RangeFile {
            number: 10,
            size: 40,
            tombstones: vec![Tombstone {
                start: b"a".to_vec(),
                end: b"m".to_vec(),
                seq: SeqNo(50),
            }]
            .into(),
        };
        v.ranges = Arc::new(v.ranges.apply(&[file], &[], &[]).unwrap());
        if hash {
            let f = crate::value::ValueFile::new(
                crate::vstore::hash::FORMAT,
                5,
                crate::placement::PathId::DB,
            );
            assert!(f.format.judges_by_own_records());
            let mut values = BTreeMap::new();
            values.insert(5, f);
            v.values = Arc::new(values);
        }
        v
    }

    #[test]
    fn a_spent_range_file_goes_or_retires_and_waits_for_gc_steps_begun_before_it() {
        // No store judging by its own files: deleted.
        assert_eq!(
            version(false).spent_range_files(20, SeqNo(u64::MAX)),
            (vec![10], vec![])
        );
        let v = version(true);
        // A GC step that began watching before the tombstone (at 49) holds it live.
        assert_eq!(v.spent_range_files(20, SeqNo(49)), (vec![], vec![]));
        // None, or one that began after it: retired until the next file number.
        assert_eq!(
            v.spent_range_files(20, SeqNo(u64::MAX)),
            (vec![], vec![(10, 20)])
        );
        assert_eq!(v.spent_range_files(20, SeqNo(50)), (vec![], vec![(10, 20)]));
        // Retired: it leaves once no hash-store file is numbered below its `until`.
        let mut r = version(true);
        r.ranges = Arc::new(r.ranges.apply(&[], &[], &[(10, 20)]).unwrap());
        assert!(!r.ranges.has_live());
        assert!(r.ranges.pieces().is_empty());
        assert!(!r.ranges.every_piece().is_empty());
        assert_eq!(r.spent_range_files(30, SeqNo(0)), (vec![], vec![]));
        let mut values = BTreeMap::new();
        values.insert(
            25,
            crate::value::ValueFile::new(
                crate::vstore::hash::FORMAT,
                25,
                crate::placement::PathId::DB,
            ),
        );
        r.values = Arc::new(values);
        assert_eq!(r.spent_range_files(30, SeqNo(0)), (vec![10], vec![]));
    }
}
