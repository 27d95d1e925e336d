//! `strata-bench`: a db_bench-compatible benchmark for Strata and its peers.
//!
//! Not built yet: the workloads, flags and peers arrive with the benchmark issues. Until
//! then the tool says so and exits with an error, so no script mistakes it for a result.

use std::process::ExitCode;

const USAGE: &str = "\
usage: strata-bench [--benchmarks=LIST] [--num=N] [--engines=LIST] ...

strata-bench will run LevelDB's db_bench workloads (fillseq, fillrandom, readrandom, ...)
on Strata and on its peers. It is not built yet: the Strata engine's format layer exists,
the database and the workloads do not. See README.md for the status of each part.";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    eprintln!("{USAGE}");
    if args.iter().any(|a| a == "--help" || a == "-h") {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
