//! Any bytes as a filter block: probing it never panics, whatever the offsets and keys.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::filter_block(data));
