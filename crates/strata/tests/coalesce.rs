//! The coalescing buffer end to end (docs/design/cleveldb.md): small puts kept beside each
//! memtable's skiplist, a key's versions split between the two, through gets at snapshots,
//! scans, flushes and reopens.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::{Db, ReadOptions};
use strata_testkit::model::assert_db_matches;

/// The testkit's configuration `name`: `coalesce` (puts of key + value under 64 bytes in
/// each memtable's buffer, flushed inline, 64 KiB memtables) or `cleveldb` (the same,
/// flushed into 256-byte groups, group GC at 30 % garbage).
fn opts(name: &str, fs: &Arc<dyn Fs>) -> strata::Options {
    (strata_testkit::configs::named(name).build)(Path::new("/db"), fs.clone())
}

fn key(i: u64) -> Vec<u8> {
    format!("key{:04}", (i * 7919) % 300).into_bytes()
}

/// The middle of the key space: keys below it are half of them.
fn key_half() -> Vec<u8> {
    format!("key{:04}", 150).into_bytes()
}

/// A value for write `i`: mostly small (coalesced), every fifth large (the skiplist's).
fn value(i: u64) -> Vec<u8> {
    let pad = if i.is_multiple_of(5) {
        100
    } else {
        (i % 13) as usize
    };
    format!("v{i}-{}", "z".repeat(pad)).into_bytes()
}

/// Every key read at `snap` is what `model` held when it was taken.
fn check_snapshot(db: &Db, snap: &strata::Snapshot, model: &BTreeMap<Vec<u8>, Vec<u8>>, ctx: &str) {
    let at = ReadOptions {
        snapshot: Some(snap.clone()),
        ..ReadOptions::default()
    };
    for j in 0..300 {
        let k = key(j);
        let got = db.get_opt(&at, &k).unwrap();
        assert_eq!(got.as_ref(), model.get(&k), "{ctx}: snapshot get {k:?}");
    }
}

/// Small and large puts and deletes of 300 keys, so a key's versions alternate between
/// the buffer and the skiplist of one memtable: every key read by `get` now and at an older
/// snapshot after each step, then scanned, flushed and reopened.
#[test]
fn gets_take_the_newest_version_of_buffer_and_skiplist() {
    versions_through_buffer_groups_and_reopens("coalesce");
}

/// The same with the items flushed into groups: gets and scans read them back through
/// their pointers, overwrites and deletes make group garbage, and group GC moves the live
/// items of the files it collects (a snapshot held across it keeps what it saw).
#[test]
fn coalesced_groups_read_back_and_are_collected() {
    let (db, s) = versions_through_buffer_groups_and_reopens("cleveldb");
    let files: u64 = db.property("strata.value-files").unwrap().parse().unwrap();
    assert!(files > 0, "no group file is live");
    assert!(
        s.value_bytes_relocated > 0,
        "no group GC: {} GC compactions, {} B moved",
        s.value_gc_compactions,
        s.value_bytes_relocated
    );
}

