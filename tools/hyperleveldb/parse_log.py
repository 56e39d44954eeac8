#!/usr/bin/env python3
"""Count HyperLevelDB 1.1.0 compactions from a LOG file.

usage: parse_log.py LOG [driver.out]   (driver.out gives phase byte offsets)

Messages counted (db/db_impl.cc of releases/1.1.0):
  "Level-0 table #%llu: %lld bytes %s"            flush (508)
  "Compacting %d@%d + %d@%d files"                merge start (1072)
  "Compacted %d@%d + %d@%d files => %lld bytes"   merge installed (1049)
  "Generated table #%llu: %lld keys, %lld bytes"  merge output table (1037)
  "Moved #%lld to level-%d %lld bytes %s: %s"     one moved table (779, 916)
  "Delete type=2 #%lld"                           table file deleted (295)
Consecutive "Moved" lines with the same target level and the same level
summary come from one move operation (one LogAndApply, summary printed after).
Bytes read by merges = sizes of all deleted tables (a table is deleted only
after it was a merge input; moved tables keep their file).
"""
import json
import re
import sys

GiB = float(1 << 30)


def phases(out_path):
    offs = {}
    if out_path:
        for line in open(out_path):
            m = re.match(r"(log_offset_\w+) (-?\d+)", line)
            if m:
                offs[m.group(1)] = int(m.group(2))
    return offs


def parse(log_path, offs):
    data = open(log_path, "rb").read()
    cut_fill = offs.get("log_offset_reads_start", len(data))
    pos = 0
    size = {}
    st = dict(flushes=0, flush_bytes=0, merges=0, merges_by_level={},
              merge_inputs_by_level={}, merge_write_bytes=0, merge_read_bytes=0,
              merge_out_tables=0, move_ops=0, moved_tables=0, moved_by_level={},
              moved_bytes=0, deleted_tables=0, optimistic_runs=0,
              optimistic_iters=0, merges_after_fill_phase=0,
              moves_after_fill_phase=0, compacting_lines=0, trivial_l0_merges=0,
              full_level_like=0)
    last_move_key = None
    for raw in data.split(b"\n"):
        line_off = pos
        pos += len(raw) + 1
        line = raw.decode("utf-8", "replace")
        # strip "YYYY/MM/DD-HH:MM:SS.uuuuuu TID "
        m = re.match(r"\S+ \S+ (.*)", line)
        if not m:
            continue
        msg = m.group(1)
        is_move = False
        if (mm := re.match(r"Level-0 table #(\d+): (\d+) bytes OK", msg)):
            if int(mm.group(2)) > 0:  # a 0-byte flush (driver nudge) makes no table
                st["flushes"] += 1
            st["flush_bytes"] += int(mm.group(2))
            size[int(mm.group(1))] = int(mm.group(2))
        elif (mm := re.match(r"Compacting (\d+)@(\d+) \+ (\d+)@(\d+) files", msg)):
            st["compacting_lines"] += 1
        elif (mm := re.match(r"Compacted (\d+)@(\d+) \+ (\d+)@(\d+) files => (\d+) bytes", msg)):
            a, la, b = int(mm.group(1)), int(mm.group(2)), int(mm.group(3))
            st["merges"] += 1
            k = "L%d" % la
            st["merges_by_level"][k] = st["merges_by_level"].get(k, 0) + 1
            st["merge_inputs_by_level"][k] = st["merge_inputs_by_level"].get(k, 0) + a + b
            st["merge_write_bytes"] += int(mm.group(5))
            if la == 0 and b == 0:
                st["trivial_l0_merges"] += 1
            if line_off >= cut_fill:
                st["merges_after_fill_phase"] += 1
        elif (mm := re.match(r"Generated table #(\d+): (\d+) keys, (\d+) bytes", msg)):
            size[int(mm.group(1))] = int(mm.group(3))
            st["merge_out_tables"] += 1
        elif (mm := re.match(r"Moved #(\d+) to level-(\d+) (\d+) bytes (\S+): (.*)", msg)):
            is_move = True
            key = (mm.group(2), mm.group(5))
            if key != last_move_key:
                st["move_ops"] += 1
                if line_off >= cut_fill:
                    st["moves_after_fill_phase"] += 1
            last_move_key = key
            st["moved_tables"] += 1
            k = "to_L%s" % mm.group(2)
            st["moved_by_level"][k] = st["moved_by_level"].get(k, 0) + 1
            st["moved_bytes"] += int(mm.group(3))
        elif (mm := re.match(r"Delete type=2 #(\d+)", msg)):
            n = int(mm.group(1))
            st["deleted_tables"] += 1
            st["merge_read_bytes"] += size.get(n, 0)
        elif msg.startswith("Optimistic compaction started"):
            st["optimistic_runs"] += 1
        elif (mm := re.match(r"Optimistic compaction ended after (\d+) iterations", msg)):
            st["optimistic_iters"] += int(mm.group(1))
        if not is_move and not msg.startswith("Moved"):
            last_move_key = None
    st["C_merges_plus_move_ops"] = st["merges"] + st["move_ops"]
    st["C_merges_plus_moved_tables"] = st["merges"] + st["moved_tables"]
    st["merge_read_GiB"] = round(st["merge_read_bytes"] / GiB, 3)
    st["merge_write_GiB"] = round(st["merge_write_bytes"] / GiB, 3)
    return st


if __name__ == "__main__":
    offs = phases(sys.argv[2] if len(sys.argv) > 2 else None)
    print(json.dumps(parse(sys.argv[1], offs), indent=1, sort_keys=True))
