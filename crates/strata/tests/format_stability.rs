//! The bytes a database writes are the format: the same writes under the same options make
//! the same files, byte for byte (tables, WALs, manifests, value files, the matrix's
//! region, OPTIONS). Each named configuration runs one fixed workload on an in-memory file
//! system, waiting for every background job between its steps, and the digest of every
//! file it leaves is compared with the one recorded here. A change to the engine's code that
//! is not meant to change a format (a refactoring, a new layer) must leave these alone; one
//! that is meant to must say so in its docs/format/ page and update the digests, which the
//! failing test prints.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::Db;
use strata_testkit::configs;

/// One configuration per technique: every L0 layout (flat, OHDB's buckets and two
/// directories, the matrix), every value store (blob files, the value log, the hash store,
/// coalesced groups) and the baselines' sizes. Variants whose background jobs run on timers
/// of their own (the write-time hash store, the matrix compacting while idle) are left out.
const CONFIGS: &[&str] = &[
    "default",
    "leveldb",
    "hyperleveldb",
    "ohdb-l0p",
    "ohdb-2dc",
    "blob",
    "wisckey",
    "hashkv",
    "rocksdb",
    "matrixkv",
    "coalesce",
    "cleveldb",
];

/// The digests recorded for [`CONFIGS`] (FNV-1a 64 over every file's path and bytes, in
/// path order; LOCK left out), the same from the code before the value formats moved below
/// the version as after. A failure prints each file's length and digest.
const RECORDED: &[(&str, u64)] = &[
    ("default", 0x522a5b9ce8d8b397),      // 57 files
    ("leveldb", 0xac583e5e8dd3c2b2),      // 57 files
    ("hyperleveldb", 0xb3b23addc3cb7e27), // 69 files
    ("ohdb-l0p", 0xa6bd9acc8f000d79),     // 72 files
    ("ohdb-2dc", 0x30a6a286bfa13410),     // 63 files
    ("blob", 0x1cdf9e4ff2d9758e),         // 18 files
    ("wisckey", 0xd8b204cb018be964),      // 12 files
    ("hashkv", 0x44f0e4d5cf5c3348),       // 123 files
    ("rocksdb", 0x44e30aa04b305faa),      // 57 files
    ("matrixkv", 0x441cbfa19dcb7b47),     // 9 files
    ("coalesce", 0x10dff7e238957091),     // 57 files
    ("cleveldb", 0x9050b39b68f7a365),     // 107 files
];

/// FNV-1a, 64 bits.
fn fnv(h: &mut u64, bytes: &[u8]) {
    for &b in bytes {
        *h ^= u64::from(b);
        *h = h.wrapping_mul(0x0100_0000_01b3);
    }
}

/// Every file under `dir`, by path, in name order.
fn files(fs: &dyn Fs, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(mut names) = fs.list(dir) else {
        return;
    };
    names.sort();
    for n in names {
        let p = dir.join(&n);
        if fs.list(&p).is_ok() {
            files(fs, &p, out);
        } else {
            out.push(p);
        }
    }
}

