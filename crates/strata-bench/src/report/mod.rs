//! `strata-bench report RESULTS.json... --out DIR`: the benchmark page.
//!
//! Reads the JSON of one or more runs and writes `DIR/index.html`, a self-contained page
//! (inline SVG and CSS, nothing fetched) with one horizontal bar chart per workload in the
//! LevelDB page's order, each engine's ratio to Strata beside its bar, the 2011 page's
//! figures as a faded row, line charts of `--stats_interval` series, a summary table and
//! the settings and machine. Every chart is also written to `DIR/charts/*.svg`.
//!
//! Runs from several files are pooled: the medians are taken over every repeat of every
//! file, so files must come from the same suite and settings (the page lists its sources).

mod charts;
mod published;
pub mod site;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::engine::EngineCounters;
use crate::results::{BenchResult, Document, EngineRun, SummaryRow};
use crate::summary::{self, FSYNC_CEILING, HARNESS};
use charts::{Bar, Line, Reference, Scale, SweepAxes, thousands};

/// The command line of `strata-bench report`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "strata-bench report",
    about = "Draws the benchmark page from --json results"
)]
pub struct Args {
    /// JSON files written by `strata-bench --json`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The directory to write `index.html` and `charts/` into (created if missing).
    #[arg(long)]
    pub out: PathBuf,
}

/// Writes the page; returns the path of `index.html`.
pub fn run(args: &Args) -> Result<PathBuf> {
    let mut docs = Vec::new();
    for f in &args.files {
        let text = std::fs::read_to_string(f).with_context(|| format!("read {}", f.display()))?;
        let doc: Document = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a strata-bench --json file", f.display()))?;
        docs.push(doc);
    }
    let page = Page::new(&docs, &args.files)?;
    let charts_dir = args.out.join("charts");
    std::fs::create_dir_all(&charts_dir)
        .with_context(|| format!("create {}", charts_dir.display()))?;
    let html = page.render(&charts_dir)?;
    let index = args.out.join("index.html");
    std::fs::write(&index, html).with_context(|| format!("write {}", index.display()))?;
    Ok(index)
}

/// Everything the page shows, pooled from the input documents.
struct Page<'a> {
    docs: &'a [Document],
    sources: Vec<String>,
    runs: Vec<EngineRun>,
    engines: Vec<String>,
    rows: Vec<SummaryRow>,
}

/// Strata's own columns (`strata`, `strata-blob`): not peers.
fn is_strata(engine: &str) -> bool {
    engine.starts_with("strata")
}

/// The machine as the pages describe it, escaped: `cpu (2 cores, 24 GiB, ext4, Linux 6.1)`.
fn machine_text(m: &crate::accounting::Machine) -> String {
    format!(
        "{} ({} cores, {:.0} GiB, {}, Linux {})",
        esc(&m.cpu),
        m.cores,
        m.memory as f64 / (1u64 << 30) as f64,
        esc(&m.filesystem),
        esc(&m.kernel)
    )
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `YYYY-MM-DD HH:MM UTC` of a Unix time (days-to-civil conversion, proleptic Gregorian).
pub fn utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        (secs % 3600) / 60
    )
}

/// A chart file name: `03-1b-readrandom.svg`.
fn slug(n: usize, row: &str, name: &str) -> String {
    let clean: String = format!("{row}-{name}")
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("{n:02}-{}.svg", clean.trim_matches('-'))
}

impl<'a> Page<'a> {
    fn new(docs: &'a [Document], files: &[PathBuf]) -> Result<Self> {
        if docs.is_empty() {
            bail!("no results to draw");
        }
        let suites: Vec<_> = docs.iter().map(|d| d.suite.clone()).collect();
        if suites.iter().any(|s| *s != suites[0]) {
            bail!(
                "the files come from different suites ({suites:?}); draw them one suite at a time"
            );
        }
        // Pooled runs: repeats of every file count as rounds of one run. Groups are told
        // apart by their labels: files of one suite at different sizes (the scale page,
        // one file per size) hold different groups under the same position.
        let mut runs = Vec::new();
        let mut engines: Vec<String> = Vec::new();
        let mut labels: Vec<String> = Vec::new();
        for (i, d) in docs.iter().enumerate() {
            for r in &d.runs {
                let mut r = r.clone();
                r.round += i * 1000;
                r.group_index = match labels.iter().position(|l| *l == r.group) {
                    Some(gi) => gi,
                    None => {
                        labels.push(r.group.clone());
                        labels.len() - 1
                    }
                };
                if !engines.contains(&r.engine) {
                    engines.push(r.engine.clone());
                }
                runs.push(r);
            }
        }
        // Strata first, then the others as the run ordered them.
        engines.sort_by_key(|e| e != "strata");
        let rows = summary::summarize(&runs);
        Ok(Page {
            docs,
            sources: files.iter().map(|f| display_name(f)).collect(),
            runs,
            engines,
            rows,
        })
    }

    /// Engines other than Strata's own columns and the harness.
    fn peers(&self) -> usize {
        self.engines
            .iter()
            .filter(|e| !is_strata(e) && *e != HARNESS)
            .count()
    }

    /// Each group's label and how many rounds it had, in group order (files of one suite
    /// at several sizes can differ: one round at 1 M entries, three at 100 M).
    fn rounds_per_group(&self) -> Vec<(String, usize)> {
        let mut out: Vec<(usize, String, Vec<usize>)> = Vec::new();
        for r in &self.runs {
            match out.iter_mut().find(|(gi, ..)| *gi == r.group_index) {
                Some((_, _, rounds)) => rounds.push(r.round),
                None => out.push((r.group_index, r.group.clone(), vec![r.round])),
            }
        }
        out.sort_by_key(|(gi, ..)| *gi);
        out.into_iter()
            .map(|(_, label, mut rounds)| {
                rounds.sort_unstable();
                rounds.dedup();
                (label, rounds.len())
            })
            .collect()
    }

    /// The number of rounds, when every group had the same; `None` when they differ.
    fn uniform_rounds(&self) -> Option<usize> {
        let per_group = self.rounds_per_group();
        let n = per_group.first().map_or(0, |(_, n)| *n);
        per_group.iter().all(|(_, m)| *m == n).then_some(n)
    }

    /// Each group's rounds, escaped: `scale 1000000: 1, scale 100000000: 3`.
    fn rounds_list(&self) -> String {
        self.rounds_per_group()
            .iter()
            .map(|(label, n)| format!("{}: {n}", esc(label)))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How many rounds the figures come from, as the lede says it.
    fn rounds_text(&self) -> String {
        match self.uniform_rounds() {
            Some(0 | 1) => "in one round: every figure is that round's".to_string(),
            Some(n) => format!(
                "in {n} rounds taking turns: every figure is the median over the rounds, \
                 every ratio the median of the rounds' paired ratios"
            ),
            None => {
                let counts: Vec<usize> = self.rounds_per_group().iter().map(|(_, n)| *n).collect();
                format!(
                    "in {} to {} rounds a group ({}), taking turns: every figure is the median \
                     over its group's rounds, every ratio the median of the paired ratios (a \
                     group of one round: that round's)",
                    counts.iter().min().unwrap_or(&0),
                    counts.iter().max().unwrap_or(&0),
                    self.rounds_list()
                )
            }
        }
    }

    /// When the runs drawn started: one time, or the first and the last of several files.
    fn started_text(&self) -> String {
        let times: Vec<u64> = self.docs.iter().map(|d| d.started_unix).collect();
        let (first, last) = (
            times.iter().copied().min().unwrap_or(0),
            times.iter().copied().max().unwrap_or(0),
        );
        let (first, last) = (utc(first), utc(last));
        if first == last {
            first
        } else {
            format!("{first} to {last}")
        }
    }

    /// Each engine's result for a cell in the first round, where it has one.
    fn first_results(
        &self,
        group_index: usize,
        index: usize,
    ) -> impl Iterator<Item = (&String, &BenchResult)> + '_ {
        let round = self.first_round();
        self.engines.iter().filter_map(move |e| {
            let run = self
                .runs
                .iter()
                .find(|r| r.engine == *e && r.group_index == group_index && r.round == round)?;
            Some((e, result_at(run, index)?))
        })
    }

