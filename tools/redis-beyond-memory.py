#!/usr/bin/env python3
"""strata-server serving a data set larger than the memory it may use, against itself with
all the memory it wants: GET, SET with expiry, HGET and ZADD driven by redis-benchmark.

Loads one database once (strings of --value-size bytes, a tenth of them with an expiry
that falls during the run, hashes of 10 fields and sorted sets), then, in alternating
rounds, restarts strata-server on it either in a memory cgroup of --limit bytes (page
cache included: ../shared/bench/memlimit) or without one, drops the page cache, and runs
each workload. Prints, per workload, the medians of requests per second and p99 for both,
and their ratio. Each round's CSVs and the server's peak memory stay in --out.

Usage, from the project root (root, for the cgroup and to drop caches; needs redis-tools):

  tools/redis-beyond-memory.py --limit 256M --keys 2000000 --value-size 1024 --rounds 3 --out DIR
  tools/redis-beyond-memory.py --table DIR     the tables of a finished run again

Before the rounds it shows what the same load does to redis-server in the same cgroup
(--redis-check): Redis keeps every key in memory, so it is killed once the data set passes
the limit (or, with maxmemory, refuses writes).
"""
import argparse
import csv
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from redis_common import wait_ping

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEMLIMIT = os.path.join(ROOT, "..", "shared", "bench", "memlimit")
HASHES_PER_KEYS = 10  # one hash per this many strings
ZSETS = 1000


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def drop_caches():
    subprocess.run(["sync"])
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError as e:
        print(f"cannot drop caches: {e}", file=sys.stderr)


