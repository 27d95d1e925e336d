import sys, collections, statistics
# stdin: round engine bench value(us/op). argv[1]=A argv[2]=B ; prints median of B/A (A faster when >1) per bench
a, b = sys.argv[1], sys.argv[2]
d = collections.defaultdict(dict)
order = []
for line in sys.stdin:
    r, e, n, v = line.split()
    d[(r, n)][e] = float(v)
    if n not in order: order.append(n)
for n in order:
    rs = [d[k][b] / d[k][a] for k in d if k[1] == n and a in d[k] and b in d[k]]
    va = [d[k][a] for k in d if k[1] == n and a in d[k]]
    vb = [d[k][b] for k in d if k[1] == n and b in d[k]]
    if rs:
        print(f"{n:14} {a} {statistics.median(va):9.2f}  {b} {statistics.median(vb):9.2f}  {b}/{a} time ratio median {statistics.median(rs):.2f} (min {min(rs):.2f} max {max(rs):.2f}, n={len(rs)})")
