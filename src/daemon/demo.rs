//! `eboardd simulate` (emulated boards on pseudo-terminals, for a daemon to serve) and
//! `eboardd demo` (the daemon serving several emulated boards that play real games, printing
//! the moves as they happen).
//!
//! The demo's games are embedded: eight games of the FIDE Women's World Rapid Championship
//! 2024, taken from the test corpus (`tests/data/pgn/standard/`, MIT licence; the notice is at
//! the top of `demo_games.pgn`).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::{ConfigSource, DaemonError, Options, Print, io_err};
use crate::config::{BoardConfig, Config};
use crate::driver::{dgt, millennium};
use crate::output::Msg;
use crate::sim::emulator::millennium::MillenniumEmulator;
use crate::sim::emulator::runner::{self, Handle, RunnerConfig};
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
    pub fn line(&mut self, line: &Msg) -> Option<String> {
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
                self.san
                    .insert((line.board.to_string(), n("ply")), s("san"));
                numbered(n("ply"), &s("san"))
            }
            "move_retracted" => {
                let san = self
                    .san
                    .get(&(line.board.to_string(), n("ply")))
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
    /// The board family emulated ([`dgt::NAME`] or [`millennium::NAME`]).
    pub driver: &'static str,
}

/// The boards of a demo, one driver name each: `4` (four DGT boards, as before) or
/// `dgt:2,millennium:1` (a family alone means one board of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardMix(pub Vec<&'static str>);

impl std::str::FromStr for BoardMix {
    type Err = String;

    fn from_str(s: &str) -> Result<BoardMix, String> {
        if let Ok(n) = s.trim().parse::<usize>() {
            return Ok(BoardMix(vec![dgt::NAME; n]));
        }
        let mut boards = Vec::new();
        for part in s.split(',').map(str::trim) {
            let (name, n) = part.split_once(':').unwrap_or((part, "1"));
            let driver = crate::driver::by_name(name.trim())
                .filter(|d| [dgt::NAME, millennium::NAME].contains(&d.name()))
                .ok_or_else(|| {
                    format!("{name:?}: no emulated board of that kind (dgt, millennium)")
                })?;
            let n: usize = n
                .trim()
                .parse()
                .map_err(|_| format!("{part:?}: the count after ':' must be a number"))?;
            boards.extend(std::iter::repeat_n(driver.name(), n));
        }
        Ok(BoardMix(boards))
    }
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

/// Starts board `i` of `o` on a new pty: a DGT board, or a Millennium board (no clock) playing
/// the same script.
fn spawn_board(o: &SimulateOptions, i: usize, rc: RunnerConfig) -> std::io::Result<Handle> {
    let em = emulator_for(o, i);
    if o.driver == millennium::NAME {
        runner::spawn(MillenniumEmulator::new(em, (1, 4)), rc)
    } else {
        runner::spawn(em, rc)
    }
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
            let serial = emulator_for(&o, i).config().serial.clone();
            let rc = RunnerConfig {
                speed: o.speed,
                link: link.clone(),
                wait_for_host: !o.start_now,
            };
            let h = spawn_board(&o, i, rc).map_err(io_err("opening a pseudo-terminal"))?;
            let path = link.unwrap_or_else(|| h.status().path);
            if o.driver == millennium::NAME {
                println!("board {} millennium (no serial): {}", i + 1, path.display());
            } else {
                println!("board {} serial {serial}: {}", i + 1, path.display());
            }
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
    /// The simulated boards, by family.
    pub boards: BoardMix,
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
    let mut kinds = o.boards.0.clone();
    kinds.truncate(64);
    if kinds.is_empty() {
        kinds.push(dgt::NAME);
    }
    let n = kinds.len();
    let dir = o.capture_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("eboardd-demo-{}", std::process::id()))
    });
    let rt = super::runtime()?;
    rt.block_on(async {
        let mut handles = Vec::new();
        let mut boards = Vec::new();
        let mut ports = Vec::new();
        for (i, driver) in kinds.iter().copied().enumerate() {
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
                driver,
            };
            let rc = RunnerConfig {
                speed: o.speed,
                link: None,
                wait_for_host: true,
            };
            let h = spawn_board(&sim, 0, rc).map_err(io_err("opening a pseudo-terminal"))?;
            let path = h.status().path;
            boards.push(BoardConfig {
                number: i as u32 + 1,
                // A Millennium board has no serial number: the daemon names it after its port.
                serial: if driver == millennium::NAME {
                    super::board_task::port_serial(&path)
                } else {
                    emulator_for(&sim, 0).config().serial.clone()
                },
                white: game.tag("White").map(str::to_string),
                black: game.tag("Black").map(str::to_string),
                white_clock: None,
            });
            ports.push(match driver {
                dgt::NAME => path,
                _ => PathBuf::from(format!("{driver}:{}", path.display())),
            });
            handles.push(h);
        }
        let mut cfg = Config::default();
        cfg.event.name = Some("eboardd demo".into());
        cfg.event.site = Some("simulated boards".into());
        cfg.event.round = Some("1".into());
        cfg.daemon.ports = ports;
        cfg.daemon.capture_dir = Some(dir.clone());
        cfg.daemon.discovery = false;
        cfg.clock.show_moves = true;
        cfg.boards = boards;
        let mill = kinds.iter().filter(|k| **k == millennium::NAME).count();
        println!(
            "eboardd demo: {} simulated DGT boards with DGT 3000 clocks and {mill} Millennium \
             boards (no clock) at {}x speed; Ctrl-C to stop",
            n - mill,
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
        let pairings = super::pairings(&cfg);
        let opts = Options {
            config: ConfigSource::Fixed(Box::new(cfg)),
            print: if o.events { Print::Events } else { Print::Moves },
            outputs: o.outputs.clone(),
            reload_outputs: None,
        };
        let hub = opts.hub();
        hub.update_info(|info| info.pairings.extend(pairings));
        super::serve(opts, hub.clone(), signals, Some(done_rx)).await?;
        if !o.events {
            let pgn = hub.with_round(|r| {
                let boards = r.boards().iter();
                boards.map(|b| crate::output::render::board_pgn(r, b)).collect::<Vec<_>>()
            });
            for text in pgn.iter().filter(|t| !t.is_empty()) {
                println!("\n{}", text.trim_end());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_mixes_keep_the_old_count_and_name_families() {
        let mix = |s: &str| s.parse::<BoardMix>();
        assert_eq!(mix("3"), Ok(BoardMix(vec!["dgt"; 3])));
        assert_eq!(
            mix("dgt:2,millennium:1"),
            Ok(BoardMix(vec!["dgt", "dgt", "millennium"]))
        );
        assert_eq!(mix("millennium"), Ok(BoardMix(vec!["millennium"])));
        assert!(mix("certabo:2").is_err());
        assert!(mix("dgt:x").is_err());
    }
}
