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
    for (feature, lib) in [
        ("ROCKSDB", "rocksdb"),
        ("LMDB", "lmdb"),
        ("KYOTO", "kyotocabinet"),
    ] {
        if std::env::var_os(format!("CARGO_FEATURE_{feature}")).is_some() {
            println!("cargo:rustc-link-lib={lib}");
        }
    }
}
