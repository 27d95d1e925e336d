//! File subcommands: `dump-wal`, `dump-table`, `dump-manifest`, `table-props`. Each reads
//! one file with checksums, prints what it can, and says where it stopped on damage
//! (exit status 1), never panicking on what it reads.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use strata::BytewiseComparator;
use strata::WriteBatch;
use strata::batch::BatchOp;
use strata::env::{DiskEnv, Env, RandomAccessFile};
use strata::iter::Cursor;
use strata::key::{ParsedInternalKey, ValueType};
use strata::log::{Checksums, LogReader};
use strata::sstable::Block;
use strata::sstable::format::{self, BlockHandle, FOOTER_SIZE, Footer};
use strata::version::VersionEdit;

use crate::text::{show, size};
use crate::{Failure, Out, Outcome, Show};

/// An internal key as `key#seq,KIND` (or shown raw if it does not parse).
fn ikey(k: &[u8], hex: bool) -> String {
    match ParsedInternalKey::parse(k) {
        Some(p) => format!("{}#{},{}", show(p.user_key, hex), p.seqnum, kind(p.ty)),
        None => format!("{} (not an internal key)", show(k, hex)),
    }
}

fn kind(ty: ValueType) -> &'static str {
    match ty {
        ValueType::Value => "SET",
        ValueType::Deletion => "DEL",
        ValueType::BlobRef => "BLOB",
    }
}

/// The JSON of an internal key and its value.
fn entry_json(k: &[u8], v: &[u8], hex: bool) -> serde_json::Value {
    match ParsedInternalKey::parse(k) {
        Some(p) => json!({
            "key": show(p.user_key, hex), "seq": p.seqnum, "kind": kind(p.ty),
            "value": show(v, hex),
        }),
        None => json!({"raw_key": show(k, hex), "value": show(v, hex)}),
    }
}

fn name(path: &Path) -> String {
    path.display().to_string()
}

pub fn dump_wal(file: &Path, s: Show) -> Outcome {
    let env = DiskEnv::new();
    let mut reader = LogReader::new(env.new_sequential(file)?, Checksums::Verify);
    let mut out = Out::new();
    let mut record = Vec::new();
    let (mut records, mut damaged) = (0u64, 0u64);
    loop {
        let more = reader.read_record(&mut record)?;
        for d in reader.take_dropped() {
            damaged += 1;
            let what = format!("{:?}", d.reason);
            if s.json {
                out.line(
                    &json!({"dropped": d.bytes, "offset": d.offset, "reason": what}).to_string(),
                )?;
            } else {
                out.line(&format!(
                    "dropped {} bytes at offset {}: {what}",
                    d.bytes, d.offset
                ))?;
            }
        }
        if !more {
            break;
        }
        records += 1;
        let offset = reader.last_record_offset();
        let len = record.len();
        match WriteBatch::from_bytes(std::mem::take(&mut record)) {
            Ok(batch) => {
                if s.json {
                    out.line(&json!({"record": offset, "bytes": len, "seq": batch.seqnum(), "ops": batch.len(), "checksum": "ok"}).to_string())?;
                } else {
                    out.line(&format!(
                        "record at offset {offset}: {len} bytes, checksum ok, seq {}, {} ops",
                        batch.seqnum(),
                        batch.len()
                    ))?;
                }
                for (seq, op) in (batch.seqnum()..).zip(batch.iter()) {
                    let (key, ty, value): (&[u8], _, &[u8]) = match op? {
                        BatchOp::Put(k, v) => (k, "SET", v),
                        BatchOp::Delete(k) => (k, "DEL", b""),
                        BatchOp::BlobRef(k, r) => (k, "BLOB", r),
                    };
                    if s.json {
                        out.line(&json!({"key": show(key, s.hex), "seq": seq, "kind": ty, "value": show(value, s.hex)}).to_string())?;
                    } else if ty == "DEL" {
                        out.line(&format!("  {}#{seq},{ty}", show(key, s.hex)))?;
                    } else {
                        out.line(&format!(
                            "  {}#{seq},{ty} => {}",
                            show(key, s.hex),
                            show(value, s.hex)
                        ))?;
                    }
                }
            }
            Err(e) => {
                damaged += 1;
                out.line(&format!(
                    "record at offset {offset}: {len} bytes, not a write batch: {e}"
                ))?;
            }
        }
    }
    if !s.json {
        out.line(&format!("{records} records, {damaged} damaged"))?;
    }
    out.done()?;
    if damaged > 0 {
        return Err(Failure::new(format!(
            "{}: {damaged} damaged records or regions",
            name(file)
        )));
    }
    Ok(())
}

