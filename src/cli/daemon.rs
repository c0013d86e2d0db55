//! Command-line arguments of `eboardd run`, `eboardd simulate` and `eboardd demo`, and how
//! they are carried out (logging set up for a terminal or for journald).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use crate::config::Overrides;
use crate::daemon::demo::{DemoOptions, SimulateOptions};
use crate::daemon::{ConfigSource, Options, Print};
use crate::sim::Style;

/// `eboardd run`.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Configuration file (TOML; see eboardd.example.toml).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Serve this serial port too (repeatable); it is retried until it appears. A driver name
    /// before it picks the board family: `millennium:/dev/ttyUSB0` (default: DGT).
    #[arg(long = "port", value_name = "PATH")]
    pub ports: Vec<PathBuf>,
    /// Write captures here (overrides the file).
    #[arg(long, value_name = "DIR")]
    pub capture_dir: Option<PathBuf>,
    /// Do not look for boards on USB.
    #[arg(long)]
    pub no_discovery: bool,
    /// Do not sync captures to disk before broadcasting (faster; a power cut may lose the
    /// last moves).
    #[arg(long)]
    pub no_fsync: bool,
    /// Print every event as a JSON line on standard output.
    #[arg(long)]
    pub events: bool,
    /// The broadcast outputs.
    #[command(flatten)]
    pub out: super::output::OutputArgs,
}

/// Handling styles for the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StyleArg {
    /// Textbook handling, every change reported at once.
    Clean,
    /// Ordinary players on a scanning board.
    Human,
    /// Fast hands, early clock presses.
    Blitz,
}

/// `eboardd simulate`.
#[derive(Debug, Clone, Args)]
pub struct SimulateArgs {
    /// PGN file with the games to play (default: the demo's games).
    #[arg(long, value_name = "FILE")]
    pub pgn: Option<PathBuf>,
    /// Play only these games of the file (from 1; repeatable).
    #[arg(long = "game", value_name = "N")]
    pub games: Vec<usize>,
    /// Number of boards (board i starts with game i).
    #[arg(long, default_value_t = 1)]
    pub count: usize,
    /// Games each board plays (default: every game, one after another); 1 for a round, board
    /// i playing game i only.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub games_per_board: Option<u64>,
    /// Pace: 1 = real time, 10 = ten times faster.
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Keep a symlink to the pty here (a directory of board-N links with --count > 1).
    #[arg(long, value_name = "PATH")]
    pub link: Option<PathBuf>,
    /// How the players handle the pieces.
    #[arg(long, value_enum, default_value_t = StyleArg::Human)]
    pub style: StyleArg,
    /// Seed of the handling.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Serial number of the first board.
    #[arg(long, default_value_t = 10001)]
    pub serial: u32,
    /// No clock on the board's cable.
    #[arg(long)]
    pub no_clock: bool,
    /// Put line noise on the wire about every this many (game) seconds.
    #[arg(long, value_name = "SECS")]
    pub noise_every: Option<f64>,
    /// Start playing at once (default: when the host sets a mode).
    #[arg(long)]
    pub start_now: bool,
    /// Exit when every game has been played (2 s after the last move, for the host to read it).
    #[arg(long)]
    pub exit_when_done: bool,
    /// The board family to emulate (a chain family, dgt-bus, puts all --count boards on one
    /// port).
    #[arg(long, default_value = crate::family::DEFAULT_FAMILY, value_parser = family_name)]
    pub driver: &'static str,
}

/// A family of the family table, by name (for `--driver`).
fn family_name(s: &str) -> Result<&'static str, String> {
    crate::family::by_name(s)
        .map(crate::family::Family::name)
        .ok_or_else(|| format!("families: {}", crate::family::family_names()))
}

/// `eboardd demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// Simulated boards, 1 to 55 (one embedded game each): a number of DGT boards (4), or
    /// families with counts (dgt:2,millennium:1,certabo:1,dgt-bus:6; a chain family's boards
    /// share one port).
    #[arg(long, default_value = "4")]
    pub boards: crate::daemon::demo::BoardMix,
    /// Pace: 1 = real time.
    #[arg(long, default_value_t = 10.0)]
    pub speed: f64,
    /// Write captures here (default: a new temporary directory).
    #[arg(long, value_name = "DIR")]
    pub capture_dir: Option<PathBuf>,
    /// Print events as JSON lines instead of moves.
    #[arg(long)]
    pub events: bool,
    /// Serve the HTTP API and the arbiter page here while the demo plays (`off` for none).
    #[arg(long, value_name = "ADDR", default_value = crate::output::DEFAULT_HTTP)]
    pub http: String,
}

