//! The summary of a run: for each benchmark of each group, every engine's median µs/op over
//! the repeats, and its ratio to Strata's: the ratio of the medians, and, where the engines
//! ran in several rounds, the median and range of the paired ratios (each round's peer time
//! over the same round's Strata time). Pairs taken back to back see the same machine: on a
//! machine whose speed drifts within minutes, they are the figure to quote.

use std::collections::BTreeMap;

use crate::probe::RoundState;
use crate::results::{EngineRun, Paired, SummaryRow};

/// The engine whose row is the harness's own cost, not an engine's.
pub const HARNESS: &str = "null";

/// The benchmark that measures the disk, not an engine.
pub const FSYNC_CEILING: &str = "fsyncceiling";

/// The paired ratios of `engine` over `strata`, both keyed by round; `None` if no round has
/// both.
pub fn paired(engine: &BTreeMap<usize, f64>, strata: &BTreeMap<usize, f64>) -> Option<Paired> {
    let mut ratios: Vec<f64> = engine
        .iter()
        .filter_map(|(round, e)| {
            let s = strata.get(round)?;
            (*s > 0.0).then(|| e / s)
        })
        .collect();
    let median = median(&mut ratios)?;
    Some(Paired {
        median,
        min: ratios[0],
        max: ratios[ratios.len() - 1],
        pairs: ratios.len(),
    })
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    })
}

/// What one (group, position) cell collects: group, row, benchmark, and per engine the
/// µs/op of every round.
struct Cell {
    group: String,
    row: String,
    benchmark: String,
    per_engine: BTreeMap<String, BTreeMap<usize, f64>>,
    not_available: BTreeMap<String, String>,
    failed: BTreeMap<String, String>,
}

/// Groups every run's results by (group, benchmark position) and takes medians.
pub fn summarize(runs: &[EngineRun]) -> Vec<SummaryRow> {
    let mut cells: BTreeMap<(usize, usize), Cell> = BTreeMap::new();
    for run in runs {
        for (i, r) in run.results.iter().enumerate() {
            let key = (run.group_index, r.position.unwrap_or(i));
            let cell = cells.entry(key).or_insert_with(|| Cell {
                group: run.group.clone(),
                row: r.row.clone(),
                benchmark: r.name.clone(),
                per_engine: BTreeMap::new(),
                not_available: BTreeMap::new(),
                failed: BTreeMap::new(),
            });
            cell.per_engine
                .entry(run.engine.clone())
                .or_default()
                .insert(run.round, r.micros_per_op);
        }
        for na in &run.not_available {
            let cell = cells
                .entry((run.group_index, na.position))
                .or_insert_with(|| Cell {
                    group: run.group.clone(),
                    row: na.row.clone(),
                    benchmark: na.name.clone(),
                    per_engine: BTreeMap::new(),
                    not_available: BTreeMap::new(),
                    failed: BTreeMap::new(),
                });
            let to = if na.failed {
                &mut cell.failed
            } else {
                &mut cell.not_available
            };
            to.insert(run.engine.clone(), na.reason.clone());
        }
    }
    cells
        .into_iter()
        .map(|((_, index), cell)| {
            let mut median_micros = BTreeMap::new();
            let mut repeats = BTreeMap::new();
            let mut pairs = BTreeMap::new();
            let strata = cell.per_engine.get("strata").cloned().unwrap_or_default();
            // Ratios compare engines: none for the harness's own cost (`null`) or for a
            // row no engine is part of (`fsyncceiling`, the disk's).
            let compares = cell.benchmark != FSYNC_CEILING;
            for (engine, rounds) in cell.per_engine {
                repeats.insert(engine.clone(), rounds.len());
                if compares
                    && engine != "strata"
                    && engine != HARNESS
                    && let Some(p) = paired(&rounds, &strata)
                {
                    pairs.insert(engine.clone(), p);
                }
                let mut values: Vec<f64> = rounds.into_values().collect();
                if let Some(m) = median(&mut values) {
                    median_micros.insert(engine, m);
                }
            }
            SummaryRow {
                group: cell.group,
                row: cell.row,
                benchmark: cell.benchmark,
                index,
                median_micros,
                repeats,
                not_available: cell.not_available,
                failed: cell.failed,
                paired: pairs,
            }
        })
        .collect()
}

