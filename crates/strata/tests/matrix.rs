//! MatrixKV's matrix container end to end (docs/design/matrixkv.md): rows in a
//! persistent-memory region, the receiver turning into the compactor, column compactions
//! into L1, and reads that honour deletes and snapshots through column cuts (MatrixKV's
//! public code returned deleted keys).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::{Db, ErrorKind, L0Layout, Options, ReadOptions};
use strata_testkit::model::assert_db_matches;

/// The testkit's `matrixkv` configuration (a 1 MiB container of 64 KiB rows in
/// `/db/pmem`), as the model suites run it.
fn opts(fs: &Arc<dyn Fs>) -> Options {
    named("matrixkv", fs)
}

/// The testkit's configuration `name`.
fn named(name: &str, fs: &Arc<dyn Fs>) -> Options {
    (strata_testkit::configs::named(name).build)(Path::new("/db"), fs.clone())
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:06}", (i * 7919) % 5000).into_bytes()
}

/// Every key of the key space read by `get`, deleted ones too (a model check through a scan
/// and gets of live keys would miss a deleted key coming back).
fn check_gets(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, ctx: &str) {
    for i in 0..5000u64 {
        let k = key(i);
        assert_eq!(
            db.get(&k).unwrap().as_ref(),
            model.get(&k),
            "{ctx}: get {k:?}"
        );
    }
}

fn stat(db: &Db, name: &str) -> String {
    db.property(name).unwrap_or_default()
}

/// Writes, overwrites and deletes through several compactor generations, with a snapshot
/// held across them: the database matches a model, the snapshot still sees what it saw,
/// and the matrix was really used (rows written, columns compacted, pages reused).
#[test]
fn matrix_matches_a_model_through_column_compactions_and_snapshots() {
    model_through_column_compactions("matrixkv");
}

/// The same with a Bloom filter per row: filters built by the flushes, then (reopened)
/// from the rows in the region.
#[test]
fn matrix_with_row_filters_matches_the_model() {
    model_through_column_compactions("matrixkv-bloom");
}

