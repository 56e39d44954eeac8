//! Checkpoints (`Db::checkpoint`, docs/design/checkpoints.md): under every named
//! configuration, a checkpoint taken while a writer and the background jobs run opens
//! without repair and holds exactly the writes up to one instant between the call and its
//! return; it survives a power cut once returned, is independent of the database it came
//! from, and a failure part way leaves no target.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use strata::fs::{CrashMode, FaultFs, FaultRule, Fs, FsOp, MemFs};
use strata::{Db, ErrorKind};
use strata_testkit::configs::configs;
use strata_testkit::copies::{check, model, write};
use strata_testkit::model::assert_db_matches;

#[test]
fn a_checkpoint_under_writes_and_compactions_holds_one_instant_under_every_config() {
    let mut checked = Vec::new();
    for config in configs() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = Arc::new(Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap());
        let acked = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Acquire) || i < 3_000 {
                    write(&db, i);
                    i += 1;
                    acked.store(i, Ordering::Release);
                }
            })
        };
        while acked.load(Ordering::Acquire) < 1_500 {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        db.checkpoint("/ckpt")
            .unwrap_or_else(|e| panic!("{}: checkpoint: {e}", config.name));
        // Writes begun before the return: at most those acknowledged now, plus one.
        let after = acked.load(Ordering::Acquire);
        stop.store(true, Ordering::Release);
        writer.join().unwrap();
        let n = check(&config, &fs, "/ckpt", before - 1, after);
        let levels = db.stats().files_per_level;
        eprintln!(
            "{}: checkpoint at write {n} of {before}..{after}, levels {levels:?}",
            config.name
        );
        checked.push(config.name);
        // The database goes on as it was, and the two are independent.
        db.put(b"only-in-db", b"1").unwrap();
        db.compact_range(None, None).unwrap();
        let c = Db::open("/ckpt", (config.build)(Path::new("/ckpt"), fs.clone())).unwrap();
        assert_eq!(c.get(b"only-in-db").unwrap(), None, "{}", config.name);
        c.put(b"only-in-checkpoint", b"1").unwrap();
        c.compact_range(None, None).unwrap();
        c.close().unwrap();
        assert_eq!(
            db.get(b"only-in-checkpoint").unwrap(),
            None,
            "{}",
            config.name
        );
        assert_eq!(
            db.get(b"last").unwrap(),
            Some(
                acked
                    .load(Ordering::Acquire)
                    .saturating_sub(1)
                    .to_string()
                    .into_bytes()
            ),
            "{}",
            config.name
        );
        db.close().unwrap();
        let mut m = model(n);
        m.insert(b"only-in-checkpoint".to_vec(), b"1".to_vec());
        let c = Db::open("/ckpt", (config.build)(Path::new("/ckpt"), fs.clone())).unwrap();
        assert_db_matches(&c, &m);
        c.close().unwrap();
    }
    assert!(checked.len() >= 20, "checked only {checked:?}");
}

#[test]
fn a_returned_checkpoint_survives_a_power_cut() {
    for name in [
        "default",
        "blob",
        "cleveldb",
        "ohdb-2dc",
        "two-dirs",
        "rocksdb-l0-nvm",
    ] {
        let config = strata_testkit::configs::named(name);
        let mem = MemFs::new();
        let fs: Arc<dyn Fs> = Arc::new(mem.clone());
        let db = Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap();
        for i in 0..2_000 {
            write(&db, i);
        }
        db.checkpoint("/ckpt").unwrap();
        // The power goes: only what was synced is left (the database itself is not
        // closed).
        let cut: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
        check(&config, &cut, "/ckpt", 1_999, 1_999);
        db.close().unwrap();
    }
}

