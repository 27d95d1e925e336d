//! Every current page reads right, as a browser draws it: each page listed in
//! `docs/results/current.txt` is drawn anew from its JSON files by `strata-bench report`,
//! rendered by headless Chromium at 1,400 px with `page_check.js` appended, and the test
//! fails on what the script measures: a real engine's bar or point under 2 px while its
//! figure is within 1,000x of the chart's largest, a text over (or touching) another, text
//! under 10 px, a table wider than the page, two charts of one title, a legend over a
//! measured point, a ratio printed as 0.00. A page built by hand with each of these wrongs
//! shows the check finds every one.

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

mod browser;

const BIN: &str = env!("CARGO_BIN_EXE_strata-bench");
const CHECK: &str = include_str!("page_check.js");

fn results_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results")
}

/// The page at `html` as Chromium draws it at 1,400 px: the check's first line (`charts
/// N`) and its problems, one a line.
fn check(html: &Path) -> (usize, Vec<String>) {
    let page = std::fs::read_to_string(html).unwrap();
    let body_end = page.rfind("</body>").expect("a page with a body");
    let checked = html.with_file_name("checked.html");
    std::fs::write(
        &checked,
        format!(
            "{}<script>{CHECK}</script>{}",
            &page[..body_end],
            &page[body_end..]
        ),
    )
    .unwrap();
    let out = browser::headless()
        .args(["--window-size=1400,1000", "--dump-dom"])
        .arg(format!("file://{}", checked.display()))
        .output()
        .expect("start Chromium");
    assert!(
        out.status.success(),
        "Chromium failed on {}: {}",
        checked.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .rfind("<pre id=\"page-check\">")
        .unwrap_or_else(|| panic!("the check wrote nothing on {}", html.display()));
    let text = &dom[start..];
    let text = &text[text.find('>').unwrap() + 1..text.find("</pre>").unwrap()];
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let mut lines = text.lines();
    let charts = lines
        .next()
        .and_then(|l| l.strip_prefix("charts "))
        .and_then(|n| n.parse().ok())
        .expect("the check's first line counts the charts");
    (charts, lines.map(str::to_string).collect())
}

/// The current pages: (suite, folder) from `docs/results/current.txt`.
fn current_pages() -> Vec<(String, String)> {
    let list = std::fs::read_to_string(results_dir().join("current.txt")).unwrap();
    list.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut fields = l.split('\t');
            let suite = fields.next().unwrap();
            let folder = fields.next().expect("suite<TAB>folder");
            (suite.to_string(), folder.trim().to_string())
        })
        .collect()
}

fn jsons(folder: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_current_page_reads_right() {
    let tmp = tempfile::tempdir().unwrap();
    let pages = current_pages();
    assert!(pages.len() >= 5, "{pages:?}");
    let mut failures = Vec::new();
    for (suite, folder) in &pages {
        let src = results_dir().join(folder);
        if jsons(&src).is_empty() {
            // A run its README describes (no page drawn by the tool).
            assert!(
                src.join("README.md").is_file(),
                "{folder}: no page, no README"
            );
            continue;
        }
        let out = tmp.path().join(folder);
        let status = Command::new(BIN)
            .arg("report")
            .args(jsons(&src))
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "report {folder}: {}",
            String::from_utf8_lossy(&status.stderr)
        );
        let drawn = out.join("index.html");
        let (charts, problems) = check(&drawn);
        assert!(charts > 0, "{folder}: no charts");
        failures.extend(problems.iter().map(|p| format!("{suite} ({folder}): {p}")));
        // The committed page is the one the generator draws today.
        let committed = std::fs::read_to_string(src.join("index.html")).unwrap_or_default();
        if committed != std::fs::read_to_string(&drawn).unwrap() {
            failures.push(format!(
                "{suite} ({folder}): the committed page is not what `strata-bench report` \
                 draws from its JSON now; run `make pages`"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A page with every wrong the check looks for, each once; and the same charts drawn
/// right, which pass.
#[test]
fn the_check_finds_each_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let bar_chart = |title: &str, small_width: f64| {
        format!(
            r##"<svg data-title="{title}" data-bars="big=1000;small=10;" width="860" height="120" viewBox="0 0 860 120">
<text x="100" y="30" font-size="13" text-anchor="end">big</text>
<rect x="200" y="20" width="600" height="16" fill="#4A6F8A"/>
<text x="100" y="70" font-size="13" text-anchor="end">small</text>
<rect x="200" y="60" width="{small_width}" height="16" fill="#4A6F8A"/>
</svg>"##
        )
    };
    let line_chart = |floor_gap: f64, legend_x: f64| {
        let y = 300.0 - floor_gap;
        format!(
            r##"<svg data-title="a line" data-lines="strata|#C0392B|1000,10;" data-plot="50,10,650,300" width="860" height="320" viewBox="0 0 860 320">
<polyline fill="none" stroke="#C0392B" stroke-width="2" points="100,20 600,{y}"/>
<circle cx="100" cy="20" r="3" fill="#C0392B"/>
<rect x="{legend_x}" y="10" width="80" height="30" fill="#FFFFFF" stroke="#888888"/>
</svg>"##
        )
    };
    let good = format!(
        "<html><body>{}{}<table><tr><td>narrow</td></tr></table></body></html>",
        bar_chart("bars", 6.0),
        line_chart(6.0, 700.0)
    );
    let bad = format!(
        r##"<html><body>{}{}{}
<svg data-title="texts" width="860" height="100" viewBox="0 0 860 100">
<text x="10" y="30" font-size="6">tiny</text>
<text x="100" y="50" font-size="13">one label</text><text x="110" y="52" font-size="13">another</text>
<text x="300" y="80" font-size="13">3   x0.00</text>
</svg>
<table><tr><td style="min-width:3000px">wide</td></tr></table></body></html>"##,
        bar_chart("bars", 0.5),
        bar_chart("bars", 6.0),
        line_chart(0.5, 60.0),
    );
    let run = |name: &str, html: &str| {
        let path = tmp.path().join(name);
        std::fs::write(&path, html).unwrap();
        check(&path)
    };
    let (charts, problems) = run("good.html", &good);
    assert_eq!(charts, 2);
    assert!(problems.is_empty(), "{problems:?}");
    let (charts, problems) = run("bad.html", &bad);
    assert_eq!(charts, 4);
    for wrong in [
        "small's bar (10 against 1000) is 0.5 px",
        "strata's point 2 (10 against 1000) is 0.5 px above the floor",
        "the legend covers a measured point",
        "text \"tiny\" is 6.0 px",
        "\"one label\" and \"another\" overprint",
        "a ratio printed as \"3   x0.00\"",
        "bars: 2 charts share this title",
        "px wide on a",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(wrong)),
            "the check missed: {wrong}\n{problems:#?}"
        );
    }
}
