//! L0 layouts end to end: OHDB's buckets keep their tables within buckets and compact one
//! bucket at a time; a database opened with another layout than the one its manifest records
//! is migrated (L0 compacted away, then the new layout recorded), never misread.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::{BucketBoundaries, Db, L0Layout, Options};
use strata_testkit::model::assert_db_matches;

fn l0_files(db: &Db) -> usize {
    db.property("strata.num-files-at-level0")
        .unwrap()
        .parse()
        .unwrap()
}

fn key(i: u32) -> Vec<u8> {
    format!("k{:05}", (i * 7919) % 20000).into_bytes()
}

fn opts(fs: &Arc<MemFs>, layout: L0Layout) -> Options {
    Options {
        write_buffer_size: 128 << 10,
        l0_layout: layout,
        l0_buckets: 4,
        bucket_compaction_trigger: 3,
        level0_file_num_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 100,
        level0_stop_writes_trigger: 200,
        read_compaction_bytes: 0,
        fs: fs.clone(),
        ..Options::default()
    }
}

fn fill(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, round: u32, n: u32) {
    for i in 0..n {
        let v = format!("r{round}-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        model.insert(key(i), v);
    }
    db.flush().unwrap();
}

/// What the layout promises, through the public surface: tables per flush, compactions out
/// of L0 one bucket at a time, and reads that match a model throughout.
#[test]
fn each_flush_writes_one_table_per_bucket_and_buckets_compact_alone() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs, L0Layout::Buckets)).unwrap();
    let mut model = BTreeMap::new();
    fill(&db, &mut model, 0, 2000);
    // Sampled boundaries: quantiles of the first flush, so every bucket got a table.
    assert_eq!(l0_files(&db), 4);
    assert_db_matches(&db, &model);
    // Two more flushes bring every bucket to its trigger (3): buckets are compacted into
    // L1 one at a time, until none holds 3 tables.
    fill(&db, &mut model, 1, 2000);
    fill(&db, &mut model, 2, 2000);
    let t = std::time::Instant::now();
    while db.stats().merges_by_input_level[0] < 4 {
        assert!(t.elapsed().as_secs() < 30, "{:?}", db.stats());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(l0_files(&db) < 12);
    assert_db_matches(&db, &model);
    drop(db);
    // Reopened: the boundaries come back from the manifest.
    let db = Db::open("/db", opts(&fs, L0Layout::Buckets)).unwrap();
    assert_db_matches(&db, &model);
    fill(&db, &mut model, 3, 500);
    assert_db_matches(&db, &model);
}

#[test]
fn prefix_boundaries_put_text_keys_in_one_bucket() {
    let fs = Arc::new(MemFs::new());
    let o = Options {
        bucket_boundaries: BucketBoundaries::KeyPrefix,
        ..opts(&fs, L0Layout::Buckets)
    };
    let db = Db::open("/db", o).unwrap();
    let mut model = BTreeMap::new();
    fill(&db, &mut model, 0, 2000);
    // Every key starts with 'k': one bucket, one table (the paper's rule, and its weakness).
    assert_eq!(l0_files(&db), 1);
    assert_db_matches(&db, &model);
}

#[test]
fn another_layout_is_migrated_to_only_when_asked() {
    let fs = Arc::new(MemFs::new());
    let mut model = BTreeMap::new();
    {
        let db = Db::open("/db", opts(&fs, L0Layout::Flat)).unwrap();
        fill(&db, &mut model, 0, 2000);
        fill(&db, &mut model, 1, 1000);
        assert_eq!(l0_files(&db), 2);
    }
    // Other options alone never change the database's structure: it keeps its layout and
    // says so, and L0 is as it was.
    {
        let db = Db::open("/db", opts(&fs, L0Layout::Buckets)).unwrap();
        assert_eq!(db.property("strata.l0-layout").unwrap(), "Flat");
        assert_eq!(l0_files(&db), 2);
        assert_db_matches(&db, &model);
    }
    let migrating = |layout| Options {
        migrate_l0_layout: true,
        ..opts(&fs, layout)
    };
    // Flat -> buckets, asked for: L0 is compacted into L1 first, then the buckets start.
    {
        let db = Db::open("/db", migrating(L0Layout::Buckets)).unwrap();
        assert_eq!(db.property("strata.l0-layout").unwrap(), "Buckets");
        assert_eq!(l0_files(&db), 0);
        assert_db_matches(&db, &model);
        fill(&db, &mut model, 2, 2000);
        assert_eq!(l0_files(&db), 4, "a flush cuts one table per bucket now");
        assert_db_matches(&db, &model);
    }
    // A build's manifest now names the bucket feature.
    let current = strata::fs::read_all(&*fs, Path::new("/db/CURRENT")).unwrap();
    let manifest = String::from_utf8(current).unwrap();
    let m = strata::fs::read_all(&*fs, &Path::new("/db").join(manifest.trim())).unwrap();
    assert!(m.windows(10).any(|w| w == b"l0-buckets"));
    // Buckets -> flat.
    {
        let db = Db::open("/db", migrating(L0Layout::Flat)).unwrap();
        assert_eq!(l0_files(&db), 0);
        assert_db_matches(&db, &model);
        fill(&db, &mut model, 3, 2000);
        assert_eq!(l0_files(&db), 1);
        assert_db_matches(&db, &model);
    }
    let db = Db::open("/db", opts(&fs, L0Layout::Flat)).unwrap();
    assert_db_matches(&db, &model);
    assert!(fs.exists(Path::new("/db/CURRENT")));
}