fn exit(result: Result<(), crate::daemon::DaemonError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("eboardd: error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Carries out `eboardd run`.
pub fn run(a: RunArgs) -> ExitCode {
    super::init_logging("info");
    // Boards and clients need descriptors: the hard limit, not the shell's default soft one.
    crate::daemon::descriptors::raise_soft_limit();
    let outputs = match super::output::outputs_of(&a.out, a.config.as_deref()) {
        Ok((_, o)) => o,
        Err(e) => {
            eprintln!("eboardd: error: {e}");
            return ExitCode::from(2);
        }
    };
    // On SIGHUP the same flags are completed from the reloaded file.
    let flags = a.out.clone();
    let reload = a.config.is_some().then(|| {
        crate::daemon::OutputReload::new(move |cfg| super::output::output_setup(&flags, Some(cfg)))
    });
    let opts = Options {
        outputs: Some(outputs),
        reload_outputs: reload,
        config: ConfigSource::File {
            path: a.config,
            overrides: Overrides {
                ports: a.ports,
                capture_dir: a.capture_dir,
                no_discovery: a.no_discovery,
                no_fsync: a.no_fsync,
            },
        },
        print: if a.events {
            Print::Events
        } else {
            Print::Nothing
        },
    };
    exit(crate::daemon::run(opts))
}

/// Carries out `eboardd simulate`.
pub fn simulate(a: SimulateArgs) -> ExitCode {
    super::init_logging("info");
    let mut games = match &a.pgn {
        Some(p) => match std::fs::read(p) {
            Ok(bytes) => crate::sim::pgn::parse_games_bytes(&bytes)
                .into_iter()
                .filter_map(Result::ok)
                .collect(),
            Err(e) => {
                eprintln!("eboardd: error: {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
        None => crate::daemon::demo::demo_games(),
    };
    if !a.games.is_empty() {
        let all = std::mem::take(&mut games);
        for n in &a.games {
            match n.checked_sub(1).and_then(|i| all.get(i)) {
                Some(g) => games.push(g.clone()),
                None => {
                    eprintln!("eboardd: error: no game {n} (the file has {})", all.len());
                    return ExitCode::from(2);
                }
            }
        }
    }
    if games.is_empty() {
        eprintln!("eboardd: error: no playable game");
        return ExitCode::from(2);
    }
    let style = match a.style {
        StyleArg::Clean => Style::Clean,
        StyleArg::Human => Style::Human,
        StyleArg::Blitz => Style::Blitz,
    };
    exit(crate::daemon::demo::simulate(SimulateOptions {
        games,
        per_board: a.games_per_board.map(|n| n as usize),
        count: a.count,
        speed: a.speed,
        link: a.link,
        style,
        seed: a.seed,
        serial: a.serial,
        no_clock: a.no_clock,
        noise_every: a.noise_every,
        start_now: a.start_now,
        exit_when_done: a.exit_when_done,
        family: a.driver,
        until_stopped: false,
    }))
}

/// Carries out `eboardd demo`.
pub fn demo(a: DemoArgs) -> ExitCode {
    super::init_logging("warn");
    let outputs = super::output::OutputArgs::parse_from_http(&a.http).map(|out| {
        out.output_config()
            .map(|config| crate::daemon::OutputSetup {
                config,
                round: crate::output::RoundInfo {
                    event: Some("eboardd demo".into()),
                    round: 1,
                    // The increment known, `[%emt]` is the clock's time spent at any speed.
                    time_control: crate::daemon::demo::demo_time_control(),
                    epoch_ms: super::output::now_ms(),
                    ..Default::default()
                },
            })
    });
    let outputs = match outputs {
        Ok(Ok(o)) => o,
        Ok(Err(e)) | Err(e) => {
            eprintln!("eboardd: error: {e}");
            return ExitCode::from(2);
        }
    };
    exit(crate::daemon::demo::demo(DemoOptions {
        outputs: Some(outputs),
        boards: a.boards,
        speed: a.speed,
        capture_dir: a.capture_dir,
        events: a.events,
    }))
}