#[test]
fn a_failed_checkpoint_leaves_no_target_and_the_next_one_succeeds() {
    let config = strata_testkit::configs::named("blob");
    let faults = Arc::new(FaultFs::new(MemFs::new()));
    let fs: Arc<dyn Fs> = faults.clone();
    let db = Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap();
    for i in 0..2_000 {
        write(&db, i);
    }
    db.flush().unwrap();
    // Fail each file-creating step of the copy in turn (the fault-injecting file system
    // makes no links: every file is copied).
    let mut failed = 0;
    for (op, n) in (0..40)
        .map(|n| (FsOp::Create, n))
        .chain((0..40).map(|n| (FsOp::Sync, n)))
    {
        faults.clear();
        faults.inject(FaultRule::nth(op, n, std::io::ErrorKind::Other).on_paths("/ckpt"));
        match db.checkpoint("/ckpt") {
            Ok(()) => {
                faults.clear();
                check(&config, &fs, "/ckpt", 1_999, 1_999);
                // Gone again for the next turn (a checkpoint goes to a new directory).
                let e = db.checkpoint("/ckpt").unwrap_err();
                assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
                return_to_fresh(&fs);
            }
            Err(e) => {
                failed += 1;
                assert!(fs.list(Path::new("/ckpt")).is_err(), "{op:?} {n}: {e}");
            }
        }
    }
    assert!(
        failed > 10,
        "only {failed} injected failures hit the checkpoint"
    );
    faults.clear();
    db.checkpoint("/ckpt").unwrap();
    check(&config, &fs, "/ckpt", 1_999, 1_999);
    db.close().unwrap();
}

/// Moves a finished checkpoint out of the way (the file system removes files, not
/// directories: it is renamed).
fn return_to_fresh(fs: &Arc<dyn Fs>) {
    static TURN: AtomicU64 = AtomicU64::new(0);
    let n = TURN.fetch_add(1, Ordering::Relaxed);
    fs.rename(Path::new("/ckpt"), Path::new(&format!("/done-{n}")))
        .unwrap();
}

#[test]
fn a_checkpoint_refuses_a_target_that_exists_has_no_parent_or_is_inside_a_database() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = Db::open("/db", strata::Options::default().with_fs(fs.clone())).unwrap();
    db.put(b"a", b"1").unwrap();
    fs.create_dir_all(Path::new("/taken")).unwrap();
    let mut w = fs.create(Path::new("/afile")).unwrap();
    w.sync().unwrap();
    drop(w);
    for (dir, says) in [
        ("/taken", "exists"),
        ("/no/such/parent", "does not exist"),
        ("/afile/x", "is not a directory"),
        ("/db/inner", "inside the database directory /db"),
    ] {
        let e = db.checkpoint(dir).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
    // Nor backups in a database's directory, or inside one.
    for dir in ["/db", "/db/backups"] {
        let e = strata::BackupEngine::open_in(dir, fs.clone())
            .err()
            .unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(e.to_string().contains("a database directory (/db)"), "{e}");
    }
    db.close().unwrap();
}

#[test]
fn a_checkpoint_on_real_files_links_its_tables() {
    let dir = strata_testkit::tempdir::TempDir::new("checkpoint");
    let db = Db::open(dir.path().join("db"), strata::Options::default()).unwrap();
    for i in 0..2_000 {
        write(&db, i);
    }
    let ckpt = dir.path().join("ckpt");
    db.checkpoint(&ckpt).unwrap();
    db.close().unwrap();
    // The tables are the database's own files under a second name.
    use std::os::unix::fs::MetadataExt;
    let tables: Vec<_> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sst"))
        .collect();
    assert!(!tables.is_empty());
    for t in &tables {
        assert_eq!(std::fs::metadata(t).unwrap().nlink(), 2, "{}", t.display());
    }
    let c = Db::open(&ckpt, strata::Options::default()).unwrap();
    assert_db_matches(&c, &model(1_999));
    c.close().unwrap();
}

