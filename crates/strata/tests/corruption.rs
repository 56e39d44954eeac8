//! Corruption tests: flip and truncate bytes of each file kind (WAL, table, manifest, CURRENT)
//! and check that the database either returns correct data, or a `Corruption` error naming the
//! file (and offset), or recovers as documented (a torn WAL tail is dropped). Never a panic,
//! never silently wrong data.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::{Db, ErrorKind, Options, ReadOptions, WalRecoveryMode, WriteBatch, WriteOptions};

fn opts(fs: &MemFs) -> Options {
    opts_wb(fs, 64 << 10)
}

fn opts_wb(fs: &MemFs, write_buffer_size: usize) -> Options {
    Options {
        write_buffer_size,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        block_size: 512,
        fs: Arc::new(fs.clone()),
        ..Options::default()
    }
}

/// The WALs in `/db`, oldest first.
fn wals(fs: &MemFs) -> Vec<PathBuf> {
    let mut w: Vec<PathBuf> = fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .map(|n| Path::new("/db").join(n))
        .collect();
    w.sort();
    w
}

/// Puts `key` in a synced write.
fn put_synced(db: &Db, key: &str, value: &str) {
    let mut b = WriteBatch::new();
    b.put(key, value);
    db.write(
        &WriteOptions {
            sync: true,
            ..Default::default()
        },
        b,
    )
    .unwrap();
}

fn value(i: u32) -> Vec<u8> {
    format!("value-{i:05}-{}", "y".repeat((i % 40) as usize)).into_bytes()
}

/// A database with tables in L0 and deeper levels, and a WAL with recent writes.
fn build(fs: &MemFs, n: u32, flush: bool) {
    build_wb(fs, n, flush, 64 << 10);
}

fn build_wb(fs: &MemFs, n: u32, flush: bool, write_buffer_size: usize) {
    let db = Db::open("/db", opts_wb(fs, write_buffer_size)).unwrap();
    for i in 0..n {
        let mut b = WriteBatch::new();
        b.put(format!("key{i:05}"), value(i));
        db.write(
            &WriteOptions {
                sync: i % 50 == 0,
                ..Default::default()
            },
            b,
        )
        .unwrap();
    }
    if flush {
        db.flush().unwrap();
    }
    db.close().unwrap();
}

fn files(fs: &MemFs, suffix: &str) -> Vec<PathBuf> {
    fs.list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(suffix) || (suffix == "MANIFEST" && n.starts_with("MANIFEST")))
        .map(|n| Path::new("/db").join(n))
        .collect()
}

/// Opens and reads everything; every value must be right or the error must be Corruption
/// naming a file. Returns how many keys read back correctly.
fn verify(fs: &MemFs, n: u32, ctx: &str) -> Result<u32, String> {
    let db = match Db::open("/db", opts(fs)) {
        Ok(db) => db,
        Err(e) => {
            assert!(
                e.kind() == ErrorKind::Corruption || e.kind() == ErrorKind::NotSupported,
                "{ctx}: open failed with {e} (not Corruption)"
            );
            assert!(
                e.message().contains("/db/") || e.message().contains("manifest"),
                "{ctx}: error names no file: {e}"
            );
            return Err(e.to_string());
        }
    };
    let mut ok = 0;
    for i in 0..n {
        match db.get(format!("key{i:05}")) {
            Ok(Some(v)) => {
                assert_eq!(v, value(i), "{ctx}: key{i:05} has a wrong value");
                ok += 1;
            }
            Ok(None) => {}
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Corruption, "{ctx}: {e}");
                assert!(
                    e.message().contains(".sst"),
                    "{ctx}: error names no table: {e}"
                );
            }
        }
    }
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_to_first();
    while it.valid() {
        let k = String::from_utf8(it.key().to_vec()).unwrap();
        let i: u32 = k[3..].parse().unwrap();
        assert_eq!(it.value(), value(i), "{ctx}: scan: {k} wrong");
        it.next();
    }
    if let Err(e) = it.status() {
        assert_eq!(e.kind(), ErrorKind::Corruption, "{ctx}: {e}");
    }
    Ok(ok)
}

