//! [`Buckets`]: OHDB's partitioned L0 (seeds/ohdb-partitioned-l0-two-disks.txt, III.A).
//!
//! The key space is cut into buckets at `bounds` (bucket i holds user keys in
//! `[bounds[i-1], bounds[i])`, the first and last bucket unbounded). A flush writes one table
//! per bucket that has keys, so no L0 table spans two buckets and tables of different buckets
//! never overlap: a point read searches one bucket's tables, newest first. A bucket holding
//! `bucket_compaction_trigger` tables is compacted into L1 alone, with the L1 tables its range
//! overlaps, instead of all of L0 with (nearly) all of L1.
//!
//! The boundaries are the layout's persistent state (docs/format/manifest.md, "L0 layout"):
//! `KeyPrefix` slices the first key byte evenly (the paper); `Sampled` takes quantiles of the
//! keys of a flush into an empty L0 (docs/design/ohdb.md says why). Boundaries change only
//! while L0 is empty, in the edit that adds the flush's tables, so no table is ever arranged
//! by boundaries it was not cut for.

use std::collections::HashSet;
use std::sync::Arc;

use super::{Ingest, Ingested, L0Config, Level0, Pressure};
use crate::coding::{get_length_prefixed, get_varint32, put_length_prefixed, put_varint32};
use crate::error::{Error, Result};
use crate::file_meta::FileMeta;
use crate::filename::FileNumber;
use crate::iter::InternalIterator;
use crate::key::{self, SeqNo};
use crate::memtable::{Lookup, MemTable};
use crate::options::{BucketBoundaries, L0Layout, Options};
use crate::table_cache::TableCache;

/// The manifest format feature a bucketed L0 needs (its registration's, `LAYOUT`).
pub const BUCKETS_FEATURE: &str = "l0-buckets";

/// OHDB's L0: tables grouped by key-range bucket, each bucket newest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buckets {
    /// Strictly increasing user keys; `bounds.len() + 1` buckets.
    bounds: Vec<Vec<u8>>,
    cfg: L0Config,
}

impl Buckets {
    /// The layout before any flush: `KeyPrefix` boundaries at once; `Sampled` ones wait for
    /// the first flush (until then, one bucket).
    pub(crate) fn initial(cfg: L0Config) -> Self {
        let bounds = match cfg.boundaries {
            BucketBoundaries::KeyPrefix => prefix_bounds(cfg.buckets),
            BucketBoundaries::Sampled => Vec::new(),
        };
        Buckets { bounds, cfg }
    }

