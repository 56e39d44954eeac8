//! Blob files (`ValueStoreKind::BlobFiles`, preset `blob`): values of at least
//! `min_blob_size` bytes leave the tables at flush; reads resolve them; compactions count
//! the pointers they drop and a blob file with nothing live is deleted; damage is
//! `Corruption`, never a wrong value.

use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::{Db, ErrorKind, Options, ReadOptions, ValueStoreKind};

fn opts(fs: &Arc<MemFs>) -> Options {
    Options {
        value_store: ValueStoreKind::BlobFiles,
        min_blob_size: 100,
        value_dir: Some("/values".into()),
        fs: fs.clone(),
        ..Options::default()
    }
}

fn blobs(fs: &MemFs) -> Vec<String> {
    fs.list(Path::new("/values"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".blob"))
        .collect()
}

fn prop(db: &Db, name: &str) -> u64 {
    db.property(name).unwrap().parse().unwrap()
}

fn big(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("value {i} of round {round} ").into_bytes();
    v.resize(300 + (i as usize % 50), b'.');
    v
}

#[test]
fn large_values_go_to_blob_files_and_read_back() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), big(i, 0)).unwrap();
        db.put(format!("s{i:03}"), b"small").unwrap();
    }
    db.flush().unwrap();
    assert_eq!(blobs(&fs).len(), 1);
    assert_eq!(prop(&db, "strata.value-files"), 1);
    assert_eq!(prop(&db, "strata.value-garbage-bytes"), 0);
    for i in 0..100u32 {
        assert_eq!(db.get(format!("k{i:03}")).unwrap(), Some(big(i, 0)));
        assert_eq!(
            db.get(format!("s{i:03}")).unwrap().as_deref(),
            Some(&b"small"[..])
        );
    }
    // Forward and reverse scans resolve the pointers too.
    let all: Vec<_> = db
        .iter(ReadOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(all.len(), 200);
    assert_eq!(all[5], (b"k005".to_vec(), big(5, 0)));
    let mut it = db.iter(ReadOptions::default()).unwrap();
    it.seek_for_prev(b"k050");
    assert_eq!(
        (it.key(), it.value()),
        (&b"k050"[..], big(50, 0).as_slice())
    );
    it.prev();
    assert_eq!(it.value(), big(49, 0).as_slice());
    it.status().unwrap();
    drop(it);
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", opts(&fs)).unwrap();
    assert_eq!(db.get(b"k077").unwrap(), Some(big(77, 0)));
    // Reopened without separation, the values separated before still read.
    db.close().unwrap();
    drop(db);
    let inline = Options {
        value_store: ValueStoreKind::Inline,
        ..opts(&fs)
    };
    let db = Db::open("/db", inline).unwrap();
    assert_eq!(db.get(b"k078").unwrap(), Some(big(78, 0)));
}

