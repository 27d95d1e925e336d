#!/bin/bash
# Alternates engine runs, round by round; each run on a fresh directory, its JSON kept.
# usage: ab.sh ROUNDS OUTDIR "label|binary|engine ..." -- strata-bench flags...
rounds=$1; out=$2; runs=$3; shift 4
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for v in $runs; do
    IFS='|' read -r label bin engine <<< "$v"
    rm -rf /tmp/holes-db
    "$bin" --engines="$engine" --db=/tmp/holes-db --json="$out/$label-$r.json" "$@" > "$out/$label-$r.txt" 2>&1
    echo "round $r $label done"
  done
done