    /// The layout a manifest record's state describes.
    ///
    /// # Errors
    /// `Corruption` for a malformed state or boundaries out of order.
    pub(crate) fn decode(mut state: &[u8], cfg: L0Config) -> Result<Self> {
        let bad = |what: &str| Error::corrupt(format!("L0 bucket layout: {what}"));
        let n = get_varint32(&mut state).ok_or_else(|| bad("bad boundary count"))? as usize;
        if n > 4096 {
            return Err(bad("too many boundaries"));
        }
        let mut bounds = Vec::with_capacity(n);
        for _ in 0..n {
            let b = get_length_prefixed(&mut state).ok_or_else(|| bad("bad boundary"))?;
            bounds.push(b.to_vec());
        }
        if !state.is_empty() {
            return Err(bad("trailing bytes"));
        }
        if bounds.windows(2).any(|w| w[0] >= w[1]) {
            return Err(bad("boundaries out of order"));
        }
        Ok(Buckets { bounds, cfg })
    }

    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        put_varint32(&mut b, self.bounds.len() as u32);
        for k in &self.bounds {
            put_length_prefixed(&mut b, k);
        }
        b
    }

    /// Number of buckets.
    pub fn len(&self) -> usize {
        self.bounds.len() + 1
    }

    /// The bucket holding `user_key`.
    fn bucket_of(&self, user_key: &[u8]) -> usize {
        self.bounds.partition_point(|b| b.as_slice() <= user_key)
    }

    /// Bucket `i`'s range: (inclusive start, exclusive end), `None` = unbounded.
    fn range(&self, i: usize) -> (Option<&[u8]>, Option<&[u8]>) {
        let lo = i.checked_sub(1).map(|j| self.bounds[j].as_slice());
        (lo, self.bounds.get(i).map(Vec::as_slice))
    }

    /// The tables of bucket `i` in `files` (arranged: grouped by bucket, newest first).
    fn tables_of<'a>(&self, files: &'a [Arc<FileMeta>], i: usize) -> &'a [Arc<FileMeta>] {
        let start = files.partition_point(|f| self.bucket_of(f.smallest_user_key()) < i);
        let end = files.partition_point(|f| self.bucket_of(f.smallest_user_key()) <= i);
        &files[start..end]
    }

    /// Runs of `files` per bucket: (bucket, its tables).
    fn groups<'a>(
        &'a self,
        files: &'a [Arc<FileMeta>],
    ) -> impl Iterator<Item = (usize, &'a [Arc<FileMeta>])> + 'a {
        let mut rest = files;
        std::iter::from_fn(move || {
            let first = rest.first()?;
            let b = self.bucket_of(first.smallest_user_key());
            let n = rest.partition_point(|f| self.bucket_of(f.smallest_user_key()) <= b);
            let (group, tail) = rest.split_at(n);
            rest = tail;
            Some((b, group))
        })
    }

    /// The boundaries a flush of `mem` into an empty L0 should use: kept unless the bucket
    /// count changed or (`Sampled`) the flush crowds one bucket to more than twice its share.
    fn rebalanced(&self, mem: &Arc<MemTable>) -> Result<Option<Vec<Vec<u8>>>> {
        let want = self.cfg.buckets.max(1);
        match self.cfg.boundaries {
            BucketBoundaries::KeyPrefix => {
                let b = prefix_bounds(want);
                Ok((b != self.bounds).then_some(b))
            }
            BucketBoundaries::Sampled => {
                let total = mem.len();
                if total == 0 || want == 1 {
                    return Ok(None);
                }
                if self.bounds.len() + 1 == want {
                    let mut counts = vec![0usize; self.len()];
                    for_each_user_key(mem, |k| counts[self.bucket_of(k)] += 1)?;
                    let max = counts.iter().copied().max().unwrap_or(0);
                    if max * want <= 2 * total {
                        return Ok(None);
                    }
                }
                // Quantiles: the key at each i/want of the entries, distinct and increasing.
                let mut bounds: Vec<Vec<u8>> = Vec::with_capacity(want - 1);
                let mut seen = 0usize;
                for_each_user_key(mem, |k| {
                    seen += 1;
                    let next = bounds.len() + 1;
                    if next < want
                        && seen * want > next * total
                        && bounds.last().is_none_or(|b| b.as_slice() < k)
                    {
                        bounds.push(k.to_vec());
                    }
                })?;
                Ok((!bounds.is_empty() && bounds != self.bounds).then_some(bounds))
            }
        }
    }
}

/// `n` buckets of equal slices of the first key byte.
fn prefix_bounds(n: usize) -> Vec<Vec<u8>> {
    let mut b: Vec<Vec<u8>> = (1..n).map(|i| vec![(i * 256 / n) as u8]).collect();
    b.dedup();
    b.retain(|k| k[0] != 0);
    b
}

/// Calls `f` with each entry's user key, in order.
fn for_each_user_key(mem: &Arc<MemTable>, mut f: impl FnMut(&[u8])) -> Result<()> {
    let mut it = mem.iter();
    it.seek_to_first();
    while it.valid() {
        let p =
            key::parse(it.key()).ok_or_else(|| Error::corrupt("memtable holds a malformed key"))?;
        f(p.user_key);
        it.next();
    }
    Ok(())
}

/// The bucketed layout's registration (id 1).
pub(crate) const LAYOUT: super::Layout = super::Layout {
    kind: L0Layout::Buckets,
    id: 1,
    feature: Some(BUCKETS_FEATURE),
    initial: |ctx| Ok(Arc::new(Buckets::initial(ctx.config))),
    decode: |state, ctx| Ok(Arc::new(Buckets::decode(state, ctx.config)?)),
    check_options,
    persistent_dir: None,
};

/// The options' checks that are the bucketed layout's (its tunables' ranges are field
/// checks, made whatever the layout).
///
/// # Errors
/// `InvalidArgument` naming the bad field.
fn check_options(o: &crate::Options) -> crate::error::Result<()> {
    if o.bucket_compaction_trigger > o.level0_stop_writes_trigger {
        // The fullest bucket would stop writes before its compaction is due: a hang.
        return Err(crate::error::Error::invalid(
            "Options::bucket_compaction_trigger: must be <= level0_stop_writes_trigger (a \
             bucket that full stops writes)",
        ));
    }
    Ok(())
}

