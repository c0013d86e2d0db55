//! `eboardd simulate` (emulated boards on pseudo-terminals, for a daemon to serve) and
//! `eboardd demo` (the daemon serving several emulated boards that play real games, printing
//! the moves as they happen).
//!
//! The demo's games are embedded: eight games of the FIDE Women's World Rapid Championship
//! 2024, taken from the test corpus (`tests/data/pgn/standard/`, MIT licence; the notice is at
//! the top of `demo_games.pgn`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{ConfigSource, DaemonError, Options, Print, io_err};
use crate::config::{BoardConfig, Config};
use crate::core::event::EventKind;
use crate::family::{self, Family};
use crate::output::{Content, Hub, Published};
use crate::sim::emulator::runner::{self, Handle, RunnerConfig};
use crate::sim::emulator::{ClockModel, EmulatorConfig, Script};
use crate::sim::families::{self, ScriptedBoard};
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
    pub fn line(&mut self, line: &Published) -> Option<String> {
        let Content::Event(event) = &line.content else {
            return None;
        };
        let numbered = |ply: u32, san: &str| {
            let dots = if ply % 2 == 1 { "." } else { "..." };
            format!("{}{dots} {san}", ply.div_ceil(2))
        };
        let what = match &event.kind {
            EventKind::BoardConnected { serial, .. } => {
                format!("connected (serial {})", serial.as_deref().unwrap_or(""))
            }
            EventKind::BoardDisconnected { .. } => "disconnected".to_string(),
            EventKind::GameStarted { .. } => format!("game {} started", event.game),
            EventKind::MoveMade { ply, san, .. } => {
                self.san
                    .insert((line.board.to_string(), u64::from(*ply)), san.clone());
                numbered(*ply, san)
            }
            EventKind::MoveRetracted { ply } => {
                let san = self
                    .san
                    .get(&(line.board.to_string(), u64::from(*ply)))
                    .cloned()
                    .unwrap_or_default();
                format!(
                    "({} taken back: not the move after all)",
                    numbered(*ply, &san)
                )
            }
            EventKind::Irregularity { detail, .. } => format!("! {detail}"),
            EventKind::GameEnded { result, reason } => format!(
                "game {} ended: {} ({})",
                event.game,
                result.as_str(),
                wire_name(reason, None).replace('_', " ")
            ),
            EventKind::Correction {
                op, ply, result, ..
            } => format!(
                "arbiter's correction ({}): game at ply {ply}, result {}",
                wire_name(op, Some("action")).replace('_', " "),
                result.as_str()
            ),
            _ => return None,
        };
        Some(format!("{:<9} {what}", line.board))
    }
}

/// The name `value` has on the wire (its serde name: the string it is, or its `tag` field).
fn wire_name(value: &impl serde::Serialize, tag: Option<&str>) -> String {
    let v = serde_json::to_value(value).unwrap_or_default();
    let name = match tag {
        Some(tag) => &v[tag],
        None => &v,
    };
    name.as_str().unwrap_or("?").to_string()
}

/// Options of `eboardd simulate`.
#[derive(Debug, Clone)]
pub struct SimulateOptions {
    /// The games to play (one after another on each board: all of them, or `per_board`).
    pub games: Vec<ScriptGame>,
    /// How many games each board plays (`None`: every game); board `i`'s are games `i`,
    /// `i + 1`, ... (a round: 1, each board its own game).
    pub per_board: Option<usize>,
    /// Number of boards; board `i` starts with game `i` (modulo the number of games). A family
    /// that chains boards ([`crate::family::Capabilities::boards_per_port`]) has them all on
    /// one port, every other family one port each.
    pub count: usize,
    /// Script time per real time.
    pub speed: f64,
    /// Symlink to the pty (one port), or a directory for `board-N` links (several).
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
    /// The board family emulated (a name of the family table).
    pub family: &'static str,
    /// The demo's boards: each game ends on the board as the source game ended (its result
    /// signalled, [`SimConfig::signal_result`]), and the board plays its games again and
    /// again until it is stopped ([`Script::looped`]).
    pub until_stopped: bool,
}

/// Script time between a game's end and the players setting up the next one.
const GAP_BETWEEN_GAMES: crate::core::observation::Micros = 10_000_000;

