//! The public API's contract: limits, errors, options, locking, snapshots, directories, stats.

use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs, RealFs};
use strata::internals::version::{L0Record, VersionEdit};
use strata::internals::wal::{LogEvent, LogReader, LogWriter};
use strata::{Db, ErrorKind, Options, ReadOptions, WriteBatch, WriteOptions};
use strata_testkit::TempDir;

fn mem_opts() -> (MemFs, Options) {
    let fs = MemFs::new();
    let o = Options {
        write_buffer_size: 256 << 10,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    };
    (fs, o)
}

#[test]
fn db_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Db>();
    check::<strata::Snapshot>();
}

#[test]
fn empty_keys_and_values() {
    let (_fs, o) = mem_opts();
    let db = Db::open("/db", o).unwrap();
    db.put(b"", b"empty key").unwrap();
    db.put(b"k", b"").unwrap();
    assert_eq!(db.get(b"").unwrap(), Some(b"empty key".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), Some(vec![]));
    db.flush().unwrap();
    assert_eq!(db.get(b"").unwrap(), Some(b"empty key".to_vec()));
    assert_eq!(db.get(b"k").unwrap(), Some(vec![]));
    db.delete(b"").unwrap();
    assert_eq!(db.get(b"").unwrap(), None);
}

#[test]
fn size_limits() {
    let (_fs, o) = mem_opts();
    let db = Db::open("/db", o).unwrap();
    let big_key = vec![7u8; 64 * 1024];
    db.put(&big_key, b"v").unwrap();
    assert_eq!(db.get(&big_key).unwrap(), Some(b"v".to_vec()));
    let e = db.put(vec![7u8; 64 * 1024 + 1], b"v").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let big_value = vec![9u8; 64 << 20];
    db.put(b"big", &big_value).unwrap();
    db.flush().unwrap();
    assert!(db.get(b"big").unwrap() == Some(big_value));
    let e = db.put(b"bigger", vec![0u8; (64 << 20) + 1]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("value"), "{e}");
    // A rejected batch writes nothing.
    let mut b = WriteBatch::new();
    b.put(b"ok", b"1").put(vec![1u8; 70_000], b"x");
    assert!(db.write(&WriteOptions::default(), b).is_err());
    assert_eq!(db.get(b"ok").unwrap(), None);
}

