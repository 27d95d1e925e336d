//! Block handles, the footer, and reading a block with its trailer.
//!
//! ```text
//! BlockHandle := offset varint64 | size varint64          (at most 20 bytes)
//! Footer      := metaindex handle | index handle | zero padding to 40 bytes
//!                | magic fixed64 (0xdb4775248b80fb57)     (48 bytes)
//! trailer     := compression type u8 | masked crc32c(block bytes, type) fixed32
//! ```

use std::cell::RefCell;

use crate::checksum;
use crate::coding::{Decoder, decode_fixed32, decode_fixed64, put_fixed64, put_varint64};
use crate::env::{MappedBytes, RandomAccessFile};
use crate::error::{Error, Result};

/// LevelDB's table magic number.
pub const TABLE_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// Size of the footer.
pub const FOOTER_SIZE: usize = 48;
/// Size of the trailer after each block.
pub const BLOCK_TRAILER_SIZE: usize = 5;
/// Largest encoded block handle.
pub const MAX_HANDLE_LEN: usize = 20;

/// How a block's bytes are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Compression {
    /// Stored as is.
    None = 0,
    /// Raw Snappy (not the framed format).
    #[default]
    Snappy = 1,
}

/// Where a block lives in its file: offset and size, the size excluding the trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// Offset of the block's first byte.
    pub offset: u64,
    /// Size of the stored block, trailer excluded.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the encoded handle.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_varint64(dst, self.offset);
        put_varint64(dst, self.size);
    }

    /// The encoded handle.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(MAX_HANDLE_LEN);
        self.encode_to(&mut v);
        v
    }

    /// Reads a handle.
    pub fn decode_from(d: &mut Decoder<'_>) -> Result<Self> {
        Ok(BlockHandle {
            offset: d.varint64("block handle offset")?,
            size: d.varint64("block handle size")?,
        })
    }

    /// Reads a handle that must fill `src` exactly (an index entry's value).
    pub fn decode_exact(src: &[u8]) -> Result<Self> {
        // Every lookup decodes one: the two varints straight, the `Decoder` (which names
        // what is wrong) only for a handle that does not decode.
        if let Some((offset, a)) = crate::coding::decode_varint64(src)
            && let Some((size, b)) = crate::coding::decode_varint64(&src[a..])
            && a + b == src.len()
        {
            return Ok(BlockHandle { offset, size });
        }
        let mut d = Decoder::new(src);
        let h = Self::decode_from(&mut d)?;
        if !d.is_empty() {
            return Err(Error::corruption(
                "",
                d.position() as u64,
                "trailing bytes after block handle",
            ));
        }
        Ok(h)
    }

    /// Bits of a packed handle's size; the offset takes the rest.
    const PACKED_SIZE_BITS: u32 = 24;

    /// The handle in one word, for a table's index fences (T6 in `fences.rs`): offset
    /// below 2^40 (1 TiB), size below 2^24 (16 MiB); `None` beyond.
    pub fn packed(self) -> Option<u64> {
        let limit = 1u64 << Self::PACKED_SIZE_BITS;
        (self.offset < 1 << (64 - Self::PACKED_SIZE_BITS) && self.size < limit)
            .then_some(self.offset << Self::PACKED_SIZE_BITS | self.size)
    }

    /// The handle [`BlockHandle::packed`] gave `word`.
    pub fn unpacked(word: u64) -> BlockHandle {
        BlockHandle {
            offset: word >> Self::PACKED_SIZE_BITS,
            size: word & ((1 << Self::PACKED_SIZE_BITS) - 1),
        }
    }
}

/// The fixed-size tail of every table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// The metaindex block.
    pub metaindex: BlockHandle,
    /// The index block.
    pub index: BlockHandle,
}

impl Footer {
    /// The 48 footer bytes.
    pub fn encode(&self) -> [u8; FOOTER_SIZE] {
        let mut v = Vec::with_capacity(FOOTER_SIZE);
        self.metaindex.encode_to(&mut v);
        self.index.encode_to(&mut v);
        v.resize(2 * MAX_HANDLE_LEN, 0);
        put_fixed64(&mut v, TABLE_MAGIC);
        let mut out = [0u8; FOOTER_SIZE];
        out.copy_from_slice(&v);
        out
    }