fn model_through_column_compactions(config: &str) {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let opts = |fs: &Arc<dyn Fs>| named(config, fs);
    let db = Db::open("/db", opts(&fs)).unwrap();
    assert_eq!(stat(&db, "strata.l0-layout"), "Matrix");
    let mut model = BTreeMap::new();
    let mut snap_model = None;
    let mut snap = None;
    for i in 0..40_000u64 {
        let k = key(i);
        if i % 7 == 3 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = format!("value-{i}-{}", "x".repeat((i % 200) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i == 12_000 {
            snap = Some(db.snapshot());
            snap_model = Some(model.clone());
        }
    }
    assert_db_matches(&db, &model);
    check_gets(&db, &model, "after the writes");
    let (snap, snap_model) = (snap.unwrap(), snap_model.unwrap());
    let at = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    for i in 0..5000u64 {
        let k = key(i);
        let got = db.get_opt(&at, &k).unwrap();
        assert_eq!(got.as_ref(), snap_model.get(&k), "snapshot read of {k:?}");
    }
    db.wait_for_compactions().unwrap();
    assert_db_matches(&db, &model);
    check_gets(&db, &model, "after compactions");
    let levels = stat(&db, "strata.levels");
    assert!(
        stat(&db, "strata.stats").contains("L0"),
        "stats: {}",
        stat(&db, "strata.stats")
    );
    eprintln!("{levels}\n{}", stat(&db, "strata.stats"));
    drop((snap, at));
    db.close().unwrap();
    // Reopened, the matrix is read from the region the manifest names.
    let db = Db::open("/db", opts(&fs)).unwrap();
    assert_db_matches(&db, &model);
    check_gets(&db, &model, "reopened");
    db.compact_range(None, None).unwrap();
    assert_db_matches(&db, &model);
    check_gets(&db, &model, "after compact_range");
}

/// A column compaction frees the pages of the entries it took from a compactor row, and
/// newer rows are written into them; a reopen then verifies that row from its first page
/// still held. (It verified the whole row, freed pages included, and a get after a reopen
/// could fail with "its entries fail their checksum": the kill loop found it.)
#[test]
fn a_reopen_verifies_a_partly_compacted_row_from_its_first_held_page() {
    reopens_read_partly_compacted_rows(0);
}

/// The same with a Bloom filter per row (preset `matrixkv-bloom`): after a reopen a row's
/// filter is rebuilt from the row, from its first live entry. (It was built from entry 0,
/// reading entries a column compaction took, whose pages newer rows reuse: a get after a
/// reopen failed with "RowTable N: entry M runs past the entries' end"; the kill loop
/// found it.)
#[test]
fn a_reopen_builds_a_partly_compacted_rows_filter_from_its_first_live_entry() {
    reopens_read_partly_compacted_rows(10);
}

fn reopens_read_partly_compacted_rows(matrix_row_bloom_bits: u32) {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut model = BTreeMap::new();
    let mut i = 0u64;
    for round in 0..40 {
        let o = Options {
            matrix_row_bloom_bits,
            ..opts(&fs)
        };
        let db = Db::open("/db", o).unwrap();
        check_gets(&db, &model, &format!("reopened before round {round}"));
        for _ in 0..1500 {
            let k = key(i);
            let v = format!("value-{i}-{}", "y".repeat((i % 300) as usize)).into_bytes();
            db.put(&k, &v).unwrap();
            model.insert(k, v);
            i += 1;
        }
        db.close().unwrap();
    }
}

/// An iterator keeps the rows it reads: while it lives, column compactions free their pages
/// in newer versions and new rows are written, but never into pages it may still read.
#[test]
fn an_iterator_reads_its_rows_while_columns_free_pages_and_new_rows_reuse_them() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).unwrap();
    let mut model = BTreeMap::new();
    // Small enough that the pages the iterator keeps leave room for the writes after it
    // (an iterator held while the container fills stops writes: docs/design/matrixkv.md).
    for i in 0..2_500u64 {
        let v = format!("first-{i}-{}", "y".repeat((i % 50) as usize)).into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut seen = Vec::new();
    // Half the iteration now, the rest after the matrix turned over several times.
    for _ in 0..model.len() / 2 {
        assert!(it.valid());
        seen.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    for i in 0..60_000u64 {
        db.put(key(i), format!("second-{i}")).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let stats = stat(&db, "strata.stats");
    let l0_merges: u64 = stats
        .lines()
        .find(|l| l.starts_with("L0 "))
        .and_then(|l| l.split_whitespace().nth(6))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(l0_merges >= 3, "column compactions ran meanwhile:\n{stats}");
    while it.valid() {
        seen.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    let expected: Vec<_> = model.into_iter().collect();
    assert_eq!(seen, expected);
}

/// Writes `entries` into a database opened with `o` and flushes them, closes it, and flips a
/// byte in the entries of page 0 (the first row's first page).
fn write_then_damage_first_row(
    mem: &MemFs,
    o: &Options,
    entries: impl Iterator<Item = (Vec<u8>, Vec<u8>)>,
) {
    let db = Db::open("/db", o.clone()).unwrap();
    for (k, v) in entries {
        db.put(k, v).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    mem.corrupt(Path::new("/db/pmem/matrix.pmem"), 100, |b| b[0] ^= 0x40)
        .unwrap();
}

/// A damaged byte in a row is reported as corruption naming the row, never a panic or a
/// wrong answer.
#[test]
fn a_damaged_row_is_corruption() {
    let mem = Arc::new(MemFs::new());
    let fs: Arc<dyn Fs> = mem.clone();
    let o = Options {
        // One row, never compacted: its bytes stay where the first flush put them.
        matrix_receiver_percent: 90,
        ..opts(&fs)
    };
    write_then_damage_first_row(
        &mem,
        &o,
        (0..500u64).map(|i| (key(i), format!("value-{i}").into_bytes())),
    );
    let db = Db::open("/db", o).unwrap();
    let err = (0..500u64)
        .find_map(|i| db.get(key(i)).err())
        .expect("a read of the damaged row fails");
    assert_eq!(err.kind(), ErrorKind::Corruption, "{err}");
    assert!(err.to_string().contains("RowTable"), "{err}");
}

/// Options a matrix cannot work with are refused at open, naming the option.
#[test]
fn matrix_options_are_validated() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let refused = |o: Options, what: &str| {
        let err = Db::open("/db", o).map(drop).expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains(what), "{err}");
    };
    refused(
        Options {
            matrix_container_size: (1 << 20) + 100,
            ..opts(&fs)
        },
        "matrix_container_size",
    );
    refused(
        Options {
            matrix_container_size: 64 << 10,
            ..opts(&fs)
        },
        "matrix_container_size",
    );
    refused(
        Options {
            matrix_receiver_percent: 100,
            ..opts(&fs)
        },
        "matrix_receiver_percent",
    );
    refused(
        Options {
            max_mem_compaction_level: 2,
            ..opts(&fs)
        },
        "max_mem_compaction_level",
    );
    refused(
        Options {
            matrix_row_bloom_bits: 65,
            ..opts(&fs)
        },
        "matrix_row_bloom_bits",
    );
    refused(
        Options {
            wal_dir: Some("/db/wal".into()),
            ..opts(&fs)
        },
        "wal_in_pmem",
    );
    assert_eq!(opts(&fs).l0_layout, L0Layout::Matrix);
}

/// A damaged row in the compactor stops the database with the corruption: the column
/// cannot be cut, and writes must not wait for a container that never drains.
#[test]
fn a_damaged_compactor_row_stops_writes_with_the_corruption() {
    let mem = Arc::new(MemFs::new());
    let fs: Arc<dyn Fs> = mem.clone();
    let o = Options {
        // Rows pile up in the receiver (never switched at 90 %) ...
        matrix_receiver_percent: 90,
        write_stall_limit: Some(std::time::Duration::from_secs(5)),
        ..opts(&fs)
    };
    write_then_damage_first_row(
        &mem,
        &o,
        (0..4000u64).map(|i| (format!("k{i:06}").into_bytes(), vec![b'v'; 100])),
    );
    // ... until, reopened at 60 %, the next flush turns them into the compactor.
    let db = Db::open(
        "/db",
        Options {
            matrix_receiver_percent: 60,
            ..o
        },
    )
    .unwrap();
    let err = (0..200_000u64)
        .find_map(|i| db.put(format!("n{i:06}"), vec![b'w'; 100]).err())
        .expect("writes fail once the damaged row is to be compacted");
    assert!(err.to_string().contains("RowTable"), "{err}");
}

/// `o` with an L1 that holds everything (classic sizing, 256 MiB), so that a column,
/// which merges the L1 tables its key range overlaps, runs long: writers reach the
/// container's stop, or switch its receiver, meanwhile.
fn large_l1(o: Options) -> Options {
    Options {
        level_sizing: strata::LevelSizing::Classic,
        max_bytes_for_level_base: 256 << 20,
        ..o
    }
}

/// L0's bytes (the matrix's live rows).
fn l0_bytes(db: &Db) -> u64 {
    db.stats().bytes_per_level[0]
}

/// A matrix that goes idle (preset `matrixkv-idle`) drains its receiver into L1 however
/// little it holds, so reads at rest meet no rows; bursts of writes that resume during the
/// drain's first column (flushes adding rows, the receiver switching under it) lose
/// nothing, through a reopen.
#[test]
fn an_idle_matrix_drains_its_receiver_into_l1() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let o = named("matrixkv-idle", &fs);
    let db = Db::open("/db", o.clone()).unwrap();
    let mut model = BTreeMap::new();
    // A few rows, well below the receiver's switch point (60 % of 1 MiB).
    for i in 0..1500u64 {
        let (k, v) = (key(i), format!("first-{i}").into_bytes());
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.flush().unwrap();
    assert!(l0_bytes(&db) > 0, "the flush wrote a row");
    db.wait_for_compactions().unwrap();
    assert_eq!(
        l0_bytes(&db),
        0,
        "idle, the receiver drained: {}",
        stat(&db, "strata.stats")
    );
    assert!(db.stats().idle_compactions > 0);
    check_gets(&db, &model, "drained");
    // Bursts with pauses past the idle delay: drains start, and writes come back during
    // them.
    // Some bursts are long enough to reach the receiver's switch point while a drain's
    // first column runs.
    let mut n = 0u64;
    for burst in 0..40u64 {
        let len = if burst % 4 == 1 { 6000 } else { 1200 };
        for i in 0..len {
            n += 1;
            let k = key(n);
            if n % 11 == 5 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("burst-{burst}-{i}-{}", "y".repeat((n % 150) as usize));
                db.put(&k, v.as_bytes()).unwrap();
                model.insert(k, v.into_bytes());
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(3 + burst % 7));
    }
    assert_db_matches(&db, &model);
    check_gets(&db, &model, "after the bursts");
    db.wait_for_compactions().unwrap();
    assert_eq!(l0_bytes(&db), 0);
    check_gets(&db, &model, "drained again");
    eprintln!("{}", stat(&db, "strata.stats"));
    db.close().unwrap();
    let db = Db::open("/db", o).unwrap();
    assert_db_matches(&db, &model);
    check_gets(&db, &model, "reopened");
}

/// A drain's first column that overlaps a large L1 runs long enough for a burst of writes
/// to fill the receiver past its switch point meanwhile: the rows the column was cut from
/// become the compactor as it lands, the newer ones go back to the receiver, and a reader
/// meanwhile never misses a key written before its get (rows left in the compactor would
/// hide their keys below its cursor until the next column took them).
#[test]
fn rows_switched_during_an_idle_drains_first_column_return_to_the_receiver() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let o = large_l1(named("matrixkv-idle", &fs));
    let db = Arc::new(Db::open("/db", o.clone()).unwrap());
    // Key `j` (written once, in order) spread over the key space.
    let k = |j: u64| format!("n{:09}", (j * 2_654_435_761) % 1_000_000_007).into_bytes();
    let v = |j: u64| format!("value-{j}-{}", "q".repeat((j % 50) as usize)).into_bytes();
    let written = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // Reads put an idle drain off: the reader pauses while the writer does.
    let reading = Arc::new(AtomicBool::new(true));
    let mut j = 0u64;
    let mut put = |n: u64| {
        for _ in 0..n {
            db.put(k(j), v(j)).unwrap();
            j += 1;
            written.store(j, Ordering::Release);
        }
    };
    put(400_000);
    db.wait_for_compactions().unwrap();
    assert_eq!(l0_bytes(&db), 0);
    let reader = {
        let (db, written, done, reading) =
            (db.clone(), written.clone(), done.clone(), reading.clone());
        std::thread::spawn(move || {
            let mut x = 1u64;
            let mut reads = 0u64;
            while !done.load(Ordering::Acquire) {
                if !reading.load(Ordering::Acquire) {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    continue;
                }
                let n = written.load(Ordering::Acquire);
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                // Mostly keys of the newest 30,000 (in L0 or on their way to L1).
                let back = if x.is_multiple_of(4) {
                    x % n
                } else {
                    (x >> 20) % n.min(30_000)
                };
                let i = n - 1 - back;
                assert_eq!(db.get(k(i)).unwrap(), Some(v(i)), "key {i} of {n}");
                reads += 1;
            }
            reads
        })
    };
    for _ in 0..6 {
        // A few rows, then a pause: the drain's first column (most of them) merges with
        // much of L1 ...
        put(4000);
        db.flush().unwrap();
        reading.store(false, Ordering::Release);
        std::thread::sleep(std::time::Duration::from_millis(8));
        reading.store(true, Ordering::Release);
        // ... while a burst fills the receiver past its switch point (and the reader
        // reads).
        put(12_000);
    }
    // (Reads put an idle drain off: the reader stops first.)
    done.store(true, Ordering::Release);
    let reads = reader.join().unwrap();
    assert!(reads > 1000, "{reads} reads");
    db.wait_for_compactions().unwrap();
    assert_eq!(l0_bytes(&db), 0);
    let model: BTreeMap<Vec<u8>, Vec<u8>> = (0..j).map(|i| (k(i), v(i))).collect();
    assert_db_matches(&db, &model);
    drop(db);
    let db = Db::open("/db", o).unwrap();
    assert_db_matches(&db, &model);
}

/// Writes stopped on a full container resume once a column's pages are freed, even when
/// that happens after the column's job has reported its progress: the column holds the
/// layout it was cut from until it is dropped, and with the receiver just short of its
/// switch point (a forced flush's small row) no other job was due, so writers waited for
/// progress that never came.
#[test]
fn writes_stopped_on_a_full_container_resume_when_a_columns_pages_are_freed() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let o = Options {
        write_stall_limit: Some(std::time::Duration::from_secs(5)),
        ..large_l1(named("matrixkv", &fs))
    };
    let db = Db::open("/db", o).unwrap();
    let k = |j: u64| format!("n{:09}", (j * 2_654_435_761) % 1_000_000_007).into_bytes();
    let v = |j: u64| format!("value-{j}-{}", "q".repeat((j % 50) as usize)).into_bytes();
    let mut j = 0u64;
    let mut put = |n: u64| {
        for _ in 0..n {
            db.put(k(j), v(j)).unwrap();
            j += 1;
        }
    };
    put(400_000);
    for _ in 0..6 {
        put(2000);
        db.flush().unwrap();
        put(12_000);
    }
    let model: BTreeMap<Vec<u8>, Vec<u8>> = (0..j).map(|i| (k(i), v(i))).collect();
    assert_db_matches(&db, &model);
}

/// Writes synced into `db`, one batch.
fn put_synced(db: &Db, key: &[u8], value: &[u8]) {
    let mut b = strata::WriteBatch::new();
    b.put(key, value);
    let sync = strata::WriteOptions {
        sync: true,
        ..Default::default()
    };
    db.write(&sync, b).unwrap();
}

/// WAL files in `dir`.
fn wals_in(fs: &MemFs, dir: &str) -> usize {
    strata_testkit::count_files(fs, Path::new(dir), ".log")
}

/// MatrixKV's write-ahead log is in persistent memory (`wal_in_pmem`, set by the preset):
/// a power cut's writes come back from the WALs there, and an open that puts its own WALs
/// elsewhere (here the database directory) still replays those an earlier session left in
/// `pmem_dir`, and the other way round (the WAL directory is not recorded; the kill loop
/// rotates presets over one database). Fails with recovery listing only the WAL
/// directory: the first reopen loses `a`.
#[test]
fn wals_in_persistent_memory_are_replayed_wherever_the_next_open_puts_its_own() {
    let fs = Arc::new(MemFs::new());
    let o = opts(&(fs.clone() as Arc<dyn Fs>));
    assert!(
        o.wal_in_pmem,
        "the preset keeps its WALs in persistent memory"
    );
    let db = Db::open("/db", o).unwrap();
    put_synced(&db, b"a", b"1");
    assert!(wals_in(&fs, "/db/pmem") > 0, "a WAL in pmem_dir");
    assert_eq!(wals_in(&fs, "/db"), 0, "no WAL in the database directory");
    let cut = Arc::new(fs.crash_clone(strata::fs::CrashMode::DropUnsynced));
    drop(db);

    let o = Options {
        wal_in_pmem: false,
        ..opts(&(cut.clone() as Arc<dyn Fs>))
    };
    let db = Db::open("/db", o).unwrap();
    assert_eq!(
        db.get(b"a").unwrap().as_deref(),
        Some(&b"1"[..]),
        "replayed from pmem_dir"
    );
    put_synced(&db, b"b", b"2");
    assert!(
        wals_in(&cut, "/db") > 0,
        "this session's WAL in the database directory"
    );
    let cut = Arc::new(cut.crash_clone(strata::fs::CrashMode::DropUnsynced));
    drop(db);

    let db = Db::open("/db", opts(&(cut.clone() as Arc<dyn Fs>))).unwrap();
    assert_eq!(db.get(b"a").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(
        db.get(b"b").unwrap().as_deref(),
        Some(&b"2"[..]),
        "replayed from /db"
    );
    db.close().unwrap();
    // Nothing the last open replayed is left behind in either directory.
    assert_eq!(
        wals_in(&cut, "/db"),
        0,
        "old WALs in the database directory deleted"
    );
}

/// A process killed while a flush copies a row into the persistent-memory region: the
/// row's pages are written and not yet persisted, and no manifest record names the row.
/// Whatever part of the row's last page the copy had stored (old bytes before it, new after
/// it: `CrashMode::Kill`), the next open takes the pages as free, replays the writes from
/// the WAL, and loses no acknowledged write.
#[test]
fn a_kill_in_the_middle_of_a_row_write_loses_no_acknowledged_write() {
    use strata::fs::{CrashMode, FaultFs, FaultRule, FsOp};
    for seed in 0..12u64 {
        let mem = MemFs::new();
        let fault = FaultFs::new(mem.clone());
        let fs: Arc<dyn Fs> = Arc::new(fault.clone());
        let db = Db::open("/db", opts(&fs)).unwrap();
        let mut model = BTreeMap::new();
        let value = |i: u64| format!("value-{i}-{}", "y".repeat((i % 150) as usize)).into_bytes();
        // Rows already in the region (some pages freed and reused by later rows).
        for i in 0..6000u64 {
            db.put(key(i), value(i)).unwrap();
            model.insert(key(i), value(i));
        }
        db.flush().unwrap();
        for i in 6000..6400u64 {
            model.insert(key(i), value(i));
            if i == 6399 {
                // Synced: a kill cannot catch the last WAL group in its copy.
                put_synced(&db, &key(i), &value(i));
            } else {
                db.put(key(i), value(i)).unwrap();
            }
        }
        // The flush writes the row's pages; its persist fails: the process "dies" there.
        fault.inject(FaultRule::nth(FsOp::Sync, 0, std::io::ErrorKind::Other).on_paths(".pmem"));
        assert!(db.flush().is_err(), "seed {seed}: the row's persist failed");
        let image: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::Kill { seed }));
        drop(db);
        let reopened = Db::open("/db", opts(&image))
            .unwrap_or_else(|e| panic!("seed {seed}: the open after the kill: {e}"));
        assert_db_matches(&reopened, &model);
        // And it goes on: its rows are written where the torn one was.
        reopened.put(b"after", b"kill").unwrap();
        reopened.flush().unwrap();
        assert_eq!(reopened.get(b"after").unwrap(), Some(b"kill".to_vec()));
    }
}

