#!/usr/bin/env python3
"""Paired ratios from ab.sh's JSON files: for each benchmark (in run order, repeats
numbered), per round the time per operation of LABEL_B over LABEL_A's, and the median;
and each label's bytes on disk after each benchmark (allocated blocks), over the live
values (num x value_size). usage: summarize.py OUTDIR LABEL ..."""
import json, statistics, sys, glob, re
out, labels = sys.argv[1], sys.argv[2:]
runs = {}  # (label, round) -> [(name, us, disk)]
for f in glob.glob(f"{out}/*.json"):
    m = re.match(r".*/(.+)-(\d+)\.json$", f)
    label, rnd = m.group(1), int(m.group(2))
    d = json.load(open(f))
    rows = []
    seen = {}
    args = d.get("args", {})
    for run in d["runs"]:
        for r in run["results"]:
            seen[r["name"]] = seen.get(r["name"], 0) + 1
            name = r["name"] + ("" if seen[r["name"]] == 1 else f"#{seen[r['name']]}")
            rows.append((name, r["micros_per_op"], r["disk_bytes"]))
    runs[(label, rnd)] = rows
rounds = sorted({r for (_, r) in runs})
names = [n for n, _, _ in runs[(labels[0], rounds[0])]]
live = None
print("µs per operation, median of rounds (min-max); bytes on disk at the end of each step")
for name in names:
    line = [f"{name:14}"]
    for l in labels:
        us = [dict((n, u) for n, u, _ in runs[(l, r)])[name] for r in rounds if (l, r) in runs]
        disk = [dict((n, d) for n, _, d in runs[(l, r)])[name] for r in rounds if (l, r) in runs]
        line.append(f"{l} {statistics.median(us):8.1f} ({min(us):.1f}-{max(us):.1f}) {statistics.median(disk)/1e6:7.0f} MB")
    print("  ".join(line))
print()
print("paired ratios (time of the second label over the first's), median (min-max):")
for a in labels:
    for b in labels:
        if a >= b:
            continue
        for name in names:
            rs = []
            for r in rounds:
                if (a, r) in runs and (b, r) in runs:
                    ua = dict((n, u) for n, u, _ in runs[(a, r)])[name]
                    ub = dict((n, u) for n, u, _ in runs[(b, r)])[name]
                    rs.append(ub / ua)
            if rs:
                print(f"  {b}/{a} {name:14} {statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}) n={len(rs)}")