#[test]
fn options_are_validated_naming_the_field() {
    let (_fs, o) = mem_opts();
    let e = Db::open(
        "/db",
        Options {
            level0_slowdown_writes_trigger: 1,
            ..o.clone()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.message().contains("level0_slowdown_writes_trigger"),
        "{e}"
    );
    let e = Db::open("/db", Options { block_size: 1, ..o }).unwrap_err();
    assert!(e.message().contains("block_size"), "{e}");
}

#[test]
fn create_and_exists_flags() {
    let (_fs, o) = mem_opts();
    let e = Db::open(
        "/db",
        Options {
            create_if_missing: false,
            ..o.clone()
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    drop(Db::open("/db", o.clone()).unwrap());
    let e = Db::open(
        "/db",
        Options {
            error_if_exists: true,
            ..o
        },
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn every_open_records_its_options_and_none_reads_them() {
    let (fs, o) = mem_opts();
    let db = Db::open("/db", o.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    let text =
        String::from_utf8(strata::fs::read_all(&fs, Path::new("/db/OPTIONS")).unwrap()).unwrap();
    assert!(text.contains("\nwrite_buffer_size = 262144\n"), "{text}");
    assert_eq!(
        db.property("strata.options").as_deref(),
        Some(text.as_str())
    );
    drop(db);
    // A second open replaces it; a damaged file changes nothing.
    let mut f = fs.create(Path::new("/db/OPTIONS")).unwrap();
    f.append(b"\xff garbage").unwrap();
    f.sync().unwrap();
    drop(f);
    let db = Db::open(
        "/db",
        Options {
            write_buffer_size: 1 << 20,
            ..o
        },
    )
    .unwrap();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    let text =
        String::from_utf8(strata::fs::read_all(&fs, Path::new("/db/OPTIONS")).unwrap()).unwrap();
    assert!(text.contains("\nwrite_buffer_size = 1048576\n"), "{text}");
}

#[test]
fn lock_file_excludes_a_second_open() {
    let dir = TempDir::new("lock");
    let db = Db::open(dir.path(), Options::default()).unwrap();
    let e = Db::open(dir.path(), Options::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    drop(db);
    Db::open(dir.path(), Options::default()).unwrap();
}

#[test]
fn closed_database_refuses_work() {
    let (_fs, o) = mem_opts();
    let db = Db::open("/db", o).unwrap();
    db.put(b"a", b"1").unwrap();
    db.close().unwrap();
    assert_eq!(db.put(b"b", b"2").unwrap_err().kind(), ErrorKind::Closed);
    assert_eq!(db.get(b"a").unwrap_err().kind(), ErrorKind::Closed);
    db.close().unwrap();
}

#[test]
fn iterators_and_snapshots_end_with_closed_after_close() {
    let (_fs, o) = mem_opts();
    let db = Db::open("/db", o).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), b"v").unwrap();
    }
    let snap = db.snapshot();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert!(it.valid());
    let mut rust_it = db.iter(ReadOptions::default()).unwrap();
    assert!(Iterator::next(&mut rust_it).unwrap().is_ok());
    db.close().unwrap();
    // The lock is gone: another process may own the files now. Every move ends the cursor.
    it.next();
    assert!(!it.valid());
    assert_eq!(it.status().unwrap_err().kind(), ErrorKind::Closed);
    it.seek(b"k050");
    assert!(!it.valid());
    assert_eq!(
        Iterator::next(&mut rust_it).unwrap().unwrap_err().kind(),
        ErrorKind::Closed
    );
    assert!(
        Iterator::next(&mut rust_it).is_none(),
        "the error is reported once"
    );
    let e = db
        .get_opt(
            &ReadOptions {
                snapshot: Some(snap),
                ..ReadOptions::default()
            },
            b"k001",
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Closed);
}

/// `close` waits for writes in flight: a write it acknowledges is in the synced WAL when
/// `close` returns (before, a leader could append after close synced and released the lock,
/// and the acknowledged write was lost at the next power cut); writes after it fail `Closed`.
#[test]
fn close_waits_for_writes_in_flight() {
    for round in 0..200u32 {
        let (fs, o) = mem_opts();
        let db = Arc::new(Db::open("/db", o.clone()).unwrap());
        let acked: Vec<Vec<u32>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3u32)
                .map(|t| {
                    let db = db.clone();
                    s.spawn(move || {
                        let mut ok = Vec::new();
                        for i in 0.. {
                            match db.put(format!("t{t}-{i:06}"), [b'x'; 200]) {
                                Ok(()) => ok.push(i),
                                Err(e) => {
                                    assert_eq!(e.kind(), ErrorKind::Closed, "{e}");
                                    break;
                                }
                            }
                        }
                        ok
                    })
                })
                .collect();
            std::thread::sleep(std::time::Duration::from_millis(2 + u64::from(round % 5)));
            db.close().unwrap();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // A power cut right after: every acknowledged write must be there.
        let after = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
        let db = Db::open(
            "/db",
            Options {
                fs: Arc::new(after),
                ..o
            },
        )
        .unwrap();
        for (t, ok) in acked.iter().enumerate() {
            for &i in ok {
                assert!(
                    db.get(format!("t{t}-{i:06}")).unwrap().is_some(),
                    "round {round}: thread {t}'s acknowledged write {i} lost"
                );
            }
        }
    }
}

/// Appends `edit` to the live manifest of the closed database at `/db`.
fn append_edit(fs: &MemFs, edit: &VersionEdit) {
    let current = strata::fs::read_all(fs, Path::new("/db/CURRENT")).unwrap();
    let name = String::from_utf8(current).unwrap();
    let manifest = Path::new("/db").join(name.trim());
    // Re-create the file with its content + the edit.
    let old = strata::fs::read_all(fs, &manifest).unwrap();
    let mut f = fs.create(&manifest).unwrap();
    f.append(&old).unwrap();
    let mut w = LogWriter::new(f);
    w.add_record(&edit.encode()).unwrap();
    w.sync().unwrap();
}

/// Every edit of the live manifest of the closed database at `/db`.
fn manifest_edits(fs: &MemFs) -> Vec<VersionEdit> {
    let current = strata::fs::read_all(fs, Path::new("/db/CURRENT")).unwrap();
    let name = String::from_utf8(current).unwrap();
    let data = strata::fs::read_all(fs, &Path::new("/db").join(name.trim())).unwrap();
    let mut r = LogReader::new(data);
    let mut edits = Vec::new();
    while let LogEvent::Record { data, .. } = r.next_event() {
        edits.push(strata::internals::version::decode_edit(&data).unwrap());
    }
    edits
}

#[test]
fn newer_manifest_format_is_refused() {
    let (fs, o) = mem_opts();
    drop(Db::open("/db", o.clone()).unwrap());
    let edit = VersionEdit {
        format_version: Some(99),
        ..Default::default()
    };
    append_edit(&fs, &edit);
    let e = Db::open("/db", o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
}

#[test]
fn a_format_feature_this_build_lacks_is_refused_by_name() {
    let (fs, o) = mem_opts();
    let db = Db::open("/db", o.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    drop(db);
    let edit = VersionEdit {
        features: vec!["l0-from-the-future".into()],
        ..Default::default()
    };
    append_edit(&fs, &edit);
    let e = Db::open("/db", o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    assert!(e.to_string().contains("l0-from-the-future"), "{e}");
    assert!(
        e.to_string().contains("MANIFEST-"),
        "names the manifest: {e}"
    );
}

#[test]
fn the_l0_layout_is_recorded_and_an_unknown_one_refused() {
    let (fs, o) = mem_opts();
    let db = Db::open("/db", o.clone()).unwrap();
    db.put(b"k", b"v").unwrap();
    db.flush().unwrap();
    drop(db);
    // Each manifest starts with where the database keeps its files (here: all in its
    // directory), then the layout (flat: id 0, no state) and the format version.
    let edits = manifest_edits(&fs);
    let dirs = edits[0].directories.as_ref().expect("a directories record");
    assert_eq!(dirs.database(), Some(Path::new("/db")));
    assert_eq!(dirs.0.len(), 1, "{dirs:?}");
    let first = &edits[1];
    assert_eq!(first.format_version, Some(2));
    assert_eq!(
        first.l0_layout,
        Some(L0Record {
            layout: 0,
            state: Vec::new()
        })
    );
    // A layout this build does not know is refused, never read as flat.
    let edit = VersionEdit {
        l0_layout: Some(L0Record {
            layout: 77,
            state: b"rows".to_vec(),
        }),
        ..Default::default()
    };
    append_edit(&fs, &edit);
    let e = Db::open("/db", o).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
    assert!(e.to_string().contains("id 77"), "{e}");
}

#[test]
fn concurrent_writers_and_readers() {
    let (_fs, mut o) = mem_opts();
    o.write_buffer_size = 128 << 10;
    let db = Arc::new(Db::open("/db", o).unwrap());
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..3000u32 {
                    let mut b = WriteBatch::new();
                    b.put(format!("t{t}-{i:05}"), format!("{i}"));
                    b.put(format!("t{t}-last"), format!("{i}"));
                    db.write(
                        &WriteOptions {
                            sync: i % 500 == 0,
                            ..Default::default()
                        },
                        b,
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    let reader = {
        let db = db.clone();
        std::thread::spawn(move || {
            for _ in 0..200 {
                // Batch atomicity: whenever t0-last says i, t0-i exists.
                if let Some(v) = db.get(b"t0-last").unwrap() {
                    let i: u32 = String::from_utf8(v).unwrap().parse().unwrap();
                    assert!(db.get(format!("t0-{i:05}")).unwrap().is_some());
                }
                let n = db
                    .iter(ReadOptions {
                        lower_bound: Some(b"t1-".to_vec()),
                        upper_bound: Some(b"t1-9".to_vec()),
                        ..Default::default()
                    })
                    .unwrap()
                    .count();
                assert!(n <= 3000);
            }
        })
    };
    for w in writers {
        w.join().unwrap();
    }
    reader.join().unwrap();
    for t in 0..4 {
        for i in (0..3000u32).step_by(97) {
            assert_eq!(
                db.get(format!("t{t}-{i:05}")).unwrap(),
                Some(format!("{i}").into_bytes())
            );
        }
    }
}

/// Sixteen threads on a two-core machine keep the write queue full: leaders gather
/// groups, wake their followers after letting go of the queue, and hand the lead on. Every
/// write must land once, in order per thread, and no writer may wait for ever (a lost
/// wakeup hangs this test).
#[test]
fn many_writers_each_land_once() {
    let (_fs, mut o) = mem_opts();
    o.write_buffer_size = 64 << 10;
    let db = Arc::new(Db::open("/db", o).unwrap());
    let threads: Vec<_> = (0..16u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..1500u32 {
                    let mut b = WriteBatch::new();
                    b.put(format!("w{t:02}-{i:05}"), i.to_le_bytes());
                    b.put(format!("w{t:02}-last"), i.to_le_bytes());
                    let sync = i % 300 == 0;
                    db.write(
                        &WriteOptions {
                            sync,
                            ..Default::default()
                        },
                        b,
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    // A hang fails here rather than stalling the suite.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for t in threads {
            t.join().unwrap();
        }
        let _ = done.send(());
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("a writer failed, or still waits after two minutes (a lost wakeup)");
    let seen: Vec<_> = db.iter(ReadOptions::default()).unwrap().collect();
    assert_eq!(seen.len(), 16 * 1501, "every put lands once");
    for t in 0..16u32 {
        assert_eq!(
            db.get(format!("w{t:02}-last")).unwrap(),
            Some(1499u32.to_le_bytes().to_vec()),
            "thread {t}'s last write is its newest"
        );
    }
}

#[test]
fn iterators_and_snapshots_are_point_in_time() {
    let (_fs, o) = mem_opts();
    let db = Db::open("/db", o).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), b"old").unwrap();
    }
    let snap = db.snapshot();
    let mut it = db.iter(ReadOptions::default()).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), b"new").unwrap();
    }
    db.put(b"k999", b"new").unwrap();
    db.compact_range(None, None).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.value(), b"old");
        n += 1;
        it.next();
    }
    assert_eq!(n, 100);
    let at = ReadOptions {
        snapshot: Some(snap.clone()),
        ..Default::default()
    };
    assert_eq!(db.get_opt(&at, b"k050").unwrap(), Some(b"old".to_vec()));
    assert_eq!(db.get_opt(&at, b"k999").unwrap(), None);
    assert_eq!(db.get(b"k050").unwrap(), Some(b"new".to_vec()));
    // Bounded reverse scan through the snapshot.
    let mut it = db
        .iter(ReadOptions {
            snapshot: Some(snap),
            lower_bound: Some(b"k010".to_vec()),
            upper_bound: Some(b"k020".to_vec()),
        })
        .unwrap();
    it.seek_to_last();
    let mut keys = Vec::new();
    while it.valid() {
        keys.push(String::from_utf8(it.key().to_vec()).unwrap());
        it.prev();
    }
    assert_eq!(keys.len(), 10);
    assert_eq!((keys[0].as_str(), keys[9].as_str()), ("k019", "k010"));
}

#[test]
fn wal_and_level_directories_are_used() {
    let dir = TempDir::new("dirs");
    let (db_dir, wal_dir, deep_dir) = (
        dir.path().join("db"),
        dir.path().join("wal"),
        dir.path().join("deep"),
    );
    let opts = Options {
        wal_dir: Some(wal_dir.clone()),
        level_dir: Some(deep_dir.clone()),
        write_buffer_size: 64 << 10,
        max_bytes_for_level_base: 128 << 10,
        target_file_size_base: 32 << 10,
        ..Options::default()
    };
    let db = Db::open(&db_dir, opts.clone()).unwrap();
    for i in 0..5000u32 {
        db.put(format!("key{i:06}"), vec![b'x'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let fs = RealFs::new();
    let list = |d: &Path| fs.list(d).unwrap();
    assert!(list(&wal_dir).iter().any(|n| n.ends_with(".log")));
    assert!(!list(&db_dir).iter().any(|n| n.ends_with(".log")));
    assert!(list(&deep_dir).iter().any(|n| n.ends_with(".sst")));
    assert!(list(&db_dir).iter().any(|n| n.starts_with("MANIFEST")));
    drop(db);
    let db = Db::open(&db_dir, opts).unwrap();
    assert_eq!(db.get(b"key004999").unwrap(), Some(vec![b'x'; 100]));
}

#[test]
fn pmem_directory_holds_l0_tables_only() {
    // rocksdb-l0-nvm: L0 tables in the persistent-memory directory, everything else beside
    // the database; L0 -> L1 rewrites tables across the directories (no trivial move), and
    // a reopen finds each table where it was written.
    let dir = TempDir::new("pmem");
    let (db_dir, pmem_dir) = (dir.path().join("db"), dir.path().join("pmem"));
    let opts = Options {
        write_buffer_size: 64 << 10,
        max_bytes_for_level_base: 256 << 10,
        target_file_size_base: 32 << 10,
        level0_file_num_compaction_trigger: 4,
        ..Options::rocksdb_l0_nvm(&pmem_dir)
    };
    let db = Db::open(&db_dir, opts.clone()).unwrap();
    let fs = RealFs::new();
    let list = |d: &Path| fs.list(d).unwrap();
    let tables = |d: &Path| list(d).iter().filter(|n| n.ends_with(".sst")).count();
    for i in 0..400u32 {
        db.put(format!("key{i:06}"), vec![b'x'; 100]).unwrap();
    }
    db.flush().unwrap();
    assert_eq!(tables(&pmem_dir), 1, "a flush writes its table to pmem_dir");
    assert_eq!(tables(&db_dir), 0, "nothing below L0 yet");
    for i in 400..2000u32 {
        db.put(format!("key{i:06}"), vec![b'x'; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(tables(&pmem_dir), 0, "L0 compacted away");
    assert!(tables(&db_dir) > 0, "levels >= 1 beside the database");
    for i in 0..500u32 {
        db.put(format!("key{i:06}"), vec![b'y'; 100]).unwrap();
    }
    db.flush().unwrap();
    assert!(tables(&pmem_dir) > 0);
    assert!(list(&db_dir).iter().any(|n| n.ends_with(".log")));
    drop(db);
    let db = Db::open(&db_dir, opts).unwrap();
    assert_eq!(db.get(b"key000001").unwrap(), Some(vec![b'y'; 100]));
    assert_eq!(db.get(b"key001999").unwrap(), Some(vec![b'x'; 100]));
}

#[test]
fn stats_report_amplification_and_levels() {
    let (_fs, mut o) = mem_opts();
    o.write_buffer_size = 64 << 10;
    o.max_bytes_for_level_base = 128 << 10;
    o.target_file_size_base = 32 << 10;
    let db = Db::open("/db", o).unwrap();
    for round in 0..3 {
        for i in 0..4000u32 {
            db.put(format!("key{i:06}"), vec![round as u8; 100])
                .unwrap();
        }
    }
    db.flush().unwrap();
    let s = db.stats();
    assert!(s.user_bytes > 3 * 4000 * 100);
    assert!(s.flushes > 0 && s.flush_bytes > 0 && s.wal_bytes > s.user_bytes);
    assert!(s.write_amplification() > 0.5, "{s:?}");
    assert!(s.device_write_amplification() > s.write_amplification());
    let text = db.property("strata.stats").unwrap();
    assert!(text.contains("Write amplification"), "{text}");
    assert!(db.property("strata.num-files-at-level0").is_some());
    assert_eq!(db.property("nope"), None);
}

#[test]
fn writes_stall_and_resume_under_tiny_triggers() {
    let (_fs, o) = mem_opts();
    let o = Options {
        write_buffer_size: 64 << 10,
        level0_file_num_compaction_trigger: 1,
        level0_slowdown_writes_trigger: 1,
        level0_stop_writes_trigger: 2,
        max_bytes_for_level_base: 128 << 10,
        target_file_size_base: 32 << 10,
        ..o
    };
    let db = Db::open("/db", o).unwrap();
    for i in 0..20_000u32 {
        db.put(format!("key{:06}", (i * 7919) % 20_000), vec![1u8; 100])
            .unwrap();
    }
    let s = db.stats();
    assert!(
        s.stalls + s.slowdowns > 0,
        "tiny triggers must throttle writes: {s:?}"
    );
    assert!(s.stall_micros > 0);
    for i in (0..20_000u32).step_by(101) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap(), Some(vec![1u8; 100]));
    }
    assert!(
        db.stats().files_per_level[0] <= 3,
        "L0 kept near its stop trigger"
    );
}

/// `Db::open_read_only` sees every acknowledged write (the WALs replayed into memory) while
/// another process-like holder keeps the database open, and writes nothing: the files, their
/// sizes and contents are the same after it as before (issue 29).
#[test]
fn a_read_only_open_sees_everything_and_writes_nothing() {
    let dir = TempDir::new("read-only");
    let path = dir.path().join("db");
    let o = || Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    let snapshot_files = || -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let writer = Db::open(&path, o()).unwrap();
    for i in 0..3000u32 {
        writer.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    writer.flush().unwrap();
    for i in 3000..3100u32 {
        writer.put(format!("k{i:05}"), format!("v{i}")).unwrap(); // only in the WAL
    }
    writer.delete(b"k00007").unwrap();
    writer.wait_for_compactions().unwrap();
    let before = snapshot_files();

    // While the writer holds the lock.
    let ro = Db::open_read_only(&path, o()).unwrap();
    assert!(ro.is_read_only());
    assert_eq!(ro.get(b"k00001").unwrap().as_deref(), Some(&b"v1"[..]));
    assert_eq!(ro.get(b"k03099").unwrap().as_deref(), Some(&b"v3099"[..]));
    assert_eq!(ro.get(b"k00007").unwrap(), None);
    let n = ro.iter(ReadOptions::default()).unwrap().count();
    assert_eq!(n, 3099);
    for e in [
        ro.put(b"x", b"1").unwrap_err(),
        ro.delete(b"k00001").unwrap_err(),
        ro.flush().unwrap_err(),
        ro.compact_range(None, None).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{e}");
        assert!(e.to_string().contains("read-only"), "{e}");
    }
    ro.wait_for_compactions().unwrap();
    ro.close().unwrap();
    drop(ro);
    assert!(
        snapshot_files() == before,
        "the read-only open changed files"
    );

    // Nothing is created where there is no database.
    let none = dir.path().join("none");
    assert_eq!(
        Db::open_read_only(&none, o()).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert!(!none.exists());
    drop(writer);
}

/// Every name `Db::PROPERTY_NAMES` lists is one `property` answers (the CLI lists them
/// for an unknown name).
#[test]
fn every_listed_property_name_answers() {
    let (_fs, o) = mem_opts();
    let db = Db::open("/db", o).unwrap();
    for name in Db::PROPERTY_NAMES {
        let name = name.replace("<N>", "0");
        assert!(db.property(&name).is_some(), "{name}");
    }
}

/// `strata::destroy` is refused while the database is open and afterwards leaves no file
/// of it (other files stay); `approximate_size` counts the tables holding a range.
#[test]
fn destroy_and_approximate_size() {
    let (fs, o) = mem_opts();
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..2000u32 {
        db.put(format!("k{i:05}"), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    assert!(
        db.approximate_size(Some(b"k00000"), Some(b"k99999"))
            .unwrap()
            > 100_000
    );
    assert_eq!(db.approximate_size(Some(b"x"), Some(b"y")).unwrap(), 0);
    assert_eq!(
        strata::destroy("/db", &o).unwrap_err().kind(),
        ErrorKind::Busy
    );
    drop(db);
    let mut f = fs.create(Path::new("/db/notes.txt")).unwrap();
    f.append(b"mine").unwrap();
    f.sync().unwrap();
    drop(f);
    strata::destroy("/db", &o).unwrap();
    assert_eq!(
        fs.list(Path::new("/db")).unwrap(),
        vec!["notes.txt".to_string()]
    );
    assert_eq!(
        Db::open(
            "/db",
            Options {
                create_if_missing: false,
                ..o
            }
        )
        .unwrap_err()
        .kind(),
        ErrorKind::InvalidArgument
    );
}

/// A read-only view beside a writer whose compaction deleted the tables the view's version
/// names: a read of one the view had not opened yet answers `Stale` (open a new view), not
/// an I/O error; the same file missing from a database that did not change is what it is.
#[test]
fn a_view_that_reaches_what_the_writer_deleted_says_it_is_stale() {
    let dir = TempDir::new("stale-view");
    let path = dir.path().join("db");
    let o = || Options {
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    let writer = Db::open(&path, o()).unwrap();
    for i in 0..3000u32 {
        writer.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    writer.flush().unwrap();
    writer.wait_for_compactions().unwrap();
    let view = Db::open_read_only(&path, o()).unwrap();
    for i in 0..3000u32 {
        writer.put(format!("k{i:05}"), format!("w{i}")).unwrap();
    }
    writer.flush().unwrap();
    writer.compact_range(None, None).unwrap();
    writer.wait_for_compactions().unwrap();
    let e = view.get(b"k00001").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Stale, "{e}");
    assert!(e.message().contains("open a new view"), "{e}");
    let e = view
        .iter(ReadOptions::default())
        .unwrap()
        .find_map(Result::err)
        .unwrap();
    assert_eq!(e.kind(), ErrorKind::Stale, "{e}");
    drop(view);
    let view = Db::open_read_only(&path, o()).unwrap();
    assert_eq!(view.get(b"k00001").unwrap().as_deref(), Some(&b"w1"[..]));
    drop(view);
    drop(writer);
    // A table missing from a database nothing writes: an I/O error, as it is.
    let view = Db::open_read_only(&path, o()).unwrap();
    let table = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "sst"))
        .unwrap();
    std::fs::remove_file(&table).unwrap();
    let e = view.get(b"k00001").unwrap_err();
    assert_ne!(e.kind(), ErrorKind::Stale, "{e}");
}
