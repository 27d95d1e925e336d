//! Health subcommands: `check`, `repair`, `compact`, `properties`, `checkpoint`.

use std::path::Path;

use serde_json::json;
use strata::{Db, Options};

use crate::text::size;
use crate::{Failure, Out, Outcome, key_arg, open_read_only, open_read_write};

/// `strata check`: reads everything and fails only on damage (what would change an answer
/// or lose data). Garbage (files nothing references, which the next read-write open
/// removes: LevelDB leaves the output of a compaction that a close cut short) and files of
/// other programs are listed, and the check still passes.
pub fn check(db: &Path, json_out: bool) -> Outcome {
    let opened = open_read_only(db)?;
    let bar = crate::progress("checking every table, log and manifest", None);
    let result = opened.verify();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut out = Out::new();
    match result {
        Ok(r) => {
            let tables: usize = r.tables_per_level.iter().sum();
            if json_out {
                out.line(
                    &json!({
                        "ok": true, "tables": tables,
                        "tables_per_level": r.tables_per_level, "entries": r.entries,
                        "table_bytes": r.table_bytes, "blob_values": r.blob_values,
                        "log_records": r.log_records, "garbage": r.unreferenced,
                        "foreign": r.foreign,
                    })
                    .to_string(),
                )?;
            } else {
                out.line(&format!(
                    "{tables} tables ({}), {} entries, {} blob values, {} log records: checksums, order and ranges right",
                    size(r.table_bytes),
                    r.entries,
                    r.blob_values,
                    r.log_records
                ))?;
                for name in &r.unreferenced {
                    out.line(&format!(
                        "garbage: {name} (nothing references it; the next open removes it)"
                    ))?;
                }
                for name in &r.foreign {
                    out.line(&format!("not the database's: {name} (left alone)"))?;
                }
            }
            out.done()
        }
        Err(e) => {
            if json_out {
                out.line(&json!({"ok": false, "error": e.to_string(), "file": e.as_corruption().map(|c| c.file.clone()), "offset": e.as_corruption().map(|c| c.offset)}).to_string())?;
            }
            out.done()?;
            Err(Failure::new(format!("{}: {e}", db.display())))
        }
    }
}

pub fn repair(db: &Path) -> Outcome {
    if !db.is_dir() {
        return Err(Failure::new(format!("{}: no such directory", db.display())));
    }
    Db::repair(db, Options::default())?;
    eprintln!("repaired {}", db.display());
    Ok(())
}

pub fn compact(db: &Path, from: Option<&str>, to: Option<&str>, hex: bool) -> Outcome {
    let from = from.map(|k| key_arg(k, hex)).transpose()?;
    let to = to.map(|k| key_arg(k, hex)).transpose()?;
    let db = open_read_write(db, false)?;
    let bar = crate::progress("compacting", None);
    let result = db.compact_range(from.as_deref(), to.as_deref());
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result?;
    Ok(db.close()?)
}

pub fn properties(db: &Path, json_out: bool) -> Outcome {
    let db = open_read_only(db)?;
    let mut out = Out::new();
    let mut all = serde_json::Map::new();
    for name in Db::property_names() {
        let Some(value) = db.property(&name) else {
            continue;
        };
        if json_out {
            all.insert(name, value.into());
        } else if value.contains('\n') {
            out.line(&format!("{name}:"))?;
            for l in value.lines() {
                out.line(&format!("  {l}"))?;
            }
        } else {
            out.line(&format!("{name}: {value}"))?;
        }
    }
    if json_out {
        out.line(&serde_json::Value::Object(all).to_string())?;
    }
    out.done()
}

pub fn checkpoint(db: &Path, dest: &Path, json_out: bool) -> Outcome {
    let opened = open_read_only(db)?;
    let seq = opened
        .checkpoint(dest)
        .map_err(|e| Failure::new(format!("{}: {e}", dest.display())))?;
    let mut out = Out::new();
    if json_out {
        out.line(&json!({"checkpoint": dest.display().to_string(), "seqnum": seq}).to_string())?;
    } else {
        out.line(&format!(
            "{}: the database as of sequence number {seq}",
            dest.display()
        ))?;
    }
    out.done()
}
