//! `strata::repair`: a database whose manifest is lost comes back from its tables, WALs
//! and value files, keeping the newest version of every key that survives.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::{repair, Db, Options, ReadOptions};

fn small(fs: &Arc<MemFs>) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        max_bytes_for_level_multiplier: 4.0,
        block_size: 1024,
        fs: fs.clone(),
        ..Options::default()
    }
}

fn value(i: u32, round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("{i}:{round}:").into_bytes();
    v.resize(len, b'x');
    v
}

/// Writes rounds of puts and deletes over 3000 keys, leaving the last writes in the WAL.
fn fill(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, len: impl Fn(u32) -> usize) {
    for round in 0..4u32 {
        for i in (0..3000u32).step_by(round as usize + 1) {
            let k = format!("key{i:05}").into_bytes();
            if (i + round) % 11 == 0 {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = value(i, round, len(i));
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        if round < 3 {
            db.flush().unwrap();
        }
    }
    db.wait_for_compactions().unwrap();
}

/// `preset` on `fs` with persistent memory at `/pmem` (a 1 MiB matrix region) and sizes
/// small enough that a few hundred keys make rows, tables and levels.
fn pmem_options(fs: &Arc<MemFs>, preset: &str) -> Options {
    Options {
        pmem_dir: Some("/pmem".into()),
        matrix_container_size: 1 << 20,
        write_buffer_size: 64 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        block_size: 1024,
        fs: fs.clone(),
        ..Options::preset(preset).unwrap()
    }
}

fn destroy_manifest(fs: &MemFs, dir: &Path) {
    for name in fs.list(dir).unwrap() {
        if name.starts_with("MANIFEST-") || name == "CURRENT" {
            fs.remove(&dir.join(name)).unwrap();
        }
    }
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter(ReadOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_lost_manifest_is_rebuilt_from_tables_and_wals() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let mut model = BTreeMap::new();
    {
        let db = Db::open(dir, small(&fs)).unwrap();
        fill(&db, &mut model, |i| 20 + (i as usize % 90));
        let levels = db.property("strata.levels").unwrap();
        let deep = levels
            .trim_matches(|c| c == '[' || c == ']')
            .split(' ')
            .skip(1)
            .filter(|n| *n != "0")
            .count();
        assert!(deep >= 2, "want tables in two levels or more: {levels}");
    }
    destroy_manifest(&fs, dir);
    // Without CURRENT, the tables and WALs are a database that lost its manifest, not an
    // empty directory: open refuses, whatever create_if_missing says, and changes nothing
    // (creating a database there deleted them all as unnamed files: issue 29).
    let before = fs.list(dir).unwrap();
    for create_if_missing in [false, true] {
        let e = Db::open(
            dir,
            Options {
                create_if_missing,
                ..small(&fs)
            },
        )
        .unwrap_err();
        assert_eq!(e.kind(), strata::ErrorKind::Corruption, "{e}");
        assert!(e.to_string().contains("strata repair"), "{e}");
        assert_eq!(
            fs.list(dir).unwrap(),
            before,
            "the refused open changed files"
        );
    }

    let report = repair(dir, &small(&fs)).unwrap();
    assert!(
        report.tables_read > 0 && report.wal_records > 0,
        "{report:?}"
    );
    assert!(
        report.tables_lost.is_empty() && report.damage.is_empty(),
        "{report:?}"
    );
    assert_eq!(report.keys, model.len() as u64);

    let db = Db::open(dir, small(&fs)).unwrap();
    assert!(contents(&db) == model, "the repaired database differs");
    for (k, v) in model.iter().step_by(37) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    // It goes on working: more writes, compactions, a reopen.
    db.put(b"key00001", b"after").unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    drop(db);
    let db = Db::open(dir, small(&fs)).unwrap();
    assert_eq!(db.get(b"key00001").unwrap().as_deref(), Some(&b"after"[..]));
    // The files it replaced wait in lost/.
    assert!(fs
        .list(&dir.join("lost"))
        .unwrap()
        .iter()
        .any(|n| n.ends_with(".sst")));
}

#[test]
fn a_damaged_block_costs_only_its_keys() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let mut model = BTreeMap::new();
    {
        let db = Db::open(dir, small(&fs)).unwrap();
        fill(&db, &mut model, |_| 50);
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
    }
    destroy_manifest(&fs, dir);
    // Damage the first block of one table: the keys it held are lost (or an older version
    // of them comes back), every other key is as written.
    let table = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".sst"))
        .unwrap();
    let path = dir.join(&table);
    let mut bytes = strata::fs::read_all(&*fs, &path).unwrap();
    bytes[20] ^= 0x10;
    let mut w = fs.create(&path).unwrap();
    w.append(&bytes).unwrap();
    w.sync().unwrap();
    drop(w);

    let report = repair(dir, &small(&fs)).unwrap();
    assert_eq!(report.damage.len(), 1, "{report:?}");
    assert_eq!(report.damage[0].1, 0, "the first block, at offset 0");
    let db = Db::open(dir, small(&fs)).unwrap();
    let got = contents(&db);
    let wrong: Vec<_> = model
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(*v))
        .map(|(k, _)| String::from_utf8_lossy(k).to_string())
        .collect();
    // One 1 KiB block of ~60-byte entries.
    assert!(
        !wrong.is_empty() && wrong.len() < 40,
        "{} keys differ: {wrong:?}",
        wrong.len()
    );
}

