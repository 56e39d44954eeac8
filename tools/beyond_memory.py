#!/usr/bin/env python3
"""Reads when the data does not fit in memory (issue 19): for each engine, alternating round
by round, fill a fresh database without a limit and wait for its compactions, drop the page
cache, then run the read benchmarks inside a memory cgroup (`../shared/bench/memlimit`, page
cache included) on the existing database. Prints a markdown table of medians: ops/s, disk
KiB read per op (/proc/self/io read_bytes, from strata-bench's report) and space as a
multiple of live bytes after the fill.

Usage (root: dropping caches and cgroups need it):
  tools/beyond_memory.py [--rounds 3] [--limit 256M] [--engines strata,rocksdb,leveldb]
      [--bin PATH] [--dir DIR] [--memlimit PATH] [--fill-flags '...'] [--read-flags '...']
      [--flags-for 'ENGINE=FLAGS' ...]

Engines are given as for tools/compare.py (strata:PRESET, #TAG variants, --flags-for with
{db}). The fill runs `fillrandom,waitforcompaction`; the reads default to
`readrandom,seekrandom` with `--seek_nexts=10`. `--read-flags` given several times runs
each set in turn on the same database, dropping the page cache before each (put the ones
that write, such as `readwhilewriting`, last).

  tools/beyond_memory.py --from-logs DIR --engines ...
tabulates the logs a run left in DIR (ENGINE-R.log: one round of one engine, the fill and
each read run after a `$ command` line) without running anything.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from compare import engine_args, parse_flags_for

LINE = re.compile(r"^(\w[\w.-]*)\s*:\s*([\d.]+) micros/op\s+(\d+) ops/sec")
READS = re.compile(r"disk reads ([\d.]+) MiB \(([\d.]+) KiB/op\)")
SPACE = re.compile(r"space ([\d.]+) MiB(?: \(([\d.]+) x live)?")


def parse(text):
    """{benchmark: {"ops": ops/s, "kib": disk KiB/op, "space_x": space / live}}"""
    out, cur = {}, None
    for line in text.splitlines():
        line = line.split("\r")[-1].strip()
        m = LINE.match(line)
        if m:
            cur = m.group(1)
            out[cur] = {"ops": float(m.group(3))}
            continue
        if cur and line.startswith(":"):
            m = READS.search(line)
            if m:
                out[cur]["kib"] = float(m.group(2))
            m = SPACE.search(line)
            if m and m.group(2):
                out[cur]["space_x"] = float(m.group(2))
            cur = None
    return out


def merge(res, k, out):
    """Adds read run k's results to one round's `res` (a benchmark run twice, such as
    seekrandom with 10 and then 100 nexts, is kept as NAME#2)."""
    for name, v in parse(out).items():
        res[name if name not in res else f"{name}#{k + 1}"] = v


def from_log(path):
    """One round's results from its log: the fill, then each read run, in order."""
    with open(path) as f:
        parts = re.split(r"^\$ .*$", f.read(), flags=re.M)[1:]
    res = parse(parts[0]) if parts else {}
    for k, out in enumerate(parts[1:]):
        merge(res, k, out)
    return res


def sh(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        f.write(p.stdout)
    return p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit", default="256M")
    ap.add_argument("--engines", default="strata,rocksdb,leveldb")
    ap.add_argument("--bin", default="target/release/strata-bench")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--memlimit", default=os.path.join(os.path.dirname(__file__), "../../shared/bench/memlimit"))
    ap.add_argument("--fill-flags", default="--num=1000000 --value_size=1000 --key_size=24")
    ap.add_argument("--read-flags", action="append", default=None,
                    help="flags of one read run; given more than once, the runs follow each other on "
                         "the same database, each after a cache drop (a benchmark name seen in an "
                         "earlier run gets the run's number: seekrandom#2); a set without a space is "
                         "given as --read-flags=--benchmarks=X, or argparse takes it for an option")
    ap.add_argument("--flags-for", action="append", default=[], metavar="ENGINE=FLAGS")
    ap.add_argument("--from-logs", default=None, metavar="DIR",
                    help="run nothing: tabulate the logs a run left in DIR")
    a = ap.parse_args()
    engines = a.engines.split(",")
    extra_for = parse_flags_for(engines, a.flags_for)
    work = a.dir or tempfile.mkdtemp(prefix="strata-beyond-memory-")
    os.makedirs(work, exist_ok=True)
    fill = a.fill_flags.split()
    read_sets = [r.split() for r in (a.read_flags or ["--benchmarks=readrandom,seekrandom --reads=20000 --seek_nexts=10"])]
    # The read run must address the same keys as the fill: pass --num (and sizes) on.
    shared = [f for f in fill if f.split("=")[0] in ("--num", "--key_size", "--value_size")]
    per = {e: [] for e in engines}
    if a.from_logs:
        for e in engines:
            stem = e.replace(":", "-").replace("#", "-") + "-"
            rounds = sorted(int(n[len(stem):-4]) for n in os.listdir(a.from_logs)
                            if n.startswith(stem) and n.endswith(".log") and n[len(stem):-4].isdigit())
            per[e] = [from_log(os.path.join(a.from_logs, f"{stem}{r}.log")) for r in rounds]
        a.rounds = max(len(v) for v in per.values())
        work = a.from_logs
    for r in range(0 if a.from_logs else a.rounds):
        for e in engines:
            tag = e.replace(":", "-").replace("#", "-")
            db = os.path.join(work, f"db-{tag}")
            log = os.path.join(work, f"{tag}-{r}.log")
            shutil.rmtree(db, ignore_errors=True)
            base = engine_args(a.bin, e, db, extra_for)
            rc, out = sh(base + ["--benchmarks=fillrandom,waitforcompaction"] + fill, log)
            if rc != 0:
                sys.exit(f"{e}: fill failed; log: {log}")
            res = parse(out)
            for k, reads in enumerate(read_sets):
                subprocess.run(["sync"])
                with open("/proc/sys/vm/drop_caches", "w") as f:
                    f.write("3\n")
                rc, out = sh([a.memlimit, a.limit, "--"] + base + ["--use_existing_db=1"] + shared + reads, log)
                if rc != 0:
                    sys.exit(f"{e}: reads failed; log: {log}")
                merge(res, k, out)
            per[e].append(res)
            print(f"round {r} {e}: " + ", ".join(f"{k} {v.get('ops', 0):.0f} ops/s {v.get('kib', float('nan')):.1f} KiB/op"
                                                 for k, v in res.items()), file=sys.stderr, flush=True)
            shutil.rmtree(db, ignore_errors=True)
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    names = [n for n in per[engines[0]][0] if n not in ("fillrandom", "waitforcompaction")]
    if not a.from_logs:
        print(f"Memory limit {a.limit} (page cache included), caches dropped before each read run; "
              f"fill `{a.fill_flags}`, reads " + ", then ".join(f"`{' '.join(r)}`" for r in read_sets)
              + f"; {a.rounds} alternating rounds, medians.\n")
    print("| benchmark | " + " | ".join(f"{e} ops/s | {e} disk KiB/op" for e in engines) + " |")
    print("|---|" + "---|---|" * len(engines))
    for n in names:
        cells = []
        for e in engines:
            cells.append(f"{med([x[n]['ops'] for x in per[e] if n in x]):.0f}")
            cells.append(f"{med([x[n]['kib'] for x in per[e] if n in x and 'kib' in x[n]]):.1f}")
        print(f"| {n} | " + " | ".join(cells) + " |")
    print("\nSpace after the fill and its compactions (x live bytes): " + ", ".join(
        f"{e} {med([x['waitforcompaction']['space_x'] for x in per[e] if 'space_x' in x.get('waitforcompaction', {})]):.2f}"
        for e in engines))
    print(f"\nLogs: {work}")


if __name__ == "__main__":
    main()
