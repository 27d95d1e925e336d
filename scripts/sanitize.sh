#!/usr/bin/env bash
# Runs the engine's unit tests, the concurrency tests (threads, stress) and the metamorphic
# test under AddressSanitizer and ThreadSanitizer (nightly -Zsanitizer, the standard library
# rebuilt with the same instrumentation via -Zbuild-std so it is checked too and TSan sees
# its synchronisation). Usage: scripts/sanitize.sh [address|thread]... (default: both).
# Each sanitizer builds into its own target directory, so the normal build is untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
CARGO=${CARGO:-cargo}
TARGET=x86_64-unknown-linux-gnu
rustup component add --toolchain nightly rust-src >/dev/null

sanitizers=("$@")
[ ${#sanitizers[@]} -eq 0 ] && sanitizers=(address thread)

for san in "${sanitizers[@]}"; do
    case "$san" in
        address)
            # Leak checking on: a leak in the engine is a finding too.
            export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
            ;;
        thread)
            # LevelDB (the compatibility tests' peer, an uninstrumented C++ library) is not
            # run here: only the engine's own tests, whose every thread is instrumented.
            export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
            ;;
        *) echo "unknown sanitizer $san (address or thread)" >&2; exit 2 ;;
    esac
    echo "== $san sanitizer"
    # The suites run at their CI sizes (stress: 8 threads x 20,000 ops; metamorphic: 5 logs
    # x 4,000 ops on every option set); extra arguments after `--` in SANITIZE_TEST_ARGS
    # (a test name filter, say) pass through.
    # `rustix_use_libc`: rustix's default backend makes system calls itself, so the
    # sanitizers never see `mmap`/`munmap`; a mapping unmapped by one test and an address
    # reused by another test's mapping on another thread then looked to TSan like two
    # threads writing the same memory unsynchronized (mapped-log tests, 2026-11-25).
    # Through libc the interceptors see the unmap and forget the old mapping's history.
    RUSTFLAGS="-Zsanitizer=$san --cfg=rustix_use_libc" RUSTDOCFLAGS="-Zsanitizer=$san" \
        $CARGO +nightly test -Zbuild-std --target "$TARGET" \
        --target-dir "target/sanitize-$san" -p strata \
        --lib --test threads --test stress --test metamorphic --test model \
        ${SANITIZE_TEST_ARGS:-}
done
