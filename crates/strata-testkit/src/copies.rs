//! What the tests of copies of a live database (checkpoints, restored backups) share: a
//! numbered stream of writes that records its last number atomically with each write, the
//! model of the database after write n, and the check that a copy is the database after
//! one write in a range (one instant).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata::fs::Fs;
use strata::{Db, WriteBatch, WriteOptions};

use crate::configs::Config;
use crate::model::assert_db_matches;

/// Write `i`'s key (700 keys, revisited).
pub fn key(i: u64) -> Vec<u8> {
    format!("key{:04}", (i * 7919) % 700).into_bytes()
}

/// Write `i`'s value: sizes straddle the stores' 100-byte threshold.
pub fn value(i: u64) -> Vec<u8> {
    format!("v{i}-{}", "z".repeat((i % 7) as usize * 40)).into_bytes()
}

/// Write `i`: its key and, atomically with it, `last` = i.
///
/// # Panics
/// If the write fails.
pub fn write(db: &Db, i: u64) {
    let mut b = WriteBatch::new();
    b.put(key(i), value(i)).put(b"last", i.to_string());
    db.write(&WriteOptions::default(), b).unwrap();
}

/// The database after writes 0..=n.
pub fn model(n: u64) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    for i in 0..=n {
        m.insert(key(i), value(i));
    }
    m.insert(b"last".to_vec(), n.to_string().into_bytes());
    m
}

/// Opens the copy at `dir` with `config`'s options for that directory and checks it is the
/// database after some write n in `lo..=hi`; returns n.
///
/// # Panics
/// If it does not open, or holds anything else.
pub fn check(config: &Config, fs: &Arc<dyn Fs>, dir: &str, lo: u64, hi: u64) -> u64 {
    let db = Db::open(dir, (config.build)(Path::new(dir), fs.clone()))
        .unwrap_or_else(|e| panic!("{}: open the copy at {dir}: {e}", config.name));
    let last = db.get(b"last").unwrap().expect("the copy holds writes");
    let n: u64 = String::from_utf8(last).unwrap().parse().unwrap();
    assert!(
        (lo..=hi).contains(&n),
        "{}: {dir} ends at write {n}, not in {lo}..={hi}",
        config.name
    );
    assert_db_matches(&db, &model(n));
    db.close().unwrap();
    n
}
