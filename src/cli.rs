//! Command-line interface.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// eboardd: electronic chess boards to arbiters and broadcasts.
#[derive(Debug, Parser)]
#[command(name = "eboardd", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay capture files through the same code as the live daemon; print PGN or events.
    Replay {
        /// Capture files (format eboard-capture v1), replayed one after another.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the event stream as JSON Lines instead of PGN.
        #[arg(long)]
        events: bool,
    },
    /// Replay captures at recorded (or faster) pace into the broadcaster and serve every
    /// output: HTTP API, event streams, relay files, MQTT, LiveChess API, arbiter page.
    ServeReplay(Box<crate::output::cli::ServeReplayArgs>),
}

/// Run the command line; returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::ServeReplay(args) => crate::output::cli::serve_replay(*args),
        Command::Replay { files, events } => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let mut warn = |w: &str| eprintln!("eboardd: warning: {w}");
            match crate::replay::replay_files(&files, events, &mut out, &mut warn) {
                Ok(()) => ExitCode::SUCCESS,
                Err(crate::replay::ReplayError::Output(e))
                    if e.kind() == std::io::ErrorKind::BrokenPipe =>
                {
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("eboardd: error: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
