//! strata-bench: db_bench-compatible benchmarks (plus YCSB A-F and HashKV's update phases)
//! for strata and, behind cargo features, RocksDB and LevelDB in the same driver.
//!
//! `cargo run --release -p strata-bench` runs a default suite on a temporary database.

mod bench;
mod device;
mod engine;
mod flags;
mod keys;
#[cfg_attr(
    not(any(feature = "rocksdb", feature = "leveldb")),
    allow(dead_code, reason = "only the peers read LOG files")
)]
mod logscan;
mod peers;
mod plot;
mod progress;
mod report;
mod steal;

use std::process::ExitCode;

fn header(f: &flags::Flags) {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mean_value = keys::ValueSizes::parse(&f.value_size_dist, f.value_size)
        .map(|s| s.mean())
        .unwrap_or(f.value_size as f64);
    let raw = f.num as f64 * (f.key_size as f64 + mean_value) / 1048576.0;
    println!(
        "strata-bench {}: engine {}{}",
        env!("CARGO_PKG_VERSION"),
        f.engine,
        if f.engine == "strata" {
            format!(" (preset {})", f.preset)
        } else {
            String::new()
        }
    );
    println!("CPU:        {cores} * {cpu}");
    println!("Keys:       {} bytes each", f.key_size);
    if let Some(spec) = &f.device_model {
        match device::parse(spec) {
            Ok(d) => println!("Device:     {}", device::DeviceFs::new(d).describe()),
            Err(e) => println!("Device:     {e}"),
        }
    }
    println!(
        "Values:     {} bytes each ({})",
        mean_value as u64, f.value_size_dist
    );
    println!("Entries:    {}", f.num);
    println!("RawSize:    {raw:.1} MB (estimated)");
    println!("Compression: {}", f.compression_type);
    println!(
        "WAL:        {}{}",
        if f.disable_wal { "disabled" } else { "enabled" },
        if f.sync { ", synced" } else { "" }
    );
    if let Some(dir) = &f.pmem_dir {
        let what = match mount_type(std::path::Path::new(dir)).as_deref() {
            Some("tmpfs") => {
                "tmpfs: persistent memory emulated in RAM, gone at a reboot".to_string()
            }
            Some(t) => format!("{t}: a file system standing in for persistent memory"),
            None => "file system unknown".to_string(),
        };
        println!("PMEM:       {dir} ({what})");
    }
    println!("------------------------------------------------");
}

/// The type of the file system `path` is on (the longest mount point in /proc/mounts that
/// holds it), if it can be told.
fn mount_type(path: &std::path::Path) -> Option<String> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    // The directory may not exist yet: judge by its nearest existing ancestor.
    let real = path
        .ancestors()
        .find_map(|a| std::fs::canonicalize(a).ok())?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (_, point, kind) = (it.next()?, it.next()?, it.next()?);
            real.starts_with(point)
                .then(|| (point.len(), kind.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, kind)| kind)
}

fn run(args: Vec<String>) -> Result<(), String> {
    let f = flags::Flags::parse(args.clone())?;
    header(&f);
    let mut runner = bench::Runner::new(f.clone())?;
    println!("DB path: [{}]", runner.dir().display());
    let outcome = runner.run_all();
    if let Some(path) = &f.json {
        std::fs::write(path, report::to_json(&f.engine, &args, &runner.results))
            .map_err(|e| format!("writing {path}: {e}"))?;
    }
    if f.report_interval_seconds > 0.0 {
        let csv = report::to_csv(&runner.results);
        let path = f
            .report_file
            .clone()
            .unwrap_or_else(|| "strata-bench-report.csv".into());
        std::fs::write(&path, csv).map_err(|e| format!("writing {path}: {e}"))?;
        eprintln!("timeline written to {path}");
        if let Some(png) = &f.plot {
            plot::timeline_png(&runner.results, png)?;
            eprintln!("timeline chart written to {png}");
        }
    }
    runner.finish();
    outcome
}

fn main() -> ExitCode {
    // glibc's malloc otherwise keeps tens of MiB the engine freed (a run under a memory
    // limit was killed for it, issue 33); the peers run in this process and get it too.
    strata::limit_malloc_retention();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("strata-bench: {e}");
            ExitCode::FAILURE
        }
    }
}
