//! Shared by the end-to-end tests: the daemon as a child process (its event stream read from
//! standard output), emulated boards on pseudo-terminals in the test process, and helpers to
//! compare what came out with the games played. Every wait is on a condition, with a timeout.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eboardd::sim::emulator::runner::{self, Handle, RunnerConfig, Status};
use eboardd::sim::emulator::{Emulator, EmulatorConfig, Script};
use eboardd::sim::pgn::{ScriptGame, parse_games};
use eboardd::sim::{SimConfig, Style};
use serde_json::Value;
use shakmaty::Position;
use tokio::sync::watch;

/// The daemon binary.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_eboardd")
}

/// A fresh scratch directory for one end-to-end test (`eboardd-e2e-<name>-<pid>`).
pub fn scratch(name: &str) -> PathBuf {
    super::scratch(&format!("e2e-{name}"))
}

/// The demo's games (real rapid games with clock times).
pub fn demo_games() -> Vec<ScriptGame> {
    eboardd::daemon::demo::demo_games()
}

/// An emulated board playing `games` at `speed`, its pty linked at `link`.
pub fn board(
    games: &[ScriptGame],
    style: Style,
    seed: u64,
    serial: &str,
    link: &Path,
    speed: f64,
    noise: Option<i64>,
) -> Handle {
    let sim = SimConfig::new(style, seed);
    let em = EmulatorConfig {
        serial: serial.to_string(),
        noise_every: noise,
        ..Default::default()
    };
    board_with(games, sim, em, link, speed)
}

/// [`board`] with every setting of the simulation and of the emulated board.
pub fn board_with(
    games: &[ScriptGame],
    mut sim: SimConfig,
    em: EmulatorConfig,
    link: &Path,
    speed: f64,
) -> Handle {
    sim.dev = em.serial.clone();
    let script = Script::from_games(games, &sim, 5_000_000);
    runner::spawn(
        Emulator::new(script, em),
        RunnerConfig {
            speed,
            link: Some(link.to_path_buf()),
            wait_for_host: true,
        },
    )
    .unwrap()
}

/// Emulated boards `board-1` … `board-N` in `dir` (N = `games.len()`), board n playing demo
/// game `games[n - 1]` in human style and its players telling the result on the board as the
/// game ended; serial numbers `first_serial + n` (as [`board_sections`] configures them):
/// (their handles, their links).
pub fn result_telling_boards(
    dir: &Path,
    games: &[usize],
    first_serial: usize,
    speed: f64,
) -> (Vec<Handle>, Vec<PathBuf>) {
    let demo = demo_games();
    let links: Vec<PathBuf> = (1..=games.len())
        .map(|n| dir.join(format!("board-{n}")))
        .collect();
    let boards = games
        .iter()
        .zip(&links)
        .enumerate()
        .map(|(i, (&game, link))| {
            let mut sim = SimConfig::new(Style::Human, (first_serial + i) as u64);
            sim.signal_result = true;
            let em = EmulatorConfig {
                serial: (first_serial + i + 1).to_string(),
                ..Default::default()
            };
            board_with(&demo[game..=game], sim, em, link, speed)
        })
        .collect();
    (boards, links)
}

/// The configuration's `[[board]]` sections of boards 1 … `count`, board n with serial number
/// `first_serial + n`.
pub fn board_sections(count: usize, first_serial: usize) -> String {
    (1..=count)
        .map(|n| {
            format!(
                "[[board]]\nnumber = {n}\nserial = \"{}\"\n\n",
                first_serial + n
            )
        })
        .collect()
}

/// One emulated board (human handling) playing game `index` of the demo games, in a fresh
/// scratch directory with a `captures` directory for the daemon.
pub struct Single {
    /// The scratch directory.
    pub dir: PathBuf,
    /// Where the daemon writes its captures.
    pub caps: PathBuf,
    /// The game played.
    pub game: ScriptGame,
    /// The link to the board's pty.
    pub link: PathBuf,
    /// The board.
    pub board: Handle,
    /// Its device id in the daemon when not configured (`dgt-<serial>`).
    pub id: String,
}

impl Single {
    /// Starts the daemon on this board's link with `extra` arguments.
    pub fn start(&self, extra: &[&str]) -> Daemon {
        Daemon::start(std::slice::from_ref(&self.link), &self.caps, extra)
    }

