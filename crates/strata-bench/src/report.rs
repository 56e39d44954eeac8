//! Results: db_bench-format lines, latency histograms, the per-interval timeline (CSV), and
//! the JSON dump.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use hdrhistogram::Histogram;

/// Latencies in nanoseconds, up to an hour, 3 significant digits.
pub fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
        .unwrap_or_else(|_| Histogram::new(3).expect("hdr histogram"))
}

/// One timeline interval of one benchmark.
#[derive(Debug, Clone)]
pub struct Interval {
    /// End of the interval, seconds since the benchmark started.
    pub t: f64,
    /// Ops completed in the interval.
    pub ops: u64,
    /// Ops per second in the interval.
    pub ops_per_sec: f64,
    /// 99th percentile latency in the interval, microseconds.
    pub p99_us: f64,
    /// 99.9th percentile latency in the interval, microseconds.
    pub p999_us: f64,
    /// Slowest op of the interval, microseconds (a stall shows here).
    pub max_us: f64,
}

/// Everything measured for one benchmark.
#[derive(Debug, Clone, Default)]
pub struct BenchResult {
    /// Benchmark name.
    pub name: String,
    /// Operations done.
    pub ops: u64,
    /// Wall-clock seconds.
    pub elapsed: f64,
    /// Sum of per-thread seconds (db_bench's micros/op basis).
    pub thread_seconds: f64,
    /// Bytes of keys and values moved (for MB/s).
    pub bytes: u64,
    /// Free text after the rate ("(x of y found)").
    pub message: String,
    /// Latency per op kind.
    pub hists: BTreeMap<&'static str, Histogram<u64>>,
    /// Per-interval throughput and p99.
    pub timeline: Vec<Interval>,
    /// Bytes of keys and values the benchmark wrote.
    pub user_bytes: u64,
    /// Bytes the process wrote through write syscalls during the benchmark.
    pub device_bytes: u64,
    /// Bytes the engine reports writing to tables.
    pub table_bytes: u64,
    /// Stalls during the benchmark.
    pub stalls: u64,
    /// Stall time, microseconds.
    pub stall_micros: u64,
    /// Compactions per level during the benchmark.
    pub compactions_per_level: Vec<u64>,
    /// Compaction bytes per level during the benchmark.
    pub compaction_bytes_per_level: Vec<u64>,
    /// GC bytes during the benchmark.
    pub gc_bytes: u64,
    /// Bytes of the database directories after the benchmark.
    pub space_bytes: u64,
    /// Bytes the process read from storage during the benchmark (`/proc/self/io`
    /// `read_bytes`), if known.
    pub disk_read_bytes: Option<u64>,
    /// Reads of table files during the benchmark, if counted: (reads, bytes) while opening
    /// tables, and of blocks.
    pub table_file_reads: Option<[u64; 4]>,
    /// Bytes of live keys and values after the benchmark (fill/overwrite/delete benchmarks
    /// since the database was created), if known.
    pub live_bytes: Option<u64>,
    /// Ops of 50 ms or more (each thread's first 20).
    pub slow_ops: Vec<SlowOp>,
    /// CPU time the host took from this machine's CPUs during the benchmark, if sampled
    /// (`steal.rs`): milliseconds in all, the most in any 100 ms, and when (seconds since
    /// the engine opened) that 100 ms ended.
    pub host_steal: Option<(f64, f64, f64)>,
}

/// An op of 50 ms or more.
#[derive(Clone, Copy, Debug)]
pub struct SlowOp {
    /// Seconds from the engine's open to the op's end.
    pub ended_s: f64,
    /// Its latency, milliseconds.
    pub took_ms: f64,
    /// CPU time (all CPUs) the host took while it ran, if sampled: an upper bound, one
    /// sampling period wide at each end.
    pub steal_ms: Option<f64>,
}