impl SimulateOptions {
    fn family(&self) -> &'static Family {
        family::by_name(self.family).unwrap_or(&family::FAMILIES[0])
    }

    /// Board `i`'s serial number.
    fn serial(&self, i: usize) -> String {
        format!("{:05}", (self.serial as usize + i) % 100_000)
    }

    /// Board `i`'s players and settings.
    fn board(&self, i: usize) -> ScriptedBoard {
        let n = self.games.len().max(1);
        let games: Vec<ScriptGame> = (0..self.per_board.unwrap_or(n).min(n))
            .map(|k| self.games[(i + k) % n].clone())
            .collect();
        let mut sim = SimConfig::new(self.style, self.seed.wrapping_add(i as u64 * 7919));
        sim.dev = format!("board-{}", i + 1);
        // The demo's clock is set to the games' time control (when they share one): it then
        // shows the times of the source games' `[%clk]` (the base raised where the hands lose
        // time, [`SimConfig::signal_result`]).
        let controls: Vec<_> = games.iter().map(ScriptGame::time_control).collect();
        if self.until_stopped
            && let Some(Some((base, increment))) = controls.first().copied()
            && controls.iter().all(|c| *c == controls[0])
        {
            sim.base_ms = base;
            sim.increment_ms = increment;
        }
        sim.signal_result = self.until_stopped;
        let script = Script::from_games(&games, &sim, GAP_BETWEEN_GAMES);
        ScriptedBoard {
            script: if self.until_stopped {
                script.looped(GAP_BETWEEN_GAMES)
            } else {
                script
            },
            config: EmulatorConfig {
                serial: self.serial(i),
                clock: if self.no_clock {
                    ClockModel::None
                } else {
                    ClockModel::Dgt3000
                },
                noise_every: self.noise_every.map(|s| (s * 1e6) as i64),
                ..Default::default()
            },
        }
    }

    /// The ports: the boards (first, how many) on each.
    fn ports(&self) -> Vec<(usize, usize)> {
        let count = self.count.max(1);
        let per_port = self.family().caps.boards_per_port.max(1);
        (0..count)
            .step_by(per_port)
            .map(|first| (first, per_port.min(count - first)))
            .collect()
    }

    /// Starts the port with boards `first..first + n` on a new pty.
    fn spawn_port(&self, first: usize, n: usize, rc: RunnerConfig) -> Result<Handle, DaemonError> {
        let boards = (first..first + n).map(|i| self.board(i)).collect();
        let seed = self.seed.wrapping_add(first as u64 * 104_729);
        let em = families::emulate(self.family(), boards, seed)
            .map_err(|e| DaemonError::Emulator(format!("{}: {e}", self.family)))?;
        runner::spawn(em, rc).map_err(io_err("opening a pseudo-terminal"))
    }
}

/// The ports of a demo, by family: `4` (four DGT boards, as before) or
/// `dgt:2,millennium:1,dgt-bus:6` (a family alone means one board of it; a family that chains
/// boards has its count on one port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BoardMix(pub Vec<(&'static str, usize)>);

impl BoardMix {
    /// The number of boards.
    pub fn boards(&self) -> usize {
        self.0.iter().map(|(_, n)| n).sum()
    }
}

impl std::str::FromStr for BoardMix {
    type Err = String;

    fn from_str(s: &str) -> Result<BoardMix, String> {
        if let Ok(n) = s.trim().parse::<usize>() {
            return Ok(BoardMix(vec![(family::DEFAULT_FAMILY, 1); n]));
        }
        let mut ports = Vec::new();
        for part in s.split(',').map(str::trim) {
            let (name, n) = part.split_once(':').unwrap_or((part, "1"));
            let f = family::by_name(name.trim()).ok_or_else(|| {
                format!(
                    "{name:?}: no board family of that name ({})",
                    family::family_names()
                )
            })?;
            let n: usize = n
                .trim()
                .parse()
                .map_err(|_| format!("{part:?}: the count after ':' must be a number"))?;
            let per_port = f.caps.boards_per_port.max(1);
            let mut left = n;
            while left > 0 {
                ports.push((f.name(), left.min(per_port)));
                left -= left.min(per_port);
            }
        }
        Ok(BoardMix(ports))
    }
}