/// Writes larger than a memtable (two-key batches, a third of the values 20-60 KB, into
/// 64 KiB memtables over a 1 MiB container), the process killed every few writes: every
/// image opens. Recovery writes every unflushed memtable as a row at once, with no column
/// compaction to wait for, so the container must have room for all of them whenever the
/// process dies: a write waits while what is unflushed, with it, might not fit. Without
/// that, a batch admitted into a memtable that was not yet full took the unflushed data
/// past the room left, and the open failed: "every page of the persistent-memory region
/// is in use".
#[test]
fn a_kill_with_large_batches_unflushed_leaves_a_matrix_that_opens() {
    use strata::fs::CrashMode;
    let mem = MemFs::new();
    let fs: Arc<dyn Fs> = Arc::new(
        strata_testkit::InterceptFs::new(Arc::new(mem.clone())).on_create(|path, below| {
            let f = below.create(path)?;
            // A millisecond per append of a table: columns fall behind, the container
            // stays nearly full.
            Ok(if path.extension().is_some_and(|e| e == "sst") {
                Box::new(strata_testkit::SlowFile::new(
                    f,
                    std::time::Duration::from_millis(1),
                ))
            } else {
                f
            })
        }),
    );
    let db = Db::open("/db", opts(&fs)).unwrap();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut images = 0;
    for i in 0..500u64 {
        let mut b = strata::WriteBatch::new();
        for j in 0..2 {
            let len = if next() % 3 == 0 {
                20_000 + next() % 40_000
            } else {
                next() % 300
            };
            b.put(key(i * 2 + j), vec![b'a' + (i % 26) as u8; len as usize]);
        }
        db.write(&strata::WriteOptions::default(), b).unwrap();
        if i % 5 == 4 {
            let image: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::Kill { seed: i }));
            let reopened = Db::open("/db", opts(&image))
                .unwrap_or_else(|e| panic!("write {i}: the open after a kill: {e}"));
            drop(reopened);
            images += 1;
        }
    }
    assert_eq!(images, 100);
}

