//! Corruption sweep (`docs/durability.md` C5, C8): a small reference database with every
//! file type (tables on two levels, a manifest, CURRENT, a write-ahead log with records);
//! copies of it damaged by a bit flip, a 0x00 or 0xFF byte, or a truncation at sampled
//! offsets of every file. Each copy must refuse to open with an error, or open and then
//! give, for every key, its right value or an error, never a wrong value or a panic;
//! `Db::verify` must not pass a copy whose table or manifest bytes were changed unless
//! every read is right.
//!
//! Damage to the write-ahead log is the one case where opening may drop data silently:
//! the log's records were never synced (point-in-time recovery drops its tail, C8), so
//! there the rule is a prefix: each log key present with its value, or absent along with
//! every later one.
//!
//! `STRATA_SWEEP_CASES` (default 5,000) sets the number of sampled cases; 0 sweeps every
//! byte of every file with every mutation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::{Rng, env_u64};
use strata::env::{Env, MemEnv};
use strata::{Db, Error, Options};

/// `blobs`: values of 16 bytes and more in blob files, stored compressed when that pays.
fn options(env: &MemEnv, blobs: bool) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 8 << 10,
        max_file_size: 8 << 10,
        block_size: 512,
        bloom_bits_per_key: Some(10),
        blob_threshold: if blobs { 16 } else { 0 },
        blob_compression: blobs,
        env: Arc::new(env.clone()),
        ..Options::default()
    }
}

fn value(i: usize) -> Vec<u8> {
    format!("value-{i:05}-{}", "x".repeat(i % 40)).into_bytes()
}

/// The reference database: table keys (on disk in tables) and log keys (only in the
/// write-ahead log, in write order).
struct Reference {
    blobs: bool,
    files: BTreeMap<PathBuf, Vec<u8>>,
    table_keys: BTreeMap<Vec<u8>, Vec<u8>>,
    log_keys: Vec<(Vec<u8>, Vec<u8>)>,
}

fn reference(blobs: bool) -> Reference {
    let env = MemEnv::new();
    let dir = Path::new("/db");
    let mut table_keys = BTreeMap::new();
    {
        let db = Db::open(dir, options(&env, blobs)).unwrap();
        for i in 0..600 {
            let k = format!("t{i:05}").into_bytes();
            db.put(&k, value(i)).unwrap();
            table_keys.insert(k, value(i));
        }
        db.compact_range(None, None).unwrap();
        for i in 600..900 {
            let k = format!("t{i:05}").into_bytes();
            db.put(&k, value(i)).unwrap();
            table_keys.insert(k, value(i));
        }
        // Push the last of them out of the memtable so only the log keys stay in the log.
        db.compact_range(Some(b"t00600"), Some(b"t00900")).unwrap();
        db.close().unwrap();
    }
    let mut log_keys = Vec::new();
    {
        let db = Db::open(dir, options(&env, blobs)).unwrap();
        for i in 0..40 {
            let k = format!("w{i:05}").into_bytes();
            db.put(&k, value(i)).unwrap();
            log_keys.push((k, value(i)));
        }
        drop(db);
    }
    let files = env
        .children(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n != "LOCK" && !n.starts_with("LOG"))
        .map(|n| {
            let p = dir.join(&n);
            let bytes = env.contents(&p).unwrap();
            (p, bytes)
        })
        .collect();
    Reference {
        blobs,
        files,
        table_keys,
        log_keys,
    }
}

#[derive(Debug, Clone, Copy)]
enum Mutation {
    Flip(u8),
    Zero,
    Ones,
    Truncate,
}

fn damaged(r: &Reference, file: &Path, offset: usize, m: Mutation) -> MemEnv {
    let env = MemEnv::new();
    env.create_dir_all(Path::new("/db")).unwrap();
    for (p, bytes) in &r.files {
        let mut b = bytes.clone();
        if p == file {
            match m {
                Mutation::Flip(bit) => b[offset] ^= 1 << bit,
                Mutation::Zero => b[offset] = 0,
                Mutation::Ones => b[offset] = 0xff,
                Mutation::Truncate => b.truncate(offset),
            }
        }
        env.set_contents(p, b);
    }
    env
}

fn acceptable(e: &Error) -> bool {
    matches!(
        e,
        Error::Corruption(_) | Error::Io { .. } | Error::NotSupported(_)
    )
}

