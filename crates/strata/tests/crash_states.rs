//! Crashes below the file system, in the manner of ALICE (Pillai et al., OSDI '14): a
//! workload runs once on a [`RecordingEnv`] that logs every create, append, sync, rename,
//! delete and directory sync the engine makes, with the bytes, and every acknowledgement
//! of a write. A replayer then builds, at each point of that log, crash states a POSIX file
//! system allows, and opens the database on each:
//!
//! - bytes a file sync covered are kept;
//! - appends since a file's last sync survive in any combination, in any order (a later
//!   append kept while an earlier one is lost leaves a hole of zeros), and a kept append
//!   may be torn at a 512-byte sector boundary of the file;
//! - creations, renames and deletions since the directory's last sync are lost from
//!   some point on (the file system commits them in order, as a journal does);
//! - a file's sync makes its bytes durable, not its name.
//!
//! Each recovered database must open and hold the state after some prefix of the
//! workload's operations that contains every operation acknowledged as synced before the
//! crash point (and no operation not yet issued): never a hole, a half batch or a wrong
//! value. A test with an engine bug planted in the file system (a directory sync that does
//! nothing; a sync of an older log that does nothing, as if the write path skipped W4)
//! shows the explorer finds it.
//!
//! Sizes: `STRATA_STATES_RUNS` workloads (default 6), `STRATA_STATES_OPS` operations each
//! (default 100), `STRATA_STATES_PER_POINT` states at most per crash point (default 12),
//! `STRATA_STATES_SEED`. `make soak` runs it larger; `docs/reliability.md` has the counts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::ops::{Model, Op, check_prefix};
use common::{Rng, env_u64};
use strata::env::{Env, FileLock, MemEnv, RandomAccessFile, SequentialFile, WritableFile};
use strata::{Db, Options};

/// Sector size: a write is torn at these boundaries of its file.
const SECTOR: u64 = 512;

/// One recorded call (or acknowledgement).
#[derive(Debug, Clone)]
enum Rec {
    /// `path` names a new, empty file (`ino`).
    Create {
        path: PathBuf,
        ino: usize,
    },
    /// `data` written at `offset` of file `ino`.
    Append {
        ino: usize,
        offset: u64,
        data: Vec<u8>,
    },
    /// File `ino` synced.
    Sync {
        ino: usize,
    },
    /// The directory synced: its names as they are now are durable.
    SyncDir,
    Rename {
        from: PathBuf,
        to: PathBuf,
    },
    Remove {
        path: PathBuf,
    },
    /// Workload operation `op` returned.
    Ack {
        op: usize,
    },
}

/// Engine bugs planted in the file system, for the test that the explorer catches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plant {
    None,
    /// `sync_dir` does nothing.
    NoDirSync,
    /// A sync of a log older than the newest does nothing (the write path's W4 skipped).
    NoOlderLogSync,
}

#[derive(Debug, Default)]
struct Log {
    recs: Vec<Rec>,
    names: HashMap<PathBuf, usize>,
    sizes: Vec<u64>,
    /// The number of the newest log file created.
    newest_log: u64,
}

/// An in-memory file system that records what it is asked to do.
#[derive(Clone, Debug)]
struct RecordingEnv {
    mem: Arc<MemEnv>,
    log: Arc<Mutex<Log>>,
    plant: Plant,
}

impl RecordingEnv {
    fn new(plant: Plant) -> Self {
        RecordingEnv {
            mem: Arc::new(MemEnv::new()),
            log: Arc::new(Mutex::new(Log::default())),
            plant,
        }
    }

    fn push(&self, r: Rec) {
        self.log.lock().unwrap().recs.push(r);
    }

    fn ack(&self, op: usize) {
        self.push(Rec::Ack { op });
    }

    fn recs(&self) -> Vec<Rec> {
        self.log.lock().unwrap().recs.clone()
    }
}

fn log_number(path: &Path) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    name.strip_suffix(".log")?.parse().ok()
}

struct RecordingFile {
    inner: Box<dyn WritableFile>,
    env: RecordingEnv,
    ino: usize,
    log: Option<u64>,
}

impl std::fmt::Debug for RecordingFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordingFile")
            .field("ino", &self.ino)
            .finish()
    }
}

