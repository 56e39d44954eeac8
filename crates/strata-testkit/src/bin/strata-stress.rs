//! strata-stress: concurrent random operations verified against an expected-state oracle
//! that survives `kill -9`, and a crash loop that kills it at random moments.
//!
//! ```text
//! strata-stress run --db=DIR --oracle=FILE [--threads=4] [--keys=20000] [--seconds=10]
//!               [--sync=0.05] [--preset=default] [--slow_tables_ms=0] [option flags]
//!               [--batch_keys=0]  (N > 0: every write a batch of N own keys; 0: mostly one)
//!               [--writes=55]  (the percentage of ops that write; the rest read)
//!               [--large_values=0]  (the fraction of values made 5-65 KB long)
//!               [--small_values_from=0]  (the other values' least padding: 0-119 bytes more)
//! option flags (as in strata-bench): --write_buffer_size --target_file_size_base
//!   --max_bytes_for_level_base --bloom_bits --level0_file_num_compaction_trigger
//!   --level0_slowdown_writes_trigger --level0_stop_writes_trigger --max_write_buffer_number --num_levels
//!   --max_background_compactions --block_size --separate_flush_thread=0|1
//!   --compression_type=none|lz4 --compaction_priority=round-robin|min-overlap --wal_dir --level_dir --pmem_dir
//!   --tables_in_memory=BYTES (memory_limit leaving that much for tables: pread beyond it)
//!   --write_stall_limit_ms=1000 (a write stopped that long with no background job running
//!   fails the run with the tree's shape: Options::write_stall_limit; 0 waits for ever)
//! strata-stress verify --db=DIR --oracle=FILE [--keys=..] [--preset=..]   (= --verify_only)
//! strata-stress crash-loop --dir=DIR [--kills=20] [--min_delay_ms=300] [--max_delay_ms=1500]
//!               [--presets=every preset in Options::PRESETS] [--threads=4] [--keys=20000]
//!               [--repair_every=0]   (every Nth kill: manifests removed, `strata::repair`)
//!               [--backup_every=0]   (every Nth run also backs up into DIR/backups while it
//!               works; after the kill every backup verifies and the newest restores)
//!               [--delay_from=spawn|open]   (the kill delay counts from the child's start,
//!               or from the moment its database is open)
//!               (a preset named twice in --presets runs twice as often)
//! ```
//!
//! Deletes are point deletes or (three in ten) range deletions of the one key. Thread t
//! owns the keys k with k % threads == t and is their only writer, so the oracle's
//! begin/commit protocol is exact; every thread reads every key. Reads are verified as they
//! go (own keys exactly; others when no commit raced the read), bounded scans check own keys,
//! snapshot reads check own keys against the state at the snapshot (thread 0 holds one
//! snapshot across 200 of its snapshot reads, so value-store GC runs under a long-held
//! snapshot, and checks it each time). The crash loop runs the
//! `run` mode as a child, SIGKILLs it after a random delay (every third run with slowed table
//! writes, so kills land during flushes and compactions), verifies every key, and repairs
//! the oracle to what survived. With `--repair_every=N`, every Nth killed database loses its
//! manifests and CURRENT and is rebuilt by `strata::repair` before it is verified.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::fs::{FileLock, Fs, RandomAccessFile, RealFs, SequentialFile, WritableFile};
use strata::{Db, Options, ReadOptions, WriteBatch, WriteOptions};
use strata_testkit::oracle::{
    key_for, key_index, matches, set_large_values, set_small_values_from, value_for, Oracle, Slot,
};
use strata_testkit::{Rng, SlowFile};

#[derive(Debug, Clone)]
struct Args(BTreeMap<String, String>);

impl Args {
    fn parse(args: &[String]) -> Result<Args, String> {
        let mut m = BTreeMap::new();
        for a in args {
            let body = a
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {a:?}"))?;
            let (k, v) = body.split_once('=').unwrap_or((body, "1"));
            m.insert(k.to_string(), v.to_string());
        }
        Ok(Args(m))
    }
    fn get<T: std::str::FromStr>(&self, k: &str, default: T) -> Result<T, String> {
        match self.0.get(k) {
            Some(v) => v.parse().map_err(|_| format!("--{k}: bad value {v:?}")),
            None => Ok(default),
        }
    }
    fn str(&self, k: &str, default: &str) -> String {
        self.0
            .get(k)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    }
    fn path(&self, k: &str) -> Result<PathBuf, String> {
        self.0
            .get(k)
            .map(PathBuf::from)
            .ok_or_else(|| format!("--{k}=PATH is required"))
    }
}

/// Real files, with an optional sleep on every table append (to stretch flush and compaction).
#[derive(Debug)]
struct SlowTables {
    ms: u64,
}

