import sys,statistics,collections
rows=collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r,label,bench,us=line.split()
    # occurrences: readrandom/readseq appear twice (before/after compaction)
    key=(r,label)
    rows[key].setdefault('seq',[]).append((bench,us))
def series(r,label):
    out={}
    seen=collections.Counter()
    for b,us in rows[(r,label)]['seq']:
        seen[b]+=1
        name=b if seen[b]==1 else b+' (after compaction)'
        if us!='n/a': out[name]=float(us)
    return out
rounds=sorted({k[0] for k in rows})
labels=sys.argv[2:]
a,b=labels[0],labels[1]
names=list(series(rounds[0],a).keys())
for n in names:
    rat=[]; va=[]; vb=[]
    for r in rounds:
        sa,sb=series(r,a),series(r,b)
        if n in sa and n in sb:
            rat.append(sb[n]/sa[n]); va.append(sa[n]); vb.append(sb[n])
    if rat:
        print(f"{n:35s} {a} {statistics.median(va):9.1f}  {b} {statistics.median(vb):9.1f}  {b}/{a} time: median {statistics.median(rat):.2f} range {min(rat):.2f}-{max(rat):.2f} (n={len(rat)})")
