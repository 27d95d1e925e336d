#!/usr/bin/env bash
# Refreshes fuzz/replay/<target>/, the corpus `make test` replays (crates/fuzz-checks):
# the inputs of fuzz/corpus/<target>/ and of the current replay set, minimized by
# coverage with libFuzzer's -merge=1. Run after fuzzing (make fuzz-build first), then
# commit fuzz/replay/.
#
#   scripts/fuzz-replay-update.sh [TARGET...]     (default: every target)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
bin_dir=target/x86_64-unknown-linux-gnu/release
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
    for f in fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
for t in "${targets[@]}"; do
    [[ -x $bin_dir/$t ]] || { echo "$t: not built (make fuzz-build)" >&2; exit 1; }
    from=()
    for d in "corpus/$t" "replay/$t"; do [[ -d $d ]] && from+=("$d"); done
    new=$(mktemp -d)
    "$bin_dir/$t" -merge=1 "$new" "${from[@]}" > "$new.log" 2>&1 \
        || { echo "$t: merge failed, see $new.log" >&2; exit 1; }
    rm -rf "replay/$t"
    mkdir -p replay
    mv "$new" "replay/$t"
    chmod 755 "replay/$t"
    echo "$t: $(ls "replay/$t" | wc -l) inputs"
done
