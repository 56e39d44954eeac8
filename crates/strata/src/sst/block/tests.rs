use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::iter::InternalIterator;

fn bytewise(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    a.cmp(b)
}

type Entries = Vec<(Vec<u8>, Vec<u8>)>;

fn build(n: usize, interval: usize) -> (Arc<Block>, Entries) {
    let mut b = BlockBuilder::new(interval);
    let mut kv = Vec::new();
    for i in 0..n {
        let k = format!("key{:05}", i * 3).into_bytes();
        let v = format!("v{i}").into_bytes();
        b.add(&k, &v);
        kv.push((k, v));
    }
    (
        Arc::new(Block::new(b.finish(), Path::new("t"), 0).unwrap()),
        kv,
    )
}

#[test]
fn seek_and_scan_both_ways() {
    for interval in [1, 2, 16] {
        let (block, kv) = build(100, interval);
        let mut it = block.iter(bytewise);
        it.seek_to_first();
        for (k, v) in &kv {
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
            it.next();
        }
        assert!(!it.valid());
        it.seek_to_last();
        for (k, _) in kv.iter().rev() {
            assert_eq!(it.key(), &k[..]);
            it.prev();
        }
        assert!(!it.valid());
        it.seek(b"key00100"); // between 99 and 102
        assert_eq!(it.key(), b"key00102");
        it.prev();
        assert_eq!(it.key(), b"key00099");
        it.seek(b"zzz");
        assert!(!it.valid());
        it.seek(b"");
        assert_eq!(it.key(), b"key00000");
    }
}

#[test]
fn corrupt_blocks_never_panic() {
    let (block, _) = build(50, 4);
    let raw = block.data.to_vec();
    let mut x = 88172645463325252u64;
    for _ in 0..2000 {
        let mut d = raw.clone();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = (x as usize) % d.len();
        d[at] ^= (x >> 32) as u8 | 1;
        if let Ok(b) = Block::new(d, Path::new("t"), 0) {
            let b = Arc::new(b);
            let mut it = b.iter(bytewise);
            it.seek_to_first();
            let mut n = 0;
            while it.valid() && n < 1000 {
                it.next();
                n += 1;
            }
            it.seek_to_last();
            for _ in 0..10 {
                if it.valid() {
                    it.prev();
                }
            }
            it.seek(b"key00050");
        }
    }
}
