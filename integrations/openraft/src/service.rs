//! A small key-value service over openraft and Strata, on plain TCP: what the
//! `strata-kv-node` program runs, and what the cluster test and the figures drive.
//!
//! One port per node serves both Raft's messages between nodes and clients' requests.
//! A message is a frame: a 4-byte big-endian length, then that many bytes of JSON (one
//! [`Call`] asked, one [`Answer`] given, in order, on a connection). A snapshot's chunk
//! ([`Call::InstallSnapshot`]) carries its bytes in a second frame, raw, right after the
//! call's (the call's own `data` is empty): JSON would spell each byte as a number.
//!
//! Clients write through the leader and read linearizably (`Raft::ensure_linearizable`,
//! then the state machine); a node that is not the leader answers
//! [`ClientError::ForwardToLeader`] with the leader it knows, and [`Client`] follows it.
//!
//! Writes are batched (RS6): a node's writes wait in one queue, and a task proposes
//! everything waiting as one Raft entry (a [`Proposal`], applied atomically and in order)
//! whenever fewer than [`MAX_IN_FLIGHT`] proposals are in flight, so under load one
//! entry, one append and one `fdatasync` per node carry many writes, and a lone write
//! waits for nothing. A read costs no log write: `ensure_linearizable` is a read index
//! (the leader confirms with a quorum's heartbeat that it still leads, then waits until
//! its state machine has applied what was committed when the read arrived), not a lease,
//! so it does not lean on clocks.
//!
//! [`Client`] gives each of its writes a [`Session`] (its random id and a sequence
//! number), and resends a write whose answer it did not get with the same session:
//! the state machine applies it once (RS5).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{
    ChangeMembershipError, CheckIsLeaderError, ClientWriteError, InstallSnapshotError,
    NetworkError, RPCError, RaftError, RemoteError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, ChangeMembers, Raft};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::metrics::NodeMetrics;
use crate::{Proposal, Request, Response, Session, StrataStateMachine, TypeConfig, Write};

/// A node of the cluster.
pub type KvRaft = Raft<TypeConfig>;

/// Largest frame accepted (a snapshot chunk, a batch of entries): 64 MiB.
const MAX_FRAME: u32 = 64 << 20;

/// Most proposals a leader has in flight at once (RS6). One: measured with 16, 64 and 256
/// clients (`cluster_bench`), two in flight were no faster and four or more slower,
/// since smaller batches cost more syncs on a disk the nodes share.
pub const MAX_IN_FLIGHT: usize = 1;

/// How long a proposal may wait for its outcome before its writes are answered as
/// unknown (and the next proposal may go).
const PROPOSAL_TIMEOUT: Duration = Duration::from_secs(5);

/// Most writes in one proposal.
pub const MAX_BATCH_WRITES: usize = 4096;

/// Most bytes of keys and values in one proposal (the entry travels in one frame).
pub const MAX_BATCH_BYTES: usize = 4 << 20;

/// Largest key plus value a write may carry.
pub const MAX_WRITE_BYTES: usize = 1 << 20;

/// Most keys one scan answers (a larger limit is cut to this).
pub const MAX_SCAN_KEYS: usize = 10_000;

/// A scan's page ends with the entry that brings its keys and values to this many bytes
/// (its answer travels in one frame, `MAX_FRAME`).
pub const MAX_SCAN_BYTES: usize = 4 << 20;

/// What is asked of a node.
#[derive(Debug, Serialize, Deserialize)]
pub enum Call {
    /// Raft: replicate entries (or a heartbeat).
    AppendEntries(AppendEntriesRequest<TypeConfig>),
    /// Raft: a candidate asks for a vote.
    Vote(VoteRequest<u64>),
    /// Raft: a chunk of a snapshot; its bytes follow in a raw frame of their own.
    InstallSnapshot(InstallSnapshotRequest<TypeConfig>),
    /// A client's write.
    Write(Write),
    /// A client's linearizable read of a key.
    Read(String),
    /// A client's linearizable read of a range of keys: from `start` (included) to `end`
    /// (excluded; `None`: to the last key), at most `limit` keys.
    Scan {
        /// The first key.
        start: String,
        /// The key after the last.
        end: Option<String>,
        /// Most keys answered.
        limit: usize,
    },
    /// A client's writes applied atomically and in order: one Raft entry of their own.
    Batch(Vec<Write>),
    /// The node's own view, for tests and operators: its leader, last applied index and
    /// the membership it knows.
    Status,
    /// Administration, through the leader: add node `id`, serving at `addr`, as a learner
    /// (it receives the log but does not vote); answered once it has caught up.
    AddLearner {
        /// The new node's id (never one a removed node had: its vote is gone with it).
        id: u64,
        /// Where it serves.
        addr: String,
    },
    /// Administration, through the leader: make these learners voters.
    Promote(BTreeSet<u64>),
    /// Administration, through the leader: remove these nodes (voters or learners) from
    /// the cluster.
    Remove(BTreeSet<u64>),
}

