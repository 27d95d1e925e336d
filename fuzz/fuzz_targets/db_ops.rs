//! Any bytes as a sequence of database operations, checked against a `BTreeMap`: puts,
//! deletes, batches, gets, scans both ways, compactions and reopens on a tiny memtable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| strata_fuzz_checks::db_ops(data));
