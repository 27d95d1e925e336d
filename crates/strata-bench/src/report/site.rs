//! `strata-bench site DIR`: the index page of a results folder (`docs/results/`). It lists
//! the published pages first (folders holding a page drawn by `strata-bench report`, an
//! `index.html` beside the `--json` file it came from), each with the date, commit, command
//! and machine its JSON records, then the engineering runs (folders with a `README.md`: one
//! change's before and after), each with its title. Newest first, as folder names are dated.

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
}

/// One folder of the results folder.
#[derive(Debug, PartialEq)]
enum Entry {
    /// A page drawn from `--json` results.
    Published {
        folder: String,
        suite: String,
        detail: String,
    },
    /// A run described by its README.
    Engineering { folder: String, title: String },
}

/// The page drawn from `doc`: what it says about its run.
fn detail(doc: &Header) -> String {
    format!(
        "{}, commit {}, <code>{}</code>; {}",
        esc(&utc(doc.started_unix)),
        esc(doc.commit.as_deref().unwrap_or("unknown")),
        esc(&doc.args.join(" ")),
        machine_text(&doc.machine)
    )
}

/// The header of a page folder's `--json` file, if it has one.
fn page_header(folder: &Path) -> Option<Header> {
    let mut jsons: Vec<PathBuf> = std::fs::read_dir(folder)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    jsons.sort();
    jsons
        .iter()
        .find_map(|p| serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok())
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
        if path.join("index.html").is_file()
            && let Some(doc) = page_header(&path)
        {
            out.push(Entry::Published {
                suite: doc.suite.clone().unwrap_or_else(|| "benchmarks".into()),
                detail: detail(&doc),
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

/// Writes `dir/index.html`; returns its path.
pub fn run(dir: &Path) -> Result<PathBuf> {
    let entries = entries(dir)?;
    let mut h = String::new();
    let _ = write!(
        h,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Strata's benchmark results</title><style>{CSS}</style></head><body><main>\
         <h1>Strata's benchmark results</h1><p class=\"lede\">Every committed run. Published \
         pages are whole suites on every engine (<code>make bench</code>); engineering runs \
         measure one change, before and after. Compare figures only within one run: this \
         machine's speed drifts.</p><section><h2>Published pages</h2><ul>"
    );
    for e in &entries {
        if let Entry::Published {
            folder,
            suite,
            detail,
        } = e
        {
            let _ = write!(
                h,
                "<li><a href=\"{f}/index.html\">{f}</a>: the {s} suite. {detail}</li>",
                f = esc(folder),
                s = esc(suite)
            );
        }
    }
    h.push_str("</ul></section><section><h2>Engineering runs</h2><ul>");
    for e in &entries {
        if let Entry::Engineering { folder, title } = e {
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
        let html = std::fs::read_to_string(run(dir.path()).unwrap()).unwrap();
        let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("{s} missing"));
        assert!(at("Published pages") < at("2026-11-26-baseline/index.html"));
        assert!(at("2026-11-26-baseline/index.html") < at("Engineering runs"));
        assert!(html.contains("commit abc1234"));
        assert!(html.contains("the baseline suite"));
        assert!(at("Newer run") < at("Older run"), "newest first");
        assert!(!html.contains("empty"));
    }
}