/// Why a client's request did not complete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClientError {
    /// This node is not the leader; the leader it knows, if any.
    ForwardToLeader(Option<u64>),
    /// The request is not valid (an oversize write); it changed nothing.
    Invalid(String),
    /// Anything else (no quorum, the node shutting down, ...).
    Other(String),
}

/// A node's view of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// The leader it knows.
    pub leader: Option<u64>,
    /// The index of the last entry applied to its state machine.
    pub applied: Option<u64>,
    /// The voters of the membership it knows (both configurations' during a change).
    #[serde(default)]
    pub voters: BTreeSet<u64>,
    /// The learners of that membership.
    #[serde(default)]
    pub learners: BTreeSet<u64>,
    /// Every member's address.
    #[serde(default)]
    pub nodes: BTreeMap<u64, String>,
}

/// What a node answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum Answer {
    /// To [`Call::AppendEntries`].
    AppendEntries(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    /// To [`Call::Vote`].
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    /// To [`Call::InstallSnapshot`].
    InstallSnapshot(Result<InstallSnapshotResponse<u64>, RaftError<u64, InstallSnapshotError>>),
    /// To [`Call::Write`].
    Write(Result<Response, ClientError>),
    /// To [`Call::Read`].
    Read(Result<Option<String>, ClientError>),
    /// To [`Call::Scan`]: the keys and values found, in key order.
    Scan(Result<Vec<(String, String)>, ClientError>),
    /// To [`Call::Batch`]: each write's response, in order.
    Batch(Result<Vec<Response>, ClientError>),
    /// To [`Call::Status`].
    Status(Status),
    /// To [`Call::AddLearner`], [`Call::Promote`] and [`Call::Remove`]: the leader's view
    /// once the change is committed.
    Admin(Result<Status, ClientError>),
}

/// Writes `value` as one frame.
async fn send<T: Serialize>(stream: &mut TcpStream, value: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    send_raw(stream, &bytes).await
}

/// Writes `bytes` as one frame.
async fn send_raw(stream: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(bytes.len())
        .ok()
        .filter(|&n| n <= MAX_FRAME)
        .ok_or_else(|| std::io::Error::other("frame too large"))?;
    let mut frame = Vec::with_capacity(4 + bytes.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(bytes);
    stream.write_all(&frame).await
}

/// Reads one frame's bytes; `Ok(None)` at a clean end of the stream.
async fn receive_raw(stream: &mut TcpStream) -> std::io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    match stream.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len);
    if len > MAX_FRAME {
        return Err(std::io::Error::other(format!(
            "frame of {len} bytes refused"
        )));
    }
    let mut bytes = vec![0u8; len as usize];
    stream.read_exact(&mut bytes).await?;
    Ok(Some(bytes))
}

/// Reads one frame and decodes it; `Ok(None)` at a clean end of the stream.
async fn receive<T: serde::de::DeserializeOwned>(
    stream: &mut TcpStream,
) -> std::io::Result<Option<T>> {
    let Some(bytes) = receive_raw(stream).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// Writes one call: a snapshot chunk as its call without the bytes, then the bytes raw.
async fn send_call(stream: &mut TcpStream, call: &Call) -> std::io::Result<()> {
    let Call::InstallSnapshot(rpc) = call else {
        return send(stream, call).await;
    };
    let header = Call::InstallSnapshot(InstallSnapshotRequest {
        vote: rpc.vote,
        meta: rpc.meta.clone(),
        offset: rpc.offset,
        data: Vec::new(),
        done: rpc.done,
    });
    send(stream, &header).await?;
    send_raw(stream, &rpc.data).await
}

/// Reads one call, with the raw frame of a snapshot chunk's bytes; `Ok(None)` at a clean
/// end of the stream.
async fn receive_call(stream: &mut TcpStream) -> std::io::Result<Option<Call>> {
    let mut call = receive::<Call>(stream).await?;
    if let Some(Call::InstallSnapshot(rpc)) = &mut call {
        rpc.data = receive_raw(stream).await?.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "a snapshot chunk without its bytes",
            )
        })?;
    }
    Ok(call)
}

