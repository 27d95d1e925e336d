//! The knobs: [`Options`] for a database, [`ReadOptions`] and [`WriteOptions`] per call.
//! Defaults are LevelDB's, except where `docs/design.md` says why Strata differs.

use std::sync::Arc;
use std::time::Duration;

use crate::comparator::{Comparator, InternalOrder};
use crate::env::{DiskEnv, Env};
use crate::error::{Error, Result};
use crate::filter::{BloomPolicy, Filter, FilterPolicy};
use crate::snapshot::Snapshot;
use crate::sstable::{BlockCache, BlockReads, Compression, TableFormat, TableOptions};

/// What opening a database does with damaged write-ahead log records (RocksDB's WAL
/// recovery modes). Every drop is written to `LOG` and to the `strata.recovery` property.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RecoveryMode {
    /// Replay up to the first damaged record and drop everything after it, later logs
    /// included: what a crash leaves is a torn or garbled tail of unsynced writes, and the
    /// database comes back as of a point in time. (An older log is synced before any
    /// synced write in a later one is acknowledged, so nothing dropped was acknowledged
    /// as synced.)
    #[default]
    PointInTime,
    /// Any damaged or torn record, even a crash's torn tail, refuses to open.
    AbsoluteConsistency,
    /// Skip damaged records wherever they are and keep every readable one (LevelDB's
    /// behaviour): for getting what can be got out of a damaged database. The result may
    /// have holes.
    Salvage,
}

