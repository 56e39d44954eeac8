//! Range tombstones: `delete_range(start, end)` deletes every key in `[start, end)` written
//! before it, as one entry (docs/design/range-deletes.md).
//!
//! A tombstone lives beside the point entries, never among them: in its memtable's list
//! until the memtable is flushed, then in a range-tombstone file the manifest names
//! ([`RangeFile`], docs/format/range-tombstones.md), which every version carries whole.
//! Readers ask [`Fragments`] whether an entry they found is covered; flushes and
//! compactions drop what is covered (`VersionFilter`), and a tombstone leaves when no table
//! can hold a key it covers that is older than it.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::key::SeqNo;

/// One range deletion: every version of a key in `[start, end)` with a sequence below
/// `seq` is deleted for readers at `seq` or later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tombstone {
    /// First user key covered.
    pub start: Vec<u8>,
    /// First user key past the range (exclusive).
    pub end: Vec<u8>,
    /// The deletion's sequence.
    pub seq: SeqNo,
}

impl Tombstone {
    /// Whether `user_key` lies in the range.
    pub fn contains(&self, user_key: &[u8]) -> bool {
        self.start.as_slice() <= user_key && user_key < self.end.as_slice()
    }

    /// Bytes it takes in memory (a memtable's size counts them).
    pub fn footprint(&self) -> usize {
        self.start.len() + self.end.len() + 48
    }
}

/// A file of range tombstones, as the manifest describes it: written by the flush of a
/// memtable that held some, named by number, with its tombstones in the record too (an
/// open reads none of these files; `repair` does, when there is no manifest to read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeFile {
    /// The file number (`NNNNNN.rdel`, in the database directory).
    pub number: u64,
    /// File size in bytes.
    pub size: u64,
    /// Its tombstones, ascending by start key.
    pub tombstones: Arc<[Tombstone]>,
}

/// Tombstones cut at every start and end so that the pieces do not overlap: piece `i`
/// covers `[bounds[i], bounds[i + 1])` with the sequences `seqs[i]` (descending). A read
/// finds its key's piece by binary search and the newest visible deletion in it by another.
///
/// Built whole from a list (a memtable's on each range deletion, a version's when an edit
/// adds or removes a file); building is `O(n·p)` for `n` tombstones over `p` pieces, which
/// keeps the engine for workloads with a modest number of live range deletions (thousands),
/// the same bound RocksDB documents for its own.
#[derive(Debug, Default)]
pub struct Fragments {
    bounds: Vec<Vec<u8>>,
    seqs: Vec<Vec<SeqNo>>,
    count: usize,
    /// The newest deletion's sequence (0 if none).
    newest: SeqNo,
}

impl Fragments {
    /// The pieces of `tombstones` (any order; an empty range adds nothing).
    pub fn build<'a>(tombstones: impl IntoIterator<Item = &'a Tombstone>) -> Fragments {
        let list: Vec<&Tombstone> = tombstones.into_iter().filter(|t| t.start < t.end).collect();
        if list.is_empty() {
            return Fragments::default();
        }
        let mut bounds: Vec<Vec<u8>> = list
            .iter()
            .flat_map(|t| [t.start.clone(), t.end.clone()])
            .collect();
        bounds.sort();
        bounds.dedup();
        let mut seqs: Vec<Vec<SeqNo>> = vec![Vec::new(); bounds.len() - 1];
        for t in &list {
            let from = bounds.partition_point(|b| b.as_slice() < t.start.as_slice());
            let to = bounds.partition_point(|b| b.as_slice() < t.end.as_slice());
            for s in &mut seqs[from..to] {
                s.push(t.seq);
            }
        }
        for s in &mut seqs {
            s.sort_by(|a, b| b.cmp(a));
            s.dedup();
        }
        let newest = list.iter().map(|t| t.seq).max().unwrap_or(SeqNo::ZERO);
        Fragments {
            bounds,
            seqs,
            count: list.len(),
            newest,
        }
    }

    /// Whether no tombstone covers anything.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many tombstones it was built from.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Up to which sequence a flush or compaction that applied these tombstones, with
    /// `snapshots` live, left no version they cover: every deletion up to the oldest
    /// snapshot (a snapshot below a deletion keeps the versions it sees).
    /// `FileMeta::range_clean` of its outputs.
    pub fn clean_upto(&self, snapshots: &[SeqNo]) -> SeqNo {
        let oldest = snapshots.iter().copied().min().unwrap_or(SeqNo::MAX);
        self.newest.min(oldest)
    }

    /// The sequences of the deletions covering `user_key`, newest first.
    fn at(&self, user_key: &[u8]) -> &[SeqNo] {
        if self.bounds.is_empty() {
            return &[];
        }
        // The last bound at or below the key starts its piece.
        let i = self.bounds.partition_point(|b| b.as_slice() <= user_key);
        if i == 0 || i == self.bounds.len() {
            return &[];
        }
        &self.seqs[i - 1]
    }

    /// The newest deletion covering `user_key` that a reader at `read` sees.
    pub fn newest_visible(&self, user_key: &[u8], read: SeqNo) -> Option<SeqNo> {
        let s = self.at(user_key);
        let i = s.partition_point(|&x| x > read);
        s.get(i).copied()
    }

    /// The oldest deletion covering `user_key` newer than `seq` (the one a flush or
    /// compaction compares with the snapshots to know whether an entry at `seq` is hidden
    /// from every reader that could see it).
    pub fn oldest_newer(&self, user_key: &[u8], seq: SeqNo) -> Option<SeqNo> {
        let s = self.at(user_key);
        let i = s.partition_point(|&x| x > seq);
        i.checked_sub(1).map(|j| s[j])
    }

    /// Whether some deletion covers `user_key`, at any sequence.
    pub fn touches(&self, user_key: &[u8]) -> bool {
        !self.at(user_key).is_empty()
    }

    /// The first bound above `user_key` (where its piece ends), if any: past it, what
    /// covers keys changes.
    pub fn piece_end(&self, user_key: &[u8]) -> Option<&[u8]> {
        let i = self.bounds.partition_point(|b| b.as_slice() <= user_key);
        self.bounds.get(i).map(Vec::as_slice)
    }
}

