//! The hash store's GC: one segment group at a time, without LSM lookups; and, with
//! hot/cold separation, the cold log's GC (with lookups, as a value log's).
//!
//! A group step: pick the group with the most log bytes (the paper's greedy: the most
//! writes since its last GC); start the user-write watch, then take a view (memtables +
//! version: every write before the watch is in one of them); read the group's files in that
//! version; for each key keep its newest record (by sequence). A key whose newest record is
//! a value (or a cold tag) is live unless the view's memtables hold a newer entry for it
//! (the paper's write-cache check: an entry there is newer than anything flushed, unless it
//! is a GC's pointer move to that very record). Configured, the live records are written to
//! a new main segment (spilling into more main files past `hash_main_segment_size`), named
//! in the manifest, and the moved pointers written through the write path (skipping keys
//! users wrote since the watch). With hot/cold separation (`hash_hot_cold`), a live value
//! the group holds only once (not updated since the group's last GC: the paper's "cold")
//! goes to the cold log instead and leaves a cold tag in the group; a key whose newest
//! record is a cold tag keeps its tag (its value stays where it is). Not configured (the
//! database was reopened with another store), the live values are written again as puts,
//! leaving the store, and tags are dropped (the cold log drains by its own GC). Once no
//! snapshot older than that write remains, the group's old files leave the version.
//!
//! A cold-log step (when the pointers compactions dropped into it reach
//! `hash_cold_gc_ratio` of its bytes, or the store drains): its oldest file is read, a
//! record is live if its key's newest entry points to it (a lookup), and live ones move to
//! a new cold file.
//!
//! Crash at any point: before the moves are durable, the old files still serve every
//! pointer and the next GC reads old and new (equal records, equal sequences); after, only
//! the removal is missing and the next GC does it again. Nothing is overwritten, so no
//! journal is needed.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

use super::separator::GroupWriter;
use super::{group_of, groups_in, kind_of, record, reserve, SegmentKind, Sizes, COLD_GROUP, ID};
use crate::error::{Error, Result};
use crate::filename::FileNumber;
use crate::fs::Fs;
use crate::key::SeqNo;
use crate::memtable::Lookup;
use crate::options::{HashGcPolicy, HashWhenFull};
use crate::placement::Placement;
use crate::stats::Stats;
use crate::sync::lock;
use crate::version::{Version, VersionEdit};
use crate::vstore::{
    files_of, GcContext, GcView, Move, Relocated, Store, StoreEnv, ValueFile, ValueGc, ValuePointer,
};

/// GC starts when the reserve in use passes this fraction of the reserve.
const TRIGGER: f64 = 0.9;

/// The hash store's GC job of one database.
pub(super) struct HashGc {
    fs: Arc<dyn Fs>,
    placement: Placement,
    opts: crate::options::Options,
    configured: bool,
    reserve: u64,
    /// The files each GC step replaced, with the sequence after its moves: removed once no
    /// snapshot below that sequence remains. While a snapshot holds them, GC goes on with
    /// the other files (they are left out of every choice and collection).
    pending: Mutex<Vec<(Vec<u64>, SeqNo)>>,
    /// Changes with `pending` (the summary of a set of files depends on both).
    pending_gen: AtomicU64,
    /// Whether the last step collected a group: when both are due, group and cold-log
    /// steps alternate (a reserve that stays full would otherwise starve the cold log).
    last_was_group: std::sync::atomic::AtomicBool,
    counters: Counters,
    /// When each group was last collected (cost-benefit's age).
    last_gc: Mutex<HashMap<u32, std::time::Instant>>,
    opened: std::time::Instant,
    rng: Mutex<u64>,
    /// What the last set of files seen adds up to and gives (writes ask per write group,
    /// a step several times; the set changes only with a flush, compaction or GC).
    summary: Mutex<Option<(FileSet, u64, Summary)>>,
}

/// One set of files, summed once.
struct Summary {
    /// The files GC may still collect (those no snapshot holds for removal).
    sizes: Sizes,
    space: Space,
}

/// A version's value files (shared by versions that differ only in tables).
type FileSet = Arc<std::collections::BTreeMap<u64, ValueFile>>;

/// The store's space in one set of files.
#[derive(Debug, Clone, Copy)]
struct Space {
    /// The reserve in use ([`Sizes::reserve_used`]), counting files GC replaced that a
    /// snapshot still holds: the space actually taken.
    used: u64,
    /// The same, without the files a snapshot holds: what GC steps can lower, so what
    /// starts them and paces writes (the held files go only when the snapshot does).
    collectable: u64,
    /// Bytes of files GC replaced that wait for a snapshot.
    held: u64,
    /// Whether a step can lower it: a group past its room has log segments, or (with
    /// `hash_cold_takes_main`, where the cold log takes room) the cold log's GC is due.
    can_free: bool,
}

/// What the job did since open (`strata.value-stores`).
#[derive(Default)]
struct Counters {
    group_steps: AtomicU64,
    cold_steps: AtomicU64,
    hot: AtomicU64,
    cold: AtomicU64,
    tags: AtomicU64,
    /// The most bytes of a group's files a step held at once.
    peak_bytes: AtomicU64,
}

/// What a GC step gives: the moves, the files they replace, the value bytes moved.
type Collected = (Vec<Relocated>, Vec<u64>, u64);

