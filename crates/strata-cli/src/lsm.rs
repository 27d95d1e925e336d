//! `lsm`: the shape of the tree. A table per level (files, sizes, key ranges, how many
//! tables of the next level each overlaps) and, with `--html`, a self-contained picture:
//! one bar per table, placed by its key range on a common axis, level by level.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;
use strata::LiveFile;

use crate::text::{show, size};
use crate::{Failure, Out, Outcome, Show, open_read_only};

/// Tables of `next` whose key range meets `f`'s.
fn overlaps(f: &LiveFile, next: &[&LiveFile]) -> usize {
    next.iter()
        .filter(|g| g.smallest <= f.largest && f.smallest <= g.largest)
        .count()
}

pub fn lsm(db: &Path, html: Option<&Path>, s: Show) -> Outcome {
    let db = open_read_only(db)?;
    let files = db.live_files();
    let levels: Vec<Vec<&LiveFile>> = (0..strata::version::NUM_LEVELS)
        .map(|l| files.iter().filter(|f| f.level == l).collect())
        .collect();
    let mut out = Out::new();
    for (l, level) in levels.iter().enumerate() {
        let next: &[&LiveFile] = levels.get(l + 1).map_or(&[], |v| v.as_slice());
        let bytes: u64 = level.iter().map(|f| f.size).sum();
        if s.json {
            for f in level {
                out.line(&json!({
                    "level": l, "number": f.number, "bytes": f.size,
                    "smallest": show(&f.smallest, s.hex), "largest": show(&f.largest, s.hex),
                    "seqnums": [f.seqnums.0, f.seqnums.1], "next_level_overlaps": overlaps(f, next),
                }).to_string())?;
            }
            continue;
        }
        if level.is_empty() {
            continue;
        }
        out.line(&format!(
            "level {l}: {} tables, {}",
            level.len(),
            size(bytes)
        ))?;
        for f in level {
            out.line(&format!(
                "  #{:<6} {:>10}  [{} .. {}]  overlaps {} in level {}",
                f.number,
                size(f.size),
                show(&f.smallest, s.hex),
                show(&f.largest, s.hex),
                overlaps(f, next),
                l + 1
            ))?;
        }
    }
    if files.is_empty() && !s.json {
        out.line("no tables (everything is in the memtable and its log)")?;
    }
    out.done()?;
    if let Some(path) = html {
        std::fs::write(path, picture(&levels, s.hex))
            .map_err(|e| Failure::new(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// Escapes `s` for HTML text and attributes.
fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The picture: keys placed by rank among every table boundary (so any bytes work), one
/// row per level, one bar per table.
fn picture(levels: &[Vec<&LiveFile>], hex: bool) -> String {
    let mut keys: Vec<&[u8]> = levels
        .iter()
        .flatten()
        .flat_map(|f| [f.smallest.as_slice(), f.largest.as_slice()])
        .collect();
    keys.sort();
    keys.dedup();
    let span = keys.len().saturating_sub(1).max(1) as f64;
    let x = |k: &[u8]| keys.binary_search(&k).unwrap_or(0) as f64 / span;
    let (width, row, left) = (1000.0, 40.0, 70.0);
    let height = row * levels.len() as f64 + 20.0;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" font-family="sans-serif" font-size="12">"#,
        width + left + 20.0
    );
    for (l, level) in levels.iter().enumerate() {
        let y = 10.0 + row * l as f64;
        let _ = write!(svg, r#"<text x="4" y="{}">level {l}</text>"#, y + row / 2.0);
        let _ = write!(
            svg,
            r##"<line x1="{left}" x2="{}" y1="{}" y2="{}" stroke="#ccc"/>"##,
            left + width,
            y + row - 4.0,
            y + row - 4.0
        );
        for (i, f) in level.iter().enumerate() {
            let (a, b) = (x(&f.smallest), x(&f.largest));
            let w = ((b - a) * width).max(2.0);
            // Level-0 tables may overlap: they are staggered in their row.
            let (dy, h) = if l == 0 {
                (((i % 4) as f64) * 7.0, 7.0)
            } else {
                (4.0, row - 12.0)
            };
            let title = format!(
                "#{} {} [{} .. {}]",
                f.number,
                size(f.size),
                show(&f.smallest, hex),
                show(&f.largest, hex)
            );
            let _ = write!(
                svg,
                r##"<rect x="{:.1}" y="{:.1}" width="{w:.1}" height="{h}" fill="#4a7ab8" stroke="#fff"><title>{}</title></rect>"##,
                left + a * width,
                y + dy,
                html_escape(&title)
            );
        }
    }
    svg.push_str("</svg>");
    let mut table = String::new();
    for (l, level) in levels.iter().enumerate() {
        for f in level {
            let _ = write!(
                table,
                "<tr><td>{l}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                f.number,
                size(f.size),
                html_escape(&show(&f.smallest, hex)),
                html_escape(&show(&f.largest, hex))
            );
        }
    }
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>strata lsm</title>\
         <style>body{{font-family:sans-serif;margin:20px}}td,th{{padding:2px 8px;text-align:left}}</style>\
         </head><body><h1>The tree, level by level</h1><p>One bar per table, placed by its key \
         range (keys spaced by rank among the tables' bounds); hover for its number, size and keys.</p>\
         {svg}<table><tr><th>level</th><th>table</th><th>size</th><th>smallest</th><th>largest</th></tr>{table}</table>\
         </body></html>\n"
    )
}