    /// Writes `toml` as `eboardd.toml` in the scratch directory; returns its path.
    pub fn write_config(&self, toml: &str) -> String {
        let config = self.dir.join("eboardd.toml");
        std::fs::write(&config, toml).unwrap();
        config.to_string_lossy().to_string()
    }

    /// Waits until the game's last move is completed on `id`; checks the daemon's event stream
    /// gave every move.
    pub async fn wait_done(&self, d: &mut Daemon, id: &str) {
        let n = self.game.moves.len();
        d.wait_for("the game to be completed", Duration::from_secs(60), |ev| {
            completed(ev, id, n)
        })
        .await;
        let ev = d.events.lock().unwrap();
        assert_eq!(
            moves_from_events(&ev, id),
            uci(&self.game),
            "{id}: event stream"
        );
    }

    /// Stops the daemon (SIGTERM, clean exit) and the board (which must have taken every byte
    /// the daemon sent: [`stop_strict`]), checks the replay of the capture directory gives the
    /// game exactly, cleans up; returns the daemon's log.
    pub async fn finish(self, d: Daemon, id: &str) -> String {
        let log = d.log.clone();
        d.terminate();
        stop_strict(self.board, id).await;
        assert_replay_exact(&self.caps, &[(id, &self.game)]);
        let log = std::fs::read_to_string(log).unwrap_or_default();
        let _ = std::fs::remove_dir_all(&self.dir);
        log
    }
}

/// Stops an emulated board (the host's bytes still on the line are taken first) and asserts
/// it took every byte the host sent it: no unknown command, bad checksum, or command of
/// another board family or DGT mode (`EmulatedBoard::unknown_bytes`). Call it after the
/// daemon has ended, so that everything it sent is counted. Returns the board's last status.
pub async fn stop_strict(board: Handle, what: &str) -> Status {
    let st = board.stop().await;
    assert_eq!(
        st.unknown_bytes, 0,
        "{what}: the emulated board did not take {} host bytes; the first: {:02x?}",
        st.unknown_bytes, st.unknown_sample
    );
    st
}

/// A [`Single`] board for the test `name` with serial `serial`, at `speed`.
pub fn single(name: &str, index: usize, serial: u32, speed: f64, noise: Option<i64>) -> Single {
    let dir = scratch(name);
    let game = demo_games().swap_remove(index);
    let link = dir.join("board");
    let serial = serial.to_string();
    let board = board(
        std::slice::from_ref(&game),
        Style::Human,
        index as u64,
        &serial,
        &link,
        speed,
        noise,
    );
    Single {
        caps: dir.join("captures"),
        dir,
        game,
        link,
        board,
        id: format!("dgt-{serial}"),
    }
}

/// The daemon, running.
pub struct Daemon {
    child: Option<Child>,
    /// Every event line received, parsed.
    pub events: Arc<Mutex<Vec<Value>>>,
    count: watch::Receiver<usize>,
    /// Its standard error, for failure messages.
    pub log: PathBuf,
}

impl Daemon {
    /// `eboardd run --no-discovery --events --capture-dir DIR --port P...` plus `extra` (with
    /// `--http off` unless `extra` gives `--http` or a `--config` file that sets `http`).
    pub fn start(ports: &[PathBuf], capture_dir: &Path, extra: &[&str]) -> Daemon {
        Daemon::start_env(ports, capture_dir, extra, &[])
    }

    /// [`Daemon::start`] with environment variables set for the daemon (the stand-in BlueZ's
    /// bus: `DBUS_SYSTEM_BUS_ADDRESS`).
    pub fn start_env(
        ports: &[PathBuf],
        capture_dir: &Path,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> Daemon {
        let log = capture_dir.with_extension(format!(
            "log{}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let mut cmd = Command::new(bin());
        cmd.args(["run", "--no-discovery", "--events", "--capture-dir"])
            .arg(capture_dir);
        for p in ports {
            cmd.arg("--port").arg(p);
        }
        // A configuration file that sets its own HTTP address ([outputs] http) keeps it.
        let config_http = extra
            .iter()
            .position(|a| *a == "--config")
            .and_then(|i| extra.get(i + 1))
            .and_then(|p| std::fs::read_to_string(p).ok())
            .is_some_and(|t| t.lines().any(|l| l.trim_start().starts_with("http =")));
        if !extra.contains(&"--http") && !config_http {
            // Tests run side by side: no HTTP server unless a test asks for one.
            cmd.args(["--http", "off"]);
        }
        cmd.args(extra)
            .env("RUST_LOG", "info")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let (tx, count) = watch::channel(0usize);
        let ev = events.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                let n = {
                    let mut e = ev.lock().unwrap();
                    e.push(v);
                    e.len()
                };
                tx.send_replace(n);
            }
        });
        Daemon {
            child: Some(child),
            events,
            count,
            log,
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Waits until `pred(events)` holds; panics with the log after `timeout`.
    pub async fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&[Value]) -> bool,
    ) {
        self.wait_for_showing(what, timeout, pred, |_| String::new())
            .await
    }

