//! [`VersionSet`]: the current version, the database's counters, and the manifest.
//!
//! The manifest is a log of [`VersionEdit`]s. A new manifest starts with a snapshot of the
//! whole state, then one record per change. `CURRENT` names the live manifest; it is
//! replaced atomically (write `NNNNNN.dbtmp`, sync, rename, sync the directory).
//!
//! Not thread-safe by itself: the database keeps it under its state mutex.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use super::{Builder, NUM_LEVELS, Separation, Version, VersionEdit};
use crate::comparator::InternalOrder;
use crate::env::{Env, WritableFile};
use crate::error::{ComparatorNames, Error, Result};
use crate::filename;
use crate::log::{Checksums, LogReader, LogWriter};

/// The current version and the counters the manifest records.
pub struct VersionSet {
    dir: PathBuf,
    env: Arc<dyn Env>,
    /// The next number to hand to a new file.
    pub next_file_number: u64,
    /// The live manifest's number: after [`VersionSet::recover`], the number the next
    /// manifest will get (written at the first edit).
    pub manifest_number: u64,
    /// The number of the manifest [`VersionSet::recover`] read (0 before).
    pub recovered_manifest: u64,
    /// The last seqnum written (and made visible).
    pub last_seqnum: u64,
    /// Logs numbered below this are obsolete.
    pub log_number: u64,
    /// An older log still needed (0 if none; kept for LevelDB's format).
    pub prev_log_number: u64,
    manifest: Option<LogWriter<dyn WritableFile>>,
    current: Arc<Version>,
    /// Where the next size compaction of each level starts.
    pub compact_pointers: [Vec<u8>; NUM_LEVELS],
    /// Every version built; the ones still alive protect their files (V3).
    versions: Vec<Weak<Version>>,
    /// The first failed manifest write or sync: the manifest may end in a torn record,
    /// so nothing is appended after it, and no retry reuses its number.
    manifest_error: Option<Error>,
    /// What reading the manifest dropped (an unfinished last edit), for the LOG.
    pub recovery_notes: Vec<String>,
    /// An edit is between `prepare_edit` and `finish_edit` (V4: one at a time).
    editing: bool,
    /// The key order; its comparator's name is the manifest's.
    order: InternalOrder,
}

impl std::fmt::Debug for VersionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionSet")
            .field("next_file_number", &self.next_file_number)
            .field("manifest_number", &self.manifest_number)
            .field("last_seqnum", &self.last_seqnum)
            .field("log_number", &self.log_number)
            .finish_non_exhaustive()
    }
}

impl VersionSet {
    /// An empty set for the database in `dir`; call [`VersionSet::recover`] next.
    pub fn new(dir: &Path, env: Arc<dyn Env>) -> Self {
        VersionSet {
            dir: dir.to_path_buf(),
            env,
            next_file_number: 2,
            manifest_number: 0,
            recovered_manifest: 0,
            last_seqnum: 0,
            log_number: 0,
            prev_log_number: 0,
            manifest: None,
            current: Arc::new(Version::default()),
            compact_pointers: Default::default(),
            versions: Vec::new(),
            manifest_error: None,
            recovery_notes: Vec::new(),
            editing: false,
            order: InternalOrder::default(),
        }
    }

