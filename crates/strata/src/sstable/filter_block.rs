//! The filter block: one Bloom filter per 2 KiB window of data-block offsets.
//!
//! ```text
//! filter* | offset of filter i: fixed32 * n | offset of that array: fixed32 | base_lg: u8
//! ```
//!
//! Filter `i` covers the keys of every data block whose start offset `o` has
//! `o >> base_lg == i` (`base_lg` is 11). Windows where no block starts get an empty
//! filter, which matches nothing. The keys are user keys (tags stripped).

use crate::coding::{decode_fixed32, put_fixed32};
use crate::filter::Filter;

/// log2 of the window size: 2 KiB.
pub const FILTER_BASE_LG: u8 = 11;

/// Builds a table's filter block as data blocks are written.
#[derive(Debug)]
pub struct FilterBlockBuilder {
    policy: Filter,
    /// Keys of the current window, flattened, with their start offsets.
    keys: Vec<u8>,
    starts: Vec<usize>,
    result: Vec<u8>,
    filter_offsets: Vec<u32>,
}

impl FilterBlockBuilder {
    /// A builder for `policy`.
    pub fn new(policy: Filter) -> Self {
        FilterBlockBuilder {
            policy,
            keys: Vec::new(),
            starts: Vec::new(),
            result: Vec::new(),
            filter_offsets: Vec::new(),
        }
    }

    /// Announces that the next data block starts at `block_offset`.
    pub fn start_block(&mut self, block_offset: u64) {
        let index = block_offset >> FILTER_BASE_LG;
        while index > self.filter_offsets.len() as u64 {
            self.generate_filter();
        }
    }

    /// Adds a user key of the current data block.
    pub fn add_key(&mut self, user_key: &[u8]) {
        self.starts.push(self.keys.len());
        self.keys.extend_from_slice(user_key);
    }

    /// The finished filter block.
    pub fn finish(&mut self) -> &[u8] {
        if !self.starts.is_empty() {
            self.generate_filter();
        }
        let array_offset = self.result.len() as u32;
        for &o in &self.filter_offsets {
            put_fixed32(&mut self.result, o);
        }
        put_fixed32(&mut self.result, array_offset);
        self.result.push(FILTER_BASE_LG);
        &self.result
    }

    fn generate_filter(&mut self) {
        self.filter_offsets.push(self.result.len() as u32);
        if self.starts.is_empty() {
            return;
        }
        let keys = &self.keys;
        let starts = &self.starts;
        let ends = starts
            .iter()
            .skip(1)
            .copied()
            .chain(std::iter::once(keys.len()));
        let slices: Vec<&[u8]> = starts.iter().zip(ends).map(|(&s, e)| &keys[s..e]).collect();
        self.policy.create_filter(&slices, &mut self.result);
        self.keys.clear();
        self.starts.clear();
    }
}

/// Answers "may this data block hold this key?" from a filter block.
///
/// A malformed filter block is treated as absent (every key may match): a filter can
/// only save reads, and a wrong "no" would hide data. The block's checksum has already
/// been verified when it was read.
#[derive(Debug, Clone)]
pub struct FilterBlockReader {
    policy: Filter,
    data: Vec<u8>,
    /// Offset of the offset array; 0 with `num == 0` when absent.
    offsets: usize,
    num: usize,
    base_lg: u8,
}

impl FilterBlockReader {
    /// Parses a filter block.
    pub fn new(data: Vec<u8>, policy: Filter) -> Self {
        let n = data.len();
        let absent = FilterBlockReader {
            policy: policy.clone(),
            data: Vec::new(),
            offsets: 0,
            num: 0,
            base_lg: 0,
        };
        if n < 5 {
            return absent;
        }
        let base_lg = data[n - 1];
        let array = decode_fixed32(&data[n - 5..]).unwrap_or(u32::MAX) as usize;
        if array > n - 5 || base_lg >= 64 {
            return absent;
        }
        FilterBlockReader {
            policy,
            num: (n - 5 - array) / 4,
            offsets: array,
            base_lg,
            data,
        }
    }

    /// False only if the data block starting at `block_offset` cannot hold `user_key`.
    pub fn key_may_match(&self, block_offset: u64, user_key: &[u8]) -> bool {
        let index = (block_offset >> self.base_lg) as usize;
        if index >= self.num {
            return true;
        }
        let at = self.offsets + index * 4;
        let start = decode_fixed32(&self.data[at..]).unwrap_or(0) as usize;
        let limit = decode_fixed32(&self.data[at + 4..]).unwrap_or(0) as usize;
        if start <= limit && limit <= self.offsets {
            self.policy
                .key_may_match(user_key, &self.data[start..limit])
        } else {
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::BloomPolicy;

    #[test]
    fn empty_builder_golden() {
        let mut b = FilterBlockBuilder::new(Filter::Bloom(BloomPolicy::new(10)));
        assert_eq!(b.finish(), &[0, 0, 0, 0, 11]);
        let r = FilterBlockReader::new(vec![0, 0, 0, 0, 11], Filter::builtin());
        assert!(r.key_may_match(0, b"foo"));
        assert!(r.key_may_match(100_000, b"foo"));
    }

    #[test]
    fn windows_of_blocks() {
        let mut b = FilterBlockBuilder::new(Filter::Bloom(BloomPolicy::new(10)));
        b.start_block(0);
        b.add_key(b"foo");
        b.add_key(b"bar");
        b.start_block(2000); // same window
        b.add_key(b"box");
        b.start_block(3100); // window 1
        b.add_key(b"hello");
        b.start_block(9000); // window 4; 2 and 3 are empty
        b.add_key(b"last");
        let r = FilterBlockReader::new(b.finish().to_vec(), Filter::builtin());
        for (off, k) in [
            (0, "foo"),
            (2000, "bar"),
            (0, "box"),
            (3100, "hello"),
            (9000, "last"),
        ] {
            assert!(r.key_may_match(off, k.as_bytes()), "{k} at {off}");
        }
        assert!(!r.key_may_match(3100, b"foo"));
        assert!(!r.key_may_match(0, b"hello"));
        assert!(
            !r.key_may_match(4100, b"hello"),
            "empty window matches nothing"
        );
        assert!(!r.key_may_match(6200, b"last"));
    }

    #[test]
    fn malformed_blocks_match_everything() {
        for data in [
            vec![],
            vec![1, 2, 3],
            vec![9, 0, 0, 0, 11],
            vec![0, 0, 0, 0, 200],
        ] {
            let r = FilterBlockReader::new(data, Filter::builtin());
            assert!(r.key_may_match(0, b"k"));
        }
    }
}
