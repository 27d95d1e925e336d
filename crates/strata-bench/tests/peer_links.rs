//! A peer built here links what its build script states and nothing else, whatever else
//! the machine has installed (`scripts/peer-links.sh`): RocksDB's build turns off every
//! optional library its platform detection would pick up, its script states the shared
//! libraries the result may need, and `check_needed` (run at the end of every build)
//! refuses a library that needs anything else. Cheap: no peer is built here.

// A test: failing loudly on any unexpected state is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `check_needed FILE NAMES...` from the sourced script: (passed, what it said).
fn check_needed(file: &Path, names: &[&str]) -> (bool, String) {
    let out = Command::new("bash")
        .arg("-c")
        .arg("source \"$0\" && check_needed \"$@\"")
        .arg(root().join("scripts/peer-links.sh"))
        .arg(file)
        .args(names)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The `LINKS=(...)` list of the RocksDB build script.
fn stated_links() -> Vec<String> {
    let script = std::fs::read_to_string(root().join("scripts/build-rocksdb-release.sh")).unwrap();
    let line = script
        .lines()
        .find_map(|l| l.strip_prefix("LINKS=("))
        .expect("the script states LINKS=(...)");
    line.trim_end_matches(')')
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// A shared library built from `source`, linked with `args`.
fn shared_lib(dir: &Path, name: &str, source: &str, args: &[&str]) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let lib = dir.join(format!("lib{name}.so"));
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&c)
        .arg(format!("-L{}", dir.display()))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    lib
}

#[test]
fn the_rocksdb_build_turns_off_every_optional_library() {
    let script = std::fs::read_to_string(root().join("scripts/build-rocksdb-release.sh")).unwrap();
    // build_detect_platform's switches (RocksDB 10.4) for each library it links when found.
    for switch in [
        "ROCKSDB_DISABLE_TCMALLOC=1",
        "ROCKSDB_DISABLE_JEMALLOC=1",
        "ROCKSDB_USE_IO_URING=0",
        "ROCKSDB_DISABLE_ZSTD=1",
        "ROCKSDB_DISABLE_LZ4=1",
        "ROCKSDB_DISABLE_BZIP=1",
        "ROCKSDB_DISABLE_ZLIB=1",
        "ROCKSDB_DISABLE_NUMA=1",
        "ROCKSDB_DISABLE_GFLAGS=1",
        "ROCKSDB_DISABLE_TBB=1",
        "ROCKSDB_DISABLE_MEMKIND=1",
        "ROCKSDB_DISABLE_BENCHMARK=1",
    ] {
        assert!(script.contains(switch), "the script does not set {switch}");
    }
    assert_eq!(
        stated_links(),
        [
            "libsnappy.so.1",
            "libstdc++.so.6",
            "libm.so.6",
            "libgcc_s.so.1",
            "libc.so.6",
            "ld-linux-x86-64.so.2"
        ]
    );
    assert!(script.contains("check_needed \"$out/$lib\" \"${LINKS[@]}\""));
}

#[test]
fn a_library_that_links_more_than_stated_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let extra = shared_lib(dir.path(), "extra", "int extra(void) { return 1; }\n", &[]);
    assert!(extra.exists());
    let plain = shared_lib(
        dir.path(),
        "plain",
        "#include <math.h>\n#include <stdio.h>\n\
         double f(double x) { puts(\"f\"); return sqrt(x); }\n",
        &["-lm"],
    );
    let more = shared_lib(
        dir.path(),
        "more",
        "int extra(void);\nint g(void) { return extra(); }\n",
        &["-lextra"],
    );
    let (ok, said) = check_needed(&plain, &["libm.so.6", "libc.so.6"]);
    assert!(ok, "{said}");
    // The order of the stated names does not matter.
    let (ok, said) = check_needed(&plain, &["libc.so.6", "libm.so.6"]);
    assert!(ok, "{said}");
    // An extra library (as tcmalloc was) is named.
    let (ok, said) = check_needed(&more, &["libc.so.6"]);
    assert!(!ok);
    assert!(said.contains("also needs libextra.so"), "{said}");
    // So is a stated one that is missing: the statement must be exact.
    let (ok, said) = check_needed(&plain, &["libm.so.6", "libc.so.6", "libsnappy.so.1"]);
    assert!(!ok);
    assert!(said.contains("lacks libsnappy.so.1"), "{said}");
    // Not a library at all.
    let (ok, said) = check_needed(&dir.path().join("plain.c"), &["libc.so.6"]);
    assert!(!ok);
    assert!(said.contains("not an ELF file"), "{said}");
}

/// Where this checkout has built RocksDB (`make bench` did), the library it keeps links
/// what the script states.
#[test]
fn a_kept_rocksdb_build_links_what_its_script_states() {
    let lib = root().join("target/rocksdb-native/librocksdb.so");
    if !lib.exists() {
        eprintln!("no RocksDB built in this checkout: its build checks itself when it runs");
        return;
    }
    let links = stated_links();
    let names: Vec<&str> = links.iter().map(String::as_str).collect();
    let (ok, said) = check_needed(&lib, &names);
    assert!(ok, "{said}");
}
