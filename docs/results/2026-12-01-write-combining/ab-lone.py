#!/usr/bin/env python3
import subprocess, re, statistics, sys, shutil
rounds = int(sys.argv[1]); out = open(sys.argv[2], "w")
variants = [("base", "/tmp/ab/cur"), ("new", "/tmp/ab/norec")]
configs = [
 ("randomtransaction 1000 keys 1t", ["--benchmarks=randomtransaction", "--num=1000", "--threads=1", "--duration=3"]),
 ("randomtransaction 100000 keys 1t", ["--benchmarks=randomtransaction", "--num=100000", "--threads=1", "--duration=3"]),
 ("randomtransaction 1000 keys 16t", ["--benchmarks=randomtransaction", "--num=1000", "--threads=16", "--duration=3"]),
 ("fillseq+readmodifywrite 1t", ["--benchmarks=fillseq,readmodifywrite", "--num=100000", "--threads=1", "--duration=3"]),
]
res = {}
def log(s):
    print(s); out.write(s + "\n"); out.flush()
for r in range(rounds):
    for name, args in configs:
        for label, binary in variants:
            shutil.rmtree("/tmp/abdb", ignore_errors=True)
            p = subprocess.run([binary, "--engines=strata", "--db=/tmp/abdb"] + args, capture_output=True, text=True)
            m = re.findall(r"^(\w+)\s*:\s*([0-9.]+) micros/op", p.stdout, re.M)
            t = int(re.search(r"--threads=(\d+)", " ".join(args)).group(1))
            ops = t * 1e6 / float(m[-1][1])
            res.setdefault(name, {}).setdefault(label, {})[r] = ops
            log(f"r{r} {name:34} {label:5} {ops:12.0f} ops/s")
log("\nmedian of paired ratios, new over base (ops/s), range")
for name, _ in configs:
    b, n = res[name]["base"], res[name]["new"]
    rs = [n[r] / b[r] for r in n if r in b]
    log(f"{name:34} {statistics.median(rs):.3f} ({min(rs):.3f}-{max(rs):.3f}) n={len(rs)}")