/// A key's newest record in the group being collected, and how many records of it the
/// group holds.
struct Newest {
    seq: SeqNo,
    kind: record::Kind,
    /// Its file's index in the files collected.
    file: usize,
    offset: usize,
    size: usize,
    versions: u32,
}

/// What a group step's first pass found ([`HashGc::newest_records`]).
struct FirstPass {
    newest: HashMap<Box<[u8]>, Newest, KeyHash>,
    /// The bytes of the first files, while they fit in the budget (by index).
    kept: HashMap<usize, Vec<u8>>,
    /// The most file bytes held at once.
    peak: usize,
}

/// The files one GC step writes: reserved, written, then named together.
struct Outputs<'a> {
    gc: &'a HashGc,
    ctx: &'a dyn GcContext,
    groups: u32,
    reserved: Vec<u64>,
    written: Vec<ValueFile>,
}

impl<'a> Outputs<'a> {
    fn new(gc: &'a HashGc, ctx: &'a dyn GcContext, groups: u32) -> Self {
        Outputs {
            gc,
            ctx,
            groups,
            reserved: Vec::new(),
            written: Vec::new(),
        }
    }

    /// `w`, or a new file of `group` in it if it has none or is past `limit` bytes (the
    /// full one finished as `kind`).
    fn room<'w>(
        &mut self,
        w: &'w mut Option<GroupWriter>,
        group: u32,
        kind: SegmentKind,
        limit: u64,
    ) -> Result<&'w mut GroupWriter> {
        if w.as_ref().is_some_and(|w| w.len() >= limit) {
            self.written.push(w.take().expect("checked").finish(kind)?);
        }
        if w.is_none() {
            let number = self.ctx.files().reserve();
            self.reserved.push(number);
            *w = Some(GroupWriter::create(
                &*self.gc.fs,
                &self.gc.placement,
                FileNumber(number),
                group,
                self.groups,
            )?);
        }
        Ok(w.as_mut().expect("just made"))
    }

    fn finish(&mut self, w: Option<GroupWriter>, kind: SegmentKind) -> Result<()> {
        if let Some(w) = w {
            self.written.push(w.finish(kind)?);
        }
        Ok(())
    }

    /// Syncs the directory and names every file written in one manifest edit (an edit per
    /// file was a manifest sync and a copy of the version's file map each: a step at 640
    /// groups writes two or three). The numbers reserved are released either way.
    fn name(mut self) -> Result<()> {
        // Written files were synced by `finish`; their directory entries now.
        if let Some(f) = self.written.first() {
            if let Err(e) = self.gc.fs.sync_dir(self.gc.placement.dir(f.path_id)) {
                self.release();
                return Err(e);
            }
        }
        let mut written = std::mem::take(&mut self.written);
        written.sort_by_key(|f| f.number);
        let named = if written.is_empty() {
            Ok(())
        } else {
            self.ctx.files().name_all(written)
        };
        self.release();
        named
    }

    fn release(&mut self) {
        for n in std::mem::take(&mut self.reserved) {
            self.ctx.files().release(n);
        }
    }
}

impl Drop for Outputs<'_> {
    fn drop(&mut self) {
        // A step that gave up (closing, an error) leaves files the manifest does not name:
        // their numbers are released and obsolete-file deletion removes them.
        self.release();
    }
}

/// Whether the memtables of `view` leave `key`'s record at `here` its newest: nothing
/// newer there, or exactly the pointer to it (a GC's move not yet flushed).
fn still_newest(view: &dyn GcView, key: &[u8], here: &ValuePointer, pointer_ok: bool) -> bool {
    match view.memtable_entry(key) {
        None => true,
        Some(Lookup::Pointer(p)) => {
            let mut e = Vec::with_capacity(16);
            here.encode_to(&mut e);
            p == e || pointer_ok && is_cold(view.version(), &p)
        }
        Some(_) => false,
    }
}

/// Of a group with files `repair` kept ([`super::REPAIRED`]), whose records may not agree
/// with the repaired LSM: for each key with records in `files` (`newest`), the place its
/// newest LSM entry points to, if it points into these files (the record there is checked
/// when read). (Cold tags are dropped: the cold log's GC looks its keys up, and no older
/// record of a key outlives this GC.)
fn pointed_to(
    ctx: &dyn GcContext,
    files: &[ValueFile],
    newest: HashMap<Box<[u8]>, Newest, KeyHash>,
) -> Result<Vec<(Box<[u8]>, Newest)>> {
    let mut live = Vec::new();
    for (key, n) in newest {
        let Some(Lookup::Pointer(p)) = ctx.newest_entry(&key)? else {
            continue;
        };
        let Some(p) = ValuePointer::decode(&p).ok().filter(|p| p.store == ID) else {
            continue;
        };
        let Some(file) = files.iter().position(|f| f.number == p.file) else {
            continue; // another file (the cold log, an open file): not collected here
        };
        let n = Newest {
            kind: record::Kind::Value,
            file,
            offset: usize::try_from(p.offset).unwrap_or(usize::MAX),
            size: p.size as usize,
            ..n
        };
        live.push((key, n));
    }
    Ok(live)
}

