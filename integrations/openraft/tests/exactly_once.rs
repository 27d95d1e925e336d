//! RS5: a write carrying a session applies at most once, however often it is sent: on
//! the state machine directly (duplicates in one entry, in later entries, after a
//! snapshot is installed, and what a bounded table forgets), and on a three-node cluster
//! where clients resend writes at random, some while the first send is still in flight,
//! with the history checked linearizable (a second application of a write would bring
//! back a value a later write replaced).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::linearizable::{Kind, Op, linearizable};
use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::{BasicNode, CommittedLeaderId, Entry, EntryPayload, LogId};
use strata_openraft::service::{CallError, Client, KvRaft};
use strata_openraft::{
    Proposal, Request, Response, Session, StrataStateMachine, TypeConfig, Write, keys,
};

fn machine(dir: &std::path::Path) -> StrataStateMachine {
    StrataStateMachine::open(dir, strata::Options::default()).unwrap()
}

fn set(client: u64, seq: u64, key: &str, value: &str) -> Write {
    Write {
        session: Some(Session { client, seq }),
        request: Request::Set {
            key: key.into(),
            value: value.into(),
        },
    }
}

fn entry(index: u64, writes: Vec<Write>) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 0), index),
        payload: EntryPayload::Normal(Proposal { writes }),
    }
}

fn applied(previous: Option<&str>) -> Response {
    Response {
        previous: previous.map(String::from),
        duplicate: false,
    }
}

fn duplicate(previous: Option<&str>) -> Response {
    Response {
        previous: previous.map(String::from),
        duplicate: true,
    }
}

#[tokio::test]
async fn a_resent_write_applies_once_and_answers_as_it_did() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = machine(dir.path());
    // Client 1 sets k; client 2 overwrites it; client 1's resend must not bring its
    // value back, in the same entry or a later one.
    let out = sm
        .apply(vec![entry(
            1,
            vec![
                set(1, 1, "k", "a"),
                set(2, 1, "k", "b"),
                set(1, 1, "k", "a"),
            ],
        )])
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![vec![applied(None), applied(Some("a")), duplicate(None)]]
    );
    assert_eq!(sm.get("k").unwrap().as_deref(), Some("b"));

    let out = sm
        .apply(vec![
            entry(2, vec![set(1, 1, "k", "a")]),
            entry(3, vec![set(2, 1, "k", "b"), set(1, 2, "k", "c")]),
            // An older write than the client's last: applied before, not again.
            entry(4, vec![set(1, 1, "k", "a")]),
        ])
        .await
        .unwrap();
    assert_eq!(
        out,
        vec![
            vec![duplicate(None)],
            vec![duplicate(Some("a")), applied(Some("b"))],
            vec![duplicate(None)],
        ]
    );
    assert_eq!(sm.get("k").unwrap().as_deref(), Some("c"));

    // A write without a session applies each time.
    let plain = Write {
        session: None,
        request: Request::Set {
            key: "k".into(),
            value: "p".into(),
        },
    };
    let out = sm
        .apply(vec![entry(5, vec![plain.clone(), plain])])
        .await
        .unwrap();
    assert_eq!(out, vec![vec![applied(Some("c")), applied(Some("p"))]]);
}

