//! How tables are read (`Options::table_reads`, `Options::memory_limit`): left unset, the
//! engine maps tables while the live ones fit the memory left for them and reads them with
//! `pread` once they do not, reopening the tables it holds open the new way, and back.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use strata::fs::{Fs, MemFs, ReadAccess};
use strata::{Db, Options};
use strata_testkit::model::assert_db_matches;
use strata_testkit::InterceptFs;

/// A file system that records how each table was opened.
struct Recording {
    fs: Arc<InterceptFs>,
    opened: Arc<Mutex<Vec<(String, ReadAccess)>>>,
}

impl Recording {
    fn new() -> Arc<Recording> {
        let opened: Arc<Mutex<Vec<(String, ReadAccess)>>> = Arc::default();
        let log = opened.clone();
        let fs = InterceptFs::new(Arc::new(MemFs::new())).on_open(move |path, access, fs| {
            if path.extension().is_some_and(|e| e == "sst") {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                log.lock().unwrap().push((name, access));
            }
            fs.open_with(path, access)
        });
        Arc::new(Recording {
            fs: Arc::new(fs),
            opened,
        })
    }

    /// How tables were opened since the last call.
    fn take(&self) -> Vec<ReadAccess> {
        self.take_named().into_iter().map(|(_, a)| a).collect()
    }

    /// Which tables were opened since the last call, and how.
    fn take_named(&self) -> Vec<(String, ReadAccess)> {
        std::mem::take(&mut *self.opened.lock().unwrap())
    }
}

fn reads(db: &Db) -> String {
    db.property("strata.table-reads").unwrap()
}

/// The tables in the database directory.
fn tables(fs: &Recording) -> Vec<String> {
    let mut t: Vec<String> = fs.fs.list(Path::new("/db")).unwrap();
    t.retain(|n| n.ends_with(".sst"));
    t
}

/// 64 KiB memtables x 2 and a 256 KiB block cache reserve 384 KiB of a 640 KiB limit,
/// leaving three quarters of 256 KiB, 192 KiB, for tables.
fn opts(fs: Arc<Recording>) -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_cache_size: 256 << 10,
        target_file_size_base: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        block_size: 1024,
        memory_limit: Some(640 << 10),
        fs: fs.fs.clone(),
        ..Options::default()
    }
}