/// The record `n` says `key` has in `bytes` (a file's): `walked`, bytes whose records a
/// walk checked (the checksum is not computed again), else bytes read again (it is);
/// `repaired`, a place a pointer gave (any value record of the key of that size), else one
/// the walk found (the same sequence and kind). `None` if it is not there.
fn read_back<'b>(
    bytes: &'b [u8],
    key: &[u8],
    n: &Newest,
    walked: bool,
    repaired: bool,
) -> Option<record::Record<'b>> {
    let at = bytes.get(n.offset..n.offset.checked_add(n.size)?)?;
    let r = if walked && !repaired {
        record::parse_walked(at)
    } else {
        record::parse(at)
    }
    .ok()?;
    let same = r.key == key
        && r.size == n.size
        && if repaired {
            r.kind == record::Kind::Value
        } else {
            r.kind == n.kind && r.seq == n.seq
        };
    same.then_some(r)
}

/// Hashes a group's keys (borrowed byte strings) with xxh3 under a seed drawn per GC step:
/// keys are users' and the map is rebuilt at every step, so a seed no one knows in advance
/// keeps crafted collisions from turning a step quadratic, at a fraction of SipHash's cost.
#[derive(Clone, Copy)]
struct KeyHash(u64);

impl std::hash::BuildHasher for KeyHash {
    type Hasher = KeyHasher;

    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(self.0)
    }
}

