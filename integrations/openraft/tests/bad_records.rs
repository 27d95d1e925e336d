//! RS4: a damaged record read back (a log entry, the vote, the applied id, a value, a
//! snapshot) is a `StorageError` handed to openraft, which stops the node: never a wrong
//! value, never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use openraft::storage::{RaftLogReader, RaftLogStorage, RaftSnapshotBuilder, RaftStateMachine};
use openraft::{CommittedLeaderId, Entry, EntryPayload, LogId, SnapshotMeta};
use strata_openraft::{
    Proposal, Request, StrataLogStore, StrataStateMachine, TypeConfig, Write, keys,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn entry(index: u64, key: &str) -> Entry<TypeConfig> {
    Entry {
        log_id: LogId::new(CommittedLeaderId::new(1, 0), index),
        payload: EntryPayload::Normal(Proposal {
            writes: vec![Write {
                session: None,
                request: Request::Set {
                    key: key.into(),
                    value: "v".into(),
                },
            }],
        }),
    }
}

fn put_entry(db: &strata::Db, under: u64, e: &Entry<TypeConfig>) {
    db.put(keys::log(under), serde_json::to_vec(e).unwrap())
        .unwrap();
}

#[tokio::test]
async fn a_damaged_log_entry_is_an_error_not_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open_db(dir.path());
    let mut log = StrataLogStore::<TypeConfig>::new(Arc::clone(&db));
    for i in 1..=5 {
        put_entry(&db, i, &entry(i, "k"));
    }
    assert_eq!(log.try_get_log_entries(1..=5).await.unwrap().len(), 5);

    // Bytes that are not an entry.
    db.put(keys::log(3), b"{\"log_id\": garbage").unwrap();
    let e = log.try_get_log_entries(1..=5).await.unwrap_err();
    assert!(e.to_string().contains("does not decode"), "{e}");
    // Entries before it still read.
    assert_eq!(log.try_get_log_entries(1..3).await.unwrap().len(), 2);

    // A well-formed entry under the wrong index.
    put_entry(&db, 3, &entry(4, "k"));
    let e = log.try_get_log_entries(3..4).await.unwrap_err();
    assert!(e.to_string().contains("says it is entry 4"), "{e}");

    // The last entry damaged: the log state cannot be read either.
    db.put(keys::log(5), b"\xff\xfe").unwrap();
    assert!(log.get_log_state().await.is_err());
}

#[tokio::test]
async fn a_damaged_vote_or_purge_record_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open_db(dir.path());
    let mut log = StrataLogStore::<TypeConfig>::new(Arc::clone(&db));
    assert_eq!(log.read_vote().await.unwrap(), None);
    db.put(keys::VOTE, b"not json").unwrap();
    assert!(log.read_vote().await.is_err());
    db.put(keys::PURGED, b"[1,2").unwrap();
    assert!(log.get_log_state().await.is_err());
}

#[tokio::test]
async fn a_damaged_state_machine_record_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = StrataStateMachine::open(dir.path(), strata::Options::default()).unwrap();
    let db = sm.db();
    sm.apply([entry(1, "a"), entry(2, "b")]).await.unwrap();
    assert_eq!(sm.get("a").unwrap().as_deref(), Some("v"));

    // A value that is not UTF-8: reading it fails.
    db.put(keys::data("a"), b"\xff").unwrap();
    assert!(sm.get("a").is_err());
    // Applying an entry that must read the previous value fails too.
    assert!(sm.apply([entry(3, "a")]).await.is_err());

    db.put(keys::APPLIED, b"{}").unwrap();
    assert!(sm.applied_state().await.is_err());
}

#[tokio::test]
async fn damaged_snapshot_metadata_stops_the_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = StrataStateMachine::open(dir.path(), strata::Options::default()).unwrap();
    sm.apply([entry(1, "a")]).await.unwrap();
    sm.get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    drop(sm);
    let snapshot = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("snapshot-")
        })
        .unwrap();
    std::fs::write(snapshot.join("snapshot.json"), b"{\"last_log_id\": 3").unwrap();
    let e = StrataStateMachine::open(dir.path(), strata::Options::default()).unwrap_err();
    assert!(e.to_string().contains("snapshot.json"), "{e}");
}