#[test]
fn separated_values_survive_repair_and_later_collection() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let opts = || Options {
        min_blob_size: 100,
        blob_gc_garbage_ratio: 0.2,
        value_dir: Some("/values".into()),
        ..Options {
            value_store: strata::ValueStoreKind::BlobFiles,
            ..small(&fs)
        }
    };
    let mut model = BTreeMap::new();
    {
        let db = Db::open(dir, opts()).unwrap();
        // Values straddle the threshold: some separated, some inline.
        fill(&db, &mut model, |i| if i % 3 == 0 { 60 } else { 300 });
    }
    destroy_manifest(&fs, dir);
    let report = repair(dir, &opts()).unwrap();
    assert!(report.value_files > 0, "{report:?}");
    let db = Db::open(dir, opts()).unwrap();
    assert!(contents(&db) == model, "the repaired database differs");
    // Overwrite half the keys and compact: the repaired garbage counts let GC collect
    // blob files without losing a live value.
    for (k, _) in model.clone().iter().step_by(2) {
        let v = vec![b'n'; 200];
        db.put(k, &v).unwrap();
        model.insert(k.clone(), v);
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    assert!(contents(&db) == model, "after GC");
    drop(db);
    let db = Db::open(dir, opts()).unwrap();
    assert!(contents(&db) == model, "after a reopen");
}

#[test]
fn an_open_database_is_not_repaired() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", small(&fs)).unwrap();
    db.put(b"k", b"v").unwrap();
    assert!(repair("/db", &small(&fs)).is_err());
}

/// A damaged last manifest record may be a synced flush whose WAL is gone: its table holds
/// the only copy of those writes. The open that drops the record keeps every file the
/// manifest does not name instead of deleting it (and every later open too), says so in
/// `strata.kept-files` and in `check`, and `repair` merges the kept table back (issue 29).
#[test]
fn a_dropped_manifest_record_keeps_the_files_it_named_for_repair() {
    let dir = strata_testkit::TempDir::new("kept-files");
    let db_dir = dir.path().join("db");
    let opts = || Options {
        write_buffer_size: 1 << 20,
        ..Options::default()
    };
    {
        let db = Db::open(&db_dir, opts()).unwrap();
        for i in 0..500u32 {
            db.put(format!("key{i:04}"), format!("value{i}")).unwrap();
        }
        // The flush's edit is the manifest's last record; it retires the WAL.
        db.flush().unwrap();
        db.close().unwrap();
    }
    // The flush's edit, made the last record: the clean close's record after it (the
    // WALs' sizes) is cut off, as a crash right after the flush would have left it.
    strata_testkit::damage::last_flush_record(&db_dir);
    let tables = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&db_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sst"))
            .collect();
        v.sort();
        v
    };
    let flushed = tables();
    assert_eq!(flushed.len(), 1, "{flushed:?}");

    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    for _ in 0..2 {
        // This open and the next: the table stays, and says why.
        let log = said.clone();
        let with_log = Options {
            info_log: Some(std::sync::Arc::new(move |l: &str| {
                log.lock().unwrap().push(l.to_string())
            })),
            ..opts()
        };
        let db = Db::open(&db_dir, with_log).unwrap();
        let kept = db.property("strata.kept-files").unwrap();
        assert!(
            kept.starts_with("1 file(s) kept for repair") && kept.contains("checksum"),
            "{kept}"
        );
        assert_eq!(
            db.get(b"key0001").unwrap(),
            None,
            "the dropped edit's table is not live"
        );
        db.put(b"later", b"write").unwrap();
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        db.close().unwrap();
        assert!(tables().contains(&flushed[0]), "the kept table was deleted");
    }
    // The open that dropped the record said so, once (the next open's manifest is whole).
    let said = said.lock().unwrap().clone();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].contains("dropped a damaged last manifest record"),
        "{said:?}"
    );
    let mut out = Vec::new();
    let problems = strata::inspect::check(&db_dir, &opts(), &mut out).unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.what.contains("dropped a damaged manifest record")),
        "{problems:?}"
    );

    repair(&db_dir, &opts()).unwrap();
    let db = Db::open(&db_dir, opts()).unwrap();
    assert_eq!(db.property("strata.kept-files").unwrap(), "none");
    for i in (0..500u32).step_by(7) {
        assert_eq!(
            db.get(format!("key{i:04}")).unwrap(),
            Some(format!("value{i}").into_bytes())
        );
    }
    assert_eq!(db.get(b"later").unwrap().as_deref(), Some(&b"write"[..]));
}

