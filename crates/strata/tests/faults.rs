//! I/O error injection: ENOSPC and EIO at each op kind, at several points of a workload.
//!
//! Whatever fails, the engine returns a clean error (or poisons itself and refuses writes),
//! never panics, never returns a wrong value, and after the fault clears, reopening shows
//! every write that was acknowledged.

use std::io::ErrorKind as IoKind;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{FaultFs, FaultRule, FsOp, MemFs};
use strata::{Db, ErrorKind, Options, WriteBatch, WriteOptions};

fn opts(fs: &FaultFs) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        block_size: 1024,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

thread_local! {
    /// Whether `opts` builds the write-time hash store (`hashkv-wt`): the 120-byte values
    /// go to its open files before the WAL.
    static WRITE_TIME_HASH: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn opts_for(fs: &FaultFs) -> Options {
    if !WRITE_TIME_HASH.with(std::cell::Cell::get) {
        return opts(fs);
    }
    Options {
        value_store: strata::ValueStoreKind::Hash,
        hash_write_time: true,
        min_blob_size: 100,
        hash_groups: 4,
        hash_main_segment_size: 4 << 10,
        hash_reserve_ratio: 1.0,
        hash_when_full: strata::HashWhenFull::Grow,
        ..opts(fs)
    }
}

fn value(i: u32) -> Vec<u8> {
    let mut v = format!("v{i}-").into_bytes();
    v.resize(120, b'z');
    v
}

fn scenario(op: FsOp, n: u64, err: IoKind) -> (usize, bool) {
    let ctx = format!("{op:?} #{n} {err:?}");
    let fs = FaultFs::new(MemFs::new());
    fs.inject(FaultRule::nth(op, n, err));
    let db = match Db::open("/db", opts_for(&fs)) {
        Ok(db) => db,
        Err(e) => {
            assert!(
                matches!(e.kind(), ErrorKind::Io | ErrorKind::Corruption),
                "{ctx}: open: {e}"
            );
            fs.clear();
            let db = Db::open("/db", opts_for(&fs))
                .unwrap_or_else(|e| panic!("{ctx}: reopen after failed open: {e}"));
            assert_eq!(db.get(b"anything").unwrap(), None);
            return (0, true);
        }
    };
    let mut acked = 0u32;
    let mut failed = false;
    for i in 0..2500u32 {
        let mut b = WriteBatch::new();
        b.put(format!("key{i:05}"), value(i));
        match db.write(
            &WriteOptions {
                sync: i % 100 == 0,
                ..Default::default()
            },
            b,
        ) {
            Ok(()) => acked = i + 1,
            Err(e) => {
                assert!(
                    matches!(e.kind(), ErrorKind::Io | ErrorKind::Poisoned),
                    "{ctx}: write: {e}"
                );
                failed = true;
                break;
            }
        }
        if i % 700 == 699 {
            if let Err(e) = db.flush() {
                assert!(
                    matches!(e.kind(), ErrorKind::Io | ErrorKind::Poisoned),
                    "{ctx}: flush: {e}"
                );
                failed = true;
                break;
            }
        }
    }
    // Reads still work (or fail cleanly) and are never wrong.
    for i in (0..acked).step_by(13) {
        match db.get(format!("key{i:05}")) {
            Ok(v) => assert_eq!(v, Some(value(i)), "{ctx}: key{i:05} before reopen"),
            Err(e) => assert!(
                matches!(e.kind(), ErrorKind::Io | ErrorKind::Corruption),
                "{ctx}: get: {e}"
            ),
        }
    }
    let _ = db.close();
    drop(db);
    fs.clear();
    let db = Db::open("/db", opts_for(&fs)).unwrap_or_else(|e| panic!("{ctx}: reopen: {e}"));
    for i in 0..acked {
        assert_eq!(
            db.get(format!("key{i:05}")).unwrap(),
            Some(value(i)),
            "{ctx}: acknowledged key{i:05} lost"
        );
    }
    db.put(b"more", b"writes").unwrap();
    (acked as usize, failed || fs.injected() > 0)
}

#[test]
fn every_op_kind_fails_cleanly() {
    let ops = [
        FsOp::Create,
        FsOp::Open,
        FsOp::Read,
        FsOp::Append,
        FsOp::Sync,
        FsOp::SyncDir,
        FsOp::Rename,
        FsOp::Remove,
        FsOp::Meta,
    ];
    let mut scenarios = 0;
    for op in ops {
        for n in [0, 1, 2, 5, 20, 200] {
            for err in [IoKind::StorageFull, IoKind::Other] {
                scenario(op, n, err);
                scenarios += 1;
            }
        }
    }
    eprintln!("fault scenarios: {scenarios}");
}

/// The same faults under the write-time hash store: a failed append, sync or file
/// creation while values go to open files fails cleanly, every acknowledged write is there
/// after a reopen, and writes after a failed separation are refused (its records may
/// outlive it with sequences the next writes would reuse).
#[test]
fn every_op_kind_fails_cleanly_with_the_write_time_hash_store() {
    WRITE_TIME_HASH.with(|c| c.set(true));
    for op in [
        FsOp::Create,
        FsOp::Append,
        FsOp::Sync,
        FsOp::SyncDir,
        FsOp::Read,
    ] {
        for n in [0, 1, 2, 5, 20, 200] {
            scenario(op, n, IoKind::StorageFull);
        }
    }
    WRITE_TIME_HASH.with(|c| c.set(false));
}

#[test]
fn poisoned_database_refuses_writes_but_serves_reads() {
    let fs = FaultFs::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).unwrap();
    for i in 0..100u32 {
        db.put(format!("key{i:05}"), value(i)).unwrap();
    }
    // Every table creation fails from now on: the next flush poisons the database.
    fs.inject(FaultRule::always(FsOp::Create).on_paths(".sst"));
    let e = db.flush().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Poisoned, "{e}");
    let e = db.put(b"x", b"y").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Poisoned);
    assert!(e.message().contains(".sst"), "poison names the cause: {e}");
    assert_eq!(db.get(b"key00042").unwrap(), Some(value(42)));
    drop(db);
    fs.clear();
    let db = Db::open(Path::new("/db"), opts(&fs)).unwrap();
    assert_eq!(db.get(b"key00099").unwrap(), Some(value(99)));
}

#[test]
fn background_panic_poisons_instead_of_crashing() {
    let mem = MemFs::new();
    // Table creation panics once armed: a bug in a background job.
    let armed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let arm = armed.clone();
    let pfs = Arc::new(
        strata_testkit::InterceptFs::new(Arc::new(mem.clone())).on_create(move |path, fs| {
            if arm.load(std::sync::atomic::Ordering::SeqCst)
                && path.to_string_lossy().contains(".sst")
            {
                panic!("simulated bug while creating {}", path.display());
            }
            fs.create(path)
        }),
    );
    let o = Options {
        write_buffer_size: 64 << 10,
        fs: pfs,
        ..Options::default()
    };
    let db = Db::open("/db", o).unwrap();
    db.put(b"before", b"1").unwrap();
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let e = db.flush().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Poisoned);
    assert!(e.message().contains("panicked"), "{e}");
    assert_eq!(db.put(b"x", b"y").unwrap_err().kind(), ErrorKind::Poisoned);
    assert_eq!(db.get(b"before").unwrap(), Some(b"1".to_vec()));
    drop(db);
    armed.store(false, std::sync::atomic::Ordering::SeqCst);
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(mem),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(db.get(b"before").unwrap(), Some(b"1".to_vec()));
}
