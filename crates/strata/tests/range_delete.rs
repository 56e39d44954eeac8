//! Range deletions (`Db::delete_range`, `WriteBatch::delete_range`;
//! docs/design/range-deletes.md) under every named configuration: a deleted key is never
//! read again (by `get`, by iterators either way, from memtables, flushed tables, every L0
//! layout and every value store), keys written after the deletion survive it, snapshots
//! taken before it still read the keys, and flushes, compactions, reopens, value-store GC,
//! repairs and power cuts bring nothing back.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{CrashMode, Fs, MemFs};
use strata::{Db, ErrorKind, ReadOptions, WriteBatch};
use strata_testkit::configs::{configs, named, Config};
use strata_testkit::rng::Rng;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn open(config: &Config, fs: &Arc<dyn Fs>) -> Db {
    let opts = (config.build)(Path::new("/db"), fs.clone());
    Db::open("/db", opts).unwrap_or_else(|e| panic!("{}: open: {e}", config.name))
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:04}", i).into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    // Small and large: the stores separate values from 100 bytes in the named
    // configurations.
    let pad = if i.is_multiple_of(4) {
        300
    } else {
        (i % 30) as usize
    };
    format!("v{i}-{}", "p".repeat(pad)).into_bytes()
}

/// Checks every key of `m` (and a few more) by `get`, and the whole by a forward and a
/// reverse scan and by seeks, through `ro`.
fn check(db: &Db, m: &Model, ro: &ReadOptions, what: &str) {
    for i in (0..1_000).step_by(3) {
        let k = key(i);
        assert_eq!(
            db.get_opt(ro, &k)
                .unwrap_or_else(|e| panic!("{what}: get: {e}")),
            m.get(&k).cloned(),
            "{what}: get {}",
            String::from_utf8_lossy(&k)
        );
    }
    let fwd: Vec<(Vec<u8>, Vec<u8>)> = db
        .iter(ro.clone())
        .unwrap()
        .map(|r| r.unwrap_or_else(|e| panic!("{what}: forward scan: {e}")))
        .collect();
    let expect: Vec<(Vec<u8>, Vec<u8>)> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(fwd.len(), expect.len(), "{what}: forward scan length");
    assert!(fwd == expect, "{what}: forward scan");
    let mut it = db.iter(ro.clone()).unwrap();
    it.seek_to_last();
    let mut back = Vec::new();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    back.reverse();
    assert!(back == expect, "{what}: reverse scan");
    for i in (0..1_000).step_by(97) {
        let k = key(i);
        let mut it = db.iter(ro.clone()).unwrap();
        it.seek(&k);
        let want = m.range(k.clone()..).next();
        assert_eq!(
            it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
            want.map(|(k, v)| (k.clone(), v.clone())),
            "{what}: seek {}",
            String::from_utf8_lossy(&k)
        );
        it.seek_for_prev(&k);
        let want = m.range(..=k.clone()).next_back();
        assert_eq!(
            it.valid().then(|| (it.key().to_vec(), it.value().to_vec())),
            want.map(|(k, v)| (k.clone(), v.clone())),
            "{what}: seek_for_prev {}",
            String::from_utf8_lossy(&k)
        );
    }
}

