//! The benchmark runner: opens the engine, runs each benchmark on `--threads` threads with the
//! shared generators, and measures throughput, latency per op kind, the timeline, and the
//! engine's amplification, stalls and space.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::engine::{self, Engine, Metrics};
use crate::flags::Flags;
use crate::keys::{fnv64, make_key, KeyDist, Rng, ValueSizes, ValueSource, Zipf};
use crate::progress::Progress;
use crate::report::{new_hist, BenchResult, Interval, SlowOp};

/// Per-thread measurements.
pub struct ThreadStats {
    ops: u64,
    bytes: u64,
    found: u64,
    user_bytes: u64,
    hists: BTreeMap<&'static str, Histogram<u64>>,
    interval: f64,
    origin: Instant,
    current: Option<(u64, u64, Histogram<u64>)>,
    intervals: Vec<(u64, u64, Histogram<u64>)>,
    progress: Arc<AtomicU64>,
    unreported: u64,
    start: Instant,
    end: Instant,
    /// Ops of at least [`SLOW_OP`]: when they ended and how long they took (the first
    /// [`SLOW_OPS_KEPT`]).
    slow: Vec<(Instant, Duration)>,
}

/// An op at least this slow is listed with the time it ended (`slow ops` after a result):
/// to line it up with the engine's own log of long waits (strata's `strata.write-stalls`).
const SLOW_OP: Duration = Duration::from_millis(50);
/// How many slow ops a thread lists.
const SLOW_OPS_KEPT: usize = 20;

impl ThreadStats {
    fn new(interval: f64, origin: Instant, progress: Arc<AtomicU64>) -> Self {
        let now = Instant::now();
        ThreadStats {
            ops: 0,
            bytes: 0,
            found: 0,
            user_bytes: 0,
            hists: BTreeMap::new(),
            interval,
            origin,
            current: None,
            intervals: Vec::new(),
            progress,
            unreported: 0,
            start: now,
            end: now,
            slow: Vec::new(),
        }
    }

    /// Records `n` ops of `kind` that started at `t0`.
    pub fn record(&mut self, kind: &'static str, t0: Instant, n: u64) {
        let now = Instant::now();
        let ns = now.duration_since(t0).as_nanos().max(1) as u64;
        let _ = self.hists.entry(kind).or_insert_with(new_hist).record(ns);
        self.ops += n;
        if ns >= SLOW_OP.as_nanos() as u64 && self.slow.len() < SLOW_OPS_KEPT {
            self.slow.push((now, Duration::from_nanos(ns)));
        }
        if self.interval > 0.0 {
            let idx = (now.duration_since(self.origin).as_secs_f64() / self.interval) as u64;
            if self.current.as_ref().is_none_or(|c| c.0 != idx) {
                if let Some(c) = self.current.take() {
                    self.intervals.push(c);
                }
                self.current = Some((idx, 0, new_hist()));
            }
            if let Some(c) = self.current.as_mut() {
                c.1 += n;
                let _ = c.2.record(ns);
            }
        }
        self.unreported += n;
        if self.unreported >= 256 {
            self.progress.fetch_add(self.unreported, Ordering::Relaxed);
            self.unreported = 0;
        }
    }

    fn finish(&mut self) {
        self.end = Instant::now();
        if let Some(c) = self.current.take() {
            self.intervals.push(c);
        }
        self.progress.fetch_add(self.unreported, Ordering::Relaxed);
    }
}

/// Runs the benchmarks named by the flags against one engine.
pub struct Runner {
    flags: Flags,
    dir: PathBuf,
    temp: bool,
    engine: Option<Arc<dyn Engine>>,
    /// When the engine was last opened: slow ops are listed by their time since then, the
    /// base of strata's own wait log.
    opened: Instant,
    sizes: ValueSizes,
    /// Highest key id inserted by YCSB/HashKV loads and inserts.
    newest: Arc<AtomicU64>,
    /// One bit per key id of the fill/overwrite/delete benchmarks: set while the key holds
    /// a value, for the live bytes space amplification is measured against.
    live: Vec<AtomicU64>,
    ycsb_loaded: bool,
    pub results: Vec<BenchResult>,
    /// The host's steal time, sampled (`--steal_sample_ms`; Linux).
    steal: Option<Arc<crate::steal::StealSampler>>,
}

fn dir_size(p: &Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(p) else {
        return 0;
    };
    rd.filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// The bytes of the files under `p`, and of them those in files with more than one link
/// (a checkpoint's files linked to the database's).
fn linked_size(p: &Path) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    let Ok(rd) = std::fs::read_dir(p) else {
        return (0, 0);
    };
    rd.filter_map(Result::ok)
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => linked_size(&e.path()),
            Ok(m) => (m.len(), if m.nlink() > 1 { m.len() } else { 0 }),
            Err(_) => (0, 0),
        })
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// One counter of this process's `/proc/self/io` (Linux), if readable:
/// - `wchar`: bytes passed to write syscalls;
/// - `read_bytes`: bytes read from storage (reads the page cache served are not counted;
///   page faults on memory-mapped files and the kernel's read-ahead around them are);
/// - `write_bytes`: bytes caused to be written to storage (counted when a page is dirtied,
///   so writes through memory maps count too; `cancelled_write_bytes` not subtracted).
fn proc_io(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/io").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(": "))
        .and_then(|v| v.trim().parse().ok())
}

