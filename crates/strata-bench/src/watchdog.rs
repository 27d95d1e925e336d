//! Ending a process that runs past its time (`--group_timeout`): a group's own process
//! (`child.rs`) or a peer's benchmark program (`dbbench.rs`), so one hung engine does not
//! hold up the run.
//!
//! The watchdog must stand down before its process is waited for: until then the process
//! is at least a zombie, so its id cannot have been given to another process when the
//! watchdog kills it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// Kills one process (SIGKILL) if it is not stood down within its time limit.
pub struct Watchdog {
    stop: Option<Sender<()>>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    /// Watches process `pid` for `limit` (`None`: no watch).
    pub fn start(pid: u32, limit: Option<Duration>) -> Watchdog {
        let fired = Arc::new(AtomicBool::new(false));
        let Some(limit) = limit else {
            return Watchdog {
                stop: None,
                fired,
                thread: None,
            };
        };
        let (stop, stopped) = channel::<()>();
        let flag = Arc::clone(&fired);
        let thread = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(limit)
                && let Some(pid) = i32::try_from(pid)
                    .ok()
                    .and_then(rustix::process::Pid::from_raw)
            {
                flag.store(true, Ordering::SeqCst);
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        });
        Watchdog {
            stop: Some(stop),
            fired,
            thread: Some(thread),
        }
    }

    /// Stops watching; whether the time ran out first (the process was killed).
    pub fn stand_down(mut self) -> bool {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.fired.load(Ordering::SeqCst)
    }
}