impl WritableFile for RecordingFile {
    fn append(&mut self, data: &[u8]) -> strata::Result<()> {
        self.inner.append(data)?;
        let mut log = self.env.log.lock().unwrap();
        let offset = log.sizes[self.ino];
        log.sizes[self.ino] += data.len() as u64;
        log.recs.push(Rec::Append {
            ino: self.ino,
            offset,
            data: data.to_vec(),
        });
        Ok(())
    }
    fn flush(&mut self) -> strata::Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> strata::Result<()> {
        self.inner.sync()?;
        if self.env.plant == Plant::NoOlderLogSync
            && let Some(n) = self.log
            && n < self.env.log.lock().unwrap().newest_log
        {
            return Ok(());
        }
        self.env.push(Rec::Sync { ino: self.ino });
        Ok(())
    }
}

impl Env for RecordingEnv {
    fn new_sequential(&self, path: &Path) -> strata::Result<Box<dyn SequentialFile>> {
        self.mem.new_sequential(path)
    }
    fn new_random_access(&self, path: &Path) -> strata::Result<Arc<dyn RandomAccessFile>> {
        self.mem.new_random_access(path)
    }
    fn new_writable(&self, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        let inner = self.mem.new_writable(path)?;
        let mut log = self.log.lock().unwrap();
        let ino = log.sizes.len();
        log.sizes.push(0);
        log.names.insert(path.to_path_buf(), ino);
        let number = log_number(path);
        if let Some(n) = number {
            log.newest_log = log.newest_log.max(n);
        }
        log.recs.push(Rec::Create {
            path: path.to_path_buf(),
            ino,
        });
        Ok(Box::new(RecordingFile {
            inner,
            env: self.clone(),
            ino,
            log: number,
        }))
    }
    fn new_appendable(&self, path: &Path) -> strata::Result<Box<dyn WritableFile>> {
        let existing = self.log.lock().unwrap().names.get(path).copied();
        match existing {
            Some(ino) => Ok(Box::new(RecordingFile {
                inner: self.mem.new_appendable(path)?,
                env: self.clone(),
                ino,
                log: log_number(path),
            })),
            None => self.new_writable(path),
        }
    }
    fn exists(&self, path: &Path) -> bool {
        self.mem.exists(path)
    }
    fn children(&self, dir: &Path) -> strata::Result<Vec<String>> {
        self.mem.children(dir)
    }
    fn file_size(&self, path: &Path) -> strata::Result<u64> {
        self.mem.file_size(path)
    }
    fn punch_holes(&self, path: &Path, ranges: &[(u64, u64)]) -> strata::Result<u64> {
        // Punched in the live files (a read of a punched live value then fails the
        // workload), not logged: a crash state that kept the old bytes is one the file
        // system allows, and the engine never reads what it punched.
        self.mem.punch_holes(path, ranges)
    }
    fn remove_file(&self, path: &Path) -> strata::Result<()> {
        self.mem.remove_file(path)?;
        let mut log = self.log.lock().unwrap();
        log.names.remove(path);
        log.recs.push(Rec::Remove {
            path: path.to_path_buf(),
        });
        Ok(())
    }
    fn create_dir_all(&self, dir: &Path) -> strata::Result<()> {
        self.mem.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> strata::Result<()> {
        self.mem.remove_dir(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> strata::Result<()> {
        self.mem.rename(from, to)?;
        let mut log = self.log.lock().unwrap();
        if let Some(ino) = log.names.remove(from) {
            log.names.insert(to.to_path_buf(), ino);
        }
        log.recs.push(Rec::Rename {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
        });
        Ok(())
    }
    fn sync_dir(&self, dir: &Path) -> strata::Result<()> {
        self.mem.sync_dir(dir)?;
        if self.plant != Plant::NoDirSync {
            self.push(Rec::SyncDir);
        }
        Ok(())
    }
    fn lock_file(&self, path: &Path) -> strata::Result<Box<dyn FileLock>> {
        self.mem.lock_file(path)
    }
}

/// What survives of one unsynced append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Lost,
    Kept,
    /// Kept up to its last sector boundary inside it.
    Torn,
}

/// The file system's state at a point of the log, before the crash chooses.
struct Point {
    /// Per file: the bytes its last sync covered.
    durable: Vec<Vec<u8>>,
    /// Appends since each file's last sync: (file, offset, data), in order.
    pending: Vec<(usize, u64, Vec<u8>)>,
    /// Names as of the directory's last sync.
    durable_names: BTreeMap<PathBuf, usize>,
    /// Creations, renames and deletions since then, in order.
    dir_ops: Vec<Rec>,
    /// Workload operations acknowledged before this point.
    acked: usize,
}

fn point(recs: &[Rec], k: usize) -> Point {
    let mut p = Point {
        durable: Vec::new(),
        pending: Vec::new(),
        durable_names: BTreeMap::new(),
        dir_ops: Vec::new(),
        acked: 0,
    };
    let mut names: BTreeMap<PathBuf, usize> = BTreeMap::new();
    for r in &recs[..k] {
        match r {
            Rec::Create { ino, .. } => {
                if p.durable.len() <= *ino {
                    p.durable.resize(ino + 1, Vec::new());
                }
                apply_dir_op(&mut names, r);
                p.dir_ops.push(r.clone());
            }
            Rec::Append { ino, offset, data } => p.pending.push((*ino, *offset, data.clone())),
            Rec::Sync { ino } => {
                let (mine, rest): (Vec<_>, Vec<_>) =
                    p.pending.drain(..).partition(|(i, _, _)| i == ino);
                p.pending = rest;
                for (_, offset, data) in mine {
                    write_at(&mut p.durable[*ino], offset, &data);
                }
            }
            Rec::SyncDir => {
                p.durable_names = names.clone();
                p.dir_ops.clear();
            }
            Rec::Rename { .. } | Rec::Remove { .. } => {
                apply_dir_op(&mut names, r);
                p.dir_ops.push(r.clone());
            }
            Rec::Ack { op } => p.acked = p.acked.max(op + 1),
        }
    }
    p
}

/// What a creation, rename or deletion does to the directory's names (nothing, for any
/// other record).
fn apply_dir_op(names: &mut BTreeMap<PathBuf, usize>, op: &Rec) {
    match op {
        Rec::Create { path, ino } => {
            names.insert(path.clone(), *ino);
        }
        Rec::Rename { from, to } => {
            if let Some(ino) = names.remove(from) {
                names.insert(to.clone(), ino);
            }
        }
        Rec::Remove { path } => {
            names.remove(path);
        }
        _ => {}
    }
}

fn write_at(file: &mut Vec<u8>, offset: u64, data: &[u8]) {
    let end = offset as usize + data.len();
    if file.len() < end {
        file.resize(end, 0);
    }
    file[offset as usize..end].copy_from_slice(data);
}

/// The bytes of `data` written at `offset` that a tear at a sector boundary keeps.
fn torn_len(offset: u64, len: usize) -> usize {
    let end = offset + len as u64;
    let boundary = end / SECTOR * SECTOR;
    if boundary > offset {
        (boundary - offset) as usize
    } else {
        0
    }
}

/// The crash state for `fates` of the pending appends and the first `dir_kept` directory
/// operations, as a fresh in-memory file system.
fn build(p: &Point, fates: &[Fate], dir_kept: usize) -> MemEnv {
    let mut files = p.durable.clone();
    for ((ino, offset, data), fate) in p.pending.iter().zip(fates) {
        let n = match fate {
            Fate::Lost => 0,
            Fate::Kept => data.len(),
            Fate::Torn => torn_len(*offset, data.len()),
        };
        if n > 0 {
            write_at(&mut files[*ino], *offset, &data[..n]);
        }
    }
    let mut names = p.durable_names.clone();
    for op in &p.dir_ops[..dir_kept] {
        apply_dir_op(&mut names, op);
    }
    let env = MemEnv::new();
    env.create_dir_all(Path::new("/db")).unwrap();
    for (path, ino) in names {
        env.set_contents(&path, files[ino].clone());
    }
    env
}

/// The states explored at one point: every combination when there are few, else the
/// structured ones (all kept, none kept, each append alone lost, each torn, each prefix)
/// and random ones, up to `budget`.
fn choices(p: &Point, rng: &mut Rng, budget: usize) -> Vec<(Vec<Fate>, usize)> {
    let n = p.pending.len();
    let dirs = p.dir_ops.len();
    let mut out = Vec::new();
    let all = |f: Fate| vec![f; n];
    // Directory operations: all kept, none, and one random cut.
    let dir_cut = |rng: &mut Rng| rng.below(dirs as u64 + 1) as usize;
    out.push((all(Fate::Kept), dirs));
    out.push((all(Fate::Lost), 0));
    out.push((all(Fate::Kept), 0));
    out.push((all(Fate::Lost), dirs));
    if n <= 3 {
        let mut fates = vec![Fate::Lost; n];
        loop {
            out.push((fates.clone(), dir_cut(rng)));
            // The next combination in base 3.
            let mut i = 0;
            while i < n {
                fates[i] = match fates[i] {
                    Fate::Lost => Fate::Kept,
                    Fate::Kept => Fate::Torn,
                    Fate::Torn => Fate::Lost,
                };
                if fates[i] != Fate::Lost {
                    break;
                }
                i += 1;
            }
            if i == n {
                break;
            }
        }
    } else {
        for i in 0..n {
            let mut f = all(Fate::Kept);
            f[i] = Fate::Lost;
            out.push((f, dirs));
            let mut f = all(Fate::Kept);
            f[i] = Fate::Torn;
            for later in f.iter_mut().skip(i + 1) {
                *later = Fate::Lost;
            }
            out.push((f, dir_cut(rng)));
        }
        while out.len() < budget * 2 {
            let f = (0..n)
                .map(|_| match rng.below(3) {
                    0 => Fate::Lost,
                    1 => Fate::Kept,
                    _ => Fate::Torn,
                })
                .collect();
            out.push((f, dir_cut(rng)));
        }
    }
    // Keep the structured ones first, then a random selection of the rest.
    if out.len() > budget {
        let head = out.drain(..4).collect::<Vec<_>>();
        let mut rest = out;
        for i in (1..rest.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            rest.swap(i, j);
        }
        rest.truncate(budget.saturating_sub(4));
        out = head.into_iter().chain(rest).collect();
    }
    out
}

fn random_op(rng: &mut Rng) -> Op {
    let key = |rng: &mut Rng| format!("k{:03}", rng.below(80)).into_bytes();
    let value = |rng: &mut Rng| {
        let n = [10, 150, 700][rng.below(3) as usize] + rng.below(50) as usize;
        rng.compressible(n)
    };
    let sync = rng.below(3) == 0;
    match rng.below(22) {
        0..=11 => Op::Put(key(rng), value(rng), sync),
        12..=14 => Op::Delete(key(rng), sync),
        15..=18 => {
            let n = 1 + rng.below(5);
            let ops = (0..n)
                .map(|_| (key(rng), (rng.below(4) != 0).then(|| value(rng))))
                .collect();
            Op::Batch(ops, sync)
        }
        19 => {
            let start = rng.below(80);
            let k = |i: u64| format!("k{i:03}").into_bytes();
            Op::DeleteRange(k(start), k(start + rng.below(10)), sync)
        }
        20 => Op::FlushWal(rng.below(2) == 0),
        _ => Op::Compact,
    }
}

fn options(env: Arc<dyn Env>, blobs: bool) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 4 << 10,
        max_file_size: 4 << 10,
        block_size: 256,
        blob_threshold: if blobs { 128 } else { 0 },
        env,
        ..Options::default()
    }
}

