//! [`KeyBuf`]: the key a block cursor rebuilds entry by entry (the previous key's first
//! `shared` bytes, then the entry's own), held inline up to [`INLINE`] bytes.
//!
//! A cursor made for one point lookup (two a lookup: the index block's and the data
//! block's) would otherwise allocate its key buffer on its first entry and free it at the
//! end: two `malloc`/`free` pairs and a buffer growth each, about 430 instructions of a
//! random read's 6,400 (`callgrind`, `docs/results/2026-11-27-lean-lookup/`). A key longer
//! than [`INLINE`] moves to the heap and later keys built on it stay there; a cleared key
//! starts inline again (the heap's allocation is kept for the next long one).
//!
//! Invariant: the key is `inline[..len]` while `heap` is empty, else all of `heap`, and
//! `len` is 0 while the key is on the heap (so a heap key cut to nothing is the empty
//! inline key).

/// Bytes of key held without an allocation: internal keys of user keys up to 56 bytes.
pub const INLINE: usize = 64;

#[derive(Clone)]
pub struct KeyBuf {
    len: usize,
    inline: [u8; INLINE],
    heap: Vec<u8>,
}

impl std::fmt::Debug for KeyBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("KeyBuf").field(&self.as_slice()).finish()
    }
}

impl Default for KeyBuf {
    fn default() -> Self {
        KeyBuf {
            len: 0,
            inline: [0; INLINE],
            heap: Vec::new(),
        }
    }
}

impl KeyBuf {
    /// The key.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        if self.heap.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        if self.heap.is_empty() {
            self.len
        } else {
            self.heap.len()
        }
    }

    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.heap.clear();
    }

    /// Keeps the first `shared` bytes (at most the key's length) and appends `rest`: the
    /// key of a block entry from the key before it.
    #[inline]
    pub fn rebuild(&mut self, shared: usize, rest: &[u8]) {
        let shared = shared.min(self.len());
        let end = shared + rest.len();
        if self.heap.is_empty() {
            if let Some(tail) = self.inline.get_mut(shared..end) {
                tail.copy_from_slice(rest);
                self.len = end;
                return;
            }
            self.heap.extend_from_slice(&self.inline[..shared]);
            self.len = 0;
        } else {
            self.heap.truncate(shared);
        }
        self.heap.extend_from_slice(rest);
    }

    /// Replaces the key with `key`.
    #[inline]
    pub fn set(&mut self, key: &[u8]) {
        self.clear();
        self.rebuild(0, key);
    }
}

impl std::ops::Deref for KeyBuf {
    type Target = [u8];
    #[inline]
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Against a `Vec`: any sequence of rebuilds, across the inline size and back.
        #[test]
        fn rebuilds_like_a_vec(steps in proptest::collection::vec(
            (0usize..100, proptest::collection::vec(any::<u8>(), 0..90)), 1..40)
        ) {
            let mut buf = KeyBuf::default();
            let mut model: Vec<u8> = Vec::new();
            for (shared, rest) in steps {
                buf.rebuild(shared, &rest);
                model.truncate(shared);
                model.extend_from_slice(&rest);
                prop_assert_eq!(buf.as_slice(), &model[..]);
                prop_assert_eq!(buf.len(), model.len());
            }
            buf.clear();
            prop_assert!(buf.as_slice().is_empty());
            buf.set(b"key");
            prop_assert_eq!(buf.as_slice(), b"key");
        }
    }

    #[test]
    fn a_long_key_then_a_short_one() {
        let mut buf = KeyBuf::default();
        let long = vec![7u8; INLINE + 1];
        buf.rebuild(0, &long);
        assert_eq!(buf.as_slice(), &long[..]);
        buf.rebuild(2, b"ab");
        assert_eq!(buf.as_slice(), &[7, 7, b'a', b'b']);
        buf.rebuild(0, b"");
        assert_eq!(buf.as_slice(), b"");
        buf.rebuild(0, b"xy");
        assert_eq!(buf.as_slice(), b"xy");
        // A key that spills from inline bytes, then is cut to nothing: empty, not the
        // inline bytes it left behind.
        buf.rebuild(2, &long);
        assert_eq!(buf.len(), INLINE + 3);
        buf.rebuild(0, b"");
        assert_eq!(buf.as_slice(), b"");
    }
}
