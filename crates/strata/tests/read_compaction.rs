//! Read-triggered compaction (`Options::read_compaction_bytes`): reads that search a table of
//! an upper sorted level in vain charge it; once a table's charges reach its allowance it is
//! compacted into the next level, leaving fewer levels for reads, and nothing is lost.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata::fs::MemFs;
use strata::{Db, Options, ReadOptions};
use strata_testkit::model::assert_db_matches;

fn prop(db: &Db, name: &str) -> usize {
    db.property(name).unwrap().parse().unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// A database with every key of `0..n` in L2 (older values) and every 4th key again in L1
/// (newer values): reads of the other keys search an L1 table in vain.
fn two_levels(read_compaction_bytes: u64) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>, u32) {
    two_levels_with(read_compaction_bytes, |o| o)
}

/// [`two_levels`], with options changed by `tweak`.
fn two_levels_with(
    read_compaction_bytes: u64,
    tweak: fn(Options) -> Options,
) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>, u32) {
    let fs = Arc::new(MemFs::new());
    let opts = |level_base: u64| {
        tweak(Options {
            write_buffer_size: 256 << 10,
            target_file_size_base: 32 << 10,
            max_bytes_for_level_base: level_base,
            level0_file_num_compaction_trigger: 1,
            num_levels: 3,
            read_compaction_bytes,
            fs: fs.clone(),
            ..Options::default()
        })
    };
    let mut model = BTreeMap::new();
    let n = 4000u32;
    {
        // A small L1 target sends most of it on to L2.
        let db = Db::open("/db", opts(64 << 10)).unwrap();
        put_all(&db, &mut model, 0..n, old);
        wait_until(&db, "L0 and L1 drained", |db| {
            prop(db, "strata.num-files-at-level0") == 0
                && prop(db, "strata.num-running-compactions") == 0
                && db.stats().bytes_per_level[1] <= 64 << 10
        });
        db.close().unwrap();
    }
    let db = Db::open("/db", opts(64 << 20)).unwrap();
    // The newer values go to L1 (L0 is compacted at one file).
    put_all(&db, &mut model, (0..n).step_by(4), |i| {
        format!("new{i}").repeat(10).into_bytes()
    });
    wait_until(&db, "L0 compacted", |db| {
        prop(db, "strata.num-files-at-level0") == 0
            && prop(db, "strata.num-running-compactions") == 0
    });
    (db, model, n)
}

