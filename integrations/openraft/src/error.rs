//! Turning Strata's errors and undecodable records into openraft's `StorageError`.

use openraft::{ErrorSubject, ErrorVerb, StorageError, StorageIOError};

/// Why a record read back is not usable: it did not decode, or it is not where it
/// should be.
#[derive(Debug)]
pub struct BadRecord(pub String);

impl std::fmt::Display for BadRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadRecord {}

/// `value` (the record under `key`) decoded from JSON, or why not.
pub fn decode<T: serde::de::DeserializeOwned>(key: &[u8], value: &[u8]) -> Result<T, BadRecord> {
    serde_json::from_slice(value).map_err(|e| {
        BadRecord(format!(
            "record {} does not decode: {e}",
            String::from_utf8_lossy(key).escape_debug()
        ))
    })
}

/// JSON of `value` (serializing the crate's own types cannot fail; if it ever does, the
/// write fails with the reason).
pub fn encode<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, BadRecord> {
    serde_json::to_vec(value).map_err(|e| BadRecord(format!("cannot encode a record: {e}")))
}

/// A `StorageError` about `subject`, raised while doing `verb`.
pub fn storage<E: std::error::Error + 'static>(
    subject: ErrorSubject<u64>,
    verb: ErrorVerb,
    e: &E,
) -> StorageError<u64> {
    StorageIOError::new(subject, verb, e).into()
}

/// Reading the log failed.
pub fn read_logs<E: std::error::Error + 'static>(e: &E) -> StorageError<u64> {
    StorageIOError::read_logs(e).into()
}

/// Writing the log failed.
pub fn write_logs<E: std::error::Error + 'static>(e: &E) -> StorageError<u64> {
    StorageIOError::write_logs(e).into()
}

/// Reading the state machine failed.
pub fn read_sm<E: std::error::Error + 'static>(e: &E) -> StorageError<u64> {
    StorageIOError::read_state_machine(e).into()
}

/// Writing the state machine failed.
pub fn write_sm<E: std::error::Error + 'static>(e: &E) -> StorageError<u64> {
    StorageIOError::write_state_machine(e).into()
}
