//! Runs an [`Emulator`] on a pseudo-terminal at real or accelerated pace, with controls to
//! unplug and replug it, hold the players while the host is away, and put noise on the line.
//!
//! Script time runs at `speed` × real time. The players wait for the host: the script clock
//! starts at the host's first mode command (unless told otherwise), and after a replug or a
//! hold it stops until the next mode command, as players wait for the arbiter to get the board
//! back on. "Mode command" is each emulator's "reporting on" ([`EmulatedBoard::host_input`]):
//! for a bus chain, the first SEND_CHANGES to a board.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::Emulator;
use crate::core::observation::Micros;
use crate::sim::pty::{Pty, Written, relink};

/// A sans-IO emulated board the runner can pace: the DGT [`Emulator`] or another family's
/// emulator (e.g. [`super::millennium::MillenniumEmulator`]). Script time is the players' time,
/// link time the electronics' (real pace).
pub trait EmulatedBoard: Send + 'static {
    /// Script time of the next thing the board will do by itself, if any.
    fn next_due(&self) -> Option<Micros>;
    /// Link time of the next thing the electronics will do (a clock ack), if any.
    fn next_link_due(&self) -> Option<Micros>;
    /// Link time is now `now`; what is due goes to `out`.
    fn link_time(&mut self, now: Micros, out: &mut Vec<u8>);
    /// Bytes from the host; answers go to `out`. Whether the host switched reporting on (the
    /// players wait for that before they start): a DGT board's mode command, a ChessLink
    /// board's automatic reports, a bus chain's first SEND_CHANGES to one of its boards since
    /// power-up or the last replug ([`super::dgt_bus::ChainEmulator`]).
    fn host_input(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool;
    /// Plays the script up to `now`; what the board reports goes to `out`.
    fn advance(&mut self, now: Micros, out: &mut Vec<u8>);
    /// The board was unplugged (or powered off and on).
    fn unplugged(&mut self);
    /// The host went away without a word ([`Control::Hold`]): the next time it switches
    /// reporting on must count (a bus chain forgets which boards were asked for changes).
    fn host_gone(&mut self) {}
    /// The board reset with its port open: it reports nothing until told again.
    fn reset(&mut self);
    /// Script time after `k` more plies from `t`.
    fn after_plies(&self, t: Micros, k: usize) -> Micros;
    /// Plies whose first hand action is at or before `t`.
    fn plies_started(&self, t: Micros) -> usize;
    /// Plies settled at or before `t`.
    fn plies_settled(&self, t: Micros) -> usize;
    /// Whether every step of the script has been played.
    fn finished(&self) -> bool;
    /// Texts the host showed on the clock.
    fn texts(&self) -> &[String];
    /// Clock commands taken, lost and acknowledged.
    fn clock_commands(&self) -> super::ClockCommandStats;
    /// Host bytes the board did not take: unknown commands, bad checksums or block checks,
    /// commands of another board family or of the other DGT mode. Tests that drive an
    /// emulator assert this stays 0.
    fn unknown_bytes(&self) -> u64;
    /// The first host bytes not taken (at most [`super::UNKNOWN_SAMPLE`]), for reports.
    fn unknown_sample(&self) -> &[u8];
    /// Each board of a chain on this one line, at script time `t` (empty for one board).
    fn boards(&self, _t: Micros) -> Vec<BoardStatus> {
        Vec::new()
    }
}