/// What a read holds of the tombstones its view may meet: the memtables' and the
/// version's, asked together.
#[derive(Debug, Clone, Default)]
pub struct Covering {
    parts: Vec<Arc<Fragments>>,
}

impl Covering {
    /// Adds a source's tombstones (empty ones are skipped).
    pub fn add(&mut self, f: &Arc<Fragments>) {
        if !f.is_empty() {
            self.parts.push(f.clone());
        }
    }

    /// Whether it holds no tombstone: reads then skip every check.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The newest deletion covering `user_key` that a reader at `read` sees.
    pub fn newest_visible(&self, user_key: &[u8], read: SeqNo) -> Option<SeqNo> {
        self.parts
            .iter()
            .filter_map(|p| p.newest_visible(user_key, read))
            .max()
    }

    /// The newest deletion covering `user_key` that a reader at `read` sees, with the first
    /// key past `user_key` at which what covers keys may change (the nearest piece end of
    /// every source): the same deletion covers every key in between.
    pub fn newest_with_end(&self, user_key: &[u8], read: SeqNo) -> Option<(SeqNo, &[u8])> {
        let t = self.newest_visible(user_key, read)?;
        let end = self
            .parts
            .iter()
            .filter_map(|p| p.piece_end(user_key))
            .min()?;
        Some((t, end))
    }

    /// Whether an entry of `user_key` at `seq` is deleted for a reader at `read`.
    pub fn covers(&self, user_key: &[u8], seq: SeqNo, read: SeqNo) -> bool {
        self.newest_visible(user_key, read).is_some_and(|t| t > seq)
    }
}

/// The range-tombstone files a version holds, and their pieces.
///
/// A file is live (reads and jobs apply its tombstones) or retired: no table holds a
/// version its tombstones cover any more, but a value store that judges its records by
/// its own files (the hash store) may still hold records of covered keys in files
/// numbered below the retired file's `until`, and its GC must still ask about them
/// (docs/design/range-deletes.md, "When a tombstone leaves").
#[derive(Debug, Default)]
pub struct RangeSet {
    files: std::collections::BTreeMap<u64, RangeFile>,
    /// Retired files, by number: the file number below which a store's file may still
    /// hold a record they cover.
    retired: std::collections::BTreeMap<u64, u64>,
    /// Built when first asked for (recovery applies every manifest record in turn, and a
    /// version rebuilt at each would build them once per record).
    pieces: std::sync::OnceLock<Arc<Fragments>>,
    /// The pieces of every file's tombstones, retired ones too (a store's GC asks).
    every_piece: std::sync::OnceLock<Arc<Fragments>>,
}