/// The summary as a text table: µs/op per engine, and in brackets its time relative to
/// Strata's (above 1 means slower than Strata): with one round the ratio of the two figures;
/// with several, the median of the paired ratios and their range.
pub fn table(rows: &[SummaryRow], engines: &[&str]) -> String {
    let several = rows.iter().any(|r| r.paired.values().any(|p| p.pairs > 1));
    let width = if several { 30 } else { 18 };
    let mut out = String::from(if several {
        "Summary: median micros/op over the rounds; in brackets, the median of the paired \
         ratios (each round's time over Strata's in the same round; >1: slower than Strata) \
         and their range\n"
    } else {
        "Summary: median micros/op; in brackets, time relative to Strata (>1: slower than Strata)\n"
    });
    out.push_str(&format!("{:<4} {:<14}", "row", "benchmark"));
    for e in engines {
        out.push_str(&format!(" {e:>width$}"));
    }
    out.push('\n');
    let mut group = None;
    for r in rows {
        if group != Some(&r.group) {
            out.push_str(&format!(
                "-- {}\n",
                if r.group.is_empty() {
                    "(benchmarks)"
                } else {
                    &r.group
                }
            ));
            group = Some(&r.group);
        }
        out.push_str(&format!("{:<4} {:<14}", r.row, r.benchmark));
        for e in engines {
            let cell = match (r.median_micros.get(*e), r.paired.get(*e)) {
                (Some(m), Some(p)) if p.pairs > 1 => {
                    format!("{m:.3} ({:.2}; {:.2}-{:.2})", p.median, p.min, p.max)
                }
                (Some(m), Some(p)) => format!("{m:.3} ({:.2})", p.median),
                (Some(m), None) => format!("{m:.3}"),
                (None, _) if r.failed.contains_key(*e) => "FAILED".to_string(),
                (None, _) => "n/a".to_string(),
            };
            out.push_str(&format!(" {cell:>width$}"));
        }
        out.push('\n');
    }
    out
}

