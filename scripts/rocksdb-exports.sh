# Sourced by the scripts that provide a RocksDB library for strata-bench's `rocksdb` peer.
# check_rocksdb_exports ROOT LIB: fails unless LIB exports every C function the peer
# (ROOT/crates/strata-bench/src/peers/rocksdb.rs) declares.
check_rocksdb_exports() {
  local missing
  missing=$(grep -oE 'fn rocksdb_[a-z0-9_]+' "$1/crates/strata-bench/src/peers/rocksdb.rs" \
    | awk '{print $2}' | sort -u \
    | comm -23 - <(nm -D --defined-only "$2" | awk '{print $3}' | sort -u))
  if [ -n "$missing" ]; then
    echo "$2 lacks: $missing" >&2
    return 1
  fi
}
