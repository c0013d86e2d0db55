//! `eboardd simulate` (emulated boards on pseudo-terminals, for a daemon to serve) and
//! `eboardd demo` (the daemon serving several emulated boards that play real games, printing
//! the moves as they happen).
//!
//! The demo's games are embedded: eight games of the FIDE Women's World Rapid Championship
//! 2024, taken from the test corpus (`tests/data/pgn/standard/`, MIT licence; the notice is at
//! the top of `demo_games.pgn`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::hub::{EventLine, Hub};
use super::{ConfigSource, DaemonError, Options, Print, io_err};
use crate::config::{BoardConfig, Config};
use crate::sim::emulator::runner::{self, RunnerConfig};
use crate::sim::emulator::{ClockModel, Emulator, EmulatorConfig, Script};
use crate::sim::pgn::{ScriptGame, parse_games_bytes};
use crate::sim::{SimConfig, Style};

/// The embedded games.
pub const DEMO_GAMES: &str = include_str!("demo_games.pgn");

/// The embedded games, parsed.
pub fn demo_games() -> Vec<ScriptGame> {
    parse_games_bytes(DEMO_GAMES.as_bytes())
        .into_iter()
        .filter_map(Result::ok)
        .collect()
}

/// Turns events into lines for people (`eboardd demo`, `eboardd run` on a terminal).
#[derive(Debug, Default)]
pub struct Describer {
    /// SAN of the moves made, by (board, ply): to name a move taken back.
    san: std::collections::HashMap<(String, u64), String>,
}

impl Describer {
    /// One line about an event, or `None` for the ones not worth a line (clock readings,
    /// completions).
    pub fn line(&mut self, line: &EventLine) -> Option<String> {
        let v: Value = serde_json::from_str(&line.json).ok()?;
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        let numbered = |ply: u64, san: &str| {
            let dots = if ply % 2 == 1 { "." } else { "..." };
            format!("{}{dots} {san}", ply.div_ceil(2))
        };
        let what = match s("kind").as_str() {
            "board_connected" => format!("connected (serial {})", s("serial")),
            "board_disconnected" => "disconnected".to_string(),
            "game_started" => format!("game {} started", n("game")),
            "move_made" => {
                self.san.insert((line.board.clone(), n("ply")), s("san"));
                numbered(n("ply"), &s("san"))
            }
            "move_retracted" => {
                let san = self
                    .san
                    .get(&(line.board.clone(), n("ply")))
                    .cloned()
                    .unwrap_or_default();
                format!(
                    "({} taken back: not the move after all)",
                    numbered(n("ply"), &san)
                )
            }
            "irregularity" => format!("! {}", s("detail")),
            "game_ended" => format!(
                "game {} ended: {} ({})",
                n("game"),
                s("result"),
                s("reason").replace('_', " ")
            ),
            "correction" => format!(
                "arbiter's correction ({}): game at ply {}, result {}",
                v["op"]["action"].as_str().unwrap_or("?").replace('_', " "),
                n("ply"),
                s("result")
            ),
            _ => return None,
        };
        Some(format!("{:<9} {what}", line.board))
    }
}

/// Options of `eboardd simulate`.
#[derive(Debug, Clone)]
pub struct SimulateOptions {
    /// The games to play (all of them, one after another, on each board).
    pub games: Vec<ScriptGame>,
    /// Number of boards; board `i` starts with game `i` (modulo the number of games).
    pub count: usize,
    /// Script time per real time.
    pub speed: f64,
    /// Symlink to the pty (one board), or a directory for `board-N` links (several).
    pub link: Option<PathBuf>,
    /// Handling style.
    pub style: Style,
    /// Seed of the handling.
    pub seed: u64,
    /// Serial number of the first board (the next ones count up).
    pub serial: u32,
    /// No clock on the cable.
    pub no_clock: bool,
    /// Line noise about this often (script seconds).
    pub noise_every: Option<f64>,
    /// Start playing at once rather than at the host's first mode command.
    pub start_now: bool,
    /// Exit when every board has played its games.
    pub exit_when_done: bool,
}

fn emulator_for(o: &SimulateOptions, i: usize) -> Emulator {
    let n = o.games.len().max(1);
    let games: Vec<ScriptGame> = (0..o.games.len())
        .map(|k| o.games[(i + k) % n].clone())
        .collect();
    let mut sim = SimConfig::new(o.style, o.seed.wrapping_add(i as u64 * 7919));
    sim.dev = format!("board-{}", i + 1);
    let script = Script::from_games(&games, &sim, 10_000_000);
    Emulator::new(
        script,
        EmulatorConfig {
            serial: format!("{:05}", (o.serial as usize + i) % 100_000),
            clock: if o.no_clock {
                ClockModel::None
            } else {
                ClockModel::Dgt3000
            },
            noise_every: o.noise_every.map(|s| (s * 1e6) as i64),
            ..Default::default()
        },
    )
}

