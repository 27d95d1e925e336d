//! Peer engines behind the engine seam, one file each, each behind a cargo feature.

#[cfg(any(feature = "fjall", feature = "fjall-ssi"))]
pub mod fjall;
#[cfg(feature = "kyoto")]
pub mod kyoto;
#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "lmdb")]
pub mod lmdb;
pub mod null;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "wiredtiger")]
pub mod wiredtiger;

use crate::engine::EngineKind;

/// Every engine this build can run.
pub fn all() -> Vec<&'static dyn EngineKind> {
    let mut v: Vec<&'static dyn EngineKind> = vec![
        &crate::engine::strata_engine::StrataKind { blob: false },
        &crate::engine::strata_engine::StrataKind { blob: true },
    ];
    #[cfg(feature = "leveldb")]
    v.push(&leveldb::LevelDbKind);
    #[cfg(any(feature = "fjall", feature = "fjall-ssi"))]
    v.push(&fjall::FjallKind {
        transactional: false,
    });
    #[cfg(feature = "rocksdb")]
    {
        v.push(&rocksdb::RocksDbKind {
            blob: false,
            transactions: rocksdb::Transactions::None,
        });
        v.push(&rocksdb::RocksDbKind {
            blob: true,
            transactions: rocksdb::Transactions::None,
        });
    }
    #[cfg(feature = "lmdb")]
    v.push(&lmdb::LmdbKind);
    #[cfg(feature = "kyoto")]
    v.push(&kyoto::KyotoKind);
    #[cfg(feature = "wiredtiger")]
    {
        v.push(&wiredtiger::WiredTigerKind { lsm: true });
        v.push(&wiredtiger::WiredTigerKind { lsm: false });
    }
    #[cfg(feature = "sqlite")]
    {
        v.push(&sqlite::SqliteKind { wal: false });
        v.push(&sqlite::SqliteKind { wal: true });
    }
    // Last: the harness's own cost per operation, the floor under every other column.
    v.push(&null::NullKind);
    v
}

/// Engines chosen by name only, not part of `--engines=all`: columns for the transaction
/// workloads (RocksDB's optimistic and pessimistic transaction databases, fjall's
/// transactional keyspace: `fjall-tx`, or `fjall-ssi` in a build with that feature).
pub fn by_name_only() -> Vec<&'static dyn EngineKind> {
    vec![
        #[cfg(any(feature = "fjall", feature = "fjall-ssi"))]
        &fjall::FjallKind {
            transactional: true,
        },
        #[cfg(feature = "rocksdb")]
        &rocksdb::RocksDbKind {
            blob: false,
            transactions: rocksdb::Transactions::Optimistic,
        },
        // Needs a release RocksDB (`STRATA_BENCH_ROCKSDB_DIR`): Debian's has no base
        // database for a pessimistic one.
        #[cfg(all(feature = "rocksdb", rocksdb_base_db))]
        &rocksdb::RocksDbKind {
            blob: false,
            transactions: rocksdb::Transactions::Pessimistic,
        },
    ]
}

/// The engine called `name`, if this build has it.
pub fn find(name: &str) -> Option<&'static dyn EngineKind> {
    all()
        .into_iter()
        .chain(by_name_only())
        .find(|k| k.name() == name)
}
