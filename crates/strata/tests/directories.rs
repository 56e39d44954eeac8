//! Opens given other directories than the database was written with, and opens that are
//! refused: the manifest records where each kind of file lives; an open that is not told
//! a directory takes the recorded one; one told another is refused unless every file the
//! manifest expects is found; and a refused open leaves every directory as it found it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use strata::fs::{Fs, MemFs};
use strata::{Db, ErrorKind, Options, WriteBatch};
use strata_testkit::configs;

/// Every directory and file under `/` with its content (directories: `None`).
fn tree(fs: &MemFs) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    fn walk(fs: &MemFs, dir: &Path, out: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
        for name in fs.list(dir).unwrap() {
            let p = dir.join(name);
            if fs.list(&p).is_ok() {
                out.insert(p.clone(), None);
                walk(fs, &p, out);
            } else {
                out.insert(p.clone(), Some(strata::fs::read_all(fs, &p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(fs, Path::new("/"), &mut out);
    out
}

/// The first difference between two trees, if any (names, sizes, contents).
fn difference(
    before: &BTreeMap<PathBuf, Option<Vec<u8>>>,
    after: &BTreeMap<PathBuf, Option<Vec<u8>>>,
) -> Option<String> {
    for (p, v) in before {
        match after.get(p) {
            None => return Some(format!("{} is gone", p.display())),
            Some(w) if w.as_ref().map(Vec::len) != v.as_ref().map(Vec::len) => {
                return Some(format!(
                    "{} changed size: {:?} -> {:?}",
                    p.display(),
                    v.as_ref().map(Vec::len),
                    w.as_ref().map(Vec::len)
                ))
            }
            Some(w) if w != v => return Some(format!("{} changed content", p.display())),
            _ => {}
        }
    }
    after
        .keys()
        .find(|p| !before.contains_key(*p))
        .map(|p| format!("{} appeared", p.display()))
}

/// An in-memory file system and default options with 64 KiB memtables on it.
fn small_on_mem_fs() -> (MemFs, Options) {
    let fs = MemFs::new();
    let base = Options {
        write_buffer_size: 64 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    (fs, base)
}

fn key(i: u32) -> String {
    format!("key{i:05}")
}

fn value(i: u32, round: u32) -> Vec<u8> {
    // Straddles the value stores' thresholds (100 B) and the coalescing one (64 B).
    let len = [20usize, 150, 40, 400][(i % 4) as usize];
    let mut v = format!("r{round}:{i}:").into_bytes();
    v.resize(len, b'v');
    v
}

/// A database with tables in every level it reaches, value files, and writes only its
/// WAL holds, written with `opts` at `/db`.
fn populate(opts: &Options) -> u32 {
    let db = Db::open("/db", opts.clone()).unwrap();
    let n = 3000;
    for i in 0..n {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..n).step_by(3) {
        db.put(key(i), value(i, 1)).unwrap();
    }
    db.flush().unwrap();
    // Unflushed: only the WAL holds these.
    let mut b = WriteBatch::new();
    for i in (0..n).step_by(7) {
        b.put(key(i), value(i, 2));
    }
    for i in (1..n).step_by(11) {
        b.delete(key(i));
    }
    db.write(&Default::default(), b).unwrap();
    drop(db);
    n
}

fn expected(i: u32) -> Option<Vec<u8>> {
    if i % 11 == 1 {
        None
    } else if i.is_multiple_of(7) {
        Some(value(i, 2))
    } else if i.is_multiple_of(3) {
        Some(value(i, 1))
    } else {
        Some(value(i, 0))
    }
}

fn assert_all(db: &Db, n: u32, ctx: &str) {
    for i in 0..n {
        assert_eq!(db.get(key(i)).unwrap(), expected(i), "{ctx}: {}", key(i));
    }
}

/// The options with every directory the configuration sets, and whether it sets any.
fn without_dirs(o: &Options) -> (Options, bool) {
    let any = o.wal_dir.is_some()
        || o.level_dir.is_some()
        || o.value_dir.is_some()
        || o.pmem_dir.is_some();
    let o = Options {
        wal_dir: None,
        level_dir: None,
        value_dir: None,
        pmem_dir: None,
        info_log: None,
        ..o.clone()
    };
    (o, any)
}

/// Every configuration that keeps files outside the database directory: reopened with no
/// directory option, it finds every file where the manifest says (and logs which it
/// took); reopened with other directories, it is refused, naming the recorded ones, and
/// nothing changes (no directory created, no file written or deleted).
#[test]
fn an_open_not_given_the_directories_takes_the_recorded_ones() {
    let mut tried = 0;
    for config in configs() {
        let fs = MemFs::new();
        let opts = (config.build)(Path::new("/db"), Arc::new(fs.clone()));
        let (bare, any) = without_dirs(&opts);
        if !any {
            continue;
        }
        tried += 1;
        let ctx = config.name;
        let n = populate(&opts);

        // Other directories: refused before anything is written.
        let other = |d: &Option<PathBuf>| d.as_ref().map(|_| PathBuf::from("/elsewhere"));
        let elsewhere = Options {
            wal_dir: other(&opts.wal_dir),
            level_dir: other(&opts.level_dir),
            value_dir: other(&opts.value_dir),
            pmem_dir: other(&opts.pmem_dir),
            ..opts.clone()
        };
        let before = tree(&fs);
        let e = Db::open("/db", elsewhere.clone()).err().unwrap_or_else(|| {
            panic!("{ctx}: an open given other directories found nothing missing")
        });
        assert_eq!(e.kind(), ErrorKind::Corruption, "{ctx}: {e}");
        assert!(
            e.message().contains("/db/"),
            "{ctx}: the error names no recorded directory: {e}"
        );
        assert_eq!(difference(&before, &tree(&fs)), None, "{ctx}: {e}");
        let e = Db::open_read_only("/db", elsewhere).err();
        assert!(e.is_some(), "{ctx}: a read-only open found nothing missing");
        assert_eq!(difference(&before, &tree(&fs)), None, "{ctx}");

        // No directory given: the recorded ones, said in the log.
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = lines.clone();
        let logged = Options {
            info_log: Some(Arc::new(move |l: &str| {
                sink.lock().unwrap().push(l.to_string())
            })),
            ..bare.clone()
        };
        let ro = Db::open_read_only("/db", bare.clone()).unwrap();
        assert_all(&ro, n, &format!("{ctx}, read-only without directories"));
        drop(ro);
        let db = Db::open("/db", logged).unwrap();
        assert_all(&db, n, &format!("{ctx}, without directories"));
        assert!(
            lines
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("recorded in the manifest")),
            "{ctx}: the log does not say which directories the open took: {:?}",
            lines.lock().unwrap()
        );
        for i in (0..n).step_by(5) {
            db.put(key(i), value(i, 3)).unwrap();
        }
        drop(db);
        // The next open, given the directories, finds this session's writes too.
        let db = Db::open("/db", opts.clone()).unwrap();
        for i in 0..n {
            let want = if i % 5 == 0 {
                Some(value(i, 3))
            } else {
                expected(i)
            };
            assert_eq!(db.get(key(i)).unwrap(), want, "{ctx}: {}", key(i));
        }
        drop(db);
        assert!(
            !fs.exists(Path::new("/elsewhere")),
            "{ctx}: a directory the database does not use was created"
        );
    }
    assert!(tried >= 6, "only {tried} configurations use directories");
}

/// A WAL the manifest expects and that is gone is `Corruption`, never an empty database
/// (whose next WAL would make the lost one's writes obsolete for good).
#[test]
fn a_missing_wal_the_manifest_expects_refuses_the_open() {
    let fs = MemFs::new();
    let o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", o.clone()).unwrap();
    db.put("k", "v").unwrap();
    drop(db);
    let wals: Vec<String> = fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect();
    assert_eq!(wals.len(), 1, "{wals:?}");
    fs.remove(&Path::new("/db").join(&wals[0])).unwrap();
    let before = tree(&fs);
    let e = Db::open("/db", o.clone()).expect_err("opened without its WAL");
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.message().contains(&wals[0]), "names the WAL: {e}");
    assert_eq!(difference(&before, &tree(&fs)), None);
    assert!(Db::open_read_only("/db", o).is_err());
}

/// Every cause of a refused open leaves every directory as it was: names, sizes and
/// contents.
#[test]
fn a_refused_open_changes_nothing() {
    type Damage = fn(&MemFs, &Options) -> Options;
    let causes: Vec<(&str, &str, Damage)> = vec![
        ("options that fail validation", "two-dirs", |_, o| Options {
            write_buffer_size: 0,
            ..o.clone()
        }),
        ("error_if_exists", "default", |_, o| Options {
            error_if_exists: true,
            ..o.clone()
        }),
        ("a missing WAL", "two-dirs", |fs, o| {
            for n in fs.list(Path::new("/db/wal")).unwrap() {
                fs.remove(&Path::new("/db/wal").join(n)).unwrap();
            }
            o.clone()
        }),
        ("another WAL directory", "two-dirs", |_, o| Options {
            wal_dir: Some("/db/wal2".into()),
            ..o.clone()
        }),
        ("another level directory", "ohdb-2dc", |_, o| Options {
            level_dir: Some("/db/levels2".into()),
            ..o.clone()
        }),
        ("another value directory", "blob", |_, o| Options {
            value_dir: Some("/db/values2".into()),
            ..o.clone()
        }),
        ("another persistent-memory directory", "matrixkv", |_, o| {
            Options {
                pmem_dir: Some("/db/pmem2".into()),
                ..o.clone()
            }
        }),
        ("damaged CURRENT", "default", |fs, o| {
            let mut f = fs.create(Path::new("/db/CURRENT")).unwrap();
            f.append(b"MANIFEST-999999\n").unwrap();
            f.sync().unwrap();
            o.clone()
        }),
        ("damaged manifest", "default", |fs, o| {
            let c = strata::fs::read_all(fs, Path::new("/db/CURRENT")).unwrap();
            let m = Path::new("/db").join(String::from_utf8(c).unwrap().trim());
            let len = fs.file_size(&m).unwrap() as usize;
            fs.corrupt(&m, len / 2, |b| b[0] ^= 0x40).unwrap();
            o.clone()
        }),
        ("a format feature this build lacks", "default", |fs, o| {
            append_edit(
                fs,
                &strata::internals::version::VersionEdit {
                    features: vec!["from-the-future".into()],
                    ..Default::default()
                },
            );
            o.clone()
        }),
        ("an unknown L0 layout", "default", |fs, o| {
            append_edit(
                fs,
                &strata::internals::version::VersionEdit {
                    l0_layout: Some(strata::internals::version::L0Record {
                        layout: 77,
                        state: Vec::new(),
                    }),
                    ..Default::default()
                },
            );
            o.clone()
        }),
        ("a table cut short", "default", |fs, o| {
            let t = fs
                .list(Path::new("/db"))
                .unwrap()
                .into_iter()
                .find(|n| n.ends_with(".sst"))
                .unwrap();
            let p = Path::new("/db").join(t);
            let len = fs.file_size(&p).unwrap() as usize;
            fs.truncate(&p, len / 2).unwrap();
            o.clone()
        }),
        // The unflushed writes fill several memtables of this size: a replay that flushed
        // as it went would have written tables before it met the damage.
        (
            "a WAL damaged after writes that fill memtables",
            "default",
            |fs, o| {
                let w = fs
                    .list(Path::new("/db"))
                    .unwrap()
                    .into_iter()
                    .find(|n| n.ends_with(".log"))
                    .unwrap();
                let p = Path::new("/db").join(w);
                let len = fs.file_size(&p).unwrap() as usize;
                fs.corrupt(&p, len * 3 / 4, |b| b[0] ^= 0x40).unwrap();
                Options {
                    write_buffer_size: 64 << 10,
                    ..o.clone()
                }
            },
        ),
    ];
    for (what, config, damage) in causes {
        let config = configs().into_iter().find(|c| c.name == config).unwrap();
        let fs = MemFs::new();
        let mut opts = (config.build)(Path::new("/db"), Arc::new(fs.clone()));
        if what.starts_with("a WAL damaged") {
            // The second round's writes all in the WAL: 300 KB, several 64 KiB memtables.
            opts.write_buffer_size = 4 << 20;
        }
        let db = Db::open("/db", opts.clone()).unwrap();
        for i in 0..2000u32 {
            db.put(key(i), value(i, 0)).unwrap();
        }
        db.flush().unwrap();
        db.compact_range(None, None).unwrap();
        for i in 0..2000u32 {
            db.put(key(i), value(i, 1)).unwrap();
        }
        drop(db);
        let o = damage(&fs, &opts);
        let before = tree(&fs);
        let e = Db::open("/db", o.clone())
            .err()
            .unwrap_or_else(|| panic!("{what}: the open was not refused"));
        assert_eq!(
            difference(&before, &tree(&fs)),
            None,
            "{what} ({e}): the refused open changed the database"
        );
        // A held LOCK: the same, with the database open in this process.
        if what == "error_if_exists" {
            let db = Db::open("/db", opts.clone()).unwrap();
            let before = tree(&fs);
            let e = Db::open("/db", opts.clone()).expect_err("locked");
            assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
            assert_eq!(difference(&before, &tree(&fs)), None, "a held LOCK");
            drop(db);
        }
    }
}

/// Appends `edit` to the live manifest of the closed database at `/db`.
fn append_edit(fs: &MemFs, edit: &strata::internals::version::VersionEdit) {
    let current = strata::fs::read_all(fs, Path::new("/db/CURRENT")).unwrap();
    let manifest = Path::new("/db").join(String::from_utf8(current).unwrap().trim());
    let old = strata::fs::read_all(fs, &manifest).unwrap();
    let mut f = fs.create(&manifest).unwrap();
    f.append(&old).unwrap();
    let mut w = strata::internals::wal::LogWriter::new(f);
    w.add_record(&edit.encode()).unwrap();
    w.sync().unwrap();
}

/// Copies every file under `from` to the same path under `to` (a `cp -a` of a directory).
fn copy_tree(fs: &MemFs, from: &Path, to: &Path) {
    fs.create_dir_all(to).unwrap();
    for name in fs.list(from).unwrap() {
        let (src, dst) = (from.join(&name), to.join(&name));
        if fs.list(&src).is_ok() {
            copy_tree(fs, &src, &dst);
        } else {
            let bytes = strata::fs::read_all(fs, &src).unwrap();
            let mut f = fs.create(&dst).unwrap();
            f.append(&bytes).unwrap();
            f.sync().unwrap();
        }
    }
    fs.sync_dir(to).unwrap();
}

/// A copy of a database whose levels live outside its directory never takes the
/// original's directory: it is refused, saying it is a copy, and the original's files are
/// untouched (a copy that read them would delete the original's tables as unnamed).
/// Directories inside the database directory move with it.
#[test]
fn a_copied_database_never_takes_the_original_s_outside_directories() {
    let fs = MemFs::new();
    let o = Options {
        level_dir: Some("/data/levels".into()),
        wal_dir: Some("/data/db/wal".into()),
        write_buffer_size: 64 << 10,
        max_bytes_for_level_base: 128 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/data/db", o.clone()).unwrap();
    for i in 0..3000 {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.put("unflushed", "in the WAL").unwrap();
    drop(db);
    copy_tree(&fs, Path::new("/data/db"), Path::new("/backup/db"));
    let levels = tree(&fs)
        .into_iter()
        .filter(|(p, _)| p.starts_with("/data/levels"))
        .collect::<BTreeMap<_, _>>();
    assert!(levels.len() > 1, "no level tables outside: {levels:?}");
    let bare = Options {
        level_dir: None,
        wal_dir: None,
        ..o.clone()
    };
    let e = Db::open("/backup/db", bare.clone()).expect_err("a copy took the original's levels");
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.message().contains("copy"), "{e}");
    assert!(Db::open_read_only("/backup/db", bare.clone()).is_err());
    // Given the original's own directories (the options its OPTIONS file recorded, which
    // the `strata` tool opens with): refused too, whether opened, read or repaired.
    let e = Db::open("/backup/db", o.clone()).expect_err("a copy given the original's levels");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("copy"), "{e}");
    assert!(Db::open_read_only("/backup/db", o.clone()).is_err());
    assert!(strata::repair("/backup/db", &o).is_err());
    strata::destroy("/backup/db", &bare).unwrap();
    let after = tree(&fs)
        .into_iter()
        .filter(|(p, _)| p.starts_with("/data/levels"))
        .collect::<BTreeMap<_, _>>();
    assert_eq!(after, levels, "the copy changed the original's levels");
    // The original, opened without its options, still finds everything.
    let db = Db::open("/data/db", bare).unwrap();
    assert_eq!(db.get(key(2999)).unwrap(), Some(value(2999, 0)));
    assert_eq!(db.get("unflushed").unwrap(), Some(b"in the WAL".to_vec()));
}

/// A database made with its WALs in `wal_dir`, then opened with `wal_in_pmem` (which
/// puts them in `pmem_dir`): the recorded WAL directory is read too, and new WALs go
/// where the options say. A database that had L0 in `pmem_dir`, opened without it, reads
/// its old L0 tables there and writes new ones to the database directory.
#[test]
fn recorded_directories_are_read_and_new_files_go_where_the_options_say() {
    let (fs, base) = small_on_mem_fs();
    let db = Db::open(
        "/db",
        Options {
            wal_dir: Some("/w".into()),
            ..base.clone()
        },
    )
    .unwrap();
    db.put("a", "in /w").unwrap();
    drop(db);
    let in_pmem = Options {
        wal_in_pmem: true,
        pmem_dir: Some("/pm".into()),
        ..base.clone()
    };
    let db = Db::open("/db", in_pmem.clone()).unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"in /w".to_vec()));
    db.put("b", "in /pm").unwrap();
    db.flush().unwrap();
    drop(db);
    let logs = |d: &str| {
        fs.list(Path::new(d))
            .unwrap()
            .iter()
            .filter(|n| n.ends_with(".log"))
            .count()
    };
    assert!(
        logs("/pm") > 0 && logs("/w") == 0,
        "WALs: /pm {} /w {}",
        logs("/pm"),
        logs("/w")
    );
    let tables = |d: &str| {
        fs.list(Path::new(d))
            .unwrap()
            .iter()
            .filter(|n| n.ends_with(".sst"))
            .count()
    };
    assert!(tables("/pm") > 0, "L0 tables go to pmem_dir");
    // Without pmem_dir: the old L0 tables are read there, new ones go beside the database.
    let before = tables("/pm");
    let db = Db::open("/db", base.clone()).unwrap();
    assert_eq!(db.get("b").unwrap(), Some(b"in /pm".to_vec()));
    db.put("c", "beside the database").unwrap();
    db.flush().unwrap();
    assert_eq!(
        tables("/pm"),
        before,
        "a new table went to the recorded pmem_dir"
    );
    assert!(tables("/db") > 0);
    drop(db);
    let db = Db::open("/db", base).unwrap();
    for (k, v) in [
        ("a", "in /w"),
        ("b", "in /pm"),
        ("c", "beside the database"),
    ] {
        assert_eq!(db.get(k).unwrap(), Some(v.as_bytes().to_vec()), "{k}");
    }
}

/// Repair given another directory than the one the database records, which still holds
/// its files, is refused (it would read only the given one and forget the other); `check`
/// reports a WAL the manifest expects and cannot find, as an open refuses it.
#[test]
fn repair_and_check_given_the_wrong_directories_say_so() {
    let fs = MemFs::new();
    let o = Options {
        level_dir: Some("/levels".into()),
        write_buffer_size: 64 << 10,
        max_bytes_for_level_base: 128 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..3000 {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    drop(db);
    let before = tree(&fs);
    let e = strata::repair(
        "/db",
        &Options {
            level_dir: Some("/other".into()),
            ..o.clone()
        },
    )
    .expect_err("repair read only the other directory");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("/levels"), "{e}");
    assert_eq!(difference(&before, &tree(&fs)), None);
    // Repair without the option finds the recorded directory.
    let r = strata::repair(
        "/db",
        &Options {
            level_dir: None,
            ..o.clone()
        },
    )
    .unwrap();
    assert_eq!(r.keys, 3000);
    assert!(!r.dropped_data(), "{:?}", r.dropped);
    let db = Db::open(
        "/db",
        Options {
            level_dir: None,
            ..o
        },
    )
    .unwrap();
    assert_eq!(db.get(key(1234)).unwrap(), Some(value(1234, 0)));
}

/// A read-only open beside a writer whose flushes and compactions delete the files (and
/// WALs) a manifest it read named: it reads the newer manifest instead of failing.
#[test]
fn read_only_opens_beside_a_busy_writer_succeed() {
    let fs = MemFs::new();
    let o = Options {
        write_buffer_size: 64 << 10,
        max_bytes_for_level_base: 128 << 10,
        target_file_size_base: 32 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Arc::new(Db::open("/db", o.clone()).unwrap());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                db.put(key(i % 5000), value(i, i / 5000)).unwrap();
                i += 1;
                if i.is_multiple_of(700) {
                    db.flush().unwrap();
                }
            }
        })
    };
    let start = std::time::Instant::now();
    let mut opens = 0;
    while opens < 200 || start.elapsed() < std::time::Duration::from_secs(2) {
        let ro = Db::open_read_only("/db", o.clone())
            .unwrap_or_else(|e| panic!("read-only open {opens}: {e}"));
        drop(ro);
        opens += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}

/// A read-only open on the real file system beside a writer in the same process, with
/// values large enough that a read of the live WAL often lands in the middle of the
/// writer's copy of a record into it: the open takes what it read as a write not yet
/// whole, never as damage (the kill loop's read-only opens once failed with "zeroed header
/// inside the log" under `TolerateTornTail`, which refuses damage before the tail).
#[test]
fn read_only_opens_beside_a_writer_in_the_middle_of_a_wal_copy_succeed() {
    let dir = std::env::temp_dir().join(format!("strata-ro-live-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = Options {
        write_buffer_size: 64 << 20,
        wal_recovery_mode: strata::WalRecoveryMode::TolerateTornTail,
        ..Options::default()
    };
    let db = Arc::new(Db::open(&dir, o.clone()).unwrap());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let len = [100, 5000, 30_000, 70_000][(i % 4) as usize];
                db.put(key(i % 500), vec![(i % 250) as u8 + 1; len])
                    .unwrap();
                i += 1;
            }
        })
    };
    let start = std::time::Instant::now();
    let mut opens = 0;
    let mut failed = None;
    while start.elapsed() < std::time::Duration::from_secs(3) {
        match Db::open_read_only(&dir, o.clone()) {
            Ok(ro) => drop(ro),
            Err(e) if e.kind() == ErrorKind::Stale => {}
            Err(e) => {
                failed = Some(format!("read-only open {opens}: {e}"));
                break;
            }
        }
        opens += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failed.is_none(), "{}", failed.unwrap());
}

