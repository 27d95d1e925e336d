//! Links the system libraries of the peers whose features are on.
fn main() {
    #[cfg(feature = "wiredtiger")]
    {
        println!("cargo:rerun-if-changed=csrc/wiredtiger_shim.c");
        cc::Build::new()
            .file("csrc/wiredtiger_shim.c")
            .compile("wiredtiger_shim");
        println!("cargo:rustc-link-lib=wiredtiger");
    }
    // Set when the linked RocksDB exports `rocksdb_transactiondb_get_base_db` (a release
    // library from `STRATA_BENCH_ROCKSDB_DIR`; Debian's 7.8.3 lacks it): the
    // `rocksdb-pessimistic` column needs it.
    println!("cargo::rustc-check-cfg=cfg(rocksdb_base_db)");
    if std::env::var_os("CARGO_FEATURE_ROCKSDB").is_some() {
        link_rocksdb();
    }
    for (feature, lib) in [("LMDB", "lmdb"), ("KYOTO", "kyotocabinet")] {
        if std::env::var_os(format!("CARGO_FEATURE_{feature}")).is_some() {
            println!("cargo:rustc-link-lib={lib}");
        }
    }
}

/// RocksDB: a release library in `$STRATA_BENCH_ROCKSDB_DIR` when that is set (found at
/// run time through the binary's rpath): `librocksdb.so`, built here for this CPU by
/// `scripts/build-rocksdb-release.sh`, or the portable one `scripts/fetch-rocksdb-release.sh`
/// takes out of Maven's jar; otherwise Debian's `librocksdb`. The peer reports which
/// (`STRATA_ROCKSDB_BUILD`).
fn link_rocksdb() {
    println!("cargo:rerun-if-env-changed=STRATA_BENCH_ROCKSDB_DIR");
    match std::env::var("STRATA_BENCH_ROCKSDB_DIR") {
        Ok(dir) if !dir.is_empty() => {
            let info = std::path::Path::new(&dir).join("BUILD_INFO");
            println!("cargo:rerun-if-changed={}", info.display());
            let build = std::fs::read_to_string(&info)
                .map(|s| s.lines().collect::<Vec<_>>().join("; "))
                .unwrap_or_else(|_| format!("release library from {dir}"));
            println!("cargo:rustc-link-search=native={dir}");
            if std::path::Path::new(&dir).join("librocksdb.so").exists() {
                println!("cargo:rustc-link-lib=dylib=rocksdb");
            } else {
                println!("cargo:rustc-link-lib=dylib:+verbatim=librocksdbjni-linux64.so");
            }
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
            println!("cargo:rustc-cfg=rocksdb_base_db");
            println!("cargo:rustc-env=STRATA_ROCKSDB_BUILD={build}");
        }
        _ => {
            println!("cargo:rustc-link-lib=rocksdb");
            println!(
                "cargo:rustc-env=STRATA_ROCKSDB_BUILD=7.8.3 (Debian's librocksdb: no release \
                 build type, assertions on; scripts/fetch-rocksdb-release.sh gives a release build)"
            );
        }
    }
}
