#!/bin/bash
# The A/B runs of this page: base = strata-bench built at 89fcd96 (before holes; its
# bytes on disk patched to count allocated blocks, as the new build does), new = built at
# the commit named in README.md, LMDB from the new build. Five rounds each, alternating.
set -e
here=$(dirname "$0")
runs="base|/tmp/sb-base|strata-blob new|/tmp/sb-new|strata-blob lmdb|/tmp/sb-new|lmdb"
common="--benchmarks=fillrandom,overwrite,overwrite,readrandom,readseq --write_buffer_size=4194304 --cache_size=8388608 --touch_values=true"
"$here/ab.sh" 5 /tmp/hb-raw-100k-500m "$runs" -- $common --value_size=102400 --num=5000 --blob_compression=false
"$here/ab.sh" 5 /tmp/hb-snappy-100k-500m "$runs" -- $common --value_size=102400 --num=5000
"$here/ab.sh" 5 /tmp/hb-raw-100k-2g "$runs" -- $common --value_size=102400 --num=20000 --blob_compression=false
"$here/ab.sh" 5 /tmp/hb-raw-1m-2g "$runs" -- $common --value_size=1048576 --num=2000 --blob_compression=false
"$here/ab.sh" 5 /tmp/hb-raw-1k-500m "$runs" -- $common --value_size=1024 --num=500000 --blob_compression=false
"$here/ab.sh" 5 /tmp/hb-baseline-1m "base|/tmp/sb-base|strata new|/tmp/sb-new|strata" -- --benchmarks=fillseq,fillrandom,overwrite,readrandom,readseq --num=1000000
for d in raw-100k-500m snappy-100k-500m raw-100k-2g raw-1m-2g raw-1k-500m; do
  "$here/summarize.py" /tmp/hb-$d base new lmdb > "$here/$d.txt"
done
"$here/summarize.py" /tmp/hb-baseline-1m base new > "$here/baseline-1m.txt"
