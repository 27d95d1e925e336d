//! The seeded generator of operation logs.
//!
//! Keys come from a small key space drawn per log (20 to 320 keys) and are picked with a
//! skew, so writes overwrite and delete keys that exist: the empty key, one-byte keys
//! (`\x00`, `\xff`), families sharing prefixes (`u/1`, `u/12`, `u/120`), and 100 to 300
//! byte keys sharing a long prefix. Reads and seeks also use keys near those (one byte
//! longer or shorter), which exist in no table. Values are mostly short, one in ten
//! empty, a few 10 to 100 KiB. The mix: writes (single, synced now and then, and batches
//! that may write one key twice), gets (now and at snapshots), cursors stepping both ways
//! with bursts and turns, bounded scans both ways, transactions (reads, scans and writes
//! of their own, with writes, flushes and compactions by another writer between their
//! steps, often on the keys they read), flushes, full and partial compactions, closes
//! and reopens. Every log ends with `close`.

use std::ops::Bound;

use crate::common::Rng;
use crate::op::{Key, Op, Scan, Step, TxnStep, ValueSpec, Write};

/// Live snapshots and cursors kept at most at once.
const MAX_SNAPSHOTS: usize = 8;
const MAX_ITERS: usize = 5;

fn family_key(rng: &mut Rng) -> Key {
    let prefix = ["u/", "u/1", "a", "ab", "abc", "t\x00", "zz/"][rng.below(7) as usize];
    let digits = 1 + rng.below(4) as usize;
    let n = rng.below(10u64.pow(digits as u32));
    format!("{prefix}{n:0digits$}").into_bytes()
}

fn long_key(rng: &mut Rng) -> Key {
    let mut k = vec![b'L'; 100 + rng.below(200) as usize];
    k.extend(rng.below(1000).to_string().bytes());
    k
}

