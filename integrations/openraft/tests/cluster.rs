//! Three `strata-kv-node` processes on 127.0.0.1: clients write and read through the
//! leader while the leader is killed (SIGKILL: no clean shutdown, no flush); a new leader
//! must be elected, the killed node restarted from its Strata directory must catch up,
//! and the whole history of the clients' operations must be linearizable (so no
//! acknowledged write is lost, and no read sees the past). A bounded run: about half a
//! minute.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::linearizable::{Kind, Op, linearizable};
use strata_openraft::Request;
use strata_openraft::service::{CallError, Client};

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

/// One client's loop until `until`: on random keys, writes of unique values and
/// linearizable reads, each recorded with its invocation and return times.
async fn client(
    me: usize,
    nodes: BTreeMap<u64, String>,
    start: Instant,
    until: Instant,
    history: Arc<Mutex<History>>,
) {
    let mut c = Client::new(nodes);
    let mut n = 0u64;
    let now = |start: Instant| start.elapsed().as_nanos() as u64;
    while Instant::now() < until {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_leader_loses_no_acknowledged_write_and_catches_up() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes: Vec<Node> = (1..=3)
        .map(|id| Node {
            id,
            addr: free_addr(),
            dir: root.path().join(format!("node{id}")),
            child: None,
        })
        .collect();
    let peers: BTreeMap<u64, String> = nodes.iter().map(|n| (n.id, n.addr.clone())).collect();
    for n in &mut nodes {
        let init = n.id == 1;
        n.start(&peers, init);
    }
    let mut probe = Client::new(peers.clone());
    let all: Vec<u64> = peers.keys().copied().collect();
    let first = agreed_leader(&mut probe, &all, Duration::from_secs(20))
        .await
        .expect("no leader elected in 20 s");

    // Clients run for 12 s; the leader is killed 4 s in.
    let start = Instant::now();
    let until = start + Duration::from_secs(12);
    let history = Arc::new(Mutex::new(History::default()));
    let clients: Vec<_> = (0..3)
        .map(|me| {
            tokio::spawn(client(
                me,
                peers.clone(),
                start,
                until,
                Arc::clone(&history),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let before_kill = history.lock().unwrap().acknowledged_writes;
    nodes[(first - 1) as usize].kill();

    let rest: Vec<u64> = all.iter().copied().filter(|&id| id != first).collect();
    let second = agreed_leader(&mut probe, &rest, Duration::from_secs(20))
        .await
        .expect("no new leader in 20 s after the leader was killed");
    assert_ne!(second, first);
    for c in clients {
        c.await.unwrap();
    }
    let after_kill = history.lock().unwrap().acknowledged_writes - before_kill;

    // The killed node comes back from its directory and catches up with the leader.
    nodes[(first - 1) as usize].start(&peers, false);
    let target = probe.status(second).await.and_then(|s| s.applied).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = probe.status(first).await;
        if let Some(s) = &s
            && s.applied >= Some(target)
            && s.leader == Some(second)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node {first} did not catch up in 30 s: {s:?}, leader applied {target}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Final reads through the leader close every key's history.
    let mut reader = Client::new(peers.clone());
    let reads = common::closing_reads(&mut reader, &KEYS, start).await;
    for (key, op) in reads {
        history.lock().unwrap().ops.entry(key).or_default().push(op);
    }

    let h = history.lock().unwrap();
    let total: usize = h.ops.values().map(Vec::len).sum();
    println!(
        "leader {first} killed, {second} elected; {total} operations, {} writes acknowledged ({after_kill} after the kill), {} unknown",
        h.acknowledged_writes, h.unknown_writes
    );
    assert!(
        before_kill > 0 && after_kill > 0,
        "the clients wrote too little to test anything"
    );
    for (key, ops) in &h.ops {
        assert!(
            linearizable(ops),
            "the history of key {key} is not linearizable: {ops:#?}"
        );
    }
}

/// Runs `strata-kv-node ARGS` (an administration command) and returns its output.
fn admin(args: &[&str]) -> std::process::Output {
    Command::new(NODE).args(args).output().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_command_line_adds_promotes_and_removes_a_node() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes: Vec<Node> = (1..=4)
        .map(|id| Node {
            id,
            addr: free_addr(),
            dir: root.path().join(format!("node{id}")),
            child: None,
        })
        .collect();
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
