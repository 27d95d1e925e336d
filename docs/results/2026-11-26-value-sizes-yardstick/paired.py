"""Paired ratios of LevelDB's db_bench over strata-blob and over strata, per row, from a
strata-bench --json file with the three columns (the summary pairs against `strata` only).
Usage: python3 paired.py value-sizes.json"""
import collections
import json
import statistics
import sys

doc = json.load(open(sys.argv[1]))
cells = collections.defaultdict(dict)
for run in doc["runs"]:
    for r in run["results"]:
        key = (run["group_index"], r["position"], run["group"], r["name"])
        cells[key][(run["engine"], run["round"])] = r["micros_per_op"]
rounds = sorted({run["round"] for run in doc["runs"]})
for key in sorted(cells):
    v = cells[key]
    line = [f"{key[2]:>18} {key[3]:<11}"]
    for engine in ("strata-blob", "strata"):
        rs = [v[("leveldb-dbbench", i)] / v[(engine, i)] for i in rounds
              if ("leveldb-dbbench", i) in v and (engine, i) in v]
        if rs:
            line.append(f"{engine}: {statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})")
    print("  ".join(line))
