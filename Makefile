# The two commands: `make test` (everything CI checks) and `make bench` (the main job).
# Both install what they need first.

CARGO ?= cargo
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
# A comma inside $(call ...)'s arguments.
, := ,

.PHONY: pages libleveldb test bench bench-full bench-yardstick bench-group-commit bench-transactions bench-transactions-fjall-ssi bench-readwhilewriting bench-value-sizes bench-scale leveldb-dbbench bench-micro soak stress-soak miri sanitize deps fmt fuzz-build fuzz-soak clean

# `clippy -p strata --lib` lints the engine as users build it (no features; the
# workspace's tools turn `internals` and `testing` on for everything else), and
# `-p strata-bench --bin` the benchmark tool as a bare build gives it (no peers). The
# suites run with every peer built in (the report page test draws them all). The examples
# (measuring tools run by hand) are checked by clippy, not linked for the tests.
PEERS = --features strata-bench/peers
test: deps
	$(CARGO) fmt --all --check
	# Every ratio the README, guide and status quote has a source that holds it.
	python3 scripts/quoted-figures.py --check > /dev/null || { python3 scripts/quoted-figures.py --problems; false; }
	$(CARGO) clippy --workspace --all-targets $(PEERS) -- -D warnings
	$(CARGO) clippy -p strata --lib -- -D warnings
	$(CARGO) clippy -p strata-bench --bin strata-bench -- -D warnings
	$(CARGO) test --workspace $(PEERS) --no-run --lib --bins --tests
	# The I/O error suite, the longest test binary and busy on the CPU while most others
	# wait on fsync, runs beside them; its output follows theirs.
	log=$$(mktemp); $(CARGO) test --workspace $(PEERS) --test io_errors > $$log 2>&1 & io=$$!; \
	$(CARGO) test --workspace $(PEERS) --lib --bins --tests -- --skip errors_at_every_call --skip random_multi_fault_runs; rc=$$?; \
	wait $$io; io_rc=$$?; cat $$log; rm -f $$log; [ $$rc -eq 0 ] && [ $$io_rc -eq 0 ]
	$(CARGO) test --workspace $(PEERS) --doc
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --no-deps -p strata -p strata-c -p strata-openraft

