//! `strata-bench site DIR`: the index page of a results folder (`docs/results/`). It opens
//! with the current page of each suite, as `DIR/current.txt` names them (a page drawn by
//! `strata-bench report`, or a run described by its README), each with its date, commit,
//! CPU and rounds, and what changed in the code since its run (`current.txt`'s fourth
//! field, `COMMIT: words`; `tests/current_pages.rs` fails when what makes a page's figures
//! changed after its commit and the field does not say so up to today). A current page
//! run on a tree with uncommitted changes is refused: it is not the code of any commit.
//! Then the older pages, each marked as superseded by its suite's current one; then the engineering runs (folders with a `README.md`: one change's before and
//! after) as an archive. Newest first, as folder names are dated.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{CSS, esc, machine_text, utc};
use crate::accounting::Machine;

/// What the index needs of a page's `--json` file: its header, read alone, so files from
/// older versions of the tool (whose settings had fewer fields) still list.
#[derive(Debug, serde::Deserialize)]
struct Header {
    suite: Option<String>,
    started_unix: u64,
    commit: Option<String>,
    args: Vec<String>,
    machine: Machine,
    #[serde(default)]
    runs: Vec<RunHeader>,
}

/// Of each engine run, its round.
#[derive(Debug, serde::Deserialize)]
struct RunHeader {
    #[serde(default)]
    round: usize,
}

/// One folder of the results folder.
#[derive(Debug, PartialEq)]
enum Entry {
    /// A page drawn from `--json` results.
    Published {
        folder: String,
        suite: String,
        detail: String,
        /// Run on a tree with uncommitted changes.
        dirty: bool,
        cpu: String,
        /// The engines its `--engines` named (`all` as itself).
        engines: BTreeSet<String>,
    },
    /// A run described by its README.
    Engineering { folder: String, title: String },
}

/// A suite's name as the index says it.
fn suite_title(suite: &str) -> String {
    match suite {
        "baseline" => "LevelDB's benchmark page".into(),
        "readwhilewriting" => "WiredTiger's read-while-writing page".into(),
        "value-sizes" => "KingDB's value-size page".into(),
        "scale" => "LevelDB at scale".into(),
        "group-commit" => "Group commit".into(),
        "openraft" => "Replicated: a 3-node openraft cluster".into(),
        "transactions" => "Transactions".into(),
        s => format!("the {s} suite"),
    }
}

/// The engines a run's arguments name (`--engines=a,b`).
fn engines(args: &[String]) -> BTreeSet<String> {
    args.iter()
        .filter_map(|a| a.strip_prefix("--engines="))
        .flat_map(|list| list.split(','))
        .map(str::to_string)
        .collect()
}

/// The page drawn from `doc`: what it says about its run. A commit with uncommitted
/// changes (`-dirty`) is said in words: such a page is not the code of any commit.
fn detail(doc: &Header) -> String {
    let rounds: BTreeSet<usize> = doc.runs.iter().map(|r| r.round).collect();
    let commit = doc.commit.as_deref().unwrap_or("unknown");
    let commit = match commit.strip_suffix("-dirty") {
        Some(c) => format!("<b>{} with uncommitted changes</b>", esc(c)),
        None => esc(commit),
    };
    format!(
        "{}, commit {commit}, {} round{}, <code>{}</code>; {}",
        esc(&utc(doc.started_unix)),
        rounds.len().max(1),
        if rounds.len() > 1 { "s" } else { "" },
        esc(&doc.args.join(" ")),
        machine_text(&doc.machine)
    )
}

/// The headers of a page folder's `--json` files, in name order.
fn page_headers(folder: &Path) -> Vec<Header> {
    let Ok(dir) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut jsons: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    jsons.sort();
    jsons
        .iter()
        .filter_map(|p| serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok())
        .collect()
}

