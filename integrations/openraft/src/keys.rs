//! Where each record lives (bytewise key order): the log's database holds `l/` and
//! `m/`, the state machine's database the rest.
//!
//! ```text
//! l/ <index: u64 big-endian>   a log entry (JSON)
//! m/vote                       the vote (JSON)
//! m/committed                  the last committed log id (JSON)
//! m/purged                     the last purged log id (JSON)
//! s/ <key>                     a state-machine value (the value's bytes)
//! a/applied                    the last applied log id (JSON)
//! a/membership                 the last applied membership (JSON)
//! a/sessions                   how many sessions `c/` holds (JSON)
//! c/ <client: u64 big-endian>  a session: its last applied write and response (JSON)
//! e/ <index: u64 big-endian> <client: u64 big-endian>
//!                              empty: the session's last write was entry `index`
//!                              (sessions in the order they are forgotten)
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

/// How many sessions the state machine holds.
pub const SESSION_COUNT: &[u8] = b"a/sessions";
/// The prefix of sessions.
pub const SESSION: &[u8] = b"c/";
/// The first key after every session.
pub const SESSION_END: &[u8] = b"c0";
/// The prefix of the sessions' age index.
pub const SESSION_AGE: &[u8] = b"e/";
/// The first key after the age index.
pub const SESSION_AGE_END: &[u8] = b"e0";

/// The key of `client`'s session.
pub fn session(client: u64) -> [u8; 10] {
    let mut k = [0u8; 10];
    k[..2].copy_from_slice(SESSION);
    k[2..].copy_from_slice(&client.to_be_bytes());
    k
}

/// The client a session key names; `None` if it is not one.
pub fn session_client(key: &[u8]) -> Option<u64> {
    let rest = key.strip_prefix(SESSION)?;
    Some(u64::from_be_bytes(rest.try_into().ok()?))
}

/// The age-index key of `client`'s session whose last write was entry `index`.
pub fn session_age(index: u64, client: u64) -> [u8; 18] {
    let mut k = [0u8; 18];
    k[..2].copy_from_slice(SESSION_AGE);
    k[2..10].copy_from_slice(&index.to_be_bytes());
    k[10..].copy_from_slice(&client.to_be_bytes());
    k
}

/// The client an age-index key names; `None` if it is not one.
pub fn session_age_client(key: &[u8]) -> Option<u64> {
    let rest = key.strip_prefix(SESSION_AGE)?;
    let client = rest.get(8..)?;
    Some(u64::from_be_bytes(client.try_into().ok()?))
}

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
        assert_eq!(session_client(&session(7)), Some(7));
        assert!(session(u64::MAX).as_slice() < SESSION_END);
        assert!(session_age(1, u64::MAX) < session_age(2, 0));
        assert_eq!(session_age_client(&session_age(9, 7)), Some(7));
        assert!(session_age(u64::MAX, u64::MAX).as_slice() < SESSION_AGE_END);
        assert_eq!(session_age_client(b"e/short"), None);
    }
}