    /// The same set for a database ordered by `order` (bytewise unless this is called).
    pub fn with_order(mut self, order: InternalOrder) -> Self {
        self.current = Arc::new(Version {
            order: order.clone(),
            ..Version::default()
        });
        self.order = order;
        self
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// The number of tables in `level` of the current version (no reference taken).
    pub fn level_len(&self, level: usize) -> usize {
        self.current.levels.get(level).map_or(0, Vec::len)
    }

    /// Hands out a new file number.
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Makes sure `number` is never handed out.
    pub fn mark_file_number_used(&mut self, number: u64) {
        if self.next_file_number <= number {
            self.next_file_number = number + 1;
        }
    }

    /// Writes the manifest of a new, empty database ordered by the comparator named
    /// `comparator` and points `CURRENT` at it.
    pub fn create_new_db(dir: &Path, env: &dyn Env, comparator: &str) -> Result<()> {
        let edit = VersionEdit {
            comparator: Some(comparator.to_string()),
            log_number: Some(0),
            next_file_number: Some(2),
            last_seqnum: Some(0),
            ..Default::default()
        };
        let path = filename::manifest(dir, 1);
        let mut renamed = false;
        let result = (|| {
            let mut log = LogWriter::new(env.new_writable(&path)?);
            log.add_record(&edit.encode())?;
            log.sync()?;
            env.sync_dir(dir)?;
            point_current_at(env, dir, 1, &mut renamed)
        })();
        // Once CURRENT names the manifest (even if the directory sync after the rename
        // failed), the manifest must stay: removing it would leave CURRENT dangling.
        if result.is_err() && !renamed {
            let _ = env.remove_file(&path);
        }
        result
    }

    /// Rebuilds the current version from the manifest `CURRENT` names.
    pub fn recover(&mut self) -> Result<()> {
        let manifest_path = current_manifest(self.env.as_ref(), &self.dir)?;
        if let Some(filename::Kind::Manifest(n)) = manifest_path
            .file_name()
            .and_then(|n| filename::parse(&n.to_string_lossy()))
        {
            self.recovered_manifest = n;
        }
        let manifest_name = manifest_path.to_string_lossy().into_owned();
        let mut reader =
            LogReader::new(self.env.new_sequential(&manifest_path)?, Checksums::Verify);
        let mut builder = Builder::new(Arc::new(Version {
            order: self.order.clone(),
            ..Version::default()
        }));
        let (mut next_file, mut last_seq, mut log_number, mut prev_log) = (None, None, None, None);
        let mut record = Vec::new();
        while reader.read_record(&mut record)? {
            check_drops(&mut reader, &manifest_name)?;
            let edit = VersionEdit::decode(&record)
                .map_err(|e| e.located(&manifest_name, reader.last_record_offset()))?;
            if let Some(c) = &edit.comparator
                && c != self.order.user_name()
            {
                return Err(Error::ComparatorMismatch(Box::new(ComparatorNames {
                    database: c.clone(),
                    options: self.order.user_name().to_string(),
                })));
            }
            builder.apply(&edit, &mut self.compact_pointers);
            next_file = edit.next_file_number.or(next_file);
            last_seq = edit.last_seqnum.or(last_seq);
            log_number = edit.log_number.or(log_number);
            prev_log = edit.prev_log_number.or(prev_log);
        }
        // Damage with no valid record after it is the tail of an edit that was being
        // appended when the writer stopped: edits take effect only once synced, so it was
        // never acknowledged, and is dropped (zeros and garbage included, which a power
        // cut leaves as readily as a short record).
        for d in reader.take_dropped() {
            self.recovery_notes.push(format!(
                "dropped an unfinished manifest edit: {} bytes at offset {} of {manifest_name} ({:?})",
                d.bytes, d.offset, d.reason
            ));
        }
        let missing =
            |what: &str| Error::corruption(&manifest_name, 0, format!("manifest has no {what}"));
        let next_file = next_file.ok_or_else(|| missing("next file number"))?;
        let log_number = log_number.ok_or_else(|| missing("log number"))?;
        let last_seq = last_seq.ok_or_else(|| missing("last sequence number"))?;
        let prev_log = prev_log.unwrap_or(0);

        let mut version = builder.build().map_err(|e| match e {
            Error::Corruption(mut c) => {
                c.file = manifest_name.clone();
                Error::Corruption(c)
            }
            other => other,
        })?;
        version.finalize();
        self.next_file_number = next_file;
        self.mark_file_number_used(prev_log);
        self.mark_file_number_used(log_number);
        self.install(version);
        self.manifest_number = self.next_file_number;
        self.next_file_number += 1;
        self.last_seqnum = last_seq;
        self.log_number = log_number;
        self.prev_log_number = prev_log;
        Ok(())
    }

    fn install(&mut self, version: Version) {
        let v = Arc::new(version);
        self.versions.retain(|w| w.strong_count() > 0);
        self.versions.push(Arc::downgrade(&v));
        self.current = v;
    }

    /// Applies `edit` to the current version, records it in the manifest (a new manifest,
    /// starting with a snapshot, if none is open) and makes the result current. The
    /// manifest is synced before this returns.
    pub fn log_and_apply(&mut self, edit: &mut VersionEdit) -> Result<()> {
        let mut pending = self.prepare_edit(edit)?;
        let written = pending.write();
        self.finish_edit(pending, written)
    }

    /// The first step of [`VersionSet::log_and_apply`], for a caller that releases its
    /// lock while the manifest is written: stamps `edit` with the counters, builds the
    /// next version and takes the manifest writer out. Requires: no other edit between
    /// this and [`VersionSet::finish_edit`] (one editor, the background thread, V4).
    pub fn prepare_edit(&mut self, edit: &mut VersionEdit) -> Result<PendingEdit> {
        if let Some(e) = &self.manifest_error {
            return Err(e.clone());
        }
        if self.editing {
            // V4: the manifest writer is out with another edit.
            return Err(Error::InvalidArgument(
                "a manifest edit is already being written".into(),
            ));
        }
        // Value separation ending: the manifest must hold no trace of tags 20-23 for
        // LevelDB to open it, so a new one starts, its snapshot without them, and the
        // edit's own record leaves the flag out (the new manifest says "off" by silence).
        let ending_separation = edit.separation == Some(Separation::Off);
        if ending_separation && self.manifest.is_some() {
            self.manifest = None;
            self.manifest_number = self.new_file_number();
        }
        let log_number = *edit.log_number.get_or_insert(self.log_number);
        let prev_log = *edit.prev_log_number.get_or_insert(self.prev_log_number);
        edit.next_file_number = Some(self.next_file_number);
        edit.last_seqnum = Some(self.last_seqnum);
        let mut pointers = self.compact_pointers.clone();
        let mut builder = Builder::new(self.current());
        builder.apply(edit, &mut pointers);
        let mut version = builder.build()?;
        version.finalize();
        let manifest = self.manifest.take();
        self.editing = true;
        let create = manifest.is_none().then(|| {
            let mut snapshot = self.snapshot_edit();
            if ending_separation {
                snapshot.separation = None;
            }
            (self.manifest_number, snapshot.encode())
        });
        let record = if ending_separation {
            VersionEdit {
                separation: None,
                ..edit.clone()
            }
            .encode()
        } else {
            edit.encode()
        };
        Ok(PendingEdit {
            env: Arc::clone(&self.env),
            dir: self.dir.clone(),
            record,
            version,
            pointers,
            log_number,
            prev_log,
            manifest,
            create,
            created: None,
            renamed: false,
        })
    }

    /// The last step of [`VersionSet::log_and_apply`]: installs the version if `written`
    /// is Ok; otherwise latches the error (the manifest is never appended to again).
    pub fn finish_edit(&mut self, pending: PendingEdit, written: Result<()>) -> Result<()> {
        self.editing = false;
        if let Err(e) = written {
            // A manifest that may hold a torn record is never appended to again, and its
            // number is never reused. Once CURRENT names it, it stays.
            self.manifest = None;
            self.manifest_error = Some(e.clone());
            if let Some((_, path)) = pending.created
                && !pending.renamed
            {
                let _ = self.env.remove_file(&path);
            }
            return Err(e);
        }
        self.manifest = pending.manifest;
        self.compact_pointers = pending.pointers;
        self.install(pending.version);
        self.log_number = pending.log_number;
        self.prev_log_number = pending.prev_log;
        Ok(())
    }

    /// The whole current state as one edit (the first record of a new manifest).
    fn snapshot_edit(&self) -> VersionEdit {
        let mut edit = VersionEdit {
            comparator: Some(self.order.user_name().to_string()),
            ..Default::default()
        };
        for (level, key) in self.compact_pointers.iter().enumerate() {
            if !key.is_empty() {
                edit.compact_pointers.push((level, key.clone()));
            }
        }
        for (level, files) in self.current.levels.iter().enumerate() {
            for f in files {
                edit.new_files.push((level, f.to_meta_data()));
            }
        }
        self.current.describe_blob_files(&mut edit);
        edit
    }

    /// Numbers of every table some live version names (V3).
    pub fn live_files(&mut self) -> HashSet<u64> {
        let mut live = HashSet::new();
        for v in self.live_versions() {
            for files in &v.levels {
                live.extend(files.iter().map(|f| f.number));
            }
        }
        live
    }

    /// Handles on every version still held by someone (the current one included), which
    /// do not keep them alive.
    pub fn live_version_handles(&mut self) -> Vec<Weak<Version>> {
        self.versions.retain(|w| w.strong_count() > 0);
        self.versions.clone()
    }

    /// Every version still held by someone, forgetting the others.
    fn live_versions(&mut self) -> Vec<Arc<Version>> {
        self.versions.retain(|w| w.strong_count() > 0);
        self.versions.iter().filter_map(Weak::upgrade).collect()
    }

    /// Numbers of every blob file some live version names (X3: a reader of an older
    /// version may still follow refs into it).
    pub fn live_blob_files(&mut self) -> HashSet<u64> {
        let mut live = HashSet::new();
        for v in self.live_versions() {
            live.extend(v.blob_files.keys().copied());
        }
        live
    }
}

/// Manifest damage followed by a valid record is corruption: only the tail can be an
/// unfinished edit.
fn check_drops(reader: &mut LogReader, manifest: &str) -> Result<()> {
    if let Some(d) = reader.take_dropped().into_iter().next() {
        {
            return Err(Error::corruption(
                manifest,
                d.offset,
                format!(
                    "manifest record damaged ({:?}, {} bytes)",
                    d.reason, d.bytes
                ),
            ));
        }
    }
    Ok(())
}

/// The path of the manifest `CURRENT` in `dir` names (a name and a newline, no directory).
pub fn current_manifest(env: &dyn Env, dir: &Path) -> Result<PathBuf> {
    let mut current = Vec::new();
    let mut f = env.new_sequential(&filename::current(dir))?;
    let mut buf = [0u8; 256];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 || current.len() > 4096 {
            break;
        }
        current.extend_from_slice(&buf[..n]);
    }
    let name = std::str::from_utf8(&current)
        .ok()
        .and_then(|s| s.strip_suffix('\n'))
        .filter(|s| !s.is_empty() && !s.contains(['/', '\n']))
        .ok_or_else(|| {
            Error::corruption(
                "CURRENT",
                0,
                "CURRENT must hold a manifest name and a newline",
            )
        })?;
    Ok(dir.join(name))
}

