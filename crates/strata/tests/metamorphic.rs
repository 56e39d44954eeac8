//! Metamorphic test (Pebble's idea): one seeded random op log runs under every named option
//! configuration of strata-testkit; every observable result (gets, scans, snapshot reads)
//! must be identical across configurations. Configurations differ in memtable and file
//! sizes, thread layout, compression, picking, directories and filters (the op log holds
//! expiring puts and moves the clock), so any behaviour
//! that leaks from them into results is caught, even where no model exists yet.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

use strata::fs::{Fs, MemFs, RealFs};
use strata::{Db, ReadOptions, WriteBatch, WriteOptions};
use strata_testkit::{configs, Config, Rng, TempDir};

/// The databases' clock: moved by the op log only.
struct Clock(std::sync::atomic::AtomicU64);

impl strata::Clock for Clock {
    fn now_millis(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}

/// Runs the op log for `seed` under `config` in `dir` on `fs`, returning the transcript of
/// every result.
fn transcript(config: &Config, seed: u64, ops: usize, dir: &Path, fs: Arc<dyn Fs>) -> Vec<String> {
    // Expiring puts, and a clock the op log moves (the same in every configuration).
    let clock = Arc::new(Clock(std::sync::atomic::AtomicU64::new(1_800_000_000_000)));
    let open = || {
        let mut o = (config.build)(dir, fs.clone());
        o.clock = clock.clone();
        Db::open(dir, o).unwrap()
    };
    let mut db = open();
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    let mut snaps: Vec<strata::Snapshot> = Vec::new();
    let key = |rng: &mut Rng| format!("k{:05}", rng.below(2000)).into_bytes();
    for i in 0..ops {
        let mut line = String::new();
        match rng.below(100) {
            0..=33 => {
                let (k, n) = (key(&mut rng), rng.below(300) as usize);
                db.put(&k, vec![b'a' + (i % 26) as u8; n]).unwrap();
            }
            34..=37 => {
                let (k, n) = (key(&mut rng), rng.below(300) as usize);
                let ttl = std::time::Duration::from_millis(rng.below(20_000));
                db.put_with_ttl(&k, vec![b'A' + (i % 26) as u8; n], ttl)
                    .unwrap();
            }
            38..=39 => {
                clock
                    .0
                    .fetch_add(rng.below(3_000), std::sync::atomic::Ordering::SeqCst);
            }
            40..=47 => db.delete(key(&mut rng)).unwrap(),
            48..=49 => {
                // A range deletion of up to 60 keys.
                let a = rng.below(2000);
                let b = a + rng.below(60);
                let k = |n: u64| format!("k{n:05}").into_bytes();
                db.delete_range(k(a), k(b)).unwrap();
            }
            50..=57 => {
                let mut b = WriteBatch::new();
                for _ in 0..rng.below(10) + 1 {
                    if rng.chance(0.7) {
                        b.put(key(&mut rng), format!("batch{i}"));
                    } else {
                        b.delete(key(&mut rng));
                    }
                }
                db.write(&WriteOptions::default(), b).unwrap();
            }
            58..=79 => {
                let k = key(&mut rng);
                let _ = write!(
                    line,
                    "get {:?} = {:?}",
                    String::from_utf8_lossy(&k),
                    db.get(&k).unwrap().map(|v| v.len())
                );
            }
            80..=87 => {
                let lo = key(&mut rng);
                let opts = ReadOptions {
                    lower_bound: Some(lo),
                    ..Default::default()
                };
                let mut it = db.iter(opts).unwrap();
                let reverse = rng.chance(0.3);
                if reverse {
                    it.seek_to_last();
                } else {
                    it.seek_to_first();
                }
                let mut n = 0;
                let mut h = 0u64;
                while it.valid() && n < 50 {
                    h = h.wrapping_mul(31).wrapping_add(
                        it.key()
                            .iter()
                            .chain(it.value())
                            .map(|&b| u64::from(b))
                            .sum::<u64>(),
                    );
                    n += 1;
                    if reverse {
                        it.prev();
                    } else {
                        it.next();
                    }
                }
                it.status().unwrap();
                let _ = write!(line, "scan {n} {h:x}");
            }
            88..=91 => {
                if snaps.len() < 3 {
                    snaps.push(db.snapshot());
                } else if let Some(s) = snaps.get(rng.below(3) as usize).cloned() {
                    let k = key(&mut rng);
                    let v = db
                        .get_opt(
                            &ReadOptions {
                                snapshot: Some(s),
                                ..Default::default()
                            },
                            &k,
                        )
                        .unwrap();
                    let _ = write!(
                        line,
                        "snap get {:?} = {:?}",
                        String::from_utf8_lossy(&k),
                        v.map(|v| v.len())
                    );
                    snaps.remove(0);
                }
            }
            92..=95 => db.flush().unwrap(),
            96..=97 => db.compact_range(None, None).unwrap(),
            _ => {
                snaps.clear();
                drop(db);
                db = open();
            }
        }
        if !line.is_empty() {
            out.push(format!("{i}: {line}"));
        }
    }
    out
}

fn in_memory(config: &Config, seed: u64, ops: usize) -> Vec<String> {
    transcript(config, seed, ops, Path::new("/db"), Arc::new(MemFs::new()))
}

/// Panics naming the first line where `t` (config `name`) differs from `reference`.
fn assert_same(reference: &[String], t: &[String], seed: u64, name: &str, reference_name: &str) {
    if let Some(i) = (0..reference.len().min(t.len())).find(|&i| reference[i] != t[i]) {
        panic!(
            "seed {seed}: config {name} differs from {reference_name} at {i}: {:?} vs {:?}",
            t[i], reference[i]
        );
    }
    assert_eq!(t.len(), reference.len(), "seed {seed}: config {name}");
}

#[test]
fn same_op_log_same_results_under_every_config() {
    for seed in [101, 202, 303] {
        let all = configs();
        let reference = in_memory(&all[0], seed, 4000);
        assert!(reference.len() > 1000);
        for config in &all[1..] {
            let t = in_memory(config, seed, 4000);
            assert_same(&reference, &t, seed, config.name, all[0].name);
        }
    }
}

/// The same op log on real files, every configuration, against the in-memory reference: a
/// difference between the file systems (issue 34's was one) shows as a different result.
#[test]
fn same_op_log_same_results_on_real_files() {
    let seed = 404;
    let all = configs();
    let reference = in_memory(&all[0], seed, 2000);
    for config in &all {
        let dir = TempDir::new("metamorphic");
        let t = transcript(
            config,
            seed,
            2000,
            &dir.path().join("db"),
            Arc::new(RealFs::new()),
        );
        assert_same(
            &reference,
            &t,
            seed,
            &format!("{} (real files)", config.name),
            all[0].name,
        );
    }
}