/// A directory a database only reads from (recorded, not given) stops being recorded once
/// none of its files remain there, and the database never deletes a file in it that is
/// not its own: it may be another database's by now.
#[test]
fn a_directory_left_behind_is_forgotten_and_its_other_files_kept() {
    let (fs, base) = small_on_mem_fs();
    let db = Db::open(
        "/db",
        Options {
            pmem_dir: Some("/pm".into()),
            ..base.clone()
        },
    )
    .unwrap();
    for i in 0..2000 {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    // Not ours: files numbered as tables (numbers our own files have too), in the
    // directory the database only reads now.
    let mut foreign = Vec::new();
    for n in 1..40 {
        let p = PathBuf::from(format!("/pm/{n:06}.sst"));
        if fs.exists(&p) {
            continue;
        }
        let mut f = fs.create(&p).unwrap();
        f.append(b"another database's").unwrap();
        f.sync().unwrap();
        foreign.push(p);
    }
    let db = Db::open("/db", base.clone()).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get(key(7)).unwrap(), Some(value(7, 0)));
    drop(db);
    // L0 left /pm: the next manifest no longer names it.
    let db = Db::open("/db", base.clone()).unwrap();
    assert!(
        !db.property("strata.options").unwrap().contains("/pm"),
        "{}",
        db.property("strata.options").unwrap()
    );
    assert_eq!(db.get(key(1999)).unwrap(), Some(value(1999, 0)));
    drop(db);
    for p in &foreign {
        assert!(fs.exists(p), "another's file {} was deleted", p.display());
    }
    // A repair after the directory is emptied (a tmpfs after a reboot) still runs.
    for n in fs.list(Path::new("/pm")).unwrap() {
        fs.remove(&Path::new("/pm").join(n)).unwrap();
    }
    let r = strata::repair("/db", &base).unwrap();
    assert_eq!(r.keys, 2000);
}

