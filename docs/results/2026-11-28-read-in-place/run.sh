#!/bin/bash
# usage: run.sh LABEL BIN ENGINE EXTRA...
label=$1; bin=$2; eng=$3; shift 3
$bin --engines=$eng --benchmarks=fillrandom,readrandom,readseq,compact,readrandom,readseq --value_size=102400 --num=2000 --cache_size=8388608 --touch_values "$@" 2>&1 | grep -E "^(fillrandom|readrandom|readseq|compact) " | awk -v l="$label" '{print l, $1, $3}'
