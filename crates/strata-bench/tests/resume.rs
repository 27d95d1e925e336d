//! `--resume`: a run interrupted after some of its units goes on from its journal
//! (`JSON.partial`) and runs only the units the journal lacks; a journal of another
//! command line is refused.

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_strata-bench");

fn bench(json: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args([
            "--engines=null,strata",
            "--benchmarks=fillseq,readrandom",
            "--num=2000",
            "--repeats=2",
        ])
        .arg(format!("--json={}", json.display()))
        .args(extra)
        .output()
        .unwrap()
}

fn units(doc: &serde_json::Value) -> Vec<(String, u64)> {
    doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["engine"].as_str().unwrap().to_string(),
                r["round"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn an_interrupted_run_goes_on_from_its_journal() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = bench(&json, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let partial = dir.path().join("run.json.partial");
    assert!(!partial.exists(), "a finished run leaves no journal");
    // A reading of the machine's state before each of the two rounds and one after the
    // last, in the JSON and the text.
    let done: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let probes = done["probes"].as_array().unwrap();
    assert_eq!(probes.len(), 3, "{probes:?}");
    for (round, p) in probes.iter().enumerate() {
        assert_eq!(p["round"].as_u64(), Some(round as u64));
        for field in ["cpu_ns", "cache_ns", "memory_ns"] {
            assert!(p[field].as_f64().unwrap() > 0.0, "{field}: {p}");
        }
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("Machine:    ").count(), 3, "{text}");
    assert!(text.contains("(read after round 2)"), "{text}");
    assert!(text.contains("Machine state over the rounds"), "{text}");
    // Each round between two readings has a state.
    assert!(text.contains("Rounds by state: "), "{text}");

    // Make the journal of a run interrupted after its first two units (round 0 of both
    // engines), with a figure no real run gives, so the resumed run shows where each
    // unit came from.
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let all = units(&doc);
    assert_eq!(all.len(), 4);
    doc["runs"].as_array_mut().unwrap().truncate(2);
    doc["runs"][1]["results"][0]["micros_per_op"] = serde_json::json!(123456.0);
    std::fs::write(&partial, serde_json::to_string(&doc).unwrap()).unwrap();
    std::fs::remove_file(&json).unwrap();

    let out = bench(&json, &["--resume"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("from the journal").count(), 2, "{stdout}");
    assert!(
        !partial.exists(),
        "the resumed run removes its journal when it ends"
    );
    let resumed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(units(&resumed), all);
    assert_eq!(
        resumed["runs"][1]["results"][0]["micros_per_op"].as_f64(),
        Some(123456.0),
        "the journal's unit is kept, not run again"
    );
    // The units the journal lacked ran: real figures, both benchmarks.
    for run in &resumed["runs"].as_array().unwrap()[2..] {
        assert_eq!(run["results"].as_array().unwrap().len(), 2, "{run}");
        let us = run["results"][0]["micros_per_op"].as_f64().unwrap();
        assert!(us > 0.0 && us < 123456.0, "{run}");
    }
}

#[test]
fn a_journal_of_another_command_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = bench(&json, &[]);
    assert!(out.status.success());
    let partial = dir.path().join("run.json.partial");
    std::fs::rename(&json, &partial).unwrap();
    let out = Command::new(BIN)
        .args([
            "--engines=null",
            "--benchmarks=fillseq",
            "--num=100",
            "--resume",
        ])
        .arg(format!("--json={}", json.display()))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another command line"), "{err}");
    assert!(partial.exists(), "a refused journal is left as it was");
}
