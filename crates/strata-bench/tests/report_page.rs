//! The report page, end to end: a small baseline run on every engine built in, the page
//! drawn from its JSON, then rendered by headless Chromium. The rendered DOM must name every
//! engine and every workload, and the screenshot must show Strata's bars.

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

mod browser;

const BIN: &str = env!("CARGO_BIN_EXE_strata-bench");

/// Strata's bar colour in the charts (`report/charts.rs`).
const STRATA_RED: [u8; 3] = [0xc0, 0x39, 0x2b];

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("start a command");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_page_names_every_engine_and_workload_and_renders() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("baseline.json");
    // The LevelDB page's own programs (the *-dbbench columns) are built by `make bench`
    // only; this page is drawn without them wherever they happen to be built.
    let stdout = run(Command::new(BIN)
        .env("STRATA_BENCH_DBBENCH", dir.path().join("no-db_bench"))
        .env(
            "STRATA_BENCH_DBBENCH_SQLITE3",
            dir.path().join("no-db_bench"),
        )
        .env(
            "STRATA_BENCH_DBBENCH_TREE_DB",
            dir.path().join("no-db_bench"),
        )
        .args(["--suite", "baseline", "--engines=all", "--num=2000"])
        .arg(format!("--db={}", dir.path().join("db").display()))
        .arg(format!("--json={}", json.display())));
    let mut engines: Vec<String> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("Engine:"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    engines.sort();
    engines.dedup();
    assert!(engines.contains(&"strata".to_string()), "{stdout}");
    // Strata plain and with value separation (strata-blob), every peer this build has
    // (ten with the peers feature: rocksdb and rocksdb-blob among them), and the null
    // engine, the harness's own cost.
    #[cfg(all(
        feature = "leveldb",
        feature = "rocksdb",
        feature = "sqlite",
        feature = "kyoto",
        feature = "wiredtiger",
        feature = "lmdb",
        feature = "fjall"
    ))]
    assert_eq!(engines.len(), 13, "{engines:?}");
    assert!(engines.contains(&"strata-blob".to_string()), "{engines:?}");
    assert!(engines.contains(&"null".to_string()), "{engines:?}");

    let out = dir.path().join("report");
    run(Command::new(BIN)
        .arg("report")
        .arg(&json)
        .arg("--out")
        .arg(&out));
    let index = out.join("index.html");
    let charts = std::fs::read_dir(out.join("charts")).unwrap().count();
    // 24 rows in the baseline suite, one chart each.
    assert!(charts >= 24, "{charts} charts");

    let url = format!("file://{}", index.display());
    let dom = run(browser::headless().arg("--dump-dom").arg(&url));
    for e in &engines {
        assert!(
            dom.contains(&format!(">{e}<")),
            "engine {e} missing from the rendered page"
        );
    }
    for workload in [
        "1C fillseq",
        "2C fillsync",
        "1D fillrandom",
        "1D overwrite",
        "1B readrandom",
        "1A readseq",
        "1A readreverse",
        "1B readrandom after compaction",
        "1A readseq after compaction",
        "1A readreverse after compaction",
        "compact, baseline",
        "2A fill100K",
        "2B fillbatch",
        "2B fillrandbatch",
        "2D fillseq",
        "2D fillrandom",
        "2E fillseq",
        "2E fillrandom",
        "3A readrandom after compaction",
        "3A readseq after compaction",
        "3B readrandom after compaction",
        "3B readseq after compaction",
    ] {
        assert!(
            dom.contains(&format!("data-workload=\"{workload}\"")),
            "workload {workload} missing from the rendered page"
        );
    }
    if engines.contains(&"kyoto-treedb".to_string()) {
        assert!(
            dom.contains("n/a: no atomic batches"),
            "TreeDB's batch rows must say n/a"
        );
    }

    let shot = dir.path().join("page.png");
    run(browser::headless()
        .arg("--hide-scrollbars")
        .arg("--window-size=1000,2400")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url));
    assert_strata_red(&shot);
}

/// Decodes the screenshot and checks a visible share of it is Strata's bar colour.
fn assert_strata_red(png_path: &Path) {
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{:?}", info.color_type);
    let pixels = &buf[..info.buffer_size()];
    let red = pixels
        .chunks_exact(channels)
        .filter(|p| {
            p[..3]
                .iter()
                .zip(STRATA_RED)
                .all(|(a, b)| a.abs_diff(b) <= 6)
        })
        .count();
    let total = pixels.len() / channels;
    assert!(
        red * 1000 > total,
        "the screenshot shows almost no Strata bars ({red} of {total} pixels)"
    );
}
