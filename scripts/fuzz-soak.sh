#!/usr/bin/env bash
# Long fuzzing runs measured in CPU time, resumable across sessions.
#
#   scripts/fuzz-soak.sh [--cpu-seconds N] [--chunk N] [--jobs J] [TARGET...]
#
# Runs each cargo-fuzz target (default: all of fuzz/fuzz_targets) until the CPU time
# recorded for it in the ledger reaches N seconds (default 3600, one CPU-hour). Work is
# done in chunks of --chunk seconds of wall time (default 600); after each chunk one line is
# appended to the ledger (fuzz/soak-ledger.tsv): date, commit, target, CPU seconds,
# executions, coverage, result. A run cut short loses at most its current chunk, and the
# next call picks up where the ledger stands. The corpus (fuzz/corpus/TARGET) persists
# between runs; fuzz/seeds/TARGET is read as extra input.
#
# --jobs targets run side by side (default 2), each at nice 19 so other work comes first.
# The targets must be built (make fuzz-build). A crash, timeout (25 s per input) or
# out-of-memory (2 GiB) stops that target: its input is in fuzz/artifacts/TARGET/ and the
# ledger line says "FAILED".
set -euo pipefail

cd "$(dirname "$0")/../fuzz"
# nice only orders processes within one scheduling autogroup: started in a session of its
# own (setsid), this script would get as much CPU as everything else together. As the
# session's leader, it lowers its whole autogroup instead.
if [[ $(awk '{ print $6 }' /proc/$$/stat 2>/dev/null) == "$$" && -w /proc/self/autogroup ]]; then
    echo 19 > /proc/self/autogroup 2>/dev/null || true
fi
budget=3600
chunk=600
jobs=2
targets=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        --cpu-seconds) budget=$2; shift 2 ;;
        --chunk) chunk=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if [[ ${#targets[@]} -eq 0 ]]; then
    for f in fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi

bin_dir=target/x86_64-unknown-linux-gnu/release
ledger=soak-ledger.tsv
[[ -f $ledger ]] || printf 'date\tcommit\ttarget\tcpu_s\texecs\tcov\tresult\n' > "$ledger"
# The commit the targets were built from (make fuzz-build writes it), else HEAD.
commit=$(cat "$bin_dir/BUILT_COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)

spent() { # CPU seconds the ledger holds for target $1
    awk -F'\t' -v t="$1" '$3 == t && $7 == "ok" { s += $4 } END { printf "%d", s }' "$ledger"
}

run_target() {
    local t=$1
    local bin=$bin_dir/$t
    [[ -x $bin ]] || { echo "$t: not built (make fuzz-build)" >&2; return 1; }
    mkdir -p "corpus/$t" "artifacts/$t"
    local seeds=()
    [[ -d seeds/$t ]] && seeds=("seeds/$t")
    while :; do
        local have left this
        have=$(spent "$t")
        left=$((budget - have))
        ((left > 0)) || { echo "$t: $have CPU s in the ledger, done"; return 0; }
        this=$((left < chunk ? left : chunk))
        local log times rc=0
        log=$(mktemp) times=$(mktemp)
        # libFuzzer's -max_total_time is wall time; at nice 19 on a busy machine a chunk
        # may get less CPU than that, which the ledger records as it is.
        /usr/bin/time -f '%U %S' -o "$times" nice -n 19 "$bin" "corpus/$t" "${seeds[@]}" \
            -max_total_time="$this" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
            -artifact_prefix="artifacts/$t/" > "$log" 2>&1 || rc=$?
        local cpu execs cov result
        cpu=$(awk 'END { printf "%d", $1 + $2 }' "$times")
        execs=$(awk '/stat::number_of_executed_units/ { print $NF }' "$log")
        cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | awk '{ print $2 }')
        result=ok
        if ((rc != 0)); then result=FAILED; fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$commit" "$t" "$cpu" \
            "${execs:-0}" "${cov:-0}" "$result" >> "$ledger"
        if [[ $result != ok ]]; then
            echo "$t: FAILED (exit $rc); log kept in $log, input in artifacts/$t/" >&2
            tail -40 "$log" >&2
            return 1
        fi
        rm -f "$log" "$times"
        echo "$t: +$cpu CPU s, $((have + cpu)) of $budget"
    done
}
export -f run_target spent
export budget chunk bin_dir ledger commit

printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_target {}'
echo
awk -F'\t' 'NR > 1 { cpu[$3] += $4; ex[$3] += $5; if ($6 > cov[$3]) cov[$3] = $6; if ($7 != "ok") bad[$3]++ }
    END { printf "%-14s %8s %14s %6s %s\n", "target", "cpu_s", "execs", "cov", "failed";
          for (t in cpu) printf "%-14s %8d %14d %6d %d\n", t, cpu[t], ex[t], cov[t], bad[t] }' "$ledger"