    /// What the engines said of a cell that a reader needs beside its chart: a read or
    /// write budget that stopped the run early, reads that did not all find a key (a
    /// database a write budget left smaller), a transaction workload's aborts and check.
    /// The first round's word, or else the first later round's that has one (named).
    fn messages(&self, group_index: usize, index: usize) -> Vec<(String, String)> {
        let first = self.first_round();
        self.engines
            .iter()
            .filter_map(|e| {
                let mut runs: Vec<&EngineRun> = self
                    .runs
                    .iter()
                    .filter(|r| r.engine == *e && r.group_index == group_index)
                    .collect();
                runs.sort_by_key(|r| r.round);
                runs.iter().find_map(|r| {
                    let res = result_at(r, index)?;
                    notable(&res.message).then(|| {
                        let msg = if r.round == first {
                            res.message.clone()
                        } else {
                            format!("round {}: {}", r.round + 1, res.message)
                        };
                        (e.clone(), msg)
                    })
                })
            })
            .collect()
    }

    /// The engines' own counters for a cell (stalls, flushes, compactions), first round,
    /// where an engine reported any and the benchmark wrote.
    fn counters(&self, group_index: usize, index: usize) -> Vec<(String, EngineCounters)> {
        self.first_results(group_index, index)
            .filter_map(|(e, res)| Some((e, res.counters?)))
            .filter(|(_, c)| {
                *c != EngineCounters::default()
                    && c.compaction_bytes_written.unwrap_or(0) + c.flushes.unwrap_or(0) > 0
            })
            .map(|(e, c)| (e.clone(), c))
            .collect()
    }

    fn first_round(&self) -> usize {
        self.runs.iter().map(|r| r.round).min().unwrap_or(0)
    }

    fn group_index_of(&self, row: &SummaryRow) -> usize {
        self.runs
            .iter()
            .find(|r| r.group == row.group)
            .map(|r| r.group_index)
            .unwrap_or(0)
    }

    /// A row's name, unique on the page: the benchmark (after its row code on LevelDB's
    /// page), "after compaction" for a read when a compaction ran before it in its group, and the
    /// group (value size, entries, threads) when another group has a row of that name.
    fn row_title(&self, row: &SummaryRow) -> String {
        let base = |r: &SummaryRow| {
            // LevelDB's page names its rows with codes such as `1B`; other suites name
            // them after the suite, which the page's title already says.
            let t = if is_row_code(&r.row) {
                format!("{} {}", r.row, r.benchmark)
            } else {
                r.benchmark.clone()
            };
            let compacted = self
                .rows
                .iter()
                .any(|c| c.group == r.group && c.index < r.index && c.benchmark == "compact");
            with_phase(t, &r.benchmark, compacted)
        };
        let mut title = base(row);
        // Two rows of one benchmark in a group (two contention levels) by their rows' names.
        if !row.row.is_empty()
            && !is_row_code(&row.row)
            && self.rows.iter().any(|r| {
                r.group == row.group && r.index != row.index && base(r) == title && r.row != row.row
            })
        {
            title = format!("{title}, {}", row.row);
        }
        let clash = self.rows.iter().any(|r| {
            r.group != row.group
                && (base(r) == title || title.starts_with(&format!("{}, ", base(r))))
        });
        if clash && !row.group.is_empty() {
            format!("{title}, {}", group_in_title(&row.group))
        } else {
            title
        }
    }

    /// A row's name within its group's own table (the group is the table's heading).
    fn row_title_in_group(&self, row: &SummaryRow) -> String {
        let title = self.row_title(row);
        let words = format!(", {}", group_in_title(&row.group));
        title
            .strip_suffix(&words)
            .map_or(title.clone(), str::to_string)
    }

    /// How a row is charted: compactions as the time they took, the rest as operations
    /// per second.
    fn scale_of(row: &SummaryRow) -> Scale {
        if row.benchmark == "compact" {
            Scale::Seconds
        } else {
            Scale::PerSecond
        }
    }

    /// The bars of a row: every engine but the harness's own cost (`null`, stated in the
    /// caption instead), then the 2011 page's figures.
    fn bars_of(&self, row: &SummaryRow) -> Vec<Bar> {
        let scale = Self::scale_of(row);
        let mut out = Vec::new();
        for e in self.engines.iter().filter(|e| *e != HARNESS) {
            if let Some(m) = row.median_micros.get(e) {
                let value = match (scale, self.threaded_rate(row, e)) {
                    (Scale::Seconds, _) => m / 1e6,
                    (Scale::PerSecond, Some(rate)) => rate,
                    (Scale::PerSecond, None) if *m > 0.0 => 1e6 / m,
                    (Scale::PerSecond, None) => 0.0,
                };
                out.push(Bar::Measured {
                    engine: e.clone(),
                    value,
                    ratio: row.paired.get(e).map(|p| p.median),
                });
            } else if let Some(why) = row.failed.get(e) {
                out.push(Bar::Failed {
                    engine: e.clone(),
                    reason: failure_words(why),
                });
            } else if let Some(why) = row.not_available.get(e) {
                out.push(Bar::NotAvailable {
                    engine: e.clone(),
                    reason: why.split(" has ").nth(1).unwrap_or(why).to_string(),
                });
            } else {
                out.push(Bar::NotAvailable {
                    engine: e.clone(),
                    reason: "not measured in this run".into(),
                });
            }
        }
        for (engine, ops) in published::figures(&row.row, &row.benchmark) {
            if self.engines.iter().any(|e| e == engine) {
                out.push(Bar::Published {
                    engine: (*engine).to_string(),
                    ops_per_sec: *ops,
                });
            }
        }
        out
    }

    /// For a row run by several threads: the engine's operations per second of all of
    /// them together (median over the rounds), which a thread's time per operation does
    /// not give; `None` for one thread.
    fn threaded_rate(&self, row: &SummaryRow, engine: &str) -> Option<f64> {
        let mut rates: Vec<f64> = self
            .runs
            .iter()
            .filter(|r| r.engine == engine && r.group == row.group)
            .filter_map(|r| result_at(r, row.index))
            .filter(|x| x.threads > 1)
            .map(|x| x.ops_per_sec)
            .collect();
        summary::median(&mut rates)
    }

    /// For a `fillsync` row: the disk's own ceiling measured beside it in the same group
    /// (`fsyncceiling`, median over the engines' runs), as synced appends per second.
    fn ceiling_for(&self, row: &SummaryRow) -> Option<Reference> {
        if row.benchmark != "fillsync" {
            return None;
        }
        let ceiling = self
            .rows
            .iter()
            .find(|r| r.group == row.group && r.benchmark == FSYNC_CEILING)?;
        let mut micros: Vec<f64> = ceiling.median_micros.values().copied().collect();
        let m = summary::median(&mut micros).filter(|m| *m > 0.0)?;
        Some(Reference {
            value: 1e6 / m,
            label: "disk ceiling (append + fdatasync)".into(),
        })
    }