/// Repair with L0 in persistent memory: `rocksdb-l0-nvm`'s L0 tables live in `pmem_dir`,
/// and `matrixkv`'s L0 is RowTables in the region there, which only a manifest's layout
/// record locates. With CURRENT lost (the manifest intact) repair reads the rows through
/// the manifest's record and nothing is lost; with every manifest lost the matrix's rows
/// cannot be found: repair says so, naming the region, and moves it aside.
#[test]
fn l0_in_persistent_memory_survives_repair() {
    // What is lost: CURRENT (the manifest survives), every manifest (the row directory
    // locates the rows), or every manifest and the directory too.
    for preset in ["rocksdb-l0-nvm", "matrixkv"] {
        for lose in ["CURRENT", "manifests", "manifests and directory"] {
            let what = format!("{preset}, {lose} lost");
            let fs = Arc::new(MemFs::new());
            let opts = || pmem_options(&fs, preset);
            let mut model = BTreeMap::new();
            {
                let db = Db::open("/db", opts()).unwrap();
                fill(&db, &mut model, |_| 100);
                // The newest writes in L0 only (their WAL obsolete): repair must number
                // later writes above them.
                db.flush().unwrap();
            }
            if lose == "CURRENT" {
                fs.remove(Path::new("/db/CURRENT")).unwrap();
            } else {
                destroy_manifest(&fs, Path::new("/db"));
            }
            let directory = Path::new("/pmem/matrix.dir");
            assert_eq!(fs.exists(directory), preset == "matrixkv", "{what}");
            if lose == "manifests and directory" && preset == "matrixkv" {
                fs.remove(directory).unwrap();
            }
            let report = repair("/db", &opts()).unwrap();
            let db = Db::open("/db", opts()).unwrap();
            let got = contents(&db);
            let lost = model.iter().filter(|(k, v)| got.get(*k) != Some(v)).count();
            let extra = got.keys().filter(|k| !model.contains_key(*k)).count();
            if preset == "matrixkv" && lose == "manifests and directory" {
                // (Deletes in the lost rows are lost too: `extra` keys are back.)
                assert!(lost > 0, "{what}: the test needs rows in L0");
                let named = report
                    .damage
                    .iter()
                    .any(|(f, _, _)| f == Path::new("/pmem/matrix.pmem"));
                assert!(named, "{what}: the lost rows are not reported; {report:?}");
                assert!(fs.exists(Path::new("/pmem/lost/matrix.pmem")), "{what}");
            } else {
                assert_eq!(lost + extra, 0, "{what}: keys lost or wrong; {report:?}");
                assert!(report.damage.is_empty(), "{what}: {report:?}");
            }
            if preset == "matrixkv" && lose != "manifests and directory" {
                assert!(report.l0_parts_read > 0, "{what}: {report:?}");
                assert!(fs.exists(Path::new("/pmem/lost/matrix.dir")), "{what}");
            }
            // The repaired database takes writes into a fresh layout.
            for (k, _) in model.iter().step_by(3) {
                db.put(k, b"after").unwrap();
            }
            db.flush().unwrap();
            drop(db);
            let db = Db::open("/db", opts()).unwrap();
            for (k, _) in model.iter().step_by(3) {
                assert_eq!(db.get(k).unwrap().as_deref(), Some(&b"after"[..]), "{what}");
            }
        }
    }
}

