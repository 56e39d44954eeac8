//! Expiring entries (`Db::put_with_ttl`, `WriteBatch::put_with_ttl`, `WriteOptions::ttl`,
//! `Options::default_ttl`; docs/design/ttl.md) under every named configuration: an
//! expired entry is never read (by `get`, or by iterators in either direction) and hides
//! its key's older versions; flushes and compactions remove it for good; snapshots read as
//! of the time they were taken; a clock set back, a reopen, a repair and a power cut bring
//! nothing back.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use strata::fs::{CrashMode, Fs, MemFs};
use strata::{Clock, Db, ReadOptions, WriteBatch, WriteOptions};
use strata_testkit::configs::{configs, named, Config};
use strata_testkit::rng::Rng;

/// A clock moved by hand (ms since the Unix epoch).
struct Manual(AtomicU64);

impl Clock for Manual {
    fn now_millis(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

const START: u64 = 1_800_000_000_000;

fn clock() -> Arc<Manual> {
    Arc::new(Manual(AtomicU64::new(START)))
}

fn open(config: &Config, fs: &Arc<dyn Fs>, clock: &Arc<Manual>) -> Db {
    let mut opts = (config.build)(Path::new("/db"), fs.clone());
    opts.clock = clock.clone();
    Db::open("/db", opts).unwrap_or_else(|e| panic!("{}: open: {e}", config.name))
}

/// What the database should hold: per key, its value and expiry (ms; `None`: none).
type Model = BTreeMap<Vec<u8>, (Vec<u8>, Option<u64>)>;

/// The model as read at `now`.
fn live(m: &Model, now: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    m.iter()
        .filter(|(_, (_, e))| e.is_none_or(|e| e > now))
        .map(|(k, (v, _))| (k.clone(), v.clone()))
        .collect()
}

/// Checks every key of `m` by `get` and the whole by a forward and a reverse scan, as read
/// at `now`, through `ro`.
fn check(db: &Db, m: &Model, now: u64, ro: &ReadOptions, what: &str) {
    let want = live(m, now);
    for k in m.keys() {
        assert_eq!(
            db.get_opt(ro, k).unwrap(),
            want.get(k).cloned(),
            "{what}: get {:?}",
            String::from_utf8_lossy(k)
        );
    }
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = db.iter(ro.clone()).unwrap().map(|r| r.unwrap()).collect();
    let expect: Vec<(Vec<u8>, Vec<u8>)> = want.into_iter().collect();
    assert_eq!(fwd.len(), expect.len(), "{what}: forward scan length");
    assert!(fwd == expect, "{what}: forward scan");
    let mut it = db.iter(ro.clone()).unwrap();
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    back.reverse();
    assert!(back == expect, "{what}: reverse scan");
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:04}", i % 700).into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    // Small and large: the stores separate values from 100 bytes in the named configurations
    // (an expiring value stays in the tree whatever its size).
    let pad = if i.is_multiple_of(5) {
        300
    } else {
        (i % 30) as usize
    };
    format!("v{i}-{}", "p".repeat(pad)).into_bytes()
}

/// Writes `n` random puts (a third expiring within 1-100 s, some of them over older plain
/// versions), deletes and expiring overwrites, applying them to `m`.
fn workload(db: &Db, m: &mut Model, rng: &mut Rng, from: u64, n: u64, clock: &Manual) {
    for i in from..from + n {
        let k = key(rng.below(10_000));
        let now = clock.now_millis();
        match rng.below(10) {
            0 => {
                db.delete(&k).unwrap();
                m.remove(&k);
            }
            1..=3 => {
                let ttl = Duration::from_millis(1_000 * (1 + rng.below(100)));
                db.put_with_ttl(&k, value(i), ttl).unwrap();
                m.insert(k, (value(i), Some(now + ttl.as_millis() as u64)));
            }
            _ => {
                db.put(&k, value(i)).unwrap();
                m.insert(k, (value(i), None));
            }
        }
    }
}

#[test]
fn expired_entries_are_never_read_and_compactions_remove_them_under_every_config() {
    for config in configs() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let clock = clock();
        let mut db = open(&config, &fs, &clock);
        let mut m = Model::new();
        let mut rng = Rng::new(7);
        let ro = ReadOptions::default();
        workload(&db, &mut m, &mut rng, 0, 3_000, &clock);
        check(&db, &m, START, &ro, &format!("{}: before", config.name));
        for step in 1..=4u64 {
            clock.0.store(START + step * 30_000, Ordering::SeqCst);
            let now = clock.now_millis();
            let what = format!("{} at +{}s", config.name, step * 30);
            check(&db, &m, now, &ro, &what);
            match step {
                1 => db.flush().unwrap(),
                2 => db.compact_range(None, None).unwrap(),
                3 => {
                    db.close().unwrap();
                    db = open(&config, &fs, &clock);
                }
                _ => {
                    workload(&db, &mut m, &mut rng, 3_000, 1_000, &clock);
                    db.compact_range(None, None).unwrap();
                }
            }
            check(&db, &m, now, &ro, &format!("{what}, after"));
        }
        let s = db.stats();
        assert!(
            s.expired_entries > 0,
            "{}: no compaction removed an expired entry",
            config.name
        );
        // Past the last expiry, a full compaction removes every expiring entry left.
        let before = db.stats().expired_entries;
        clock.0.store(START + 1_000_000, Ordering::SeqCst);
        db.compact_range(None, None).unwrap();
        let now = clock.now_millis();
        check(&db, &m, now, &ro, &format!("{}: at the end", config.name));
        // (Those expiring after the last earlier job's time: none could be removed before.)
        let left = m
            .values()
            .filter(|(_, e)| e.is_some_and(|e| e > START + 120_000))
            .count() as u64;
        assert!(
            db.stats().expired_entries >= before + left,
            "{}: {} removed of {left} expiring entries left",
            config.name,
            db.stats().expired_entries - before
        );
        db.close().unwrap();
    }
}

