//! Fills a temporary database with random keys, reads them back, and prints the engine's
//! stats. A quick smoke run, not a benchmark (strata-bench is the benchmark).
//!
//! `cargo run --release -p strata --example fill -- [NUM_KEYS]`

use std::time::Instant;

use strata::{Db, Options};

fn main() -> strata::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("strata-fill-{}", std::process::id()));
    let db = Db::open(&dir, Options::default())?;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let value = vec![b'v'; 100];
    let t = Instant::now();
    for _ in 0..n {
        db.put(format!("{:016}", next()), &value)?;
    }
    let w = t.elapsed();
    let t = Instant::now();
    let mut found = 0;
    for _ in 0..n / 10 {
        found += usize::from(db.get(format!("{:016}", next()))?.is_some());
    }
    let r = t.elapsed();
    println!(
        "fillrandom: {n} puts in {:.2}s = {:.0} ops/s",
        w.as_secs_f64(),
        n as f64 / w.as_secs_f64()
    );
    println!(
        "readrandom: {} gets in {:.2}s = {:.0} ops/s ({found} found)",
        n / 10,
        r.as_secs_f64(),
        (n / 10) as f64 / r.as_secs_f64()
    );
    println!("{}", db.property("strata.stats").unwrap_or_default());
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
