//! Gives the shared library LevelDB's soname, so programs linked against it look for
//! `libleveldb.so.1` as they would for LevelDB's own build.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libleveldb.so.1");
}
