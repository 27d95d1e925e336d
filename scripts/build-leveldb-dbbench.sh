#!/usr/bin/env bash
# Builds the LevelDB page's own benchmark programs from LevelDB 1.23's source, as release
# builds, for strata-bench's columns `leveldb-dbbench` (db_bench: LevelDB measured by its
# own program at its own speed), `sqlite3-dbbench` (db_bench_sqlite3) and `kyoto-dbbench`
# (db_bench_tree_db): SQLite3 and Kyoto TreeDB exactly as the page measured them.
#
# The source is Debian's `leveldb` source package (the upstream 1.23 tarball, fetched
# with apt-get source through a private deb-src list, so the system's lists stay as they
# are). One patch (scripts/leveldb-dbbench/db_bench.patch): each thread is seeded with
# 1000 + its index, as the 2011 page's db_bench was (1.23 reseeds every benchmark, so
# its readrandom would read keys fillrandom never wrote), and a --compression=0|1 flag
# for the page's compression-off rows. Built with g++ -O3 -DNDEBUG, Snappy on; no
# CRC-32C library (Debian has none; LevelDB then uses its portable CRC-32C, as Debian's
# libleveldb does) and no tcmalloc (as Debian's libleveldb). db_bench_sqlite3 and
# db_bench_tree_db are built as shipped, against Debian's libsqlite3 and libkyotocabinet.
#
# Usage: scripts/build-leveldb-dbbench.sh [OUT]   (default OUT: target/leveldb-dbbench)
# Prints the path of the program. Does nothing when OUT already holds a build made by
# this version of the script and its patch.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/leveldb-dbbench}
here="$root/scripts/leveldb-dbbench"
stamp=$(cat "$0" "$here/db_bench.patch" | sha256sum | cut -c1-16)
if [ -x "$out/db_bench" ] && [ "$(cat "$out/STAMP" 2>/dev/null)" = "$stamp" ]; then
  echo "$out/db_bench"
  exit 0
fi

# Headers and libraries the programs need: Snappy's, SQLite's, Kyoto Cabinet's, and
# googletest's headers (util/testutil.h includes them; the programs call none of it).
source "$(dirname "$0")/apt-missing.sh"
install_missing g++ libsnappy-dev libgmock-dev libgtest-dev libsqlite3-dev libkyotocabinet-dev

rm -rf "$out"
mkdir -p "$out/apt/parts" "$out/apt/lists/partial" "$out/apt/cache/archives/partial" "$out/src"
# A deb-src entry for every deb entry the system has (deb822 and one-line lists).
{
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -e "$f" ] && sed -e 's/^Types:.*/Types: deb-src/' "$f" && echo
  done
} > "$out/apt/parts/src.sources"
{
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -e "$f" ] && sed -n -e 's/^deb \(.*\)/deb-src \1/p' "$f"
  done
} > "$out/apt/parts/src.list"
apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$out/apt/parts"
  -o "Dir::State::Lists=$out/apt/lists" -o "Dir::Cache=$out/apt/cache")
apt-get "${apt_opts[@]}" update -qq >&2
(cd "$out/src" && apt-get "${apt_opts[@]}" source --download-only leveldb >&2)
tarball=$(ls "$out"/src/leveldb_1.23.orig.tar.* 2>/dev/null || true)
[ -n "$tarball" ] || { echo "the leveldb source package is not 1.23: $(ls "$out/src")" >&2; exit 1; }
tar -xf "$tarball" -C "$out/src"
src="$out/src/leveldb-1.23"
patch -d "$src" -p1 < "$here/db_bench.patch" >&2

cat > "$src/port/port_config.h" <<'H'
#ifndef STORAGE_LEVELDB_PORT_PORT_CONFIG_H_
#define STORAGE_LEVELDB_PORT_PORT_CONFIG_H_
#define HAVE_FDATASYNC 1
#define HAVE_FULLFSYNC 0
#define HAVE_O_CLOEXEC 1
#define HAVE_CRC32C 0
#define HAVE_SNAPPY 1
#endif
H

flags=(-O3 -DNDEBUG -std=c++17 -pthread -DLEVELDB_PLATFORM_POSIX=1 -DLEVELDB_IS_BIG_ENDIAN=0
  -I"$src" -I"$src/include")
sources=()
for f in "$src"/db/*.cc "$src"/table/*.cc "$src"/util/*.cc "$src"/helpers/memenv/memenv.cc; do
  case "$f" in
    *_test.cc | *_bench.cc | */leveldbutil.cc | */env_windows.cc | */testutil.cc) ;;
    *) sources+=("$f") ;;
  esac
done
objs=()
mkdir -p "$out/obj"
for f in "${sources[@]}" "$src/util/testutil.cc"; do
  o="$out/obj/$(basename "${f%.cc}").o"
  g++ "${flags[@]}" -c "$f" -o "$o"
  objs+=("$o")
done
for name in db_bench db_bench_sqlite3 db_bench_tree_db; do
  case "$name" in
    db_bench_sqlite3) libs=(-lsnappy -lsqlite3) ;;
    db_bench_tree_db) libs=(-lsnappy -lkyotocabinet) ;;
    *) libs=(-lsnappy) ;;
  esac
  g++ "${flags[@]}" -c "$src/benchmarks/$name.cc" -o "$out/obj/$name.o"
  g++ "${flags[@]}" "${objs[@]}" "$out/obj/$name.o" -o "$out/$name" "${libs[@]}"
done
# Each program links what its line above names, the C++ runtime and libc, nothing else.
source "$(dirname "$0")/peer-links.sh"
runtime=(libstdc++.so.6 libm.so.6 libgcc_s.so.1 libc.so.6)
check_needed "$out/db_bench" libsnappy.so.1 "${runtime[@]}"
check_needed "$out/db_bench_sqlite3" libsnappy.so.1 libsqlite3.so.0 "${runtime[@]}"
check_needed "$out/db_bench_tree_db" libsnappy.so.1 libkyotocabinet.so.16 "${runtime[@]}"
{
  echo "LevelDB 1.23 benchmarks/ (db_bench, db_bench_sqlite3, db_bench_tree_db), Debian source package $(basename "$tarball")"
  echo "g++ $(g++ -dumpfullversion): ${flags[*]:0:6} -lsnappy; db_bench patched: seeds 1000 + thread index, --compression"
  echo "SQLite $(pkg-config --modversion sqlite3 2>/dev/null || echo '?'), Kyoto Cabinet $(pkg-config --modversion kyotocabinet 2>/dev/null || echo '?') (Debian's)"
} > "$out/BUILD_INFO"
echo "$stamp" > "$out/STAMP"
echo "$out/db_bench"