#[derive(Debug, Default)]
struct Explored {
    points: usize,
    states: usize,
    /// States whose recovered database holds an operation not acknowledged yet.
    in_flight_kept: usize,
}

/// Runs one workload on a recording file system, then explores its crash states.
/// `Err` names the first state whose recovery broke a promise.
fn explore(seed: u64, ops_n: usize, per_point: usize, plant: Plant) -> Result<Explored, String> {
    let mut rng = Rng::new(seed);
    let blobs = rng.below(2) == 0;
    let ops: Vec<Op> = (0..ops_n).map(|_| random_op(&mut rng)).collect();
    let env = RecordingEnv::new(plant);
    {
        let db = Db::open("/db", options(Arc::new(env.clone()), blobs))
            .map_err(|e| format!("open: {e}"))?;
        for (i, op) in ops.iter().enumerate() {
            op.run(&db).map_err(|e| format!("op {i}: {e}"))?;
            env.ack(i);
        }
    }
    let recs = env.recs();
    let mut out = Explored::default();
    // Crash points: after every call that changes what is durable or named, and after a
    // sample of the appends.
    let points: Vec<usize> = (0..=recs.len())
        .filter(|&k| {
            k == recs.len()
                || matches!(
                    recs[k],
                    Rec::Sync { .. } | Rec::SyncDir | Rec::Rename { .. } | Rec::Ack { .. }
                )
                || rng.below(4) == 0
        })
        .collect();
    for k in points {
        let p = point(&recs, k);
        out.points += 1;
        // Every operation up to the last acknowledged synced one must be there.
        let lo = ops[..p.acked]
            .iter()
            .rposition(Op::sync)
            .map_or(0, |i| i + 1);
        let hi = (p.acked + 1).min(ops.len());
        for (fates, dir_kept) in choices(&p, &mut rng, per_point) {
            out.states += 1;
            let state = Arc::new(build(&p, &fates, dir_kept));
            let ctx = || {
                format!(
                    "seed {seed} (blobs {blobs}), crash after call {k} of {}: {} of {} \
                     operations acknowledged, {} unsynced appends {fates:?}, {dir_kept} of {} \
                     directory operations kept",
                    recs.len(),
                    p.acked,
                    ops.len(),
                    p.pending.len(),
                    p.dir_ops.len()
                )
            };
            let db = Db::open("/db", options(state, blobs))
                .map_err(|e| format!("{}: the database did not open: {e}", ctx()))?;
            let mut got = Model::new();
            for r in db.range::<&[u8]>(..) {
                let (key, value) = r.map_err(|e| format!("{}: a read failed: {e}", ctx()))?;
                got.insert(key, value);
            }
            match check_prefix(&Model::new(), &ops, lo, hi, &got) {
                Some(n) if n > p.acked => out.in_flight_kept += 1,
                Some(_) => {}
                None => {
                    return Err(format!(
                        "{}: the recovered state ({} keys) is not the state after {lo} to {hi} \
                         operations",
                        ctx(),
                        got.len()
                    ));
                }
            }
        }
    }
    Ok(out)
}