/// One request and its answer on `stream` (connecting first when there is none), within
/// `ttl`. On any failure the connection is dropped, so the next call reconnects.
pub(crate) async fn call(
    stream: &mut Option<TcpStream>,
    addr: &str,
    message: &Call,
    ttl: Duration,
) -> std::io::Result<Answer> {
    let exchange = async {
        if stream.is_none() {
            let s = TcpStream::connect(addr).await?;
            s.set_nodelay(true)?;
            *stream = Some(s);
        }
        let s = stream
            .as_mut()
            .ok_or_else(|| std::io::Error::other("no connection"))?;
        send_call(s, message).await?;
        receive::<Answer>(s).await?.ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the node closed the connection",
            )
        })
    };
    let result = match tokio::time::timeout(ttl, exchange).await {
        Ok(r) => r,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no answer in time",
        )),
    };
    if result.is_err() {
        *stream = None;
    }
    result
}

/// Makes a [`PeerClient`] per peer: openraft's network.
#[derive(Debug, Clone, Default)]
pub struct Network;

/// Raft's messages to one peer, on one connection kept between calls.
#[derive(Debug)]
pub struct PeerClient {
    target: u64,
    addr: String,
    stream: Option<TcpStream>,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerClient {
        PeerClient {
            target,
            addr: node.addr.clone(),
            stream: None,
        }
    }
}

impl PeerClient {
    async fn ask<E: std::error::Error>(
        &mut self,
        message: Call,
        option: &RPCOption,
    ) -> Result<Answer, RPCError<u64, BasicNode, E>> {
        call(&mut self.stream, &self.addr, &message, option.hard_ttl())
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidData => RPCError::Network(NetworkError::new(&e)),
                _ => RPCError::Unreachable(Unreachable::new(&e)),
            })
    }

    fn unexpected<E: std::error::Error>(&self) -> RPCError<u64, BasicNode, E> {
        let e = std::io::Error::other(format!("node {} answered another call", self.target));
        RPCError::Network(NetworkError::new(&e))
    }
}

