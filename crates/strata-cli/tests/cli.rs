//! The `strata` binary itself, run as a user would, on databases made by Strata and by
//! Debian's LevelDB, damaged ones included.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use strata::{Db, Options};

/// Runs `strata` with `args`.
fn strata(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("the strata binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts `o` failed with `code` and one line of error, and never panicked.
fn failed(o: &Output, code: i32) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file under `dir` and its bytes.
fn contents(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    out
}

fn files_ending(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = contents(dir)
        .into_keys()
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    v.sort();
    v
}

/// A closed Strata database: 2,000 keys over several tables, 100 more only in its log.
fn made_by_strata(dir: &Path) {
    let db = Db::open(
        dir,
        Options {
            create_if_missing: true,
            write_buffer_size: 32 << 10,
            ..Options::default()
        },
    )
    .unwrap();
    for i in 0..2000 {
        db.put(format!("key{i:05}"), format!("value-{i}")).unwrap();
    }
    db.compact_range(None, None).unwrap();
    for i in 2000..2100 {
        db.put(format!("key{i:05}"), format!("value-{i}")).unwrap();
    }
}

#[test]
fn data_commands_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = s(&db);
    assert!(
        strata(&["put", db, "hello", "world", "--create"])
            .status
            .success()
    );
    assert!(strata(&["put", db, "apple", "1"]).status.success());
    assert!(
        strata(&["put", db, "6b6579ff", "00ff0a", "--hex"])
            .status
            .success()
    );
    assert_eq!(stdout(&strata(&["get", db, "hello"])), "world\n");
    assert_eq!(
        stdout(&strata(&["get", db, "6b6579ff", "--hex"])),
        "0x00ff0a\n"
    );
    assert_eq!(
        stdout(&strata(&["scan", db])),
        "apple => 1\nhello => world\nkey\\xff => \\x00\\xff\\x0a\n"
    );
    assert_eq!(
        stdout(&strata(&[
            "scan",
            db,
            "--reverse",
            "--limit",
            "1",
            "--json"
        ])),
        "{\"key\":\"key\\\\xff\",\"value\":\"\\\\x00\\\\xff\\\\x0a\"}\n"
    );
    assert_eq!(stdout(&strata(&["count", db, "--prefix", "a"])), "1\n");
    assert_eq!(stdout(&strata(&["count", db, "--json"])), "{\"count\":3}\n");
    assert!(strata(&["delete", db, "apple"]).status.success());
    let missing = strata(&["get", db, "apple"]);
    assert!(failed(&missing, 1).contains("not found"));

    // dump | load carries every byte, text and JSON alike.
    for json in [false, true] {
        let mut args = vec!["dump", db];
        if json {
            args.push("--json");
        }
        let dump = strata(&args);
        assert!(dump.status.success());
        let file = dir.path().join(format!("dump-{json}"));
        std::fs::write(&file, &dump.stdout).unwrap();
        let copy = dir.path().join(format!("copy-{json}"));
        let loaded = strata(&["load", s(&copy), s(&file), "--create", "--batch", "2"]);
        assert!(loaded.status.success(), "{}", stderr(&loaded));
        assert_eq!(
            stdout(&strata(&["scan", s(&copy)])),
            stdout(&strata(&["scan", db]))
        );
    }
}

#[test]
fn reading_commands_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    made_by_strata(&db);
    let before = contents(&db);
    let table = files_ending(&db, ".ldb").remove(0);
    let log = files_ending(&db, ".log").remove(0);
    let html = dir.path().join("lsm.html");
    let d = s(&db);
    let runs: Vec<Vec<&str>> = vec![
        vec!["get", d, "key02050"],
        vec!["scan", d, "--from", "key00100", "--to", "key00200"],
        vec!["count", d],
        vec!["dump", d],
        vec!["properties", d],
        vec!["properties", d, "--json"],
        vec!["lsm", d, "--html", s(&html)],
        vec!["lsm", d, "--json"],
        vec!["check", d],
        vec!["check", d, "--json"],
        vec!["dump-manifest", d],
        vec!["dump-wal", s(&log)],
        vec!["dump-table", s(&table)],
        vec!["table-props", s(&table), "--json"],
    ];
    for args in runs {
        let o = strata(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    }
    assert_eq!(stdout(&strata(&["get", d, "key02050"])), "value-2050\n");
    assert_eq!(stdout(&strata(&["count", d])), "2100\n");
    assert!(stdout(&strata(&["dump-wal", s(&log)])).contains("key02099#"));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("<rect"));
    assert_eq!(
        contents(&db),
        before,
        "a reading command changed the directory"
    );
}