/// How a database is opened and how it lays out its files.
#[derive(Debug, Clone)]
pub struct Options {
    /// Create the database if it does not exist (default false).
    pub create_if_missing: bool,
    /// Refuse to open a database that exists (default false).
    pub error_if_exists: bool,
    /// Treat any damage found while opening (including a torn WAL tail) as an error
    /// (default false). `true` is [`RecoveryMode::AbsoluteConsistency`] whatever
    /// `recovery_mode` says.
    pub paranoid_checks: bool,
    /// What opening does with damaged write-ahead log records (default
    /// [`RecoveryMode::PointInTime`]).
    pub recovery_mode: RecoveryMode,
    /// Bytes of writes gathered in memory before a flush to a table (default 4 MiB).
    pub write_buffer_size: usize,
    /// Memtables held in memory at once, the one taking writes included (RocksDB's name;
    /// default 2, as LevelDB: one full memtable may wait for its flush while the next
    /// fills). With 3 or more, writes go on into a new memtable while several full ones
    /// wait, so a writer waits only when flushes fall behind by that many: it helps when a
    /// flush takes as long as filling a memtable (large values, slow syncs), at the cost
    /// of up to this many write buffers of memory.
    pub max_write_buffer_number: usize,
    /// Level-0 tables at which each write is delayed by a millisecond (RocksDB's name;
    /// default 8, LevelDB's fixed value), so compactions catch up. With value separation
    /// level-0 tables hold refs only (a 4 MB write buffer of 1 KB values makes a table of
    /// about 100 KB), and a larger count costs little: RocksDB's default is 20.
    pub level0_slowdown_writes_trigger: usize,
    /// Level-0 tables at which writes wait for a compaction (default 12, LevelDB's;
    /// RocksDB's is 36).
    pub level0_stop_writes_trigger: usize,
    /// Files kept open at once for reading (default 1000): tables, and with value
    /// separation on, blob files too (a quarter of them for blob files, and sixteen
    /// mapped blob files per such slot besides, since a map holds no descriptor). Ten
    /// are kept aside, as LevelDB does.
    pub max_open_files: usize,
    /// The block cache; `None` gives the database its own 8 MiB cache
    /// (`DEFAULT_BLOCK_CACHE`, below). Share one cache between databases by passing clones
    /// of the same `Arc`.
    pub block_cache: Option<Arc<BlockCache>>,
    /// Target size of a data block before compression (default 4 KiB).
    pub block_size: usize,
    /// Entries between full keys in a data block (default 16).
    pub block_restart_interval: usize,
    /// Target size of a table file (default 2 MiB).
    pub max_file_size: usize,
    /// Block compression (default Snappy).
    pub compression: Compression,
    /// Bloom filter bits per key; `None` (the default, as in LevelDB) writes no filters.
    /// Shorthand for `filter_policy` set to LevelDB's built-in Bloom filter
    /// ([`BloomPolicy`](crate::BloomPolicy)); set one or the other.
    pub bloom_bits_per_key: Option<usize>,
    /// A filter policy of the user's own (default `None`). Tables record its name and are
    /// read with their filters only by a policy of that name; tables with LevelDB's Bloom
    /// filter are always read with it.
    pub filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// The order of user keys (default `None`: bytewise, `leveldb.BytewiseComparator`).
    /// Its name is recorded in the manifest when the database is created; opening with a
    /// comparator of another name is an error naming both.
    pub comparator: Option<Arc<dyn Comparator>>,
    /// How long a flush or compaction that failed while writing its tables (a full disk,
    /// most often) waits before it runs again by itself (default 1 s). Zero: only
    /// [`Db::resume`](crate::Db::resume) runs it again. Meanwhile reads and the writes that
    /// fit in the memtable go on.
    pub background_retry_interval: Duration,
    /// Write the write-ahead log through a shared memory map (default true): an
    /// unsynced write is then a copy into the operating system's page cache, with no
    /// system call, and survives a process crash exactly as a `write(2)` would (C2). The
    /// log is preallocated a megabyte ahead, so until it is closed it ends in zeros, which
    /// Strata and LevelDB read as its end. `false` writes it with one `write(2)` per write
    /// group, as LevelDB does. Filesystems that cannot preallocate get `write(2)` either way.
    pub mmap_wal: bool,
    /// Read tables through read-only memory maps (default true), as LevelDB does on
    /// 64-bit machines: a block read is then a look at the page cache, with no system
    /// call and no copy, and checksums are verified and blocks decompressed straight from
    /// the map. Mapped pages are the page cache's, not the block cache's: they count in
    /// the process's resident memory (as file pages) while touched, and the kernel evicts
    /// them as it likes. A table truncated by another process while mapped makes the next
    /// read of a lost page kill the process (`SIGBUS`); `false` reads with `pread`.
    pub mmap_reads: bool,
    /// Threads that merge one large compaction at once, each a key range of it (default
    /// 2; 1: the background thread alone, as LevelDB). A writer that is held back while
    /// level 0 drains leaves its core idle: the extra threads put it to work, so the
    /// compaction it waits for ends sooner. Outputs and their order are the same whatever
    /// the count, up to where output tables are cut.
    pub max_subcompactions: usize,
    /// A write buffer larger than this is cut into runs of at least this many bytes (at
    /// most 16 runs), so that inserts stay in the CPU caches however large the buffer
    /// (default 1 MiB; 0: one run, as LevelDB). Lookups skip runs through a Bloom filter
    /// per run; iterators and flushes merge them.
    pub memtable_run_size: usize,
    /// Value separation (key-value separation, `crate::blob`): values of at least this
    /// many bytes are written once, at write time, to a blob file beside the WAL, and the
    /// WAL, memtable and tables carry a small reference instead (0, the default: off, and
    /// the database stays in LevelDB 1.23's format). Once a database has been opened with
    /// it on, its manifest says so and LevelDB refuses to open it. The bytes of a
    /// memtable's blob file count toward `write_buffer_size`: the memtable is switched
    /// (and flushed) after about a write buffer of values, as without separation, so
    /// compactions find overwritten values' refs, and their garbage, as soon.
    pub blob_threshold: usize,
    /// Target size of a blob file that garbage collection writes (default 4 MiB): a
    /// compaction moving live values out of mostly-dead blob files cuts its new blob file
    /// at this size. (The blob file a WAL's values go to is cut with its memtable instead:
    /// see `blob_threshold`.)
    pub blob_file_size: usize,
    /// Garbage collection of blob files: a compaction moves the values a kept ref points
    /// to when at least this fraction of their blob file's bytes is garbage (refs dropped
    /// by compactions), so the file can die (default 0.25; 1.0: never).
    pub blob_gc_ratio: f64,
    /// Give a dropped blob value's disk space back without moving anything (default
    /// on): once no reader can reach a value whose ref a compaction dropped, the whole
    /// filesystem blocks inside its record, and those it shares with dead neighbours, are
    /// freed (`FALLOC_FL_PUNCH_HOLE`; X6). A file then counts only the garbage its holes
    /// did not free against `blob_gc_ratio`, and is still collected by moving once three
    /// quarters of its bytes are garbage, so that files do not multiply. Off: garbage
    /// takes space until its file is collected or dies.
    pub blob_punch_holes: bool,
    /// Store blob values Snappy-compressed (each one whose compressed form is at least an
    /// eighth smaller; others stay raw). Off by default; used only with a
    /// `blob_threshold`. Compression runs in the writer, at write time (about 0.7 ns a
    /// byte on compressible values; an incompressible value is given up on quickly), and
    /// wherever a raw value is copied into a new blob file (a garbage collection's move,
    /// recovery's copy); reads decompress. Refs say whether their value is compressed, so
    /// files written with it on and off read the same. The first open with it on marks
    /// the manifest (tag 20 = 2), so a Strata older than compressed values refuses the
    /// database instead of failing on its refs.
    pub blob_compression: bool,
    /// The filesystem (default: the real one).
    pub env: Arc<dyn Env>,
}