#[tokio::test]
async fn sessions_survive_a_reopen_and_travel_in_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    {
        let mut sm = machine(dir.path());
        sm.apply(vec![entry(1, vec![set(7, 1, "k", "a")])])
            .await
            .unwrap();
    }
    // Reopened: the session is on disk with the write.
    let mut sm = machine(dir.path());
    let out = sm
        .apply(vec![entry(
            2,
            vec![set(7, 1, "k", "a"), set(8, 1, "k", "b")],
        )])
        .await
        .unwrap();
    assert_eq!(out, vec![vec![duplicate(None), applied(Some("a"))]]);

    // A snapshot of it, installed on a fresh machine, knows both sessions.
    let snapshot = sm
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    let other = tempfile::tempdir().unwrap();
    let mut sm2 = machine(other.path());
    sm2.apply(vec![entry(1, vec![set(9, 1, "z", "gone")])])
        .await
        .unwrap();
    sm2.install_snapshot(&snapshot.meta, snapshot.snapshot)
        .await
        .unwrap();
    let out = sm2
        .apply(vec![entry(
            3,
            vec![
                set(7, 1, "k", "a"),
                set(8, 1, "k", "b"),
                set(9, 1, "z", "again"),
            ],
        )])
        .await
        .unwrap();
    // Client 9's session was not in the snapshot: its write applies.
    assert_eq!(
        out,
        vec![vec![duplicate(None), duplicate(Some("a")), applied(None)]]
    );
    assert_eq!(sm2.get("k").unwrap().as_deref(), Some("b"));
}

#[tokio::test]
async fn the_session_table_is_bounded_and_forgets_the_longest_idle() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = machine(dir.path()).with_session_limit(3);
    let db = sm.db();
    for client in 1..=3u64 {
        sm.apply(vec![entry(client, vec![set(client, 1, "k", "v")])])
            .await
            .unwrap();
    }
    // Client 1 writes again (now the most recent); client 4 arrives: client 2, idle
    // longest, is forgotten.
    sm.apply(vec![entry(
        4,
        vec![set(1, 2, "k", "v1"), set(4, 1, "k", "v4")],
    )])
    .await
    .unwrap();
    let sessions: Vec<u64> = db
        .range(keys::SESSION.to_vec()..keys::SESSION_END.to_vec())
        .map(|kv| keys::session_client(&kv.unwrap().0).unwrap())
        .collect();
    assert_eq!(sessions, vec![1, 3, 4]);
    let ages = db
        .range(keys::SESSION_AGE.to_vec()..keys::SESSION_AGE_END.to_vec())
        .count();
    assert_eq!(ages, 3, "one age key per session");
    assert_eq!(
        db.get(keys::SESSION_COUNT).unwrap().as_deref(),
        Some(&b"3"[..])
    );
    let out = sm
        .apply(vec![entry(
            5,
            vec![
                set(1, 2, "k", "x"),
                set(3, 1, "k", "x"),
                set(4, 1, "k", "x"),
                set(2, 1, "k", "again"),
            ],
        )])
        .await
        .unwrap();
    let dups: Vec<bool> = out[0].iter().map(|r| r.duplicate).collect();
    assert_eq!(
        dups,
        vec![true, true, true, false],
        "client 2 was forgotten"
    );
}

/// Every record of the state machine but the kept snapshot and the membership (a
/// snapshot writes the default one, a log without membership entries none): values,
/// sessions, their age index and count, the applied id.
fn records(db: &strata::Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.range(b"a/".to_vec()..b"t".to_vec())
        .map(Result::unwrap)
        .filter(|(k, _)| !k.starts_with(keys::MEMBERSHIP))
        .collect()
}

/// A log of proposals from 8 clients over 5 keys: new writes, and resends of a client's
/// earlier writes (its last or older), with a session table of 3 forgetting often.
fn random_log(rng: &mut common::Rng, entries: u64) -> Vec<Entry<TypeConfig>> {
    let mut seqs = [0u64; 8];
    (1..=entries)
        .map(|index| {
            let writes = (0..1 + rng.below(4))
                .map(|_| {
                    let client = rng.below(8);
                    let seq = if seqs[client as usize] > 0 && rng.below(3) == 0 {
                        1 + rng.below(seqs[client as usize])
                    } else {
                        seqs[client as usize] += 1;
                        seqs[client as usize]
                    };
                    let key = format!("k{}", rng.below(5));
                    set(client + 1, seq, &key, &format!("{client}-{seq}-{index}"))
                })
                .collect();
            entry(index, writes)
        })
        .collect()
}

