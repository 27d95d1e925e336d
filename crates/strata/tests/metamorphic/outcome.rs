//! What an operation shows its caller: the thing compared between the model and every
//! option set. Values are compared by length and hash ([`Val`]); errors by their kind, so
//! that paths in messages (which differ between sets) do not count.

use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::op::{Key, Quoted};

/// A value as seen: its length, a hash of its bytes, and its first bytes for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Val {
    len: usize,
    hash: u64,
    head: [u8; 10],
}

impl Val {
    pub fn of(bytes: &[u8]) -> Val {
        let mut h = DefaultHasher::new();
        bytes.hash(&mut h);
        let mut head = [0; 10];
        for (d, s) in head.iter_mut().zip(bytes) {
            *d = *s;
        }
        Val {
            len: bytes.len(),
            hash: h.finish(),
            head,
        }
    }
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = self.len.min(self.head.len());
        let more = if self.len > shown { "..." } else { "" };
        let head = self.head.get(..shown).unwrap_or_default();
        write!(f, "{} bytes {}{more}", self.len, Quoted(head))
    }
}

/// The result of one operation.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// A write, flush, compaction, snapshot, close: succeeded, nothing to show.
    Done,
    /// The operation names a snapshot or cursor that does not exist (any more).
    Missing,
    /// A `get`: the value, if any.
    Value(Option<Val>),
    /// A cursor after its step: the entry it is at, or `None` when not valid.
    At(Option<(Key, Val)>),
    /// A scan: the entries in the order yielded.
    Entries(Vec<(Key, Val)>),
    /// An error: its kind (compared) and message (shown).
    Failed { kind: String, message: String },
    /// The engine panicked.
    Panicked(String),
    /// A transaction: the outcome of each step that shows one (its reads, and what was
    /// done meanwhile), then its commit's.
    Steps(Vec<Outcome>),
}

impl Outcome {
    pub fn failed(e: &strata::Error) -> Outcome {
        let kind = format!("{e:?}");
        let kind = kind
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or_default()
            .to_string();
        Outcome::Failed {
            kind,
            message: e.to_string(),
        }
    }

    pub fn of(r: strata::Result<()>) -> Outcome {
        match r {
            Ok(()) => Outcome::Done,
            Err(e) => Outcome::failed(&e),
        }
    }
}

impl PartialEq for Outcome {
    fn eq(&self, other: &Outcome) -> bool {
        use Outcome::*;
        match (self, other) {
            (Done, Done) | (Missing, Missing) => true,
            (Value(a), Value(b)) => a == b,
            (At(a), At(b)) => a == b,
            (Entries(a), Entries(b)) => a == b,
            (Failed { kind: a, .. }, Failed { kind: b, .. }) => a == b,
            (Steps(a), Steps(b)) => a == b,
            // A panic never agrees, not even with another.
            _ => false,
        }
    }
}

fn entry(f: &mut fmt::Formatter<'_>, (k, v): &(Key, Val)) -> fmt::Result {
    write!(f, "{} = {v}", Quoted(k))
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Done => f.write_str("ok"),
            Outcome::Missing => f.write_str("missing (no such snapshot or cursor)"),
            Outcome::Value(None) => f.write_str("not found"),
            Outcome::Value(Some(v)) => write!(f, "{v}"),
            Outcome::At(None) => f.write_str("not valid"),
            Outcome::At(Some(e)) => entry(f, e),
            Outcome::Entries(es) => {
                write!(f, "{} entries", es.len())?;
                for (i, e) in es.iter().enumerate().take(8) {
                    f.write_str(if i == 0 { ": " } else { ", " })?;
                    entry(f, e)?;
                }
                if es.len() > 8 {
                    f.write_str(", ...")?;
                }
                Ok(())
            }
            Outcome::Failed { kind, message } => write!(f, "error {kind}: {message}"),
            Outcome::Panicked(m) => write!(f, "panic: {m}"),
            Outcome::Steps(steps) => {
                f.write_str("[")?;
                for (i, o) in steps.iter().enumerate() {
                    let last = i + 1 == steps.len();
                    write!(
                        f,
                        "{}{o}",
                        if i == 0 {
                            ""
                        } else if last {
                            "; commit: "
                        } else {
                            "; "
                        }
                    )?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Where two outcomes differ, in words (for scans: the first entry that differs).
pub fn difference(expected: &Outcome, got: &Outcome) -> String {
    if let (Outcome::Steps(a), Outcome::Steps(b)) = (expected, got)
        && a.len() == b.len()
        && let Some(i) = a.iter().zip(b).position(|(x, y)| x != y)
    {
        let what = if i + 1 == a.len() {
            "its commit".to_string()
        } else {
            format!("step outcome {i}")
        };
        return format!(
            "transaction differs at {what}: {}",
            difference(&a[i], &b[i])
        );
    }
    if let (Outcome::Entries(a), Outcome::Entries(b)) = (expected, got) {
        let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        let show = |es: &[(Key, Val)]| match es.get(i) {
            Some((k, v)) => format!("{} = {v}", Quoted(k)),
            None => "the end".to_string(),
        };
        return format!(
            "scan differs at entry {i}: expected {}, got {} (expected {} entries, got {})",
            show(a),
            show(b),
            a.len(),
            b.len()
        );
    }
    format!("expected {expected}, got {got}")
}