impl Level0 for Buckets {
    fn kind(&self) -> L0Layout {
        L0Layout::Buckets
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn record(&self) -> super::L0Record {
        super::L0Record {
            layout: LAYOUT.id,
            state: self.encode(),
        }
    }

    fn feature(&self) -> Option<&'static str> {
        Some(BUCKETS_FEATURE)
    }

    fn arrange(&self, files: &mut Vec<Arc<FileMeta>>) -> Result<()> {
        for f in files.iter() {
            let b = self.bucket_of(f.smallest_user_key());
            if self.bucket_of(f.largest_user_key()) != b {
                return Err(Error::corrupt(format!(
                    "L0 table {} spans buckets {b} and {}",
                    f.number,
                    self.bucket_of(f.largest_user_key())
                )));
            }
        }
        files.sort_by(|a, b| {
            self.bucket_of(a.smallest_user_key())
                .cmp(&self.bucket_of(b.smallest_user_key()))
                .then(b.largest_seq.cmp(&a.largest_seq))
                .then(b.number.cmp(&a.number))
        });
        super::refuse_duplicates(files)
    }

    fn ingest(
        &self,
        job: &mut Ingest<'_>,
        mem: &Arc<MemTable>,
        files: &[Arc<FileMeta>],
    ) -> Result<Ingested> {
        let fresh = if files.is_empty() {
            self.rebalanced(mem)?.map(|bounds| Buckets {
                bounds,
                cfg: self.cfg,
            })
        } else {
            None
        };
        let layout = fresh.as_ref().unwrap_or(self);
        let mut tables = Vec::new();
        for i in 0..layout.len() {
            let (lo, hi) = layout.range(i);
            if let Some(t) = job.write_table(mem, lo, hi)? {
                tables.push(t);
            }
        }
        if !tables.is_empty() {
            job.sync_dir()?;
        }
        Ok(Ingested {
            tables,
            change: fresh.map(|b| {
                Arc::new(super::Replace {
                    from: self.record(),
                    to: Arc::new(b),
                }) as Arc<dyn super::L0Change>
            }),
            other_bytes: 0,
        })
    }

    fn get<'a>(
        &self,
        files: &'a [Arc<FileMeta>],
        tables: &TableCache,
        target: &[u8],
        user_key: &[u8],
        searched: &mut dyn FnMut(&'a Arc<FileMeta>),
    ) -> Result<Option<(SeqNo, Lookup)>> {
        let bucket = self.tables_of(files, self.bucket_of(user_key));
        super::search_newest_first(bucket, tables, target, user_key, searched)
    }

    fn seek_sources<'a>(
        &self,
        files: &'a [Arc<FileMeta>],
        user_key: &[u8],
        visit: &mut dyn FnMut(&'a Arc<FileMeta>),
    ) {
        for f in self.tables_of(files, self.bucket_of(user_key)) {
            if f.smallest_user_key() <= user_key && user_key <= f.largest_user_key() {
                visit(f);
            }
        }
    }

    fn pressure(&self, files: &[Arc<FileMeta>], opts: &Options) -> Pressure {
        // A point read visits one bucket: its tables are the sorted runs that matter.
        Pressure {
            level: self.groups(files).map(|(_, g)| g.len()).max().unwrap_or(0),
            slowdown: opts.level0_slowdown_writes_trigger,
            stop: opts.level0_stop_writes_trigger,
        }
    }

    fn compacts_all_of_l0(&self) -> bool {
        false
    }

    fn capacity(&self, opts: &Options) -> u64 {
        // Each flush spreads a memtable over the buckets; a bucket is due at its trigger.
        (opts.bucket_compaction_trigger as u64).saturating_mul(opts.write_buffer_size as u64)
    }

    fn score(&self, files: &[Arc<FileMeta>], opts: &Options) -> f64 {
        self.groups(files)
            .map(|(_, g)| bucket_score(g, opts))
            .fold(0.0, f64::max)
    }

