//! Command-line interface: every subcommand's arguments and how each is carried out. The
//! binary (`main.rs`) only parses and calls [`run`].
//!
//! - [`daemon`]: `run`, `simulate`, `demo`, and logging set-up;
//! - [`output`]: the broadcast outputs' flags (shared by `run` and `demo`) and `serve-replay`;
//! - [`round`]: `round load`, a pairings file sent to the running daemon;
//! - [`check`]: `check`, the configuration and what it names checked without starting;
//! - here: the command tree and `replay`.

pub mod check;
pub mod daemon;
pub mod output;
pub mod round;

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
    /// Serve boards: serial ports and USB boards, captures, events (the daemon).
    Run(Box<daemon::RunArgs>),
    /// Emulated DGT boards with DGT 3000 clocks on pseudo-terminals, playing PGN games.
    Simulate(daemon::SimulateArgs),
    /// The daemon serving simulated boards that play real games; prints the moves.
    Demo(daemon::DemoArgs),
    /// Replay capture files through the same code as the live daemon; print PGN or events.
    Replay {
        /// Capture files (format eboard-capture v1) or capture directories (e.g. the daemon's):
        /// every capture's records merged by absolute time.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the event stream as JSON Lines instead of PGN.
        #[arg(long)]
        events: bool,
    },
    /// Replay captures at recorded (or faster) pace into the broadcaster and serve every
    /// output: HTTP API, event streams, relay files, MQTT, LiveChess API, arbiter page.
    ServeReplay(Box<output::ServeReplayArgs>),
    /// Serve the whole round of several daemons from their MQTT broker: every node's boards
    /// in one API, page, event stream, relay files and LiveChess API.
    ServeMqtt(Box<output::ServeMqttArgs>),
    /// Rounds of the running daemon: `eboardd round load FILE --round R` sends a round's
    /// pairings (FIDE TRF or CSV) to its API with the token.
    Round(round::RoundArgs),
    /// Check the configuration file and what it names (ports, token files, capture directory)
    /// without starting anything: one line per problem and exit status 1, or OK and 0.
    Check(check::CheckArgs),
}

/// Run the command line; returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Run(a) => daemon::run(*a),
        Command::Simulate(a) => daemon::simulate(a),
        Command::Demo(a) => daemon::demo(a),
        Command::ServeReplay(args) => output::serve_replay(*args),
        Command::ServeMqtt(args) => output::serve_mqtt(*args),
        Command::Round(args) => round::run(args),
        Command::Check(args) => check::run(args),
        Command::Replay { files, events } => {
            // Protocol warnings (e.g. a clock whose status bits disagree) go to standard error,
            // in colour only on a terminal.
            init_logging("warn");
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            let mut warn = |w: &str| eprintln!("eboardd: warning: {w}");
            match crate::replay::replay_paths(&files, events, &mut out, &mut warn) {
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

/// Logs to standard error with `tracing`: level from `RUST_LOG` (else `default`), colours only
/// on a terminal, no timestamps under journald (it adds its own).
pub fn init_logging(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_target(false)
        .with_writer(std::io::stderr);
    let result = if std::env::var_os("JOURNAL_STREAM").is_some() {
        builder.without_time().try_init()
    } else {
        builder.try_init()
    };
    let _ = result;
}