/// An open table file, read block by block.
struct TableFile {
    file: Arc<dyn RandomAccessFile>,
    name: String,
    size: u64,
    footer: Footer,
}

impl TableFile {
    fn open(path: &Path) -> Result<TableFile, Failure> {
        let env = DiskEnv::new();
        let size = env.file_size(path)?;
        let name = name(path);
        if size < FOOTER_SIZE as u64 {
            return Err(Failure::new(format!(
                "{name}: {size} bytes, too short to be a table"
            )));
        }
        let file = env.new_random_access(path)?;
        let mut buf = [0u8; FOOTER_SIZE];
        file.read_at(size - FOOTER_SIZE as u64, &mut buf)?;
        let footer =
            Footer::decode(&buf).map_err(|e| Failure::new(format!("{name}: not a table: {e}")))?;
        Ok(TableFile {
            file,
            name,
            size,
            footer,
        })
    }

    /// The block at `h`, checked; if its checksum is wrong, read again unchecked so what
    /// it holds can still be shown: (block, the checksum error if any).
    fn block(&self, h: BlockHandle) -> Result<(Arc<Block>, Option<String>), Failure> {
        let read =
            |verify| format::read_block(self.file.as_ref(), &self.name, self.size, h, verify);
        let (bytes, problem) = match read(true) {
            Ok(b) => (b, None),
            Err(e) => match read(false) {
                Ok(b) => (b, Some(e.to_string())),
                Err(e2) => {
                    return Err(Failure::new(format!(
                        "{e}; read unchecked, it does not decode either: {e2}"
                    )));
                }
            },
        };
        let block = Block::new(bytes).map_err(|e| e.located(&self.name, h.offset))?;
        Ok((Arc::new(block), problem))
    }

    /// The compression byte of the block at `h`.
    fn compression(&self, h: BlockHandle) -> &'static str {
        let mut b = [0u8; 1];
        match self.file.read_at(h.offset + h.size, &mut b) {
            Ok(1) if b[0] == 0 => "none",
            Ok(1) if b[0] == 1 => "snappy",
            _ => "unknown",
        }
    }

    /// The index's entries: each data block's last-key separator and handle.
    fn data_blocks(&self) -> Result<Vec<(Vec<u8>, BlockHandle)>, Failure> {
        let (index, problem) = self.block(self.footer.index)?;
        if let Some(p) = problem {
            return Err(Failure::new(format!("index block: {p}")));
        }
        let mut it = index.iter(BytewiseComparator);
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            let h = BlockHandle::decode_exact(it.value())
                .map_err(|e| e.located(&self.name, self.footer.index.offset))?;
            out.push((it.key().to_vec(), h));
            it.next();
        }
        it.status()?;
        Ok(out)
    }

    /// The metaindex's entries: name and handle.
    fn meta_blocks(&self) -> Result<Vec<(String, BlockHandle)>, Failure> {
        let (meta, _) = self.block(self.footer.metaindex)?;
        let mut it = meta.iter(BytewiseComparator);
        it.seek_to_first();
        let mut out = Vec::new();
        while it.valid() {
            if let Ok(h) = BlockHandle::decode_exact(it.value()) {
                out.push((String::from_utf8_lossy(it.key()).into_owned(), h));
            }
            it.next();
        }
        Ok(out)
    }
}

