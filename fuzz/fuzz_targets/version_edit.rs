//! Any bytes as a manifest record: an edit that decodes survives encode and decode.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::version_edit(data));