class Server:
    def __init__(self, a, db, port, limit, log):
        cmd = [a.strata, "--dir", db, "--port", str(port)] + shlex.split(a.strata_args)
        if limit:
            cmd = [MEMLIMIT, limit, "--"] + cmd
        self.log = log
        self.out = open(log, "w")
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT)
        self.port = port
        self.db = db
        wait_ping(port, self.proc, log, 120)

    def server_pid(self):
        # (The memlimit wrapper's command line holds the same words: the server is the
        # process named strata-server.)
        r = subprocess.run(["pgrep", "-f", f"strata-server --dir {self.db} "], capture_output=True, text=True)
        for pid in r.stdout.split():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "strata-server":
                        return int(pid)
            except OSError:
                pass
        return None

    def peak_rss_kib(self):
        pid = self.server_pid()
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1])
        except (OSError, TypeError):
            pass
        return 0

    def stop(self):
        pid = self.server_pid()
        if pid:
            os.kill(pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.out.close()


def load(a, port):
    """Strings key:%012d, hashes h:%012d (10 fields), sorted sets z:%012d, by redis-cli --pipe."""
    value = "v" * a.value_size
    expiring = max(a.keys // 10, 1)

    def commands():
        for i in range(a.keys):
            k = f"key:{i:012d}"
            if i % 10 == 9:
                # Expires during the rounds (300-900 s after the load), reaped meanwhile.
                yield ["SET", k, value, "EX", str(300 + (i * 7919) % 600)]
            else:
                yield ["SET", k, value]
            if i % HASHES_PER_KEYS == 0:
                h = f"h:{i // HASHES_PER_KEYS:012d}"
                yield ["HSET", h] + [x for f in range(10) for x in (f"f{f}", "x" * 100)]
            if i < ZSETS * 100:
                yield ["ZADD", f"z:{i % ZSETS:012d}", str(i), f"m{i}"]

    p = subprocess.Popen(["redis-cli", "-p", str(port), "--pipe"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    buf = []
    size = 0
    sent = 0
    try:
        for c in commands():
            b = f"*{len(c)}\r\n" + "".join(f"${len(x)}\r\n{x}\r\n" for x in c)
            buf.append(b)
            size += len(b)
            if size > 1 << 20:
                p.stdin.write("".join(buf).encode())
                sent += size
                buf, size = [], 0
        p.stdin.write("".join(buf).encode())
        p.stdin.close()
    except BrokenPipeError:
        p.kill()
        sys.exit(f"load failed: the server went away after {sent >> 20} MiB of commands")
    out = p.stdout.read().decode()
    p.wait()
    if "errors: 0" not in out:
        sys.exit(f"load failed: {out}")
    print(f"loaded: {a.keys} strings ({expiring} expiring), {a.keys // HASHES_PER_KEYS} hashes, "
          f"{ZSETS} sorted sets", file=sys.stderr)


def workloads(a):
    n = str(a.requests)
    hashes = a.keys // HASHES_PER_KEYS
    value = "s" * a.value_size
    return [
        ("GET", ["-r", str(a.keys), "-n", n, "GET", "key:__rand_int__"]),
        ("SET EX 600", ["-r", str(a.keys), "-n", n, "SET", "key:__rand_int__", value, "EX", "600"]),
        ("HGET", ["-r", str(hashes), "-n", n, "HGET", "h:__rand_int__", "f3"]),
        ("ZADD", ["-r", str(ZSETS), "-n", n, "ZADD", "z:__rand_int__", "1", "m__rand_int__"]),
    ]


def bench(port, args, clients):
    r = subprocess.run(["redis-benchmark", "-p", str(port), "-c", str(clients), "--csv"] + args,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"redis-benchmark failed: {r.stderr}")
    rows = list(csv.DictReader(r.stdout.splitlines()))
    return r.stdout, float(rows[0]["rps"]), float(rows[0]["p99_latency_ms"])


def redis_check(a, tmp):
    """Loads the same data into redis-server in the same cgroup: where it stops."""
    d = tempfile.mkdtemp(dir=tmp, prefix="redis-beyond-")
    port = 26000 + os.getpid() % 1000
    log = os.path.join(a.out, "redis-check.log")
    with open(log, "w") as out:
        proc = subprocess.Popen([MEMLIMIT, a.limit, "--", "redis-server", "--port", str(port),
                                 "--dir", d, "--save", "", "--appendonly", "yes",
                                 "--appendfsync", "everysec"], stdout=out, stderr=subprocess.STDOUT)
        wait_ping(port, proc, log)
        try:
            load(a, port)
            print("redis-server held the load", file=sys.stderr)
        except SystemExit as e:
            print(f"redis-server did not hold the load: {str(e)[:200]}", file=sys.stderr)
        subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    shutil.rmtree(d, ignore_errors=True)
    with open(log) as f:
        print("redis-server in the cgroup: " + " | ".join(l.strip() for l in f if "memlimit" in l
                                                          or "Killed" in l), file=sys.stderr)


def table(out):
    res = {}
    for name in sorted(os.listdir(out)):
        if not name.endswith(".csv"):
            continue
        mode, rnd, w = name[:-4].split("-", 2)
        with open(os.path.join(out, name)) as f:
            row = next(csv.DictReader(f))
        res.setdefault(w, {}).setdefault(mode, {})[int(rnd)] = (float(row["rps"]), float(row["p99_latency_ms"]))
    med = statistics.median
    lines = ["| workload | in memory req/s | past memory req/s | past / in | in memory p99 ms | past memory p99 ms |",
             "|---|---|---|---|---|---|"]
    for w, modes in res.items():
        i, p = modes.get("inmem", {}), modes.get("limited", {})
        rounds = sorted(set(i) & set(p))
        if not rounds:
            continue
        lines.append(
            f"| {w.replace('_', ' ')} | {med(i[r][0] for r in rounds):,.0f} | {med(p[r][0] for r in rounds):,.0f} | "
            f"{med(p[r][0] / i[r][0] for r in rounds):.2f} | {med(i[r][1] for r in rounds):.2f} | "
            f"{med(p[r][1] for r in rounds):.2f} |")
    for mode in ("inmem", "limited"):
        vals = []
        for name in os.listdir(out):
            if name.startswith(mode + "-") and name.endswith(".rss"):
                vals.append(int(open(os.path.join(out, name)).read()))
        if vals:
            lines.append(f"\n{mode}: strata-server's peak resident memory (median) {med(vals) / 1024:.0f} MiB")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--limit", default="256M")
    p.add_argument("--keys", type=int, default=2_000_000)
    p.add_argument("--value-size", type=int, default=1024)
    p.add_argument("--requests", type=int, default=200_000)
    p.add_argument("--clients", type=int, default=50)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out")
    p.add_argument("--tmp", default=None)
    p.add_argument("--strata", default=os.path.join(
        os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "strata-server"))
    p.add_argument("--strata-args", default="--sync batch")
    p.add_argument("--redis-check", action="store_true")
    p.add_argument("--table", metavar="DIR")
    a = p.parse_args()
    if a.table:
        print(table(a.table))
        return
    if not a.out:
        sys.exit("--out DIR is needed")
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "command"), "w") as f:
        f.write(" ".join(shlex.quote(x) for x in sys.argv) + "\n")
    tmp = tempfile.mkdtemp(dir=a.tmp, prefix="strata-beyond-")
    db = os.path.join(tmp, "db")
    if a.redis_check:
        redis_check(a, a.tmp)
    port = 25000 + os.getpid() % 1000
    s = Server(a, db, port, None, os.path.join(a.out, "load.server.log"))
    t = time.time()
    load(a, port)
    print(f"load: {time.time() - t:.0f} s", file=sys.stderr)
    s.stop()
    du = subprocess.run(["du", "-sh", db], capture_output=True, text=True).stdout.split()[0]
    print(f"database on disk: {du}", file=sys.stderr)
    with open(os.path.join(a.out, "du"), "w") as f:
        f.write(du + "\n")
    for rnd in range(a.rounds):
        order = ["limited", "inmem"] if rnd % 2 == 0 else ["inmem", "limited"]
        for mode in order:
            drop_caches()
            s = Server(a, db, port, a.limit if mode == "limited" else None,
                       os.path.join(a.out, f"{mode}-{rnd}.server.log"))
            for name, args in workloads(a):
                raw, rps, p99 = bench(port, args, a.clients)
                with open(os.path.join(a.out, f"{mode}-{rnd}-{name.replace(' ', '_')}.csv"), "w") as f:
                    f.write(raw)
                print(f"round {rnd} {mode} {name}: {rps:,.0f} req/s, p99 {p99} ms", file=sys.stderr)
            with open(os.path.join(a.out, f"{mode}-{rnd}.rss"), "w") as f:
                f.write(f"{s.peak_rss_kib()}\n")
            s.stop()
    shutil.rmtree(tmp, ignore_errors=True)
    print(table(a.out))


if __name__ == "__main__":
    main()