impl Fs for SlowTables {
    fn create(&self, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        let f = RealFs.create(path)?;
        if self.ms > 0 && path.extension().is_some_and(|e| e == "sst") {
            return Ok(Box::new(SlowFile::new(f, Duration::from_millis(self.ms))));
        }
        Ok(f)
    }
    fn create_log(&self, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        RealFs.create_log(path)
    }
    fn open(&self, path: &Path) -> strata::Result<Arc<dyn RandomAccessFile>> {
        RealFs.open(path)
    }
    fn open_with(
        &self,
        path: &Path,
        access: strata::fs::ReadAccess,
    ) -> strata::Result<Arc<dyn RandomAccessFile>> {
        RealFs.open_with(path, access)
    }
    fn open_sequential(&self, path: &Path) -> strata::Result<Box<dyn SequentialFile>> {
        RealFs.open_sequential(path)
    }
    fn exists(&self, path: &Path) -> bool {
        RealFs.exists(path)
    }
    fn list(&self, dir: &Path) -> strata::Result<Vec<String>> {
        RealFs.list(dir)
    }
    fn remove(&self, path: &Path) -> strata::Result<()> {
        RealFs.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> strata::Result<()> {
        RealFs.rename(from, to)
    }
    fn create_dir_all(&self, dir: &Path) -> strata::Result<()> {
        RealFs.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> strata::Result<()> {
        RealFs.sync_dir(dir)
    }
    fn open_region(
        &self,
        path: &Path,
        len: usize,
    ) -> strata::Result<Arc<dyn strata::fs::PmemRegion>> {
        RealFs.open_region(path, len)
    }
    fn sync_file(&self, path: &Path) -> strata::Result<()> {
        RealFs.sync_file(path)
    }
    fn file_size(&self, path: &Path) -> strata::Result<u64> {
        RealFs.file_size(path)
    }
    fn file_identity(&self, path: &Path) -> Option<u128> {
        RealFs.file_identity(path)
    }
    fn lock(&self, path: &Path) -> strata::Result<Box<dyn FileLock>> {
        RealFs.lock(path)
    }
}

fn options(a: &Args) -> Result<Options, String> {
    let mut o = Options::preset(&a.str("preset", "default")).map_err(|e| e.to_string())?;
    // Small sizes so short runs flush and compact often.
    o.write_buffer_size = a.get("write_buffer_size", 256 << 10)?;
    o.target_file_size_base = a.get("target_file_size_base", 128 << 10)?;
    o.max_bytes_for_level_base = a.get("max_bytes_for_level_base", 1 << 20)?;
    o.fs = Arc::new(SlowTables {
        ms: a.get("slow_tables_ms", 0)?,
    });
    // The same option flags as strata-bench, so any preset can be varied.
    o.bloom_bits_per_key = a.get("bloom_bits", o.bloom_bits_per_key)?;
    o.level0_file_num_compaction_trigger = a.get(
        "level0_file_num_compaction_trigger",
        o.level0_file_num_compaction_trigger,
    )?;
    o.level0_slowdown_writes_trigger = a.get(
        "level0_slowdown_writes_trigger",
        o.level0_slowdown_writes_trigger,
    )?;
    o.level0_stop_writes_trigger =
        a.get("level0_stop_writes_trigger", o.level0_stop_writes_trigger)?;
    o.max_write_buffer_number = a.get("max_write_buffer_number", o.max_write_buffer_number)?;
    o.num_levels = a.get("num_levels", o.num_levels)?;
    o.max_mem_compaction_level = o
        .max_mem_compaction_level
        .min(o.num_levels.saturating_sub(1));
    o.max_background_compactions =
        a.get("max_background_compactions", o.max_background_compactions)?;
    o.block_size = a.get("block_size", o.block_size)?;
    o.separate_flush_thread =
        a.get::<u8>("separate_flush_thread", u8::from(o.separate_flush_thread))? != 0;
    match a.str("compression_type", "none").as_str() {
        "lz4" => o.compression = strata::Compression::Lz4,
        "none" => {}
        c => return Err(format!("--compression_type: expected none|lz4, got {c:?}")),
    }
    match a.0.get("compaction_priority").map(String::as_str) {
        Some("round-robin") => o.compaction_priority = strata::CompactionPriority::RoundRobin,
        Some("min-overlap") => {
            o.compaction_priority = strata::CompactionPriority::MinOverlappingRatio
        }
        Some(c) => {
            return Err(format!(
                "--compaction_priority: expected round-robin|min-overlap, got {c:?}"
            ))
        }
        None => {}
    }
    // Tables read with pread once the live tables exceed this many bytes (and maps again
    // below nine tenths of it): `memory_limit` set to leave that much of it for tables.
    if let Some(t) = a.0.get("tables_in_memory") {
        let t: u64 = t
            .parse()
            .map_err(|_| format!("--tables_in_memory: expected bytes, got {t:?}"))?;
        let reserved =
            (o.write_buffer_size * o.max_write_buffer_number + o.block_cache_size) as u64;
        o.memory_limit = Some(reserved + t / 3 * 4 + 4);
    }
    // OHDB's buckets, small: bucket compactions run all the time.
    o.l0_buckets = a.get("l0_buckets", 4)?;
    o.bucket_compaction_trigger = a.get("bucket_compaction_trigger", 2)?;
    // Blob files and the value log (presets blob, wisckey): the stress values are 8-130
    // bytes, so a 64-byte threshold
    // sends about half of them to blob files and keys cross it with every overwrite.
    o.min_blob_size = a.get("min_blob_size", 64)?;
    // The value log (preset wisckey) in 256 KiB segments: the head moves often.
    o.vlog_segment_size = a.get("vlog_segment_size", 256 << 10)?;
    // HashKV's store (preset hashkv) tiny: 16 groups (a flush finishes their files on
    // several threads) of 4 KiB main segments and a reserve as large, so group GCs run all
    // the time (and drain it under the other presets).
    o.hash_groups = a.get("hash_groups", 16)?;
    o.hash_main_segment_size = a.get("hash_main_segment_size", 4 << 10)?;
    o.hash_reserve_ratio = a.get("hash_reserve_ratio", 1.0)?;
    // The run's live values outgrow so small a store: it grows (a refused write would
    // end the run).
    o.hash_when_full = strata::HashWhenFull::Grow;
    // MatrixKV's container (preset matrixkv) tiny: 4 MiB (16 memtables), so the receiver
    // turns into the compactor every few flushes and column compactions run all the time
    // (a database keeps the size its region was created with).
    o.matrix_container_size = a.get("matrix_container_size", 4 << 20)?;
    // CLeveldb's coalescing (presets cleveldb, cleveldb-inline): the stress items straddle
    // a 64-byte threshold, and 512-byte groups with GC at 30 % garbage keep group GC
    // running.
    if o.coalesce_item_threshold > 0 {
        o.coalesce_item_threshold = a.get("coalesce_item_threshold", 64)?;
        if o.coalesce_group_size > 0 {
            o.coalesce_group_size = a.get("coalesce_group_size", 512)?;
        }
        o.coalesce_gc_ratio = 0.3;
    }
    // The write-path watchdog: a stall fails the run (the kill loop reports the early exit)
    // instead of waiting until the kill.
    o.write_stall_limit = match a.get("write_stall_limit_ms", 1000u64)? {
        0 => None,
        ms => Some(Duration::from_millis(ms)),
    };
    // The kill loop rotates presets over one database: each run moves it to its preset's L0
    // layout (an open keeps the recorded layout unless asked), so migrations run under kills.
    o.migrate_l0_layout = true;
    o.wal_dir = a.0.get("wal_dir").map(PathBuf::from);
    let preset = a.str("preset", "default");
    // The second directory of ohdb-2dc and ohdb-c, and the persistent memory of
    // rocksdb-l0-nvm, beside the database unless given.
    o.level_dir = beside_db(
        a,
        "level_dir",
        "levels",
        ["ohdb-2dc", "ohdb-c"].contains(&preset.as_str()),
    );
    o.pmem_dir = beside_db(
        a,
        "pmem_dir",
        "pmem",
        strata::Options::PMEM_PRESETS.contains(&preset.as_str()),
    );
    o.validate().map_err(|e| e.to_string())?;
    Ok(o)
}

/// The directory flag `flag` names, else `DB-suffix` when the preset needs one. A later
/// run under a preset that needs none (the kill loop rotates presets over one database)
/// names none: its open takes the directories the manifest records, the path an
/// application that forgets a directory option walks.
fn beside_db(a: &Args, flag: &str, suffix: &str, needed: bool) -> Option<PathBuf> {
    if let Some(d) = a.0.get(flag) {
        return Some(PathBuf::from(d));
    }
    let dir = PathBuf::from(format!("{}-{suffix}", a.0.get("db")?));
    needed.then_some(dir)
}

struct Counters {
    ops: AtomicU64,
    writes: AtomicU64,
    reads_checked: AtomicU64,
    failures: AtomicU64,
}

fn fail(c: &Counters, msg: String) {
    eprintln!("strata-stress: VERIFICATION FAILURE: {msg}");
    c.failures.fetch_add(1, Ordering::SeqCst);
}

fn worker(
    db: &Db,
    oracle: &Oracle,
    t: u32,
    threads: u32,
    a: &Args,
    stop: &AtomicBool,
    c: &Counters,
) -> Result<(), String> {
    let keys = oracle.keys();
    let sync_fraction: f64 = a.get("sync", 0.05)?;
    let batch_keys: usize = a.get("batch_keys", 0)?;
    let writes: u64 = a.get::<u64>("writes", 55)?.clamp(1, 100);
    let mut rng =
        Rng::new(a.get::<u64>("seed", 0)? ^ (u64::from(t) << 40) ^ std::process::id() as u64);
    let own = |rng: &mut Rng| {
        let per = (keys - t).div_ceil(threads);
        t + threads * rng.below(u64::from(per.max(1))) as u32
    };
    let mut long: Option<LongSnapshot> = None;
    while !stop.load(Ordering::Relaxed) {
        c.ops.fetch_add(1, Ordering::Relaxed);
        // `writes` percent of the ops write; the rest read in their usual shares.
        let r = rng.below(100);
        let op = if r < writes {
            0
        } else {
            55 + (r - writes) * 45 / (100 - writes).max(1)
        };
        match op {
            // Put / delete / batch of own keys.
            0..=54 => {
                let n = if batch_keys > 0 {
                    batch_keys
                } else if rng.chance(0.2) {
                    1 + rng.below(8) as usize
                } else {
                    1
                };
                let mut ks: Vec<u32> = (0..n).map(|_| own(&mut rng)).collect();
                ks.sort_unstable();
                ks.dedup();
                // A batch of exactly N keys (as long as the thread owns that many).
                while ks.len() < n.min(((keys - t).div_ceil(threads)) as usize) {
                    let k = own(&mut rng);
                    if let Err(at) = ks.binary_search(&k) {
                        ks.insert(at, k);
                    }
                }
                let sync = rng.chance(sync_fraction);
                let mut b = WriteBatch::new();
                let mut slots = Vec::new();
                for &k in &ks {
                    let id = oracle.next_id(t, k);
                    let s = if rng.chance(0.15) {
                        Slot::delete(id, sync)
                    } else {
                        Slot::put(id, sync)
                    };
                    oracle.begin(k, s);
                    if s.is_absent() && rng.chance(0.3) {
                        // A range deletion of exactly this key (no stress key lies between
                        // two neighbours): the range-tombstone path under the kills too.
                        b.delete_range(key_for(k), key_for(k + 1));
                    } else if s.is_absent() {
                        b.delete(key_for(k));
                    } else {
                        b.put(key_for(k), value_for(k, id));
                    }
                    slots.push((k, s));
                }
                db.write(
                    &WriteOptions {
                        sync,
                        ..Default::default()
                    },
                    b,
                )
                .map_err(|e| format!("write: {e}"))?;
                for (k, s) in slots {
                    oracle.commit(k, s);
                }
                c.writes.fetch_add(1, Ordering::Relaxed);
            }
            // Point read of any key.
            55..=84 => {
                let k = rng.below(u64::from(keys)) as u32;
                let (c1, p1) = (oracle.committed(k), oracle.pending(k));
                let got = db.get(key_for(k)).map_err(|e| format!("get: {e}"))?;
                let (c2, p2) = (oracle.committed(k), oracle.pending(k));
                if c1 == c2 {
                    c.reads_checked.fetch_add(1, Ordering::Relaxed);
                    let ok = [c1, p1, p2]
                        .iter()
                        .any(|&s| (s.is_set() || s == c1) && matches(k, s, got.as_deref()));
                    if !ok {
                        fail(c, format!("get key {k}: {:?} matches neither committed {c1:?} nor pending {p1:?}/{p2:?}", got.map(|v| String::from_utf8_lossy(&v).into_owned())));
                    }
                }
            }
            // Bounded scan: own keys in range must be exactly as committed.
            85..=93 => {
                let start = rng.below(u64::from(keys)) as u32;
                let end = (start + 200).min(keys);
                let opts = ReadOptions {
                    lower_bound: Some(key_for(start)),
                    upper_bound: Some(key_for(end)),
                    ..Default::default()
                };
                let mut seen = BTreeMap::new();
                for r in db.iter(opts).map_err(|e| e.to_string())? {
                    let (k, v) = r.map_err(|e| format!("scan: {e}"))?;
                    let idx =
                        key_index(&k).ok_or_else(|| format!("scan returned foreign key {k:?}"))?;
                    if !(start..end).contains(&idx) {
                        fail(c, format!("scan [{start}, {end}) returned key {idx}"));
                    }
                    seen.insert(idx, v);
                }
                for k in (start..end).filter(|k| k % threads == t) {
                    c.reads_checked.fetch_add(1, Ordering::Relaxed);
                    if !matches(k, oracle.committed(k), seen.get(&k).map(Vec::as_slice)) {
                        fail(
                            c,
                            format!(
                                "scan: own key {k} is {:?}, committed {:?}",
                                seen.get(&k)
                                    .map(|v| String::from_utf8_lossy(v).into_owned()),
                                oracle.committed(k)
                            ),
                        );
                    }
                }
            }
            // A long-held snapshot (thread 0): taken, then checked again at each of this
            // thread's next 200 snapshot ops while the writes go on (value-store GC runs
            // under it: it must neither lose what the snapshot reads nor stop).
            _ if t == 0 && long.as_ref().is_some_and(|l| l.2 > 0) => {
                let (snap, states, left) = long.as_mut().expect("checked");
                *left -= 1;
                check_snapshot(db, snap, states, c, "long-held snapshot")?;
            }
            _ if t == 0 => {
                let ks: Vec<u32> = (0..8).map(|_| own(&mut rng)).collect();
                let snap = db.snapshot();
                let states = ks.iter().map(|&k| (k, oracle.committed(k))).collect();
                long = Some((snap, states, 200));
            }
            // Snapshot: own keys keep their state at the snapshot while we overwrite them.
            _ => {
                let ks: Vec<u32> = (0..8).map(|_| own(&mut rng)).collect();
                let snap = db.snapshot();
                let before: Vec<(u32, Slot)> =
                    ks.iter().map(|&k| (k, oracle.committed(k))).collect();
                let k0 = ks[0];
                let id = oracle.next_id(t, k0);
                let s = Slot::put(id, false);
                oracle.begin(k0, s);
                db.put(key_for(k0), value_for(k0, id))
                    .map_err(|e| format!("put: {e}"))?;
                oracle.commit(k0, s);
                check_snapshot(db, &snap, &before, c, "snapshot")?;
            }
        }
    }
    Ok(())
}

/// Reads each own key of `states` through `snap` and fails (counted in `c`) where it is not
/// the key's state the snapshot was taken at; `what` names the check.
fn check_snapshot(
    db: &Db,
    snap: &strata::Snapshot,
    states: &[(u32, Slot)],
    c: &Counters,
    what: &str,
) -> Result<(), String> {
    let ro = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    for &(k, b) in states {
        c.reads_checked.fetch_add(1, Ordering::Relaxed);
        let got = db
            .get_opt(&ro, key_for(k))
            .map_err(|e| format!("{what} get: {e}"))?;
        if !matches(k, b, got.as_deref()) {
            fail(
                c,
                format!(
                    "{what} get of own key {k}: {:?}, expected {b:?}",
                    got.map(|v| String::from_utf8_lossy(&v).into_owned())
                ),
            );
        }
    }
    Ok(())
}

/// Where `entries`, the first entries of a read-only view in key order, are older than
/// `seen`, each key's state the writer had acknowledged before the view began: a value
/// written before that state, or a key missing that the state holds and that no write has
/// touched since (`oracle` now).
fn view_is_behind(
    entries: &[(Vec<u8>, Vec<u8>)],
    whole: bool,
    seen: &[Slot],
    oracle: &Path,
) -> Option<String> {
    let now = Oracle::open_existing(oracle)?;
    let untouched = |k: u32| now.committed(k) == seen[k as usize] && !now.pending(k).is_set();
    let missing = |from: u32, to: u32| {
        (from..to.min(seen.len() as u32)).find_map(|gap| {
            let s = seen[gap as usize];
            (s.is_set() && !s.is_absent() && untouched(gap))
                .then(|| format!("key {gap} is missing (it holds write {})", s.id()))
        })
    };
    let mut next = 0u32;
    for (key, value) in entries {
        // (Only the stress keys: `k` and eight digits.)
        let Some(k) = key_index(key).filter(|&k| (k as usize) < seen.len()) else {
            return Some(format!("a key no write wrote: {key:02x?}"));
        };
        // Keys between the last one and this one are absent in the view.
        if let Some(gap) = missing(next, k) {
            return Some(gap);
        }
        next = k + 1;
        let s = seen[k as usize];
        let id = std::str::from_utf8(value)
            .ok()
            .and_then(|v| v.split(':').nth(1))
            .and_then(|id| id.parse::<u64>().ok());
        match id {
            Some(id) if value.as_slice() == value_for(k, id).as_slice() => {
                if s.is_set() && id < s.id() {
                    return Some(format!("key {k}: write {id}, older than write {}", s.id()));
                }
            }
            _ => return Some(format!("key {k}: a value no write wrote")),
        }
    }
    // A view read to its end: the keys after its last one are absent too.
    if whole {
        return missing(next, seen.len() as u32);
    }
    None
}

/// Thread 0's long-held snapshot: the snapshot, its keys' states then, checks left.
type LongSnapshot = (strata::Snapshot, Vec<(u32, Slot)>, u32);

fn run(a: &Args) -> Result<(), String> {
    let db_path = a.path("db")?;
    let keys: u32 = a.get("keys", 20_000)?;
    let threads: u32 = a.get("threads", 4)?;
    let seconds: f64 = a.get("seconds", 10.0)?;
    let oracle = Oracle::open(&a.path("oracle")?, keys)?;
    set_large_values(a.get("large_values", 0.0)?);
    set_small_values_from(a.get("small_values_from", 0)?);
    let db = Db::open(&db_path, options(a)?).map_err(|e| format!("open: {e}"))?;
    // The crash loop's cue (`--delay_from=open`): the database is open.
    println!("strata-stress run: open");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let stop = AtomicBool::new(false);
    let c = Counters {
        ops: AtomicU64::new(0),
        writes: AtomicU64::new(0),
        reads_checked: AtomicU64::new(0),
        failures: AtomicU64::new(0),
    };
    let start = Instant::now();
    let backups = a.0.get("backups").map(PathBuf::from);
    let outcome: Result<(), String> = std::thread::scope(|s| {
        let mut hs: Vec<_> = (0..threads)
            .map(|t| {
                let (db, oracle, stop, c) = (&db, &oracle, &stop, &c);
                s.spawn(move || worker(db, oracle, t, threads, a, stop, c))
            })
            .collect();
        if let Some(dir) = &backups {
            let (db, oracle, stop) = (&db, &oracle, &stop);
            hs.push(s.spawn(move || backup_worker(db, oracle, dir, stop)));
        }
        // A worker ends early only on an error (a failed write, a stalled one): stop the
        // run then, so the crash loop sees the exit instead of killing a stuck process.
        while start.elapsed().as_secs_f64() < seconds
            && c.failures.load(Ordering::SeqCst) == 0
            && !hs.iter().any(|h| h.is_finished())
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::SeqCst);
        hs.into_iter()
            .try_for_each(|h| h.join().unwrap_or_else(|_| Err("worker panicked".into())))
    });
    outcome?;
    println!(
        "strata-stress run: {:.1} s, {} ops, {} writes, {} reads verified, {} failures",
        start.elapsed().as_secs_f64(),
        c.ops.load(Ordering::SeqCst),
        c.writes.load(Ordering::SeqCst),
        c.reads_checked.load(Ordering::SeqCst),
        c.failures.load(Ordering::SeqCst)
    );
    if c.failures.load(Ordering::SeqCst) > 0 {
        return Err("verification failures".into());
    }
    Ok(())
}

/// `run --backups=DIR`: backs the database up into DIR every 100-300 ms while the workers
/// run (keeping the newest three), so that kills land in the middle of backups. Beside
/// each backup, the bounds of what it may hold of each key ([`BackupBounds`]).
fn backup_worker(db: &Db, oracle: &Oracle, dir: &Path, stop: &AtomicBool) -> Result<(), String> {
    let engine = strata::BackupEngine::open(dir).map_err(|e| format!("backup engine: {e}"))?;
    let bounds_dir = bounds_of(dir);
    std::fs::create_dir_all(&bounds_dir).map_err(|e| e.to_string())?;
    let mut rng = Rng::new(7);
    let mut made = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let before: Vec<Slot> = (0..oracle.keys()).map(|k| oracle.committed(k)).collect();
        let info = engine
            .create_backup(db)
            .map_err(|e| format!("backup {}: {e}", made + 1))?;
        let bounds = BackupBounds::after(before, oracle);
        bounds
            .save(&bounds_dir.join(info.id.to_string()))
            .map_err(|e| format!("bounds of backup {}: {e}", info.id))?;
        made += 1;
        if made.is_multiple_of(2) {
            engine.purge(3).map_err(|e| format!("purge: {e}"))?;
            let kept: Vec<String> = engine
                .list()
                .map_err(|e| format!("list: {e}"))?
                .iter()
                .map(|b| b.id.to_string())
                .collect();
            for e in std::fs::read_dir(&bounds_dir)
                .into_iter()
                .flatten()
                .flatten()
            {
                if !kept.contains(&e.file_name().to_string_lossy().into_owned()) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        if made.is_multiple_of(3) {
            // And a checkpoint beside them (the last one kept), so that kills land in
            // checkpoints too.
            let dir = checkpoints_of(dir);
            let _ = std::fs::create_dir_all(&dir);
            let target = dir.join(format!("c{made}"));
            db.checkpoint(&target)
                .map_err(|e| format!("checkpoint {}: {e}", target.display()))?;
            let before = dir.join(format!("c{}", made - 3));
            let _ = std::fs::remove_dir_all(before);
        }
        std::thread::sleep(Duration::from_millis(100 + rng.below(200)));
    }
    Ok(())
}

/// Where `run --backups=DIR` puts its checkpoints: beside DIR.
fn checkpoints_of(backups: &Path) -> PathBuf {
    backups.with_file_name("checkpoints")
}

/// Where `run --backups=DIR` puts each backup's [`BackupBounds`]: beside DIR.
fn bounds_of(backups: &Path) -> PathBuf {
    backups.with_file_name("backup-bounds")
}

/// What a backup may hold of each key, from the oracle around the call: at least the write
/// acknowledged before it began (`before`), at most the newest one begun before it
/// returned (`after`: a value id). A key no write reached during the call holds exactly
/// its state before; the ids of one key's writes only grow.
struct BackupBounds {
    before: Vec<Slot>,
    after: Vec<u64>,
}

impl BackupBounds {
    fn after(before: Vec<Slot>, oracle: &Oracle) -> BackupBounds {
        // (The pending state first: a commit between the two reads moves the write from
        // pending to committed, and is seen in one of them.)
        let after = (0..oracle.keys())
            .map(|k| {
                let pending = oracle.pending(k).id();
                oracle.committed(k).id().max(pending)
            })
            .collect();
        BackupBounds { before, after }
    }

    /// Written whole or not at all (a kill between a backup and its bounds leaves that
    /// backup without them).
    fn save(&self, path: &Path) -> std::io::Result<()> {
        let mut b = Vec::with_capacity(self.before.len() * 16);
        for (s, a) in self.before.iter().zip(&self.after) {
            b.extend_from_slice(&s.0.to_le_bytes());
            b.extend_from_slice(&a.to_le_bytes());
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, &b)?;
        std::fs::rename(&tmp, path)
    }

    fn load(path: &Path) -> Option<BackupBounds> {
        let b = std::fs::read(path).ok()?;
        if b.len() % 16 != 0 {
            return None;
        }
        let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let (before, after) = b
            .chunks_exact(16)
            .map(|c| (Slot(word(&c[..8])), word(&c[8..])))
            .unzip();
        Some(BackupBounds { before, after })
    }

    /// Checks key `k`'s state in the copy (`got`: the value's id, `None` for absent).
    fn check(&self, k: u32, got: Option<u64>) -> Result<(), String> {
        let (before, after) = (self.before[k as usize], self.after[k as usize]);
        let quiet = after <= before.id();
        let ok = match got {
            // (A write during the call may have been a delete.)
            None => before.is_absent() || !quiet,
            // (A key's ids only grow: a value older than the state before the call, a
            // delete included, is one brought back. A slot never written has id 0.)
            Some(id) => {
                id >= before.id()
                    && id <= after
                    && (!quiet || (!before.is_absent() && id == before.id()))
            }
        };
        if ok {
            return Ok(());
        }
        Err(format!(
            "key {k}: holds {} while the write acknowledged before the backup began was {} \
             and the newest begun before it returned had id {after}",
            got.map_or_else(|| "nothing".to_string(), |id| format!("value id {id}")),
            if before.is_absent() {
                format!("a delete (id {})", before.id())
            } else {
                format!("value id {}", before.id())
            },
        ))
    }
}

/// Opens the database (a checkpoint, a restored backup) at `target` with `a`'s preset and
/// its own directories, and checks that it holds only values written under their keys,
/// and with `bounds` that each key's state is one it had during the backup; returns how
/// many keys it holds. The database is removed after.
fn check_copy(
    a: &Args,
    target: &Path,
    what: &str,
    bounds: Option<&BackupBounds>,
) -> Result<usize, String> {
    // (Its own directories, new, where the preset needs a second one: the original's
    // are refused for a copy.)
    let mut ra = a.clone();
    for k in ["wal_dir", "level_dir", "pmem_dir", "value_dir"] {
        ra.0.remove(k);
    }
    ra.0.insert("db".into(), target.display().to_string());
    let db = Db::open(target, options(&ra)?).map_err(|e| format!("open {what}: {e}"))?;
    let mut keys = 0;
    let mut held: BTreeMap<u32, u64> = BTreeMap::new();
    for r in db.iter(ReadOptions::default()).map_err(|e| e.to_string())? {
        let (k, v) = r.map_err(|e| format!("read {what}: {e}"))?;
        let id = key_index(&k).and_then(|ki| {
            std::str::from_utf8(&v[..v.len().min(40)])
                .ok()
                .and_then(|t| t.strip_prefix(&format!("v{ki}:")))
                .and_then(|t| t.split(':').next())
                .and_then(|id| id.parse::<u64>().ok())
                .filter(|&id| v == value_for(ki, id))
                .map(|id| (ki, id))
        });
        let Some((ki, id)) = id else {
            return Err(format!(
                "{what} holds {:?} = {:?}: not a value written under that key",
                String::from_utf8_lossy(&k),
                String::from_utf8_lossy(&v[..v.len().min(40)])
            ));
        };
        held.insert(ki, id);
        keys += 1;
    }
    if let Some(b) = bounds {
        for k in 0..b.before.len() as u32 {
            b.check(k, held.get(&k).copied())
                .map_err(|e| format!("{what}: {e}"))?;
        }
    }
    db.close().map_err(|e| e.to_string())?;
    std::fs::remove_dir_all(target).map_err(|e| e.to_string())?;
    for suffix in ["levels", "pmem"] {
        let _ = std::fs::remove_dir_all(format!("{}-{suffix}", target.display()));
    }
    Ok(keys)
}

/// After a kill: the backup directory `dir` opens, lists only whole backups, each verifies,
/// and the newest restores to a database that opens (with `preset`, no directory options)
/// and holds only values the stress run writes, each under its own key, each key in the
/// state it had during the backup (the newest backup with its [`BackupBounds`]). Returns
/// the backups listed, the keys the restored one holds, and whether it was checked
/// against its bounds.
fn check_backups(a: &Args, dir: &Path, work: &Path) -> Result<(usize, usize, bool), String> {
    let engine = strata::BackupEngine::open(dir).map_err(|e| format!("open backups: {e}"))?;
    if let Some((id, e)) = engine
        .damaged()
        .map_err(|e| format!("list backups: {e}"))?
        .into_iter()
        .next()
    {
        return Err(format!(
            "backup {id}: a damaged description after a kill: {e}"
        ));
    }
    let list = engine.list().map_err(|e| format!("list backups: {e}"))?;
    for b in &list {
        engine
            .verify(b.id)
            .map_err(|e| format!("backup {} does not verify: {e}", b.id))?;
    }
    // The newest with its bounds (a kill may have come between a backup and its bounds),
    // else the newest.
    let bounded = list
        .iter()
        .rev()
        .find_map(|b| BackupBounds::load(&bounds_of(dir).join(b.id.to_string())).map(|x| (b, x)));
    let Some((newest, bounds)) = bounded
        .map(|(b, x)| (b, Some(x)))
        .or_else(|| list.last().map(|b| (b, None)))
    else {
        return Ok((0, 0, false));
    };
    let target = work.join("restored");
    let _ = std::fs::remove_dir_all(&target);
    engine
        .restore(newest.id, &target)
        .map_err(|e| format!("restore backup {}: {e}", newest.id))?;
    let keys = check_copy(
        a,
        &target,
        &format!("the restored backup {}", newest.id),
        bounds.as_ref(),
    )?;
    // The checkpoints the run made: each whole one opens (one cut short is a
    // `.checkpoint-tmp` directory, which the next checkpoint to its name clears).
    let ckpts = checkpoints_of(dir);
    for e in std::fs::read_dir(&ckpts).into_iter().flatten().flatten() {
        let p = e.path();
        if p.to_string_lossy().ends_with(".checkpoint-tmp")
            || p.to_string_lossy().ends_with("-levels")
            || p.to_string_lossy().ends_with("-pmem")
        {
            let _ = std::fs::remove_dir_all(&p);
            continue;
        }
        check_copy(a, &p, &format!("checkpoint {}", p.display()), None)?;
    }
    Ok((list.len(), keys, bounds.is_some()))
}

#[derive(Debug, Default, Clone, Copy)]
struct Verified {
    keys: u64,
    lost_synced: u64,
    lost_unsynced: u64,
    wrong: u64,
    /// Unsynced writes lost while a later write of the same thread survived.
    holes: u64,
}

/// Checks every key against the oracle, then makes the oracle say what the database holds.
fn verify(a: &Args) -> Result<Verified, String> {
    let keys: u32 = a.get("keys", 20_000)?;
    let oracle = Oracle::open(&a.path("oracle")?, keys)?;
    set_large_values(a.get("large_values", 0.0)?);
    set_small_values_from(a.get("small_values_from", 0)?);
    let db = Db::open(a.path("db")?, options(a)?)
        .map_err(|e| format!("open for verify refused (a refused open fails the loop): {e}"))?;
    let threads: u32 = a.get("threads", 4)?;
    let mut v = Verified::default();
    // Per writer thread: the earliest lost unsynced write, and the ids of surviving writes.
    let mut lost_min = vec![u64::MAX; threads as usize];
    let mut survived: Vec<Vec<u64>> = vec![Vec::new(); threads as usize];
    for k in 0..keys {
        let owner = (k % threads) as usize;
        let got = db
            .get(key_for(k))
            .map_err(|e| format!("verify get {k}: {e}"))?;
        let (c, p) = (oracle.committed(k), oracle.pending(k));
        v.keys += 1;
        if matches(k, c, got.as_deref()) {
            survived[owner].push(c.id());
            oracle.commit(k, c);
        } else if p.is_set() && matches(k, p, got.as_deref()) {
            survived[owner].push(p.id());
            oracle.commit(k, p);
        } else {
            // Which state is there? An older value of this key means the newer write was lost.
            let older = got.as_deref().map_or(Some(0), |g| {
                let s = String::from_utf8_lossy(g).into_owned();
                let mut parts = s.splitn(3, ':');
                let key_ok = parts.next() == Some(&format!("v{k}"));
                let id = parts.next().and_then(|x| x.parse::<u64>().ok());
                id.filter(|&id| key_ok && id < c.id() && g == value_for(k, id).as_slice())
            });
            match older {
                Some(_) if c.synced() => v.lost_synced += 1,
                Some(_) => {
                    v.lost_unsynced += 1;
                    lost_min[owner] = lost_min[owner].min(c.id());
                }
                None => v.wrong += 1,
            }
            eprintln!(
                "strata-stress verify: key {k}: db has {:?}, oracle committed {c:?} pending {p:?}",
                got.as_deref()
                    .map(|g| String::from_utf8_lossy(g).into_owned())
            );
            // Repair to what the database holds, so later rounds check from there.
            let repaired = match got.as_deref() {
                None => Slot::delete(c.id().max(p.id()), false),
                Some(g) => {
                    let id = String::from_utf8_lossy(g)
                        .split(':')
                        .nth(1)
                        .and_then(|x| x.parse().ok())
                        .unwrap_or(0);
                    Slot::put(id, false)
                }
            };
            oracle.commit(k, repaired);
        }
    }
    for (t, lost) in lost_min.iter().enumerate() {
        let later = survived[t].iter().filter(|&&id| id > *lost).count() as u64;
        if later > 0 {
            eprintln!("strata-stress verify: thread {t} lost unsynced write {lost} but {later} later writes survived");
        }
        v.holes += later;
    }
    Ok(v)
}

/// Removes the manifests and CURRENT of the database at `db` and rebuilds it with
/// `strata::repair` (the options `a` gives); the files it set aside in `lost/` are removed.
fn repair_without_manifest(a: &Args, db: &std::path::Path) -> Result<(), String> {
    let names = std::fs::read_dir(db).map_err(|e| format!("list {}: {e}", db.display()))?;
    for entry in names.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == "CURRENT" || name.starts_with("MANIFEST-") {
            std::fs::remove_file(entry.path()).map_err(|e| format!("remove {name}: {e}"))?;
        }
    }
    strata::repair(db, &options(a)?).map_err(|e| format!("repair: {e}"))?;
    let _ = std::fs::remove_dir_all(db.join("lost"));
    Ok(())
}

/// Every file under `dir` but the oracle's, with its length and a hash of its bytes.
fn tree_of(dir: &Path) -> Result<BTreeMap<PathBuf, (u64, u64)>, String> {
    use std::hash::{Hash, Hasher};
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("list {}: {e}", d.display()))? {
            let p = e.map_err(|e| e.to_string())?.path();
            if p.file_name().is_some_and(|n| n == "oracle") {
                continue;
            }
            if p.is_dir() {
                todo.push(p.clone());
                out.insert(p, (0, 0));
                continue;
            }
            let bytes = std::fs::read(&p).map_err(|e| format!("read {}: {e}", p.display()))?;
            let mut h = std::collections::hash_map::DefaultHasher::new();
            bytes.hash(&mut h);
            out.insert(p, (bytes.len() as u64, h.finish()));
        }
    }
    Ok(out)
}

