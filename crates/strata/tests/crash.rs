//! Crash tests on the fault-injecting file system.
//!
//! A writer runs a random workload (single puts, deletes and batches, some synced, some
//! `flush()`es) while flushes and compactions run in the background. Every few ops the test
//! takes the image a power cut would leave (`crash_clone`: unsynced bytes dropped, or a torn
//! prefix of them kept) or a process kill (every byte handed to the OS kept, the last WAL
//! group caught in the middle of its copy), recovers it, and checks:
//! - no synced write is lost: the state includes every op up to the last synced one (after a
//!   kill, every op but the last);
//! - the state is exactly the model after some prefix of the acknowledged ops (no hole, no
//!   mix, no resurrected data);
//! - recovery survives a second crash during/after recovery, and the database takes writes.
//!
//! Every value names the op that wrote it, so the prefix can be identified.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{CrashMode, FaultFs, Fs, MemFs};
use strata::{Db, ReadOptions, WriteBatch, WriteOptions};
use strata_testkit::{configs, Config, InterceptFs, Rng};

type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// One acknowledged op: the entries it wrote (None = delete).
type Op = Vec<(Vec<u8>, Option<Vec<u8>>)>;

fn dump(db: &Db, ctx: &str) -> State {
    db.iter(ReadOptions::default())
        .unwrap()
        .map(|r| r.unwrap_or_else(|e| panic!("{ctx}: reading back: {e}")))
        .collect()
}

/// Checks `got` equals the model after some prefix P of `ops` with P >= `durable`.
fn check_prefix(got: &State, ops: &[Op], durable: usize, ctx: &str) -> usize {
    let mut model = State::new();
    for (p, op) in ops.iter().enumerate() {
        if p >= durable && &model == got {
            return p;
        }
        for (k, v) in op {
            match v {
                Some(v) => model.insert(k.clone(), v.clone()),
                None => model.remove(k),
            };
        }
    }
    if &model == got {
        return ops.len();
    }
    // Explain against the prefix (durable or later) the state is closest to.
    let mut model = State::new();
    let mut best: Option<(usize, usize, State)> = None;
    for (p, op) in ops.iter().enumerate() {
        if p >= durable {
            let diff = model
                .iter()
                .filter(|(k, v)| got.get(*k) != Some(*v))
                .count()
                + got.keys().filter(|k| !model.contains_key(*k)).count();
            if best.as_ref().is_none_or(|b| diff < b.1) {
                best = Some((p, diff, model.clone()));
            }
        }
        for (k, v) in op {
            match v {
                Some(v) => model.insert(k.clone(), v.clone()),
                None => model.remove(k),
            };
        }
    }
    let (p, _, model) = best.unwrap_or((ops.len(), 0, model));
    let show = |b: &[u8]| String::from_utf8_lossy(&b[..b.len().min(12)]).into_owned();
    let differ: Vec<String> = model
        .keys()
        .chain(got.keys().filter(|k| !model.contains_key(*k)))
        .filter(|k| model.get(*k) != got.get(*k))
        .take(3)
        .map(|k| {
            format!(
                "{} = {:?} (got {:?})",
                show(k),
                model.get(k).map(|v| show(v)),
                got.get(k).map(|g| show(g))
            )
        })
        .collect();
    panic!("{ctx}: recovered state is no prefix of the acknowledged ops (durable prefix {durable} of {}); closest is prefix {p}: {differ:?}", ops.len());
}

/// Checks that every key of `got` holds what the model gave it after some prefix P of `ops`
/// with P >= `durable` (each key its own P): no synced write lost, no key a synced write
/// deleted or overwrote back with what it held before, nothing never written.
fn check_each_key(got: &State, ops: &[Op], durable: usize, ctx: &str) {
    let mut model = State::new();
    for op in &ops[..durable] {
        for (k, v) in op {
            match v {
                Some(v) => model.insert(k.clone(), v.clone()),
                None => model.remove(k),
            };
        }
    }
    // Per key, every value (None: absent) it held after the durable prefix or later.
    let mut held: BTreeMap<Vec<u8>, Vec<Option<Vec<u8>>>> = BTreeMap::new();
    for k in model.keys().chain(got.keys()) {
        held.insert(k.clone(), vec![model.get(k).cloned()]);
    }
    for op in &ops[durable..] {
        for (k, v) in op {
            held.entry(k.clone())
                .or_insert_with(|| vec![model.get(k).cloned()])
                .push(v.clone());
        }
    }
    let show = |v: &Option<Vec<u8>>| {
        v.as_ref()
            .map(|b| String::from_utf8_lossy(&b[..b.len().min(12)]).into_owned())
    };
    for (k, values) in &held {
        let now = got.get(k).cloned();
        assert!(
            values.contains(&now),
            "{ctx}: key {} = {:?}, which no prefix of the acknowledged ops from the durable \
             one ({durable} of {}) gives it (they give {:?})",
            String::from_utf8_lossy(k),
            show(&now),
            ops.len(),
            values.iter().map(show).collect::<Vec<_>>()
        );
    }
}