#[test]
fn garbage_is_counted_and_a_dead_blob_file_is_deleted() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).unwrap();
    for i in 0..100u32 {
        db.put(format!("k{i:03}"), big(i, 0)).unwrap();
    }
    db.flush().unwrap();
    let first = blobs(&fs);
    let snap = db.snapshot();
    // Overwrite half, delete a quarter, shrink a quarter below the threshold.
    for i in 0..50u32 {
        db.put(format!("k{i:03}"), big(i, 1)).unwrap();
    }
    for i in 50..75u32 {
        db.delete(format!("k{i:03}")).unwrap();
    }
    for i in 75..100u32 {
        db.put(format!("k{i:03}"), b"tiny").unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    // The snapshot keeps every old version, so nothing is garbage yet.
    assert_eq!(prop(&db, "strata.value-garbage-bytes"), 0);
    let old = ReadOptions {
        snapshot: Some(snap),
        ..ReadOptions::default()
    };
    assert_eq!(db.get_opt(&old, b"k060").unwrap(), Some(big(60, 0)));
    assert_eq!(db.get_opt(&old, b"k090").unwrap(), Some(big(90, 0)));
    drop(old);
    // A table spanning every key, so that the manual compaction rewrites all of L1 (it
    // does not rewrite the last level by itself).
    db.put(b"k000", b"tiny").unwrap();
    db.put(b"k099", b"tiny").unwrap();
    db.compact_range(None, None).unwrap();
    // A background compaction may still hold the older version (and so the file): wait.
    db.wait_for_compactions().unwrap();
    // Now every record of the first blob file is garbage: it left the version and its file
    // is gone; the second holds the 50 rewritten values.
    assert_eq!(prop(&db, "strata.value-files"), 1);
    let now = blobs(&fs);
    assert_eq!(now.len(), 1);
    assert!(!now.contains(&first[0]), "{first:?} still there: {now:?}");
    assert_eq!(db.get(b"k010").unwrap(), Some(big(10, 1)));
    assert_eq!(db.get(b"k060").unwrap(), None);
    assert_eq!(db.get(b"k090").unwrap().as_deref(), Some(&b"tiny"[..]));
    // Overwrite half of the second file's values: half its bytes become garbage.
    for i in 0..25u32 {
        db.put(format!("k{i:03}"), big(i, 2)).unwrap();
    }
    db.put(b"k099", b"tiny").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let garbage = prop(&db, "strata.value-garbage-bytes");
    let live = prop(&db, "strata.value-live-bytes");
    assert!(
        garbage > 0 && live > garbage,
        "garbage {garbage} live {live}"
    );
    db.close().unwrap();
    drop(db);
    // The counts are in the manifest.
    let db = Db::open("/db", opts(&fs)).unwrap();
    assert_eq!(prop(&db, "strata.value-garbage-bytes"), garbage);
    assert_eq!(db.get(b"k020").unwrap(), Some(big(20, 2)));
    assert_eq!(db.get(b"k030").unwrap(), Some(big(30, 1)));
}

#[test]
fn a_damaged_blob_record_is_corruption() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).unwrap();
    db.put(b"a", big(1, 0)).unwrap();
    db.put(b"b", big(2, 0)).unwrap();
    db.flush().unwrap();
    let name = blobs(&fs).pop().unwrap();
    let path = Path::new("/values").join(&name);
    let size = fs.file_size(&path).unwrap();
    let mut bytes = fs.open(&path).unwrap().read_at(0, size as usize).unwrap();
    bytes[40] ^= 1; // inside the first record
    let mut f = fs.create(&path).unwrap();
    f.append(&bytes).unwrap();
    f.sync().unwrap();
    drop(f);
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", opts(&fs)).unwrap();
    let e = db.get(b"a").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corruption, "{e}");
    assert!(e.to_string().contains(&name), "{e}");
    assert_eq!(db.get(b"b").unwrap(), Some(big(2, 0)));
    // A scan reports it through the iterator, once.
    let got: Vec<_> = db.iter(ReadOptions::default()).unwrap().collect();
    assert!(got[0].is_err(), "{got:?}");
    // A blob file the manifest names is missing: open says which.
    db.close().unwrap();
    drop(db);
    fs.remove(&path).unwrap();
    let e = Db::open("/db", opts(&fs)).unwrap_err();
    assert!(e.to_string().contains(&name), "{e}");
}

/// A database with 200 keys of round-0 values flushed and compacted into one blob file,
/// and that file's name.
fn one_blob_file(fs: &Arc<MemFs>) -> (Db, Vec<String>) {
    let db = Db::open("/db", opts(fs)).unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:03}"), big(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let first = blobs(fs);
    assert_eq!(first.len(), 1);
    (db, first)
}

