//! Any bytes as a table file: the footer, index, metaindex and filter are decoded at open;
//! then a full scan and point lookups must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::table(data));