/// How a crash image is brought back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Recovery {
    /// By opening it: the state is a prefix of the acknowledged ops holding every synced
    /// one.
    Open,
    /// By `strata::repair` with every manifest (and CURRENT) lost, then opening it: as
    /// for `Open`, and first, key by key (`check_each_key`), so that a failure names the
    /// key that came back or went missing.
    RepairWithoutManifest,
}

/// Crash points taken as process kills (`CrashMode::Kill`), in this test binary.
static KILLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn run(config: &Config, seed: u64, num_ops: usize, crash_every: u64) -> usize {
    run_with(config, seed, num_ops, crash_every, Recovery::Open)
}

fn run_with(
    config: &Config,
    seed: u64,
    num_ops: usize,
    crash_every: u64,
    recovery: Recovery,
) -> usize {
    let dir = Path::new("/db");
    let mem = MemFs::new();
    let fs = FaultFs::new(mem);
    let opts = (config.build)(dir, Arc::new(fs.clone()));
    let db = Db::open(dir, opts).unwrap();
    let mut rng = Rng::new(seed);
    let mut ops: Vec<Op> = Vec::new();
    let mut durable = 0usize;
    let mut crashes = 0;
    let mut next_crash = 1 + rng.below(crash_every);
    for i in 0..num_ops {
        let mut op: Op = Vec::new();
        let mut b = WriteBatch::new();
        for _ in 0..if rng.chance(0.2) { 1 + rng.below(8) } else { 1 } {
            let k = format!("key{:04}", rng.below(400)).into_bytes();
            if rng.chance(0.8) {
                let mut v = format!("op{i}:").into_bytes();
                v.resize(v.len() + rng.below(300) as usize, b'x');
                b.put(&k, &v);
                op.push((k, Some(v)));
            } else {
                b.delete(&k);
                op.push((k, None));
            }
        }
        // Within one batch, later entries win: keep only the last per key in the model op.
        let mut dedup: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
        for (k, v) in op {
            dedup.insert(k, v);
        }
        let sync = rng.chance(0.05);
        db.write(
            &WriteOptions {
                sync,
                ..Default::default()
            },
            b,
        )
        .unwrap();
        ops.push(dedup.into_iter().collect());
        if sync {
            durable = ops.len();
        }
        if rng.chance(0.005) {
            db.flush().unwrap();
            durable = ops.len();
        }
        next_crash -= 1;
        if next_crash == 0 {
            next_crash = 1 + rng.below(crash_every);
            crashes += 1;
            let mode = match rng.below(3) {
                0 => CrashMode::DropUnsynced,
                1 => CrashMode::TornTail {
                    seed: rng.next_u64(),
                },
                _ => CrashMode::Kill {
                    seed: rng.next_u64(),
                },
            };
            // A process kill loses no acknowledged write but the last, whose WAL group it
            // may catch in the middle of its copy.
            let kept = match mode {
                CrashMode::Kill { .. } => {
                    KILLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    durable.max(ops.len() - 1)
                }
                _ => durable,
            };
            let ctx = format!(
                "config {} seed {seed} op {i} crash {crashes} ({mode:?})",
                config.name
            );
            let image = fs.crash_clone(mode);
            if recovery == Recovery::RepairWithoutManifest {
                for name in image.list(dir).unwrap() {
                    if name.starts_with("MANIFEST-") || name == "CURRENT" {
                        image.remove(&dir.join(name)).unwrap();
                    }
                }
                strata::repair(dir, &(config.build)(dir, Arc::new(image.clone())))
                    .unwrap_or_else(|e| panic!("{ctx}: repair failed: {e}"));
            }
            let reopened = Db::open(dir, (config.build)(dir, Arc::new(image.clone())))
                .unwrap_or_else(|e| panic!("{ctx}: recovery failed: {e}"));
            let got = dump(&reopened, &ctx);
            if recovery == Recovery::RepairWithoutManifest {
                check_each_key(&got, &ops, kept, &ctx);
            }
            let p = check_prefix(&got, &ops, kept, &ctx);
            // Crash again right after recovery (its flush and manifest may be half-synced).
            let again = image.crash_clone(CrashMode::TornTail {
                seed: rng.next_u64(),
            });
            drop(reopened);
            let twice = Db::open(dir, (config.build)(dir, Arc::new(again)))
                .unwrap_or_else(|e| panic!("{ctx}: second recovery failed: {e}"));
            assert!(
                dump(&twice, &format!("{ctx}, second recovery")) == got,
                "{ctx}: state changed across a crash after recovery (prefix {p})"
            );
            twice.put(b"after-crash", b"ok").unwrap();
            assert_eq!(twice.get(b"after-crash").unwrap(), Some(b"ok".to_vec()));
        }
    }
    crashes
}