#[test]
fn a_blob_file_past_the_garbage_ratio_is_collected() {
    let fs = Arc::new(MemFs::new());
    let (db, first) = one_blob_file(&fs);
    // Overwrite the even keys and one more: just over half of the first file is garbage
    // once compaction drops the old versions.
    for i in (0..200u32).step_by(2).chain([1]) {
        db.put(format!("k{i:03}"), big(i, 1)).unwrap();
    }
    db.put(b"k000", big(0, 1)).unwrap();
    db.put(b"k199", big(199, 1)).unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert!(s.value_gc_compactions > 0, "{}", s.to_text());
    assert!(s.value_bytes_relocated > 0);
    let now = blobs(&fs);
    assert!(!now.contains(&first[0]), "{first:?} still there: {now:?}");
    assert_eq!(prop(&db, "strata.value-garbage-bytes"), 0, "{now:?}");
    for i in 0..200u32 {
        let round = u32::from(i % 2 == 0 || i == 1 || i == 199);
        assert_eq!(
            db.get(format!("k{i:03}")).unwrap(),
            Some(big(i, round)),
            "k{i:03}"
        );
    }
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", opts(&fs)).unwrap();
    assert_eq!(db.get(b"k033").unwrap(), Some(big(33, 0)));
}

/// Blob files are collected whatever store is configured now: reopened as `default`
/// (inline values) or `wisckey`, a database still moves the live values out of its blob
/// files past the ratio, into blob files (issue 31: collection once ran only while `blob`
/// was configured, and moved values into the configured store's writer).
#[test]
fn blob_files_are_collected_under_any_configured_store() {
    for now in [ValueStoreKind::Inline, ValueStoreKind::VLog] {
        let fs = Arc::new(MemFs::new());
        let (db, first) = one_blob_file(&fs);
        db.close().unwrap();
        drop(db);
        let other = Options {
            value_store: now,
            ..opts(&fs)
        };
        let db = Db::open("/db", other.clone()).unwrap();
        // Small values now (inline under either store): 60 % of the blob file is garbage
        // once compaction drops the old versions.
        for i in 0..120u32 {
            db.put(format!("k{i:03}"), b"small").unwrap();
        }
        db.compact_range(None, None).unwrap();
        db.wait_for_compactions().unwrap();
        let now_files = blobs(&fs);
        assert!(
            !now_files.contains(&first[0]),
            "{now:?}: {first:?} still there: {now_files:?}"
        );
        assert_eq!(
            now_files.len(),
            1,
            "{now:?}: the live values moved to a blob file"
        );
        assert_eq!(prop(&db, "strata.value-garbage-bytes"), 0, "{now:?}");
        for i in 0..200u32 {
            let want = if i < 120 {
                b"small".to_vec()
            } else {
                big(i, 0)
            };
            assert_eq!(
                db.get(format!("k{i:03}")).unwrap(),
                Some(want),
                "{now:?} k{i:03}"
            );
        }
        db.close().unwrap();
        drop(db);
        let db = Db::open("/db", other).unwrap();
        assert_eq!(db.get(b"k150").unwrap(), Some(big(150, 0)));
    }
}

#[test]
fn below_the_ratio_nothing_moves() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:03}"), big(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in (0..200u32).step_by(4) {
        db.put(format!("k{i:03}"), big(i, 1)).unwrap();
    }
    db.put(b"k199", big(199, 1)).unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    let s = db.stats();
    assert_eq!((s.value_gc_compactions, s.value_bytes_relocated), (0, 0));
    assert!(prop(&db, "strata.value-garbage-bytes") > 0);
}

/// A value that shrank below the threshold (now inline) or was deleted never comes back in
/// its separated form after compactions collected its blob file.
#[test]
fn gc_never_revives_a_shrunk_or_deleted_value() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", opts(&fs)).unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:03}"), big(i, 0)).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    for i in 0..80u32 {
        db.put(format!("k{i:03}"), b"small").unwrap();
    }
    for i in 80..110u32 {
        db.delete(format!("k{i:03}")).unwrap();
    }
    db.put(b"k199", b"small").unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_compactions().unwrap();
    assert!(db.stats().value_gc_compactions > 0);
    let check = |db: &Db| {
        for i in 0..200u32 {
            let got = db.get(format!("k{i:03}")).unwrap();
            let want = match i {
                0..80 | 199 => Some(b"small".to_vec()),
                80..110 => None,
                _ => Some(big(i, 0)),
            };
            assert_eq!(got, want, "k{i:03}");
        }
    };
    check(&db);
    db.close().unwrap();
    drop(db);
    let db = Db::open("/db", opts(&fs)).unwrap();
    check(&db);
}