fn sweep(
    kind: &str,
    n: u32,
    flush: bool,
    step: usize,
    check: impl Fn(&Result<u32, String>, &str),
) -> usize {
    let base = MemFs::new();
    build(&base, n, flush);
    let targets = files(&base, kind);
    assert!(!targets.is_empty(), "no {kind} files");
    let mut tried = 0;
    for path in targets {
        let len = base.file_size(&path).unwrap() as usize;
        for offset in (0..len).step_by(step).chain([len.saturating_sub(1)]) {
            for truncate in [false, true] {
                let fs = base.crash_clone(strata::fs::CrashMode::DropUnsynced);
                if truncate {
                    fs.truncate(&path, offset).unwrap();
                } else {
                    fs.corrupt(&path, offset, |b| b[0] ^= 0x21).unwrap();
                }
                let ctx = format!(
                    "{} {} at {offset}",
                    path.display(),
                    if truncate { "truncated" } else { "flipped" }
                );
                let r = verify(&fs, n, &ctx);
                check(&r, &ctx);
                tried += 1;
            }
        }
    }
    tried
}

#[test]
fn table_damage_is_detected() {
    let tried = sweep(".sst", 3000, true, 97, |r, ctx| {
        // Tables hold synced data: open may refuse or reads may fail, but never wrong data
        // (checked inside verify).
        let _ = (r, ctx);
    });
    eprintln!("table offsets tried: {tried}");
}

#[test]
fn wal_damage_is_detected_or_tail_dropped() {
    // No flush: the data lives only in the WAL.
    let tried = sweep(".log", 400, false, 31, |r, ctx| {
        if let Err(e) = r {
            assert!(
                e.contains(".log"),
                "{ctx}: WAL corruption must name the WAL: {e}"
            );
        }
    });
    eprintln!("wal offsets tried: {tried}");
}

#[test]
fn manifest_damage_is_detected() {
    let tried = sweep("MANIFEST", 3000, true, 7, |r, ctx| {
        if let Err(e) = r {
            assert!(
                e.contains("MANIFEST") || e.contains(".sst") || e.contains("missing"),
                "{ctx}: {e}"
            );
        }
    });
    eprintln!("manifest offsets tried: {tried}");
}

#[test]
fn current_damage_is_detected() {
    let base = MemFs::new();
    build(&base, 100, true);
    for garbage in [
        &b""[..],
        b"MANIFEST-999999\n",
        b"nonsense",
        b"MANIFEST-000001",
    ] {
        let fs = base.crash_clone(strata::fs::CrashMode::DropUnsynced);
        fs.truncate(Path::new("/db/CURRENT"), 0).unwrap();
        let mut f = fs.create(Path::new("/db/CURRENT")).unwrap();
        f.append(garbage).unwrap();
        f.sync().unwrap();
        drop(f);
        let e = Db::open("/db", opts(&fs)).unwrap_err();
        // Corruption naming CURRENT, also when it names a manifest that does not exist (a
        // flipped digit): not an I/O error about a file that was never there.
        assert_eq!(e.kind(), ErrorKind::Corruption, "{garbage:?}: {e}");
        assert!(e.to_string().contains("CURRENT"), "{garbage:?}: {e}");
    }
}

