//! The run's progress: after each engine's group, one line on stderr with how many of the
//! run's groups are done, the time so far, and an estimate of the time left.
//!
//! The estimate takes each group still to run as long as the same engine's same group
//! took in an earlier round; failing that, the engine's mean over the groups it has run,
//! scaled by how long that group took the engines that ran it against their own means
//! (engines differ tenfold, groups several fold); failing that, whatever mean there is.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One engine's group in one round, as the run orders them.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Step {
    pub engine: String,
    pub group: usize,
    pub round: usize,
}

/// What the run has done so far.
pub struct Progress {
    steps: Vec<Step>,
    done: usize,
    started: Instant,
    /// Seconds each finished step took (steps taken from a journal are not timed).
    took: HashMap<Step, f64>,
}

impl Progress {
    /// A run of `steps`, in the order it runs them.
    pub fn new(steps: Vec<Step>) -> Self {
        Progress {
            steps,
            done: 0,
            started: Instant::now(),
            took: HashMap::new(),
        }
    }

    /// Records the next step as done (`took`: its time, `None` if it was not run here:
    /// taken from a journal, or skipped) and returns the progress line.
    pub fn step_done(&mut self, took: Option<Duration>) -> String {
        if let (Some(t), Some(step)) = (took, self.steps.get(self.done)) {
            self.took.insert(step.clone(), t.as_secs_f64());
        }
        self.done = (self.done + 1).min(self.steps.len());
        let left = match self.took.is_empty() {
            true => "time left not known yet".to_string(),
            false => format!(
                "about {} left",
                minutes(estimate_left(&self.took, &self.steps[self.done..]))
            ),
        };
        let next = self
            .steps
            .get(self.done)
            .map_or(String::new(), |s| format!("; next: {}", s.engine));
        format!(
            "progress: {} of {} engine groups done, {} so far, {left}{next}",
            self.done,
            self.steps.len(),
            minutes(self.started.elapsed().as_secs_f64()),
        )
    }
}

fn minutes(seconds: f64) -> String {
    let s = seconds.round() as u64;
    format!("{}m{:02}s", s / 60, s % 60)
}

fn mean(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = xs.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Seconds the steps `left` should take, from the times of the steps done (the module's
/// rule).
pub fn estimate_left(took: &HashMap<Step, f64>, left: &[Step]) -> f64 {
    let engine_mean = |e: &str| mean(took.iter().filter(|(s, _)| s.engine == e).map(|(_, t)| *t));
    // How long a group takes an engine, against that engine's mean over its groups.
    let group_factor = |g: usize| {
        mean(
            took.iter()
                .filter(|(s, _)| s.group == g)
                .filter_map(|(s, t)| engine_mean(&s.engine).filter(|m| *m > 0.0).map(|m| t / m)),
        )
    };
    let group_mean = |g: usize| mean(took.iter().filter(|(s, _)| s.group == g).map(|(_, t)| *t));
    let overall = mean(took.values().copied()).unwrap_or(0.0);
    left.iter()
        .map(|s| {
            let earlier = mean(
                took.iter()
                    .filter(|(d, _)| d.engine == s.engine && d.group == s.group)
                    .map(|(_, t)| *t),
            );
            earlier
                .or_else(|| {
                    engine_mean(&s.engine).map(|m| m * group_factor(s.group).unwrap_or(1.0))
                })
                .or_else(|| group_mean(s.group))
                .unwrap_or(overall)
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(engine: &str, group: usize, round: usize) -> Step {
        Step {
            engine: engine.into(),
            group,
            round,
        }
    }

    #[test]
    fn a_step_is_estimated_by_its_engine_and_its_group() {
        let mut took = HashMap::new();
        // Group 0: "slow" takes ten times "fast". Group 1: half of group 0, seen on
        // "fast" only.
        took.insert(step("fast", 0, 0), 10.0);
        took.insert(step("slow", 0, 0), 100.0);
        took.insert(step("fast", 1, 0), 5.0);
        // The same step in an earlier round: its own time.
        assert_eq!(estimate_left(&took, &[step("slow", 0, 1)]), 100.0);
        // "slow" in group 1: its mean (100) times group 1's factor (5 / fast's mean 7.5).
        let t = estimate_left(&took, &[step("slow", 1, 0)]);
        assert!((t - 100.0 * 5.0 / 7.5).abs() < 1e-9, "{t}");
        // An engine not run yet: the group's mean over the engines that ran it.
        assert_eq!(estimate_left(&took, &[step("new", 0, 0)]), 55.0);
        // Nothing known of engine or group: the mean of every step.
        let t = estimate_left(&took, &[step("new", 7, 0)]);
        assert!((t - 115.0 / 3.0).abs() < 1e-9, "{t}");
        // Nothing done yet: nothing to go on.
        assert_eq!(estimate_left(&HashMap::new(), &[step("x", 0, 0)]), 0.0);
    }

    #[test]
    fn with_nothing_timed_the_time_left_is_not_known() {
        let mut p = Progress::new(vec![step("a", 0, 0), step("a", 1, 0)]);
        let line = p.step_done(None);
        assert!(line.contains("time left not known yet"), "{line}");
    }

    #[test]
    fn the_line_counts_steps_and_names_the_next_engine() {
        let mut p = Progress::new(vec![step("a", 0, 0), step("b", 0, 0), step("a", 1, 0)]);
        let line = p.step_done(Some(Duration::from_secs(60)));
        assert!(
            line.starts_with("progress: 1 of 3 engine groups done"),
            "{line}"
        );
        assert!(line.ends_with("next: b"), "{line}");
        let line = p.step_done(None);
        assert!(line.contains("2 of 3"), "{line}");
        assert!(!line.contains("not known"), "{line}");
        // "a" in group 1, which no engine has run yet: a's own mean, 60 s.
        assert!(line.contains("about 1m00s left"), "{line}");
        let line = p.step_done(Some(Duration::from_secs(1)));
        assert!(
            line.contains("3 of 3") && line.contains("about 0m00s left"),
            "{line}"
        );
    }
}
