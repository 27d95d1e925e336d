//! The LevelDB drop-in, judged by LevelDB itself: C programs compiled against the system's
//! `leveldb/c.h` (`tests/c/`) run once on Debian's `libleveldb` and once on Strata's
//! library; their transcripts must be identical, and databases written by either library
//! must read back through the other (`tests/c/compare.sh`).
//!
//! Needs a C compiler and Debian's `libleveldb-dev` (`make deps` installs both).

#![allow(
    clippy::unwrap_used,
    reason = "test code: a failed unwrap is a failed test"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// This crate's `libleveldb.so`, freshly built. `cargo test` builds a package's tests but
/// not its `cdylib`, so the library is built here, once per test run, into a target
/// directory of its own (the outer cargo may still hold its own).
fn built_library() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
            let target = manifest.join("../../target/strata-c-tests");
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "--manifest-path"])
                .arg(manifest.join("Cargo.toml"))
                .arg("--target-dir")
                .arg(&target)
                .status()
                .unwrap();
            assert!(status.success(), "building the strata-c library failed");
            target.join("debug/libleveldb.so")
        })
        .clone()
}

#[test]
fn c_programs_behave_the_same_on_strata_and_on_leveldb() {
    let lib = built_library();
    let work = tempfile::tempdir().unwrap();
    let libdir = work.path().join("lib");
    std::fs::create_dir_all(&libdir).unwrap();
    std::fs::copy(&lib, libdir.join("libleveldb.so.1")).unwrap();
    for name in ["libleveldb.so.1d", "libleveldb.so"] {
        std::os::unix::fs::symlink("libleveldb.so.1", libdir.join(name)).unwrap();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/compare.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&libdir)
        .arg(work.path().join("run"))
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "compare.sh failed:\n{text}");
}

/// The names `leveldb/c.h` declares (every `leveldb_*` identifier followed by `(`).
fn header_functions() -> Vec<String> {
    let header = std::fs::read_to_string("/usr/include/leveldb/c.h").unwrap();
    let mut names: Vec<String> = header
        .split('(')
        .filter_map(|before| {
            let ident_start = before
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            let ident = &before[ident_start..];
            // Only an identifier right before the parenthesis: a declaration's name.
            (ident.starts_with("leveldb_") && ident.len() == before.trim_end().len() - ident_start)
                .then(|| ident.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_library_exports_exactly_the_functions_of_c_h() {
    let out = Command::new("nm")
        .args(["-D", "--defined-only", "--format=posix"])
        .arg(built_library())
        .output()
        .unwrap();
    assert!(out.status.success(), "nm failed");
    let mut exported: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    exported.sort();
    let declared = header_functions();
    assert_eq!(
        declared.len(),
        68,
        "LevelDB 1.23's c.h declares 68 functions"
    );
    assert_eq!(exported, declared);
}
