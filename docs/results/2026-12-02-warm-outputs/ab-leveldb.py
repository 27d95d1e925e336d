#!/usr/bin/env python3
"""Paired: Strata before (1ee8f7d) and after (72a53e7) warm outputs (J2, J3) against
LevelDB's own db_bench, LevelDB's page rows at 1 M entries, 1 thread. usage: ldb.py ROUNDS OUT"""
import subprocess, re, statistics, sys, shutil
rounds = int(sys.argv[1]); out = open(sys.argv[2], "w")
final = "/tmp/ab/new3"
variants = [("before", "/tmp/ab/base", "strata"), ("after", final, "strata"), ("leveldb", final, "leveldb-dbbench")]
args = ["--benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq", "--num=1000000"]
res = {}
def log(s):
    print(s); out.write(s + "\n"); out.flush()
for r in range(rounds):
    for label, binary, engine in variants:
        shutil.rmtree("/tmp/abdb", ignore_errors=True)
        p = subprocess.run([binary, f"--engines={engine}", "--db=/tmp/abdb"] + args, capture_output=True, text=True)
        for name, us in re.findall(r"^(\w+)\s*:\s*([0-9.]+) micros/op", p.stdout, re.M):
            res.setdefault(name, {}).setdefault(label, {})[r] = float(us)
            log(f"r{r} {name:11} {label:8} {float(us):8.3f} us/op")
log("\nmedian of paired ratios of time per op (LevelDB's over Strata's; before's over after's), range")
for name, v in res.items():
    for a in ("before", "after"):
        rs = [v["leveldb"][r] / v[a][r] for r in v[a] if r in v.get("leveldb", {})]
        log(f"{name:11} leveldb/{a:6} {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f}) n={len(rs)}")
    rs = [v["before"][r] / v["after"][r] for r in v["after"] if r in v["before"]]
    log(f"{name:11} before/after  {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f}) n={len(rs)}")