/// A matrix L0 on real files: the checkpoint's region holds the pages of the rows the
/// frozen version names (rows written after it are not in it), and the copy opens with a
/// persistent-memory directory of its own, or with none.
#[test]
fn a_checkpoint_of_a_matrix_copies_its_rows_on_real_files() {
    let dir = strata_testkit::tempdir::TempDir::new("checkpoint-matrix");
    let opts = |pmem: &str| strata::Options {
        write_buffer_size: 64 << 10,
        matrix_container_size: 4 << 20,
        ..strata::Options::matrixkv(dir.path().join(pmem))
    };
    let db = Db::open(dir.path().join("db"), opts("pmem")).unwrap();
    for i in 0..3_000 {
        write(&db, i);
    }
    db.flush().unwrap();
    let rows = db.property("strata.l0-layout").unwrap();
    assert!(rows.starts_with("Matrix"), "{rows}");
    let (a, b) = (dir.path().join("cp-a"), dir.path().join("cp-b"));
    db.checkpoint(&a).unwrap();
    db.checkpoint(&b).unwrap();
    for i in 3_000..4_000 {
        write(&db, i);
    }
    db.flush().unwrap();
    assert!(a.join("matrix.pmem").exists(), "the region is copied");
    // With a directory of its own for persistent memory, then with none.
    let c = Db::open(&a, opts("cp-a-pmem")).unwrap();
    assert_db_matches(&c, &model(2_999));
    for i in 3_000..3_500 {
        write(&c, i);
    }
    c.flush().unwrap();
    c.close().unwrap();
    let c = Db::open(&a, opts("cp-a-pmem")).unwrap();
    assert_db_matches(&c, &model(3_499));
    c.close().unwrap();
    let c = Db::open(
        &b,
        strata::Options {
            pmem_dir: None,
            wal_in_pmem: false,
            ..opts("unused")
        },
    )
    .unwrap();
    assert_db_matches(&c, &model(2_999));
    c.close().unwrap();
    // Opened again with a persistent-memory directory of its own, the copy keeps using the
    // region in its directory, and a read-only view beside the writer takes the pages'
    // generations there, where the writer bumps them.
    let c = Db::open(&b, opts("cp-b-pmem")).unwrap();
    assert_db_matches(&c, &model(2_999));
    let view = Db::open_read_only(&b, opts("cp-b-pmem")).unwrap();
    for i in 5_000..6_000 {
        write(&c, i);
    }
    c.flush().unwrap();
    c.compact_range(None, None).unwrap();
    assert!(
        b.join("pages.gen").exists(),
        "the generations beside the region"
    );
    assert!(!dir.path().join("cp-b-pmem").join("matrix.pmem").exists());
    drop(view);
    c.close().unwrap();
    // A second region in pmem_dir (the files copied rather than moved): refused, changing
    // nothing, until one of them goes.
    let stray = dir.path().join("cp-b-pmem").join("matrix.pmem");
    std::fs::copy(b.join("matrix.pmem"), &stray).unwrap();
    let e = Db::open(&b, opts("cp-b-pmem")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.to_string().contains("two matrix regions"), "{e}");
    std::fs::remove_file(&stray).unwrap();
    let c = Db::open(&b, opts("cp-b-pmem")).unwrap();
    c.close().unwrap();
    let c = Db::open(&a, opts("cp-a-pmem")).unwrap();
    assert_db_matches(&c, &model(3_499));
    c.close().unwrap();
    assert_db_matches(&db, &model(3_999));
    db.close().unwrap();
}

#[test]
fn a_checkpoint_opened_with_the_originals_directories_is_refused_and_the_original_kept() {
    for name in [
        "blob",
        "two-dirs",
        "rocksdb-l0-nvm",
        "ohdb-2dc",
        "matrixkv",
        "hashkv-wt",
    ] {
        let config = strata_testkit::configs::named(name);
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap();
        for i in 0..2_000 {
            write(&db, i);
        }
        db.checkpoint("/ckpt").unwrap();
        // The original's own options, directories and all, at the checkpoint's path: it
        // would write its files into the original's directories and delete theirs.
        let e = Db::open("/ckpt", (config.build)(Path::new("/db"), fs.clone())).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{name}: {e}");
        assert_db_matches(&db, &model(1_999));
        db.close().unwrap();
        let db = Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap();
        assert_db_matches(&db, &model(1_999));
        db.close().unwrap();
        // With directories of its own it opens.
        check(&config, &fs, "/ckpt", 1_999, 1_999);
    }
}

#[test]
fn a_checkpoint_taken_under_writes_survives_a_power_cut_at_its_return() {
    for name in ["default", "blob", "wisckey", "cleveldb"] {
        let config = strata_testkit::configs::named(name);
        let mem = MemFs::new();
        let fs: Arc<dyn Fs> = Arc::new(mem.clone());
        let db = Arc::new(Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap());
        let acked = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Acquire) {
                    write(&db, i);
                    i += 1;
                    acked.store(i, Ordering::Release);
                }
            })
        };
        while acked.load(Ordering::Acquire) < 2_000 {
            std::thread::yield_now();
        }
        let before = acked.load(Ordering::Acquire);
        db.checkpoint("/ckpt").unwrap();
        let after = acked.load(Ordering::Acquire);
        // The power goes as the call returns; the writer and the background jobs were
        // running.
        let cut: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
        stop.store(true, Ordering::Release);
        writer.join().unwrap();
        check(&config, &cut, "/ckpt", before - 1, after);
        db.close().unwrap();
    }
}

