//! The `eboardd` binary: a thin command-line front over the library.

use clap::Parser;

fn main() -> std::process::ExitCode {
    eboardd::cli::run(eboardd::cli::Cli::parse())
}
