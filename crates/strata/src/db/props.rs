//! Properties (`Db::property`) and size estimates (`Db::approximate_sizes`).

use std::fmt::Write as _;

use super::state::{DbInner, State};
use crate::key::{MAX_SEQNUM, ParsedInternalKey, ValueType, make_internal_key};
use crate::version::{NUM_LEVELS, Separation, Version};

/// The names [`property`] answers, besides `leveldb.num-files-at-level<N>`.
pub(super) const NAMES: [&str; 7] = [
    "leveldb.stats",
    "leveldb.sstables",
    "leveldb.approximate-memory-usage",
    "strata.stats",
    "strata.blob-files",
    "strata.recovery",
    "strata.background-error",
];

/// Every name [`property`] answers: the files at each level, then [`NAMES`].
pub(super) fn names() -> Vec<String> {
    (0..NUM_LEVELS)
        .map(|l| format!("leveldb.num-files-at-level{l}"))
        .chain(NAMES.iter().map(|n| n.to_string()))
        .collect()
}

pub(super) fn property(db: &DbInner, name: &str) -> Option<String> {
    let st = db.lock();
    let v = st.versions.current();
    if let Some(level) = name.strip_prefix("leveldb.num-files-at-level") {
        let level: usize = level.parse().ok()?;
        return (level < NUM_LEVELS).then(|| v.levels[level].len().to_string());
    }
    match name {
        "leveldb.stats" => Some(level_stats(&st, &v)),
        "leveldb.sstables" => Some(sstables(&v)),
        "leveldb.approximate-memory-usage" => {
            let mem = st.mem.approximate_memory_usage()
                + st.imm
                    .iter()
                    .map(|(_, m)| m.approximate_memory_usage())
                    .sum::<usize>()
                + db.table_cache.block_cache().usage();
            Some(mem.to_string())
        }
        "strata.blob-files" => Some(blob_files(&st, &v)),
        "strata.recovery" => Some(if st.recovery_notes.is_empty() {
            "nothing dropped\n".to_string()
        } else {
            st.recovery_notes.iter().map(|n| format!("{n}\n")).collect()
        }),
        "strata.stats" => Some(stats(db, &st, &v)),
        "strata.background-error" => Some(match (&st.bg_error, &st.bg_paused) {
            (Some(e), _) => format!("stopped: {e}\n"),
            (None, Some(p)) => format!("paused: {}\n", p.error),
            (None, None) => "none\n".to_string(),
        }),
        _ => None,
    }
}

/// `leveldb.stats`: LevelDB's compaction table, a row per level in use.
fn level_stats(st: &State, v: &Version) -> String {
    let mut s = String::from(
        "                               Compactions\n\
         Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n\
         --------------------------------------------------\n",
    );
    for level in 0..NUM_LEVELS {
        let ls = st.level_stats[level];
        if v.levels[level].is_empty() && ls.micros == 0 {
            continue;
        }
        let _ = writeln!(
            s,
            "{level:>3} {:>8} {:>8.0} {:>9.0} {:>8.0} {:>9.0}",
            v.levels[level].len(),
            v.level_bytes(level) as f64 / 1_048_576.0,
            ls.micros as f64 / 1e6,
            ls.bytes_read as f64 / 1_048_576.0,
            ls.bytes_written as f64 / 1_048_576.0
        );
    }
    s
}

/// `leveldb.sstables`: every table, level by level, with its key range.
fn sstables(v: &Version) -> String {
    let mut s = String::new();
    let show = |k: &[u8]| {
        ParsedInternalKey::parse(k).map_or_else(|| format!("{:?}", k), |p| p.to_string())
    };
    for (level, files) in v.levels.iter().enumerate() {
        let _ = writeln!(s, "--- level {level} ---");
        for f in files {
            let _ = writeln!(
                s,
                " {}:{}[{} .. {}]",
                f.number,
                f.size,
                show(&f.smallest),
                show(&f.largest)
            );
        }
    }
    s
}

/// `strata.blob-files`: one line per blob file the manifest names (refs and bytes, how
/// much of each is garbage, and the bytes holes have freed since open), then those of
/// WALs not yet retired, then the garbage records waiting for their holes and how many
/// times the hole thread has looked.
fn blob_files(st: &State, v: &Version) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "value separation: {}",
        match v.separation {
            Separation::Off => "off",
            Separation::On => "on",
            Separation::Compressed => "on, values may be compressed",
        }
    );
    for (n, f) in &v.blob_files {
        let _ = writeln!(
            s,
            "{n:06}.blob refs {} bytes {} garbage refs {} garbage bytes {} freed by holes {}",
            f.refs,
            f.bytes,
            f.garbage_refs,
            f.garbage_bytes,
            st.blob_freed.get(n).copied().unwrap_or(0)
        );
    }
    for (n, (refs, bytes)) in &st.blob_counts {
        let _ = writeln!(s, "{n:06}.blob refs {refs} bytes {bytes} (WAL not retired)");
    }
    let _ = writeln!(
        s,
        "holes: {} records waiting, {} passes",
        super::blob_holes::waiting(st),
        st.hole_passes
    );
    s
}

