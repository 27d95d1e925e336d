#!/usr/bin/env bash
# run.sh LIBDIR OUTDIR
#
# Builds the C API tests (api.c, interop.c, misuse.c) against the
# libleveldb.so found in LIBDIR, runs api and misuse in fresh directories
# under OUTDIR and saves their transcripts as OUTDIR/api.out and
# OUTDIR/misuse.out (stderr goes to OUTDIR/<prog>.err).  The binaries are
# left in OUTDIR/bin for compare.sh (interop is only built here).
#
# LIBDIR is /usr/lib/x86_64-linux-gnu for Debian's LevelDB, or a directory
# holding the Strata cdylib installed as libleveldb.so.  The binaries get
# LIBDIR as rpath and run with LIBDIR first in LD_LIBRARY_PATH; the script
# refuses to run them if the dynamic loader would pick a libleveldb from
# anywhere else (e.g. a soname mismatch silently falling back to the
# system library).
#
# Environment: CC (default cc).  Exit status 0 only if everything passed.
set -euo pipefail

usage() { echo "usage: $0 LIBDIR OUTDIR" >&2; exit 2; }
[ $# -eq 2 ] || usage

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[ -d "$1" ] || { echo "run.sh: LIBDIR $1 is not a directory" >&2; exit 2; }
libdir=$(cd "$1" && pwd -P)
[ -e "$libdir/libleveldb.so" ] || { echo "run.sh: no libleveldb.so in $libdir" >&2; exit 2; }
mkdir -p "$2"
outdir=$(cd "$2" && pwd -P)
cc=${CC:-cc}
cflags=(-Wall -Wextra -Werror -std=c99 -I/usr/include)

bindir=$outdir/bin
rm -rf "$bindir" "$outdir/api.out" "$outdir/misuse.out" "$outdir/api.err" "$outdir/misuse.err"
mkdir -p "$bindir"

for prog in api interop misuse; do
  echo "run.sh: compiling $prog.c with $cc against $libdir"
  "$cc" "${cflags[@]}" -o "$bindir/$prog" "$here/$prog.c" \
    -L"$libdir" -lleveldb -Wl,-rpath,"$libdir"
done

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# Make sure the library that will be loaded really comes from LIBDIR.
if command -v ldd >/dev/null 2>&1; then
  for prog in api interop misuse; do
    resolved=$(ldd "$bindir/$prog" | awk '/libleveldb/ { print $3; exit }')
    if [ -z "$resolved" ] || [ ! -e "$resolved" ]; then
      echo "run.sh: $prog: the loader cannot find libleveldb:" >&2
      ldd "$bindir/$prog" >&2 || true
      exit 1
    fi
    resolved_dir=$(cd "$(dirname "$resolved")" && pwd -P)
    if [ "$resolved_dir" != "$libdir" ]; then
      echo "run.sh: $prog would load $resolved, not a library from $libdir" >&2
      echo "run.sh: (does the library's soname match a file in $libdir?)" >&2
      exit 1
    fi
  done
  echo "run.sh: binaries load libleveldb from $libdir"
else
  echo "run.sh: warning: ldd not found, cannot verify which libleveldb is loaded" >&2
fi

# leveldb_env_get_test_directory creates a directory; keep it under OUTDIR.
export TEST_TMPDIR="$outdir/test-tmpdir"
rm -rf "$TEST_TMPDIR"
mkdir -p "$TEST_TMPDIR"

failed=0
for prog in api misuse; do
  dbdir="$outdir/$prog-db"
  rm -rf "$dbdir"
  mkdir -p "$dbdir"
  echo "run.sh: running $prog $dbdir"
  if "$bindir/$prog" "$dbdir" >"$outdir/$prog.out" 2>"$outdir/$prog.err"; then
    echo "run.sh: $prog passed ($(wc -l <"$outdir/$prog.out") transcript lines -> $outdir/$prog.out)"
  else
    status=$?
    echo "run.sh: $prog FAILED with status $status; last transcript lines:" >&2
    tail -n 5 "$outdir/$prog.out" >&2 || true
    echo "run.sh: $prog stderr:" >&2
    cat "$outdir/$prog.err" >&2 || true
    failed=1
  fi
done

if [ "$failed" -ne 0 ]; then
  echo "run.sh: FAILED" >&2
  exit 1
fi
echo "run.sh: all passed"