/// A matrix checkpoint whose manifest is lost before it was ever opened: repair finds its
/// rows through the row directory the checkpoint wrote beside the region.
#[test]
fn a_matrix_checkpoint_never_opened_survives_the_loss_of_its_manifest() {
    let dir = strata_testkit::tempdir::TempDir::new("checkpoint-matrix-repair");
    let opts = |pmem: Option<&str>| matrix_opts(dir.path(), pmem);
    let cp = checkpointed_matrix(dir.path());
    assert!(
        cp.join("matrix.dir").exists(),
        "a row directory beside the region"
    );
    for entry in std::fs::read_dir(&cp).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "CURRENT" || name.starts_with("MANIFEST") {
            std::fs::remove_file(&path).unwrap();
        }
    }
    let report = strata::repair(&cp, &opts(None)).unwrap();
    assert!(report.damage.is_empty(), "{report:?}");
    assert!(report.l0_parts_read > 0, "{report:?}");
    let c = Db::open(&cp, opts(None)).unwrap();
    assert_db_matches(&c, &model(2_999));
    c.close().unwrap();
}

/// A copy is taken for self-contained only while it is as the checkpoint left it: its
/// region moved into a persistent-memory directory of its own (as the design page allows),
/// a repair without that directory is refused rather than dropping the rows; and once
/// repaired (a new manifest), the copy's record is its own.
#[test]
fn a_copy_is_self_contained_only_as_the_checkpoint_left_it() {
    let dir = strata_testkit::tempdir::TempDir::new("checkpoint-matrix-moved");
    let opts = |pmem: Option<&str>| matrix_opts(dir.path(), pmem);
    let cp = checkpointed_matrix(dir.path());
    let own = dir.path().join("cp-pmem");
    std::fs::create_dir(&own).unwrap();
    std::fs::rename(cp.join("matrix.pmem"), own.join("matrix.pmem")).unwrap();
    let e = strata::repair(&cp, &opts(None)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    // Back where the checkpoint put it: a self-contained copy again, repaired alone.
    std::fs::rename(own.join("matrix.pmem"), cp.join("matrix.pmem")).unwrap();
    let report = strata::repair(&cp, &opts(None)).unwrap();
    assert!(report.damage.is_empty(), "{report:?}");
    let c = Db::open(&cp, opts(None)).unwrap();
    assert_db_matches(&c, &model(2_999));
    c.close().unwrap();
}

/// A copy whose region and row directory were moved into a persistent-memory directory of
/// its own, as the design page allows, is still a copy when that directory is given: its
/// repair reads nothing of the original's directories and keeps every row.
#[test]
fn a_copy_whose_region_moved_into_its_pmem_dir_is_still_a_copy() {
    let dir = strata_testkit::tempdir::TempDir::new("checkpoint-matrix-own-pmem");
    let cp = checkpointed_matrix(dir.path());
    let own = dir.path().join("cp-pmem");
    std::fs::create_dir(&own).unwrap();
    for f in ["matrix.pmem", "matrix.dir"] {
        std::fs::rename(cp.join(f), own.join(f)).unwrap();
    }
    let report = strata::repair(&cp, &matrix_opts(dir.path(), Some("cp-pmem"))).unwrap();
    assert!(report.damage.is_empty(), "{report:?}");
    let c = Db::open(&cp, matrix_opts(dir.path(), Some("cp-pmem"))).unwrap();
    assert_db_matches(&c, &model(2_999));
    c.close().unwrap();
}

/// A small `matrixkv` database's options under `dir`, its region in `dir/PMEM` (none: in
/// the database directory).
fn matrix_opts(dir: &Path, pmem: Option<&str>) -> strata::Options {
    strata::Options {
        write_buffer_size: 64 << 10,
        matrix_container_size: 4 << 20,
        pmem_dir: pmem.map(|p| dir.join(p)),
        wal_in_pmem: pmem.is_some(),
        ..strata::Options::matrixkv(dir.join("pmem"))
    }
}

/// Writes 3,000 writes into a `matrixkv` database at `dir/db` (region in `dir/pmem`),
/// checkpoints it to `dir/cp` and closes it; returns the checkpoint's path.
fn checkpointed_matrix(dir: &Path) -> std::path::PathBuf {
    let db = Db::open(dir.join("db"), matrix_opts(dir, Some("pmem"))).unwrap();
    for i in 0..3_000 {
        write(&db, i);
    }
    db.flush().unwrap();
    let cp = dir.join("cp");
    db.checkpoint(&cp).unwrap();
    db.close().unwrap();
    cp
}
