//! A run's journal, so a long run (a scale suite at 100 M entries: an hour per engine)
//! can go on after an interruption instead of starting over.
//!
//! With `--json FILE`, every finished unit of the run (one engine's run of one group in
//! one round) is written at once to `FILE.partial` beside it, the whole document so far,
//! replaced atomically (a temporary file renamed over it). The journal is removed when the
//! run ends and `FILE` is written. `--resume` reads the journal back and runs only what it
//! lacks.
//!
//! Invariants:
//! - A journal is only resumed by the command that wrote it: its command line, less
//!   `--resume`, must equal the new one's, or the run stops with an error that says so.
//! - Groups that share a database (a group that reads what an earlier group built) are
//!   resumed only whole: if any of them is missing for an engine and round, all of them
//!   run again, since the interrupted run's database cannot be trusted to be the one the
//!   finished groups left.
//! - A group run that failed (`EngineRun::failure`) is not finished: a resumed run runs
//!   it again, with every group of its database. A run that ends with failed groups
//!   keeps its journal, so the same command with `--resume` runs just those again.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::results::{Document, EngineRun};

/// Where the journal of a run writing `json` lives.
pub fn path(json: &Path) -> PathBuf {
    let mut name = json.as_os_str().to_owned();
    name.push(".partial");
    PathBuf::from(name)
}

/// The command line that identifies a run: its arguments less `--resume`.
pub fn identity(args: &[String]) -> Vec<String> {
    args.iter()
        .skip(1)
        .filter(|a| *a != "--resume" && !a.starts_with("--resume="))
        .cloned()
        .collect()
}

/// Writes the document so far to the journal of `json`, atomically.
pub fn save(json: &Path, doc: &Document) -> Result<()> {
    let journal = path(json);
    let mut temp = journal.as_os_str().to_owned();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    let text = serde_json::to_string_pretty(doc)?;
    std::fs::write(&temp, text).with_context(|| format!("write {}", temp.display()))?;
    std::fs::rename(&temp, &journal)
        .with_context(|| format!("rename {} to {}", temp.display(), journal.display()))?;
    Ok(())
}

/// The units a journal of `json` holds, if there is one, checked against this run's
/// command line (`args`, as `std::env::args`) and cut back to whole database homes
/// (`home[gi]`: the group that built the database group `gi` runs on).
pub fn load(json: &Path, args: &[String], home: &[usize]) -> Result<Vec<EngineRun>> {
    let journal = path(json);
    let text = match std::fs::read_to_string(&journal) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("read {}", journal.display())),
    };
    let doc: Document = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a journal of strata-bench", journal.display()))?;
    let (was, now) = (identity(&doc.args), identity(args));
    if was != now {
        bail!(
            "{} was written by another command line ({}); run that command with --resume, \
             or remove the journal to start over",
            journal.display(),
            was.join(" ")
        );
    }
    Ok(whole_homes(doc.runs, home))
}

/// Keeps the runs whose every group of the same database (engine, round, home) is there
/// and finished.
fn whole_homes(runs: Vec<EngineRun>, home: &[usize]) -> Vec<EngineRun> {
    let has = |engine: &str, round: usize, gi: usize| {
        runs.iter().any(|r| {
            r.engine == engine && r.round == round && r.group_index == gi && r.failure.is_none()
        })
    };
    let whole = |r: &EngineRun| {
        let Some(&h) = home.get(r.group_index) else {
            return false;
        };
        home.iter()
            .enumerate()
            .filter(|(_, x)| **x == h)
            .all(|(gi, _)| has(&r.engine, r.round, gi))
    };
    let keep: Vec<bool> = runs.iter().map(whole).collect();
    runs.into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

/// Removes the journal of a finished run.
pub fn remove(json: &Path) {
    let _ = std::fs::remove_file(path(json));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Settings;

    fn run(engine: &str, round: usize, gi: usize) -> EngineRun {
        EngineRun {
            engine: engine.into(),
            group: format!("g{gi}"),
            group_index: gi,
            round,
            engine_version: String::new(),
            settings: Settings::default(),
            values_touched: false,
            results: Vec::new(),
            not_available: Vec::new(),
            sweep: None,
            failure: None,
        }
    }

    #[test]
    fn a_home_missing_a_group_runs_again_whole() {
        // Groups 0 and 1 share a database; group 2 has its own.
        let home = [0, 0, 2];
        let runs = vec![
            run("a", 0, 0),
            run("a", 0, 1),
            run("a", 0, 2),
            run("b", 0, 0), // b's group 1 is missing: b's home 0 runs again
            run("b", 0, 2),
            run("a", 1, 0), // round 1 of a: half a home
        ];
        let kept: Vec<(String, usize, usize)> = whole_homes(runs, &home)
            .into_iter()
            .map(|r| (r.engine, r.round, r.group_index))
            .collect();
        assert_eq!(
            kept,
            vec![
                ("a".to_string(), 0, 0),
                ("a".to_string(), 0, 1),
                ("a".to_string(), 0, 2),
                ("b".to_string(), 0, 2),
            ]
        );
    }

    #[test]
    fn a_failed_group_runs_again_with_its_home() {
        let home = [0, 0, 2];
        let mut failed = run("a", 0, 1);
        failed.failure = Some(crate::results::GroupFailure {
            benchmark: Some("readrandom".into()),
            what: "killed by signal 11 (SIGSEGV)".into(),
            tail: Vec::new(),
        });
        let runs = vec![run("a", 0, 0), failed, run("a", 0, 2)];
        let kept: Vec<usize> = whole_homes(runs, &home)
            .into_iter()
            .map(|r| r.group_index)
            .collect();
        assert_eq!(kept, vec![2]);
    }

    #[test]
    fn identity_ignores_only_resume() {
        let args: Vec<String> = ["bin", "--num=5", "--resume", "--resume=true", "--json=x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(identity(&args), vec!["--num=5", "--json=x"]);
    }
}
