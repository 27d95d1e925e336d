//! Replays the fuzz corpus on stable Rust: every input in `fuzz/replay/<target>/` (the
//! corpus the fuzzers built, minimized by coverage with libFuzzer's `-merge=1`) and
//! `fuzz/seeds/<target>/` goes through its target's check. A panic names the input.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::Instant;

fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files = Vec::new();
    for dir in ["replay", "seeds"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for e in entries {
            files.push(e.unwrap().path());
        }
    }
    files.sort();
    files
}

#[test]
fn every_target_replays_its_corpus() {
    for (target, check) in strata_fuzz_checks::TARGETS {
        let files = inputs(target);
        assert!(
            files.len() >= 10,
            "{target}: only {} corpus inputs; run the fuzzer and scripts/fuzz-replay-update.sh",
            files.len()
        );
        let started = Instant::now();
        for f in &files {
            let data = std::fs::read(f).unwrap();
            if std::panic::catch_unwind(|| check(&data)).is_err() {
                panic!("{target}: the check failed on {}", f.display());
            }
        }
        println!(
            "{target}: {} inputs in {:.1} s",
            files.len(),
            started.elapsed().as_secs_f64()
        );
    }
}