/// An emulator of any family, as the family table makes them ([`crate::sim::families::Emulate`]).
impl EmulatedBoard for Box<dyn EmulatedBoard> {
    fn next_due(&self) -> Option<Micros> {
        (**self).next_due()
    }
    fn next_link_due(&self) -> Option<Micros> {
        (**self).next_link_due()
    }
    fn link_time(&mut self, now: Micros, out: &mut Vec<u8>) {
        (**self).link_time(now, out)
    }
    fn host_input(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool {
        (**self).host_input(bytes, out)
    }
    fn advance(&mut self, now: Micros, out: &mut Vec<u8>) {
        (**self).advance(now, out)
    }
    fn unplugged(&mut self) {
        (**self).unplugged()
    }
    fn host_gone(&mut self) {
        (**self).host_gone()
    }
    fn reset(&mut self) {
        (**self).reset()
    }
    fn after_plies(&self, t: Micros, k: usize) -> Micros {
        (**self).after_plies(t, k)
    }
    fn plies_started(&self, t: Micros) -> usize {
        (**self).plies_started(t)
    }
    fn plies_settled(&self, t: Micros) -> usize {
        (**self).plies_settled(t)
    }
    fn finished(&self) -> bool {
        (**self).finished()
    }
    fn texts(&self) -> &[String] {
        (**self).texts()
    }
    fn clock_commands(&self) -> super::ClockCommandStats {
        (**self).clock_commands()
    }
    fn unknown_bytes(&self) -> u64 {
        (**self).unknown_bytes()
    }
    fn unknown_sample(&self) -> &[u8] {
        (**self).unknown_sample()
    }
    fn boards(&self, t: Micros) -> Vec<BoardStatus> {
        (**self).boards(t)
    }
}

/// One board of a chain on one line ([`EmulatedBoard::boards`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoardStatus {
    /// Its bus address.
    pub address: u16,
    /// Plies whose first hand action has happened.
    pub plies_started: usize,
    /// Plies settled (clock pressed, or the game-ending move made).
    pub plies_settled: usize,
    /// Commands it took (addressed to it or to every board).
    pub commands: u64,
    /// Commands lost: they came while it was still busy with the previous one.
    pub commands_lost: u64,
    /// Commands lost while its reply was held up by the emulator itself falling behind (a
    /// busy machine; see `dgt_bus::BusBoardStats::commands_lost_in_stalls`): not the host's.
    pub commands_lost_in_stalls: u64,
    /// Commands it missed: they came while it was off the line.
    pub missed: u64,
    /// Replies it sent.
    pub replies_sent: u64,
    /// Replies garbled by another transmission on the line at the same time.
    pub replies_garbled: u64,
    /// Of those, replies to a command addressed to it alone (the host addressed it while
    /// another board was still answering).
    pub collisions: u64,
    /// The first collisions, described (`dgt_bus::BusBoardStats::collided_with`).
    pub collided_with: Vec<String>,
    /// Collisions with a reply the emulator itself held up (a busy machine; see
    /// `dgt_bus::BusBoardStats::collisions_in_stalls`): not the host's.
    pub collisions_in_stalls: u64,
}

impl EmulatedBoard for Emulator {
    fn next_due(&self) -> Option<Micros> {
        Emulator::next_due(self)
    }
    fn next_link_due(&self) -> Option<Micros> {
        Emulator::next_link_due(self)
    }
    fn link_time(&mut self, now: Micros, out: &mut Vec<u8>) {
        Emulator::link_time(self, now, out)
    }
    fn host_input(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool {
        Emulator::host_input(self, bytes, out)
    }
    fn advance(&mut self, now: Micros, out: &mut Vec<u8>) {
        Emulator::advance(self, now, out)
    }
    fn unplugged(&mut self) {
        Emulator::unplugged(self)
    }
    fn reset(&mut self) {
        Emulator::reset(self)
    }
    fn after_plies(&self, t: Micros, k: usize) -> Micros {
        Emulator::after_plies(self, t, k)
    }
    fn plies_started(&self, t: Micros) -> usize {
        Emulator::plies_started(self, t)
    }
    fn plies_settled(&self, t: Micros) -> usize {
        Emulator::plies_settled(self, t)
    }
    fn finished(&self) -> bool {
        Emulator::finished(self)
    }
    fn texts(&self) -> &[String] {
        &self.texts
    }
    fn clock_commands(&self) -> super::ClockCommandStats {
        self.clock_commands
    }
    fn unknown_bytes(&self) -> u64 {
        Emulator::unknown_bytes(self)
    }
    fn unknown_sample(&self) -> &[u8] {
        Emulator::unknown_sample(self)
    }
}

/// Something to do to the running board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Control {
    /// Pull the cable now. The players go on for `plies` more plies (fast-forwarded); after
    /// `away` the board is plugged in again on a new pty (the link, if any, follows) and the
    /// players wait for the host's next mode command.
    Unplug {
        /// Plies played while the board is unplugged.
        plies: usize,
        /// How long the board stays unplugged (real time).
        away: Duration,
    },
    /// The host went away (crashed): the players go on for `plies` more plies, the board's
    /// output is lost, and then they wait for the host's next mode command.
    Hold {
        /// Plies played while the host is away.
        plies: usize,
    },
    /// Put these raw bytes on the line now.
    Noise(Vec<u8>),
    /// The board resets with its port open: it comes back in IDLE (answers requests, sends no
    /// updates). A ply in progress is finished (and reported) first; then the players go on
    /// for `plies` more plies (their moves unreported) and wait for the host's next mode
    /// command.
    Reset {
        /// Plies played while the board is in IDLE.
        plies: usize,
    },
    /// Unplug for good and end the runner. Host bytes already on the line are taken first
    /// (so that the final [`Status`] counts them).
    Stop,
}