#[tokio::test]
async fn replicas_agree_however_entries_are_grouped_and_through_a_snapshot() {
    for seed in 1..=20u64 {
        let mut rng = common::Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let log = random_log(&mut rng, 120);
        let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
        let machine = |dir: &std::path::Path| machine(dir).with_session_limit(3);
        // One entry a call.
        let mut one = machine(dirs[0].path());
        let mut answers_one = Vec::new();
        for e in &log {
            answers_one.extend(one.apply(vec![e.clone()]).await.unwrap());
        }
        // Random groups.
        let mut grouped = machine(dirs[1].path());
        let mut answers_grouped = Vec::new();
        let mut rest = &log[..];
        while !rest.is_empty() {
            let n = (1 + rng.below(8) as usize).min(rest.len());
            answers_grouped.extend(grouped.apply(rest[..n].to_vec()).await.unwrap());
            rest = &rest[n..];
        }
        assert_eq!(
            answers_one, answers_grouped,
            "seed {seed}: the answers differ"
        );
        assert!(
            records(&one.db()) == records(&grouped.db()),
            "seed {seed}: grouping changed the state"
        );
        // Half the log, a snapshot installed elsewhere, the other half there.
        let half = log.len() / 2;
        let src_dir = tempfile::tempdir().unwrap();
        let mut src = machine(src_dir.path());
        src.apply(log[..half].to_vec()).await.unwrap();
        let snap = src
            .get_snapshot_builder()
            .await
            .build_snapshot()
            .await
            .unwrap();
        let mut installed = machine(dirs[2].path());
        installed
            .install_snapshot(&snap.meta, snap.snapshot)
            .await
            .unwrap();
        installed.apply(log[half..].to_vec()).await.unwrap();
        assert!(
            records(&one.db()) == records(&installed.db()),
            "seed {seed}: a snapshot and the rest of the log gave another state"
        );
    }
}

