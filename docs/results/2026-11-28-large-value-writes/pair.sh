#!/bin/bash
# usage: pair.sh ROUNDS BIN "ENGINES" BENCHMARKS EXTRA...   -> lines: round engine bench value
rounds=$1; bin=$2; engines=$3; benches=$4; shift 4
for r in $(seq 1 $rounds); do
  for e in $engines; do
    rm -rf /tmp/pairdb
    $bin --engines=$e --benchmarks=$benches --db=/tmp/pairdb "$@" 2>&1 | grep -E "^[a-z0-9_]+ +:" | awk -v r=$r -v e=$e '{c[$1]++; n=$1; if (c[$1]>1) n=$1"#"c[$1]; print r, e, n, $3}'
  done
done