/// A `matrixkv` database with rows in its region, repaired with every manifest lost by
/// options that name another L0 layout: what a database opened as `rocksdb-l0-nvm` (or
/// `default`) and killed while that open migrated its L0 out of the matrix leaves. Repair
/// reads the rows through the row directory whatever layout the options name (the kill
/// loop lost up to 433 synced writes this way when it asked only the configured layout).
#[test]
fn rows_of_another_layout_survive_repair() {
    for preset in ["rocksdb-l0-nvm", "default", "ohdb-l0p"] {
        let fs = Arc::new(MemFs::new());
        let opts = |preset: &str| pmem_options(&fs, preset);
        let mut model = BTreeMap::new();
        {
            let db = Db::open("/db", opts("matrixkv")).unwrap();
            fill(&db, &mut model, |_| 100);
            db.flush().unwrap();
        }
        destroy_manifest(&fs, Path::new("/db"));
        let report = repair("/db", &opts(preset)).unwrap();
        assert!(
            report.l0_parts_read > 0,
            "{preset}: no rows read; {report:?}"
        );
        assert!(report.damage.is_empty(), "{preset}: {report:?}");
        assert!(fs.exists(Path::new("/pmem/lost/matrix.pmem")), "{preset}");
        let db = Db::open("/db", opts(preset)).unwrap();
        let got = contents(&db);
        let lost = model.iter().filter(|(k, v)| got.get(*k) != Some(v)).count();
        let extra = got.keys().filter(|k| !model.contains_key(*k)).count();
        assert_eq!(lost + extra, 0, "{preset}: keys lost or wrong; {report:?}");
    }
}

/// A matrix region cut short (a copy or a restore that stopped, a file system out of room)
/// still holds the rows that lie within it: repair reads them, through the row directory
/// or (without it) the manifest's layout record, and reports the rows past the end,
/// instead of giving up the whole region.
#[test]
fn a_region_cut_short_gives_repair_the_rows_within_it() {
    for lose_directory in [false, true] {
        let what = format!("row directory lost: {lose_directory}");
        let fs = Arc::new(MemFs::new());
        let opts = || Options {
            pmem_dir: Some("/pmem".into()),
            matrix_container_size: 1 << 20,
            write_buffer_size: 64 << 10,
            fs: fs.clone(),
            ..Options::preset("matrixkv").unwrap()
        };
        // Five rows of 200 keys each (row r holds keys r*1000..), and one write in the WAL.
        let mut rows = Vec::new();
        {
            let db = Db::open("/db", opts()).unwrap();
            for r in 0..5u32 {
                let mut row = BTreeMap::new();
                for i in 0..200u32 {
                    let (k, v) = (format!("key{:05}", r * 1000 + i), value(i, r, 200));
                    db.put(&k, &v).unwrap();
                    row.insert(k.into_bytes(), v);
                }
                db.flush().unwrap();
                rows.push(row);
            }
            db.put(b"later", b"write").unwrap();
        }
        let region = Path::new("/pmem/matrix.pmem");
        // Rows fill the container from its start: a third of five rows keeps the first whole.
        let used = 5 * 200 * 230;
        fs.truncate(region, used / 3).unwrap();
        if lose_directory {
            // Repair then finds the rows through the manifest's layout record.
            fs.remove(Path::new("/pmem/matrix.dir")).unwrap();
        }
        let Err(err) = Db::open("/db", opts()) else {
            panic!("a region cut short must not open");
        };
        assert!(err.to_string().contains("matrix.pmem"), "{err}");
        let report = repair("/db", &opts()).unwrap();
        assert!(
            report.l0_parts_read >= 1,
            "{what}: the rows within the file were not read: {report:?}"
        );
        assert!(
            report.damage.iter().any(|(f, _, _)| f == region),
            "{what}: the rows past the end are not reported: {report:?}"
        );
        let db = Db::open("/db", opts()).unwrap();
        let got = contents(&db);
        for (k, v) in &rows[0] {
            assert_eq!(
                got.get(k),
                Some(v),
                "{what}: a key of the first row is lost"
            );
        }
        let all: BTreeMap<_, _> = rows.iter().flatten().collect();
        for (k, v) in &got {
            if k.as_slice() != b"later" {
                assert_eq!(all.get(k), Some(&v), "{what}: a key came back wrong");
            }
        }
        assert!(
            got.len() - 1 < all.len(),
            "the test needs rows past the cut"
        );
        assert_eq!(
            got.get(&b"later"[..]).map(Vec::as_slice),
            Some(&b"write"[..])
        );
    }
}

