# The two commands: `make test` (everything CI checks) and `make bench` (the main job).
# Both install what they need first.

CARGO ?= cargo

.PHONY: test bench deps fmt lint unit fuzz-build clean

test: deps
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) test --workspace

# The db_bench suite (strata-bench) is not built yet; until it is, `make bench` runs the
# format layer's micro-benchmarks and says so.
bench: deps
	@echo "strata-bench (db_bench workloads on Strata and its peers) is not built yet."
	@echo "Running the format layer's micro-benchmarks instead (criterion):"
	$(CARGO) bench -p strata --bench formats

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
