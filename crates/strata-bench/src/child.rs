//! A group of benchmarks in a process of its own (`--process_per_group`, on by default).
//!
//! LevelDB's db_bench is one process per run, so its peak RSS starts from nothing at each
//! group. This harness drove every group of every round in one process, so a group was
//! charged what earlier ones left resident: memory the allocator kept, a 120 MB cache
//! of a finished group (a fillseq row measured 22 MB here after other groups, 17 MB in a
//! fresh process, where db_bench took 14 MB). So each group of an engine the harness
//! drives runs in a child: this program again, with the same flags plus the group's index,
//! its engine and directory, and a file for its outcome.
//!
//! The child's process is also where a peer's crash stays: the parent passes the child's
//! output through (keeping its last lines), ends it when it runs past `--group_timeout`,
//! and turns a signal, a timeout or an error exit into a failed group
//! (`outcome::GroupOutcome::fail_at`) instead of ending the run. The child rewrites its
//! outcome file before each benchmark (`running` names it), so the parent keeps what the
//! group finished and knows where it died.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::flags::Flags;
use crate::outcome::GroupOutcome;
use crate::watchdog::Watchdog;
use crate::{peers, run_engine_group, suite};

/// How many of the child's last lines a failure keeps.
const TAIL_LINES: usize = 20;

/// Runs group `g` (index `gi`) of engine `engine` in a child process over `dir`; a child
/// that dies, hangs past `timeout` or fails gives a failed outcome, never an error.
pub fn run_group(
    engine: &str,
    g: &suite::Group,
    gi: usize,
    dir: &Path,
    timeout: Option<Duration>,
) -> GroupOutcome {
    let out = match tempfile::Builder::new()
        .prefix("strata-bench-group-")
        .suffix(".json")
        .tempfile()
    {
        Ok(f) => f,
        Err(e) => {
            let what = format!("create its outcome file: {e}");
            return GroupOutcome::failed_from_start(engine, &g.specs, what, Vec::new());
        }
    };
    let ended = supervise(engine, gi, dir, out.path(), timeout);
    let _ = std::fs::remove_file(staging(out.path()));
    let exited_cleanly = matches!(&ended, Ok(Ended::Exited(s, _)) if s.success());
    let (what, tail) = match ended {
        Ok(Ended::Exited(status, tail)) => (describe(status), tail),
        Ok(Ended::TimedOut(tail)) => (
            format!(
                "timed out after {} s (--group_timeout)",
                timeout.unwrap_or_default().as_secs()
            ),
            tail,
        ),
        Err(e) => (format!("{e:#}"), Vec::new()),
    };
    match read_outcome(out.path()) {
        Ok(o) if exited_cleanly && o.running.is_none() => o,
        // What the group finished stays; it failed at the benchmark under way, or past
        // the last one.
        Ok(mut o) => {
            let at = o.running.unwrap_or(g.specs.len());
            o.fail_at(engine, &g.specs, at, what, tail);
            o
        }
        // No outcome at all: failed from the start (a clean exit without one says why).
        Err(e) => {
            let what = if exited_cleanly {
                format!("{e:#}")
            } else {
                what
            };
            GroupOutcome::failed_from_start(engine, &g.specs, what, tail)
        }
    }
}

/// How a child ended: by itself (its status and last lines), or ended by the parent at
/// its time limit.
enum Ended {
    Exited(ExitStatus, Vec<String>),
    TimedOut(Vec<String>),
}

/// Starts the child, passes its output through, and waits for it at most `timeout`.
fn supervise(
    engine: &str,
    gi: usize,
    dir: &Path,
    out: &Path,
    timeout: Option<Duration>,
) -> Result<Ended> {
    let exe = std::env::current_exe().context("find this program to run a group")?;
    let mut child = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .arg(format!("--child_group={gi}"))
        .arg(format!("--child_engine={engine}"))
        .arg("--child_dir")
        .arg(dir)
        .arg("--child_out")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("start the group's process")?;
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let pumps = [
        child
            .stdout
            .take()
            .map(|s| pump(s, std::io::stdout(), Arc::clone(&tail))),
        child
            .stderr
            .take()
            .map(|s| pump(s, std::io::stderr(), Arc::clone(&tail))),
    ];
    // Its output ends when it does (or when the watchdog ends it); the watchdog stands
    // down before the wait, as it must.
    let watchdog = Watchdog::start(child.id(), timeout);
    for p in pumps.into_iter().flatten() {
        let _ = p.join();
    }
    let timed_out = watchdog.stand_down();
    let status = child.wait().context("wait for the group's process")?;
    let tail: Vec<String> = tail
        .lock()
        .map(|t| t.iter().cloned().collect())
        .unwrap_or_default();
    Ok(if timed_out {
        Ended::TimedOut(tail)
    } else {
        Ended::Exited(status, tail)
    })
}

