//! Each group of an engine the harness drives runs in a process of its own (`child.rs`):
//! the same run with and without it gives the same groups, benchmarks and found-key
//! counts, and a group that reads a database an earlier group built finds its keys.

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_strata-bench");

/// (group, benchmark, message) of every result of a run, in order.
fn run(per_group: bool, suite_args: &[&str]) -> Vec<(String, String, String)> {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = Command::new(BIN)
        .args(suite_args)
        .args(["--engines=strata", "--num=3000"])
        .arg(format!("--process_per_group={per_group}"))
        .arg(format!("--db={}", dir.path().join("db").display()))
        .arg(format!("--json={}", json.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut rows = Vec::new();
    for run in doc["runs"].as_array().unwrap() {
        for r in run["results"].as_array().unwrap() {
            rows.push((
                run["group"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
                r["message"].as_str().unwrap().to_string(),
            ));
        }
    }
    rows
}

#[test]
fn groups_in_their_own_processes_give_the_same_run() {
    let args = ["--suite", "baseline"];
    let own = run(true, &args);
    let shared = run(false, &args);
    assert!(own.len() > 20, "{own:?}");
    assert_eq!(own, shared);
    // Every read found what the fills wrote (the messages say "N of N found").
    let reads: Vec<_> = own.iter().filter(|r| r.1 == "readrandom").collect();
    assert!(!reads.is_empty());
    for (_, _, m) in reads {
        assert!(m.contains("3000 of 3000 found"), "{m}");
    }
}

#[test]
fn a_group_reads_the_database_an_earlier_group_built() {
    // readwhilewriting's phases reuse the database its first group loads.
    let rows = run(
        true,
        &["--suite", "readwhilewriting", "--duration=1", "--threads=1"],
    );
    let reads: Vec<_> = rows.iter().filter(|r| r.1 == "readwhilewriting").collect();
    assert!(!reads.is_empty(), "{rows:?}");
    for (g, _, m) in reads {
        let counts = m
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(" found)"))
            .and_then(|(counts, _)| counts.split_once(" of "))
            .unwrap_or_else(|| panic!("{g}: no found count in {m:?}"));
        assert_eq!(counts.0, counts.1, "{g}: every read finds its key: {m}");
        assert_ne!(counts.0, "0", "{g}: {m}");
    }
}