#[test]
fn wal_recovery_modes() {
    const N: u32 = 3000;
    let base = MemFs::new();
    build_wb(&base, N, false, 4 << 20);
    let wal = files(&base, ".log").into_iter().max().unwrap();
    let len = base.file_size(&wal).unwrap() as usize;
    // Damage in the middle of the WAL.
    let damaged = || {
        let fs = base.crash_clone(strata::fs::CrashMode::DropUnsynced);
        fs.corrupt(&wal, len / 2, |b| b[0] ^= 0xff).unwrap();
        fs
    };
    let open = |fs: &MemFs, mode| {
        Db::open(
            "/db",
            Options {
                wal_recovery_mode: mode,
                ..opts_wb(fs, 4 << 20)
            },
        )
    };
    let e = open(&damaged(), WalRecoveryMode::TolerateTornTail).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption);
    assert!(
        e.message().contains(".log") && e.message().contains("offset"),
        "{e}"
    );
    assert!(open(&damaged(), WalRecoveryMode::AbsoluteConsistency).is_err());
    // Point in time: a prefix survives, nothing after the damage.
    let db = open(&damaged(), WalRecoveryMode::PointInTime).unwrap();
    let present: Vec<bool> = (0..N)
        .map(|i| db.get(format!("key{i:05}")).unwrap().is_some())
        .collect();
    let first_missing = present.iter().position(|p| !p).unwrap();
    assert!(
        first_missing > 0 && present[first_missing..].iter().all(|p| !p),
        "point-in-time must give a prefix"
    );
    drop(db);
    // Skip: more survives than with point in time, holes allowed.
    let db = open(&damaged(), WalRecoveryMode::SkipAnyCorrupted).unwrap();
    let n = (0..N)
        .filter(|i| db.get(format!("key{i:05}")).unwrap().is_some())
        .count();
    assert!(
        n > first_missing,
        "skip mode should salvage records after the damage"
    );
    // A WAL cut short after a clean close is damage (the close recorded its size)...
    let fs = base.crash_clone(strata::fs::CrashMode::DropUnsynced);
    fs.truncate(&wal, len - 3).unwrap();
    let e = open(&fs, WalRecoveryMode::TolerateTornTail).unwrap_err();
    assert!(e.message().contains("clean close"), "{e}");
    // ... while a crash's torn tail is fine in the default mode and fails absolute
    // consistency.
    let crashed = MemFs::new();
    let db = Db::open("/db", opts_wb(&crashed, 4 << 20)).unwrap();
    for i in 0..N {
        let mut b = WriteBatch::new();
        b.put(format!("key{i:05}"), value(i));
        db.write(
            &WriteOptions {
                sync: i == N - 1,
                ..Default::default()
            },
            b,
        )
        .unwrap();
    }
    let image = crashed.crash_clone(strata::fs::CrashMode::DropUnsynced);
    drop(db);
    let wal = files(&image, ".log").into_iter().max().unwrap();
    // (The log's preallocated zero tail is no record: the end of its last one.)
    let mut reader =
        strata::internals::wal::LogReader::new(strata::fs::read_all(&image, &wal).unwrap());
    let mut len = 0;
    while let strata::internals::wal::LogEvent::Record { .. } = reader.next_event() {
        len = reader.position() as usize;
    }
    let fs = image.crash_clone(strata::fs::CrashMode::DropUnsynced);
    fs.truncate(&wal, len - 3).unwrap();
    open(&fs, WalRecoveryMode::TolerateTornTail).unwrap();
    let fs = image.crash_clone(strata::fs::CrashMode::DropUnsynced);
    fs.truncate(&wal, len - 3).unwrap();
    assert!(open(&fs, WalRecoveryMode::AbsoluteConsistency).is_err());
}

/// Tables on the real file system are read through a memory map and their blocks are not
/// cached: a block's checksum is verified the first time it is read and trusted afterwards.
/// A damaged block must fail that first verification, and fail again on every later read
/// (a failed check must never mark the block verified); undamaged blocks keep reading right.
/// The same holds for every way of reading tables (`Options::table_reads`): a map with
/// read-around off and the index and filter on the heap, and `pread` into the block cache
/// (a block that fails its check must never be cached).
#[test]
fn mapped_table_damage_is_detected_on_every_read() {
    use strata::fs::ReadAccess;
    for (access, pin) in [
        (ReadAccess::Mapped, false),
        (ReadAccess::MappedRandom, true),
        (ReadAccess::Positional, false),
    ] {
        table_damage_is_detected_on_every_read(access, pin);
    }
}

