//! Any bytes as a block: decoding, scanning both ways and seeking must not panic, and
//! scans must end.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::iter::Cursor;
use strata::key::InternalOrder;
use strata::sstable::Block;

fuzz_target!(|data: &[u8]| {
    let limit = data.len() + 1;
    let Ok(block) = Block::new(data.to_vec()) else { return };
    let block = Arc::new(block);
    let mut it = block.iter(InternalOrder);
    it.seek_to_first();
    let mut steps = 0;
    while it.valid() {
        it.next();
        steps += 1;
        assert!(steps <= limit);
    }
    it.seek_to_last();
    steps = 0;
    while it.valid() {
        it.prev();
        steps += 1;
        assert!(steps <= limit);
    }
    for target in [&data[..data.len().min(12)], b"", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff"] {
        it.seek(target);
    }
    let _ = it.status();
});