/// The tree's shape at the end of a run: tables, level compactions (merges and moved tables,
/// by input level, as LevelDB-family logs count them), bytes compactions read and wrote,
/// and the process's `write_bytes`
/// against the user bytes of every benchmark in the run.
pub fn shape_line(m: &crate::engine::Metrics, user_bytes: u64) -> String {
    let levels = |v: &[u64]| -> String {
        let parts: Vec<String> = v
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(l, c)| format!("L{l}:{c}"))
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(" ")
        }
    };
    let merges: u64 = m.merges_by_input_level.iter().sum();
    let moved: u64 = m.moved_by_input_level.iter().sum();
    // Move operations: as the engine counts them, or one per moved table where it does not.
    let move_levels = if m.moves_by_input_level.is_empty() {
        &m.moved_by_input_level
    } else {
        &m.moves_by_input_level
    };
    let moves: u64 = move_levels.iter().sum();
    // The level compactions the OHDB paper's C counts: merges + move operations.
    let mut s = format!(
        "shape        : tables {} | level compactions {} (merges {}: {}; move operations {}: {}; moved tables {}: {})",
        m.tables.map_or("?".into(), |t| t.to_string()),
        merges + moves,
        merges,
        levels(&m.merges_by_input_level),
        moves,
        levels(move_levels),
        moved,
        levels(&m.moved_by_input_level),
    );
    if let Some((r, w)) = m.compaction_io {
        s.push_str(&format!(
            " | compaction read {:.1} MiB write {:.1} MiB",
            r as f64 / 1048576.0,
            w as f64 / 1048576.0
        ));
    }
    if let Some(r) = &m.table_reads {
        s.push_str(&format!(" | tables read {r}"));
    }
    if let Some(w) = proc_io("write_bytes") {
        s.push_str(&format!(
            " | process write_bytes {:.1} MiB ({:.2} x user)",
            w as f64 / 1048576.0,
            w as f64 / user_bytes.max(1) as f64
        ));
    }
    s
}

impl Runner {
    /// A runner for `flags` (the database directory is created on first use).
    ///
    /// # Errors
    /// Bad value-size flags.
    pub fn new(flags: Flags) -> Result<Runner, String> {
        let (dir, temp) = match &flags.db {
            Some(d) => (PathBuf::from(d), false),
            None => (
                std::env::temp_dir().join(format!(
                    "strata-bench-{}-{}",
                    flags.engine,
                    std::process::id()
                )),
                true,
            ),
        };
        let sizes = ValueSizes::parse(&flags.value_size_dist, flags.value_size)?;
        let steal = crate::steal::StealSampler::start(Duration::from_millis(flags.steal_sample_ms));
        Ok(Runner {
            flags,
            dir,
            temp,
            engine: None,
            opened: Instant::now(),
            sizes,
            newest: Arc::new(AtomicU64::new(0)),
            live: Vec::new(),
            ycsb_loaded: false,
            results: Vec::new(),
            steal,
        })
    }

