//! Transactions (`Db::transaction`): each test is an anomaly that a wrong check would let
//! through. A bank whose total must hold in every snapshot while eight threads move money;
//! write skew; sibling transactions on one snapshot (a registration ended twice); a
//! phantom insert into a scanned range; ranges that intersect; a counter
//! bumped by compare-and-swap from several threads; reads of a transaction's own writes;
//! a history of random transactions whose dependency graph must have no cycle; the bank
//! under simulated power cuts.
//!
//! Sizes grow with `STRATA_TXN_TRANSFERS`, `STRATA_TXN_SWAPS`, `STRATA_TXN_HISTORY`,
//! `STRATA_TXN_CRASHES` (`make soak`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed unwrap is a failed test"
)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};

use common::{Rng, env_u64};
use strata::{Db, Error, Options, ReadOptions};

fn open(dir: &std::path::Path) -> Db {
    let options = Options {
        create_if_missing: true,
        // Small memtables: flushes and compactions run under the transactions.
        write_buffer_size: 64 << 10,
        ..Default::default()
    };
    Db::open(dir, options).unwrap()
}

fn number(v: Option<Vec<u8>>) -> i64 {
    v.map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap())
}

fn account(i: u64) -> String {
    format!("acct/{i:04}")
}

/// The sum of every account as of `snapshot` (or now).
fn total(db: &Db, snapshot: Option<strata::Snapshot>) -> i64 {
    let options = ReadOptions {
        snapshot,
        ..Default::default()
    };
    db.range_opt("acct/".."acct0", false, &options)
        .map(|kv| number(Some(kv.unwrap().1)))
        .sum()
}