    /// Real engines (not the harness) with a figure for `row`, fastest first.
    fn ranked<'r>(&self, row: &'r SummaryRow) -> Vec<(&'r str, f64)> {
        let mut v: Vec<(&str, f64)> = row
            .median_micros
            .iter()
            .filter(|(e, m)| *e != HARNESS && **m > 0.0)
            .map(|(e, m)| (e.as_str(), *m))
            .collect();
        v.sort_by(|a, b| a.1.total_cmp(&b.1));
        v
    }

    /// The verdict at the top: per workload, the fastest engine and Strata's standing
    /// against the best peer (the fastest engine that is not Strata's own column).
    fn render_verdict(&self, h: &mut String) {
        let rows: Vec<&SummaryRow> = self
            .rows
            .iter()
            .filter(|r| r.benchmark != FSYNC_CEILING && r.median_micros.contains_key("strata"))
            .collect();
        let mut ahead = Vec::new();
        let mut behind = Vec::new();
        let mut table = String::new();
        for r in &rows {
            let ranked = self.ranked(r);
            let Some(&(fastest, _)) = ranked.first() else {
                continue;
            };
            let best_peer = ranked.iter().find(|(e, _)| !is_strata(e));
            let label = self.row_title(r);
            let standing = match best_peer.map(|(peer, _)| (peer, r.paired.get(*peer))) {
                Some((peer, Some(p))) => {
                    let ahead_of_it = p.median >= 1.0;
                    if ahead_of_it { &mut ahead } else { &mut behind }.push(label.clone());
                    format!(
                        "<td>{}</td><td class=\"{}\">{}</td>",
                        esc(peer),
                        if ahead_of_it { "ahead" } else { "behind" },
                        charts::ratio_text(p.median)
                    )
                }
                Some((peer, None)) => format!("<td>{}</td><td class=\"na\">-</td>", esc(peer)),
                None => "<td class=\"na\">-</td><td class=\"na\">-</td>".to_string(),
            };
            let _ = write!(
                table,
                "<tr><td>{}</td><td>{}</td>{standing}</tr>",
                esc(&label),
                esc(fastest)
            );
        }
        let _ = write!(
            h,
            "<section id=\"verdict\"><h2>Verdict</h2><p>Strata is ahead of the best peer on \
             {} of {} workloads{}.</p><div class=\"scroll\"><table><thead><tr><th>workload</th>\
             <th>fastest</th><th>best peer</th><th>best peer's time / Strata's</th></tr></thead>\
             <tbody>{table}</tbody></table></div></section>",
            ahead.len(),
            ahead.len() + behind.len(),
            match behind.len() {
                0 => String::new(),
                1..=4 => format!("; behind on {}", esc(&behind.join("; "))),
                n => format!("; behind on {n}, named in the table"),
            }
        );
    }

    fn render(&self, charts_dir: &Path) -> Result<String> {
        let doc = &self.docs[0];
        let mut h = String::new();
        self.render_head(&mut h);
        h.push_str("<nav><a href=\"#verdict\">verdict</a> · <a href=\"#summary\">summary table</a> · <a href=\"#settings\">settings and machine</a></nav>");
        // What did not run comes first: the verdict below is over what did.
        self.render_failures(&mut h);
        self.render_verdict(&mut h);
        self.render_bars(&mut h, charts_dir)?;
        self.render_sweeps(&mut h, charts_dir)?;
        self.render_series(&mut h, charts_dir)?;
        self.render_latency(&mut h);
        self.render_summary(&mut h);
        self.render_settings(&mut h);
        let _ = writeln!(
            h,
            "<footer>Drawn by <code>strata-bench report</code> {} from {}.</footer></main></body></html>",
            esc(&doc.version),
            esc(&self.sources.join(", "))
        );
        Ok(h)
    }

    /// The page's head, title, lede (engines, rounds, date, machine) and how to read it.
    fn render_head(&self, h: &mut String) {
        let doc = &self.docs[0];
        let title = match doc.suite.as_deref() {
            Some("baseline") => "LevelDB's benchmark page, redrawn on this machine".to_string(),
            Some("readwhilewriting") => {
                "WiredTiger's read-while-writing page, redrawn on this machine".to_string()
            }
            Some("value-sizes") => "KingDB's value-size page, redrawn on this machine".to_string(),
            Some("scale") => "LevelDB at scale, redrawn on this machine".to_string(),
            Some("group-commit") => "Group commit: synced writes from many threads".to_string(),
            Some("transactions") => "Transactions: serializable, from many threads".to_string(),
            Some(s) => format!("strata-bench: the {s} suite"),
            None => "strata-bench results".to_string(),
        };
        let _ = write!(
            h,
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{t}</title><style>{css}</style></head><body><main>\
             <h1>{t}</h1>",
            t = esc(&title),
            css = CSS
        );
        let _ = write!(h, "<p class=\"ran\">{}</p>", self.ran_text());
        let _ = write!(
            h,
            "<p class=\"lede\">Strata and {peers} peer{ps} through the same \
             <code>strata-bench</code> workloads, one engine after another, {rounds}. Run {date} \
             on {machine}.{state}</p>",
            peers = self.peers(),
            ps = if self.peers() == 1 { "" } else { "s" },
            rounds = self.rounds_text(),
            date = esc(&self.started_text()),
            machine = machine_text(&doc.machine),
            state = crate::probe::summary(&doc.probes)
                .into_iter()
                .chain(
                    self.uniform_rounds()
                        .and_then(|n| crate::probe::states_line(&doc.probes, n))
                )
                .map(|s| format!(" {}.", esc(&s)))
                .collect::<String>(),
        );
        let _ = write!(h, "<p class=\"how\">{}</p>", self.how_to_read());
        if let Some(how) = self.value_access_text() {
            let _ = write!(h, "<p class=\"how\">{how}</p>");
        }
        let _ = write!(
            h,
            "<p class=\"how\">OS page cache: {}.</p>",
            esc(&doc.page_cache)
        );
    }

    /// The page's first line: what ran (each file's command line and commit), and how
    /// many figures a time budget stopped early.
    fn ran_text(&self) -> String {
        let commands = self
            .docs
            .iter()
            .map(|d| {
                format!(
                    "<code>{}</code> at <code>{}</code>",
                    esc(&d.args.join(" ")),
                    esc(d.commit.as_deref().unwrap_or("unknown commit"))
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        // The cells (group, benchmark, engine) a budget cut in any round, as
        // `messages` captions them.
        let cells = |what: &str| {
            self.runs
                .iter()
                .flat_map(|r| {
                    r.results
                        .iter()
                        .enumerate()
                        .filter(|(_, x)| x.message.contains(what))
                        .map(move |(i, x)| {
                            (r.group_index, x.position.unwrap_or(i), r.engine.clone())
                        })
                })
                .collect::<std::collections::BTreeSet<_>>()
        };
        let (writes, reads) = (cells("write budget"), cells("read budget"));
        let cut = writes.union(&reads).count();
        let mut budget = String::new();
        if cut > 0 {
            budget = format!(
                " A time budget stopped {cut} figure{s} before all {w} operations ran; each \
                 says how many ran, under its chart.",
                s = if cut == 1 { "" } else { "s" },
                w = if cut == 1 { "its" } else { "their" },
            );
        }
        if !writes.is_empty() {
            budget.push_str(
                " A write figure cut short is measured over the first, cheaper part of a \
                 growing database's load, and the reads after it find fewer keys (their \
                 captions say how many were found): both can flatter the engine stopped.",
            );
        }
        format!("What ran: {commands}.{budget}")
    }

    /// What the suite measures, in a sentence of its own.
    fn suite_words(&self) -> &'static str {
        match self.docs[0].suite.as_deref() {
            Some("baseline") => {
                "The workloads of LevelDB's benchmark page (2011), row by row: writes \
                 (1C-1D, 2A-2E), reads before and after a full compaction (1A-1B), and reads \
                 with a large cache or without compression (3A-3B)."
            }
            Some("readwhilewriting") => {
                "WiredTiger's page: 1 to 32 threads read at random while one thread writes, \
                 its rate held at 30,000 writes a second or not held at all, on a database \
                 loaded first."
            }
            Some("value-sizes") => {
                "KingDB's page: the same workloads with values from 100 bytes to 1 MB, each \
                 size a group of its own with about the same bytes of data."
            }
            Some("scale") => {
                "LevelDB's workloads as the database grows, each number of entries a group \
                 of its own."
            }
            Some("group-commit") => {
                "Synced writes (fillsync) from 1 to 16 threads at once: how well each engine \
                 shares one fdatasync among many writers."
            }
            Some("transactions") => {
                "Transactions that read keys and write them back, committed whole or not at \
                 all, from 1, 4 and 16 threads: RocksDB db_bench's randomtransaction, with \
                 100,000 keys a set (transactions seldom meet) and 1,000 (they often do), \
                 and YCSB-F's read-modify-write mix. A bar counts committed transactions (and \
                 the mix's plain reads); an aborted transaction is run again until it \
                 commits, and the caption under each chart says how many were."
            }
            _ => "",
        }
    }

    /// How to read the page: what the bars, their labels and the lines are, and what
    /// only some pages have (compactions, the disk's ceiling, the 2011 figures).
    fn how_to_read(&self) -> String {
        let mut t = String::from(self.suite_words());
        let rounds = self.uniform_rounds().unwrap_or(2);
        t.push_str(if rounds <= 1 {
            " Each bar is an engine's figure, operations per second (entries per second for \
             batches): longer is better."
        } else {
            " Each bar is an engine's median over the rounds, operations per second (entries \
             per second for batches): longer is better."
        });
        if self.rows.iter().any(|r| r.benchmark == "compact") {
            t.push_str(" A compaction's bar is the time it took: shorter is better.");
        }
        t.push_str(
            " <span class=\"strata\">Strata</span> is red. Beside each peer's bar, <b>x</b> is \
             that engine's time per operation divided by Strata's: \
             <span class=\"ahead\">above 1, Strata is faster</span>; \
             <span class=\"behind\">below 1, the peer is</span>.",
        );
        if rounds > 1 {
            t.push_str(
                " It is the median of the ratios paired round by round, so it can differ a \
                 little from the ratio of the two bars.",
            );
        }
        t.push_str(
            " A chart whose figures span more than 150x has a logarithmic axis, and its axis \
             title says so.",
        );
        if self.engines.iter().any(|e| e == HARNESS) {
            t.push_str(
                " The harness's own cost per operation (the <code>null</code> engine) is stated \
                 under each chart, never drawn.",
            );
        }
        if self.rows.iter().any(|r| r.benchmark == FSYNC_CEILING) {
            t.push_str(
                " The fillsync charts' dashed line is what the disk gives to an append and \
                 <code>fdatasync</code> of 100 bytes, no engine involved.",
            );
        }
        if self
            .rows
            .iter()
            .any(|r| !published::figures(&r.row, &r.benchmark).is_empty())
        {
            t.push_str(
                " Grey bars are the figures LevelDB's page published in 2011 on that era's \
                 hardware: they show the page's shape, not targets.",
            );
        }
        if self.runs.iter().any(|r| r.sweep.is_some()) {
            t.push_str(
                " The line charts draw each benchmark against the setting the suite varies, \
                 one line per engine, a point per setting measured.",
            );
        }
        if self
            .runs
            .iter()
            .any(|r| r.results.iter().any(|x| !x.series.is_empty()))
        {
            t.push_str(
                " The time charts show each second's reads and writes, one line per engine \
                 (first round).",
            );
        }
        t
    }

    /// How the values were read, when the harness read every one (`--touch_values`).
    fn value_access_text(&self) -> Option<String> {
        let runs = self.docs.iter().flat_map(|d| &d.runs);
        if !runs.clone().any(|r| r.values_touched) {
            return None;
        }
        let mut text = String::from(
            "Every value an engine hands over, on a read or in a scan, is read in place by the \
             harness, the same way for every engine: one 8-byte load from each 64 bytes \
             (every cache line), whether the engine gives a view into its mapped file or \
             cache (LMDB, Strata, RocksDB's pinned reads, WiredTiger, fjall, SQLite) or a copy \
             of its own (the LevelDB and Kyoto Cabinet C APIs). No value is copied by the \
             harness.",
        );
        if runs
            .clone()
            .any(|r| !r.values_touched && r.engine.ends_with("-dbbench"))
        {
            text.push_str(
                " LevelDB's own <code>db_bench</code> programs (the <code>-dbbench</code> \
                 columns) keep their rule: a read copies the value into a \
                 <code>std::string</code>, and a scan counts lengths without reading the value, \
                 which lies in a block already decompressed.",
            );
        }
        Some(text)
    }

    /// The bar charts, group by group, each with its captions (the harness's cost, the
    /// engines' messages and counters), also written as SVG files into `charts_dir`.
    fn render_bars(&self, h: &mut String, charts_dir: &Path) -> Result<()> {
        let mut group = None;
        for (n, row) in self.rows.iter().enumerate() {
            // The disk's ceiling is drawn on the fillsync chart, not as a workload.
            if row.benchmark == FSYNC_CEILING {
                continue;
            }
            if group != Some(&row.group) {
                if group.is_some() {
                    h.push_str("</section>");
                }
                let _ = write!(
                    h,
                    "<section><h2>{}</h2>",
                    esc(&if row.group.is_empty() {
                        "Benchmarks".to_string()
                    } else {
                        group_words(&row.group)
                    })
                );
                group = Some(&row.group);
            }
            let label = self.row_title(row);
            let scale = Self::scale_of(row);
            let unit = match scale {
                Scale::Seconds => "seconds (shorter is better)",
                Scale::PerSecond if row.benchmark.contains("batch") => "entries per second",
                Scale::PerSecond => "operations per second",
            };
            let reference = self.ceiling_for(row);
            let svg = charts::bars(&label, unit, scale, &self.bars_of(row), reference.as_ref())?;
            let file = slug(n, &row.row, &row.benchmark);
            std::fs::write(charts_dir.join(&file), &svg)
                .with_context(|| format!("write {}", charts_dir.join(&file).display()))?;
            let _ = write!(
                h,
                "<figure id=\"{id}\" data-workload=\"{label}\">{svg}<figcaption>",
                id = esc(file.trim_end_matches(".svg")),
                label = esc(&label)
            );
            if let Some(m) = row.median_micros.get(HARNESS) {
                let _ = write!(
                    h,
                    "<span class=\"harness\">harness's own cost (the <code>null</code> engine): {} µs per operation</span> ",
                    esc(&micros(*m))
                );
            }
            let gi = self.group_index_of(row);
            for (e, msg) in self.messages(gi, row.index) {
                let _ = write!(h, "<span>{}: {}</span> ", esc(&e), esc(&msg));
            }
            for (e, c) in self.counters(gi, row.index) {
                let _ = write!(
                    h,
                    "<span class=\"counters\">{}: {}</span> ",
                    esc(&e),
                    esc(&counters_text(&c))
                );
            }
            let _ = write!(
                h,
                "<a href=\"charts/{f}\">SVG</a></figcaption></figure>",
                f = esc(&file)
            );
        }
        if group.is_some() {
            h.push_str("</section>");
        }
        Ok(())
    }

    /// Line charts of every result with a `--stats_interval` series (first round).
    fn render_series(&self, h: &mut String, charts_dir: &Path) -> Result<()> {
        // (group, position) to the chart title and the reads and writes lines.
        type Cell = (String, Vec<Line>, Vec<Line>);
        let mut cells: BTreeMap<(usize, usize), Cell> = BTreeMap::new();
        let first = self.first_round();
        for (slot, e) in self.engines.iter().enumerate() {
            for run in self
                .runs
                .iter()
                .filter(|r| r.engine == *e && r.round == first)
            {
                for (i, res) in run.results.iter().enumerate() {
                    if res.series.is_empty() {
                        continue;
                    }
                    let key = (run.group_index, res.position.unwrap_or(i));
                    let title = if res.row.is_empty() {
                        format!("{} {}", run.group, res.name)
                    } else {
                        res.row.clone()
                    };
                    let cell = cells
                        .entry(key)
                        .or_insert_with(|| (title, Vec::new(), Vec::new()));
                    cell.1.push(Line {
                        engine: e.clone(),
                        slot,
                        points: res.series.iter().map(|p| (p.at, p.reads_per_sec)).collect(),
                    });
                    cell.2.push(Line {
                        engine: e.clone(),
                        slot,
                        points: res
                            .series
                            .iter()
                            .map(|p| (p.at, p.writes_per_sec))
                            .collect(),
                    });
                }
            }
        }
        if cells.is_empty() {
            return Ok(());
        }
        h.push_str("<section><h2>Throughput over time</h2>");
        for (n, (_, (title, reads, writes))) in cells.iter().enumerate() {
            for (what, lines) in [("reads", reads), ("writes", writes)] {
                if lines.iter().all(|l| l.points.iter().all(|p| p.1 == 0.0)) {
                    continue;
                }
                let svg = charts::lines(
                    &format!("{title}: {what} per second"),
                    &format!("{what} per second"),
                    lines,
                )?;
                let file = format!("series-{n:02}-{what}.svg");
                std::fs::write(charts_dir.join(&file), &svg)
                    .with_context(|| format!("write {}", charts_dir.join(&file).display()))?;
                let _ = write!(
                    h,
                    "<figure data-workload=\"{t}\">{svg}<figcaption><a href=\"charts/{f}\">SVG</a></figcaption></figure>",
                    t = esc(title),
                    f = esc(&file)
                );
            }
        }
        h.push_str("</section>");
        Ok(())
    }

    /// In a suite that sweeps a setting (value size, threads, entries): one chart per
    /// benchmark of each engine's figure against it, the median over the rounds. Against
    /// entries the chart shows µs per operation (what grows with the database); elsewhere
    /// operations per second (all threads together). A `fillsync` chart carries the disk's
    /// ceiling measured in the same run.
    fn render_sweeps(&self, h: &mut String, charts_dir: &Path) -> Result<()> {
        let Some(axis) = self
            .runs
            .iter()
            .find_map(|r| r.sweep.as_ref().map(|s| &s.axis))
        else {
            return Ok(());
        };
        let per_op = axis == "entries";
        // The swept setting's name, and how its values read.
        let (axis_name, x_tick): (&str, fn(f64) -> String) = match axis.strip_suffix(" (bytes)") {
            Some(name) => (name, charts::bytes_tick),
            None => (axis, charts::short),
        };
        // Position in the group to its title and engine to swept value to the rounds'
        // figures. A position is "after compaction" when a compaction ran before it in any
        // engine's run (an engine without one still read at that point).
        type Points = BTreeMap<String, BTreeMap<u64, Vec<f64>>>;
        let mut cells: BTreeMap<usize, (String, Points)> = BTreeMap::new();
        let mut ceiling = Vec::new();
        for run in &self.runs {
            for res in &run.results {
                if res.name == FSYNC_CEILING {
                    ceiling.push(res.ops_per_sec);
                }
            }
            let Some(sweep) = &run.sweep else { continue };
            if run.engine == HARNESS {
                continue;
            }
            for (i, res) in run.results.iter().enumerate() {
                if res.name == FSYNC_CEILING || res.ops == 0 {
                    continue;
                }
                let compacted = run.results[..i].iter().any(|r| r.name == "compact");
                let y = if res.name == "compact" {
                    res.micros_per_op / 1e6
                } else if per_op {
                    res.micros_per_op
                } else {
                    res.ops_per_sec
                };
                let cell = cells
                    .entry(res.position.unwrap_or(i))
                    .or_insert_with(|| (res.name.clone(), Points::new()));
                if compacted {
                    cell.0 = with_phase(res.name.clone(), &res.name, true);
                }
                cell.1
                    .entry(run.engine.clone())
                    .or_default()
                    .entry(sweep.value as u64)
                    .or_default()
                    .push(y);
            }
        }
        // A sweep of one setting (a page of one size) says nothing a bar chart does not.
        let settings: std::collections::BTreeSet<u64> = cells
            .values()
            .flat_map(|(_, e)| e.values().flat_map(|p| p.keys().copied()))
            .collect();
        if settings.len() < 2 {
            return Ok(());
        }
        let reference = summary::median(&mut ceiling).map(|v| Reference {
            value: v,
            label: "disk ceiling (1 thread)".into(),
        });
        let (lo, hi) = (
            settings.first().copied().unwrap_or(1).max(1),
            settings.last().copied().unwrap_or(1),
        );
        let _ = write!(
            h,
            "<section id=\"sweep\"><h2>Against {}</h2>",
            esc(axis_name)
        );
        for (n, (title, engines)) in cells.values().enumerate() {
            let compact = title == "compact";
            let axes = SweepAxes {
                x_desc: axis_name,
                y_desc: if compact {
                    "seconds (shorter is better)"
                } else if per_op {
                    "µs per operation (lower is better)"
                } else {
                    "operations per second"
                },
                log_x: hi / lo >= 20,
                time: false,
                x_tick,
                y_tick: if compact {
                    charts::duration
                } else {
                    charts::short
                },
            };
            let lines: Vec<Line> = self
                .engines
                .iter()
                .enumerate()
                .filter_map(|(slot, e)| {
                    let points = engines.get(e)?;
                    Some(Line {
                        engine: e.clone(),
                        slot,
                        points: points
                            .iter()
                            .filter_map(|(x, ys)| {
                                Some((*x as f64, summary::median(&mut ys.clone())?))
                            })
                            .collect(),
                    })
                })
                .collect();
            let reference = reference
                .as_ref()
                .filter(|_| title == "fillsync" && !per_op);
            let svg = charts::sweep(
                &format!("{title} against {axis_name}"),
                &axes,
                &lines,
                reference,
            )?;
            let file = format!("sweep-{}", slug(n, "", title));
            std::fs::write(charts_dir.join(&file), &svg)
                .with_context(|| format!("write {}", charts_dir.join(&file).display()))?;
            let _ = write!(
                h,
                "<figure data-workload=\"{t}\" data-sweep=\"{a}\">{svg}<figcaption><a href=\"charts/{f}\">SVG</a></figcaption></figure>",
                t = esc(title),
                a = esc(axis),
                f = esc(&file)
            );
        }
        h.push_str("</section>");
        Ok(())
    }

    /// Latency percentiles (first round) of every result that kept a histogram.
    fn render_latency(&self, h: &mut String) {
        let first = self.first_round();
        let mut rows: Vec<(usize, usize, String)> = Vec::new();
        for run in self.runs.iter().filter(|r| r.round == first) {
            for (i, res) in run.results.iter().enumerate() {
                let (gi, pos) = (run.group_index, res.position.unwrap_or(i));
                if res.latency_us.is_some() && !rows.iter().any(|r| (r.0, r.1) == (gi, pos)) {
                    rows.push((gi, pos, format!("{} {}", run.group, res.name)));
                }
            }
        }
        if rows.is_empty() {
            return;
        }
        rows.sort();
        h.push_str(
            "<section id=\"latency\"><h2>Latency</h2><p class=\"how\">Per operation, first \
             round: p50 / p99 in µs (for a read-while-writing phase, the readers' reads).</p>\
             <div class=\"scroll\"><table><thead><tr><th>benchmark</th>",
        );
        let engines: Vec<&String> = self.engines.iter().filter(|e| *e != HARNESS).collect();
        for e in &engines {
            let _ = write!(h, "<th>{}</th>", esc(e));
        }
        h.push_str("</tr></thead><tbody>");
        for (gi, pos, label) in &rows {
            let _ = write!(h, "<tr><td>{}</td>", esc(label));
            let found: BTreeMap<&String, &BenchResult> = self.first_results(*gi, *pos).collect();
            for e in &engines {
                match found.get(e).and_then(|x| x.latency_us.as_ref()) {
                    Some(p) => {
                        let _ = write!(h, "<td>{} / {}</td>", micros(p.p50), micros(p.p99));
                    }
                    None => h.push_str("<td class=\"na\">n/a</td>"),
                }
            }
            h.push_str("</tr>");
        }
        h.push_str("</tbody></table></div></section>");
    }

    /// Every group run that did not finish: engine, group, round, where, what happened
    /// and the last lines its process printed. Nothing when every group finished.
    fn render_failures(&self, h: &mut String) {
        let failed: Vec<&EngineRun> = self
            .docs
            .iter()
            .flat_map(|d| &d.runs)
            .filter(|r| r.failure.is_some())
            .collect();
        if failed.is_empty() {
            return;
        }
        let _ = write!(
            h,
            "<section id=\"failures\"><h2>Failures</h2><p class=\"how\">{} group run(s) did \
             not finish. Their finished benchmarks are on the page; the benchmark each \
             failed at and the later ones of its group are drawn as FAILED (a row keeps the \
             median of the rounds that ran it).</p><div class=\"scroll\"><table><thead><tr>\
             <th>engine</th><th>group</th><th>round</th><th>at</th><th>what happened</th>\
             </tr></thead><tbody>",
            failed.len()
        );
        for r in &failed {
            let Some(f) = &r.failure else { continue };
            let tail = if f.tail.is_empty() {
                String::new()
            } else {
                format!(
                    "<details><summary>its last {} lines</summary><pre>{}</pre></details>",
                    f.tail.len(),
                    esc(&f.tail.join("\n"))
                )
            };
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"failed\">{}{tail}</td></tr>",
                esc(&r.engine),
                esc(&r.group),
                r.round + 1,
                esc(f.benchmark.as_deref().unwrap_or("-")),
                esc(&f.what)
            );
        }
        h.push_str("</tbody></table></div></section>");
    }

    fn render_summary(&self, h: &mut String) {
        h.push_str(
            "<section id=\"summary\"><h2>Summary</h2><p class=\"how\">Median µs per operation; \
             under it, the time relative to Strata's (above 1: slower than Strata): over \
             several rounds, the median of the paired ratios (each round's time over Strata's \
             in the same round) and their range.</p>",
        );
        // Engines down, benchmarks across, a few benchmarks a table: the page stays as
        // wide as its charts however many engines ran.
        const COLUMNS: usize = 6;
        let groups: Vec<&String> = {
            let mut g: Vec<&String> = Vec::new();
            for r in &self.rows {
                if !g.contains(&&r.group) {
                    g.push(&r.group);
                }
            }
            g
        };
        for group in &groups {
            let rows: Vec<&SummaryRow> = self.rows.iter().filter(|r| r.group == **group).collect();
            if groups.len() > 1 && !group.is_empty() {
                let _ = write!(h, "<h3>{}</h3>", esc(&group_words(group)));
            }
            for chunk in rows.chunks(COLUMNS) {
                h.push_str("<table class=\"summary\"><thead><tr><th>engine</th>");
                for r in chunk {
                    let _ = write!(h, "<th>{}</th>", esc(&self.row_title_in_group(r)));
                }
                h.push_str("</tr></thead><tbody>");
                for e in &self.engines {
                    let _ = write!(h, "<tr><td>{}</td>", esc(e));
                    for r in chunk {
                        summary_cell(h, r, e);
                    }
                    h.push_str("</tr>");
                }
                h.push_str("</tbody></table>");
            }
        }
        h.push_str("</section>");
    }

    fn render_settings(&self, h: &mut String) {
        let doc = &self.docs[0];
        h.push_str("<section id=\"settings\"><h2>Settings and machine</h2>");
        h.push_str("<h3>Engines</h3><table class=\"wrap\"><thead><tr><th>engine</th><th>version and build</th></tr></thead><tbody>");
        for e in &self.engines {
            let version = self
                .runs
                .iter()
                .find(|r| r.engine == *e)
                .map(|r| r.engine_version.clone())
                .unwrap_or_default();
            let _ = write!(h, "<tr><td>{}</td><td>{}</td></tr>", esc(e), esc(&version));
        }
        h.push_str("</tbody></table>");
        h.push_str(
            "<h3>Groups</h3><p class=\"how\">Every engine gets the same settings in a group; \
             how each engine maps them is in docs/bench.md.</p><div class=\"scroll\"><table><thead><tr>\
             <th>group</th><th>cache</th><th>write buffer</th><th>table file</th><th>block</th>\
             <th>Bloom bits</th><th>compression</th></tr></thead><tbody>",
        );
        let mut seen = Vec::new();
        for r in &self.runs {
            if seen.contains(&r.group_index) {
                continue;
            }
            seen.push(r.group_index);
            let s = &r.settings;
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&r.group),
                bytes(s.cache_size),
                bytes(s.write_buffer_size),
                bytes(s.max_file_size),
                bytes(s.block_size),
                s.bloom_bits
                    .map(|b| b.to_string())
                    .unwrap_or_else(|| "none".into()),
                if s.compression {
                    "Snappy (or the engine's)"
                } else {
                    "off"
                },
            );
        }
        h.push_str("</tbody></table></div>");
        let m = &doc.machine;
        let _ = write!(
            h,
            "<h3>Machine and command</h3><table class=\"wrap\"><tbody>\
             <tr><td>CPU</td><td>{}</td></tr><tr><td>cores</td><td>{}</td></tr>\
             <tr><td>memory</td><td>{} bytes</td></tr><tr><td>filesystem</td><td>{}</td></tr>\
             <tr><td>kernel</td><td>{}</td></tr><tr><td>started</td><td>{}</td></tr>\
             <tr><td>command</td><td><code>{}</code></td></tr><tr><td>rounds</td><td>{}</td></tr>\
             <tr><td>commit</td><td><code>{}</code></td></tr>\
             </tbody></table></section>",
            esc(&m.cpu),
            m.cores,
            thousands(m.memory as f64),
            esc(&m.filesystem),
            esc(&m.kernel),
            esc(&self.started_text()),
            self.docs
                .iter()
                .map(|d| esc(&d.args.join(" ")))
                .collect::<Vec<_>>()
                .join("</code><br><code>"),
            self.uniform_rounds()
                .map_or_else(|| self.rounds_list(), |n| n.to_string()),
            self.docs
                .iter()
                .map(|d| esc(d.commit.as_deref().unwrap_or("unknown")))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

/// One cell of the summary: `row`'s median µs per operation for engine `e`, and under it
/// the paired ratio to Strata with its range.
fn summary_cell(h: &mut String, r: &SummaryRow, e: &str) {
    match (r.median_micros.get(e), r.paired.get(e)) {
        (Some(m), Some(p)) => {
            let range = if p.pairs > 1 {
                format!("; {:.2}-{:.2}", p.min, p.max)
            } else {
                String::new()
            };
            let class = if p.median >= 1.0 { "ahead" } else { "behind" };
            let _ = write!(
                h,
                "<td>{}<br><span class=\"{class}\">({}{range})</span></td>",
                micros(*m),
                charts::ratio_text(p.median)
            );
        }
        (Some(m), None) => {
            let _ = write!(h, "<td>{}</td>", micros(*m));
        }
        (None, _) if let Some(why) = r.failed.get(e) => {
            let _ = write!(h, "<td class=\"failed\" title=\"{}\">FAILED</td>", esc(why));
        }
        (None, _) => h.push_str("<td class=\"na\">n/a</td>"),
    }
}

/// `title` with its phase: "after compaction" for a read when a compaction ran before it
/// in its group (a write's figure does not depend on it).
fn with_phase(mut title: String, benchmark: &str, compacted: bool) -> String {
    if compacted && benchmark.starts_with("read") {
        title.push_str(" after compaction");
    }
    title
}

/// A row code of LevelDB's page (`1B`, `2E`).
fn is_row_code(row: &str) -> bool {
    let b = row.as_bytes();
    b.len() == 2 && b[0].is_ascii_digit() && b[1].is_ascii_uppercase()
}

/// A group's name as a reader takes it: value sizes in KB and MB, entries in millions,
/// one reader rather than "1 readers".
fn group_words(group: &str) -> String {
    if let Some(n) = group
        .strip_prefix("value size ")
        .and_then(|n| n.parse::<f64>().ok())
    {
        return format!("{} values", charts::bytes(n));
    }
    if let Some(n) = group
        .strip_prefix("scale ")
        .and_then(|n| n.parse::<u64>().ok())
    {
        return format!("{} entries", count_words(n));
    }
    match group.strip_prefix("1 readers") {
        Some(rest) => format!("1 reader{rest}"),
        None => group.to_string(),
    }
}

/// A group's name after a chart's title: without the LevelDB page's row codes that lead
/// it ("3A: 128 MB memory" -> "128 MB memory"), which the title's own code says.
fn group_in_title(group: &str) -> String {
    let words = group_words(group);
    match words.split_once(": ") {
        Some((codes, rest))
            if codes
                .chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase() || ", -".contains(c)) =>
        {
            rest.to_string()
        }
        _ => words,
    }
}

