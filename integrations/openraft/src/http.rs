//! The HTTP/JSON interface of a node (`strata-kv-node serve --http ADDR`): keys and values
//! for people and programs that speak HTTP, the cluster's administration, and a
//! Prometheus `/metrics` page. It runs beside the framed port (`service`), which Raft's
//! messages keep using.
//!
//! | method and path | what it does |
//! |---|---|
//! | `GET /kv/{key}` | linearizable read: `{"key", "value"}`, or 404 |
//! | `PUT /kv/{key}` | sets the key to the request body (UTF-8 text): `{"previous", "duplicate"}` |
//! | `DELETE /kv/{key}` | removes the key: `{"previous", "duplicate"}` |
//! | `GET /kv?start=&end=&limit=` | linearizable scan, `end` excluded: `{"items": [{"key", "value"}], "next"}` |
//! | `POST /batch` | `{"writes": [{"op": "set", "key", "value"}, {"op": "delete", "key"}]}`, applied atomically and in order: `{"results": [...]}` |
//! | `GET /cluster` | the leader and the members as this node knows them |
//! | `POST /cluster/learners` | `{"id", "addr"}`: add a node as a learner (answers once it caught up) |
//! | `POST /cluster/voters` | `{"ids": [...]}`: make learners voters |
//! | `DELETE /cluster/nodes/{id}` | remove a voter or a learner |
//! | `GET /metrics` | Prometheus's text format (`metrics.rs`) |
//!
//! A `PUT` or `DELETE` may carry `?client=ID&seq=N` (a session, RS5): resent with the same
//! pair, it applies once, and the answer says `"duplicate": true`.
//!
//! Rules:
//! - Any node takes any request: one that does not lead passes it to the leader's framed
//!   port (the membership has its address) and answers what the leader answered.
//! - A request that cannot be valid (malformed JSON or query, a value that is not UTF-8,
//!   an oversize write, an unknown node) gets a 4xx and a one-line reason as
//!   `{"error": "..."}` and changes nothing; 503 means the cluster could not answer now
//!   (no leader yet, no quorum) and the request may be retried (a write with a session
//!   safely).

use std::collections::BTreeSet;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response as HttpResponse};
use axum::routing::{delete, get, post};
use serde::Deserialize;
use serde_json::json;
use tokio::net::TcpListener;

use crate::service::{
    self, Answer, Call, ClientError, KvMachine, MAX_BATCH_BYTES, MAX_SCAN_BYTES, MAX_SCAN_KEYS,
    Node,
};
use crate::{Request, Response, Session, Write};

/// How long a request may take, here or at the leader it is passed to (a learner's
/// catch-up included): past it the answer is a 503 that says the request may have taken
/// effect.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// Keys a scan answers when the request names no limit.
const DEFAULT_SCAN_LIMIT: usize = 100;

/// Starts a node as `service::start_node` does, with this interface served on `http`.
pub async fn start_node(
    id: u64,
    dir: &std::path::Path,
    config: openraft::Config,
    listener: TcpListener,
    http: TcpListener,
) -> Result<service::Started, Box<dyn std::error::Error + Send + Sync>> {
    let (log, sm) = crate::open(dir)?;
    let metrics = log.metrics();
    let extra: service::Extra<crate::StrataStateMachine> = Box::new(move |node| {
        tokio::spawn(async move {
            // An accept error ends this interface alone; the node goes on.
            let _ = serve(http, node).await;
        })
    });
    service::start_with_metrics(id, config, listener, log, sm, metrics, Some(extra)).await
}

/// Serves the HTTP interface of `node` on `listener` until the task is dropped.
pub async fn serve<M: KvMachine + Send + Sync + 'static>(
    listener: TcpListener,
    node: Node<M>,
) -> std::io::Result<()> {
    axum::serve(listener, router(node)).await
}

fn router<M: KvMachine + Send + Sync + 'static>(node: Node<M>) -> Router {
    Router::new()
        .route("/kv", get(scan::<M>))
        .route(
            "/kv/{*key}",
            get(read::<M>).put(put::<M>).delete(remove_key::<M>),
        )
        .route("/batch", post(batch::<M>))
        .route("/cluster", get(cluster::<M>))
        .route("/cluster/learners", post(add_learner::<M>))
        .route("/cluster/voters", post(promote::<M>))
        .route("/cluster/nodes/{id}", delete(remove_node::<M>))
        .route("/metrics", get(metrics::<M>))
        .method_not_allowed_fallback(|| async {
            error(
                StatusCode::METHOD_NOT_ALLOWED,
                "this path does not take that method",
            )
        })
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "no such endpoint (see docs/distributed.md)",
            )
        })
        // A batch's JSON may escape its bytes; the limits on keys and values are checked
        // on the decoded request, with a reason.
        .layer(DefaultBodyLimit::max(2 * MAX_BATCH_BYTES + (64 << 10)))
        .with_state(node)
}

