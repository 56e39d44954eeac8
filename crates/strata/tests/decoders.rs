//! Every decoder of untrusted bytes runs over thousands of random and mutated inputs: block,
//! table (footer, index, meta blocks), WAL/manifest log reader, write batch, version edit.
//! None may panic or hang; what they accept must be self-consistent. (cargo-fuzz targets
//! for longer runs are in `fuzz/`.)

use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs};
use strata::internals::iter::InternalIterator;
use strata::internals::key::{self, SeqNo, ValueKind};
use strata::internals::sst::block::Block;
use strata::internals::sst::{Table, TableBuilder, TableOptions};
use strata::internals::version::VersionEdit;
use strata::internals::wal::{LogEvent, LogReader, LogWriter};
use strata::WriteBatch;
use strata_testkit::Rng;

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    match rng.below(4) {
        0 => {
            for _ in 0..1 + rng.below(4) {
                if !v.is_empty() {
                    let i = rng.below(v.len() as u64) as usize;
                    v[i] ^= 1 << rng.below(8);
                }
            }
        }
        1 => v.truncate(rng.below(v.len() as u64 + 1) as usize),
        2 => {
            let i = rng.below(v.len() as u64 + 1) as usize;
            let n = rng.below(16) as usize;
            v.splice(i..i, rng.bytes(n));
        }
        _ => {
            let n = rng.below(600) as usize;
            v = rng.bytes(n);
        }
    }
    v
}

fn drain(it: &mut dyn InternalIterator) {
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        it.next();
        n += 1;
    }
    it.seek_to_last();
    for _ in 0..10 {
        if it.valid() {
            it.prev();
        }
    }
    it.seek(b"key0000\xff\xff\xff\xff\xff\xff\xff\xff");
    let _ = it.status();
}

fn sample_table() -> Vec<u8> {
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/t")).unwrap();
    let p = Path::new("/t/1.sst");
    let mut b = TableBuilder::new(
        fs.create(p).unwrap(),
        p.to_path_buf(),
        TableOptions {
            block_size: 128,
            ..Default::default()
        },
    );
    for i in 0..60u32 {
        b.add(
            &key::internal_key(
                format!("key{i:04}").as_bytes(),
                SeqNo(u64::from(i) + 1),
                ValueKind::Put,
            ),
            b"v",
        )
        .unwrap();
    }
    b.finish().unwrap();
    strata::fs::read_all(&fs, p).unwrap()
}

#[test]
fn tables_and_blocks_survive_garbage() {
    let mut rng = Rng::new(1);
    let table = sample_table();
    assert!(
        table.len() > 1000,
        "the sample table is {} bytes",
        table.len()
    );
    let mut opened = 0;
    for i in 0..3000 {
        let data = mutate(&mut rng, &table);
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/t")).unwrap();
        let p = Path::new("/t/x.sst");
        let mut f = fs.create(p).unwrap();
        f.append(&data).unwrap();
        // Unflushed bytes are invisible to readers (the fs contract).
        f.sync().unwrap();
        drop(f);
        if let Ok(t) = Table::open(fs.open(p).unwrap(), p, None) {
            opened += 1;
            let t = Arc::new(t);
            drain(&mut t.iter());
            let _ = t.get(&key::seek_key(b"key0007", SeqNo::MAX), b"key0007");
        }
        let block = mutate(&mut rng, &table[..table.len().min(200)]);
        if let Ok(b) = Block::new(block, Path::new("b"), i) {
            drain(&mut Arc::new(b).iter(key::compare));
        }
    }
    // Some mutations leave the table readable (damage in a data block is found only when
    // that block is read): the readable path is exercised too.
    assert!(
        opened > 0,
        "no mutated table opened: the decoder never ran past the footer"
    );
}

#[test]
fn logs_batches_and_edits_survive_garbage() {
    let mut rng = Rng::new(2);
    let fs = MemFs::new();
    fs.create_dir_all(Path::new("/l")).unwrap();
    let mut w = LogWriter::new(fs.create(Path::new("/l/log")).unwrap());
    let mut batch = WriteBatch::new();
    batch.put(b"a", b"1").delete(b"b");
    let edit = VersionEdit {
        log_number: Some(strata::internals::filename::FileNumber(3)),
        last_sequence: Some(SeqNo(9)),
        deleted_files: vec![(1, strata::internals::filename::FileNumber(2))],
        ..Default::default()
    };
    for _ in 0..20 {
        w.add_record(batch.encoded()).unwrap();
        w.add_record(&edit.encode()).unwrap();
    }
    let log = strata::fs::read_all(&fs, Path::new("/l/log")).unwrap();
    for _ in 0..3000 {
        let mut r = LogReader::new(mutate(&mut rng, &log));
        for _ in 0..1000 {
            match r.next_event() {
                LogEvent::Record { data, .. } => {
                    let _ = WriteBatch::decode(data.clone());
                    let _ = strata::internals::version::decode_edit(&data);
                }
                LogEvent::Corrupt { .. } => {}
                LogEvent::End | LogEvent::Torn { .. } => break,
            }
        }
        if let Ok(b) = WriteBatch::decode(mutate(&mut rng, batch.encoded())) {
            assert_eq!(b.iter().count(), b.len());
        }
        if let Ok(e) = strata::internals::version::decode_edit(&mutate(&mut rng, &edit.encode())) {
            // Whatever decodes re-encodes to something that decodes the same.
            assert_eq!(
                strata::internals::version::decode_edit(&e.encode()).unwrap(),
                e
            );
        }
    }
}
