# Paired A/B summary: per row, the median (range) over rounds of each pair's time ratio.
# usage: summarize.py DIR BASE NEW [PEER]   (files DIR/LABEL-ROUND.json from ab.sh)
import json, glob, re, statistics, sys, collections
out, base, new = sys.argv[1:4]
peer = sys.argv[4] if len(sys.argv) > 4 else None
runs = {}
for f in glob.glob(f"{out}/*.json"):
    m = re.match(r".*/(.+)-(\d+)\.json$", f)
    d = json.load(open(f)); seen = collections.Counter(); rows = {}
    for run in d['runs']:
        for r in run['results']:
            seen[r['name']] += 1
            rows[r['name'] + ('' if seen[r['name']] == 1 else ' #2')] = r['micros_per_op']
    runs[(m.group(1), int(m.group(2)))] = rows
rounds = sorted({r for _, r in runs})
names = list(runs[(base, rounds[0])].keys())
def ratio(a, b, n):  # time of b over time of a, per round
    rs = [runs[(b, r)][n] / runs[(a, r)][n] for r in rounds
          if n in runs.get((a, r), {}) and n in runs.get((b, r), {})]
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})" if rs else "-"
hdr = f"| row | {base} µs | {new} µs | {new}/{base} time |"
if peer: hdr += f" {peer}/{base} | {peer}/{new} |"
print(hdr); print("|---" * (hdr.count("|") - 1) + "|")
for n in names:
    med = lambda l: statistics.median([runs[(l, r)][n] for r in rounds if n in runs[(l, r)]])
    line = f"| {n} | {med(base):.3f} | {med(new):.3f} | {ratio(base, new, n)} |"
    if peer: line += f" {ratio(base, peer, n)} | {ratio(new, peer, n)} |"
    print(line)
print(f"\n{len(rounds)} rounds")