#[test]
fn check_names_the_damaged_table() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean");
    made_by_strata(&clean);
    assert!(strata(&["check", s(&clean)]).status.success());
    let tables = files_ending(&clean, ".ldb");
    let mut planted = 0;
    for table in &tables {
        let bytes = std::fs::read(table).unwrap();
        // Every byte but the footer (its padding is not checksummed, as in LevelDB),
        // sampled: the start, the middle and the last block's trailer.
        for at in [0, bytes.len() / 2, bytes.len() - 49] {
            let copy = dir.path().join(format!("copy-{planted}"));
            std::fs::create_dir(&copy).unwrap();
            for (p, b) in contents(&clean) {
                std::fs::write(copy.join(p.file_name().unwrap()), b).unwrap();
            }
            let name = table.file_name().unwrap().to_string_lossy().into_owned();
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x40;
            std::fs::write(copy.join(&name), damaged).unwrap();
            let o = strata(&["check", s(&copy)]);
            let err = failed(&o, 1);
            assert!(err.contains(&name), "byte {at} of {name}: {err}");
            planted += 1;
        }
    }
    assert!(planted >= 3);
    // The manifest, CURRENT and the log too: the error names the file.
    for (name, at) in [("MANIFEST", 12usize), ("CURRENT", 3), (".log", 20)] {
        let copy = dir.path().join(format!("copy-{name}"));
        std::fs::create_dir(&copy).unwrap();
        let mut target = None;
        for (p, b) in contents(&clean) {
            let file = p.file_name().unwrap().to_string_lossy().into_owned();
            if file.starts_with(name) || file.ends_with(name) {
                target = Some(file.clone());
            }
            std::fs::write(copy.join(&file), b).unwrap();
        }
        let file = target.unwrap();
        let mut bytes = std::fs::read(copy.join(&file)).unwrap();
        bytes[at] ^= 0x40;
        std::fs::write(copy.join(&file), bytes).unwrap();
        let err = failed(&strata(&["check", s(&copy)]), 1);
        assert!(err.contains(&file), "{file}: {err}");
    }
}

#[test]
fn dumps_of_damaged_files_say_where_they_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    made_by_strata(&db);
    let table = files_ending(&db, ".ldb").remove(0);
    let mut bytes = std::fs::read(&table).unwrap();
    bytes[10] ^= 0x01; // inside the first data block
    let bad_table = dir.path().join("bad.ldb");
    std::fs::write(&bad_table, &bytes).unwrap();
    let o = strata(&["dump-table", s(&bad_table)]);
    let err = failed(&o, 1);
    assert!(err.contains("data block 0 at offset 0"), "{err}");
    assert!(
        stdout(&o).contains("checksum mismatch"),
        "the block is still shown"
    );
    assert!(
        stdout(&o).contains("data block 1 at"),
        "later blocks are still read"
    );

    let log = files_ending(&db, ".log").remove(0);
    let mut bytes = std::fs::read(&log).unwrap();
    bytes[20] ^= 0xff;
    let bad_log = dir.path().join("bad.log");
    std::fs::write(&bad_log, &bytes).unwrap();
    let o = strata(&["dump-wal", s(&bad_log)]);
    assert!(failed(&o, 1).contains("damaged"));
    assert!(stdout(&o).contains("dropped"));

    // Files of the wrong kind: an error, never a panic.
    for (cmd, file) in [
        ("dump-table", &log),
        ("table-props", &log),
        ("dump-manifest", &table),
        ("dump-wal", &table),
    ] {
        let o = strata(&[cmd, s(file)]);
        assert_eq!(o.status.code(), Some(1), "{cmd} {}", file.display());
        assert!(!stderr(&o).contains("panicked"));
    }
}

