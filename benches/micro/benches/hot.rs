//! Micro-benchmarks of the structures on strata's hot paths. Run:
//! `cargo bench --manifest-path benches/micro/Cargo.toml` (docs/benchmarking.md).
//!
//! Inputs mirror db_bench's: 16-byte decimal keys in random order, 100-byte values.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use strata::internals::cache::ClockCache;
use strata::internals::iter::{InternalIterator, MergingIterator};
use strata::internals::key::{self, SeqNo, ValueKind};
use strata::internals::memtable::MemTable;
use strata::internals::sst::block::{Block, BlockBuilder};
use strata::internals::sst::filter;

/// db_bench-style keys: `%016d` of a pseudo-random permutation of 0..n.
fn keys(n: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = seed | 1;
    (0..n)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            format!("{:016}", rng % (n as u64 * 10)).into_bytes()
        })
        .collect()
}

fn memtable(c: &mut Criterion) {
    // About a 32 MiB memtable's worth of entries: the size the issue-5 benchmarks use.
    const N: usize = 250_000;
    let ks = keys(N, 7);
    let value = [b'v'; 100];
    let mut g = c.benchmark_group("memtable");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N as u64));
    g.bench_function("insert_250k_random", |b| {
        b.iter_batched(
            || MemTable::new(1),
            |m| {
                for (i, k) in ks.iter().enumerate() {
                    m.add(SeqNo(i as u64 + 1), ValueKind::Put, k, &value);
                }
                m
            },
            BatchSize::PerIteration,
        );
    });
    // The same with a key filter of 1/64 of a 32 MiB write buffer (`memtable_filter_ratio`).
    g.bench_function("insert_250k_random_filtered", |b| {
        b.iter_batched(
            || MemTable::with_filter(1, (32 << 20) / 64),
            |m| {
                for (i, k) in ks.iter().enumerate() {
                    m.add(SeqNo(i as u64 + 1), ValueKind::Put, k, &value);
                }
                m
            },
            BatchSize::PerIteration,
        );
    });
    let m = Arc::new(MemTable::new(1));
    for (i, k) in ks.iter().enumerate() {
        m.add(SeqNo(i as u64 + 1), ValueKind::Put, k, &value);
    }
    let probes = keys(N, 11);
    g.bench_function("get_250k_random", |b| {
        b.iter(|| {
            let mut found = 0usize;
            for k in &probes {
                found += usize::from(m.get(k, SeqNo(u64::MAX >> 8)).is_some());
            }
            black_box(found)
        });
    });
    let mf = Arc::new(MemTable::with_filter(1, (32 << 20) / 64));
    for (i, k) in ks.iter().enumerate() {
        mf.add(SeqNo(i as u64 + 1), ValueKind::Put, k, &value);
    }
    g.bench_function("get_250k_random_filtered", |b| {
        b.iter(|| {
            let mut found = 0usize;
            for k in &probes {
                found += usize::from(mf.get(k, SeqNo(u64::MAX >> 8)).is_some());
            }
            black_box(found)
        });
    });
    g.finish();
}

/// Seeks in one 4 KiB data block of 16-byte keys and 100-byte values (32 entries, restart
/// interval 16), the block layout of the issue-5 benchmarks.
fn block(c: &mut Criterion) {
    let mut ks = keys(32, 3);
    ks.sort();
    ks.dedup();
    let mut b = BlockBuilder::new(16);
    for (i, k) in ks.iter().enumerate() {
        b.add(
            &key::internal_key(k, SeqNo(i as u64 + 1), ValueKind::Put),
            &[b'v'; 100],
        );
    }
    let block = Arc::new(Block::new(b.finish(), std::path::Path::new("bench"), 0).unwrap());
    let targets: Vec<Vec<u8>> = keys(1024, 5)
        .iter()
        .map(|k| key::seek_key(k, SeqNo(1 << 40)))
        .collect();
    let mut g = c.benchmark_group("block");
    g.throughput(Throughput::Elements(targets.len() as u64));
    g.bench_function("seek_4k", |bch| {
        bch.iter(|| {
            let mut it = block.iter(key::compare);
            let mut valid = 0usize;
            for t in &targets {
                it.seek(t);
                valid += usize::from(it.valid());
            }
            black_box(valid)
        });
    });
    g.finish();
}

/// Bloom filter probes (10 bits per key) for absent keys: the cost every point read pays
/// per table it skips.
fn bloom(c: &mut Criterion) {
    let present: Vec<u64> = keys(50_000, 9).iter().map(|k| filter::filter_hash(k)).collect();
    let f = filter::build(&present, 10);
    let absent: Vec<Vec<u8>> = (0..4096).map(|i| format!("absent{i:010}").into_bytes()).collect();
    let mut g = c.benchmark_group("bloom");
    g.throughput(Throughput::Elements(absent.len() as u64));
    g.bench_function("probe_absent", |b| {
        b.iter(|| {
            let mut fp = 0usize;
            for k in &absent {
                fp += usize::from(filter::may_contain(&f, filter::filter_hash(k)));
            }
            black_box(fp)
        });
    });
    g.finish();
}

/// Block-cache hits: the lookup a cached block read costs.
fn cache(c: &mut Criterion) {
    let cache: ClockCache<(u64, u64), Arc<Vec<u8>>> = ClockCache::new(64 << 20);
    for t in 0..64u64 {
        for off in 0..256u64 {
            cache.insert((t, off * 4096), Arc::new(vec![0u8; 16]), 4096);
        }
    }
    let probes: Vec<(u64, u64)> = (0..4096u64).map(|i| ((i * 7) % 64, ((i * 13) % 256) * 4096)).collect();
    let mut g = c.benchmark_group("cache");
    g.throughput(Throughput::Elements(probes.len() as u64));
    g.bench_function("get_hit", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for k in &probes {
                hits += usize::from(cache.get(k).is_some());
            }
            black_box(hits)
        });
    });
    g.finish();
}

/// Merging iterator over 8 memtables (the shape of a scan over L0 files and levels):
/// a full forward pass.
fn merge(c: &mut Criterion) {
    let tables: Vec<Arc<MemTable>> = (0..8u64)
        .map(|t| {
            let m = Arc::new(MemTable::new(1));
            for (i, k) in keys(5_000, 100 + t).iter().enumerate() {
                m.add(SeqNo(t * 10_000 + i as u64 + 1), ValueKind::Put, k, b"value");
            }
            m
        })
        .collect();
    let mut g = c.benchmark_group("merge");
    g.sample_size(20);
    g.throughput(Throughput::Elements(40_000));
    g.bench_function("scan_8_sources", |b| {
        b.iter(|| {
            let children: Vec<Box<dyn InternalIterator>> = tables
                .iter()
                .map(|m| Box::new(m.iter()) as Box<dyn InternalIterator>)
                .collect();
            let mut it = MergingIterator::new(children);
            it.seek_to_first();
            let mut n = 0usize;
            while it.valid() {
                n += 1;
                it.next();
            }
            black_box(n)
        });
    });
    g.finish();
}

criterion_group!(benches, memtable, block, bloom, cache, merge);
criterion_main!(benches);