/// A read-only view beside the writing database: the writer's column compactions free the
/// pages of rows the view's manifest names and new rows reuse them. Every read of the view
/// answers what the database held when the view opened, or `Stale` (open a new view):
/// never another row's bytes as a value, never `Corruption`.
#[test]
fn a_read_only_view_never_reads_pages_the_writer_reused() {
    view_beside_a_writer(Arc::new(MemFs::new()), Path::new("/db"));
    // On the real file system the generations are atomics in a shared map.
    let tmp = strata_testkit::TempDir::new("matrix-view");
    view_beside_a_writer(Arc::new(strata::fs::RealFs::new()), &tmp.path().join("db"));
    // Views that may not map the generations read-write (no write permission on the file)
    // read them through the file system, and still see every page the writer reused.
    let tmp = strata_testkit::TempDir::new("matrix-view-ro");
    let real: Arc<dyn Fs> = Arc::new(strata::fs::RealFs::new());
    let denied = strata_testkit::InterceptFs::new(real.clone()).on_open_region(
        |path: &Path, len: usize, below: &dyn Fs| {
            if path.file_name().is_some_and(|n| n == "pages.gen") {
                return Err(strata::Error::new(
                    ErrorKind::Io,
                    "open pages.gen read-write: permission denied (the test's)",
                ));
            }
            below.open_region(path, len)
        },
    );
    view_beside_a_writer_seen_by(real, Arc::new(denied), &tmp.path().join("db"));
}

