use super::*;
use std::io::Cursor;

fn write_all(records: &[Vec<u8>]) -> Vec<u8> {
    let mut w = LogWriter::new(Box::new(Vec::new()));
    for r in records {
        w.add_record(r).unwrap();
    }
    *w.into_inner()
}

fn read_all(bytes: Vec<u8>) -> (Vec<Vec<u8>>, Vec<Dropped>) {
    let mut r = LogReader::new(Box::new(Cursor::new(bytes)), Checksums::Verify);
    let mut out = Vec::new();
    let mut rec = Vec::new();
    while r.read_record(&mut rec).unwrap() {
        out.push(rec.clone());
    }
    (out, r.take_dropped())
}

fn record(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn empty_file_has_no_records() {
    let (recs, dropped) = read_all(Vec::new());
    assert!(recs.is_empty());
    assert!(dropped.is_empty());
}

#[test]
fn round_trip_across_blocks() {
    let sizes = [
        0,
        1,
        100,
        BLOCK_SIZE - HEADER_SIZE,
        BLOCK_SIZE,
        3 * BLOCK_SIZE + 17,
        5,
        0,
        70_000,
    ];
    let records: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &n)| record(n, i as u8))
        .collect();
    let bytes = write_all(&records);
    let (back, dropped) = read_all(bytes);
    assert_eq!(back, records);
    assert!(dropped.is_empty(), "{dropped:?}");
}

#[test]
fn physical_layout_of_a_small_record() {
    let bytes = write_all(&[b"foo".to_vec()]);
    assert_eq!(bytes.len(), HEADER_SIZE + 3);
    assert_eq!(&bytes[4..7], &[3, 0, RecordType::Full as u8]);
    let crc = crate::checksum::crc32c(&[1, b'f', b'o', b'o']);
    assert_eq!(&bytes[..4], &crate::checksum::mask(crc).to_le_bytes());
}

#[test]
fn seven_bytes_left_gives_an_empty_first_fragment() {
    // Leave exactly HEADER_SIZE bytes at the end of the first block.
    let first = record(BLOCK_SIZE - 2 * HEADER_SIZE, 1);
    let second = record(10, 2);
    let bytes = write_all(&[first.clone(), second.clone()]);
    let at = BLOCK_SIZE - HEADER_SIZE;
    assert_eq!(&bytes[at + 4..at + 7], &[0, 0, RecordType::First as u8]);
    assert_eq!(bytes[BLOCK_SIZE + 6], RecordType::Last as u8);
    let (back, dropped) = read_all(bytes);
    assert_eq!(back, vec![first, second]);
    assert!(dropped.is_empty());
}

#[test]
fn fewer_than_seven_bytes_left_are_zero_padding() {
    let first = record(BLOCK_SIZE - HEADER_SIZE - 3, 1);
    let bytes = write_all(&[first.clone(), b"x".to_vec()]);
    assert_eq!(&bytes[BLOCK_SIZE - 3..BLOCK_SIZE], &[0, 0, 0]);
    assert_eq!(bytes[BLOCK_SIZE + 6], RecordType::Full as u8);
    let (back, _) = read_all(bytes);
    assert_eq!(back, vec![first, b"x".to_vec()]);
}

#[test]
fn writer_continues_an_existing_file() {
    let mut bytes = write_all(&[record(BLOCK_SIZE - 100, 1)]);
    let len = bytes.len() as u64;
    let mut w = LogWriter::with_length(Box::new(std::mem::take(&mut bytes)), len);
    w.add_record(&record(300, 2)).unwrap();
    let (back, dropped) = read_all(*w.into_inner());
    assert_eq!(back, vec![record(BLOCK_SIZE - 100, 1), record(300, 2)]);
    assert!(dropped.is_empty());
}

#[test]
fn truncated_tail_is_a_torn_tail_not_corruption() {
    let records = vec![record(1000, 1), record(2000, 2), record(50_000, 3)];
    let full = write_all(&records);
    for cut in [
        full.len() - 1,
        full.len() - 40_000,
        1000 + HEADER_SIZE + 3000,
        1000 + HEADER_SIZE + 2,
    ] {
        let (back, dropped) = read_all(full[..cut].to_vec());
        assert!(back.len() < 3);
        assert_eq!(back, records[..back.len()].to_vec());
        assert!(!dropped.is_empty(), "cut at {cut}");
        assert!(
            dropped.iter().all(|d| d.reason.is_torn_tail()),
            "cut at {cut}: {dropped:?}"
        );
    }
}

#[test]
fn bad_checksum_drops_the_block_and_resynchronises() {
    let records: Vec<_> = (0..40).map(|i| record(2000, i)).collect();
    let mut bytes = write_all(&records);
    bytes[HEADER_SIZE + 10] ^= 0x01; // inside the first record's payload
    let (back, dropped) = read_all(bytes);
    assert_eq!(dropped[0].reason, DropReason::BadChecksum);
    assert_eq!(dropped[0].offset, 0);
    assert_eq!(dropped[0].bytes, BLOCK_SIZE as u64);
    // Records that started in the first block are gone (including the one whose
    // fragments continue into the second); everything after is back.
    assert!(back.len() >= 40 - 17, "{}", back.len());
    assert_eq!(back.last(), records.last());
    assert!(dropped.iter().all(|d| !d.reason.is_torn_tail()));
}