#[test]
fn a_forward_scan_reads_separated_values_ahead() {
    let fs = Arc::new(MemFs::new());
    // Read-ahead runs only while the files may not all be in memory: a memory limit that
    // leaves the page cache a few KiB beside the memtables and the block cache.
    let scarce = |fs: &Arc<MemFs>| {
        let o = opts(fs);
        let reserved = o.write_buffer_size * o.max_write_buffer_number + o.block_cache_size;
        Options {
            memory_limit: Some(reserved as u64 + 4096),
            ..o
        }
    };
    let db = Db::open("/db", scarce(&fs)).unwrap();
    for i in 0..200u32 {
        db.put(format!("k{i:03}"), big(i, 0)).unwrap();
        if i % 3 == 0 {
            db.put(format!("k{i:03}s"), b"small").unwrap();
        }
    }
    db.flush().unwrap();
    for i in (0..200u32).step_by(7) {
        db.delete(format!("k{i:03}")).unwrap();
    }
    let live: Vec<_> = (0..200u32).filter(|i| i % 7 != 0).collect();
    let aheads = |db: &Db| db.stats().value_read_aheads;

    // A forward scan reading values: the same entries as ever, and values read ahead.
    let all: Vec<_> = db
        .iter(ReadOptions::new())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let want: Vec<_> = db
        .iter(ReadOptions::new())
        .unwrap()
        .map(Result::unwrap)
        .filter(|(k, _)| !k.ends_with(b"s"))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(want.len(), live.len());
    for (k, v) in &all {
        if !k.ends_with(b"s") {
            let i: u32 = std::str::from_utf8(&k[1..4]).unwrap().parse().unwrap();
            assert_eq!(v, &big(i, 0));
        }
    }
    let read_ahead = aheads(&db);
    // Each scan reads ahead every separated value after the first two it read, once.
    assert_eq!(read_ahead, 2 * (live.len() as u64 - 2));

    // Keys only, or backwards: nothing is read ahead.
    let before = aheads(&db);
    let mut it = db.iter(ReadOptions::new()).unwrap();
    it.seek_to_first();
    while it.valid() {
        it.next();
    }
    it.seek_to_last();
    while it.valid() {
        assert!(!it.value().is_empty());
        it.prev();
    }
    it.status().unwrap();
    assert_eq!(aheads(&db), before);

    // Values read with key-only steps between them, and within bounds: still right.
    let mut it = db
        .iter(ReadOptions {
            lower_bound: Some(b"k050".to_vec()),
            upper_bound: Some(b"k150".to_vec()),
            ..ReadOptions::new()
        })
        .unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        if n % 5 != 4 && !it.key().ends_with(b"s") {
            let i: u32 = std::str::from_utf8(&it.key()[1..4])
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(it.value(), big(i, 0).as_slice());
        }
        n += 1;
        it.next();
    }
    it.status().unwrap();
    drop(it);

    // Turned off: nothing.
    drop(db);
    let db = Db::open(
        "/db",
        Options {
            value_read_ahead: 0,
            ..scarce(&fs)
        },
    )
    .unwrap();
    let before = aheads(&db);
    assert_eq!(db.iter(ReadOptions::new()).unwrap().count(), all.len());
    assert_eq!(aheads(&db), before);

    // Files well within the memory left for them: nothing either (they are in memory).
    drop(db);
    let db = Db::open(
        "/db",
        Options {
            memory_limit: Some(1 << 40),
            ..opts(&fs)
        },
    )
    .unwrap();
    let mut it = db.iter(ReadOptions::new()).unwrap();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert!(!it.value().is_empty());
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, all.len());
    assert_eq!(aheads(&db), 0);
}
