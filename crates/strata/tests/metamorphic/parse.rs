//! Reads the text form of a log (written by `op.rs`'s `Display`) back into operations.
//! Errors name the line and what was expected there.

use std::ops::Bound;

use crate::op::{Key, Op, Scan, Step, TxnStep, ValueSpec, Write};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Str(Vec<u8>),
    Semi,
}

fn hex(c: Option<char>) -> Result<u8, String> {
    c.and_then(|c| c.to_digit(16))
        .and_then(|d| u8::try_from(d).ok())
        .ok_or_else(|| "bad \\x escape".to_string())
}

fn quoted(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        match chars.next() {
            None => return Err("unterminated key".into()),
            Some('"') => return Ok(out),
            Some('\\') => match chars.next() {
                Some('"') => out.push(b'"'),
                Some('\\') => out.push(b'\\'),
                Some('x') => {
                    let hi = hex(chars.next())?;
                    out.push(hi << 4 | hex(chars.next())?);
                }
                other => return Err(format!("bad escape \\{other:?}")),
            },
            Some(c) => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

fn tokens(line: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '"' {
            chars.next();
            out.push(Token::Str(quoted(&mut chars)?));
        } else if c == ';' {
            chars.next();
            out.push(Token::Semi);
        } else {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() || c == '"' || c == ';' {
                    break;
                }
                word.push(c);
                chars.next();
            }
            out.push(Token::Word(word));
        }
    }
    Ok(out)
}

/// The tokens of one line, read front to back.
struct Line {
    tokens: std::collections::VecDeque<Token>,
}

impl Line {
    fn word(&mut self) -> Result<String, String> {
        match self.tokens.pop_front() {
            Some(Token::Word(w)) => Ok(w),
            other => Err(format!("expected a word, found {other:?}")),
        }
    }

    fn peek_word(&self) -> Option<&str> {
        match self.tokens.front() {
            Some(Token::Word(w)) => Some(w),
            _ => None,
        }
    }

    fn key(&mut self) -> Result<Key, String> {
        match self.tokens.pop_front() {
            Some(Token::Str(k)) => Ok(k),
            other => Err(format!("expected a quoted key, found {other:?}")),
        }
    }

    /// `*` or a key.
    fn end(&mut self) -> Result<Option<Key>, String> {
        if self.peek_word() == Some("*") {
            self.tokens.pop_front();
            return Ok(None);
        }
        self.key().map(Some)
    }

