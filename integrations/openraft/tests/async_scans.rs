//! Strata's iterators, ranges and snapshots are `Send`: an async task (openraft's, or any
//! tokio task) can hold a scan or a snapshot across an `.await`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_and_a_snapshot_live_across_awaits_in_spawned_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(
        strata::Db::open(
            dir.path(),
            strata::Options {
                create_if_missing: true,
                ..Default::default()
            },
        )
        .unwrap(),
    );
    for i in 0..1000 {
        db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    let snapshot = db.snapshot();
    let scanner = {
        let db = Arc::clone(&db);
        tokio::spawn(async move {
            let read = strata::ReadOptions {
                snapshot: Some(snapshot),
                ..Default::default()
            };
            let range = db.range_opt::<&[u8]>(.., false, &read);
            let mut seen = 0;
            for entry in range {
                entry.unwrap();
                seen += 1;
                // The range (and the snapshot it reads) cross an await: another worker
                // thread may resume the task.
                tokio::task::yield_now().await;
            }
            seen
        })
    };
    let writer = {
        let db = Arc::clone(&db);
        tokio::spawn(async move {
            for i in 0..1000 {
                db.delete(format!("k{i:04}")).unwrap();
                tokio::task::yield_now().await;
            }
        })
    };
    writer.await.unwrap();
    // The scan reads its snapshot: every key, although all were deleted meanwhile.
    assert_eq!(scanner.await.unwrap(), 1000);
    assert_eq!(db.range::<&[u8]>(..).count(), 0);
}