    /// The database directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn destroy(&mut self) -> Result<(), String> {
        self.engine = None;
        for d in [
            Some(self.dir.clone()),
            self.flags.wal_dir.clone().map(PathBuf::from),
            self.flags.level_dir.clone().map(PathBuf::from),
            self.flags.value_dir.clone().map(PathBuf::from),
            self.flags.pmem_dir.clone().map(PathBuf::from),
        ]
        .into_iter()
        .flatten()
        {
            if d.exists() {
                std::fs::remove_dir_all(&d)
                    .map_err(|e| format!("removing {}: {e}", d.display()))?;
            }
        }
        Ok(())
    }

    fn open(&mut self, fresh: bool) -> Result<Arc<dyn Engine>, String> {
        if fresh && !self.flags.use_existing_db {
            self.destroy()?;
            // A fresh database: live keys are counted from here (unknown for an existing one).
            let words = usize::try_from(self.flags.num.div_ceil(64)).unwrap_or(0);
            self.live = (0..words).map(|_| AtomicU64::new(0)).collect();
        }
        if self.engine.is_none() {
            std::fs::create_dir_all(&self.dir)
                .map_err(|e| format!("creating {}: {e}", self.dir.display()))?;
            self.opened = Instant::now();
            self.engine = Some(engine::open(&self.flags, &self.dir)?);
        }
        self.engine
            .clone()
            .ok_or_else(|| "engine not open".to_string())
    }

    fn space(&self) -> u64 {
        let mut total = dir_size(&self.dir);
        for d in [
            &self.flags.wal_dir,
            &self.flags.level_dir,
            &self.flags.value_dir,
            &self.flags.pmem_dir,
        ]
        .into_iter()
        .flatten()
        {
            if !Path::new(d).starts_with(&self.dir) {
                total += dir_size(Path::new(d));
            }
        }
        total
    }

    /// Runs every benchmark, printing each result as it completes.
    ///
    /// # Errors
    /// The first engine error.
    pub fn run_all(&mut self) -> Result<(), String> {
        let names = self.flags.benchmarks.clone();
        for name in names {
            if name == "stats" {
                let e = self.open(false)?;
                let text = e.stats_text();
                // strata's report carries its own header; the peers' do not.
                if text.starts_with("** ") {
                    println!("\n{text}");
                } else {
                    println!("\n** {} stats **\n{text}", e.name());
                }
                continue;
            }
            let results = self.run_one(&name)?;
            for r in results {
                println!("{}", r.line());
                println!("{}", r.engine_line());
                if let Some(slow) = r.slow_ops_line() {
                    println!("{slow}");
                }
                if let Some(steal) = r.host_steal_line() {
                    println!("{steal}");
                }
                if self.flags.histogram {
                    print!("{}", r.histogram_text());
                }
                self.results.push(r);
            }
        }
        if let Some(e) = self.engine.clone() {
            let user: u64 = self.results.iter().map(|r| r.user_bytes).sum();
            println!("{}", shape_line(&e.metrics(), user));
        }
        Ok(())
    }

    fn run_one(&mut self, name: &str) -> Result<Vec<BenchResult>, String> {
        match name {
            "fillseq" | "fillrandom" => {
                let e = self.open(true)?;
                let dist = if name == "fillseq" {
                    "sequential"
                } else {
                    self.flags.key_dist.as_str()
                }
                .to_string();
                Ok(vec![self.writes(name, &e, &dist, self.flags.num, false)?])
            }
            "overwrite" => {
                let e = self.open(false)?;
                let dist = self.flags.key_dist.clone();
                Ok(vec![self.writes(name, &e, &dist, self.flags.num, false)?])
            }
            "deleterandom" => {
                let e = self.open(false)?;
                let dist = self.flags.key_dist.clone();
                Ok(vec![self.writes(name, &e, &dist, self.flags.num, true)?])
            }
            "updaterandom" | "readrandom" | "seekrandom" => {
                let e = self.open(false)?;
                Ok(vec![self.reads(name, &e)?])
            }
            "readseq" | "readreverse" => {
                let e = self.open(false)?;
                Ok(vec![self.scan_all(name, &e)?])
            }
            "readwhilewriting" => {
                let e = self.open(false)?;
                self.read_while_writing(&e)
            }
            "waitforcompaction" => {
                let e = self.open(false)?;
                Ok(vec![self.measure(name, &e, 1, 1, |_, ts| {
                    let t0 = Instant::now();
                    e.wait_idle()?;
                    ts.record("wait", t0, 1);
                    Ok(())
                })?])
            }
            "hashkv_phases" => self.hashkv_phases(),
            "expiryfill" => self.expiry_fill(),
            "deleterange" => self.delete_range(),
            "compact" => {
                // db_bench's: the whole key range, once; then the space it left.
                let e = self.open(false)?;
                let r = self.measure(name, &e, 1, 1, |_, ts| {
                    let t0 = Instant::now();
                    e.compact_all()?;
                    ts.record("compact", t0, 1);
                    Ok(())
                })?;
                println!("compact space (MB): {:.1}", self.space() as f64 / 1e6);
                Ok(vec![r])
            }
            "checkpoint" | "backup" | "backupagain" | "restore" => self.copy(name),
            n if n.starts_with("ycsb_") => self.ycsb(n),
            n => Err(format!("benchmark {n} is not implemented")),
        }
    }

    /// Runs `body` on `threads` threads and folds their measurements into a result.
    fn measure<F>(
        &self,
        name: &str,
        e: &Arc<dyn Engine>,
        threads: usize,
        total_ops: u64,
        body: F,
    ) -> Result<BenchResult, String>
    where
        F: Fn(usize, &mut ThreadStats) -> Result<(), String> + Sync,
    {
        let before_metrics = e.metrics();
        let before_written = proc_io("wchar");
        let before_read = proc_io("read_bytes");
        let progress = Progress::start(name, total_ops, &self.flags.progress);
        let origin = Instant::now();
        let interval = self.flags.report_interval_seconds;
        let outcomes: Vec<Result<ThreadStats, String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|t| {
                    let body = &body;
                    let done = progress.done.clone();
                    s.spawn(move || {
                        let mut ts = ThreadStats::new(interval, origin, done);
                        let r = body(t, &mut ts);
                        ts.finish();
                        r.map(|()| ts)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err("benchmark thread panicked".into()))
                })
                .collect()
        });
        progress.finish();
        let stats: Vec<ThreadStats> = outcomes.into_iter().collect::<Result<_, _>>()?;
        let mut r = self.fold(name, stats, origin, e, &before_metrics, before_written);
        r.disk_read_bytes = before_read
            .zip(proc_io("read_bytes"))
            .map(|(b, a)| a.saturating_sub(b));
        r.table_file_reads = before_metrics
            .table_file_reads
            .zip(e.metrics().table_file_reads)
            .map(|(b, a)| std::array::from_fn(|i| a[i].saturating_sub(b[i])));
        r.space_bytes = self.space();
        r.live_bytes = self.live_bytes();
        Ok(r)
    }

    fn fold(
        &self,
        name: &str,
        stats: Vec<ThreadStats>,
        origin: Instant,
        e: &Arc<dyn Engine>,
        before: &Metrics,
        before_written: Option<u64>,
    ) -> BenchResult {
        let mut r = BenchResult {
            name: name.to_string(),
            ..Default::default()
        };
        let mut found = 0;
        let mut end = origin;
        let mut intervals: BTreeMap<u64, (u64, Histogram<u64>)> = BTreeMap::new();
        for ts in stats {
            r.ops += ts.ops;
            r.bytes += ts.bytes;
            r.user_bytes += ts.user_bytes;
            found += ts.found;
            // Threads that did none of the measured ops (the writer of readwhilewriting)
            // do not count towards micros/op.
            if ts.ops > 0 {
                r.thread_seconds += ts.end.duration_since(ts.start).as_secs_f64();
            }
            end = end.max(ts.end);
            for (k, h) in ts.hists {
                let _ = r.hists.entry(k).or_insert_with(new_hist).add(&h);
            }
            let steal = self.steal.as_deref();
            if let Some(s) = steal {
                s.wait_past(ts.end, Duration::from_millis(200));
            }
            r.slow_ops.extend(ts.slow.iter().map(|&(at, took)| SlowOp {
                ended_s: at.saturating_duration_since(self.opened).as_secs_f64(),
                took_ms: took.as_secs_f64() * 1e3,
                steal_ms: steal.and_then(|s| s.stolen_ms(at - took, at)),
            }));
            for (idx, n, h) in ts.intervals {
                let slot = intervals.entry(idx).or_insert_with(|| (0, new_hist()));
                slot.0 += n;
                let _ = slot.1.add(&h);
            }
        }
        r.elapsed = end.duration_since(origin).as_secs_f64();
        if let Some(s) = &self.steal {
            s.wait_past(end, Duration::from_millis(200));
            if let Some(total) = s.stolen_ms(origin, end) {
                let (worst, at) = s.worst_window_ms(origin, end, Duration::from_millis(100));
                let at = at.saturating_duration_since(self.opened).as_secs_f64();
                r.host_steal = Some((total, worst, at));
            }
        }
        let iv = self.flags.report_interval_seconds;
        let elapsed = r.elapsed;
        r.timeline = intervals
            .into_iter()
            .map(|(idx, (n, h))| {
                // The last interval is usually cut short by the end of the benchmark.
                let t = ((idx + 1) as f64 * iv).min(elapsed.max(idx as f64 * iv + 1e-3));
                Interval {
                    t,
                    ops: n,
                    ops_per_sec: n as f64 / (t - idx as f64 * iv),
                    p99_us: h.value_at_quantile(0.99) as f64 / 1000.0,
                    p999_us: h.value_at_quantile(0.999) as f64 / 1000.0,
                    max_us: h.max() as f64 / 1000.0,
                }
            })
            .collect();
        if [
            "readrandom",
            "seekrandom",
            "updaterandom",
            "readwhilewriting",
        ]
        .contains(&name)
        {
            r.message = format!("({found} of {} found)", r.ops);
        }
        let after = e.metrics();
        r.table_bytes = after.table_bytes.saturating_sub(before.table_bytes);
        r.device_bytes = match (before_written, proc_io("wchar")) {
            (Some(b), Some(a)) => {
                a.saturating_sub(b) + after.mapped_bytes.saturating_sub(before.mapped_bytes)
            }
            _ => r.table_bytes + after.wal_bytes.saturating_sub(before.wal_bytes),
        };
        r.stalls = after.stalls.saturating_sub(before.stalls);
        r.stall_micros = after.stall_micros.saturating_sub(before.stall_micros);
        r.gc_bytes = after.gc_bytes.saturating_sub(before.gc_bytes);
        let diff = |a: &[u64], b: &[u64]| -> Vec<u64> {
            a.iter()
                .enumerate()
                .map(|(i, x)| x.saturating_sub(b.get(i).copied().unwrap_or(0)))
                .collect()
        };
        r.compactions_per_level = diff(&after.compactions_per_level, &before.compactions_per_level);
        r.compaction_bytes_per_level = diff(
            &after.compaction_bytes_per_level,
            &before.compaction_bytes_per_level,
        );
        r
    }

    fn seed(&self, t: usize) -> u64 {
        let base = if self.flags.seed == 0 {
            0x5eed_2026
        } else {
            self.flags.seed
        };
        base.wrapping_add((t as u64 + 1).wrapping_mul(0x9e37_79b9))
    }

    /// Writes `key` with a value of the configured size, counts its bytes, and records the
    /// latency as `kind`: from `t0` if given (the op began earlier, e.g. with a read), else
    /// from just before the write.
    #[allow(
        clippy::too_many_arguments,
        reason = "the per-thread state of one benchmark op"
    )]
    fn put_one(
        &self,
        e: &Arc<dyn Engine>,
        ts: &mut ThreadStats,
        key: &[u8],
        rng: &mut Rng,
        values: &mut ValueSource,
        kind: &'static str,
        t0: Option<Instant>,
    ) -> Result<(), String> {
        let len = self.sizes.for_key(key, rng);
        let v = values.next(len);
        let t0 = t0.unwrap_or_else(Instant::now);
        e.write(&[(key, Some(v))])?;
        let n = (key.len() + v.len()) as u64;
        ts.bytes += n;
        ts.user_bytes += n;
        ts.record(kind, t0, 1);
        Ok(())
    }

    /// fillseq, fillrandom, overwrite, deleterandom: `ops` writes per thread in batches.
    fn writes(
        &self,
        name: &str,
        e: &Arc<dyn Engine>,
        dist: &str,
        ops: u64,
        delete: bool,
    ) -> Result<BenchResult, String> {
        let f = &self.flags;
        let threads = f.threads;
        self.measure(name, e, threads, ops * threads as u64, |t, ts| {
            let mut rng = Rng::new(self.seed(t));
            let mut keys = KeyDist::new(dist, f.num, f.zipf_theta);
            let max_value = match &self.sizes {
                ValueSizes::Fixed(n) => *n,
                ValueSizes::Uniform(_, b) => *b,
                ValueSizes::Zipf(min, _) => min + 1_000_000,
                ValueSizes::Mix { small, large, .. } => *small.max(large),
            };
            let mut values = ValueSource::new(self.seed(t), max_value.min(64 << 20));
            let mut kbufs: Vec<Vec<u8>> = vec![Vec::new(); f.batch_size];
            let mut ids: Vec<u64> = Vec::with_capacity(f.batch_size);
            // Reused from batch to batch, and the values borrowed from their source: the
            // harness's own cost per put stays small beside an engine's (a put of 50 bytes
            // costs an engine well under a microsecond).
            let mut vals: Vec<std::ops::Range<usize>> = Vec::with_capacity(f.batch_size);
            let mut done = 0;
            while done < ops {
                let n = (ops - done).min(f.batch_size as u64) as usize;
                ids.clear();
                vals.clear();
                for kb in kbufs.iter_mut().take(n) {
                    let id = keys.next(&mut rng, 0);
                    ids.push(id);
                    make_key(id, f.key_size, kb);
                    let len = if delete {
                        0
                    } else {
                        self.sizes.for_key(kb, &mut rng)
                    };
                    vals.push(values.next_range(len));
                }
                let data = values.data();
                let entry = |k, v| batch_entry(k, data, v, delete);
                let (one, many);
                let batch: &[(&[u8], Option<&[u8]>)] = if n == 1 {
                    one = [entry(&kbufs[0], &vals[0])];
                    &one
                } else {
                    many = kbufs
                        .iter()
                        .take(n)
                        .zip(&vals)
                        .map(|(k, v)| entry(k, v))
                        .collect::<Vec<_>>();
                    &many
                };
                let t0 = Instant::now();
                e.write(batch)?;
                self.mark_live(&ids, !delete);
                let moved: usize = batch
                    .iter()
                    .map(|(k, v)| k.len() + v.map_or(0, <[u8]>::len))
                    .sum();
                ts.bytes += moved as u64;
                ts.user_bytes += moved as u64;
                ts.record(if delete { "delete" } else { "write" }, t0, n as u64);
                done += n as u64;
            }
            Ok(())
        })
    }

    /// Records that the keys `ids` now hold a value (`live`) or not.
    fn mark_live(&self, ids: &[u64], live: bool) {
        for &id in ids {
            let Some(word) = usize::try_from(id / 64).ok().and_then(|w| self.live.get(w)) else {
                continue;
            };
            let bit = 1u64 << (id % 64);
            if live {
                word.fetch_or(bit, Ordering::Relaxed);
            } else {
                word.fetch_and(!bit, Ordering::Relaxed);
            }
        }
    }

    /// Bytes of the keys and values the fill/overwrite/delete benchmarks left live, if
    /// known: distinct keys x (key size + the mean value size; exact for fixed sizes).
    fn live_bytes(&self) -> Option<u64> {
        let keys: u64 = self
            .live
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum();
        let value = match &self.sizes {
            ValueSizes::Fixed(n) => *n as u64,
            ValueSizes::Uniform(a, b) => (*a as u64 + *b as u64) / 2,
            ValueSizes::Zipf(..) => return None,
            // A key's size is fixed by its hash: the mean is near for many keys.
            ValueSizes::Mix { .. } => self.sizes.mean() as u64,
        };
        (keys > 0).then(|| keys * (self.flags.key_size as u64 + value))
    }

    /// readrandom, seekrandom, updaterandom.
    fn reads(&self, name: &str, e: &Arc<dyn Engine>) -> Result<BenchResult, String> {
        let f = &self.flags;
        let ops = f.reads();
        self.measure(name, e, f.threads, ops * f.threads as u64, |t, ts| {
            let mut rng = Rng::new(self.seed(t) ^ 0xabcd);
            let mut keys = KeyDist::new(&f.key_dist, f.num, f.zipf_theta);
            let mut values = ValueSource::new(self.seed(t), f.value_size.max(1));
            let mut k = Vec::new();
            for _ in 0..ops {
                make_key(keys.next(&mut rng, 0), f.key_size, &mut k);
                let t0 = Instant::now();
                match name {
                    "seekrandom" => {
                        let (n, b) = e.scan(&k, f.seek_nexts + 1)?;
                        ts.found += u64::from(n > 0);
                        ts.bytes += b as u64;
                        ts.record("seek", t0, 1);
                    }
                    "updaterandom" => {
                        let old = e.get(&k)?;
                        ts.found += u64::from(old.is_some());
                        self.put_one(e, ts, &k, &mut rng, &mut values, "update", Some(t0))?;
                    }
                    _ => {
                        let v = e.get(&k)?;
                        if let Some(v) = v {
                            ts.found += 1;
                            ts.bytes += (k.len() + v.len()) as u64;
                        }
                        ts.record("read", t0, 1);
                    }
                }
            }
            Ok(())
        })
    }

    fn scan_all(&self, name: &str, e: &Arc<dyn Engine>) -> Result<BenchResult, String> {
        let f = &self.flags;
        let limit = f.reads();
        self.measure(name, e, f.threads, limit * f.threads as u64, |_, ts| {
            let t0 = Instant::now();
            let (n, b) = e.scan_all(name == "readreverse", limit)?;
            ts.bytes += b;
            ts.record("scan", t0, n);
            Ok(())
        })
    }

    /// `threads` readers, plus one writer until the readers finish (db_bench's semantics);
    /// reports the readers, then the writer as `readwhilewriting.writer`.
    fn read_while_writing(&self, e: &Arc<dyn Engine>) -> Result<Vec<BenchResult>, String> {
        let f = &self.flags;
        let readers = f.threads;
        let ops = f.reads();
        let stop = AtomicBool::new(false);
        let running = AtomicU64::new(readers as u64);
        let writer_stats: Mutex<Option<BenchResult>> = Mutex::new(None);
        let before = e.metrics();
        let before_written = proc_io("wchar");
        let origin = Instant::now();
        let mut rr = self.measure(
            "readwhilewriting",
            e,
            readers + 1,
            ops * readers as u64,
            |t, ts| {
                let mut rng = Rng::new(self.seed(t) ^ 0x77);
                let mut keys = KeyDist::new(&f.key_dist, f.num, f.zipf_theta);
                let mut k = Vec::new();
                if t == readers {
                    // The writer: not counted in the readers' ops.
                    let mut values = ValueSource::new(self.seed(t), f.value_size.max(1));
                    let mut w = ThreadStats::new(
                        f.report_interval_seconds,
                        origin,
                        Arc::new(AtomicU64::new(0)),
                    );
                    let limit = f.benchmark_write_rate_limit as f64;
                    // At least one write, even if the readers finish first (db_bench counts >= 1 op).
                    loop {
                        make_key(keys.next(&mut rng, 0), f.key_size, &mut k);
                        self.put_one(e, &mut w, &k, &mut rng, &mut values, "write", None)?;
                        if limit > 0.0 {
                            let due = w.bytes as f64 / limit;
                            let now = w.start.elapsed().as_secs_f64();
                            if due > now {
                                std::thread::sleep(std::time::Duration::from_secs_f64(due - now));
                            }
                        }
                        if stop.load(Ordering::Acquire) {
                            break;
                        }
                    }
                    w.finish();
                    let r = self.fold(
                        "readwhilewriting.writer",
                        vec![w],
                        origin,
                        e,
                        &before,
                        before_written,
                    );
                    *writer_stats
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(r);
                    return Ok(());
                }
                let result = (|| {
                    for _ in 0..ops {
                        make_key(keys.next(&mut rng, 0), f.key_size, &mut k);
                        let t0 = Instant::now();
                        if let Some(v) = e.get(&k)? {
                            ts.found += 1;
                            ts.bytes += (k.len() + v.len()) as u64;
                        }
                        ts.record("read", t0, 1);
                    }
                    Ok(())
                })();
                if running.fetch_sub(1, Ordering::AcqRel) == 1 {
                    stop.store(true, Ordering::Release);
                }
                result
            },
        )?;
        // The readers' wall time ends when the last reader ends, not the writer.
        let mut out = Vec::new();
        let writer = writer_stats
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(mut w) = writer {
            w.space_bytes = rr.space_bytes;
            // Amplification belongs to the writer's bytes.
            rr.user_bytes = w.user_bytes;
            rr.device_bytes = w.device_bytes;
            out.push(rr);
            out.push(w);
        } else {
            out.push(rr);
        }
        Ok(out)
    }

    /// YCSB workloads A-F over hashed keys (YCSB's default insert order), with a load phase
    /// the first time.
    fn ycsb(&mut self, name: &str) -> Result<Vec<BenchResult>, String> {
        let mut out = Vec::new();
        let records = self.flags.num;
        let ops = self.flags.ycsb_ops.unwrap_or(records);
        if !self.ycsb_loaded {
            let e = self.open(true)?;
            out.push(self.load("ycsb_load", &e, records)?);
            self.ycsb_loaded = true;
        }
        let e = self.open(false)?;
        let f = &self.flags;
        let ops_per_thread = ops / f.threads as u64;
        // (read, update, insert, scan, read-modify-write) shares in percent.
        let (mix, latest): ([u32; 5], bool) = match name {
            "ycsb_a" => ([50, 50, 0, 0, 0], false),
            "ycsb_b" => ([95, 5, 0, 0, 0], false),
            "ycsb_c" => ([100, 0, 0, 0, 0], false),
            "ycsb_d" => ([95, 0, 5, 0, 0], true),
            "ycsb_e" => ([0, 0, 5, 95, 0], false),
            "ycsb_f" => ([50, 0, 0, 0, 50], false),
            n => return Err(format!("unknown YCSB workload {n}")),
        };
        let zipf = Zipf::new(records, f.zipf_theta);
        let newest = self.newest.clone();
        let r = self.measure(
            name,
            &e,
            f.threads,
            ops_per_thread * f.threads as u64,
            |t, ts| {
                let mut rng = Rng::new(self.seed(t) ^ 0x9c5b);
                let mut values = ValueSource::new(self.seed(t), f.value_size.max(1));
                let mut k = Vec::new();
                let mut pace = Pace::new(f.ycsb_rate / f.threads as f64);
                for _ in 0..ops_per_thread {
                    let t0 = pace.next();
                    let dice = rng.below(100) as u32;
                    let newest_now = newest.load(Ordering::Relaxed);
                    let id = if latest {
                        newest_now.saturating_sub(zipf.sample(&mut rng) % (newest_now + 1))
                    } else {
                        fnv64(zipf.sample(&mut rng)) % records
                    };
                    make_key(fnv64(id), f.key_size, &mut k);
                    let mut acc = 0;
                    let mut op = 0;
                    for (i, share) in mix.iter().enumerate() {
                        acc += share;
                        if dice < acc {
                            op = i;
                            break;
                        }
                    }
                    match op {
                        0 => {
                            if let Some(v) = e.get(&k)? {
                                ts.found += 1;
                                ts.bytes += v.len() as u64;
                            }
                            ts.record("read", t0, 1);
                        }
                        1 | 2 => {
                            if op == 2 {
                                let nid = newest.fetch_add(1, Ordering::Relaxed) + 1;
                                make_key(fnv64(nid), f.key_size, &mut k);
                            }
                            let kind = if op == 2 { "insert" } else { "update" };
                            self.put_one(&e, ts, &k, &mut rng, &mut values, kind, Some(t0))?;
                        }
                        3 => {
                            let len = 1 + rng.below(100) as usize;
                            let (_, b) = e.scan(&k, len)?;
                            ts.bytes += b as u64;
                            ts.record("scan", t0, 1);
                        }
                        _ => {
                            let old = e.get(&k)?;
                            ts.found += u64::from(old.is_some());
                            self.put_one(&e, ts, &k, &mut rng, &mut values, "rmw", Some(t0))?;
                        }
                    }
                }
                Ok(())
            },
        )?;
        out.push(r);
        Ok(out)
    }

    /// Inserts `records` keys (ids 0..records, hashed) on `threads` threads.
    fn load(&self, name: &str, e: &Arc<dyn Engine>, records: u64) -> Result<BenchResult, String> {
        let f = &self.flags;
        let threads = f.threads as u64;
        let r = self.measure(name, e, f.threads, records, |t, ts| {
            let mut rng = Rng::new(self.seed(t) ^ 0x10ad);
            let mut values = ValueSource::new(self.seed(t), f.value_size.max(1));
            let mut k = Vec::new();
            let mut id = t as u64;
            while id < records {
                make_key(fnv64(id), f.key_size, &mut k);
                self.put_one(e, ts, &k, &mut rng, &mut values, "insert", None)?;
                id += threads;
            }
            Ok(())
        })?;
        self.newest
            .store(records.saturating_sub(1), Ordering::Relaxed);
        Ok(r)
    }

    /// HashKV's Experiment 1: load N keys, then `phases` rounds of N updates with Zipf 0.99.
    /// expiryfill: `num` unique keys in a random order, every other one gone
    /// `--ttl_seconds` after its write: written with that time to live (`--reclaim=ttl`),
    /// or deleted then (`--reclaim=delete`, the deletes issued in the same stream of
    /// writes). The space used is sampled every `--report_interval_seconds` (default 1)
    /// while writing and until the last of them is gone, then once more after a full
    /// compaction; a line `expiryfill space` prints the samples.
    fn expiry_fill(&mut self) -> Result<Vec<BenchResult>, String> {
        let e = self.open(true)?;
        let f = &self.flags;
        let ttl = Duration::from_secs_f64(f.ttl_seconds);
        let by_ttl = f.reclaim == "ttl";
        let every = Duration::from_secs_f64(if f.report_interval_seconds > 0.0 {
            f.report_interval_seconds
        } else {
            1.0
        });
        let origin = Instant::now();
        let samples: Mutex<Vec<(f64, u64)>> = Mutex::new(Vec::new());
        let sample = || {
            let mut s = samples
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            s.push((origin.elapsed().as_secs_f64(), self.space()));
        };
        let max_value = match &self.sizes {
            ValueSizes::Fixed(n) => *n,
            ValueSizes::Uniform(_, b) => *b,
            ValueSizes::Zipf(min, _) => min + 1_000_000,
            ValueSizes::Mix { small, large, .. } => *small.max(large),
        };
        let n = f.num;
        type Due = std::collections::VecDeque<(Instant, Vec<u8>)>;
        // The deletes due by `until` (waiting for each one's time).
        let delete_due = |due: &mut Due, ts: &mut ThreadStats, until: Instant| {
            while due.front().is_some_and(|(at, _)| *at <= until) {
                let (at, k) = due.pop_front().expect("a front");
                if let Some(wait) = at.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                let t0 = Instant::now();
                e.write(&[(&k, None)])?;
                ts.bytes += k.len() as u64;
                ts.user_bytes += k.len() as u64;
                ts.record("delete", t0, 1);
            }
            Ok::<(), String>(())
        };
        let pending: Mutex<Due> = Mutex::new(Due::new());
        let next_sample = Mutex::new(Instant::now());
        let fill = self.measure("expiryfill", &e, 1, n, |_, ts| {
            let mut rng = Rng::new(self.seed(0));
            let mut values = ValueSource::new(self.seed(0), max_value.min(64 << 20));
            let mut kb = Vec::new();
            let mut due = Due::new();
            let mut next = Instant::now();
            for i in 0..n {
                // Unique keys in a random order (an odd multiplier is a bijection).
                make_key(i.wrapping_mul(0x9e37_79b9_7f4a_7c15), f.key_size, &mut kb);
                let len = self.sizes.for_key(&kb, &mut rng);
                let r = values.next_range(len);
                let v = &values.data()[r];
                let t0 = Instant::now();
                if i % 2 == 0 && by_ttl {
                    e.put_with_ttl(&kb, v, ttl)?;
                } else {
                    e.write(&[(&kb, Some(v))])?;
                }
                ts.bytes += (kb.len() + v.len()) as u64;
                ts.user_bytes += (kb.len() + v.len()) as u64;
                ts.record("write", t0, 1);
                if i % 2 == 0 && !by_ttl {
                    due.push_back((t0 + ttl, kb.clone()));
                }
                delete_due(&mut due, ts, Instant::now())?;
                if Instant::now() >= next {
                    sample();
                    next += every;
                }
            }
            *pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = due;
            *next_sample
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = next;
            Ok(())
        })?;
        // The deletes still to come, at their times (not in the fill's rate), then until
        // the last one written is gone, and one interval more.
        let mut due = pending
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = next_sample
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let tail_deletes = due.len();
        let mut ts = ThreadStats::new(0.0, origin, Arc::new(AtomicU64::new(0)));
        while let Some(&(at, _)) = due.front() {
            delete_due(&mut due, &mut ts, at.min(next))?;
            if Instant::now() >= next {
                sample();
                next += every;
            }
        }
        let end = origin
            + Duration::from_secs_f64(fill.elapsed)
            + ttl
            + every
            + Duration::from_secs_f64(f.rest_seconds);
        while Instant::now() < end {
            std::thread::sleep(every.min(end.saturating_duration_since(Instant::now())));
            sample();
        }
        let t0 = Instant::now();
        e.compact_all()?;
        let compacted = t0.elapsed();
        sample();
        let s = samples
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let line: Vec<String> = s
            .iter()
            .map(|(t, b)| format!("{t:.1}s {:.1}", *b as f64 / 1e6))
            .collect();
        println!(
            "expiryfill space (MB; reclaim by {}, {} s, {tail_deletes} deletes after the fill; \
             the last sample after a full compaction of {:.1} s): {}",
            f.reclaim,
            f.ttl_seconds,
            compacted.as_secs_f64(),
            line.join(", ")
        );
        Ok(vec![fill])
    }

    /// checkpoint, backup, backupagain, restore: one call of the engine's, timed, into a
    /// directory beside the database (`DB.copies`, not counted as the database's space),
    /// and a line with the bytes it wrote.
    fn copy(&mut self, name: &str) -> Result<Vec<BenchResult>, String> {
        let e = self.open(false)?;
        let mut copies = self.dir.clone().into_os_string();
        copies.push(".copies");
        let copies = PathBuf::from(copies);
        std::fs::create_dir_all(&copies).map_err(|e| format!("{}: {e}", copies.display()))?;
        let backups = copies.join("backups");
        let target = copies.join(if name == "restore" {
            "restored"
        } else {
            "checkpoint"
        });
        let _ = std::fs::remove_dir_all(&target);
        if name == "backupagain" {
            // A tenth of the keys overwritten at random (not timed): what a second backup
            // then copies is what changed since the first.
            let dist = self.flags.key_dist.clone();
            let _ = self.writes("overwrite", &e, &dist, self.flags.num / 10, false)?;
        }
        let before = dir_size(&backups);
        let r = self.measure(name, &e, 1, 1, |_, ts| {
            let t0 = Instant::now();
            match name {
                "checkpoint" => e.checkpoint(&target)?,
                "restore" => e.restore_latest(&backups, &target)?,
                _ => e.backup(&backups)?,
            }
            ts.record("copy", t0, 1);
            Ok(())
        })?;
        let mb = |b: u64| b as f64 / 1e6;
        match name {
            "checkpoint" => {
                let (total, linked) = linked_size(&target);
                println!(
                    "checkpoint copy (MB): {:.1}, of it linked to the database's files {:.1}; \
                     the database {:.1}",
                    mb(total),
                    mb(linked),
                    mb(self.space())
                );
            }
            "restore" => println!(
                "restore copy (MB): {:.1}; the database {:.1}",
                mb(dir_size(&target)),
                mb(self.space())
            ),
            _ => println!(
                "{name} copy (MB): {:.1} written into the backup directory, now {:.1}; the \
                 database {:.1}",
                mb(dir_size(&backups).saturating_sub(before)),
                mb(dir_size(&backups)),
                mb(self.space())
            ),
        }
        if name != "backup" && name != "backupagain" {
            std::fs::remove_dir_all(&target).map_err(|e| format!("{}: {e}", target.display()))?;
        }
        Ok(vec![r])
    }

    /// deleterange: over the `num` keys `fillseq` wrote (in key order), every other run of
    /// `--range_keys` keys deleted: one range deletion per run (`--reclaim=range`, the
    /// default) or one delete per key (`--reclaim=delete`). Its ops are the keys deleted.
    /// A line `deleterange space` prints the space before and after; benchmarks after it
    /// read what is left (`compact` then compacts it all).
    fn delete_range(&mut self) -> Result<Vec<BenchResult>, String> {
        let e = self.open(false)?;
        let f = &self.flags;
        let by_range = f.reclaim != "delete";
        let k = f.range_keys;
        let runs = f.num.div_ceil(k);
        let deleted = (0..runs)
            .step_by(2)
            .map(|r| (k * (r + 1)).min(f.num) - k * r)
            .sum::<u64>();
        let before = self.space();
        let r = self.measure("deleterange", &e, 1, deleted, |_, ts| {
            let (mut lo, mut hi) = (Vec::new(), Vec::new());
            for run in (0..runs).step_by(2) {
                let (a, b) = (k * run, (k * (run + 1)).min(f.num));
                if by_range {
                    make_key(a, f.key_size, &mut lo);
                    make_key(b, f.key_size, &mut hi);
                    let t0 = Instant::now();
                    e.delete_range(&lo, &hi)?;
                    ts.bytes += (lo.len() + hi.len()) as u64;
                    ts.user_bytes += (lo.len() + hi.len()) as u64;
                    ts.record("delete", t0, b - a);
                } else {
                    for i in a..b {
                        make_key(i, f.key_size, &mut lo);
                        let t0 = Instant::now();
                        e.write(&[(&lo, None)])?;
                        ts.bytes += lo.len() as u64;
                        ts.user_bytes += lo.len() as u64;
                        ts.record("delete", t0, 1);
                    }
                }
            }
            Ok(())
        })?;
        println!(
            "deleterange space (MB; {deleted} of {} keys by {}, runs of {k}): before {:.1}, \
             after {:.1}",
            f.num,
            if by_range {
                "range deletions"
            } else {
                "deletes"
            },
            before as f64 / 1e6,
            self.space() as f64 / 1e6,
        );
        Ok(vec![r])
    }

    fn hashkv_phases(&mut self) -> Result<Vec<BenchResult>, String> {
        let records = self.flags.num;
        let updates = self.flags.ycsb_ops.unwrap_or(records);
        let e = self.open(true)?;
        self.ycsb_loaded = false;
        let mut out = vec![self.load("hashkv_load", &e, records)?];
        let f = &self.flags;
        let zipf = Zipf::new(records, f.zipf_theta);
        let per_thread = updates / f.threads as u64;
        for phase in 1..=f.phases {
            let name = format!("hashkv_phase{phase}");
            let r = self.measure(
                &name,
                &e,
                f.threads,
                per_thread * f.threads as u64,
                |t, ts| {
                    let mut rng = Rng::new(self.seed(t) ^ (phase as u64) << 32);
                    let mut values =
                        ValueSource::new(self.seed(t) + phase as u64, f.value_size.max(1));
                    let mut k = Vec::new();
                    for _ in 0..per_thread {
                        let id = fnv64(zipf.sample(&mut rng)) % records;
                        make_key(fnv64(id), f.key_size, &mut k);
                        self.put_one(&e, ts, &k, &mut rng, &mut values, "update", None)?;
                    }
                    Ok(())
                },
            )?;
            out.push(r);
        }
        Ok(out)
    }

    /// Closes the engine and removes a temporary database.
    pub fn finish(mut self) {
        self.engine = None;
        if self.temp {
            let _ = self.destroy();
        }
    }
}

