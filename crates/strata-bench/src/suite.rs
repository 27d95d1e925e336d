//! Preset suites: the rows of each benchmark page, with their settings.

use anyhow::{Result, bail};

use crate::bench::{Spec, spec};
use crate::flags::Flags;
use crate::results::Sweep;

/// A group of benchmarks run in order on one database with one set of flags.
#[derive(Debug, Clone)]
pub struct Group {
    /// What the group stands for (a section of the page).
    pub label: String,
    /// The flags it runs with.
    pub flags: Flags,
    /// The benchmarks.
    pub specs: Vec<Spec>,
    /// Its place on the suite's swept axis, if the suite sweeps one.
    pub sweep: Option<Sweep>,
}

impl Group {
    fn swept(mut self, axis: &str, value: f64) -> Self {
        self.sweep = Some(Sweep {
            axis: axis.to_string(),
            value,
        });
        self
    }
}

fn group(
    label: &str,
    flags: &Flags,
    rows: &[(&str, &str)],
    edit: impl Fn(&mut Flags),
) -> Result<Group> {
    let mut f = flags.clone();
    edit(&mut f);
    let mut specs = Vec::new();
    for (row, name) in rows {
        let mut s = spec(name, &f)?;
        s.row = (*row).to_string();
        if *name == "fillsync" || *name == "fsyncceiling" {
            // The LevelDB page measured 10,000 synced writes.
            s.num = 10_000.min(f.num);
        }
        specs.push(s);
    }
    Ok(Group {
        label: label.to_string(),
        flags: f,
        specs,
        sweep: None,
    })
}

/// The groups of `--benchmarks` (one group) or of a suite.
pub fn groups(flags: &Flags) -> Result<Vec<Group>> {
    let Some(suite) = flags.suite.as_deref() else {
        let specs = flags
            .benchmarks
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|name| spec(name, flags))
            .collect::<Result<Vec<_>>>()?;
        return Ok(vec![Group {
            label: String::new(),
            flags: flags.clone(),
            specs,
            sweep: None,
        }]);
    };
    match suite {
        "baseline" => baseline(flags),
        "readwhilewriting" => read_while_writing(flags),
        "value-sizes" => value_sizes(flags),
        "scale" => scale(flags),
        "group-commit" => group_commit(flags),
        "transactions" => transactions(flags),
        other => bail!(
            "unknown suite {other:?} (baseline, readwhilewriting, value-sizes, scale, \
             group-commit, transactions)"
        ),
    }
}

/// Per group, the group whose database directory it runs in: its own, or for a group that
/// reads what an earlier one built (`use_existing_db`, as the read-while-writing phases
/// after their load) that group's. A directory is removed after the last group in it.
pub fn homes(groups: &[Group]) -> Vec<usize> {
    groups
        .iter()
        .enumerate()
        .scan(0, |built, (gi, g)| {
            if !g.flags.use_existing_db {
                *built = gi;
            }
            Some(*built)
        })
        .collect()
}

/// The LevelDB page: sections 1, 2A-2E, 3A-3B. 4 MB of memory (4 MB write buffer and
/// 4 MB cache, as the peers were measured here), 100-byte values compressible to half.
fn baseline(flags: &Flags) -> Result<Vec<Group>> {
    let mem4 = |f: &mut Flags| {
        f.write_buffer_size = 4 << 20;
        f.cache_size = 4 << 20;
    };
    Ok(vec![
        group(
            "1, 2A-2C: baseline",
            flags,
            &[
                ("1C", "fillseq"),
                ("2C", "fillsync"),
                ("2C", "fsyncceiling"),
                ("1D", "fillrandom"),
                ("1D", "overwrite"),
                ("1B", "readrandom"),
                ("1A", "readseq"),
                ("1A", "readreverse"),
                ("", "compact"),
                ("1B", "readrandom"),
                ("1A", "readseq"),
                ("1A", "readreverse"),
                ("2A", "fill100K"),
                ("2B", "fillbatch"),
                ("2B", "fillrandbatch"),
            ],
            mem4,
        )?,
        group(
            "2D: compression off",
            flags,
            &[("2D", "fillseq"), ("2D", "fillrandom")],
            |f| {
                mem4(f);
                f.compression = false;
            },
        )?,
        group(
            "2E: 128 MB memory (120 MB write buffer)",
            flags,
            &[("2E", "fillseq"), ("2E", "fillrandom")],
            |f| {
                f.write_buffer_size = 120 << 20;
                f.cache_size = 8 << 20;
            },
        )?,
        group(
            "3A: 128 MB memory (120 MB cache)",
            flags,
            // Built with fillseq (every key present): the reads do not depend on how the
            // database was loaded, and a random load with a 4 MB cache costs the B-trees
            // minutes each (see docs/bench.md).
            &[
                ("", "fillseq"),
                ("", "compact"),
                ("3A", "readrandom"),
                ("3A", "readseq"),
            ],
            |f| {
                f.write_buffer_size = 4 << 20;
                f.cache_size = 120 << 20;
            },
        )?,
        group(
            "3B: compression off, reads",
            flags,
            &[
                ("", "fillseq"),
                ("", "compact"),
                ("3B", "readrandom"),
                ("3B", "readseq"),
            ],
            |f| {
                mem4(f);
                f.compression = false;
            },
        )?,
    ])
}