/// Opens killed database `db` in ways that may be refused, each refusal checked to leave
/// every file and directory under `dir` as it was: with `error_if_exists` (always refused,
/// after the lock), then with `WalRecoveryMode::AbsoluteConsistency` (refused when the kill
/// tore the newest WAL's tail, after the manifest, the files and a dry run of the replay
/// were checked). The second is tried writable only once a read-only open in that mode
/// was refused: a writable one that succeeds would recover and close the database, and
/// the verification after it would no longer meet the crash's state. Returns how many
/// were refused.
fn refused_opens_change_nothing(
    va: &Args,
    dir: &Path,
    db: &Path,
    i: u32,
) -> Result<[u64; 2], String> {
    let mut refused = [0; 2];
    for (n, (what, strict)) in [("error_if_exists", false), ("AbsoluteConsistency", true)]
        .into_iter()
        .enumerate()
    {
        let before = tree_of(dir)?;
        let mut o = options(va)?;
        if strict {
            o.wal_recovery_mode = strata::WalRecoveryMode::AbsoluteConsistency;
            if Db::open_read_only(db, o.clone()).is_ok() {
                continue;
            }
        } else {
            o.error_if_exists = true;
        }
        match Db::open(db, o) {
            Ok(opened) if strict => {
                drop(opened);
                continue;
            }
            Ok(_) => {
                return Err(format!(
                    "kill {i}: an open with error_if_exists of an existing database was not refused"
                ))
            }
            // Refused for what was asked: an existing database, damage to a WAL.
            Err(e)
                if e.kind()
                    == if strict {
                        strata::ErrorKind::Corruption
                    } else {
                        strata::ErrorKind::InvalidArgument
                    } =>
            {
                refused[n] += 1
            }
            Err(e) => return Err(format!("kill {i}: an open ({what}) failed otherwise: {e}")),
        }
        let after = tree_of(dir)?;
        if before != after {
            let changed: Vec<String> = before
                .keys()
                .chain(after.keys())
                .filter(|p| before.get(*p) != after.get(*p))
                .map(|p| p.display().to_string())
                .collect();
            return Err(format!(
                "kill {i}: an open refused ({what}) changed {changed:?}"
            ));
        }
    }
    Ok(refused)
}

