//! Any bytes as a filter block: probing it never panics, whatever the offsets and keys.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata::sstable::FilterBlockReader;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(0, |b| *b as usize).min(data.len());
    let (probe, block) = data.split_at(split);
    let reader = FilterBlockReader::new(block.to_vec());
    for (i, chunk) in probe.chunks(4).enumerate() {
        let offset = (i as u64) << (chunk.first().copied().unwrap_or(0) % 40);
        let _ = reader.key_may_match(offset, chunk);
    }
});
