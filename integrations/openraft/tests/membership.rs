//! Membership changes under a write load: a cluster of three grows to five (each new
//! node added as a learner, then promoted), shrinks back to three by removing two of the
//! first members (the leader among them, if it was one), and replaces a node whose
//! directory was deleted with a new one. Clients write and read throughout; every key's
//! history must be linearizable, and every voter at the end must have applied what the
//! leader has.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::linearizable::{Kind, Op, linearizable};
use strata_openraft::Request;
use strata_openraft::service::{CallError, Client, KvRaft, Status};

const KEYS: [&str; 3] = ["x", "y", "z"];

struct Node {
    raft: KvRaft,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

fn config() -> openraft::Config {
    openraft::Config {
        cluster_name: "membership".into(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(200),
        max_in_snapshot_log_to_keep: 50,
        ..Default::default()
    }
}

async fn start(
    id: u64,
    root: &std::path::Path,
    listeners: &mut BTreeMap<u64, tokio::net::TcpListener>,
) -> Node {
    let l = listeners.remove(&id).unwrap();
    let (raft, server) =
        strata_openraft::service::start_node(id, &root.join(format!("node{id}")), config(), l)
            .await
            .unwrap();
    Node { raft, server }
}

#[derive(Default)]
struct History {
    ops: BTreeMap<String, Vec<Op>>,
    acknowledged: usize,
}

async fn client(
    me: usize,
    nodes: BTreeMap<u64, String>,
    start: Instant,
    stop: Arc<AtomicBool>,
    history: Arc<Mutex<History>>,
) {
    let mut c = Client::new(nodes);
    let now = || start.elapsed().as_nanos() as u64;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let key = KEYS[(n as usize * 7 + me) % KEYS.len()];
        let invoke = now();
        if n.is_multiple_of(2) {
            let value = format!("c{me}-{n}");
            let result = c
                .write(Request::Set {
                    key: key.into(),
                    value: value.clone(),
                })
                .await;
            let ret = match result {
                Ok(_) => Some(now()),
                Err(CallError::Unknown(_)) => None,
                Err(CallError::Refused(_)) => continue,
            };
            let mut h = history.lock().unwrap();
            h.acknowledged += usize::from(ret.is_some());
            h.ops.entry(key.into()).or_default().push(Op {
                invoke,
                ret,
                kind: Kind::Write(value),
            });
        } else if let Ok(seen) = c.read(key).await {
            let ret = Some(now());
            history
                .lock()
                .unwrap()
                .ops
                .entry(key.into())
                .or_default()
                .push(Op {
                    invoke,
                    ret,
                    kind: Kind::Read(seen),
                });
        }
    }
}

fn set(ids: &[u64]) -> BTreeSet<u64> {
    ids.iter().copied().collect()
}

/// Waits until some node reports `voters` (and no learners) with a leader among them.
async fn settled(admin: &mut Client, among: &[u64], voters: &BTreeSet<u64>) -> Status {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for &id in among {
            if let Some(s) = admin.status(id).await
                && &s.voters == voters
                && s.learners.is_empty()
                && s.leader.is_some_and(|l| voters.contains(&l))
            {
                return s;
            }
        }
        assert!(
            Instant::now() < deadline,
            "the cluster did not settle on voters {voters:?} in 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes acknowledged so far.
fn acknowledged(h: &Mutex<History>) -> usize {
    h.lock().unwrap().acknowledged
}

/// Waits until the clients have had `more` writes acknowledged since `from`.
async fn progress(h: &Mutex<History>, from: usize, more: usize, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while acknowledged(h) < from + more {
        assert!(Instant::now() < deadline, "no write progress {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_grows_shrinks_and_replaces_a_lost_node_under_load() {
    let root = tempfile::tempdir().unwrap();
    let mut listeners = BTreeMap::new();
    let mut addrs = BTreeMap::new();
    for id in 1..=6u64 {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        addrs.insert(id, l.local_addr().unwrap().to_string());
        listeners.insert(id, l);
    }
    let mut nodes = BTreeMap::new();
    for id in 1..=3 {
        nodes.insert(id, start(id, root.path(), &mut listeners).await);
    }
    let first: BTreeMap<u64, openraft::BasicNode> = (1..=3)
        .map(|id| {
            (
                id,
                openraft::BasicNode {
                    addr: addrs[&id].clone(),
                },
            )
        })
        .collect();
    nodes[&1].raft.initialize(first).await.unwrap();
    let mut admin = Client::new(addrs.clone());
    settled(&mut admin, &[1, 2, 3], &set(&[1, 2, 3])).await;

    let start_at = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let history = Arc::new(Mutex::new(History::default()));
    let clients: Vec<_> = (0..3)
        .map(|me| {
            tokio::spawn(client(
                me,
                addrs.clone(),
                start_at,
                Arc::clone(&stop),
                Arc::clone(&history),
            ))
        })
        .collect();
    progress(&history, 0, 50, "before the changes").await;

    // Grow: 4 and 5, each a learner first.
    for id in [4, 5] {
        nodes.insert(id, start(id, root.path(), &mut listeners).await);
        let s = admin.add_learner(id, &addrs[&id]).await.unwrap();
        assert!(s.learners.contains(&id), "{s:?}");
        let s = admin.promote(set(&[id])).await.unwrap();
        assert!(s.voters.contains(&id) && !s.learners.contains(&id), "{s:?}");
        let at = acknowledged(&history);
        progress(&history, at, 30, &format!("after adding node {id}")).await;
    }
    settled(&mut admin, &[1, 2, 3, 4, 5], &set(&[1, 2, 3, 4, 5])).await;

    // Refused: promoting a node that is not a learner, removing a stranger.
    assert!(matches!(
        admin.promote(set(&[9])).await,
        Err(CallError::Refused(_))
    ));
    assert!(matches!(
        admin.remove(set(&[9])).await,
        Err(CallError::Refused(_))
    ));

    // Shrink: remove two of the first members.
    let s = admin.remove(set(&[1, 2])).await.unwrap();
    assert!(!s.voters.contains(&1) && !s.voters.contains(&2), "{s:?}");
    settled(&mut admin, &[3, 4, 5], &set(&[3, 4, 5])).await;
    let at = acknowledged(&history);
    progress(&history, at, 30, "after removing nodes 1 and 2").await;

    // Node 3 is lost with its directory; node 6 takes its place.
    let lost = nodes.remove(&3).unwrap();
    lost.raft.shutdown().await.unwrap();
    lost.server.abort();
    std::fs::remove_dir_all(root.path().join("node3")).unwrap();
    admin.remove(set(&[3])).await.unwrap();
    // Once the leader's log before its last snapshot is purged, node 6 can only start
    // from a snapshot: an archive of the leader's checkpoint, sent over the framed port
    // in raw chunks and installed.
    let leader_purged = |nodes: &BTreeMap<u64, Node>| {
        nodes.iter().find_map(|(id, n)| {
            let m = n.raft.metrics().borrow().clone();
            (m.current_leader == Some(*id))
                .then_some(m.purged)
                .flatten()
        })
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while leader_purged(&nodes).is_none() {
        assert!(Instant::now() < deadline, "the leader never purged its log");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    nodes.insert(6, start(6, root.path(), &mut listeners).await);
    admin.add_learner(6, &addrs[&6]).await.unwrap();
    // (The guard `wait_for` gives is dropped at once: held, it blocks the node's metrics.)
    let mut metrics = nodes[&6].raft.metrics();
    let installed = tokio::time::timeout(
        Duration::from_secs(10),
        metrics.wait_for(|m| m.snapshot.is_some()),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    assert!(
        installed,
        "node 6 caught up without a snapshot: {:?}",
        nodes[&6].raft.metrics().borrow()
    );
    admin.promote(set(&[6])).await.unwrap();
    let end = settled(&mut admin, &[4, 5, 6], &set(&[4, 5, 6])).await;
    let at = acknowledged(&history);
    progress(&history, at, 30, "after replacing node 3").await;

    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }
    let mut reader = Client::new(addrs.clone());
    for (key, op) in common::closing_reads(&mut reader, &KEYS, start_at).await {
        history.lock().unwrap().ops.entry(key).or_default().push(op);
    }

    // Every voter applies what the leader has.
    let leader = end.leader.unwrap();
    let target = admin.status(leader).await.unwrap().applied;
    let deadline = Instant::now() + Duration::from_secs(30);
    for id in [4, 5, 6] {
        while admin.status(id).await.and_then(|s| s.applied) < target {
            assert!(Instant::now() < deadline, "node {id} did not catch up");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    {
        let h = history.lock().unwrap();
        let total: usize = h.ops.values().map(Vec::len).sum();
        println!(
            "{total} operations, {} writes acknowledged through 3 -> 4 -> 5 -> 3 voters and a replaced node",
            h.acknowledged
        );
        for (key, ops) in &h.ops {
            assert!(
                linearizable(ops),
                "the history of {key} is not linearizable"
            );
        }
    }
    for (_, n) in nodes {
        n.raft.shutdown().await.unwrap();
        n.server.abort();
    }
}