# The current pages (docs/results/current.txt) redrawn from their JSON files by today's
# `strata-bench report`, and the results index: after a change to the report's drawing
# (make test fails until the committed pages are what it draws).
pages:
	grep -v '^#' docs/results/current.txt | while IFS=$$'\t' read -r suite folder label; do \
		d=docs/results/$$folder; ls $$d/*.json > /dev/null 2>&1 || continue; rm -rf $$d/charts; \
		$(CARGO) run -q -p strata-bench -- report $$d/*.json --out $$d > /dev/null; \
	done
	$(CARGO) run -q -p strata-bench -- site docs/results > /dev/null

# LevelDB's C API over Strata, installed as libleveldb.so.1/.so.1d/.so in DIR
# (default target/libleveldb): run existing LevelDB programs with LD_LIBRARY_PATH=DIR.
DIR ?= $(CURDIR)/target/libleveldb
libleveldb: deps
	scripts/install-libleveldb.sh $(DIR)

# The main job: LevelDB's benchmark page (the baseline suite, 1,000,000 entries) on Strata
# and every peer in its full-strength form (LevelDB's own db_bench, a release RocksDB,
# SQLite in WAL mode, Kyoto TreeDB, WiredTiger's LSM and B-tree, LMDB, fjall), one round,
# then the report page in bench-report/index.html. Each write benchmark stops after
# BENCH_WRITE_BUDGET seconds and each random read after BENCH_READ_BUDGET (docs/bench.md;
# LevelDB's own db_bench always runs whole): about 9 minutes here, about 27 minutes all
# told on a fresh machine with the builds. The other
# columns (LevelDB through its C API, SQLite's rollback journal, the page's own SQLite and
# TreeDB programs, the value-separated columns) and every row whole: `make bench-full`.
# RocksDB is a release build for this CPU (scripts/build-rocksdb-release.sh: about 15
# minutes on 2 cores the first time, then kept in target/rocksdb-native/).
BENCH_BUILD = scripts/build-rocksdb-release.sh >/dev/null && \
	STRATA_BENCH_ROCKSDB_DIR=$(CURDIR)/target/rocksdb-native $(CARGO) build --release -p strata-bench --features peers

# One engine's failure is not the run's: a group whose process dies (a signal), runs past
# GROUP_TIMEOUT seconds or fails is recorded as failed and the run goes on; the page is
# drawn anyway, with the failed cells marked, and then the target fails, naming them.
GROUP_TIMEOUT ?= 1800
# $(call run_and_report,NAME,PAGE_DIR,ARGS[,TEE_FLAGS]): strata-bench ARGS into
# bench-report/NAME.json and .txt, then the page into PAGE_DIR, then strata-bench's status.
# TEE_FLAGS -a: a resumable run, whose files are added to, never removed first.
define run_and_report
	status=0; [ "$(4)" = -a ] || rm -f bench-report/$(1).json; \
	./target/release/strata-bench $(3) --group_timeout=$(GROUP_TIMEOUT) --json bench-report/$(1).json | tee $(4) bench-report/$(1).txt || status=$$?; \
	if [ -f bench-report/$(1).json ]; then ./target/release/strata-bench report bench-report/$(1).json --out $(2); fi; \
	exit $$status
endef

BENCH_ENGINES = null$(,)strata$(,)leveldb-dbbench$(,)rocksdb$(,)sqlite3-wal$(,)kyoto-treedb$(,)wiredtiger-lsm$(,)wiredtiger-btree$(,)lmdb$(,)fjall
BENCH_WRITE_BUDGET ?= 5
BENCH_READ_BUDGET ?= 3
bench: deps
	$(BENCH_BUILD)
	scripts/build-leveldb-dbbench.sh >/dev/null
	mkdir -p bench-report
	$(call run_and_report,baseline,bench-report,--suite baseline --engines=$(BENCH_ENGINES) --write_budget=$(BENCH_WRITE_BUDGET) --read_budget=$(BENCH_READ_BUDGET))

# Three interleaved rounds, medians and paired ratios reported (49 minutes here on 2026-11-26).
# Resumable: run it again after an interruption and it goes on from the last finished
# engine-round (bench-report/baseline-full.json.partial; docs/bench.md).
bench-full: deps
	$(BENCH_BUILD)
	scripts/build-leveldb-dbbench.sh >/dev/null
	mkdir -p bench-report
	$(call run_and_report,baseline-full,bench-report/full,--suite baseline --engines=all --repeats=3 --read_budget=10 --resume,-a)

# The other pages (docs/bench.md, "The other suites"), each into bench-report/PAGE/:
# group commit (5 rounds, 3 s a group: about 20 minutes), read-while-writing (3 rounds,
# 5 s phases: about 40 minutes), value sizes (every engine, one round: about 40 minutes)
# and scale (NUM entries, Strata and LevelDB's own db_bench, paired rounds; run once per
# size, then `strata-bench report` over the JSON files draws them together).
bench-group-commit: deps
	$(BENCH_BUILD)
	mkdir -p bench-report
	$(call run_and_report,group-commit,bench-report/group-commit,--suite group-commit --engines=strata$(,)leveldb$(,)rocksdb$(,)sqlite3-wal$(,)wiredtiger-lsm$(,)wiredtiger-btree --repeats=5 --duration=3)

# Transactions (randomtransaction at two contention levels and a read-modify-write mix,
# 1, 4 and 16 threads): Strata and the peers with transactions, 5 rounds, 3 s a group
# (about 17 minutes here).
bench-transactions: deps
	$(BENCH_BUILD)
	mkdir -p bench-report
	$(call run_and_report,transactions,bench-report/transactions,--suite transactions --engines=strata$(,)rocksdb-optimistic$(,)rocksdb-pessimistic$(,)lmdb$(,)fjall-tx$(,)sqlite3-wal$(,)wiredtiger-btree$(,)kyoto-treedb --repeats=5 --duration=3)

# fjall's optimistic serializable transactions (`ssi_tx`) against Strata's, the same
# workloads: fjall builds one transaction mode at a time, so this is a strata-bench build
# of its own (target/fjall-ssi), with Strata and fjall only.
bench-transactions-fjall-ssi: deps
	CARGO_TARGET_DIR=$(CURDIR)/target/fjall-ssi $(CARGO) build --release -p strata-bench --features fjall-ssi
	mkdir -p bench-report
	status=0; rm -f bench-report/transactions-fjall-ssi.json; \
	./target/fjall-ssi/release/strata-bench --suite transactions --engines=strata,fjall-ssi --repeats=5 --duration=3 \
		--group_timeout=$(GROUP_TIMEOUT) --json bench-report/transactions-fjall-ssi.json | tee bench-report/transactions-fjall-ssi.txt || status=$$?; \
	if [ -f bench-report/transactions-fjall-ssi.json ]; then ./target/fjall-ssi/release/strata-bench report bench-report/transactions-fjall-ssi.json --out bench-report/transactions-fjall-ssi; fi; \
	exit $$status

bench-readwhilewriting: deps
	$(BENCH_BUILD)
	mkdir -p bench-report
	$(call run_and_report,readwhilewriting,bench-report/readwhilewriting,--suite readwhilewriting --engines=strata$(,)leveldb$(,)rocksdb$(,)wiredtiger-lsm$(,)wiredtiger-btree$(,)fjall --repeats=3 --duration=5)

bench-value-sizes: deps
	$(BENCH_BUILD)
	scripts/build-leveldb-dbbench.sh >/dev/null
	mkdir -p bench-report
	$(call run_and_report,value-sizes,bench-report/value-sizes,--suite value-sizes --engines=all --read_budget=10)

# Scale rounds alternate the engines (SCALE_ROUNDS, default 3); each random read and scan
# benchmark reads SCALE_READS keys on both engines. Interrupted, the same command goes on
# where it stopped (--resume: the finished engine-rounds are kept in the JSON's journal).
NUM ?= 10000000
SCALE_ROUNDS ?= 3
SCALE_READS ?= 10000000
bench-scale: deps
	$(BENCH_BUILD)
	scripts/build-leveldb-dbbench.sh >/dev/null
	mkdir -p bench-report
	status=0; ./target/release/strata-bench --suite scale --num=$(NUM) --engines=strata,leveldb-dbbench --repeats=$(SCALE_ROUNDS) --reads=$(SCALE_READS) --read_budget=0 --resume --json bench-report/scale-$(NUM).json | tee -a bench-report/scale-$(NUM).txt || status=$$?; \
	if [ -f bench-report/scale-$(NUM).json ]; then ./target/release/strata-bench report bench-report/scale-*.json --out bench-report/scale; fi; \
	exit $$status

# The yardstick: Strata against LevelDB's own release db_bench on the baseline suite,
# alternating back to back ROUNDS times (default 5); the summary gives the median of the
# paired ratios and their range per row. Under a minute a round here (5 rounds: 4 min).
ROUNDS ?= 5
# Built without the in-process peers (target/strata-only/), so Strata's peak RSS is not
# charged the pages of the peers' libraries (about 10 MB: RocksDB's alone is 6 MB).
bench-yardstick: deps
	$(CARGO) build --release -p strata-bench --target-dir target/strata-only
	scripts/build-leveldb-dbbench.sh >/dev/null
	mkdir -p bench-report
	STRATA_BENCH_DBBENCH=$(CURDIR)/target/leveldb-dbbench/db_bench ./target/strata-only/release/strata-bench --suite baseline --engines=strata,leveldb-dbbench --repeats=$(ROUNDS) --read_budget=10 --json bench-report/yardstick.json | tee bench-report/yardstick.txt

# The LevelDB page's own programs (LevelDB 1.23's db_bench, db_bench_sqlite3 and
# db_bench_tree_db; release builds) for the *-dbbench columns.
leveldb-dbbench:
	scripts/build-leveldb-dbbench.sh

# Criterion micro-benchmarks of the engine's parts.
bench-micro: deps
	$(CARGO) bench -p strata

# The reliability suites at their soak sizes (docs/reliability.md records a run). Hours:
# run it on an otherwise idle machine. Fuzzing is separate (make fuzz-build, docs/fuzzing.md).
soak: deps
	STRATA_SIM_CRASHES=200000 $(CARGO) test --release -p strata --test crash_sim -- --nocapture
	STRATA_STATES_RUNS=300 STRATA_STATES_OPS=200 STRATA_STATES_PER_POINT=24 $(CARGO) test --release -p strata --test crash_states -- --nocapture
	LOOM_MAX_PREEMPTIONS=5 $(CARGO) test --release -p strata --test loom_models -- --nocapture
	STRATA_POINTS_SEEDS=20 $(CARGO) test --release -p strata --test crash_points -- --nocapture
	STRATA_SWEEP_CASES=0 $(CARGO) test --release -p strata --test corruption_sweep -- --nocapture
	STRATA_CRASH_CYCLES=2000 $(CARGO) test --release -p strata --test crash -- --nocapture
	STRATA_MULTIFAULT_RUNS=100000 STRATA_RETRY_RUNS=100000 $(CARGO) test --release -p strata --test io_errors -- --nocapture
	STRATA_META_OPS=200000 STRATA_META_LOGS=10 $(CARGO) test --release -p strata --test metamorphic -- --nocapture
	STRATA_TXN_TRANSFERS=2000000 STRATA_TXN_SWAPS=20000 STRATA_TXN_HISTORY=100000 STRATA_TXN_CRASHES=20000 $(CARGO) test --release -p strata --test transactions -- --nocapture
	STRATA_RAFT_CUT_SEEDS=1000 $(CARGO) test --release -p strata-openraft --test power_cut -- --nocapture
	STRATA_SNAPSHOT_MB=1024 $(CARGO) test --release -p strata-openraft --test snapshot_memory -- --nocapture
	$(MAKE) stress-soak

# The concurrency soak alone: 16 threads x 5 M ops each, in phases of 50,000 ops per thread
# with a reopen between them (2.6 to 4.2 hours here, as fast as the disk's fsync is that
# day). It keeps a checkpoint in target/stress-soak/ after each phase, so a run cut short
# carries on at the next call in the same checkout (a fresh clone has no target/); delete
# that directory to start again.
stress-soak: deps
	STRATA_STRESS_DIR=$(CURDIR)/target/stress-soak STRATA_STRESS_THREADS=16 STRATA_STRESS_OPS=5000000 STRATA_STRESS_PHASE_OPS=50000 $(CARGO) test --release -p strata --test stress threads_against -- --nocapture

# Miri runs the unit tests of every module with `unsafe` code that Miri can run: the skip
# list (memtable/skiplist.rs; its counts scale down under Miri) and prefetch.rs. The
# memtable's own tests and the cursor conformance walk, which use the skip list without
# `unsafe` of their own, take over 20 minutes under Miri and are left to ASan and TSan
# (`make sanitize`). Needs the nightly toolchain; installs Miri.
miri:
	rustup component add --toolchain nightly miri rust-src
	$(CARGO) +nightly miri test -p strata --lib memtable::skiplist
	$(CARGO) +nightly miri test -p strata --lib prefetch

# The engine's unit tests, the concurrency tests (threads, stress), the model and the
# metamorphic test under AddressSanitizer, then ThreadSanitizer (nightly -Zsanitizer, the
# standard library rebuilt instrumented). About 20 min here from cold, 4 min warm;
# docs/reliability.md records a run. `make sanitize SANITIZERS=thread` runs one.
SANITIZERS ?= address thread
sanitize: deps
	scripts/sanitize.sh $(SANITIZERS)

deps:
	@scripts/install-deps.sh

fmt:
	$(CARGO) fmt --all

# Builds the cargo-fuzz targets (needs a nightly toolchain and cargo-fuzz); see
# docs/fuzzing.md for running them.
fuzz-build:
	cd fuzz && $(CARGO) +nightly fuzz build
	git rev-parse --short HEAD > fuzz/target/x86_64-unknown-linux-gnu/release/BUILT_COMMIT

# One CPU-hour per fuzz target, two at a time at nice 19 (about 4.5 hours on two cores);
# resumable: fuzz/soak-ledger.tsv keeps what each target has had (docs/fuzzing.md).
fuzz-soak: fuzz-build
	scripts/fuzz-soak.sh --cpu-seconds 3600 --jobs 2

clean:
	$(CARGO) clean
