#!/usr/bin/env python3
"""Paired A/B: for ROUNDS rounds, for each config, run each variant back to back; print
ops/s per run and, at the end, the median of paired ratios (variant over the first) per
config. usage: ab2.py ROUNDS OUTFILE"""
import subprocess, re, statistics, sys, json, shutil
rounds = int(sys.argv[1]); out = open(sys.argv[2], "w")
variants = [("base", "/tmp/ab/base", "strata"), ("new", "/tmp/ab/new", "strata"),
            ("lmdb", "/tmp/ab/base", "lmdb")]
configs = []
for keys in (1000, 100000):
    for t in (1, 4, 16):
        configs.append((f"randomtransaction {keys} keys {t}t",
            ["--benchmarks=randomtransaction", f"--num={keys}", f"--threads={t}", "--duration=3"]))
for t in (1, 4, 16):
    configs.append((f"fillrandom 8B {t}t", ["--benchmarks=fillrandom", "--num=100000",
        f"--threads={t}", "--value_size=8", "--duration=3"]))
configs.append(("fillsync 4t", ["--benchmarks=fillsync", "--num=2000", "--threads=4"]))
res = {}
def log(s):
    print(s); out.write(s + "\n"); out.flush()
log("rounds %d; variants %s" % (rounds, [v[0] for v in variants]))
for r in range(rounds):
    for name, args in configs:
        for label, binary, engine in variants:
            if engine == "lmdb" and "randomtransaction" not in name:
                continue
            shutil.rmtree("/tmp/abdb", ignore_errors=True)
            p = subprocess.run([binary, f"--engines={engine}", "--db=/tmp/abdb"] + args,
                               capture_output=True, text=True)
            m = re.search(r"^\w+\s*:\s*([0-9.]+) micros/op", p.stdout, re.M)
            if not m:
                log(f"r{r} {name} {label}: no result\n{p.stdout[-500:]}{p.stderr[-500:]}"); continue
            t = int(re.search(r"--threads=(\d+)", " ".join(args)).group(1))
            ops = t * 1e6 / float(m.group(1))
            res.setdefault((name, label), {})[r] = ops
            log(f"r{r} {name:32} {label:5} {ops:12.0f} ops/s")
log("\nmedian of paired ratios (ops/s over base's; and strata over lmdb), range")
for name, _ in configs:
    base = res.get((name, "base"), {})
    for label in ("new", "lmdb"):
        v = res.get((name, label), {})
        rs = [v[r] / base[r] for r in v if r in base]
        if rs:
            log(f"{name:32} {label:5}/base {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f}) n={len(rs)}")
    l = res.get((name, "lmdb"), {})
    for label in ("base", "new"):
        v = res.get((name, label), {})
        rs = [v[r] / l[r] for r in v if r in l]
        if rs:
            log(f"{name:32} {label:5}/lmdb {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f}) n={len(rs)}")
