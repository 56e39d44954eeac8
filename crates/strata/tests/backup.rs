//! Backups (`BackupEngine`, docs/design/backups.md) under every named configuration: a
//! backup taken while a writer and the background jobs run restores to a database holding
//! exactly the writes up to one instant during the call; backups share unchanged files; a
//! damaged file is found by `verify` and refused by `restore`; a backup cut short by a
//! failure or a power cut leaves the directory usable, the backup absent, its files gone at
//! the next open; `purge` keeps the newest and what they need.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use strata::fs::{CrashMode, FaultFs, FaultRule, Fs, FsOp, MemFs};
use strata::{BackupEngine, Db, ErrorKind};
use strata_testkit::configs::{configs, named};
use strata_testkit::copies::{check, write};

fn shared_files(fs: &Arc<dyn Fs>) -> usize {
    fs.list(Path::new("/backups/shared")).unwrap().len()
}

fn private_files(fs: &Arc<dyn Fs>) -> usize {
    fs.list(Path::new("/backups/private")).unwrap().len()
}

#[test]
fn backups_under_writes_hold_one_instant_share_files_and_restore_under_every_config() {
    let mut checked = Vec::new();
    for config in configs() {
        let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
        let db = Arc::new(Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap());
        let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
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
        let mut instants = Vec::new();
        for want in [1_000, 2_000] {
            while acked.load(Ordering::Acquire) < want {
                std::thread::yield_now();
            }
            let before = acked.load(Ordering::Acquire);
            let info = engine
                .create_backup(&db)
                .unwrap_or_else(|e| panic!("{}: backup: {e}", config.name));
            let after = acked.load(Ordering::Acquire);
            instants.push((info.id, before, after));
        }
        stop.store(true, Ordering::Release);
        writer.join().unwrap();
        // At rest: a backup after one copies no data file (its own four files only).
        let before = acked.load(Ordering::Acquire);
        db.compact_range(None, None).unwrap();
        let rest = engine.create_backup(&db).unwrap();
        instants.push((rest.id, before, before));
        // (A value store's GC may still rewrite a file at rest: then once more.)
        let mut quiet = engine.create_backup(&db).unwrap();
        instants.push((quiet.id, before, before));
        for _ in 0..20 {
            if quiet.copied_files == 4 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            quiet = engine.create_backup(&db).unwrap();
            instants.push((quiet.id, before, before));
        }
        assert_eq!(quiet.copied_files, 4, "{}: {quiet:?}", config.name);
        let infos = engine.list().unwrap();
        assert_eq!(
            infos.iter().map(|i| i.id).collect::<Vec<_>>(),
            (1..=quiet.id).collect::<Vec<_>>(),
            "{}",
            config.name
        );
        for &(id, lo, hi) in &instants {
            engine.verify(id).unwrap();
            let dir = format!("/restored-{id}");
            engine.restore(id, &dir).unwrap();
            check(&config, &fs, &dir, lo - 1, hi);
        }
        // The newest kept, and what it needs; the others and their files gone.
        let (shared, private) = (shared_files(&fs), private_files(&fs));
        assert_eq!(engine.purge(1).unwrap() as u64, quiet.id - 1);
        // (A matrix keeps most of its data in L0 rows, copied into each backup's own
        // files: the earlier backups may share no file the newest does not.)
        assert!(
            shared_files(&fs) < shared || private_files(&fs) < private,
            "{}",
            config.name
        );
        let own = format!("{}-", quiet.id);
        assert!(
            fs.list(Path::new("/backups/private"))
                .unwrap()
                .iter()
                .all(|n| n.starts_with(&own)),
            "{}: a purged backup's own files are left",
            config.name
        );
        assert_eq!(engine.list().unwrap().len(), 1);
        engine.verify(quiet.id).unwrap();
        engine.restore(quiet.id, "/again").unwrap();
        check(&config, &fs, "/again", before - 1, before);
        assert_eq!(
            engine.verify(1).unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
        checked.push(config.name);
        drop(engine);
        db.close().unwrap();
    }
    assert!(checked.len() >= 20, "checked only {checked:?}");
}

#[test]
fn a_damaged_backup_is_found_by_verify_and_refused_by_restore() {
    let config = named("blob");
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap();
    for i in 0..2_000 {
        write(&db, i);
    }
    let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
    engine.create_backup(&db).unwrap();
    // Flip a byte of the largest shared file.
    let dir = Path::new("/backups/shared");
    let victim = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .max_by_key(|n| fs.file_size(&dir.join(n)).unwrap())
        .unwrap();
    let path = dir.join(&victim);
    let mut bytes = strata::fs::read_all(&*fs, &path).unwrap();
    bytes[100] ^= 0x40;
    fs.remove(&path).unwrap();
    let mut w = fs.create(&path).unwrap();
    w.append(&bytes).unwrap();
    w.sync().unwrap();
    drop(w);
    let e = engine.verify(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    let e = engine.restore(1, "/restored").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(
        fs.list(Path::new("/restored")).is_err(),
        "no target after a refused restore"
    );
    // Refused targets: the database's own directory, one that exists, an unknown backup.
    assert_eq!(
        engine.restore(1, "/db").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    fs.create_dir_all(Path::new("/taken")).unwrap();
    assert_eq!(
        engine.restore(1, "/taken").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        engine.restore(9, "/new").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    // A second engine on the same directory is refused while this one holds it.
    assert_eq!(
        BackupEngine::open_in("/backups", fs.clone())
            .unwrap_err()
            .kind(),
        ErrorKind::Busy
    );
    db.close().unwrap();
}

#[test]
fn a_backup_cut_short_leaves_the_directory_usable_and_is_not_listed() {
    let config = named("blob");
    let mem = MemFs::new();
    let faults = Arc::new(FaultFs::new(mem.clone()));
    let fs: Arc<dyn Fs> = faults.clone();
    let db = Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap();
    for i in 0..1_000 {
        write(&db, i);
    }
    {
        let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
        engine.create_backup(&db).unwrap();
    }
    let mut failed = 0;
    for i in 1_000..1_040u64 {
        write(&db, i);
        db.flush().unwrap();
        // Fail one step of the backup's writing (each turn a later one), then cut the
        // power: the directory as a crash there leaves it.
        let n = (i - 1_000) / 2;
        let op = if i % 2 == 0 { FsOp::Create } else { FsOp::Sync };
        faults.inject(FaultRule::nth(op, n, std::io::ErrorKind::Other).on_paths("/backups"));
        let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
        let made = engine.create_backup(&db);
        faults.clear();
        drop(engine);
        let cut: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
        let after = BackupEngine::open_in("/backups", cut.clone()).unwrap();
        assert!(
            after.damaged().unwrap().is_empty(),
            "turn {i}: a damaged description"
        );
        let listed = after.list().unwrap();
        match &made {
            Ok(info) => assert_eq!(listed.last().map(|l| l.id), Some(info.id)),
            Err(_) => {
                failed += 1;
            }
        }
        for b in &listed {
            after
                .verify(b.id)
                .unwrap_or_else(|e| panic!("turn {i}: backup {}: {e}", b.id));
        }
        // Only files some backup names are left once the directory is opened again.
        let named: usize = listed.iter().map(|b| b.files).sum();
        let held = cut.list(Path::new("/backups/shared")).unwrap().len()
            + cut.list(Path::new("/backups/private")).unwrap().len();
        assert!(held <= named, "turn {i}: {held} files for {named} named");
        let last = listed.last().unwrap();
        let target = format!("/r{i}");
        after.restore(last.id, &target).unwrap();
        let r = Db::open(&target, (config.build)(Path::new(&target), cut.clone())).unwrap();
        assert!(r.get(b"last").unwrap().is_some());
        r.close().unwrap();
    }
    assert!(failed > 10, "only {failed} injected failures hit a backup");
    // And the live directory goes on.
    let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
    let info = engine.create_backup(&db).unwrap();
    engine.verify(info.id).unwrap();
    db.close().unwrap();
}

#[test]
fn a_second_backup_copies_only_what_changed() {
    let config = named("default");
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let mut opts = (config.build)(Path::new("/db"), fs.clone());
    opts.write_buffer_size = 64 << 10;
    opts.target_file_size_base = 64 << 10;
    let db = Db::open("/db", opts).unwrap();
    for i in 0..20_000u64 {
        db.put(format!("k{i:06}"), format!("{i}").repeat(10))
            .unwrap();
    }
    db.compact_range(None, None).unwrap();
    let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
    let first = engine.create_backup(&db).unwrap();
    assert!(first.files > 20, "{first:?}");
    for i in 0..50u64 {
        db.put(format!("k{i:06}"), "changed").unwrap();
    }
    let second = engine.create_backup(&db).unwrap();
    // The new L0 table and the copy's own four files; every other table shared.
    assert_eq!(second.copied_files, 5, "{second:?}");
    assert!(second.copied_bytes * 10 < second.bytes, "{second:?}");
    // The last write each holds, by its sequence (one put each).
    assert_eq!((first.sequence, second.sequence), (20_000, 20_050));
    engine.restore(2, "/restored").unwrap();
    let r = Db::open(
        "/restored",
        (config.build)(Path::new("/restored"), fs.clone()),
    )
    .unwrap();
    assert_eq!(r.get("k000007").unwrap().as_deref(), Some(&b"changed"[..]));
    assert_eq!(
        r.get("k019999").unwrap().as_deref(),
        Some("19999".repeat(10).as_bytes())
    );
    r.close().unwrap();
    db.close().unwrap();
}

/// The edges a review found: a backup directory made in new parent directories survives a
/// power cut right after its first backup; backups and purges from two threads of one
/// engine leave every listed backup whole; a purge keeps the newest readable backups
/// whatever a damaged description says; a directory that is not the engine's in `shared/`
/// does not keep it from opening; a restore into the backup directory is refused.
#[test]
fn a_backup_directory_survives_power_cuts_threads_damage_and_strangers() {
    let config = named("default");
    let mem = MemFs::new();
    let fs: Arc<dyn Fs> = Arc::new(mem.clone());
    let db = Arc::new(Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap());
    for i in 0..500 {
        write(&db, i);
    }
    let engine = Arc::new(BackupEngine::open_in("/mnt/new/backups", fs.clone()).unwrap());
    engine.create_backup(&db).unwrap();
    let cut: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
    let after = BackupEngine::open_in("/mnt/new/backups", cut).unwrap();
    assert_eq!(
        after.list().unwrap().len(),
        1,
        "the first backup survives the cut"
    );
    drop(after);
    // Two threads: one backs up, one purges.
    let backer = {
        let (engine, db) = (engine.clone(), db.clone());
        std::thread::spawn(move || {
            for i in 500..530 {
                write(&db, i);
                engine.create_backup(&db).unwrap();
            }
        })
    };
    for _ in 0..30 {
        engine.purge(2).unwrap();
    }
    backer.join().unwrap();
    for b in engine.list().unwrap() {
        engine.verify(b.id).unwrap();
    }
    // A damaged description: a purge keeps the newest readable backups.
    engine.purge(0).unwrap();
    let a = engine.create_backup(&db).unwrap();
    let b = engine.create_backup(&db).unwrap();
    let meta = format!("/mnt/new/backups/meta/{}", b.id);
    let mut bytes = strata::fs::read_all(&*fs, Path::new(&meta)).unwrap();
    bytes[20] ^= 1;
    fs.remove(Path::new(&meta)).unwrap();
    let mut w = fs.create(Path::new(&meta)).unwrap();
    w.append(&bytes).unwrap();
    w.sync().unwrap();
    drop(w);
    assert_eq!(engine.purge(1).unwrap(), 0);
    engine.verify(a.id).unwrap();
    engine.delete(b.id).unwrap();
    // A stranger's directory in shared/, and a restore into the backup directory.
    fs.create_dir_all(Path::new("/mnt/new/backups/shared/lost+found"))
        .unwrap();
    drop(engine);
    let engine = BackupEngine::open_in("/mnt/new/backups", fs.clone()).unwrap();
    engine.verify(a.id).unwrap();
    assert_eq!(
        engine
            .restore(a.id, "/mnt/new/backups/shared/x")
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    db.close().unwrap();
}

/// A backup's sequence is the last write it holds, under a writer racing it (the manifest's
/// last sequence may name writes of the next memtable, which the backup leaves out; the
/// matrix's rows name no sequences, and the memtable the copy's flush takes holds writes
/// made after the call began).
#[test]
fn a_backups_sequence_is_the_last_write_it_holds() {
    for name in ["default", "matrixkv", "cleveldb"] {
        a_backups_sequence_is_the_last_write_it_holds_under(name);
    }
}

fn a_backups_sequence_is_the_last_write_it_holds_under(name: &str) {
    let config = named(name);
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = Arc::new(Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap());
    let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            // One put per write: put i has sequence i + 1.
            let mut i = 0u64;
            while !stop.load(Ordering::Acquire) || i < 20_000 {
                db.put(format!("{i:08}"), "v").unwrap();
                i += 1;
            }
        })
    };
    let mut infos = Vec::new();
    for _ in 0..5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        infos.push(engine.create_backup(&db).unwrap());
    }
    stop.store(true, Ordering::Release);
    writer.join().unwrap();
    for info in infos {
        let dir = format!("/r{}", info.id);
        engine.restore(info.id, &dir).unwrap();
        let r = Db::open(&dir, (config.build)(Path::new(&dir), fs.clone())).unwrap();
        let mut it = r.iter(strata::ReadOptions::default()).unwrap();
        it.seek_to_last();
        let last: u64 = std::str::from_utf8(it.key()).unwrap().parse().unwrap();
        assert_eq!(info.sequence, last + 1, "{name}: {info:?}");
        drop(it);
        r.close().unwrap();
    }
    db.close().unwrap();
}

/// A backup's id is never given again, even after the newest is deleted or purged and the
/// directory opened anew; a backup whose description is damaged is left out of `list`,
/// named by `damaged`, refused by `verify`, and goes with `delete`.
#[test]
fn ids_are_never_reused_and_a_damaged_description_is_listed_apart() {
    let config = named("default");
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let db = Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap();
    let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
    let mut ids = Vec::new();
    for i in 0..3 {
        write(&db, i);
        ids.push(engine.create_backup(&db).unwrap().id);
    }
    assert_eq!(ids, [1, 2, 3]);
    engine.delete(3).unwrap();
    assert_eq!(
        engine.create_backup(&db).unwrap().id,
        4,
        "3 was given before"
    );
    assert_eq!(engine.purge(0).unwrap(), 3);
    drop(engine);
    let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
    assert!(engine.list().unwrap().is_empty());
    assert_eq!(engine.create_backup(&db).unwrap().id, 5);
    assert_eq!(engine.create_backup(&db).unwrap().id, 6);
    // Damage backup 5's description.
    let meta = Path::new("/backups/meta/5");
    let mut bytes = strata::fs::read_all(&*fs, meta).unwrap();
    bytes[20] ^= 1;
    fs.remove(meta).unwrap();
    let mut w = fs.create(meta).unwrap();
    w.append(&bytes).unwrap();
    w.sync().unwrap();
    drop(w);
    let listed: Vec<u64> = engine.list().unwrap().iter().map(|b| b.id).collect();
    assert_eq!(listed, [6]);
    let damaged = engine.damaged().unwrap();
    assert_eq!(damaged.len(), 1);
    assert_eq!(damaged[0].0, 5);
    assert_eq!(damaged[0].1.kind(), ErrorKind::Corruption);
    assert_eq!(engine.verify(5).unwrap_err().kind(), ErrorKind::Corruption);
    engine.verify(6).unwrap();
    engine.delete(5).unwrap();
    assert!(engine.damaged().unwrap().is_empty());
    assert_eq!(engine.create_backup(&db).unwrap().id, 7);
    // The record of the largest deleted id carries its checksum: a flipped digit is damage,
    // not another id.
    let last = Path::new("/backups/meta/LAST");
    let mut bytes = strata::fs::read_all(&*fs, last).unwrap();
    assert!(
        bytes.starts_with(b"4 "),
        "{:?}",
        String::from_utf8_lossy(&bytes)
    );
    bytes[0] = b'3';
    fs.remove(last).unwrap();
    let mut w = fs.create(last).unwrap();
    w.append(&bytes).unwrap();
    w.sync().unwrap();
    drop(w);
    assert_eq!(
        engine.create_backup(&db).unwrap_err().kind(),
        ErrorKind::Corruption
    );
    drop(engine);
    db.close().unwrap();
}

/// A power cut in the middle of `delete`, `purge` or `restore` (one of its removals,
/// creations or syncs failing first, each turn a later one) leaves a directory whose every
/// listed backup verifies and restores, and a restore target either absent or whole.
#[test]
fn deletes_purges_and_restores_cut_by_a_power_cut_leave_whole_backups() {
    let config = named("blob");
    for turn in 0..18u64 {
        let mem = MemFs::new();
        let faults = Arc::new(FaultFs::new(mem.clone()));
        let fs: Arc<dyn Fs> = faults.clone();
        let db = Db::open("/db", (config.build)(Path::new("/db"), fs.clone())).unwrap();
        let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
        for round in 0..4u64 {
            for i in round * 300..(round + 1) * 300 {
                write(&db, i);
            }
            db.flush().unwrap();
            engine.create_backup(&db).unwrap();
        }
        let n = turn / 3;
        let (op, what) = match turn % 3 {
            0 => (FsOp::Remove, "purge"),
            1 => (FsOp::Remove, "delete"),
            _ => (
                if n % 2 == 0 { FsOp::Create } else { FsOp::Sync },
                "restore",
            ),
        };
        faults.inject(FaultRule::nth(op, n / 2, std::io::ErrorKind::Other));
        let done = match what {
            "purge" => engine.purge(1).map(|_| ()),
            "delete" => engine.delete(2),
            _ => engine.restore(3, "/restored"),
        };
        faults.clear();
        drop(engine);
        let cut: Arc<dyn Fs> = Arc::new(mem.crash_clone(CrashMode::DropUnsynced));
        let after = BackupEngine::open_in("/backups", cut.clone())
            .unwrap_or_else(|e| panic!("turn {turn} ({what}, {done:?}): open: {e}"));
        assert!(after.damaged().unwrap().is_empty(), "turn {turn}");
        let listed = after.list().unwrap();
        assert!(!listed.is_empty(), "turn {turn}: every backup gone");
        if done.is_ok() && what == "purge" {
            assert_eq!(listed.len(), 1, "turn {turn}");
        }
        for b in &listed {
            after
                .verify(b.id)
                .unwrap_or_else(|e| panic!("turn {turn} ({what}): backup {}: {e}", b.id));
        }
        if what == "restore" {
            if cut.exists(Path::new("/restored")) {
                check(&config, &cut, "/restored", 0, 1_199);
            } else {
                assert!(
                    done.is_err(),
                    "turn {turn}: a restore that returned left nothing"
                );
            }
        }
        let newest = listed.last().unwrap();
        after.restore(newest.id, "/again").unwrap();
        check(&config, &cut, "/again", 0, 1_199);
        drop(db);
    }
}

/// A backup restored and moved onto the original's path (the original's directory gone,
/// its WAL directory left holding WALs of writes after the backup) and opened with the original's
/// options: the restored copy does not take that directory for its own (it would replay
/// the original's later WALs onto the backup, writes with a gap before them); the open is
/// refused, naming it, and once it is emptied the copy opens holding the backup exactly.
#[test]
fn a_backup_restored_onto_the_originals_path_does_not_take_its_directories() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let opts = || strata::Options {
        fs: fs.clone(),
        wal_dir: Some("/wal".into()),
        ..strata::Options::default()
    };
    let db = Db::open("/db", opts()).unwrap();
    for i in 0..500 {
        write(&db, i);
    }
    let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
    engine.create_backup(&db).unwrap();
    for i in 500..700 {
        write(&db, i);
    }
    db.flush().unwrap();
    for i in 700..800 {
        write(&db, i);
    }
    db.close().unwrap();
    assert!(!fs.list(Path::new("/wal")).unwrap().is_empty());
    // The database directory is lost; the WAL directory is not.
    for name in fs.list(Path::new("/db")).unwrap() {
        fs.remove(&Path::new("/db").join(name)).unwrap();
    }
    // (Restored elsewhere, as restore asks, then moved onto the original's path.)
    engine.restore(1, "/r").unwrap();
    for name in fs.list(Path::new("/r")).unwrap() {
        fs.rename(&Path::new("/r").join(&name), &Path::new("/db").join(&name))
            .unwrap();
    }
    let e = Db::open("/db", opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.to_string().contains("/wal"), "{e}");
    let e = strata::repair("/db", &opts()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    for name in fs.list(Path::new("/wal")).unwrap() {
        fs.remove(&Path::new("/wal").join(name)).unwrap();
    }
    let r = Db::open("/db", opts()).unwrap();
    strata_testkit::model::assert_db_matches(&r, &strata_testkit::copies::model(499));
    for i in 500..600 {
        write(&r, i);
    }
    r.close().unwrap();
    // Its own from its first open on.
    let r = Db::open("/db", opts()).unwrap();
    strata_testkit::model::assert_db_matches(&r, &strata_testkit::copies::model(599));
    r.close().unwrap();
}

/// A second backup reads no file it took before and that has not changed since (its
/// checksums are kept by the file's identity, `meta/DIGESTS`); a damaged or missing
/// `DIGESTS` only makes the next backup read everything again; and a file whose identity
/// changed is read again.
#[test]
fn an_incremental_backup_reads_only_files_that_changed() {
    use std::sync::Mutex;
    let mem: Arc<dyn Fs> = Arc::new(MemFs::new());
    let opened: Arc<Mutex<Vec<String>>> = Arc::default();
    let fs: Arc<dyn Fs> = {
        let opened = opened.clone();
        Arc::new(
            strata_testkit::fs::InterceptFs::new(mem.clone()).on_open(move |p, access, fs| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if p.starts_with("/db") && name.ends_with(".sst") {
                    opened.lock().unwrap().push(name);
                }
                fs.open_with(p, access)
            }),
        )
    };
    let config = named("default");
    // (No compaction between the steps but those their flushes start, awaited: each
    // backup's reads are its own.)
    let options = || strata::Options {
        idle_compaction_delay: None,
        ..(config.build)(Path::new("/db"), fs.clone())
    };
    let db = Db::open("/db", options()).unwrap();
    for i in 0..2_000 {
        write(&db, i);
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    let engine = BackupEngine::open_in("/backups", fs.clone()).unwrap();
    let tables = |opened: &Mutex<Vec<String>>| std::mem::take(&mut *opened.lock().unwrap());
    tables(&opened);
    let first = engine.create_backup(&db).unwrap();
    let read_first = tables(&opened);
    assert!(!read_first.is_empty(), "the first backup reads the tables");
    // Nothing changed: nothing read.
    let second = engine.create_backup(&db).unwrap();
    assert_eq!(
        tables(&opened),
        Vec::<String>::new(),
        "{read_first:?} {second:?}"
    );
    // (What it copies is its own manifest, WAL, CURRENT and OPTIONS.)
    assert!(
        second.copied_files < first.copied_files,
        "{first:?} {second:?}"
    );
    // New writes: only the tables written since are read (the new L0 table, and what a
    // compaction it started wrote).
    for i in 2_000..2_100 {
        write(&db, i);
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    tables(&opened);
    let third = engine.create_backup(&db).unwrap();
    let read_third = tables(&opened);
    assert!(
        !read_third.is_empty() && read_third.iter().all(|t| !read_first.contains(t)),
        "{read_first:?} then {read_third:?} {:?} {third:?}",
        mem.list(Path::new("/db")).unwrap()
    );
    assert!(third.copied_files >= 1, "{third:?}");
    assert!(first.copied_files > 0);
    // DIGESTS damaged: everything is read again, and the backup is as good.
    let digests = Path::new("/backups/meta/DIGESTS");
    let mut bytes = strata::fs::read_all(&*mem, digests).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    mem.remove(digests).unwrap();
    let mut w = mem.create(digests).unwrap();
    w.append(&bytes).unwrap();
    w.sync().unwrap();
    drop(w);
    let fourth = engine.create_backup(&db).unwrap();
    assert!(tables(&opened).len() > 1);
    engine.verify(fourth.id).unwrap();
    engine.restore(fourth.id, "/r").unwrap();
    let r = Db::open("/r", (config.build)(Path::new("/r"), fs.clone())).unwrap();
    assert_db_matches_model(&r, 2_099);
    r.close().unwrap();
    db.close().unwrap();
}

fn assert_db_matches_model(db: &Db, n: u64) {
    strata_testkit::model::assert_db_matches(db, &strata_testkit::copies::model(n));
}

/// Two restores to one new directory at once (from two backup directories): one makes
/// it, the other fails (the staging directory is claimed, or the target exists by then),
/// and the directory is whole, the database of the one that succeeded. A staging
/// directory that is not a leftover of a restore (files, no lock) is refused, untouched.
#[test]
fn concurrent_restores_to_one_target_leave_one_whole_copy() {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let config = named("default");
    let mut engines = Vec::new();
    for (n, db_dir) in ["/a", "/b"].iter().enumerate() {
        let db = Db::open(*db_dir, (config.build)(Path::new(db_dir), fs.clone())).unwrap();
        for i in 0..(1_000 + 500 * n as u64) {
            write(&db, i);
        }
        let e = BackupEngine::open_in(format!("/backups{n}"), fs.clone()).unwrap();
        e.create_backup(&db).unwrap();
        db.close().unwrap();
        engines.push(Arc::new(e));
    }
    for round in 0..10 {
        let target = format!("/r{round}");
        let results: Vec<strata::Result<()>> = std::thread::scope(|s| {
            let hs: Vec<_> = engines
                .iter()
                .map(|e| {
                    let (e, t) = (e.clone(), target.clone());
                    s.spawn(move || e.restore(1, &t))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ok: Vec<usize> = (0..2).filter(|&i| results[i].is_ok()).collect();
        assert_eq!(ok.len(), 1, "round {round}: {results:?}");
        let r = Db::open(&target, (config.build)(Path::new(&target), fs.clone())).unwrap();
        let last = if ok[0] == 0 { 999 } else { 1_499 };
        strata_testkit::model::assert_db_matches(&r, &strata_testkit::copies::model(last));
        r.close().unwrap();
    }
    // Someone else's directory by the staging name.
    let stage = Path::new("/mine.restore-tmp");
    fs.create_dir_all(stage).unwrap();
    let mut w = fs.create(&stage.join("notes.txt")).unwrap();
    w.append(b"precious").unwrap();
    w.sync().unwrap();
    drop(w);
    let e = engines[0].restore(1, "/mine").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(fs.exists(&stage.join("notes.txt")));
}