/// Repair not given the value directory the database records keeps the value files where
/// they are, named so that the next open finds them.
#[test]
fn repair_without_options_keeps_recorded_value_files_where_they_are() {
    let fs = MemFs::new();
    let o = Options {
        value_store: strata::ValueStoreKind::BlobFiles,
        min_blob_size: 100,
        value_dir: Some("/values".into()),
        write_buffer_size: 64 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..2000 {
        db.put(key(i), value(i, 0)).unwrap();
    }
    db.flush().unwrap();
    drop(db);
    let bare = Options {
        value_dir: None,
        ..o.clone()
    };
    let r = strata::repair("/db", &bare).unwrap();
    assert!(!r.dropped_data(), "{:?}", r.dropped);
    for opts in [bare, o] {
        let db = Db::open("/db", opts).unwrap();
        for i in (0..2000).step_by(97) {
            assert_eq!(db.get(key(i)).unwrap(), Some(value(i, 0)), "{}", key(i));
        }
    }
}

/// A manifest an older build wrote carries no directories record; the record the OPTIONS
/// file holds tells where files are, but does not hold the manifest to the WAL it names:
/// an older build's repair named a WAL it never created.
#[test]
fn a_manifest_without_a_record_is_not_held_to_its_wal() {
    let fs = MemFs::new();
    let o = Options {
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    let db = Db::open("/db", o.clone()).unwrap();
    db.put("k", "v").unwrap();
    db.flush().unwrap();
    drop(db);
    // The manifest as an older build wrote it: the same edits, no directories record (nor
    // the WAL sizes a clean close records).
    let current = strata::fs::read_all(&fs, Path::new("/db/CURRENT")).unwrap();
    let manifest = Path::new("/db").join(String::from_utf8(current).unwrap().trim());
    let mut reader =
        strata::internals::wal::LogReader::new(strata::fs::read_all(&fs, &manifest).unwrap());
    let mut w = strata::internals::wal::LogWriter::new(fs.create(&manifest).unwrap());
    let mut stripped = 0;
    while let strata::internals::wal::LogEvent::Record { data, .. } = reader.next_event() {
        let mut edit = strata::internals::version::decode_edit(&data).unwrap();
        stripped += usize::from(edit.directories.take().is_some());
        edit.wal_sizes.clear();
        w.add_record(&edit.encode()).unwrap();
    }
    w.sync().unwrap();
    assert_eq!(stripped, 1);
    assert!(
        String::from_utf8(strata::fs::read_all(&fs, Path::new("/db/OPTIONS")).unwrap())
            .unwrap()
            .contains("# directory ")
    );
    for n in fs.list(Path::new("/db")).unwrap() {
        if n.ends_with(".log") {
            fs.remove(&Path::new("/db").join(n)).unwrap();
        }
    }
    let db = Db::open("/db", o).unwrap_or_else(|e| panic!("an older build's manifest: {e}"));
    assert_eq!(db.get("k").unwrap(), Some(b"v".to_vec()));
}

/// The database reached through a symbolic link to its directory is the same database,
/// not a copy: its WAL directory outside is read.
#[cfg(unix)]
#[test]
fn a_database_reached_through_a_symbolic_link_reads_its_outside_directories() {
    let tmp = strata_testkit::TempDir::new("symlink");
    let (real, link, wal) = (
        tmp.path().join("real"),
        tmp.path().join("link"),
        tmp.path().join("wal"),
    );
    let db = Db::open(
        &real,
        Options {
            wal_dir: Some(wal.clone()),
            ..Options::default()
        },
    )
    .unwrap();
    db.put("k", "in the WAL only").unwrap();
    drop(db);
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let db = Db::open(&link, Options::default())
        .unwrap_or_else(|e| panic!("opened through a link: {e}"));
    assert_eq!(db.get("k").unwrap(), Some(b"in the WAL only".to_vec()));
}

/// An open that replays the last WALs from a recorded WAL directory it was not given, and
/// puts its own WAL elsewhere, stops naming that directory as soon as it deleted them: not
/// at the next manifest. A WAL another database leaves there later is never replayed.
#[test]
fn a_wal_directory_drained_by_an_open_is_forgotten_at_once() {
    let (fs, base) = small_on_mem_fs();
    let db = Db::open(
        "/db",
        Options {
            wal_dir: Some("/wal".into()),
            ..base.clone()
        },
    )
    .unwrap();
    db.put("k", "in /wal").unwrap();
    drop(db);
    let db = Db::open("/db", base.clone()).unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"in /wal".to_vec()));
    assert!(
        fs.list(Path::new("/wal"))
            .unwrap()
            .iter()
            .all(|n| !n.ends_with(".log")),
        "the replayed WAL is gone"
    );
    let options =
        String::from_utf8(strata::fs::read_all(&fs, Path::new("/db/OPTIONS")).unwrap()).unwrap();
    assert!(!options.contains("/wal"), "{options}");
    // A crash image now: nothing closed the session that would rewrite the manifest.
    let image = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    drop(db);
    // Another database's WAL in /wal, numbered above every file of ours.
    let mut w =
        strata::internals::wal::LogWriter::new(image.create(Path::new("/wal/000900.log")).unwrap());
    let mut b = WriteBatch::new();
    b.put("k", "another database's");
    let mut rec = b.encoded().to_vec();
    rec[..8].copy_from_slice(&1000u64.to_le_bytes());
    w.add_record(&rec).unwrap();
    w.sync().unwrap();
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(image.clone()),
            ..base.clone()
        },
    )
    .unwrap();
    assert_eq!(db.get("k").unwrap(), Some(b"in /wal".to_vec()));
    drop(db);
    assert!(image.exists(Path::new("/wal/000900.log")));
}

