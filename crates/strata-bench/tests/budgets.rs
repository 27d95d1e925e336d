//! `--write_budget` and `--read_budget`: a benchmark stopped by its budget says so, with
//! how many operations ran, and its µs/op is over those operations; without a budget every
//! operation runs.

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_strata-bench");

/// (name, ops, seconds, message) of each result of a run of `args` on Strata.
fn run(dir: &Path, args: &[&str]) -> Vec<(String, u64, f64, String)> {
    let json = dir.join("run.json");
    let out = Command::new(BIN)
        .args(["--engines=strata", "--process_per_group=false"])
        .arg(format!("--db={}", dir.join("db").display()))
        .arg(format!("--json={}", json.display()))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    doc["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["ops"].as_u64().unwrap(),
                r["seconds"].as_f64().unwrap(),
                r["message"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_budget_stops_writes_and_reads_and_says_how_many_ran() {
    let dir = tempfile::tempdir().unwrap();
    // 100 M writes would take minutes; each budget stops its benchmark after 0.3 s.
    let results = run(
        dir.path(),
        &[
            "--benchmarks=fillrandom,fillrandbatch,readrandom",
            "--num=100000000",
            "--write_budget=0.3",
            "--read_budget=0.3",
        ],
    );
    assert_eq!(results.len(), 3, "{results:?}");
    for (name, ops, seconds, message) in &results {
        assert!(*ops > 0 && *ops < 100_000_000, "{name}: {ops} ops");
        assert!(*seconds < 5.0, "{name}: {seconds} s, budget 0.3 s");
        let kind = if name == "readrandom" {
            "read"
        } else {
            "write"
        };
        let said = format!("({kind} budget: {ops} of 100000000 {kind}s ran)");
        assert!(message.contains(&said), "{name}: {message:?}, want {said}");
    }
    // A batch of 1,000 is the unit a write budget stops at.
    assert_eq!(results[1].1 % 1000, 0, "{results:?}");
}

#[test]
fn without_a_budget_every_write_runs() {
    let dir = tempfile::tempdir().unwrap();
    let results = run(
        dir.path(),
        &["--benchmarks=fillrandom,readrandom", "--num=20000"],
    );
    assert_eq!(results[0].1, 20_000, "{results:?}");
    assert_eq!(results[0].3, "", "{results:?}");
    assert_eq!(results[1].1, 20_000, "{results:?}");
    assert!(!results[1].3.contains("budget"), "{results:?}");
}