impl RaftNetwork<TypeConfig> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        match self.ask(Call::AppendEntries(rpc), &option).await? {
            Answer::AppendEntries(r) => {
                r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            _ => Err(self.unexpected()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<
        InstallSnapshotResponse<u64>,
        RPCError<u64, BasicNode, RaftError<u64, InstallSnapshotError>>,
    > {
        match self.ask(Call::InstallSnapshot(rpc), &option).await? {
            Answer::InstallSnapshot(r) => {
                r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            _ => Err(self.unexpected()),
        }
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<u64>,
        option: RPCOption,
    ) -> Result<VoteResponse<u64>, RPCError<u64, BasicNode, RaftError<u64>>> {
        match self.ask(Call::Vote(rpc), &option).await? {
            Answer::Vote(r) => {
                r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            _ => Err(self.unexpected()),
        }
    }
}

/// A state machine the service can read keys from.
pub trait KvMachine: openraft::storage::RaftStateMachine<TypeConfig> + Clone {
    /// The value of `key` as the state machine holds it now.
    fn read(&self, key: &str) -> Result<Option<String>, openraft::StorageError<u64>>;

    /// The keys from `start` (included) to `end` (excluded; `None`: to the last), at most
    /// `limit`, in key order, with their values as the state machine holds them now; the
    /// page ends early with the entry that brings it to [`MAX_SCAN_BYTES`].
    fn scan(
        &self,
        start: &str,
        end: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String)>, openraft::StorageError<u64>>;
}

impl KvMachine for StrataStateMachine {
    fn read(&self, key: &str) -> Result<Option<String>, openraft::StorageError<u64>> {
        self.get(key)
    }

    fn scan(
        &self,
        start: &str,
        end: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String)>, openraft::StorageError<u64>> {
        StrataStateMachine::scan(self, start, end, limit, MAX_SCAN_BYTES)
    }
}

/// A write waiting for its proposal, and where its answer goes.
pub(crate) type Pending = (
    Write,
    tokio::sync::oneshot::Sender<Result<Response, ClientError>>,
);

/// Serves `listener` for `raft` (whose state machine is `sm`) until the task is dropped.
pub async fn serve<M: KvMachine>(
    listener: TcpListener,
    raft: KvRaft,
    sm: M,
) -> std::io::Result<()> {
    serve_with(listener, raft, sm, Arc::new(NodeMetrics::default()), None).await
}

/// What another interface of a node (HTTP, `crate::http`) needs: the node, its write
/// queue and its counters.
#[derive(Clone)]
pub struct Node<M> {
    /// The node.
    pub raft: KvRaft,
    /// Its state machine.
    pub sm: M,
    /// Where client writes wait for their proposal (RS6).
    pub(crate) writes: tokio::sync::mpsc::UnboundedSender<Pending>,
    /// Its counters.
    pub metrics: Arc<NodeMetrics>,
}

impl<M> std::fmt::Debug for Node<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").finish_non_exhaustive()
    }
}

/// Starts another interface of a node once its write queue exists; it is ended with the
/// node's server.
pub type Extra<M> = Box<dyn FnOnce(Node<M>) -> tokio::task::JoinHandle<()> + Send>;

/// [`serve`], counting into `metrics` (the log store's, so that `/metrics` shows its
/// syncs), with `extra` started beside it if given.
pub async fn serve_with<M: KvMachine>(
    listener: TcpListener,
    raft: KvRaft,
    sm: M,
    metrics: Arc<NodeMetrics>,
    extra: Option<Extra<M>>,
) -> std::io::Result<()> {
    let (writes, waiting) = tokio::sync::mpsc::unbounded_channel();
    let proposer = tokio::spawn(propose(raft.clone(), waiting, Arc::clone(&metrics)));
    // The proposer ends when the queue's last sender (this loop's) goes.
    let _proposer = AbortOnDrop(proposer);
    let _watcher = AbortOnDrop(tokio::spawn(count_leader_changes(
        raft.clone(),
        Arc::clone(&metrics),
    )));
    let _extra = extra.map(|start| {
        AbortOnDrop(start(Node {
            raft: raft.clone(),
            sm: sm.clone(),
            writes: writes.clone(),
            metrics: Arc::clone(&metrics),
        }))
    });
    // Connections end with the server (a node shut down in a process that goes on).
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (mut stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        while connections.try_join_next().is_some() {}
        let (raft, sm, writes) = (raft.clone(), sm.clone(), writes.clone());
        connections.spawn(async move {
            // A connection ends at its first bad frame or write error.
            while let Ok(Some(call)) = receive_call(&mut stream).await {
                let answer = answer(&raft, &sm, &writes, call).await;
                if send(&mut stream, &answer).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// Aborts a task when dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Counts the changes of the leader `raft` knows (to another node, not to none).
async fn count_leader_changes(raft: KvRaft, metrics: Arc<NodeMetrics>) {
    let mut watch = raft.metrics();
    let mut last = watch.borrow().current_leader;
    while watch.changed().await.is_ok() {
        let leader = watch.borrow().current_leader;
        if leader.is_some() && leader != last {
            if last.is_some() {
                metrics.count_leader_change();
            }
            last = leader;
        }
    }
}

/// RS6: takes the writes waiting, as many as fit one proposal, whenever fewer than
/// [`MAX_IN_FLIGHT`] proposals are in flight, and proposes them as one entry.
async fn propose(
    raft: KvRaft,
    mut waiting: tokio::sync::mpsc::UnboundedReceiver<Pending>,
    metrics: Arc<NodeMetrics>,
) {
    let in_flight = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let mut carried: Option<Pending> = None;
    loop {
        let first = match carried.take() {
            Some(p) => p,
            None => match waiting.recv().await {
                Some(p) => p,
                None => return,
            },
        };
        let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
            return;
        };
        // Everything that arrived meanwhile joins, up to a proposal's limits.
        let mut bytes = write_bytes(&first.0);
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH_WRITES {
            match waiting.try_recv() {
                Ok(p) => {
                    bytes += write_bytes(&p.0);
                    if bytes > MAX_BATCH_BYTES {
                        carried = Some(p);
                        break;
                    }
                    batch.push(p);
                }
                Err(_) => break,
            }
        }
        let raft = raft.clone();
        metrics.count_proposal(batch.len());
        tokio::spawn(async move {
            let (writes, replies): (Vec<Write>, Vec<_>) = batch.into_iter().unzip();
            // openraft 0.9 may never answer a proposal whose entry a snapshot replaced on
            // a deposed leader: the permit must not wait for it forever. A write answered
            // "unknown" here is resent by its client with its session (RS5).
            let answers = commit(&raft, writes).await;
            drop(permit);
            match answers {
                Ok(responses) => {
                    for (reply, response) in replies.into_iter().zip(responses) {
                        let _ = reply.send(Ok(response));
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
            }
        });
    }
}

/// The bytes of keys and values `w` carries, or why it is too large.
fn checked_size(w: &Write) -> Result<usize, ClientError> {
    write_size_allowed(write_bytes(w))
}

/// `size` bytes of key and value, if a write may carry that many; else why not.
pub(crate) fn write_size_allowed(size: usize) -> Result<usize, ClientError> {
    if size > MAX_WRITE_BYTES {
        return Err(ClientError::Invalid(format!(
            "a write of {size} bytes of key and value; at most {MAX_WRITE_BYTES}"
        )));
    }
    Ok(size)
}

/// `Ok` while this node believes it leads; else where to go instead.
fn ensure_leader(raft: &KvRaft) -> Result<(), ClientError> {
    let m = raft.metrics().borrow().clone();
    if m.current_leader != Some(m.id) {
        return Err(ClientError::ForwardToLeader(m.current_leader));
    }
    Ok(())
}

/// The bytes of keys and values a write carries.
pub(crate) fn write_bytes(w: &Write) -> usize {
    match &w.request {
        Request::Set { key, value } => key.len() + value.len(),
        Request::Delete { key } => key.len(),
    }
}

/// Waits until this node may read linearizably (a read index: `ensure_linearizable`).
async fn linearizable(raft: &KvRaft) -> Result<(), ClientError> {
    match raft.ensure_linearizable().await {
        Ok(_) => Ok(()),
        Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
            Err(ClientError::ForwardToLeader(f.leader_id))
        }
        Err(e) => Err(ClientError::Other(e.to_string())),
    }
}

pub(crate) async fn answer<M: KvMachine>(
    raft: &KvRaft,
    sm: &M,
    writes: &tokio::sync::mpsc::UnboundedSender<Pending>,
    call: Call,
) -> Answer {
    match call {
        Call::AppendEntries(rpc) => Answer::AppendEntries(raft.append_entries(rpc).await),
        Call::Vote(rpc) => Answer::Vote(raft.vote(rpc).await),
        Call::InstallSnapshot(rpc) => Answer::InstallSnapshot(raft.install_snapshot(rpc).await),
        Call::Write(write) => Answer::Write(submit(raft, writes, write).await),
        Call::Read(key) => Answer::Read(
            linearizable(raft)
                .await
                .and_then(|()| sm.read(&key).map_err(|e| ClientError::Other(e.to_string()))),
        ),
        Call::Scan { start, end, limit } => Answer::Scan(linearizable(raft).await.and_then(|()| {
            sm.scan(&start, end.as_deref(), limit.min(MAX_SCAN_KEYS))
                .map_err(|e| ClientError::Other(e.to_string()))
        })),
        Call::Batch(writes) => Answer::Batch(batch(raft, writes).await),
        Call::Status => Answer::Status(status(raft)),
        Call::AddLearner { id, addr } => Answer::Admin(admin(
            raft,
            raft.add_learner(id, BasicNode { addr }, true)
                .await
                .map(|_| ()),
        )),
        Call::Promote(ids) => Answer::Admin(admin(
            raft,
            change(raft, ChangeMembers::AddVoterIds(ids)).await,
        )),
        Call::Remove(ids) => Answer::Admin(remove(raft, ids).await),
    }
}

/// Proposes a client's batch as one entry of its own (its writes apply atomically, in
/// order), after the checks a lone write has, and the limits of a proposal.
async fn batch(raft: &KvRaft, writes: Vec<Write>) -> Result<Vec<Response>, ClientError> {
    if writes.is_empty() {
        return Ok(Vec::new());
    }
    if writes.len() > MAX_BATCH_WRITES {
        return Err(ClientError::Invalid(format!(
            "a batch of {} writes; at most {MAX_BATCH_WRITES}",
            writes.len()
        )));
    }
    let mut total = 0;
    for w in &writes {
        total += checked_size(w)?;
    }
    if total > MAX_BATCH_BYTES {
        return Err(ClientError::Invalid(format!(
            "a batch of {total} bytes of keys and values; at most {MAX_BATCH_BYTES}"
        )));
    }
    ensure_leader(raft)?;
    commit(raft, writes).await
}

/// Proposes `writes` as one entry and waits for each one's response, at most
/// [`PROPOSAL_TIMEOUT`].
async fn commit(raft: &KvRaft, writes: Vec<Write>) -> Result<Vec<Response>, ClientError> {
    let n = writes.len();
    match tokio::time::timeout(PROPOSAL_TIMEOUT, raft.client_write(Proposal { writes })).await {
        Err(_) => Err(ClientError::Other(format!(
            "no outcome for the proposal in {} s",
            PROPOSAL_TIMEOUT.as_secs()
        ))),
        Ok(Ok(r)) if r.data.len() == n => Ok(r.data),
        Ok(Ok(r)) => Err(ClientError::Other(format!(
            "{n} writes proposed, {} answers applied",
            r.data.len()
        ))),
        Ok(Err(e)) => Err(client_error(e)),
    }
}

/// The node's view of itself and its cluster.
pub(crate) fn status(raft: &KvRaft) -> Status {
    let m = raft.metrics().borrow().clone();
    let membership = m.membership_config.membership();
    Status {
        leader: m.current_leader,
        applied: m.last_applied.map(|id| id.index),
        voters: membership.voter_ids().collect(),
        learners: membership.learner_ids().collect(),
        nodes: membership
            .nodes()
            .map(|(id, n)| (*id, n.addr.clone()))
            .collect(),
    }
}

/// Removes `ids`: voters leave with their place (`retain` false), then learners.
async fn remove(raft: &KvRaft, ids: BTreeSet<u64>) -> Result<Status, ClientError> {
    let known = status(raft);
    // Nodes already gone are skipped: a resent removal, part or all of which was done,
    // finishes instead of failing. A request naming no member at all is refused.
    if ids
        .iter()
        .all(|id| !known.voters.contains(id) && !known.learners.contains(id))
    {
        return Err(ClientError::Invalid(format!(
            "no node of {ids:?} is a member"
        )));
    }
    let voters: BTreeSet<u64> = ids.intersection(&known.voters).copied().collect();
    if !voters.is_empty() {
        admin(
            raft,
            change(raft, ChangeMembers::RemoveVoters(voters)).await,
        )?;
    }
    let learners: BTreeSet<u64> = ids.intersection(&status(raft).learners).copied().collect();
    if learners.is_empty() {
        return Ok(status(raft));
    }
    admin(
        raft,
        change(raft, ChangeMembers::RemoveNodes(learners)).await,
    )
}

/// Commits a membership change (nodes removed leave the cluster: `retain` false). While
/// an earlier change is still being committed (its second, uniform configuration after
/// a leader change, say) it waits, up to ten seconds.
async fn change(
    raft: &KvRaft,
    changes: ChangeMembers<u64, BasicNode>,
) -> Result<(), RaftError<u64, ClientWriteError<u64, BasicNode>>> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match raft.change_membership(changes.clone(), false).await {
            Err(RaftError::APIError(ClientWriteError::ChangeMembershipError(
                ChangeMembershipError::InProgress(_),
            ))) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            outcome => return outcome.map(|_| ()),
        }
    }
}

/// The answer to a membership change that ended with `outcome`.
fn admin(
    raft: &KvRaft,
    outcome: Result<(), RaftError<u64, ClientWriteError<u64, BasicNode>>>,
) -> Result<Status, ClientError> {
    outcome.map(|()| status(raft)).map_err(client_error)
}

/// What a client hears of openraft's refusal of a write or a membership change.
fn client_error(e: RaftError<u64, ClientWriteError<u64, BasicNode>>) -> ClientError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => {
            ClientError::ForwardToLeader(f.leader_id)
        }
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
            ClientError::Invalid(e.to_string())
        }
        e => ClientError::Other(e.to_string()),
    }
}

/// Queues `write` for the next proposal and waits for its answer. A node that knows it
/// is not the leader says so at once.
async fn submit(
    raft: &KvRaft,
    writes: &tokio::sync::mpsc::UnboundedSender<Pending>,
    write: Write,
) -> Result<Response, ClientError> {
    checked_size(&write)?;
    ensure_leader(raft)?;
    let (reply, answer) = tokio::sync::oneshot::channel();
    writes
        .send((write, reply))
        .map_err(|_| ClientError::Other("the node is shutting down".into()))?;
    answer
        .await
        .unwrap_or_else(|_| Err(ClientError::Other("the node is shutting down".into())))
}

/// A client of the cluster: sends each request to the node it believes leads, follows
/// `ForwardToLeader`, and tries the next node when one does not answer.
#[derive(Debug)]
pub struct Client {
    nodes: BTreeMap<u64, String>,
    leader: u64,
    streams: BTreeMap<u64, Option<TcpStream>>,
    /// How long one attempt may take.
    pub timeout: Duration,
    /// This client's session id (RS5).
    id: u64,
    /// The sequence number of its last write.
    seq: u64,
}

/// How long a client keeps looking for a leader that answers a write or a read (an
/// election takes about a second with the default timeouts); a membership change gets
/// three times as long.
const PATIENCE: Duration = Duration::from_secs(10);

/// Why a client's call failed for good.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No node answered within the attempts: the request may or may not have taken effect.
    Unknown(String),
    /// A node refused it (it did not take effect).
    Refused(String),
}

impl Client {
    /// A client of the nodes `nodes` (id to address).
    pub fn new(nodes: BTreeMap<u64, String>) -> Self {
        let leader = nodes.keys().next().copied().unwrap_or(0);
        Client {
            streams: nodes.keys().map(|&id| (id, None)).collect(),
            nodes,
            leader,
            timeout: Duration::from_secs(2),
            id: crate::random_id(),
            seq: 0,
        }
    }

