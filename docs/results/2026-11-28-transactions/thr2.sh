#!/bin/bash
# usage: thr2.sh ROUNDS BENCH "THREADS" label:engine:bin ... -> round label threads ops/s
rounds=$1; bench=$2; threads=$3; shift 3
for r in $(seq 1 $rounds); do for t in $threads; do for v in "$@"; do
  IFS=: read label engine bin <<< "$v"; rm -rf /tmp/thdb /tmp/thdb.json
  $bin --engines=$engine --benchmarks=$bench --num=${NUM:-100000} --threads=$t --db=/tmp/thdb --json=/tmp/thdb.json $EXTRA > /dev/null 2>&1
  python3 - "$r" "$label" "$t" "$bench" <<'PY'
import json,sys
d=json.load(open('/tmp/thdb.json'))
r,l,t,b=sys.argv[1:]
def walk(o):
    if isinstance(o,dict):
        if o.get('name')==b.split(',')[-1] and 'ops_per_sec' in o: print(r,l,t,'%.0f'%o['ops_per_sec'])
        for v in o.values(): walk(v)
    elif isinstance(o,list):
        for v in o: walk(v)
walk(d)
PY
done; done; done