/// `n` random writes: puts, deletes and range deletions (some empty, some wide), some of
/// them in one batch with puts before and after, applied to `m` too.
fn workload(db: &Db, m: &mut Model, rng: &mut Rng, from: u64, n: u64) {
    for i in from..from + n {
        let k = key(rng.below(1_000));
        match rng.below(40) {
            0..=2 => {
                db.delete(&k).unwrap();
                m.remove(&k);
            }
            3 => {
                let a = rng.below(1_000);
                let span = if rng.below(4) == 0 { 400 } else { 30 };
                let b = (a + rng.below(span)).min(1_000);
                db.delete_range(key(a), key(b)).unwrap();
                let doomed: Vec<Vec<u8>> =
                    m.range(key(a)..key(b)).map(|(k, _)| k.clone()).collect();
                for d in doomed {
                    m.remove(&d);
                }
            }
            4 => {
                // A batch: a put the deletion covers, the deletion, a put it would cover
                // had it come first.
                let a = rng.below(990);
                let mut b = WriteBatch::new();
                b.put(key(a + 1), value(i));
                b.delete_range(key(a), key(a + 8));
                b.put(key(a + 2), value(i + 1));
                db.write(&Default::default(), b).unwrap();
                let doomed: Vec<Vec<u8>> = m
                    .range(key(a)..key(a + 8))
                    .map(|(k, _)| k.clone())
                    .collect();
                for d in doomed {
                    m.remove(&d);
                }
                m.insert(key(a + 2), value(i + 1));
            }
            _ => {
                db.put(&k, value(i)).unwrap();
                m.insert(k, value(i));
            }
        }
    }
}

#[test]
fn deleted_ranges_are_never_read_again_under_every_config() {
    for config in configs() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let mut db = open(&config, &fs);
        let mut m = Model::new();
        let mut rng = Rng::new(11);
        let ro = ReadOptions::default();
        let mut snaps = Vec::new();
        for step in 0..8u64 {
            workload(&db, &mut m, &mut rng, step * 1_500, 1_500);
            let what = format!("{} step {step}", config.name);
            check(&db, &m, &ro, &what);
            if step % 3 == 1 {
                snaps.push((db.snapshot(), m.clone()));
            }
            match step % 4 {
                0 => db.flush().unwrap(),
                1 => db.compact_range(None, None).unwrap(),
                2 => {
                    snaps.clear();
                    db.close().unwrap();
                    db = open(&config, &fs);
                }
                _ => db.compact_range(Some(&key(200)), Some(&key(700))).unwrap(),
            }
            check(&db, &m, &ro, &format!("{what}, after"));
            for (j, (s, sm)) in snaps.iter().enumerate() {
                let at = ReadOptions {
                    snapshot: Some(s.clone()),
                    ..Default::default()
                };
                check(&db, sm, &at, &format!("{what}, snapshot {j}"));
            }
        }
        // With no snapshot left, a full compaction drops every covered entry, and the
        // tombstones with them.
        snaps.clear();
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        check(&db, &m, &ro, &format!("{}: compacted", config.name));
        let held = db.property("strata.range-tombstones").unwrap();
        // (The hash store judges records by its own files, which say nothing of range
        // deletions: its versions keep them for its GC, out of the read path, until it
        // has collected every file older than them.)
        if !config.name.contains("hashkv") {
            assert_eq!(held, "0 in 0 files", "{}", config.name);
        } else {
            assert!(held.starts_with("0 in 0 files"), "{}: {held}", config.name);
        }
        db.close().unwrap();
        let db = open(&config, &fs);
        check(&db, &m, &ro, &format!("{}: reopened", config.name));
        db.close().unwrap();
    }
}