/// `eboardd simulate`: emulated boards on ptys until Ctrl-C (or until done).
pub fn simulate(o: SimulateOptions) -> Result<(), DaemonError> {
    let rt = super::runtime()?;
    rt.block_on(async {
        let mut handles = Vec::new();
        for i in 0..o.count.max(1) {
            let link = match (&o.link, o.count) {
                (Some(l), 1) => Some(l.clone()),
                (Some(dir), _) => {
                    std::fs::create_dir_all(dir)
                        .map_err(io_err(format!("creating {}", dir.display())))?;
                    Some(dir.join(format!("board-{}", i + 1)))
                }
                (None, _) => None,
            };
            let em = emulator_for(&o, i);
            let serial = em.config().serial.clone();
            let h = runner::spawn(
                em,
                RunnerConfig {
                    speed: o.speed,
                    link: link.clone(),
                    wait_for_host: !o.start_now,
                },
            )
            .map_err(io_err("opening a pseudo-terminal"))?;
            let path = link.unwrap_or_else(|| h.status().path);
            println!("board {} serial {serial}: {}", i + 1, path.display());
            handles.push(h);
        }
        use std::io::Write;
        let _ = std::io::stdout().flush();
        let mut signals =
            super::signals::Signals::new().map_err(io_err("installing signal handlers"))?;
        loop {
            tokio::select! {
                _ = signals.recv() => break,
                _ = tokio::time::sleep(Duration::from_millis(200)) => {
                    if o.exit_when_done && handles.iter().all(|h| h.status().finished) {
                        break;
                    }
                }
            }
        }
        for h in &handles {
            h.send(runner::Control::Stop);
        }
        for h in handles {
            let _ = h.task.await;
        }
        Ok(())
    })
}

/// Options of `eboardd demo`.
#[derive(Debug, Clone)]
pub struct DemoOptions {
    /// Number of simulated boards.
    pub boards: usize,
    /// Script time per real time.
    pub speed: f64,
    /// Where the captures go (default: a new directory under the system's temporary one).
    pub capture_dir: Option<PathBuf>,
    /// Print the events as JSON lines instead of moves.
    pub events: bool,
    /// The broadcast outputs to serve while the demo plays.
    pub outputs: Option<super::OutputSetup>,
}

/// `eboardd demo`: the daemon with simulated boards playing the embedded games.
pub fn demo(o: DemoOptions) -> Result<(), DaemonError> {
    let games = demo_games();
    let n = o.boards.clamp(1, 64);
    let dir = o.capture_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("eboardd-demo-{}", std::process::id()))
    });
    let rt = super::runtime()?;
    rt.block_on(async {
        let mut handles = Vec::new();
        let mut boards = Vec::new();
        for i in 0..n {
            let game = games[i % games.len()].clone();
            let sim = SimulateOptions {
                games: vec![game.clone()],
                count: n,
                speed: o.speed,
                link: None,
                style: Style::Human,
                seed: 2026 + i as u64,
                serial: 10001 + i as u32,
                no_clock: false,
                noise_every: None,
                start_now: false,
                exit_when_done: true,
            };
            let em = emulator_for(&sim, 0);
            boards.push(BoardConfig {
                number: i as u32 + 1,
                serial: em.config().serial.clone(),
                white: game.tag("White").map(str::to_string),
                black: game.tag("Black").map(str::to_string),
                white_clock: None,
            });
            let h = runner::spawn(
                em,
                RunnerConfig {
                    speed: o.speed,
                    link: None,
                    wait_for_host: true,
                },
            )
            .map_err(io_err("opening a pseudo-terminal"))?;
            handles.push(h);
        }
        let mut cfg = Config::default();
        cfg.event.name = Some("eboardd demo".into());
        cfg.event.site = Some("simulated boards".into());
        cfg.event.round = Some("1".into());
        cfg.daemon.ports = handles.iter().map(|h| h.status().path).collect();
        cfg.daemon.capture_dir = Some(dir.clone());
        cfg.daemon.discovery = false;
        cfg.clock.show_moves = true;
        cfg.boards = boards;
        println!(
            "eboardd demo: {n} simulated DGT boards with DGT 3000 clocks at {}x speed; Ctrl-C to stop",
            o.speed
        );
        for (b, h) in cfg.boards.iter().zip(&handles) {
            println!(
                "  board-{:<3} {} - {}  on {}",
                b.number,
                b.white.as_deref().unwrap_or("?"),
                b.black.as_deref().unwrap_or("?"),
                h.status().path.display()
            );
        }
        if let Some(addr) = o.outputs.as_ref().and_then(|out| out.config.http) {
            println!("  arbiter page and API: http://{addr}/  (--http ADDR to change, --http off for none)");
        }
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        let mut watchers: Vec<_> = handles.iter().map(|h| h.status.clone()).collect();
        tokio::spawn(async move {
            for w in &mut watchers {
                let _ = w.wait_for(|s| s.finished).await;
            }
            // Let the daemon take in the last reports.
            tokio::time::sleep(Duration::from_secs(2)).await;
            let _ = done_tx.send(());
        });
        let signals = super::signals::Signals::new().map_err(io_err("installing signal handlers"))?;
        let hub = Arc::new(Hub::new(4096));
        let opts = Options {
            config: ConfigSource::Fixed(Box::new(cfg)),
            print: if o.events { Print::Events } else { Print::Moves },
            outputs: o.outputs.clone(),
        };
        super::serve(opts, hub.clone(), signals, Some(done_rx)).await?;
        for s in hub.snapshots() {
            if !s.pgn.is_empty() && !o.events {
                println!("\n{}", s.pgn.trim_end());
            }
        }
        for h in &handles {
            h.send(runner::Control::Stop);
        }
        println!(
            "\nCaptures are in {}; replay them with: eboardd replay {}",
            dir.display(),
            dir.display()
        );
        Ok(())
    })
}