/// Bytes of the block cache a database makes for itself when [`Options::block_cache`] is
/// `None`.
pub(crate) const DEFAULT_BLOCK_CACHE: usize = 8 << 20;

impl Options {
    /// Whether values are separated (`blob_threshold` above 0): the one test of it.
    pub fn separates_values(&self) -> bool {
        self.blob_threshold > 0
    }

    /// The recovery mode in force (`paranoid_checks` forces absolute consistency).
    pub fn effective_recovery_mode(&self) -> RecoveryMode {
        if self.paranoid_checks {
            RecoveryMode::AbsoluteConsistency
        } else {
            self.recovery_mode
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: false,
            error_if_exists: false,
            paranoid_checks: false,
            recovery_mode: RecoveryMode::PointInTime,
            write_buffer_size: 4 << 20,
            max_write_buffer_number: 2,
            level0_slowdown_writes_trigger: crate::version::L0_SLOWDOWN_TRIGGER,
            level0_stop_writes_trigger: crate::version::L0_STOP_TRIGGER,
            max_open_files: 1000,
            block_cache: None,
            block_size: 4096,
            block_restart_interval: 16,
            max_file_size: 2 << 20,
            compression: Compression::Snappy,
            bloom_bits_per_key: None,
            filter_policy: None,
            comparator: None,
            background_retry_interval: Duration::from_secs(1),
            mmap_wal: true,
            mmap_reads: true,
            max_subcompactions: 2,
            memtable_run_size: crate::memtable::MIN_RUN_BYTES,
            blob_threshold: 0,
            blob_file_size: 4 << 20,
            blob_gc_ratio: 0.25,
            blob_punch_holes: true,
            blob_compression: false,
            env: Arc::new(DiskEnv::new()),
        }
    }
}

