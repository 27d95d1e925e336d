//! The HTTP/JSON interface on a three-node cluster, driven as `curl` would: writes through
//! a follower, reads, a scan in pages, an atomic batch, resent writes with a session,
//! membership changes, `/metrics`, and the refusals (4xx with a reason, nothing changed).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn config() -> openraft::Config {
    openraft::Config {
        cluster_name: "http".into(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        ..Default::default()
    }
}

/// One request on a connection of its own; the status and the body.
async fn request(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.unwrap();
    let end = got
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head");
    let head = String::from_utf8_lossy(&got[..end]).to_string();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("a status code");
    (status, got[end + 4..].to_vec())
}

/// A request whose answer is JSON.
async fn json_request(addr: &str, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let (status, body) = request(addr, method, path, body).await;
    let v = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "{method} {path}: {status} {e}: {:?}",
            String::from_utf8_lossy(&body)
        )
    });
    (status, v)
}

/// A refusal: `status`, and a one-line reason.
async fn refused(addr: &str, method: &str, path: &str, body: &[u8], status: u16) -> String {
    let (got, v) = json_request(addr, method, path, body).await;
    assert_eq!(got, status, "{method} {path}: {v}");
    let reason = v["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{v}"))
        .to_string();
    assert!(!reason.is_empty() && !reason.contains('\n'), "{reason:?}");
    reason
}