/// Every preset's database, its manifests lost (the matrix's rows found through its row
/// directory), comes back whole from repair and takes writes and background work after
/// it: values of every size (inline, separated, coalesced), deletes, the newest writes
/// both in the WAL and only in L0.
#[test]
fn every_preset_comes_back_from_repair() {
    for &preset in Options::PRESETS {
        for flushed in [false, true] {
            let what = format!("{preset}, last writes flushed {flushed}");
            let fs = Arc::new(MemFs::new());
            let opts = || Options {
                pmem_dir: Some("/pmem".into()),
                value_dir: Some("/values".into()),
                matrix_container_size: 1 << 20,
                write_buffer_size: 64 << 10,
                target_file_size_base: 32 << 10,
                max_bytes_for_level_base: 128 << 10,
                block_size: 1024,
                min_blob_size: 100,
                hash_groups: 4,
                hash_main_segment_size: 4 << 10,
                hash_when_full: strata::HashWhenFull::Grow,
                idle_compaction_delay: None,
                fs: fs.clone(),
                ..Options::preset(preset).unwrap()
            };
            let mut model = BTreeMap::new();
            {
                let db = Db::open("/db", opts()).unwrap();
                fill(&db, &mut model, |i| [20, 60, 150, 400][i as usize % 4]);
                if flushed {
                    db.flush().unwrap();
                }
            }
            destroy_manifest(&fs, Path::new("/db"));
            let report = repair("/db", &opts()).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(report.damage.is_empty(), "{what}: {report:?}");
            let db = Db::open("/db", opts()).unwrap_or_else(|e| panic!("{what}: {e}"));
            assert!(
                contents(&db) == model,
                "{what}: the repaired database differs"
            );
            // Writes and background work (compaction, GC) over the repaired database.
            for round in 10..13u32 {
                for (i, k) in model.clone().keys().enumerate().step_by(2) {
                    if (i as u32 + round).is_multiple_of(5) {
                        db.delete(k).unwrap();
                        model.remove(k);
                    } else {
                        let v = value(i as u32, round, [20, 60, 150, 400][i % 4]);
                        db.put(k, &v).unwrap();
                        model.insert(k.clone(), v);
                    }
                }
                db.flush().unwrap();
            }
            db.compact_range(None, None).unwrap();
            db.wait_for_compactions().unwrap();
            assert!(contents(&db) == model, "{what}: after writes over it");
            drop(db);
            let db = Db::open("/db", opts()).unwrap();
            assert!(contents(&db) == model, "{what}: reopened");
        }
    }
}

/// `destroy` removes every file the database holds, the matrix's region in `pmem_dir` too
/// (a region left behind keeps its memory, and a database created there later with
/// another container size would find it the wrong size).
#[test]
fn destroy_removes_the_matrix_region() {
    let fs = Arc::new(MemFs::new());
    let opts = |container: u64| Options {
        pmem_dir: Some("/pmem".into()),
        matrix_container_size: container,
        write_buffer_size: 64 << 10,
        fs: fs.clone(),
        ..Options::preset("matrixkv").unwrap()
    };
    {
        let db = Db::open("/db", opts(1 << 20)).unwrap();
        db.put(b"k", b"v").unwrap();
        db.flush().unwrap();
    }
    assert!(fs.exists(Path::new("/pmem/matrix.pmem")));
    // Destroyed with options that do not name the matrix: the manifest does.
    strata::destroy(
        "/db",
        &Options {
            pmem_dir: Some("/pmem".into()),
            fs: fs.clone(),
            ..Options::default()
        },
    )
    .unwrap();
    assert!(
        !fs.exists(Path::new("/pmem/matrix.pmem")),
        "the region is left behind"
    );
    let db = Db::open("/db", opts(2 << 20)).unwrap();
    db.put(b"k", b"w").unwrap();
    db.flush().unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"w"[..]));
}

