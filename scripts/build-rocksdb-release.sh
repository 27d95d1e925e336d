#!/usr/bin/env bash
# Builds RocksDB at full strength on this machine for strata-bench's `rocksdb` column: a
# release build (RocksDB's own Makefile, DEBUG_LEVEL=0: -O2, NDEBUG) for this CPU
# (PORTABLE=0: -march=native, so CRC-32C and its other hot loops use the CPU's
# instructions), with Snappy, as a shared library exporting RocksDB's C API.
#
# The same library on every machine: RocksDB's build_detect_platform links every optional
# library it finds installed (tcmalloc, jemalloc, liburing, zstd, lz4, bzip2, zlib, numa,
# gflags, TBB, memkind, google benchmark). A tcmalloc linked that way crashed the whole
# run (RocksDB's arena asked glibc's malloc_usable_size about tcmalloc's memory: SIGSEGV).
# So each of them is turned off by name below, and the result must need exactly LINKS:
# Snappy, the C++ runtime and libc; the build fails otherwise, and BUILD_INFO (printed on
# the page as the engine's version) lists what it links.
#
# The source is RocksDB 10.4.2 as the `librocksdb-sys` crate (0.17.3) ships it, fetched
# by cargo from crates.io (no git needed). Without debug information: RocksDB's Makefile
# adds -g on Linux, which changes no generated code (gcc's rule; -fcompare-debug checks
# it) and which a benchmark does not need, so its two `-g` lines are dropped from the
# build's copy. 14.6 minutes on 2 cores (2026-11-28), once per machine: the result is
# kept in OUT and reused while BUILD_INFO names this version.
#
# Usage: scripts/build-rocksdb-release.sh [OUT]   (default OUT: target/rocksdb-native)
# Prints OUT. Then build strata-bench with STRATA_BENCH_ROCKSDB_DIR=OUT (make bench does).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/rocksdb-native}
crate=0.17.3
version=10.4.2
# What the library may need, and nothing else (tests/peer_links.rs reads this line): Snappy,
# the C++ runtime, libc, and the x86-64 loader (its thread-local storage).
LINKS=(libsnappy.so.1 libstdc++.so.6 libm.so.6 libgcc_s.so.1 libc.so.6 ld-linux-x86-64.so.2)
stamp="RocksDB $version release built here (librocksdb-sys $crate source; make shared_lib DEBUG_LEVEL=0 PORTABLE=0, no -g; links ${LINKS[*]})"
if [ -f "$out/librocksdb.so" ] && [ "$(head -n1 "$out/BUILD_INFO" 2>/dev/null)" = "$stamp" ]; then
  echo "$out"
  exit 0
fi
source "$(dirname "$0")/apt-missing.sh"
install_missing build-essential libsnappy-dev
mkdir -p "$out"
# Find (and fetch) the crate's source through cargo: a throwaway package that names it.
locator="$out/locator"
mkdir -p "$locator/src"
cat > "$locator/Cargo.toml" <<EOF
[package]
name = "rocksdb-source-locator"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
librocksdb-sys = { version = "=$crate", default-features = false }

[workspace]
EOF
: > "$locator/src/lib.rs"
manifest=$(cargo metadata --format-version 1 --manifest-path "$locator/Cargo.toml" \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); print(next(p["manifest_path"] for p in d["packages"] if p["name"]=="librocksdb-sys"))')
src=$(dirname "$manifest")/rocksdb
[ -f "$src/Makefile" ] || { echo "no RocksDB source at $src" >&2; exit 1; }
build="$out/build"
# A build directory is reused only when an earlier run of this script made it (its
# Makefile without -g) and got as far as the library.
if [ ! -f "$build/make_config.mk" ] || ! ls "$build"/librocksdb.so.*.*.* >/dev/null 2>&1 \
  || ! grep -q 'dropped: no debug information' "$build/Makefile" 2>/dev/null; then
  rm -rf "$build"
  cp -r "$src" "$build"
  sed -i -e 's/^CFLAGS += -g$/# CFLAGS += -g (dropped: no debug information)/' \
    -e 's/^CXXFLAGS += -g$/# CXXFLAGS += -g (dropped: no debug information)/' "$build/Makefile"
  [ "$(grep -c 'dropped: no debug information' "$build/Makefile")" = 2 ] \
    || { echo "RocksDB's Makefile no longer adds -g where expected" >&2; exit 1; }
fi
(
  cd "$build"
  # Only Snappy among the compressions: what the peers are given (and what LevelDB has).
  # No other optional library, whatever the machine has: each of build_detect_platform's
  # switches for one (io_uring's is ROCKSDB_USE_IO_URING), named here.
  ROCKSDB_DISABLE_LZ4=1 ROCKSDB_DISABLE_ZSTD=1 ROCKSDB_DISABLE_BZIP=1 ROCKSDB_DISABLE_ZLIB=1 \
  ROCKSDB_DISABLE_GFLAGS=1 ROCKSDB_USE_IO_URING=0 ROCKSDB_DISABLE_TBB=1 \
  ROCKSDB_DISABLE_JEMALLOC=1 ROCKSDB_DISABLE_TCMALLOC=1 ROCKSDB_DISABLE_MEMKIND=1 \
  ROCKSDB_DISABLE_NUMA=1 ROCKSDB_DISABLE_BENCHMARK=1 \
    nice -n 5 make -j"$(nproc)" shared_lib DEBUG_LEVEL=0 PORTABLE=0 USE_RTTI=1 \
      DISABLE_WARNING_AS_ERROR=1 >"$out/build.log" 2>&1
) || { tail -30 "$out/build.log" >&2; exit 1; }
lib=$(cd "$build" && ls librocksdb.so.*.*.* | head -n1)
cp "$build/$lib" "$out/"
ln -sf "$lib" "$out/librocksdb.so"
# The name programs linked against it ask the loader for.
soname=$(objdump -p "$out/$lib" | awk '/SONAME/ {print $2}')
ln -sf "$lib" "$out/$soname"
# Every C function strata-bench's RocksDB peer declares must be exported.
source "$(dirname "$0")/rocksdb-exports.sh"
check_rocksdb_exports "$root" "$out/$lib"
# It links what LINKS states and nothing else.
source "$(dirname "$0")/peer-links.sh"
check_needed "$out/$lib" "${LINKS[@]}" || { rm -f "$out/librocksdb.so"; exit 1; }
# What the build used: RocksDB's Makefile at DEBUG_LEVEL=0 compiles with -O2 -DNDEBUG;
# make_config.mk holds what build_detect_platform found (-march=native for PORTABLE=0).
found=$(grep -oE -- '-march=native|-DSNAPPY' "$build/make_config.mk" | sort -u | tr '\n' ' ')
case "$found" in
  *-march=native*-DSNAPPY*|*-DSNAPPY*-march=native*) ;;
  *) echo "the build lacks -march=native or Snappy (found: $found)" >&2; exit 1 ;;
esac
{
  echo "$stamp"
  echo "g++ -O2 -DNDEBUG $found; C API"
} > "$out/BUILD_INFO"
rm -rf "$build" "$locator"
echo "$out"
