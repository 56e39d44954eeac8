"""Puts and gets per second from Python: strata against plyvel (LevelDB), same data, same
machine. Usage: python tools/python-bench.py [N] (in a venv with strata and plyvel
installed: `pip install ./bindings/python plyvel`). Prints a markdown table of medians of
alternating rounds."""

import os
import random
import shutil
import statistics
import sys
import tempfile
import time

import plyvel
import strata

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
ROUNDS = 3
rng = random.Random(1)
keys = [b"%016d" % rng.randrange(10**15) for _ in range(N)]
value = os.urandom(100)


def run(name):
    d = tempfile.mkdtemp(prefix=f"pybench-{name}-")
    try:
        if name == "strata":
            db = strata.DB(d, create_if_missing=True)
            put, get, close = db.put, db.get, db.close
        else:
            db = plyvel.DB(d, create_if_missing=True)
            put, get, close = db.put, db.get, db.close
        t = time.perf_counter()
        for k in keys:
            put(k, value)
        puts = N / (time.perf_counter() - t)
        shuffled = keys[:]
        rng.shuffle(shuffled)
        t = time.perf_counter()
        for k in shuffled:
            get(k)
        gets = N / (time.perf_counter() - t)
        close()
        return puts, gets
    finally:
        shutil.rmtree(d, ignore_errors=True)


res = {"strata": [], "plyvel": []}
for _ in range(ROUNDS):
    for name in res:
        res[name].append(run(name))
print(f"{N} random 16-byte keys, 100-byte values, {ROUNDS} alternating rounds, medians:\n")
print("| library | puts/s | gets/s |")
print("|---|---|---|")
for name, rs in res.items():
    print(f"| {name} | {statistics.median(r[0] for r in rs):,.0f} | "
          f"{statistics.median(r[1] for r in rs):,.0f} |")