/// `{"error": reason}` with `status`.
fn error(status: StatusCode, reason: impl std::fmt::Display) -> HttpResponse {
    // One line: a reason never spans several.
    let reason = reason.to_string().replace('\n', " ");
    (status, Json(json!({ "error": reason }))).into_response()
}

/// The answer to a refusal from the node (or the leader it passed the request to).
fn refused(e: ClientError) -> HttpResponse {
    match e {
        ClientError::Invalid(reason) => error(StatusCode::BAD_REQUEST, reason),
        ClientError::ForwardToLeader(None) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "no leader is known yet (an election may be under way); retry",
        ),
        ClientError::ForwardToLeader(Some(l)) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("node {l} leads and did not take the request; retry"),
        ),
        ClientError::Other(reason) => error(StatusCode::SERVICE_UNAVAILABLE, reason),
    }
}

/// A path's part, or the 4xx that says why it is not one (not UTF-8 once decoded, say).
fn path(p: Result<Path<String>, PathRejection>) -> Result<String, HttpResponse> {
    p.map(|Path(s)| s)
        .map_err(|e| error(e.status(), e.body_text()))
}

/// The body of a JSON request, or the 4xx that says why it is not one.
fn json_body<T>(body: Result<Json<T>, JsonRejection>) -> Result<T, HttpResponse> {
    body.map(|Json(b)| b)
        .map_err(|e| error(e.status(), e.body_text()))
}

/// The leader a refusal points to, if it is one.
fn leader_named(answer: &Answer) -> Option<u64> {
    match answer {
        Answer::Write(Err(ClientError::ForwardToLeader(Some(l))))
        | Answer::Read(Err(ClientError::ForwardToLeader(Some(l))))
        | Answer::Scan(Err(ClientError::ForwardToLeader(Some(l))))
        | Answer::Batch(Err(ClientError::ForwardToLeader(Some(l))))
        | Answer::Admin(Err(ClientError::ForwardToLeader(Some(l)))) => Some(*l),
        _ => None,
    }
}

/// Answers `make()`'s call here, or, when this node does not lead, at the leader.
async fn ask<M: KvMachine>(
    node: &Node<M>,
    make: impl Fn() -> Call,
) -> Result<Answer, HttpResponse> {
    let here = service::answer(&node.raft, &node.sm, &node.writes, make());
    let Ok(answer) = tokio::time::timeout(REQUEST_TIMEOUT, here).await else {
        return Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "no outcome in {} s: the request may have taken effect (a write with a session may be resent)",
                REQUEST_TIMEOUT.as_secs()
            ),
        ));
    };
    let Some(leader) = leader_named(&answer) else {
        return Ok(answer);
    };
    let mine = service::status(&node.raft);
    let Some(asked) = at_node(&mine, leader, &make()).await else {
        return Ok(answer);
    };
    asked.map_err(|e| {
        error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("node {leader} leads and did not answer ({e}); retry"),
        )
    })
}

/// The membership as the leader knows it (it decides every change): this node's own view
/// when it leads or cannot reach the leader, else the leader's (a follower learns of a
/// committed change a moment after the leader).
async fn leader_view<M: KvMachine>(node: &Node<M>) -> service::Status {
    let mine = service::status(&node.raft);
    let me = node.raft.metrics().borrow().id;
    let Some(leader) = mine.leader.filter(|&l| l != me) else {
        return mine;
    };
    match at_node(&mine, leader, &Call::Status).await {
        Some(Ok(Answer::Status(theirs))) => theirs,
        _ => mine,
    }
}

/// Asks node `id` `call` on its framed port, found in the membership `known`; `None` if
/// `known` has no address for it.
async fn at_node(known: &service::Status, id: u64, call: &Call) -> Option<std::io::Result<Answer>> {
    let addr = known.nodes.get(&id)?;
    Some(service::call(&mut None, addr, call, REQUEST_TIMEOUT).await)
}

/// An answer that is not the one the call asks for.
fn unexpected() -> HttpResponse {
    error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "the node answered another call",
    )
}

async fn read<M: KvMachine>(
    State(node): State<Node<M>>,
    key: Result<Path<String>, PathRejection>,
) -> HttpResponse {
    let key = match path(key) {
        Ok(k) => k,
        Err(r) => return r,
    };
    match ask(&node, || Call::Read(key.clone())).await {
        Ok(Answer::Read(Ok(Some(value)))) => {
            Json(json!({ "key": key, "value": value })).into_response()
        }
        Ok(Answer::Read(Ok(None))) => error(StatusCode::NOT_FOUND, format!("no value for {key:?}")),
        Ok(Answer::Read(Err(e))) => refused(e),
        Ok(_) => unexpected(),
        Err(r) => r,
    }
}