/// Request pacing of one client thread (`--ycsb_rate`): request `i` is scheduled at
/// `start + i / rate`. A thread that is ahead by more than a millisecond sleeps until half
/// a millisecond before the schedule (sleeps overshoot by tens of microseconds, which must
/// not count against the engine) and otherwise issues at once. A request's latency starts
/// at its scheduled time or its issue, whichever is earlier: a request issued late (it
/// queued behind a slow one) counts its wait, which a closed loop would omit; one issued
/// early counts from its issue, none of the client's own sleep.
struct Pace {
    /// Seconds between two requests; 0 = unpaced.
    gap: f64,
    start: Instant,
    issued: u64,
}

impl Pace {
    fn new(rate: f64) -> Pace {
        Pace {
            gap: if rate > 0.0 { 1.0 / rate } else { 0.0 },
            start: Instant::now(),
            issued: 0,
        }
    }

    /// Waits if the next request is well ahead of its schedule; returns when its latency
    /// starts.
    fn next(&mut self) -> Instant {
        if self.gap == 0.0 {
            return Instant::now();
        }
        let due = self.start + Duration::from_secs_f64(self.issued as f64 * self.gap);
        self.issued += 1;
        let now = Instant::now();
        if due > now + Duration::from_millis(1) {
            std::thread::sleep(due - now - Duration::from_micros(500));
        }
        due.min(Instant::now())
    }
}

/// A write's entry: key `k` and, unless it is a delete, the value at `v` in `data`.
fn batch_entry<'a>(
    k: &'a [u8],
    data: &'a [u8],
    v: &std::ops::Range<usize>,
    delete: bool,
) -> (&'a [u8], Option<&'a [u8]>) {
    (k, (!delete).then(|| &data[v.clone()]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_late_request_counts_its_wait_and_an_early_one_does_not() {
        let mut pace = Pace::new(1000.0);
        let first = pace.next();
        assert!(first.elapsed() < Duration::from_millis(5));
        // A stall of 50 ms: the next request was due 1 ms after the start, so its latency
        // starts then, not when the client got to it.
        std::thread::sleep(Duration::from_millis(50));
        let late = pace.next();
        assert!(
            late.elapsed() >= Duration::from_millis(45),
            "{:?}",
            late.elapsed()
        );
        // Unpaced: latency starts at the issue.
        let mut free = Pace::new(0.0);
        std::thread::sleep(Duration::from_millis(2));
        assert!(free.next().elapsed() < Duration::from_millis(2));
    }
}
