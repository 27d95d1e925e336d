#!/usr/bin/env bash
# Installs what building and testing Strata needs on a Debian machine, skipping what is
# already there: the C libraries the cross-checks and peers link against, and the Rust
# components the checks use.
set -euo pipefail

packages=(gcc binutils libleveldb-dev libsnappy-dev libsqlite3-dev librocksdb-dev liblmdb-dev libkyotocabinet-dev libwiredtiger-dev pkg-config chromium-headless-shell)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo not found: install Rust (https://rustup.rs) and run again" >&2
  exit 1
fi
if command -v rustup >/dev/null 2>&1; then
  for c in clippy rustfmt; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
fi