    /// This client's session id: every write it sends carries it.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Asks node `id` once.
    pub async fn ask(&mut self, id: u64, message: &Call) -> std::io::Result<Answer> {
        let addr = self
            .nodes
            .get(&id)
            .ok_or_else(|| std::io::Error::other(format!("no node {id}")))?
            .clone();
        let stream = self.streams.entry(id).or_default();
        call(stream, &addr, message, self.timeout).await
    }

    /// Sends `message` to the leader (finding it), at most `attempts` tries. `Ok` carries
    /// the leader's answer.
    async fn send_to_leader(
        &mut self,
        message: &Call,
        patience: Duration,
    ) -> Result<(Answer, bool), CallError> {
        let deadline = std::time::Instant::now() + patience;
        // Nodes that did not answer in this call: a forward to one waits a little (an
        // election may be under way).
        let mut unreachable = BTreeSet::new();
        let mut last = String::from("no attempt");
        let mut maybe_done = false;
        // A write with a session applies once however often it is sent (RS5): one that
        // failed on its node is sent again rather than left unknown.
        let resend_safe = matches!(
            message,
            Call::Write(Write {
                session: Some(_),
                ..
            })
        );
        for attempt in 0usize.. {
            if attempt > 0 && std::time::Instant::now() >= deadline {
                break;
            }
            let id = self.leader;
            let ids: Vec<u64> = self.nodes.keys().copied().collect();
            match self.ask(id, message).await {
                Ok(Answer::Write(Err(ClientError::Other(e)))) if resend_safe => {
                    maybe_done = true;
                    last = format!("node {id}: {e}");
                    // Another node may lead by now; if this one still does, it forwards back.
                    self.leader = next(&ids, id);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok(Answer::Write(Err(ClientError::ForwardToLeader(l))))
                | Ok(Answer::Read(Err(ClientError::ForwardToLeader(l))))
                | Ok(Answer::Scan(Err(ClientError::ForwardToLeader(l))))
                | Ok(Answer::Batch(Err(ClientError::ForwardToLeader(l))))
                | Ok(Answer::Admin(Err(ClientError::ForwardToLeader(l)))) => {
                    last = format!("node {id} forwards to {l:?}");
                    // A leader this client has no address for: the node knows it.
                    if let Some(l) = l
                        && !self.nodes.contains_key(&l)
                        && let Some(s) = self.status(id).await
                    {
                        for (n, addr) in s.nodes {
                            if !self.nodes.contains_key(&n) {
                                self.know(n, addr);
                            }
                        }
                    }
                    self.leader = match l {
                        Some(l) if l != id && !unreachable.contains(&l) => l,
                        _ => next(&ids, id),
                    };
                    if l.is_none() || l == Some(id) || l.is_some_and(|l| unreachable.contains(&l)) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
                // With whether an earlier attempt may have taken effect.
                Ok(answer) => return Ok((answer, maybe_done)),
                Err(e) => {
                    // The request may have reached the node before it stopped answering.
                    maybe_done = true;
                    last = format!("node {id}: {e}");
                    unreachable.insert(id);
                    self.leader = next(&ids, id);
                    if attempt + 1 >= ids.len() {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        }
        Err(if maybe_done {
            CallError::Unknown(last)
        } else {
            CallError::Refused(last)
        })
    }

    /// Writes through the leader, as the next write of this client's session: a write
    /// resent after a lost answer applies once (RS5). A write whose outcome is
    /// [`CallError::Unknown`] may still take effect (it may have been committed before
    /// its node went away); [`Client::resend`] asks again without applying it twice.
    pub async fn write(&mut self, request: Request) -> Result<Response, CallError> {
        self.seq += 1;
        let write = Write {
            session: Some(Session {
                client: self.id,
                seq: self.seq,
            }),
            request,
        };
        self.submit(&write).await
    }

    /// Sends this client's last write again, with its session: it applies at most once
    /// in all, and the answer is its first application's (marked `duplicate`) if it had
    /// applied. `None` if the client has written nothing.
    pub async fn resend(&mut self, request: Request) -> Option<Result<Response, CallError>> {
        if self.seq == 0 {
            return None;
        }
        let write = Write {
            session: Some(Session {
                client: self.id,
                seq: self.seq,
            }),
            request,
        };
        Some(self.submit(&write).await)
    }

    /// Sends `write` as it is, session and all (a tool may resend another client's).
    pub async fn submit(&mut self, write: &Write) -> Result<Response, CallError> {
        match self
            .send_to_leader(&Call::Write(write.clone()), PATIENCE)
            .await?
            .0
        {
            Answer::Write(Ok(r)) => Ok(r),
            Answer::Write(Err(ClientError::Invalid(e))) => Err(CallError::Refused(e)),
            // Not ForwardToLeader (handled above): the write did not commit here, but a
            // node may have appended it before failing; its fate is not known.
            Answer::Write(Err(e)) => Err(CallError::Unknown(format!("{e:?}"))),
            other => Err(CallError::Refused(format!("unexpected answer {other:?}"))),
        }
    }

    /// A linearizable read through the leader.
    pub async fn read(&mut self, key: &str) -> Result<Option<String>, CallError> {
        match self
            .send_to_leader(&Call::Read(key.to_string()), PATIENCE)
            .await?
            .0
        {
            Answer::Read(Ok(v)) => Ok(v),
            Answer::Read(Err(e)) => Err(CallError::Refused(format!("{e:?}"))),
            other => Err(CallError::Refused(format!("unexpected answer {other:?}"))),
        }
    }

    /// Makes node `id` at `addr` one this client may send to (a node added since it was
    /// made).
    pub fn know(&mut self, id: u64, addr: String) {
        self.streams.entry(id).or_default();
        self.nodes.insert(id, addr);
    }

    /// Adds node `id` (serving at `addr`) as a learner, through the leader; answers once
    /// it has caught up. The client knows it from then on.
    pub async fn add_learner(&mut self, id: u64, addr: &str) -> Result<Status, CallError> {
        self.know(id, addr.to_string());
        self.admin(&Call::AddLearner {
            id,
            addr: addr.to_string(),
        })
        .await
    }

    /// Makes learners voters, through the leader.
    pub async fn promote(&mut self, ids: BTreeSet<u64>) -> Result<Status, CallError> {
        self.admin(&Call::Promote(ids)).await
    }

    /// Removes nodes (voters or learners) from the cluster, through the leader.
    pub async fn remove(&mut self, ids: BTreeSet<u64>) -> Result<Status, CallError> {
        self.admin(&Call::Remove(ids)).await
    }

    async fn admin(&mut self, call: &Call) -> Result<Status, CallError> {
        let (answer, maybe_done) = self.send_to_leader(call, 3 * PATIENCE).await?;
        match answer {
            Answer::Admin(Ok(s)) => Ok(s),
            // Refused now, but an earlier attempt that got no answer may have made the
            // change this one finds done.
            Answer::Admin(Err(ClientError::Invalid(e))) if maybe_done => Err(CallError::Unknown(
                format!("{e} (an earlier attempt got no answer and may have made the change)"),
            )),
            Answer::Admin(Err(ClientError::Invalid(e))) => Err(CallError::Refused(e)),
            Answer::Admin(Err(e)) => Err(CallError::Unknown(format!("{e:?}"))),
            other => Err(CallError::Refused(format!("unexpected answer {other:?}"))),
        }
    }

    /// Node `id`'s status, if it answers.
    pub async fn status(&mut self, id: u64) -> Option<Status> {
        match self.ask(id, &Call::Status).await {
            Ok(Answer::Status(s)) => Some(s),
            _ => None,
        }
    }
}

/// The id after `id` in `ids`, wrapping.
fn next(ids: &[u64], id: u64) -> u64 {
    let at = ids.iter().position(|&x| x == id).map_or(0, |i| i + 1);
    ids.get(at % ids.len().max(1)).copied().unwrap_or(id)
}

/// A node's Raft handle and the task serving its port.
pub type Started = (KvRaft, tokio::task::JoinHandle<std::io::Result<()>>);

/// Starts a node: its store in `dir`, Raft with `config`, serving on `listener`.
pub async fn start_node(
    id: u64,
    dir: &std::path::Path,
    config: openraft::Config,
    listener: TcpListener,
) -> Result<Started, Box<dyn std::error::Error + Send + Sync>> {
    let (log, sm) = crate::open(dir)?;
    let metrics = log.metrics();
    start_with_metrics(id, config, listener, log, sm, metrics, None).await
}

/// Starts a node over any log store and state machine (the figures compare Strata's with
/// an in-memory pair).
pub async fn start_with<L, M>(
    id: u64,
    config: openraft::Config,
    listener: TcpListener,
    log: L,
    sm: M,
) -> Result<Started, Box<dyn std::error::Error + Send + Sync>>
where
    L: openraft::storage::RaftLogStorage<TypeConfig>,
    M: KvMachine,
{
    let metrics = Arc::new(NodeMetrics::default());
    start_with_metrics(id, config, listener, log, sm, metrics, None).await
}

/// [`start_with`], counting into `metrics`, with `extra` (another interface, such as
/// `crate::http::start_node`'s) started beside the framed port.
pub async fn start_with_metrics<L, M>(
    id: u64,
    config: openraft::Config,
    listener: TcpListener,
    log: L,
    sm: M,
    metrics: Arc<NodeMetrics>,
    extra: Option<Extra<M>>,
) -> Result<Started, Box<dyn std::error::Error + Send + Sync>>
where
    L: openraft::storage::RaftLogStorage<TypeConfig>,
    M: KvMachine,
{
    let config = Arc::new(config.validate()?);
    let raft = Raft::new(id, config, Network, log, sm.clone()).await?;
    let server = tokio::spawn(serve_with(listener, raft.clone(), sm, metrics, extra));
    Ok((raft, server))
}
