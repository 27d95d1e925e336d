//! Data subcommands: `get`, `put`, `delete`, `scan`, `count`, `dump`, `load`.

use std::ops::Bound;
use std::path::Path;

use serde_json::json;
use strata::{WriteBatch, WriteOptions};

use crate::text::{escape, show, unescape};
use crate::{Failure, KeyRange, Out, Outcome, Show, key_arg, open_read_only, open_read_write};

pub fn get(db: &Path, key: &str, s: Show) -> Outcome {
    let key = key_arg(key, s.hex)?;
    let db = open_read_only(db)?;
    let mut out = Out::new();
    match db.get(&key)? {
        Some(v) if s.json => {
            out.line(&json!({"key": show(&key, s.hex), "value": show(&v, s.hex)}).to_string())?
        }
        Some(v) => out.line(&show(&v, s.hex))?,
        None => {
            out.done()?;
            return Err(Failure::new(format!("{}: not found", show(&key, s.hex))));
        }
    }
    out.done()
}

pub fn put(db: &Path, key: &str, value: &str, hex: bool, sync: bool, create: bool) -> Outcome {
    let (key, value) = (key_arg(key, hex)?, key_arg(value, hex)?);
    let db = open_read_write(db, create)?;
    db.put_opt(key, value, &WriteOptions { sync })?;
    Ok(db.close()?)
}

pub fn delete(db: &Path, key: &str, hex: bool, sync: bool) -> Outcome {
    let key = key_arg(key, hex)?;
    let db = open_read_write(db, false)?;
    db.delete_opt(key, &WriteOptions { sync })?;
    Ok(db.close()?)
}

/// The bounds of `r` (`--prefix P`: from P up to the first key that does not start
/// with it).
/// A range of keys as `Db::range` takes it.
type Bounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

fn bounds(r: &KeyRange, hex: bool) -> Result<Bounds, Failure> {
    if let Some(p) = &r.prefix {
        let p = key_arg(p, hex)?;
        let mut end = p.clone();
        while let Some(last) = end.pop() {
            if last < 0xff {
                end.push(last + 1);
                return Ok((Bound::Included(p), Bound::Excluded(end)));
            }
        }
        return Ok((Bound::Included(p), Bound::Unbounded));
    }
    let from = match &r.from {
        Some(k) => Bound::Included(key_arg(k, hex)?),
        None => Bound::Unbounded,
    };
    let to = match &r.to {
        Some(k) => Bound::Excluded(key_arg(k, hex)?),
        None => Bound::Unbounded,
    };
    Ok((from, to))
}

pub fn scan(db: &Path, r: &KeyRange, limit: Option<usize>, reverse: bool, s: Show) -> Outcome {
    let range = bounds(r, s.hex)?;
    let db = open_read_only(db)?;
    let items = if reverse {
        db.range_rev(range)
    } else {
        db.range(range)
    };
    let mut out = Out::new();
    for item in items.take(limit.unwrap_or(usize::MAX)) {
        let (k, v) = item?;
        if s.json {
            out.line(&json!({"key": show(&k, s.hex), "value": show(&v, s.hex)}).to_string())?;
        } else {
            out.line(&format!("{} => {}", show(&k, s.hex), show(&v, s.hex)))?;
        }
    }
    out.done()
}

pub fn count(db: &Path, r: &KeyRange, s: Show) -> Outcome {
    let range = bounds(r, s.hex)?;
    let db = open_read_only(db)?;
    let mut n = 0u64;
    for item in db.range(range) {
        item?;
        n += 1;
    }
    let mut out = Out::new();
    if s.json {
        out.line(&json!({ "count": n }).to_string())?;
    } else {
        out.line(&n.to_string())?;
    }
    out.done()
}

pub fn dump(db: &Path, json_lines: bool) -> Outcome {
    let db = open_read_only(db)?;
    let mut out = Out::new();
    for item in db.range::<&[u8]>(..) {
        let (k, v) = item?;
        if json_lines {
            out.line(&json!({"key": escape(&k), "value": escape(&v)}).to_string())?;
        } else {
            out.line(&format!("{}\t{}", escape(&k), escape(&v)))?;
        }
    }
    out.done()
}

/// One line of a dump: a key and its value.
fn parse_line(line: &str) -> Result<(Vec<u8>, Vec<u8>), String> {
    if line.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let field = |name: &str| {
            v.get(name)
                .and_then(|f| f.as_str())
                .ok_or_else(|| format!("no string field {name:?}"))
                .and_then(unescape)
        };
        return Ok((field("key")?, field("value")?));
    }
    let (k, v) = line
        .split_once('\t')
        .ok_or("expected KEY<TAB>VALUE or a JSON object")?;
    if v.contains('\t') {
        return Err("more than one tab".into());
    }
    Ok((unescape(k)?, unescape(v)?))
}

pub fn load(db: &Path, file: &Path, batch_size: usize, create: bool) -> Outcome {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::new(format!("{}: {e}", file.display())))?;
    // Every line is checked before anything is written.
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            continue;
        }
        let entry = parse_line(line).map_err(|what| {
            Failure::new(format!(
                "{}:{}: {what}; nothing was written",
                file.display(),
                i + 1
            ))
        })?;
        entries.push(entry);
    }
    let db = open_read_write(db, create)?;
    let bar = crate::progress("loading", Some(entries.len() as u64));
    for chunk in entries.chunks(batch_size.max(1)) {
        let mut batch = WriteBatch::new();
        for (k, v) in chunk {
            batch.put(k, v);
        }
        db.write(batch)?;
        if let Some(b) = &bar {
            b.inc(chunk.len() as u64);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    db.close()?;
    eprintln!("loaded {} entries", entries.len());
    Ok(())
}
