//! [`PinnedSlice`]: a value `Db::get_pinned` returns without copying it: a view into the
//! table block or the blob file's map that holds it, which it keeps alive.

/// A value read by [`Db::get_pinned`](crate::Db::get_pinned): a view into the table block
/// or the mapped blob file that holds it (which it keeps alive), or a copy when the value
/// came from the memtable, a blob file read without a map or a compressed blob value.
/// Dereferences to `[u8]`.
#[derive(Debug, Clone)]
pub struct PinnedSlice(Pinned);

#[derive(Debug, Clone)]
enum Pinned {
    Owned(Vec<u8>),
    Block(crate::sstable::BlockSlice),
    Blob(crate::blob::BlobView),
}

impl PinnedSlice {
    pub(super) fn owned(v: Vec<u8>) -> Self {
        PinnedSlice(Pinned::Owned(v))
    }

    pub(super) fn block(b: crate::sstable::BlockSlice) -> Self {
        PinnedSlice(Pinned::Block(b))
    }

    pub(super) fn blob(b: crate::blob::BlobView) -> Self {
        PinnedSlice(Pinned::Blob(b))
    }

    /// The value as an owned vector: moved out when the view already owns a copy,
    /// copied out of its block or map otherwise.
    pub fn into_vec(self) -> Vec<u8> {
        match self.0 {
            Pinned::Owned(v) => v,
            Pinned::Block(b) => b.to_vec(),
            Pinned::Blob(b) => b.to_vec(),
        }
    }

    /// True when the view owns its bytes (no block is pinned): [`PinnedSlice::into_vec`]
    /// then costs nothing.
    pub fn is_owned(&self) -> bool {
        matches!(self.0, Pinned::Owned(_))
    }
}

impl std::ops::Deref for PinnedSlice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Pinned::Owned(v) => v,
            Pinned::Block(b) => b,
            Pinned::Blob(b) => b,
        }
    }
}

impl AsRef<[u8]> for PinnedSlice {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl PartialEq<[u8]> for PinnedSlice {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}
