//! The state machine's directory: its live database, its kept snapshot, and snapshots
//! on their way in. Every file call goes through the engine's filesystem (`strata::env`),
//! so the power-cut tests cover these too.
//!
//! ```text
//! STATE              the live database's number, as decimal text (replaced by rename)
//! db-<n>/            a state-machine database; the live one is STATE's
//! snapshot-<n>/      a checkpoint of a state-machine database (`Db::checkpoint`), with
//!                    snapshot.json, its openraft metadata, written last
//! incoming-<n>       a snapshot archive being received (`archive.rs`)
//! ```
//!
//! Numbers are never reused within an open, and an open starts past every number it finds.
//!
//! Invariants:
//! - SD1 A `snapshot-<n>` is complete once its `snapshot.json` exists: the checkpoint's
//!   files are synced before it is written (a temporary file renamed, the directory
//!   synced), and a received one's only after a database made from it opened. The kept
//!   snapshot is the complete one that covers the most of the log; an older one never
//!   replaces it (`keep`).
//! - SD2 `STATE` names a database only once it is complete and synced: a new live
//!   database (a snapshot installed, or restored at open) is written beside the old one,
//!   then `STATE` is replaced, then the old one is removed (after an install, on a thread
//!   of its own once no reader holds it; at open, at once). A crash leaves the old live
//!   database or the new one, never a mix.
//! - SD3 The state machine's writes are not synced (RS1), so after a power cut the live
//!   database may have applied less than the kept snapshot covers, and the log before the
//!   kept snapshot may be purged. An open then restores the live database from the kept
//!   snapshot (which is synced, SD1), so what the state machine has applied is never
//!   behind the log's purge point.
//! - SD4 Anything else an open finds (databases `STATE` does not name, incomplete or
//!   older snapshots, archives half received) is left over from a crash and is removed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use openraft::{BasicNode, SnapshotMeta};
use strata::env::Env;
use strata::{Db, Error, Options, Result};

use crate::archive::{self, ArchiveReader, DirHold, remove_tree};
use crate::snapshot_data::SnapshotArchive;

/// A snapshot's metadata, as openraft gives it.
pub(crate) type Meta = SnapshotMeta<u64, BasicNode>;

/// The metadata file of a complete snapshot (SD1).
const META: &str = "snapshot.json";
const META_TMP: &str = "snapshot.json.tmp";
const STATE: &str = "STATE";
const STATE_TMP: &str = "STATE.tmp";

/// How long a replaced database waits for the readers still holding it before it is
/// left for the next open to remove.
const RETIRE_WAIT: Duration = Duration::from_secs(10);

/// The live database and its number.
#[derive(Debug)]
struct Live {
    number: u64,
    db: Arc<Db>,
}

/// The kept snapshot.
#[derive(Debug, Clone)]
pub(crate) struct Kept {
    pub number: u64,
    pub meta: Meta,
    /// Its directory, held: retired when a newer snapshot is kept.
    hold: Arc<DirHold>,
}

/// A state machine's directory (see the module documentation).
#[derive(Debug)]
pub(crate) struct StateDir {
    env: Arc<dyn Env>,
    root: PathBuf,
    options: Options,
    live: RwLock<Live>,
    kept: Mutex<Option<Kept>>,
    next: AtomicU64,
    /// Held while an entry is applied, and while a snapshot's checkpoint and its
    /// metadata are taken, so the two agree.
    apply: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What kind of entry a name in the directory is, and its number.
fn parse(name: &str) -> Option<(&str, u64)> {
    let (kind, n) = name.split_once('-')?;
    if !matches!(kind, "db" | "snapshot" | "incoming") || n.is_empty() {
        return None;
    }
    n.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| n.parse().ok())
        .flatten()
        .map(|n| (kind, n))
}