/// Runner settings.
#[derive(Debug, Clone)]
pub struct RunnerConfig {
    /// Script time per real time (1 = real pace).
    pub speed: f64,
    /// A symlink kept pointing at the current pty (removed while unplugged).
    pub link: Option<PathBuf>,
    /// Start the script clock only at the host's first mode command.
    pub wait_for_host: bool,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            speed: 1.0,
            link: None,
            wait_for_host: true,
        }
    }
}

/// What the runner is doing, for whoever drives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// The current pty's slave path (the last one while unplugged).
    pub path: PathBuf,
    /// Whether the board is plugged in.
    pub plugged: bool,
    /// Number of times the board was plugged in (1 at start).
    pub generation: u32,
    /// Script time now.
    pub script_time: Micros,
    /// Plies whose first hand action has happened.
    pub plies_started: usize,
    /// Whether the players are waiting for the host's mode command.
    pub waiting: bool,
    /// Whether every step of the script has been played.
    pub finished: bool,
    /// Texts the host showed on the clock, in order.
    pub texts: Vec<String>,
    /// Board bytes that could not be written (pty buffer full, no one reading).
    pub dropped: u64,
    /// Clock commands taken, lost (sent before the previous ack) and acknowledged.
    pub clock_commands: super::ClockCommandStats,
    /// Mode commands (0x43, 0x44, 0x4B) received from the host (for a bus chain: the
    /// reporting starts, see [`EmulatedBoard::host_input`]).
    pub modes_set: u64,
    /// Host bytes the board did not take ([`EmulatedBoard::unknown_bytes`]).
    pub unknown_bytes: u64,
    /// The first of them ([`EmulatedBoard::unknown_sample`]).
    pub unknown_sample: Vec<u8>,
    /// Each board of a chain ([`EmulatedBoard::boards`]; empty for one board).
    pub boards: Vec<BoardStatus>,
}

/// A running emulator.
#[derive(Debug)]
pub struct Handle {
    /// Controls.
    pub control: mpsc::UnboundedSender<Control>,
    /// Status, updated as it changes.
    pub status: watch::Receiver<Status>,
    /// The runner task; ends after [`Control::Stop`] or when `control` is dropped.
    pub task: JoinHandle<io::Result<()>>,
}

impl Handle {
    /// The current status.
    pub fn status(&self) -> Status {
        self.status.borrow().clone()
    }

    /// Sends a control (ignored when the runner has ended).
    pub fn send(&self, c: Control) {
        let _ = self.control.send(c);
    }

    /// Stops the runner ([`Control::Stop`]: host bytes already on the line are taken first)
    /// and returns its last status (the current one if it had already ended).
    pub async fn stop(self) -> Status {
        let _ = self.control.send(Control::Stop);
        let _ = self.task.await;
        self.status.borrow().clone()
    }

    /// Waits until `f(status)` holds or `timeout` passes; returns whether it held.
    pub async fn wait_for(&mut self, timeout: Duration, f: impl FnMut(&Status) -> bool) -> bool {
        matches!(
            tokio::time::timeout(timeout, self.status.wait_for(f)).await,
            Ok(Ok(_))
        )
    }
}

