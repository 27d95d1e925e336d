//! A workload's operations, applied to a database and to a `BTreeMap` model alike: the
//! crash suites (`crash_sim.rs`, `crash_states.rs`) run them, then require the recovered
//! database to equal the model after some prefix of them.

use std::collections::BTreeMap;

use strata::{Db, WriteBatch, WriteOptions};

/// The model: keys and values.
pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[derive(Debug, Clone)]
pub enum Op {
    Put(Vec<u8>, Vec<u8>, bool),
    Delete(Vec<u8>, bool),
    Batch(Vec<(Vec<u8>, Option<Vec<u8>>)>, bool),
    /// `delete_range(start, end)`.
    DeleteRange(Vec<u8>, Vec<u8>, bool),
    /// `flush_wal(sync)`: with `true`, every write before it is durable once it returns.
    FlushWal(bool),
    Compact,
}

impl Op {
    pub fn sync(&self) -> bool {
        match self {
            Op::Put(_, _, s)
            | Op::Delete(_, s)
            | Op::Batch(_, s)
            | Op::DeleteRange(_, _, s)
            | Op::FlushWal(s) => *s,
            Op::Compact => false,
        }
    }

    pub fn apply_to(&self, m: &mut Model) {
        match self {
            Op::Put(k, v, _) => {
                m.insert(k.clone(), v.clone());
            }
            Op::Delete(k, _) => {
                m.remove(k);
            }
            Op::Batch(ops, _) => {
                for (k, v) in ops {
                    match v {
                        Some(v) => m.insert(k.clone(), v.clone()),
                        None => m.remove(k),
                    };
                }
            }
            Op::DeleteRange(start, end, _) => m.retain(|k, _| !(start <= k && k < end)),
            Op::FlushWal(_) | Op::Compact => {}
        }
    }

    pub fn run(&self, db: &Db) -> strata::Result<()> {
        let wo = |sync| WriteOptions { sync };
        match self {
            Op::Put(k, v, s) => db.put_opt(k, v, &wo(*s)),
            Op::Delete(k, s) => db.delete_opt(k, &wo(*s)),
            Op::Batch(ops, s) => {
                let mut b = WriteBatch::new();
                for (k, v) in ops {
                    match v {
                        Some(v) => b.put(k, v),
                        None => b.delete(k),
                    }
                }
                db.write_opt(b, &wo(*s))
            }
            Op::DeleteRange(start, end, s) => db.delete_range_opt(start, end, &wo(*s)),
            Op::FlushWal(s) => db.flush_wal(*s),
            Op::Compact => db.compact_range(None, None),
        }
    }
}

/// The state after the first `n` operations of `ops` (from `base`), for the `n` in
/// `lo..=hi` at which it equals `got`; `None` if there is none.
pub fn check_prefix(base: &Model, ops: &[Op], lo: usize, hi: usize, got: &Model) -> Option<usize> {
    let mut m = base.clone();
    for p in 0..=hi.min(ops.len()) {
        if p >= lo && m == *got {
            return Some(p);
        }
        if p < ops.len() {
            ops[p].apply_to(&mut m);
        }
    }
    None
}
