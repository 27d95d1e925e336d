# Sourced by the scripts that build a peer's library or program. A peer built here must be
# the same program on every machine: what it links may not depend on what else happens to
# be installed (RocksDB's build, for one, links tcmalloc, jemalloc, liburing, zstd, lz4,
# numa or gflags whenever it finds them). Each build script states the shared libraries its
# output may need and checks the result with `check_needed`.
#
# needed_of FILE: the NEEDED entries of the ELF file FILE, one a line, sorted.
needed_of() {
  readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' | sort -u
}

# check_needed FILE NAME...: fails, naming the difference, unless FILE needs exactly the
# shared libraries NAME... (in any order).
check_needed() {
  local file=$1 stated extra missing
  shift
  if ! readelf -h "$file" >/dev/null 2>&1; then
    echo "$file is not an ELF file" >&2
    return 1
  fi
  stated=$(printf '%s\n' "$@" | sort -u)
  extra=$(comm -23 <(needed_of "$file") - <<<"$stated" | tr '\n' ' ')
  missing=$(comm -13 <(needed_of "$file") - <<<"$stated" | tr '\n' ' ')
  [ -z "$extra$missing" ] && return 0
  local diff=()
  [ -n "$extra" ] && diff+=("also needs ${extra% }")
  [ -n "$missing" ] && diff+=("lacks ${missing% }")
  echo "$file links other libraries than its build states: ${diff[0]}${diff[1]:+; ${diff[1]}}" >&2
  echo "  stated: $*" >&2
  echo "  found:  $(needed_of "$file" | tr '\n' ' ')" >&2
  return 1
}
