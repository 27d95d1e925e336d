//! randomtransaction's invariant under fjall 2.11.2's optimistic serializable transactions
//! (`ssi_tx`), with nothing of strata-bench in between: each transaction reads one random
//! key of each of two sets and adds the same amount to both, retried whole when fjall
//! reports a conflict. Serializable transactions keep the two sets' sums equal.
//!
//! Usage: `fjall-ssi-check THREADS TRANSACTIONS_EACH KEYS_A_SET`; `PREFILL=1` writes every
//! key (as 0) first, so that no transaction reads an absent key.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use fjall::{Config, PartitionCreateOptions};

fn key(set: u64, k: u64) -> Vec<u8> {
    format!("{set}-{k:08}").into_bytes()
}

fn value(v: Option<fjall::Slice>) -> u64 {
    v.map_or(0, |s| u64::from_be_bytes(s.as_ref().try_into().expect("an 8-byte value")))
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|s| s.parse::<u64>().expect("a number"));
    let threads = args.next().unwrap_or(4);
    let per = args.next().unwrap_or(20_000);
    let keys = args.next().unwrap_or(1_000);
    let dir = std::env::temp_dir().join(format!("fjall-ssi-check-{}", std::process::id()));
    let keyspace = Config::new(&dir).open_transactional().expect("open");
    let items = keyspace
        .open_partition("kv", PartitionCreateOptions::default())
        .expect("partition");
    if std::env::var("PREFILL").is_ok() {
        for set in 0..2 {
            for k in 0..keys {
                items.insert(key(set, k), 0u64.to_be_bytes()).expect("insert");
            }
        }
    }
    let (keyspace, items) = (Arc::new(keyspace), Arc::new(items));
    let aborts = Arc::new(AtomicU64::new(0));
    // What committed transactions added to each set: both sums must come to this.
    let added = Arc::new(AtomicU64::new(0));
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let (keyspace, items, aborts, added) =
                (keyspace.clone(), items.clone(), aborts.clone(), added.clone());
            std::thread::spawn(move || {
                let mut x = t * 7919 + 1;
                let mut next = || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for _ in 0..per {
                    let (k0, k1, add) = (next() % keys, next() % keys, next() % 100);
                    loop {
                        let mut tx = keyspace.write_tx().expect("begin");
                        let a = value(tx.get(&items, key(0, k0)).expect("get"));
                        let b = value(tx.get(&items, key(1, k1)).expect("get"));
                        tx.insert(&items, key(0, k0), (a + add).to_be_bytes());
                        tx.insert(&items, key(1, k1), (b + add).to_be_bytes());
                        if tx.commit().expect("commit").is_ok() {
                            added.fetch_add(add, Ordering::Relaxed);
                            break;
                        }
                        aborts.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    let sum = |set: u64| (0..keys).map(|k| value(items.get(key(set, k)).expect("get"))).sum::<u64>();
    let (s0, s1) = (sum(0), sum(1));
    let added = added.load(Ordering::Relaxed);
    println!(
        "threads {threads}, {per} transactions each, {keys} keys a set{}, {} conflicts, sums {s0} {s1}, committed adds {added}: {}",
        if std::env::var("PREFILL").is_ok() { " (every key written first)" } else { "" },
        aborts.load(Ordering::Relaxed),
        if s0 == added && s1 == added { "kept" } else { "LOST" }
    );
    drop((keyspace, items));
    let _ = std::fs::remove_dir_all(&dir);
}