/// `check` verifies what L0 keeps outside tables: the matrix's rows in its region (it
/// reported "no problems" over a row with a damaged page, which the next read refused).
#[test]
fn check_verifies_the_matrix_rows() {
    let dir = strata_testkit::TempDir::new("check-matrix");
    let db_dir = dir.path().join("db");
    let opts = || Options {
        pmem_dir: Some(dir.path().join("pmem")),
        matrix_container_size: 1 << 20,
        write_buffer_size: 64 << 10,
        ..Options::preset("matrixkv").unwrap()
    };
    {
        let db = Db::open(&db_dir, opts()).unwrap();
        for i in 0..2000u32 {
            db.put(format!("key{i:05}"), value(i, 0, 100)).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let mut out = Vec::new();
    let problems = strata::inspect::check(&db_dir, &opts(), &mut out).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let said = String::from_utf8(out).unwrap();
    assert!(said.contains("matrix.pmem ("), "{said}");
    // A byte of the first row's second page flipped.
    let region = dir.path().join("pmem").join("matrix.pmem");
    let mut bytes = std::fs::read(&region).unwrap();
    bytes[4096 + 100] ^= 0x40;
    std::fs::write(&region, &bytes).unwrap();
    let reported = |file: &Path, what: &str| {
        let problems = strata::inspect::check(&db_dir, &opts(), &mut std::io::sink()).unwrap();
        assert!(
            problems
                .iter()
                .any(|p| p.file == file && p.what.contains(what)),
            "{problems:?}"
        );
    };
    reported(&region, "checksum");
    // The region whole again, the row directory's slots both damaged: what a repair with
    // no manifest would read is reported.
    bytes[4096 + 100] ^= 0x40;
    std::fs::write(&region, &bytes).unwrap();
    let directory = dir.path().join("pmem").join("matrix.dir");
    let mut listing = std::fs::read(&directory).unwrap();
    let slot = listing.len() / 2;
    listing[0] ^= 1;
    listing[slot] ^= 1;
    std::fs::write(&directory, &listing).unwrap();
    reported(&directory, "neither slot");
}

/// A compaction at the last level drops a deleted key's tombstone together with the value
/// it hid; a crash can then leave some of its inputs on disk and not others (here the
/// value's table, which an open iterator still reads, outlives the tombstone's, whose
/// deletion was synced). Repair leaves out every table the obsolete list names, written
/// before the first of them was deleted: the key stays deleted, and the rest reads back.
#[test]
fn a_table_a_crash_kept_after_its_compaction_brings_no_deleted_key_back() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let db = Db::open(dir, small(&fs)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..500u32 {
        let k = format!("key{i:05}").into_bytes();
        db.put(&k, value(i, 0, 100)).unwrap();
        model.insert(k, value(i, 0, 100));
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // Reads the version holding the values' table: it outlives the next compaction.
    let reader = db.iter(ReadOptions::default()).unwrap();
    for i in (0..500u32).step_by(3) {
        let k = format!("key{i:05}").into_bytes();
        db.delete(&k).unwrap();
        model.remove(&k);
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(contents(&db), model);
    let image = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    drop(reader);
    drop(db);
    let image = Arc::new(image);
    assert!(image.exists(&dir.join("OBSOLETE")));
    destroy_manifest(&image, dir);
    let report = repair(dir, &small(&image)).unwrap();
    let db = Db::open(dir, small(&image)).unwrap();
    assert_eq!(contents(&db), model, "deleted keys came back");
    assert!(report.obsolete_files > 0, "{report:?}");
}

/// Copies file `name` of `dir` from `from` into `to`, durably.
fn copy_file(from: &MemFs, to: &MemFs, dir: &Path, name: &str) {
    let bytes = strata::fs::read_all(from, &dir.join(name)).unwrap();
    let mut f = to.create(&dir.join(name)).unwrap();
    f.append(&bytes).unwrap();
    f.sync().unwrap();
    to.sync_dir(dir).unwrap();
}

fn names_ending(fs: &MemFs, dir: &Path, ext: &str) -> Vec<String> {
    fs.list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(ext))
        .collect()
}

/// `small` with values of 100 bytes and more in `store`.
fn separated(fs: &Arc<MemFs>, store: strata::ValueStoreKind) -> Options {
    Options {
        value_store: store,
        min_blob_size: 100,
        ..small(fs)
    }
}

/// A flush's table is found beside its WAL, without the blob file it points into (put
/// together by hand: a live flush names its tables only once their values are durable,
/// but the same holds for a compaction's output whose new blob file a crash lost, beside
/// its inputs). Repair takes each such key's value from the other copy of the same write,
/// instead of dropping the key.
#[test]
fn a_value_lost_with_its_file_is_taken_from_the_same_write_in_the_wal() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let opts = |fs: &Arc<MemFs>| separated(fs, strata::ValueStoreKind::BlobFiles);
    let db = Db::open(dir, opts(&fs)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..200u32 {
        let k = format!("key{i:05}").into_bytes();
        db.put(&k, value(i, 0, 300)).unwrap();
        model.insert(k, value(i, 0, 300));
    }
    db.flush().unwrap();
    for i in 0..200u32 {
        let k = format!("key{i:05}").into_bytes();
        db.put(&k, value(i, 1, 300)).unwrap();
        model.insert(k, value(i, 1, 300));
    }
    let mut last = strata::WriteBatch::new();
    last.put(b"synced", b"1");
    model.insert(b"synced".to_vec(), b"1".to_vec());
    db.write(
        &strata::WriteOptions {
            sync: true,
            ..strata::WriteOptions::default()
        },
        last,
    )
    .unwrap();
    // The image before the second flush: its WAL holds round 1.
    let before = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    let tables: Vec<String> = names_ending(&fs, dir, ".sst");
    db.flush().unwrap();
    let after = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    drop(db);
    // The second flush's table made it to `before`, its blob file did not.
    let new_tables: Vec<String> = names_ending(&after, dir, ".sst")
        .into_iter()
        .filter(|t| !tables.contains(t))
        .collect();
    assert!(!new_tables.is_empty());
    for t in &new_tables {
        copy_file(&after, &before, dir, t);
    }
    let image = Arc::new(before);
    destroy_manifest(&image, dir);
    let report = repair(dir, &opts(&image)).unwrap();
    let db = Db::open(dir, opts(&image)).unwrap();
    assert_eq!(contents(&db), model, "{:?}", report.damage.first());
}

/// A value log that lost its tail (values are appended as written, and the crash kept the
/// WAL's record of a write and not its value): repair, as recovery does, leaves out that
/// write and every later one, so what it keeps is a prefix of the writes.
#[test]
fn a_wal_record_whose_value_the_crash_cut_off_ends_the_replay() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let opts = |fs: &Arc<MemFs>| separated(fs, strata::ValueStoreKind::VLog);
    let db = Db::open(dir, opts(&fs)).unwrap();
    let sync = strata::WriteOptions {
        sync: true,
        ..strata::WriteOptions::default()
    };
    let put = |k: &str, v: Vec<u8>| {
        let mut b = strata::WriteBatch::new();
        b.put(k, v);
        db.write(&sync, b).unwrap();
    };
    put("a", value(1, 0, 300));
    put("b", value(2, 0, 300));
    put("b", value(2, 1, 300));
    put("c", b"small".to_vec());
    let image = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    drop(db);
    // The log loses the last value (b's second): cut 100 bytes into it.
    let log = names_ending(&image, dir, ".vlog")
        .pop()
        .expect("a value log");
    let bytes = strata::fs::read_all(&image, &dir.join(&log)).unwrap();
    let cut = bytes.len() - 250;
    let mut f = image.create(&dir.join(&log)).unwrap();
    f.append(&bytes[..cut]).unwrap();
    f.sync().unwrap();
    let image = Arc::new(image);
    destroy_manifest(&image, dir);
    let report = repair(dir, &opts(&image)).unwrap();
    assert!(
        report.damage.iter().any(|d| d.2.contains("cut off")),
        "{:?}",
        report.damage
    );
    let db = Db::open(dir, opts(&image)).unwrap();
    let expect: BTreeMap<Vec<u8>, Vec<u8>> = [
        (b"a".to_vec(), value(1, 0, 300)),
        (b"b".to_vec(), value(2, 0, 300)),
    ]
    .into_iter()
    .collect();
    assert_eq!(contents(&db), expect);
}

/// `strata check` reads the obsolete list (what a repair would leave out) and reports it
/// damaged.
#[test]
fn check_verifies_the_obsolete_list() {
    let dir = strata_testkit::TempDir::new("check-obsolete");
    let db_dir = dir.path().join("db");
    let opts = || Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    {
        let db = Db::open(&db_dir, opts()).unwrap();
        for round in 0..3 {
            for i in 0..2000u32 {
                db.put(format!("key{i:05}"), value(i, round, 100)).unwrap();
            }
            db.flush().unwrap();
        }
        db.compact_range(None, None).unwrap();
        db.close().unwrap();
    }
    let mut out = Vec::new();
    let problems = strata::inspect::check(&db_dir, &opts(), &mut out).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    assert!(String::from_utf8(out).unwrap().contains("obsolete list"));
    let list = db_dir.join("OBSOLETE");
    let mut bytes = std::fs::read(&list).unwrap();
    bytes[0] ^= 0x10;
    std::fs::write(&list, &bytes).unwrap();
    let problems = strata::inspect::check(&db_dir, &opts(), &mut std::io::sink()).unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.file == list && p.what.contains("obsolete list")),
        "{problems:?}"
    );
}

