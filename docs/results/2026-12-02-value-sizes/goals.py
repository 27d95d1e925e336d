#!/usr/bin/env python3
"""Issue 50's goal table from a value-size run: for each value size and row, the peer's
time per operation over Strata's (above 1: Strata faster), the median of the paired
rounds' ratios with their range. usage: goals.py JSON [ENGINE]  (ENGINE: strata-blob)"""
import collections, json, statistics, sys

data = json.load(open(sys.argv[1]))
me = sys.argv[2] if len(sys.argv) > 2 else "strata-blob"
times = collections.defaultdict(dict)  # (group, position, name) -> engine -> round -> us
for run in data["runs"]:
    for b in run["results"]:
        if b.get("micros_per_op"):
            key = (run["group"], b["position"], b["name"])
            times[key].setdefault(run["engine"], {})[run["round"]] = b["micros_per_op"]

def cell(key, peer):
    mine, theirs = times[key].get(me, {}), times[key].get(peer, {})
    rs = [theirs[r] / mine[r] for r in mine if r in theirs]
    if not rs:
        return "-"
    m = statistics.median(rs)
    text = f"{m:.2f} ({min(rs):.2f}-{max(rs):.2f})"
    return f"**{text}**" if m < 1 else text

peers = ["lmdb", "leveldb-dbbench", "rocksdb-blob", "rocksdb"]
names = {1: "fillrandom", 2: "overwrite", 3: "readrandom", 4: "readseq",
         6: "readrandom after compaction", 7: "readseq after compaction"}
print(f"| value size | row | {' | '.join(peers)} |")
print("|---|---|" + "---:|" * len(peers))
groups = sorted({k[0] for k in times}, key=lambda g: int(g.split()[-1]))
for g in groups:
    size = int(g.split()[-1])
    label = f"{size} B" if size < 1024 else f"{size // 1024} KB" if size < 1 << 20 else "1 MB"
    for pos, name in names.items():
        key = next((k for k in times if k[0] == g and k[1] == pos), None)
        if key:
            print(f"| {label} | {name} | " + " | ".join(cell(key, p) for p in peers) + " |")