/// `eboardd simulate`: emulated boards on ptys until Ctrl-C (or until done).
pub fn simulate(o: SimulateOptions) -> Result<(), DaemonError> {
    let rt = super::runtime()?;
    rt.block_on(async {
        let handles = o.start_ports()?;
        use std::io::Write;
        let _ = std::io::stdout().flush();
        o.wait_until_done(&handles).await?;
        stop_emulators(handles).await;
        let _ = std::io::stdout().flush();
        Ok(())
    })
}

impl SimulateOptions {
    /// Starts every port ([`SimulateOptions::ports`]), each on a new pty, and says where each
    /// is: the emulators, one a port.
    fn start_ports(&self) -> Result<Vec<Handle>, DaemonError> {
        let mut handles = Vec::new();
        let ports = self.ports();
        for (k, (first, n)) in ports.iter().copied().enumerate() {
            let link = self.port_link(k, ports.len())?;
            let rc = RunnerConfig {
                speed: self.speed,
                link: link.clone(),
                wait_for_host: !self.start_now,
            };
            let h = self.spawn_port(first, n, rc)?;
            let path = link.unwrap_or_else(|| h.status().path);
            self.announce_port(k, first, n, &path);
            handles.push(h);
        }
        Ok(handles)
    }

    /// The symlink of port `k` of `ports`: `--link` itself for one port, `board-N` in the
    /// `--link` directory (made when missing) for several, none without `--link`.
    fn port_link(&self, k: usize, ports: usize) -> Result<Option<PathBuf>, DaemonError> {
        Ok(match (&self.link, ports) {
            (Some(l), 1) => Some(l.clone()),
            (Some(dir), _) => {
                std::fs::create_dir_all(dir)
                    .map_err(io_err(format!("creating {}", dir.display())))?;
                Some(dir.join(format!("board-{}", k + 1)))
            }
            (None, _) => None,
        })
    }

    /// Says where port `k` is, with its boards `first..first + n`: a chain's serial numbers,
    /// a lone board's serial number (when its family tells one).
    fn announce_port(&self, k: usize, first: usize, n: usize, path: &Path) {
        if n > 1 {
            let serials: Vec<String> = (first..first + n).map(|i| self.serial(i)).collect();
            println!(
                "port {} {} chain of {n} boards (serials {}): {}:{}",
                k + 1,
                self.family,
                serials.join(" "),
                self.family,
                path.display()
            );
        } else if self.family().driver.reports_serial() {
            println!(
                "board {} {} serial {}: {}:{}",
                first + 1,
                self.family,
                self.serial(first),
                self.family,
                path.display()
            );
        } else {
            println!(
                "board {} {} (no serial): {}:{}",
                first + 1,
                self.family,
                self.family,
                path.display()
            );
        }
    }

