#!/usr/bin/env python3
"""Wall time per engine group of a strata-bench run (from its progress lines) beside the
time its benchmarks measured (from its JSON). usage: bench-time.py LOG JSON"""
import json, re, sys, collections
log, js = sys.argv[1], sys.argv[2]
engine = group = None
prev = 0
wall = collections.OrderedDict()
for line in open(log, errors="replace"):
    if line.startswith("Engine:"):
        engine = line.split()[1]
    elif line.startswith("Group:"):
        group = line.split(":", 1)[1].strip()
    m = re.match(r"progress: (\d+) of (\d+) engine groups done, (\d+)m(\d+)s so far", line)
    if m:
        t = int(m.group(3)) * 60 + int(m.group(4))
        wall[(engine, group)] = t - prev
        prev = t
d = json.load(open(js))
meas = collections.defaultdict(float)
for r in d["runs"]:
    meas[(r["engine"], r["group"])] += sum(x.get("seconds") or 0 for x in r["results"])
by_engine = collections.defaultdict(lambda: [0, 0.0])
by_group = collections.defaultdict(lambda: [0, 0.0])
for (e, g), w in wall.items():
    by_engine[e][0] += w; by_engine[e][1] += meas.get((e, g), 0)
    by_group[g][0] += w; by_group[g][1] += meas.get((e, g), 0)
print(f"{'engine':18} {'wall s':>7} {'measured s':>10} {'untimed s':>9}")
for e, (w, m) in sorted(by_engine.items(), key=lambda x: -x[1][0]):
    print(f"{e:18} {w:7d} {m:10.0f} {w - m:9.0f}")
print()
print(f"{'group':45} {'wall s':>7} {'measured s':>10}")
for g, (w, m) in by_group.items():
    print(f"{g:45} {w:7d} {m:10.0f}")
tw = sum(v[0] for v in by_engine.values()); tm = sum(v[1] for v in by_engine.values())
print(f"\ntotal wall {tw} s ({tw/60:.1f} min), measured {tm:.0f} s ({tm/60:.1f} min)")
print("\nlongest engine groups (wall s, measured s):")
for (e, g), w in sorted(wall.items(), key=lambda x: -x[1])[:12]:
    print(f"  {e:18} {g:45} {w:5d} {meas.get((e, g), 0):7.0f}")