/// Script time, paced against real time.
#[derive(Debug)]
struct ScriptClock {
    running: bool,
    base_real: Instant,
    base_script: Micros,
    speed: f64,
}

impl ScriptClock {
    fn now(&self) -> Micros {
        if !self.running {
            return self.base_script;
        }
        let real = self.base_real.elapsed().as_secs_f64() * 1e6;
        self.base_script + (real * self.speed) as Micros
    }

    fn real_at(&self, t: Micros) -> Instant {
        let ahead = (t - self.base_script).max(0) as f64 / self.speed;
        self.base_real + Duration::from_micros(ahead as u64)
    }

    fn pause_at(&mut self, t: Micros) {
        self.running = false;
        self.base_script = t;
    }

    fn resume(&mut self) {
        if !self.running {
            self.running = true;
            self.base_real = Instant::now();
        }
    }
}

fn plug(link: &Option<PathBuf>) -> io::Result<Pty> {
    let pty = Pty::open()?;
    if let Some(link) = link {
        relink(pty.path(), link)?;
    }
    Ok(pty)
}

/// Opens a pty and runs `em` on it in a new task. Must be called inside a tokio runtime.
pub fn spawn<E: EmulatedBoard>(em: E, cfg: RunnerConfig) -> io::Result<Handle> {
    let pty = plug(&cfg.link)?;
    let status = Status {
        path: pty.path().to_path_buf(),
        plugged: true,
        generation: 1,
        waiting: cfg.wait_for_host,
        ..Default::default()
    };
    let (status_tx, status_rx) = watch::channel(status);
    let (control_tx, control_rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(run(em, cfg, pty, control_rx, status_tx));
    Ok(Handle {
        control: control_tx,
        status: status_rx,
        task,
    })
}

/// What a run keeps between its steps: the emulated board, its pty (none while unplugged), its
/// script clock, the bytes for the host, what it counted.
struct Run<E> {
    em: E,
    cfg: RunnerConfig,
    pty: Option<Pty>,
    clock: ScriptClock,
    replug_at: Option<Instant>,
    plugs: u32,
    buf: Vec<u8>,
    out: Vec<u8>,
    dropped: u64,
    modes_set: u64,
    /// Link time: the clock's electronics keep real pace whatever the players' speed.
    link_base: Instant,
}

impl<E: EmulatedBoard> Run<E> {
    /// Link time now.
    fn link_now(&self) -> Micros {
        self.link_base.elapsed().as_micros() as Micros
    }

    /// When the players' next step is due (real time), while the script clock runs.
    fn wake(&self) -> Option<Instant> {
        if self.clock.running {
            self.em.next_due().map(|t| self.clock.real_at(t))
        } else {
            None
        }
    }

    /// When the board's next link-time event is due (real time).
    fn ack_at(&self) -> Option<Instant> {
        self.em
            .next_link_due()
            .map(|t| self.link_base + Duration::from_micros(t.max(0) as u64))
    }

    /// A control message (`None`: the handle is gone, as a stop); whether the run stops.
    fn control(&mut self, c: Option<Control>, status: &watch::Sender<Status>) -> bool {
        match c {
            None | Some(Control::Stop) => {
                if let Some(link) = &self.cfg.link {
                    let _ = std::fs::remove_file(link);
                }
                // What the host wrote before the stop is taken (and counted) first.
                if let Some(p) = &self.pty {
                    while let Ok(n) = p.read_now(&mut self.buf) {
                        if n == 0 {
                            break;
                        }
                        self.em.host_input(&self.buf[..n], &mut self.out);
                    }
                }
                let now = self.clock.now();
                status.send_modify(|s| {
                    s.unknown_bytes = self.em.unknown_bytes();
                    s.unknown_sample = self.em.unknown_sample().to_vec();
                    s.boards = self.em.boards(now);
                });
                return true;
            }
            Some(Control::Unplug { plies, away }) => {
                self.pty = None;
                if let Some(link) = &self.cfg.link {
                    let _ = std::fs::remove_file(link);
                }
                self.em.unplugged();
                self.play_on_unseen(plies);
                self.replug_at = Some(Instant::now() + away);
            }
            Some(Control::Hold { plies }) => {
                self.em.host_gone();
                self.play_on_unseen(plies);
            }
            Some(Control::Noise(bytes)) => self.out.extend(bytes),
            Some(Control::Reset { plies }) => {
                // A ply in progress is played out (and reported) first: then exactly
                // `plies` whole plies go unreported.
                let mut now = self.clock.now();
                if self.em.plies_started(now) > self.em.plies_settled(now) {
                    now = self.em.after_plies(now, 1).max(now);
                    self.em.advance(now, &mut self.out);
                }
                self.em.reset();
                let target = self.em.after_plies(now, plies).max(now);
                self.em.advance(target, &mut self.out);
                self.clock.pause_at(target);
            }
        }
        false
    }

    /// The players play `plies` plies on with no host to see them (what the board says of
    /// them is not sent), and the script clock holds there.
    fn play_on_unseen(&mut self, plies: usize) {
        let target = self
            .em
            .after_plies(self.clock.now(), plies)
            .max(self.clock.now());
        self.em.advance(target, &mut self.out);
        self.out.clear();
        self.clock.pause_at(target);
    }

    /// `n` bytes from the host, in `buf`.
    fn host_bytes(&mut self, n: usize) {
        let link_now = self.link_now();
        self.em.link_time(link_now, &mut self.out);
        // The board is up to date when the command arrives (a bus chain starts a board's
        // players at the script time of its first request).
        if self.clock.running {
            self.em.advance(self.clock.now(), &mut self.out);
        }
        let mode_set = self.em.host_input(&self.buf[..n], &mut self.out);
        if mode_set {
            self.modes_set += 1;
            self.clock.resume();
        }
    }

    /// The players' step is due.
    fn step(&mut self) {
        // Link time first: a bus board tells when its EEPROM writes from it.
        let link_now = self.link_now();
        self.em.link_time(link_now, &mut self.out);
        self.em.advance(self.clock.now(), &mut self.out);
    }

    /// A link-time event is due.
    fn link_due(&mut self) {
        let link_now = self.link_now();
        self.em.link_time(link_now, &mut self.out);
    }

    /// The unplugged board comes back, on a new pty.
    fn replug(&mut self) -> io::Result<()> {
        self.replug_at = None;
        self.pty = Some(plug(&self.cfg.link)?);
        self.plugs += 1;
        self.em.unplugged();
        Ok(())
    }

    /// The bytes for the host go out (what the pty does not take is dropped, and counted).
    fn write_out(&mut self) -> io::Result<()> {
        if let (Some(p), false) = (&self.pty, self.out.is_empty())
            && let Written::Partial(n) = p.write_now(&self.out)?
        {
            self.dropped += (self.out.len() - n) as u64;
        }
        Ok(())
    }

    /// The status, when anything in it changed.
    fn report(&self, status: &watch::Sender<Status>) {
        let now = self.clock.now();
        status.send_if_modified(|s| {
            let mut changed = false;
            let set = |changed: &mut bool, cond: bool| *changed |= cond;
            let plugged = self.pty.is_some();
            if let Some(p) = &self.pty
                && (s.path != p.path() || s.generation != self.plugs)
            {
                s.path = p.path().to_path_buf();
                s.generation = self.plugs;
                changed = true;
            }
            set(&mut changed, s.plugged != plugged);
            s.plugged = plugged;
            s.script_time = now;
            let started = self.em.plies_started(now);
            set(&mut changed, s.plies_started != started);
            s.plies_started = started;
            set(&mut changed, s.waiting == self.clock.running);
            s.waiting = !self.clock.running;
            set(&mut changed, s.finished != self.em.finished());
            s.finished = self.em.finished();
            if s.texts.len() != self.em.texts().len() {
                s.texts = self.em.texts().to_vec();
                changed = true;
            }
            set(&mut changed, s.dropped != self.dropped);
            s.dropped = self.dropped;
            set(&mut changed, s.clock_commands != self.em.clock_commands());
            s.clock_commands = self.em.clock_commands();
            set(&mut changed, s.modes_set != self.modes_set);
            s.modes_set = self.modes_set;
            let boards = self.em.boards(now);
            if s.boards != boards {
                s.boards = boards;
                changed = true;
            }
            if s.unknown_bytes != self.em.unknown_bytes() {
                s.unknown_bytes = self.em.unknown_bytes();
                s.unknown_sample = self.em.unknown_sample().to_vec();
                changed = true;
            }
            changed
        });
    }
}

/// Runs `em` on `pty` until told to stop: control messages, the host's bytes, the players'
/// steps, link-time events and a replug, each as it comes; after each, the bytes for the host
/// go out and the status is brought up to date.
async fn run<E: EmulatedBoard>(
    em: E,
    cfg: RunnerConfig,
    pty: Pty,
    mut control: mpsc::UnboundedReceiver<Control>,
    status: watch::Sender<Status>,
) -> io::Result<()> {
    let mut r = Run {
        clock: ScriptClock {
            running: !cfg.wait_for_host,
            base_real: Instant::now(),
            base_script: 0,
            speed: cfg.speed.max(1e-6),
        },
        em,
        cfg,
        pty: Some(pty),
        replug_at: None,
        plugs: 1,
        buf: vec![0u8; 4096],
        out: Vec::new(),
        dropped: 0,
        modes_set: 0,
        link_base: Instant::now(),
    };
    loop {
        r.out.clear();
        let wake = r.wake();
        let ack_at = r.ack_at();
        let replug_at = r.replug_at;
        tokio::select! {
            biased;
            c = control.recv() => if r.control(c, &status) {
                return Ok(());
            },
            read = async {
                match &r.pty {
                    Some(p) => p.read(&mut r.buf).await,
                    None => std::future::pending().await,
                }
            } => match read {
                Ok(n) if n > 0 => r.host_bytes(n),
                _ => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            _ = tokio::time::sleep_until(wake.unwrap_or_else(Instant::now)), if wake.is_some() => r.step(),
            _ = tokio::time::sleep_until(ack_at.unwrap_or_else(Instant::now)), if ack_at.is_some() => r.link_due(),
            _ = tokio::time::sleep_until(replug_at.unwrap_or_else(Instant::now)), if replug_at.is_some() => r.replug()?,
        }
        r.write_out()?;
        r.report(&status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::dgt::{DgtDecoder, DgtMessage};
    use crate::sim::emulator::{EmulatorConfig, Script};
    use crate::sim::{SimConfig, pgn::parse_games};
    use std::io::{Read, Write};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plays_on_a_pty_once_the_host_sets_a_mode() {
        let games: Vec<_> = parse_games("1. e4 e5 2. Nf3 Nc6 *")
            .into_iter()
            .map(|g| g.unwrap())
            .collect();
        let script = Script::from_games(&games, &SimConfig::clean(1), 1_000_000);
        let n_steps = script.steps.len();
        let em = Emulator::new(script, EmulatorConfig::default());
        let mut h = spawn(
            em,
            RunnerConfig {
                speed: 1000.0,
                ..Default::default()
            },
        )
        .unwrap();
        let path = h.status().path;
        let got = tokio::task::spawn_blocking(move || {
            let mut port = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .unwrap();
            port.write_all(&[0x4D, 0x43]).unwrap();
            let mut dec = DgtDecoder::new();
            let mut msgs = Vec::new();
            let mut buf = [0u8; 256];
            while msgs.len() < 1 + n_steps {
                let n = port.read(&mut buf).unwrap();
                dec.decode(&buf[..n], &mut msgs);
            }
            msgs
        })
        .await
        .unwrap();
        assert_eq!(got[0], DgtMessage::Version { major: 3, minor: 1 });
        assert!(h.wait_for(Duration::from_secs(5), |s| s.finished).await);
        h.send(Control::Stop);
        h.task.await.unwrap().unwrap();
    }
}