    /// Waits for Ctrl-C, or (`--exit-when-done`) for every board of `handles` to have played
    /// its games, [`LINGER`] after.
    async fn wait_until_done(&self, handles: &[Handle]) -> Result<(), DaemonError> {
        let mut signals =
            super::signals::Signals::new().map_err(io_err("installing signal handlers"))?;
        let mut done_at: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                _ = signals.recv() => break,
                _ = tokio::time::sleep(Duration::from_millis(200)) => {
                    if self.exit_when_done && handles.iter().all(|h| h.status().finished) {
                        // The boards stay plugged in a moment after the last move: what they
                        // wrote last is still in the ports' buffers for the host to read.
                        let at = *done_at.get_or_insert_with(tokio::time::Instant::now);
                        if at.elapsed() >= LINGER {
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Stops every emulator of `handles` and says how many host bytes each did not take.
async fn stop_emulators(handles: Vec<Handle>) {
    for h in &handles {
        h.send(runner::Control::Stop);
    }
    // A strict emulator counts every host byte it did not take (a command the board does
    // not know, a frame for another family): said per port and in total, so that whoever
    // drives the boards (a load script, an operator) sees that the daemon spoke wrongly.
    let mut not_taken = 0;
    for (k, h) in handles.into_iter().enumerate() {
        let st = h.stop().await;
        if st.unknown_bytes > 0 {
            println!(
                "port {}: the emulated board did not take {} host bytes; the first: {:02x?}",
                k + 1,
                st.unknown_bytes,
                st.unknown_sample
            );
        }
        not_taken += st.unknown_bytes;
    }
    println!("emulators stopped: {not_taken} host bytes not taken");
}

/// How long `simulate --exit-when-done` keeps the boards plugged in after the last one played
/// its last move (closing a pseudo-terminal drops what the host has not read yet).
pub const LINGER: Duration = Duration::from_secs(2);

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

/// The time control the demo's games share, as a round's `time_control` (`"900+10"`).
pub fn demo_time_control() -> Option<String> {
    let games = demo_games();
    let tc = games.first()?.time_control()?;
    games
        .iter()
        .all(|g| g.time_control() == Some(tc))
        .then(|| format!("{}+{}", tc.0 / 1000, tc.1 / 1000))
}

/// `eboardd demo`: the daemon with simulated boards playing the embedded games, one game per
/// board (no player on two boards), each ending with its result on the board and then played
/// again, until Ctrl-C.
pub fn demo(o: DemoOptions) -> Result<(), DaemonError> {
    let games = demo_games();
    o.check(games.len())?;
    let dir = o.capture_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("eboardd-demo-{}", std::process::id()))
    });
    let rt = super::runtime()?;
    rt.block_on(async {
        let DemoPorts {
            handles,
            boards,
            paths,
            on_port,
        } = DemoPorts::start(&o, &games)?;
        let cfg = demo_config(&dir, boards, paths);
        o.announce(&cfg, handles.len(), &on_port);
        let hub = o.serve(cfg).await?;
        if !o.events {
            print_games(&hub);
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

impl DemoOptions {
    /// The address of the arbiter page and API, when the demo serves one.
    fn http(&self) -> Option<std::net::SocketAddr> {
        self.outputs.as_ref().and_then(|out| out.config.http)
    }

    /// Refuses a demo that cannot run: more boards than the `games` embedded (or none), or
    /// the page's address taken (checked before anything is said about it).
    fn check(&self, games: usize) -> Result<(), DaemonError> {
        let count = self.boards.boards();
        if count == 0 || count > games {
            return Err(DaemonError::Emulator(format!(
                "--boards: {count} boards asked; the demo runs 1 to {games} (one game each, no player on two boards)"
            )));
        }
        if let Some(addr) = self.http() {
            std::net::TcpListener::bind(addr).map_err(io_err(format!(
                "listening on {addr} for the arbiter page and API (--http ADDR for another, --http off for none)"
            )))?;
        }
        Ok(())
    }

    /// The `simulate` options of one demo port: a board of family `name` for each of `games`,
    /// playing it until stopped; `first` (the boards before this port) sets their seed and
    /// serial numbers.
    fn port(&self, name: &'static str, games: &[ScriptGame], first: usize) -> SimulateOptions {
        SimulateOptions {
            games: games.to_vec(),
            per_board: Some(1),
            count: games.len(),
            speed: self.speed,
            link: None,
            style: Style::Human,
            seed: 2026 + first as u64,
            serial: 10001 + first as u32,
            no_clock: false,
            noise_every: None,
            start_now: false,
            exit_when_done: false,
            family: name,
            until_stopped: true,
        }
    }

    /// Says what the demo runs: how many boards of each family on how many `ports`, then each
    /// board's players and port (`on_port`: the index of each board's port in the
    /// configuration), and the page's address.
    fn announce(&self, cfg: &Config, ports: usize, on_port: &[usize]) {
        println!(
            "eboardd demo: {} simulated boards on {} ports at {}x speed: {}; each game ends with its result, then starts again; Ctrl-C to stop",
            cfg.boards.len(),
            ports,
            self.speed,
            family_counts(&self.boards.0)
        );
        for (b, port) in cfg.boards.iter().zip(on_port) {
            println!(
                "  board-{:<3} {} - {}  on {}",
                b.number,
                b.white.as_deref().unwrap_or("?"),
                b.black.as_deref().unwrap_or("?"),
                cfg.daemon.ports[*port].display()
            );
        }
        if let Some(addr) = self.http() {
            println!(
                "  arbiter page and API: http://{addr}/  (--http ADDR to change, --http off for none)"
            );
        }
    }

    /// Runs the daemon on `cfg` until Ctrl-C, printing the events (`--events`) or the moves;
    /// gives back its hub, which holds the games played.
    async fn serve(&self, cfg: Config) -> Result<Hub, DaemonError> {
        let signals =
            super::signals::Signals::new().map_err(io_err("installing signal handlers"))?;
        let configured = cfg.clone();
        let opts = Options {
            config: ConfigSource::Fixed(Box::new(cfg)),
            print: if self.events {
                Print::Events
            } else {
                Print::Moves
            },
            outputs: self.outputs.clone(),
            reload_outputs: None,
        };
        let hub = opts.hub();
        hub.update_info(|info| super::configure_round(info, &configured));
        super::serve(opts, hub.clone(), signals, None).await?;
        Ok(hub)
    }
}

/// The demo's emulated ports, started, and the boards on them.
struct DemoPorts {
    /// The ports' emulators, one a port.
    handles: Vec<Handle>,
    /// The boards, in order: number, serial number, players.
    boards: Vec<BoardConfig>,
    /// The ports as the daemon opens them (`family:path`), one a handle.
    paths: Vec<PathBuf>,
    /// The index of each board's port (in `handles` and `paths`).
    on_port: Vec<usize>,
}

impl DemoPorts {
    /// Starts a port for each entry of the demo's board mix, board `i` playing game `i`.
    fn start(o: &DemoOptions, games: &[ScriptGame]) -> Result<DemoPorts, DaemonError> {
        let mut ports = DemoPorts {
            handles: Vec::new(),
            boards: Vec::new(),
            paths: Vec::new(),
            on_port: Vec::new(),
        };
        let mut first = 0usize;
        for (name, n) in o.boards.0.iter().copied() {
            ports.add(o.port(name, &games[first..first + n], first), first)?;
            first += n;
        }
        Ok(ports)
    }

    /// Starts the port `sim` describes, its boards numbered from `first + 1`, and notes its
    /// boards (named after the games' players) and its path.
    fn add(&mut self, sim: SimulateOptions, first: usize) -> Result<(), DaemonError> {
        let rc = RunnerConfig {
            speed: sim.speed,
            link: None,
            wait_for_host: true,
        };
        // Each board plays its own game (board i of the port: game i of `sim.games`).
        let h = sim.spawn_port(0, sim.count, rc)?;
        let path = h.status().path;
        for (i, game) in sim.games.iter().enumerate() {
            self.boards.push(BoardConfig {
                number: (first + i) as u32 + 1,
                // A board that tells no serial number is named after its port.
                serial: if sim.family().driver.reports_serial() {
                    sim.serial(i)
                } else {
                    super::board_task::port_serial(&path)
                },
                white: game.tag("White").map(str::to_string),
                black: game.tag("Black").map(str::to_string),
                white_clock: None,
            });
            self.on_port.push(self.handles.len());
        }
        self.paths
            .push(PathBuf::from(format!("{}:{}", sim.family, path.display())));
        self.handles.push(h);
        Ok(())
    }
}

/// The daemon's configuration for the demo: its event, the emulated ports (`paths`) and
/// `boards`, the captures in `dir`, no discovery, the moves shown on the clocks.
fn demo_config(dir: &Path, boards: Vec<BoardConfig>, paths: Vec<PathBuf>) -> Config {
    let mut cfg = Config::default();
    cfg.event.name = Some("eboardd demo".into());
    cfg.event.site = Some("simulated boards".into());
    cfg.event.round = Some("1".into());
    cfg.daemon.ports = paths;
    cfg.daemon.capture_dir = Some(dir.to_path_buf());
    cfg.daemon.discovery = false;
    cfg.clock.show_moves = true;
    cfg.boards = boards;
    cfg
}

/// The boards of each family, in the order the families first come: `4 dgt (...), 6 dgt-bus
/// (...)`, each with the family's summary.
fn family_counts(ports: &[(&'static str, usize)]) -> String {
    let mut kinds: Vec<(&str, usize)> = Vec::new();
    for (name, n) in ports {
        match kinds.iter_mut().find(|(k, _)| k == name) {
            Some((_, m)) => *m += n,
            None => kinds.push((name, *n)),
        }
    }
    let kinds: Vec<String> = kinds
        .iter()
        .map(|(name, n)| {
            let summary = family::by_name(name).map_or("", |f| f.summary);
            format!("{n} {name} ({summary})")
        })
        .collect();
    kinds.join(", ")
}

/// Prints the PGN of each board's games (a board with none prints nothing), after a blank
/// line each.
fn print_games(hub: &Hub) {
    let pgn = hub.with_round(|r| {
        let boards = r.boards().iter();
        boards
            .map(|b| crate::output::render::board_pgn(r, b))
            .collect::<Vec<_>>()
    });
    for text in pgn.iter().filter(|t| !t.is_empty()) {
        println!("\n{}", text.trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn board_mixes_keep_the_old_count_and_name_families() {
        let mix = |s: &str| s.parse::<BoardMix>();
        assert_eq!(mix("3"), Ok(BoardMix(vec![("dgt", 1); 3])));
        assert_eq!(
            mix("dgt:2,millennium:1"),
            Ok(BoardMix(vec![("dgt", 1), ("dgt", 1), ("millennium", 1)]))
        );
        assert_eq!(mix("millennium"), Ok(BoardMix(vec![("millennium", 1)])));
        assert_eq!(mix("certabo:2").map(|m| m.boards()), Ok(2));
        let chain = mix("dgt-bus:6,dgt:1").unwrap();
        assert_eq!(chain, BoardMix(vec![("dgt-bus", 6), ("dgt", 1)]));
        assert_eq!(
            mix("dgt-bus:70").unwrap().0,
            vec![("dgt-bus", 64), ("dgt-bus", 6)]
        );
        let e = mix("milenium:1").unwrap_err();
        assert!(e.contains("millennium") && e.contains("certabo"), "{e}");
        assert!(mix("dgt:x").is_err());
    }

    #[test]
    fn every_board_the_demo_runs_has_its_own_players_and_a_result_told_on_the_board() {
        use crate::sim::emulator::result_signal;
        let games = demo_games();
        // `eboardd demo --help` and the refusal name this count.
        assert_eq!(games.len(), 55);
        let mut players = std::collections::HashSet::new();
        for g in &games {
            for side in ["White", "Black"] {
                let name = g.tag(side).expect("named players");
                assert!(players.insert(name.to_string()), "{name} on two boards");
            }
            // The kings carried as the signal says, the final board shows the result.
            let mut pos = g.start.clone();
            for m in &g.moves {
                shakmaty::Position::play_unchecked(&mut pos, *m);
            }
            let mut board = shakmaty::Position::board(&pos).clone();
            let signal = result_signal(g, false);
            if signal.is_empty() {
                // The last move ends the game by rule: the board tells the result itself.
                let by_rule = shakmaty::Position::outcome(&pos);
                assert_eq!(
                    Some(by_rule.as_str()),
                    g.tag("Result"),
                    "{:?}",
                    g.tag("White")
                );
                continue;
            }
            for (index, reading) in signal {
                let sq = shakmaty::Square::new(u32::from((7 - index / 8) * 8 + index % 8));
                match reading {
                    crate::core::observation::SquareReading::Piece(p) => {
                        board.set_piece_at(sq, p);
                    }
                    _ => {
                        board.discard_piece_at(sq);
                    }
                }
            }
            let told = crate::core::irregular::kings_signal(&board).map(|o| o.as_str());
            assert_eq!(told, g.tag("Result"), "{:?}", g.tag("White"));
        }
        assert_eq!(demo_time_control().as_deref(), Some("900+10"));
    }

    #[test]
    fn simulate_chains_boards_on_one_port_and_gives_other_families_one_each() {
        let o = |family: &'static str| SimulateOptions {
            games: demo_games(),
            per_board: None,
            count: 6,
            speed: 1.0,
            link: None,
            style: Style::Human,
            seed: 1,
            serial: 10001,
            no_clock: false,
            noise_every: None,
            start_now: false,
            exit_when_done: false,
            family,
            until_stopped: false,
        };
        assert_eq!(o("dgt-bus").ports(), vec![(0, 6)]);
        assert_eq!(o("certabo").ports().len(), 6);
        assert_eq!(o("dgt").board(2).config.serial, "10003");
    }
}