/// `strata.stats`: the counters, one per line.
fn stats(db: &DbInner, st: &State, v: &Version) -> String {
    let c = counters(st);
    let mut s = String::new();
    let _ = writeln!(s, "flushes: {}", c.flushes);
    let _ = writeln!(s, "compactions: {}", c.compactions);
    let _ = writeln!(s, "table_moves: {}", c.table_moves);
    let _ = writeln!(s, "compaction_bytes_read: {}", c.compaction_bytes_read);
    let _ = writeln!(
        s,
        "compaction_bytes_written: {}",
        c.compaction_bytes_written
    );
    let _ = writeln!(s, "compaction_seconds: {:.3}", c.compaction_seconds);
    let _ = writeln!(
        s,
        "compaction_helper_shards: {}",
        c.compaction_helper_shards
    );
    let _ = writeln!(s, "stall_slowdowns: {}", c.stall_slowdowns);
    let _ = writeln!(s, "stall_stops: {}", c.stall_stops);
    let _ = writeln!(s, "stall_seconds: {:.3}", c.stall_seconds);
    let _ = writeln!(s, "last_seqnum: {}", st.versions.last_seqnum);
    let _ = writeln!(s, "files_per_level: {:?}", v.files_per_level());
    let _ = writeln!(s, "live_snapshots: {}", db.snapshots.len());
    let _ = writeln!(s, "background_retries: {}", st.bg_retries);
    s
}

pub(super) fn approximate_sizes(db: &DbInner, ranges: &[(&[u8], &[u8])]) -> Vec<u64> {
    let v = db.lock().versions.current();
    let offset = |user_key: &[u8]| {
        let ikey = make_internal_key(user_key, MAX_SEQNUM, ValueType::Value);
        v.approximate_offset_of(&ikey, |f, k| {
            db.table_cache
                .find(f.number, f.size)
                .map_or(0, |t| t.approximate_offset_of(k))
        })
    };
    ranges
        .iter()
        .map(|(start, end)| offset(end).saturating_sub(offset(start)))
        .collect()
}

/// The database's work counters since it opened (`Db::counters`, `strata.stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counters {
    /// Memtables written to level-0 (or deeper) tables.
    pub flushes: u64,
    /// Compactions run (merges; moves are counted apart).
    pub compactions: u64,
    /// Tables moved down a level whole instead of merged: a compaction's one table with
    /// nothing below it, and `compact_range`'s plain tables (`FileMeta::plain`).
    pub table_moves: u64,
    /// Bytes compactions read.
    pub compaction_bytes_read: u64,
    /// Bytes flushes and compactions wrote.
    pub compaction_bytes_written: u64,
    /// Seconds the background thread spent in flushes and compactions.
    pub compaction_seconds: f64,
    /// Compaction shards merged by helper threads (`Options::max_subcompactions`).
    pub compaction_helper_shards: u64,
    /// Writes delayed 1 ms because level 0 was filling.
    pub stall_slowdowns: u64,
    /// Writes that waited for a flush or for level 0 to drain.
    pub stall_stops: u64,
    /// Seconds writers spent delayed or waiting (both kinds above).
    pub stall_seconds: f64,
}

pub(super) fn counters(st: &super::state::State) -> Counters {
    let total = |f: fn(&super::state::LevelStats) -> u64| st.level_stats.iter().map(f).sum::<u64>();
    Counters {
        flushes: st.flushes,
        compactions: total(|l| l.count),
        table_moves: st.table_moves,
        compaction_bytes_read: total(|l| l.bytes_read),
        compaction_bytes_written: total(|l| l.bytes_written),
        compaction_seconds: total(|l| l.micros) as f64 / 1e6,
        compaction_helper_shards: st.helper_shards,
        stall_slowdowns: st.slowdowns,
        stall_stops: st.stops,
        stall_seconds: st.stall_micros as f64 / 1e6,
    }
}

/// A table the current version names (RocksDB's `LiveFileMetaData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveFile {
    /// Its level (0 to 6).
    pub level: usize,
    /// Its file number (`NNNNNN.ldb`).
    pub number: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its smallest and largest user keys.
    pub smallest: Vec<u8>,
    /// See `smallest`.
    pub largest: Vec<u8>,
    /// The sequence numbers of its smallest and largest internal keys.
    pub seqnums: (u64, u64),
}

/// The tables of the current version, level by level, each level in key order.
pub(super) fn live_files(db: &DbInner) -> Vec<LiveFile> {
    let v = db.lock().versions.current();
    let mut out = Vec::new();
    for (level, files) in v.levels.iter().enumerate() {
        for f in files {
            let seq = |k: &[u8]| ParsedInternalKey::parse(k).map_or(0, |p| p.seqnum);
            out.push(LiveFile {
                level,
                number: f.number,
                size: f.size,
                smallest: crate::key::user_key(&f.smallest).to_vec(),
                largest: crate::key::user_key(&f.largest).to_vec(),
                seqnums: (seq(&f.smallest), seq(&f.largest)),
            });
        }
    }
    out
}
