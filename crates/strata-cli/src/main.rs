//! `strata`: inspect, check, repair and operate any LevelDB-format database, Strata's or
//! LevelDB's (they are the same format), without ever damaging one by reading it.
//!
//! Database subcommands take the directory first (`strata get DB KEY`); file subcommands
//! take the file (`strata dump-table FILE`). Subcommands that only read open the database
//! with `Db::open_read_only`, which writes nothing. Exit status: 0 on success, 1 when the
//! command failed or `check` found a problem, 2 for a usage error (a bad flag, a key
//! given as hex that is not hex).

mod data;
mod files;
mod health;
mod lsm;
mod text;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use strata::{Db, Error, Options};

/// Inspect, check, repair and operate LevelDB-format databases (Strata's and LevelDB's).
#[derive(Debug, Parser)]
#[command(name = "strata", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// How keys and values are printed.
#[derive(Debug, Args, Clone, Copy)]
struct Show {
    /// Keys and values (in and out) as hex.
    #[arg(long)]
    hex: bool,
    /// One JSON object per line instead of text.
    #[arg(long)]
    json: bool,
}

/// A key range: `--from` (inclusive) to `--to` (exclusive), or a `--prefix`.
#[derive(Debug, Args, Clone)]
struct KeyRange {
    /// First key (inclusive).
    #[arg(long)]
    from: Option<String>,
    /// Last key (exclusive).
    #[arg(long)]
    to: Option<String>,
    /// Only keys starting with this.
    #[arg(long, conflicts_with_all = ["from", "to"])]
    prefix: Option<String>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the value of KEY.
    Get {
        db: PathBuf,
        key: String,
        #[command(flatten)]
        show: Show,
    },
    /// Set KEY to VALUE.
    Put {
        db: PathBuf,
        key: String,
        value: String,
        /// Keys and values as hex.
        #[arg(long)]
        hex: bool,
        /// Make the write durable before returning.
        #[arg(long)]
        sync: bool,
        /// Create the database if it does not exist.
        #[arg(long)]
        create: bool,
    },
    /// Delete KEY.
    Delete {
        db: PathBuf,
        key: String,
        /// The key as hex.
        #[arg(long)]
        hex: bool,
        /// Make the write durable before returning.
        #[arg(long)]
        sync: bool,
    },
    /// Print the entries of a key range, in order.
    Scan {
        db: PathBuf,
        #[command(flatten)]
        range: KeyRange,
        /// Stop after this many entries.
        #[arg(long)]
        limit: Option<usize>,
        /// Last key first.
        #[arg(long)]
        reverse: bool,
        #[command(flatten)]
        show: Show,
    },
    /// Count the entries of a key range.
    Count {
        db: PathBuf,
        #[command(flatten)]
        range: KeyRange,
        #[command(flatten)]
        show: Show,
    },
    /// Write every entry in a portable form `load` reads back: `KEY<TAB>VALUE` per line,
    /// escaped (`\xNN` for every byte but printable ASCII), or JSON lines with `--json`.
    Dump {
        db: PathBuf,
        /// JSON lines: {"key": ..., "value": ...}, escaped the same way.
        #[arg(long)]
        json: bool,
    },
    /// Read a dump (text or JSON lines) into the database, in batches. A malformed line
    /// stops it before anything is written, naming the line.
    Load {
        db: PathBuf,
        file: PathBuf,
        /// Entries per write batch.
        #[arg(long, default_value_t = 1000)]
        batch: usize,
        /// Create the database if it does not exist.
        #[arg(long)]
        create: bool,
    },
    /// Print a write-ahead log's records: offsets, checksum status, each batch's entries
    /// as `key#seq,KIND`.
    DumpWal {
        file: PathBuf,
        #[command(flatten)]
        show: Show,
    },
    /// Print a table's footer, index and every block's entries as `key#seq,KIND`, with
    /// block handles and checksum status.
    DumpTable {
        file: PathBuf,
        #[command(flatten)]
        show: Show,
    },
    /// Print a manifest's edits (a manifest file, or a database directory: its current
    /// manifest).
    DumpManifest {
        path: PathBuf,
        #[command(flatten)]
        show: Show,
    },
    /// Print a table's properties: entries, sizes, blocks, filter, compression, key range.
    TableProps {
        file: PathBuf,
        #[command(flatten)]
        show: Show,
    },
    /// Verify every table, log and manifest with checksums (Db::verify); exit status 0
    /// only when all is clean.
    Check {
        db: PathBuf,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Rebuild the database's manifest from the tables and logs that read cleanly.
    Repair { db: PathBuf },
    /// Compact the database (or a key range of it) down the levels.
    Compact {
        db: PathBuf,
        /// First key (inclusive).
        #[arg(long)]
        from: Option<String>,
        /// Last key (inclusive).
        #[arg(long)]
        to: Option<String>,
        /// Keys as hex.
        #[arg(long)]
        hex: bool,
    },
    /// Print every `leveldb.*` and `strata.*` property.
    Properties {
        db: PathBuf,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Make DEST (a new directory) a consistent, openable copy of the database as of one
    /// sequence number, with hard links to its tables where possible.
    Checkpoint {
        db: PathBuf,
        dest: PathBuf,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
    /// The levels, tables, sizes, key ranges and overlaps; `--html FILE` also draws them.
    Lsm {
        db: PathBuf,
        /// Write a self-contained HTML picture: one bar per table, placed by key range.
        #[arg(long)]
        html: Option<PathBuf>,
        #[command(flatten)]
        show: Show,
    },
}

/// Why a command failed, and the exit status it gives.
#[derive(Debug)]
pub struct Failure {
    message: String,
    code: u8,
}

impl Failure {
    /// A failed command (status 1).
    pub fn new(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 1,
        }
    }

    /// A usage error (status 2).
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            message: message.into(),
            code: 2,
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::new(e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Failure::new(e.to_string())
    }
}

/// What a command returns.
pub type Outcome = Result<(), Failure>;

/// Standard output, buffered; a reader that went away (`strata scan DB | head`) ends the
/// command quietly instead of failing it.
#[derive(Debug)]
pub struct Out {
    w: std::io::BufWriter<std::io::StdoutLock<'static>>,
}

impl Out {
    /// Standard output.
    #[allow(clippy::new_without_default)] // one per command, never defaulted
    pub fn new() -> Self {
        Out {
            w: std::io::BufWriter::new(std::io::stdout().lock()),
        }
    }

    /// Writes `line` and a newline.
    pub fn line(&mut self, line: &str) -> Outcome {
        use std::io::Write;
        writeln!(self.w, "{line}").map_err(Failure::output)
    }

    /// Flushes what is buffered.
    pub fn done(mut self) -> Outcome {
        use std::io::Write;
        self.w.flush().map_err(Failure::output)
    }
}

impl Failure {
    fn output(e: std::io::Error) -> Failure {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Failure {
                message: String::new(),
                code: 0,
            }
        } else {
            Failure::new(format!("writing output: {e}"))
        }
    }
}

/// A progress bar on standard error while a long step runs, only when standard output is
/// a terminal (scripts and pipes get the summary alone): `total` steps, or a spinner.
pub fn progress(what: &str, total: Option<u64>) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    let bar = match total {
        Some(n) => indicatif::ProgressBar::new(n),
        None => {
            let s = indicatif::ProgressBar::new_spinner();
            s.enable_steady_tick(std::time::Duration::from_millis(120));
            s
        }
    };
    bar.set_message(what.to_string());
    let style = match total {
        Some(_) => indicatif::ProgressStyle::with_template("{msg} [{bar:40}] {pos}/{len} {eta}"),
        None => indicatif::ProgressStyle::with_template("{spinner} {msg} {elapsed}"),
    };
    if let Ok(style) = style {
        bar.set_style(style);
    }
    Some(bar)
}

