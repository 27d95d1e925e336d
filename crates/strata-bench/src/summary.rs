//! The summary of a run: for each benchmark of each group, every engine's median µs/op over
//! the repeats, and its ratio to Strata's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::results::EngineRun;

/// One benchmark of one group, across engines.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryRow {
    /// The group (a section of the page).
    pub group: String,
    /// The suite row label (`1C`, `2B`, ...), empty outside suites.
    pub row: String,
    /// The benchmark.
    pub benchmark: String,
    /// Position of the benchmark within its group (benchmarks may repeat in a group).
    pub index: usize,
    /// Engine to median µs/op over the repeats.
    pub median_micros: BTreeMap<String, f64>,
    /// Engine to how many repeats it ran.
    pub repeats: BTreeMap<String, usize>,
    /// Engine to why it could not run this benchmark.
    #[serde(default)]
    pub not_available: BTreeMap<String, String>,
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
/// µs/op of every repeat.
struct Cell {
    group: String,
    row: String,
    benchmark: String,
    per_engine: BTreeMap<String, Vec<f64>>,
    not_available: BTreeMap<String, String>,
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
            });
            cell.per_engine
                .entry(run.engine.clone())
                .or_default()
                .push(r.micros_per_op);
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
                });
            cell.not_available
                .insert(run.engine.clone(), na.reason.clone());
        }
    }
    cells
        .into_iter()
        .map(|((_, index), cell)| {
            let mut median_micros = BTreeMap::new();
            let mut repeats = BTreeMap::new();
            for (engine, mut values) in cell.per_engine {
                repeats.insert(engine.clone(), values.len());
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
            }
        })
        .collect()
}

/// The summary as a text table: µs/op per engine, and × Strata's time in brackets (above
/// 1 means slower than Strata).
pub fn table(rows: &[SummaryRow], engines: &[&str]) -> String {
    let mut out = String::from(
        "Summary: median micros/op; in brackets, time relative to Strata (>1: slower than Strata)\n",
    );
    out.push_str(&format!("{:<4} {:<14}", "row", "benchmark"));
    for e in engines {
        out.push_str(&format!(" {e:>18}"));
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
        let strata = r.median_micros.get("strata").copied();
        for e in engines {
            let cell = match (r.median_micros.get(*e), strata) {
                (Some(m), Some(s)) if s > 0.0 && *e != "strata" => format!("{m:.3} ({:.2})", m / s),
                (Some(m), _) => format!("{m:.3}"),
                (None, _) => "n/a".to_string(),
            };
            out.push_str(&format!(" {cell:>18}"));
        }
        out.push('\n');
    }
    out
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
        }];
        let t = table(&rows, &["strata", "leveldb", "lmdb"]);
        assert!(t.contains("3.000 (1.50)"), "{t}");
        assert!(t.contains("2.000"), "{t}");
        assert!(t.contains("n/a"), "{t}");
    }
}