/// WiredTiger's page: a batched sequential load, then phases of one writer and 1, 4, 16,
/// 32 readers, rate-limited to 30,000 writes/s and unlimited. Sizes come from --num and
/// --duration (default 10 s a phase) so it fits the machine.
fn read_while_writing(flags: &Flags) -> Result<Vec<Group>> {
    let mut out = vec![group("load", flags, &[("load", "fillseqbatch")], |_| {})?];
    for rate in [30_000u64, 0] {
        for readers in [1usize, 4, 16, 32] {
            let label = format!(
                "{readers} readers, writer {}",
                if rate == 0 {
                    "unlimited".to_string()
                } else {
                    format!("{rate}/s")
                }
            );
            let mut g = group(
                &label,
                flags,
                &[(&label.clone(), "readwhilewriting")],
                |f| {
                    f.threads = readers;
                    f.writes_per_second = rate;
                    if f.duration <= 0.0 {
                        f.duration = 10.0;
                    }
                    if f.stats_interval <= 0.0 {
                        f.stats_interval = 1.0;
                    }
                    // The page's p99 read latency per phase.
                    f.histogram = true;
                    f.use_existing_db = true;
                },
            )?;
            g.specs[0].name = "readwhilewriting".into();
            out.push(g);
        }
    }
    Ok(out)
}

/// KingDB's sweep: value sizes from 100 B to 1 MB, about 100 MB of data each, every value
/// read (`--touch_values`).
fn value_sizes(flags: &Flags) -> Result<Vec<Group>> {
    let mut out = Vec::new();
    for size in [100usize, 1024, 100 << 10, 256 << 10, 512 << 10, 1 << 20] {
        let label = format!("value size {size}");
        out.push(
            group(
                &label,
                flags,
                &[
                    (&label.clone(), "fillseq"),
                    (&label.clone(), "fillrandom"),
                    (&label.clone(), "overwrite"),
                    (&label.clone(), "readrandom"),
                    (&label.clone(), "readseq"),
                    ("", "compact"),
                    (&label.clone(), "readrandom"),
                    (&label.clone(), "readseq"),
                ],
                |f| {
                    f.value_size = size;
                    f.num = f.num.min(((100u64 << 20) / size as u64).max(100));
                    f.write_buffer_size = 4 << 20;
                    // Every value read, in place, on every engine (`access.rs`).
                    f.touch_values = true;
                },
            )?
            .swept("value size (bytes)", size as f64),
        );
    }
    Ok(out)
}

/// Group commit: synced writes (`fillsync`, each write waits for its `fdatasync`) from 1,
/// 2, 4, 8 and 16 threads, each group on a fresh database for `--duration` seconds
/// (default 5); first the disk's own ceiling (one thread appending 100 bytes and calling
/// `fdatasync`, no engine), drawn on the chart as a line.
fn group_commit(flags: &Flags) -> Result<Vec<Group>> {
    let timed = |f: &mut Flags| {
        if f.duration <= 0.0 {
            f.duration = 5.0;
        }
        f.histogram = true;
    };
    let mut out = vec![group(
        "disk ceiling",
        flags,
        &[("ceiling", "fsyncceiling")],
        |f| {
            timed(f);
            f.threads = 1;
        },
    )?];
    for threads in [1usize, 2, 4, 8, 16] {
        let label = format!(
            "{threads} writing thread{}",
            if threads == 1 { "" } else { "s" }
        );
        out.push(
            group(&label, flags, &[("group commit", "fillsync")], |f| {
                timed(f);
                f.threads = threads;
            })?
            .swept("writing threads", threads as f64),
        );
    }
    Ok(out)
}

