#!/usr/bin/env bash
# Installs what building and testing Strata needs on a Debian machine, skipping what is
# already there: the C libraries the cross-checks and peers link against, and the Rust
# components the checks use.
set -euo pipefail

packages=(gcc binutils libleveldb-dev libsnappy-dev libsqlite3-dev librocksdb-dev liblmdb-dev libkyotocabinet-dev libwiredtiger-dev pkg-config chromium-headless-shell)
source "$(dirname "$0")/apt-missing.sh"
install_missing "${packages[@]}"

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust (https://rustup.rs) and run again" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  for c in clippy rustfmt; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
fi
