//! Writes per second and write latency of a 3-node cluster on loopback
//! (`strata_openraft::service`, one process, three nodes on 127.0.0.1 TCP ports), with
//! Strata as every node's store and with an in-memory store as the ceiling (what the
//! cluster does when storage costs nothing and keeps nothing: the role of openraft's own
//! `openraft-memstore`, which serves only its older storage API and its own types, so an
//! equivalent is written here). Rounds alternate the two stores; the ratio of each round
//! is paired.
//!
//! ```text
//! cargo run --release -p strata-openraft --example cluster_bench -- [ROUNDS] [SECONDS] [CLIENTS] [strata|memory]
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::panic
)]

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use openraft::storage::{
    LogFlushed, LogState, RaftLogReader, RaftLogStorage, RaftSnapshotBuilder, RaftStateMachine,
    Snapshot,
};
use openraft::{
    BasicNode, Entry, EntryPayload, LogId, OptionalSend, RaftLogId, SnapshotMeta, StorageError,
    StoredMembership, Vote,
};
use strata_openraft::service::{Client, KvMachine, KvRaft};
use strata_openraft::{Request, Response, SnapshotArchive, TypeConfig, Write};

/// The in-memory log: entries, vote, committed and purged ids.
#[derive(Debug, Clone, Default)]
struct MemLog(Arc<Mutex<MemLogInner>>);

#[derive(Debug, Default)]
struct MemLogInner {
    entries: BTreeMap<u64, Entry<TypeConfig>>,
    vote: Option<Vote<u64>>,
    committed: Option<LogId<u64>>,
    purged: Option<LogId<u64>>,
}

impl RaftLogReader<TypeConfig> for MemLog {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry<TypeConfig>>, StorageError<u64>> {
        let log = self.0.lock().unwrap();
        Ok(log.entries.range(range).map(|(_, e)| e.clone()).collect())
    }
}

impl RaftLogStorage<TypeConfig> for MemLog {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError<u64>> {
        let log = self.0.lock().unwrap();
        let last = log.entries.values().next_back().map(|e| *e.get_log_id());
        Ok(LogState {
            last_purged_log_id: log.purged,
            last_log_id: last.or(log.purged),
        })
    }