/// Transactions: RocksDB db_bench's `randomtransaction` (two sets, each transaction
/// reads and rewrites one random key of each) with 100,000 keys a set (low contention) and
/// 1,000 (high); then a load of 100,000 keys and YCSB-F's read-modify-write mix over them
/// (half point reads, half transactions that read a key and write it). At 1, 4 and 16
/// threads, each for `--duration` seconds (default 5). Every randomtransaction run checks
/// at its end that the sets' sums are equal.
fn transactions(flags: &Flags) -> Result<Vec<Group>> {
    const THREADS: [usize; 3] = [1, 4, 16];
    let label = |t: usize| format!("{t} thread{}", if t == 1 { "" } else { "s" });
    let timed = |f: &mut Flags, threads: usize| {
        f.threads = threads;
        f.num = 100_000;
        if f.duration <= 0.0 {
            f.duration = 5.0;
        }
    };
    let mut out = Vec::new();
    for threads in THREADS {
        let mut g = group(
            &label(threads),
            flags,
            &[
                ("low contention", "randomtransaction"),
                ("high contention", "randomtransaction"),
            ],
            |f| timed(f, threads),
        )?;
        g.specs[1].num = 1_000;
        out.push(g);
    }
    out.push(group("load", flags, &[("load", "fillseq")], |f| {
        f.num = 100_000;
        f.threads = 1;
        f.duration = 0.0;
    })?);
    for threads in THREADS {
        out.push(group(
            &format!("{}, loaded", label(threads)),
            flags,
            &[("", "readmodifywrite")],
            |f| {
                timed(f, threads);
                f.use_existing_db = true;
            },
        )?);
    }
    Ok(out)
}

/// The scale page: --num entries, a 256 MB write buffer, no compression, 32 MB tables.
fn scale(flags: &Flags) -> Result<Vec<Group>> {
    Ok(vec![
        group(
            &format!("scale {}", flags.num),
            flags,
            &[
                ("scale", "fillseq"),
                ("scale", "fillrandom"),
                ("scale", "overwrite"),
                ("scale", "readrandom"),
                ("", "compact"),
                ("scale", "readrandom"),
                ("scale", "readseq"),
            ],
            |f| {
                f.write_buffer_size = 256 << 20;
                f.compression = false;
                f.max_file_size = 32 << 20;
            },
        )?
        .swept("entries", flags.num as f64),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn suite(name: &str) -> Vec<Group> {
        let flags = Flags::parse_from(["strata-bench", &format!("--suite={name}")]);
        groups(&flags).unwrap()
    }

    #[test]
    fn read_while_writing_phases_read_the_loaded_database() {
        let g = suite("readwhilewriting");
        assert_eq!(g.len(), 9, "a load and eight phases");
        assert!(homes(&g).iter().all(|h| *h == 0), "{:?}", homes(&g));
        // Every baseline group builds its own.
        let b = suite("baseline");
        assert_eq!(homes(&b), (0..b.len()).collect::<Vec<_>>());
    }

    #[test]
    fn swept_suites_say_where_each_group_sits() {
        let v: Vec<f64> = suite("value-sizes")
            .iter()
            .map(|g| g.sweep.as_ref().unwrap().value)
            .collect();
        assert_eq!(
            v,
            [100.0, 1024.0, 102_400.0, 262_144.0, 524_288.0, 1_048_576.0]
        );
        let gc = suite("group-commit");
        assert!(
            gc[0].sweep.is_none(),
            "the disk's ceiling is no point of the sweep"
        );
        let threads: Vec<usize> = gc[1..].iter().map(|g| g.specs[0].threads).collect();
        assert_eq!(threads, [1, 2, 4, 8, 16]);
    }

    #[test]
    fn the_transactions_suite_meets_both_contentions_then_a_loaded_mix() {
        let g = suite("transactions");
        let names: Vec<String> = g.iter().map(|g| g.label.clone()).collect();
        assert_eq!(
            names,
            [
                "1 thread",
                "4 threads",
                "16 threads",
                "load",
                "1 thread, loaded",
                "4 threads, loaded",
                "16 threads, loaded"
            ]
        );
        for t in &g[..3] {
            let keys: Vec<u64> = t.specs.iter().map(|s| s.num).collect();
            assert_eq!(keys, [100_000, 1_000], "low, then high contention");
            assert!(t.flags.duration > 0.0 && !t.flags.use_existing_db);
        }
        assert_eq!(
            g[3].flags.duration, 0.0,
            "the load writes every key, untimed"
        );
        assert_eq!(g[3].specs[0].num, 100_000);
        for (t, threads) in g[4..].iter().zip([1, 4, 16]) {
            assert!(t.flags.use_existing_db, "the mix reads the loaded keys");
            assert_eq!(t.specs[0].threads, threads);
        }
        assert_eq!(homes(&g)[4..], [3, 3, 3]);
    }
}