    fn pick(
        &self,
        files: &[Arc<FileMeta>],
        busy: &HashSet<FileNumber>,
        opts: &Options,
    ) -> Option<Vec<Arc<FileMeta>>> {
        // The fullest bucket (by its trigger) none of whose tables is being compacted: all
        // its tables, so every L0 version of its keys moves together. Ties: the first.
        let mut best: Option<(f64, &[Arc<FileMeta>])> = None;
        for (_, g) in self.groups(files) {
            if g.iter().any(|f| busy.contains(&f.number)) {
                continue;
            }
            let s = bucket_score(g, opts);
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, g));
            }
        }
        best.map(|(_, g)| g.to_vec())
    }

    fn manual_inputs(
        &self,
        files: &[Arc<FileMeta>],
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        // Whole buckets: the versions of a key in L0 all live in its bucket.
        let first = lo.map_or(0, |k| self.bucket_of(k));
        let last = hi.map_or(self.len() - 1, |k| self.bucket_of(k));
        self.groups(files)
            .filter(|(b, g)| (first..=last).contains(b) && g.iter().any(|f| f.overlaps(lo, hi)))
            .flat_map(|(_, g)| g.iter().cloned())
            .collect()
    }
}

/// How full one bucket is against its triggers: its tables over
/// `bucket_compaction_trigger`, or its bytes over `bucket_compaction_bytes` when that is set,
/// whichever is more.
fn bucket_score(tables: &[Arc<FileMeta>], opts: &Options) -> f64 {
    let by_count = tables.len() as f64 / opts.bucket_compaction_trigger as f64;
    if opts.bucket_compaction_bytes == 0 {
        return by_count;
    }
    let bytes: u64 = tables.iter().map(|f| f.size).sum();
    by_count.max(bytes as f64 / opts.bucket_compaction_bytes as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{SeqNo, ValueKind};

    fn cfg(buckets: usize, boundaries: BucketBoundaries) -> L0Config {
        L0Config {
            buckets,
            boundaries,
            ..L0Config::from(&Options::default())
        }
    }

    fn layout(bounds: &[&str]) -> Buckets {
        Buckets {
            bounds: bounds.iter().map(|b| b.as_bytes().to_vec()).collect(),
            cfg: cfg(bounds.len() + 1, BucketBoundaries::Sampled),
        }
    }

    fn file(n: u64, lo: &str, hi: &str, seq: u64) -> Arc<FileMeta> {
        crate::file_meta::test_table(n, lo, hi, 100, seq)
    }

    fn numbers(files: &[Arc<FileMeta>]) -> Vec<u64> {
        files.iter().map(|f| f.number.0).collect()
    }

    #[test]
    fn state_round_trips_and_damage_is_refused() {
        let b = layout(&["g", "p"]);
        let c = cfg(3, BucketBoundaries::Sampled);
        assert_eq!(Buckets::decode(&b.encode(), c).unwrap(), b);
        let enc = b.encode();
        for cut in 0..enc.len() {
            assert!(Buckets::decode(&enc[..cut], c).is_err(), "cut {cut}");
        }
        assert!(Buckets::decode(&layout(&["p", "g"]).encode(), c).is_err());
        assert!(Buckets::decode(&layout(&["g", "g"]).encode(), c).is_err());
    }

    #[test]
    fn prefix_bounds_slice_the_first_byte() {
        assert_eq!(prefix_bounds(4), vec![vec![64], vec![128], vec![192]]);
        assert_eq!(prefix_bounds(1), Vec::<Vec<u8>>::new());
        assert_eq!(prefix_bounds(1000).len(), 255);
    }

    #[test]
    fn arrange_groups_by_bucket_and_refuses_a_table_across_a_boundary() {
        let b = layout(&["g", "p"]);
        let mut files = vec![
            file(1, "q", "z", 1),
            file(2, "a", "c", 2),
            file(3, "h", "o", 3),
            file(4, "b", "f", 4),
        ];
        b.arrange(&mut files).unwrap();
        assert_eq!(numbers(&files), vec![4, 2, 3, 1]);
        assert_eq!(numbers(b.tables_of(&files, 0)), vec![4, 2]);
        assert_eq!(numbers(b.tables_of(&files, 2)), vec![1]);
        let mut across = vec![file(5, "f", "h", 5)];
        assert!(b.arrange(&mut across).is_err());
        // A key equal to a boundary belongs to the bucket above it.
        assert_eq!(
            (b.bucket_of(b"g"), b.bucket_of(b"fz"), b.bucket_of(b"p")),
            (1, 0, 2)
        );
    }

    #[test]
    fn picks_the_fullest_free_bucket_and_scores_by_it() {
        let b = layout(&["g", "p"]);
        let mut files = vec![
            file(1, "a", "c", 1),
            file(2, "h", "i", 2),
            file(3, "h", "o", 3),
            file(4, "j", "k", 4),
            file(5, "q", "r", 5),
        ];
        b.arrange(&mut files).unwrap();
        let o = Options {
            bucket_compaction_trigger: 3,
            ..Options::default()
        };
        assert_eq!(b.score(&files, &o), 1.0);
        assert_eq!(b.pressure(&files, &o).level, 3);
        let mut picked = numbers(&b.pick(&files, &HashSet::new(), &o).unwrap());
        picked.sort();
        assert_eq!(picked, vec![2, 3, 4]);
        let busy: HashSet<FileNumber> = [FileNumber(3)].into();
        let other = numbers(&b.pick(&files, &busy, &o).unwrap());
        assert!(other == vec![1] || other == vec![5], "{other:?}");
        // Manual: whole buckets that overlap the range.
        let mut m = numbers(&b.manual_inputs(&files, Some(b"i"), Some(b"i")));
        m.sort();
        assert_eq!(m, vec![2, 3, 4]);
        assert!(b.manual_inputs(&files, Some(b"d"), Some(b"f")).is_empty());
    }

    /// `bucket_compaction_bytes`: a bucket of few large tables is due by its bytes, and is
    /// picked before one of more, smaller tables.
    #[test]
    fn the_byte_trigger_counts_beside_the_table_count() {
        let b = layout(&["g", "p"]);
        let big = |n, lo, hi, seq| crate::file_meta::test_table(n, lo, hi, 1000, seq);
        let mut files = vec![
            file(1, "a", "c", 1),
            file(2, "b", "d", 2),
            big(3, "h", "i", 3),
        ];
        b.arrange(&mut files).unwrap();
        let mut o = Options {
            bucket_compaction_trigger: 4,
            ..Options::default()
        };
        assert_eq!(b.score(&files, &o), 0.5, "the table count alone: 2 of 4");
        let mut picked = numbers(&b.pick(&files, &HashSet::new(), &o).unwrap());
        picked.sort();
        assert_eq!(picked, vec![1, 2]);
        o.bucket_compaction_bytes = 500;
        assert_eq!(b.score(&files, &o), 2.0, "1,000 bytes of 500");
        assert_eq!(
            numbers(&b.pick(&files, &HashSet::new(), &o).unwrap()),
            vec![3]
        );
        // Reads still see the table count.
        assert_eq!(b.pressure(&files, &o).level, 2);
    }

    #[test]
    fn sampled_boundaries_follow_the_keys_and_stay_unless_skewed() {
        let mem = Arc::new(MemTable::new(0));
        for i in 0..1000u32 {
            mem.add(
                SeqNo(u64::from(i) + 1),
                ValueKind::Put,
                format!("user{i:04}").as_bytes(),
                b"v",
            );
        }
        let fresh = Buckets::initial(cfg(4, BucketBoundaries::Sampled));
        let bounds = fresh.rebalanced(&mem).unwrap().unwrap();
        assert_eq!(
            bounds,
            vec![
                b"user0250".to_vec(),
                b"user0500".to_vec(),
                b"user0750".to_vec()
            ]
        );
        let chosen = Buckets {
            bounds,
            cfg: fresh.cfg,
        };
        // The same spread again: kept.
        assert_eq!(chosen.rebalanced(&mem).unwrap(), None);
        // Keys crowding one bucket: chosen again.
        let skewed = Arc::new(MemTable::new(0));
        for i in 0..1000u32 {
            skewed.add(
                SeqNo(u64::from(i) + 1),
                ValueKind::Put,
                format!("user0{i:04}").as_bytes(),
                b"v",
            );
        }
        assert!(chosen.rebalanced(&skewed).unwrap().is_some());
        // Prefix boundaries for text keys: all in one bucket, as the paper's rule would have it.
        let prefix = Buckets::initial(cfg(4, BucketBoundaries::KeyPrefix));
        assert_eq!(prefix.bucket_of(b"user0001"), prefix.bucket_of(b"user9999"));
    }
}