fn table_damage_is_detected_on_every_read(access: strata::fs::ReadAccess, pin: bool) {
    let dir = strata_testkit::tempdir::TempDir::new("mapped-corrupt");
    let path = dir.path().join("db");
    let opts = || Options {
        block_size: 512,
        table_reads: Some(access),
        pin_table_metadata: pin,
        ..Options::default()
    };
    let n = 3000u32;
    {
        let db = Db::open(&path, opts()).unwrap();
        for i in 0..n {
            db.put(format!("key{i:05}"), value(i)).unwrap();
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let sst: Vec<PathBuf> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    assert_eq!(sst.len(), 1, "{sst:?}");
    let mut bytes = std::fs::read(&sst[0]).unwrap();
    bytes[20_000] ^= 0x40; // inside the data blocks (the table is ~100 KB)
    std::fs::write(&sst[0], &bytes).unwrap();

    let db = Db::open(&path, opts()).unwrap();
    for round in 0..3 {
        let (mut ok, mut bad) = (0, 0);
        for i in 0..n {
            match db.get(format!("key{i:05}")) {
                Ok(v) => {
                    assert_eq!(v, Some(value(i)), "round {round}: key {i} read wrong");
                    ok += 1;
                }
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::Corruption, "round {round}: {e}");
                    assert!(e.message().contains(".sst"), "names no file: {e}");
                    bad += 1;
                }
            }
        }
        assert!(
            bad > 0 && bad < 100,
            "{access:?}: round {round}: {bad} bad, {ok} ok"
        );
        let mut it = db.iter(ReadOptions::default()).unwrap();
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        assert_eq!(
            it.status().map_err(|e| e.kind()),
            Err(ErrorKind::Corruption),
            "round {round}: a scan must hit the damaged block"
        );
    }
}

/// A file whose first append has one byte flipped: a table damaged between the checksums
/// its builder computed and the file (memory, a driver, the page cache).
struct FlipFirstAppend {
    inner: Box<dyn strata::fs::WritableFile>,
    flipped: bool,
}

impl strata::fs::WritableFile for FlipFirstAppend {
    fn append(&mut self, data: &[u8]) -> strata::Result<()> {
        if self.flipped || data.len() < 64 {
            return self.inner.append(data);
        }
        self.flipped = true;
        let mut d = data.to_vec();
        d[40] ^= 0x10;
        self.inner.append(&d)
    }
    fn flush(&mut self) -> strata::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> strata::Result<()> {
        self.inner.sync()
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
}

/// A compaction's output that does not read back as it was written is never installed: the
/// job reads each new table back through its map (`Table::verify_new`) before the edit. The
/// compaction fails, the database refuses writes, and a reopen finds every key as it was.
#[test]
fn a_compaction_output_damaged_on_its_way_to_the_file_is_never_installed() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = strata_testkit::tempdir::TempDir::new("damaged-output");
    let path = dir.path().join("db");
    let damage = Arc::new(AtomicBool::new(false));
    let armed = damage.clone();
    let fs = strata_testkit::InterceptFs::new(Arc::new(strata::fs::RealFs::new())).on_create(
        move |p, fs| {
            let inner = fs.create(p)?;
            if armed.load(Ordering::SeqCst) && p.extension().is_some_and(|e| e == "sst") {
                return Ok(Box::new(FlipFirstAppend {
                    inner,
                    flipped: false,
                }));
            }
            Ok(inner)
        },
    );
    let opts = || Options {
        write_buffer_size: 64 << 10,
        target_file_size_base: 16 << 10,
        level0_file_num_compaction_trigger: 100,
        level0_slowdown_writes_trigger: 100,
        level0_stop_writes_trigger: 100,
        table_reads: Some(strata::fs::ReadAccess::Mapped),
        ..Options::default()
    };
    let db = Db::open(
        &path,
        Options {
            fs: Arc::new(fs),
            ..opts()
        },
    )
    .unwrap();
    for round in 0..3u32 {
        for i in 0..1500u32 {
            db.put(format!("key{i:05}"), format!("{round}-{}", value(i).len()))
                .unwrap();
        }
        db.flush().unwrap();
    }
    damage.store(true, Ordering::SeqCst);
    let e = db.compact_range(None, None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.message().contains(".sst"), "names no file: {e}");
    drop(db);
    let db = Db::open(&path, opts()).unwrap();
    assert_eq!(db.stats().files_per_level.iter().skip(1).sum::<usize>(), 0);
    for i in 0..1500u32 {
        assert_eq!(
            db.get(format!("key{i:05}")).unwrap(),
            Some(format!("2-{}", value(i).len()).into_bytes()),
            "key {i}"
        );
    }
}