/// The whole of a small file.
fn read_file(env: &dyn Env, path: &Path) -> Result<Vec<u8>> {
    let mut f = env.new_sequential(path)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Replaces `dir/name` with `data`, durably: a temporary file synced, renamed over it,
/// the directory synced.
fn replace_file(env: &dyn Env, dir: &Path, name: &str, tmp: &str, data: &[u8]) -> Result<()> {
    let t = dir.join(tmp);
    let mut f = env.new_writable(&t)?;
    f.append(data)?;
    f.flush()?;
    f.sync()?;
    drop(f);
    env.rename(&t, &dir.join(name))?;
    env.sync_dir(dir)
}

/// The kept snapshot among the complete ones in `root` (SD1), and the first number past
/// every number there.
fn find_kept(env: &Arc<dyn Env>, root: &Path) -> Result<(Option<Kept>, u64)> {
    let mut next = 1;
    let mut kept: Option<Kept> = None;
    for name in env.children(root)? {
        let Some((kind, n)) = parse(&name) else {
            continue;
        };
        next = next.max(n + 1);
        let meta_path = root.join(&name).join(META);
        if kind != "snapshot" || !env.exists(&meta_path) {
            continue;
        }
        let meta: Meta =
            serde_json::from_slice(&read_file(env.as_ref(), &meta_path)?).map_err(|e| {
                Error::corruption(
                    meta_path.display().to_string(),
                    0,
                    format!("a snapshot's metadata does not decode: {e}"),
                )
            })?;
        let newer = kept
            .as_ref()
            .is_none_or(|k| (&meta.last_log_id, n) > (&k.meta.last_log_id, k.number));
        if newer {
            kept = Some(Kept {
                number: n,
                meta,
                hold: DirHold::new(Arc::clone(env), root.join(&name)),
            });
        }
    }
    Ok((kept, next))
}

/// Opens state-machine database `number` in `root`.
fn open_db(root: &Path, number: u64, create: bool, options: &Options) -> Result<Db> {
    Db::open(
        root.join(format!("db-{number}")),
        Options {
            create_if_missing: create,
            ..options.clone()
        },
    )
}

/// Makes `STATE` name database `number` (SD2).
fn write_state(env: &dyn Env, root: &Path, number: u64) -> Result<()> {
    replace_file(
        env,
        root,
        STATE,
        STATE_TMP,
        format!("{number}\n").as_bytes(),
    )
}

/// Whether a file of a database never changes once written (a table or a blob file): a
/// copy of a snapshot may share it by a hard link.
fn immutable(name: &str) -> bool {
    name.ends_with(".ldb") || name.ends_with(".sst") || name.ends_with(".blob")
}

/// Whether a file of a snapshot directory travels in its archive (not its metadata).
fn in_archive(name: &str) -> bool {
    name != META && name != META_TMP
}

impl StateDir {
    /// Opens the directory `root` (creating it): the live database `STATE` names (a new
    /// one if there is none) and the kept snapshot. The caller then restores the live
    /// database if it is behind the kept snapshot (SD3) and removes the rest (`tidy`).
    pub fn open(root: &Path, options: Options) -> Result<StateDir> {
        let env = Arc::clone(&options.env);
        env.create_dir_all(root)?;
        if let Some(parent) = root.parent().filter(|p| !p.as_os_str().is_empty()) {
            env.sync_dir(parent)?;
        }
        let (kept, mut next) = find_kept(&env, root)?;
        let state = root.join(STATE);
        let live = if env.exists(&state) {
            let text = read_file(env.as_ref(), &state)?;
            let number = std::str::from_utf8(&text)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .ok_or_else(|| {
                    Error::corruption(
                        state.display().to_string(),
                        0,
                        "STATE does not hold a database number",
                    )
                })?;
            Live {
                number,
                db: Arc::new(open_db(root, number, false, &options)?),
            }
        } else {
            let number = next;
            next += 1;
            let db = open_db(root, number, true, &options)?;
            env.sync_dir(root)?;
            write_state(env.as_ref(), root, number)?;
            Live {
                number,
                db: Arc::new(db),
            }
        };
        Ok(StateDir {
            env,
            root: root.to_path_buf(),
            options,
            live: RwLock::new(live),
            kept: Mutex::new(kept),
            next: AtomicU64::new(next),
            apply: Mutex::new(()),
        })
    }

    /// The live database.
    pub fn db(&self) -> Arc<Db> {
        let live = self.live.read().unwrap_or_else(|p| p.into_inner());
        Arc::clone(&live.db)
    }

    /// Held while an entry is applied or a snapshot taken.
    pub fn apply_lock(&self) -> MutexGuard<'_, ()> {
        lock(&self.apply)
    }

    /// The kept snapshot.
    pub fn kept(&self) -> Option<Kept> {
        lock(&self.kept).clone()
    }

    fn number(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    fn snapshot_dir(&self, n: u64) -> PathBuf {
        self.root.join(format!("snapshot-{n}"))
    }

    /// A checkpoint of `db` as a new snapshot directory, not complete yet: its number.
    pub fn checkpoint(&self, db: &Db) -> Result<u64> {
        let n = self.number();
        db.checkpoint(self.snapshot_dir(n))?;
        self.env.sync_dir(&self.root)?;
        Ok(n)
    }

    /// Completes snapshot `n` with its metadata (SD1).
    pub fn complete(&self, n: u64, meta: &Meta) -> Result<()> {
        let bytes = serde_json::to_vec(meta)
            .map_err(|e| Error::InvalidArgument(format!("a snapshot's metadata: {e}")))?;
        replace_file(
            self.env.as_ref(),
            &self.snapshot_dir(n),
            META,
            META_TMP,
            &bytes,
        )
    }

    /// A hold on snapshot directory `n` (a new one: built or received).
    pub fn hold(&self, n: u64) -> Arc<DirHold> {
        DirHold::new(Arc::clone(&self.env), self.snapshot_dir(n))
    }

    /// The archive of the held snapshot directory, which stays while it is read.
    pub fn archive(&self, hold: &Arc<DirHold>) -> Result<SnapshotArchive> {
        let reader = ArchiveReader::new(Arc::clone(hold), in_archive)?;
        Ok(SnapshotArchive::outgoing(reader))
    }

    /// The kept snapshot and its archive.
    pub fn current(&self) -> Result<Option<(Meta, SnapshotArchive)>> {
        let kept = lock(&self.kept).clone();
        kept.map(|k| Ok((k.meta, self.archive(&k.hold)?)))
            .transpose()
    }

    /// Keeps complete snapshot `n` (held by `hold`) unless the kept one covers more of
    /// the log (SD1). The one not kept is retired: removed once no archive reads it.
    pub fn keep(&self, n: u64, hold: Arc<DirHold>, meta: &Meta) {
        let mut kept = lock(&self.kept);
        if let Some(k) = kept.as_ref()
            && k.meta.last_log_id > meta.last_log_id
        {
            hold.retire();
            return;
        }
        let old = kept.replace(Kept {
            number: n,
            meta: meta.clone(),
            hold,
        });
        if let Some(old) = old
            && old.number != n
        {
            old.hold.retire();
        }
    }

    /// A new file to receive a snapshot's archive in.
    pub fn incoming(&self) -> Result<SnapshotArchive> {
        let path = self.root.join(format!("incoming-{}", self.number()));
        SnapshotArchive::incoming(Arc::clone(&self.env), path)
    }

    /// Unpacks a received snapshot into a new snapshot directory, not complete yet: its
    /// number. What was unpacked is removed if it fails; the received file goes with the
    /// stream.
    pub fn unpack(&self, data: &mut SnapshotArchive) -> Result<u64> {
        let env = self.env.as_ref();
        // Another kind (a snapshot handed over in memory, or another node's outgoing one
        // in a test) is written to a file first.
        let mut copy = None;
        let archive = match data.finish_incoming()? {
            Some(path) => path.to_path_buf(),
            None => {
                let received = copy.insert(self.incoming()?);
                copy_stream(data, received)?;
                received
                    .finish_incoming()?
                    .map(Path::to_path_buf)
                    .ok_or_else(|| Error::InvalidArgument("no incoming file".into()))?
            }
        };
        let n = self.number();
        let dest = self.snapshot_dir(n);
        if let Err(e) = archive::unpack(env, &archive, &dest).and_then(|_| env.sync_dir(&self.root))
        {
            self.discard(Some(n), None);
            return Err(e);
        }
        Ok(n)
    }

    /// Removes snapshot directory `snapshot` and database `db`, best effort (what is left
    /// goes at the next open, SD4): the remains of an install that failed.
    pub fn discard(&self, snapshot: Option<u64>, db: Option<u64>) {
        let env = self.env.as_ref();
        let dirs = snapshot
            .map(|n| self.snapshot_dir(n))
            .into_iter()
            .chain(db.map(|m| self.root.join(format!("db-{m}"))));
        for dir in dirs {
            let _ = remove_tree(env, &dir);
        }
    }

    /// Makes database `m` from snapshot `n` (its tables and blob files linked, the rest
    /// copied) and opens it.
    fn copy_into(&self, n: u64, m: u64) -> Result<Db> {
        let env = self.env.as_ref();
        let from = self.snapshot_dir(n);
        let dest = self.root.join(format!("db-{m}"));
        env.create_dir_all(&dest)?;
        env.sync_dir(&self.root)?;
        let mut names = env.children(&from)?;
        names.retain(|n| in_archive(n));
        for name in names {
            if immutable(&name) {
                env.link_file(&from.join(&name), &dest.join(&name))?;
            } else {
                strata::env::copy_file(env, &from.join(&name), &dest.join(&name))?;
            }
        }
        env.sync_dir(&dest)?;
        open_db(&self.root, m, false, &self.options)
    }

    /// A new database made from snapshot `n` and opened, and its number; not live until
    /// `make_live`. What it made is removed if it fails.
    pub fn copy_of_snapshot(&self, n: u64) -> Result<(u64, Db)> {
        let m = self.number();
        self.copy_into(n, m)
            .inspect_err(|_| self.discard(None, Some(m)))
            .map(|db| (m, db))
    }

    /// Makes database `number` the live one (SD2); gives back the one it replaced, for
    /// the caller to retire.
    pub fn make_live(&self, number: u64, db: Db) -> Result<Retired> {
        write_state(self.env.as_ref(), &self.root, number)?;
        let old = {
            let mut live = self.live.write().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(
                &mut *live,
                Live {
                    number,
                    db: Arc::new(db),
                },
            )
        };
        Ok(Retired {
            db: old.db,
            dir: self.root.join(format!("db-{}", old.number)),
            env: Arc::clone(&self.env),
        })
    }

    /// Removes what an open found that is neither the live database nor the kept
    /// snapshot (SD4). Best effort: what stays is only space, and the next open tries
    /// again.
    pub fn tidy(&self) {
        let env = self.env.as_ref();
        let live = self.live.read().unwrap_or_else(|p| p.into_inner()).number;
        let kept = self.kept().map(|k| k.number);
        let Ok(names) = env.children(&self.root) else {
            return;
        };
        for name in names {
            let path = self.root.join(&name);
            let _ = match parse(&name) {
                Some(("db", n)) if n != live => remove_tree(env, &path),
                Some(("snapshot", n)) if Some(n) != kept => remove_tree(env, &path),
                Some(("incoming", _)) => env.remove_file(&path),
                _ if name == STATE_TMP => env.remove_file(&path),
                _ => Ok(()),
            };
        }
        let _ = env.sync_dir(&self.root);
    }
}

/// A database no longer live, still open while readers hold it.
#[derive(Debug)]
#[must_use = "a retired database is closed and removed by `in_background`, or when dropped (closed only)"]
pub(crate) struct Retired {
    db: Arc<Db>,
    dir: PathBuf,
    env: Arc<dyn Env>,
}

impl Retired {
    /// Closes the database and removes its directory on a thread of its own, once no
    /// reader holds it (best effort: what is left goes at the next open, SD4).
    pub fn in_background(self) {
        let retire = move || {
            let deadline = Instant::now() + RETIRE_WAIT;
            while Arc::strong_count(&self.db) > 1 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if Arc::strong_count(&self.db) == 1 {
                drop(self.db);
                let _ = remove_tree(self.env.as_ref(), &self.dir);
            }
        };
        // Without a thread to spare, the database closes when its last reader lets go
        // and its directory is left for the next open.
        let _ = std::thread::Builder::new()
            .name("strata-sm-retire".into())
            .spawn(retire);
    }
}

/// Copies every byte of `from`, from its start, into `to`.
fn copy_stream(from: &mut SnapshotArchive, to: &mut SnapshotArchive) -> Result<()> {
    use std::io::Seek;
    let io = |e: std::io::Error| Error::io("copying a snapshot", e);
    from.rewind().map_err(io)?;
    std::io::copy(from, to).map_err(io)?;
    Ok(())
}
