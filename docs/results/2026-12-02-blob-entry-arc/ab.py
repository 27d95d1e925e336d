# Paired ratios of two builds reading the same database, from lines "LABEL t1 t2 ..."
# (µs per operation of each benchmark in the run, in order), rounds alternating.
# usage: ab.py FILE BASE NEW NAME...   (NAME: one per column)
import statistics, sys
path, base, new, *names = sys.argv[1:]
rows = [l.split() for l in open(path) if l.strip()]
a = [list(map(float, r[1:])) for r in rows if r[0] == base]
b = [list(map(float, r[1:])) for r in rows if r[0] == new]
n = min(len(a), len(b))
for j, name in enumerate(names):
    rs = sorted(b[i][j] / a[i][j] for i in range(n))
    print(f"| {name} | {statistics.median(x[j] for x in a[:n]):.3f} | {statistics.median(x[j] for x in b[:n]):.3f} | "
          f"{statistics.median(rs):.2f} ({rs[0]:.2f}-{rs[-1]:.2f}) |")
print(f"\n{n} rounds")
