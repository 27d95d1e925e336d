//! Asking the CPU for cache lines before they are read: a block about to be searched
//! while its lines are likely in memory, not in the CPU's caches.
//!
//! A prefetch instruction starts the line's fetch and retires at once, so the CPU goes on
//! with the work that needs the first lines while the later ones arrive; a plain load of
//! each line ([`crate::sstable::format::touch_lines`]) overlaps the fetches too but holds
//! the CPU's reorder buffer until each arrives (a 4 KiB block is 64 of them). Measured on
//! a random read of uncompressed blocks read in place
//! (`docs/results/2026-11-27-prefetch/`).
//!
//! A prefetch never faults and changes nothing a program can observe but timing: any
//! address may be given, so the functions here are safe for any slice. The `unsafe` here
//! is the intrinsic's call alone; the tests run under Miri (`make miri`).
//! Off x86-64 (no stable prefetch intrinsic) each line is read with a load instead.

#![allow(unsafe_code)]

/// Bytes in a cache line on every CPU the engine runs on fast.
const LINE: usize = 64;

/// Asks for every line of `bytes`, the last one first (a block's trailer and restart
/// array, which a search reads first, are at its end), then from the front.
#[inline]
pub fn lines_tail_first(bytes: &[u8]) {
    if let Some(last) = bytes.len().checked_sub(1) {
        line(&bytes[last..]);
    }
    lines(bytes);
}

/// Asks for every line of `bytes`, from the front.
#[inline]
pub fn lines(bytes: &[u8]) {
    each_line_start(bytes.as_ptr().addr() % LINE, bytes.len(), |at| {
        line(&bytes[at..]);
    });
}

/// Calls `f` with offsets into `len` bytes starting `skew` bytes into a line, one in
/// each line they span: the first byte, then each later line's first byte. (Steps of a
/// line from the first byte would miss the last line when the bytes do not start at
/// one.) A plain loop: it runs 65 times before every lookup in a block read in place.
#[inline]
fn each_line_start(skew: usize, len: usize, mut f: impl FnMut(usize)) {
    if len == 0 {
        return;
    }
    f(0);
    let mut at = LINE - skew % LINE;
    while at < len {
        f(at);
        at += LINE;
    }
}

/// Asks for the line that holds `bytes[0]` (nothing for an empty slice).
#[inline]
fn line(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: `_mm_prefetch` is `unsafe` only because it takes a raw pointer; a
        // prefetch does not dereference it in the program's sense (no fault, no read
        // visible to the program, nothing written), and SSE, its target feature, is part
        // of every x86-64 CPU. The pointer is into (or one past) a live slice anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(bytes.as_ptr().cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    if let Some(&b) = bytes.first() {
        std::hint::black_box(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_slice_may_be_asked_for() {
        let data: Vec<u8> = (0..=255).cycle().take(4096 + 37).collect();
        for (start, end) in [
            (0, 0),
            (0, 1),
            (5, 70),
            (63, 64),
            (0, data.len()),
            (4000, 4133),
        ] {
            lines_tail_first(&data[start..end]);
            lines(&data[start..end]);
        }
        lines(&[]);
        lines_tail_first(&[]);
        // Nothing the program can see changes.
        assert!(data.iter().enumerate().all(|(i, &b)| b == (i % 256) as u8));
    }

    /// Every line the bytes span is asked for, once. Arithmetic only (no `unsafe`), and
    /// too many cases for Miri's pace: run natively.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn every_line_spanned_is_asked_for_once() {
        for skew in 0..LINE {
            for len in 0..300 {
                let mut asked = Vec::new();
                each_line_start(skew, len, |at| asked.push((skew + at) / LINE));
                let spanned: Vec<usize> = (skew..skew + len).map(|b| b / LINE).collect();
                let mut expected = spanned.clone();
                expected.dedup();
                assert_eq!(asked, expected, "skew {skew}, len {len}");
            }
        }
    }
}