/// `1000000` as `1M`, `2500000` as `2.5M`, `50000` as `50k`.
fn count_words(n: u64) -> String {
    let (unit, size) = match n {
        n if n >= 1_000_000 => ("M", 1_000_000),
        n if n >= 1_000 => ("k", 1_000),
        _ => return n.to_string(),
    };
    if n.is_multiple_of(size) {
        format!("{}{unit}", n / size)
    } else {
        format!("{:.1}{unit}", n as f64 / size as f64)
    }
}

/// A failed cell's reason without the engine's name ("rocksdb has failed here: killed
/// by signal 11" -> "killed by signal 11"; "... has failed earlier in the group: ..." ->
/// "earlier in the group: ...").
fn failure_words(why: &str) -> String {
    let rest = why.split_once(" has ").map_or(why, |(_, r)| r);
    let rest = rest.strip_prefix("failed here: ").unwrap_or(rest);
    rest.strip_prefix("failed ").unwrap_or(rest).to_string()
}

/// The result of `run` at position `index` of its group (results of older files carry no
/// position: their place in the list is it).
/// True for a result message a reader needs beside its chart (`Page::messages`).
fn notable(message: &str) -> bool {
    message.contains("read budget")
        || message.contains("write budget")
        || message.contains(" aborted ")
        || found_short(message)
}

