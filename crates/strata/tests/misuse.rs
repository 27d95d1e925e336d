//! Misuse (`docs/durability.md` C9): absurd options, a second opener, a wrong comparator,
//! `error_if_exists`, a missing database: each gets its typed error, and the directory is
//! left byte-identical (or not created at all).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata::env::{Env, MemEnv};
use strata::log::LogWriter;
use strata::version::VersionEdit;
use strata::{Db, Error, Options};

fn options(env: &MemEnv) -> Options {
    Options {
        create_if_missing: true,
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

fn snapshot(env: &MemEnv, dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    if !env.exists(dir) {
        return BTreeMap::new();
    }
    env.children(dir)
        .unwrap()
        .into_iter()
        .map(|n| {
            let p = dir.join(n);
            let c = env.contents(&p).unwrap();
            (p, c)
        })
        .collect()
}

fn existing(env: &MemEnv) -> &'static Path {
    let dir = Path::new("/db");
    let db = Db::open(dir, options(env)).unwrap();
    for i in 0..100 {
        db.put(format!("k{i}"), "v").unwrap();
    }
    db.close().unwrap();
    dir
}

#[test]
fn absurd_options_are_refused_before_anything_is_written() {
    type Edit = fn(&mut Options);
    let cases: [(&str, Edit); 6] = [
        ("write_buffer_size 0", |o| o.write_buffer_size = 0),
        ("write_buffer_size 1 TiB", |o| o.write_buffer_size = 1 << 40),
        ("block_size 0", |o| o.block_size = 0),
        ("max_file_size 1", |o| o.max_file_size = 1),
        ("max_open_files 0", |o| o.max_open_files = 0),
        ("block_restart_interval 0", |o| o.block_restart_interval = 0),
    ];
    for (what, edit) in cases {
        // On a missing directory: nothing may be created.
        let env = MemEnv::new();
        let mut o = options(&env);
        edit(&mut o);
        let err = Db::open("/fresh", o).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{what}: {err}");
        assert!(
            !env.exists(Path::new("/fresh")),
            "{what}: directory created"
        );
        // On an existing database: byte-identical afterwards.
        let dir = existing(&env);
        let before = snapshot(&env, dir);
        let mut o = options(&env);
        edit(&mut o);
        let err = Db::open(dir, o).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)), "{what}: {err}");
        assert_eq!(snapshot(&env, dir), before, "{what}: directory changed");
    }
}

#[test]
fn a_second_opener_is_locked_out() {
    let env = MemEnv::new();
    let dir = existing(&env);
    let db = Db::open(dir, options(&env)).unwrap();
    db.put("a", "b").unwrap();
    let before = snapshot(&env, dir);
    let err = Db::open(dir, options(&env)).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    assert_eq!(snapshot(&env, dir), before);
    drop(db);
}

#[test]
fn a_wrong_comparator_is_named() {
    let env = MemEnv::new();
    let dir = existing(&env);
    // A manifest written by a database using another comparator.
    let manifest = dir.join("MANIFEST-000900");
    let edit = VersionEdit {
        comparator: Some("rocksdb.ReverseBytewiseComparator".into()),
        log_number: Some(0),
        next_file_number: Some(901),
        last_seqnum: Some(0),
        ..Default::default()
    };
    let mut w = LogWriter::new(env.new_writable(&manifest).unwrap());
    w.add_record(&edit.encode()).unwrap();
    drop(w);
    env.set_contents(&dir.join("CURRENT"), b"MANIFEST-000900\n".to_vec());
    let before = snapshot(&env, dir);
    let err = Db::open(dir, options(&env)).unwrap_err();
    match &err {
        Error::ComparatorMismatch(names) => {
            assert!(names.database.contains("Reverse"), "{}", names.database)
        }
        other => panic!("{other}"),
    }
    assert_eq!(snapshot(&env, dir), before);
}

#[test]
fn exists_and_missing() {
    let env = MemEnv::new();
    let dir = existing(&env);
    let before = snapshot(&env, dir);
    let mut o = options(&env);
    o.error_if_exists = true;
    let err = Db::open(dir, o).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists(_)), "{err}");
    assert_eq!(snapshot(&env, dir), before);

    let mut o = options(&env);
    o.create_if_missing = false;
    let err = Db::open("/nothing", o).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    assert!(!env.exists(Path::new("/nothing")));
}

#[test]
fn a_damaged_current_is_refused_unchanged() {
    let env = MemEnv::new();
    let dir = existing(&env);
    env.set_contents(&dir.join("CURRENT"), b"not a manifest".to_vec());
    let before = snapshot(&env, dir);
    let err = Db::open(dir, options(&env)).unwrap_err();
    assert!(matches!(err, Error::Corruption(_)), "{err}");
    assert_eq!(snapshot(&env, dir), before);
}

#[test]
fn oversized_keys_and_values_are_refused_and_change_nothing() {
    let env = MemEnv::new();
    let dir = existing(&env);
    let db = Db::open(dir, options(&env)).unwrap();
    let before = snapshot(&env, dir);
    // Zeroed allocations: the pages are only touched if the engine copies them.
    let big_key = vec![0u8; strata::MAX_KEY_SIZE + 1];
    let big_value = vec![0u8; strata::MAX_VALUE_SIZE + 1];
    let is_size_error =
        |e: &Error| matches!(e, Error::InvalidArgument(m) if m.contains("exceeds the limits"));
    let e = db.put(&big_key, "v").unwrap_err();
    assert!(is_size_error(&e), "{e}");
    let e = db.put("k", &big_value).unwrap_err();
    assert!(is_size_error(&e), "{e}");
    let e = db.delete(&big_key).unwrap_err();
    assert!(is_size_error(&e), "{e}");
    // In a batch, nothing of it is applied (C4).
    let mut batch = strata::WriteBatch::new();
    batch.put("fits", "v");
    batch.put(&big_key, "v");
    let e = db.write(batch).unwrap_err();
    assert!(is_size_error(&e), "{e}");
    drop(big_key);
    assert_eq!(db.get("fits").unwrap(), None);
    assert_eq!(snapshot(&env, dir), before);
    // Refusals are not errors of the database: it goes on (`db_basics` writes large keys
    // and values through every layer).
    db.put("k0", "v").unwrap();
}
