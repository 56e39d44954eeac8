//! One harness over every sorted structure: Block, Table, MemTable, and Db. Each is filled
//! from the same random entries and walked forward, backward, and from random seeks with
//! mixed next/prev, against the same sorted model (LevelDB's table_test idea).

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::internals::iter::InternalIterator;
use strata::internals::key::{self, SeqNo, ValueKind};
use strata::internals::memtable::MemTable;
use strata::internals::sst::block::{Block, BlockBuilder};
use strata::internals::sst::{Compression, Table, TableBuilder, TableOptions};
use strata::{Db, Options, ReadOptions};
use strata_testkit::Rng;

/// What the harness drives.
trait Cursor {
    fn seek_to_first(&mut self);
    fn seek_to_last(&mut self);
    fn seek(&mut self, k: &[u8]);
    fn next(&mut self);
    fn prev(&mut self);
    fn valid(&self) -> bool;
    fn entry(&self) -> (Vec<u8>, Vec<u8>);
}

struct Internal(Box<dyn InternalIterator>);

impl Cursor for Internal {
    fn seek_to_first(&mut self) {
        self.0.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.0.seek_to_last();
    }
    fn seek(&mut self, k: &[u8]) {
        self.0.seek(k);
    }
    fn next(&mut self) {
        self.0.next();
    }
    fn prev(&mut self) {
        self.0.prev();
    }
    fn valid(&self) -> bool {
        self.0.valid()
    }
    fn entry(&self) -> (Vec<u8>, Vec<u8>) {
        (self.0.key().to_vec(), self.0.value().to_vec())
    }
}

struct User(strata::DbIterator);

impl Cursor for User {
    fn seek_to_first(&mut self) {
        self.0.seek_to_first();
    }
    fn seek_to_last(&mut self) {
        self.0.seek_to_last();
    }
    fn seek(&mut self, k: &[u8]) {
        self.0.seek(k);
    }
    fn next(&mut self) {
        self.0.next();
    }
    fn prev(&mut self) {
        self.0.prev();
    }
    fn valid(&self) -> bool {
        self.0.valid()
    }
    fn entry(&self) -> (Vec<u8>, Vec<u8>) {
        (self.0.key().to_vec(), self.0.value().to_vec())
    }
}

fn harness(
    name: &str,
    c: &mut dyn Cursor,
    model: &[(Vec<u8>, Vec<u8>)],
    cmp: fn(&[u8], &[u8]) -> Ordering,
    probes: &[Vec<u8>],
) {
    c.seek_to_first();
    for (i, e) in model.iter().enumerate() {
        assert!(c.valid(), "{name}: forward ended at {i}");
        assert!(&c.entry() == e, "{name}: forward entry {i}");
        c.next();
    }
    assert!(!c.valid(), "{name}: forward did not end");
    c.seek_to_last();
    for (i, e) in model.iter().enumerate().rev() {
        assert!(c.valid(), "{name}: reverse ended at {i}");
        assert!(&c.entry() == e, "{name}: reverse entry {i}");
        c.prev();
    }
    assert!(!c.valid(), "{name}: reverse did not end");
    let mut rng = Rng::new(99);
    for probe in probes {
        c.seek(probe);
        let mut pos = model.partition_point(|(k, _)| cmp(k, probe) == Ordering::Less);
        for step in 0..12 {
            if pos >= model.len() {
                assert!(
                    !c.valid(),
                    "{name}: seek {probe:?} step {step} should be invalid"
                );
                break;
            }
            assert!(
                c.valid() && c.entry() == model[pos],
                "{name}: seek {probe:?} step {step}"
            );
            if rng.chance(0.6) {
                c.next();
                pos += 1;
            } else {
                c.prev();
                match pos.checked_sub(1) {
                    Some(p) => pos = p,
                    None => {
                        assert!(!c.valid(), "{name}: prev before first");
                        break;
                    }
                }
            }
        }
    }
}