#[test]
fn bad_input_never_hurts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    made_by_strata(&db);
    let d = s(&db);

    let not_a_db = dir.path().join("empty");
    std::fs::create_dir(&not_a_db).unwrap();
    for cmd in ["scan", "count", "check", "lsm", "properties", "dump"] {
        let o = strata(&[cmd, s(&not_a_db)]);
        failed(&o, 1);
    }
    assert_eq!(
        std::fs::read_dir(&not_a_db).unwrap().count(),
        0,
        "nothing created"
    );
    let o = strata(&["get", s(&dir.path().join("absent")), "k"]);
    assert!(failed(&o, 1).contains("no database here"));

    let o = strata(&["get", d, "xyz", "--hex"]);
    assert!(failed(&o, 2).contains("not hex"));
    assert_eq!(
        strata(&["get", d]).status.code(),
        Some(2),
        "a missing argument"
    );

    // A malformed dump: the line is named and nothing is written.
    let before = contents(&db);
    let dump = dir.path().join("dump.txt");
    std::fs::write(&dump, "a\tb\nc\\x4\td\n").unwrap();
    let o = strata(&["load", d, s(&dump)]);
    assert!(failed(&o, 1).contains("dump.txt:2"));
    assert_eq!(contents(&db), before);

    // While another process (here: this one) has the database open, writers and readers
    // are told it is in use.
    let held = Db::open(&db, Options::default()).unwrap();
    for args in [vec!["put", d, "k", "v"], vec!["scan", d]] {
        let o = strata(&args);
        assert!(failed(&o, 1).contains("in use"), "{args:?}");
    }
    drop(held);
}

#[test]
fn a_leveldb_database_is_read_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("leveldb");
    {
        let ldb = leveldb_ffi::Db::open(
            &db,
            &leveldb_ffi::Options {
                create_if_missing: true,
                write_buffer_size: 64 << 10,
                ..Default::default()
            },
        )
        .unwrap();
        for i in 0..3000 {
            ldb.put(format!("k{i:05}").as_bytes(), b"from leveldb", false)
                .unwrap();
        }
        ldb.compact_range(None, None);
        ldb.put(b"last", b"in the log", false).unwrap();
    }
    let before = contents(&db);
    let d = s(&db);
    assert_eq!(stdout(&strata(&["count", d])), "3001\n");
    assert_eq!(stdout(&strata(&["get", d, "last"])), "in the log\n");
    assert!(strata(&["check", d]).status.success());
    let lsm = stdout(&strata(&["lsm", d]));
    assert!(lsm.contains("level "), "{lsm}");
    for t in files_ending(&db, ".ldb") {
        assert!(strata(&["table-props", s(&t)]).status.success());
    }
    assert_eq!(contents(&db), before, "LevelDB's directory untouched");
}

/// A LevelDB database written under load and closed at once: LevelDB's close stops a
/// compaction under way and leaves its output behind for its next open to remove.
fn leveldb_loaded_and_closed(db: &Path, seed: u64) {
    let ldb = leveldb_ffi::Db::open(
        db,
        &leveldb_ffi::Options {
            create_if_missing: true,
            write_buffer_size: 64 << 10,
            ..Default::default()
        },
    )
    .unwrap();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..50_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ldb.put(
            format!("key{:08}", x % 200_000).as_bytes(),
            &[b'v'; 100],
            false,
        )
        .unwrap();
    }
}

