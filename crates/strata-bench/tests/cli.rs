//! strata-bench end to end: flag parsing errors, every workload on a tiny database, output
//! lines parsed back with vs-rocksdb's regex, the histogram's P99 line, JSON/CSV/PNG files.

use std::path::PathBuf;
use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_strata-bench"))
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("strata-bench-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// vs-rocksdb's LINE regex, `^(\w[\w.-]*)\s*:\s*([\d.]+) micros/op\s+(\d+) ops/sec`, by hand.
fn parse_line(line: &str) -> Option<(String, f64, u64)> {
    let (name, rest) = line.split_once(':')?;
    let name = name.trim_end();
    let first = name.chars().next()?;
    if !(first.is_alphanumeric() || first == '_')
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || "_.-".contains(c))
    {
        return None;
    }
    let rest = rest.trim_start();
    let (micros, rest) = rest.split_once(" micros/op")?;
    let micros: f64 = micros.parse().ok()?;
    let rest = rest.trim_start();
    let (ops, _) = rest.split_once(" ops/sec")?;
    Some((name.to_string(), micros, ops.parse().ok()?))
}

#[test]
fn every_workload_runs_and_prints_db_bench_lines() {
    let dir = tmp("all");
    let json = dir.join("r.json");
    let csv = dir.join("r.csv");
    let png = dir.join("r.png");
    let benchmarks = "fillseq,fillrandom,overwrite,updaterandom,readrandom,readseq,readreverse,seekrandom,readwhilewriting,deleterandom,stats,ycsb_a,ycsb_b,ycsb_c,ycsb_d,ycsb_e,ycsb_f,hashkv_phases";
    let out = bench()
        .args([
            &format!("--benchmarks={benchmarks}"),
            "--num=3000",
            "--histogram=1",
            "--value_size_dist=uniform:10:300",
            "--phases=2",
            "--report_interval_seconds=0.01",
            &format!("--db={}", dir.join("db").display()),
            &format!("--json={}", json.display()),
            &format!("--report_file={}", csv.display()),
            &format!("--plot={}", png.display()),
            "--write_buffer_size=65536",
            "--target_file_size_base=32768",
            "--max_bytes_for_level_base=131072",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{}",
        stdout,
        String::from_utf8_lossy(&out.stderr)
    );
    let parsed: Vec<(String, f64, u64)> = stdout.lines().filter_map(parse_line).collect();
    let names: Vec<&str> = parsed.iter().map(|(n, _, _)| n.as_str()).collect();
    for b in benchmarks
        .split(',')
        .filter(|b| *b != "stats" && *b != "hashkv_phases")
    {
        assert!(names.contains(&b), "no result line for {b}: {names:?}");
    }
    for extra in [
        "ycsb_load",
        "hashkv_load",
        "hashkv_phase1",
        "hashkv_phase2",
        "readwhilewriting.writer",
    ] {
        assert!(names.contains(&extra), "no result line for {extra}");
    }
    for (name, micros, ops) in &parsed {
        assert!(
            *micros > 0.0 && *ops > 0,
            "{name}: {micros} micros/op, {ops} ops/sec"
        );
    }
    // vs-rocksdb takes the first `P99:` after a result line.
    assert!(stdout.lines().filter(|l| l.contains("P99: ")).count() >= parsed.len() - 2);
    assert!(stdout.contains("** strata stats **"));
    // The exact db_bench layout of the rate part.
    let fill = stdout
        .lines()
        .find(|l| l.starts_with("fillrandom   :"))
        .unwrap();
    assert!(
        fill.contains(" seconds 3000 operations; ") && fill.ends_with(" MB/s"),
        "{fill}"
    );
    let j = std::fs::read_to_string(&json).unwrap();
    assert!(j.contains("\"name\": \"ycsb_e\"") && j.contains("\"p99\""));
    let c = std::fs::read_to_string(&csv).unwrap();
    assert!(
        c.starts_with("benchmark,time_s,ops,ops_per_sec,p99_us,p999_us,max_us\n")
            && c.lines().count() > 5
    );
    assert_eq!(&std::fs::read(&png).unwrap()[1..4], b"PNG");
    if let Ok(py) = Command::new("python3")
        .args([
            "-c",
            r#"import re,sys
LINE = re.compile(r"^(\w[\w.-]*)\s*:\s*([\d.]+) micros/op\s+(\d+) ops/sec")
print(sum(1 for l in sys.stdin if LINE.match(l.split("\r")[-1].strip())))"#,
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
    {
        use std::io::Write;
        let mut py = py;
        py.stdin
            .take()
            .unwrap()
            .write_all(stdout.as_bytes())
            .unwrap();
        let o = py.wait_with_output().unwrap();
        let n: usize = String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .unwrap_or(0);
        assert_eq!(n, parsed.len(), "python regex and our parser disagree");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_are_refused_clearly() {
    let cases: &[(&[&str], &str)] = &[
        (&["--nonsense=1"], "unknown flag --nonsense"),
        (&["--benchmarks=fillfast"], "unknown benchmark"),
        (&["--num=abc"], "--num: expected a number"),
        (&["--sync=maybe"], "--sync: expected a boolean"),
        (&["--key_dist=pareto"], "--key_dist"),
        (&["--value_size_dist=zipf:9:1"], "--value_size_dist"),
        (&["--preset=matrixkv", "--num=10"], "--pmem_dir"),
        (&["--preset=nope", "--num=10"], "unknown preset"),
        (&["--plot=x.png"], "--plot needs --report_interval_seconds"),
        (&["--compression_type=snappy"], "--compression_type"),
        (
            &["--ycsb_rate=-5"],
            "--ycsb_rate: expected requests per second",
        ),
        (
            &["--ycsb_rate=nan"],
            "--ycsb_rate: expected requests per second",
        ),
    ];
    for (args, expect) in cases {
        let out = bench().args(*args).arg("--progress=none").output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(
            err.contains(expect),
            "{args:?}: stderr {err:?} lacks {expect:?}"
        );
    }
    let out = bench().arg("--help").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("--benchmarks=LIST"));
}

#[test]
fn flags_accept_gflags_syntax() {
    let dir = tmp("syntax");
    let out = bench()
        .args([
            "--benchmarks",
            "fillrandom,readrandom",
            "--num",
            "500",
            "--histogram",
            "--nosync",
            "-threads=2",
            "--preset=leveldb",
        ])
        .arg(format!("--db={}", dir.join("db").display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("preset leveldb"));
    // 2 threads x 500 ops.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("fillrandom") && l.contains(" 1000 operations;")),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn paced_ycsb_keeps_its_rate_and_reports_all_kinds_together() {
    let dir = tmp("paced");
    let out = bench()
        .args([
            "--benchmarks=ycsb_a",
            "--num=2000",
            "--ycsb_ops=2000",
            "--ycsb_rate=4000",
            "--histogram=1",
            "--progress=none",
            &format!("--db={}", dir.join("db").display()),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let (_, micros, ops) = stdout
        .lines()
        .filter_map(parse_line)
        .find(|(n, _, _)| n == "ycsb_a")
        .unwrap();
    // 2000 requests at 4000/s take at least half a second: the client never runs ahead
    // of its schedule by more than a millisecond.
    assert!(micros * 2000.0 >= 490_000.0, "{micros} micros/op");
    assert!(ops <= 4100, "{ops} ops/sec");
    let all = stdout
        .split("Microseconds per op (all kinds):")
        .nth(1)
        .unwrap();
    assert!(
        all.contains("Count: 2000 ") && all.contains(" P90: "),
        "{all}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