/// Puts `value(i)` under `key(i)` for each of `keys`, in the database and the model, then
/// flushes.
fn put_all(
    db: &Db,
    model: &mut BTreeMap<Vec<u8>, Vec<u8>>,
    keys: impl Iterator<Item = u32>,
    value: impl Fn(u32) -> Vec<u8>,
) {
    for i in keys {
        let v = value(i);
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.flush().unwrap();
}

fn old(i: u32) -> Vec<u8> {
    format!("old{i}").repeat(12).into_bytes()
}

/// Files in L1 and L2.
fn levels(db: &Db) -> (usize, usize) {
    (
        prop(db, "strata.num-files-at-level1"),
        prop(db, "strata.num-files-at-level2"),
    )
}

fn wait_until(db: &Db, what: &str, done: impl Fn(&Db) -> bool) {
    let t = Instant::now();
    while !done(db) {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}: levels {}",
            db.property("strata.levels").unwrap()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until read-triggered compactions moved every L1 table down.
/// Runs `reads` on a database with tables in L1 and L2 and checks they started no read
/// compaction (`why` says why they should not) and lost nothing.
fn reads_compact_nothing(
    db: &Db,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    why: &str,
    reads: impl FnOnce(),
) {
    let before = levels(db);
    assert!(before.0 > 0 && before.1 > 0, "setup: {before:?}");
    reads();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(db.stats().read_compactions, 0, "{why}");
    assert_eq!(levels(db), before);
    assert_db_matches(db, model);
}

/// Runs `reads` in rounds (at least three, at most 20) until read-triggered compactions
/// have emptied L1, and waits for them to finish. Where setup cut the tables depends on
/// timing: an L1 table over few keys needs more rounds to reach its allowance, and under
/// load setup may cut an L1 table that `reads` never charge (one holding only rewritten
/// keys: reads find them there, never in vain). So what is left in L1 must be what
/// `reads` do not charge: one more round starts no read compaction.
fn push_l1_down(db: &Db, reads: impl Fn()) {
    let l1 = levels(db).0;
    for round in 0..20 {
        reads();
        if round >= 2 && levels(db).0 == 0 {
            break;
        }
    }
    wait_until(db, "read-triggered compactions to finish", |db| {
        db.stats().read_compactions > 0 && prop(db, "strata.num-running-compactions") == 0
    });
    let left = levels(db).0;
    assert!(left < l1, "L1 kept all {l1} tables");
    if left > 0 {
        let before = db.stats().read_compactions;
        reads();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            db.stats().read_compactions,
            before,
            "L1 tables left ({left}) that the reads charge"
        );
    }
}

/// `ReadCharging::InVain` charges every L1 table a get searched before going deeper, the
/// tables whose filter ruled the key out included.
#[test]
fn point_reads_push_a_shadowing_level_down() {
    let (db, model, n) = two_levels_with(16 << 10, |o| Options {
        read_charging: strata::ReadCharging::InVain,
        ..o
    });
    let (l1, l2) = levels(&db);
    assert!(l1 > 0 && l2 > 0, "setup: L1 {l1} L2 {l2} files");
    assert_eq!(db.stats().read_compactions, 0);
    // Keys not rewritten live only in L2: each read searches an L1 table in vain.
    push_l1_down(&db, || {
        for i in (0..n).filter(|i| i % 4 != 0) {
            assert_eq!(db.get(key(i)).unwrap(), Some(old(i)));
        }
    });
    assert!(db
        .property("strata.stats")
        .unwrap()
        .contains("read-triggered compactions"));
    assert_db_matches(&db, &model);
}

/// `ReadCharging::BlockInVain` charges only tables searched past their filter: with filters
/// the misses through L1 cost no block and L1 stays; without filters they read a block in
/// vain each, and L1 goes down.
#[test]
fn block_in_vain_charges_only_tables_the_filter_let_in() {
    let read_all = |db: &Db, n: u32| {
        for _ in 0..3 {
            for i in (0..n).filter(|i| i % 4 != 0) {
                assert_eq!(db.get(key(i)).unwrap(), Some(old(i)));
            }
        }
    };
    // The default.
    let (db, model, n) = two_levels(16 << 10);
    assert_eq!(
        Options::default().read_charging,
        strata::ReadCharging::BlockInVain
    );
    reads_compact_nothing(&db, &model, "filtered misses charge nothing", || {
        read_all(&db, n)
    });
    let (db, model, n) = two_levels_with(16 << 10, |o| Options {
        read_charging: strata::ReadCharging::BlockInVain,
        bloom_bits_per_key: 0,
        ..o
    });
    push_l1_down(&db, || read_all(&db, n));
    assert_db_matches(&db, &model);
}

#[test]
fn iterator_seeks_push_a_shadowing_level_down() {
    let (db, model, n) = two_levels(16 << 10);
    let (l1, l2) = levels(&db);
    assert!(l1 > 0 && l2 > 0, "setup: L1 {l1} L2 {l2} files");
    push_l1_down(&db, || {
        for i in (0..n).step_by(3) {
            let mut it = db.iter(ReadOptions::default()).unwrap();
            it.seek(&key(i));
            assert!(it.valid(), "key {i}");
            assert_eq!(it.key(), key(i).as_slice());
        }
    });
    assert_db_matches(&db, &model);
}

/// Seeks over tables read with `pread` (past memory) charge nothing by default
/// (`SeekCharging::WhileMapped`), and charge as over maps with `SeekCharging::Always`.
#[test]
fn seeks_past_memory_charge_only_when_told_to() {
    let seek_all = |db: &Db, n: u32| {
        for _ in 0..3 {
            for i in (0..n).step_by(3) {
                let mut it = db.iter(ReadOptions::default()).unwrap();
                it.seek(&key(i));
                assert_eq!(it.key(), key(i).as_slice());
            }
        }
    };
    let (db, model, n) = two_levels_with(16 << 10, |o| Options {
        table_reads: Some(strata::fs::ReadAccess::Positional),
        ..o
    });
    assert_eq!(
        db.property("strata.table-reads").unwrap(),
        "Positional",
        "setup"
    );
    reads_compact_nothing(&db, &model, "seeks past memory charge nothing", || {
        seek_all(&db, n)
    });
    let (db, model, n) = two_levels_with(16 << 10, |o| Options {
        table_reads: Some(strata::fs::ReadAccess::Positional),
        seek_charging: strata::SeekCharging::Always,
        ..o
    });
    push_l1_down(&db, || seek_all(&db, n));
    assert_db_matches(&db, &model);
}

#[test]
fn disabled_means_reads_never_compact() {
    let (db, model, n) = two_levels(0);
    let before = levels(&db);
    for _ in 0..3 {
        for i in 0..n {
            db.get(key(i)).unwrap();
            let mut it = db.iter(ReadOptions::default()).unwrap();
            it.seek(&key(i));
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(prop(&db, "strata.num-running-compactions"), 0);
    assert_eq!(levels(&db), before);
    assert_eq!(db.stats().read_compactions, 0);
    assert_db_matches(&db, &model);
}

#[test]
fn iterator_seeks_push_l0_down_below_its_count_trigger() {
    let opts = Options {
        write_buffer_size: 256 << 10,
        level0_file_num_compaction_trigger: 8,
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    };
    let db = Db::open("/db", opts).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..3u32 {
        put_all(&db, &mut model, (round..2000).step_by(3), old);
    }
    assert_eq!(prop(&db, "strata.num-files-at-level0"), 3);
    // Point reads leave L0 alone (its filters make a miss cheap)...
    for i in 0..2000 {
        db.get(key(i)).unwrap();
    }
    assert_eq!(prop(&db, "strata.num-files-at-level0"), 3);
    // ...seeks, which position a source in every L0 table, push it down.
    for _ in 0..2 {
        for i in 0..2000 {
            let mut it = db.iter(ReadOptions::default()).unwrap();
            it.seek(&key(i));
        }
    }
    wait_until(&db, "L0 pushed down by seeks", |db| {
        prop(db, "strata.num-files-at-level0") == 0
            && prop(db, "strata.num-running-compactions") == 0
    });
    assert!(db.stats().read_compactions > 0);
    assert_db_matches(&db, &model);
}

/// Three overlapping L0 tables below their count trigger, with every key in the model.
fn three_l0_tables(opts: Options) -> (Db, BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = Db::open("/db", opts).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..3u32 {
        put_all(&db, &mut model, (round..2000).step_by(3), old);
    }
    assert_eq!(prop(&db, "strata.num-files-at-level0"), 3);
    (db, model)
}

#[test]
fn first_of_several_charging_lets_point_reads_push_l0_down() {
    // LevelDB's and HyperLevelDB's rule: a get that searched two tables charges the first,
    // L0 included.
    let (db, model) = three_l0_tables(Options {
        write_buffer_size: 256 << 10,
        level0_file_num_compaction_trigger: 8,
        read_charging: strata::ReadCharging::FirstOfSeveral,
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    });
    for _ in 0..3 {
        for i in 0..2000 {
            db.get(key(i)).unwrap();
        }
    }
    wait_until(&db, "L0 pushed down by gets", |db| {
        prop(db, "strata.num-files-at-level0") == 0
            && prop(db, "strata.num-running-compactions") == 0
    });
    assert!(db.stats().read_compactions > 0);
    assert_db_matches(&db, &model);
}

#[test]
fn read_compactions_wait_for_reads_in_a_row() {
    let (db, model) = three_l0_tables(Options {
        write_buffer_size: 256 << 10,
        level0_file_num_compaction_trigger: 8,
        read_charging: strata::ReadCharging::FirstOfSeveral,
        read_compaction_min_straight_reads: 10,
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    });
    // Every 10th read is followed by a write: never more than 10 reads in a row, so the
    // charged tables stay in L0.
    for round in 0..3 {
        for i in 0..2000u32 {
            db.get(key(i)).unwrap();
            if i % 10 == 9 {
                db.put(b"zzz-writer", format!("{round}-{i}")).unwrap();
            }
        }
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(prop(&db, "strata.num-files-at-level0"), 3);
    assert_eq!(db.stats().read_compactions, 0);
    // Eleven reads in a row let them run.
    for i in 0..11 {
        db.get(key(i)).unwrap();
    }
    wait_until(&db, "L0 pushed down after straight reads", |db| {
        prop(db, "strata.num-files-at-level0") == 0
            && prop(db, "strata.num-running-compactions") == 0
    });
    let mut model = model;
    model.insert(b"zzz-writer".to_vec(), b"2-1999".to_vec());
    assert_db_matches(&db, &model);
}