pub fn dump_table(file: &Path, s: Show) -> Outcome {
    let t = TableFile::open(file)?;
    let mut out = Out::new();
    let f = &t.footer;
    if s.json {
        out.line(&json!({"footer": {"metaindex": [f.metaindex.offset, f.metaindex.size], "index": [f.index.offset, f.index.size]}, "bytes": t.size}).to_string())?;
    } else {
        out.line(&format!(
            "{}: {} bytes; footer: metaindex at {} ({} bytes), index at {} ({} bytes)",
            t.name, t.size, f.metaindex.offset, f.metaindex.size, f.index.offset, f.index.size
        ))?;
    }
    for (meta, h) in t.meta_blocks()? {
        if !s.json {
            out.line(&format!(
                "meta block {meta:?} at {} ({} bytes)",
                h.offset, h.size
            ))?;
        }
    }
    let mut damaged = Vec::new();
    for (i, (sep, h)) in t.data_blocks()?.into_iter().enumerate() {
        let (block, problem) = match t.block(h) {
            Ok(b) => b,
            Err(e) => {
                damaged.push(format!(
                    "data block {i} at offset {}: {}",
                    h.offset, e.message
                ));
                out.line(&format!(
                    "data block {i} at {}: unreadable: {}",
                    h.offset, e.message
                ))?;
                continue;
            }
        };
        let status = problem.clone().unwrap_or_else(|| "ok".into());
        if let Some(p) = problem {
            damaged.push(format!("data block {i} at offset {}: {p}", h.offset));
        }
        if s.json {
            out.line(&json!({"block": i, "offset": h.offset, "bytes": h.size, "compression": t.compression(h), "checksum": status, "index_key": ikey(&sep, s.hex)}).to_string())?;
        } else {
            out.line(&format!(
                "data block {i} at {} ({} bytes, {}, checksum {status}), index key {}",
                h.offset,
                h.size,
                t.compression(h),
                ikey(&sep, s.hex)
            ))?;
        }
        let mut it = block.iter(BytewiseComparator);
        it.seek_to_first();
        while it.valid() {
            if s.json {
                out.line(&entry_json(it.key(), it.value(), s.hex).to_string())?;
            } else {
                out.line(&format!(
                    "  {} => {}",
                    ikey(it.key(), s.hex),
                    show(it.value(), s.hex)
                ))?;
            }
            it.next();
        }
        if let Err(e) = it.status() {
            damaged.push(format!("data block {i} at offset {}: {e}", h.offset));
            out.line(&format!("  stopped: {e}"))?;
        }
    }
    out.done()?;
    if damaged.is_empty() {
        Ok(())
    } else {
        Err(Failure::new(format!("{}: {}", t.name, damaged.join("; "))))
    }
}

pub fn table_props(file: &Path, s: Show) -> Outcome {
    let t = TableFile::open(file)?;
    let blocks = t.data_blocks()?;
    let (mut entries, mut deletions, mut key_bytes, mut value_bytes) = (0u64, 0u64, 0u64, 0u64);
    let (mut snappy, mut plain, mut stored) = (0u64, 0u64, 0u64);
    let (mut smallest, mut largest): (Option<Vec<u8>>, Option<Vec<u8>>) = (None, None);
    let (mut min_seq, mut max_seq) = (u64::MAX, 0u64);
    for (_, h) in &blocks {
        stored += h.size;
        match t.compression(*h) {
            "snappy" => snappy += 1,
            _ => plain += 1,
        }
        let (block, problem) = t.block(*h)?;
        if let Some(p) = problem {
            return Err(Failure::new(format!(
                "{}: data block at {}: {p}",
                t.name, h.offset
            )));
        }
        let mut it = block.iter(BytewiseComparator);
        it.seek_to_first();
        while it.valid() {
            entries += 1;
            key_bytes += it.key().len() as u64;
            value_bytes += it.value().len() as u64;
            if let Some(p) = ParsedInternalKey::parse(it.key()) {
                min_seq = min_seq.min(p.seqnum);
                max_seq = max_seq.max(p.seqnum);
                if p.ty == ValueType::Deletion {
                    deletions += 1;
                }
            }
            if smallest.is_none() {
                smallest = Some(it.key().to_vec());
            }
            largest = Some(it.key().to_vec());
            it.next();
        }
        it.status()?;
    }
    let filters: Vec<String> = t
        .meta_blocks()?
        .into_iter()
        .map(|(n, h)| format!("{n} ({} bytes)", h.size))
        .collect();
    let range = |k: &Option<Vec<u8>>| k.as_deref().map(|k| ikey(k, s.hex)).unwrap_or_default();
    let mut out = Out::new();
    if s.json {
        out.line(&json!({
            "file": t.name, "bytes": t.size, "entries": entries, "deletions": deletions,
            "data_blocks": blocks.len(), "data_bytes": stored, "index_bytes": t.footer.index.size,
            "raw_key_bytes": key_bytes, "raw_value_bytes": value_bytes,
            "snappy_blocks": snappy, "uncompressed_blocks": plain, "meta_blocks": filters,
            "smallest": range(&smallest), "largest": range(&largest),
            "seqnums": [if entries == 0 { 0 } else { min_seq }, max_seq],
        }).to_string())?;
    } else {
        for line in [
            format!("file:          {} ({})", t.name, size(t.size)),
            format!("entries:       {entries} ({deletions} deletions)"),
            format!(
                "data blocks:   {} ({}), {snappy} Snappy, {plain} uncompressed",
                blocks.len(),
                size(stored)
            ),
            format!("index block:   {}", size(t.footer.index.size)),
            format!("raw keys:      {}", size(key_bytes)),
            format!("raw values:    {}", size(value_bytes)),
            format!(
                "meta blocks:   {}",
                if filters.is_empty() {
                    "none (no filter)".into()
                } else {
                    filters.join(", ")
                }
            ),
            format!("smallest key:  {}", range(&smallest)),
            format!("largest key:   {}", range(&largest)),
            format!(
                "seqnums:       {}..{max_seq}",
                if entries == 0 { 0 } else { min_seq }
            ),
        ] {
            out.line(&line)?;
        }
    }
    out.done()
}