/// Opens `db` for reading only, with errors that say what to do.
pub fn open_read_only(db: &Path) -> Result<Db, Failure> {
    Db::open_read_only(db, Options::default()).map_err(|e| opening(db, e))
}

/// Opens `db` for writing (creating it when `create`).
pub fn open_read_write(db: &Path, create: bool) -> Result<Db, Failure> {
    let options = Options {
        create_if_missing: create,
        ..Options::default()
    };
    Db::open(db, options).map_err(|e| opening(db, e))
}

fn opening(db: &Path, e: Error) -> Failure {
    match e {
        Error::Locked(_) => Failure::new(format!(
            "{}: the database is in use by another process (its LOCK is held)",
            db.display()
        )),
        Error::NotFound(_) => Failure::new(format!("{}: no database here", db.display())),
        other => Failure::new(format!("{}: {other}", db.display())),
    }
}

/// A key given on the command line (hex when `hex`); a bad one is a usage error.
pub fn key_arg(s: &str, hex: bool) -> Result<Vec<u8>, Failure> {
    text::arg(s, hex).map_err(Failure::usage)
}

fn run(cli: Cli) -> Outcome {
    match cli.command {
        Command::Get { db, key, show } => data::get(&db, &key, show),
        Command::Put {
            db,
            key,
            value,
            hex,
            sync,
            create,
        } => data::put(&db, &key, &value, hex, sync, create),
        Command::Delete { db, key, hex, sync } => data::delete(&db, &key, hex, sync),
        Command::Scan {
            db,
            range,
            limit,
            reverse,
            show,
        } => data::scan(&db, &range, limit, reverse, show),
        Command::Count { db, range, show } => data::count(&db, &range, show),
        Command::Dump { db, json } => data::dump(&db, json),
        Command::Load {
            db,
            file,
            batch,
            create,
        } => data::load(&db, &file, batch, create),
        Command::DumpWal { file, show } => files::dump_wal(&file, show),
        Command::DumpTable { file, show } => files::dump_table(&file, show),
        Command::DumpManifest { path, show } => files::dump_manifest(&path, show),
        Command::TableProps { file, show } => files::table_props(&file, show),
        Command::Check { db, json } => health::check(&db, json),
        Command::Repair { db } => health::repair(&db),
        Command::Compact { db, from, to, hex } => {
            health::compact(&db, from.as_deref(), to.as_deref(), hex)
        }
        Command::Properties { db, json } => health::properties(&db, json),
        Command::Checkpoint { db, dest, json } => health::checkpoint(&db, &dest, json),
        Command::Lsm { db, html, show } => lsm::lsm(&db, html.as_deref(), show),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            if !f.message.is_empty() {
                eprintln!("strata: {}", f.message);
            }
            ExitCode::from(f.code)
        }
    }
}