/// The fixed workload: six rounds of puts of mixed sizes (some separated, some coalesced)
/// and deletes, each flushed and its compactions waited for (L0 compactions, and merges
/// into the levels below), then writes that stay in the WAL, a clean close, a reopen, one
/// write and a close. (A manual compaction of everything is left out: the numbers its
/// outputs take depend on timing.)
fn run(name: &str) -> (u64, usize, String) {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    // One memtable a round (flushed when asked), one compaction at a time, no job on a
    // timer (idle compactions) and no value GC on a thread of its own (segments larger
    // than the workload's values): what the background does, and in which order it takes
    // file numbers, is then fixed by the workload's steps and the waits between them. L0
    // compacts at 4 tables, so that every configuration compacts (the presets that wait
    // for 8 would not, in six rounds), and blob and group files are collected by the
    // compactions that drop their values. (The value log's and the hash store's GC, which
    // run on threads of their own, write nothing here: their bytes are not covered.)
    let base = (configs::named(name).build)(dir, fs.clone());
    let opts = strata::Options {
        write_buffer_size: 4 << 20,
        max_background_compactions: 1,
        idle_compaction_delay: None,
        level0_file_num_compaction_trigger: 4,
        level0_slowdown_writes_trigger: base.level0_slowdown_writes_trigger.max(4),
        level0_stop_writes_trigger: base.level0_stop_writes_trigger.max(4),
        vlog_segment_size: base.vlog_segment_size.max(8 << 20),
        hash_main_segment_size: base.hash_main_segment_size.max(8 << 20),
        // (The matrix holds that many memtables' rows.)
        matrix_container_size: base.matrix_container_size.max(64 << 20),
        ..base
    };
    let db = Db::open(dir, opts.clone()).unwrap();
    let mut x: u64 = 7;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..6u64 {
        for i in 0..600u64 {
            let k = format!("key{:06}", next() % 3000);
            if i % 17 == 0 {
                db.delete(k.as_bytes()).unwrap();
                continue;
            }
            let len = [8, 40, 120, 700, 3000][(next() % 5) as usize];
            let v: Vec<u8> = (0..len).map(|j| (j as u64 ^ round ^ i) as u8).collect();
            db.put(k.as_bytes(), &v).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_compactions().unwrap();
    }
    // Every configuration compacted (a digest of files no compaction wrote would not
    // cover the compaction's bytes), but the matrix: its rows here fill a tenth of the
    // region, and its column compactions start at 60 % (not covered).
    let compacted: u64 = db.stats().compactions.iter().sum();
    assert!(
        compacted > 0 || name == "matrixkv",
        "{name}: no compaction ran"
    );
    for i in 0..50u64 {
        db.put(format!("tail{i:03}").as_bytes(), vec![i as u8; 200])
            .unwrap();
    }
    db.close().unwrap();
    drop(db);
    // A reopen: recovery replays the WALs, flushes them and starts a new manifest with a
    // snapshot of the version (its format features among it).
    let db = Db::open(dir, opts).unwrap();
    db.put(b"after-reopen", b"v").unwrap();
    db.close().unwrap();
    drop(db);
    let mut all = Vec::new();
    files(&*fs, Path::new("/"), &mut all);
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut listing = String::new();
    for p in &all {
        if p.file_name().is_some_and(|n| n == "LOCK") {
            continue;
        }
        fnv(&mut h, p.to_string_lossy().as_bytes());
        let bytes = strata::fs::read_all(&*fs, p).unwrap();
        fnv(&mut h, &bytes);
        let mut fh = 0xcbf2_9ce4_8422_2325u64;
        fnv(&mut fh, &bytes);
        listing.push_str(&format!("  {} {} {fh:016x}\n", p.display(), bytes.len()));
    }
    (h, all.len(), listing)
}

#[test]
fn the_same_writes_make_the_same_bytes() {
    let mut got = Vec::new();
    for &name in CONFIGS {
        let (h, n, first) = run(name);
        // Twice: a digest that changes between two runs of one build is no record.
        let (again, _, second) = run(name);
        assert_eq!(
            again, h,
            "{name}: two runs of the same writes differ; their files (path, length, digest):\n{first}\nthen\n{second}"
        );
        got.push((name, h, n));
    }
    let printed: String = got
        .iter()
        .map(|(name, h, n)| format!("    ({name:?}, {h:#018x}), // {n} files\n"))
        .collect();
    for (name, h, _) in &got {
        let recorded = RECORDED.iter().find(|(n, _)| n == name).map(|r| r.1);
        assert_eq!(
            recorded,
            Some(*h),
            "{name}: the files differ from the recorded ones; if the format change is \
             meant, record these:\n{printed}"
        );
    }
}
