//! Micro-benchmarks of the structures on strata's hot paths. Run:
//! `cargo bench --manifest-path benches/micro/Cargo.toml` (docs/benchmarking.md).
//!
//! Inputs mirror db_bench's: 16-byte decimal keys in random order, 100-byte values.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use strata::key::{SeqNo, ValueKind};
use strata::memtable::MemTable;

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
    g.finish();
}

criterion_group!(benches, memtable);
criterion_main!(benches);
