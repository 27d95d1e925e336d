#!/usr/bin/env bash
# strata-kv against etcd on this machine: three strata-kv-node processes and three etcd
# members (Debian's etcd-server), each on 127.0.0.1 with its data on the same disk, the
# same client program (kv-bench, Go) for both. Every run starts a fresh cluster; rounds
# alternate which system goes first.
#
#   scripts/kv-bench/run.sh [ROUNDS] [SECONDS] [CLIENTS ...]    (default 5 10 16 64 256)
#
# Prints one line per run (system, clients, writes/s, p50 us, p99 us, failed puts) and, at
# the end, per client count the median of the paired ratios (strata-kv over etcd).
# NODE=PATH runs that strata-kv-node binary (another build, for an A/B) instead of this
# tree's.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-5}
seconds=${2:-10}
shift 2 2>/dev/null || shift $#
clients=("$@")
[ ${#clients[@]} -gt 0 ] || clients=(16 64 256)

command -v etcd > /dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server > /dev/null; }
[ -n "${NODE:-}" ] || cargo build -q --release -p strata-openraft --bin strata-kv-node
(cd scripts/kv-bench && go build -o ../../target/kv-bench .)
node=${NODE:-target/release/strata-kv-node}
bench=target/kv-bench

work=$(mktemp -d /var/tmp/kv-bench.XXXXXX)
pids=()
stop() { for p in "${pids[@]}"; do kill -9 "$p" 2> /dev/null || true; done; for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done; pids=(); rm -rf "$work"/*; }
trap 'stop; rm -rf "$work"' EXIT

start_strata() {
    local peers=() i
    for i in 1 2 3; do peers+=(--peer "$i=127.0.0.1:$((7100 + i))"); done
    for i in 1 2 3; do
        local init=(); [ "$i" = 1 ] && init=(--init)
        "$node" ${NODE_ARGS:-} --id "$i" --dir "$work/strata$i" --addr "127.0.0.1:$((7100 + i))" "${peers[@]}" "${init[@]}" > "$work/strata$i.out" 2>&1 &
        pids+=($!)
    done
    endpoints=127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103
}

start_etcd() {
    local cluster=n1=http://127.0.0.1:2381,n2=http://127.0.0.1:2382,n3=http://127.0.0.1:2383 i
    for i in 1 2 3; do
        etcd --name "n$i" --data-dir "$work/etcd$i" \
            --listen-client-urls "http://127.0.0.1:$((2370 + i))" --advertise-client-urls "http://127.0.0.1:$((2370 + i))" \
            --listen-peer-urls "http://127.0.0.1:$((2380 + i))" --initial-advertise-peer-urls "http://127.0.0.1:$((2380 + i))" \
            --initial-cluster "$cluster" --initial-cluster-state new --log-level error > "$work/etcd$i.out" 2>&1 &
        pids+=($!)
    done
    endpoints=127.0.0.1:2371,127.0.0.1:2372,127.0.0.1:2373
}

run() { # system clients
    mkdir -p "$work"
    if [ "$1" = etcd ]; then start_etcd; else start_strata; fi
    "$bench" -system "$1" -endpoints "$endpoints" -clients "$2" -seconds "$seconds" | tee -a "$out"
    stop
}

out=$(mktemp)
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD)$(git diff --quiet || echo -dirty), $(etcd --version | head -1), $rounds rounds x $seconds s"
for r in $(seq 1 "$rounds"); do
    for c in "${clients[@]}"; do
        if [ $((r % 2)) = 1 ]; then run strata "$c"; run etcd "$c"; else run etcd "$c"; run strata "$c"; fi
    done
done
python3 - "$out" <<'PY'
import sys, statistics
rows = [l.split('\t') for l in open(sys.argv[1]) if l.strip()]
by = {}
for system, clients, wps, p50, p99, failed in rows:
    by.setdefault((int(clients), system), []).append((float(wps), float(p50), float(p99)))
for c in sorted({k[0] for k in by}):
    s, e = by.get((c, 'strata'), []), by.get((c, 'etcd'), [])
    n = min(len(s), len(e))
    if n == 0: continue
    r = sorted(s[i][0] / e[i][0] for i in range(n))
    p = sorted(e[i][2] / s[i][2] for i in range(n))
    print(f"{c} clients: strata-kv {statistics.median(x[0] for x in s):.0f} writes/s (p50 {statistics.median(x[1] for x in s):.0f} us, p99 {statistics.median(x[2] for x in s):.0f} us), "
          f"etcd {statistics.median(x[0] for x in e):.0f} (p50 {statistics.median(x[1] for x in e):.0f} us, p99 {statistics.median(x[2] for x in e):.0f} us); "
          f"writes/s ratio median {statistics.median(r):.2f} ({r[0]:.2f}-{r[-1]:.2f}), etcd p99 over strata-kv's {statistics.median(p):.2f} ({p[0]:.2f}-{p[-1]:.2f}), {n} pairs")
PY
rm -f "$out"