#[test]
fn crash_points_every_config() {
    let mut total = 0;
    for config in configs() {
        for seed in [11, 12, 13] {
            total += run(&config, seed, 2500, 50);
        }
    }
    eprintln!(
        "crash points verified: {total} (process kills among them, with the other tests': {})",
        KILLS.load(std::sync::atomic::Ordering::Relaxed)
    );
    assert!(total > 500);
}

/// Crash images of every configuration, every manifest lost, repaired (`Recovery::
/// RepairWithoutManifest`), with deletes among the writes: no key a durable delete removed
/// comes back. A compaction at the last level drops a tombstone with the values it hid, and
/// a crash can undo the deletion of some of its inputs and not others; the obsolete list,
/// written before the first deletion, tells repair to leave them all out. For a matrix L0
/// (rows in the persistent-memory region, column compactions running all the time), the
/// row directory, written before each edit that changes the rows, locates them.
#[test]
fn crash_images_repaired_without_a_manifest() {
    let mut total = 0;
    for config in configs() {
        let seeds: &[u64] = if config.name.starts_with("matrixkv") {
            &[21, 22, 23]
        } else {
            &[21, 22]
        };
        for &seed in seeds {
            total += run_with(&config, seed, 5000, 300, Recovery::RepairWithoutManifest);
        }
    }
    assert!(total > 500);
}

/// The first configuration's database at `/db` on a fault-injecting file system.
fn open_first_config() -> (Db, FaultFs) {
    let fs = FaultFs::new(MemFs::new());
    let dir = Path::new("/db");
    let db = Db::open(dir, (configs()[0].build)(dir, Arc::new(fs.clone()))).unwrap();
    (db, fs)
}

/// Opens the image `fs` holds with the first configuration.
fn reopen_first_config(fs: FaultFs) -> Db {
    let dir = Path::new("/db");
    Db::open(dir, (configs()[0].build)(dir, Arc::new(fs))).unwrap()
}

#[test]
fn crash_with_every_write_synced_loses_nothing() {
    let (db, fs) = open_first_config();
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    for i in 0..3000u32 {
        let mut b = WriteBatch::new();
        b.put(format!("k{i:05}"), vec![i as u8; 100]);
        db.write(&sync, b).unwrap();
        if i % 500 == 499 {
            let r = reopen_first_config(fs.crash_clone(CrashMode::TornTail { seed: u64::from(i) }));
            for j in (0..=i).step_by(7) {
                assert_eq!(
                    r.get(format!("k{j:05}")).unwrap(),
                    Some(vec![j as u8; 100]),
                    "synced write {j} lost at {i}"
                );
            }
        }
    }
}

/// An empty batch written with `sync` is a barrier: every write acknowledged before it
/// survives a machine crash (it used to return at once, syncing nothing).
#[test]
fn an_empty_synced_write_makes_the_writes_before_it_durable() {
    let (db, fs) = open_first_config();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), vec![i as u8; 50]).unwrap();
    }
    let sync = WriteOptions {
        sync: true,
        ..Default::default()
    };
    db.write(&sync, WriteBatch::new()).unwrap();
    let r = reopen_first_config(fs.crash_clone(CrashMode::DropUnsynced));
    for i in 0..100u32 {
        assert_eq!(
            r.get(format!("k{i:03}")).unwrap(),
            Some(vec![i as u8; 50]),
            "write {i} lost"
        );
    }
}

