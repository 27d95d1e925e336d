//! Any bytes as a write batch: a batch that decodes iterates to exactly its count.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata::WriteBatch;

fuzz_target!(|data: &[u8]| {
    if let Ok(batch) = WriteBatch::from_bytes(data.to_vec()) {
        let ops: Vec<_> = batch.iter().collect::<Result<_, _>>().expect("validated");
        assert_eq!(ops.len(), batch.len() as usize);
    }
});
