//! Any bytes as a manifest record: an edit that decodes survives encode and decode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata::version::VersionEdit;

fuzz_target!(|data: &[u8]| {
    if let Ok(edit) = VersionEdit::decode(data) {
        let again = VersionEdit::decode(&edit.encode()).expect("re-encoded edit decodes");
        assert_eq!(again, edit);
    }
});