/// `check` fails on damage only: files nothing references (the output of a compaction
/// LevelDB's close cut short, planted here as a whole and as a torn table, and whatever
/// real loads leave) are garbage the next open removes, and files of other names are
/// left alone; both are listed and the check passes. Damage still fails it.
#[test]
fn check_tells_garbage_from_damage() {
    let dir = tempfile::tempdir().unwrap();
    // Real loads, closed at once: LevelDB's own databases always pass.
    let mut garbage_seen = 0;
    for seed in 0..6 {
        let db = dir.path().join(format!("load-{seed}"));
        leveldb_loaded_and_closed(&db, seed);
        let o = strata(&["check", s(&db), "--json"]);
        assert!(o.status.success(), "load {seed}: {}", stderr(&o));
        let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(report["ok"], true);
        garbage_seen += report["garbage"].as_array().unwrap().len();
    }
    eprintln!("{garbage_seen} file(s) of garbage in six LevelDB loads closed at once");

    // Planted: what a cut-short compaction leaves, whole and torn, and a stranger's file.
    let db = dir.path().join("planted");
    leveldb_loaded_and_closed(&db, 7);
    let tables = files_ending(&db, ".ldb");
    let last = tables.iter().max().unwrap();
    let bytes = std::fs::read(last).unwrap();
    let whole = "900001.ldb";
    let torn = "900002.ldb";
    std::fs::write(db.join(whole), &bytes).unwrap();
    std::fs::write(db.join(torn), &bytes[..bytes.len() / 3]).unwrap();
    std::fs::write(db.join("notes.txt"), b"mine").unwrap();
    let o = strata(&["check", s(&db)]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stdout(&o);
    for name in [whole, torn] {
        assert!(
            said.contains(&format!("garbage: {name} (nothing references it")),
            "{said}"
        );
    }
    assert!(said.contains("not the database's: notes.txt"), "{said}");
    let o = strata(&["check", s(&db), "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // (The load may have left garbage of its own beside the planted.)
    let garbage = report["garbage"].as_array().unwrap();
    assert!(garbage.contains(&whole.into()) && garbage.contains(&torn.into()));
    assert_eq!(report["foreign"], serde_json::json!(["notes.txt"]));

    // The next read-write open removes the garbage, as check said; the stranger stays.
    assert!(strata(&["put", s(&db), "k", "v"]).status.success());
    assert!(!db.join(whole).exists() && !db.join(torn).exists());
    assert!(db.join("notes.txt").exists());
    let o = strata(&["check", s(&db), "--json"]);
    let report: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(report["garbage"], serde_json::json!([]));

    // Damage is still damage: a live table cut short fails the check, naming it.
    let live = files_ending(&db, ".ldb").into_iter().max().unwrap();
    let bytes = std::fs::read(&live).unwrap();
    std::fs::write(&live, &bytes[..bytes.len() - 10]).unwrap();
    let err = failed(&strata(&["check", s(&db)]), 1);
    let name = live.file_name().unwrap().to_string_lossy().into_owned();
    assert!(err.contains(&name), "{err}");
}

#[test]
fn checkpoint_copies_a_database_with_value_separation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let options = Options {
        create_if_missing: true,
        write_buffer_size: 32 << 10,
        blob_threshold: 64,
        ..Options::default()
    };
    let value = |i: usize| format!("{i}-{}", "v".repeat(100));
    {
        let source = Db::open(&db, options).unwrap();
        for i in 0..1000 {
            source.put(format!("key{i:05}"), value(i)).unwrap();
        }
    }
    let dest = dir.path().join("cp");
    let o = strata(&["checkpoint", s(&db), s(&dest)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !files_ending(&dest, ".blob").is_empty(),
        "the blob files came along"
    );
    assert!(strata(&["check", s(&dest)]).status.success());
    let copy = Db::open(&dest, Options::default()).unwrap();
    let all: Vec<_> = copy.range::<&[u8]>(..).map(|kv| kv.unwrap()).collect();
    assert_eq!(all.len(), 1000);
    for (i, (k, v)) in all.iter().enumerate() {
        assert_eq!(
            (k.as_slice(), v.as_slice()),
            (format!("key{i:05}").as_bytes(), value(i).as_bytes())
        );
    }
}

#[test]
fn checkpoint_copies_the_database_at_one_moment() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    made_by_strata(&db);
    let before = contents(&db);
    let dest = dir.path().join("cp");
    let o = strata(&["checkpoint", s(&db), s(&dest), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"seqnum\":2100"), "{}", stdout(&o));
    assert_eq!(contents(&db), before, "the source is only read");
    assert_eq!(stdout(&strata(&["count", s(&dest)])), "2100\n");
    assert!(strata(&["check", s(&dest)]).status.success());
    let again = strata(&["checkpoint", s(&db), s(&dest)]);
    assert!(failed(&again, 1).contains("does not exist yet"));
}
