//! Any bytes as a log file: reading every record, with and without checksums, must not
//! panic, and must end.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use strata::log::LogReader;

fuzz_target!(|data: &[u8]| {
    for verify in [true, false] {
        let mut r = LogReader::new(Box::new(Cursor::new(data.to_vec())), verify);
        let mut rec = Vec::new();
        let mut n = 0;
        while let Ok(true) = r.read_record(&mut rec) {
            n += 1;
            assert!(n <= data.len());
        }
        let _ = r.take_dropped();
    }
});