/// [`KeyHash`]'s hasher: each write folds its bytes into the state through xxh3.
struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }

    fn write_usize(&mut self, n: usize) {
        // The length prefix of a slice: mixed in cheaply (the bytes follow).
        self.0 = (self.0 ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Whether encoded pointer `p` leads into a cold-log file of `v`.
fn is_cold(v: &Version, p: &[u8]) -> bool {
    ValuePointer::decode(p).is_ok_and(|p| {
        p.store == ID
            && v.values
                .get(&p.file)
                .is_some_and(|f| kind_of(f) == SegmentKind::Cold)
    })
}

impl HashGc {
    pub fn new(env: &StoreEnv) -> HashGc {
        HashGc {
            fs: env.fs.clone(),
            placement: env.placement.clone(),
            opts: env.opts.clone(),
            configured: super::HashStore.configured(&env.opts),
            reserve: reserve(&env.opts),
            pending: Mutex::new(Vec::new()),
            pending_gen: AtomicU64::new(0),
            last_was_group: std::sync::atomic::AtomicBool::new(false),
            counters: Counters::default(),
            last_gc: Mutex::new(HashMap::new()),
            opened: std::time::Instant::now(),
            rng: Mutex::new(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
                    | 1,
            ),
            summary: Mutex::new(None),
        }
    }

    /// `f` of what `v`'s files add up to and give (computed once per set of files; the
    /// write path asks for the space per write group, with a pointer comparison).
    fn with_summary<R>(&self, v: &Version, f: impl FnOnce(&Summary) -> R) -> R {
        let gen = self.pending_gen.load(Relaxed);
        let mut cached = lock(&self.summary);
        if let Some((values, g, s)) = cached.as_ref() {
            if Arc::ptr_eq(values, &v.values) && *g == gen {
                return f(s);
            }
        }
        let held = self.pending_files();
        let all = Sizes::of(v, &self.opts, &Default::default());
        let sizes = Sizes::of(v, &self.opts, &held);
        let space = Space {
            used: all.reserve_used(&self.opts),
            collectable: sizes.reserve_used(&self.opts),
            held: files_of(v, ID)
                .filter(|f| held.contains(&f.number))
                .map(|f| f.size)
                .sum(),
            can_free: !self.collectable(&sizes).is_empty()
                || self.opts.hash_cold_takes_main && self.cold_victim(v).is_some(),
        };
        let (_, _, s) = cached.insert((v.values.clone(), gen, Summary { sizes, space }));
        f(s)
    }

    /// The reserve in use in `v` that GC steps can lower (files a snapshot holds left out).
    fn used(&self, v: &Version) -> u64 {
        self.space(v).collectable
    }

    /// The space `v`'s files give.
    fn space(&self, v: &Version) -> Space {
        self.with_summary(v, |s| s.space)
    }

    /// The groups a step can free reserve from, as (group, bytes of its files, bytes of
    /// its log segments): those past their room with writes since their last GC
    /// (collecting a group of main segments alone frees nothing).
    fn collectable(&self, sizes: &Sizes) -> Vec<(u32, u64, u64)> {
        let room = sizes.room(&self.opts);
        sizes
            .with_files()
            .filter(|&(_, all, logs)| all > room && logs > 0)
            .collect()
    }

    /// The group to collect in `v`: configured, among the groups past their room with
    /// writes since their last GC (collecting a group of main segments alone frees
    /// nothing), the one `hash_gc_policy` picks (greedy, the paper's default: the most
    /// writes); otherwise the largest group (the store drains). Never the cold log (its
    /// GC is another step).
    fn victim(&self, v: &Version) -> Option<u32> {
        if !self.configured {
            return self.with_summary(v, |s| {
                s.sizes
                    .with_files()
                    .max_by_key(|&(g, all, _)| (all.max(1), std::cmp::Reverse(g)))
                    .map(|(g, _, _)| g)
            });
        }
        let mut eligible = self.with_summary(v, |s| self.collectable(&s.sizes));
        // Most writes first (ties: the lower group), the order every policy starts from.
        eligible.sort_unstable_by_key(|&(g, _, logs)| (std::cmp::Reverse(logs), g));
        let pick = |n: usize| (self.random() % n.max(1) as u64) as usize;
        match self.opts.hash_gc_policy {
            HashGcPolicy::Greedy => eligible.first().map(|e| e.0),
            HashGcPolicy::GreedyRandom => {
                let k = eligible.len().min(self.opts.hash_gc_candidates as usize);
                (k > 0).then(|| eligible[pick(k)].0)
            }
            HashGcPolicy::Random => {
                (!eligible.is_empty()).then(|| eligible[pick(eligible.len())].0)
            }
            HashGcPolicy::CostBenefit => {
                let mut garbage: HashMap<u32, u64> = HashMap::new();
                for f in files_of(v, ID).filter(|f| super::is_group_segment(f)) {
                    *garbage.entry(group_of(f)).or_default() += f.garbage_bytes;
                }
                let last = lock(&self.last_gc);
                let now = std::time::Instant::now();
                let score = |&(g, all, _): &(u32, u64, u64)| {
                    let live = 1.0 - (garbage.get(&g).copied().unwrap_or(0) as f64 / all as f64);
                    let u = live.clamp(0.0, 1.0);
                    let age = now
                        .duration_since(last.get(&g).copied().unwrap_or(self.opened))
                        .as_secs_f64();
                    (1.0 - u) * age / (1.0 + u)
                };
                eligible
                    .iter()
                    .map(|e| (e.0, score(e)))
                    .filter(|&(_, s)| s > 0.0)
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(g, _)| g)
                    // Nothing counted as garbage yet: no benefit to weigh; the most writes.
                    .or_else(|| eligible.first().map(|e| e.0))
            }
        }
    }

    /// A pseudo-random number (xorshift; GC policies that pick at random).
    fn random(&self) -> u64 {
        let mut x = lock(&self.rng);
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    /// The cold-log files to collect in `v`, if its GC is due: the oldest, up to
    /// `hash_main_segment_size` bytes of them (at least one; the paper's vLog reads that
    /// much from its tail per GC), once the garbage counted in the cold log reaches
    /// `hash_cold_gc_ratio` of its bytes (any, while the store drains). Each group GC
    /// adds a cold file: taking several at once merges them, so their count stays bounded.
    fn cold_victim(&self, v: &Version) -> Option<Vec<ValueFile>> {
        let held = self.pending_files();
        let cold: Vec<&ValueFile> = files_of(v, ID)
            .filter(|f| kind_of(f) == SegmentKind::Cold && !held.contains(&f.number))
            .collect();
        if cold.is_empty() {
            return None;
        }
        if self.configured {
            let bytes: u64 = cold.iter().map(|f| f.record_bytes).sum();
            let garbage: u64 = cold.iter().map(|f| f.garbage_bytes).sum();
            if (garbage as f64) < self.opts.hash_cold_gc_ratio * bytes as f64 {
                return None;
            }
        }
        let mut taken = 0u64;
        Some(
            cold.into_iter()
                .take_while(|f| {
                    let take = taken == 0 || taken < self.opts.hash_main_segment_size;
                    taken += f.size.max(1);
                    take
                })
                .cloned()
                .collect(),
        )
    }

    /// The files GC replaced that wait for a snapshot.
    fn pending_files(&self) -> std::collections::HashSet<u64> {
        lock(&self.pending)
            .iter()
            .flat_map(|(files, _)| files.iter().copied())
            .collect()
    }

    /// Removes, in one edit, the files GC replaced that no snapshot may still read;
    /// whether there were any.
    fn remove_released(&self, ctx: &dyn GcContext) -> Result<bool> {
        let released: Vec<(Vec<u64>, SeqNo)> = lock(&self.pending)
            .iter()
            .filter(|(_, moved_at)| !ctx.snapshot_below(*moved_at))
            .cloned()
            .collect();
        if released.is_empty() {
            return Ok(false);
        }
        let files: Vec<u64> = released
            .iter()
            .flat_map(|(f, _)| f.iter().copied())
            .collect();
        ctx.apply(VersionEdit {
            deleted_value_files: files,
            ..VersionEdit::default()
        })?;
        lock(&self.pending).retain(|p| !released.contains(p));
        self.pending_gen.fetch_add(1, Relaxed);
        Ok(true)
    }

    /// File `f`'s bytes; a write-time file's up to its extent, which its records must fill
    /// (a walk that stops short of it met damage: records past it would be lost).
    fn read(&self, ctx: &dyn GcContext, f: &ValueFile) -> Result<Vec<u8>> {
        let path = f.path(&self.placement);
        let mut bytes = crate::fs::read_all(&*self.fs, &path)?;
        Stats::add(&ctx.stats().value_gc_bytes_read, bytes.len() as u64);
        if super::is_write_time(f) {
            let extent = usize::try_from(f.size).unwrap_or(usize::MAX);
            if bytes.len() < extent {
                return Err(Error::corruption(
                    &path,
                    bytes.len() as u64,
                    format!("hash-store file ends before its extent {extent}"),
                ));
            }
            bytes.truncate(extent);
            let (records, _) = record::walk(&bytes);
            let end = record::records_end(&records);
            if end != extent {
                return Err(Error::corruption(
                    &path,
                    end as u64,
                    "hash record: damaged before the file's extent",
                ));
            }
        }
        Ok(bytes)
    }

    /// A group step's first pass over `files`: each key's newest record (by sequence) and
    /// how many records of it they hold, the first files' bytes while they fit in `budget`
    /// (by index in `files`), and the most file bytes held at once; `None` if the database
    /// is closing.
    fn newest_records(
        &self,
        ctx: &dyn GcContext,
        files: &[ValueFile],
        budget: usize,
    ) -> Result<Option<FirstPass>> {
        // Keys hashed with a seeded xxh3 (std's SipHash, with a key copied per record, was
        // a fifth of this thread's time), each copied once, when first met, so that the
        // files need not stay in memory. (The manifest's record counts only size the map,
        // bounded: a damaged count must not ask for memory the files could not use.)
        let sizes = files.iter().map(|f| f.size).fold(0u64, u64::saturating_add);
        let records = files
            .iter()
            .map(|f| f.records)
            .fold(0u64, u64::saturating_add)
            .min(sizes / 8)
            .min(1 << 20) as usize;
        let mut newest: HashMap<Box<[u8]>, Newest, KeyHash> =
            HashMap::with_capacity_and_hasher(records, KeyHash(self.random()));
        // The bytes of the first files, while they fit in the budget (by index in `files`).
        let mut kept: HashMap<usize, Vec<u8>> = HashMap::new();
        let mut kept_bytes = 0usize;
        let mut peak = 0usize;
        for (i, f) in files.iter().enumerate() {
            if ctx.closing() {
                return Ok(None);
            }
            let bytes = self.read(ctx, f)?;
            peak = peak.max(kept_bytes + bytes.len());
            {
                let (records, stop) = record::walk(&bytes);
                if let Some((at, what)) = stop {
                    return Err(Error::corruption(
                        &f.path(&self.placement),
                        at as u64,
                        format!("hash record: {what}"),
                    ));
                }
                for (offset, r) in records {
                    let n = Newest {
                        seq: r.seq,
                        kind: r.kind,
                        file: i,
                        offset,
                        size: r.size,
                        versions: 1,
                    };
                    // (Equal sequences: the same record in a file a GC replaced and in its
                    // new main, both in the version only after a step whose moves failed
                    // or a reopen, when no memtable holds a moved pointer: the first
                    // file's.)
                    match newest.get_mut(r.key) {
                        Some(old) if old.seq >= r.seq => old.versions += 1,
                        Some(old) => {
                            let versions = old.versions + 1;
                            *old = Newest { versions, ..n };
                        }
                        None => {
                            newest.insert(r.key.into(), n);
                        }
                    }
                }
            }
            if kept.len() == i && kept_bytes + bytes.len() <= budget {
                kept_bytes += bytes.len();
                kept.insert(i, bytes);
            }
        }
        Ok(Some(FirstPass { newest, kept, peak }))
    }

    /// Collects group `g` of `view`'s version; `None` if the database is closing.
    ///
    /// Two passes, so that a step holds about `hash_gc_memory` bytes of the group's files
    /// at once however large the group grew: the first reads the files one after another
    /// for each key's newest record (keys copied; the first files are kept while they fit
    /// in that budget), the second reads the files holding live records again in turns of
    /// up to that budget (the kept ones are not read again) and writes each turn's live
    /// records in key order. A group within the budget is read once and written in one
    /// key order, as before.
    fn collect_group(
        &self,
        ctx: &dyn GcContext,
        view: &dyn GcView,
        g: u32,
    ) -> Result<Option<Collected>> {
        let v = view.version();
        // (Files an earlier step replaced, waiting for a snapshot, are left out: that
        // step moved every record of them that was live.)
        let held = self.pending_files();
        let files: Vec<ValueFile> = files_of(v, ID)
            // (An open file's records belong to memtables not yet flushed: checked below
            // as the write cache.)
            .filter(|f| group_of(f) == g && super::is_group_segment(f))
            .filter(|f| !held.contains(&f.number))
            .cloned()
            .collect();
        let budget = usize::try_from(self.opts.hash_gc_memory).unwrap_or(usize::MAX);
        let Some(FirstPass {
            newest,
            mut kept,
            mut peak,
        }) = self.newest_records(ctx, &files, budget)?
        else {
            return Ok(None);
        };
        let repaired = files.iter().any(super::is_repaired);
        let mut live: Vec<(Box<[u8]>, Newest)> = if repaired {
            pointed_to(ctx, &files, newest)?
        } else {
            newest
                .into_iter()
                .filter(|(_, n)| n.kind != record::Kind::Tombstone)
                .collect()
        };
        // By file, then offset: a turn takes the live records of the files it reads.
        live.sort_unstable_by_key(|(_, n)| (n.file, n.offset));
        let with_live: std::collections::HashSet<usize> =
            live.iter().map(|(_, n)| n.file).collect();
        kept.retain(|i, _| with_live.contains(i));
        let hot_cold = self.opts.hash_hot_cold;
        let mut out = Outputs::new(self, ctx, groups_in(v, &self.opts));
        let mut main: Option<GroupWriter> = None;
        let mut cold: Option<GroupWriter> = None;
        let mut moves = Vec::new();
        let mut moved_bytes = 0u64;
        let (mut hot, mut colds, mut tags) = (0u64, 0u64, 0u64);
        let mut encoded = Vec::with_capacity(16);
        let mut live = live.into_iter().peekable();
        while live.peek().is_some() {
            // A turn: the files of the next live records, in order, while they fit in the
            // budget (one at least).
            let mut turn: HashMap<usize, (Vec<u8>, bool)> = HashMap::new();
            let mut turn_bytes = 0usize;
            let mut records: Vec<(Box<[u8]>, Newest)> = Vec::new();
            while let Some((_, n)) = live.peek() {
                let i = n.file;
                if !turn.contains_key(&i) {
                    let size = kept.get(&i).map_or_else(
                        || usize::try_from(files[i].size).unwrap_or(usize::MAX),
                        Vec::len,
                    );
                    if !turn.is_empty() && turn_bytes.saturating_add(size) > budget {
                        break;
                    }
                    let (bytes, walked) = match kept.remove(&i) {
                        Some(b) => (b, true),
                        None => (self.read(ctx, &files[i])?, false),
                    };
                    turn_bytes += bytes.len();
                    turn.insert(i, (bytes, walked));
                }
                records.extend(live.next());
            }
            peak = peak.max(turn_bytes + kept.values().map(Vec::len).sum::<usize>());
            // In key order: the moves reach the memtable in key order, and the new main
            // holds its records in key order (a scan's next values are neighbours).
            records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (key, n) in records {
                if ctx.closing() {
                    return Ok(None);
                }
                let f = &files[n.file];
                let here = ValuePointer {
                    store: ID,
                    file: f.number,
                    offset: n.offset as u64,
                    size: n.size as u32,
                };
                let tag = n.kind == record::Kind::ColdTag;
                if !still_newest(view, &key, &here, tag) {
                    continue;
                }
                // A range deletion leaves no record here: the LSM says whether it covers
                // the key's newest entry, which is then no pointer. (Only whether: the
                // same record may be in two files here after a reopen, a GC's replaced
                // file and its new main, and the LSM points to one of them.)
                if view.ranges_touch(&key)
                    && !matches!(ctx.newest_entry(&key)?, Some(Lookup::Pointer(_)))
                {
                    continue;
                }
                let (bytes, walked) = &turn[&n.file];
                let r = read_back(bytes, &key, &n, *walked, repaired).ok_or_else(|| {
                    Error::corruption(
                        &f.path(&self.placement),
                        n.offset as u64,
                        if repaired {
                            format!("key {key:02x?}: its value pointer leads to no record of it")
                        } else {
                            format!("key {key:02x?}: its record changed since it was read")
                        },
                    )
                })?;
                if !tag {
                    // A value the compaction filter removes or changes leaves the store:
                    // the key's deletion or its new value (a put, which the store takes
                    // at flush like any other) is written instead. (A tag's value is in
                    // the cold log, whose GC offers it.)
                    if let Some(f) = Relocated::filtered(&key, ctx.filter(&key, r.value)?) {
                        moves.push(f);
                        continue;
                    }
                }
                if !self.configured {
                    // Draining: values leave the store as puts; a tag's value is in the
                    // cold log, which drains by its own GC.
                    if !tag {
                        moved_bytes += r.value.len() as u64;
                        moves.push(Relocated {
                            key: key.into_vec(),
                            value: r.value.to_vec(),
                            kind: Move::Value,
                        });
                    }
                    continue;
                }
                let limit = self.opts.hash_main_segment_size;
                let w = out.room(&mut main, g, SegmentKind::Main, limit)?;
                if tag {
                    // Still cold: the tag stays, the value where it is.
                    w.add(record::Kind::ColdTag, r.seq, &key, &[])?;
                    tags += 1;
                    continue;
                }
                moved_bytes += r.value.len() as u64;
                let to = if hot_cold && n.versions == 1 {
                    // Written once since the group's last GC: cold. Its value goes to the
                    // cold log; the group keeps a tag (so that an update later finds it,
                    // and the next GC of the group rewrites the tag, not the value).
                    w.add(record::Kind::ColdTag, r.seq, &key, &[])?;
                    colds += 1;
                    let c = out.room(&mut cold, COLD_GROUP, SegmentKind::Cold, u64::MAX)?;
                    c.add(record::Kind::Value, r.seq, &key, r.value)?
                } else {
                    hot += 1;
                    w.add(record::Kind::Value, r.seq, &key, r.value)?
                };
                encoded.clear();
                to.encode_to(&mut encoded);
                moves.push(Relocated {
                    key: key.into_vec(),
                    value: encoded.clone(),
                    kind: Move::Pointer,
                });
            }
            if !self.configured && live.peek().is_some() && !moves.is_empty() {
                // Draining: this turn's values go now (the watch goes on), not held until
                // the step's end. (Configured, the moves are pointers, written once the
                // new files are named.)
                ctx.write_relocated_part(std::mem::take(&mut moves))?;
            }
        }
        self.counters.peak_bytes.fetch_max(peak as u64, Relaxed);
        out.finish(main.take(), SegmentKind::Main)?;
        out.finish(cold.take(), SegmentKind::Cold)?;
        // Named before any pointer into them is written: a crash after this keeps them
        // with the old files, and the next GC reads both.
        out.name()?;
        lock(&self.last_gc).insert(g, std::time::Instant::now());
        let c = &self.counters;
        c.group_steps.fetch_add(1, Relaxed);
        c.hot.fetch_add(hot, Relaxed);
        c.cold.fetch_add(colds, Relaxed);
        c.tags.fetch_add(tags, Relaxed);
        let old = files.iter().map(|f| f.number).collect();
        Ok(Some((moves, old, moved_bytes)))
    }

    /// Collects cold-log files `tail`: their records whose key's newest entry points to
    /// them move to a new cold file (configured) or leave the store as puts (draining).
    /// `None` if the database is closing.
    fn collect_cold(&self, ctx: &dyn GcContext, tail: &[ValueFile]) -> Result<Option<Collected>> {
        let v = ctx.version();
        let mut contents = Vec::with_capacity(tail.len());
        for f in tail {
            contents.push((f.number, self.read(ctx, f)?));
        }
        let mut records = Vec::new();
        for (f, (number, bytes)) in tail.iter().zip(&contents) {
            let (found, stop) = record::walk(bytes);
            if let Some((at, what)) = stop {
                return Err(Error::corruption(
                    &f.path(&self.placement),
                    at as u64,
                    format!("hash record: {what}"),
                ));
            }
            records.extend(found.into_iter().map(|(offset, r)| (*number, offset, r)));
        }
        records.sort_unstable_by(|a, b| a.2.key.cmp(b.2.key));
        let mut out = Outputs::new(self, ctx, groups_in(&v, &self.opts));
        let mut cold: Option<GroupWriter> = None;
        let mut moves = Vec::new();
        let mut moved_bytes = 0u64;
        let mut encoded = Vec::with_capacity(16);
        for (file, offset, r) in records {
            if ctx.closing() {
                return Ok(None);
            }
            let here = ValuePointer {
                store: ID,
                file,
                offset: offset as u64,
                size: r.size as u32,
            };
            encoded.clear();
            here.encode_to(&mut encoded);
            match ctx.newest_entry(r.key)? {
                Some(Lookup::Pointer(now)) if now == encoded => {}
                _ => continue,
            }
            if let Some(f) = Relocated::filtered(r.key, ctx.filter(r.key, r.value)?) {
                moves.push(f);
                continue;
            }
            moved_bytes += r.value.len() as u64;
            if !self.configured {
                moves.push(Relocated {
                    key: r.key.to_vec(),
                    value: r.value.to_vec(),
                    kind: Move::Value,
                });
                continue;
            }
            let c = out.room(&mut cold, COLD_GROUP, SegmentKind::Cold, u64::MAX)?;
            let to = c.add(record::Kind::Value, r.seq, r.key, r.value)?;
            encoded.clear();
            to.encode_to(&mut encoded);
            moves.push(Relocated {
                key: r.key.to_vec(),
                value: encoded.clone(),
                kind: Move::Pointer,
            });
        }
        out.finish(cold.take(), SegmentKind::Cold)?;
        out.name()?;
        self.counters.cold_steps.fetch_add(1, Relaxed);
        Ok(Some((
            moves,
            tail.iter().map(|f| f.number).collect(),
            moved_bytes,
        )))
    }
}

impl ValueGc for HashGc {
    fn thread_name(&self) -> &'static str {
        "strata-hash-gc"
    }

    fn store(&self) -> crate::vstore::StoreId {
        ID
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        vec![
            ("group steps", c.group_steps.load(Relaxed)),
            ("cold-log steps", c.cold_steps.load(Relaxed)),
            ("hot values kept", c.hot.load(Relaxed)),
            ("cold values moved to the cold log", c.cold.load(Relaxed)),
            ("cold tags kept", c.tags.load(Relaxed)),
            (
                "most file bytes a group step held",
                c.peak_bytes.load(Relaxed),
            ),
        ]
    }

    /// Configured: the reserve in use past 90 % of the reserve and a group with log
    /// segments, or the cold log's garbage past `hash_cold_gc_ratio`. Otherwise: any
    /// file left (the store drains into the configured one).
    fn due(&self, v: &Version) -> bool {
        if !self.configured {
            let held = self.pending_files();
            return files_of(v, ID).any(|f| !held.contains(&f.number));
        }
        let groups =
            self.used(v) as f64 > TRIGGER * self.reserve as f64 && self.victim(v).is_some();
        groups || self.cold_victim(v).is_some()
    }

    fn step(&self, ctx: &dyn GcContext) -> Result<bool> {
        // Files earlier steps replaced go once no snapshot needs them; while one does, the
        // other groups are still collected (one long scan or backup stopped every GC).
        let removed = self.remove_released(ctx)?;
        let v = ctx.version();
        if !self.due(&v) {
            return Ok(removed);
        }
        let groups_due = !self.configured || self.used(&v) as f64 > TRIGGER * self.reserve as f64;
        let group = self.victim(&v).filter(|_| groups_due);
        let cold = self.cold_victim(&v);
        let group = group.filter(|_| cold.is_none() || !self.last_was_group.load(Relaxed));
        self.last_was_group.store(group.is_some(), Relaxed);
        // The watch first, then the view: every user write is in the view or watched.
        ctx.watch();
        let found = match (group, cold) {
            (Some(g), _) => {
                let view = ctx.view();
                self.collect_group(ctx, &*view, g)
            }
            (None, Some(tail)) => self.collect_cold(ctx, &tail),
            (None, None) => Ok(None),
        };
        let (moves, old, moved_bytes) = match found {
            Ok(Some(m)) => m,
            other => {
                ctx.unwatch();
                return other.map(|_| removed);
            }
        };
        let at = ctx.write_relocated(moves)?;
        Stats::add(&ctx.stats().value_bytes_relocated, moved_bytes);
        Stats::add(&ctx.stats().value_gc_runs, 1);
        lock(&self.pending).push((old, at));
        self.pending_gen.fetch_add(1, Relaxed);
        self.remove_released(ctx)?;
        Ok(true)
    }

    fn may_pace(&self) -> bool {
        self.configured
    }

    /// While the reserve in use that GC steps can lower passes the reserve and a step can
    /// lower it (files a snapshot holds are not waited for: no step frees them).
    fn pace_writes(&self, v: &Version) -> bool {
        if !self.configured {
            // Draining: the writes go to another store.
            return false;
        }
        let s = self.space(v);
        s.collectable > self.reserve && s.can_free
    }

    /// With `HashWhenFull::Refuse`: while the reserve in use (files a snapshot holds
    /// included: the space taken) passes the reserve and no step can lower it (every group
    /// past its room holds only what its last GC kept), or the files a snapshot holds take
    /// a reserve's worth by themselves (steps go on, but each adds to them until the
    /// snapshot is released).
    fn refuses(&self, v: &Version) -> Option<String> {
        if !self.configured || self.opts.hash_when_full != HashWhenFull::Refuse {
            // Draining (the writes go to another store), or growing.
            return None;
        }
        let s = self.space(v);
        if s.used <= self.reserve || s.can_free && s.held < self.reserve {
            return None;
        }
        let o = &self.opts;
        if s.held > 0 {
            return Some(format!(
                "the hash store is full: {} B of files GC replaced wait for a snapshot that \
                 may still read them (a long scan, iterator or backup): release it, and \
                 they go at the next GC step",
                s.held
            ));
        }
        Some(format!(
            "the hash store is full: its live values take its main space ({} groups x {} B) \
             and {} B of its {} B reserve, and GC can free none; delete keys or write \
             smaller values (under min_blob_size) to free space, or reopen with a larger \
             hash_main_segment_size, hash_groups or hash_reserve_ratio (or hash_when_full \
             = Grow)",
            groups_in(v, o),
            o.hash_main_segment_size,
            s.used,
            self.reserve
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::PathId;
    use crate::vstore::hash::meta;

    fn file(number: u64, group: u32, kind: SegmentKind, size: u64) -> ValueFile {
        let mut f = ValueFile::new(super::super::FORMAT, number, PathId(0));
        f.size = size;
        f.meta = meta(group, 4, kind);
        f
    }

    fn version(files: &[ValueFile]) -> Version {
        let mut v = Version::new(7);
        v.values = Arc::new(files.iter().map(|f| (f.number, f.clone())).collect());
        v
    }

    #[test]
    fn writes_wait_while_a_step_can_free_space_and_are_refused_when_none_can() {
        let opts = crate::Options {
            value_store: crate::ValueStoreKind::Hash,
            hash_groups: 4,
            hash_main_segment_size: 1000,
            hash_reserve_ratio: 0.5,
            ..crate::Options::default()
        };
        let env = StoreEnv {
            stores: crate::registry::STORES,
            fs: Arc::new(crate::fs::MemFs::new()),
            placement: Placement::new(std::path::Path::new("/db"), None, None),
            opts: opts.clone(),
            recovery: false,
        };
        let gc = HashGc::new(&env);
        // Reserve 2000 B. Group 0 holds 3500 B of what its last GC kept: 2500 B past its
        // room, and no step can lower that.
        let full = version(&[file(1, 0, SegmentKind::Main, 3500)]);
        assert!(!gc.pace_writes(&full));
        let why = gc.refuses(&full).expect("refused");
        assert!(why.contains("hash_reserve_ratio"), "{why}");
        // A flush adds log segments to a group past its room: GC can free, writes wait.
        let logs = version(&[
            file(1, 0, SegmentKind::Main, 3500),
            file(2, 0, SegmentKind::Log, 100),
        ]);
        assert!(gc.pace_writes(&logs));
        assert!(gc.refuses(&logs).is_none());
        // Within the reserve: neither.
        let fits = version(&[file(1, 0, SegmentKind::Main, 2500)]);
        assert!(!gc.pace_writes(&fits) && gc.refuses(&fits).is_none());
        // Growing instead: never refused.
        let with = |opts: crate::Options| {
            HashGc::new(&StoreEnv {
                stores: crate::registry::STORES,
                fs: env.fs.clone(),
                placement: env.placement.clone(),
                opts,
                recovery: false,
            })
        };
        let grow = with(crate::Options {
            hash_when_full: HashWhenFull::Grow,
            ..opts.clone()
        });
        assert!(grow.refuses(&full).is_none() && !grow.pace_writes(&full));
        // Draining under another store (which may pace writes itself): the hash store
        // neither refuses nor holds back the writes, which go elsewhere.
        let draining = with(crate::Options {
            value_store: crate::ValueStoreKind::VLog,
            ..opts
        });
        assert!(draining.refuses(&full).is_none() && !draining.pace_writes(&logs));
    }
}
