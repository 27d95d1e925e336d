//! The model every option set is held to: a `BTreeMap` from keys to values. A snapshot or
//! a cursor keeps the map as it was (an `Rc` shared until the next write copies it), so
//! reads at a snapshot and a cursor's whole life see one state, as the engine promises.
//! A transaction reads the map as it was at its start with its own writes laid over it,
//! and its commit fails with a conflict exactly when a key it read, or any key in a range
//! it scanned, was written meanwhile (TX2).

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::rc::Rc;

use crate::op::{Key, Op, Scan, Step, TxnStep, ValueSpec, Write};
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

/// What `scan` shows of `hits` (entries in its range, in key order): at most its limit,
/// in its direction.
fn entries<'a>(hits: impl DoubleEndedIterator<Item = (&'a Key, &'a Val)>, scan: &Scan) -> Outcome {
    let limit = scan.limit.map_or(usize::MAX, |n| n as usize);
    let pick = |(k, v): (&Key, &Val)| (k.clone(), *v);
    Outcome::Entries(if scan.reverse {
        hits.rev().take(limit).map(pick).collect()
    } else {
        hits.take(limit).map(pick).collect()
    })
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
        entries(view.iter().filter(|(k, _)| in_range(scan, k)), scan)
    }

    /// The keys `w` writes if done now: a range delete writes the keys it finds (RD1).
    fn written_by(&self, w: &Write) -> Vec<Key> {
        match w {
            Write::Put(k, _) | Write::Delete(k) => vec![k.clone()],
            Write::DeleteRange(a, b) if a < b => self
                .now
                .range(a.clone()..b.clone())
                .map(|(k, _)| k.clone())
                .collect(),
            Write::DeleteRange(..) => Vec::new(),
        }
    }

    /// A transaction from start to commit (`Op::Txn`).
    fn txn(&mut self, steps: &[TxnStep]) -> Outcome {
        let start = Rc::clone(&self.now);
        // Its own writes (`None`: deleted) and range deletes, as `Transaction` keeps them.
        let mut own: BTreeMap<Key, Option<ValueSpec>> = BTreeMap::new();
        let mut deleted: Vec<(Key, Key)> = Vec::new();
        let in_deleted =
            |deleted: &[(Key, Key)], k: &Key| deleted.iter().any(|(a, b)| a <= k && k < b);
        let mut read_keys: Vec<Key> = Vec::new();
        let mut read_ranges: Vec<Scan> = Vec::new();
        let mut written: Vec<Key> = Vec::new();
        let mut outs = Vec::new();
        for step in steps {
            match step {
                TxnStep::Get(k) => outs.push(Outcome::Value(match own.get(k) {
                    Some(v) => v.map(|v| Val::of(&v.bytes())),
                    None if in_deleted(&deleted, k) => None,
                    None => {
                        read_keys.push(k.clone());
                        start.get(k).copied()
                    }
                })),
                TxnStep::Scan(scan) => {
                    read_ranges.push(scan.clone());
                    let mut view: BTreeMap<Key, Val> = start
                        .iter()
                        .filter(|(k, _)| in_range(scan, k) && !in_deleted(&deleted, k))
                        .map(|(k, v)| (k.clone(), *v))
                        .collect();
                    for (k, v) in own.iter().filter(|(k, _)| in_range(scan, k)) {
                        match v {
                            Some(v) => view.insert(k.clone(), Val::of(&v.bytes())),
                            None => view.remove(k),
                        };
                    }
                    outs.push(entries(view.iter(), scan));
                }
                TxnStep::Write(w) => match w {
                    Write::Put(k, v) => {
                        own.insert(k.clone(), Some(*v));
                    }
                    Write::Delete(k) => {
                        own.insert(k.clone(), None);
                    }
                    Write::DeleteRange(a, b) => {
                        // Its own earlier writes there go; later ones stay.
                        own.retain(|k, _| !(a <= k && k < b));
                        deleted.push((a.clone(), b.clone()));
                    }
                },
                TxnStep::Meanwhile(w) => {
                    written.extend(self.written_by(w));
                    self.write(w);
                    outs.push(Outcome::Done);
                }
                TxnStep::MeanwhileFlush | TxnStep::MeanwhileCompact => outs.push(Outcome::Done),
            }
        }
        // A transaction that writes nothing commits at once (its reads were of one state).
        if own.is_empty() && deleted.is_empty() {
            outs.push(Outcome::Done);
            return Outcome::Steps(outs);
        }
        let conflict = written
            .iter()
            .any(|k| read_keys.contains(k) || read_ranges.iter().any(|r| in_range(r, k)));
        if conflict {
            outs.push(Outcome::Failed {
                kind: "Conflict".into(),
                message: "a key it read, or one in a range it scanned, was written meanwhile"
                    .into(),
            });
            return Outcome::Steps(outs);
        }
        // The commit's batch: the range deletes, then the writes (in key order, one each).
        for (a, b) in &deleted {
            self.write(&Write::DeleteRange(a.clone(), b.clone()));
        }
        for (k, v) in own {
            self.write(&match v {
                Some(v) => Write::Put(k, v),
                None => Write::Delete(k),
            });
        }
        outs.push(Outcome::Done);
        Outcome::Steps(outs)
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
            Op::Txn { steps, .. } => return self.txn(steps),
        }
        Outcome::Done
    }
}