    async fn get_log_reader(&mut self) -> Self {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote<u64>) -> Result<(), StorageError<u64>> {
        self.0.lock().unwrap().vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote<u64>>, StorageError<u64>> {
        Ok(self.0.lock().unwrap().vote)
    }

    async fn save_committed(&mut self, c: Option<LogId<u64>>) -> Result<(), StorageError<u64>> {
        self.0.lock().unwrap().committed = c;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId<u64>>, StorageError<u64>> {
        Ok(self.0.lock().unwrap().committed)
    }

    async fn append<I>(
        &mut self,
        entries: I,
        callback: LogFlushed<TypeConfig>,
    ) -> Result<(), StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut log = self.0.lock().unwrap();
        for e in entries {
            log.entries.insert(e.get_log_id().index, e);
        }
        callback.log_io_completed(Ok(()));
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        self.0.lock().unwrap().entries.split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId<u64>) -> Result<(), StorageError<u64>> {
        let mut log = self.0.lock().unwrap();
        log.purged = Some(log_id);
        log.entries = log.entries.split_off(&(log_id.index + 1));
        Ok(())
    }
}

/// The in-memory key-value state machine.
#[derive(Debug, Clone, Default)]
struct MemMachine(Arc<Mutex<MemState>>);

#[derive(Debug, Default)]
struct MemState {
    applied: Option<LogId<u64>>,
    membership: StoredMembership<u64, BasicNode>,
    kv: BTreeMap<String, String>,
    /// Each client's last applied sequence number and answer (as the Strata state
    /// machine keeps them, so both do the same work per write).
    sessions: BTreeMap<u64, (u64, Response)>,
    snapshot: Option<(SnapshotMeta<u64, BasicNode>, Vec<u8>)>,
}

impl MemState {
    fn apply(&mut self, w: Write) -> Response {
        if let Some(s) = w.session
            && let Some((seq, r)) = self.sessions.get(&s.client)
            && s.seq <= *seq
        {
            return Response {
                previous: if s.seq == *seq {
                    r.previous.clone()
                } else {
                    None
                },
                duplicate: true,
            };
        }
        let previous = match w.request {
            Request::Set { key, value } => self.kv.insert(key, value),
            Request::Delete { key } => self.kv.remove(&key),
        };
        let r = Response {
            previous,
            duplicate: false,
        };
        if let Some(s) = w.session {
            self.sessions.insert(s.client, (s.seq, r.clone()));
        }
        r
    }
}

impl RaftSnapshotBuilder<TypeConfig> for MemMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError<u64>> {
        let mut st = self.0.lock().unwrap();
        let data = serde_json::to_vec(&st.kv).unwrap();
        let meta = SnapshotMeta {
            last_log_id: st.applied,
            last_membership: st.membership.clone(),
            snapshot_id: format!("{:?}", st.applied.map(|id| id.index)),
        };
        st.snapshot = Some((meta.clone(), data.clone()));
        Ok(Snapshot {
            meta,
            snapshot: Box::new(SnapshotArchive::from_bytes(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for MemMachine {
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogId<u64>>, StoredMembership<u64, BasicNode>), StorageError<u64>> {
        let st = self.0.lock().unwrap();
        Ok((st.applied, st.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Vec<Response>>, StorageError<u64>>
    where
        I: IntoIterator<Item = Entry<TypeConfig>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut st = self.0.lock().unwrap();
        let mut out = Vec::new();
        for e in entries {
            let id = *e.get_log_id();
            st.applied = Some(id);
            out.push(match e.payload {
                EntryPayload::Blank => Vec::new(),
                EntryPayload::Normal(p) => p.writes.into_iter().map(|w| st.apply(w)).collect(),
                EntryPayload::Membership(m) => {
                    st.membership = StoredMembership::new(Some(id), m);
                    Vec::new()
                }
            });
        }
        Ok(out)
    }

    async fn get_snapshot_builder(&mut self) -> Self {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<SnapshotArchive>, StorageError<u64>> {
        Ok(Box::new(SnapshotArchive::from_bytes(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<u64, BasicNode>,
        snapshot: Box<SnapshotArchive>,
    ) -> Result<(), StorageError<u64>> {
        let data = snapshot.into_bytes().unwrap();
        let mut st = self.0.lock().unwrap();
        st.kv = serde_json::from_slice(&data).unwrap();
        st.applied = meta.last_log_id;
        st.membership = meta.last_membership.clone();
        st.snapshot = Some((meta.clone(), data));
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<TypeConfig>>, StorageError<u64>> {
        let st = self.0.lock().unwrap();
        Ok(st.snapshot.clone().map(|(meta, data)| Snapshot {
            meta,
            snapshot: Box::new(SnapshotArchive::from_bytes(data)),
        }))
    }
}

impl KvMachine for MemMachine {
    fn read(&self, key: &str) -> Result<Option<String>, StorageError<u64>> {
        Ok(self.0.lock().unwrap().kv.get(key).cloned())
    }

    fn scan(
        &self,
        start: &str,
        end: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String)>, StorageError<u64>> {
        let st = self.0.lock().unwrap();
        let (mut found, mut bytes) = (Vec::new(), 0);
        for (k, v) in st
            .kv
            .range(start.to_string()..)
            .take_while(|(k, _)| end.is_none_or(|e| k.as_str() < e))
            .take(limit)
        {
            bytes += k.len() + v.len();
            found.push((k.clone(), v.clone()));
            if bytes >= strata_openraft::service::MAX_SCAN_BYTES {
                break;
            }
        }
        Ok(found)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Store {
    Strata,
    Memory,
}

/// What one run measured.
struct Run {
    writes_per_s: f64,
    p50_us: f64,
    p99_us: f64,
}

fn config() -> openraft::Config {
    openraft::Config {
        cluster_name: "bench".into(),
        heartbeat_interval: 150,
        election_timeout_min: 600,
        election_timeout_max: 1200,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(5000),
        max_in_snapshot_log_to_keep: 1000,
        ..Default::default()
    }
}

/// Three nodes with `store`, `clients` clients writing for `seconds`.
async fn run(store: Store, seconds: u64, clients: usize) -> Run {
    let root = tempfile::tempdir().unwrap();
    let mut listeners = Vec::new();
    let mut peers = BTreeMap::new();
    for id in 1..=3u64 {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        peers.insert(id, l.local_addr().unwrap().to_string());
        listeners.push((id, l));
    }
    let mut nodes: Vec<(KvRaft, tokio::task::JoinHandle<std::io::Result<()>>)> = Vec::new();
    for (id, l) in listeners {
        let started = match store {
            Store::Strata => {
                let dir = root.path().join(format!("node{id}"));
                strata_openraft::service::start_node(id, &dir, config(), l).await
            }
            Store::Memory => {
                strata_openraft::service::start_with(
                    id,
                    config(),
                    l,
                    MemLog::default(),
                    MemMachine::default(),
                )
                .await
            }
        };
        nodes.push(started.unwrap());
    }
    let members: BTreeMap<u64, BasicNode> = peers
        .iter()
        .map(|(id, addr)| (*id, BasicNode { addr: addr.clone() }))
        .collect();
    nodes[0].0.initialize(members).await.unwrap();
    // Wait for a leader, then warm up.
    let mut probe = Client::new(peers.clone());
    let deadline = Instant::now() + Duration::from_secs(20);
    while probe
        .write(Request::Set {
            key: "warm".into(),
            value: "up".into(),
        })
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "no leader in 20 s");
    }

    let until = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|me| {
            let peers = peers.clone();
            tokio::spawn(async move {
                let mut c = Client::new(peers);
                let mut latencies = Vec::new();
                let mut n = 0u64;
                while Instant::now() < until {
                    n += 1;
                    let t = Instant::now();
                    c.write(Request::Set {
                        key: format!("key{}", (n * 31 + me as u64) % 10_000),
                        value: format!("value-{me}-{n}-{}", "x".repeat(80)),
                    })
                    .await
                    .unwrap();
                    latencies.push(t.elapsed());
                }
                latencies
            })
        })
        .collect();
    let start = Instant::now();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let elapsed = start.elapsed().as_secs_f64();
    for (raft, server) in nodes {
        raft.shutdown().await.unwrap();
        server.abort();
    }
    all.sort();
    let at = |q: f64| all[((all.len() as f64 * q) as usize).min(all.len() - 1)].as_secs_f64() * 1e6;
    Run {
        writes_per_s: all.len() as f64 / elapsed,
        p50_us: at(0.50),
        p99_us: at(0.99),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rounds: usize = args.next().map_or(5, |s| s.parse().unwrap());
    let seconds: u64 = args.next().map_or(10, |s| s.parse().unwrap());
    let clients: usize = args.next().map_or(16, |s| s.parse().unwrap());
    // A fifth argument, `strata` or `memory`, runs that store alone (for profiling).
    if let Some(only) = args.next() {
        let store = if only == "memory" {
            Store::Memory
        } else {
            Store::Strata
        };
        let r = run(store, seconds, clients).await;
        println!(
            "{store:?}: {:.0} writes/s, p50 {:.0} us, p99 {:.0} us",
            r.writes_per_s, r.p50_us, r.p99_us
        );
        return;
    }
    println!(
        "3 nodes on loopback, {clients} clients writing 100-byte values, {seconds} s a run, {rounds} rounds alternating"
    );
    let (mut ratios, mut strata_rates, mut mem_rates) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [Store::Strata, Store::Memory]
        } else {
            [Store::Memory, Store::Strata]
        };
        let mut got = BTreeMap::new();
        for store in order {
            let r = run(store, seconds, clients).await;
            println!(
                "round {} {store:?}: {:.0} writes/s, p50 {:.0} us, p99 {:.0} us",
                round + 1,
                r.writes_per_s,
                r.p50_us,
                r.p99_us
            );
            got.insert(format!("{store:?}"), r);
        }
        let (s, m) = (&got["Strata"], &got["Memory"]);
        ratios.push(s.writes_per_s / m.writes_per_s);
        strata_rates.push(s.writes_per_s);
        mem_rates.push(m.writes_per_s);
    }
    println!(
        "median writes/s: Strata {:.0}, in-memory {:.0}; Strata's over the in-memory store's, paired: median {:.3} (range {:.3}-{:.3})",
        median(strata_rates),
        median(mem_rates),
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max)
    );
}
