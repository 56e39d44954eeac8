#!/usr/bin/env python3
"""Run strata-bench with several engines, alternating, and print a markdown table of medians.

Usage (from the project root, after `cargo build --release -p strata-bench --features rocksdb,leveldb`):
  tools/compare.py [--rounds 3] [--engines strata,rocksdb,leveldb] [--bin target/release/strata-bench]
                   [--dir DIR] [--title TEXT] -- STRATA_BENCH_FLAGS...

Engines may be given twice with a #TAG (strata:ohdb-c#hdd) and extra flags each
(--flags-for 'strata:ohdb-c#hdd=--level_dir={db}-levels --device_model={db}:150:5000').
Each round runs every engine once, in order, each on a fresh database directory under --dir
(default: a new temporary directory). Result lines (db_bench format) and the first P99 after
each are parsed (and a second table gives each histogram's p50, p99.9, p99.99 and max). The
table shows, per benchmark, each engine's median ops/sec and median p99
(microseconds), the median over rounds of strata / best peer (>1 = strata faster), and
median write amplification: device bytes (WAL, tables, manifest) per user byte, with the
table bytes the engine reports (flush + compaction) in parentheses.
Logs are kept under the directory for inspection. Nothing here judges: it measures.

With --limit SIZE (1G, 256M) every run starts with the page cache dropped (root) and runs
inside `../shared/bench/memlimit SIZE` (--memlimit PATH elsewhere): a memory cgroup that
counts the page cache too, so data larger than SIZE is read from and written to the device.

  tools/compare.py --from-logs DIR1,DIR2,... --engines ... [--title TEXT] [-- FLAGS]
tabulates logs earlier runs left (every ENGINE-R.log in those directories is one round):
a long campaign run one round per invocation keeps each finished round, and is merged here.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading

LINE = re.compile(r"^(\w[\w.-]*)\s*:\s*([\d.]+) micros/op\s+(\d+) ops/sec")
P99 = re.compile(r"P99:\s*([\d.]+)")
PCT = re.compile(r"P50:\s*([\d.]+).*P99\.9:\s*([\d.]+)\s+P99\.99:\s*([\d.]+)")
MAX = re.compile(r"Max:\s*([\d.]+)")
AMP = re.compile(r"write-amp ([\d.]+)(?: \(tables ([\d.]+)\))?")
SPACE = re.compile(r"\| space ([\d.]+) MiB")
GC = re.compile(r"\| gc ([\d.]+) MiB")
SHAPE = re.compile(
    r"^shape\s*: tables (\d+|\?) \| level compactions (\d+) \(merges (\d+): ([^;]*); "
    r"(?:move operations (\d+): ([^;]*); )?"
    r"moved tables (\d+): ([^)]*)\)(?: \| compaction read ([\d.]+) MiB write ([\d.]+) MiB)?"
    r"(?: \| tables read \w+)?"
    r"(?: \| process write_bytes ([\d.]+) MiB \(([\d.]+) x user\))?")


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree_kib(pid, field):
    """The largest `field` of `pid` and its descendants (a run under --limit is a shell that
    starts the benchmark as a grandchild)."""
    best, todo = 0, [pid]
    while todo:
        p = todo.pop()
        best = max(best, status_kib(p, field))
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return best


def run(cmd, log):
    """Runs one engine; also samples its anonymous resident memory (RssAnon: heap, memtables,
    caches; not the page cache that memory-mapped table files show in VmRSS) every 50 ms."""
    peak = [0]
    with open(log, "w") as f:
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], tree_kib(p.pid, "RssAnon"))
                stop.wait(0.05)

        t = threading.Thread(target=sample, daemon=True)
        t.start()
        p.wait()
        stop.set()
        t.join()
    res, p99, amp = parse_log(log)
    if res:
        res["_peak_anon_mib"] = peak[0] / 1024.0
    return p.returncode, res, p99, amp


def parse_log(log):
    """(ops/s by benchmark plus "_shape", p99 us by benchmark, (write-amp, tables) by
    benchmark) from one strata-bench log."""
    res, p99, amp, cur = {}, {}, {}, None
    with open(log) as f:
        for line in f:
            line = line.split("\r")[-1].strip()
            m = LINE.match(line)
            if m:
                cur = m.group(1)
                res[cur] = float(m.group(3))
                continue
            m = AMP.search(line)
            if m and cur and cur not in amp:
                amp[cur] = (float(m.group(1)), float(m.group(2)) if m.group(2) else float("nan"))
            for key, rx in (("_space", SPACE), ("_gc", GC)):
                m = rx.search(line)
                if m and cur:
                    res.setdefault(key, {})[cur] = float(m.group(1))
            m = SHAPE.search(line)
            if m:
                # Logs from before issue 30 have no move operations: C was merges + moved
                # tables there, and is recomputed as merges + moves where they are known.
                res["_shape"] = {
                    "tables": None if m.group(1) == "?" else int(m.group(1)),
                    "compactions": int(m.group(2)),
                    "merges_n": int(m.group(3)),
                    "merges": m.group(4).strip(),
                    "moves": int(m.group(5)) if m.group(5) else None,
                    "moved": int(m.group(7)),
                    "moved_levels": m.group(8).strip(),
                    "cr_gib": float(m.group(9)) / 1024 if m.group(9) else None,
                    "cw_gib": float(m.group(10)) / 1024 if m.group(10) else None,
                    "tw_gib": float(m.group(11)) / 1024 if m.group(11) else None,
                    "write_bytes_x": float(m.group(12)) if m.group(12) else None,
                }
            m = P99.search(line)
            if m and cur and cur not in p99:
                p99[cur] = float(m.group(1))
            # The tail of the first histogram after a result line: p50, p99.9, p99.99, max.
            lat = res.setdefault("_lat", {})
            m = MAX.search(line)
            if m and cur and "max" not in lat.get(cur, {}):
                lat.setdefault(cur, {})["max"] = float(m.group(1))
            m = PCT.search(line)
            if m and cur and "p50" not in lat.get(cur, {}):
                lat.setdefault(cur, {}).update(
                    p50=float(m.group(1)), p999=float(m.group(2)), p9999=float(m.group(3)))
    return res, p99, amp


def parse_flags_for(engines, specs):
    """{engine: [flags]} from --flags-for 'ENGINE=FLAGS' specs; exits on an unknown engine."""
    extra_for = {}
    for spec in specs:
        name, _, fl = spec.partition("=")
        if name not in engines:
            sys.exit(f"--flags-for: {name} is not one of --engines")
        extra_for[name] = fl.split()
    return extra_for


def engine_args(binary, e, db, extra_for, bin_for=None):
    """strata-bench's command line for engine entry `e` (ENGINE[:PRESET][#TAG]) on `db`, with
    its --flags-for flags ({db} replaced), run by its --bin-for binary if it has one."""
    engine, _, preset = e.partition("#")[0].partition(":")
    binary = (bin_for or {}).get(e, binary)
    args = [binary, f"--engine={engine}", f"--db={db}", "--progress=none"]
    args += [f"--preset={preset}"] if preset else []
    return args + [f.replace("{db}", db) for f in extra_for.get(e, [])]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--engines", default="strata,rocksdb,leveldb",
                    help="comma-separated; strata:PRESET runs strata with --preset=PRESET; a #TAG suffix "
                         "names a variant (strata:hyperleveldb#hdd) that --flags-for can give flags")
    ap.add_argument("--flags-for", action="append", default=[], metavar="ENGINE=FLAGS",
                    help="extra flags (space-separated) for one entry of --engines; {db} is replaced by "
                         "that run's database directory, e.g. 'strata:ohdb-2dc=--level_dir={db}-levels'")
    ap.add_argument("--bin", default="target/release/strata-bench")
    ap.add_argument("--bin-for", action="append", default=[], metavar="ENGINE=PATH",
                    help="another strata-bench binary for one entry of --engines (a before/after "
                         "comparison of two builds in one alternating run: "
                         "'strata:blob#before=/path/to/old/strata-bench')")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--limit", default=None, metavar="SIZE",
                    help="run each engine inside a memory cgroup of SIZE (page cache included), "
                         "caches dropped before each run")
    ap.add_argument("--memlimit", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "../../shared/bench/memlimit"))
    ap.add_argument("--title", default="")
    ap.add_argument("--from-logs", default=None, metavar="DIR,DIR,...",
                    help="run nothing: tabulate the logs earlier runs left in these directories "
                         "(every ENGINE-R.log in them is one round of that engine; no memory figures)")
    ap.add_argument("flags", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    flags = [f for f in a.flags if f != "--"]
    engines = a.engines.split(",")
    extra_for = parse_flags_for(engines, a.flags_for)
    bin_for = {}
    for spec in a.bin_for:
        name, _, path = spec.partition("=")
        if name not in engines:
            sys.exit(f"--bin-for: {name} is not one of --engines")
        bin_for[name] = path
    work = a.dir or tempfile.mkdtemp(prefix="strata-compare-")
    os.makedirs(work, exist_ok=True)
    per = {e: [] for e in engines}
    ok = True
    if a.from_logs:
        for d in a.from_logs.split(","):
            for e in engines:
                stem = e.replace(":", "-").replace("#", "-") + "-"
                for name in sorted(os.listdir(d)):
                    rest = name[len(stem):-len(".log")] if name.startswith(stem) and name.endswith(".log") else ""
                    if rest.isdigit():
                        res, p99, amp = parse_log(os.path.join(d, name))
                        if res:
                            per[e].append((res, p99, amp))
        a.rounds = max((len(v) for v in per.values()), default=0)
        work = a.from_logs
    for r in range(0 if a.from_logs else a.rounds):
        for e in engines:
            db = os.path.join(work, f"db-{e}-{r}".replace(":", "-").replace("#", "-"))
            log = os.path.join(work, f"{e}-{r}.log".replace(":", "-").replace("#", "-"))
            cmd = engine_args(a.bin, e, db, extra_for, bin_for) + ["--histogram=1"] + flags
            if a.limit:
                subprocess.run(["sync"], check=True)
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("3\n")
                cmd = [a.memlimit, a.limit, "--"] + cmd
            rc, res, p99, amp = run(cmd, log)
            # The run's directories: its database, siblings named after it, and any other
            # path a flag built from {db} (such as --pmem_dir=/dev/shm{db}: left behind, a
            # 1 GiB matrix region per run filled the tmpfs and starved later runs' page cache).
            made = [f.split("=", 1)[-1].replace("{db}", db).split(":")[0]
                    for f in extra_for.get(e, []) if "{db}" in f]
            for d in [db] + [os.path.join(work, x) for x in os.listdir(work) if x.startswith(os.path.basename(db) + "-")] \
                    + [m for m in made if db in m and m != db]:
                shutil.rmtree(d, ignore_errors=True)
            if rc != 0 or not res:
                ok = False
                print(f"round {r}: {e} exited {rc}; log: {log}", file=sys.stderr)
            per[e].append((res, p99, amp))
            print(f"round {r} {e}: " + ", ".join(f"{k} {v:.0f}" for k, v in res.items() if not isinstance(v, dict)), file=sys.stderr, flush=True)
    names = []
    for e in engines:
        for res, _, _ in per[e]:
            for k in res:
                if k not in names and not k.startswith("_"):
                    names.append(k)
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    if a.title:
        print(f"#### {a.title}\n")
    print("Command: `strata-bench --engine=E " + " ".join(flags) + f"`, {a.rounds} alternating rounds, medians"
          + (f", each inside a {a.limit} memory limit with caches dropped." if a.limit else "."))
    for e, fl in extra_for.items():
        print(f"{e} adds `{' '.join(fl)}` ({{db}} = its database directory).")
    for e, b in bin_for.items():
        print(f"{e} runs `{b}`.")
    print()
    head = "| benchmark | " + " | ".join(f"{e} ops/s" for e in engines) + " | strata / best peer | " + " | ".join(f"{e} p99 us" for e in engines) + " | " + " | ".join(f"{e} w-amp (tables)" for e in engines) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for n in names:
        ops = {e: med([res[n] for res, _, _ in per[e] if n in res]) for e in engines}
        p99 = {e: med([p[n] for _, p, _ in per[e] if n in p]) for e in engines}
        amp = {e: (med([w[n][0] for _, _, w in per[e] if n in w]),
                   med([w[n][1] for _, _, w in per[e] if n in w])) for e in engines}
        ratios = []
        first = next((e for e in engines if e.split(":")[0] == "strata"), None)
        if first:
            for r in range(a.rounds):
                s = per[first][r][0].get(n) if r < len(per[first]) else None
                peers = [per[e][r][0].get(n) for e in engines if e.split(":")[0] != "strata" and r < len(per[e])]
                peers = [p for p in peers if p]
                if s and peers:
                    ratios.append(s / max(peers))
        ratio = f"{med(ratios):.2f}" if ratios else "-"
        fmt = lambda v, f: ("-" if v != v else f.format(v))
        print(f"| {n} | " + " | ".join(fmt(ops[e], "{:.0f}") for e in engines) + f" | {ratio} | " + " | ".join(fmt(p99[e], "{:.1f}") for e in engines) + " | " + " | ".join(fmt(amp[e][0], "{:.2f}") + ("" if amp[e][1] != amp[e][1] else f" ({amp[e][1]:.2f})") for e in engines) + " |")
    if not a.from_logs:
        print("\nPeak anonymous memory (RssAnon, MiB; medians): " + ", ".join(
            f"{e} {med([res.get('_peak_anon_mib', 0) for res, _, _ in per[e]]):.0f}" for e in engines))
    for key, what in (("_space", "Space at the end of each benchmark (MiB; medians)"),
                      ("_gc", "Live values a value store's GC moved during each benchmark (MiB; medians; "
                              "RocksDB: BlobDB's relocated bytes)")):
        if any(key in res for e in engines for res, _, _ in per[e]):
            print(f"\n{what}:\n")
            print("| benchmark | " + " | ".join(engines) + " |")
            print("|" + "---|" * (len(engines) + 1))
            for n in names:
                vals = {e: [res.get(key, {}).get(n, 0.0) for res, _, _ in per[e] if n in res] for e in engines}
                print(f"| {n} | " + " | ".join(f"{med(vals[e]):.0f}" if vals[e] else "-" for e in engines) + " |")
    if any(res.get("_lat") for e in engines for res, _, _ in per[e]):
        print("\nLatency of each op (us; medians over rounds of each histogram's p50, p99, p99.9, "
              "p99.99 and max):\n")
        print("| benchmark | engine | p50 | p99 | p99.9 | p99.99 | max |")
        print("|---|---|---|---|---|---|---|")
        for n in names:
            for e in engines:
                lats = [res["_lat"][n] for res, _, _ in per[e] if n in res.get("_lat", {})]
                p99s = [p[n] for _, p, _ in per[e] if n in p]
                if not lats:
                    continue
                col = lambda k: med([x[k] for x in lats if k in x])
                fmt = lambda v: "-" if v != v else f"{v:.1f}"
                print(f"| {n} | {e} | {fmt(col('p50'))} | {fmt(med(p99s))} | {fmt(col('p999'))} | "
                      f"{fmt(col('p9999'))} | {fmt(col('max'))} |")
    shapes = {e: [res["_shape"] for res, _, _ in per[e] if "_shape" in res] for e in engines}
    if any(shapes.values()):
        print("\nShape at the end of each run (level compactions C = merges + move operations, the OHDB "
              "paper's count; write_bytes = the process's /proc/self/io write_bytes per user byte):\n")
        print("| engine | tables (SN) | level compactions (C) | merges by input level (per round) | move operations | moved tables | "
              "compaction read GiB (CR) | compaction write GiB (CW) | process write_bytes GiB (TW) | write_bytes / user |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for e in engines:
            sh = shapes[e]
            if not sh:
                continue
            vals = lambda k: [x[k] for x in sh if x[k] is not None]
            show = lambda k, f: (f.format(med(vals(k))) + " (" + ", ".join(f.format(v) for v in vals(k)) + ")") if vals(k) else "-"
            print(f"| {e} | {show('tables', '{:.0f}')} | {show('compactions', '{:.0f}')} | "
                  + " / ".join(x["merges"] for x in sh) + f" | {show('moves', '{:.0f}')} | {show('moved', '{:.0f}')} | {show('cr_gib', '{:.2f}')} | {show('cw_gib', '{:.2f}')} | "
                  f"{show('tw_gib', '{:.2f}')} | {show('write_bytes_x', '{:.2f}')} |")
    print(f"\nLogs: {work}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
