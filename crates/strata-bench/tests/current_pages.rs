//! Every current page (`docs/results/current.txt`) either was run on the code of today's
//! commit or says what changed since: for each page drawn from JSON, its recorded commit
//! is clean (no uncommitted changes) and known to git, and when the engine
//! (`crates/strata/src`) or the benchmark tool's workloads (`crates/strata-bench/src`
//! outside `report/`, which only draws) differ between that commit and `HEAD`, the page's
//! fourth field in `current.txt` must say what changed. Needs the repository's history
//! (`.ci/run` deepens a shallow clone).

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The paths whose change changes a page's figures.
const MEASURED: [&str; 3] = [
    "crates/strata/src",
    "crates/strata-bench/src",
    ":(exclude)crates/strata-bench/src/report",
];

fn git(args: &[&str]) -> std::process::Output {
    Command::new("git")
        .arg("-C")
        .arg(repo())
        .args(args)
        .output()
        .expect("run git")
}

/// The commit a page's JSON files record.
fn commit_of(folder: &Path) -> Option<String> {
    let mut jsons: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    jsons.sort();
    let first = jsons.first()?;
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(first).unwrap()).unwrap();
    Some(doc["commit"].as_str().unwrap_or("unknown").to_string())
}

#[test]
fn every_current_page_is_at_head_or_says_what_changed_since() {
    let shallow = git(&["rev-parse", "--is-shallow-repository"]);
    assert!(
        shallow.status.success(),
        "not a git repository: {}",
        String::from_utf8_lossy(&shallow.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&shallow.stdout).trim(),
        "false",
        "a shallow clone: `git fetch --unshallow` first (the pages' commits are needed)"
    );
    let results = repo().join("docs/results");
    let list = std::fs::read_to_string(results.join("current.txt")).unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for line in list
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
    {
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        let (folder, since) = (fields[1], fields.get(3).copied().unwrap_or_default());
        let Some(commit) = commit_of(&results.join(folder)) else {
            continue; // A run its README describes: its commit is in its prose.
        };
        if commit.ends_with("-dirty") {
            failures.push(format!("{folder}: run on a tree with uncommitted changes"));
            continue;
        }
        let mut args = vec!["diff", "--quiet", commit.as_str(), "HEAD", "--"];
        args.extend(MEASURED);
        let diff = git(&args);
        match diff.status.code() {
            Some(0) => {}
            Some(1) if !since.is_empty() => {}
            Some(1) => {
                let mut log = vec!["log", "--oneline", "--no-decorate"];
                let range = format!("{commit}..HEAD");
                log.push(&range);
                log.push("--");
                log.extend(MEASURED);
                let commits = String::from_utf8_lossy(&git(&log).stdout).into_owned();
                failures.push(format!(
                    "{folder} (commit {commit}): the engine or the workloads changed since its \
                     run; rerun it, or say what changed in current.txt's fourth field:\n{commits}"
                ));
            }
            _ => failures.push(format!(
                "{folder}: git cannot compare commit {commit} with HEAD: {}",
                String::from_utf8_lossy(&diff.stderr)
            )),
        }
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} pages drawn from JSON");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