/// Waits until `addr` reports a leader; its id.
async fn leader(addr: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, v) = json_request(addr, "GET", "/cluster", b"").await;
        if status == 200
            && let Some(l) = v["leader"].as_u64()
        {
            return l;
        }
        assert!(Instant::now() < deadline, "no leader in 20 s: {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The value of metric `name` in a Prometheus text page.
fn metric(page: &str, name: &str) -> f64 {
    page.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{page}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn http_reads_writes_scans_batches_and_administers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut raft_addrs = BTreeMap::new();
    let mut http_addrs = BTreeMap::new();
    let mut listeners = BTreeMap::new();
    for id in 1..=4u64 {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let h = TcpListener::bind("127.0.0.1:0").await.unwrap();
        raft_addrs.insert(id, l.local_addr().unwrap().to_string());
        http_addrs.insert(id, h.local_addr().unwrap().to_string());
        listeners.insert(id, (l, h));
    }
    let mut nodes = Vec::new();
    for id in 1..=4u64 {
        let (l, h) = listeners.remove(&id).unwrap();
        let dir = tmp.path().join(format!("node{id}"));
        let started = strata_openraft::http::start_node(id, &dir, config(), l, h)
            .await
            .unwrap();
        nodes.push(started);
    }
    let members: BTreeMap<u64, openraft::BasicNode> = (1..=3)
        .map(|id| {
            (
                id,
                openraft::BasicNode {
                    addr: raft_addrs[&id].clone(),
                },
            )
        })
        .collect();
    nodes[0].0.initialize(members).await.unwrap();
    let http = |id: u64| http_addrs[&id].clone();
    let lead = leader(&http(1)).await;
    let follower = (1..=3).find(|&id| id != lead).unwrap();
    let other = (1..=3).find(|&id| id != lead && id != follower).unwrap();

    // Writes through a follower reach the leader; reads anywhere see them.
    let (s, v) = json_request(&http(follower), "PUT", "/kv/a/b", b"one").await;
    assert_eq!(
        (s, &v),
        (200, &json!({"previous": null, "duplicate": false}))
    );
    let (s, v) = json_request(&http(other), "GET", "/kv/a/b", b"").await;
    assert_eq!((s, &v), (200, &json!({"key": "a/b", "value": "one"})));
    let (_, v) = json_request(&http(lead), "PUT", "/kv/a/b", b"two").await;
    assert_eq!(v["previous"], "one");

    // A resent write with its session applies once.
    let (_, v) = json_request(&http(follower), "PUT", "/kv/s?client=7&seq=1", b"x").await;
    assert_eq!(v["duplicate"], false);
    let (_, v) = json_request(&http(other), "PUT", "/kv/s?client=7&seq=1", b"y").await;
    assert_eq!(v["duplicate"], true);
    let (_, v) = json_request(&http(lead), "GET", "/kv/s", b"").await;
    assert_eq!(v["value"], "x");

    // Delete; a missing key is a 404.
    let (_, v) = json_request(&http(other), "DELETE", "/kv/a/b", b"").await;
    assert_eq!(v["previous"], "two");
    refused(&http(follower), "GET", "/kv/a/b", b"", 404).await;

    // A batch applies whole and in order.
    let batch = json!({"writes": [
        {"op": "set", "key": "k1", "value": "1"},
        {"op": "set", "key": "k2", "value": "2"},
        {"op": "set", "key": "k3", "value": "3"},
        {"op": "delete", "key": "s"},
    ]});
    let (s, v) = json_request(
        &http(follower),
        "POST",
        "/batch",
        batch.to_string().as_bytes(),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["results"].as_array().unwrap().len(), 4);
    assert_eq!(v["results"][3]["previous"], "x");

    // A scan in pages: `next` starts the page after a full one.
    let (_, v) = json_request(&http(other), "GET", "/kv?start=k&end=l&limit=2", b"").await;
    assert_eq!(
        v,
        json!({"items": [{"key": "k1", "value": "1"}, {"key": "k2", "value": "2"}], "next": "k2\u{0}"})
    );
    let (_, v) = json_request(&http(lead), "GET", "/kv?start=k2%00&end=l", b"").await;
    assert_eq!(
        v,
        json!({"items": [{"key": "k3", "value": "3"}], "next": null})
    );
    let (_, v) = json_request(&http(lead), "GET", "/kv?start=z", b"").await;
    assert_eq!(v, json!({"items": [], "next": null}));

    // Refusals: a 4xx with a reason, and nothing changed.
    refused(&http(follower), "POST", "/batch", b"{not json", 400).await;
    let half_bad =
        br#"{"writes": [{"op": "set", "key": "k1", "value": "changed"}, {"op": "bogus"}]}"#;
    refused(&http(follower), "POST", "/batch", half_bad, 422).await;
    refused(
        &http(follower),
        "POST",
        "/batch",
        br#"{"writes": [], "extra": 1}"#,
        422,
    )
    .await;
    let (_, v) = json_request(&http(lead), "GET", "/kv/k1", b"").await;
    assert_eq!(v["value"], "1");
    let big = vec![b'v'; (1 << 20) + 1];
    let reason = refused(&http(follower), "PUT", "/kv/big", &big, 413).await;
    assert!(reason.contains("at most"), "{reason}");
    // Five writes under 1 MiB each, over the batch's 4 MiB together; then 4,097 writes.
    let heavy = json!({"writes": (0..5).map(|i| json!({"op": "set", "key": format!("m{i}"), "value": "v".repeat((1 << 20) - 16)})).collect::<Vec<_>>()});
    let reason = refused(
        &http(lead),
        "POST",
        "/batch",
        heavy.to_string().as_bytes(),
        400,
    )
    .await;
    assert!(
        reason.contains("a batch of") && reason.contains("bytes"),
        "{reason}"
    );
    let long = json!({"writes": (0..4097).map(|i| json!({"op": "set", "key": format!("m{i}"), "value": "v"})).collect::<Vec<_>>()});
    let reason = refused(
        &http(follower),
        "POST",
        "/batch",
        long.to_string().as_bytes(),
        400,
    )
    .await;
    assert!(reason.contains("4097 writes"), "{reason}");
    refused(&http(lead), "GET", "/kv/%FF", b"", 400).await;
    refused(&http(lead), "PATCH", "/kv/x", b"", 405).await;
    refused(
        &http(follower),
        "POST",
        "/cluster/learners",
        br#"{"id": 5, "addr": "x:y"}"#,
        400,
    )
    .await;
    refused(&http(lead), "GET", "/kv/big", b"", 404).await;
    refused(&http(lead), "GET", "/kv/m0", b"", 404).await;
    refused(&http(lead), "PUT", "/kv/bad", &[0xff, 0xfe], 400).await;
    refused(&http(lead), "GET", "/kv/bad", b"", 404).await;
    refused(&http(lead), "PUT", "/kv/x?client=1", b"v", 400).await;
    refused(&http(lead), "PUT", "/kv/x?client=1&seq=zero", b"v", 400).await;
    refused(&http(lead), "GET", "/kv/x", b"", 404).await;
    refused(&http(lead), "GET", "/kv?limit=0", b"", 400).await;
    refused(&http(lead), "GET", "/nowhere", b"", 404).await;
    refused(&http(follower), "DELETE", "/cluster/nodes/9", b"", 404).await;
    refused(&http(follower), "DELETE", "/cluster/nodes/nine", b"", 400).await;
    refused(
        &http(follower),
        "POST",
        "/cluster/voters",
        br#"{"ids": [9]}"#,
        404,
    )
    .await;
    let again = json!({"id": 1, "addr": raft_addrs[&1]});
    refused(
        &http(follower),
        "POST",
        "/cluster/learners",
        again.to_string().as_bytes(),
        409,
    )
    .await;

    // Membership: node 4 joins as a learner, becomes a voter, and leaves.
    let join = json!({"id": 4, "addr": raft_addrs[&4]});
    let (s, v) = json_request(
        &http(follower),
        "POST",
        "/cluster/learners",
        join.to_string().as_bytes(),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["learners"], json!([4]));
    let (s, v) = json_request(&http(other), "POST", "/cluster/voters", br#"{"ids": [4]}"#).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["voters"], json!([1, 2, 3, 4]));
    let (_, v) = json_request(&http(4), "GET", "/kv/k2", b"").await;
    assert_eq!(v["value"], "2");
    let (s, v) = json_request(&http(follower), "DELETE", "/cluster/nodes/4", b"").await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["voters"], json!([1, 2, 3]));

    // The leader's metrics count what happened.
    let first_lead = lead;
    let lead = leader(&http(follower)).await;
    let (s, page) = request(&http(lead), "GET", "/metrics", b"").await;
    assert_eq!(s, 200);
    let page = String::from_utf8(page).unwrap();
    assert_eq!(metric(&page, "strata_kv_is_leader"), 1.0, "{page}");
    assert!(metric(&page, "strata_kv_commit_index") >= 8.0, "{page}");
    assert!(metric(&page, "strata_kv_applied_index") >= 8.0, "{page}");
    assert!(metric(&page, "strata_kv_apply_lag") >= 0.0, "{page}");
    assert!(metric(&page, "strata_kv_fsyncs_total") >= 8.0, "{page}");
    // Five lone writes went through the proposer, the resend included (the batch is an
    // entry of its own, and the refused requests none): all on this node unless the
    // leader changed on the way (an election on a loaded machine).
    let proposals = metric(&page, "strata_kv_batch_writes_count");
    assert_eq!(
        metric(&page, "strata_kv_batch_writes_sum"),
        proposals,
        "{page}"
    );
    if lead == first_lead && metric(&page, "strata_kv_leader_changes_total") == 0.0 {
        assert_eq!(proposals, 5.0, "{page}");
    } else {
        assert!(proposals <= 5.0, "{page}");
    }

    for (raft, server) in nodes {
        server.abort();
        raft.shutdown().await.unwrap();
    }
}
