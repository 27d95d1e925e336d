//! Links the system libraries of the peers whose features are on.
fn main() {
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
