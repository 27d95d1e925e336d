//! The figures LevelDB's benchmark page published in July 2011 (2011-era hardware with
//! spinning disks), drawn as a faded reference row under this machine's bars. They show
//! the page's shape, not targets: only same-run ratios compare engines.

/// A published figure: (engine as `--engines` names it, operations per second).
pub type Figure = (&'static str, f64);

/// The page's figures for a suite row and benchmark, if it published any.
///
/// Batches count entries per second, as the page did. The synchronous-write row gave one
/// SQLite figure (WAL off) and the disk-cache-off figures in brackets, which are left out.
pub fn figures(row: &str, benchmark: &str) -> &'static [Figure] {
    const L: &str = "leveldb";
    const K: &str = "kyoto-treedb";
    const S: &str = "sqlite3";
    const W: &str = "sqlite3-wal";
    match (row, benchmark) {
        ("1A", "readseq") => &[
            (L, 4_030_000.0),
            (K, 1_010_000.0),
            (S, 186_000.0),
            (W, 383_000.0),
        ],
        ("1B", "readrandom") => &[
            (L, 129_000.0),
            (K, 151_000.0),
            (S, 146_000.0),
            (W, 134_000.0),
        ],
        ("1C", "fillseq") => &[(L, 779_000.0), (K, 342_000.0), (S, 26_900.0), (W, 48_600.0)],
        ("1D", "fillrandom") => &[(L, 164_000.0), (K, 88_500.0), (S, 420.0), (W, 9_860.0)],
        ("2A", "fill100K") => &[(L, 480.0), (K, 1_100.0), (S, 2_200.0), (W, 1_600.0)],
        ("2B", "fillbatch") => &[(L, 840_000.0), (S, 100_000.0), (W, 124_000.0)],
        ("2B", "fillrandbatch") => &[(L, 221_000.0), (S, 1_000.0), (W, 22_000.0)],
        ("2C", "fillsync") => &[(L, 2_400.0), (K, 100.0), (S, 110.0)],
        ("2D", "fillseq") => &[(L, 594_000.0), (K, 485_000.0), (S, 26_900.0), (W, 48_600.0)],
        ("2D", "fillrandom") => &[(L, 135_000.0), (K, 159_000.0), (S, 420.0), (W, 9_860.0)],
        ("2E", "fillseq") => &[(L, 812_000.0), (K, 321_000.0), (S, 26_200.0), (W, 48_500.0)],
        ("2E", "fillrandom") => &[(L, 355_000.0), (K, 284_000.0), (S, 450.0), (W, 9_670.0)],
        ("3A", "readseq") => &[
            (L, 5_210_000.0),
            (K, 1_070_000.0),
            (S, 221_000.0),
            (W, 609_000.0),
        ],
        ("3A", "readrandom") => &[
            (L, 190_000.0),
            (K, 463_000.0),
            (S, 197_000.0),
            (W, 186_000.0),
        ],
        ("3B", "readseq") => &[
            (L, 4_880_000.0),
            (K, 1_230_000.0),
            (S, 186_000.0),
            (W, 383_000.0),
        ],
        ("3B", "readrandom") => &[
            (L, 149_000.0),
            (K, 175_000.0),
            (S, 146_000.0),
            (W, 134_000.0),
        ],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_the_page_have_figures() {
        assert_eq!(figures("1C", "fillseq")[0], ("leveldb", 779_000.0));
        // TreeDB has no batches: the page said n/a, so no figure.
        assert!(
            figures("2B", "fillbatch")
                .iter()
                .all(|(e, _)| *e != "kyoto-treedb")
        );
        assert!(figures("", "compact").is_empty());
    }
}
