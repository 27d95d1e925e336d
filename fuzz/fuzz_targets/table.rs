//! Any bytes as a table file: the footer, index, metaindex and filter are decoded at open;
//! then a full scan and point lookups must not panic.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use strata::iter::Cursor;
use strata::sstable::Table;

fuzz_target!(|data: &[u8]| {
    let size = data.len() as u64;
    let Ok(table) = Table::open(Arc::new(data.to_vec()), "fuzz.ldb", size, true) else { return };
    let table = Arc::new(table);
    for verify in [true, false] {
        let mut it = table.iter(verify, true);
        it.seek_to_first();
        let mut keys = Vec::new();
        while it.valid() && keys.len() < 100_000 {
            keys.push(it.key().to_vec());
            it.next();
        }
        let _ = it.status();
        for k in keys.iter().take(16) {
            let _ = table.get(k, verify, true);
        }
    }
});