/// A live table cut short (or grown) on disk is not the table the manifest describes: the
/// open refuses with `Corruption` naming it and both sizes, before anything is written
/// (the next `put` used to succeed over it, and reads found what they could).
#[test]
fn a_table_of_another_size_than_recorded_refuses_the_open() {
    let base = MemFs::new();
    build(&base, 3000, true);
    let tables = files(&base, ".sst");
    assert!(!tables.is_empty());
    for grow in [false, true] {
        let fs = base.crash_clone(strata::fs::CrashMode::DropUnsynced);
        let path = &tables[tables.len() / 2];
        let len = fs.file_size(path).unwrap() as usize;
        if grow {
            let mut w = fs.create(Path::new("/db/scratch")).unwrap();
            let mut bytes = strata::fs::read_all(&fs, path).unwrap();
            bytes.extend_from_slice(&[0u8; 10]);
            w.append(&bytes).unwrap();
            w.sync().unwrap();
            drop(w);
            fs.rename(Path::new("/db/scratch"), path).unwrap();
        } else {
            fs.truncate(path, len - 100).unwrap();
        }
        let before: Vec<String> = fs.list(Path::new("/db")).unwrap();
        let Err(err) = Db::open("/db", opts(&fs)) else {
            panic!("the open is refused (grown {grow})");
        };
        assert_eq!(err.kind(), ErrorKind::Corruption, "{err}");
        let msg = err.to_string();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            msg.contains(&name) && msg.contains("the manifest says"),
            "{msg}"
        );
        assert_eq!(
            fs.list(Path::new("/db")).unwrap(),
            before,
            "the refusal wrote nothing"
        );
    }
}

/// A WAL a clean close left, cut short afterwards (by a copy that stopped, a disk that
/// lost its tail), is `Corruption` at the next open, which changes nothing: the close
/// recorded how many bytes of records each WAL holds, all synced, so a shorter one is no
/// torn tail (it used to be replayed up to the cut, dropping every later write without a
/// word). After a crash (no clean close) a torn tail is still what it always was.
#[test]
fn a_wal_cut_short_after_a_clean_close_refuses_the_open() {
    let fs = MemFs::new();
    let o = Options {
        write_buffer_size: 4 << 20,
        ..opts(&fs)
    };
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..5000u32 {
        db.put(format!("key{i:05}"), vec![b'v'; 100]).unwrap();
    }
    drop(db);
    let wal = wals(&fs).into_iter().next().unwrap();
    let len = fs.file_size(&wal).unwrap() as usize;
    let cut = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    cut.truncate(&wal, len / 2).unwrap();
    let e = Db::open(
        "/db",
        Options {
            fs: Arc::new(cut.clone()),
            ..o.clone()
        },
    )
    .expect_err("a WAL cut in half after a clean close opened");
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.message().contains("clean close"), "{e}");
    assert!(Db::open_read_only(
        "/db",
        Options {
            fs: Arc::new(cut.clone()),
            ..o.clone()
        }
    )
    .is_err());
    // The same length, its last records zeroed: refused too.
    let zeroed = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    zeroed
        .corrupt(&wal, len - 500, |b| b[..400].fill(0))
        .unwrap();
    let e = Db::open(
        "/db",
        Options {
            fs: Arc::new(zeroed),
            ..o.clone()
        },
    )
    .expect_err("a WAL zeroed at its end after a clean close opened");
    assert!(e.message().contains("clean close"), "{e}");
    // Nothing changed: the whole WAL put back, every write is there.
    let whole = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(whole),
            ..o.clone()
        },
    )
    .unwrap();
    assert_eq!(db.get("key04999").unwrap(), Some(vec![b'v'; 100]));
    drop(db);
    // Without a clean close (a crash image taken while the database was open), a cut tail
    // is a torn tail: the writes before it open.
    let fs = MemFs::new();
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(fs.clone()),
            ..o.clone()
        },
    )
    .unwrap();
    for i in 0..5000u32 {
        db.put(format!("key{i:05}"), vec![b'v'; 100]).unwrap();
    }
    put_synced(&db, "synced", "barrier");
    let image = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    drop(db);
    let wal = wals(&image).into_iter().next().unwrap();
    let len = image.file_size(&wal).unwrap() as usize;
    image.truncate(&wal, len / 2).unwrap();
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(image),
            ..o
        },
    )
    .unwrap();
    assert_eq!(db.get("key00000").unwrap(), Some(vec![b'v'; 100]));
}

