#!/usr/bin/env bash
# compare.sh STRATA_LIBDIR WORKDIR
#
# Judges a LevelDB C API implementation against Debian's LevelDB 1.23:
#   1. run.sh against Debian's library  -> WORKDIR/debian
#      run.sh against STRATA_LIBDIR     -> WORKDIR/strata
#   2. the api and misuse transcripts of both must be identical
#   3. interop, on four databases under WORKDIR/interop:
#        debian-debian  written by Debian, read by Debian (the reference)
#        debian-strata  written by Debian, read by Strata, re-read by Debian
#        strata-debian  written by Strata, read by Debian, re-read by Strata
#        strata-strata  written by Strata, read by Strata
#      every read summary must equal the reference.  (The re-reads check
#      that a db recovered and rewritten by one library is still readable
#      by the other.)
#
# Environment: DEBIAN_LIBDIR (default /usr/lib/x86_64-linux-gnu), CC.
# Exit status 0 only if every step passed; all steps run even after a
# failure so that one run shows every problem.
set -euo pipefail

usage() { echo "usage: $0 STRATA_LIBDIR WORKDIR" >&2; exit 2; }
[ $# -eq 2 ] || usage

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
debian_lib=${DEBIAN_LIBDIR:-/usr/lib/x86_64-linux-gnu}
[ -d "$1" ] || { echo "compare.sh: STRATA_LIBDIR $1 is not a directory" >&2; exit 2; }
strata_lib=$(cd "$1" && pwd -P)
mkdir -p "$2"
work=$(cd "$2" && pwd -P)

failures=0
fail() { echo "compare.sh: FAIL: $*" >&2; failures=$((failures + 1)); }

# --- 1. run both -----------------------------------------------------------
declare -A built=()
for side in debian strata; do
  if [ "$side" = debian ]; then lib=$debian_lib; else lib=$strata_lib; fi
  echo "compare.sh: === run.sh $lib $work/$side"
  if "$here/run.sh" "$lib" "$work/$side"; then
    built[$side]=1
  else
    fail "run.sh against $side library ($lib)"
    # The binaries may still exist (e.g. only a test failed).
    if [ -x "$work/$side/bin/interop" ]; then built[$side]=1; fi
  fi
done

# --- 2. transcripts ----------------------------------------------------------
for t in api misuse; do
  a=$work/debian/$t.out
  b=$work/strata/$t.out
  echo "compare.sh: === diff $t transcripts (debian vs strata)"
  if [ ! -f "$a" ] || [ ! -f "$b" ]; then
    fail "$t transcript missing"
  elif diff -u --label "debian/$t.out" --label "strata/$t.out" "$a" "$b"; then
    echo "compare.sh: $t transcripts identical ($(wc -l <"$a") lines)"
  else
    fail "$t transcripts differ"
  fi
done

# --- 3. interop --------------------------------------------------------------
# interop SIDE MODE DB OUT: run SIDE's interop binary with SIDE's library.
interop() {
  local side=$1 mode=$2 db=$3 out=$4 lib
  if [ "$side" = debian ]; then lib=$debian_lib; else lib=$strata_lib; fi
  if [ -z "${built[$side]:-}" ]; then
    fail "interop $mode $db: no $side binary"
    return 1
  fi
  echo "compare.sh: interop $mode by $side: $db"
  local status=0
  LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$work/$side/bin/interop" "$mode" "$db" >"$out" 2>"$out.err" || status=$?
  [ "$status" -eq 0 ] && return 0
  fail "interop $mode by $side on $db (exit $status)"
  cat "$out.err" >&2 || true
  return 1
}

idir=$work/interop
rm -rf "$idir"
mkdir -p "$idir"

# name WRITER READER [REREADER]
interop_case() {
  local name=$1 writer=$2 reader=$3 rereader=${4:-}
  local db=$idir/$name
  echo "compare.sh: === interop $name: write by $writer, read by $reader${rereader:+, re-read by $rereader}"
  interop "$writer" write "$db" "$idir/$name.write" || return 0
  interop "$reader" read "$db" "$idir/$name.read" || return 0
  if [ -n "$rereader" ]; then
    interop "$rereader" read "$db" "$idir/$name.reread" || return 0
  fi
}

interop_case debian-debian debian debian
interop_case debian-strata debian strata debian
interop_case strata-debian strata debian strata
interop_case strata-strata strata strata

ref=$idir/debian-debian.read
if [ -s "$ref" ]; then
  echo "compare.sh: reference interop summary:"
  sed 's/^/  /' "$ref"
  for f in debian-strata.read debian-strata.reread strata-debian.read \
           strata-debian.reread strata-strata.read; do
    if [ ! -f "$idir/$f" ]; then
      fail "interop summary $f missing"
    elif diff -u --label reference --label "$f" "$ref" "$idir/$f"; then
      echo "compare.sh: interop $f matches the reference"
    else
      fail "interop summary $f differs from the reference"
    fi
  done
else
  fail "no reference interop summary (Debian write/read failed)"
fi

if [ "$failures" -ne 0 ]; then
  echo "compare.sh: $failures step(s) FAILED" >&2
  exit 1
fi
echo "compare.sh: all comparisons passed"