    /// Reads a footer from exactly [`FOOTER_SIZE`] bytes.
    pub fn decode(src: &[u8]) -> Result<Self> {
        if src.len() != FOOTER_SIZE {
            return Err(Error::corruption(
                "",
                0,
                format!("footer is {} bytes, expected {FOOTER_SIZE}", src.len()),
            ));
        }
        let magic = decode_fixed64(&src[2 * MAX_HANDLE_LEN..]).unwrap_or(0);
        if magic != TABLE_MAGIC {
            return Err(Error::corruption(
                "",
                (2 * MAX_HANDLE_LEN) as u64,
                format!("not a table: magic {magic:#018x}, expected {TABLE_MAGIC:#018x}"),
            ));
        }
        let mut d = Decoder::new(&src[..2 * MAX_HANDLE_LEN]);
        let metaindex = BlockHandle::decode_from(&mut d)?;
        let index = BlockHandle::decode_from(&mut d)?;
        Ok(Footer { metaindex, index })
    }
}

/// Upper bound on what a Snappy block of `stored` bytes can expand to. Snappy's densest
/// element (a 3-byte copy of 64 bytes) expands about 21x; anything claiming much more is
/// corrupt, and refusing it keeps a damaged length from causing a huge allocation.
fn max_uncompressed(stored: usize) -> usize {
    stored.saturating_mul(32).saturating_add(1024)
}

/// Blocks up to this size are read into a per-thread scratch buffer (so a read neither
/// allocates nor zeroes); larger ones into a buffer of their own, so no thread keeps a
/// large buffer after reading one large value.
const SCRATCH_LIMIT: usize = 256 << 10;