/// Points `CURRENT` at `MANIFEST-<number>`: temp file, sync, rename, directory sync.
pub fn set_current_file(env: &dyn Env, dir: &Path, number: u64) -> Result<()> {
    point_current_at(env, dir, number, &mut false)
}

/// [`set_current_file`], saying whether the rename happened (then `CURRENT` may name the
/// new manifest even if a later step failed).
/// An edit between [`VersionSet::prepare_edit`] and [`VersionSet::finish_edit`]: its
/// record, the version it makes, and the manifest writer it is appended with.
pub struct PendingEdit {
    env: Arc<dyn Env>,
    dir: PathBuf,
    record: Vec<u8>,
    version: Version,
    pointers: [Vec<u8>; NUM_LEVELS],
    log_number: u64,
    prev_log: u64,
    manifest: Option<LogWriter<dyn WritableFile>>,
    /// A manifest to create first: its number and its first record (a snapshot).
    create: Option<(u64, Vec<u8>)>,
    /// The manifest this edit created (number, path), and whether `CURRENT` names it yet.
    created: Option<(u64, PathBuf)>,
    renamed: bool,
}

impl std::fmt::Debug for PendingEdit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingEdit")
            .field("bytes", &self.record.len())
            .field("creates", &self.create.as_ref().map(|c| c.0))
            .finish_non_exhaustive()
    }
}

