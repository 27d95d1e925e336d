//! Failures of background steps and the paused state they leave (C7, D3, D5).
//!
//! A flush or compaction that fails while writing its new tables (a full disk, most often)
//! has changed nothing the manifest names: its outputs are removed, the database keeps
//! serving reads and the writes that fit in the memtable, and the step is paused: it runs
//! again after `Options::background_retry_interval` or at `Db::resume`. A failed manifest
//! write or directory sync, or damaged input, is final (`bg_error`): the state on disk is
//! in doubt and only a reopen recovers.

use std::time::{Duration, Instant};

use super::info_log::info_log;
use super::state::{DbInner, State};
pub(super) use super::state::{Paused, Step};
use crate::error::Error;

pub(super) fn record_error(st: &mut State, e: Error) {
    if st.bg_error.is_none() {
        st.bg_error = Some(e);
    }
}

/// A failed background step, and whether running it again can succeed (C7).
pub(super) enum Failure {
    /// Nothing the manifest names changed and the step's outputs are gone: it can run
    /// again once the cause (most often a full disk) is gone.
    Retry(Error),
    /// The state on disk is in doubt (a manifest write or directory sync failed) or the
    /// input is damaged: final until the database is reopened.
    Stop(Error),
}

impl Failure {
    /// Sorts an error from writing new tables: I/O errors can pass, the rest cannot.
    pub(super) fn of_table_write(e: Error) -> Failure {
        match e {
            Error::Io { .. } => Failure::Retry(e),
            other => Failure::Stop(other),
        }
    }
}

pub(super) fn record_failure(db: &DbInner, st: &mut State, f: Failure, step: Step) {
    match f {
        Failure::Stop(e) => record_error(st, e),
        Failure::Retry(e) => {
            if st.bg_error.is_some() || st.bg_paused.as_ref().is_some_and(|p| p.step == Step::Flush)
            {
                return; // a paused flush is what holds writers back: keep it
            }
            let interval = db.options.background_retry_interval;
            // Zero, or too long to represent: only `Db::resume` retries.
            let retry_at = if interval > Duration::ZERO {
                Instant::now().checked_add(interval)
            } else {
                None
            };
            // A disk that stays bad would otherwise add a line to `LOG` at every retry.
            st.bg_pause_streak += 1;
            if st.bg_pause_streak.is_power_of_two() {
                info_log(
                    db.env.as_ref(),
                    &db.dir,
                    &format!(
                        "background {step:?} paused ({} in a row), retry in {interval:?}: {e}",
                        st.bg_pause_streak
                    ),
                );
            }
            st.bg_paused = Some(Paused {
                error: e,
                step,
                retry_at,
            });
        }
    }
}

/// The pause a write that waits for room would wait on forever (D5): with a memtable
/// waiting for its flush, only a paused flush (a paused compaction lets flushes run);
/// otherwise (level 0 at its stop trigger) any pause.
pub(super) fn pause_blocking_writes(st: &State) -> Option<&Paused> {
    st.bg_paused
        .as_ref()
        .filter(|p| st.imm.is_empty() || p.step == Step::Flush)
}

/// The final error, or else the error of the paused step, if any.
pub(super) fn background_failure(st: &State) -> Option<Error> {
    st.bg_error
        .clone()
        .or_else(|| st.bg_paused.as_ref().map(|p| p.error.clone()))
}
