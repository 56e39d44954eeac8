#!/usr/bin/env python3
"""The results page (BENCHMARKS.md) from saved runs.

A saved run is a directory docs/bench/runs/NAME/ holding the logs of one alternating
campaign of tools/compare.py (ENGINE-R.log: one round of one engine) and run.json (the
command, the date, the commit, the machine). The page's generated parts sit between

    <!-- results: NAME [engines=E1,E2,...] -->
    ... (generated: the command, then compare.py's tables of medians)
    <!-- /results -->

and everything else on the page is prose kept by hand. Usage, from the project root:

  tools/results.py save NAME --from DIR --command 'tools/compare.py ...' [--commit C]
      copies the logs a compare.py run left in DIR (its --dir) into docs/bench/runs/NAME,
      with DIR written as {dir}, and records the command, today's date, the commit and the
      machine
  tools/results.py            regenerates every generated part of BENCHMARKS.md
  tools/results.py --check    exits 1 if BENCHMARKS.md is not what the saved runs give
"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = os.path.join(ROOT, "docs", "bench", "runs")
PAGE = os.path.join(ROOT, "BENCHMARKS.md")
BLOCK = re.compile(r"(<!-- results: (\S+)((?: \S+=\S+)*) -->\n)(.*?)(<!-- /results -->)", re.S)
LOG = re.compile(r"^(.+)-(\d+)\.log$")


def machine():
    def first(path, key):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "?"
    mem_kib = first("/proc/meminfo", "MemTotal").split()[0]
    return {
        "cpus": os.cpu_count(),
        "cpu": first("/proc/cpuinfo", "model name"),
        "memory_gib": round(int(mem_kib) / 1048576, 1) if mem_kib.isdigit() else "?",
        "kernel": os.uname().release,
    }


def save(name, src, command, engines_given, commit=""):
    dst = os.path.join(RUNS, name)
    if os.path.isdir(dst) and os.listdir(dst):
        sys.exit(f"{os.path.relpath(dst, ROOT)} is not empty: a saved run is not added to")
    os.makedirs(dst, exist_ok=True)
    src = os.path.abspath(src)
    engines = []
    for f in sorted(os.listdir(src)):
        m = LOG.match(f)
        if not m:
            continue
        with open(os.path.join(src, f), errors="replace") as inp:
            text = inp.read().replace(src, "{dir}")
        with open(os.path.join(dst, f), "w") as out:
            out.write(text)
        if m.group(1) not in engines:
            engines.append(m.group(1))
    if not engines:
        sys.exit(f"{src}: no ENGINE-R.log files")
    commit = commit or subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                      capture_output=True, text=True).stdout.strip()
    info = {"command": command, "date": datetime.date.today().isoformat(), "commit": commit,
            "log_names": engines, "machine": machine()}
    if engines_given:
        info["engines"] = engines_given.split(",")
    with open(os.path.join(dst, "run.json"), "w") as out:
        json.dump(info, out, indent=2)
        out.write("\n")
    print(f"saved {len(os.listdir(dst)) - 1} logs in {os.path.relpath(dst, ROOT)}")


def engines_of(info, given):
    if given:
        return given.split(",")
    # A log named strata-hashkv-0.log came from engine strata:hashkv (compare.py's names).
    return info.get("engines") or [n.replace("-", ":", 1) if n.startswith("strata-") else n
                                   for n in info["log_names"]]


def block(name, opts):
    run_dir = os.path.join(RUNS, name)
    with open(os.path.join(run_dir, "run.json")) as f:
        info = json.load(f)
    given = dict(o.split("=", 1) for o in opts.split())
    engines = engines_of(info, given.get("engines"))
    # A run is tabulated by the tool that made it (compare.py, or beyond_memory.py for reads
    # past memory), as its command says.
    tool = "beyond_memory.py" if info["command"].startswith("tools/beyond_memory.py") else "compare.py"
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", tool),
                          "--from-logs", run_dir, "--engines", ",".join(engines)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{name}: compare.py failed: {out.stderr}")
    lines = [l for l in out.stdout.splitlines()
             if not l.startswith("Logs: ") and not l.startswith("Command: ")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    m = info["machine"]
    rounds = max(sum(1 for f in os.listdir(run_dir) if LOG.match(f) and LOG.match(f).group(1) == n)
                 for n in info["log_names"])
    head = [f"Run {info['date']}, commit {info['commit']}, {rounds} alternating rounds, medians "
            f"({m['cpus']} cores, {m['memory_gib']} GiB; logs: "
            f"[docs/bench/runs/{name}](docs/bench/runs/{name})):", "", "```", info["command"], "```", ""]
    return "\n".join(head + lines) + "\n"


def render(page):
    def sub(m):
        if "<!-- results:" in m.group(4):
            sys.exit(f"BENCHMARKS.md: the block of {m.group(2)} has no closing <!-- /results -->")
        return m.group(1) + block(m.group(2), m.group(3)) + m.group(5)
    return BLOCK.sub(sub, page)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", nargs="?", choices=["save"], help="save a run (else: regenerate the page)")
    ap.add_argument("name", nargs="?")
    ap.add_argument("--from", dest="src")
    ap.add_argument("--command", default="")
    ap.add_argument("--engines", default="", help="save: compare.py's --engines, as given "
                    "(default: read from the log names, which lose a #TAG)")
    ap.add_argument("--commit", default="", help="save: the commit the binary was built from "
                    "(default: HEAD)")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.action == "save":
        if not (a.name and a.src and a.command):
            sys.exit("save needs NAME, --from DIR and --command")
        save(a.name, a.src, a.command, a.engines, a.commit)
        return
    with open(PAGE) as f:
        page = f.read()
    new = render(page)
    if a.check:
        if new != page:
            sys.exit("BENCHMARKS.md differs from what the saved runs give: run tools/results.py")
        print("BENCHMARKS.md is current")
        return
    with open(PAGE, "w") as f:
        f.write(new)
    print(f"BENCHMARKS.md: {len(BLOCK.findall(page))} generated parts")


if __name__ == "__main__":
    main()
