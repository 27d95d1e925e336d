#!/usr/bin/env python3
"""Paired A/B of blob value compression: strata-blob with --blob_compression=true (snappy)
and =false (raw), and LMDB, back to back on fresh directories, ROUNDS rounds, at each value
size (about 100 MB of data, the value-size suite's shape: 4 MB write buffer, 8 MB cache,
every value read). Prints each row's micros/op per run, then medians of paired ratios of
time per op (>1: the second is faster). usage: ab-blobz.py BIN ROUNDS OUTFILE"""
import subprocess, re, statistics, sys, shutil
binary = sys.argv[1]; rounds = int(sys.argv[2]); out = open(sys.argv[3], "w")
variants = [("rocksblob", "rocksdb-blob", []),
            ("raw", "strata-blob", []),
            ]
rows = ["fillrandom", "overwrite", "readrandom", "readseq", "compact", "readrandom", "readseq"]
sizes = [102400, 262144, 1048576]
res = {}
def log(s):
    print(s); out.write(s + "\n"); out.flush()
for r in range(rounds):
    for size in sizes:
        num = max(100, (100 << 20) // size)
        for label, engine, extra in variants:
            shutil.rmtree("/tmp/abdb", ignore_errors=True)
            args = [binary, f"--engines={engine}", "--db=/tmp/abdb",
                    "--benchmarks=" + ",".join(rows), f"--num={num}", f"--value_size={size}",
                    "--write_buffer_size=4194304", "--cache_size=8388608",
                    "--touch_values=true", "--read_budget=10"] + extra
            p = subprocess.run(args, capture_output=True, text=True)
            found = re.findall(r"^(\w+)\s*:\s*([0-9.]+) micros/op", p.stdout, re.M)
            names = [n for n, _ in found]
            if len(found) < len(rows) - (1 if engine == "lmdb" else 0):
                log(f"r{r} {size} {label}: short output\n{p.stdout[-400:]}{p.stderr[-400:]}")
            seen = {}
            for n, us in found:
                k = seen.get(n, 0); seen[n] = k + 1
                res.setdefault((size, n, k, label), {})[r] = float(us)
            log(f"r{r} {size:8} {label:6} " + " ".join(f"{n}={us}" for n, us in found))
log("\nmedian of paired ratios of time per op, range (first over second: >1, the second is faster)")
for size in sizes:
    for n in dict.fromkeys(rows):
        for k in (0, 1):
            for a, b in (("rocksblob", "raw"),):
                A = res.get((size, n, k, a), {}); B = res.get((size, n, k, b), {})
                rs = [A[r] / B[r] for r in A if r in B]
                if rs:
                    log(f"{size:8} {n:11}#{k} {a}/{b} {statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f}) n={len(rs)}")
