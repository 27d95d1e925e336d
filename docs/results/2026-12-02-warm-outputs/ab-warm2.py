#!/usr/bin/env python3
"""Paired A/B for warm compaction outputs (J2): for ROUNDS rounds, each config runs on
each variant back to back on a fresh directory; the figure is the named benchmark's
ops/s. Prints the median of paired ratios (and range) of each variant over `base`, and
of each Strata variant over LMDB where LMDB runs. usage: ab-warm.py ROUNDS OUTFILE"""
import subprocess, re, statistics, sys, shutil
rounds = int(sys.argv[1]); out = open(sys.argv[2], "w")
variants = [("base", "/tmp/ab/base", "strata"), ("new", "/tmp/ab/new", "strata"),
            ("new2", "/tmp/ab/new2", "strata"), ("lmdb", "/tmp/ab/base", "lmdb")]
configs = []
for t in (1,):
    configs.append((f"readmodifywrite 100k {t}t", "readmodifywrite", t, True,
        ["--benchmarks=fillseq,readmodifywrite", "--num=100000", f"--threads={t}", "--duration=3"]))
configs.append(("readmodifywrite 100k 1t cache 32MB", "readmodifywrite", 1, True,
    ["--benchmarks=fillseq,readmodifywrite", "--num=100000", "--threads=1", "--duration=3", "--cache_size=33554432"]))
configs.append(("readmodifywrite 1M 1t", "readmodifywrite", 1, True,
    ["--benchmarks=fillseq,readmodifywrite", "--num=1000000", "--threads=1", "--duration=5"]))
configs.append(("readwhilewriting 1M", "readwhilewriting", 1, False,
    ["--benchmarks=fillrandom,readwhilewriting", "--num=1000000", "--duration=5"]))
res = {}
def log(s):
    print(s); out.write(s + "\n"); out.flush()
log("rounds %d; variants %s" % (rounds, [v[0] for v in variants]))
cache = {}
for r in range(rounds):
    for name, bench, t, with_lmdb, args in configs:
        for label, binary, engine in variants:
            if engine == "lmdb" and not with_lmdb:
                continue
            key = (r, label, tuple(args))
            if key not in cache:
                shutil.rmtree("/tmp/abdb", ignore_errors=True)
                p = subprocess.run([binary, f"--engines={engine}", "--db=/tmp/abdb"] + args,
                                   capture_output=True, text=True)
                cache[key] = p
            p = cache[key]
            m = re.search(r"^" + bench + r"\s*:\s*([0-9.]+) micros/op", p.stdout, re.M)
            if not m:
                log(f"r{r} {name} {label}: no result\n{p.stdout[-500:]}{p.stderr[-500:]}"); continue
            threads = t if bench in ("readmodifywrite",) else 1
            ops = threads * 1e6 / float(m.group(1))
            res.setdefault((name, label), {})[r] = ops
            log(f"r{r} {name:34} {label:5} {ops:12.0f} ops/s")
log("\nmedian of paired ratios (ops/s), range")
for name, *_ in configs:
    base = res.get((name, "base"), {})
    for lab in ("new", "new2"):
        v = res.get((name, lab), {})
        rs = [v[r] / base[r] for r in v if r in base]
        if rs:
            log(f"{name:34} {lab}/base {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f}) n={len(rs)}")
    l = res.get((name, "lmdb"), {})
    for label in ("base", "new", "new2"):
        v = res.get((name, label), {})
        rs = [v[r] / l[r] for r in v if r in l]
        if rs:
            log(f"{name:34} {label:5}/lmdb {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f}) n={len(rs)}")