/// A snapshot of one entry, as the bytes a node would send.
async fn snapshot_bytes() -> (SnapshotMeta<u64, openraft::BasicNode>, Vec<u8>) {
    let dir = tempfile::tempdir().unwrap();
    let mut sm = StrataStateMachine::open(dir.path(), strata::Options::default()).unwrap();
    for i in 1..=50 {
        sm.apply([entry(i, &format!("x{i}"))]).await.unwrap();
    }
    let mut snap = sm
        .get_snapshot_builder()
        .await
        .build_snapshot()
        .await
        .unwrap();
    let mut bytes = Vec::new();
    snap.snapshot.read_to_end(&mut bytes).await.unwrap();
    (snap.meta, bytes)
}

#[tokio::test]
async fn a_damaged_snapshot_is_refused_and_changes_nothing() {
    let (meta, good) = snapshot_bytes().await;
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 1;
    let cases = [
        ("not an archive", b"{\"kv\": [[\"x\"".to_vec()),
        ("cut short", good[..good.len() - 3].to_vec()),
        ("a byte flipped", flipped),
    ];
    for (what, bytes) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut sm = StrataStateMachine::open(dir.path(), strata::Options::default()).unwrap();
        sm.apply([entry(1, "a")]).await.unwrap();
        let mut incoming = sm.begin_receiving_snapshot().await.unwrap();
        incoming.write_all(&bytes).await.unwrap();
        assert!(
            sm.install_snapshot(&meta, incoming).await.is_err(),
            "{what}"
        );
        assert_eq!(sm.get("a").unwrap().as_deref(), Some("v"), "{what}");
        assert_eq!(sm.get("x1").unwrap(), None, "{what}");
        assert_eq!(
            sm.applied_state().await.unwrap().0.unwrap().index,
            1,
            "{what}"
        );
        assert!(sm.get_current_snapshot().await.unwrap().is_none(), "{what}");
        // Nothing of it is left behind: the live database, STATE.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "{what}");
    }
    // The same bytes whole install.
    let dir = tempfile::tempdir().unwrap();
    let mut sm = StrataStateMachine::open(dir.path(), strata::Options::default()).unwrap();
    let mut incoming = sm.begin_receiving_snapshot().await.unwrap();
    incoming.write_all(&good).await.unwrap();
    sm.install_snapshot(&meta, incoming).await.unwrap();
    assert_eq!(sm.get("x50").unwrap().as_deref(), Some("v"));
}

#[test]
fn a_directory_of_the_one_database_layout_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Before the state machine had a database of its own, the node's directory was one.
    drop(common::open_db(dir.path()));
    let e = strata_openraft::open(dir.path()).unwrap_err();
    assert!(
        e.to_string()
            .contains("before the state machine had a database"),
        "{e}"
    );
}

/// An archive in the right format, checksums right, of the files `files`.
fn archive_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut a = b"STRSNAP1".to_vec();
    for (name, content) in files {
        let mut header = (name.len() as u16).to_le_bytes().to_vec();
        header.extend_from_slice(name.as_bytes());
        header.extend_from_slice(&(content.len() as u64).to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&header), content);
        a.extend_from_slice(&header);
        a.extend_from_slice(content);
        a.extend_from_slice(&crc.to_le_bytes());
    }
    a.extend_from_slice(&0u16.to_le_bytes());
    a.extend_from_slice(&(files.len() as u64).to_le_bytes());
    a
}

#[tokio::test]
async fn a_whole_archive_that_is_no_database_is_refused_and_the_node_restarts() {
    let (meta, _) = snapshot_bytes().await;
    let dir = tempfile::tempdir().unwrap();
    let mut sm = StrataStateMachine::open(dir.path(), strata::Options::default()).unwrap();
    sm.apply([entry(1, "a")]).await.unwrap();
    let mut incoming = sm.begin_receiving_snapshot().await.unwrap();
    let bytes = archive_of(&[("CURRENT", b"MANIFEST-000009\n")]);
    incoming.write_all(&bytes).await.unwrap();
    assert!(sm.install_snapshot(&meta, incoming).await.is_err());
    drop(sm);
    // Nothing of it is kept: the next open neither fails on it nor restores from it.
    let mut sm = StrataStateMachine::open(dir.path(), strata::Options::default()).unwrap();
    assert_eq!(sm.get("a").unwrap().as_deref(), Some("v"));
    assert_eq!(sm.applied_state().await.unwrap().0.unwrap().index, 1);
    assert!(sm.get_current_snapshot().await.unwrap().is_none());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}