impl PendingEdit {
    /// Appends the edit to the manifest (creating it first, with its snapshot, if none is
    /// open) and syncs it; a new manifest is then named by `CURRENT`. Needs no lock.
    pub fn write(&mut self) -> Result<()> {
        if let Some((number, snapshot)) = self.create.take() {
            let path = filename::manifest(&self.dir, number);
            let mut log = LogWriter::new(self.env.new_writable(&path)?);
            if let Err(e) = log.add_record(&snapshot) {
                let _ = self.env.remove_file(&path);
                return Err(e);
            }
            self.manifest = Some(log);
            self.created = Some((number, path));
        }
        if let Some(log) = self.manifest.as_mut() {
            log.add_record(&self.record)?;
            log.sync()?;
        }
        if let Some((number, _)) = self.created {
            self.env.sync_dir(&self.dir)?;
            point_current_at(self.env.as_ref(), &self.dir, number, &mut self.renamed)?;
        }
        Ok(())
    }
}

fn point_current_at(env: &dyn Env, dir: &Path, number: u64, renamed: &mut bool) -> Result<()> {
    let tmp = filename::temp(dir, number);
    let contents = format!("MANIFEST-{number:06}\n");
    let result = (|| {
        let mut f = env.new_writable(&tmp)?;
        f.append(contents.as_bytes())?;
        f.sync()?;
        drop(f);
        env.rename(&tmp, &filename::current(dir))?;
        *renamed = true;
        env.sync_dir(dir)
    })();
    if result.is_err() && !*renamed {
        let _ = env.remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MemEnv;
    use crate::key::{ValueType, make_internal_key};
    use crate::version::FileMetaData;

    fn file(number: u64, lo: &str, hi: &str) -> FileMetaData {
        FileMetaData {
            number,
            size: 100,
            smallest: make_internal_key(lo.as_bytes(), 1, ValueType::Value),
            largest: make_internal_key(hi.as_bytes(), 2, ValueType::Value),
            blob_bytes: 0,
            plain: false,
        }
    }

    #[test]
    fn create_apply_and_recover() {
        let env = Arc::new(MemEnv::new());
        let dir = Path::new("/db");
        env.create_dir_all(dir).unwrap();
        VersionSet::create_new_db(dir, env.as_ref(), crate::comparator::BYTEWISE_COMPARATOR)
            .unwrap();
        let mut vs = VersionSet::new(dir, env.clone());
        vs.recover().unwrap();
        assert_eq!(vs.manifest_number, 2);
        assert_eq!(vs.next_file_number, 3);
        let n = vs.new_file_number();
        let mut edit = VersionEdit::default();
        edit.new_files.push((1, file(n, "a", "f")));
        vs.last_seqnum = 42;
        vs.log_and_apply(&mut edit).unwrap();
        assert_eq!(
            env.contents(&filename::current(dir)).unwrap(),
            b"MANIFEST-000002\n"
        );
        let mut edit = VersionEdit::default();
        edit.new_files
            .push((0, file(vs.new_file_number(), "b", "c")));
        vs.log_and_apply(&mut edit).unwrap();
        let live = vs.live_files();
        assert!(live.contains(&3) && live.contains(&4));

        let mut again = VersionSet::new(dir, env.clone());
        again.recover().unwrap();
        let v = again.current();
        assert_eq!(v.levels[1][0].number, 3);
        assert_eq!(v.levels[0][0].number, 4);
        assert_eq!(again.last_seqnum, 42);
        assert!(again.next_file_number > 4);
    }

    #[test]
    fn bad_current_and_comparator_are_reported() {
        let env = Arc::new(MemEnv::new());
        let dir = Path::new("/db");
        env.set_contents(&filename::current(dir), b"MANIFEST-000001".to_vec());
        let err = VersionSet::new(dir, env.clone()).recover().unwrap_err();
        assert!(err.is_corruption(), "{err}");
        let edit = VersionEdit {
            comparator: Some("other.Comparator".into()),
            log_number: Some(0),
            next_file_number: Some(2),
            last_seqnum: Some(0),
            ..Default::default()
        };
        let mut log = LogWriter::new(env.new_writable(&filename::manifest(dir, 1)).unwrap());
        log.add_record(&edit.encode()).unwrap();
        set_current_file(env.as_ref(), dir, 1).unwrap();
        let err = VersionSet::new(dir, env.clone()).recover().unwrap_err();
        assert!(
            matches!(err, Error::ComparatorMismatch(ref names) if names.database == "other.Comparator"),
            "{err}"
        );
    }

    #[test]
    fn file_names_parse() {
        use filename::{Kind, parse};
        assert_eq!(parse("000012.log"), Some(Kind::Log(12)));
        assert_eq!(parse("000012.ldb"), Some(Kind::Table(12)));
        assert_eq!(parse("000012.sst"), Some(Kind::Table(12)));
        assert_eq!(parse("MANIFEST-000003"), Some(Kind::Manifest(3)));
        assert_eq!(parse("000004.dbtmp"), Some(Kind::Temp(4)));
        assert_eq!(parse("CURRENT"), Some(Kind::Current));
        assert_eq!(parse("LOG.old"), Some(Kind::InfoLog));
        assert_eq!(parse("foo.log"), None);
        assert_eq!(parse("MANIFEST-"), None);
        assert_eq!(parse("12.txt"), None);
    }
}
