#!/usr/bin/env bash
# Fetches a release build of RocksDB for strata-bench's `rocksdb` column: the Linux x86-64
# library inside Maven Central's `org.rocksdb:rocksdbjni` jar (classifier linux64), which
# is RocksDB built by its project for release (NDEBUG, optimised; Snappy, LZ4 and ZSTD
# built in) and exports RocksDB's C API beside the JNI one. It needs only libc and
# libstdc++. Debian's librocksdb (7.8.3) is built with assertions on and runs 1.7-2x
# slower on writes here; strata-bench links it only when this library is not asked for.
#
# Usage: scripts/fetch-rocksdb-release.sh [OUT]   (default OUT: target/rocksdb-release)
# Prints OUT. Then build strata-bench with STRATA_BENCH_ROCKSDB_DIR=OUT (make bench does).
# Does nothing when OUT already holds this version.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/rocksdb-release}
version=10.10.1.1
lib=librocksdbjni-linux64.so
if [ -f "$out/$lib" ] && [ "$(head -n1 "$out/BUILD_INFO" 2>/dev/null)" = "RocksDB $version release (Maven org.rocksdb:rocksdbjni:$version:linux64)" ]; then
  echo "$out"
  exit 0
fi
source "$(dirname "$0")/apt-missing.sh"
install_missing maven unzip
rm -rf "$out"
mkdir -p "$out"
mvn -q -B -Dstyle.color=never dependency:copy "-Dartifact=org.rocksdb:rocksdbjni:$version:jar:linux64" \
  "-DoutputDirectory=$out" >&2
unzip -q -o "$out/rocksdbjni-$version-linux64.jar" "$lib" -d "$out"
rm "$out/rocksdbjni-$version-linux64.jar"
# Every C function strata-bench's RocksDB peer declares must be exported.
source "$(dirname "$0")/rocksdb-exports.sh"
check_rocksdb_exports "$root" "$out/$lib"
{
  echo "RocksDB $version release (Maven org.rocksdb:rocksdbjni:$version:linux64)"
  echo "built by the RocksDB project: NDEBUG, optimised, Snappy/LZ4/ZSTD; C API"
} > "$out/BUILD_INFO"
echo "$out"
