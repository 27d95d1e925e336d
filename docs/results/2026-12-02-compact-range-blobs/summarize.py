import json,glob,re,statistics,sys,collections
out=sys.argv[1]; labels=['move','nomove','rblob','lmdb']
runs={}
for f in glob.glob(f"{out}/*.json"):
    m=re.match(r".*/(.+)-(\d+)\.json$",f); d=json.load(open(f)); seen=collections.Counter(); rows={}
    for run in d['runs']:
        for r in run['results']:
            seen[r['name']]+=1; rows[r['name']+('' if seen[r['name']]==1 else '#2')]=r['micros_per_op']
    runs[(m.group(1),int(m.group(2)))]=rows
rounds=sorted({r for _,r in runs})
names=list(runs[('move',rounds[0])].keys())
def ratio(a,b,n):  # time of b over a, per round
    rs=[runs[(b,r)][n]/runs[(a,r)][n] for r in rounds if n in runs.get((a,r),{}) and n in runs.get((b,r),{})]
    return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})" if rs else "-"
print(f"{'row':14} {'move us':>9} {'nomove us':>9}  nomove/move        rblob/move         rblob/nomove       lmdb/move          lmdb/nomove")
for n in names:
    mu=statistics.median([runs[('move',r)][n] for r in rounds]); nu=statistics.median([runs[('nomove',r)][n] for r in rounds])
    print(f"{n:14} {mu:9.1f} {nu:9.1f}  {ratio('move','nomove',n):18} {ratio('move','rblob',n):18} {ratio('nomove','rblob',n):18} {ratio('move','lmdb',n):18} {ratio('nomove','lmdb',n):18}")
