//! Background scheduling: with a dedicated flush thread, a flush completes while a long
//! compaction is still writing (HyperLevelDB's point); with the shared thread (LevelDB),
//! work still completes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::fs::{CrashMode, Fs, MemFs, WritableFile};
use strata::{Db, Options, Result};
use strata_testkit::{InterceptFs, SlowFile};

fn prop(db: &Db, name: &str) -> usize {
    db.property(name).unwrap().parse().unwrap()
}

fn open(separate_flush_thread: bool) -> (Db, Arc<AtomicBool>) {
    let (db, slow, _) = open_recording(separate_flush_thread);
    (db, slow)
}

type Removers = Arc<std::sync::Mutex<Vec<String>>>;

fn open_recording(separate_flush_thread: bool) -> (Db, Arc<AtomicBool>, Removers) {
    let slow = Arc::new(AtomicBool::new(false));
    let removers = Removers::default();
    // Appends to files under `/deep/` (levels >= 1, i.e. compaction outputs) are slow while
    // `slow` is set; every `remove` records the thread behind it.
    let (slowing, recording) = (slow.clone(), removers.clone());
    let fs = InterceptFs::new(Arc::new(MemFs::new()))
        .on_create(move |path, fs| {
            let inner = fs.create(path)?;
            if path.to_string_lossy().contains("/deep/") {
                return Ok(Box::new(SlowFile::switched(
                    inner,
                    Duration::from_millis(20),
                    slowing.clone(),
                )));
            }
            Ok(inner)
        })
        .on_remove(move |path, fs| {
            let name = std::thread::current().name().unwrap_or("").to_string();
            recording.lock().unwrap().push(name);
            fs.remove(path)
        });
    let opts = Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        level_dir: Some("/db/deep".into()),
        target_file_size_base: 64 << 10,
        block_size: 4096,
        separate_flush_thread,
        fs: Arc::new(fs),
        ..Options::default()
    };
    (Db::open("/db", opts).unwrap(), slow, removers)
}

/// Flush and compaction threads never delete files: the deletion thread does (an `unlink`
/// may wait for the file system's discard, milliseconds per table, and a flush thread
/// deleting leaves writes waiting for a memtable).
#[test]
fn obsolete_files_are_deleted_on_the_deletion_thread() {
    for separate_flush_thread in [false, true] {
        let (db, _, removers) = open_recording(separate_flush_thread);
        for round in 0..6u8 {
            for i in 0..400u32 {
                db.put(format!("key{i:05}"), vec![round; 100]).unwrap();
            }
            db.flush().unwrap();
        }
        let deleted = || removers.lock().unwrap().clone();
        let start = Instant::now();
        // WALs of the flushes and the inputs of the compactions they set off.
        while deleted().len() < 8 && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let by = deleted();
        assert!(by.len() >= 8, "only {} files deleted", by.len());
        assert!(
            by.iter().all(|t| t == "strata-delete"),
            "deleted by {by:?} (separate flush thread: {separate_flush_thread})"
        );
    }
}

/// Value-store GC threads never delete files either: the hash store's steps and the value
/// log's collect files by the dozen, and a GC thread that ran the obsolete-file pass after
/// each step listed the database's directories after each (a sixth of the CPU with 640
/// groups).
#[test]
fn value_store_gc_threads_leave_deletions_to_the_deletion_thread() {
    for name in ["hashkv", "wisckey"] {
        let config = strata_testkit::configs()
            .into_iter()
            .find(|c| c.name == name)
            .expect("a named configuration");
        let removers: Arc<std::sync::Mutex<Vec<(String, String)>>> = Arc::default();
        let recording = removers.clone();
        let fs = InterceptFs::new(Arc::new(MemFs::new())).on_remove(move |path, fs| {
            let thread = std::thread::current().name().unwrap_or("").to_string();
            let file = path.to_string_lossy().to_string();
            recording.lock().unwrap().push((thread, file));
            fs.remove(path)
        });
        let opts = (config.build)(Path::new("/db"), Arc::new(fs));
        let db = Db::open("/db", opts).unwrap();
        let value_files = |r: &[(String, String)]| {
            r.iter()
                .filter(|(_, f)| f.ends_with(".hkv") || f.ends_with(".vlog"))
                .count()
        };
        // Overwrites of 200-byte values (separated by both), flushed often: garbage for
        // every group and segment, so GC collects files.
        let start = Instant::now();
        let mut round = 0u8;
        while value_files(&removers.lock().unwrap()) < 4 {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{name}: no value file deleted"
            );
            for i in 0..300u32 {
                db.put(format!("key{i:05}"), vec![round; 200]).unwrap();
            }
            db.flush().unwrap();
            round = round.wrapping_add(1);
        }
        let by = removers.lock().unwrap().clone();
        let wrong: Vec<_> = by.iter().filter(|(t, _)| t != "strata-delete").collect();
        assert!(wrong.is_empty(), "{name}: deleted by {wrong:?}");
        for i in 0..300u32 {
            let v = db.get(format!("key{i:05}")).unwrap().expect("kept");
            assert_eq!(v, vec![round.wrapping_sub(1); 200]);
        }
    }
}