    /// As [`Daemon::wait_for`], and on a timeout the panic also says `progress(events)` (how
    /// far each board came, say).
    pub async fn wait_for_showing(
        &mut self,
        what: &str,
        timeout: Duration,
        pred: impl Fn(&[Value]) -> bool,
        progress: impl Fn(&[Value]) -> String,
    ) {
        let events = self.events.clone();
        let ok = tokio::time::timeout(
            timeout,
            self.count.wait_for(|_| pred(&events.lock().unwrap())),
        )
        .await;
        if !matches!(ok, Ok(Ok(_))) {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            let progress = progress(&events.lock().unwrap());
            panic!(
                "timed out waiting for {what}{}{progress}; daemon log (last lines, newest \
                 first):\n{}",
                if progress.is_empty() { "" } else { ": " },
                tail.join("\n")
            );
        }
    }

    /// Waits until every one of `event` has come from boards `board-1` … `board-{boards}`.
    pub async fn wait_every_board(&mut self, event: &str, boards: usize, timeout: Duration) {
        self.wait_for(&format!("{event} of every board"), timeout, |ev| {
            (1..=boards).all(|n| !of(ev, &format!("board-{n}"), event).is_empty())
        })
        .await;
    }

    /// Sends a signal.
    pub fn signal(&self, sig: nix::sys::signal::Signal) {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.pid() as i32), sig).unwrap();
    }

    /// SIGTERM, then waits for a clean exit (code 0).
    pub fn terminate(mut self) {
        let child = self.child.take().unwrap();
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGTERM,
        )
        .unwrap();
        let status = wait_timeout(child, Duration::from_secs(15));
        assert!(
            status.is_some_and(|s| s.success()),
            "daemon exit after SIGTERM: {status:?}; log:\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    /// SIGKILL: no clean-up at all.
    pub fn kill9(mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        let _ = child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits for `child` to exit, at most `timeout` (then kills it and returns `None`).
pub fn wait_timeout(child: Child, timeout: Duration) -> Option<std::process::ExitStatus> {
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let (tx, rx) = std::sync::mpsc::channel();
    let mut child = child;
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    match rx.recv_timeout(timeout) {
        Ok(r) => r.ok(),
        Err(_) => {
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            None
        }
    }
}

/// Events of `board` of kind `kind`.
pub fn of<'a>(events: &'a [Value], board: &str, kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["board"] == board && e["kind"] == kind)
        .collect()
}

/// Whether `board` has completed ply `ply` (by clock, next move or game end).
pub fn completed(events: &[Value], board: &str, ply: usize) -> bool {
    of(events, board, "move_completed")
        .iter()
        .any(|e| e["ply"].as_u64() == Some(ply as u64))
}

/// Whether `board` has made ply `ply` (the last move of a game played without a clock is never
/// completed).
pub fn made(events: &[Value], board: &str, ply: usize) -> bool {
    of(events, board, "move_made")
        .iter()
        .any(|e| e["ply"].as_u64() == Some(ply as u64))
}

/// The highest ply completed on `board`.
pub fn completed_plies(events: &[Value], board: &str) -> usize {
    of(events, board, "move_completed")
        .iter()
        .filter_map(|e| e["ply"].as_u64())
        .max()
        .unwrap_or(0) as usize
}

/// The moves of the last game on `board` as its event stream tells them (made, retracted).
pub fn moves_from_events(events: &[Value], board: &str) -> Vec<String> {
    let mut moves: Vec<String> = Vec::new();
    for e in events.iter().filter(|e| e["board"] == board) {
        match e["kind"].as_str() {
            Some("game_started") => moves.clear(),
            Some("move_made") => {
                let ply = e["ply"].as_u64().unwrap() as usize;
                moves.truncate(ply - 1);
                moves.push(e["uci"].as_str().unwrap().to_string());
            }
            Some("move_retracted") => {
                let ply = e["ply"].as_u64().unwrap() as usize;
                moves.truncate(ply - 1);
            }
            _ => {}
        }
    }
    moves
}