/// The paired ratios again, split by the shared cache's state through each round
/// (`probe::round_states`): per row and peer, the median of the pairs from rounds with the
/// cache free and from rounds with it held, with how many rounds each. `None` unless the
/// rounds were in more than one state (otherwise the summary table is that state's).
/// `rows` is [`summarize`] of `runs`: the rows in their order.
pub fn by_state(
    rows: &[SummaryRow],
    runs: &[EngineRun],
    states: &[RoundState],
    engines: &[&str],
) -> Option<String> {
    let count = |want: RoundState| states.iter().filter(|s| **s == want).count();
    let kinds = [RoundState::Free, RoundState::Held, RoundState::Changed]
        .into_iter()
        .filter(|s| count(*s) > 0)
        .count();
    if kinds < 2 || count(RoundState::Free) + count(RoundState::Held) == 0 {
        return None;
    }
    let only = |want: RoundState| {
        let kept: Vec<EngineRun> = runs
            .iter()
            .filter(|r| states.get(r.round) == Some(&want))
            .cloned()
            .collect();
        summarize(&kept)
    };
    let (free, held) = (only(RoundState::Free), only(RoundState::Held));
    let find = |rows: &[SummaryRow], r: &SummaryRow, e: &str| {
        rows.iter()
            .find(|x| x.group == r.group && x.index == r.index)
            .and_then(|x| x.paired.get(e).copied())
    };
    let show = |p: Option<Paired>| match p {
        Some(p) => format!("{:.2} ({})", p.median, p.pairs),
        None => "-".to_string(),
    };
    let peers: Vec<&str> = engines
        .iter()
        .copied()
        .filter(|e| *e != "strata" && *e != HARNESS)
        .collect();
    let mut out = format!(
        "Paired ratios by the shared cache's state (median, rounds): free in {} round(s), \
         held in {}, changed within {}\n",
        count(RoundState::Free),
        count(RoundState::Held),
        count(RoundState::Changed)
    );
    out.push_str(&format!("{:<4} {:<14}", "row", "benchmark"));
    for e in &peers {
        out.push_str(&format!(" {:>24}", format!("{e} free / held")));
    }
    out.push('\n');
    for r in rows.iter().filter(|r| !r.paired.is_empty()) {
        out.push_str(&format!("{:<4} {:<14}", r.row, r.benchmark));
        for e in &peers {
            let cell = format!("{} / {}", show(find(&free, r, e)), show(find(&held, r, e)));
            out.push_str(&format!(" {cell:>24}"));
        }
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0]), Some(3.0));
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn table_shows_ratios_and_na() {
        let mut m = BTreeMap::new();
        m.insert("strata".to_string(), 2.0);
        m.insert("leveldb".to_string(), 3.0);
        let rows = vec![SummaryRow {
            group: "g".into(),
            row: "1C".into(),
            benchmark: "fillseq".into(),
            index: 0,
            median_micros: m,
            repeats: BTreeMap::new(),
            not_available: BTreeMap::new(),
            failed: BTreeMap::new(),
            paired: BTreeMap::from([(
                "leveldb".to_string(),
                Paired {
                    median: 1.5,
                    min: 1.5,
                    max: 1.5,
                    pairs: 1,
                },
            )]),
        }];
        let t = table(&rows, &["strata", "leveldb", "lmdb"]);
        assert!(t.contains("3.000 (1.50)"), "{t}");
        assert!(t.contains("2.000"), "{t}");
        assert!(t.contains("n/a"), "{t}");
    }

    #[test]
    fn paired_ratios_pair_rounds_not_medians() {
        // The machine doubled its speed after round 1: each round's ratio is 2, while the
        // ratio of the medians would say 1.25.
        let strata = BTreeMap::from([(0, 1.0), (1, 1.0), (2, 2.0), (3, 2.0)]);
        let peer = BTreeMap::from([(0, 2.0), (1, 2.0), (2, 4.0), (3, 4.0), (4, 9.0)]);
        let p = paired(&peer, &strata).unwrap();
        assert_eq!((p.median, p.min, p.max, p.pairs), (2.0, 2.0, 2.0, 4));
        let uneven = BTreeMap::from([(0, 1.5), (1, 3.0), (2, 2.0)]);
        let p = paired(&uneven, &BTreeMap::from([(0, 1.0), (1, 1.0), (2, 1.0)])).unwrap();
        assert_eq!((p.median, p.min, p.max), (2.0, 1.5, 3.0));
        assert_eq!(paired(&peer, &BTreeMap::new()), None);
    }

    /// One benchmark's runs: per round, Strata's and LevelDB's µs/op.
    fn rounds(name: &str, micros: &[(f64, f64)]) -> Vec<EngineRun> {
        micros
            .iter()
            .enumerate()
            .flat_map(|(round, &(strata, leveldb))| {
                [("strata", strata), ("leveldb", leveldb)]
                    .map(|(e, m)| crate::results::sample_run(e, round, &[(name, m)]))
            })
            .collect()
    }

    #[test]
    fn summarize_pairs_by_round_and_the_table_shows_the_range() {
        let runs = rounds("readseq", &[(1.0, 1.2), (2.0, 2.2), (1.0, 1.5)]);
        let rows = summarize(&runs);
        assert_eq!(rows.len(), 1);
        let p = rows[0].paired["leveldb"];
        assert_eq!(p.pairs, 3);
        assert!((p.median - 1.2).abs() < 1e-9, "{p:?}");
        assert!(
            (p.min - 1.1).abs() < 1e-9 && (p.max - 1.5).abs() < 1e-9,
            "{p:?}"
        );
        assert!(!rows[0].paired.contains_key("strata"));
        let t = table(&rows, &["strata", "leveldb"]);
        assert!(t.contains("1.500 (1.20; 1.10-1.50)"), "{t}");
    }

    #[test]
    fn ratios_split_by_the_rounds_state() {
        let runs = rounds(
            "readrandom",
            &[(1.0, 1.2), (1.0, 2.0), (1.0, 1.8), (1.0, 9.0)],
        );
        use RoundState::*;
        let rows = summarize(&runs);
        let t = by_state(
            &rows,
            &runs,
            &[Free, Held, Held, Changed],
            &["strata", "leveldb"],
        )
        .unwrap();
        assert!(t.contains("1.20 (1) / 1.90 (2)"), "{t}");
        assert!(
            t.contains("free in 1 round(s), held in 2, changed within 1"),
            "{t}"
        );
        // One state throughout: the summary table is already that state's.
        assert_eq!(
            by_state(&rows, &runs, &[Held; 4], &["strata", "leveldb"]),
            None
        );
        // Only rounds whose state changed: nothing to split.
        assert_eq!(
            by_state(
                &rows,
                &runs,
                &[Changed, Changed, Unknown, Unknown],
                &["leveldb"]
            ),
            None
        );
    }
}
