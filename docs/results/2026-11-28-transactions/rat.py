import collections,statistics,sys
a,b=sys.argv[1],sys.argv[2]
d=collections.defaultdict(dict)
for l in sys.stdin:
    r,lab,t,v=l.split(); d[(r,t)][lab]=float(v)
for t in sorted({k[1] for k in d}, key=int):
    rs=[d[k][a]/d[k][b] for k in d if k[1]==t and a in d[k] and b in d[k]]
    va=statistics.median([d[k][a] for k in d if k[1]==t and a in d[k]]); vb=statistics.median([d[k][b] for k in d if k[1]==t and b in d[k]])
    if rs: print(f"{t:>3} threads: {a} {va:9.0f}/s  {b} {vb:9.0f}/s  {a}/{b} median {statistics.median(rs):.2f} ({', '.join('%.2f'%x for x in rs)})")