/// Writes 400 keys twice, flushing each time (`key00000`.. with values of 0s, then 1s),
/// and returns once the L0 -> L1 compaction the two tables make due is running (with two
/// as the trigger).
fn start_a_compaction(db: &Db) {
    for round in 0..2u8 {
        for i in 0..400u32 {
            db.put(format!("key{i:05}"), vec![round; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    let t = Instant::now();
    while prop(db, "strata.num-running-compactions") == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no compaction started"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn flush_does_not_wait_behind_a_compaction() {
    let (db, slow) = open(true);
    slow.store(true, Ordering::SeqCst);
    // Two flushes trigger an L0 -> L1 compaction, whose output appends are slow.
    start_a_compaction(&db);
    // While it runs: a new memtable is flushed, and the compaction is still going.
    db.put(b"during", b"compaction").unwrap();
    let t = Instant::now();
    db.flush().unwrap();
    let flush_time = t.elapsed();
    assert_eq!(
        prop(&db, "strata.num-running-compactions"),
        1,
        "flush waited for the compaction ({flush_time:?})"
    );
    assert_eq!(db.get(b"during").unwrap(), Some(b"compaction".to_vec()));
    slow.store(false, Ordering::SeqCst);
}

#[test]
fn shared_thread_completes_flushes_and_compactions() {
    let (db, _slow) = open(false);
    for round in 0..6u8 {
        for i in 0..400u32 {
            db.put(format!("key{i:05}"), vec![round; 100]).unwrap();
        }
        db.flush().unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(prop(&db, "strata.num-files-at-level0"), 0);
    assert_eq!(db.get(b"key00123").unwrap(), Some(vec![5u8; 100]));
}

#[test]
fn compactions_that_yield_to_flushes_still_run_after_them() {
    // OHDB's flush priority (`compaction_yields_to_flush`): a compaction thread that looked
    // while a flush was finishing must be woken again when the flush is done, or, with a
    // flush always just behind, compactions never start (seen: a 3M-key fill did none and
    // crawled at 29K ops/s behind 110 L0 tables).
    let opts = Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        level0_slowdown_writes_trigger: 1000,
        level0_stop_writes_trigger: 1000,
        compaction_yields_to_flush: true,
        read_compaction_bytes: 0,
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    for round in 0..6u32 {
        for i in 0..500u32 {
            db.put(format!("k{i:05}"), format!("v{round}-{i}")).unwrap();
        }
        db.flush().unwrap();
    }
    let t = Instant::now();
    while prop(&db, "strata.num-files-at-level0") >= 2 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no compaction ran after the flushes: {}",
            db.property("strata.levels").unwrap()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(db.get("k00042").unwrap(), Some(b"v5-42".to_vec()));
}

/// `wait_for_compactions` returns once a slow compaction has finished and nothing else is
/// due: L0 under its trigger, no compaction running, and nothing starting afterwards.
#[test]
fn wait_for_compactions_waits_out_slow_compactions() {
    for separate in [true, false] {
        let (db, slow) = open(separate);
        slow.store(true, Ordering::SeqCst);
        for round in 0..3u8 {
            for i in 0..400u32 {
                db.put(format!("key{i:05}"), vec![round; 100]).unwrap();
            }
            db.flush().unwrap();
        }
        slow.store(false, Ordering::SeqCst);
        db.wait_for_compactions().unwrap();
        assert_eq!(prop(&db, "strata.num-running-compactions"), 0);
        assert!(prop(&db, "strata.num-files-at-level0") < 2);
        let done = db.stats().level_compactions();
        assert!(done > 0, "the flushes triggered compactions");
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            db.stats().level_compactions(),
            done,
            "work started after idle"
        );
        assert_eq!(db.get(b"key00123").unwrap(), Some(vec![2u8; 100]));
    }
}

/// Once writes stop for `idle_compaction_delay`, an L0 at least half way to its trigger is
/// compacted down (and `wait_for_compactions` waits for that); below half it stays, and
/// writes that go on put it off.
#[test]
fn idle_writes_compact_l0_at_half_its_trigger() {
    let fs = Arc::new(MemFs::new());
    let opts = |delay_ms: u64| Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 8,
        idle_compaction_delay: Some(Duration::from_millis(delay_ms)),
        fs: fs.clone(),
        ..Options::default()
    };
    let fill = |db: &Db, tables: u8| {
        for round in 0..tables {
            for i in 0..400u32 {
                db.put(format!("key{i:05}"), vec![round; 100]).unwrap();
            }
            db.flush().unwrap();
        }
    };
    // Three tables: below half of 8, they stay.
    let db = Db::open("/db", opts(100)).unwrap();
    fill(&db, 3);
    db.wait_for_compactions().unwrap();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(prop(&db, "strata.num-files-at-level0"), 3);
    assert_eq!(db.stats().idle_compactions, 0);
    // A fourth: half way. Writes going on (every 20 ms, under the delay of 300 ms) put the
    // compaction off; once they stop, it runs, and wait_for_compactions waits for it.
    drop(db);
    let db = Db::open("/db", opts(300)).unwrap();
    fill(&db, 1);
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(600) {
        db.put(b"tick", b"tock").unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(db.stats().idle_compactions, 0, "writes kept coming");
    assert_eq!(prop(&db, "strata.num-files-at-level0"), 4);
    db.wait_for_compactions().unwrap();
    assert_eq!(prop(&db, "strata.num-files-at-level0"), 0);
    assert_eq!(db.stats().idle_compactions, 1);
    assert_eq!(db.get(b"key00123").unwrap(), Some(vec![0u8; 100]));
    assert_eq!(db.get(b"tick").unwrap(), Some(b"tock".to_vec()));
    // Without the option, nothing happens.
    drop(db);
    let db = Db::open(
        "/db",
        Options {
            idle_compaction_delay: None,
            ..opts(0)
        },
    )
    .unwrap();
    fill(&db, 5);
    let l0 = prop(&db, "strata.num-files-at-level0");
    assert!(l0 >= 5, "{l0}");
    std::thread::sleep(Duration::from_millis(300));
    db.wait_for_compactions().unwrap();
    assert_eq!(prop(&db, "strata.num-files-at-level0"), l0);
    assert_eq!(db.stats().idle_compactions, 0);
}

/// Once writes stop, a level above the last that holds more than a tenth of the last
/// (the multiplier) is compacted into it: its keys are mostly newer versions of keys
/// there, space the tree would otherwise keep until the next burst of writes.
#[test]
fn idle_writes_bring_upper_levels_under_their_share_of_the_last() {
    let fs = Arc::new(MemFs::new());
    let opts = |l1: u64| Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 2,
        target_file_size_base: 16 << 10,
        max_bytes_for_level_base: l1,
        idle_compaction_delay: Some(Duration::from_millis(200)),
        fs: fs.clone(),
        ..Options::default()
    };
    let level_bytes = |db: &Db| db.stats().bytes_per_level;
    // A 64 KiB L1 pushes most of 4,000 keys into L2.
    let db = Db::open("/db", opts(64 << 10)).unwrap();
    for i in 0..4000u32 {
        db.put(format!("key{i:05}"), vec![1u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    drop(db);
    let db = Db::open("/db", opts(10 << 20)).unwrap();
    let last = level_bytes(&db).iter().rposition(|&b| b > 0).unwrap();
    assert!(last >= 2, "{:?}", level_bytes(&db));
    // Overwrite half of it; L1 (10 MiB target) keeps what reaches it.
    for i in 0..2000u32 {
        db.put(format!("key{i:05}"), vec![2u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let b = level_bytes(&db);
    let above: u64 = b[1..last].iter().sum();
    assert!(db.stats().idle_compactions > 0, "{b:?}");
    for l in 1..last {
        let share = b[last] as f64 / 10f64.powi((last - l) as i32);
        assert!(
            b[l] as f64 <= share.max(1.0) + (16 << 10) as f64,
            "L{l}: {b:?}"
        );
    }
    assert!(above < b[last] / 5, "{b:?}");
    // What wait_for_compactions leaves on disk is the tree: no input of the last job.
    let on_disk = fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .count();
    assert_eq!(on_disk, db.stats().files_per_level.iter().sum::<usize>());
    assert_eq!(db.get(b"key00007").unwrap(), Some(vec![2u8; 100]));
    assert_eq!(db.get(b"key03007").unwrap(), Some(vec![1u8; 100]));
}

#[test]
fn a_sequential_fill_moves_its_l0_tables_down_unmerged() {
    let opts = Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 4,
        target_file_size_base: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    for i in 0..20_000u32 {
        db.put(format!("key{i:08}"), vec![7u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    // Tables of keys in order share no key, so each goes down as the flush wrote it
    // (RocksDB moves them too): nothing of L0 is merged, no table is written twice.
    assert!(s.flushes >= 20, "{s:?}");
    assert_eq!(s.merges_by_input_level[0], 0, "{s:?}");
    assert_eq!(s.compaction_written.iter().sum::<u64>(), 0, "{s:?}");
    assert!(s.moved_files_by_input_level[0] >= s.flushes - 4, "{s:?}");
    for i in (0..20_000u32).step_by(97) {
        assert_eq!(db.get(format!("key{i:08}")).unwrap(), Some(vec![7u8; 100]));
    }
    let mut it = db.iter(strata::ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut n = 0u32;
    while it.valid() {
        assert_eq!(it.key(), format!("key{n:08}").as_bytes());
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 20_000);
}

/// The deletion thread runs a pass at most every 100 ms; jobs that finish within the pause
/// get one pass after it. Flushes in a row: the later ones' WALs become obsolete during the
/// pause after the first one's pass, and must still be gone soon after, with no job after
/// them.
#[test]
fn what_jobs_leave_during_the_deletion_pause_is_deleted_after_it() {
    for separate_flush_thread in [false, true] {
        let fs = Arc::new(MemFs::new());
        let db = Db::open(
            "/db",
            Options {
                fs: fs.clone(),
                separate_flush_thread,
                idle_compaction_delay: None,
                ..Options::preset("leveldb").unwrap()
            },
        )
        .unwrap();
        let wals = || {
            fs.list(Path::new("/db"))
                .unwrap()
                .iter()
                .filter(|n| n.ends_with(".log"))
                .count()
        };
        for round in 0..3u32 {
            for i in 0..100u32 {
                db.put(format!("key{i:03}"), format!("value{round}"))
                    .unwrap();
            }
            db.flush().unwrap();
        }
        let start = Instant::now();
        while wals() > 1 && start.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(
            wals(),
            1,
            "obsolete WALs left on disk (separate flush thread: {separate_flush_thread})"
        );
    }
}

/// `strata.write-stalls` says what a write waited for and when: with every flush made slow
/// (each table append sleeps) and one immutable memtable allowed, writes stop for the flush,
/// and the report names that cause with its long waits listed; a database that never
/// waited reports nothing.
#[test]
fn the_write_stall_log_names_a_stop_for_a_slow_flush() {
    let slow = Arc::new(AtomicBool::new(true));
    let slowing = slow.clone();
    let fs = InterceptFs::new(Arc::new(MemFs::new())).on_create(move |path, fs| {
        let inner = fs.create(path)?;
        // (A flush writes its tables as `NNNNNN.sst.dbtmp` until it publishes them.)
        if path.to_string_lossy().contains(".sst") {
            return Ok(Box::new(SlowFile::switched(
                inner,
                Duration::from_millis(20),
                slowing.clone(),
            )));
        }
        Ok(inner)
    });
    let o = Options {
        fs: Arc::new(fs),
        write_buffer_size: 64 << 10,
        max_write_buffer_number: 2,
        idle_compaction_delay: None,
        ..Options::default()
    };
    let db = Db::open("/db", o).unwrap();
    assert_eq!(db.property("strata.write-stalls").unwrap(), "");
    for i in 0..4_000u32 {
        db.put(format!("key{i:06}"), vec![7u8; 100]).unwrap();
    }
    slow.store(false, Ordering::SeqCst);
    let report = db.property("strata.write-stalls").unwrap();
    let stops = report
        .lines()
        .find(|l| l.starts_with("stop: memtables full:"))
        .unwrap_or_else(|| panic!("no stop for the flush in {report:?}"));
    assert!(!stops.contains(": 0 waits"), "{report}");
    assert!(
        report.contains("waits of 20 ms or more")
            && report
                .lines()
                .any(|l| l.contains("s: stop: memtables full for")),
        "a flush of 20 ms per block must leave long waits listed: {report}"
    );
    assert!(db.stats().stalls > 0);
    for i in (0..4_000u32).step_by(97) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap(), Some(vec![7u8; 100]));
    }
}

/// A manifest file whose syncs wait while its gate is closed.
struct GatedSync {
    inner: Box<dyn WritableFile>,
    gate: Arc<Gate>,
}

impl WritableFile for GatedSync {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        wait_gate(&self.gate);
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

/// A file system whose manifest syncs (through its writer, or by path) wait while the
/// returned gate is closed (`true`).
fn gated_manifest_fs() -> (InterceptFs, Arc<Gate>) {
    gated_manifest_fs_over(Arc::new(MemFs::new()))
}

/// [`gated_manifest_fs`] over `mem`.
fn gated_manifest_fs_over(mem: Arc<MemFs>) -> (InterceptFs, Arc<Gate>) {
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let gated = gate.clone();
    let gated_by_path = gate.clone();
    let fs = InterceptFs::new(mem)
        .on_create(move |path, fs| {
            let inner = fs.create(path)?;
            if path.to_string_lossy().contains("MANIFEST") {
                return Ok(Box::new(GatedSync {
                    inner,
                    gate: gated.clone(),
                }));
            }
            Ok(inner)
        })
        .on_sync_file(move |path, fs| {
            if path.to_string_lossy().contains("MANIFEST") {
                wait_gate(&gated_by_path);
            }
            fs.sync_file(path)
        });
    (fs, gate)
}

fn wait_gate(gate: &Gate) {
    let (closed, cv) = gate;
    let mut c = closed.lock().unwrap();
    while *c {
        c = cv.wait(c).unwrap();
    }
}

/// A gate: closed while the flag is set.
type Gate = (std::sync::Mutex<bool>, std::sync::Condvar);

fn set_gate(gate: &Gate, closed: bool) {
    *gate.0.lock().unwrap() = closed;
    gate.1.notify_all();
}

fn open_gated(fs: InterceptFs) -> Arc<Db> {
    Arc::new(
        Db::open(
            "/db",
            Options {
                fs: Arc::new(fs),
                write_buffer_size: 64 << 10,
                max_write_buffer_number: 2,
                idle_compaction_delay: None,
                ..Options::default()
            },
        )
        .unwrap(),
    )
}

/// Opens a database whose manifest syncs are all held up, and writes `puts` puts of 100
/// bytes (64 KiB memtables, one immutable memtable allowed) on a thread: the database, the
/// gate (still closed), and whether the puts completed within 20 s.
fn put_with_manifest_syncs_held(puts: u32) -> (Arc<Db>, Arc<Gate>, bool) {
    let (fs, gate) = gated_manifest_fs();
    let db = open_gated(fs);
    set_gate(&gate, true);
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            for i in 0..puts {
                db.put(format!("key{i:06}"), vec![3u8; 100]).unwrap();
            }
            tx.send(()).unwrap();
        })
    };
    // (Generous: the puts take milliseconds once nothing holds them up.)
    let finished = rx.recv_timeout(Duration::from_secs(20)).is_ok();
    if !finished {
        set_gate(&gate, false);
    }
    writer.join().unwrap();
    (db, gate, finished)
}

/// A flush hands its memtable's place to the writers once its manifest record is written,
/// not once it is synced (docs/design/core-engine.md, "A flush's memtable leaves before its
/// manifest sync"): with every manifest sync held up and one immutable memtable allowed,
/// about two memtables' worth of puts still complete (they stopped behind the first flush's
/// sync when the memtable left after it).
#[test]
fn writers_go_on_while_a_flush_syncs_the_manifest() {
    // ~1.7 memtables of 64 KiB.
    let (db, gate, finished) = put_with_manifest_syncs_held(1_000);
    set_gate(&gate, false);
    assert!(finished, "writes stopped behind a flush's manifest sync");
    db.flush().unwrap();
    for i in (0..1_000u32).step_by(37) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap(), Some(vec![3u8; 100]));
    }
}

/// The flush thread hands its record's sync to the sync thread and takes the next memtable
/// (docs/design/core-engine.md, "Manifest syncs outside the versions' lock"): with every
/// manifest sync held up, puts go on through many memtables. (When the flush thread waited
/// for its own sync, they stopped after about two.) `Db::flush` still waits for the sync.
#[test]
fn flushes_go_on_while_their_records_sync() {
    // ~6 memtables of 64 KiB.
    let (db, gate, finished) = put_with_manifest_syncs_held(3_500);
    assert!(
        finished,
        "writes stopped behind the flushes' manifest syncs"
    );
    let flushed = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    std::thread::sleep(Duration::from_millis(100));
    let flush_returned_early = flushed.is_finished();
    set_gate(&gate, false);
    flushed.join().unwrap().unwrap();
    assert!(
        !flush_returned_early,
        "Db::flush returned before the manifest sync"
    );
    for i in (0..3_500u32).step_by(37) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap(), Some(vec![3u8; 100]));
    }
}

/// A compaction syncs its manifest record after letting go of the versions' lock
/// (docs/design/core-engine.md, "Manifest syncs outside the versions' lock"): while that
/// sync is held up, a flush still appends its own record and hands its memtable back, so
/// about two memtables' worth of puts complete. (With the sync under the lock, the flush
/// waited for the lock with its memtable, and the writers stopped behind it.)
#[test]
fn writers_go_on_while_a_compaction_syncs_the_manifest() {
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let held = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let slow = Arc::new(AtomicBool::new(true));
    // Manifest syncs made on a background thread other than the flush's (the compaction's,
    // or the deletion thread's, which may sync the compaction's record first) wait while
    // the gate is closed, whether through the manifest's writer or by path; compaction
    // outputs (under `/deep/`) are slow to write while `slow` is set.
    let gated_here = || {
        std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("strata-") && n != "strata-flush")
    };
    let hold = {
        let (gate, held) = (gate.clone(), held.clone());
        move || {
            if gated_here() {
                held.fetch_add(1, Ordering::SeqCst);
                wait_gate(&gate);
                held.fetch_sub(1, Ordering::SeqCst);
            }
        }
    };
    let hold = Arc::new(hold);
    let (holding, slowing) = (hold.clone(), slow.clone());
    let fs = InterceptFs::new(Arc::new(MemFs::new()))
        .on_create(move |path, fs| {
            let inner = fs.create(path)?;
            if path.to_string_lossy().contains("MANIFEST") {
                return Ok(Box::new(HeldSync {
                    inner,
                    hold: holding.clone(),
                }));
            }
            if path.to_string_lossy().contains("/deep/") {
                return Ok(Box::new(SlowFile::switched(
                    inner,
                    Duration::from_millis(20),
                    slowing.clone(),
                )));
            }
            Ok(inner)
        })
        .on_sync_file(move |path, fs| {
            if path.to_string_lossy().contains("MANIFEST") {
                hold();
            }
            fs.sync_file(path)
        });
    let db = Arc::new(
        Db::open(
            "/db",
            Options {
                fs: Arc::new(fs),
                write_buffer_size: 64 << 10,
                max_write_buffer_number: 2,
                level0_file_num_compaction_trigger: 2,
                level_dir: Some("/db/deep".into()),
                target_file_size_base: 64 << 10,
                idle_compaction_delay: None,
                ..Options::default()
            },
        )
        .unwrap(),
    );
    // Two flushes make L0 due; its compaction writes slowly, and its edit is then held up
    // in its sync.
    start_a_compaction(&db);
    let t = Instant::now();
    set_gate(&gate, true);
    slow.store(false, Ordering::SeqCst);
    while held.load(Ordering::SeqCst) == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "no compaction reached its manifest sync"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = {
        let db = db.clone();
        std::thread::spawn(move || {
            // ~1.7 memtables of 64 KiB.
            for i in 0..1_000u32 {
                db.put(format!("new{i:06}"), vec![4u8; 100]).unwrap();
            }
            tx.send(()).unwrap();
        })
    };
    let finished = rx.recv_timeout(Duration::from_secs(20)).is_ok();
    set_gate(&gate, false);
    writer.join().unwrap();
    assert!(
        finished,
        "writes stopped behind a compaction's manifest sync"
    );
    db.flush().unwrap();
    assert_eq!(db.get(b"key00123").unwrap(), Some(vec![1u8; 100]));
    for i in (0..1_000u32).step_by(37) {
        assert_eq!(db.get(format!("new{i:06}")).unwrap(), Some(vec![4u8; 100]));
    }
}

/// A manifest file whose syncs go through `hold` first.
struct HeldSync {
    inner: Box<dyn WritableFile>,
    hold: Arc<dyn Fn() + Send + Sync>,
}

impl WritableFile for HeldSync {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        (self.hold)();
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

/// An edit is synced after the versions' lock is let go; an obsolete-file pass that runs
/// meanwhile deletes nothing the edit made redundant until it is durable: here a flush's
/// edit, whose new log number makes the flushed memtable's WAL obsolete (the deletion
/// thread runs a pass after every flush). A crash then finds the WAL the durable manifest
/// still needs.
#[test]
fn a_wal_an_unsynced_flush_made_obsolete_outlives_a_crash() {
    let mem = Arc::new(MemFs::new());
    let (fs, gate) = gated_manifest_fs_over(mem.clone());
    let opts = |fs: Arc<dyn Fs>| Options {
        fs,
        write_buffer_size: 1 << 20,
        idle_compaction_delay: None,
        ..Options::default()
    };
    let db = Arc::new(Db::open("/db", opts(Arc::new(fs))).unwrap());
    for i in 0..300u32 {
        db.put(format!("key{i:05}"), vec![7u8; 100]).unwrap();
    }
    // A synced write: the WAL holding the puts is durable.
    let synced = strata::WriteOptions {
        sync: true,
        ..Default::default()
    };
    db.write(&synced, strata::WriteBatch::new()).unwrap();
    // The flush's edit is appended, its sync held up, and the passes after it run.
    set_gate(&gate, true);
    let flush = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    std::thread::sleep(Duration::from_millis(300));
    let wals = |fs: &MemFs| {
        let names = fs.list(Path::new("/db")).unwrap();
        names.into_iter().filter(|n| n.ends_with(".log")).count()
    };
    // The flushed memtable's WAL and the next memtable's.
    assert_eq!(
        wals(&mem),
        2,
        "a WAL was deleted before the edit making it obsolete was durable"
    );
    let crashed = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
    set_gate(&gate, false);
    flush.join().unwrap().unwrap();
    drop(db);
    let db = Db::open("/db", opts(crashed)).unwrap();
    for i in (0..300u32).step_by(7) {
        assert_eq!(
            db.get(format!("key{i:05}")).unwrap(),
            Some(vec![7u8; 100]),
            "key{i:05} after a crash while the flush's edit was not durable"
        );
    }
}

/// `Db::flush` returns once the flush's manifest record is synced, though the memtable
/// left before (it returned as soon as no immutable memtable was left, before the sync).
#[test]
fn db_flush_returns_once_its_manifest_record_is_synced() {
    let (fs, gate) = gated_manifest_fs();
    let db = open_gated(fs);
    for i in 0..100u32 {
        db.put(format!("key{i:06}"), vec![5u8; 100]).unwrap();
    }
    set_gate(&gate, true);
    let flushed = {
        let db = db.clone();
        std::thread::spawn(move || db.flush())
    };
    std::thread::sleep(Duration::from_millis(200));
    let returned_early = flushed.is_finished();
    set_gate(&gate, false);
    flushed.join().unwrap().unwrap();
    assert!(
        !returned_early,
        "Db::flush returned before the manifest sync"
    );
    assert_eq!(db.stats().flushes, 1);
}
