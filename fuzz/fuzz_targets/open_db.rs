//! Any bytes as a database directory (CURRENT, a manifest, a log): opening it and reading
//! everything returns data or an error, never a panic. Exercises CURRENT parsing, manifest
//! replay and WAL recovery together.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::env::{Env, MemEnv};
use strata::{Db, Options};

fuzz_target!(|data: &[u8]| {
    // Layout: [len CURRENT][CURRENT][len manifest (2 bytes)][manifest][log...]
    let mut rest = data;
    let take = |n: usize, rest: &mut &[u8]| {
        let n = n.min(rest.len());
        let (a, b) = rest.split_at(n);
        *rest = b;
        a.to_vec()
    };
    let n = take(1, &mut rest).first().copied().unwrap_or(0) as usize;
    let current = take(n, &mut rest);
    let len = take(2, &mut rest);
    let m = len.iter().fold(0usize, |a, b| a << 8 | *b as usize);
    let manifest = take(m, &mut rest);
    let log = rest.to_vec();
    let env = MemEnv::new();
    let dir = Path::new("/db");
    env.create_dir_all(dir).unwrap();
    env.set_contents(&dir.join("CURRENT"), current);
    env.set_contents(&dir.join("MANIFEST-000002"), manifest);
    env.set_contents(&dir.join("000003.log"), log);
    let options = Options {
        env: Arc::new(env.clone()),
        ..Options::default()
    };
    if let Ok(db) = Db::open(dir, options) {
        for item in db.range::<&[u8]>(..) {
            if item.is_err() {
                break;
            }
        }
        let _ = db.verify();
    }
});