#[test]
fn bank_transfers_keep_the_total_in_every_snapshot() {
    const ACCOUNTS: u64 = 50;
    const THREADS: u64 = 8;
    let transfers = env_u64("STRATA_TXN_TRANSFERS", 100_000);
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(open(tmp.path()));
    for i in 0..ACCOUNTS {
        db.put(account(i), "1000").unwrap();
    }
    let want = 1000 * ACCOUNTS as i64;
    let stop = Arc::new(AtomicBool::new(false));
    let conflicts = Arc::new(AtomicU64::new(0));
    let auditor = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut audits = 0u64;
            while !stop.load(Ordering::Relaxed) || audits == 0 {
                assert_eq!(total(&db, Some(db.snapshot())), want, "a snapshot's total");
                // A transaction's range sees one snapshot too.
                let mut txn = db.transaction();
                let sum: i64 = txn
                    .range("acct/".."acct0")
                    .map(|kv| number(Some(kv.unwrap().1)))
                    .sum();
                assert_eq!(sum, want, "a transaction's total");
                audits += 1;
            }
            audits
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (db, conflicts) = (Arc::clone(&db), Arc::clone(&conflicts));
            std::thread::spawn(move || {
                let mut rng = Rng::new(t + 1);
                for _ in 0..transfers / THREADS {
                    let from = rng.below(ACCOUNTS);
                    let to = (from + 1 + rng.below(ACCOUNTS - 1)) % ACCOUNTS;
                    let amount = rng.below(20) as i64;
                    let mut tries = 0;
                    db.transact(1000, |txn| {
                        tries += 1;
                        let a = number(txn.get(account(from))?);
                        let b = number(txn.get(account(to))?);
                        txn.put(account(from), (a - amount).to_string());
                        txn.put(account(to), (b + amount).to_string());
                        Ok(())
                    })
                    .unwrap();
                    conflicts.fetch_add(tries - 1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let audits = auditor.join().unwrap();
    assert_eq!(total(&db, None), want);
    eprintln!(
        "{transfers} transfers, {} conflicts retried, {audits} audits",
        conflicts.load(Ordering::Relaxed)
    );
    // Reopened, the total holds too.
    drop(Arc::into_inner(db).unwrap());
    let db = open(tmp.path());
    assert_eq!(total(&db, None), want);
}

#[test]
fn write_skew_is_rejected() {
    // Two doctors on call; each goes off call if the other is still on. Under snapshot
    // isolation both commit and nobody is on call.
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    db.put("oncall/alice", "1").unwrap();
    db.put("oncall/bob", "1").unwrap();
    let mut t1 = db.transaction();
    let mut t2 = db.transaction();
    let on = |t: &mut strata::Transaction<'_>| {
        number(t.get("oncall/alice").unwrap()) + number(t.get("oncall/bob").unwrap())
    };
    assert_eq!(on(&mut t1), 2);
    assert_eq!(on(&mut t2), 2);
    t1.put("oncall/alice", "0");
    t2.put("oncall/bob", "0");
    t1.commit().unwrap();
    let e = t2.commit().unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert!(matches!(e, Error::Conflict(_)));
    assert_eq!(number(db.get("oncall/bob").unwrap()), 1, "t2 wrote nothing");
}

#[test]
fn a_commit_ends_only_its_own_registration() {
    // Three transactions on one snapshot. Each commit, conflicting or not, and each drop
    // must end its own registration once: ending one twice would end a sibling's, whose
    // snapshot then has no records kept for it, and its stale read would commit.
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    db.put("x", "0").unwrap();
    let mut reader = db.transaction();
    let mut blind = db.transaction();
    let mut loser = db.transaction();
    let dropped = db.transaction();
    assert_eq!(number(reader.get("y").unwrap()), 0);
    assert_eq!(number(loser.get("x").unwrap()), 0);
    blind.put("x", "1");
    blind.commit().unwrap();
    loser.put("w", "1");
    assert!(
        loser.commit().unwrap_err().is_conflict(),
        "x changed under it"
    );
    drop(dropped);
    db.put("y", "1").unwrap(); // after the reader's snapshot: must be recorded
    reader.put("z", "1");
    let e = reader.commit().unwrap_err();
    assert!(
        e.is_conflict(),
        "y was written after the reader read it: {e}"
    );
    assert_eq!(db.get("z").unwrap(), None);
}

#[test]
fn a_phantom_insert_into_a_scanned_range_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    db.put("job/1", "x").unwrap();
    // T1 counts the jobs and records the count; T2 adds a job meanwhile.
    let mut t1 = db.transaction();
    let n = t1.range("job/".."job0").count();
    assert_eq!(n, 1);
    db.put("job/2", "y").unwrap(); // a plain write conflicts as a transaction's does
    t1.put("jobs", n.to_string());
    assert!(t1.commit().unwrap_err().is_conflict());
    // A write outside the range does not.
    let mut t1 = db.transaction();
    let n = t1.range("job/".."job0").count();
    db.put("other", "z").unwrap();
    t1.put("jobs", n.to_string());
    t1.commit().unwrap();
    // A delete in the range is a write into it too.
    let mut t1 = db.transaction();
    let _ = t1.range_rev("job/".."job0").count();
    db.delete("job/1").unwrap();
    t1.put("jobs", "2");
    assert!(t1.commit().unwrap_err().is_conflict());
    // An empty range: an insert into it is a phantom too.
    let mut t1 = db.transaction();
    assert_eq!(t1.range("queue/".."queue0").count(), 0);
    let mut t2 = db.transaction();
    t2.put("queue/1", "a");
    t2.commit().unwrap();
    t1.put("queue/0", "b");
    assert!(t1.commit().unwrap_err().is_conflict());
}

#[test]
fn intersecting_ranges_conflict_and_disjoint_ones_do_not() {
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    for k in ["a1", "a2", "b1", "b2", "c1"] {
        db.put(k, "1").unwrap();
    }
    // T1 sums a..b and inserts b3; T2 sums b..c and inserts a3, commits first.
    let mut t1 = db.transaction();
    let mut t2 = db.transaction();
    assert_eq!(t1.range("a".."b").count(), 2);
    assert_eq!(t2.range("b".."c").count(), 2);
    t1.put("b3", "1");
    t2.put("a3", "1");
    t2.commit().unwrap();
    assert!(t1.commit().unwrap_err().is_conflict());
    // Disjoint: both commit.
    let mut t1 = db.transaction();
    let mut t2 = db.transaction();
    let _ = t1.range("a".."b").count();
    let _ = t2.range("c".."d").count();
    t1.put("a9", "1");
    t2.put("c9", "1");
    t1.commit().unwrap();
    t2.commit().unwrap();
    // A scan stopped early still holds its whole range.
    let mut t1 = db.transaction();
    let first = t1.range::<&str>(..).next().unwrap().unwrap();
    assert_eq!(first.0, b"a1");
    db.put("zz", "late").unwrap();
    t1.put("a1", "2");
    assert!(t1.commit().unwrap_err().is_conflict());
}

#[test]
fn a_counter_bumped_by_compare_and_swap_counts_every_success() {
    const THREADS: u64 = 4;
    let bumps = env_u64("STRATA_TXN_SWAPS", 500);
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(open(tmp.path()));
    let start = Arc::new(Barrier::new(THREADS as usize));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (db, start) = (Arc::clone(&db), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                let mut done = 0u64;
                while done < bumps {
                    let cur = db.get("counter").unwrap();
                    let next = (number(cur.clone()) + 1).to_string();
                    if db
                        .compare_and_swap("counter", cur.as_deref(), Some(next.as_bytes()))
                        .unwrap()
                    {
                        done += 1;
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    assert_eq!(number(db.get("counter").unwrap()), (THREADS * bumps) as i64);
}

#[test]
fn a_transaction_reads_its_own_writes_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    for k in ["a", "b", "c", "d", "e"] {
        db.put(k, format!("db-{k}")).unwrap();
    }
    let mut t = db.transaction();
    t.put("b", "own-b");
    t.delete("c");
    t.put("bb", "own-bb");
    t.delete_range("d", "f");
    t.put("e", "own-e"); // after the range delete: it stays
    db.put("a", "late").unwrap(); // after the snapshot: unseen
    assert_eq!(t.get("a").unwrap().as_deref(), Some(&b"db-a"[..]));
    assert_eq!(t.get("b").unwrap().as_deref(), Some(&b"own-b"[..]));
    assert_eq!(t.get("c").unwrap(), None);
    assert_eq!(t.get("d").unwrap(), None);
    let forward: Vec<_> = t.range::<&str>(..).map(|kv| kv.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = [
        ("a", "db-a"),
        ("b", "own-b"),
        ("bb", "own-bb"),
        ("e", "own-e"),
    ]
    .iter()
    .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
    .collect();
    assert_eq!(forward, want);
    let mut backward: Vec<_> = t.range_rev("a".."z").map(|kv| kv.unwrap()).collect();
    backward.reverse();
    assert_eq!(backward, want);
    let inner: Vec<_> = t.range("b"..="bb").map(|kv| kv.unwrap().0).collect();
    assert_eq!(inner, vec![b"b".to_vec(), b"bb".to_vec()]);
    // It read "a", which changed after its snapshot.
    assert!(t.commit().unwrap_err().is_conflict());
    // The same writes without that read commit, range delete included.
    let mut t = db.transaction();
    t.put("b", "own-b");
    t.delete_range("d", "f");
    t.put("e", "own-e");
    t.commit().unwrap();
    let now: Vec<_> = db.range::<&str>(..).map(|kv| kv.unwrap().0).collect();
    assert_eq!(
        now,
        vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec(), b"e".to_vec()]
    );
}

#[test]
fn blind_writes_and_read_only_transactions_commit() {
    let tmp = tempfile::tempdir().unwrap();
    let db = open(tmp.path());
    let mut reader = db.transaction();
    assert_eq!(reader.get("k").unwrap(), None);
    let mut writer = db.transaction();
    writer.put("k", "v");
    db.put("k", "other").unwrap();
    writer.commit().unwrap(); // it read nothing
    reader.commit().unwrap(); // it wrote nothing: its reads were one snapshot
    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"v"[..]));
    // A retry helper gives up after its attempts, with the conflict.
    let mut n = 0;
    let e = db
        .transact(3, |t| {
            n += 1;
            t.get("k")?;
            db.put("k", format!("bump{n}"))?;
            t.put("k", "mine");
            Ok(())
        })
        .unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(n, 3);
}

/// One committed transaction as the history checker sees it.
#[derive(Debug, Default)]
struct Committed {
    /// (key, the transaction whose write it saw; 0: the initial value).
    reads: Vec<(u64, u64)>,
    /// (key, the transaction whose write it replaced), every write being a
    /// read-modify-write, so each key's versions form a chain.
    writes: Vec<(u64, u64)>,
}

/// Random read-modify-write transactions on a few keys, from four threads: point reads,
/// forward and reverse range scans, writes. Every value names the transaction that
/// wrote it, so each key's versions form a chain, and the committed history's
/// dependency graph (write-read, write-write, and read-write anti-dependencies, Adya's
/// DSG) must have no cycle: the transactions were serializable. Lost updates (two
/// commits replacing one version) and reads of values no committed transaction wrote
/// fail it too; the final state must end every chain.
#[test]
fn a_history_of_random_transactions_is_serializable() {
    const KEYS: u64 = 16;
    const THREADS: u64 = 4;
    let per_thread = env_u64("STRATA_TXN_HISTORY", 1500);
    let tmp = tempfile::tempdir().unwrap();
    let db = Arc::new(open(tmp.path()));
    let key = |k: u64| format!("h/{k:02}");
    let parse = |v: Vec<u8>| -> u64 { String::from_utf8(v).unwrap().parse().unwrap() };
    for k in 0..KEYS {
        db.put(key(k), "0").unwrap();
    }
    let next_id = Arc::new(AtomicU64::new(1));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (db, next_id) = (Arc::clone(&db), Arc::clone(&next_id));
            std::thread::spawn(move || {
                let mut rng = Rng::new(100 + t);
                let mut history = Vec::new();
                let mut aborts = 0u64;
                for _ in 0..per_thread {
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    let mut txn = db.transaction();
                    let mut c = Committed::default();
                    if rng.below(3) == 0 {
                        let (a, b) = (rng.below(KEYS), rng.below(KEYS));
                        let (lo, hi) = (a.min(b), a.max(b));
                        let scan: Vec<_> = if rng.below(2) == 0 {
                            txn.range(key(lo)..=key(hi)).collect()
                        } else {
                            txn.range_rev(key(lo)..=key(hi)).collect()
                        };
                        for kv in scan {
                            let (k, v) = kv.unwrap();
                            let k: u64 = String::from_utf8(k).unwrap()[2..].parse().unwrap();
                            c.reads.push((k, parse(v)));
                        }
                    }
                    for _ in 0..rng.below(3) {
                        let k = rng.below(KEYS);
                        let v = parse(txn.get(key(k)).unwrap().unwrap());
                        c.reads.push((k, v));
                    }
                    let mut written = Vec::new();
                    for _ in 0..rng.below(3) {
                        let k = rng.below(KEYS);
                        if written.contains(&k) {
                            continue;
                        }
                        written.push(k);
                        let prev = parse(txn.get(key(k)).unwrap().unwrap());
                        c.reads.push((k, prev));
                        c.writes.push((k, prev));
                        txn.put(key(k), id.to_string());
                    }
                    match txn.commit() {
                        Ok(()) => history.push((id, c)),
                        Err(e) if e.is_conflict() => aborts += 1,
                        Err(e) => panic!("{e}"),
                    }
                }
                (history, aborts)
            })
        })
        .collect();
    let mut history = std::collections::BTreeMap::new();
    let mut aborts = 0;
    for w in workers {
        let (h, a) = w.join().unwrap();
        history.extend(h);
        aborts += a;
    }
    // Each key's chain: the version a write replaced -> the writer that replaced it.
    let mut next = std::collections::HashMap::new();
    for (&id, c) in &history {
        for &(k, prev) in &c.writes {
            if let Some(other) = next.insert((k, prev), id) {
                panic!("lost update: {other} and {id} both replaced key {k}'s version {prev}");
            }
        }
    }
    let mut edges: std::collections::BTreeMap<u64, Vec<u64>> = Default::default();
    let mut edge = |from: u64, to: u64| {
        if from != to && from != 0 {
            edges.entry(from).or_default().push(to);
        }
    };
    for (&id, c) in &history {
        for &(k, seen) in &c.reads {
            assert!(
                seen == 0 || history.contains_key(&seen),
                "transaction {id} read key {k} as written by {seen}, which never committed"
            );
            edge(seen, id); // write-read
            if let Some(&later) = next.get(&(k, seen)) {
                edge(id, later); // read-write: it read a version `later` replaced
            }
        }
        for &(_, prev) in &c.writes {
            edge(prev, id); // write-write
        }
    }
    // Kahn's algorithm: a cycle leaves nodes unsorted.
    let mut indegree: std::collections::HashMap<u64, usize> =
        history.keys().map(|&id| (id, 0)).collect();
    for tos in edges.values() {
        for to in tos {
            *indegree.get_mut(to).unwrap() += 1;
        }
    }
    let mut ready: Vec<u64> = indegree
        .iter()
        .filter(|(_, d)| **d == 0)
        .map(|(&id, _)| id)
        .collect();
    let mut sorted = 0;
    while let Some(id) = ready.pop() {
        sorted += 1;
        for to in edges.get(&id).into_iter().flatten() {
            let d = indegree.get_mut(to).unwrap();
            *d -= 1;
            if *d == 0 {
                ready.push(*to);
            }
        }
    }
    assert_eq!(
        sorted,
        history.len(),
        "the committed history has a dependency cycle: not serializable"
    );
    // The database holds each chain's last version.
    for k in 0..KEYS {
        let mut version = 0;
        while let Some(&later) = next.get(&(k, version)) {
            version = later;
        }
        assert_eq!(parse(db.get(key(k)).unwrap().unwrap()), version, "key {k}");
    }
    eprintln!(
        "{} transactions committed, {aborts} aborted, {} dependency edges",
        history.len(),
        edges.values().map(Vec::len).sum::<usize>()
    );
}