/// A flush leaves its tables unsynced, and whichever thread syncs the manifest next makes
/// them and their directory durable before it writes the record naming them (version/
/// set.rs, `DurableFirst`). Power cuts taken while memtables flush in the background, with
/// those syncs slowed, each open with every synced write. Fails if the record is written
/// first ("too short to be a table", or keys lost with their WAL).
#[test]
fn flushed_tables_are_durable_before_the_manifest_names_them() {
    let fault = FaultFs::new(MemFs::new());
    let dir = Path::new("/db");
    let opts = |fs: Arc<dyn Fs>| strata::Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 4,
        fs,
        ..strata::Options::default()
    };
    let slow: Arc<dyn Fs> = Arc::new(InterceptFs::new(Arc::new(fault.clone())).on_sync_file(
        |path, fs| {
            if path.extension().is_some_and(|e| e == "sst") {
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
            fs.sync_file(path)
        },
    ));
    let db = Db::open(dir, opts(slow)).unwrap();
    let sync = WriteOptions {
        sync: true,
        ..WriteOptions::default()
    };
    let value = |i: u32| format!("{i:05}-{}", "v".repeat(100));
    let mut images = Vec::new();
    for i in 0..6000u32 {
        let mut b = WriteBatch::default();
        b.put(format!("k{i:05}"), value(i));
        db.write(&sync, b).unwrap();
        if i % 400 == 399 {
            images.push((i, fault.crash_clone(CrashMode::DropUnsynced)));
        }
    }
    assert!(
        db.stats().flushes >= 10,
        "{} flushes; the test needs many",
        db.stats().flushes
    );
    drop(db);
    for (last, image) in images {
        let db = Db::open(dir, opts(Arc::new(image)))
            .unwrap_or_else(|e| panic!("a power cut after write {last}: {e}"));
        for i in 0..=last {
            assert_eq!(
                db.get(format!("k{i:05}")).unwrap(),
                Some(value(i).into_bytes()),
                "key {i} after a power cut after write {last}"
            );
        }
    }
}

/// `Db::flush` returns once the flushed tables, their directory entries and the record
/// naming them are durable, though the flush itself left the tables unsynced: unsynced
/// writes flushed survive a power cut right after. Fails if the tables' directory is not
/// synced with them.
#[test]
fn unsynced_writes_survive_a_power_cut_once_flushed() {
    let fault = FaultFs::new(MemFs::new());
    let dir = Path::new("/db");
    let opts = |fs: Arc<dyn Fs>| strata::Options {
        write_buffer_size: 64 << 10,
        fs,
        ..strata::Options::default()
    };
    let db = Db::open(dir, opts(Arc::new(fault.clone()))).unwrap();
    let value = |i: u32| format!("{i:05}-{}", "w".repeat(100));
    for i in 0..3000u32 {
        db.put(format!("k{i:05}"), value(i)).unwrap();
    }
    db.flush().unwrap();
    let image = fault.crash_clone(CrashMode::DropUnsynced);
    drop(db);
    let db = Db::open(dir, opts(Arc::new(image))).unwrap();
    for i in 0..3000u32 {
        assert_eq!(
            db.get(format!("k{i:05}")).unwrap(),
            Some(value(i).into_bytes()),
            "key {i} after a power cut right after a flush"
        );
    }
}

/// A file whose syncs take 40 ms (a slow device).
struct SlowSyncFile(Box<dyn strata::fs::WritableFile>);