/// Copies `from` to `to` as it comes, keeping its last lines in `tail`.
fn pump<R, W>(from: R, mut to: W, tail: Arc<Mutex<VecDeque<String>>>) -> std::thread::JoinHandle<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    std::thread::spawn(move || {
        let mut reader = BufReader::new(from);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let _ = to.write_all(&line);
            let _ = to.flush();
            // A progress line redraws itself with '\r': keep only what it said last.
            let text = String::from_utf8_lossy(&line);
            let last = text
                .split('\r')
                .map(str::trim_end)
                .rfind(|s| !s.trim().is_empty());
            if let (Some(last), Ok(mut t)) = (last, tail.lock()) {
                if t.len() == TAIL_LINES {
                    t.pop_front();
                }
                t.push_back(last.to_string());
            }
        }
    })
}

/// A child's exit status in words: the signal by name, or the exit code.
pub fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.signal(), status.code()) {
        (Some(sig), _) => format!(
            "killed by signal {sig} ({}){}",
            signal_name(sig),
            if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            }
        ),
        (None, Some(code)) => format!("exited with status {code}"),
        (None, None) => status.to_string(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => "a signal",
    }
}

/// Where the child writes its outcome before moving it over the outcome file, so the
/// parent never reads half of one.
fn staging(out: &Path) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".tmp");
    PathBuf::from(name)
}

fn read_outcome(path: &Path) -> Result<GroupOutcome> {
    let text = std::fs::read_to_string(path).context("read the group's outcome")?;
    if text.is_empty() {
        bail!("the group's process wrote no outcome");
    }
    serde_json::from_str(&text).context("parse the group's outcome")
}

/// The child's side: runs group `gi` of `--child_engine` and writes its outcome, before
/// each benchmark and at the end.
pub fn serve(flags: &Flags, gi: usize) -> Result<()> {
    let (Some(engine), Some(dir), Some(out)) = (
        flags.child_engine.as_deref(),
        flags.child_dir.as_ref(),
        flags.child_out.as_ref(),
    ) else {
        bail!("--child_group needs --child_engine, --child_dir and --child_out");
    };
    let Some(kind) = peers::find(engine) else {
        bail!("engine {engine:?} is not built into this strata-bench");
    };
    let groups = suite::groups(flags)?;
    let Some(g) = groups.get(gi) else {
        bail!("no group {gi} (the run has {})", groups.len());
    };
    let write = |o: &GroupOutcome| -> Result<()> {
        let text = serde_json::to_string(o)?;
        let temp = staging(out);
        std::fs::write(&temp, text).with_context(|| format!("write {}", temp.display()))?;
        std::fs::rename(&temp, out).with_context(|| format!("rename onto {}", out.display()))
    };
    let outcome = run_engine_group(kind, g, dir.clone(), &mut |o| write(o))?;
    write(&outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_said_in_words() {
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(
            describe(ExitStatus::from_raw(11)),
            "killed by signal 11 (SIGSEGV)"
        );
        assert_eq!(
            describe(ExitStatus::from_raw(6 | 0x80)),
            "killed by signal 6 (SIGABRT), core dumped"
        );
        assert_eq!(
            describe(ExitStatus::from_raw(1 << 8)),
            "exited with status 1"
        );
    }

    #[test]
    fn the_tail_keeps_the_last_lines_and_what_a_progress_line_said_last() {
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let mut text = String::new();
        for i in 0..30 {
            text.push_str(&format!("line {i}\n"));
        }
        text.push_str("spin 1\rspin 2\rdone\n\n");
        pump(
            std::io::Cursor::new(text),
            std::io::sink(),
            Arc::clone(&tail),
        )
        .join()
        .unwrap();
        let t: Vec<String> = tail.lock().unwrap().iter().cloned().collect();
        assert_eq!(t.len(), TAIL_LINES);
        assert_eq!(t.last().map(String::as_str), Some("done"));
        assert_eq!(t[0], "line 11");
    }
}