impl RangeSet {
    /// This set with `added`, without `deleted`, and with the files `retired` names
    /// retired (each with its `until`).
    ///
    /// # Errors
    /// A description of what does not apply (a file added twice, one deleted or retired
    /// that is not held), for the caller to report as corruption.
    pub fn apply(
        &self,
        added: &[RangeFile],
        deleted: &[u64],
        retired: &[(u64, u64)],
    ) -> Result<RangeSet, String> {
        let mut files = self.files.clone();
        let mut now_retired = self.retired.clone();
        for n in deleted {
            if files.remove(n).is_none() {
                return Err(format!(
                    "edit deletes range-tombstone file {n}, which is not live"
                ));
            }
            now_retired.remove(n);
        }
        for f in added {
            if files.insert(f.number, f.clone()).is_some() {
                return Err(format!("edit adds range-tombstone file {} twice", f.number));
            }
        }
        for &(n, until) in retired {
            if !files.contains_key(&n) {
                return Err(format!(
                    "edit retires range-tombstone file {n}, which is not held"
                ));
            }
            now_retired.insert(n, until);
        }
        Ok(RangeSet {
            files,
            retired: now_retired,
            pieces: std::sync::OnceLock::new(),
            every_piece: std::sync::OnceLock::new(),
        })
    }

    /// The files, by number, retired ones too.
    pub fn files(&self) -> impl Iterator<Item = &RangeFile> {
        self.files.values()
    }

    /// The live files (whose tombstones reads and jobs apply), by number.
    pub fn live(&self) -> impl Iterator<Item = &RangeFile> {
        self.files
            .values()
            .filter(|f| !self.retired.contains_key(&f.number))
    }

    /// The retired files: number, and the file number below which a store's file may
    /// still hold a record they cover.
    pub fn retired(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.retired.iter().map(|(&n, &u)| (n, u))
    }

    /// Whether it holds no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Whether it holds a live file.
    pub fn has_live(&self) -> bool {
        self.files.len() > self.retired.len()
    }

    /// The pieces of every live tombstone: what reads and jobs apply.
    pub fn pieces(&self) -> &Arc<Fragments> {
        self.pieces.get_or_init(|| {
            Arc::new(Fragments::build(
                self.live().flat_map(|f| f.tombstones.iter()),
            ))
        })
    }

    /// The pieces of every tombstone held, retired ones too: what a value store's GC that
    /// judges records by its own files asks.
    pub fn every_piece(&self) -> &Arc<Fragments> {
        if self.retired.is_empty() {
            return self.pieces();
        }
        self.every_piece.get_or_init(|| {
            Arc::new(Fragments::build(
                self.files.values().flat_map(|f| f.tombstones.iter()),
            ))
        })
    }
}

/// Orders tombstones as a range-tombstone file stores them: by start key, newest first.
pub fn file_order(a: &Tombstone, b: &Tombstone) -> Ordering {
    a.start.cmp(&b.start).then(b.seq.cmp(&a.seq))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start: &str, end: &str, seq: u64) -> Tombstone {
        Tombstone {
            start: start.into(),
            end: end.into(),
            seq: SeqNo(seq),
        }
    }

    #[test]
    fn pieces_answer_like_the_list_they_came_from() {
        let list = [
            t("b", "f", 10),
            t("d", "k", 20),
            t("a", "c", 5),
            t("x", "x", 99),
            t("e", "e\0", 30),
        ];
        let f = Fragments::build(&list);
        assert_eq!(f.len(), 4);
        let keys = [
            "", "a", "aa", "b", "c", "d", "e", "e\0", "f", "j", "k", "x", "z",
        ];
        for k in keys {
            for read in [0, 4, 5, 9, 10, 15, 20, 25, 30, 100] {
                let want = list
                    .iter()
                    .filter(|x| x.start < x.end && x.contains(k.as_bytes()))
                    .map(|x| x.seq)
                    .filter(|&s| s <= SeqNo(read))
                    .max();
                assert_eq!(
                    f.newest_visible(k.as_bytes(), SeqNo(read)),
                    want,
                    "{k}@{read}"
                );
                let older = list
                    .iter()
                    .filter(|x| x.start < x.end && x.contains(k.as_bytes()))
                    .map(|x| x.seq)
                    .filter(|&s| s > SeqNo(read))
                    .min();
                assert_eq!(
                    f.oldest_newer(k.as_bytes(), SeqNo(read)),
                    older,
                    "{k}>{read}"
                );
            }
        }
        assert!(!f.touches(b"x"));
        assert!(f.touches(b"e"));
        assert_eq!(f.piece_end(b"b"), Some(&b"c"[..]));
        assert_eq!(f.piece_end(b"z"), None);
    }

    #[test]
    fn covering_takes_the_newest_of_its_sources() {
        let mut c = Covering::default();
        c.add(&Arc::new(Fragments::build(&[t("a", "m", 10)])));
        c.add(&Arc::new(Fragments::build(&[t("k", "z", 20)])));
        c.add(&Arc::new(Fragments::default()));
        assert!(c.covers(b"l", SeqNo(15), SeqNo(25)));
        assert!(!c.covers(b"l", SeqNo(15), SeqNo(19)));
        assert!(c.covers(b"l", SeqNo(5), SeqNo(19)));
        assert!(!c.covers(b"z", SeqNo(1), SeqNo(99)));
    }
}
