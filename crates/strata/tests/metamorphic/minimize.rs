//! Shrinks a failing log within a time budget. A candidate is kept when it still fails
//! (any mismatch, not necessarily the same one), cut just after its first mismatch.
//!
//! Two passes, repeated while either shrinks the log: delta debugging over chunks of
//! operations (remove a chunk; halve the chunk size when no chunk can go), then single
//! operations made simpler (a batch loses a write, a value becomes one byte long).

use std::time::{Duration, Instant};

use crate::op::{Op, ValueSpec, Write};

/// How the shrinking went.
#[derive(Debug, Clone, Copy)]
pub struct Shrink {
    pub runs: usize,
    pub elapsed: Duration,
    /// The budget ran out before no candidate could shrink the log any more.
    pub out_of_time: bool,
}

struct Shrinker<F> {
    fails: F,
    start: Instant,
    deadline: Instant,
    runs: usize,
}

impl<F: FnMut(&[Op]) -> Option<usize>> Shrinker<F> {
    fn out_of_time(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// The candidate cut after its first mismatch, if it still fails.
    fn attempt(&mut self, mut cand: Vec<Op>) -> Option<Vec<Op>> {
        if self.out_of_time() {
            return None;
        }
        self.runs += 1;
        let at = (self.fails)(&cand)?;
        cand.truncate(at + 1);
        Some(cand)
    }

    /// Removes chunks of operations, largest first.
    fn chunks(&mut self, mut cur: Vec<Op>) -> Vec<Op> {
        let mut chunk = cur.len() / 2;
        while chunk >= 1 && !self.out_of_time() {
            chunk = chunk.min((cur.len() / 2).max(1));
            let mut progressed = false;
            let mut i = 0;
            while i < cur.len() && !self.out_of_time() {
                let end = (i + chunk).min(cur.len());
                let cand: Vec<Op> = cur[..i].iter().chain(&cur[end..]).cloned().collect();
                match self.attempt(cand) {
                    Some(c) => {
                        cur = c;
                        progressed = true;
                    }
                    None => i += chunk,
                }
            }
            if !progressed {
                chunk /= 2;
            }
        }
        cur
    }

    /// Simpler forms of one operation, simplest first.
    fn simpler(op: &Op) -> Vec<Op> {
        let short = |v: &ValueSpec| ValueSpec { len: 1, tag: v.tag };
        match op {
            Op::Batch { writes, sync } => (0..writes.len())
                .map(|i| {
                    let mut w = writes.clone();
                    w.remove(i);
                    Op::Batch {
                        writes: w,
                        sync: *sync,
                    }
                })
                .chain(writes.iter().enumerate().filter_map(|(i, w)| match w {
                    Write::Put(k, v) if v.len > 1 => {
                        let mut ws = writes.clone();
                        ws[i] = Write::Put(k.clone(), short(v));
                        Some(Op::Batch {
                            writes: ws,
                            sync: *sync,
                        })
                    }
                    _ => None,
                }))
                .collect(),
            Op::Txn { steps, sync } => (0..steps.len())
                .map(|i| {
                    let mut st = steps.clone();
                    st.remove(i);
                    Op::Txn {
                        steps: st,
                        sync: *sync,
                    }
                })
                .collect(),
            Op::Put { key, value, sync } if value.len > 1 => vec![Op::Put {
                key: key.clone(),
                value: short(value),
                sync: *sync,
            }],
            _ => Vec::new(),
        }
    }

    /// Makes single operations simpler where the log still fails.
    fn ops(&mut self, mut cur: Vec<Op>) -> Vec<Op> {
        let mut i = 0;
        while i < cur.len() && !self.out_of_time() {
            let mut changed = false;
            for op in Self::simpler(&cur[i]) {
                let mut cand = cur.clone();
                cand[i] = op;
                if let Some(c) = self.attempt(cand) {
                    cur = c;
                    changed = true;
                    break;
                }
            }
            // A batch that lost a write may lose another: look at it again.
            if !changed {
                i += 1;
            }
        }
        cur
    }
}

/// Shrinks `ops`, which fails (`fails` returns the index of its first mismatch), for at
/// most `budget`.
pub fn minimize(
    ops: Vec<Op>,
    first_mismatch: usize,
    fails: impl FnMut(&[Op]) -> Option<usize>,
    budget: Duration,
) -> (Vec<Op>, Shrink) {
    let start = Instant::now();
    let mut s = Shrinker {
        fails,
        start,
        deadline: start + budget,
        runs: 0,
    };
    let mut cur = ops;
    cur.truncate(first_mismatch + 1);
    loop {
        let before = cur.clone();
        cur = s.chunks(cur);
        cur = s.ops(cur);
        if cur == before || s.out_of_time() {
            break;
        }
    }
    let shrink = Shrink {
        runs: s.runs,
        elapsed: s.start.elapsed(),
        out_of_time: s.out_of_time(),
    };
    (cur, shrink)
}