impl Options {
    /// Checks the settings, naming the first absurd one.
    pub fn validate(&self) -> Result<()> {
        let check = |ok: bool, what: &str| {
            if ok {
                Ok(())
            } else {
                Err(Error::InvalidArgument(what.to_string()))
            }
        };
        check(
            self.write_buffer_size >= 4096,
            "write_buffer_size must be at least 4 KiB",
        )?;
        check(
            self.write_buffer_size <= 1 << 30,
            "write_buffer_size must be at most 1 GiB",
        )?;
        check(
            (2..=16).contains(&self.max_write_buffer_number),
            "max_write_buffer_number must be 2 to 16",
        )?;
        check(
            (crate::version::L0_COMPACTION_TRIGGER..=1000)
                .contains(&self.level0_slowdown_writes_trigger)
                && self.level0_slowdown_writes_trigger <= self.level0_stop_writes_trigger
                && self.level0_stop_writes_trigger <= 1000,
            "level-0 triggers must satisfy 4 <= slowdown <= stop <= 1000",
        )?;
        check(
            self.max_open_files >= 20,
            "max_open_files must be at least 20",
        )?;
        check(
            (1..=4 << 20).contains(&self.block_size),
            "block_size must be 1 B to 4 MiB",
        )?;
        check(
            self.block_restart_interval >= 1,
            "block_restart_interval must be at least 1",
        )?;
        check(
            (4096..=1 << 30).contains(&self.max_file_size),
            "max_file_size must be 4 KiB to 1 GiB",
        )?;
        check(
            (1..=64).contains(&self.max_subcompactions),
            "max_subcompactions must be 1 to 64",
        )?;
        check(
            self.bloom_bits_per_key
                .is_none_or(|b| (1..=64).contains(&b)),
            "bloom_bits_per_key must be 1 to 64",
        )?;
        check(
            self.bloom_bits_per_key.is_none() || self.filter_policy.is_none(),
            "set bloom_bits_per_key or filter_policy, not both",
        )?;
        check(
            self.blob_file_size >= 4096,
            "blob_file_size must be at least 4 KiB",
        )?;
        check(
            (0.0..=1.0).contains(&self.blob_gc_ratio),
            "blob_gc_ratio must be 0 to 1",
        )?;
        Ok(())
    }

    /// The table layout these options ask for.
    pub(crate) fn table_options(&self) -> TableOptions {
        let filter = match (&self.filter_policy, self.bloom_bits_per_key) {
            (Some(p), _) => Some(Filter::Custom(Arc::clone(p))),
            (None, Some(bits)) => Some(Filter::Bloom(BloomPolicy::new(bits))),
            (None, None) => None,
        };
        TableOptions {
            block_size: self.block_size,
            restart_interval: self.block_restart_interval,
            compression: self.compression,
            filter,
            order: self.internal_order(),
        }
    }

    /// How the database's tables are read: its key order, and its filter policy (or
    /// LevelDB's Bloom filter when it has none, so tables LevelDB wrote with one are read
    /// with it).
    pub(crate) fn table_format(&self) -> TableFormat {
        TableFormat {
            order: self.internal_order(),
            filter: Some(match &self.filter_policy {
                Some(p) => Filter::Custom(Arc::clone(p)),
                None => Filter::builtin(),
            }),
        }
    }

    /// The internal-key order over `comparator`.
    pub(crate) fn internal_order(&self) -> InternalOrder {
        InternalOrder::new(self.comparator.as_ref())
    }
}

/// Per-read settings.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// Verify the checksum of every block read (default true; LevelDB's default is false).
    pub verify_checksums: bool,
    /// Keep blocks read in the block cache (default true; turn off for bulk scans).
    pub fill_cache: bool,
    /// Read as of this snapshot instead of the latest state.
    pub snapshot: Option<Snapshot>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            verify_checksums: true,
            fill_cache: true,
            snapshot: None,
        }
    }
}

impl ReadOptions {
    /// How this read gets table blocks.
    pub fn block_reads(&self) -> BlockReads {
        BlockReads {
            verify_checksums: self.verify_checksums,
            fill_cache: self.fill_cache,
        }
    }
}

/// Per-write settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Make the write durable (fsync the log) before acknowledging it (default false:
    /// the write survives a process crash but not a power cut).
    pub sync: bool,
}
