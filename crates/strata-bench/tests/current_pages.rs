//! Every current page (`docs/results/current.txt`) either was run on the code of today's
//! commit or says what changed since, up to today: for each page drawn from JSON, every
//! JSON file's recorded commit is clean (no uncommitted changes) and known to git; when
//! what makes its figures (the engine, the benchmark tool outside its drawing code, the
//! peers' shims and build scripts: [`MEASURED`]) differs between that commit and `HEAD`,
//! the page's fourth field in `current.txt` must say what changed, as `COMMIT: words`,
//! and nothing measured may have changed after `COMMIT`. So a change to the engine fails
//! this test until each page it makes stale is rerun or its note is brought up to date.
//! Needs the repository's history (`.ci/run` deepens a shallow clone).

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The paths whose change can change a page's figures.
const MEASURED: [&str; 9] = [
    "crates/strata/src",
    "crates/strata/Cargo.toml",
    "crates/strata-bench/src",
    ":(exclude)crates/strata-bench/src/report",
    "crates/strata-bench/csrc",
    "crates/strata-bench/build.rs",
    "crates/strata-bench/Cargo.toml",
    "scripts/build-rocksdb-release.sh",
    "scripts/build-leveldb-dbbench.sh",
];

fn git(args: &[&str]) -> std::process::Output {
    Command::new("git")
        // A clone owned by another user (a CI container) is still this repository.
        .args(["-c", "safe.directory=*", "-C"])
        .arg(repo())
        .args(args)
        .output()
        .expect("run git")
}

/// The commits a page's JSON files record, one a file.
fn commits_of(folder: &Path) -> Vec<String> {
    let mut jsons: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    jsons.sort();
    jsons
        .iter()
        .map(|p| {
            let doc: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            doc["commit"].as_str().unwrap_or("unknown").to_string()
        })
        .collect()
}

/// `git diff --quiet FROM HEAD -- MEASURED`: Some(true) when nothing measured changed,
/// Some(false) when something did, None when git cannot tell (an unknown commit).
fn unchanged_since(from: &str) -> Option<bool> {
    let mut args = vec!["diff", "--quiet", from, "HEAD", "--"];
    args.extend(MEASURED);
    match git(&args).status.code() {
        Some(0) => Some(true),
        Some(1) => Some(false),
        _ => None,
    }
}

/// The measured commits after `from`, one a line.
fn log_since(from: &str) -> String {
    let range = format!("{from}..HEAD");
    let mut args = vec!["log", "--oneline", "--no-decorate", range.as_str(), "--"];
    args.extend(MEASURED);
    String::from_utf8_lossy(&git(&args).stdout).into_owned()
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
        let folder = *fields
            .get(1)
            .unwrap_or_else(|| panic!("current.txt: {line:?} is not SUITE<TAB>FOLDER..."));
        let note = fields.get(3).copied().unwrap_or_default();
        let commits = commits_of(&results.join(folder));
        if commits.is_empty() {
            continue; // A run its README describes: its commit is in its prose.
        }
        checked += 1;
        for commit in &commits {
            if commit.ends_with("-dirty") {
                failures.push(format!("{folder}: run on a tree with uncommitted changes"));
                continue;
            }
            match unchanged_since(commit) {
                Some(true) => continue,
                None => {
                    failures.push(format!("{folder}: git does not know commit {commit}"));
                    continue;
                }
                Some(false) => {}
            }
            let Some((upto, _)) = note.split_once(": ").filter(|(_, w)| !w.is_empty()) else {
                failures.push(format!(
                    "{folder} (commit {commit}): what makes its figures changed since its run; \
                     rerun it, or say what changed in current.txt's fourth field as \
                     `COMMIT: words`:\n{}",
                    log_since(commit)
                ));
                continue;
            };
            match unchanged_since(upto) {
                Some(true) => {}
                Some(false) => failures.push(format!(
                    "{folder}: its note says what changed up to {upto}; since then, also \
                     (add them to the note and name the last):\n{}",
                    log_since(upto)
                )),
                None => failures.push(format!(
                    "{folder}: its note names {upto}, a commit git does not know"
                )),
            }
        }
    }
    assert!(checked >= 5, "only {checked} pages drawn from JSON");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