/// The key space of one log, in the order of its skew (hot keys first).
fn key_space(rng: &mut Rng) -> Vec<Key> {
    let n = 20 + rng.below(300) as usize;
    let mut keys: Vec<Key> = vec![Vec::new(), vec![0x00], vec![0xff], vec![0xff, 0xff, 0x00]];
    while keys.len() < n {
        let k = match rng.below(10) {
            0 => long_key(rng),
            1 => {
                let len = 1 + rng.below(6) as usize;
                rng.bytes(len)
            }
            _ => family_key(rng),
        };
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    // Shuffle, so that which keys are hot differs between logs.
    for i in (1..keys.len()).rev() {
        keys.swap(i, rng.below(i as u64 + 1) as usize);
    }
    keys
}

struct Gen {
    rng: Rng,
    keys: Vec<Key>,
    next_tag: u32,
    next_snap: u32,
    next_iter: u32,
    snaps: Vec<u32>,
    iters: Vec<u32>,
    ops: Vec<Op>,
}

impl Gen {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    /// A key of the key space: half the picks among the 8 hottest, a quarter among the
    /// hottest quarter, a quarter anywhere.
    fn key(&mut self) -> Key {
        let n = self.keys.len() as u64;
        let i = match self.below(4) {
            0 | 1 => self.below(8.min(n)),
            2 => self.below((n / 4).max(1)),
            _ => self.below(n),
        };
        self.keys[i as usize].clone()
    }

    /// A key to read or seek: mostly of the key space, sometimes one near it.
    fn probe(&mut self) -> Key {
        let mut k = self.key();
        match self.below(10) {
            0 => k.push(0x00),
            1 => k.push(self.rng.next_u64() as u8),
            2 => {
                k.pop();
            }
            _ => {}
        }
        k
    }

    fn value(&mut self) -> ValueSpec {
        let len = match self.below(1000) {
            0..=99 => 0,
            100..=699 => 1 + self.below(100),
            700..=949 => 100 + self.below(1900),
            950..=989 => 2000 + self.below(8000),
            _ => 10_000 + self.below(90_000),
        };
        self.next_tag += 1;
        ValueSpec {
            len: len as u32,
            tag: self.next_tag,
        }
    }

    fn snap(&mut self) -> Option<u32> {
        if self.snaps.is_empty() || self.below(3) != 0 {
            return None;
        }
        let i = self.below(self.snaps.len() as u64) as usize;
        Some(self.snaps[i])
    }

    fn sync(&mut self) -> bool {
        self.below(100) == 0
    }

    fn batch(&mut self) -> Op {
        let n = match self.below(20) {
            0 => 0,
            1..=2 => 20 + self.below(40),
            _ => 1 + self.below(8),
        };
        let mut writes: Vec<Write> = Vec::new();
        for _ in 0..n {
            // One write in five repeats a key already in the batch.
            let key = match writes.last() {
                Some(Write::Put(k, _) | Write::Delete(k)) if self.below(5) == 0 => k.clone(),
                _ => self.key(),
            };
            // One write in sixteen deletes a range (one in four of those is empty or
            // reversed, which deletes nothing).
            writes.push(if self.below(16) == 0 {
                let other = self.key();
                if key <= other || self.below(4) == 0 {
                    Write::DeleteRange(key, other)
                } else {
                    Write::DeleteRange(other, key)
                }
            } else if self.below(3) == 0 {
                Write::Delete(key)
            } else {
                Write::Put(key, self.value())
            });
        }
        Op::Batch {
            writes,
            sync: self.sync(),
        }
    }

    fn bound(&mut self) -> Bound<Key> {
        match self.below(3) {
            0 => Bound::Unbounded,
            1 => Bound::Included(self.probe()),
            _ => Bound::Excluded(self.probe()),
        }
    }

    /// A write of one key or a range, for a transaction or for the writer beside it.
    fn one_write(&mut self, near: Option<Key>) -> Write {
        let key = near.unwrap_or_else(|| self.key());
        match self.below(12) {
            0 => {
                let other = self.key();
                if key <= other {
                    Write::DeleteRange(key, other)
                } else {
                    Write::DeleteRange(other, key)
                }
            }
            1..=3 => Write::Delete(key),
            _ => Write::Put(key, self.value()),
        }
    }

    /// A transaction: a few reads, scans and writes of its own; now and then another
    /// writer's write (half the time to a key it has read), a flush or a compaction
    /// between them.
    fn txn(&mut self) -> Op {
        let mut steps = Vec::new();
        let mut read: Vec<Key> = Vec::new();
        for _ in 0..1 + self.below(8) {
            steps.push(match self.below(20) {
                0..=5 => {
                    let k = self.probe();
                    read.push(k.clone());
                    TxnStep::Get(k)
                }
                6..=7 => match self.scan() {
                    Op::Scan(mut scan) => {
                        scan.snap = None;
                        TxnStep::Scan(scan)
                    }
                    _ => unreachable!("scan() makes a scan"),
                },
                8..=13 => TxnStep::Write(self.one_write(None)),
                14..=17 => {
                    let near = (!read.is_empty() && self.below(2) == 0)
                        .then(|| read[self.below(read.len() as u64) as usize].clone());
                    TxnStep::Meanwhile(self.one_write(near))
                }
                18 => TxnStep::MeanwhileFlush,
                _ => TxnStep::MeanwhileCompact,
            });
        }
        Op::Txn {
            steps,
            sync: self.sync(),
        }
    }

    fn scan(&mut self) -> Op {
        let (mut lower, mut upper) = (self.bound(), self.bound());
        // Mostly ordered bounds; now and then inverted ones, which must yield nothing.
        if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) =
            (&mut lower, &mut upper)
            && a > b
            && self.below(8) != 0
        {
            std::mem::swap(a, b);
        }
        let limit = match self.below(4) {
            0 => None,
            _ => Some(1 + self.below(40) as u32),
        };
        Op::Scan(Scan {
            lower,
            upper,
            reverse: self.below(2) == 0,
            limit,
            snap: self.snap(),
        })
    }

    fn new_snapshot(&mut self) {
        if self.snaps.len() >= MAX_SNAPSHOTS {
            return self.release();
        }
        self.next_snap += 1;
        self.snaps.push(self.next_snap);
        self.ops.push(Op::Snapshot(self.next_snap));
    }

    fn release(&mut self) {
        if self.snaps.is_empty() {
            return;
        }
        let i = self.below(self.snaps.len() as u64) as usize;
        let s = self.snaps.swap_remove(i);
        self.ops.push(Op::Release(s));
    }

    /// A new cursor, most times placed at once (a fresh cursor is not valid).
    fn new_iter(&mut self) {
        if self.iters.len() >= MAX_ITERS {
            return self.drop_iter();
        }
        self.next_iter += 1;
        let (id, snap) = (self.next_iter, self.snap());
        self.iters.push(id);
        self.ops.push(Op::NewIter { id, snap });
        let step = match self.below(8) {
            0 => return,
            1..=3 => Step::First,
            4..=5 => Step::Last,
            _ => Step::Seek(self.probe()),
        };
        self.ops.push(Op::Step { id, step });
    }

    fn drop_iter(&mut self) {
        if self.iters.is_empty() {
            return;
        }
        let i = self.below(self.iters.len() as u64) as usize;
        let id = self.iters.swap_remove(i);
        self.ops.push(Op::DropIter(id));
    }

    /// Steps of one cursor: one move, or a burst one way and a turn back.
    fn steps(&mut self) {
        if self.iters.is_empty() {
            return self.new_iter();
        }
        let i = self.below(self.iters.len() as u64) as usize;
        let id = self.iters[i];
        let push = |g: &mut Gen, step: Step| g.ops.push(Op::Step { id, step });
        match self.below(20) {
            0..=2 => {
                let k = self.probe();
                push(self, Step::Seek(k));
            }
            3 => push(self, Step::First),
            4 => push(self, Step::Last),
            5..=10 => push(self, Step::Next),
            11..=16 => push(self, Step::Prev),
            _ => {
                let (one, other) = if self.below(2) == 0 {
                    (Step::Next, Step::Prev)
                } else {
                    (Step::Prev, Step::Next)
                };
                for _ in 0..2 + self.below(8) {
                    push(self, one.clone());
                }
                for _ in 0..1 + self.below(2) {
                    push(self, other.clone());
                }
            }
        }
    }

    fn compact(&mut self) -> Op {
        let (begin, end) = match self.below(4) {
            0 => (None, None),
            1 => (None, Some(self.probe())),
            2 => (Some(self.probe()), None),
            _ => {
                let (a, b) = (self.probe(), self.probe());
                if a <= b {
                    (Some(a), Some(b))
                } else {
                    (Some(b), Some(a))
                }
            }
        };
        Op::Compact { begin, end }
    }

    /// Adds one operation (a cursor burst adds several).
    fn one(&mut self) {
        let op = match self.below(1000) {
            0..=301 => Op::Put {
                key: self.key(),
                value: self.value(),
                sync: self.sync(),
            },
            302..=381 => Op::Delete {
                key: self.key(),
                sync: self.sync(),
            },
            382..=461 => self.batch(),
            462..=611 => Op::Get {
                key: self.probe(),
                snap: self.snap(),
            },
            612..=641 => self.txn(),
            642..=656 => return self.new_snapshot(),
            657..=666 => return self.release(),
            667..=686 => return self.new_iter(),
            687..=696 => return self.drop_iter(),
            697..=846 => return self.steps(),
            847..=966 => self.scan(),
            967..=976 => Op::Flush,
            977..=981 => Op::FlushWal {
                sync: self.below(2) == 0,
            },
            982..=991 => self.compact(),
            992..=996 => Op::Reopen,
            _ => Op::Close,
        };
        if matches!(op, Op::Reopen | Op::Close) {
            self.snaps.clear();
            self.iters.clear();
        }
        self.ops.push(op);
    }
}

/// A log of about `len` operations (exactly `len`, the last a `close`) from `seed`.
pub fn generate(seed: u64, len: usize) -> Vec<Op> {
    let mut rng = Rng::new(seed);
    let keys = key_space(&mut rng);
    let mut g = Gen {
        rng,
        keys,
        next_tag: 0,
        next_snap: 0,
        next_iter: 0,
        snaps: Vec::new(),
        iters: Vec::new(),
        ops: Vec::with_capacity(len + 32),
    };
    while g.ops.len() + 1 < len {
        g.one();
    }
    g.ops.truncate(len.saturating_sub(1));
    g.ops.push(Op::Close);
    g.ops
}
