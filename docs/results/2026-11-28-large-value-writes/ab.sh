#!/bin/bash
# usage: ab.sh ROUNDS BENCHES -- variants are label:bin:extra ; prints round label bench us
rounds=$1; benches=$2; shift 2
for r in $(seq 1 $rounds); do
  for v in "$@"; do
    label=${v%%|*}; rest=${v#*|}; bin=${rest%%|*}; extra=${rest#*|}
    rm -rf /tmp/abdb
    $bin --benchmarks=$benches --db=/tmp/abdb $extra 2>&1 | grep -E "^[a-z0-9_]+ +:" | awk -v r=$r -v e=$label '{c[$1]++; n=$1; if (c[$1]>1) n=$1"#"c[$1]; print r, e, n, $3}'
    du -sb /tmp/abdb | awk -v r=$r -v e=$label '{print r, e, "space_MB", $1/1e6}'
  done
done