#[test]
fn a_snapshot_reads_as_of_the_time_it_was_taken() {
    for name in [
        "default", "blob", "cleveldb", "matrixkv", "ohdb-2dc", "hashkv",
    ] {
        let config = named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let clock = clock();
        let db = open(&config, &fs, &clock);
        db.put(b"a", b"old").unwrap();
        db.put_with_ttl(b"a", b"new", Duration::from_secs(10))
            .unwrap();
        db.put_with_ttl(b"b", b"short", Duration::from_secs(5))
            .unwrap();
        db.flush().unwrap();
        let snap = db.snapshot();
        let at_snap = ReadOptions {
            snapshot: Some(snap.clone()),
            ..Default::default()
        };
        clock.0.store(START + 60_000, Ordering::SeqCst);
        // Now: both expired, and "a" does not fall back to its older value.
        assert_eq!(db.get(b"a").unwrap(), None, "{name}");
        assert_eq!(db.get(b"b").unwrap(), None, "{name}");
        // The snapshot: as it read when taken, before and after a full compaction.
        let mut m = Model::new();
        m.insert(b"a".to_vec(), (b"new".to_vec(), Some(START + 10_000)));
        m.insert(b"b".to_vec(), (b"short".to_vec(), Some(START + 5_000)));
        check(&db, &m, START, &at_snap, &format!("{name}: snapshot"));
        db.compact_range(None, None).unwrap();
        check(
            &db,
            &m,
            START,
            &at_snap,
            &format!("{name}: snapshot, compacted"),
        );
        // An iterator judges by the time it was made, for its whole life.
        clock.0.store(START + 7_000, Ordering::SeqCst);
        drop(at_snap);
        drop(snap);
        let it = db.iter(ReadOptions::default()).unwrap();
        let keys: Vec<Vec<u8>> = it.map(|r| r.unwrap().0).collect();
        assert!(
            keys.is_empty(),
            "{name}: the clock does not go back: {keys:?}"
        );
        db.compact_range(None, None).unwrap();
        assert!(db.stats().expired_entries >= 2, "{name}");
        assert_eq!(
            db.get(b"a").unwrap(),
            None,
            "{name}: after the snapshot left"
        );
        db.close().unwrap();
    }
}

#[test]
fn a_clock_set_back_brings_nothing_back_not_even_after_a_reopen() {
    for name in ["default", "wisckey"] {
        let config = named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let clock = clock();
        let db = open(&config, &fs, &clock);
        db.put(b"k", b"plain").unwrap();
        db.put_with_ttl(b"k", b"soon", Duration::from_secs(10))
            .unwrap();
        clock.0.store(START + 20_000, Ordering::SeqCst);
        assert_eq!(db.get(b"k").unwrap(), None);
        clock.0.store(START, Ordering::SeqCst);
        assert_eq!(db.get(b"k").unwrap(), None, "{name}: clock set back");
        db.close().unwrap();
        // The manifest recorded the time it was judged by: a reopen with the clock still
        // back reads the same.
        let db = open(&config, &fs, &clock);
        assert_eq!(
            db.get(b"k").unwrap(),
            None,
            "{name}: reopened, clock set back"
        );
        db.close().unwrap();
    }
}