/// Returns the reopened database and the stats of the first open's run.
fn versions_through_buffer_groups_and_reopens(config: &str) -> (Db, strata::StatsSnapshot) {
    let fs: Arc<dyn Fs> = Arc::new(MemFs::new());
    let opts = |fs: &Arc<dyn Fs>| opts(config, fs);
    let db = Db::open("/db", opts(&fs)).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut snaps = Vec::new();
    for i in 0..6000u64 {
        let k = key(i);
        if i % 11 == 4 {
            db.delete(&k).unwrap();
            model.remove(&k);
        } else {
            let v = value(i);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        if i.is_multiple_of(97) {
            snaps.push((db.snapshot(), model.clone()));
        }
        if i.is_multiple_of(50) {
            for j in 0..300 {
                let k = key(j);
                assert_eq!(
                    db.get(&k).unwrap().as_ref(),
                    model.get(&k),
                    "write {i}: get {k:?}"
                );
            }
            let (snap, m) = &snaps[snaps.len() / 2];
            check_snapshot(&db, snap, m, &format!("write {i}"));
        }
    }
    assert_db_matches(&db, &model);
    let coalesced = db.stats().coalesced_items;
    assert!(coalesced > 3000, "{coalesced} items coalesced");
    db.compact_range(None, None).unwrap();
    assert_db_matches(&db, &model);
    let (snap, m) = &snaps[snaps.len() / 2];
    check_snapshot(&db, snap, m, "after compact_range");
    drop(snaps);
    // Snapshots gone: a compaction counts the garbage they kept; then half the keys are
    // overwritten, so group files holding both halves end up partly garbage (past the
    // 30 % GC ratio, short of all of it): the compaction that drops the overwritten
    // pointers counts it, and a later one that meets the files' pointers moves their live
    // items. `compact_range` never rewrites the deepest level, so which compaction meets
    // them would depend on the background's timing: the smallest and the largest key are
    // written again after the garbage is counted, and the compaction that pushes them
    // down overlaps (and rewrites) every file of the deepest level.
    db.compact_range(None, None).unwrap();
    for i in 6000..9000u64 {
        let k = key(i);
        if k.as_slice() < key_half().as_slice() {
            let v = value(i);
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
    }
    db.compact_range(None, None).unwrap();
    for k in [key(0), format!("key{:04}", 299).into_bytes()] {
        let v = b"edge".to_vec();
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.compact_range(None, None).unwrap();
    assert_db_matches(&db, &model);
    let stats = db.stats();
    db.close().unwrap();
    let db = Db::open("/db", opts(&fs)).unwrap();
    assert_db_matches(&db, &model);
    (db, stats)
}

/// A group file damaged on disk (real files): every get of its items is either the right
/// value or `Corruption` naming the group file, never another value, and `check` reports
/// the file.
#[test]
fn a_damaged_group_is_corruption_never_a_wrong_value() {
    let (_tmp, db_dir, fs, o) = real_cleveldb("coalesce-damage");
    let mut model = BTreeMap::new();
    {
        let db = Db::open(&db_dir, o.clone()).unwrap();
        for i in 0..300u64 {
            let (k, v) = (key(i), format!("small-{i}").into_bytes());
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        db.flush().unwrap();
        db.close().unwrap();
    }
    let (grp, path) = group_file(&*fs, &db_dir);
    let mut bytes = std::fs::read(&path).unwrap();
    // A byte inside the first group's items (past the 16-byte header and the group's CRC).
    bytes[16 + 40] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let db = Db::open(&db_dir, o.clone()).unwrap();
    let mut corrupt = 0;
    for (k, v) in &model {
        match db.get(k) {
            Ok(got) => assert_eq!(got.as_ref(), Some(v), "get {k:?}"),
            Err(e) => {
                assert_eq!(e.kind(), strata::ErrorKind::Corruption, "{e}");
                assert!(e.to_string().contains(&grp), "{e}");
                corrupt += 1;
            }
        }
    }
    assert!(corrupt > 0, "no get met the damaged group");
    drop(db);
    let problems = strata::inspect::check(&db_dir, &o, &mut std::io::sink()).unwrap();
    assert!(
        problems.iter().any(|p| p.file.ends_with(&grp)),
        "{problems:?}"
    );
}

/// UMeta's state damaged (`MemFs`, every 61st byte flipped, and cut there): the WAL that
/// holds buffered items, the tables whose pointer entries index the flushed ones, and the
/// group files. The open fails with `Corruption`, or every get and scan gives the right
/// value, nothing (a WAL tail dropped), or `Corruption`: never another value.
#[test]
fn damaged_umeta_state_is_corruption_or_a_dropped_tail_never_a_wrong_value() {
    let base = MemFs::new();
    let o = |fs: &MemFs| opts("cleveldb", &(Arc::new(fs.clone()) as Arc<dyn Fs>));
    let key = |i: u32| format!("key{i:05}").into_bytes();
    let value = |i: u32| format!("v{i}-{}", "x".repeat((i % 23) as usize)).into_bytes();
    const N: u32 = 600;
    {
        let db = Db::open("/db", o(&base)).unwrap();
        for i in 0..N {
            if i == 400 {
                // Flushed: pointers into group files; the rest stays buffered (and logged).
                db.flush().unwrap();
            }
            let sync = i % 50 == 0;
            let w = strata::WriteOptions {
                sync,
                ..Default::default()
            };
            let mut b = strata::WriteBatch::new();
            b.put(key(i), value(i));
            db.write(&w, b).unwrap();
        }
        db.close().unwrap();
    }
    let mut targets = Vec::new();
    for dir in ["/db", "/db/values"] {
        for name in base.list(Path::new(dir)).unwrap() {
            if [".log", ".sst", ".grp"].iter().any(|s| name.ends_with(s)) {
                targets.push(Path::new(dir).join(name));
            }
        }
    }
    for kind in [".log", ".sst", ".grp"] {
        assert!(
            targets.iter().any(|p| p.to_string_lossy().ends_with(kind)),
            "no {kind} file in {targets:?}"
        );
    }
    let (mut tried, mut refused, mut right) = (0, 0, 0u64);
    for path in &targets {
        let len = base.file_size(path).unwrap() as usize;
        for offset in (0..len).step_by(61) {
            for cut in [false, true] {
                let fs = base.crash_clone(strata::fs::CrashMode::DropUnsynced);
                if cut {
                    fs.truncate(path, offset).unwrap();
                } else {
                    fs.corrupt(path, offset, |b| b[0] ^= 0x21).unwrap();
                }
                let ctx = format!(
                    "{} {} at {offset}",
                    path.display(),
                    ["flipped", "cut"][cut as usize]
                );
                tried += 1;
                let db = match Db::open("/db", o(&fs)) {
                    Ok(db) => db,
                    Err(e) => {
                        assert_eq!(e.kind(), strata::ErrorKind::Corruption, "{ctx}: {e}");
                        refused += 1;
                        continue;
                    }
                };
                for i in 0..N {
                    match db.get(key(i)) {
                        Ok(Some(v)) => {
                            assert_eq!(v, value(i), "{ctx}: key {i}");
                            right += 1;
                        }
                        Ok(None) => {}
                        Err(e) => assert_eq!(e.kind(), strata::ErrorKind::Corruption, "{ctx}: {e}"),
                    }
                }
                let mut it = db.iter(ReadOptions::default()).unwrap();
                it.seek_to_first();
                while it.valid() {
                    let i: u32 = std::str::from_utf8(&it.key()[3..])
                        .unwrap()
                        .parse()
                        .unwrap();
                    let v = it.value().to_vec();
                    if it.status().is_ok() {
                        assert_eq!(v, value(i), "{ctx}: scan at key {i}");
                    }
                    it.next();
                }
                if let Err(e) = it.status() {
                    assert_eq!(e.kind(), strata::ErrorKind::Corruption, "{ctx}: {e}");
                }
            }
        }
    }
    assert!(tried > 100, "{tried} damaged states tried");
    assert!(
        right > 0 && refused < tried,
        "{refused} of {tried} opens refused"
    );
}

/// The name and path of a group file in `db_dir`'s value directory.
/// The testkit's `cleveldb` configuration on the real file system, in a new temporary
/// directory (kept alive by the returned `TempDir`): it, the database directory, the file
/// system and the options.
fn real_cleveldb(
    name: &str,
) -> (
    strata_testkit::TempDir,
    std::path::PathBuf,
    Arc<dyn Fs>,
    strata::Options,
) {
    let tmp = strata_testkit::TempDir::new(name);
    let db_dir = tmp.path().join("db");
    let fs: Arc<dyn Fs> = Arc::new(strata::fs::RealFs::new());
    let o = (strata_testkit::configs::named("cleveldb").build)(&db_dir, fs.clone());
    (tmp, db_dir, fs, o)
}

fn group_file(fs: &dyn Fs, db_dir: &Path) -> (String, std::path::PathBuf) {
    let values = db_dir.join("values");
    let grp = fs
        .list(&values)
        .unwrap()
        .into_iter()
        .find(|n| n.ends_with(".grp"))
        .expect("the flush wrote a group file");
    let path = values.join(&grp);
    (grp, path)
}

/// While the database fits in memory, the flush that writes a group file maps all its pages
/// into the process (docs/design/cleveldb.md, "Third pass"): before any read, the file's
/// mapping is there and resident in full, so a first get faults on none of its pages.
#[cfg(target_os = "linux")]
#[test]
fn a_new_group_file_is_mapped_in_by_the_flush_that_wrote_it() {
    let (_tmp, db_dir, fs, o) = real_cleveldb("coalesce-warm");
    let db = Db::open(&db_dir, o).unwrap();
    for i in 0..2000u64 {
        db.put(
            format!("k{i:06}").as_bytes(),
            format!("small-{i}").as_bytes(),
        )
        .unwrap();
    }
    db.flush().unwrap();
    let path = group_file(&*fs, &db_dir).1.to_string_lossy().into_owned();
    // (size, resident) in KiB of the file's mapping, from /proc/self/smaps.
    let mapping = || -> Option<(u64, u64)> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut lines = smaps.lines().skip_while(|l| !l.ends_with(&path));
        lines.next()?;
        let field = |l: &str, name: &str| -> Option<u64> {
            l.strip_prefix(name)?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        };
        let mut size = None;
        for l in lines.take(8) {
            if let Some(s) = field(l, "Size:") {
                size = Some(s);
            }
            if let Some(r) = field(l, "Rss:") {
                return Some((size?, r));
            }
        }
        None
    };
    // The warm-up runs on the flush thread after the flush is reported done.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut seen = mapping();
    while seen.is_none_or(|(size, rss)| rss < size) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        seen = mapping();
    }
    let (size, rss) = seen.expect("the group file is not mapped before any read");
    assert!(size > 4 && rss == size, "{rss} of {size} KiB resident");
    // And the items read back through that mapping.
    assert_eq!(
        db.get(b"k000007").unwrap().as_deref(),
        Some(&b"small-7"[..])
    );
    db.close().unwrap();
}