impl BenchResult {
    /// Ops per second.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.max(1e-9)
    }

    /// Microseconds per op (average latency per thread).
    pub fn micros_per_op(&self) -> f64 {
        self.thread_seconds * 1e6 / self.ops.max(1) as f64
    }

    /// Device bytes / user bytes, when the benchmark wrote.
    pub fn write_amp(&self) -> Option<f64> {
        (self.user_bytes > 0).then(|| self.device_bytes as f64 / self.user_bytes as f64)
    }

    /// The db_bench result line.
    pub fn line(&self) -> String {
        let mut extra = String::new();
        if self.bytes > 0 {
            extra = format!(
                "{:6.1} MB/s",
                self.bytes as f64 / 1048576.0 / self.elapsed.max(1e-9)
            );
        }
        if !self.message.is_empty() {
            if !extra.is_empty() {
                extra.push(' ');
            }
            extra.push_str(&self.message);
        }
        format!(
            "{:<12} : {:>11.3} micros/op {} ops/sec {:.3} seconds {} operations;{}{}",
            self.name,
            self.micros_per_op(),
            self.ops_per_sec() as i64,
            self.elapsed,
            self.ops,
            if extra.is_empty() { "" } else { " " },
            extra
        )
    }

    /// The ops of 50 ms or more, if any: when each ended (seconds since the engine opened,
    /// the time base of strata's `strata.write-stalls`) and how long it took.
    pub fn slow_ops_line(&self) -> Option<String> {
        if self.slow_ops.is_empty() {
            return None;
        }
        let mut ops = self.slow_ops.clone();
        ops.sort_by(|a, b| a.ended_s.total_cmp(&b.ended_s));
        let list: Vec<String> = ops
            .iter()
            .map(|o| match o.steal_ms {
                Some(st) => format!(
                    "{:.3} s: {:.1} ms (host steal {st:.0} ms)",
                    o.ended_s, o.took_ms
                ),
                None => format!("{:.3} s: {:.1} ms", o.ended_s, o.took_ms),
            })
            .collect();
        Some(format!(
            "             : slow ops (>= 50 ms, ended at, since open): {}",
            list.join(", ")
        ))
    }

    /// The host's steal time during the benchmark, if sampled and any: CPU time taken from
    /// this machine's virtual CPUs by the hypervisor, which no engine can wait less for.
    pub fn host_steal_line(&self) -> Option<String> {
        let (total, worst, at) = self.host_steal?;
        (total > 0.0).then(|| {
            format!(
                "             : host steal {:.2} s of CPU time (all cores, /proc/stat); \
                 busiest 100 ms: {worst:.0} ms stolen, ending {at:.3} s since open",
                total / 1e3
            )
        })
    }

    /// The line after the result: amplification, stalls, compactions, space.
    pub fn engine_line(&self) -> String {
        let mut s = String::from("             :");
        if let Some(w) = self.write_amp() {
            let _ = write!(s, " write-amp {w:.2}");
            if self.table_bytes > 0 {
                let _ = write!(
                    s,
                    " (tables {:.2})",
                    self.table_bytes as f64 / self.user_bytes.max(1) as f64
                );
            }
            s.push_str(" |");
        }
        let _ = write!(
            s,
            " stalls {} ({:.3} s) |",
            self.stalls,
            self.stall_micros as f64 / 1e6
        );
        let comps: Vec<String> = self
            .compactions_per_level
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(l, c)| {
                let mib =
                    self.compaction_bytes_per_level.get(l).copied().unwrap_or(0) as f64 / 1048576.0;
                format!("L{l}:{c} ({mib:.1} MiB)")
            })
            .collect();
        if !comps.is_empty() {
            let _ = write!(s, " compactions {} |", comps.join(" "));
        }
        if self.gc_bytes > 0 {
            let _ = write!(s, " gc {:.1} MiB |", self.gc_bytes as f64 / 1048576.0);
        }
        if let Some(b) = self.disk_read_bytes {
            let _ = write!(
                s,
                " disk reads {:.1} MiB ({:.1} KiB/op) |",
                b as f64 / 1048576.0,
                b as f64 / 1024.0 / self.ops.max(1) as f64
            );
        }
        if let Some([or, ob, br, bb]) = self.table_file_reads {
            let ops = self.ops.max(1) as f64;
            let _ = write!(
                s,
                " table file reads: blocks {:.2}/op ({:.1} KiB/op), opening tables {:.2}/op ({:.1} KiB/op) |",
                br as f64 / ops,
                bb as f64 / 1024.0 / ops,
                or as f64 / ops,
                ob as f64 / 1024.0 / ops
            );
        }
        let _ = write!(s, " space {:.1} MiB", self.space_bytes as f64 / 1048576.0);
        if let Some(live) = self.live_bytes {
            let _ = write!(
                s,
                " ({:.2} x live {:.1} MiB)",
                self.space_bytes as f64 / live.max(1) as f64,
                live as f64 / 1048576.0
            );
        }
        s
    }

    /// db_bench's histogram block for each op kind (P90 added to its percentiles), then,
    /// when there are several kinds, one block for all of them.
    pub fn histogram_text(&self) -> String {
        let mut s = String::new();
        for (kind, h) in &self.hists {
            hist_block(&mut s, kind, h);
        }
        if self.hists.values().filter(|h| !h.is_empty()).count() > 1 {
            let mut all = new_hist();
            for h in self.hists.values() {
                let _ = all.add(h);
            }
            hist_block(&mut s, "op (all kinds)", &all);
        }
        s
    }
}

