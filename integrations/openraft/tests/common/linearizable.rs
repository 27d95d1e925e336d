//! A linearizability checker for histories of registers (one history per key; a
//! history of several keys is linearizable when each key's is), after Wing and Gong's
//! search with Lowe's memoization.
//!
//! Each operation has the time it was invoked and, when its outcome is known, the time
//! it returned. A write whose outcome is not known (its node went away) has no return:
//! it may have taken effect at any moment after its invocation, or never. Written values
//! are unique, so a read names the write it saw.

use std::collections::HashSet;

/// What an operation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Set the register to this value (unique in the history).
    Write(String),
    /// Read the register and saw this (`None`: never written).
    Read(Option<String>),
}

/// One operation on one register.
#[derive(Debug, Clone)]
pub struct Op {
    pub invoke: u64,
    /// `None`: the outcome is unknown (a write only).
    pub ret: Option<u64>,
    pub kind: Kind,
}

/// True when some order of the operations, each placed between its invocation and
/// return, explains every read (unknown writes placed anywhere after their invocation,
/// or left out). The register starts empty.
pub fn linearizable(ops: &[Op]) -> bool {
    let mut search = Search {
        ops,
        failed: HashSet::new(),
    };
    search.run()
}

struct Search<'a> {
    ops: &'a [Op],
    /// States already known to lead nowhere: (operations placed, index of the write whose
    /// value the register holds).
    failed: HashSet<(Vec<u64>, Option<usize>)>,
}

fn placed(done: &[u64], i: usize) -> bool {
    done[i / 64] & (1 << (i % 64)) != 0
}

/// One state of the search and the operations still to try from it.
struct Frame {
    done: Vec<u64>,
    value: Option<usize>,
    candidates: Vec<usize>,
    next: usize,
}

impl Search<'_> {
    /// Depth first, with an explicit stack (histories run to thousands of operations).
    fn run(&mut self) -> bool {
        let start = vec![0u64; self.ops.len().div_ceil(64)];
        let Some(first) = self.frame(start, None) else {
            return true;
        };
        let mut stack = vec![first];
        while let Some(top) = stack.last_mut() {
            let Some(&i) = top.candidates.get(top.next) else {
                let dead = stack.pop().map(|f| (f.done, f.value));
                if let Some(state) = dead {
                    self.failed.insert(state);
                }
                continue;
            };
            top.next += 1;
            let next_value = match &self.ops[i].kind {
                Kind::Write(_) => Some(i),
                Kind::Read(seen) => {
                    let holds = top.value.map(|w| match &self.ops[w].kind {
                        Kind::Write(v) => v.clone(),
                        Kind::Read(_) => String::new(),
                    });
                    if *seen != holds {
                        continue;
                    }
                    top.value
                }
            };
            let mut done = top.done.clone();
            done[i / 64] |= 1 << (i % 64);
            if self.failed.contains(&(done.clone(), next_value)) {
                continue;
            }
            match self.frame(done, next_value) {
                None => return true,
                Some(f) => stack.push(f),
            }
        }
        false
    }

    /// The frame for a state; `None` when every operation with a known outcome is placed
    /// (the history is explained).
    fn frame(&self, done: Vec<u64>, value: Option<usize>) -> Option<Frame> {
        let open = (0..self.ops.len()).filter(|&i| !placed(&done, i));
        let first_return = open.clone().filter_map(|i| self.ops[i].ret).min()?;
        // An operation may come next when it began before every open one returned.
        let candidates = open
            .filter(|&i| self.ops[i].invoke <= first_return)
            .collect();
        Some(Frame {
            done,
            value,
            candidates,
            next: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(invoke: u64, ret: Option<u64>, v: &str) -> Op {
        Op {
            invoke,
            ret,
            kind: Kind::Write(v.into()),
        }
    }

    fn r(invoke: u64, ret: u64, v: Option<&str>) -> Op {
        Op {
            invoke,
            ret: Some(ret),
            kind: Kind::Read(v.map(String::from)),
        }
    }

    #[test]
    fn sequential_and_concurrent_histories() {
        // Sequential: write a, read a, write b, read b.
        assert!(linearizable(&[
            w(0, Some(1), "a"),
            r(2, 3, Some("a")),
            w(4, Some(5), "b"),
            r(6, 7, Some("b")),
        ]));
        // A stale read after a completed write is not linearizable.
        assert!(!linearizable(&[
            w(0, Some(1), "a"),
            w(2, Some(3), "b"),
            r(4, 5, Some("a")),
        ]));
        // Concurrent with the write, a read may see either value...
        assert!(linearizable(&[
            w(0, Some(10), "a"),
            r(1, 2, None),
            r(3, 4, Some("a"))
        ]));
        // ...but not go back once it saw the new one.
        assert!(!linearizable(&[
            w(0, Some(10), "a"),
            r(1, 2, Some("a")),
            r(3, 4, None),
        ]));
        // An unknown write may take effect late, or never.
        assert!(linearizable(&[
            w(0, None, "a"),
            r(5, 6, None),
            r(7, 8, Some("a"))
        ]));
        assert!(linearizable(&[w(0, None, "a"), r(5, 6, None)]));
        // A read of a value nobody wrote is not explained.
        assert!(!linearizable(&[w(0, Some(1), "a"), r(2, 3, Some("zz"))]));
        // A lost acknowledged write: read after it returned sees the older value.
        assert!(!linearizable(&[
            w(0, Some(1), "a"),
            w(2, Some(3), "b"),
            r(10, 11, Some("a")),
        ]));
    }
}
