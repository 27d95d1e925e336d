//! Iterators, ranges and snapshots are `Send`: a scan can be started on one thread (or
//! async task) and carried on in another, as an async service holding it across an
//! `.await` needs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use strata::{Db, DbIterator, Options, Range, Snapshot};

fn assert_send<T: Send + 'static>() {}

#[test]
fn iterators_ranges_and_snapshots_are_send() {
    assert_send::<DbIterator>();
    assert_send::<Range>();
    assert_send::<Snapshot>();
    assert_send::<Db>();
}

#[test]
fn a_scan_moves_between_threads_midway() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(
        Db::open(
            dir.path(),
            Options {
                create_if_missing: true,
                write_buffer_size: 64 << 10,
                ..Options::default()
            },
        )
        .unwrap(),
    );
    for i in 0..5000 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    // Half in tables, half in the memtable: the scan crosses both.
    db.flush().unwrap();
    for i in 5000..10_000 {
        db.put(format!("k{i:05}"), format!("v{i}")).unwrap();
    }
    let mut range = db.range::<&[u8]>(..);
    let first: Vec<_> = range.by_ref().take(100).map(|kv| kv.unwrap()).collect();
    // Writes go on meanwhile; the scan keeps its view.
    db.put("k00050x", "late").unwrap();
    let rest = std::thread::spawn(move || range.map(|kv| kv.unwrap().0).collect::<Vec<_>>())
        .join()
        .unwrap();
    assert_eq!(first.len() + rest.len(), 10_000);
    assert_eq!(rest.first().unwrap(), b"k00100");

    let mut it = db.raw_iterator();
    it.seek(b"k09990");
    let keys = std::thread::spawn(move || {
        let mut keys = Vec::new();
        while it.valid() {
            keys.push(it.key().to_vec());
            it.next();
        }
        it.status().unwrap();
        keys
    })
    .join()
    .unwrap();
    assert_eq!(keys.len(), 10);
}
