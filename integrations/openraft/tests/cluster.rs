//! Three `strata-kv-node` processes on 127.0.0.1: clients write and read through the
//! leader while the leader is killed ten times (SIGKILL: no clean shutdown, no flush) and
//! paused three times (SIGSTOP, then SIGCONT once another node leads); each time a new
//! leader must be elected and the killed node, restarted from its Strata directory, must
//! catch up. The whole history of the clients' operations must be linearizable (so no
//! acknowledged write is lost, and no read sees the past), and at the end every node's
//! database holds the same data as the leader's. About half a minute.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::linearizable::{Kind, Op, linearizable};
use strata_openraft::service::{CallError, Client};
use strata_openraft::{Request, keys};

const NODE: &str = env!("CARGO_BIN_EXE_strata-kv-node");
const KEYS: [&str; 3] = ["x", "y", "z"];

/// A node process; killed when dropped.
struct Node {
    id: u64,
    addr: String,
    dir: std::path::PathBuf,
    child: Option<Child>,
}

impl Node {
    fn start(&mut self, peers: &BTreeMap<u64, String>, init: bool) {
        let mut cmd = Command::new(NODE);
        cmd.args(["--id", &self.id.to_string(), "--addr", &self.addr])
            .args(["--heartbeat-ms", "50"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (id, addr) in peers {
            cmd.args(["--peer", &format!("{id}={addr}")]);
        }
        if init {
            cmd.arg("--init");
        }
        let mut child = cmd.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("ready"), "node {} said {line:?}", self.id);
        self.child = Some(child);
    }

    /// Sends `signal` (`STOP`, `CONT`) to the process.
    fn signal(&self, signal: &str) {
        if let Some(c) = &self.child {
            let ok = Command::new("kill")
                .args([&format!("-{signal}"), &c.id().to_string()])
                .status()
                .unwrap()
                .success();
            assert!(ok, "kill -{signal} failed");
        }
    }

    /// SIGKILL: the process ends at once, whatever it was doing.
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Nodes 1..=`n`, each with a free address and a directory under `root`, not started.
fn unstarted(root: &std::path::Path, n: u64) -> Vec<Node> {
    (1..=n)
        .map(|id| Node {
            id,
            addr: free_addr(),
            dir: root.join(format!("node{id}")),
            child: None,
        })
        .collect()
}

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// The history of every client, per key.
#[derive(Default)]
struct History {
    ops: BTreeMap<String, Vec<Op>>,
    acknowledged_writes: usize,
    unknown_writes: usize,
}

/// One client's loop until `stop`: on random keys, writes of unique values and
/// linearizable reads, each recorded with its invocation and return times.
async fn client(
    me: usize,
    nodes: BTreeMap<u64, String>,
    start: Instant,
    stop: Arc<std::sync::atomic::AtomicBool>,
    history: Arc<Mutex<History>>,
) {
    let mut c = Client::new(nodes);
    let mut n = 0u64;
    let now = |start: Instant| start.elapsed().as_nanos() as u64;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        n += 1;
        let key = KEYS[(n as usize * 7 + me) % KEYS.len()];
        let invoke = now(start);
        if n.is_multiple_of(2) {
            let value = format!("c{me}-{n}");
            let result = c
                .write(Request::Set {
                    key: key.into(),
                    value: value.clone(),
                })
                .await;
            let mut h = history.lock().unwrap();
            let ret = match result {
                Ok(_) => {
                    h.acknowledged_writes += 1;
                    Some(now(start))
                }
                Err(CallError::Unknown(_)) => {
                    h.unknown_writes += 1;
                    None
                }
                Err(CallError::Refused(_)) => continue,
            };
            h.ops.entry(key.into()).or_default().push(Op {
                invoke,
                ret,
                kind: Kind::Write(value),
            });
        } else if let Ok(seen) = c.read(key).await {
            let ret = Some(now(start));
            let mut h = history.lock().unwrap();
            h.ops.entry(key.into()).or_default().push(Op {
                invoke,
                ret,
                kind: Kind::Read(seen),
            });
        }
    }
}

/// The leader every live node agrees on, waiting up to `limit`.
async fn agreed_leader(c: &mut Client, live: &[u64], limit: Duration) -> Option<u64> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let mut seen = Vec::new();
        for &id in live {
            seen.push(c.status(id).await.and_then(|s| s.leader));
        }
        if let Some(Some(l)) = seen.first()
            && live.contains(l)
            && seen.iter().all(|s| *s == Some(*l))
        {
            return Some(*l);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Waits until node `id` has applied `target` and follows `leader`.
async fn caught_up(c: &mut Client, id: u64, leader: u64, target: Option<u64>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = c.status(id).await;
        if let Some(s) = &s
            && s.applied >= target
            && s.leader == Some(leader)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "node {id} did not catch up in 30 s: {s:?}, leader {leader} applied {target:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Keys and values, in key order.
type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// Every state-machine record (values and sessions) in the database at `dir`, and its
/// last applied index.
fn state_of(dir: &std::path::Path) -> (Records, Option<Vec<u8>>) {
    let sm =
        strata_openraft::StrataStateMachine::open(dir.join("state"), strata::Options::default())
            .unwrap();
    let db = sm.db();
    let mut records: Records = db
        .range(keys::DATA.to_vec()..keys::DATA_END.to_vec())
        .map(Result::unwrap)
        .collect();
    records.extend(
        db.range(keys::SESSION.to_vec()..keys::SESSION_END.to_vec())
            .map(Result::unwrap),
    );
    let applied = db.get(keys::APPLIED).unwrap();
    (records, applied)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_and_paused_leaders_lose_no_acknowledged_write() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes = unstarted(root.path(), 3);
    let peers: BTreeMap<u64, String> = nodes.iter().map(|n| (n.id, n.addr.clone())).collect();
    for n in &mut nodes {
        let init = n.id == 1;
        n.start(&peers, init);
    }
    let mut probe = Client::new(peers.clone());
    probe.timeout = Duration::from_millis(500);
    let all: Vec<u64> = peers.keys().copied().collect();
    let mut leader = agreed_leader(&mut probe, &all, Duration::from_secs(20))
        .await
        .expect("no leader elected in 20 s");

    // Clients run until the last kill and pause are over.
    let start = Instant::now();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let history = Arc::new(Mutex::new(History::default()));
    let clients: Vec<_> = (0..3)
        .map(|me| {
            tokio::spawn(client(
                me,
                peers.clone(),
                start,
                Arc::clone(&stop),
                Arc::clone(&history),
            ))
        })
        .collect();

    // Ten kills of the leader, a pause after every third; before each, some progress.
    let (mut kills, mut pauses) = (0, 0);
    let mut acknowledged_between = Vec::new();
    for round in 0..13 {
        let before = history.lock().unwrap().acknowledged_writes;
        let deadline = Instant::now() + Duration::from_secs(20);
        while history.lock().unwrap().acknowledged_writes < before + 20 {
            assert!(
                Instant::now() < deadline,
                "no progress before round {round}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        acknowledged_between.push(history.lock().unwrap().acknowledged_writes - before);
        let old = leader;
        let rest: Vec<u64> = all.iter().copied().filter(|&id| id != old).collect();
        let pause = round % 4 == 3;
        if pause {
            nodes[(old - 1) as usize].signal("STOP");
            pauses += 1;
        } else {
            nodes[(old - 1) as usize].kill();
            kills += 1;
        }
        leader = agreed_leader(&mut probe, &rest, Duration::from_secs(20))
            .await
            .unwrap_or_else(|| panic!("no new leader in 20 s after node {old} went away"));
        if pause {
            nodes[(old - 1) as usize].signal("CONT");
        } else {
            nodes[(old - 1) as usize].start(&peers, false);
        }
        let target = probe.status(leader).await.and_then(|s| s.applied);
        caught_up(&mut probe, old, leader, target).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }

    // Final reads through the leader close every key's history.
    let mut reader = Client::new(peers.clone());
    let reads = common::closing_reads(&mut reader, &KEYS, start).await;
    for (key, op) in reads {
        history.lock().unwrap().ops.entry(key).or_default().push(op);
    }
    {
        let h = history.lock().unwrap();
        let total: usize = h.ops.values().map(Vec::len).sum();
        println!(
            "{kills} leaders killed, {pauses} paused; {total} operations, {} writes acknowledged, {} unknown; acknowledged between changes {acknowledged_between:?}",
            h.acknowledged_writes, h.unknown_writes
        );
        for (key, ops) in &h.ops {
            assert!(
                linearizable(ops),
                "the history of key {key} is not linearizable: {ops:#?}"
            );
        }
    }

    // Every node has applied the leader's last entry: their databases hold the same data.
    let leader = agreed_leader(&mut probe, &all, Duration::from_secs(20))
        .await
        .expect("no leader at the end");
    let target = probe.status(leader).await.and_then(|s| s.applied);
    for &id in &all {
        caught_up(&mut probe, id, leader, target).await;
    }
    for n in &mut nodes {
        n.kill();
    }
    let states: Vec<_> = nodes.iter().map(|n| state_of(&n.dir)).collect();
    for (n, s) in nodes.iter().zip(&states).skip(1) {
        assert!(
            s.1 == states[0].1 && s.0 == states[0].0,
            "node {} holds other data than node 1 ({} and {} records)",
            n.id,
            s.0.len(),
            states[0].0.len()
        );
    }
    assert!(!states[0].0.is_empty());
}

/// Runs `strata-kv-node ARGS` (an administration command) and returns its output.
fn admin(args: &[&str]) -> std::process::Output {
    Command::new(NODE).args(args).output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_adds_promotes_and_removes_a_node() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes = unstarted(root.path(), 4);
    let first: BTreeMap<u64, String> = nodes[..3].iter().map(|n| (n.id, n.addr.clone())).collect();
    for n in &mut nodes[..3] {
        let init = n.id == 1;
        n.start(&first, init);
    }
    // Node 4 starts with no peers: it waits to be added.
    nodes[3].start(&BTreeMap::new(), false);
    let mut probe = Client::new(first.clone());
    agreed_leader(&mut probe, &[1, 2, 3], Duration::from_secs(20))
        .await
        .expect("no leader elected in 20 s");
    probe
        .write(Request::Set {
            key: "k".into(),
            value: "before".into(),
        })
        .await
        .unwrap();

    let peer = format!("2={}", first[&2]);
    let four = nodes[3].addr.clone();
    let out = admin(&["add-learner", "--peer", &peer, "--id", "4", "--addr", &four]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("learners 4"), "{text}");
    let out = admin(&["promote", "--peer", &peer, "--id", "4"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("voters 1 2 3 4"), "{text}");

    // Refused, with a reason and status 1: promoting a stranger.
    let out = admin(&["promote", "--peer", &peer, "--id", "9"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("strata-kv-node: refused"),
        "{out:?}"
    );

    let out = admin(&["remove", "--peer", &peer, "--id", "1"]);
    assert!(out.status.success(), "{out:?}");
    let out = admin(&["members", "--peer", &peer]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("voters 2 3 4"), "{text}");
    assert!(text.contains(&format!("node 4 {four}")), "{text}");

    // The new voter has the data written before it joined.
    let mut all = first.clone();
    all.insert(4, four);
    let mut c = Client::new(all);
    assert_eq!(c.read("k").await.unwrap().as_deref(), Some("before"));
    let s = c.status(4).await.unwrap();
    assert!(s.voters.contains(&4), "{s:?}");
}
