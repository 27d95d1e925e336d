//! Where each record lives in the one database (bytewise key order):
//!
//! ```text
//! l/ <index: u64 big-endian>   a log entry (JSON)
//! m/vote                       the vote (JSON)
//! m/committed                  the last committed log id (JSON)
//! m/purged                     the last purged log id (JSON)
//! s/ <key>                     a state-machine value (the value's bytes)
//! a/applied                    the last applied log id (JSON)
//! a/membership                 the last applied membership (JSON)
//! a/snapshot                   the current snapshot: its metadata and data (JSON)
//! ```
//!
//! Big-endian indexes keep the log in index order, so a range of indexes is a range of
//! keys, and the log's last entry is the last key under `l/`.

/// The first key after every log entry.
pub const LOG_END: &[u8] = b"l0";
/// The vote.
pub const VOTE: &[u8] = b"m/vote";
/// The last committed log id.
pub const COMMITTED: &[u8] = b"m/committed";
/// The last purged log id.
pub const PURGED: &[u8] = b"m/purged";
/// The prefix of state-machine data.
pub const DATA: &[u8] = b"s/";
/// The first key after every state-machine value.
pub const DATA_END: &[u8] = b"s0";
/// The last applied log id.
pub const APPLIED: &[u8] = b"a/applied";
/// The last applied membership.
pub const MEMBERSHIP: &[u8] = b"a/membership";
/// The current snapshot.
pub const SNAPSHOT: &[u8] = b"a/snapshot";

/// The key of log entry `index`.
pub fn log(index: u64) -> [u8; 10] {
    let mut k = [0u8; 10];
    k[..2].copy_from_slice(b"l/");
    k[2..].copy_from_slice(&index.to_be_bytes());
    k
}

/// The index a log key names; `None` if it is not a log key.
pub fn log_index(key: &[u8]) -> Option<u64> {
    let rest = key.strip_prefix(b"l/")?;
    Some(u64::from_be_bytes(rest.try_into().ok()?))
}

/// The key of state-machine key `key`.
pub fn data(key: &str) -> Vec<u8> {
    [DATA, key.as_bytes()].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keys_sort_by_index_and_round_trip() {
        let indexes = [0u64, 1, 255, 256, 1 << 40, u64::MAX];
        for w in indexes.windows(2) {
            assert!(log(w[0]) < log(w[1]));
        }
        for i in indexes {
            assert_eq!(log_index(&log(i)), Some(i));
            assert!(log(i).as_slice() < LOG_END);
        }
        assert_eq!(log_index(b"l/short"), None);
        assert_eq!(log_index(b"s/00000000"), None);
        assert!(data("zzz").as_slice() < DATA_END);
    }
}
