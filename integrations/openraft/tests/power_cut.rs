//! Power cuts of every node (RS1 end to end): three nodes in this process, each on its
//! own crash-simulating filesystem (`strata::testing::CrashEnv`, one per machine). Clients
//! write and read; at a random moment every node loses power (each filesystem keeps what
//! was synced, and what was not is dropped, torn, zeroed or garbled, a damage drawn per
//! node); the nodes restart on what survived and elect a leader. Then every write
//! acknowledged before the cut is there, the three state machines hold the same records
//! (values, sessions and their index and count, applied id, membership), and each key's
//! history is linearizable (operations that ended after the cut count as
//! unknown: a node may have acknowledged them from bytes the cut took).
//!
//! `STRATA_RAFT_CUT_SEEDS` sets the number of cuts (default 100); `STRATA_RAFT_CUT_SEED`
//! runs one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::linearizable::{Kind, Op, linearizable};
use openraft::BasicNode;
use strata::testing::{CrashEnv, Damage};
use strata_openraft::service::{Client, KvRaft};
use strata_openraft::{Request, StrataStateMachine};

const KEYS: [&str; 3] = ["x", "y", "z"];
const DIR: &str = "/kv";

struct Node {
    raft: KvRaft,
    /// `None` once stopped.
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    /// The node's database (log and state machine).
    /// Its state machine (shares the database with the running node).
    sm: StrataStateMachine,
}

fn config() -> openraft::Config {
    openraft::Config {
        cluster_name: "power-cut".into(),
        heartbeat_interval: 50,
        election_timeout_min: 150,
        election_timeout_max: 300,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(100),
        max_in_snapshot_log_to_keep: 20,
        ..Default::default()
    }
}

/// A free port below the range the system picks outgoing connections' ports from, so no
/// connection takes it while a node restarts on it.
fn fresh_port() -> String {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = 20_000 + (std::process::id() * 97 + n) % 12_000;
        let addr = format!("127.0.0.1:{port}");
        if std::net::TcpListener::bind(&addr).is_ok() {
            return addr;
        }
    }
}

/// A listener on `addr`, which an earlier node of the same id may just have closed.
async fn listen(addr: &str) -> tokio::net::TcpListener {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        match socket.bind(addr.parse().unwrap()) {
            Ok(()) => return socket.listen(64).unwrap(),
            Err(e) => assert!(Instant::now() < deadline, "cannot listen on {addr}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn start(id: u64, addr: &str, env: &Arc<CrashEnv>) -> Node {
    let (log, sm) = strata_openraft::open_with(
        Path::new(DIR),
        strata::Options {
            env: Arc::clone(env) as Arc<dyn strata::env::Env>,
            ..Default::default()
        },
    )
    .unwrap();
    let (raft, server) =
        strata_openraft::service::start_with(id, config(), listen(addr).await, log, sm.clone())
            .await
            .unwrap();
    Node {
        raft,
        server: Some(server),
        sm,
    }
}

/// Keys and values, in key order.
type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// Every record of a node's state machine: values, sessions and their age index and
/// count, the applied id and membership.
fn state_machine(db: &strata::Db) -> Records {
    db.range(Vec::new()..b"\xff".to_vec())
        .map(Result::unwrap)
        .collect()
}

async fn stop(nodes: BTreeMap<u64, Node>) {
    for (_, mut n) in nodes {
        n.raft.shutdown().await.unwrap();
        stop_serving(&mut n).await;
    }
}

/// Stops a node's server and every connection it serves.
async fn stop_serving(n: &mut Node) {
    if let Some(server) = n.server.take() {
        server.abort();
        let _ = server.await;
    }
}

/// One client's writes (unique values) and reads until `stop`, recorded.
async fn client(
    me: usize,
    nodes: BTreeMap<u64, String>,
    start: Instant,
    stop: Arc<AtomicBool>,
    history: Arc<Mutex<BTreeMap<String, Vec<Op>>>>,
) {
    let mut c = Client::new(nodes);
    c.timeout = Duration::from_millis(500);
    let now = || start.elapsed().as_nanos() as u64;
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let key = KEYS[(n as usize * 7 + me) % KEYS.len()];
        let invoke = now();
        if !n.is_multiple_of(3) {
            // Recorded before it is sent, as unknown: the client may be stopped mid-call
            // by the cut, and the write may have taken effect.
            let value = format!("c{me}-{n}");
            let at = {
                let mut h = history.lock().unwrap();
                let list = h.entry(key.into()).or_default();
                list.push(Op {
                    invoke,
                    ret: None,
                    kind: Kind::Write(value.clone()),
                });
                list.len() - 1
            };
            let result = c
                .write(Request::Set {
                    key: key.into(),
                    value,
                })
                .await;
            if result.is_ok() {
                let ret = Some(now());
                if let Some(op) = history
                    .lock()
                    .unwrap()
                    .get_mut(key)
                    .and_then(|l| l.get_mut(at))
                {
                    op.ret = ret;
                }
            }
        } else if let Ok(seen) = c.read(key).await {
            let op = Op {
                invoke,
                ret: Some(now()),
                kind: Kind::Read(seen),
            };
            history
                .lock()
                .unwrap()
                .entry(key.into())
                .or_default()
                .push(op);
        }
    }
}

/// Waits for a write to go through (a leader, and its log usable).
async fn writable(c: &mut Client, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while c
        .write(Request::Set {
            key: "probe".into(),
            value: "p".into(),
        })
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "no leader {what}");
    }
}

