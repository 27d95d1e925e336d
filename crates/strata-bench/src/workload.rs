//! What the workloads are made of: db_bench's keys, compressible values, seeded random
//! orders, and a rate limiter. Everything here is identical for every engine.

use std::time::{Duration, Instant};

/// db_bench's key: the key number as 16 zero-padded decimal digits.
pub fn key(n: u64, out: &mut Vec<u8>) {
    out.clear();
    // Format without allocating: 16 digits, most significant first.
    let mut digits = [b'0'; 16];
    let mut v = n;
    for d in digits.iter_mut().rev() {
        *d = b'0' + (v % 10) as u8;
        v /= 10;
    }
    out.extend_from_slice(&digits);
}

/// A small, seeded generator (SplitMix64): the same sequence on every engine and machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn uniform(&mut self, n: u64) -> u64 {
        // Multiply-shift: unbiased enough for benchmarks, no division.
        ((u128::from(self.next_u64()) * u128::from(n.max(1))) >> 64) as u64
    }
}

/// db_bench's value source: 1 MiB of data where each 100-byte piece is `ratio` random
/// printable bytes repeated to fill it, so a simple compressor shrinks it to about `ratio`.
/// Values are consecutive slices of it.
#[derive(Debug, Clone)]
pub struct ValueGenerator {
    data: Vec<u8>,
    pos: usize,
    /// The last value longer than `data` (its repetition), kept for the next such call.
    long: Vec<u8>,
}

impl ValueGenerator {
    /// A generator whose output Snappy compresses to about `ratio` (0 < ratio <= 1).
    /// The share of fresh random bytes per piece is calibrated against Snappy itself, since
    /// its per-literal overhead makes the naive share land a few points high.
    pub fn new(ratio: f64, seed: u64) -> Self {
        let ratio = ratio.clamp(0.01, 1.0);
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..12 {
            let mid = (lo + hi) / 2.0;
            let sample = Self::build(mid, seed, 64 << 10);
            let got = snap::raw::Encoder::new()
                .compress_vec(&sample)
                .map_or(1.0, |c| c.len() as f64 / sample.len() as f64);
            if got < ratio { lo = mid } else { hi = mid }
        }
        ValueGenerator {
            data: Self::build((lo + hi) / 2.0, seed, 1 << 20),
            pos: 0,
            long: Vec::new(),
        }
    }

    fn build(fresh_share: f64, seed: u64, size: usize) -> Vec<u8> {
        let mut rng = Rng::new(seed);
        let piece = 100;
        // Room for the last piece, which ends past `size`: no regrowth to twice the size.
        let mut data = Vec::with_capacity(size + piece);
        while data.len() < size {
            let raw = ((piece as f64 * fresh_share).round() as usize).max(1);
            let fresh: Vec<u8> = (0..raw).map(|_| b' ' + rng.uniform(95) as u8).collect();
            let mut chunk = Vec::with_capacity(piece);
            while chunk.len() < piece {
                let take = (piece - chunk.len()).min(fresh.len());
                chunk.extend_from_slice(&fresh[..take]);
            }
            data.extend_from_slice(&chunk);
        }
        data
    }

    /// The next value of `len` bytes (values longer than the buffer repeat it), borrowed
    /// from the generator as db_bench's `Generate` does: no allocation per value.
    pub fn generate(&mut self, len: usize) -> &[u8] {
        if len > self.data.len() {
            if self.long.len() != len {
                self.long = self.data.iter().cycle().take(len).copied().collect();
            }
            return &self.long;
        }
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        &self.data[start..start + len]
    }
}

/// Holds a caller to `per_second` operations per second, measured from its start.
#[derive(Debug)]
pub struct RateLimiter {
    per_second: f64,
    started: Instant,
    done: u64,
}

impl RateLimiter {
    /// A limiter for `per_second` operations per second.
    pub fn new(per_second: u64) -> Self {
        RateLimiter {
            per_second: per_second.max(1) as f64,
            started: Instant::now(),
            done: 0,
        }
    }

    /// Waits until one more operation is allowed.
    pub fn acquire(&mut self) {
        self.done += 1;
        let due = Duration::from_secs_f64(self.done as f64 / self.per_second);
        let elapsed = self.started.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_16_zero_padded_digits() {
        let mut k = Vec::new();
        key(0, &mut k);
        assert_eq!(k, b"0000000000000000");
        key(1234567, &mut k);
        assert_eq!(k, b"0000000001234567");
        key(9_999_999_999_999_999, &mut k);
        assert_eq!(k, b"9999999999999999");
    }

    #[test]
    fn values_compress_to_the_requested_ratio() {
        for ratio in [0.25, 0.5, 0.75, 1.0] {
            let mut g = ValueGenerator::new(ratio, 301);
            let mut sample = Vec::new();
            while sample.len() < 1 << 20 {
                sample.extend_from_slice(g.generate(100));
            }
            let compressed = snap::raw::Encoder::new().compress_vec(&sample).unwrap();
            let got = compressed.len() as f64 / sample.len() as f64;
            assert!(
                (got - ratio).abs() / ratio <= 0.05,
                "ratio {ratio}: compressed to {got:.3}"
            );
        }
    }

    #[test]
    fn random_orders_repeat_for_a_seed() {
        let a: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..100).map(|_| r.uniform(1000)).collect()
        };
        let b: Vec<u64> = {
            let mut r = Rng::new(7);
            (0..100).map(|_| r.uniform(1000)).collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().all(|&x| x < 1000));
        assert!(a.iter().collect::<std::collections::HashSet<_>>().len() > 80);
    }

    #[test]
    fn rate_limiter_holds_the_rate() {
        let mut r = RateLimiter::new(2000);
        let started = Instant::now();
        for _ in 0..4000 {
            r.acquire();
        }
        let rate = 4000.0 / started.elapsed().as_secs_f64();
        assert!(
            (rate - 2000.0).abs() / 2000.0 <= 0.05,
            "{rate:.0} ops/s for 2000 asked"
        );
    }
}
