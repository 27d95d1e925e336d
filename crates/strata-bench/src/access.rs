//! How the harness reads the values it gets: the same rule for every engine, whatever the
//! engine hands over (a view into a mapped file or a cached block, or its own copy).
//!
//! - `Copy` is db_bench's rule: a read copies the value into a reused buffer (its
//!   `std::string`), a scan counts the key's and value's lengths and never reads the value.
//! - `Touch` (`--touch_values`, the value-sizes suite) reads every value in place, reads
//!   and scans alike: one 8-byte load from each 64 bytes (every cache line), folded into a
//!   sum the optimiser cannot drop. An engine that hands over a pointer it never made
//!   readable (an unmapped page, a value not yet fetched) pays for it here, as a program
//!   that used the value would.

/// The rule for one benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueAccess {
    /// db_bench's: reads copy, scans count lengths.
    Copy,
    /// Every value's bytes read in place.
    Touch,
}

impl ValueAccess {
    pub fn of(touch_values: bool) -> Self {
        if touch_values {
            ValueAccess::Touch
        } else {
            ValueAccess::Copy
        }
    }

    /// A read's value: copied into `out` or touched.
    #[inline]
    pub fn read(self, value: &[u8], out: &mut Vec<u8>) {
        match self {
            ValueAccess::Copy => {
                out.clear();
                out.extend_from_slice(value);
                std::hint::black_box(out.as_ptr());
            }
            ValueAccess::Touch => {
                std::hint::black_box(touch(value));
            }
        }
    }

    /// A scanned value: its length only, or touched.
    #[inline]
    pub fn scanned(self, value: &[u8]) {
        match self {
            ValueAccess::Copy => {
                std::hint::black_box(value.as_ptr());
            }
            ValueAccess::Touch => {
                std::hint::black_box(touch(value));
            }
        }
    }
}

/// One 8-byte load from the start of each 64 bytes of `value` (fewer where the last piece is
/// shorter), folded into a sum with the length.
#[inline]
pub fn touch(value: &[u8]) -> u64 {
    let mut sum = value.len() as u64;
    let mut lines = value.chunks_exact(64);
    for line in &mut lines {
        // A fixed-size load (a variable-length copy here would be a call to memmove).
        let mut word = [0u8; 8];
        word.copy_from_slice(&line[..8]);
        sum = sum.rotate_left(5) ^ u64::from_le_bytes(word);
    }
    let tail = lines.remainder();
    if !tail.is_empty() {
        let mut word = [0u8; 8];
        let n = tail.len().min(8);
        word[..n].copy_from_slice(&tail[..n]);
        sum = sum.rotate_left(5) ^ u64::from_le_bytes(word);
    }
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_reads_one_word_from_every_64_bytes() {
        let mut v = vec![0u8; 200];
        let base = touch(&v);
        // A byte in each of the four lines' first words changes the sum ...
        for at in [0usize, 64, 128, 192] {
            v[at] = 1;
            assert_ne!(touch(&v), base, "a byte at {at}");
            v[at] = 0;
        }
        // ... one past a line's first word does not: it is not read.
        v[72] = 1;
        assert_eq!(touch(&v), base);
    }

    #[test]
    fn copy_replaces_the_buffer_and_touch_leaves_it() {
        let mut out = b"old".to_vec();
        ValueAccess::Copy.read(b"value", &mut out);
        assert_eq!(out, b"value");
        ValueAccess::Touch.read(b"other", &mut out);
        assert_eq!(out, b"value");
    }
}
