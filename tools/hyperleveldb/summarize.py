#!/usr/bin/env python3
"""Table of rounds and medians: summarize.py u1 u2 u3 -- p1 p2 p3"""
import json
import re
import statistics
import sys

COLS = [("fill ops/s", "fill_ops_per_s"), ("read ops/s", "read_ops_per_s"),
        ("L0 peak", "l0_peak_fill_and_wait"), ("L0>=8 frac", "l0_ge8_fraction"), ("puts>1ms", "puts_over_1ms"),
        ("puts>1ms s", "puts_over_1ms_s"), ("worst put ms", "worst_put_ms"),
        ("wait s", "wait_s"), ("flushes", "flushes"), ("merges", "merges"),
        ("move ops", "move_ops"), ("moved tables", "moved_tables"),
        ("C=merges+move ops", "C_merges_plus_move_ops"),
        ("merges+moved tables", "C_merges_plus_moved_tables"),
        ("C in fill+wait", "C_fill"),
        ("L0 merges", "L0"), ("merges in reads", "merges_after_fill_phase"),
        ("moves in reads", "moves_after_fill_phase"),
        ("optimistic runs", "optimistic_runs"),
        ("CR GiB", "merge_read_GiB"), ("CW GiB", "merge_write_GiB"),
        ("tables", "tables_end")]


def load(name):
    d = json.load(open("runs/%s.json" % name))
    for line in open("runs/%s.out" % name):
        m = re.match(r"(\w+) (-?[\d.]+)$", line.strip())
        if m:
            d[m.group(1)] = float(m.group(2))
    d["L0"] = d["merges_by_level"].get("L0", 0)
    d["C_fill"] = (d["C_merges_plus_move_ops"] - d["merges_after_fill_phase"]
                   - d["moves_after_fill_phase"])
    d["by_level"] = " ".join("%s:%d" % kv for kv in sorted(d["merges_by_level"].items()))
    return d


def fmt(v):
    if isinstance(v, float) and v != int(v):
        return "%.3f" % v if v < 10 else "{:,.1f}".format(v)
    return "{:,}".format(int(v))


def table(names):
    rows = [load(n) for n in names]
    out = ["| round | " + " | ".join(c for c, _ in COLS) + " | merges by input level |",
           "|---" * (len(COLS) + 2) + "|"]
    for n, d in zip(names, rows):
        out.append("| %s | " % n + " | ".join(fmt(d[k]) for _, k in COLS) + " | %s |" % d["by_level"])
    med = ["median"] + [fmt(statistics.median(d[k] for d in rows)) for _, k in COLS] + ["-"]
    out.append("| " + " | ".join(med) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    args = sys.argv[1:]
    groups, cur = [], []
    for a in args:
        if a == "--":
            groups.append(cur); cur = []
        else:
            cur.append(a)
    groups.append(cur)
    for g in groups:
        print(table(g))
        print()
