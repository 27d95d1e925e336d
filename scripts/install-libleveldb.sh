#!/usr/bin/env bash
# Installs Strata's LevelDB drop-in (the strata-c crate's cdylib) into DIR under every name
# a LevelDB program may look for: libleveldb.so.1 (LevelDB's soname), libleveldb.so.1d
# (Debian's) and libleveldb.so (for linking). Then run a program on it with
#   LD_LIBRARY_PATH=DIR ./program
#
# Usage: scripts/install-libleveldb.sh DIR [--debug]   (builds the library first)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: scripts/install-libleveldb.sh DIR [--debug]}
profile=release
if [[ "${2:-}" == "--debug" ]]; then
    cargo build -p strata-c
    profile=debug
else
    cargo build --release -p strata-c
fi
mkdir -p "$dir"
install -m 0755 "target/$profile/libleveldb.so" "$dir/libleveldb.so.1"
ln -sf libleveldb.so.1 "$dir/libleveldb.so.1d"
ln -sf libleveldb.so.1 "$dir/libleveldb.so"
echo "installed Strata's libleveldb in $dir"