/// Returns true if the copy opened.
fn check(r: &Reference, file: &Path, offset: usize, m: Mutation) -> bool {
    let ctx = format!("{} at {offset} ({m:?})", file.display());
    let env = damaged(r, file, offset, m);
    let db = match Db::open("/db", options(&env, r.blobs)) {
        Ok(db) => db,
        Err(e) => {
            assert!(
                acceptable(&e),
                "{ctx}: open failed with an unexpected error kind: {e}"
            );
            return false;
        }
    };
    // The log's records, and the blob records only its records point to, were never
    // synced: damage to either may drop the log's tail (its blob file shares its number).
    let name = file.to_string_lossy();
    let is_log = name.ends_with(".log")
        || (name.ends_with(".blob") && r.files.contains_key(&file.with_extension("log")));
    let mut all_right = true;
    for (k, v) in &r.table_keys {
        match db.get(k) {
            Ok(Some(got)) => assert_eq!(&got, v, "{ctx}: wrong value for {k:?}"),
            Ok(None) => panic!(
                "{ctx}: {} vanished without an error",
                String::from_utf8_lossy(k)
            ),
            Err(e) => {
                assert!(acceptable(&e), "{ctx}: get failed with {e}");
                all_right = false;
            }
        }
    }
    let mut gone = false;
    for (k, v) in &r.log_keys {
        match db.get(k) {
            Ok(Some(got)) => {
                assert_eq!(&got, v, "{ctx}: wrong value for {k:?}");
                assert!(
                    !gone,
                    "{ctx}: a hole: {k:?} survived an earlier log key's loss"
                );
            }
            Ok(None) => {
                assert!(
                    is_log,
                    "{ctx}: log key {k:?} vanished though the log was not damaged"
                );
                gone = true;
            }
            Err(e) => {
                assert!(acceptable(&e), "{ctx}: get failed with {e}");
                all_right = false;
            }
        }
    }
    // A full scan: the same rule, and no key that was never written.
    for item in db.range::<&[u8]>(..) {
        match item {
            Ok((k, v)) => {
                let want = r
                    .table_keys
                    .get(&k)
                    .or_else(|| r.log_keys.iter().find(|(lk, _)| *lk == k).map(|(_, v)| v));
                assert_eq!(
                    want,
                    Some(&v),
                    "{ctx}: scan returned a wrong or unknown entry"
                );
            }
            Err(e) => {
                assert!(acceptable(&e), "{ctx}: scan failed with {e}");
                all_right = false;
                break;
            }
        }
    }
    if !all_right && !is_log {
        assert!(
            db.verify().is_err(),
            "{ctx}: reads failed but Db::verify passed"
        );
    }
    true
}

#[test]
fn damaged_copies_never_give_a_wrong_answer() {
    sweep(&reference(false));
}

/// The same with value separation on: blob files (compressed and raw records) are
/// damaged too.
#[test]
fn damaged_copies_with_blob_files_never_give_a_wrong_answer() {
    let r = reference(true);
    let blobs = r
        .files
        .keys()
        .filter(|p| p.to_string_lossy().ends_with(".blob"));
    assert!(blobs.count() >= 2, "{:?}", r.files.keys());
    sweep(&r);
}

fn sweep(r: &Reference) {
    let kinds: Vec<String> = r.files.keys().map(|p| p.display().to_string()).collect();
    assert!(kinds.iter().any(|k| k.ends_with(".ldb")), "{kinds:?}");
    assert!(kinds.iter().any(|k| k.ends_with(".log")), "{kinds:?}");
    assert!(kinds.iter().any(|k| k.contains("MANIFEST")), "{kinds:?}");
    assert!(kinds.iter().any(|k| k.ends_with("CURRENT")), "{kinds:?}");
    let cases = env_u64("STRATA_SWEEP_CASES", 5000);
    let mutations = |rng: &mut Rng| match rng.below(4) {
        0 => Mutation::Flip(rng.below(8) as u8),
        1 => Mutation::Zero,
        2 => Mutation::Ones,
        _ => Mutation::Truncate,
    };
    let (mut opened, mut refused) = (0u64, 0u64);
    let mut tally = |ok: bool| {
        if ok { opened += 1 } else { refused += 1 }
    };
    if cases == 0 {
        for (p, bytes) in &r.files {
            for offset in 0..bytes.len() {
                for m in [
                    Mutation::Flip(0),
                    Mutation::Flip(7),
                    Mutation::Zero,
                    Mutation::Ones,
                    Mutation::Truncate,
                ] {
                    tally(check(r, p, offset, m));
                }
            }
        }
    } else {
        let seed = env_u64("STRATA_SWEEP_SEED", 7);
        println!("corruption sweep: {cases} cases, seed {seed}");
        let mut rng = Rng::new(seed);
        let files: Vec<(&PathBuf, &Vec<u8>)> = r.files.iter().collect();
        for _ in 0..cases {
            // Every file gets its share, whatever its size.
            let (p, bytes) = files[rng.below(files.len() as u64) as usize];
            let offset = rng.below(bytes.len() as u64) as usize;
            tally(check(r, p, offset, mutations(&mut rng)));
        }
    }
    println!("opened {opened}, refused with an error {refused}");
}