/// An obsolete table of ours that an open did not see, in a directory it reads only
/// because the manifest records it, is left there (it cannot be told from another
/// database's) but named in the obsolete list: a repair does not take it back with the
/// key it held, deleted since.
#[test]
fn an_obsolete_table_left_in_a_recorded_directory_stays_out_of_a_repair() {
    let (fs, base) = small_on_mem_fs();
    let with_lv = Options {
        level_dir: Some("/lv".into()),
        ..base.clone()
    };
    let tables = |fs: &MemFs| -> Vec<String> {
        fs.list(Path::new("/lv"))
            .unwrap()
            .into_iter()
            .filter(|n| n.ends_with(".sst"))
            .collect()
    };
    let db = Db::open("/db", with_lv.clone()).unwrap();
    db.put("gone", "the old value").unwrap();
    db.put("kept", "x").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    drop(db);
    let old: Vec<(String, Vec<u8>)> = tables(&fs)
        .into_iter()
        .map(|n| {
            let bytes = strata::fs::read_all(&fs, &Path::new("/lv").join(&n)).unwrap();
            (n, bytes)
        })
        .collect();
    assert!(!old.is_empty());
    let db = Db::open("/db", with_lv.clone()).unwrap();
    db.delete("gone").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    drop(db);
    // The old table back on disk, as a crash that undid its deletion would leave it.
    for (n, bytes) in &old {
        let p = Path::new("/lv").join(n);
        if !fs.exists(&p) {
            let mut f = fs.create(&p).unwrap();
            f.append(bytes).unwrap();
            f.sync().unwrap();
        }
    }
    // An open not given /lv reads it because the manifest records it.
    let db = Db::open("/db", base.clone()).unwrap();
    assert_eq!(db.get("gone").unwrap(), None);
    drop(db);
    for (n, _) in &old {
        assert!(
            fs.exists(&Path::new("/lv").join(n)),
            "{n}: deleted in a directory the open was not given"
        );
    }
    strata::repair("/db", &base).unwrap();
    let db = Db::open("/db", base).unwrap();
    assert_eq!(
        db.get("gone").unwrap(),
        None,
        "a repair brought a deleted key back"
    );
    assert_eq!(db.get("kept").unwrap(), Some(b"x".to_vec()));
}
