//! Any bytes through the varint and fixed-width decoders: whatever decodes re-encodes to
//! the same bytes (for canonical encodings) and never reads past the input.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::coding(data));
