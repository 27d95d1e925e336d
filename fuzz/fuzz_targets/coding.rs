//! Any bytes through the varint and fixed-width decoders: whatever decodes re-encodes to
//! the same bytes (for canonical encodings) and never reads past the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use strata::coding::{Decoder, decode_varint32, decode_varint64, put_varint32, put_varint64};

fuzz_target!(|data: &[u8]| {
    if let Some((v, n)) = decode_varint64(data) {
        assert!(n <= data.len() && n <= 10);
        let mut out = Vec::new();
        put_varint64(&mut out, v);
        assert_eq!(decode_varint64(&out), Some((v, out.len())));
    }
    if let Some((v, n)) = decode_varint32(data) {
        assert!(n <= data.len() && n <= 5);
        let mut out = Vec::new();
        put_varint32(&mut out, v);
        assert_eq!(decode_varint32(&out), Some((v, out.len())));
    }
    // A decoder walking the input by the input's own instructions never panics.
    let mut d = Decoder::new(data);
    while !d.is_empty() {
        let step = match d.u8("op") {
            Ok(b) => b % 5,
            Err(_) => break,
        };
        let ok = match step {
            0 => d.varint32("v32").is_ok(),
            1 => d.varint64("v64").is_ok(),
            2 => d.fixed32("f32").is_ok(),
            3 => d.fixed64("f64").is_ok(),
            _ => d.length_prefixed("slice").is_ok(),
        };
        if !ok {
            break;
        }
    }
});