/// Three nodes in this process, each on Strata in `root`.
async fn cluster(root: &std::path::Path) -> (Vec<KvRaft>, BTreeMap<u64, String>) {
    let mut listeners = Vec::new();
    let mut peers = BTreeMap::new();
    for id in 1..=3u64 {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        peers.insert(id, l.local_addr().unwrap().to_string());
        listeners.push((id, l));
    }
    let config = openraft::Config {
        cluster_name: "exactly-once".into(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        ..Default::default()
    };
    let mut rafts = Vec::new();
    for (id, l) in listeners {
        let dir = root.join(format!("node{id}"));
        let (raft, _server) = strata_openraft::service::start_node(id, &dir, config.clone(), l)
            .await
            .unwrap();
        rafts.push(raft);
    }
    let members: BTreeMap<u64, BasicNode> = peers
        .iter()
        .map(|(id, addr)| (*id, BasicNode { addr: addr.clone() }))
        .collect();
    rafts[0].initialize(members).await.unwrap();
    (rafts, peers)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_resent_at_random_apply_once_on_a_cluster() {
    let root = tempfile::tempdir().unwrap();
    let (rafts, peers) = cluster(root.path()).await;
    let mut probe = Client::new(peers.clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    while probe.read("warm").await.is_err() {
        assert!(Instant::now() < deadline, "no leader in 20 s");
    }

    const KEYS: [&str; 2] = ["x", "y"];
    let start = Instant::now();
    let now = move || start.elapsed().as_nanos() as u64;
    let history: Arc<Mutex<BTreeMap<String, Vec<Op>>>> = Arc::default();
    let resends = Arc::new(Mutex::new((0usize, 0usize)));
    let clients: Vec<_> = (0..4u64)
        .map(|me| {
            let (peers, history, resends) =
                (peers.clone(), Arc::clone(&history), Arc::clone(&resends));
            tokio::spawn(async move {
                let mut rng = common::Rng(0x9E37_79B9_7F4A_7C15 ^ (me + 1));
                let mut c = Client::new(peers.clone());
                // A second connection under the same session: a resend racing the first.
                let mut twin = Client::new(peers);
                // Long attempts: a client's own resend after a timed-out attempt would
                // answer `duplicate` where the test expects the first application.
                c.timeout = Duration::from_secs(10);
                twin.timeout = Duration::from_secs(10);
                for n in 1..=150u64 {
                    let key = KEYS[rng.below(2) as usize];
                    let invoke = now();
                    if rng.below(3) == 0 {
                        let seen = c.read(key).await.unwrap();
                        let ret = Some(now());
                        history
                            .lock()
                            .unwrap()
                            .entry(key.into())
                            .or_default()
                            .push(Op {
                                invoke,
                                ret,
                                kind: Kind::Read(seen),
                            });
                        continue;
                    }
                    let value = format!("c{me}-{n}");
                    let request = Request::Set {
                        key: key.into(),
                        value: value.clone(),
                    };
                    let write = Write {
                        session: Some(Session {
                            client: c.id(),
                            seq: n,
                        }),
                        request: request.clone(),
                    };
                    let first = match rng.below(3) {
                        // Sent twice at once: one of them applies.
                        0 => {
                            let (a, b) = tokio::join!(c.submit(&write), twin.submit(&write));
                            let (a, b) = (a.unwrap(), b.unwrap());
                            assert!(
                                a.duplicate != b.duplicate,
                                "exactly one of two racing sends applies: {a:?} {b:?}"
                            );
                            resends.lock().unwrap().0 += 1;
                            if a.duplicate { b } else { a }
                        }
                        // Sent, then sent again after its answer.
                        1 => {
                            let a = c.submit(&write).await.unwrap();
                            let again = c.submit(&write).await.unwrap();
                            assert!(!a.duplicate && again.duplicate, "{a:?} then {again:?}");
                            assert_eq!(
                                a.previous, again.previous,
                                "the resend answers as the first did"
                            );
                            resends.lock().unwrap().1 += 1;
                            a
                        }
                        _ => c.submit(&write).await.unwrap(),
                    };
                    assert!(!first.duplicate);
                    let ret = Some(now());
                    // Later: a stray copy of this write, sent after newer ones.
                    if rng.below(4) == 0 && n > 1 {
                        let old = Write {
                            session: Some(Session {
                                client: c.id(),
                                seq: n - 1,
                            }),
                            request: Request::Set {
                                key: key.into(),
                                value: format!("stale-{me}-{n}"),
                            },
                        };
                        match twin.submit(&old).await {
                            Ok(r) => assert!(r.duplicate, "a stale resend applied: {r:?}"),
                            Err(CallError::Unknown(e) | CallError::Refused(e)) => {
                                panic!("a stale resend failed: {e}")
                            }
                        }
                    }
                    history
                        .lock()
                        .unwrap()
                        .entry(key.into())
                        .or_default()
                        .push(Op {
                            invoke,
                            ret,
                            kind: Kind::Write(value),
                        });
                }
            })
        })
        .collect();
    for c in clients {
        c.await.unwrap();
    }
    let mut reader = Client::new(peers);
    for key in KEYS {
        let invoke = now();
        let seen = reader.read(key).await.unwrap();
        // A stale resend's value must never be seen.
        assert!(
            !seen.as_deref().unwrap_or("").starts_with("stale"),
            "{key} = {seen:?}"
        );
        history
            .lock()
            .unwrap()
            .entry(key.into())
            .or_default()
            .push(Op {
                invoke,
                ret: Some(now()),
                kind: Kind::Read(seen),
            });
    }
    let (racing, after) = *resends.lock().unwrap();
    println!("{racing} writes sent twice at once, {after} resent after their answer");
    assert!(
        racing > 20 && after > 20,
        "too few resends to test anything"
    );
    for (key, ops) in history.lock().unwrap().iter() {
        assert!(
            linearizable(ops),
            "the history of {key} is not linearizable"
        );
    }
    for r in rafts {
        r.shutdown().await.unwrap();
    }
}
