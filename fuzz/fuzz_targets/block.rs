//! Any bytes as a block: decoding, scanning both ways and seeking must not panic, and
//! scans must end.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::block(data));
