# The two commands: `make test` (everything CI checks) and `make bench` (the main job).
# Both install what they need first.

CARGO ?= cargo

.PHONY: test bench bench-micro deps fmt fuzz-build clean

test: deps
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) test --workspace

# The main job: LevelDB's benchmark page (the baseline suite) on every engine built into
# strata-bench, results in bench-report/. Peers join as they are built (see README).
bench: deps
	$(CARGO) build --release -p strata-bench
	mkdir -p bench-report
	./target/release/strata-bench --suite baseline --engines=all --json bench-report/baseline.json | tee bench-report/baseline.txt

# Criterion micro-benchmarks of the engine's parts.
bench-micro: deps
	$(CARGO) bench -p strata

deps:
	@scripts/install-deps.sh

fmt:
	$(CARGO) fmt --all

# Builds the cargo-fuzz targets (needs a nightly toolchain and cargo-fuzz); see
# docs/fuzzing.md for running them.
fuzz-build:
	cd fuzz && $(CARGO) +nightly fuzz build

clean:
	$(CARGO) clean
