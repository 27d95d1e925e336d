//! `strata-kv-node`: one node of a replicated key-value service, openraft over Strata,
//! on plain TCP (`strata_openraft::service`).
//!
//! ```text
//! strata-kv-node --id 1 --dir /var/lib/kv1 --addr 127.0.0.1:7001 \
//!     --peer 1=127.0.0.1:7001 --peer 2=127.0.0.1:7002 --peer 3=127.0.0.1:7003 --init
//! ```
//!
//! `--init` (on one node, once) makes the peers the cluster's first members; a node
//! restarted from its directory rejoins with what it had. It prints `ready <addr>` when
//! it serves, and runs until it is stopped.

use std::collections::BTreeMap;

use clap::Parser;
use openraft::BasicNode;
use strata_openraft::service;

#[derive(Parser, Debug)]
#[command(about = "One node of a replicated key-value service: openraft over Strata")]
struct Args {
    /// This node's id.
    #[arg(long)]
    id: u64,
    /// The database directory (created if missing).
    #[arg(long)]
    dir: std::path::PathBuf,
    /// The address to serve on (Raft and clients).
    #[arg(long)]
    addr: String,
    /// A member of the cluster, as ID=ADDR (every member, this node included).
    #[arg(long = "peer", value_parser = parse_peer)]
    peers: Vec<(u64, String)>,
    /// Make the peers the cluster's first members (once, on one node).
    #[arg(long)]
    init: bool,
    /// Milliseconds between a leader's heartbeats.
    #[arg(long, default_value_t = 150)]
    heartbeat_ms: u64,
    /// Build a snapshot after this many log entries since the last one (an entry carries
    /// a batch of writes).
    #[arg(long, default_value_t = 1000)]
    snapshot_every: u64,
}

fn parse_peer(s: &str) -> Result<(u64, String), String> {
    let (id, addr) = s.split_once('=').ok_or("expected ID=ADDR")?;
    let id = id.parse().map_err(|e| format!("bad id {id:?}: {e}"))?;
    Ok((id, addr.to_string()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let args = Args::parse();
    let config = openraft::Config {
        cluster_name: "strata-kv".into(),
        heartbeat_interval: args.heartbeat_ms,
        election_timeout_min: 4 * args.heartbeat_ms,
        election_timeout_max: 8 * args.heartbeat_ms,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(args.snapshot_every),
        max_in_snapshot_log_to_keep: (args.snapshot_every / 5).max(1),
        ..Default::default()
    };
    let listener = tokio::net::TcpListener::bind(&args.addr).await?;
    let (raft, server) = service::start_node(args.id, &args.dir, config, listener).await?;
    if args.init {
        let members: BTreeMap<u64, BasicNode> = args
            .peers
            .iter()
            .map(|(id, addr)| (*id, BasicNode { addr: addr.clone() }))
            .collect();
        // A restarted node was initialized already: openraft refuses, which is right.
        if let Err(e) = raft.initialize(members).await {
            eprintln!("initialize: {e}");
        }
    }
    println!("ready {}", args.addr);
    server.await??;
    Ok(())
}
