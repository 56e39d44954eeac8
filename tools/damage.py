#!/usr/bin/env python3
"""Damage a database's files at random and run the `strata` CLI on each copy: no panics, no hangs.

Usage (from the project root, after `cargo build --release -p strata-cli -p strata-bench`):
  tools/damage.py [--presets default,blob,...] [--copies 25] [--seed 1] [--dir DIR]
                  [--only NAME_PART] [--max-offset BYTES]

For each preset it builds one database (strata-bench: fills, overwrites and deletes with
tiny memtables and tables, values from 40 B to 3 KB, one write left in the WAL; the presets
with L0 in persistent memory are loaded through the CLI, their region in the database's
directory). Then, per copy, it damages one of its files (bits flipped, truncated, or a run
of bytes zeroed) and runs `check`, `count`, `scan`, `get`, `info`, `repair`, `count` and
`check` on it. A command that panics, dies of a signal or runs past two minutes is a
failure: its copy is kept under DIR/bad-* and the script exits 1. Wrong answers are the Rust
corruption and repair tests' business (crates/strata/tests); this finds the damage nobody
thought to write a test for. `--only matrix --max-offset 40000000` aims at the matrix's
region and its first 40 MB (where a small database's rows are).
"""
import argparse
import os
import random
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLI = os.path.join(ROOT, "target/release/strata")
BENCH = os.path.join(ROOT, "target/release/strata-bench")
PMEM = ("matrixkv", "matrixkv-bloom", "matrixkv-idle", "rocksdb-l0-nvm")
DEFAULT_PRESETS = "default,leveldb,blob,wisckey,hashkv,hashkv-wt,cleveldb,ohdb-l0p,rocksdb-l0-nvm,matrixkv"


def run(args, timeout=120):
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout)
        return p.returncode, p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout", ""


def build(preset, base, rng, work):
    if preset in PMEM:
        for part in range(3):
            lines = []
            for _ in range(12000):
                lines.append("k%08d\t%s\n" % (rng.randrange(40000), ("v%d-" % part) * 200))
            load = os.path.join(work, "load.txt")
            with open(load, "w") as f:
                f.write("".join(lines))
            rc, err = run([CLI, "load", "--db", base, "--create", "--preset", preset, "-i", load], 600)
            if rc != 0:
                return err
        run([CLI, "delete", "--db", base, "k00000007"])
    else:
        rc, err = run([BENCH, "--engine=strata", f"--preset={preset}", f"--db={base}",
                       "--benchmarks=fillrandom,overwrite,deleterandom", "--num=30000",
                       "--write_buffer_size=262144", "--target_file_size_base=131072",
                       "--max_bytes_for_level_base=524288", "--value_size_dist=mix:40:3000:70",
                       "--progress=none"], 600)
        if rc != 0:
            return err
    rc, err = run([CLI, "put", "--db", base, "tail-key", "tail-value"])
    return None if rc == 0 else err


def damage(path, rng, max_offset):
    size = os.path.getsize(path)
    limit = min(size, max_offset or size)
    how = rng.choice(["flip", "flip", "truncate", "zero"])
    with open(path, "r+b") as f:
        if how == "flip":
            for _ in range(rng.randint(1, 4)):
                off = rng.randrange(limit)
                f.seek(off)
                b = f.read(1)
                f.seek(off)
                f.write(bytes([b[0] ^ (1 << rng.randrange(8))]))
        elif how == "truncate":
            f.truncate(rng.randrange(limit))
        else:
            off = rng.randrange(limit)
            f.seek(off)
            f.write(b"\0" * min(size - off, rng.randint(1, 8192)))
    return how, size


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--presets", default=DEFAULT_PRESETS)
    ap.add_argument("--copies", type=int, default=25, help="damaged copies per preset")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default="/tmp/strata-damage")
    ap.add_argument("--only", help="damage only files whose path contains this")
    ap.add_argument("--max-offset", type=int, default=0, help="damage only the first BYTES of a file")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    bad = 0
    for preset in a.presets.split(","):
        base = os.path.join(a.dir, f"base-{preset}")
        if not os.path.exists(os.path.join(base, "CURRENT")):
            shutil.rmtree(base, ignore_errors=True)
            err = build(preset, base, rng, a.dir)
            if err is not None:
                print(f"{preset}: building its database failed: {err[-600:]}")
                bad += 1
                continue
        for i in range(a.copies):
            d = os.path.join(a.dir, "copy")
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(base, d)
            files = [os.path.join(p, f) for p, _, fs in os.walk(d) for f in fs if f != "LOCK"]
            files = [f for f in files if os.path.getsize(f) > 0]
            if a.only:
                files = [f for f in files if a.only in f] or files
            victim = rng.choice(files)
            how, size = damage(victim, rng, a.max_offset)
            what = f"{preset} #{i}: {how} {os.path.relpath(victim, d)} ({size} B)"
            for step in (["check"], ["count"], ["scan"], ["get", "tail-key"], ["info"], ["repair"],
                         ["count"], ["check"]):
                rc, err = run([CLI, step[0], "--db", d] + step[1:])
                if rc == "timeout" or rc < 0 or rc >= 100 or "panicked" in err:
                    print(f"FAIL {what}: `strata {step[0]}` exited {rc}: {err[-600:]}", flush=True)
                    shutil.copytree(d, os.path.join(a.dir, f"bad-{preset}-{i}"), dirs_exist_ok=True)
                    bad += 1
                    break
            else:
                print(f"ok   {what}", flush=True)
    print(f"{bad} failures")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
