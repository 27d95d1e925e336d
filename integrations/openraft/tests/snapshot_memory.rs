//! A snapshot is never whole in memory (RS3): a state machine of `STRATA_SNAPSHOT_MB`
//! megabytes (256 unless given; 1024 for the soak run, figures in `docs/reliability.md`)
//! is built into a snapshot, streamed in openraft's 3 MiB chunks into another state
//! machine and installed there, and the process's peak resident memory during all of it
//! may pass what it was before by less than 100 MB. Both sides are in this one process,
//! so the bound holds for the two together. Alone in its test binary: no other test's
//! memory is counted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::SeekFrom;

use openraft::storage::{RaftSnapshotBuilder, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId};
use strata_openraft::{Proposal, Request, StrataStateMachine, TypeConfig, Write};
use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

/// openraft's default `snapshot_max_chunk_size`.
const CHUNK: usize = 3 << 20;
const VALUE: usize = 16 << 10;
/// Values an entry carries: 1 MiB an entry.
const PER_ENTRY: usize = 64;
const LIMIT_MB: u64 = 100;

/// A field of `/proc/self/status`, in kB.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

/// A value no two keys share and compression cannot shrink much (hex of a xorshift).
fn value(seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut s = String::with_capacity(VALUE);
    while s.len() < VALUE {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(&format!("{x:016x}"));
    }
    s.truncate(VALUE);
    s
}

fn entry(index: u64) -> Entry<TypeConfig> {
    let writes = (0..PER_ENTRY as u64)
        .map(|i| {
            let n = (index - 1) * PER_ENTRY as u64 + i;
            Write {
                session: None,
                request: Request::Set {
                    key: format!("key{n:09}"),
                    value: value(n),
                },
            }
        })
        .collect();
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 0), index),
        payload: EntryPayload::Normal(Proposal { writes }),
    }
}

#[tokio::test]
async fn a_large_state_moves_with_bounded_extra_memory() {
    let mb: u64 = std::env::var("STRATA_SNAPSHOT_MB")
        .ok()
        .map(|v| {
            v.parse()
                .expect("STRATA_SNAPSHOT_MB is a number of megabytes")
        })
        .unwrap_or(256);
    let root = tempfile::tempdir().unwrap();
    let options = strata::Options::default;
    let mut a = StrataStateMachine::open(root.path().join("a"), options()).unwrap();
    let mut b = StrataStateMachine::open(root.path().join("b"), options()).unwrap();
    for index in 1..=mb {
        a.apply([entry(index)]).await.unwrap();
    }
    b.apply([entry(1)]).await.unwrap();

    // From here on, the peak is measured from what the process holds now.
    std::fs::write("/proc/self/clear_refs", "5").expect("resetting the peak RSS (Linux 4.0+)");
    let before = status_kb("VmRSS:");
    let mut snap = a
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    let end = snap.snapshot.seek(SeekFrom::End(0)).await.unwrap();
    let mut incoming = b.begin_receiving_snapshot().await.unwrap();
    let mut offset = 0;
    while offset < end {
        // As openraft's sender and receiver do: seek, read a chunk, write it.
        snap.snapshot.seek(SeekFrom::Start(offset)).await.unwrap();
        let mut buf = Vec::with_capacity(CHUNK);
        while buf.len() < CHUNK {
            if snap.snapshot.read_buf(&mut buf).await.unwrap() == 0 {
                break;
            }
        }
        incoming.seek(SeekFrom::Start(offset)).await.unwrap();
        incoming.write_all(&buf).await.unwrap();
        offset += buf.len() as u64;
    }
    b.install_snapshot(&snap.meta, incoming).await.unwrap();
    let peak = status_kb("VmHWM:");
    let extra_mb = peak.saturating_sub(before) / 1024;
    eprintln!(
        "state {mb} MB, archive {} MB: RSS before {} MB, peak {} MB, extra {extra_mb} MB",
        end >> 20,
        before / 1024,
        peak / 1024
    );
    assert!(
        end >= mb << 20,
        "the archive ({end} bytes) holds less than the state"
    );

    // The state arrived whole.
    assert_eq!(b.applied_state().await.unwrap().0, snap.meta.last_log_id);
    let last = mb * PER_ENTRY as u64 - 1;
    for n in [0, last / 2, last] {
        assert_eq!(
            b.get(&format!("key{n:09}")).unwrap(),
            Some(value(n)),
            "key {n}"
        );
    }
    let db = b.db();
    let count = db
        .range(b"s/".to_vec()..b"s0".to_vec())
        .map(Result::unwrap)
        .count() as u64;
    assert_eq!(count, mb * PER_ENTRY as u64);
    assert!(
        extra_mb < LIMIT_MB,
        "moving {mb} MB of state took {extra_mb} MB more than before (limit {LIMIT_MB} MB)"
    );
}
