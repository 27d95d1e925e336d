//! Warm outputs (J2): when the block cache holds most of a compaction's input blocks, the
//! compaction puts its output tables' blocks into the cache as it writes them, so that a
//! read-heavy load over a hot set that fits in the cache does not pay a read and a
//! decompression for every block again after each compaction. Flushes follow the last
//! compaction's decision while readers use the cache.
//!
//! Without this, a compaction of level 0 into level 1 over such a hot set leaves every
//! cached block of its inputs for dead: the next reads miss and decompress the whole set
//! again (and, with a full cache, admit a block only at its second miss, BC6). When the
//! data is much larger than the cache, an output block is no likelier to be read than the
//! block it would evict, and keeping it costs the compaction time: then nothing is kept.
//!
//! Invariants:
//! - J2 a compaction keeps and caches its outputs' data blocks only if the block cache
//!   held at least half of its input tables' data blocks when it began ([`WARM_SHARE`]),
//!   and a flush only if the last compaction did and readers looked up blocks since the
//!   flush before; only blocks stored compressed are kept (a mapped table's plain block is
//!   read in place, never through the cache); a block's stored bytes are checked as a
//!   read checks them before it is cached (T4 stays true for it), and one that fails is
//!   left for the first read to report.

use std::sync::atomic::Ordering;

use super::state::DbInner;
use crate::compaction::Compaction;
use crate::sstable::{KeptBlock, Table};

/// The least share of a compaction's input blocks the cache must hold for its outputs to
/// be cached. Measured (`docs/results/2026-12-02-warm-outputs/`): a read-modify-write mix
/// over 100,000 keys (the cache holds most of them) gains, one over 1,000,000 keys with the
/// same 8 MB cache (a tenth of them) lost 11-15 % when every compaction kept its blocks.
pub(super) const WARM_SHARE: (usize, usize) = (1, 2);

/// Whether compaction `c` keeps its outputs' blocks (J2): decided when it begins, from the
/// share of its input tables' blocks the cache holds now, and recorded for the flushes
/// that follow.
pub(super) fn compaction_warms(db: &DbInner, c: &Compaction) -> bool {
    let (mut cached, mut blocks) = (0, 0);
    for f in c.inputs.iter().flatten() {
        let (c, b) = db
            .table_cache
            .peek(f.number)
            .map_or((0, 0), |t| t.cached_share());
        cached += c;
        // A table that was never read counts as cold, by its size in 4 KiB blocks.
        blocks += if b > 0 {
            b
        } else {
            (f.size / 4096).max(1) as usize
        };
    }
    let warm = cached * WARM_SHARE.1 >= blocks * WARM_SHARE.0 && cached > 0;
    db.warm_outputs.store(warm, Ordering::Relaxed);
    warm
}

/// True if a flush caches its table (J2): the last compaction did, and readers looked up
/// blocks since the last flush asked.
pub(super) fn flush_warms(db: &DbInner) -> bool {
    db.table_cache.read_since_asked() && db.warm_outputs.load(Ordering::Relaxed)
}

/// Caches `blocks`, kept by the builder of `table` (J2).
pub(super) fn warm(table: &Table, blocks: Vec<KeptBlock>) {
    for block in blocks {
        table.warm(block.handle, block.contents);
    }
}