#[test]
fn tables_are_mapped_while_they_fit_and_read_with_pread_beyond() {
    let fs = Recording::new();
    let db = Db::open("/db", opts(fs.clone())).unwrap();
    let mut model = BTreeMap::new();
    let value = |i: u32| format!("value-{i:08}-{}", "x".repeat(80)).into_bytes();
    let key = |p: char, i: u32| format!("{p}{:06}", (i * 7919) % 100_000).into_bytes();

    // 100 KiB of tables fit: mapped. They hold keys "a...", which the
    // writes below never overlap, so they outlive the switch unchanged.
    for i in 0..1000 {
        db.put(key('a', i), value(i)).unwrap();
        model.insert(key('a', i), value(i));
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(reads(&db), "Mapped");
    assert_db_matches(&db, &model);
    let opened = fs.take();
    assert!(!opened.is_empty());
    assert!(
        opened.iter().all(|&a| a == ReadAccess::Mapped),
        "{opened:?}"
    );
    let first_tables = tables(&fs);

    // An iterator holds tables open across the switch and keeps reading them.
    let mut it = db.iter(Default::default()).unwrap();
    it.seek_to_first();
    // 400 KiB of tables do not fit: every table opens with pread from now on, and those
    // open before are closed, to reopen that way when next read.
    for i in 0..4000 {
        db.put(key('b', i), value(i)).unwrap();
        model.insert(key('b', i), value(i));
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(reads(&db), "Positional");
    let mut seen = 0;
    while it.valid() {
        seen += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(
        seen, 1000,
        "the iterator reads the tables it holds to the end"
    );
    drop(it);
    assert_db_matches(&db, &model);
    let opened = fs.take_named();
    let switch = opened
        .iter()
        .position(|(_, a)| *a == ReadAccess::Positional)
        .expect("tables opened with pread");
    assert!(
        opened[switch..]
            .iter()
            .all(|(_, a)| *a == ReadAccess::Positional),
        "{opened:?}"
    );
    let live = tables(&fs);
    let survivors: Vec<&String> = first_tables.iter().filter(|t| live.contains(t)).collect();
    assert!(
        !survivors.is_empty(),
        "some of the first tables outlive the switch"
    );
    for t in &live {
        assert!(
            opened[switch..].iter().any(|(n, _)| n == t),
            "{t} was read since the switch, but not opened with pread: {opened:?}"
        );
    }

    // Deleting most keys and compacting brings the tables back under nine tenths of the
    // budget: maps again.
    for i in 0..4000 {
        db.delete(key('b', i)).unwrap();
        model.remove(&key('b', i));
    }
    for i in 0..800 {
        db.delete(key('a', i)).unwrap();
        model.remove(&key('a', i));
    }
    db.compact_range(None, None).unwrap();
    assert_eq!(reads(&db), "Mapped");
    fs.take();
    assert_db_matches(&db, &model);
    let opened = fs.take();
    assert!(
        opened.iter().all(|&a| a == ReadAccess::Mapped),
        "{opened:?}"
    );

    // A reopened database decides from its tables before the first read.
    drop(db);
    let db = Db::open(
        "/db",
        Options {
            memory_limit: Some(400 << 10),
            ..opts(fs.clone())
        },
    )
    .unwrap();
    assert_db_matches(&db, &model);
    assert_eq!(
        reads(&db),
        "Positional",
        "400 KiB leave no room for tables at all"
    );
}

#[test]
fn a_fixed_way_of_reading_never_changes() {
    let fs = Recording::new();
    let db = Db::open(
        "/db",
        Options {
            table_reads: Some(ReadAccess::MappedRandom),
            ..opts(fs.clone())
        },
    )
    .unwrap();
    for i in 0..5000u32 {
        db.put(i.to_be_bytes(), [7u8; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_compactions().unwrap();
    assert_eq!(reads(&db), "MappedRandom");
    for i in 0..5000u32 {
        assert!(db.get(i.to_be_bytes()).unwrap().is_some());
    }
    assert!(fs.take().iter().all(|&a| a == ReadAccess::MappedRandom));
}

/// The table-file read counters say where the bytes of a get go: with `pread`, index and
/// filter on the heap and no block cache, a get that finds its key reads one data block
/// and nothing else once its table is open; a get the filter rules out reads nothing.
#[test]
fn file_reads_count_one_data_block_per_get() {
    let fs = Recording::new();
    let db = Db::open(
        "/db",
        Options {
            table_reads: Some(ReadAccess::Positional),
            block_cache_size: 0,
            ..opts(fs.clone())
        },
    )
    .unwrap();
    for i in 0..2000u32 {
        db.put(format!("key{i:05}"), [7u8; 100]).unwrap();
    }
    db.compact_range(None, None).unwrap();
    // Open every table first.
    for i in 0..2000u32 {
        db.get(format!("key{i:05}")).unwrap().unwrap();
    }
    let before = db.stats();
    for i in 0..500u32 {
        db.get(format!("key{:05}", i * 4)).unwrap().unwrap();
    }
    let s = db.stats();
    assert_eq!(
        s.table_open_reads, before.table_open_reads,
        "no table opened again"
    );
    assert_eq!(s.table_block_reads - before.table_block_reads, 500);
    let bytes = s.table_block_read_bytes - before.table_block_read_bytes;
    assert!((500 * 1024..500 * 2 * 1024).contains(&bytes), "{bytes}");
    assert!(before.table_open_reads > 0 && before.table_open_read_bytes > 0);
    let before = db.stats();
    for i in 0..500u32 {
        assert!(db.get(format!("nokey{i:05}")).unwrap().is_none());
    }
    let misses = db.stats().table_block_reads - before.table_block_reads;
    assert!(
        misses < 25,
        "{misses} blocks read for 500 absent keys (filter false positives only)"
    );
    assert!(db
        .property("strata.stats")
        .unwrap()
        .contains("Table file reads"));
}