/// The bank under power cuts: four threads move money (one commit in four synced) on a
/// simulated filesystem that takes a crash image at a random call in one of its damage
/// modes; each image is opened (with value separation on or off, account values long
/// enough for blob files) and must hold the whole total: a transaction is in the image
/// whole or not at all. Then the bank carries on from the image.
#[test]
fn bank_transfers_survive_power_cuts_whole() {
    use strata::testing::{CrashEnv, Damage};
    const ACCOUNTS: u64 = 20;
    const THREADS: u64 = 4;
    let cycles = env_u64("STRATA_TXN_CRASHES", 150);
    let mut rng = Rng::new(env_u64("STRATA_TXN_CRASH_SEED", 7));
    let options = |env: &CrashEnv, rng: &mut Rng| Options {
        create_if_missing: true,
        write_buffer_size: [4 << 10, 16 << 10][rng.below(2) as usize],
        max_file_size: 8 << 10,
        blob_threshold: [0, 48][rng.below(2) as usize],
        env: Arc::new(env.clone()),
        ..Default::default()
    };
    // A balance padded to a length of its own, so some values go to blob files.
    let balance = |n: i64, pad: u64| format!("{n}{}", " ".repeat(pad as usize));
    let read = |v: Option<Vec<u8>>| -> i64 {
        v.map_or(0, |v| {
            String::from_utf8(v).unwrap().trim_end().parse().unwrap()
        })
    };
    let sum = |db: &Db| -> i64 {
        db.range("acct/".."acct0")
            .map(|kv| read(Some(kv.unwrap().1)))
            .sum()
    };
    let mut env = CrashEnv::new();
    let db = Db::open("/bank", options(&env, &mut rng)).unwrap();
    for i in 0..ACCOUNTS {
        db.put(account(i), balance(100, i * 5)).unwrap();
    }
    db.flush_wal(true).unwrap();
    let want = 100 * ACCOUNTS as i64;
    let mut db = Arc::new(db);
    let mut counts = std::collections::BTreeMap::new();
    for cycle in 0..cycles {
        let damage = Damage::ALL[rng.below(Damage::ALL.len() as u64) as usize];
        env.crash_after(1 + rng.below(200), damage, rng.next_u64());
        let seed = rng.next_u64();
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let db = Arc::clone(&db);
                std::thread::spawn(move || {
                    let mut rng = Rng::new(seed ^ t);
                    for n in 0..25u64 {
                        let from = rng.below(ACCOUNTS);
                        let to = (from + 1 + rng.below(ACCOUNTS - 1)) % ACCOUNTS;
                        let amount = rng.below(30) as i64;
                        let sync = strata::WriteOptions { sync: n % 4 == 0 };
                        let pad = rng.below(80);
                        db.transact_opt(1000, &sync, |txn| {
                            let a = read(txn.get(account(from))?);
                            let b = read(txn.get(account(to))?);
                            txn.put(account(from), balance(a - amount, pad));
                            txn.put(account(to), balance(b + amount, 80 - pad));
                            Ok(())
                        })
                        .unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(sum(&db), want, "cycle {cycle}: the live total");
        let crashed = match env.take_crashed() {
            Some((image, _)) => image,
            None => env.crash(damage, rng.next_u64()),
        };
        drop(Arc::into_inner(db).expect("the workers are done"));
        env = crashed;
        let reopened = Db::open("/bank", options(&env, &mut rng)).unwrap_or_else(|e| {
            panic!("cycle {cycle} ({damage:?}): the bank did not open after a power cut: {e}")
        });
        assert_eq!(
            sum(&reopened),
            want,
            "cycle {cycle} ({damage:?}): a power cut left part of a transaction"
        );
        *counts.entry(format!("{damage:?}")).or_insert(0u64) += 1;
        db = Arc::new(reopened);
    }
    eprintln!("{cycles} power cuts, by damage mode: {counts:?}");
}