/// A write's optional session, from its query.
#[derive(Debug, Deserialize)]
struct SessionQuery {
    client: Option<u64>,
    seq: Option<u64>,
}

fn session(
    q: Result<Query<SessionQuery>, QueryRejection>,
) -> Result<Option<Session>, HttpResponse> {
    let Query(q) = q.map_err(|e| error(StatusCode::BAD_REQUEST, e.body_text()))?;
    match (q.client, q.seq) {
        (None, None) => Ok(None),
        (Some(client), Some(seq)) if seq > 0 => Ok(Some(Session { client, seq })),
        (Some(_), Some(_)) => Err(error(StatusCode::BAD_REQUEST, "seq counts from 1")),
        _ => Err(error(
            StatusCode::BAD_REQUEST,
            "a session needs both client and seq",
        )),
    }
}

/// A 413 for a lone write of `size` bytes of key and value over the service's limit
/// (`service::write_size_allowed` says why).
fn oversize(size: usize) -> Option<HttpResponse> {
    service::write_size_allowed(size).err().map(|e| match e {
        ClientError::Invalid(reason) => error(StatusCode::PAYLOAD_TOO_LARGE, reason),
        other => refused(other),
    })
}

/// Sends one write and answers its response.
async fn write<M: KvMachine>(node: &Node<M>, write: Write) -> HttpResponse {
    if let Some(r) = oversize(service::write_bytes(&write)) {
        return r;
    }
    match ask(node, || Call::Write(write.clone())).await {
        Ok(Answer::Write(Ok(r))) => Json(response_json(&r)).into_response(),
        Ok(Answer::Write(Err(e))) => refused(e),
        Ok(_) => unexpected(),
        Err(r) => r,
    }
}

fn response_json(r: &Response) -> serde_json::Value {
    json!({ "previous": r.previous, "duplicate": r.duplicate })
}

async fn put<M: KvMachine>(
    State(node): State<Node<M>>,
    key: Result<Path<String>, PathRejection>,
    q: Result<Query<SessionQuery>, QueryRejection>,
    body: Result<Bytes, BytesRejection>,
) -> HttpResponse {
    let (key, session) = match (path(key), session(q)) {
        (Ok(k), Ok(s)) => (k, s),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let body = match body {
        Ok(b) => b,
        Err(e) => return error(e.status(), e.body_text()),
    };
    // Before the value is checked as text: an oversize body is refused as such.
    if let Some(r) = oversize(key.len() + body.len()) {
        return r;
    }
    let Ok(value) = String::from_utf8(body.to_vec()) else {
        return error(StatusCode::BAD_REQUEST, "the value is not UTF-8 text");
    };
    let request = Request::Set { key, value };
    write(&node, Write { session, request }).await
}

async fn remove_key<M: KvMachine>(
    State(node): State<Node<M>>,
    key: Result<Path<String>, PathRejection>,
    q: Result<Query<SessionQuery>, QueryRejection>,
) -> HttpResponse {
    let (key, session) = match (path(key), session(q)) {
        (Ok(k), Ok(s)) => (k, s),
        (Err(r), _) | (_, Err(r)) => return r,
    };
    let request = Request::Delete { key };
    write(&node, Write { session, request }).await
}

#[derive(Debug, Deserialize)]
struct ScanQuery {
    start: Option<String>,
    end: Option<String>,
    limit: Option<usize>,
}

async fn scan<M: KvMachine>(
    State(node): State<Node<M>>,
    q: Result<Query<ScanQuery>, QueryRejection>,
) -> HttpResponse {
    let Query(q) = match q {
        Ok(q) => q,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.body_text()),
    };
    let limit = q.limit.unwrap_or(DEFAULT_SCAN_LIMIT);
    if limit == 0 || limit > MAX_SCAN_KEYS {
        return error(
            StatusCode::BAD_REQUEST,
            format!("limit must be from 1 to {MAX_SCAN_KEYS}"),
        );
    }
    let start = q.start.unwrap_or_default();
    if q.end.as_ref().is_some_and(|e| *e <= start) {
        return Json(json!({ "items": [], "next": null })).into_response();
    }
    let call = || Call::Scan {
        start: start.clone(),
        end: q.end.clone(),
        limit,
    };
    match ask(&node, call).await {
        Ok(Answer::Scan(Ok(items))) => {
            // A full page (by count or by bytes) may have more after it: the next page
            // starts just past its last key.
            let bytes: usize = items.iter().map(|(k, v)| k.len() + v.len()).sum();
            let next = (items.len() == limit || bytes >= MAX_SCAN_BYTES)
                .then(|| items.last().map(|(k, _)| format!("{k}\u{0}")))
                .flatten();
            let items: Vec<_> = items
                .into_iter()
                .map(|(key, value)| json!({ "key": key, "value": value }))
                .collect();
            Json(json!({ "items": items, "next": next })).into_response()
        }
        Ok(Answer::Scan(Err(e))) => refused(e),
        Ok(_) => unexpected(),
        Err(r) => r,
    }
}