/// Explores the first or the second half of the `STRATA_STATES_RUNS` workloads (two tests,
/// so the halves run side by side).
fn explore_half(half: u64) {
    let runs = env_u64("STRATA_STATES_RUNS", 6);
    let ops = env_u64("STRATA_STATES_OPS", 100) as usize;
    let per_point = env_u64("STRATA_STATES_PER_POINT", 12) as usize;
    let seed = env_u64("STRATA_STATES_SEED", 0xa11ce);
    let (from, to) = if half == 0 {
        (0, runs / 2)
    } else {
        (runs / 2, runs)
    };
    let mut total = Explored::default();
    for run in from..to {
        let e = explore(seed + run, ops, per_point, Plant::None).unwrap_or_else(|e| panic!("{e}"));
        total.points += e.points;
        total.states += e.states;
        total.in_flight_kept += e.in_flight_kept;
    }
    println!(
        "workloads {from}..{to} of {ops} operations (seed {seed}): {} crash points, {} crash \
         states recovered, {} kept an operation in flight",
        total.points, total.states, total.in_flight_kept
    );
    assert!(total.states > 100, "{total:?}");
}

#[test]
fn every_crash_state_recovers_a_prefix_with_every_synced_write() {
    explore_half(0);
}

#[test]
fn every_crash_state_of_more_workloads_recovers_a_prefix_with_every_synced_write() {
    explore_half(1);
}

/// The explorer finds a planted bug within a few workloads.
fn finds(plant: Plant) -> String {
    for seed in 0..8 {
        if let Err(e) = explore(seed, 60, 12, plant) {
            return e;
        }
    }
    panic!("no crash state showed the planted bug {plant:?}");
}

#[test]
fn a_missing_directory_sync_is_caught() {
    let e = finds(Plant::NoDirSync);
    println!("{e}");
}

#[test]
fn a_skipped_sync_of_an_older_log_is_caught() {
    let e = finds(Plant::NoOlderLogSync);
    println!("{e}");
}

#[test]
fn a_tear_keeps_whole_sectors_only() {
    assert_eq!(torn_len(0, 100), 0);
    assert_eq!(torn_len(0, 1024), 1024);
    assert_eq!(torn_len(500, 600), 524);
    assert_eq!(torn_len(512, 511), 0);
}