fn user_entries(n: usize, seed: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut rng = Rng::new(seed);
    let mut m = std::collections::BTreeMap::new();
    while m.len() < n {
        let len = rng.below(12) as usize;
        let mut k = rng.bytes(len);
        if rng.chance(0.3) {
            k = format!("shared-prefix-{}", rng.below(100_000)).into_bytes();
        }
        let vlen = rng.below(80) as usize;
        m.insert(k, rng.bytes(vlen));
    }
    m.into_iter().collect()
}

fn internal_entries(user: &[(Vec<u8>, Vec<u8>)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    user.iter()
        .enumerate()
        .map(|(i, (k, v))| {
            (
                key::internal_key(k, SeqNo(i as u64 + 1), ValueKind::Put),
                v.clone(),
            )
        })
        .collect()
}

fn probes(user: &[(Vec<u8>, Vec<u8>)], internal: bool) -> Vec<Vec<u8>> {
    let mut rng = Rng::new(5);
    let mut p: Vec<Vec<u8>> = (0..60)
        .map(|_| user[rng.below(user.len() as u64) as usize].0.clone())
        .collect();
    p.extend((0..60).map(|_| {
        let len = rng.below(10) as usize;
        rng.bytes(len)
    }));
    p.push(Vec::new());
    p.push(vec![0xff; 20]);
    if internal {
        p.into_iter()
            .map(|k| key::seek_key(&k, SeqNo::MAX))
            .collect()
    } else {
        p
    }
}

#[test]
fn every_sorted_structure_agrees_with_the_model() {
    for (n, seed) in [(1, 1), (17, 2), (500, 3), (3000, 4)] {
        let user = user_entries(n, seed);
        let ikeys = internal_entries(&user);
        let iprobes = probes(&user, true);

        for interval in [1, 16] {
            let mut b = BlockBuilder::new(interval);
            for (k, v) in &ikeys {
                b.add(k, v);
            }
            let block = Arc::new(Block::new(b.finish(), Path::new("block"), 0).unwrap());
            harness(
                &format!("block n={n} r={interval}"),
                &mut Internal(Box::new(block.iter(key::compare))),
                &ikeys,
                key::compare,
                &iprobes,
            );
        }

        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/t")).unwrap();
        for compression in [Compression::None, Compression::Lz4] {
            let p = Path::new("/t/1.sst");
            let opts = TableOptions {
                block_size: 256,
                compression,
                ..Default::default()
            };
            let mut tb = TableBuilder::new(fs.create(p).unwrap(), p.to_path_buf(), opts);
            for (k, v) in &ikeys {
                tb.add(k, v).unwrap();
            }
            tb.finish().unwrap();
            let t = Arc::new(Table::open(fs.open(p).unwrap(), p, None).unwrap());
            harness(
                &format!("table n={n} {compression:?}"),
                &mut Internal(Box::new(t.iter())),
                &ikeys,
                key::compare,
                &iprobes,
            );
        }

        let mem = Arc::new(MemTable::new(1));
        for (i, (k, v)) in user.iter().enumerate() {
            mem.add(SeqNo(i as u64 + 1), ValueKind::Put, k, v);
        }
        harness(
            &format!("memtable n={n}"),
            &mut Internal(Box::new(mem.iter())),
            &ikeys,
            key::compare,
            &iprobes,
        );

        // The Db, with the data spread over memtable, L0 and deeper levels.
        let dbfs = MemFs::new();
        let opts = Options {
            write_buffer_size: 64 << 10,
            max_bytes_for_level_base: 128 << 10,
            target_file_size_base: 16 << 10,
            fs: Arc::new(dbfs),
            ..Options::default()
        };
        let db = Db::open("/db", opts).unwrap();
        for (i, (k, v)) in user.iter().enumerate() {
            db.put(k, v).unwrap();
            if i == user.len() / 2 {
                db.compact_range(None, None).unwrap();
            }
        }
        harness(
            &format!("db n={n}"),
            &mut User(db.iter(ReadOptions::default()).unwrap()),
            &user,
            |a, b| a.cmp(b),
            &probes(&user, false),
        );
    }
}
