//! Links the system's LevelDB (Debian: `libleveldb-dev`).
fn main() {
    println!("cargo:rustc-link-lib=leveldb");
}
