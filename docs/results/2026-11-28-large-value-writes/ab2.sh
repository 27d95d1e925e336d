#!/bin/bash
rounds=$1; benches=$2; B=$3; shift 3; C="$*"
for r in $(seq 1 $rounds); do
  for v in base nodirect nol0; do
    rm -rf /tmp/abdb
    case $v in base) e="";; nodirect) e="XNODIRECT=1";; nol0) e="XNOL0=1";; esac
    env $e $B --benchmarks=$benches --db=/tmp/abdb $C 2>&1 | grep -E "^[a-z0-9_]+ +:" | awk -v r=$r -v e=$v '{c[$1]++; n=$1; if (c[$1]>1) n=$1"#"c[$1]; print r, e, n, $3}'
    du -sb /tmp/abdb | awk -v r=$r -v e=$v '{print r, e, "space_MB", $1/1e6}'
  done
done
