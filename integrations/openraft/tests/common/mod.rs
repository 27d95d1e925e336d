//! What the cluster tests share: the linearizability checker, the reads that close a
//! history, a repeatable generator, a database to run a store on.

// Each test binary uses a part of this module.
#![allow(dead_code)]

pub mod linearizable;

use std::sync::Arc;
use std::time::Instant;

use linearizable::{Kind, Op};
use strata_openraft::service::Client;

/// Reads each of `keys` through the leader, one after another, as operations timed from
/// `start` (each read's key with it): the reads that close every key's history.
pub async fn closing_reads(
    reader: &mut Client,
    keys: &[&str],
    start: Instant,
) -> Vec<(String, Op)> {
    let now = || start.elapsed().as_nanos() as u64;
    let mut reads = Vec::new();
    for &key in keys {
        let invoke = now();
        let seen = reader.read(key).await.unwrap();
        reads.push((
            key.to_string(),
            Op {
                invoke,
                ret: Some(now()),
                kind: Kind::Read(seen),
            },
        ));
    }
    reads
}

/// A small repeatable generator (xorshift): a test's choices, replayed from its seed.
pub struct Rng(pub u64);

impl Rng {
    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A Strata database in `dir`, created if missing.
pub fn open_db(dir: &std::path::Path) -> Arc<strata::Db> {
    Arc::new(
        strata::Db::open(
            dir,
            strata::Options {
                create_if_missing: true,
                ..Default::default()
            },
        )
        .unwrap(),
    )
}