/// One write of a batch, as `POST /batch` takes it.
#[derive(Debug, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase", deny_unknown_fields)]
enum BatchOp {
    Set { key: String, value: String },
    Delete { key: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchBody {
    writes: Vec<BatchOp>,
}

async fn batch<M: KvMachine>(
    State(node): State<Node<M>>,
    body: Result<Json<BatchBody>, JsonRejection>,
) -> HttpResponse {
    let body = match json_body(body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let writes: Vec<Write> = body
        .writes
        .into_iter()
        .map(|op| Write {
            session: None,
            request: match op {
                BatchOp::Set { key, value } => Request::Set { key, value },
                BatchOp::Delete { key } => Request::Delete { key },
            },
        })
        .collect();
    match ask(&node, || Call::Batch(writes.clone())).await {
        Ok(Answer::Batch(Ok(results))) => {
            let results: Vec<_> = results.iter().map(response_json).collect();
            Json(json!({ "results": results })).into_response()
        }
        Ok(Answer::Batch(Err(e))) => refused(e),
        Ok(_) => unexpected(),
        Err(r) => r,
    }
}

async fn cluster<M: KvMachine>(State(node): State<Node<M>>) -> HttpResponse {
    Json(service::status(&node.raft)).into_response()
}

/// The answer to a membership change.
async fn admin<M: KvMachine>(node: &Node<M>, make: impl Fn() -> Call) -> HttpResponse {
    match ask(node, make).await {
        Ok(Answer::Admin(Ok(status))) => Json(status).into_response(),
        Ok(Answer::Admin(Err(e))) => refused(e),
        Ok(_) => unexpected(),
        Err(r) => r,
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewLearner {
    id: u64,
    addr: String,
}

async fn add_learner<M: KvMachine>(
    State(node): State<Node<M>>,
    body: Result<Json<NewLearner>, JsonRejection>,
) -> HttpResponse {
    let NewLearner { id, addr } = match json_body(body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    let known = leader_view(&node).await;
    if known.voters.contains(&id) || known.learners.contains(&id) {
        return error(
            StatusCode::CONFLICT,
            format!("node {id} is a member already"),
        );
    }
    let port = addr
        .rsplit_once(':')
        .filter(|(host, _)| !host.is_empty())
        .and_then(|(_, port)| port.parse::<u16>().ok());
    if port.is_none_or(|p| p == 0) {
        return error(
            StatusCode::BAD_REQUEST,
            format!("{addr:?} is not an address (HOST:PORT)"),
        );
    }
    admin(&node, || Call::AddLearner {
        id,
        addr: addr.clone(),
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Voters {
    ids: BTreeSet<u64>,
}

async fn promote<M: KvMachine>(
    State(node): State<Node<M>>,
    body: Result<Json<Voters>, JsonRejection>,
) -> HttpResponse {
    let Voters { ids } = match json_body(body) {
        Ok(b) => b,
        Err(r) => return r,
    };
    if ids.is_empty() {
        return error(StatusCode::BAD_REQUEST, "no node named in ids");
    }
    let known = leader_view(&node).await;
    if let Some(id) = ids
        .iter()
        .find(|id| !known.learners.contains(id) && !known.voters.contains(id))
    {
        return error(
            StatusCode::NOT_FOUND,
            format!("node {id} is not in the cluster (add it as a learner first)"),
        );
    }
    admin(&node, || Call::Promote(ids.clone())).await
}

async fn remove_node<M: KvMachine>(
    State(node): State<Node<M>>,
    id: Result<Path<String>, PathRejection>,
) -> HttpResponse {
    let id = match path(id) {
        Ok(id) => id,
        Err(r) => return r,
    };
    let Ok(id) = id.parse::<u64>() else {
        return error(StatusCode::BAD_REQUEST, format!("{id:?} is not a node id"));
    };
    let known = leader_view(&node).await;
    if !known.voters.contains(&id) && !known.learners.contains(&id) {
        return error(
            StatusCode::NOT_FOUND,
            format!("node {id} is not in the cluster"),
        );
    }
    admin(&node, || Call::Remove(BTreeSet::from([id]))).await
}

async fn metrics<M: KvMachine>(State(node): State<Node<M>>) -> HttpResponse {
    let raft = node.raft.metrics().borrow().clone();
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        node.metrics.render(&raft),
    )
        .into_response()
}