/// True when a message's "(X of Y found)" has X below Y.
fn found_short(message: &str) -> bool {
    let Some(end) = message.find(" found)") else {
        return false;
    };
    let Some(open) = message[..end].rfind('(') else {
        return false;
    };
    let mut parts = message[open + 1..end].split(" of ");
    match (
        parts.next().and_then(|x| x.parse::<u64>().ok()),
        parts.next().and_then(|y| y.parse::<u64>().ok()),
    ) {
        (Some(x), Some(y)) => x < y,
        _ => false,
    }
}

fn result_at(run: &EngineRun, index: usize) -> Option<&BenchResult> {
    run.results
        .iter()
        .enumerate()
        .find(|(i, x)| x.position.unwrap_or(*i) == index)
        .map(|(_, x)| x)
}

fn display_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// One line of an engine's counters: what it reported, in words.
fn counters_text(c: &EngineCounters) -> String {
    let mut parts = Vec::new();
    if let Some(s) = c.stall_seconds {
        parts.push(format!(
            "stalled {s:.2} s ({} slowdowns, {} stops)",
            c.slowdowns.unwrap_or(0),
            c.stops.unwrap_or(0)
        ));
    }
    if let Some(f) = c.flushes {
        parts.push(format!("{f} flushes"));
    }
    if let Some(n) = c.compactions {
        parts.push(format!("{n} compactions"));
    }
    if let (Some(r), Some(w)) = (c.compaction_bytes_read, c.compaction_bytes_written) {
        parts.push(format!(
            "compaction read {:.0} MB, wrote {:.0} MB",
            r as f64 / 1e6,
            w as f64 / 1e6
        ));
    }
    if let Some(t) = c.compaction_seconds {
        parts.push(format!("{t:.2} s compacting"));
    }
    parts.join(", ")
}