async fn one_cut(seed: u64) -> (usize, [Damage; 3]) {
    let mut rng = common::Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let addrs: BTreeMap<u64, String> = (1..=3u64).map(|id| (id, fresh_port())).collect();
    let envs: BTreeMap<u64, Arc<CrashEnv>> = (1..=3u64)
        .map(|id| (id, Arc::new(CrashEnv::new())))
        .collect();
    let mut nodes = BTreeMap::new();
    for (&id, addr) in &addrs {
        nodes.insert(id, start(id, addr, &envs[&id]).await);
    }
    let members: BTreeMap<u64, BasicNode> = addrs
        .iter()
        .map(|(id, a)| (*id, BasicNode { addr: a.clone() }))
        .collect();
    nodes[&1].raft.initialize(members).await.unwrap();
    let mut probe = Client::new(addrs.clone());
    writable(&mut probe, "before the cut").await;

    let start_at = Instant::now();
    let stop_clients = Arc::new(AtomicBool::new(false));
    let history: Arc<Mutex<BTreeMap<String, Vec<Op>>>> = Arc::default();
    let clients: Vec<_> = (0..3)
        .map(|me| {
            tokio::spawn(client(
                me,
                addrs.clone(),
                start_at,
                Arc::clone(&stop_clients),
                Arc::clone(&history),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50 + rng.below(250))).await;

    // Every node loses power at one instant. The images are taken one after another, so
    // first no node may hear from another (or from a client): the servers stop, and with
    // them every connection. A node then only finishes on its own what it had begun, as
    // a machine does until its power goes; had a node gone on hearing from the others, a
    // later image would hold what an earlier one's node told it after its own image was
    // taken, a state no power cut makes.
    let cut_at = start_at.elapsed().as_nanos() as u64;
    for n in nodes.values_mut() {
        stop_serving(n).await;
    }
    let mut damages = [Damage::DropAll; 3];
    let mut images = BTreeMap::new();
    for (i, (&id, env)) in envs.iter().enumerate() {
        let damage = Damage::ALL[1 + rng.below(Damage::ALL.len() as u64 - 1) as usize];
        damages[i] = damage;
        images.insert(id, Arc::new(env.crash(damage, seed * 3 + id)));
    }
    // The clients' calls in flight are unknown: stop them where they are.
    stop_clients.store(true, Ordering::Relaxed);
    for c in clients {
        c.abort();
        let _ = c.await;
    }
    stop(nodes).await;

    // What happened after the cut is unknown: a write may or may not have survived, a
    // read may have seen such a write.
    let mut ops = std::mem::take(&mut *history.lock().unwrap());
    let mut acknowledged = 0;
    for list in ops.values_mut() {
        list.retain_mut(|op| match op.kind {
            Kind::Write(_) => {
                if op.ret.is_some_and(|r| r > cut_at) {
                    op.ret = None;
                }
                acknowledged += usize::from(op.ret.is_some());
                true
            }
            Kind::Read(_) => op.ret.is_some_and(|r| r <= cut_at),
        });
    }

    let mut nodes = BTreeMap::new();
    for (&id, addr) in &addrs {
        nodes.insert(id, start(id, addr, &images[&id]).await);
    }
    let mut reader = Client::new(addrs.clone());
    let after = Instant::now();
    writable(
        &mut reader,
        &format!("after the cut (seed {seed}, {damages:?})"),
    )
    .await;
    let recovered_in = after.elapsed();
    for (key, op) in common::closing_reads(&mut reader, &KEYS, start_at).await {
        ops.entry(key).or_default().push(op);
    }
    for (key, list) in &ops {
        assert!(
            linearizable(list),
            "seed {seed} ({damages:?}): the history of {key} is not linearizable (an acknowledged write lost?): {list:#?}"
        );
    }

    // The three state machines agree once all have applied the leader's last entry.
    let deadline = Instant::now() + Duration::from_secs(30);
    let leader = loop {
        if let Some(l) = reader.status(1).await.and_then(|s| s.leader) {
            break l;
        }
        assert!(
            Instant::now() < deadline,
            "seed {seed}: node 1 knows no leader"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let target = reader.status(leader).await.unwrap().applied;
    let deadline = Instant::now() + Duration::from_secs(30);
    for id in 1..=3 {
        while reader.status(id).await.and_then(|s| s.applied) < target {
            assert!(
                Instant::now() < deadline,
                "seed {seed}: node {id} did not catch up"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let states: Vec<Records> = nodes.values().map(|n| state_machine(&n.sm.db())).collect();
    for (i, state) in states.iter().enumerate().skip(1) {
        assert!(
            *state == states[0],
            "seed {seed} ({damages:?}): node {} holds another state than node 1 ({} and {} records)",
            i + 1,
            state.len(),
            states[0].len()
        );
    }
    stop(nodes).await;
    assert!(recovered_in < Duration::from_secs(30));
    (acknowledged, damages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_write_survives_a_power_cut_of_every_node() {
    let seeds: Vec<u64> = match std::env::var("STRATA_RAFT_CUT_SEED") {
        Ok(s) => vec![s.parse().unwrap()],
        Err(_) => {
            let n = std::env::var("STRATA_RAFT_CUT_SEEDS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(100u64);
            (0..n).collect()
        }
    };
    let started = Instant::now();
    let mut acknowledged = 0;
    let mut meaningful = 0;
    // Four clusters at a time: a cut spends most of its time waiting for elections.
    let mut running = tokio::task::JoinSet::new();
    let mut next = seeds.iter().copied();
    loop {
        while running.len() < 4
            && let Some(seed) = next.next()
        {
            running.spawn(one_cut(seed));
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        let (acked, _) = done.unwrap();
        acknowledged += acked;
        meaningful += usize::from(acked > 0);
    }
    println!(
        "{} power cuts of all three nodes in {:.1} s: {acknowledged} writes acknowledged before a cut, all found after it",
        seeds.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        meaningful * 2 >= seeds.len(),
        "too few cuts came after an acknowledged write ({meaningful} of {})",
        seeds.len()
    );
}
