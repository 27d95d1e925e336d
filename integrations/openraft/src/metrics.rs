//! A node's counters, and their rendering in Prometheus's text format (`GET /metrics` of
//! the HTTP interface, `http.rs`).
//!
//! The log store counts its syncs and records the committed index; the proposer counts
//! proposals and the writes each carried; a task watching openraft's metrics counts
//! leader changes. Everything else shown comes from openraft's own metrics when a scrape
//! asks. Counters only grow; each is read without a lock (relaxed atomics: a scrape may
//! see one counter a moment ahead of another, never a torn value).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use openraft::{BasicNode, RaftMetrics, ServerState};

/// The upper bounds of the batch-size histogram's buckets: writes a proposal carried.
const BATCH_BUCKETS: [u64; 13] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096];

/// What a node counts (shared by its log store, its proposer and its HTTP interface).
#[derive(Debug, Default)]
pub struct NodeMetrics {
    /// `fdatasync`s the log store asked for: one per group of appends, one per vote,
    /// truncation or purge.
    fsyncs: AtomicU64,
    /// The last committed index plus one (0: none known yet).
    committed: AtomicU64,
    /// Proposals made while this node led, and the writes they carried.
    proposals: AtomicU64,
    proposed_writes: AtomicU64,
    /// Proposals by writes carried: `batch_buckets[i]` counts those of at most
    /// `BATCH_BUCKETS[i]` writes and more than the bound before.
    batch_buckets: [AtomicU64; BATCH_BUCKETS.len()],
    /// Times the leader this node knows changed to another node.
    leader_changes: AtomicU64,
}

impl NodeMetrics {
    /// Counts one `fdatasync`.
    pub fn count_fsync(&self) {
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
    }

    /// Records the committed index the log store was given.
    pub fn set_committed(&self, index: Option<u64>) {
        let v = index.map_or(0, |i| i.saturating_add(1));
        self.committed.fetch_max(v, Ordering::Relaxed);
    }

    /// The last committed index known, if any.
    pub fn committed(&self) -> Option<u64> {
        self.committed.load(Ordering::Relaxed).checked_sub(1)
    }

    /// Counts a proposal of `writes` writes.
    pub fn count_proposal(&self, writes: usize) {
        let n = writes as u64;
        self.proposals.fetch_add(1, Ordering::Relaxed);
        self.proposed_writes.fetch_add(n, Ordering::Relaxed);
        // Past the last bound (never, while proposals hold at most 4,096 writes) only the
        // `+Inf` bucket, the proposal count, has it.
        if let Some(bucket) = BATCH_BUCKETS.iter().position(|&b| n <= b) {
            self.batch_buckets[bucket].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a change of leader.
    pub fn count_leader_change(&self) {
        self.leader_changes.fetch_add(1, Ordering::Relaxed);
    }

    /// The counters, and what `raft` says of itself, in Prometheus's text format (0.0.4).
    pub fn render(&self, raft: &RaftMetrics<u64, BasicNode>) -> String {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut s = String::new();
        let mut one = |name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(s, "# HELP strata_kv_{name} {help}");
            let _ = writeln!(s, "# TYPE strata_kv_{name} {kind}");
            let _ = writeln!(s, "strata_kv_{name} {value}");
        };
        let applied = raft.last_applied.map(|l| l.index);
        // What is applied was committed (a snapshot installed, say, moves it past the
        // last index this node saw committed).
        let committed = self.committed().max(applied);
        one(
            "commit_index",
            "gauge",
            "Index of the last log entry known committed (0 before any).",
            committed.unwrap_or(0),
        );
        one(
            "last_log_index",
            "gauge",
            "Index of the last entry in this node's log.",
            raft.last_log_index.unwrap_or(0),
        );
        one(
            "applied_index",
            "gauge",
            "Index of the last entry applied to the state machine.",
            applied.unwrap_or(0),
        );
        one(
            "apply_lag",
            "gauge",
            "Entries committed but not yet applied here.",
            committed.unwrap_or(0).saturating_sub(applied.unwrap_or(0)),
        );
        one("term", "gauge", "The current Raft term.", raft.current_term);
        one(
            "is_leader",
            "gauge",
            "1 while this node leads.",
            u64::from(raft.state == ServerState::Leader),
        );
        one(
            "leader_changes_total",
            "counter",
            "Times the leader this node knows changed.",
            load(&self.leader_changes),
        );
        one(
            "fsyncs_total",
            "counter",
            "fdatasync calls of the log store (a group of appends, a vote, a truncation, a purge).",
            load(&self.fsyncs),
        );
        one(
            "proposals_total",
            "counter",
            "Raft entries the proposer made of lone client writes while this node led (a batch request is an entry of its own, not counted).",
            load(&self.proposals),
        );
        let _ = writeln!(
            s,
            "# HELP strata_kv_batch_writes Lone client writes gathered into one proposal."
        );
        let _ = writeln!(s, "# TYPE strata_kv_batch_writes histogram");
        let mut cumulative = 0;
        for (bound, count) in BATCH_BUCKETS.iter().zip(&self.batch_buckets) {
            cumulative += load(count);
            let _ = writeln!(
                s,
                "strata_kv_batch_writes_bucket{{le=\"{bound}\"}} {cumulative}"
            );
        }
        // Read apart from the buckets: never below them in one scrape.
        let total = load(&self.proposals).max(cumulative);
        let _ = writeln!(s, "strata_kv_batch_writes_bucket{{le=\"+Inf\"}} {total}");
        let _ = writeln!(
            s,
            "strata_kv_batch_writes_sum {}",
            load(&self.proposed_writes)
        );
        let _ = writeln!(s, "strata_kv_batch_writes_count {total}");
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_sizes_fall_in_cumulative_buckets() {
        let m = NodeMetrics::default();
        for n in [1, 3, 4, 5, 5000] {
            m.count_proposal(n);
        }
        let text = m.render(&RaftMetrics::new_initial(1));
        assert!(
            text.contains("strata_kv_batch_writes_bucket{le=\"1\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_kv_batch_writes_bucket{le=\"4\"} 3\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_kv_batch_writes_bucket{le=\"8\"} 4\n"),
            "{text}"
        );
        // More than the last bound counts in +Inf only.
        assert!(
            text.contains("strata_kv_batch_writes_bucket{le=\"4096\"} 4\n"),
            "{text}"
        );
        assert!(
            text.contains("strata_kv_batch_writes_bucket{le=\"+Inf\"} 5\n"),
            "{text}"
        );
        assert!(text.contains("strata_kv_batch_writes_sum 5013\n"), "{text}");
    }

    #[test]
    fn apply_lag_is_committed_less_applied() {
        let m = NodeMetrics::default();
        m.set_committed(Some(10));
        m.set_committed(Some(7)); // an older hint never lowers it
        let text = m.render(&RaftMetrics::new_initial(1));
        assert!(text.contains("strata_kv_commit_index 10\n"), "{text}");
        assert!(text.contains("strata_kv_apply_lag 10\n"), "{text}");
    }
}