/// A closed WAL that a later synced write synced while its memtable waited for its flush,
/// cut short after a crash: the manifest's next edit (the flush of the memtable before it)
/// recorded its size, so the open refuses it as damage. It used to be replayed up to the
/// cut, then the later WAL's link record showed a hole and the open stopped there, every
/// write after the cut dropped without a word (the synced one too).
#[test]
fn a_closed_wal_synced_before_a_crash_then_cut_short_refuses_the_open() {
    use std::sync::{Condvar, Mutex};
    let fs = MemFs::new();
    // Tables wait at their creation until the test lets one through: flushes stay behind.
    let gate = Arc::new((Mutex::new(0u32), Condvar::new()));
    // Opened wide when the test ends, however it ends: a flush waiting at the gate would
    // hold up the database's drop.
    struct OpenAtEnd(Arc<(Mutex<u32>, Condvar)>);
    impl Drop for OpenAtEnd {
        fn drop(&mut self) {
            let (m, cv) = &*self.0;
            *m.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = u32::MAX;
            cv.notify_all();
        }
    }
    let g = gate.clone();
    let gated = strata_testkit::InterceptFs::new(Arc::new(fs.clone())).on_create(
        move |path: &Path, below: &dyn Fs| {
            // (A flush writes its table under a temporary name: `.sst.dbtmp`.)
            if path.to_string_lossy().contains(".sst") {
                let (m, cv) = &*g;
                let mut allowed = m.lock().unwrap();
                while *allowed == 0 {
                    allowed = cv.wait(allowed).unwrap();
                }
                *allowed -= 1;
            }
            below.create(path)
        },
    );
    let o = Options {
        max_write_buffer_number: 4,
        fs: Arc::new(gated),
        ..opts(&fs)
    };
    let db = Db::open("/db", o.clone()).unwrap();
    let _open_at_end = OpenAtEnd(gate.clone());
    // Two memtables fill and wait for their flush (the first one's flush has begun).
    let mut i = 0u32;
    while wals(&fs).len() < 3 {
        db.put(format!("key{i:05}"), vec![b'v'; 100]).unwrap();
        i += 1;
    }
    db.put(format!("key{i:05}"), vec![b'v'; 100]).unwrap();
    let last = format!("key{i:05}");
    // A synced write syncs both closed WALs first.
    put_synced(&db, "synced", "after both");
    let [first, second, _current] = <[PathBuf; 3]>::try_from(wals(&fs)).unwrap();
    // The first memtable's flush: its edit moves the log number to the second WAL, and
    // records that WAL's size (synced). The second memtable's flush then waits.
    {
        let (m, cv) = &*gate;
        *m.lock().unwrap() += 1;
        cv.notify_all();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while fs.exists(&first) {
        assert!(
            std::time::Instant::now() < deadline,
            "the first flush never ended"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let image = fs.crash_clone(strata::fs::CrashMode::DropUnsynced);
    let plain = |fs: &MemFs| Options {
        fs: Arc::new(fs.clone()),
        ..o.clone()
    };
    // The crash as it is: every write there.
    let whole = image.crash_clone(strata::fs::CrashMode::DropUnsynced);
    let reopened = Db::open("/db", plain(&whole)).unwrap();
    assert_eq!(reopened.get(&last).unwrap(), Some(vec![b'v'; 100]));
    assert_eq!(
        reopened.get("synced").unwrap(),
        Some(b"after both".to_vec())
    );
    drop(reopened);
    // The second WAL gone: refused, and `check` says so.
    let gone = image.crash_clone(strata::fs::CrashMode::DropUnsynced);
    gone.remove(&second).unwrap();
    let e = Db::open("/db", plain(&gone)).expect_err("a synced closed WAL missing opened");
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    // (`check` reads real files: the image copied out.)
    let tmp = strata_testkit::TempDir::new("synced-wal-gone");
    let on_disk = tmp.path().join("db");
    std::fs::create_dir_all(&on_disk).unwrap();
    for name in gone.list(Path::new("/db")).unwrap() {
        let bytes = strata::fs::read_all(&gone, &Path::new("/db").join(&name)).unwrap();
        std::fs::write(on_disk.join(&name), bytes).unwrap();
    }
    let real = Options {
        fs: Arc::new(strata::fs::RealFs::new()),
        ..o.clone()
    };
    let problems = strata::inspect::check(&on_disk, &real, &mut std::io::sink()).unwrap();
    let second_name = second.file_name().unwrap();
    assert!(
        problems
            .iter()
            .any(|p| p.file.file_name() == Some(second_name) && p.what.contains("missing")),
        "{problems:?}"
    );
    // The second WAL cut in half since: refused, nothing changed.
    let len = image.file_size(&second).unwrap() as usize;
    image.truncate(&second, len / 2).unwrap();
    let before = image.list(Path::new("/db")).unwrap();
    let e = Db::open("/db", plain(&image)).expect_err("a synced closed WAL cut in half opened");
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.message().contains("once it was closed"), "{e}");
    assert_eq!(image.list(Path::new("/db")).unwrap(), before);
}

/// A kill between an open creating its WAL and its manifest edit leaves the WAL before it
/// with its torn tail, no longer the newest file: it is still the newest WAL that holds
/// writes, and its tail is a torn tail, not damage to whole writes.
#[test]
fn a_torn_wal_behind_an_open_cut_short_is_still_a_torn_tail() {
    for repair in [false, true] {
        torn_wal_behind_an_open_cut_short(repair);
    }
}

fn torn_wal_behind_an_open_cut_short(repair: bool) {
    use strata::fs::{FaultFs, FaultRule, FsOp};
    let fs = MemFs::new();
    let o = Options {
        write_buffer_size: 4 << 20,
        ..opts(&fs)
    };
    let db = Db::open("/db", o.clone()).unwrap();
    for i in 0..3000u32 {
        db.put(format!("key{i:05}"), vec![b'v'; 100]).unwrap();
    }
    let image = fs.crash_clone(strata::fs::CrashMode::Kill { seed: 1 });
    drop(db);
    let wal = wals(&image).pop().unwrap();
    // A write cut short in the middle of its copy: its record's head still zeros, the
    // rest of it copied.
    let data = strata::fs::read_all(&image, &wal).unwrap();
    let key = data
        .windows(4)
        .rposition(|w| w == b"key0")
        .expect("the WAL holds writes");
    let last = String::from_utf8(data[key..key + 8].to_vec()).unwrap();
    image.corrupt(&wal, key - 21, |b| b[..30].fill(0)).unwrap();
    // The open replays it and creates its own WAL; its manifest write fails (the kill).
    let faulty = FaultFs::new(image.clone());
    faulty.inject(FaultRule::always(FsOp::Append).on_paths("MANIFEST"));
    assert!(Db::open(
        "/db",
        Options {
            fs: Arc::new(faulty),
            ..o.clone()
        }
    )
    .is_err());
    assert_eq!(wals(&image).len(), 2, "the cut-short open left its WAL");
    if repair {
        let r = strata::repair(
            "/db",
            &Options {
                fs: Arc::new(image.clone()),
                ..o.clone()
            },
        )
        .unwrap();
        assert!(!r.dropped_data(), "{r:?}");
    }
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(image.clone()),
            ..o.clone()
        },
    )
    .unwrap_or_else(|e| panic!("the open after the cut-short one was refused: {e}"));
    assert_eq!(db.get("key02990").unwrap(), Some(vec![b'v'; 100]));
    assert_eq!(db.get(&last).unwrap(), None, "the torn write");
    db.put("after", "x").unwrap();
    drop(db);
    let db = Db::open(
        "/db",
        Options {
            fs: Arc::new(image.clone()),
            ..o.clone()
        },
    )
    .unwrap();
    assert_eq!(db.get("after").unwrap(), Some(b"x".to_vec()));
}