/// The manifest `path` names: the file itself, or a database directory's current one.
fn manifest_path(path: &Path) -> Result<PathBuf, Failure> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    strata::version::current_manifest(&DiskEnv::new(), path)
        .map_err(|e| Failure::new(format!("{}: {e}", path.display())))
}

pub fn dump_manifest(path: &Path, s: Show) -> Outcome {
    let file = manifest_path(path)?;
    let env = DiskEnv::new();
    let mut reader = LogReader::new(env.new_sequential(&file)?, Checksums::Verify);
    let mut out = Out::new();
    let mut record = Vec::new();
    let mut damaged = 0;
    loop {
        let more = reader.read_record(&mut record)?;
        for d in reader.take_dropped() {
            damaged += 1;
            out.line(&format!(
                "dropped {} bytes at offset {}: {:?}",
                d.bytes, d.offset, d.reason
            ))?;
        }
        if !more {
            break;
        }
        let offset = reader.last_record_offset();
        let edit = match VersionEdit::decode(&record) {
            Ok(e) => e,
            Err(e) => {
                damaged += 1;
                out.line(&format!("edit at offset {offset}: not a version edit: {e}"))?;
                continue;
            }
        };
        if s.json {
            out.line(&edit_json(offset, &edit, s.hex).to_string())?;
            continue;
        }
        out.line(&format!(
            "edit at offset {offset} ({} bytes, checksum ok)",
            record.len()
        ))?;
        let mut field = |name: &str, v: Option<String>| -> Outcome {
            match v {
                Some(v) => out.line(&format!("  {name}: {v}")),
                None => Ok(()),
            }
        };
        field("comparator", edit.comparator.clone())?;
        field("log number", edit.log_number.map(|n| n.to_string()))?;
        field(
            "prev log number",
            edit.prev_log_number.map(|n| n.to_string()),
        )?;
        field(
            "next file number",
            edit.next_file_number.map(|n| n.to_string()),
        )?;
        field("last seqnum", edit.last_seqnum.map(|n| n.to_string()))?;
        field("separation", edit.separation.map(|v| format!("{v:?}")))?;
        for (level, key) in &edit.compact_pointers {
            out.line(&format!(
                "  compact pointer: level {level} at {}",
                ikey(key, s.hex)
            ))?;
        }
        for (level, number) in &edit.deleted_files {
            out.line(&format!("  deleted file: level {level} #{number}"))?;
        }
        for (level, f) in &edit.new_files {
            out.line(&format!(
                "  new file: level {level} #{} {} bytes [{} .. {}]",
                f.number,
                f.size,
                ikey(&f.smallest, s.hex),
                ikey(&f.largest, s.hex)
            ))?;
        }
        for (n, refs, bytes) in &edit.new_blob_files {
            out.line(&format!("  new blob file: #{n} {refs} refs, {bytes} bytes"))?;
        }
        for (n, refs, bytes) in &edit.blob_garbage {
            out.line(&format!("  blob garbage: #{n} {refs} refs, {bytes} bytes"))?;
        }
    }
    out.done()?;
    if damaged > 0 {
        return Err(Failure::new(format!(
            "{}: {damaged} damaged records",
            file.display()
        )));
    }
    Ok(())
}

fn edit_json(offset: u64, e: &VersionEdit, hex: bool) -> serde_json::Value {
    json!({
        "offset": offset,
        "comparator": e.comparator, "log_number": e.log_number,
        "prev_log_number": e.prev_log_number, "next_file_number": e.next_file_number,
        "last_seqnum": e.last_seqnum,
        "deleted_files": e.deleted_files.iter().map(|(l, n)| json!({"level": l, "number": n})).collect::<Vec<_>>(),
        "new_files": e.new_files.iter().map(|(l, f)| json!({
            "level": l, "number": f.number, "bytes": f.size,
            "smallest": ikey(&f.smallest, hex), "largest": ikey(&f.largest, hex),
        })).collect::<Vec<_>>(),
    })
}