thread_local! {
    /// Where blocks are read before they are uncompressed (or copied out): reused across
    /// reads, zeroed only when it grows.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Reads the block at `handle` from a file of `file_size` bytes, checks its trailer
/// (when `verify_checksum`) and uncompresses it. Errors name `file_name` and the offset.
pub fn read_block(
    file: &dyn RandomAccessFile,
    file_name: &str,
    file_size: u64,
    handle: BlockHandle,
    verify_checksum: bool,
) -> Result<Vec<u8>> {
    read_block_into(
        file,
        file_name,
        file_size,
        handle,
        verify_checksum,
        Vec::new(),
    )
}

/// [`read_block`] into `out`, a buffer to reuse (a block the cache let go of): its bytes
/// are overwritten, and only growth past its length is zeroed.
pub fn read_block_into(
    file: &dyn RandomAccessFile,
    file_name: &str,
    file_size: u64,
    handle: BlockHandle,
    verify_checksum: bool,
    out: Vec<u8>,
) -> Result<Vec<u8>> {
    let located = |what: String| Error::corruption(file_name, handle.offset, what);
    let end = handle
        .offset
        .checked_add(handle.size)
        .and_then(|e| e.checked_add(BLOCK_TRAILER_SIZE as u64))
        .filter(|&e| e <= file_size)
        .ok_or_else(|| {
            located(format!(
                "block handle ({} + {} bytes) runs past the end of the {file_size}-byte file",
                handle.offset, handle.size
            ))
        })?;
    let n = (end - handle.offset) as usize;
    if let Some(bytes) = file.mapped() {
        // A mapped file: check and decode the block where it lies, no read, no copy.
        let stored = usize::try_from(handle.offset)
            .ok()
            .and_then(|start| bytes.get(start..start + n))
            .ok_or_else(|| {
                located(format!(
                    "truncated block read: the file holds {} bytes, the block ends at {end}",
                    bytes.len()
                ))
            })?;
        // Touch every cache line first: the decoder would otherwise meet each miss in turn.
        touch_lines(stored);
        return decode_block(file_name, handle, stored, verify_checksum, out);
    }
    let read_into = |buf: &mut Vec<u8>| -> Result<Vec<u8>> {
        // Only growth is zeroed: the bytes past the old length.
        buf.resize(n, 0);
        let got = file.read_at(handle.offset, buf)?;
        if got != n {
            return Err(located(format!("truncated block read: {got} of {n} bytes")));
        }
        decode_block(file_name, handle, buf, verify_checksum, out)
    };
    SCRATCH.with(|s| {
        // Small blocks go through the scratch. `try_borrow_mut` cannot fail (nothing
        // here reads a block while holding it), but if it did, a fresh buffer is as good.
        let mut scratch = s.try_borrow_mut().ok().filter(|_| n <= SCRATCH_LIMIT);
        match scratch.as_deref_mut() {
            Some(buf) => read_into(buf),
            None => read_into(&mut Vec::new()),
        }
    })
}

/// Checks the CRC in the trailer of `stored` (the block at `handle` followed by its
/// trailer, `handle.size + BLOCK_TRAILER_SIZE` bytes).
fn check_trailer(file_name: &str, handle: BlockHandle, stored: &[u8]) -> Result<()> {
    let size = handle.size as usize;
    let ty = stored[size];
    let crc = checksum::unmask(decode_fixed32(&stored[size + 1..]).unwrap_or(0));
    let actual = checksum::extend(checksum::crc32c(&stored[..size]), &[ty]);
    if crc != actual {
        return Err(Error::corruption(
            file_name,
            handle.offset,
            format!("block checksum mismatch: stored {crc:#010x}, computed {actual:#010x}"),
        ));
    }
    Ok(())
}

/// Reads one byte of every cache line of `bytes`: independent loads the CPU overlaps, so a
/// walk over them that follows (a decoder, a block's search) finds them in the cache
/// instead of meeting each miss in turn.
#[inline]
pub fn touch_lines(bytes: &[u8]) {
    let mut acc = 0u8;
    for b in bytes.iter().step_by(64) {
        acc ^= *b;
    }
    std::hint::black_box(acc);
}

/// Checks the trailer of the block at `handle` where it lies in the mapped `file`:
/// `Ok(false)` when the file is not mapped or the block runs past the map (nothing was
/// checked), an error when the checksum does not match.
pub fn check_in_place(
    file: &dyn RandomAccessFile,
    file_name: &str,
    handle: BlockHandle,
) -> Result<bool> {
    let Some(stored) = usize::try_from(handle.size)
        .ok()
        .and_then(|size| size.checked_add(BLOCK_TRAILER_SIZE))
        .and_then(|n| file.map_range(handle.offset, n))
    else {
        return Ok(false);
    };
    check_trailer(file_name, handle, &stored)?;
    Ok(true)
}

/// The block at `handle` as bytes of the mapped `file`, read in place, its trailer
/// checked when `verify_checksum`: `Ok(None)` when the file is not mapped, the block is
/// compressed or its handle runs past the map (a caller then reads it with
/// [`read_block_into`], which says what is wrong).
pub fn read_block_in_place(
    file: &dyn RandomAccessFile,
    file_name: &str,
    handle: BlockHandle,
    verify_checksum: bool,
) -> Result<Option<MappedBytes>> {
    let Some(size) = usize::try_from(handle.size).ok() else {
        return Ok(None);
    };
    let Some(stored) = size
        .checked_add(BLOCK_TRAILER_SIZE)
        .and_then(|n| file.map_range(handle.offset, n))
    else {
        return Ok(None);
    };
    if stored[size] != 0 {
        return Ok(None);
    }
    if verify_checksum {
        check_trailer(file_name, handle, &stored)?;
    }
    Ok(Some(stored.prefix(size)))
}

/// Checks the trailer of `stored` (the block at `handle` followed by its trailer) when
/// `verify_checksum`, and returns the block's contents, uncompressed.
fn decode_block(
    file_name: &str,
    handle: BlockHandle,
    stored: &[u8],
    verify_checksum: bool,
    mut out: Vec<u8>,
) -> Result<Vec<u8>> {
    let located = |what: String| Error::corruption(file_name, handle.offset, what);
    let size = handle.size as usize;
    let ty = stored[size];
    if verify_checksum {
        check_trailer(file_name, handle, stored)?;
    }
    match ty {
        0 => {
            out.clear();
            out.extend_from_slice(&stored[..size]);
            Ok(out)
        }
        1 => {
            let compressed = &stored[..size];
            let len = snap::raw::decompress_len(compressed)
                .map_err(|e| located(format!("bad Snappy header: {e}")))?;
            if len > max_uncompressed(size) {
                return Err(located(format!(
                    "Snappy block of {size} bytes claims {len} uncompressed"
                )));
            }
            // Reuse `out` as it is: only bytes past its length need zeroing first.
            if out.len() >= len {
                out.truncate(len);
            } else {
                out.resize(len, 0);
            }
            let n = snap::raw::Decoder::new()
                .decompress(compressed, &mut out)
                .map_err(|e| located(format!("bad Snappy block: {e}")))?;
            if n != len {
                return Err(located(format!(
                    "Snappy block uncompressed to {n} bytes, its header says {len}"
                )));
            }
            Ok(out)
        }
        other => Err(located(format!("unknown block compression type {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_pack_into_a_word_within_bounds() {
        for h in [
            (0, 0),
            (4096, 4091),
            ((1 << 40) - 1, (1 << 24) - 1),
            (123_456_789, 100_005),
        ] {
            let h = BlockHandle {
                offset: h.0,
                size: h.1,
            };
            assert_eq!(h.packed().map(BlockHandle::unpacked), Some(h));
        }
        for (offset, size) in [(1 << 40, 1), (0, 1 << 24), (u64::MAX, u64::MAX)] {
            assert_eq!(BlockHandle { offset, size }.packed(), None);
        }
    }

    #[test]
    fn footer_round_trip_and_golden_bytes() {
        let f = Footer {
            metaindex: BlockHandle {
                offset: 1000,
                size: 30,
            },
            index: BlockHandle {
                offset: 1035,
                size: 300,
            },
        };
        let bytes = f.encode();
        assert_eq!(&bytes[..7], &[0xe8, 0x07, 0x1e, 0x8b, 0x08, 0xac, 0x02]);
        assert!(bytes[7..40].iter().all(|&b| b == 0));
        assert_eq!(
            &bytes[40..],
            &[0x57, 0xfb, 0x80, 0x8b, 0x24, 0x75, 0x47, 0xdb]
        );
        assert_eq!(Footer::decode(&bytes).unwrap(), f);
        let mut bad = bytes;
        bad[47] ^= 1;
        assert!(
            Footer::decode(&bad)
                .unwrap_err()
                .to_string()
                .contains("magic")
        );
        assert!(Footer::decode(&bytes[1..]).is_err());
    }

    fn stored_block(contents: &[u8], ty: u8) -> Vec<u8> {
        let mut v = contents.to_vec();
        v.push(ty);
        let crc = checksum::crc32c(&v);
        v.extend_from_slice(&checksum::mask(crc).to_le_bytes());
        v
    }

    #[test]
    fn reads_of_every_size_reuse_no_stale_bytes() {
        // Small and large blocks (above the scratch buffer's limit) in turn, each
        // shorter than the one before at some point: every read returns exactly its
        // block, never bytes left over from an earlier, longer read.
        for len in [
            5000,
            10,
            SCRATCH_LIMIT + 1000,
            3,
            SCRATCH_LIMIT - 5,
            0,
            70_000,
            1,
        ] {
            let contents: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
            let file = stored_block(&contents, 0);
            let h = BlockHandle {
                offset: 0,
                size: len as u64,
            };
            let got = read_block(&file, "t.ldb", file.len() as u64, h, true).unwrap();
            assert_eq!(got, contents, "{len}");
            // A truncated file after a longer read: an error, not the scratch's bytes.
            let short = &file[..file.len() - 1];
            let err = read_block(&short.to_vec(), "t.ldb", file.len() as u64, h, true);
            assert!(err.is_err(), "{len}");
        }
    }

    #[test]
    fn read_block_checks_trailer_and_bounds() {
        let file = stored_block(b"hello block", 0);
        let h = BlockHandle {
            offset: 0,
            size: 11,
        };
        let n = file.len() as u64;
        assert_eq!(
            read_block(&file, "t.ldb", n, h, true).unwrap(),
            b"hello block"
        );
        let mut bad = file.clone();
        bad[3] ^= 0x10;
        let err = read_block(&bad, "t.ldb", n, h, true).unwrap_err();
        assert!(err.to_string().contains("t.ldb"), "{err}");
        assert!(err.to_string().contains("checksum"), "{err}");
        assert!(read_block(&bad, "t.ldb", n, h, false).is_ok());
        let past = BlockHandle {
            offset: 0,
            size: 12,
        };
        assert!(read_block(&file, "t.ldb", n, past, true).is_err());
        let huge = BlockHandle {
            offset: u64::MAX - 2,
            size: 10,
        };
        assert!(read_block(&file, "t.ldb", n, huge, true).is_err());
    }

    #[test]
    fn read_block_uncompresses_snappy() {
        let raw = b"abcabcabcabcabcabcabcabcabcabcabcabc".repeat(10);
        let compressed = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
        let file = stored_block(&compressed, 1);
        let h = BlockHandle {
            offset: 0,
            size: compressed.len() as u64,
        };
        assert_eq!(
            read_block(&file, "t", file.len() as u64, h, true).unwrap(),
            raw
        );
        let garbage = stored_block(b"\xff\xff\xff\xff\x0f", 1);
        let h = BlockHandle { offset: 0, size: 5 };
        assert!(read_block(&garbage, "t", garbage.len() as u64, h, true).is_err());
        let unknown = stored_block(b"xyz", 7);
        let h = BlockHandle { offset: 0, size: 3 };
        assert!(read_block(&unknown, "t", unknown.len() as u64, h, true).is_err());
    }
}