#[test]
fn a_range_deletion_is_checked_and_an_empty_one_deletes_nothing() {
    let config = named("default");
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = open(&config, &fs);
    db.put(b"b", b"1").unwrap();
    let e = db.delete_range(b"c", b"a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    db.delete_range(b"b", b"b").unwrap();
    assert_eq!(db.get(b"b").unwrap(), Some(b"1".to_vec()));
    // The end is exclusive, the start inclusive.
    db.put(b"c", b"2").unwrap();
    db.delete_range(b"b", b"c").unwrap();
    assert_eq!(db.get(b"b").unwrap(), None);
    assert_eq!(db.get(b"c").unwrap(), Some(b"2".to_vec()));
    // Empty keys and a range reaching past every key.
    db.put(b"", b"e").unwrap();
    db.delete_range(b"", b"\xff\xff").unwrap();
    assert_eq!(db.get(b"").unwrap(), None);
    assert_eq!(db.get(b"c").unwrap(), None);
    let e = db.delete_range(b"a", vec![b'z'; 70_000]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    db.close().unwrap();
}

#[test]
fn a_power_cut_keeps_every_synced_range_deletion() {
    for name in [
        "default", "wisckey", "hashkv", "matrixkv", "ohdb-2dc", "cleveldb",
    ] {
        let config = named(name);
        let mem = Arc::new(MemFs::new());
        let fs: Arc<dyn Fs> = mem.clone();
        let db = open(&config, &fs);
        let mut m = Model::new();
        let mut rng = Rng::new(3);
        workload(&db, &mut m, &mut rng, 0, 2_000);
        db.flush().unwrap();
        workload(&db, &mut m, &mut rng, 2_000, 2_000);
        // Synced: a deletion of a wide range over flushed and unflushed keys.
        db.write(
            &strata::WriteOptions {
                sync: true,
                ..Default::default()
            },
            {
                let mut b = WriteBatch::new();
                b.delete_range(key(100), key(600));
                b
            },
        )
        .unwrap();
        let doomed: Vec<Vec<u8>> = m
            .range(key(100)..key(600))
            .map(|(k, _)| k.clone())
            .collect();
        for d in doomed {
            m.remove(&d);
        }
        let cut = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
        drop(db);
        let (mem, fs): (Arc<MemFs>, Arc<dyn Fs>) = (cut.clone(), cut);
        let db = open(&config, &fs);
        for i in 100..600 {
            assert_eq!(db.get(key(i)).unwrap(), None, "{name}: {i} came back");
        }
        // Flushed, compacted, reopened: still gone.
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        db.close().unwrap();
        let fs: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
        let db = open(&config, &fs);
        for i in 100..600 {
            assert_eq!(db.get(key(i)).unwrap(), None, "{name}: {i} came back");
        }
        db.close().unwrap();
    }
}

#[test]
fn a_repair_keeps_flushed_range_deletions() {
    for name in ["default", "wisckey", "hashkv", "ohdb-2dc"] {
        let config = named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = open(&config, &fs);
        for i in 0..500 {
            db.put(key(i), value(i)).unwrap();
        }
        db.flush().unwrap();
        db.delete_range(key(50), key(450)).unwrap();
        db.put(key(60), b"after").unwrap();
        db.flush().unwrap();
        // One in the WAL only.
        db.put(key(470), b"late").unwrap();
        db.delete_range(key(460), key(480)).unwrap();
        db.put(key(475), b"later").unwrap();
        db.close().unwrap();
        // Lose the manifest: a repair rebuilds it from the files.
        for f in fs.list(Path::new("/db")).unwrap() {
            if f.starts_with("MANIFEST-") || f == "CURRENT" {
                fs.remove(&Path::new("/db").join(f)).unwrap();
            }
        }
        let opts = (config.build)(Path::new("/db"), fs.clone());
        strata::repair("/db", &opts).unwrap_or_else(|e| panic!("{name}: repair: {e}"));
        let db = open(&config, &fs);
        for i in 0..500 {
            let want = match i {
                60 => Some(b"after".to_vec()),
                475 => Some(b"later".to_vec()),
                50..450 | 460..480 => None,
                _ => Some(value(i)),
            };
            assert_eq!(db.get(key(i)).unwrap(), want, "{name}: {i}");
        }
        db.close().unwrap();
    }
}

#[test]
fn checkpoints_and_backups_keep_range_deletions() {
    for config in configs() {
        let name = config.name;
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = open(&config, &fs);
        let mut m = Model::new();
        let mut rng = Rng::new(5);
        workload(&db, &mut m, &mut rng, 0, 1_500);
        db.flush().unwrap();
        // One flushed, one still in the memtable when the copies are taken.
        for (a, b) in [(100, 300), (600, 650)] {
            db.delete_range(key(a), key(b)).unwrap();
            let doomed: Vec<Vec<u8>> = m.range(key(a)..key(b)).map(|(k, _)| k.clone()).collect();
            for d in doomed {
                m.remove(&d);
            }
            if a == 100 {
                db.flush().unwrap();
            }
        }
        db.checkpoint("/cp").unwrap();
        let engine = strata::BackupEngine::open_in("/backups", fs.clone()).unwrap();
        let info = engine.create_backup(&db).unwrap();
        db.close().unwrap();
        engine.restore(info.id, "/restored").unwrap();
        for dir in ["/cp", "/restored"] {
            let opts = (config.build)(Path::new(dir), fs.clone());
            let copy = Db::open(dir, opts).unwrap_or_else(|e| panic!("{name}: {dir}: {e}"));
            check(
                &copy,
                &m,
                &ReadOptions::default(),
                &format!("{name}: {dir}"),
            );
            copy.close().unwrap();
        }
    }
}

#[test]
fn seeks_skip_covered_runs_only_where_nothing_newer_lies() {
    for name in ["default", "matrixkv", "ohdb-l0p", "cleveldb", "hashkv"] {
        let config = named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = open(&config, &fs);
        for i in 0..3_000 {
            db.put(key(i), value(i)).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        let before = db.snapshot();
        db.delete_range(key(100), key(2_900)).unwrap();
        db.flush().unwrap();
        let first_at = |ro: ReadOptions, target: u64| {
            let mut it = db.iter(ro).unwrap();
            it.seek(&key(target));
            let got = it.valid().then(|| it.key().to_vec());
            it.status().unwrap();
            got
        };
        let plain = || ReadOptions::default();
        assert_eq!(first_at(plain(), 200), Some(key(2_900)), "{name}");
        // A key written after the deletion, in the memtable, then flushed: found.
        db.put(key(1_500), b"new").unwrap();
        assert_eq!(first_at(plain(), 200), Some(key(1_500)), "{name}: memtable");
        db.flush().unwrap();
        assert_eq!(first_at(plain(), 200), Some(key(1_500)), "{name}: flushed");
        assert_eq!(
            first_at(plain(), 1_501),
            Some(key(2_900)),
            "{name}: past it"
        );
        // An upper bound inside the covered run ends the scan there.
        let bounded = ReadOptions {
            upper_bound: Some(key(1_000)),
            ..Default::default()
        };
        assert_eq!(first_at(bounded, 200), None, "{name}: bounded");
        // One iterator, seeks back and forth, then a step back across the run.
        let mut it = db.iter(plain()).unwrap();
        for target in [2_000, 150, 1_600, 120] {
            it.seek(&key(target));
            let want = if target <= 1_500 { 1_500 } else { 2_900 };
            assert_eq!(it.key(), key(want), "{name}: seek {target}");
        }
        it.seek(&key(2_900));
        it.prev();
        assert_eq!(it.key(), key(1_500), "{name}: prev");
        it.prev();
        assert_eq!(it.key(), key(99), "{name}: prev over the run");
        it.next();
        assert_eq!(it.key(), key(1_500), "{name}: next again");
        // The snapshot from before reads every key.
        let at = ReadOptions {
            snapshot: Some(before.clone()),
            ..Default::default()
        };
        assert_eq!(first_at(at, 200), Some(key(200)), "{name}: snapshot");
        db.close().unwrap();
    }
}

/// The range-tombstone files in `dir`.
fn range_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rdel"))
        .collect();
    v.sort();
    v
}

/// Reads never use a range-tombstone file (the manifest holds its tombstones), so one that
/// is missing or cut short does not stop an open, which writes it again from the manifest's
/// copy; `strata check` reports one damaged in place, and a repair reads the manifest's
/// copy of one that does not read or is gone, so no deleted key comes back.
#[test]
fn a_missing_or_damaged_range_file_is_rebuilt_from_the_manifest() {
    let dir = strata_testkit::TempDir::new("rdel-damage");
    let db_dir = dir.path().join("db");
    let opts = strata::Options::default;
    {
        let db = Db::open(&db_dir, opts()).unwrap();
        for i in 0..300 {
            db.put(key(i), value(i)).unwrap();
        }
        db.flush().unwrap();
        db.delete_range(key(100), key(200)).unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    let files = range_files(&db_dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let rdel = files[0].clone();
    let whole = std::fs::read(&rdel).unwrap();
    let reads_right = |what: &str| {
        let db = Db::open(&db_dir, opts()).unwrap_or_else(|e| panic!("{what}: open: {e}"));
        for i in 0..300 {
            let want = (!(100..200).contains(&i)).then(|| value(i));
            assert_eq!(db.get(key(i)).unwrap(), want, "{what}: {i}");
        }
        db.close().unwrap();
        assert_eq!(
            std::fs::read(&rdel).unwrap(),
            whole,
            "{what}: not rewritten"
        );
    };
    std::fs::remove_file(&rdel).unwrap();
    reads_right("removed");
    std::fs::write(&rdel, &whole[..whole.len() / 2]).unwrap();
    reads_right("cut short");

    // Damaged in place (the same size): open does not read it; check does.
    let mut bad = whole.clone();
    bad[10] ^= 0x40;
    std::fs::write(&rdel, &bad).unwrap();
    let problems = strata::inspect::check(&db_dir, &opts(), &mut Vec::new()).unwrap();
    assert!(
        problems.iter().any(|p| p.file == rdel),
        "check missed the damaged range file: {problems:?}"
    );
    // A repair without the file's tombstones would bring 100..200 back.
    strata::repair(&db_dir, &opts()).unwrap();
    let db = Db::open(&db_dir, opts()).unwrap();
    for i in 0..300 {
        let want = (!(100..200).contains(&i)).then(|| value(i));
        assert_eq!(db.get(key(i)).unwrap(), want, "after repair: {i}");
    }
    db.close().unwrap();
}

/// An open that drops a damaged last manifest record keeps the files it may have named
/// (here a flush's table and range-tombstone file) for a repair; the database never gives
/// out their sequences again, so the kept range deletion, merged back by the repair, does
/// not cover keys written after that open.
#[test]
fn a_kept_range_deletion_never_covers_a_later_write() {
    let dir = strata_testkit::TempDir::new("rdel-kept");
    let db_dir = dir.path().join("db");
    let opts = strata::Options::default;
    {
        let db = Db::open(&db_dir, opts()).unwrap();
        for i in 0..300 {
            db.put(key(i), value(i)).unwrap();
        }
        db.delete_range(key(100), key(200)).unwrap();
        db.flush().unwrap();
        db.close().unwrap();
    }
    // The flush's edit made the last record, and damaged.
    strata_testkit::damage::last_flush_record(&db_dir);
    {
        let db = Db::open(&db_dir, opts()).unwrap();
        assert!(db
            .property("strata.kept-files")
            .unwrap()
            .starts_with("2 file(s) kept"));
        for i in 150..160 {
            db.put(key(i), b"later").unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    strata::repair(&db_dir, &opts()).unwrap();
    let db = Db::open(&db_dir, opts()).unwrap();
    for i in 0..300 {
        let want = match i {
            150..160 => Some(b"later".to_vec()),
            100..200 => None,
            _ => Some(value(i)),
        };
        assert_eq!(db.get(key(i)).unwrap(), want, "{i}");
    }
    db.close().unwrap();
}

/// A batch that holds only empty ranges writes nothing (and marks nothing).
#[test]
fn an_empty_range_adds_no_entry() {
    let mut b = WriteBatch::new();
    b.delete_range(b"k", b"k");
    assert_eq!(b.len(), 0);
    b.delete_range(b"a", b"b");
    assert_eq!(b.len(), 1);
}

/// A flush that fails before its tables take their names leaves no range-tombstone file a
/// repair would apply without the rest of its batch: after a power cut that tears the
/// WAL's unsynced tail, the batch's range deletion and its put are both there or both
/// gone. (Two things hold it: the file keeps a temporary name until the tables take
/// theirs, which is all a crash in between leaves, and the obsolete list names a failed
/// flush's files.)
#[test]
fn a_failed_flush_names_no_range_file_a_repair_would_apply_alone() {
    use strata::fs::{FaultFs, FaultRule, FsOp};
    let mut torn = 0;
    for seed in 0..64 {
        let config = named("default");
        let faults = Arc::new(FaultFs::new(MemFs::new()));
        let fs: Arc<dyn Fs> = faults.clone();
        let db = open(&config, &fs);
        for i in 0..300 {
            db.put(key(i), value(i)).unwrap();
        }
        db.flush().unwrap();
        let mut b = WriteBatch::new();
        b.put(b"zzz", b"new");
        b.delete_range(key(100), key(200));
        db.write(&Default::default(), b).unwrap();
        faults.inject(FaultRule::always(FsOp::Rename).on_paths(".sst"));
        assert!(db.flush().is_err(), "the flush's rename was to fail");
        let image = faults.crash_clone(CrashMode::TornTail { seed });
        drop(db);
        let fs: Arc<dyn Fs> = Arc::new(image);
        let opts = (config.build)(Path::new("/db"), fs.clone());
        strata::repair("/db", &opts).unwrap();
        let db = open(&config, &fs);
        let applied = db.get(b"zzz").unwrap().is_some();
        torn += usize::from(!applied);
        for i in 0..300 {
            let want = (!applied || !(100..200).contains(&i)).then(|| value(i));
            assert_eq!(
                db.get(key(i)).unwrap(),
                want,
                "seed {seed}: {i} (batch applied: {applied})"
            );
        }
        db.close().unwrap();
    }
    assert!(torn > 0, "no kill tore the batch off");
}

/// Range deletions in the WAL are honoured by a read-only open (which flushes nothing), and
/// flushed ones survive an L0 layout migration (L0, with its range-tombstone file, compacted
/// into L1 at open) either way.
#[test]
fn read_only_opens_and_layout_migrations_keep_range_deletions() {
    use strata::{L0Layout, Options};
    let mem: Arc<dyn Fs> = Arc::new(MemFs::new());
    let opts = |layout| Options {
        fs: mem.clone(),
        l0_layout: layout,
        migrate_l0_layout: true,
        ..Options::default()
    };
    let mut m = Model::new();
    let forget = |m: &mut Model, a: u64, b: u64| {
        let doomed: Vec<Vec<u8>> = m.range(key(a)..key(b)).map(|(k, _)| k.clone()).collect();
        for d in doomed {
            m.remove(&d);
        }
    };
    {
        let db = Db::open("/db", opts(L0Layout::Flat)).unwrap();
        for i in 0..400 {
            db.put(key(i), value(i)).unwrap();
            m.insert(key(i), value(i));
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        // In L0 (with its range-tombstone file) over L1.
        db.delete_range(key(100), key(300)).unwrap();
        forget(&mut m, 100, 300);
        db.put(key(150), b"after").unwrap();
        m.insert(key(150), b"after".to_vec());
        db.flush().unwrap();
        // Only in the WAL.
        db.delete_range(key(340), key(360)).unwrap();
        forget(&mut m, 340, 360);
        db.put(key(350), b"late").unwrap();
        m.insert(key(350), b"late".to_vec());
        // Dropped without a close: the WAL is what holds the last writes.
        drop(db);
    }
    {
        let ro = Db::open_read_only("/db", opts(L0Layout::Flat)).unwrap();
        check(&ro, &m, &ReadOptions::default(), "read-only");
        ro.close().unwrap();
    }
    for layout in [L0Layout::Buckets, L0Layout::Flat] {
        let db = Db::open("/db", opts(layout)).unwrap();
        check(
            &db,
            &m,
            &ReadOptions::default(),
            &format!("migrated to {layout:?}"),
        );
        db.flush().unwrap();
        db.close().unwrap();
    }
    let db = Db::open("/db", opts(L0Layout::Flat)).unwrap();
    db.compact_range(None, None).unwrap();
    check(&db, &m, &ReadOptions::default(), "compacted");
    db.close().unwrap();
}
