//! Every crash point (`docs/durability.md` C1-C4): seven small standard workloads, each
//! crashed after every mutating filesystem call it makes, in four damage modes; the
//! database must open and hold a prefix of the writes that contains every acknowledged
//! synced one. A recorded trace of each workload is audited for the order of operations
//! that durability depends on.
//!
//! `STRATA_POINTS_SEEDS` (default 1) repeats the sweep with that many damage seeds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::testing::{CrashEnv, Damage, Event};
use strata::{Db, Options, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
enum Step {
    Open,
    Close,
    /// Key number, value length, sync.
    Put(u32, usize, bool),
    Delete(u32, bool),
    Batch(Vec<u32>, bool),
    Compact,
    /// Arm the crash here (steps before it only build the starting state).
    Arm,
}

fn key(n: u32) -> Vec<u8> {
    format!("key{n:05}").into_bytes()
}

fn value(n: u32, len: usize) -> Vec<u8> {
    let mut v = format!("v{n}-").into_bytes();
    v.resize(len.max(v.len()), b'a' + (n % 26) as u8);
    v
}

thread_local! {
    /// Value separation for this thread's runs: the sweep and the audit run every
    /// workload with it off and then on (values of 8 bytes and more in blob files).
    static BLOB_THRESHOLD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Blob values stored compressed (in even seed rounds: the default single round
    /// compresses, `STRATA_POINTS_SEEDS` of 2 or more also runs raw blob values).
    static BLOB_COMPRESS: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

fn options(env: &CrashEnv) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 4 << 10,
        max_file_size: 4 << 10,
        block_size: 256,
        blob_threshold: BLOB_THRESHOLD.get(),
        // Blob values (compressible here) stored Snappy-compressed, or raw.
        blob_compression: BLOB_COMPRESS.get(),
        // With value separation on, two full memtables may wait for their flush.
        max_write_buffer_number: if BLOB_THRESHOLD.get() > 0 { 3 } else { 2 },
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

/// The workloads, each with value separation off and on.
fn both_modes() -> impl Iterator<Item = (usize, (&'static str, Vec<Step>))> {
    [0usize, 8]
        .into_iter()
        .flat_map(|t| workloads().into_iter().map(move |w| (t, w)))
}

/// The writes of a workload, in order, as (sync, effect) for the oracle.
/// A write for the oracle: synced, and its (key, value or deletion) effects.
type Write = (bool, Vec<(Vec<u8>, Option<Vec<u8>>)>);

fn writes(steps: &[Step]) -> Vec<Write> {
    steps
        .iter()
        .filter_map(|s| match s {
            Step::Put(k, len, sync) => Some((*sync, vec![(key(*k), Some(value(*k, *len)))])),
            Step::Delete(k, sync) => Some((*sync, vec![(key(*k), None)])),
            Step::Batch(ks, sync) => Some((
                *sync,
                ks.iter()
                    .map(|k| (key(*k), (k % 3 != 0).then(|| value(*k, 50))))
                    .collect(),
            )),
            _ => None,
        })
        .collect()
}

fn workloads() -> Vec<(&'static str, Vec<Step>)> {
    use Step::*;
    let mut out = Vec::new();
    out.push(("create", vec![Arm, Open, Put(1, 10, true), Close]));
    out.push((
        "sync/async mix",
        std::iter::once(Arm)
            .chain(std::iter::once(Open))
            .chain((0..30).map(|i| {
                if i % 7 == 6 {
                    Delete(i - 3, i % 2 == 0)
                } else {
                    Put(i, 40, i % 3 == 0)
                }
            }))
            .chain([Close])
            .collect(),
    ));
    out.push((
        "WAL switch",
        std::iter::once(Arm)
            .chain(std::iter::once(Open))
            .chain((0..90).map(|i| Put(i, 120, i % 10 == 9)))
            .chain([Close])
            .collect(),
    ));
    out.push((
        "flush",
        std::iter::once(Arm)
            .chain(std::iter::once(Open))
            .chain((0..20).map(|i| Put(i, 60, false)))
            .chain([Put(100, 10, true), Compact, Put(101, 10, true), Close])
            .collect(),
    ));
    out.push((
        "compaction with deletes",
        std::iter::once(Open)
            .chain((0..120).map(|i| Put(i, 80, false)))
            .chain([Put(999, 10, true), Compact, Arm])
            .chain((0..120).step_by(2).map(|i| Delete(i, false)))
            .chain([
                Batch(vec![1, 3, 5, 6], true),
                Compact,
                Put(1000, 10, true),
                Close,
            ])
            .collect(),
    ));
    out.push((
        "manifest rollover and CURRENT switch",
        vec![
            Open,
            Put(1, 10, true),
            Arm,
            Close,
            Open,
            Put(2, 10, true),
            Close,
            Open,
            Put(3, 10, false),
            Compact,
            Close,
            Open,
            Close,
        ],
    ));
    out.push((
        "crash during recovery",
        std::iter::once(Open)
            .chain((0..60).map(|i| Put(i, 100, i == 59)))
            .chain([Arm, Open, Put(500, 10, true), Close])
            .collect(),
    ));
    out
}

/// Runs `steps` on `env`, arming a crash after call `k` at the `Arm` step. The marker
/// holds the number of writes acknowledged so far.
fn run(env: &CrashEnv, steps: &[Step], arm: Option<(u64, Damage, u64)>) {
    let mut db: Option<Db> = None;
    let mut done = 0usize;
    let dir = Path::new("/db");
    for step in steps {
        env.set_marker(done.to_string());
        let wo = |sync: bool| WriteOptions { sync };
        match step {
            Step::Arm => {
                if let Some((k, damage, seed)) = arm {
                    env.crash_after(k, damage, seed);
                }
            }
            Step::Open => {
                drop(db.take());
                db = Some(Db::open(dir, options(env)).unwrap());
            }
            Step::Close => {
                if let Some(d) = db.take() {
                    d.close().unwrap();
                }
            }
            Step::Put(k, len, sync) => {
                db.as_ref()
                    .unwrap()
                    .put_opt(key(*k), value(*k, *len), &wo(*sync))
                    .unwrap();
                done += 1;
                if *sync {
                    env.mark(format!("ack sync {done}"));
                }
            }
            Step::Delete(k, sync) => {
                db.as_ref()
                    .unwrap()
                    .delete_opt(key(*k), &wo(*sync))
                    .unwrap();
                done += 1;
                if *sync {
                    env.mark(format!("ack sync {done}"));
                }
            }
            Step::Batch(ks, sync) => {
                let mut b = WriteBatch::new();
                for k in ks {
                    if k % 3 != 0 {
                        b.put(key(*k), value(*k, 50));
                    } else {
                        b.delete(key(*k));
                    }
                }
                db.as_ref().unwrap().write_opt(b, &wo(*sync)).unwrap();
                done += 1;
                if *sync {
                    env.mark(format!("ack sync {done}"));
                }
            }
            Step::Compact => db.as_ref().unwrap().compact_range(None, None).unwrap(),
        }
    }
    env.set_marker(done.to_string());
    drop(db);
}

fn check(name: &str, steps: &[Step], crashed: &CrashEnv, acked: usize, damage: Damage, ctx: &str) {
    let all = writes(steps);
    let db = Db::open(Path::new("/db"), options(crashed))
        .unwrap_or_else(|e| panic!("{name} {ctx}: did not open after the crash: {e}"));
    let got: Model = db.range::<&[u8]>(..).map(|r| r.unwrap()).collect();
    drop(db);
    let lo = if damage.keeps_unsynced() {
        acked
    } else {
        all[..acked].iter().rposition(|w| w.0).map_or(0, |i| i + 1)
    };
    let hi = (acked + 1).min(all.len());
    let mut m = Model::new();
    for p in 0..=hi {
        if p >= lo && m == got {
            return;
        }
        if p < all.len() {
            for (k, v) in &all[p].1 {
                match v {
                    Some(v) => m.insert(k.clone(), v.clone()),
                    None => m.remove(k),
                };
            }
        }
    }
    panic!(
        "{name} {ctx}: recovered {} keys, not the state after {lo}..={hi} of the writes",
        got.len()
    );
}

#[test]
fn every_crash_point_of_the_standard_workloads() {
    let damages = [
        Damage::DropAll,
        Damage::TornPrefix,
        Damage::Zeros,
        Damage::Garbage,
    ];
    let seeds = common::env_u64("STRATA_POINTS_SEEDS", 1);
    let mut total = 0u64;
    for (round, (threshold, (name, steps))) in
        (0..seeds).flat_map(|r| both_modes().map(move |w| (r, w)))
    {
        BLOB_THRESHOLD.set(threshold);
        BLOB_COMPRESS.set(round % 2 == 0);
        let mut points = 0u64;
        for k in 1.. {
            let mut taken_any = false;
            for (d, damage) in damages.iter().enumerate() {
                let env = CrashEnv::new();
                let seed = (round << 32) + k * 4 + d as u64;
                run(&env, &steps, Some((k, *damage, seed)));
                let Some((crashed, marker)) = env.take_crashed() else {
                    continue;
                };
                taken_any = true;
                let acked = marker.parse().unwrap_or(0);
                check(
                    name,
                    &steps,
                    &crashed,
                    acked,
                    *damage,
                    &format!("crash after call {k} ({damage:?}, seed {seed})"),
                );
                total += 1;
            }
            if !taken_any {
                break;
            }
            points = k;
        }
        assert!(points > 3, "{name}: only {points} crash points");
        println!(
            "{name} (blob threshold {threshold}, compressed {}): {points} crash points x {} \
             damage modes",
            BLOB_COMPRESS.get(),
            damages.len()
        );
    }
    println!("{total} crashes checked");
}

/// The order of operations durability rests on, checked on recorded traces.
#[test]
fn the_order_of_operations_is_safe() {
    for (threshold, (name, steps)) in both_modes() {
        BLOB_THRESHOLD.set(threshold);
        let env = CrashEnv::new();
        env.record(true);
        run(&env, &steps, None);
        let trace = env.trace();
        audit(name, &trace);
    }
}

fn is(p: &Path, suffix: &str) -> bool {
    p.to_string_lossy().ends_with(suffix)
}

/// The rules, in the order of the trace:
/// - a synced write is acknowledged only when no log has unsynced bytes: its own log, and
///   every older log it depends on (removing the old log's sync at a memtable switch would
///   put a synced write after a torn tail, which recovery must drop);
/// - a synced write is acknowledged only when every log made so far has its directory
///   entry synced (C1: a log's entry is synced when it is made, before it is used);
/// - a manifest edit names only tables that are synced with their directory entries;
/// - `CURRENT` is renamed into place only from a synced temp file, and no old manifest is
///   removed before that rename is made durable.
fn audit(name: &str, trace: &[Event]) {
    // Logs with appended bytes not yet synced (a removed log no longer counts: what it
    // held is in a synced table by then).
    let mut unsynced_logs: std::collections::BTreeSet<PathBuf> = Default::default();
    // Logs created since the last directory sync.
    let mut undirsynced_logs: std::collections::BTreeSet<PathBuf> = Default::default();
    // Tables: created, appended, synced, dir-synced since creation.
    let mut tables: BTreeMap<PathBuf, (bool, bool)> = BTreeMap::new();
    let mut synced_temps: Vec<PathBuf> = Vec::new();
    let mut current_renamed_unsynced = false;
    for (i, e) in trace.iter().enumerate() {
        let at = format!("{name}: event {i} {e:?}");
        match e {
            Event::Append(p, _) if is(p, ".log") => {
                unsynced_logs.insert(p.clone());
            }
            Event::Sync(p) | Event::Remove(p) if is(p, ".log") => {
                unsynced_logs.remove(p);
                if matches!(e, Event::Remove(_)) {
                    undirsynced_logs.remove(p);
                }
            }
            Event::Mark(m) if m.starts_with("ack sync") => {
                assert!(
                    unsynced_logs.is_empty(),
                    "{at}: a synced write was acknowledged while {unsynced_logs:?} had unsynced \
                     bytes (its own log, or an older one it depends on)"
                );
                assert!(
                    undirsynced_logs.is_empty(),
                    "{at}: a synced write was acknowledged while the directory entry of \
                     {undirsynced_logs:?} was not synced"
                );
            }
            Event::Create(p) if is(p, ".log") => {
                undirsynced_logs.insert(p.clone());
            }
            Event::Create(p) if is(p, ".ldb") => {
                tables.insert(p.clone(), (false, false));
            }
            Event::Append(p, _) if is(p, ".ldb") => {
                if let Some(t) = tables.get_mut(p) {
                    t.0 = false;
                }
            }
            Event::Sync(p) if is(p, ".ldb") => {
                if let Some(t) = tables.get_mut(p) {
                    t.0 = true;
                }
            }
            Event::SyncDir(_) => {
                for t in tables.values_mut() {
                    t.1 = true;
                }
                undirsynced_logs.clear();
                current_renamed_unsynced = false;
            }
            Event::Append(p, _) if p.to_string_lossy().contains("MANIFEST") => {
                // Every finished table must be synced, with its name, before a manifest
                // edit can name it; an unfinished one (no sync yet) is still being built.
                for (t, (synced, dir_synced)) in &tables {
                    if *synced {
                        assert!(
                            *dir_synced,
                            "{at}: manifest written before the directory entry of {t:?} was synced"
                        );
                    }
                }
            }
            Event::Sync(p) if is(p, ".dbtmp") => synced_temps.push(p.clone()),
            Event::Rename(from, to) if is(to, "CURRENT") => {
                assert!(
                    synced_temps.contains(from),
                    "{at}: CURRENT renamed into place from an unsynced temp file"
                );
                current_renamed_unsynced = true;
            }
            Event::Remove(p) if p.to_string_lossy().contains("MANIFEST") => {
                assert!(
                    !current_renamed_unsynced,
                    "{at}: an old manifest deleted before the CURRENT switch was made durable"
                );
            }
            _ => {}
        }
    }
}