/// The pages' generations are made under a temporary name and renamed into place: a
/// writer killed while making them leaves no file of the wrong size under the name. An
/// empty one (an older build killed there) lets a view read every key (it used to answer
/// `Stale` to every read of L0 until a writable open made the file again), until a writer
/// makes the file: then the view can vouch for no page, and answers `Stale`.
#[test]
fn a_view_reads_beside_generations_a_killed_writer_left_unmade() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let path = Path::new("/db");
    let opts = || (strata_testkit::configs::named("matrixkv").build)(path, fs.clone());
    let gens = path.join("pmem").join("pages.gen");
    let db = Db::open(path, opts()).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..2_000u64 {
        let v = format!("value-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.flush().unwrap();
    db.close().unwrap();
    drop(db);
    assert!(fs.file_size(&gens).unwrap() > 0);
    assert!(!fs.exists(&path.join("pmem").join("pages.gen.dbtmp")));
    // What an older build killed while making the file left.
    fs.remove(&gens).unwrap();
    drop(fs.create(&gens).unwrap());
    let view = Db::open_read_only(path, opts()).unwrap();
    check_gets(&view, &model, "a view beside an empty generations file");
    // A leftover temporary file and the empty one: the next writer makes the file whole.
    drop(
        fs.create(&path.join("pmem").join("pages.gen.dbtmp"))
            .unwrap(),
    );
    let db = Db::open(path, opts()).unwrap();
    check_gets(&db, &model, "the writer after");
    assert!(fs.file_size(&gens).unwrap() > 0);
    assert!(!fs.exists(&path.join("pmem").join("pages.gen.dbtmp")));
    // The view opened before the writer made the file can vouch for no page now: each of
    // its reads answers what it held or `Stale`, never another row's bytes (`Corruption`).
    for i in 0..60_000u64 {
        db.put(key(i), format!("second-{i}")).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let mut stale = 0;
    for i in 0..2_000u64 {
        match view.get(key(i)) {
            Ok(v) => assert_eq!(v.as_ref(), model.get(&key(i)), "key {i}"),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Stale, "key {i}: {e}");
                stale += 1;
            }
        }
    }
    assert!(stale > 0, "the writer reused none of the view's pages");
}

