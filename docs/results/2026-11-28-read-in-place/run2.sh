#!/bin/bash
label=$1; shift
/tmp/new-target/release/strata-bench --engines=strata-blob --benchmarks=fillrandom,overwrite,readrandom,readseq,compact,readrandom,readseq --value_size=102400 --num=2000 --cache_size=8388608 --touch_values "$@" 2>&1 | grep -E "^(fillrandom|overwrite|readrandom|readseq|compact) " | awk -v l="$label" '{print l, $1, $3}'
