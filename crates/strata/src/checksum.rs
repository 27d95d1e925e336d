//! CRC-32C checksums with LevelDB's mask.
//!
//! Every checksum stored on disk is masked: a CRC of data that itself contains CRCs is
//! weak, so the stored value is `rotate_right(crc, 15) + 0xa282ead8` (wrapping). The CRC
//! itself comes from the `crc32c` crate, which uses the SSE 4.2 / ARMv8 instructions when
//! the CPU has them.

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC-32C (Castagnoli) of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Extends `crc`, the CRC of some prefix, by `data`.
#[inline]
pub fn extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// The stored form of a CRC.
#[inline]
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
#[inline]
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_vectors() {
        // From RFC 3720, appendix B.4.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c(&ascending), 0x46dd_794e);
        let descending: Vec<u8> = (0..32).rev().collect();
        assert_eq!(crc32c(&descending), 0x113f_db5c);
    }

    #[test]
    fn extend_equals_whole() {
        assert_eq!(crc32c(b"hello world"), extend(crc32c(b"hello "), b"world"));
    }

    #[test]
    fn mask_round_trips_and_changes_value() {
        for crc in [0u32, 1, 0xdead_beef, u32::MAX, crc32c(b"foo")] {
            assert_ne!(mask(crc), crc);
            assert_ne!(mask(mask(crc)), crc);
            assert_eq!(unmask(mask(crc)), crc);
            assert_eq!(unmask(unmask(mask(mask(crc)))), crc);
        }
    }
}
