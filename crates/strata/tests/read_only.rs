//! `Db::open_read_only`: reads everything a writer left (tables and unflushed logs, blob
//! values included), refuses every write, and leaves the directory byte for byte as it
//! found it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;

use strata::{Db, Error, Options};

/// Every file in `dir` (recursively) and its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = p.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn options(blob_threshold: usize) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        blob_threshold,
        ..Options::default()
    }
}

fn value(i: usize, large: bool) -> Vec<u8> {
    let v = format!("value-{i:05}-");
    if large { v.repeat(60) } else { v }.into_bytes()
}

/// A closed database whose keys are partly in tables and partly only in its last log.
fn written(dir: &Path, blob_threshold: usize) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let db = Db::open(dir, options(blob_threshold)).unwrap();
    let mut model = BTreeMap::new();
    for i in 0..3000 {
        let (k, v) = (format!("key{i:05}").into_bytes(), value(i, i % 3 == 0));
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    db.compact_range(None, None).unwrap();
    for i in (0..3000).step_by(7) {
        let k = format!("key{i:05}").into_bytes();
        db.delete(&k).unwrap();
        model.remove(&k);
    }
    for i in 3000..3200 {
        let (k, v) = (format!("key{i:05}").into_bytes(), value(i, i % 2 == 0));
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    drop(db); // the last writes stay in the log: nothing flushes them at close
    model
}

#[test]
fn reads_everything_and_writes_nothing() {
    for blob_threshold in [0, 512] {
        let dir = tempfile::tempdir().unwrap();
        let model = written(dir.path(), blob_threshold);
        let before = contents(dir.path());
        assert!(before.keys().any(|n| n.ends_with(".log")));

        let db = Db::open_read_only(dir.path(), options(blob_threshold)).unwrap();
        for (k, v) in &model {
            assert_eq!(
                db.get(k).unwrap().as_ref(),
                Some(v),
                "threshold {blob_threshold}"
            );
        }
        assert_eq!(db.get("key00007").unwrap(), None);
        let scanned: BTreeMap<Vec<u8>, Vec<u8>> =
            db.range::<&[u8]>(..).map(|kv| kv.unwrap()).collect();
        assert_eq!(scanned, model);
        let report = db.verify();
        assert!(report.is_ok(), "{report:?}");
        assert!(db.property("leveldb.stats").is_some());

        for refused in [
            db.put("new", "x"),
            db.delete("key00001"),
            db.flush(),
            db.compact_range(None, None),
            db.resume(),
        ] {
            assert!(
                matches!(refused, Err(Error::NotSupported(_))),
                "{refused:?}"
            );
        }
        drop(db);
        assert_eq!(contents(dir.path()), before, "threshold {blob_threshold}");

        // The writer opens it again afterwards and finds it whole.
        let db = Db::open(dir.path(), options(blob_threshold)).unwrap();
        assert_eq!(db.range::<&[u8]>(..).count(), model.len());
    }
}

#[test]
fn a_running_writer_makes_it_fail_as_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let writer = Db::open(dir.path(), options(0)).unwrap();
    writer.put("k", "v").unwrap();
    let err = Db::open_read_only(dir.path(), options(0)).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    drop(writer);
    let reader = Db::open_read_only(dir.path(), options(0)).unwrap();
    assert_eq!(reader.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    // While the reader has it, a writer is refused too.
    assert!(matches!(
        Db::open(dir.path(), options(0)),
        Err(Error::Locked(_))
    ));
}

#[test]
fn a_missing_database_is_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent");
    let err = Db::open_read_only(&path, options(0)).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    assert!(!path.exists());
    // A directory without a database: refused, left empty (not even a LOCK file).
    std::fs::create_dir(&path).unwrap();
    let err = Db::open_read_only(&path, options(0)).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0);
}
