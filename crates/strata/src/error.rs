//! The one error type of the engine.
//!
//! Every fallible function returns [`Result<T>`]. Corruption carries where it was found
//! (file and byte offset) and what was expected, so an operator can go and look. Low-level
//! decoders that do not know which file they are reading report an empty file name and an
//! offset relative to their input; callers add the location with [`Error::located`].

use std::fmt;

/// Shorthand for `Result<T, strata::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where corrupt bytes were found and what was wrong with them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corruption {
    /// The file, as a path or a name; empty when the decoder did not know it.
    pub file: String,
    /// Byte offset in that file (or in the decoder's input when `file` is empty).
    pub offset: u64,
    /// What was expected and what was found.
    pub what: String,
}

impl fmt::Display for Corruption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.is_empty() {
            write!(f, "at offset {}: {}", self.offset, self.what)
        } else {
            write!(
                f,
                "in {} at offset {}: {}",
                self.file, self.offset, self.what
            )
        }
    }
}

/// The two comparator names of [`Error::ComparatorMismatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComparatorNames {
    /// The comparator name in the manifest.
    pub database: String,
    /// The name of the comparator in the options.
    pub options: String,
}

/// Everything that can go wrong in Strata.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Stored bytes are not what the format allows.
    #[error("corruption {0}")]
    Corruption(Box<Corruption>),
    /// The operating system refused or failed an I/O call.
    #[error("I/O error: {context}: {source}")]
    Io {
        /// The call and the path it was made on.
        context: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The caller passed something the engine cannot accept.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A file or database that was asked for does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The operation is not supported by this build or this format version.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// A database exists where `error_if_exists` asked for none.
    #[error("database already exists: {0}")]
    AlreadyExists(String),
    /// Another opener, in this process or another, holds the database's lock.
    #[error("database is already in use: {0}")]
    Locked(String),
    /// The database was written in another key order than the options' comparator gives.
    #[error(
        "comparator mismatch: the database was written with {:?}, the options give {:?}",
        .0.database,
        .0.options
    )]
    ComparatorMismatch(Box<ComparatorNames>),
    /// A transaction did not commit: a key or range it read was written after its
    /// snapshot, or it stayed open so long that its reads can no longer be checked.
    /// Nothing of it was written; run it again (`Db::transact` does).
    #[error("{0}")]
    Conflict(String),
}

impl Error {
    /// A corruption error at `offset` of `file` (empty when unknown).
    pub fn corruption(file: impl Into<String>, offset: u64, what: impl Into<String>) -> Self {
        Error::Corruption(Box::new(Corruption {
            file: file.into(),
            offset,
            what: what.into(),
        }))
    }

    /// An I/O error with the call and path that failed.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Places a corruption found by a decoder that did not know its file: names the file
    /// and shifts the offset by where the decoder's input started in it. Corruptions that
    /// already name a file, and other errors, pass through unchanged.
    pub fn located(self, file: &str, base_offset: u64) -> Self {
        match self {
            Error::Corruption(mut c) if c.file.is_empty() => {
                c.file = file.to_string();
                c.offset = c.offset.saturating_add(base_offset);
                Error::Corruption(c)
            }
            other => other,
        }
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption(_))
    }

    /// True for [`Error::Conflict`]: a transaction to run again.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Conflict(_))
    }

    /// The corruption details, if this is a corruption.
    pub fn as_corruption(&self) -> Option<&Corruption> {
        match self {
            Error::Corruption(c) => Some(c),
            _ => None,
        }
    }
}

impl Clone for Error {
    /// Iterators keep their first error and hand out copies; an I/O error is copied as its
    /// kind and message (the OS error itself cannot be cloned).
    fn clone(&self) -> Self {
        match self {
            Error::Corruption(c) => Error::Corruption(c.clone()),
            Error::Io { context, source } => Error::Io {
                context: context.clone(),
                source: std::io::Error::new(source.kind(), source.to_string()),
            },
            Error::InvalidArgument(s) => Error::InvalidArgument(s.clone()),
            Error::NotFound(s) => Error::NotFound(s.clone()),
            Error::NotSupported(s) => Error::NotSupported(s.clone()),
            Error::AlreadyExists(s) => Error::AlreadyExists(s.clone()),
            Error::Locked(s) => Error::Locked(s.clone()),
            Error::ComparatorMismatch(names) => Error::ComparatorMismatch(names.clone()),
            Error::Conflict(s) => Error::Conflict(s.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn located_fills_file_and_shifts_offset() {
        let e = Error::corruption("", 7, "bad varint").located("000005.ldb", 100);
        let c = e.as_corruption().unwrap();
        assert_eq!(c.file, "000005.ldb");
        assert_eq!(c.offset, 107);
        assert_eq!(
            e.to_string(),
            "corruption in 000005.ldb at offset 107: bad varint"
        );
        // Already located: unchanged.
        let again = e.located("other", 5);
        assert_eq!(again.as_corruption().unwrap().offset, 107);
    }

    #[test]
    fn result_stays_small() {
        assert!(std::mem::size_of::<Result<()>>() <= 32);
    }
}