#[test]
fn a_repair_after_the_clock_went_back_brings_nothing_back() {
    let config = named("default");
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let clock = clock();
    let db = open(&config, &fs, &clock);
    db.put(b"k", b"plain").unwrap();
    db.put_with_ttl(b"k", b"soon", Duration::from_secs(10))
        .unwrap();
    db.flush().unwrap();
    clock.0.store(START + 20_000, Ordering::SeqCst);
    assert_eq!(db.get(b"k").unwrap(), None);
    db.close().unwrap();
    clock.0.store(START, Ordering::SeqCst);
    let mut opts = (config.build)(Path::new("/db"), fs.clone());
    opts.clock = clock.clone();
    strata::repair("/db", &opts).unwrap();
    let db = Db::open("/db", opts).unwrap();
    assert_eq!(db.get(b"k").unwrap(), None, "repaired, clock set back");
    db.close().unwrap();
    // A database-wide ttl of zero is refused (every put would be unreadable).
    let mut opts = (config.build)(Path::new("/db"), fs.clone());
    opts.default_ttl = Some(Duration::ZERO);
    assert_eq!(
        Db::open("/db", opts).unwrap_err().kind(),
        strata::ErrorKind::InvalidArgument
    );
}

#[test]
fn the_ttl_of_a_write_and_of_the_database() {
    let config = named("default");
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let clock = clock();
    let mut opts = (config.build)(Path::new("/db"), fs.clone());
    opts.clock = clock.clone();
    opts.default_ttl = Some(Duration::from_secs(100));
    let db = Db::open("/db", opts).unwrap();
    db.put(b"default", b"1").unwrap();
    let mut b = WriteBatch::new();
    b.put(b"batch", b"2");
    b.put_with_ttl(b"own", b"3", Duration::from_secs(300));
    b.delete(b"default-gone");
    db.write(
        &WriteOptions {
            ttl: Some(Duration::from_secs(200)),
            ..Default::default()
        },
        b,
    )
    .unwrap();
    db.put_with_ttl(b"zero", b"never", Duration::ZERO).unwrap();
    assert_eq!(
        db.get(b"zero").unwrap(),
        None,
        "a ttl of zero is never read"
    );
    let at = |t: u64| {
        clock.0.store(START + t * 1_000, Ordering::SeqCst);
        ["default", "batch", "own"]
            .iter()
            .map(|k| db.get(k).unwrap().is_some())
            .collect::<Vec<_>>()
    };
    assert_eq!(at(99), [true, true, true]);
    assert_eq!(at(100), [false, true, true]);
    assert_eq!(at(200), [false, false, true]);
    assert_eq!(at(300), [false, false, false]);
    db.close().unwrap();
}

#[test]
fn expiring_writes_survive_a_power_cut_and_a_repair_with_their_expiry() {
    for name in ["default", "blob", "hashkv-wt", "matrixkv"] {
        let config = named(name);
        let mem = MemFs::new();
        let fs: Arc<dyn Fs> = Arc::new(mem.clone());
        let clock = clock();
        let db = open(&config, &fs, &clock);
        let sync = WriteOptions {
            sync: true,
            ..Default::default()
        };
        let mut m = Model::new();
        for i in 0..400u64 {
            let mut b = WriteBatch::new();
            let k = key(i);
            if i % 2 == 0 {
                b.put_with_ttl(&k, value(i), Duration::from_secs(10 + i % 20));
                m.insert(k, (value(i), Some(START + 1_000 * (10 + i % 20))));
            } else {
                b.put(&k, value(i));
                m.insert(k, (value(i), None));
            }
            db.write(&sync, b).unwrap();
            if i == 200 {
                db.flush().unwrap();
            }
        }
        let cut: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
        drop(db);
        let db = open(&config, &cut, &clock);
        let ro = ReadOptions::default();
        check(&db, &m, START, &ro, &format!("{name}: after the cut"));
        clock.0.store(START + 20_000, Ordering::SeqCst);
        check(
            &db,
            &m,
            START + 20_000,
            &ro,
            &format!("{name}: after the cut, later"),
        );
        db.close().unwrap();
        let mut opts = (config.build)(Path::new("/db"), cut.clone());
        opts.clock = clock.clone();
        strata::repair("/db", &opts).unwrap();
        let db = Db::open("/db", opts).unwrap();
        check(&db, &m, START + 20_000, &ro, &format!("{name}: repaired"));
        clock.0.store(START + 40_000, Ordering::SeqCst);
        db.compact_range(None, None).unwrap();
        check(
            &db,
            &m,
            START + 40_000,
            &ro,
            &format!("{name}: repaired, compacted"),
        );
        assert!(
            db.stats().expired_entries > 0,
            "{name}: a repaired database still removes expired entries"
        );
        db.close().unwrap();
    }
}

