//! One engine's failure is not the run's (`outcome.rs`, `child.rs`): an engine whose
//! group's process dies by a signal, hangs past `--group_timeout` or fails is recorded
//! with what happened, the other engines' figures stand, the page is drawn with the failed
//! cells marked, the run exits non-zero naming what failed, and `--resume` runs only the
//! failed group again. Faults are planted with the test-only `--fault` flag.

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_strata-bench");

fn bench(json: &Path, extra: &[&str]) -> Output {
    Command::new(BIN)
        .args([
            "--engines=strata,strata-blob",
            "--benchmarks=fillseq,readrandom,readseq",
            "--num=2000",
        ])
        .arg(format!("--json={}", json.display()))
        .args(extra)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn runs(json: &Path) -> Vec<serde_json::Value> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    doc["runs"].as_array().unwrap().clone()
}

fn run_of<'a>(runs: &'a [serde_json::Value], engine: &str) -> &'a serde_json::Value {
    runs.iter().find(|r| r["engine"] == engine).unwrap()
}

fn names(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_peer_killed_by_a_signal_mid_group_is_recorded_and_the_page_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let out = bench(&json, &["--fault=strata-blob:readrandom:abort"]);
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    // The closing message names the engine, where and how.
    assert!(
        said.contains("strata-blob in group")
            && said.contains("at readrandom: killed by signal 6 (SIGABRT)"),
        "{said}"
    );

    let runs = runs(&json);
    // The other engine's figures stand, all of them.
    let strata = run_of(&runs, "strata");
    assert_eq!(
        names(&strata["results"]),
        ["fillseq", "readrandom", "readseq"]
    );
    assert!(strata.get("failure").is_none(), "{strata}");
    // The failed engine keeps what it finished; the rest is marked failed, not missing.
    let blob = run_of(&runs, "strata-blob");
    assert_eq!(names(&blob["results"]), ["fillseq"]);
    let failed: Vec<(String, bool)> = blob["not_available"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().to_string(),
                n["failed"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        failed,
        [
            ("readrandom".to_string(), true),
            ("readseq".to_string(), true)
        ]
    );
    let failure = &blob["failure"];
    assert_eq!(failure["benchmark"], "readrandom");
    assert_eq!(failure["what"], "killed by signal 6 (SIGABRT)");
    // The last lines it printed come with it: its fillseq result line among them.
    let tail: Vec<&str> = failure["tail"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(tail.iter().any(|l| l.starts_with("fillseq")), "{tail:?}");

    // The page: a failures section, and the failed cells drawn as failed.
    let page = dir.path().join("page");
    let report = Command::new(BIN)
        .args(["report", json.to_str().unwrap(), "--out"])
        .arg(&page)
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", text(&report));
    let html = std::fs::read_to_string(page.join("index.html")).unwrap();
    assert!(html.contains("<h2>Failures</h2>"), "no failures section");
    assert!(html.contains("killed by signal 6 (SIGABRT)"));
    assert!(
        html.contains("<td class=\"failed\""),
        "no failed cell in the table"
    );
    let svgs: Vec<String> = std::fs::read_dir(page.join("charts"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    let marked = |text: &str| svgs.iter().filter(|s| s.contains(text)).count();
    assert_eq!(
        marked("FAILED: killed by signal 6 (SIGABRT)"),
        1,
        "readrandom's chart"
    );
    assert_eq!(
        marked("FAILED: earlier in the group: killed by signal 6 (SIGABRT)"),
        1,
        "readseq's chart"
    );
}

#[test]
fn a_hung_group_is_ended_at_its_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let started = std::time::Instant::now();
    let out = bench(
        &json,
        &["--fault=strata-blob:readseq:hang", "--group_timeout=10"],
    );
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(started.elapsed().as_secs() < 120, "the hang was not ended");
    let runs = runs(&json);
    let blob = run_of(&runs, "strata-blob");
    assert_eq!(names(&blob["results"]), ["fillseq", "readrandom"]);
    assert_eq!(blob["failure"]["benchmark"], "readseq");
    assert_eq!(
        blob["failure"]["what"],
        "timed out after 10 s (--group_timeout)"
    );
}

#[test]
fn a_failed_group_is_run_again_by_resume_and_the_rest_kept() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("run.json");
    let fault = "--fault=strata-blob:fillseq:error";
    let first = bench(&json, &[fault]);
    assert!(!first.status.success(), "{}", text(&first));
    assert!(
        text(&first).contains("at fillseq: an error injected by --fault"),
        "{}",
        text(&first)
    );
    let partial = dir.path().join("run.json.partial");
    assert!(
        partial.exists(),
        "a run with failed groups keeps its journal"
    );
    let before = run_of(&runs(&json), "strata")["results"].clone();

    let again = bench(&json, &[fault, "--resume"]);
    let said = text(&again);
    assert!(!again.status.success(), "{said}");
    // Strata's finished group came from the journal; strata-blob's ran (and failed) again.
    assert_eq!(
        said.matches("(from the journal of the interrupted run)")
            .count(),
        1,
        "{said}"
    );
    assert!(said.contains("strata-blob in group"), "{said}");
    let after = runs(&json);
    assert_eq!(run_of(&after, "strata")["results"], before);
    assert_eq!(
        run_of(&after, "strata-blob")["failure"]["benchmark"],
        "fillseq"
    );
}
