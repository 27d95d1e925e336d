//! Early writeback: asks the kernel to start writing a file's dirty pages to the device
//! now, without waiting (`sync_file_range(SYNC_FILE_RANGE_WRITE)`), so that a later
//! `fdatasync` finds little left to do. A hint only: it changes nothing about what is
//! durable, and its failure is ignored (a write-back error is reported by the next
//! `fdatasync`, which `sync_file_range` without `WAIT_AFTER` does not consume).
//!
//! The one `unsafe` block is the system call; `rustix` does not wrap it.

#![allow(unsafe_code)]

use std::fs::File;
use std::os::fd::AsRawFd;

/// Starts writeback of every dirty page of `file`.
pub(super) fn start(file: &File) {
    // SAFETY: `sync_file_range` reads no memory of ours; the descriptor is owned by `file`,
    // open for the whole call. Offset 0 and length 0 mean "the whole file".
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
}