/// At rest (no writes to bring compactions by), a table of mostly expiring entries is
/// compacted once they have all expired, so their space comes back; not while a snapshot
/// still sees them (it would be rewritten as it was, again and again), and at once once
/// the snapshot goes. Entries that have not expired, and plain ones, stay.
#[test]
fn tables_whose_entries_have_expired_are_compacted_at_rest() {
    for name in ["default", "ohdb-l0p", "matrixkv", "hashkv", "cleveldb"] {
        let config = named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let clock = clock();
        let db = open(&config, &fs, &clock);
        let wk = |i: u64| format!("exp{i:05}").into_bytes();
        // Expiring keys (two expiries) in their own key range, plain ones beside them.
        for i in 0..3_000u64 {
            let ttl = Duration::from_secs(if i < 2_000 { 10 } else { 20 });
            db.put_with_ttl(wk(i), value(i), ttl).unwrap();
        }
        for i in 0..200u64 {
            db.put(format!("plain{i:04}"), value(i)).unwrap();
        }
        db.compact_range(None, None).unwrap();
        let before = db.stats();
        let bytes = |s: &strata::StatsSnapshot| s.bytes_per_level.iter().sum::<u64>();
        assert_eq!(before.expiry_compactions, 0, "{name}");
        // Expired, but a snapshot taken before still sees them: nothing is picked.
        let snap = db.snapshot();
        clock.0.fetch_add(15_000, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(1_500));
        assert_eq!(
            db.stats().expiry_compactions,
            0,
            "{name}: picked while a snapshot sees the entries"
        );
        assert_eq!(db.get(wk(5)).unwrap(), None, "{name}");
        assert_eq!(
            db.get_opt(
                &ReadOptions {
                    snapshot: Some(snap.clone()),
                    ..Default::default()
                },
                wk(5)
            )
            .unwrap(),
            Some(value(5)),
            "{name}: the snapshot reads as of its time"
        );
        drop(snap);
        // Released: the compaction thread looks again within a second and takes the
        // tables.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while db.stats().expiry_compactions == 0 {
            assert!(std::time::Instant::now() < deadline, "{name}: never picked");
            std::thread::sleep(Duration::from_millis(50));
        }
        db.wait_for_compactions().unwrap();
        let after = db.stats();
        assert!(
            bytes(&after) < bytes(&before),
            "{name}: {} bytes before, {} after",
            bytes(&before),
            bytes(&after)
        );
        for i in (0..3_000u64).step_by(37) {
            let want = (i >= 2_000).then(|| value(i));
            assert_eq!(db.get(wk(i)).unwrap(), want, "{name}: {i}");
        }
        for i in (0..200u64).step_by(7) {
            assert_eq!(
                db.get(format!("plain{i:04}")).unwrap(),
                Some(value(i)),
                "{name}: plain {i}"
            );
        }
        // The rest expire too; nothing expiring is left on disk after the next picks. (The
        // thread sleeps until their time by the clock it read, up to 10 s: a clock moved
        // by hand wakes it no sooner; a flush does.)
        clock.0.fetch_add(10_000, Ordering::SeqCst);
        db.put(b"nudge", b"").unwrap();
        db.flush().unwrap();
        let picked = after.expiry_compactions;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while db.stats().expiry_compactions == picked {
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: never picked again"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        db.wait_for_compactions().unwrap();
        assert_eq!(db.get(wk(2_500)).unwrap(), None, "{name}");
        db.close().unwrap();
    }
}
