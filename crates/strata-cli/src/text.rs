//! How keys and values are shown and read back: as text when they are printable UTF-8,
//! escaped otherwise (`ldb`'s habit), or as hex on request; and the dump format's strict
//! escaping, which `load` reverses exactly.

/// `bytes` for a person: as is when printable UTF-8 without backslashes, else with
/// `\xNN` escapes; `0x`-prefixed hex when `hex`.
pub fn show(bytes: &[u8], hex: bool) -> String {
    if hex {
        return format!("0x{}", to_hex(bytes));
    }
    match std::str::from_utf8(bytes) {
        Ok(s) if !s.chars().any(|c| c.is_control() || c == '\\') => s.to_string(),
        _ => escape(bytes),
    }
}

/// Lower-case hex of `bytes`.
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The dump format's escaping: printable ASCII but `\` as is, every other byte `\xNN`,
/// so the result holds no tab, newline or non-ASCII byte.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Reverses [`escape`]; `Err` says what is wrong.
pub fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            let digits = b
                .get(i + 1..i + 4)
                .filter(|d| d[0] == b'x')
                .and_then(|d| std::str::from_utf8(&d[1..]).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad escape at byte {i} (expected \\xNN)"))?;
            out.push(digits);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// A key or value given on the command line: its bytes, or decoded from hex when `hex`
/// (an optional `0x` prefix).
pub fn arg(s: &str, hex: bool) -> Result<Vec<u8>, String> {
    if !hex {
        return Ok(s.as_bytes().to_vec());
    }
    let h = s.strip_prefix("0x").unwrap_or(s);
    if !h.len().is_multiple_of(2) {
        return Err(format!("{s:?} is not hex: odd number of digits"));
    }
    (0..h.len())
        .step_by(2)
        .map(|i| {
            h.get(i..i + 2)
                .and_then(|d| u8::from_str_radix(d, 16).ok())
                .ok_or_else(|| format!("{s:?} is not hex"))
        })
        .collect()
}

/// A size for a person: bytes, KiB, MiB or GiB.
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_round_trips_every_byte() {
        let all: Vec<u8> = (0..=255u8).collect();
        let e = escape(&all);
        assert!(e.is_ascii() && !e.contains('\t') && !e.contains('\n'));
        assert_eq!(unescape(&e), Ok(all));
        assert!(unescape("abc\\x4").is_err());
        assert!(unescape("\\q00").is_err());
    }

    #[test]
    fn text_is_shown_as_text_and_the_rest_escaped() {
        assert_eq!(show(b"hello", false), "hello");
        assert_eq!(show("héllo".as_bytes(), false), "héllo");
        assert_eq!(show(b"a\nb", false), "a\\x0ab");
        assert_eq!(show(&[0xff, 1], false), "\\xff\\x01");
        assert_eq!(show(b"ab", true), "0x6162");
    }

    #[test]
    fn hex_arguments_are_checked() {
        assert_eq!(arg("0x6162", true), Ok(b"ab".to_vec()));
        assert_eq!(arg("6162", true), Ok(b"ab".to_vec()));
        assert!(arg("zz", true).is_err());
        assert!(arg("616", true).is_err());
        assert_eq!(arg("zz", false), Ok(b"zz".to_vec()));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(2048), "2.0 KiB");
        assert_eq!(size(3 << 20), "3.0 MiB");
    }
}