#[test]
fn properties_give_the_layout_and_the_papers_columns() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs, L0Layout::Buckets)).unwrap();
    let mut model = BTreeMap::new();
    for round in 0..3 {
        fill(&db, &mut model, round, 2000);
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(db.property("strata.l0-layout").unwrap(), "Buckets");
    let num = |name: &str| -> u64 { db.property(name).unwrap().parse().unwrap() };
    assert!(num("strata.level-compactions") > 0);
    assert_eq!(num("strata.tables"), db.stats().tables() as u64);
    assert!(num("strata.compaction-bytes-read") > 0);
    assert!(num("strata.compaction-bytes-written") > 0);
    assert!(num("strata.total-bytes-written") > num("strata.compaction-bytes-written"));
    assert!(db.property("strata.stats").unwrap().contains("(TW)"));
}

/// OHDB-C's flush writes one table per bucket (in the first directory), then records them
/// all in one manifest edit. A crash between the two loses no write the database promised to
/// keep and leaves no table the manifest does not name, in either directory. (Writes here are
/// not synced, so recovery may replay fewer keys, in fewer buckets, than the cut-off flush
/// wrote: its tables cannot all be overwritten by recovery's own, which reuses their numbers.)
#[test]
fn a_flush_cut_off_before_its_record_loses_nothing_and_leaves_no_orphans() {
    use strata::fs::{CrashMode, FaultFs, FaultRule, FsOp};
    let tables_on_disk = |fs: &dyn Fs| -> usize {
        ["/db", "/levels"]
            .iter()
            .map(|d| {
                fs.list(Path::new(d))
                    .unwrap_or_default()
                    .iter()
                    .filter(|n| n.ends_with(".sst"))
                    .count()
            })
            .sum()
    };
    let build = |fs: FaultFs| {
        Options {
            level_dir: Some("/levels".into()),
            ..opts(&Arc::new(MemFs::new()), L0Layout::Buckets)
        }
        .with_fs(Arc::new(fs))
    };
    let fs = FaultFs::new(MemFs::new());
    let db = Db::open("/db", build(fs.clone())).unwrap();
    let mut model = BTreeMap::new();
    fill(&db, &mut model, 0, 2000); // flushed: the boundaries and four tables recorded
    let mut newer = BTreeMap::new();
    for i in 0..2000 {
        let v = format!("unsynced-{i}").into_bytes();
        db.put(key(i), &v).unwrap();
        newer.insert(key(i), v);
    }
    let before = tables_on_disk(&fs);
    fs.inject(FaultRule::always(FsOp::Append).on_paths("MANIFEST"));
    assert!(db.flush().is_err(), "the manifest edit was refused");
    let image = fs.crash_clone(CrashMode::DropUnsynced);
    assert!(
        tables_on_disk(&image) > before,
        "the cut-off flush left bucket tables behind"
    );
    drop(db);
    let db = Db::open("/db", build(image.clone())).unwrap();
    // Each key holds its flushed value or, if the WAL kept it, the later one; nothing else.
    let got: BTreeMap<Vec<u8>, Vec<u8>> = db
        .iter(strata::ReadOptions::default())
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(got.len(), model.len());
    for (k, v) in &got {
        assert!(v == &model[k] || v == &newer[k], "{k:?} holds {v:?}");
    }
    assert_eq!(
        tables_on_disk(&image),
        db.stats().tables(),
        "every table on disk is one the manifest names"
    );
}
