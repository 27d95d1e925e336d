//! A group of benchmarks in a process of its own (`--process_per_group`, on by default).
//!
//! LevelDB's db_bench is one process per run, so its peak RSS starts from nothing at each
//! group. This harness drove every group of every round in one process, so a group was
//! charged what earlier ones left resident: memory the allocator kept, a 120 MB cache
//! of a finished group (a fillseq row measured 22 MB here after other groups, 17 MB in a
//! fresh process, where db_bench took 14 MB). So each group of an engine the harness
//! drives runs in a child: this program again, with the same flags plus the group's index,
//! its engine and directory, and a file for its outcome. The child prints its result
//! lines as the parent would (its standard output is the parent's) and writes the
//! outcome as JSON; the parent reads it and goes on.

use std::path::Path;

use anyhow::{Context, Result, bail};

use crate::flags::Flags;
use crate::{GroupOutcome, peers, run_engine_group, suite};

/// Runs group `gi` of engine `engine` in a child process over `dir`.
pub fn run_group(engine: &str, gi: usize, dir: &Path) -> Result<GroupOutcome> {
    let exe = std::env::current_exe().context("find this program to run a group")?;
    let out = tempfile::Builder::new()
        .prefix("strata-bench-group-")
        .suffix(".json")
        .tempfile()
        .context("create the group's outcome file")?;
    let status = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .arg(format!("--child_group={gi}"))
        .arg(format!("--child_engine={engine}"))
        .arg("--child_dir")
        .arg(dir)
        .arg("--child_out")
        .arg(out.path())
        .status()
        .context("start the group's process")?;
    if !status.success() {
        bail!("the process running group {gi} on {engine} failed ({status})");
    }
    let text = std::fs::read_to_string(out.path()).context("read the group's outcome")?;
    serde_json::from_str(&text).context("parse the group's outcome")
}

/// The child's side: runs group `gi` of `--child_engine` and writes its outcome.
pub fn serve(flags: &Flags, gi: usize) -> Result<()> {
    let (Some(engine), Some(dir), Some(out)) = (
        flags.child_engine.as_deref(),
        flags.child_dir.as_ref(),
        flags.child_out.as_ref(),
    ) else {
        bail!("--child_group needs --child_engine, --child_dir and --child_out");
    };
    let Some(kind) = peers::all().into_iter().find(|k| k.name() == engine) else {
        bail!("engine {engine:?} is not built into this strata-bench");
    };
    let groups = suite::groups(flags)?;
    let Some(g) = groups.get(gi) else {
        bail!("no group {gi} (the run has {})", groups.len());
    };
    let outcome = run_engine_group(kind, g, dir.clone())?;
    let text = serde_json::to_string(&outcome)?;
    std::fs::write(out, text).with_context(|| format!("write {}", out.display()))
}
