//! Any bytes as a database directory (CURRENT, a manifest, a log): opening it and reading
//! everything returns data or an error, never a panic. Exercises CURRENT parsing, manifest
//! replay and WAL recovery together.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::open_db(data));
