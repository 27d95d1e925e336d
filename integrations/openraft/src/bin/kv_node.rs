//! `strata-kv-node`: one node of a replicated key-value service, openraft over Strata,
//! on plain TCP (`strata_openraft::service`), and the commands that change its cluster.
//!
//! ```text
//! strata-kv-node --id 1 --dir /var/lib/kv1 --addr 127.0.0.1:7001 \
//!     --peer 1=127.0.0.1:7001 --peer 2=127.0.0.1:7002 --peer 3=127.0.0.1:7003 --init
//! strata-kv-node --id 4 --dir /var/lib/kv4 --addr 127.0.0.1:7004
//! strata-kv-node add-learner --peer 1=127.0.0.1:7001 --id 4 --addr 127.0.0.1:7004
//! strata-kv-node promote --peer 1=127.0.0.1:7001 --id 4
//! strata-kv-node remove --peer 1=127.0.0.1:7001 --id 3
//! strata-kv-node members --peer 1=127.0.0.1:7001
//! ```
//!
//! `--init` (on one node, once) makes the peers the cluster's first members; a node
//! restarted from its directory rejoins with what it had. A node started without `--init`
//! and not yet a member waits to be added (`add-learner`, then `promote`). It prints
//! `ready <addr>` when it serves, and runs until it is stopped. The administration
//! commands reach the leader through any `--peer` given, print the membership once the
//! change is committed, and exit with status 1 and a one-line reason when it is refused.

use std::collections::{BTreeMap, BTreeSet};

use clap::{Args, Parser, Subcommand};
use openraft::BasicNode;
use strata_openraft::service::{self, CallError, Client, Status};

#[derive(Parser, Debug)]
#[command(
    about = "One node of a replicated key-value service (openraft over Strata), and the commands that change its cluster",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    admin: Option<Admin>,
    #[command(flatten)]
    serve: Serve,
}

/// Running a node.
#[derive(Args, Debug)]
struct Serve {
    /// This node's id.
    #[arg(long, required = true)]
    id: Option<u64>,
    /// The database directory (created if missing).
    #[arg(long, required = true)]
    dir: Option<std::path::PathBuf>,
    /// The address to serve on (Raft and clients).
    #[arg(long, required = true)]
    addr: Option<String>,
    /// Also serve the HTTP/JSON interface (keys, scans, batches, administration,
    /// `/metrics`) on this address.
    #[arg(long)]
    http: Option<String>,
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

/// The nodes an administration command may ask (it finds the leader among them).
#[derive(Args, Debug)]
struct Reach {
    /// A node of the cluster, as ID=ADDR (one is enough; more are tried in turn).
    #[arg(long = "peer", value_parser = parse_peer, required = true)]
    peers: Vec<(u64, String)>,
}

#[derive(Subcommand, Debug)]
enum Admin {
    /// Print the leader and the members as the leader knows them.
    Members {
        #[command(flatten)]
        reach: Reach,
    },
    /// Add a running node as a learner; returns once it has caught up with the log.
    AddLearner {
        #[command(flatten)]
        reach: Reach,
        /// The new node's id (never the id of a node removed before).
        #[arg(long)]
        id: u64,
        /// Where the new node serves.
        #[arg(long)]
        addr: String,
    },
    /// Make learners voters.
    Promote {
        #[command(flatten)]
        reach: Reach,
        /// A learner to promote (repeat for several).
        #[arg(long = "id", required = true)]
        ids: Vec<u64>,
    },
    /// Remove nodes (voters or learners) from the cluster.
    Remove {
        #[command(flatten)]
        reach: Reach,
        /// A node to remove (repeat for several).
        #[arg(long = "id", required = true)]
        ids: Vec<u64>,
    },
}

fn parse_peer(s: &str) -> Result<(u64, String), String> {
    let (id, addr) = s.split_once('=').ok_or("expected ID=ADDR")?;
    let id = id.parse().map_err(|e| format!("bad id {id:?}: {e}"))?;
    Ok((id, addr.to_string()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let cli = Cli::parse();
    match cli.admin {
        Some(admin) => {
            if let Err(e) = administer(admin).await {
                eprintln!("strata-kv-node: {e}");
                std::process::exit(1);
            }
            Ok(())
        }
        None => serve(cli.serve).await,
    }
}

async fn administer(admin: Admin) -> Result<(), String> {
    let client = |reach: &Reach| Client::new(reach.peers.iter().cloned().collect());
    let outcome = match &admin {
        Admin::Members { reach } => {
            let mut c = client(reach);
            let mut found = None;
            for &(id, _) in &reach.peers {
                if let Some(s) = c.status(id).await {
                    let leader = s.leader;
                    found = Some(s);
                    if let Some(l) = leader {
                        // The leader's own view, if it answers.
                        if let Some(ls) = c.status(l).await {
                            found = Some(ls);
                        }
                        break;
                    }
                }
            }
            found.ok_or_else(|| CallError::Refused("no node answered".into()))
        }
        Admin::AddLearner { reach, id, addr } => client(reach).add_learner(*id, addr).await,
        Admin::Promote { reach, ids } => {
            client(reach)
                .promote(ids.iter().copied().collect::<BTreeSet<u64>>())
                .await
        }
        Admin::Remove { reach, ids } => {
            client(reach)
                .remove(ids.iter().copied().collect::<BTreeSet<u64>>())
                .await
        }
    };
    match outcome {
        Ok(status) => {
            print_status(&status);
            Ok(())
        }
        Err(CallError::Refused(e)) => Err(format!("refused: {e}")),
        Err(CallError::Unknown(e)) => Err(format!("outcome unknown: {e}")),
    }
}

fn print_status(s: &Status) {
    let list = |ids: &BTreeSet<u64>| ids.iter().map(u64::to_string).collect::<Vec<_>>().join(" ");
    match s.leader {
        Some(l) => println!("leader {l}"),
        None => println!("leader none"),
    }
    println!("voters {}", list(&s.voters));
    println!("learners {}", list(&s.learners));
    for (id, addr) in &s.nodes {
        println!("node {id} {addr}");
    }
}

async fn serve(args: Serve) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let (Some(id), Some(dir), Some(addr)) = (args.id, args.dir, args.addr) else {
        return Err("--id, --dir and --addr are required".into());
    };
    let config = openraft::Config {
        cluster_name: "strata-kv".into(),
        heartbeat_interval: args.heartbeat_ms,
        election_timeout_min: 4 * args.heartbeat_ms,
        election_timeout_max: 8 * args.heartbeat_ms,
        snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(args.snapshot_every),
        max_in_snapshot_log_to_keep: (args.snapshot_every / 5).max(1),
        // A snapshot chunk's answer waits for the install when it is the last: unpacking
        // and opening a large state takes seconds (a gigabyte about ten here), not
        // openraft's default 200 ms, after which the leader would send it all again.
        install_snapshot_timeout: 60_000,
        ..Default::default()
    };
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    let (raft, server) = match &args.http {
        Some(a) => {
            let http = tokio::net::TcpListener::bind(a).await?;
            strata_openraft::http::start_node(id, &dir, config, listener, http).await?
        }
        None => service::start_node(id, &dir, config, listener).await?,
    };
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
    match &args.http {
        Some(h) => println!("ready {addr} http {h}"),
        None => println!("ready {addr}"),
    }
    server.await??;
    Ok(())
}