#[test]
fn bad_length_is_reported() {
    let records: Vec<_> = (0..40).map(|i| record(2000, i)).collect();
    let mut bytes = write_all(&records);
    bytes[4] = 0xff;
    bytes[5] = 0xff; // length 65535 > block
    let (back, dropped) = read_all(bytes);
    assert_eq!(dropped[0].reason, DropReason::BadLength);
    assert_eq!(back.last(), records.last());
}

#[test]
fn missing_start_and_partial_records_are_reported() {
    let big = record(2 * BLOCK_SIZE, 9);
    let bytes = write_all(&[big, b"after".to_vec()]);
    // Damage the first block only: the FIRST fragment is lost, the MIDDLE and LAST remain.
    let mut damaged = bytes.clone();
    damaged[100] ^= 0xff;
    let (back, dropped) = read_all(damaged);
    assert_eq!(back, vec![b"after".to_vec()]);
    let reasons: Vec<_> = dropped.iter().map(|d| d.reason).collect();
    assert_eq!(
        reasons,
        vec![
            DropReason::BadChecksum,
            DropReason::MissingStart,
            DropReason::MissingStart
        ]
    );
    // Damage the second block: FIRST is read, then its MIDDLE is lost.
    let mut damaged = bytes;
    damaged[BLOCK_SIZE + 100] ^= 0xff;
    let (back, dropped) = read_all(damaged);
    assert_eq!(back, vec![b"after".to_vec()]);
    let reasons: Vec<_> = dropped.iter().map(|d| d.reason).collect();
    assert_eq!(
        reasons,
        vec![
            DropReason::BadChecksum,
            DropReason::PartialRecord,
            DropReason::MissingStart
        ]
    );
}

#[test]
fn zero_filled_region_is_skipped() {
    let mut bytes = write_all(&[b"one".to_vec()]);
    bytes.resize(BLOCK_SIZE, 0); // a preallocated, never written rest of block
    let tail = write_all(&[b"two".to_vec()]);
    bytes.extend_from_slice(&tail);
    let (back, dropped) = read_all(bytes);
    assert_eq!(back, vec![b"one".to_vec(), b"two".to_vec()]);
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].reason, DropReason::ZeroFill);
}

#[test]
fn zero_tail_to_the_end_of_the_file_is_the_end_of_the_log() {
    // L4: a preallocated log whose writer died: records, then zeros for blocks on end,
    // the last block cut short.
    let records = vec![record(100, 1), record(BLOCK_SIZE + 5, 2), record(3, 3)];
    let mut bytes = write_all(&records);
    let written = bytes.len();
    bytes.resize(written + 3 * BLOCK_SIZE + 1234, 0);
    let (back, dropped) = read_all(bytes);
    assert_eq!(back, records);
    assert!(dropped.is_empty(), "{dropped:?}");
    // Zeros only: an empty log.
    let (back, dropped) = read_all(vec![0; 2 * BLOCK_SIZE]);
    assert!(back.is_empty() && dropped.is_empty(), "{dropped:?}");
}

#[test]
fn zero_tail_inside_a_record_is_a_torn_tail() {
    // The writer died between the fragments of a record that spans blocks.
    let mut bytes = write_all(&[record(BLOCK_SIZE + 100, 4)]);
    bytes.truncate(BLOCK_SIZE);
    bytes.resize(4 * BLOCK_SIZE, 0);
    let (back, dropped) = read_all(bytes);
    assert!(back.is_empty());
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert_eq!(dropped[0].reason, DropReason::TornTail);
}

#[test]
fn zeros_followed_by_a_record_blocks_later_are_damage() {
    // A lost page: zeros where written bytes were, then more records.
    let first = write_all(&[b"one".to_vec()]);
    let mut bytes = first.clone();
    bytes.resize(3 * BLOCK_SIZE, 0);
    bytes.extend_from_slice(&write_all(&[b"two".to_vec()]));
    let (back, dropped) = read_all(bytes);
    assert_eq!(back, vec![b"one".to_vec(), b"two".to_vec()]);
    assert_eq!(
        dropped,
        vec![Dropped {
            offset: first.len() as u64,
            bytes: (3 * BLOCK_SIZE - first.len()) as u64,
            reason: DropReason::ZeroFill,
        }]
    );
}

#[test]
fn unknown_type_is_reported() {
    let mut bytes = write_all(&[b"one".to_vec(), b"two".to_vec()]);
    // Rewrite the first record as type 9 with a correct checksum.
    bytes[6] = 9;
    let crc = crate::checksum::crc32c(&[9, b'o', b'n', b'e']);
    bytes[..4].copy_from_slice(&crate::checksum::mask(crc).to_le_bytes());
    let (back, dropped) = read_all(bytes);
    assert_eq!(back, vec![b"two".to_vec()]);
    assert_eq!(dropped[0].reason, DropReason::UnknownType);
}

#[test]
fn unverified_reader_ignores_checksums() {
    let mut bytes = write_all(&[b"one".to_vec()]);
    bytes[0] ^= 1;
    let mut r = LogReader::new(Box::new(Cursor::new(bytes)), Checksums::Skip);
    let mut rec = Vec::new();
    assert!(r.read_record(&mut rec).unwrap());
    assert_eq!(rec, b"one");
}