fn hist_block(s: &mut String, kind: &str, h: &Histogram<u64>) {
    if h.is_empty() {
        return;
    }
    let us = |ns: u64| ns as f64 / 1000.0;
    let _ = writeln!(s, "Microseconds per {kind}:");
    let _ = writeln!(
        s,
        "Count: {} Average: {:.4}  StdDev: {:.2}",
        h.len(),
        h.mean() / 1000.0,
        h.stdev() / 1000.0
    );
    let _ = writeln!(
        s,
        "Min: {:.4}  Median: {:.4}  Max: {:.4}",
        us(h.min()),
        us(h.value_at_quantile(0.5)),
        us(h.max())
    );
    let _ = writeln!(
        s,
        "Percentiles: P50: {:.2} P75: {:.2} P90: {:.2} P99: {:.2} P99.9: {:.2} P99.99: {:.2}",
        us(h.value_at_quantile(0.5)),
        us(h.value_at_quantile(0.75)),
        us(h.value_at_quantile(0.9)),
        us(h.value_at_quantile(0.99)),
        us(h.value_at_quantile(0.999)),
        us(h.value_at_quantile(0.9999)),
    );
    let _ = writeln!(s, "------------------------------------------------------");
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "null".into()
    }
}

/// Everything measured, as JSON.
pub fn to_json(engine: &str, args: &[String], results: &[BenchResult]) -> String {
    let mut s = String::from("{\n");
    let _ = writeln!(s, "  \"engine\": {},", json_str(engine));
    let args: Vec<String> = args.iter().map(|a| json_str(a)).collect();
    let _ = writeln!(s, "  \"args\": [{}],", args.join(", "));
    s.push_str("  \"results\": [\n");
    for (i, r) in results.iter().enumerate() {
        s.push_str("    {");
        let _ = write!(
            s,
            "\"name\": {}, \"ops\": {}, \"seconds\": {}, \"ops_per_sec\": {}, \"micros_per_op\": {}, \"mb_per_sec\": {}, ",
            json_str(&r.name),
            r.ops,
            json_num(r.elapsed),
            json_num(r.ops_per_sec()),
            json_num(r.micros_per_op()),
            json_num(r.bytes as f64 / 1048576.0 / r.elapsed.max(1e-9)),
        );
        let _ = write!(
            s,
            "\"user_bytes\": {}, \"device_bytes\": {}, \"table_bytes\": {}, \"write_amp\": {}, \"stalls\": {}, \"stall_seconds\": {}, \"gc_bytes\": {}, \"space_bytes\": {}, \"disk_read_bytes\": {}, \"live_bytes\": {}, ",
            r.user_bytes,
            r.device_bytes,
            r.table_bytes,
            r.write_amp().map_or("null".into(), json_num),
            r.stalls,
            json_num(r.stall_micros as f64 / 1e6),
            r.gc_bytes,
            r.space_bytes,
            r.disk_read_bytes.map_or("null".into(), |b| b.to_string()),
            r.live_bytes.map_or("null".into(), |b| b.to_string())
        );
        let levels: Vec<String> = r.compactions_per_level.iter().map(u64::to_string).collect();
        let lbytes: Vec<String> = r
            .compaction_bytes_per_level
            .iter()
            .map(u64::to_string)
            .collect();
        let _ = write!(
            s,
            "\"compactions_per_level\": [{}], \"compaction_bytes_per_level\": [{}], ",
            levels.join(", "),
            lbytes.join(", ")
        );
        s.push_str("\"latency_us\": {");
        let lat: Vec<String> = r
            .hists
            .iter()
            .filter(|(_, h)| !h.is_empty())
            .map(|(k, h)| {
                let q = |x: f64| json_num(h.value_at_quantile(x) as f64 / 1000.0);
                format!(
                    "{}: {{\"count\": {}, \"mean\": {}, \"p50\": {}, \"p99\": {}, \"p999\": {}, \"max\": {}}}",
                    json_str(k),
                    h.len(),
                    json_num(h.mean() / 1000.0),
                    q(0.5),
                    q(0.99),
                    q(0.999),
                    json_num(h.max() as f64 / 1000.0)
                )
            })
            .collect();
        s.push_str(&lat.join(", "));
        s.push_str("}, \"timeline\": [");
        let tl: Vec<String> = r
            .timeline
            .iter()
            .map(|iv| {
                format!(
                    "[{}, {}, {}, {}, {}]",
                    json_num(iv.t),
                    json_num(iv.ops_per_sec),
                    json_num(iv.p99_us),
                    json_num(iv.p999_us),
                    json_num(iv.max_us)
                )
            })
            .collect();
        s.push_str(&tl.join(", "));
        s.push_str("]}");
        s.push_str(if i + 1 < results.len() { ",\n" } else { "\n" });
    }
    s.push_str("  ]\n}\n");
    s
}

/// The timeline as CSV: benchmark, time, ops/s, p99, p99.9 and max latency per interval.
pub fn to_csv(results: &[BenchResult]) -> String {
    let mut s = String::from("benchmark,time_s,ops,ops_per_sec,p99_us,p999_us,max_us\n");
    for r in results {
        for iv in &r.timeline {
            let _ = writeln!(
                s,
                "{},{:.3},{},{:.1},{:.2},{:.2},{:.2}",
                r.name, iv.t, iv.ops, iv.ops_per_sec, iv.p99_us, iv.p999_us, iv.max_us
            );
        }
    }
    s
}