/// A WAL that lost its tail, followed by one whose link record says it comes after writes
/// the first no longer holds (a power cut keeps each file's own prefix): repair stops its
/// replay at the hole, as an open does, so the writes it keeps are a prefix of them.
#[test]
fn a_hole_between_wals_ends_the_replay() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let db = Db::open(dir, small(&fs)).unwrap();
    let sync = strata::WriteOptions {
        sync: true,
        ..strata::WriteOptions::default()
    };
    let mut kept = BTreeMap::new();
    for i in 0..100u32 {
        let mut b = strata::WriteBatch::new();
        b.put(format!("a{i:03}"), value(i, 0, 100));
        db.write(&sync, b).unwrap();
        kept.insert(format!("a{i:03}").into_bytes(), value(i, 0, 100));
    }
    let first_wal = names_ending(&fs, dir, ".log").pop().expect("a WAL");
    let with_first = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    // The flush ends the first WAL; the next one starts with its link record.
    db.flush().unwrap();
    for i in 0..100u32 {
        let mut b = strata::WriteBatch::new();
        b.put(format!("b{i:03}"), value(i, 1, 100));
        db.write(&sync, b).unwrap();
    }
    let image = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    drop(db);
    // The first WAL back, cut in half, in place of the flush's table and list.
    for name in image.list(dir).unwrap() {
        if name.ends_with(".sst") || name == "OBSOLETE" {
            image.remove(&dir.join(name)).unwrap();
        }
    }
    let bytes = strata::fs::read_all(&with_first, &dir.join(&first_wal)).unwrap();
    // (A log may be longer than its records: zeros follow them.)
    let end = bytes.iter().rposition(|&b| b != 0).unwrap_or(0);
    let mut f = image.create(&dir.join(&first_wal)).unwrap();
    f.append(&bytes[..end / 2]).unwrap();
    f.sync().unwrap();
    image.sync_dir(dir).unwrap();
    let image = Arc::new(image);
    destroy_manifest(&image, dir);
    let report = repair(dir, &small(&image)).unwrap();
    assert!(
        report
            .damage
            .iter()
            .any(|d| d.2.contains("that the WALs before it lost")),
        "{:?}",
        report.damage
    );
    let db = Db::open(dir, small(&image)).unwrap();
    let got = contents(&db);
    assert!(!got.is_empty() && got.len() < 100, "{} keys", got.len());
    assert!(
        got.iter().all(|(k, v)| kept.get(k) == Some(v)),
        "writes after the hole came back"
    );
}