    fn id(&mut self, prefix: char) -> Result<u32, String> {
        let w = self.word()?;
        w.strip_prefix(prefix)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("expected {prefix}N, found {w:?}"))
    }

    fn value(&mut self) -> Result<ValueSpec, String> {
        let w = self.word()?;
        let parse = || {
            let (len, tag) = w.strip_prefix('v')?.split_once('#')?;
            Some(ValueSpec {
                len: len.parse().ok()?,
                tag: tag.parse().ok()?,
            })
        };
        parse().ok_or_else(|| format!("expected vLEN#TAG, found {w:?}"))
    }

    /// An optional trailing word (`sync`, `rev`).
    fn flag(&mut self, name: &str) -> bool {
        let found = self.peek_word() == Some(name);
        if found {
            self.tokens.pop_front();
        }
        found
    }

    /// An optional trailing `@sN`.
    fn snap(&mut self) -> Result<Option<u32>, String> {
        match self.peek_word() {
            Some(w) if w.starts_with('@') => {
                let w = self.word()?;
                w.strip_prefix("@s")
                    .and_then(|n| n.parse().ok())
                    .map(Some)
                    .ok_or_else(|| format!("expected @sN, found {w:?}"))
            }
            _ => Ok(None),
        }
    }

    fn write(&mut self) -> Result<Write, String> {
        match self.word()?.as_str() {
            "put" => Ok(Write::Put(self.key()?, self.value()?)),
            "del" => Ok(Write::Delete(self.key()?)),
            "delrange" => Ok(Write::DeleteRange(self.key()?, self.key()?)),
            w => Err(format!("expected put, del or delrange, found {w:?}")),
        }
    }

    fn batch(&mut self) -> Result<Op, String> {
        let mut writes = Vec::new();
        while matches!(self.peek_word(), Some("put" | "del" | "delrange")) {
            writes.push(self.write()?);
            if self.tokens.front() == Some(&Token::Semi) {
                self.tokens.pop_front();
            }
        }
        let sync = self.flag("sync");
        Ok(Op::Batch { writes, sync })
    }

    /// The steps of a `txn`, each ended by `;`, then `commit` (or `commit sync`).
    fn txn(&mut self) -> Result<Op, String> {
        let mut steps = Vec::new();
        loop {
            let step = match self.peek_word() {
                Some("commit") => {
                    self.tokens.pop_front();
                    let sync = self.flag("sync");
                    return Ok(Op::Txn { steps, sync });
                }
                Some("get") => {
                    self.tokens.pop_front();
                    TxnStep::Get(self.key()?)
                }
                Some("scan") => {
                    self.tokens.pop_front();
                    TxnStep::Scan(self.scan_spec()?)
                }
                Some("meanwhile") => {
                    self.tokens.pop_front();
                    match self.peek_word() {
                        Some("flush") => {
                            self.tokens.pop_front();
                            TxnStep::MeanwhileFlush
                        }
                        Some("compact") => {
                            self.tokens.pop_front();
                            TxnStep::MeanwhileCompact
                        }
                        _ => TxnStep::Meanwhile(self.write()?),
                    }
                }
                _ => TxnStep::Write(self.write()?),
            };
            steps.push(step);
            match self.tokens.pop_front() {
                Some(Token::Semi) => {}
                other => return Err(format!("expected ; after a txn step, found {other:?}")),
            }
        }
    }

    fn scan(&mut self) -> Result<Op, String> {
        self.scan_spec().map(Op::Scan)
    }

    fn scan_spec(&mut self) -> Result<Scan, String> {
        let lower = match self.word()?.as_str() {
            "*" => Bound::Unbounded,
            ">=" => Bound::Included(self.key()?),
            ">" => Bound::Excluded(self.key()?),
            w => {
                return Err(format!(
                    "expected *, >= or > for the lower bound, found {w:?}"
                ));
            }
        };
        let upper = match self.word()?.as_str() {
            "*" => Bound::Unbounded,
            "<=" => Bound::Included(self.key()?),
            "<" => Bound::Excluded(self.key()?),
            w => {
                return Err(format!(
                    "expected *, <= or < for the upper bound, found {w:?}"
                ));
            }
        };
        let reverse = self.flag("rev");
        let limit = if self.flag("limit") {
            let w = self.word()?;
            Some(w.parse().map_err(|_| format!("bad limit {w:?}"))?)
        } else {
            None
        };
        let snap = self.snap()?;
        Ok(Scan {
            lower,
            upper,
            reverse,
            limit,
            snap,
        })
    }

    fn op(&mut self) -> Result<Op, String> {
        let step = |line: &mut Line, step: Step| -> Result<Op, String> {
            Ok(Op::Step {
                id: line.id('i')?,
                step,
            })
        };
        let op = match self.word()?.as_str() {
            "put" => Op::Put {
                key: self.key()?,
                value: self.value()?,
                sync: self.flag("sync"),
            },
            "del" => Op::Delete {
                key: self.key()?,
                sync: self.flag("sync"),
            },
            "batch" => self.batch()?,
            "get" => Op::Get {
                key: self.key()?,
                snap: self.snap()?,
            },
            "snap" => Op::Snapshot(self.id('s')?),
            "release" => Op::Release(self.id('s')?),
            "iter" => Op::NewIter {
                id: self.id('i')?,
                snap: self.snap()?,
            },
            "first" => step(self, Step::First)?,
            "last" => step(self, Step::Last)?,
            "next" => step(self, Step::Next)?,
            "prev" => step(self, Step::Prev)?,
            "seek" => {
                let id = self.id('i')?;
                Op::Step {
                    id,
                    step: Step::Seek(self.key()?),
                }
            }
            "drop" => Op::DropIter(self.id('i')?),
            "scan" => self.scan()?,
            "flush" => Op::Flush,
            "flushwal" => Op::FlushWal {
                sync: self.flag("sync"),
            },
            "compact" => Op::Compact {
                begin: self.end()?,
                end: self.end()?,
            },
            "close" => Op::Close,
            "reopen" => Op::Reopen,
            "txn" => self.txn()?,
            w => return Err(format!("unknown operation {w:?}")),
        };
        match self.tokens.front() {
            None => Ok(op),
            Some(t) => Err(format!("unexpected {t:?} after the operation")),
        }
    }
}

/// The operations of a log file's text; comment and blank lines are skipped.
pub fn parse_log(text: &str) -> Result<Vec<Op>, String> {
    let mut ops = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let op = tokens(line).and_then(|t| Line { tokens: t.into() }.op());
        ops.push(op.map_err(|e| format!("line {}: {e}: {line}", n + 1))?);
    }
    Ok(ops)
}