impl strata::fs::WritableFile for SlowSyncFile {
    fn append(&mut self, data: &[u8]) -> strata::Result<()> {
        self.0.append(data)
    }
    fn flush(&mut self) -> strata::Result<()> {
        self.0.flush()
    }
    fn sync(&mut self) -> strata::Result<()> {
        std::thread::sleep(std::time::Duration::from_millis(40));
        self.0.sync()
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
}

/// A compaction syncs its tables on a thread of its own while it merges
/// (compaction/job.rs, `TableSyncer`); its edit must still wait for every sync. A power cut
/// the moment a many-table compaction is installed, with table syncs slowed so that they
/// would still be running if the edit did not wait, finds every table whole and every key.
#[test]
fn compaction_tables_synced_on_a_thread_are_durable_before_the_edit_names_them() {
    let fault = FaultFs::new(MemFs::new());
    let dir = Path::new("/db");
    let opts = || strata::Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 16 << 10,
        level0_file_num_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 100,
        level0_stop_writes_trigger: 100,
        fs: Arc::new(
            InterceptFs::new(Arc::new(fault.clone())).on_create(|path, fs| {
                let f = fs.create(path)?;
                Ok(if path.extension().is_some_and(|e| e == "sst") {
                    Box::new(SlowSyncFile(f))
                } else {
                    f
                })
            }),
        ),
        ..strata::Options::default()
    };
    let db = Db::open(dir, opts()).unwrap();
    let value = |i: u32, round: u32| format!("{i:05}-{round}-{}", "v".repeat(80));
    for round in 0..3u32 {
        for i in 0..1500u32 {
            db.put(format!("k{i:05}"), value(i, round)).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    let tables: usize = db.stats().files_per_level.iter().skip(1).sum();
    assert!(
        tables >= 6,
        "the compaction wrote {tables} tables; the test needs several"
    );
    // No close: the image is the one a power cut right after the compaction would leave.
    let image = fault.crash_clone(CrashMode::DropUnsynced);
    drop(db);
    let db = Db::open(
        dir,
        strata::Options {
            fs: Arc::new(image),
            ..opts()
        },
    )
    .unwrap();
    for i in 0..1500u32 {
        assert_eq!(
            db.get(format!("k{i:05}")).unwrap(),
            Some(value(i, 2).into_bytes()),
            "key {i} after a power cut right after the compaction"
        );
    }
}

/// A compaction never makes durable what it derived from tables that are not: a flush's
/// tables are synced with its manifest record, later (`DurableFirst`), and a compaction may
/// take them as inputs before that. Here a delete and later writes are flushed, the sync of
/// that flush's table is slowed, and the compaction that follows merges it with the older
/// table holding the deleted value, at the last level, where the tombstone goes with the
/// value it hid. Power cuts taken meanwhile, repaired without a manifest: the deleted value
/// must never come back beside the writes that followed its delete. Fails when a compaction
/// syncs its outputs before its inputs are durable (the output holds the later writes, the
/// unsynced table with the tombstone is lost, the older table is still there).
#[test]
fn a_compaction_waits_for_its_inputs_to_be_durable() {
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Mutex;
    let fault = FaultFs::new(MemFs::new());
    let dir = Path::new("/db");
    let opts = |fs: Arc<dyn Fs>| strata::Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        fs,
        ..strata::Options::default()
    };
    // Once `armed`, the next table created is the flush's: its sync takes 300 ms.
    let armed = Arc::new(AtomicBool::new(false));
    let slow_table: Arc<Mutex<Option<std::path::PathBuf>>> = Arc::default();
    let (arming, noting, slowing) = (armed.clone(), slow_table.clone(), slow_table.clone());
    let fs: Arc<dyn Fs> = Arc::new(
        InterceptFs::new(Arc::new(fault.clone()))
            .on_create(move |path, fs| {
                // A flush writes `NNNNNN.sst.dbtmp` and renames it.
                let name = path.to_string_lossy().replace(".dbtmp", "");
                if name.ends_with(".sst") && arming.swap(false, SeqCst) {
                    *noting.lock().unwrap() = Some(name.into());
                }
                fs.create(path)
            })
            .on_sync_file(move |path, fs| {
                if slowing.lock().unwrap().as_deref() == Some(path) {
                    std::thread::sleep(std::time::Duration::from_millis(300));
                }
                fs.sync_file(path)
            }),
    );
    let db = Db::open(dir, opts(fs)).unwrap();
    db.put("victim", "old").unwrap();
    db.flush().unwrap();
    armed.store(true, SeqCst);
    db.delete("victim").unwrap();
    let later = |i: u32| format!("later{i:05}");
    let mut images = Vec::new();
    // A memtable and a half of later writes: the memtable with the delete is flushed in
    // the background, and its table compacted with the first one.
    for i in 0..900u32 {
        db.put(later(i), "x".repeat(100)).unwrap();
        if i >= 500 && i % 10 == 0 {
            images.push(fault.crash_clone(CrashMode::DropUnsynced));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    for _ in 0..60 {
        images.push(fault.crash_clone(CrashMode::DropUnsynced));
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    db.wait_for_compactions().unwrap();
    assert!(
        db.stats().flushes >= 2,
        "the delete's memtable was not flushed"
    );
    assert!(slow_table.lock().unwrap().is_some(), "no table was slowed");
    drop(db);
    let mut seen_after = false;
    for (n, image) in images.into_iter().enumerate() {
        for name in image.list(dir).unwrap() {
            if name.starts_with("MANIFEST-") || name == "CURRENT" {
                image.remove(&dir.join(name)).unwrap();
            }
        }
        strata::repair(dir, &opts(Arc::new(image.clone()))).unwrap();
        let db = Db::open(dir, opts(Arc::new(image))).unwrap();
        let after = (0..900u32)
            .filter(|&i| db.get(later(i)).unwrap().is_some())
            .count();
        seen_after |= after > 0;
        let victim = db.get("victim").unwrap();
        assert!(
            victim.is_none() || after == 0,
            "image {n}: the deleted value is back beside {after} writes that followed its delete"
        );
    }
    assert!(seen_after, "no image held a write after the delete");
}