/// A repair rewrites OPTIONS's copy of the directories record, and keeps its options
/// lines: they are the application's (the `strata` tool opens with them), not the
/// repair's own.
#[test]
fn a_repair_keeps_the_applications_options_in_options() {
    let fs = Arc::new(MemFs::new());
    let app = || Options {
        fs: fs.clone(),
        ..Options::preset("blob").unwrap()
    };
    {
        let db = Db::open("/db", app()).unwrap();
        db.put(b"k", vec![b'v'; 2000]).unwrap();
        db.flush().unwrap();
    }
    let before =
        String::from_utf8(strata::fs::read_all(&*fs, Path::new("/db/OPTIONS")).unwrap()).unwrap();
    destroy_manifest(&fs, Path::new("/db"));
    strata::repair(
        "/db",
        &Options {
            fs: fs.clone(),
            ..Options::default()
        },
    )
    .unwrap();
    let after =
        String::from_utf8(strata::fs::read_all(&*fs, Path::new("/db/OPTIONS")).unwrap()).unwrap();
    let options = |t: &str| -> Vec<String> {
        t.lines()
            .take_while(|l| !l.starts_with("# where"))
            .map(String::from)
            .collect()
    };
    assert_eq!(options(&before), options(&after));
    assert!(
        after.contains("# where the database keeps its files"),
        "{after}"
    );
    let db = Db::open("/db", app()).unwrap();
    assert_eq!(db.get(b"k").unwrap().map(|v| v.len()), Some(2000));
}
