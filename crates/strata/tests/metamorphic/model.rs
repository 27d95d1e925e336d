//! The model every option set is held to: a `BTreeMap` from keys to values. A snapshot or
//! a cursor keeps the map as it was (an `Rc` shared until the next write copies it), so
//! reads at a snapshot and a cursor's whole life see one state, as the engine promises.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::rc::Rc;

use crate::op::{Key, Op, Scan, Step, Write};
use crate::outcome::{Outcome, Val};

type Map = BTreeMap<Key, Val>;

/// A cursor of the model: the state it reads and the key it is at.
struct Cursor {
    view: Rc<Map>,
    at: Option<Key>,
}

impl Cursor {
    fn step(&mut self, step: &Step) -> Outcome {
        let v = &self.view;
        self.at = match (step, &self.at) {
            (Step::First, _) => v.keys().next().cloned(),
            (Step::Last, _) => v.keys().next_back().cloned(),
            (Step::Seek(k), _) => v.range(k.clone()..).next().map(|(k, _)| k.clone()),
            (Step::Next, Some(a)) => v
                .range((Bound::Excluded(a.clone()), Bound::Unbounded))
                .next()
                .map(|(k, _)| k.clone()),
            (Step::Prev, Some(a)) => v.range(..a.clone()).next_back().map(|(k, _)| k.clone()),
            // Moving a cursor that is not valid leaves it so.
            (Step::Next | Step::Prev, None) => None,
        };
        let entry = self
            .at
            .as_ref()
            .and_then(|k| v.get(k).map(|val| (k.clone(), *val)));
        Outcome::At(entry)
    }
}

fn in_range(scan: &Scan, k: &Key) -> bool {
    let above = match &scan.lower {
        Bound::Unbounded => true,
        Bound::Included(l) => k >= l,
        Bound::Excluded(l) => k > l,
    };
    let below = match &scan.upper {
        Bound::Unbounded => true,
        Bound::Included(u) => k <= u,
        Bound::Excluded(u) => k < u,
    };
    above && below
}

/// The expected state and the snapshots and cursors made so far.
#[derive(Default)]
pub struct Model {
    now: Rc<Map>,
    snaps: HashMap<u32, Rc<Map>>,
    iters: HashMap<u32, Cursor>,
}

impl Model {
    /// The state a read sees: now, or at snapshot `snap`; `None` if there is no such
    /// snapshot.
    fn view(&self, snap: Option<u32>) -> Option<Rc<Map>> {
        match snap {
            None => Some(Rc::clone(&self.now)),
            Some(s) => self.snaps.get(&s).cloned(),
        }
    }

    fn write(&mut self, w: &Write) {
        let map = Rc::make_mut(&mut self.now);
        match w {
            Write::Put(k, v) => {
                map.insert(k.clone(), Val::of(&v.bytes()));
            }
            Write::Delete(k) => {
                map.remove(k);
            }
            Write::DeleteRange(a, b) => {
                if a < b {
                    map.retain(|k, _| !(a <= k && k < b));
                }
            }
        }
    }

    fn scan(&self, scan: &Scan) -> Outcome {
        let Some(view) = self.view(scan.snap) else {
            return Outcome::Missing;
        };
        let limit = scan.limit.map_or(usize::MAX, |n| n as usize);
        let hits = view.iter().filter(|(k, _)| in_range(scan, k));
        let pick = |(k, v): (&Key, &Val)| (k.clone(), *v);
        Outcome::Entries(if scan.reverse {
            hits.rev().take(limit).map(pick).collect()
        } else {
            hits.take(limit).map(pick).collect()
        })
    }

    /// Applies `op`, returning what the engine must show for it.
    pub fn apply(&mut self, op: &Op) -> Outcome {
        match op {
            Op::Put { key, value, .. } => self.write(&Write::Put(key.clone(), *value)),
            Op::Delete { key, .. } => self.write(&Write::Delete(key.clone())),
            Op::Batch { writes, .. } => writes.iter().for_each(|w| self.write(w)),
            Op::Get { key, snap } => {
                return match self.view(*snap) {
                    Some(view) => Outcome::Value(view.get(key).copied()),
                    None => Outcome::Missing,
                };
            }
            Op::Snapshot(s) => {
                self.snaps.insert(*s, Rc::clone(&self.now));
            }
            Op::Release(s) => {
                if self.snaps.remove(s).is_none() {
                    return Outcome::Missing;
                }
            }
            Op::NewIter { id, snap } => {
                let Some(view) = self.view(*snap) else {
                    return Outcome::Missing;
                };
                self.iters.insert(*id, Cursor { view, at: None });
            }
            Op::Step { id, step } => {
                return match self.iters.get_mut(id) {
                    Some(c) => c.step(step),
                    None => Outcome::Missing,
                };
            }
            Op::DropIter(id) => {
                if self.iters.remove(id).is_none() {
                    return Outcome::Missing;
                }
            }
            Op::Scan(scan) => return self.scan(scan),
            Op::Flush | Op::FlushWal { .. } | Op::Compact { .. } => {}
            Op::Close | Op::Reopen => {
                self.snaps.clear();
                self.iters.clear();
            }
        }
        Outcome::Done
    }
}