fn entries(dir: &Path) -> Result<Vec<Entry>> {
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    folders.reverse();
    let mut out = Vec::new();
    for path in folders {
        let folder = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let docs = page_headers(&path);
        if path.join("index.html").is_file()
            && let Some(doc) = docs.first()
        {
            out.push(Entry::Published {
                suite: doc.suite.clone().unwrap_or_else(|| "benchmarks".into()),
                detail: detail(doc),
                dirty: docs
                    .iter()
                    .any(|d| d.commit.as_deref().is_some_and(|c| c.ends_with("-dirty"))),
                cpu: doc.machine.cpu.clone(),
                engines: engines(&doc.args),
                folder,
            });
        } else if let Ok(readme) = std::fs::read_to_string(path.join("README.md")) {
            let title = readme
                .lines()
                .find(|l| l.starts_with("# "))
                .map(|l| l.trim_start_matches("# ").to_string())
                .unwrap_or_else(|| folder.clone());
            out.push(Entry::Engineering { folder, title });
        }
    }
    Ok(out)
}

/// A line of `DIR/current.txt`.
#[derive(Debug)]
struct Current {
    suite: String,
    folder: String,
    /// What sets it apart from the suite's other current pages.
    label: String,
    /// What changed in the code since its run (`COMMIT: words`, the changes up to COMMIT);
    /// empty when nothing did.
    since: String,
}

/// `DIR/current.txt`'s current pages, in the file's order.
fn current(dir: &Path) -> Result<Vec<Current>> {
    let path = dir.join("current.txt");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(n, l)| {
            let mut fields = l.split('\t').map(str::trim);
            let (Some(suite), Some(folder)) = (fields.next(), fields.next()) else {
                anyhow::bail!(
                    "{} line {}: expected SUITE<TAB>FOLDER[<TAB>LABEL[<TAB>SINCE]]",
                    path.display(),
                    n + 1
                );
            };
            Ok(Current {
                suite: suite.to_string(),
                folder: folder.to_string(),
                label: fields.next().unwrap_or_default().to_string(),
                since: fields.next().unwrap_or_default().to_string(),
            })
        })
        .collect()
}

