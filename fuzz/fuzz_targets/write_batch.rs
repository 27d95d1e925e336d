//! Any bytes as a write batch: a batch that decodes iterates to exactly its count.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::write_batch(data));
