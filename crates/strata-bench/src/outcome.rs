//! What one engine's run of one group gave, and how a group that did not finish is
//! recorded.
//!
//! One engine failing must not cost the others their figures, nor leave a hole on the
//! page that says nothing: the benchmarks the group finished keep their results; the one
//! it failed at and every later one are marked failed (`NotAvailable::failed`), with the
//! reason; and the failure itself (a signal, a timeout, an error, the last lines the
//! engine's process printed) is kept with the run, for the page and the closing message.

use serde::{Deserialize, Serialize};

use crate::bench::Spec;
use crate::results::{BenchResult, EngineRun, GroupFailure, NotAvailable};

/// The benchmark `spec`, at `position` in its group, not run because of `reason`;
/// `failed` when the engine failed rather than lacks it.
pub fn not_available(position: usize, spec: &Spec, reason: String, failed: bool) -> NotAvailable {
    NotAvailable {
        position,
        name: spec.name.clone(),
        row: spec.row.clone(),
        reason,
        failed,
    }
}

/// What one column's run of one group gave.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct GroupOutcome {
    /// The benchmarks it finished, in order.
    pub results: Vec<BenchResult>,
    /// The benchmarks it lacks, and those it failed at or did not reach after a failure.
    pub not_available: Vec<NotAvailable>,
    /// The position of the benchmark under way: a group's process writes its outcome
    /// before each benchmark, so a process that dies names where it died.
    #[serde(default)]
    pub running: Option<usize>,
    /// Why the group did not finish, if it did not.
    #[serde(default)]
    pub failure: Option<GroupFailure>,
}

impl GroupOutcome {
    /// Records that `engine` failed at the benchmark at `position` of `specs` (past the
    /// last: after its last benchmark) because of `what`: that benchmark and every later
    /// one are marked failed; `tail` is the last output of its process, if it had one.
    pub fn fail_at(
        &mut self,
        engine: &str,
        specs: &[Spec],
        position: usize,
        what: String,
        tail: Vec<String>,
    ) {
        for (p, spec) in specs.iter().enumerate().skip(position) {
            let reason = if p == position {
                format!("{engine} has failed here: {what}")
            } else {
                format!("{engine} has failed earlier in the group: {what}")
            };
            self.not_available
                .push(not_available(p, spec, reason, true));
        }
        self.running = None;
        self.failure = Some(GroupFailure {
            benchmark: specs.get(position).map(|s| s.name.clone()),
            what,
            tail,
        });
    }

    /// A group `engine` failed at its first benchmark (or before it): every benchmark
    /// marked failed.
    pub fn failed_from_start(
        engine: &str,
        specs: &[Spec],
        what: String,
        tail: Vec<String>,
    ) -> GroupOutcome {
        let mut out = GroupOutcome::default();
        out.fail_at(engine, specs, 0, what, tail);
        out
    }

    /// A group `engine` did not run because `why` (an earlier group that built its
    /// database failed): every benchmark marked failed.
    pub fn not_run(engine: &str, specs: &[Spec], why: String) -> GroupOutcome {
        let mut out = GroupOutcome::default();
        for (position, spec) in specs.iter().enumerate() {
            let reason = format!("{engine} has not run it: {why}");
            out.not_available
                .push(not_available(position, spec, reason, true));
        }
        out.failure = Some(GroupFailure {
            benchmark: None,
            what: format!("not run: {why}"),
            tail: Vec::new(),
        });
        out
    }
}

/// The closing message of a run some of whose groups failed: one line for each,
/// naming the engine, group, round and what happened.
pub fn summary_line(failed: &[&EngineRun]) -> String {
    let items: Vec<String> = failed
        .iter()
        .filter_map(|r| {
            let f = r.failure.as_ref()?;
            let at = f
                .benchmark
                .as_deref()
                .map(|b| format!(" at {b}"))
                .unwrap_or_default();
            Some(format!(
                "{} in group \"{}\" (round {}){at}: {}",
                r.engine,
                r.group,
                r.round + 1,
                f.what
            ))
        })
        .collect();
    format!(
        "{} group run(s) failed; the other results stand and are in the report:\n  {}",
        items.len(),
        items.join("\n  ")
    )
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::flags::Flags;

    fn specs(names: &[&str]) -> Vec<Spec> {
        let flags = Flags::parse_from(["strata-bench"]);
        names
            .iter()
            .map(|n| crate::bench::spec(n, &flags).unwrap_or_else(|e| panic!("{n}: {e:#}")))
            .collect()
    }

    #[test]
    fn a_failure_marks_its_benchmark_and_the_later_ones() {
        let s = specs(&["fillseq", "readrandom", "readseq"]);
        let mut out = GroupOutcome {
            running: Some(1),
            ..GroupOutcome::default()
        };
        out.fail_at("x", &s, 1, "killed by signal 6 (SIGABRT)".into(), vec![]);
        let marked: Vec<(usize, bool, &str)> = out
            .not_available
            .iter()
            .map(|n| (n.position, n.failed, n.reason.as_str()))
            .collect();
        assert_eq!(
            marked,
            [
                (1, true, "x has failed here: killed by signal 6 (SIGABRT)"),
                (
                    2,
                    true,
                    "x has failed earlier in the group: killed by signal 6 (SIGABRT)"
                ),
            ]
        );
        assert_eq!(out.running, None);
        let f = out.failure.unwrap();
        assert_eq!(f.benchmark.as_deref(), Some("readrandom"));
        // Past the last benchmark: nothing is marked, the failure is still kept.
        let mut late = GroupOutcome::default();
        late.fail_at("x", &s, 3, "exited with status 1".into(), vec![]);
        assert!(late.not_available.is_empty());
        assert_eq!(late.failure.unwrap().benchmark, None);
    }

    #[test]
    fn the_closing_line_names_engine_group_round_and_cause() {
        let f = GroupFailure {
            benchmark: Some("fillseq".into()),
            what: "killed by signal 11 (SIGSEGV)".into(),
            tail: vec![],
        };
        let mut run = crate::results::sample_run("rocksdb", 0, &[]);
        run.group = "1: baseline".into();
        run.failure = Some(f);
        let line = summary_line(&[&run, &crate::results::sample_run("strata", 0, &[])]);
        assert!(line.starts_with("1 group run(s) failed"), "{line}");
        assert!(
            line.contains(
                "rocksdb in group \"1: baseline\" (round 1) at fillseq: killed by signal 11 (SIGSEGV)"
            ),
            "{line}"
        );
    }
}