/// Writes `dir/index.html`; returns its path.
pub fn run(dir: &Path) -> Result<PathBuf> {
    let entries = entries(dir)?;
    let current = current(dir)?;
    let is_current = |f: &str| current.iter().any(|c| c.folder == f);
    let cpus: BTreeSet<&str> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Published { cpu, .. } => Some(cpu.as_str()),
            Entry::Engineering { .. } => None,
        })
        .collect();
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Strata's benchmark results</title><style>{CSS}</style></head><body><main>\
         <h1>Strata's benchmark results</h1><p class=\"lede\">The current page of each suite \
         first, then older pages and the engineering runs (one change measured before and \
         after). Compare figures only within one page or run: the machines are shared and \
         their speed drifts. The pages were run on {} CPU model{} ({}); each says which.</p>\
         <section><h2>Current pages</h2><ul>",
        cpus.len(),
        if cpus.len() == 1 { "" } else { "s" },
        esc(&cpus.into_iter().collect::<Vec<_>>().join(", "))
    );
    for Current {
        suite,
        folder,
        label,
        since,
    } in &current
    {
        let page = entries.iter().find_map(|e| match e {
            Entry::Published {
                folder: f,
                detail,
                dirty,
                ..
            } if f == folder => Some(if *dirty {
                Err(anyhow::anyhow!(
                    "current.txt names {folder}, a page run on a tree with uncommitted \
                     changes: rerun it at a commit"
                ))
            } else {
                Ok(format!(
                    "<a href=\"{f}/index.html\">{f}</a>: {detail}",
                    f = esc(f)
                ))
            }),
            Entry::Engineering { folder: f, title } if f == folder => Some(Ok(format!(
                "<a href=\"{f}/README.md\">{f}</a>: {}",
                esc(title),
                f = esc(f)
            ))),
            _ => None,
        });
        let mut page = page.with_context(|| {
            format!("current.txt names {folder}, which holds no page and no README.md")
        })??;
        match since.split_once(": ") {
            Some((upto, words)) => {
                let _ = write!(
                    page,
                    ". <i>Changed since its run, to commit {}:</i> {}",
                    esc(upto),
                    esc(words)
                );
            }
            None if !since.is_empty() => {
                let _ = write!(page, ". <i>Changed since its run:</i> {}", esc(since));
            }
            None => {}
        }
        let name = if label.is_empty() {
            suite_title(suite)
        } else {
            format!("{}, {label}", suite_title(suite))
        };
        let _ = write!(h, "<li><b>{}</b>. {page}</li>", esc(&name));
    }
    // The engines of each current page: an older page is superseded only by current
    // pages that run every engine it ran (`all` covers any); one with an engine no current
    // page has stands beside them.
    let engines_of = |f: &str| {
        entries.iter().find_map(|e| match e {
            Entry::Published {
                folder, engines, ..
            } if folder == f => Some(engines.clone()),
            _ => None,
        })
    };
    h.push_str("</ul></section><section><h2>Superseded pages</h2><ul>");
    for e in &entries {
        if let Entry::Published {
            folder,
            suite,
            detail,
            engines,
            ..
        } = e
            && !is_current(folder)
        {
            let link = |f: &str| format!("<a href=\"{f}/index.html\">{f}</a>", f = esc(f));
            let same_suite: Vec<&str> = current
                .iter()
                .filter(|c| &c.suite == suite)
                .map(|c| c.folder.as_str())
                .collect();
            let covers = |f: &str| {
                engines_of(f).is_none_or(|theirs| {
                    theirs.contains("all") || engines.iter().all(|e| theirs.contains(e))
                })
            };
            let by: Vec<String> = same_suite
                .iter()
                .copied()
                .filter(|f| covers(f))
                .map(link)
                .collect();
            let by = if !by.is_empty() {
                format!(" Superseded by {}.", by.join(" and "))
            } else if same_suite.is_empty() {
                String::new()
            } else {
                let theirs: BTreeSet<String> = same_suite
                    .iter()
                    .filter_map(|f| engines_of(f))
                    .flatten()
                    .collect();
                let own: Vec<&str> = engines
                    .iter()
                    .filter(|e| !theirs.contains(*e))
                    .map(String::as_str)
                    .collect();
                format!(
                    " Beside {}, which does not run {}.",
                    same_suite
                        .iter()
                        .map(|f| link(f))
                        .collect::<Vec<_>>()
                        .join(" and "),
                    esc(&own.join(", "))
                )
            };
            let _ = write!(
                h,
                "<li><a href=\"{f}/index.html\">{f}</a>: {s}. {detail}.{by}</li>",
                f = esc(folder),
                s = esc(&suite_title(suite))
            );
        }
    }
    h.push_str("</ul></section><section><h2>Engineering runs (archive)</h2><ul>");
    for e in &entries {
        if let Entry::Engineering { folder, title } = e
            && !is_current(folder)
        {
            let _ = write!(
                h,
                "<li><a href=\"{f}/README.md\">{f}</a>: {t}</li>",
                f = esc(folder),
                t = esc(title)
            );
        }
    }
    h.push_str("</ul></section></main></body></html>\n");
    let index = dir.join("index.html");
    std::fs::write(&index, h).with_context(|| format!("write {}", index.display()))?;
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_runs_are_listed_apart_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let page = dir.path().join("2026-11-26-baseline");
        std::fs::create_dir_all(&page).unwrap();
        std::fs::write(page.join("index.html"), "<html></html>").unwrap();
        // A file of an older version: settings with fields this one no longer has or
        // lacks, runs that do not parse as today's.
        let json = r#"{"tool":"strata-bench","version":"0","started_unix":1795305600,
            "suite":"baseline","args":["strata-bench","--suite","baseline"],"commit":"abc1234",
            "machine":{"cpu":"cpu","cores":2,"memory":25769803776,"filesystem":"ext4",
            "kernel":"6"},"page_cache":"","runs":[{"settings":{"old":1}}],"summary":[]}"#;
        std::fs::write(page.join("baseline.json"), json).unwrap();
        for (name, title) in [
            ("2026-11-24-a", "# Older run"),
            ("2026-11-25-b", "# Newer run"),
        ] {
            let run = dir.path().join(name);
            std::fs::create_dir_all(&run).unwrap();
            std::fs::write(run.join("README.md"), format!("{title}\n\ntext")).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("empty")).unwrap();
        // An older page of the same suite, from a tree with uncommitted changes.
        let old = dir.path().join("2026-11-20-baseline");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("index.html"), "<html></html>").unwrap();
        std::fs::write(
            old.join("baseline.json"),
            json.replace("abc1234", "0123abc-dirty"),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("current.txt"),
            "# comment\nbaseline\t2026-11-26-baseline\topen files\tabc9999: cache <resized>\n\
             openraft\t2026-11-25-b\n",
        )
        .unwrap();
        let html = std::fs::read_to_string(run(dir.path()).unwrap()).unwrap();
        let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} missing"));
        assert!(at("Current pages") < at("2026-11-26-baseline/index.html\">"));
        assert!(at("2026-11-26-baseline/index.html") < at("Newer run"));
        assert!(
            at("Newer run") < at("Superseded pages"),
            "a current README page"
        );
        assert!(at("Superseded pages") < at("2026-11-20-baseline/index.html"));
        assert!(html.contains("Superseded by <a href=\"2026-11-26-baseline/index.html\">"));
        assert!(at("2026-11-20-baseline/index.html") < at("Engineering runs"));
        assert!(html.contains("commit abc1234"));
        assert!(html.contains("<b>0123abc with uncommitted changes</b>"));
        assert!(html.contains("LevelDB's benchmark page, open files"));
        assert!(html.contains(
            "<i>Changed since its run, to commit abc9999:</i> cache &lt;resized&gt;</li>"
        ));
        assert_eq!(
            html.matches("since its run").count(),
            1,
            "none where none given"
        );
        assert!(at("Engineering runs") < at("Older run"));
        assert_eq!(
            html.matches("Newer run").count(),
            1,
            "listed once, as current"
        );
        assert!(!html.contains("empty"));
        // A current page run on a dirty tree is refused.
        std::fs::write(
            dir.path().join("current.txt"),
            "baseline\t2026-11-20-baseline\n",
        )
        .unwrap();
        let err = run(dir.path()).unwrap_err().to_string();
        assert!(err.contains("uncommitted changes"), "{err}");
        // So is one whose second file (of a page drawn from two) is.
        let two = dir.path().join("2026-11-27-two");
        std::fs::create_dir_all(&two).unwrap();
        std::fs::write(two.join("index.html"), "<html></html>").unwrap();
        std::fs::write(two.join("a.json"), json).unwrap();
        std::fs::write(two.join("b.json"), json.replace("abc1234", "0123abc-dirty")).unwrap();
        std::fs::write(dir.path().join("current.txt"), "baseline\t2026-11-27-two\n").unwrap();
        let err = run(dir.path()).unwrap_err().to_string();
        assert!(err.contains("uncommitted changes"), "{err}");
        // A current page that does not exist is an error, not a silent gap.
        std::fs::write(dir.path().join("current.txt"), "scale\tnowhere\n").unwrap();
        assert!(run(dir.path()).is_err());
    }

    #[test]
    fn a_page_with_an_engine_the_current_one_lacks_stands_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let page = |name: &str, engines: &str| {
            let folder = dir.path().join(name);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join("index.html"), "<html></html>").unwrap();
            let json = format!(
                r#"{{"suite":"transactions","started_unix":1795305600,"commit":"abc1234",
                "args":["strata-bench","--engines={engines}"],"machine":{{"cpu":"cpu",
                "cores":2,"memory":1,"filesystem":"ext4","kernel":"6"}},"runs":[]}}"#
            );
            std::fs::write(folder.join("t.json"), json).unwrap();
        };
        page("2026-11-29-all", "strata,lmdb,fjall-tx");
        page("2026-11-28-fewer", "strata,lmdb");
        page("2026-11-28-other", "strata,fjall-ssi");
        std::fs::write(
            dir.path().join("current.txt"),
            "transactions\t2026-11-29-all\n",
        )
        .unwrap();
        let html = std::fs::read_to_string(run(dir.path()).unwrap()).unwrap();
        let line = |f: &str| {
            let at = html
                .find(&format!("<li><a href=\"{f}/index.html\">"))
                .unwrap();
            html[at..].split("</li>").next().unwrap().to_string()
        };
        assert!(line("2026-11-28-fewer").contains("Superseded by"));
        let other = line("2026-11-28-other");
        assert!(!other.contains("Superseded"), "{other}");
        assert!(other.contains("which does not run fjall-ssi."), "{other}");
    }
}
