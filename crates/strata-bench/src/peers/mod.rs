//! Peer engines behind the engine seam, one file each, each behind a cargo feature.

#[cfg(feature = "fjall")]
pub mod fjall;
#[cfg(feature = "leveldb")]
pub mod leveldb;
#[cfg(feature = "sqlite")]
pub mod sqlite;
