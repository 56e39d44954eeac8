#!/usr/bin/env python3
"""strata-server against redis-server, driven by redis-benchmark, in alternating rounds.

Each round starts each server on a fresh temporary directory (the order reversed every other
round), runs `redis-benchmark --csv ARGS...` against it, and keeps the CSV as
OUT/SERVER-ROUND.csv; then prints, per test, each server's median requests per second and
p99, and the median of the per-round ratios strata / redis. redis-server runs with AOF on
(`appendonly yes`, `appendfsync everysec` unless --redis-args says otherwise) and no RDB
snapshots; strata-server with --strata-args (default `--sync batch`, whose WAL sync every 10 ms
is the same promise as AOF everysec).

Usage, from the project root (needs redis-server and redis-benchmark: apt-get install
redis-server redis-tools; a release strata-server: cargo build --release -p strata-server):

  tools/redis-compare.py --rounds 3 --out DIR -- -n 1000000 -c 50 -r 1000000
  tools/redis-compare.py --table DIR          the tables of a finished run again
"""
import argparse
import csv
import os
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from redis_common import wait_ping

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(server, port, d, args, log):
    if server == "redis":
        cmd = ["redis-server", "--port", str(port), "--dir", d, "--save", "",
               "--appendonly", "yes", "--appendfsync", "everysec"] + args
    else:
        cmd = [args[0], "--dir", os.path.join(d, "db"), "--port", str(port)] + args[1:]
    out = open(log, "w")
    return subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)


def run_round(server, rnd, a, bench):
    d = tempfile.mkdtemp(prefix=f"redis-compare-{server}-", dir=a.tmp)
    port = free_port()
    log = os.path.join(a.out, f"{server}-{rnd}.server.log")
    args = shlex.split(a.redis_args) if server == "redis" else [a.strata] + shlex.split(a.strata_args)
    proc = start(server, port, d, args, log)
    try:
        wait_ping(port, proc, log)
        r = subprocess.run(["redis-benchmark", "-p", str(port), "--csv"] + bench,
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"redis-benchmark against {server} failed:\n{r.stderr}")
        with open(os.path.join(a.out, f"{server}-{rnd}.csv"), "w") as f:
            f.write(r.stdout)
        rss = peak_rss(proc.pid)
        with open(os.path.join(a.out, f"{server}-{rnd}.rss"), "w") as f:
            f.write(f"{rss}\n")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)
    print(f"round {rnd}: {server} done", file=sys.stderr)


def peak_rss(pid):
    """The process's peak resident set, KiB (VmHWM)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def load(out):
    """{server: {round: {test: (rps, p99)}}} from a run's CSVs."""
    runs = {}
    for name in sorted(os.listdir(out)):
        if not name.endswith(".csv"):
            continue
        server, rnd = name[:-4].rsplit("-", 1)
        with open(os.path.join(out, name)) as f:
            rows = {row["test"]: (float(row["rps"]), float(row["p99_latency_ms"]))
                    for row in csv.DictReader(f)}
        runs.setdefault(server, {})[int(rnd)] = rows
    return runs


def table(out):
    runs = load(out)
    s, r = runs.get("strata", {}), runs.get("redis", {})
    rounds = sorted(set(s) & set(r))
    if not rounds:
        sys.exit(f"{out}: no round holds both servers")
    tests = list(s[rounds[0]])
    med = statistics.median
    lines = [
        f"{len(rounds)} alternating rounds, medians; ratio: median of per-round strata / redis",
        "",
        "| test | strata req/s | redis req/s | strata / redis | strata p99 ms | redis p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    for t in tests:
        got = [n for n in rounds if t in s[n] and t in r[n]]
        if not got:
            lines.append(f"| {t} | (missing) | | | | |")
            continue
        sr = med(s[n][t][0] for n in got)
        rr = med(r[n][t][0] for n in got)
        ratio = med(s[n][t][0] / r[n][t][0] for n in got)
        sp = med(s[n][t][1] for n in got)
        rp = med(r[n][t][1] for n in got)
        lines.append(f"| {t} | {sr:,.0f} | {rr:,.0f} | {ratio:.2f} | {sp:.2f} | {rp:.2f} |")
    rss = {}
    for server in ("strata", "redis"):
        vals = []
        for n in rounds:
            p = os.path.join(out, f"{server}-{n}.rss")
            if os.path.exists(p):
                vals.append(int(open(p).read().split()[0]))
        if vals:
            rss[server] = med(vals) / 1024
    if rss:
        lines.append("")
        lines.append("Peak resident memory (median): " + ", ".join(
            f"{k} {v:.0f} MiB" for k, v in rss.items()))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", help="where the rounds' CSVs go (kept)")
    p.add_argument("--strata", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "strata-server"))
    p.add_argument("--strata-args", default="--sync batch")
    p.add_argument("--redis-args", default="")
    p.add_argument("--tmp", default=None, help="where the servers' directories go (default: the system's)")
    p.add_argument("--table", metavar="DIR", help="print the tables of a finished run")
    p.add_argument("bench", nargs=argparse.REMAINDER, help="-- then redis-benchmark's arguments")
    a = p.parse_args()
    if a.table:
        print(table(a.table))
        return
    if not a.out:
        sys.exit("--out DIR is needed")
    for tool in ("redis-server", "redis-benchmark", "redis-cli"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found (apt-get install redis-server redis-tools)")
    if not os.access(a.strata, os.X_OK):
        sys.exit(f"{a.strata} not found: cargo build --release -p strata-server")
    bench = a.bench[1:] if a.bench[:1] == ["--"] else a.bench
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "command"), "w") as f:
        f.write(" ".join(shlex.quote(x) for x in sys.argv) + "\n")
    for rnd in range(a.rounds):
        order = ["strata", "redis"] if rnd % 2 == 0 else ["redis", "strata"]
        for server in order:
            run_round(server, rnd, a, bench)
    print(table(a.out))


if __name__ == "__main__":
    main()