/// UCI moves of a game as played.
pub fn uci(game: &ScriptGame) -> Vec<String> {
    let mut pos = game.start.clone();
    game.moves
        .iter()
        .map(|m| {
            let u = shakmaty::uci::UciMove::from_move(*m, game.castling_mode).to_string();
            pos.play_unchecked(*m);
            u
        })
        .collect()
}

/// SAN moves of a game as played.
pub fn san(game: &ScriptGame) -> Vec<String> {
    let mut pos = game.start.clone();
    game.moves
        .iter()
        .map(|m| shakmaty::san::SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
        .collect()
}

/// `eboardd round load FILE --round R --config CONFIG` against the running daemon; panics with
/// its standard error unless it succeeds.
pub async fn round_load(file: &Path, round: u32, config: &str) {
    round_load_with(file, round, config, &[]).await;
}

/// [`round_load`] with more arguments (`--pairs LIST`).
pub async fn round_load_with(file: &Path, round: u32, config: &str, extra: &[&str]) {
    let (file, config) = (file.to_path_buf(), config.to_string());
    let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(bin())
            .args(["round", "load"])
            .arg(&file)
            .args(["--round", &round.to_string(), "--config", &config])
            .args(&extra)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "round load: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `eboardd replay PATH` → PGN text.
pub fn replay(path: &Path) -> String {
    let out = Command::new(bin())
        .arg("replay")
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The games of a PGN text (as the daemon or replay wrote them), by their `Board` tag.
pub fn games_by_board(pgn: &str) -> Vec<(String, ScriptGame)> {
    parse_games(pgn)
        .into_iter()
        .map(|g| {
            let g = g.unwrap();
            (g.tag("Board").unwrap_or("").to_string(), g)
        })
        .collect()
}

/// Asserts the replay of `dir` has, for each (board, game), exactly one game with exactly the
/// moves played.
pub fn assert_replay_exact(dir: &Path, expected: &[(&str, &ScriptGame)]) {
    let pgn = replay(dir);
    let got = games_by_board(&pgn);
    for (board, want) in expected {
        let games: Vec<&ScriptGame> = got
            .iter()
            .filter(|(b, _)| b == board)
            .map(|(_, g)| g)
            .collect();
        assert_eq!(
            games.len(),
            1,
            "{board}: {} games in the replay:\n{pgn}",
            games.len()
        );
        assert_eq!(
            san(games[0]),
            san(want),
            "{board}: moves differ in the replay"
        );
    }
}

/// A relay between the daemon and an emulated board: a fresh pty whose path ([`Relay::port`])
/// is the daemon's port, its bytes passed to the board's pty at `link` when `up` says so, and
/// the board's bytes passed back as `down` turns them (what it returns is written, if any).
pub struct Relay {
    host: Arc<eboardd::sim::pty::Pty>,
    up: tokio::task::JoinHandle<()>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Relay {
    /// Starts both directions (inside a tokio runtime).
    pub fn start(
        link: &Path,
        up: impl Fn(&[u8]) -> bool + Send + 'static,
        mut down: impl FnMut(&[u8]) -> Vec<u8> + Send + 'static,
    ) -> Relay {
        use std::io::{Read, Write};
        use std::sync::atomic::{AtomicBool, Ordering};
        let host = Arc::new(eboardd::sim::pty::Pty::open().unwrap());
        let board_rw = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(link)
            .unwrap();
        let mut board_r = board_rw.try_clone().unwrap();
        let mut board_w = board_rw;
        let stop = Arc::new(AtomicBool::new(false));
        let h = host.clone();
        let up = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                match h.read(&mut buf).await {
                    Ok(n) if n > 0 => {
                        if up(&buf[..n]) {
                            let _ = board_w.write_all(&buf[..n]);
                        }
                    }
                    // No one has the port open (the daemon is reopening it): try again shortly.
                    _ => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            }
        });
        let (h, st) = (host.clone(), stop.clone());
        // The reader ends when the board's pty goes away (not waited for).
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            while !st.load(Ordering::SeqCst) {
                match board_r.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        let out = down(&buf[..n]);
                        if !out.is_empty() {
                            let _ = h.write_now(&out);
                        }
                    }
                    _ => break,
                }
            }
        });
        Relay { host, up, stop }
    }

    /// The daemon's side.
    pub fn port(&self) -> PathBuf {
        self.host.path().to_path_buf()
    }

    /// Stops passing bytes.
    pub fn stop(self) {
        self.up.abort();
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
