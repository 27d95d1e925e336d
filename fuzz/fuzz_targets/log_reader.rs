//! Any bytes as a log file: reading every record, with and without checksums, must not
//! panic, and must end.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::log_reader(data));