fn micros(m: f64) -> String {
    if m >= 100.0 {
        format!("{m:.0}")
    } else if m >= 1.0 {
        format!("{m:.2}")
    } else {
        format!("{m:.3}")
    }
}

fn bytes(n: usize) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} B")
    }
}

const CSS: &str = "body{margin:0;background:#fafafa;color:#222;font:15px/1.5 system-ui,sans-serif}\
main{max-width:900px;margin:0 auto;padding:24px}h1{font-size:26px;margin:0 0 8px}\
h2{font-size:20px;margin:32px 0 8px;border-bottom:1px solid #ddd}h3{font-size:16px}\
.lede{font-size:16px}.ran{font-size:13px;color:#444;overflow-wrap:anywhere}.how{color:#555;font-size:14px}.strata{color:#c0392b;font-weight:600}\
.ahead{color:#1e8449}.behind{color:#b03a2e}figure{margin:12px 0;background:#fff;\
border:1px solid #e5e5e5}figure svg{display:block;max-width:100%;height:auto}\
figcaption{font-size:12px;color:#777;padding:2px 8px 6px}figcaption a{float:right}\
table{border-collapse:collapse;font-size:13px;background:#fff}td,th{border:1px solid #e2e2e2;\
padding:3px 6px;text-align:right;white-space:nowrap}td:first-child,th:first-child{text-align:left}\
.na{color:#999}.failed{color:#b03a2e;font-weight:600}\
#failures td,#failures th{white-space:normal;text-align:left}#failures pre{white-space:pre-wrap;font-weight:400;color:#333}\
.scroll{overflow-x:auto}table.summary{margin:8px 0 16px}table.summary th{white-space:normal;vertical-align:bottom;max-width:150px}\
table.wrap{width:100%}table.wrap td{white-space:normal;text-align:left;overflow-wrap:anywhere}footer{margin-top:32px;color:#888;font-size:12px}nav{font-size:14px}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(1_795_305_600), "2026-11-22 00:00 UTC");
        assert_eq!(
            utc(951_782_400 + 3600 * 13 + 60 * 7),
            "2000-02-29 13:07 UTC"
        );
    }

    /// A baseline-like run: Strata, LevelDB and the `null` harness, 100x faster than both.
    fn sample_page_docs(rounds: usize) -> Vec<Document> {
        let mut runs = Vec::new();
        for round in 0..rounds {
            let slow = 1.0 + round as f64 * 0.5; // the machine slows down each round
            for (engine, f) in [("strata", 1.0), ("leveldb", 2.0), ("null", 0.01)] {
                runs.push(crate::results::sample_run(
                    engine,
                    round,
                    &[
                        ("fillsync", 200.0 * f * slow),
                        ("fsyncceiling", 180.0 * slow),
                        ("fillrandom", 1.0 * f * slow),
                        ("compact", 100_000.0 * f * slow),
                    ],
                ));
            }
        }
        vec![Document {
            tool: "strata-bench".into(),
            version: "0".into(),
            started_unix: 0,
            suite: Some("baseline".into()),
            args: Vec::new(),
            commit: None,
            machine: crate::accounting::Machine {
                cpu: "cpu".into(),
                cores: 2,
                memory: 1 << 30,
                filesystem: "ext4".into(),
                kernel: "6".into(),
            },
            page_cache: "kept".into(),
            probes: Vec::new(),
            runs,
            summary: Vec::new(),
        }]
    }

    /// Files of one suite at several sizes, with different rounds (the scale page): the
    /// lede and the settings say each group's rounds, not the pooled count, and when the
    /// runs started.
    #[test]
    fn pooled_files_say_each_groups_rounds() {
        let mut small = sample_page_docs(1);
        let mut large = sample_page_docs(3);
        for (docs, label, started) in [
            (&mut small, "scale 1000000", 86_400),
            (&mut large, "scale 100000000", 2 * 86_400),
        ] {
            docs[0].started_unix = started;
            for r in &mut docs[0].runs {
                r.group = label.to_string();
            }
        }
        let docs = vec![small.remove(0), large.remove(0)];
        let page = Page::new(&docs, &[PathBuf::from("a.json"), PathBuf::from("b.json")]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let html = page.render(dir.path()).unwrap();
        assert!(
            html.contains("in 1 to 3 rounds a group (scale 1000000: 1, scale 100000000: 3)"),
            "{}",
            &html[..html.len().min(2000)]
        );
        assert!(!html.contains("in 4 rounds"));
        assert!(html.contains("1970-01-02 00:00 UTC to 1970-01-03 00:00 UTC"));
        assert!(html.contains("<td>rounds</td><td>scale 1000000: 1, scale 100000000: 3</td>"));
    }

    #[test]
    fn the_first_line_says_what_ran_and_what_a_budget_cut() {
        let mut docs = sample_page_docs(1);
        docs[0].args = vec!["strata-bench".into(), "--write_budget=5".into()];
        docs[0].commit = Some("abc1234".into());
        let ran = |docs: &[Document]| {
            let page = Page::new(docs, &[PathBuf::from("x.json")]).unwrap();
            let dir = tempfile::tempdir().unwrap();
            let html = page.render(dir.path()).unwrap();
            let at = html.find("<p class=\"ran\">").expect("a first line");
            assert!(
                at < html.find("class=\"lede\"").unwrap(),
                "first, before the lede"
            );
            html[at..].split("</p>").next().unwrap().to_string()
        };
        let line = ran(&docs);
        assert!(
            line.contains(
                "What ran: <code>strata-bench --write_budget=5</code> at <code>abc1234</code>."
            ),
            "{line}"
        );
        assert!(!line.contains("budget stopped"), "{line}");
        // A read cut in the second round only: counted once, captioned with its round, and
        // no word about writes.
        let mut docs = sample_page_docs(2);
        let leveldb_round = |docs: &[Document], round: usize| {
            docs[0]
                .runs
                .iter()
                .position(|r| r.engine == "leveldb" && r.round == round)
                .unwrap()
        };
        let r1 = leveldb_round(&docs, 1);
        docs[0].runs[r1].results[2].message =
            "(5 of 5 found) (read budget: 5 of 20 reads ran)".into();
        let line = ran(&docs);
        assert!(
            line.contains("A time budget stopped 1 figure before all its"),
            "{line}"
        );
        assert!(!line.contains("write figure"), "{line}");
        let page = Page::new(&docs, &[PathBuf::from("x.json")]).unwrap();
        let gi = docs[0].runs[r1].group_index;
        assert_eq!(
            page.messages(gi, 2),
            vec![(
                "leveldb".to_string(),
                "round 2: (5 of 5 found) (read budget: 5 of 20 reads ran)".to_string()
            )]
        );
        // The same cell cut in both rounds, and a write cut: two figures, and the word
        // about writes.
        let r0 = leveldb_round(&docs, 0);
        docs[0].runs[r0].results[2].message = "(read budget: 9 of 20 reads ran)".into();
        docs[0].runs[r0].results[0].message = "(write budget: 10 of 20 writes ran)".into();
        let line = ran(&docs);
        assert!(
            line.contains("A time budget stopped 2 figures before all their"),
            "{line}"
        );
        assert!(line.contains("A write figure cut short"), "{line}");
    }

    #[test]
    fn reads_that_missed_are_notable() {
        assert!(found_short("(852650 of 1000000 found)"));
        assert!(found_short("(1 of 2 found) (writer: 5 writes/s)"));
        assert!(!found_short("(20 of 20 found)"));
        assert!(!found_short("(20 committed, 0 aborted and run again)"));
        assert!(notable("(852650 of 1000000 found)"));
        assert!(!notable("(20 of 20 found)"));
    }

    #[test]
    fn a_page_says_how_values_were_read_when_every_one_was() {
        let mut docs = sample_page_docs(1);
        let page = Page::new(&docs, &[PathBuf::from("x.json")]).unwrap();
        assert_eq!(
            page.value_access_text(),
            None,
            "db_bench's rule: nothing to say"
        );
        for r in &mut docs[0].runs {
            r.values_touched = true;
        }
        let mut dbbench = docs[0].runs[0].clone();
        dbbench.engine = "leveldb-dbbench".into();
        dbbench.values_touched = false;
        docs[0].runs.push(dbbench);
        let page = Page::new(&docs, &[PathBuf::from("x.json")]).unwrap();
        let text = page.value_access_text().unwrap();
        assert!(
            text.contains("one 8-byte load from each 64 bytes"),
            "{text}"
        );
        assert!(text.contains("keep their rule"), "{text}");
    }

    #[test]
    fn the_harness_never_sets_an_axis_and_the_disk_is_no_engine() {
        let docs = sample_page_docs(3);
        let page = Page::new(&docs, &[PathBuf::from("x.json")]).unwrap();
        for row in &page.rows {
            let bars = page.bars_of(row);
            assert!(
                bars.iter()
                    .all(|b| !matches!(b, Bar::Measured { engine, .. } if engine == "null")),
                "{}: the null engine drawn as a bar",
                row.benchmark
            );
            // The axis is set by a real engine: the fastest of Strata and LevelDB.
            let real = page.ranked(row);
            if let Some(&(_, fastest)) = real.first().filter(|_| row.benchmark != "compact") {
                let axis = charts::axis_max(&bars, page.ceiling_for(row).as_ref());
                assert!(
                    axis <= 1e6 / fastest * 1.0001 || row.benchmark == "fillsync",
                    "{axis}"
                );
            }
        }
        let ceiling = page
            .rows
            .iter()
            .find(|r| r.benchmark == "fsyncceiling")
            .unwrap();
        assert!(ceiling.paired.is_empty(), "no ratios for the disk's row");
        let fillsync = page
            .rows
            .iter()
            .find(|r| r.benchmark == "fillsync")
            .unwrap();
        assert!(page.ceiling_for(fillsync).is_some());
        assert!(
            !fillsync.paired.contains_key("null"),
            "no ratio for the harness"
        );
        // Paired per round: LevelDB is 2x in every round although the machine slowed.
        let fillrandom = page
            .rows
            .iter()
            .find(|r| r.benchmark == "fillrandom")
            .unwrap();
        assert_eq!(fillrandom.paired["leveldb"].median, 2.0);

        let dir = tempfile::tempdir().unwrap();
        let html = page.render(dir.path()).unwrap();
        assert!(
            html.contains("Strata and 1 peer through"),
            "peers counted without null"
        );
        assert!(html.contains("in 3 rounds taking turns"));
        assert!(html.contains("<td>rounds</td><td>3</td>"));
        assert!(
            html.contains("ahead of the best peer on 3 of 3 workloads"),
            "verdict"
        );
        assert!(html.contains("harness's own cost"));
        let svgs: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect();
        assert_eq!(
            svgs.len(),
            3,
            "fillsync, fillrandom, compact: no fsyncceiling chart"
        );
        assert!(
            svgs.iter()
                .any(|s| s.contains("seconds (shorter is better)"))
        );
        assert!(
            svgs.iter()
                .any(|s| s.contains("disk ceiling (append + fdatasync)"))
        );
        assert!(svgs.iter().all(|s| !s.contains(">null<")));
    }

    #[test]
    fn a_swept_suite_draws_each_benchmark_against_its_setting() {
        // Group commit: each group a thread count; Strata's total rate doubles with the
        // threads while each thread's time per write stays 100 µs.
        let mut docs = sample_page_docs(1);
        docs[0].suite = Some("group-commit".into());
        docs[0].runs.clear();
        for (gi, threads) in [1usize, 2, 4].into_iter().enumerate() {
            for (engine, f) in [("strata", 1.0), ("leveldb", 2.0)] {
                let mut run = crate::results::sample_run(engine, 0, &[("fillsync", 100.0 * f)]);
                run.group = format!("{threads} threads");
                run.group_index = gi;
                run.sweep = Some(crate::results::Sweep {
                    axis: "writing threads".into(),
                    value: threads as f64,
                });
                let r = &mut run.results[0];
                r.threads = threads;
                r.ops_per_sec = 1e6 / (100.0 * f) * threads as f64;
                r.latency_us = Some(crate::results::Percentiles {
                    p50: 90.0,
                    p99: 300.0 * f,
                    p999: 400.0,
                    max: 500.0,
                });
                docs[0].runs.push(run);
            }
        }
        let page = Page::new(&docs, &[PathBuf::from("x.json")]).unwrap();
        // A bar of several threads is their rate together, not one thread's.
        let four = page.rows.iter().find(|r| r.group == "4 threads").unwrap();
        let strata = page
            .bars_of(four)
            .into_iter()
            .find_map(|b| match b {
                Bar::Measured { engine, value, .. } if engine == "strata" => Some(value),
                _ => None,
            })
            .unwrap();
        assert_eq!(strata, 40_000.0);
        let dir = tempfile::tempdir().unwrap();
        let html = page.render(dir.path()).unwrap();
        assert!(html.contains("<h2>Against writing threads</h2>"));
        assert!(html.contains("data-sweep=\"writing threads\""));
        let sweep = std::fs::read_to_string(dir.path().join("sweep-00-fillsync.svg")).unwrap();
        assert!(sweep.contains("fillsync against writing threads"));
        assert!(sweep.contains("\nstrata\n") && sweep.contains("\nleveldb\n"));
        // p99 per phase, for every engine.
        assert!(html.contains("<h2>Latency</h2>"));
        assert!(
            html.contains("<td>90.00 / 600</td>"),
            "p50 / p99 of leveldb"
        );
    }

    #[test]
    fn files_of_different_sizes_stay_apart() {
        // The scale page: one file per size, each holding its group at position 0.
        let mut docs = Vec::new();
        for (n, micros) in [(1_000_000u64, 1.0), (10_000_000, 1.5)] {
            let mut d = sample_page_docs(1).remove(0);
            d.suite = Some("scale".into());
            d.runs = vec![crate::results::sample_run(
                "strata",
                0,
                &[("fillrandom", micros)],
            )];
            d.runs[0].group = format!("scale {n}");
            d.runs[0].sweep = Some(crate::results::Sweep {
                axis: "entries".into(),
                value: n as f64,
            });
            docs.push(d);
        }
        let page = Page::new(&docs, &[PathBuf::from("a.json"), PathBuf::from("b.json")]).unwrap();
        let medians: Vec<(String, f64)> = page
            .rows
            .iter()
            .map(|r| (r.group.clone(), r.median_micros["strata"]))
            .collect();
        assert_eq!(
            medians,
            [
                ("scale 1000000".to_string(), 1.0),
                ("scale 10000000".to_string(), 1.5)
            ]
        );
    }

    #[test]
    fn one_round_says_so() {
        let docs = sample_page_docs(1);
        let page = Page::new(&docs, &[PathBuf::from("x.json")]).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let html = page.render(dir.path()).unwrap();
        assert!(html.contains("in one round: every figure is that round's"));
        assert!(!html.contains("median over the rounds"));
    }

    #[test]
    fn slugs_are_file_names() {
        assert_eq!(slug(3, "1B", "readrandom"), "03-1b-readrandom.svg");
        assert_eq!(slug(12, "", "compact"), "12-compact.svg");
    }

    #[test]
    fn counters_read_as_words() {
        let c = EngineCounters {
            stall_seconds: Some(0.25),
            slowdowns: Some(3),
            stops: Some(1),
            flushes: Some(40),
            compactions: Some(12),
            compaction_seconds: Some(1.5),
            compaction_bytes_read: Some(50_000_000),
            compaction_bytes_written: Some(90_000_000),
        };
        assert_eq!(
            counters_text(&c),
            "stalled 0.25 s (3 slowdowns, 1 stops), 40 flushes, 12 compactions, \
             compaction read 50 MB, wrote 90 MB, 1.50 s compacting"
        );
        let leveldb = EngineCounters {
            compaction_bytes_read: Some(0),
            compaction_bytes_written: Some(2_000_000),
            ..EngineCounters::default()
        };
        assert_eq!(counters_text(&leveldb), "compaction read 0 MB, wrote 2 MB");
    }

    #[test]
    fn escaping() {
        assert_eq!(esc("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