fn view_beside_a_writer(fs: Arc<dyn Fs>, path: &Path) {
    view_beside_a_writer_seen_by(fs.clone(), fs, path);
}

/// The writer on `fs`, its views on `view_fs` (the same files).
fn view_beside_a_writer_seen_by(fs: Arc<dyn Fs>, view_fs: Arc<dyn Fs>, path: &Path) {
    let opts =
        |fs: &Arc<dyn Fs>| (strata_testkit::configs::named("matrixkv").build)(path, fs.clone());
    let db = Db::open(path, opts(&fs)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..2_500u64 {
        let v = format!("first-{i}-{}", "y".repeat((i % 50) as usize)).into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let view = Db::open_read_only(path, opts(&view_fs)).unwrap();
    // Before the writer moves on, the view reads every key, each read checked.
    check_gets(&view, &model, "view before the writer moved on");
    for i in 0..60_000u64 {
        db.put(key(i), format!("second-{i}")).unwrap();
    }
    db.wait_for_compactions().unwrap();
    let (mut right, mut stale) = (0, 0);
    for i in 0..5000u64 {
        let k = key(i);
        match view.get(&k) {
            Ok(v) => {
                assert_eq!(v.as_ref(), model.get(&k), "get {k:?} from the view");
                right += 1;
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Stale, "get {k:?} from the view: {e}");
                assert!(e.message().contains("open a new view"), "{e}");
                stale += 1;
            }
        }
    }
    assert!(
        stale > 0,
        "the writer reused none of the view's pages ({right} right)"
    );
    // A scan: the same, or `Stale`.
    let scanned: Result<Vec<_>, _> = view.iter(ReadOptions::default()).unwrap().collect();
    if let Err(e) = scanned {
        assert_eq!(e.kind(), ErrorKind::Stale, "{e}");
    }
    drop(view);
    // A new view reads the database as it is now.
    let view = Db::open_read_only(path, opts(&view_fs)).unwrap();
    for i in 0..5000u64 {
        assert_eq!(view.get(key(i)).unwrap(), db.get(key(i)).unwrap());
    }
    drop(view);
    // Views open while the writer flushes row after row (a page handed out during a view's
    // read of the manifest makes it read again, only if a row it names holds the page).
    let db = std::sync::Arc::new(db);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.put(key(i), format!("third-{i}")).unwrap();
                i += 1;
            }
        })
    };
    let mut opened = 0;
    for n in 0..20 {
        // (An open whose every try met the writer moving answers `Stale`: allowed, rare.)
        let view = match Db::open_read_only(path, opts(&view_fs)) {
            Ok(v) => v,
            Err(e) if e.kind() == ErrorKind::Stale => continue,
            Err(e) => panic!("view {n} beside a busy writer: {e}"),
        };
        opened += 1;
        for i in (0..5000u64).step_by(97) {
            if let Err(e) = view.get(key(i)) {
                assert_eq!(e.kind(), ErrorKind::Stale, "{e}");
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(
        opened >= 10,
        "{opened} of 20 views opened beside a busy writer"
    );
}