fn crash_loop(a: &Args) -> Result<(), String> {
    let dir = a.path("dir")?;
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let kills: u32 = a.get("kills", 20)?;
    // The values the children write, for checking what their read-only views read.
    set_large_values(a.get("large_values", 0.0)?);
    set_small_values_from(a.get("small_values_from", 0)?);
    // Every this many kills, the manifests and CURRENT are removed and the database is
    // rebuilt by `strata::repair` before it is verified (0: never).
    let repair_every: u32 = a.get("repair_every", 0)?;
    // Every this many runs the child also backs the database up while it works (presets
    // whose files a backup copies), and after the kill the backups are checked (0: never).
    let backup_every: u32 = a.get("backup_every", 0)?;
    let backups = dir.join("backups");
    let mut backups_checked = (0u64, 0u64);
    let (min_ms, max_ms): (u64, u64) = (a.get("min_delay_ms", 300)?, a.get("max_delay_ms", 1500)?);
    let from_open = match a.str("delay_from", "spawn").as_str() {
        "spawn" => false,
        "open" => true,
        other => return Err(format!("--delay_from: spawn or open, not {other:?}")),
    };
    let presets: Vec<String> = a
        .str("presets", &Options::PRESETS.join(","))
        .split(',')
        .map(str::to_string)
        .collect();
    let db = dir.join("db");
    let oracle = dir.join("oracle");
    let mut rng = Rng::new(a.get("seed", 42u64)?);
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut total = Verified::default();
    let mut verified_keys = 0u64;
    let passthrough: Vec<String> = [
        "threads",
        "keys",
        "sync",
        "batch_keys",
        "large_values",
        "small_values_from",
        "writes",
        "write_buffer_size",
        "target_file_size_base",
        "max_bytes_for_level_base",
        "bloom_bits",
        "level0_file_num_compaction_trigger",
        "level0_slowdown_writes_trigger",
        "level0_stop_writes_trigger",
        "max_write_buffer_number",
        "num_levels",
        "max_background_compactions",
        "block_size",
        "separate_flush_thread",
        "compression_type",
        "compaction_priority",
        "wal_dir",
        "level_dir",
        "pmem_dir",
        "tables_in_memory",
        "write_stall_limit_ms",
    ]
    .iter()
    .filter_map(|k| a.0.get(*k).map(|v| format!("--{k}={v}")))
    .collect();
    let mut read_only_opens = 0u64;
    // Opens of a killed database refused (each changing nothing): with error_if_exists
    // (always), and with AbsoluteConsistency (when the kill left damage, a torn tail).
    let mut refused_opens = 0u64;
    let mut refused_for_damage = 0u64;
    // Views whose reads met pages the writer reused since they opened, or whose open
    // answered `Stale` (those too: `stale_opens`).
    let mut stale_views = 0u64;
    let mut stale_opens = 0u64;
    for i in 0..kills {
        let preset = &presets[i as usize % presets.len()];
        let slow = if i % 3 == 2 { 3 } else { 0 };
        // Every fourth run reads tables with pread once they pass 128 KiB (the switch and
        // the reopening of open tables happen under the kill).
        let reads: &[String] = if i % 4 == 1 {
            &["--tables_in_memory=131072".to_string()][..]
        } else {
            &[]
        };
        let delay = min_ms + rng.below(max_ms.saturating_sub(min_ms) + 1);
        let backing_up = backup_every > 0 && i % backup_every == 0;
        let mut child = Command::new(&exe)
            .arg("run")
            .arg(format!("--db={}", db.display()))
            .arg(format!("--oracle={}", oracle.display()))
            .arg(format!("--preset={preset}"))
            .arg(format!("--slow_tables_ms={slow}"))
            .arg("--seconds=3600")
            .arg(format!("--seed={}", rng.next_u64()))
            .args(&passthrough)
            .args(reads)
            .args(backing_up.then(|| format!("--backups={}", backups.display())))
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn: {e}"))?;
        // The child's output, passed on; its open cue is told to this thread.
        let out = child.stdout.take().ok_or("no child stdout")?;
        let (opened_tx, opened) = std::sync::mpsc::channel();
        let relay = std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(out)) {
                let Ok(line) = line else { break };
                if line.contains("strata-stress run: open") {
                    let _ = opened_tx.send(());
                } else {
                    println!("{line}");
                }
            }
        });
        // A child that has not opened its database in two minutes is stuck (or exited,
        // which the check below reports).
        if from_open
            && opened.recv_timeout(Duration::from_secs(120)).is_err()
            && child.try_wait().map_err(|e| e.to_string())?.is_none()
        {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "kill {i}: the stress process did not open its database in 120 s"
            ));
        }
        // Every other run, read-only opens of the live database beside the writer, as
        // `strata count` beside a server: each must open (a writer's flushes and
        // compactions delete what an older manifest named: the open reads the newer one).
        let deadline = std::time::Instant::now() + Duration::from_millis(delay);
        if i % 2 == 0 {
            let mut ra = a.clone();
            ra.0.insert("db".into(), db.display().to_string());
            ra.0.insert("preset".into(), preset.clone());
            let ro_opts = options(&ra)?;
            std::thread::sleep(Duration::from_millis(delay / 3));
            while std::time::Instant::now() < deadline {
                // What the writer had acknowledged before the view began: the view holds
                // it, or something newer, for every key.
                let seen = Oracle::open_existing(&oracle)
                    .map(|o| (0..o.keys()).map(|k| o.committed(k)).collect::<Vec<Slot>>());
                match Db::open_read_only(&db, ro_opts.clone()) {
                    Ok(ro) => {
                        read_only_opens += 1;
                        // It reads too: a view's reads answer, or say the writer moved on
                        // under it (`Stale`), never that the writer's work is damage; and
                        // what it answers is never older than what came before it.
                        const READ: usize = 5000;
                        let read = ro
                            .iter(strata::ReadOptions::default())
                            .and_then(|it| it.take(READ).collect::<strata::Result<Vec<_>>>());
                        if let (Ok(entries), Some(seen)) = (&read, &seen) {
                            let whole = entries.len() < READ;
                            if let Some(wrong) = view_is_behind(entries, whole, seen, &oracle) {
                                let _ = child.kill();
                                let _ = child.wait();
                                return Err(format!(
                                    "kill {i}: a read-only view beside the writer answered \
                                     older than what was acknowledged before it opened: {wrong}"
                                ));
                            }
                        }
                        let read = read.map(|_| ());
                        match read {
                            Ok(()) => {}
                            Err(e) if e.kind() == strata::ErrorKind::Stale => stale_views += 1,
                            Err(e) => {
                                let _ = child.kill();
                                let _ = child.wait();
                                return Err(format!(
                                    "kill {i}: a read-only view beside the writer failed to \
                                     read: {e}"
                                ));
                            }
                        }
                        drop(ro);
                    }
                    // Before the child's first open finished there may be no database.
                    Err(_) if i == 0 => {}
                    // The writer kept changing the database through every try: counted,
                    // as a read that met what it moved is.
                    Err(e) if e.kind() == strata::ErrorKind::Stale => {
                        stale_views += 1;
                        stale_opens += 1;
                    }
                    Err(e) => {
                        let _ = child.kill();
                        let _ = child.wait();
                        return Err(format!(
                            "kill {i}: a read-only open beside the writer failed: {e}"
                        ));
                    }
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        std::thread::sleep(deadline.saturating_duration_since(std::time::Instant::now()));
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!(
                "kill {i}: stress process exited early with {status} (a verification failure?)"
            ));
        }
        child.kill().map_err(|e| format!("kill: {e}"))?;
        let _ = child.wait();
        let _ = relay.join();
        let mut va = a.clone();
        va.0.insert("db".into(), db.display().to_string());
        va.0.insert("oracle".into(), oracle.display().to_string());
        va.0.insert("preset".into(), preset.clone());
        if !reads.is_empty() {
            va.0.insert("tables_in_memory".into(), "131072".into());
        }
        let repaired = repair_every > 0 && i % repair_every == repair_every - 1;
        if i % 3 == 1 && !repaired {
            let [exists, damage] = refused_opens_change_nothing(&va, &dir, &db, i)?;
            refused_opens += exists;
            refused_for_damage += damage;
        }
        if repaired {
            repair_without_manifest(&va, &db)?;
        }
        if backing_up {
            let (n, keys, bounded) =
                check_backups(&va, &backups, &dir).map_err(|e| format!("kill {i}: {e}"))?;
            backups_checked.0 += n as u64;
            backups_checked.1 += 1;
            println!(
                "kill {:>4}: {n} backups verified, the newest restored with {keys} keys{}",
                i + 1,
                if bounded {
                    ", each in its state during the backup"
                } else {
                    ""
                }
            );
        }
        let v = verify(&va)?;
        verified_keys += v.keys;
        total.lost_synced += v.lost_synced;
        total.lost_unsynced += v.lost_unsynced;
        total.wrong += v.wrong;
        total.holes += v.holes;
        println!(
            "kill {:>4}: preset {preset:<12} after {delay:>5} ms{}{}{}{} | verified {} keys, lost synced {}, lost unsynced {}, holes {}, wrong {}",
            i + 1,
            if from_open { " from open" } else { "" },
            if slow > 0 { " (slow tables)" } else { "" },
            if reads.is_empty() { "" } else { " (pread past 128 KiB)" },
            if repaired { " (repaired, manifests removed)" } else { "" },
            v.keys,
            v.lost_synced,
            v.lost_unsynced,
            v.holes,
            v.wrong
        );
    }
    println!(
        "crash-loop: kills {kills}, refused opens {refused_opens} + {refused_for_damage} under AbsoluteConsistency (each changed nothing), read-only opens beside the writer {read_only_opens} ({stale_views} stale), backups verified {} after {} kills, verified keys {verified_keys}, lost synced writes {}, lost unsynced writes {} (holes {}), wrong values {}",
        backups_checked.0, backups_checked.1, total.lost_synced, total.lost_unsynced, total.holes, total.wrong
    );
    if total.lost_synced > 0 || total.wrong > 0 || total.holes > 0 {
        return Err(
            "synced writes were lost, unsynced ones lost out of order, or values were wrong".into(),
        );
    }
    // A view that answers `Stale` passes its check unread: rare beside a writer (one in
    // fifty or so), so many of them would be the engine calling its own answers stale.
    let tries = read_only_opens + stale_opens;
    if stale_views > (tries / 5).max(3) {
        return Err(format!(
            "{stale_views} of {tries} read-only views answered Stale: a view should almost \
             always read"
        ));
    }
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (mode, rest) = match argv.first().map(String::as_str) {
        Some(m @ ("run" | "verify" | "crash-loop")) => (m.to_string(), &argv[1..]),
        _ => ("run".to_string(), &argv[..]),
    };
    let result =
        Args::parse(rest).and_then(|a| match (mode.as_str(), a.0.contains_key("verify_only")) {
            ("verify", _) | ("run", true) => verify(&a).and_then(|v| {
                println!(
                    "verify: {} keys, lost synced {}, lost unsynced {}, holes {}, wrong {}",
                    v.keys, v.lost_synced, v.lost_unsynced, v.holes, v.wrong
                );
                if v.lost_synced + v.wrong + v.holes > 0 {
                    Err("verification failed".into())
                } else {
                    Ok(())
                }
            }),
            ("crash-loop", _) => crash_loop(&a),
            _ => run(&a),
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata-stress: {e}");
            ExitCode::FAILURE
        }
    }
}
