//! An emulated DGT board with a DGT 3000 clock on its cable, as a daemon sees it on a serial
//! port: it answers the host's commands (`docs/dgt-protocol.md` §1.2: mode, version, serial number,
//! board dump, clock times, clock messages with acks) and plays a script of games made by the
//! [simulator](super) with human handling.
//!
//! [`Emulator`] is sans-IO: host bytes in, board bytes out, script time as an input. The
//! [`runner`] paces it on a pseudo-terminal at real or accelerated speed, and can unplug and
//! replug it, hold the players while the host is away, and inject line noise.
//!
//! The board behaves like the real one: after power-up (and after every replug) it sits in IDLE
//! and sends nothing until a mode command (0x43, 0x44, 0x4B) arrives; in IDLE and while
//! unplugged the players go on and only the board's state changes, which the next dump shows.
//!
//! The clock behaves like a real DGT 3000 on the board's cable (the recording in
//! `tests/data/arnsholt-dgtdriver/`, `docs/dgt-protocol.md` §2.1): the status byte keeps the
//! turn bits while paused (`0x08` left's turn, `0x12` right's turn) and adds the running bit
//! while it runs (`0x09`, `0x13`); the hours bytes carry D5 (time per move) in increment mode;
//! in UPDATE and UPDATE_NICE a clock message goes out every time the running face's display
//! changes, about once a second, not only at presses. A clock command is acknowledged 1–2 s
//! after it arrives (link time, which the runner keeps at real pace whatever the players'
//! speed), and the clock takes one command at a time: a command that arrives before the
//! previous one's ack is lost.
//!
//! Links that misbehave: the board can reset with its port open ([`Emulator::reset`]: back to
//! IDLE, still answering requests), field updates can be lost on the line
//! ([`EmulatorConfig::lose_field_updates`]), an old board sends its serial number as a 12-byte
//! frame, and a Bluetooth board answers the battery request (0x4C).
//!
//! The board keeps its own memory ([`dgt_memory::DgtMemory`]): every change it senses, in every
//! mode and while unplugged (the players go on), and the clock's times at every lever change;
//! `0x49` (SEND_EE_MOVES) sends it.
//!
//! The board is strict, so that tests see what a host sends that the board does not take
//! ([`Emulator::unknown_bytes`]): every byte that is no single-board command the board knows
//! (DGT's header `dgtbrd.h`, commands 0x40–0x55 and the clock wrapper 0x2B), and every byte of
//! a clock message that is not one of the header's (`2B <size> 03 <cmd> <data> 00` with the
//! header's size for `cmd`), is counted. Counted too: 0x4C (battery) on a board without
//! Bluetooth, ASCII text (0x0C) for a DGT XL (it has no text display), and the commands the
//! emulator does not model (0x4A TO_BUSMODE, 0x4E bootloader, 0x50–0x54 draughts scans, 0x60
//! Revelation II LEDs, and bus commands 0x80–0x8D: per the header a bus command would switch
//! the board to bus mode; the emulator stays in single-board mode and counts it).

pub mod certabo;
pub mod chessnut;
pub mod dgt_bus;
pub mod dgt_memory;
pub mod gatt;
pub mod millennium;
pub mod runner;

use shakmaty::Position;

use super::pgn::ScriptGame;
use super::rng::Rng;
use super::{SimConfig, simulate};
use crate::capture::RecordKind;
use crate::core::observation::{ClockReading, FieldArray, Micros, SquareReading};
use crate::driver::dgt::{BatteryStatus, ClockAck, DgtDecoder, DgtMessage};
use dgt_memory::DgtMemory;

/// The clock on the board's cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockModel {
    /// No clock: BWTIME says "no clock", clock messages get no ack.
    None,
    /// A DGT 3000 (clock version 2.1): takes 8-character ASCII texts.
    #[default]
    Dgt3000,
    /// A DGT XL (clock version 1.4): 7-segment display only.
    Xl,
}

/// Identity and behaviour of the emulated board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmulatorConfig {
    /// The 5-digit serial number (0x45 → 0x91).
    pub serial: String,
    /// Board firmware version (0x4D → 0x93).
    pub version: (u8, u8),
    /// The clock on the cable.
    pub clock: ClockModel,
    /// Script time between the end of a game and the players resetting the pieces.
    pub gap_between_games: Micros,
    /// Inject a burst of line noise (bytes that form no valid frame) between frames about this
    /// often (script time).
    pub noise_every: Option<Micros>,
    /// The clock's time between a clock command and its ack, link time: uniform in
    /// `lo..=hi` µs (real DGT 3000: 1–2 s).
    pub ack_delay: (Micros, Micros),
    /// In UPDATE / UPDATE_NICE, a clock message every time the running face's display changes
    /// (about once a second), as real clocks do; `false`: only at presses.
    pub clock_ticks: bool,
    /// The clock is in a time-per-move (increment) mode: hours bytes carry D5.
    pub increment_mode: bool,
    /// An old board: its serial number comes as a 12-byte SERIALNR frame (the digits padded
    /// with NULs to 9 payload bytes).
    pub old_serial: bool,
    /// A Bluetooth board: answers the battery request (0x4C) with this charge (percent).
    pub battery: Option<u8>,
    /// Field updates lost on the line: positions (from 0) among the field updates the board
    /// sends.
    pub lose_field_updates: Vec<u64>,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            serial: "10001".into(),
            version: (3, 1),
            clock: ClockModel::Dgt3000,
            gap_between_games: 10_000_000,
            noise_every: None,
            ack_delay: (1_000_000, 2_000_000),
            clock_ticks: true,
            increment_mode: true,
            old_serial: false,
            battery: None,
            lose_field_updates: Vec::new(),
        }
    }
}

/// One ply of the script: when its first hand action happens and when it is settled (its clock
/// press, or its last action for a game-ending move), in script time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlyMark {
    /// Game index in the script, from 0.
    pub game: usize,
    /// Ply number within the game, from 1.
    pub ply: usize,
    /// Time of the first hand action.
    pub first_action: Micros,
    /// Time of the last hand action (the move's piece let go).
    pub last_action: Micros,
    /// Time of the clock press (or of the last action when the move ends the game).
    pub settled: Micros,
}

/// What the board will report, in script time: games played one after another, with the pieces
/// reset between games.
#[derive(Debug, Clone)]
pub struct Script {
    /// Every message the board reports while in an update mode, in time order.
    pub steps: Vec<(Micros, DgtMessage)>,
    /// Every ply of every game, in time order.
    pub plies: Vec<PlyMark>,
    /// The board before the first step (the first game's start position).
    pub initial: FieldArray,
    /// When each game's first step is.
    pub game_starts: Vec<Micros>,
    /// Script time from one lap to the next of a script played again and again
    /// ([`Script::looped`]); `None`: played once.
    pub lap: Option<Micros>,
}

impl Script {
    /// The same script `by` later (the board stands set up that long before the first game's
    /// first hand action, as at a tournament, where boards are set up before the round).
    pub fn delayed(mut self, by: Micros) -> Script {
        for (t, _) in &mut self.steps {
            *t += by;
        }
        for p in &mut self.plies {
            p.first_action += by;
            p.settled += by;
        }
        for t in &mut self.game_starts {
            *t += by;
        }
        self
    }

    /// The script of `games` played one after another on one board, each synthesised with `cfg`
    /// (its seed advanced per game), `gap` script time between a game's end and the reset.
    pub fn from_games(games: &[ScriptGame], cfg: &SimConfig, gap: Micros) -> Script {
        let mut steps: Vec<(Micros, DgtMessage)> = Vec::new();
        let mut plies = Vec::new();
        let mut game_starts = Vec::new();
        let mut initial: Option<FieldArray> = None;
        let mut board: FieldArray = [SquareReading::Empty; 64];
        let mut offset: Micros = 0;
        let mut decoder = DgtDecoder::new();
        let mut msgs = Vec::new();
        for (i, game) in games.iter().enumerate() {
            let mut c = cfg.clone();
            c.seed = cfg.seed.wrapping_add(i as u64 * 0x9E37_79B9);
            // The emulated clock sends its own once-a-second messages.
            c.clock_ticks = Some(false);
            let syn = if c.signal_result {
                simulate_on_time(game, &mut c)
            } else {
                simulate(
                    &game.start,
                    &game.moves,
                    &game.clocks,
                    game.time_control(),
                    &c,
                )
            };
            let mut start_fields = None;
            let mut game_steps = Vec::new();
            for r in &syn.records {
                let RecordKind::Rx(bytes) = &r.kind else {
                    continue;
                };
                msgs.clear();
                decoder.decode(bytes, &mut msgs);
                for m in msgs.drain(..) {
                    match m {
                        DgtMessage::BoardDump(f) if start_fields.is_none() => {
                            start_fields = Some(*f);
                        }
                        m => game_steps.push((r.t, m)),
                    }
                }
            }
            let start_fields = start_fields.unwrap_or_else(|| fields_of(game));
            match initial {
                None => {
                    initial = Some(start_fields);
                    board = start_fields;
                }
                Some(_) => {
                    let t = reset_pieces(&board, &start_fields, offset, &mut steps);
                    board = start_fields;
                    offset = t + 2_000_000;
                }
            }
            game_starts.push(offset);
            let mut last = offset;
            let mut last_clock: Option<(Micros, ClockReading)> = None;
            for (t, m) in game_steps {
                match &m {
                    DgtMessage::FieldUpdate { index, reading } => {
                        board[usize::from(*index)] = *reading;
                    }
                    DgtMessage::ClockTimes(r) => last_clock = Some((offset + t, *r)),
                    _ => {}
                }
                last = offset + t;
                steps.push((last, m));
            }
            // The game is over: the clock is stopped a second after the last step.
            if let Some((at, r)) = last_clock {
                let stop = last + 1_000_000;
                let mut r = run_down(r, stop - at);
                r.running = false;
                steps.push((stop, DgtMessage::ClockTimes(r)));
                last = stop;
            }
            // The players tell the result on the board, as the source game ended.
            if c.signal_result {
                let mut t = last + 2_000_000;
                for (index, reading) in result_signal(game, c.reversed_board) {
                    t += 150_000;
                    board[usize::from(index)] = reading;
                    steps.push((t, DgtMessage::FieldUpdate { index, reading }));
                    last = t;
                }
            }
            for p in &syn.plies {
                plies.push(PlyMark {
                    game: i,
                    ply: p.ply,
                    first_action: offset + p.first_action,
                    last_action: offset + p.last_action,
                    settled: offset + p.press.unwrap_or(p.last_action),
                });
            }
            offset = last + gap;
        }
        Script {
            steps,
            plies,
            initial: initial.unwrap_or([SquareReading::Empty; 64]),
            game_starts,
            lap: None,
        }
    }

    /// The script played again and again until the board is stopped (`eboardd demo`): `gap`
    /// after its last step the players set the pieces up for the first game again, and two
    /// seconds later the script starts over ([`Script::step`]). The plies and game starts
    /// stay those of the first lap.
    pub fn looped(mut self, gap: Micros) -> Script {
        let mut board = self.initial;
        for (_, m) in &self.steps {
            if let DgtMessage::FieldUpdate { index, reading } = m {
                board[usize::from(*index)] = *reading;
            }
        }
        let t = reset_pieces(&board, &self.initial, self.end() + gap, &mut self.steps);
        self.lap = Some(t + 2_000_000);
        self
    }

    /// Step `k` of the play (counted over every lap of a [looped](Script::looped) script):
    /// its time and message; `None` past the end of a script played once.
    pub fn step(&self, k: usize) -> Option<(Micros, &DgtMessage)> {
        let n = self.steps.len();
        match self.lap {
            Some(lap) if n > 0 => {
                let (t, m) = &self.steps[k % n];
                let laps = Micros::try_from(k / n).unwrap_or(Micros::MAX / lap.max(1));
                Some((t.saturating_add(laps.saturating_mul(lap)), m))
            }
            _ => self.steps.get(k).map(|(t, m)| (*t, m)),
        }
    }

    /// The field updates of the play after `after`, up to `until` (every lap of a looped
    /// script).
    pub fn field_updates_between(
        &self,
        after: Micros,
        until: Micros,
    ) -> impl Iterator<Item = (Micros, u8, SquareReading)> + '_ {
        let n = self.steps.len().max(1);
        let first = match self.lap {
            Some(lap) if lap > 0 => usize::try_from(after.max(0) / lap).unwrap_or(0) * n,
            _ => 0,
        };
        (first..)
            .map_while(move |k| self.step(k))
            .skip_while(move |(t, _)| *t <= after)
            .take_while(move |(t, _)| *t <= until)
            .filter_map(|(t, m)| match m {
                DgtMessage::FieldUpdate { index, reading } => Some((t, *index, *reading)),
                _ => None,
            })
    }

    /// When the last step is.
    pub fn end(&self) -> Micros {
        self.steps.last().map_or(0, |(t, _)| *t)
    }
}

/// A running clock's reading `dt` µs later: the running face's display goes down by one second
/// per second, down to zero, where the final flag (hours D4) shows and the face stays.
pub fn run_down(mut r: ClockReading, dt: Micros) -> ClockReading {
    if !r.running || dt <= 0 {
        return r;
    }
    let face = if r.right_turn {
        &mut r.right
    } else if r.left_turn {
        &mut r.left
    } else {
        return r;
    };
    let down = u32::try_from(dt / 1_000_000).unwrap_or(u32::MAX);
    face.millis = face.millis.saturating_sub(down.saturating_mul(1000));
    if face.millis == 0 {
        face.flag = true;
    }
    r
}

/// `game` simulated with `cfg`, the clock's base time raised (in whole seconds) by the most
/// the hands took from a side beyond its `[%clk]` (a move the source game made in no time
/// still takes a hand a second or two): the clock then never shows less than the source's
/// after a move, and no flag falls where the source's did not.
fn simulate_on_time(game: &ScriptGame, cfg: &mut SimConfig) -> super::Synthesis {
    let run = |cfg: &SimConfig| {
        simulate(
            &game.start,
            &game.moves,
            &game.clocks,
            game.time_control(),
            cfg,
        )
    };
    let syn = run(cfg);
    let mut decoder = DgtDecoder::new();
    let mut msgs = Vec::new();
    let mut readings = std::collections::HashMap::new();
    for r in &syn.records {
        if let RecordKind::Rx(bytes) = &r.kind {
            decoder.decode(bytes, &mut msgs);
            for m in msgs.drain(..) {
                if let DgtMessage::ClockTimes(c) = m {
                    readings.insert(r.t, c);
                }
            }
        }
    }
    let white_first = game.start.turn() == shakmaty::Color::White;
    let mut deficit: i64 = 0;
    for (i, ply) in syn.plies.iter().enumerate() {
        let (Some(t), Some(Some(source))) = (ply.press, game.clocks.get(i)) else {
            continue;
        };
        let Some(r) = readings.get(&t) else {
            continue;
        };
        let white = (i % 2 == 0) == white_first;
        let face = if white == syn.white_on_right {
            r.right
        } else {
            r.left
        };
        deficit = deficit.max(i64::from(*source) - i64::from(face.millis));
    }
    if deficit <= 0 {
        return syn;
    }
    let raise = u32::try_from((deficit + 999) / 1000 * 1000).unwrap_or(u32::MAX);
    cfg.base_ms = cfg.base_ms.saturating_add(raise);
    run(cfg)
}

/// The players set the pieces from `board` to `to`, from script time `t` on: wrong pieces off
/// first, then the rest on, a change every 150 ms. Returns the time of the last change.
fn reset_pieces(
    board: &FieldArray,
    to: &FieldArray,
    mut t: Micros,
    steps: &mut Vec<(Micros, DgtMessage)>,
) -> Micros {
    for lift in [true, false] {
        for (i, (now, want)) in board.iter().zip(to).enumerate() {
            let reading = match (lift, now == want, *now, *want) {
                (_, true, _, _) => continue,
                (true, _, SquareReading::Empty, _) => continue,
                (true, _, _, _) => SquareReading::Empty,
                (false, _, _, SquareReading::Empty) => continue,
                (false, _, _, want) => want,
            };
            t += 150_000;
            steps.push((
                t,
                DgtMessage::FieldUpdate {
                    index: i as u8,
                    reading,
                },
            ));
        }
    }
    t
}

/// The field changes by which the players of `game` tell its result (its `Result` tag) once
/// its last move is made: each king, the side to move's first, carried to a centre square of
/// the DGT convention (both light: 1-0, both dark: 0-1, one of each: draw), a piece standing
/// there taken off the board first; the squares needing the fewest pieces moved. Nothing when
/// the result is unknown or the final position ends the game by rule (the board tells it).
pub fn result_signal(game: &ScriptGame, reversed: bool) -> Vec<(u8, SquareReading)> {
    use shakmaty::{Color, Outcome, Square};
    let mut pos = game.start.clone();
    for m in &game.moves {
        pos.play_unchecked(*m);
    }
    let wanted = game
        .tag("Result")
        .and_then(|r| Outcome::from_ascii(r.as_bytes()).ok())
        .filter(|o| *o != Outcome::Unknown);
    let board = pos.board();
    let (Some(wanted), false) = (wanted, pos.is_game_over()) else {
        return Vec::new();
    };
    let (Some(wk), Some(bk)) = (board.king_of(Color::White), board.king_of(Color::Black)) else {
        return Vec::new();
    };
    let centre = [Square::D4, Square::E4, Square::D5, Square::E5];
    let mut best: Option<(usize, Square, Square)> = None;
    for w in centre {
        for b in centre {
            let mut kings = shakmaty::Board::empty();
            kings.set_piece_at(w, Color::White.king());
            kings.set_piece_at(b, Color::Black.king());
            if w == b || crate::core::irregular::kings_signal(&kings) != Some(wanted) {
                continue;
            }
            // The other king on a target square: that king is not carried away first.
            if w == bk || b == wk {
                continue;
            }
            let blockers = usize::from(w != wk && board.piece_at(w).is_some())
                + usize::from(b != bk && board.piece_at(b).is_some());
            if best.is_none_or(|(n, _, _)| blockers < n) {
                best = Some((blockers, w, b));
            }
        }
    }
    let Some((_, w, b)) = best else {
        return Vec::new();
    };
    let mut carry = [(Color::White, wk, w), (Color::Black, bk, b)];
    if pos.turn() == Color::Black {
        carry.swap(0, 1);
    }
    let field = |sq: Square| super::field_index(sq, reversed);
    let mut out = Vec::new();
    for (color, from, to) in carry {
        if from == to {
            continue;
        }
        if board.piece_at(to).is_some() {
            out.push((field(to), SquareReading::Empty));
        }
        out.push((field(from), SquareReading::Empty));
        out.push((field(to), SquareReading::Piece(color.king())));
    }
    out
}

fn fields_of(game: &ScriptGame) -> FieldArray {
    let mut f = [SquareReading::Empty; 64];
    for (sq, piece) in game.start.board() {
        f[usize::from(super::field_index(sq, false))] = SquareReading::Piece(piece);
    }
    f
}

/// The board's reporting mode (§1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Sends only answers to requests.
    Idle,
    /// 0x43: field updates and clock times.
    Update,
    /// 0x44: field updates only; clock messages get no ack.
    UpdateBoard,
    /// 0x4B: field updates and clock times when they change.
    UpdateNice,
}

/// Host→board command parser state: inside a `0x2B <n> …` clock message or not.
#[derive(Debug, Default)]
struct HostParser {
    /// Bytes of the clock message so far (after 0x2B: the size, then the message), when inside
    /// one.
    clock_msg: Option<Vec<u8>>,
}

/// The size byte of each clock command the DGT header defines (`dgtbrd.h`, "Clock commands":
/// DISPLAY, ICONS, END, BUTTON, VERSION, SETNRUN, BEEP, ASCII).
fn clock_command_size(cmd: u8) -> Option<u8> {
    match cmd {
        0x01 | 0x02 => Some(0x0B),
        0x03 | 0x08 | 0x09 => Some(0x03),
        0x0A => Some(0x0A),
        0x0B => Some(0x04),
        0x0C => Some(0x0C),
        _ => None,
    }
}

/// How many bytes not taken a strict emulator keeps for reports.
pub const UNKNOWN_SAMPLE: usize = 64;

/// Bytes an emulator did not take: how many, and the first [`UNKNOWN_SAMPLE`] of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unknown {
    /// Bytes not taken.
    pub count: u64,
    /// The first of them, in order.
    pub sample: Vec<u8>,
}

impl Unknown {
    /// Counts `bytes` as not taken.
    pub fn add(&mut self, bytes: &[u8]) {
        self.count += bytes.len() as u64;
        let room = UNKNOWN_SAMPLE.saturating_sub(self.sample.len());
        self.sample.extend(bytes.iter().take(room));
    }
}

/// A clock command the clock is working on.
#[derive(Debug, Clone, Copy)]
struct Busy {
    /// Link time of the ack.
    until: Micros,
    /// The ack to send then.
    ack: ClockAck,
}

/// What happened to the clock commands the board relayed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClockCommandStats {
    /// Commands the clock took.
    pub accepted: u64,
    /// Commands lost: they came while the clock was still busy with the previous one.
    pub lost: u64,
    /// Acks sent.
    pub acked: u64,
}

/// The emulated board and clock.
#[derive(Debug)]
pub struct Emulator {
    cfg: EmulatorConfig,
    script: Script,
    next: usize,
    fields: FieldArray,
    clock: Option<ClockReading>,
    /// Script time at which `clock` was read (the running face goes down from there).
    clock_at: Micros,
    /// Script time of the running face's next display change.
    next_tick: Option<Micros>,
    mode: Mode,
    parser: HostParser,
    noise: Rng,
    next_noise: Micros,
    /// Link (real) time, for the clock's acks.
    link_now: Micros,
    busy: Option<Busy>,
    acks: Rng,
    field_updates: u64,
    /// The board's memory.
    memory: DgtMemory,
    /// Script time of the last [`Emulator::advance`].
    now: Micros,
    /// Host bytes not taken.
    unknown: Unknown,
    /// Texts shown on the DGT 3000, in order.
    pub texts: Vec<String>,
    /// Host commands received, by command byte (clock messages counted under 0x2B).
    pub commands: std::collections::BTreeMap<u8, u64>,
    /// Clock commands taken, lost and acknowledged.
    pub clock_commands: ClockCommandStats,
    /// Field updates lost on the line.
    pub field_updates_lost: u64,
    /// Times the board reset itself.
    pub resets: u64,
    /// The board has power: its memory records (see [`Emulator::set_powered`]).
    powered: bool,
}

impl Emulator {
    /// A board holding the script's first position, in IDLE, clock not started.
    pub fn new(script: Script, cfg: EmulatorConfig) -> Emulator {
        let clock = script.steps.iter().find_map(|(_, m)| match m {
            DgtMessage::ClockTimes(r) => Some(ClockReading {
                running: false,
                ..*r
            }),
            _ => None,
        });
        let clock = if cfg.clock == ClockModel::None {
            None
        } else {
            Some(clock.unwrap_or_default())
        };
        let seed = cfg.serial.bytes().map(u64::from).sum::<u64>();
        let noise = Rng::new(seed ^ 0x5EED);
        let memory = DgtMemory::powered_up(seed, 0, &script.initial);
        Emulator {
            memory,
            now: 0,
            unknown: Unknown::default(),
            next_noise: cfg.noise_every.unwrap_or(Micros::MAX),
            fields: script.initial,
            script,
            next: 0,
            clock,
            clock_at: 0,
            next_tick: None,
            mode: Mode::Idle,
            parser: HostParser::default(),
            noise,
            link_now: 0,
            busy: None,
            acks: Rng::new(seed ^ 0xAC4),
            field_updates: 0,
            texts: Vec::new(),
            commands: Default::default(),
            clock_commands: ClockCommandStats::default(),
            field_updates_lost: 0,
            resets: 0,
            powered: true,
            cfg,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &EmulatorConfig {
        &self.cfg
    }

    /// The script being played.
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// What the board's sensors read now.
    pub fn fields(&self) -> &FieldArray {
        &self.fields
    }

    /// The current reporting mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The board's memory.
    pub fn memory(&self) -> &DgtMemory {
        &self.memory
    }

    /// The board's memory, to write to (the bus emulator's SET_START_GAME, SEND_CHANGES).
    pub fn memory_mut(&mut self) -> &mut DgtMemory {
        &mut self.memory
    }

    /// Script time of the last [`Emulator::advance`].
    pub fn now(&self) -> Micros {
        self.now
    }

    /// Host bytes the board did not take (see the module documentation).
    pub fn unknown_bytes(&self) -> u64 {
        self.unknown.count
    }

    /// The first host bytes the board did not take.
    pub fn unknown_sample(&self) -> &[u8] {
        &self.unknown.sample
    }

    /// The clock's BWTIME payload as the board sends it at script time [`Emulator::now`]
    /// (7 bytes: the running face as it shows then, the real status bytes, hours D5 in
    /// increment mode; "no clock" without one).
    pub fn clock_payload(&self) -> Vec<u8> {
        let frame = match self.clock {
            Some(r) => self.encode_clock(&run_down(r, self.now - self.clock_at)),
            None => DgtMessage::NoClock.encode(),
        };
        frame.get(3..).map(<[u8]>::to_vec).unwrap_or_default()
    }

    /// Script time of the next step or clock display change, if any.
    pub fn next_due(&self) -> Option<Micros> {
        let step = self.script.step(self.next).map(|(t, _)| t);
        match (step, self.next_tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// What the clock shows now (`None` without a clock).
    pub fn clock(&self) -> Option<ClockReading> {
        self.clock
    }

    /// Link time of the next clock ack, if one is due.
    pub fn next_link_due(&self) -> Option<Micros> {
        self.busy.map(|b| b.until)
    }

    /// Moves link (real) time on to `now`: a clock ack due by then goes to `out` when the board
    /// is in UPDATE or UPDATE_NICE (in other modes the board does not pass it on).
    pub fn link_time(&mut self, now: Micros, out: &mut Vec<u8>) {
        self.link_now = self.link_now.max(now);
        if let Some(b) = self.busy
            && b.until <= self.link_now
        {
            self.busy = None;
            if matches!(self.mode, Mode::Update | Mode::UpdateNice) {
                self.clock_commands.acked += 1;
                out.extend(DgtMessage::ClockAck(b.ack).encode());
            }
        }
    }

    /// Power off (`false`: the players go on, the board senses and records nothing) or on
    /// (`true`: the memory's power-up sequence with the pieces found, at [`Emulator::now`]).
    /// Used by the bus emulator for a board switched off on its chain.
    pub fn set_powered(&mut self, on: bool) {
        if on && !self.powered {
            self.memory.power_up(self.now, &self.fields);
        }
        self.powered = on;
    }

    /// The board resets (a power glitch, a firmware watchdog) while its port stays open: it
    /// comes back in IDLE (answers requests, sends no updates); the clock forgets the command
    /// it was working on.
    pub fn reset(&mut self) {
        self.mode = Mode::Idle;
        self.parser = HostParser::default();
        self.busy = None;
        self.resets += 1;
        // With its port open the board kept power: its watchdog reset it (`dgtbrd.h`:
        // EE_WATCHDOG_ACTION, then the power-up sequence).
        self.memory.watchdog(self.now, &self.fields);
    }

    /// The clock message as the board sends it (hours D5 in increment mode).
    fn encode_clock(&self, r: &ClockReading) -> Vec<u8> {
        let mut bytes = DgtMessage::ClockTimes(*r).encode();
        if self.cfg.increment_mode && bytes.len() == 10 {
            bytes[3] |= 0x20;
            bytes[6] |= 0x20;
        }
        bytes
    }

    /// The clock's state becomes `r` at script time `t`.
    fn set_clock(&mut self, t: Micros, r: ClockReading) {
        self.clock = Some(r);
        self.clock_at = t;
        self.next_tick = (self.cfg.clock_ticks && r.running && (r.left_turn || r.right_turn))
            .then_some(t + 1_000_000);
    }

    /// Whether every step has been played (never, for a [looped](Script::looped) script).
    pub fn finished(&self) -> bool {
        self.script.step(self.next).is_none()
    }

    /// Plies whose first hand action is at or before `t`.
    pub fn plies_started(&self, t: Micros) -> usize {
        self.script
            .plies
            .iter()
            .take_while(|p| p.first_action <= t)
            .count()
    }

    /// Plies settled (clock pressed, or the game-ending move made) at or before `t`.
    pub fn plies_settled(&self, t: Micros) -> usize {
        self.script
            .plies
            .iter()
            .take_while(|p| p.settled <= t)
            .count()
    }

    /// A time at which `k` more plies (after those settled by `t`, the one in progress
    /// included) are settled and the next has not started: where to stop fast-forwarding.
    pub fn after_plies(&self, t: Micros, k: usize) -> Micros {
        if k == 0 {
            return t;
        }
        let settled = self.plies_settled(t);
        let Some(last) = self.script.plies.get(settled + k - 1) else {
            return self.script.end();
        };
        let next_start = self
            .script
            .plies
            .get(settled + k)
            .map_or(Micros::MAX, |p| p.first_action);
        // Let the move's last field updates (possibly reported after the press) go out.
        (last.settled + 600_000)
            .min(next_start - 1)
            .max(last.settled)
    }

    /// Plays every step due at or before `now`: the board's state changes, and in an update
    /// mode the messages go to `out`.
    pub fn advance(&mut self, now: Micros, out: &mut Vec<u8>) {
        self.now = self.now.max(now);
        loop {
            let step = self.script.step(self.next).map(|(t, _)| t);
            if let Some(tick) = self.next_tick
                && tick <= now
                && step.is_none_or(|s| tick < s)
            {
                self.tick(tick, out);
                continue;
            }
            let Some((t, msg)) = self.script.step(self.next) else {
                break;
            };
            if t > now {
                break;
            }
            let msg = msg.clone();
            self.next += 1;
            let bytes = match &msg {
                DgtMessage::FieldUpdate { index, reading } => {
                    self.fields[usize::from(*index)] = *reading;
                    if self.powered {
                        self.memory.field_changed(t, *index, *reading, &self.fields);
                    }
                    if self.mode == Mode::Idle {
                        None
                    } else {
                        let n = self.field_updates;
                        self.field_updates += 1;
                        if self.cfg.lose_field_updates.contains(&n) {
                            self.field_updates_lost += 1;
                            None
                        } else {
                            Some(msg.encode())
                        }
                    }
                }
                DgtMessage::ClockTimes(r) => match self.clock {
                    Some(_) => {
                        self.set_clock(t, *r);
                        if self.powered {
                            self.memory.clock(r);
                        }
                        matches!(self.mode, Mode::Update | Mode::UpdateNice)
                            .then(|| self.encode_clock(r))
                    }
                    None => None,
                },
                _ => (self.mode != Mode::Idle).then(|| msg.encode()),
            };
            if let Some(bytes) = bytes {
                if t >= self.next_noise {
                    self.noise_burst(out);
                    self.next_noise = t + self.cfg.noise_every.unwrap_or(Micros::MAX / 2);
                }
                out.extend(bytes);
            }
        }
    }

    /// The running face's display changes at `t`.
    fn tick(&mut self, t: Micros, out: &mut Vec<u8>) {
        let Some(c) = self.clock else {
            self.next_tick = None;
            return;
        };
        let r = run_down(c, t - self.clock_at);
        self.clock = Some(r);
        self.clock_at = t;
        let stopped = r.left.flag && r.left_turn || r.right.flag && r.right_turn;
        self.next_tick = (!stopped).then_some(t + 1_000_000);
        if r != c && matches!(self.mode, Mode::Update | Mode::UpdateNice) {
            out.extend(self.encode_clock(&r));
        }
    }

    /// Line noise: bytes without bit 7 (dropped by a decoder looking for a header), unknown
    /// message ids and frames cut short; never a valid frame.
    fn noise_burst(&mut self, out: &mut Vec<u8>) {
        let n = 1 + self.noise.below(12) as usize;
        for _ in 0..n {
            match self.noise.below(4) {
                0 => out.push(0x80 | [0x00, 0x01, 0x7F, 0x40, 0x3F][self.noise.below(5) as usize]),
                1 => out.extend([0x8E, 0x00]),
                2 => out.extend([0x86, 0x00, 0x43, 0x08, 0x09]),
                _ => out.push(self.noise.below(0x80) as u8),
            }
        }
    }

    /// The board was unplugged (or powered off and on): back to IDLE, partial commands lost.
    pub fn unplugged(&mut self) {
        self.mode = Mode::Idle;
        self.parser = HostParser::default();
        self.busy = None;
    }

    /// Bytes from the host; answers go to `out`. Returns whether a mode command was among them
    /// (the players wait for the board to be "on" before they start).
    pub fn host_input(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool {
        let mut mode_set = false;
        for &b in bytes {
            if let Some(msg) = &mut self.parser.clock_msg {
                msg.push(b);
                // `msg` = [size, size bytes…]; a size of 0 is complete (and malformed) at once.
                if msg.len() > usize::from(msg[0]) {
                    let msg = self.parser.clock_msg.take().unwrap_or_default();
                    self.clock_message(&msg, out);
                }
                continue;
            }
            *self.commands.entry(b).or_default() += 1;
            match b {
                0x2B => self.parser.clock_msg = Some(Vec::new()),
                0x40 => self.mode = Mode::Idle,
                0x41 => out.extend(match self.clock {
                    Some(r) => self.encode_clock(&r),
                    None => DgtMessage::NoClock.encode(),
                }),
                0x42 => out.extend(DgtMessage::BoardDump(Box::new(self.fields)).encode()),
                0x43 | 0x44 | 0x4B => {
                    self.mode = match b {
                        0x43 => Mode::Update,
                        0x44 => Mode::UpdateBoard,
                        _ => Mode::UpdateNice,
                    };
                    mode_set = true;
                }
                0x45 if self.cfg.old_serial => {
                    // 12 bytes: header, the digits, NUL padding to 9 payload bytes.
                    let mut payload: Vec<u8> = self.cfg.serial.bytes().take(9).collect();
                    payload.resize(9, 0);
                    out.extend([0x91, 0x00, 0x0C]);
                    out.extend(payload);
                }
                0x45 => out.extend(DgtMessage::SerialNumber(self.cfg.serial.clone()).encode()),
                0x4C => match self.cfg.battery {
                    Some(pct) => {
                        let raw = vec![pct.min(100), 0x7F, 0x7F, 1, 0, 0, 0, 0, 0x02];
                        out.extend(DgtMessage::Battery(BatteryStatus::from_raw(raw)).encode());
                    }
                    // A wired board has no battery command.
                    None => self.unknown.add(&[b]),
                },
                0x49 => {
                    out.extend(self.memory.dump_frame());
                    self.memory.downloaded();
                }
                0x46 => {
                    let n: u16 = self.cfg.serial.parse().unwrap_or(0);
                    out.extend(DgtMessage::BusAddress(n & 0x3FFF).encode());
                }
                0x47 => out.extend(
                    DgtMessage::Trademark(format!(
                        "Digital Game Technology (eboardd emulator) Serial nr. {}",
                        self.cfg.serial
                    ))
                    .encode(),
                ),
                0x4D => out.extend(
                    DgtMessage::Version {
                        major: self.cfg.version.0,
                        minor: self.cfg.version.1,
                    }
                    .encode(),
                ),
                0x55 => out.extend(
                    DgtMessage::LongSerialNumber(format!("{:0>10}", self.cfg.serial)).encode(),
                ),
                // Not a single-board command this board takes (see the module documentation).
                _ => self.unknown.add(&[b]),
            }
        }
        mode_set
    }

    /// A complete `0x2B` message: `msg` = `[n, 0x03, cmd, data…, 0x00]`. One that is not a
    /// clock command of the header (size, start and end bytes) is not taken, nor is text for
    /// a clock that cannot show it. The clock takes the rest unless it is still busy with the
    /// previous one (then it is lost); its ack goes out 1–2 s later ([`Emulator::link_time`]).
    fn clock_message(&mut self, msg: &[u8], _out: &mut Vec<u8>) {
        let well_formed = msg.len() >= 4
            && msg[1] == 0x03
            && msg.last() == Some(&0x00)
            && clock_command_size(msg[2]) == Some(msg[0]);
        let text_on_xl = msg.get(2) == Some(&0x0C) && self.cfg.clock == ClockModel::Xl;
        if !well_formed || text_on_xl {
            self.unknown.add(&[0x2B]);
            self.unknown.add(msg);
            return;
        }
        let cmd = msg[2];
        if self.clock.is_none() {
            // Passed on to the cable, where no clock listens.
            return;
        }
        if self.busy.is_some() {
            self.clock_commands.lost += 1;
            return;
        }
        self.clock_commands.accepted += 1;
        let data = &msg[3..msg.len().saturating_sub(1).max(3)];
        if cmd == 0x0C && self.cfg.clock == ClockModel::Dgt3000 {
            let text: String = data
                .iter()
                .take(8)
                .map(|&b| char::from(b))
                .collect::<String>()
                .trim_end()
                .to_string();
            self.texts.push(text);
        }
        let ack2 = match (cmd, self.cfg.clock) {
            (0x09, ClockModel::Dgt3000) => 0x21,
            (0x09, _) => 0x14,
            _ => 0,
        };
        let ack = ClockAck {
            ack0: 0x10,
            ack1: cmd,
            ack2,
            ack3: 0,
        };
        let (lo, hi) = self.cfg.ack_delay;
        let delay = if hi > lo { self.acks.range(lo, hi) } else { lo };
        self.busy = Some(Busy {
            until: self.link_now + delay.max(0),
            ack,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::pgn::parse_games;

    fn script() -> Script {
        let pgn = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 *\n\n1. d4 d5 2. c4 *\n";
        let games: Vec<ScriptGame> = parse_games(pgn).into_iter().map(|g| g.unwrap()).collect();
        Script::from_games(&games, &SimConfig::human(7), 5_000_000)
    }

    fn decode(bytes: &[u8]) -> Vec<DgtMessage> {
        let mut out = Vec::new();
        DgtDecoder::new().decode(bytes, &mut out);
        out
    }

    #[test]
    fn handshake_answers() {
        let mut em = Emulator::new(script(), EmulatorConfig::default());
        let mut out = Vec::new();
        assert!(!em.host_input(&[0x40, 0x4D, 0x45], &mut out));
        assert_eq!(
            decode(&out),
            [
                DgtMessage::Version { major: 3, minor: 1 },
                DgtMessage::SerialNumber("10001".into())
            ]
        );
        out.clear();
        assert!(em.host_input(&[0x4B, 0x42, 0x2B, 0x03, 0x03, 0x09, 0x00], &mut out));
        let msgs = decode(&out);
        assert_eq!(msgs.len(), 1, "the clock's ack is not there yet");
        assert!(matches!(msgs[0], DgtMessage::BoardDump(_)));
        out.clear();
        em.link_time(999_999, &mut out);
        assert!(out.is_empty(), "no ack within the first second");
        em.link_time(2_000_000, &mut out);
        assert_eq!(
            decode(&out),
            [DgtMessage::ClockAck(ClockAck {
                ack0: 0x10,
                ack1: 0x09,
                ack2: 0x21,
                ack3: 0
            })]
        );
        out.clear();
        em.host_input(b"\x2b\x0c\x03\x0cNf3     \x00\x00", &mut out);
        assert_eq!(em.texts, ["Nf3"]);
        em.link_time(4_000_000, &mut out);
        assert_eq!(decode(&out).len(), 1);
    }

    #[test]
    fn one_clock_command_at_a_time_the_next_before_the_ack_is_lost() {
        let mut em = Emulator::new(script(), EmulatorConfig::default());
        let mut out = Vec::new();
        em.host_input(&[0x4B], &mut out);
        em.link_time(10_000_000, &mut out);
        em.host_input(b"\x2b\x0c\x03\x0cNf3     \x00\x00", &mut out);
        em.link_time(10_500_000, &mut out);
        // Sent before the first one's ack: lost.
        em.host_input(b"\x2b\x0c\x03\x0cNc6     \x00\x00", &mut out);
        let due = em.next_link_due().unwrap();
        assert!((11_000_000..=12_000_000).contains(&due), "{due}");
        em.link_time(due, &mut out);
        assert_eq!(decode(&out).len(), 1);
        em.host_input(b"\x2b\x0c\x03\x0cBb5     \x00\x00", &mut out);
        em.link_time(due + 2_000_000, &mut out);
        assert_eq!(em.texts, ["Nf3", "Bb5"]);
        assert_eq!(
            em.clock_commands,
            ClockCommandStats {
                accepted: 2,
                lost: 1,
                acked: 2
            }
        );
    }

    #[test]
    fn clock_runs_down_once_a_second_with_the_real_status_bytes() {
        let s = script();
        let end = s.end();
        let mut em = Emulator::new(s, EmulatorConfig::default());
        let mut out = Vec::new();
        em.host_input(&[0x41], &mut out);
        // Not started yet: paused, White's (left or right) turn kept.
        assert!([0x08, 0x12].contains(&out[9]), "{:02x}", out[9]);
        assert_eq!(out[3] & 0x20, 0x20, "time per move (D5)");
        out.clear();
        em.host_input(&[0x4B], &mut out);
        em.advance(end, &mut out);
        let mut statuses = std::collections::BTreeSet::new();
        let mut prev: Option<(u8, u32)> = None;
        let mut one_second = 0;
        let mut i = 0;
        while i + 3 <= out.len() {
            let len = usize::from(out[i + 1]) << 7 | usize::from(out[i + 2]);
            let f = &out[i..i + len];
            if f[0] == 0x8D {
                statuses.insert(f[9]);
                let DgtMessage::ClockTimes(r) = &decode(f)[0] else {
                    panic!()
                };
                let face = if r.left_turn { r.left } else { r.right };
                if let Some((st, before)) = prev
                    && st == f[9]
                    && st & 1 == 1
                {
                    assert_eq!(before - face.millis, 1000);
                    one_second += 1;
                }
                prev = Some((f[9], face.millis));
            }
            i += len;
        }
        assert!(
            statuses.is_subset(&[0x08, 0x09, 0x12, 0x13].into()),
            "{statuses:x?}"
        );
        assert!(statuses.contains(&0x09) && statuses.contains(&0x13));
        assert!(one_second > 20, "{one_second}");
    }

    #[test]
    fn reset_board_answers_but_sends_nothing_and_lost_updates_are_lost() {
        let s = script();
        let end = s.end();
        let cfg = EmulatorConfig {
            lose_field_updates: vec![0],
            clock_ticks: false,
            ..Default::default()
        };
        let mut em = Emulator::new(s.clone(), cfg);
        let mut out = Vec::new();
        em.host_input(&[0x4B], &mut out);
        let first_move = s.plies[0].settled + 1;
        em.advance(first_move, &mut out);
        assert_eq!(em.field_updates_lost, 1);
        em.reset();
        out.clear();
        em.advance(end, &mut out);
        assert!(out.is_empty(), "IDLE after the reset");
        em.host_input(&[0x45], &mut out);
        assert_eq!(decode(&out), [DgtMessage::SerialNumber("10001".into())]);
    }

    #[test]
    fn idle_board_changes_silently_and_the_dump_shows_it() {
        let s = script();
        let end = s.end();
        let plies = s.plies.len();
        assert_eq!(plies, 9);
        assert_eq!(s.game_starts.len(), 2);
        let mut em = Emulator::new(s, EmulatorConfig::default());
        let mut out = Vec::new();
        em.advance(end, &mut out);
        assert!(out.is_empty(), "IDLE: nothing sent");
        assert!(em.finished());
        em.host_input(&[0x42], &mut out);
        let DgtMessage::BoardDump(f) = &decode(&out)[0] else {
            panic!()
        };
        // After 1. d4 d5 2. c4 of the second game.
        let pos = "1. d4 d5 2. c4";
        let g = parse_games(pos).remove(0).unwrap();
        let mut p = g.start.clone();
        for m in &g.moves {
            p.play_unchecked(*m);
        }
        let mut want = [SquareReading::Empty; 64];
        for (sq, piece) in p.board() {
            want[usize::from(crate::sim::field_index(sq, false))] = SquareReading::Piece(piece);
        }
        assert_eq!(**f, want);
    }

    #[test]
    fn update_mode_streams_the_script_with_noise_that_decodes_to_nothing_extra() {
        let s = script();
        let n_steps = s.steps.len();
        let end = s.end();
        let cfg = EmulatorConfig {
            noise_every: Some(1_000_000),
            clock_ticks: false,
            ..Default::default()
        };
        let mut em = Emulator::new(s, cfg);
        let mut out = Vec::new();
        em.host_input(&[0x43], &mut out);
        em.advance(end, &mut out);
        let msgs = decode(&out);
        assert_eq!(msgs.len(), n_steps);
        assert!(out.len() > n_steps * 5);
    }

    #[test]
    fn strict_every_byte_not_taken_is_counted() {
        use crate::driver::dgt::{ClockCommand, DgtCommand};
        let mut em = Emulator::new(script(), EmulatorConfig::default());
        let mut out = Vec::new();
        // What the daemon sends: all taken.
        let mut host = vec![0x40, 0x4D, 0x45, 0x4B, 0x42, 0x45];
        for c in [
            ClockCommand::Version,
            ClockCommand::Ascii {
                text: "Nf3".into(),
                beep: 0,
            },
            ClockCommand::EndText,
        ] {
            host.extend(DgtCommand::Clock(c).encode());
        }
        em.host_input(&host, &mut out);
        assert_eq!(em.unknown_bytes(), 0, "{:02x?}", em.unknown_sample());
        // Bus mode, LEDs, a bus PING frame, battery on a wired board: 1 + 1 + 4 + 1.
        em.host_input(&[0x4A, 0x60, 0x87, 0x00, 0x00, 0x07, 0x4C], &mut out);
        assert_eq!(em.unknown_bytes(), 7);
        // Clock messages that are not the header's: a wrong size, no end byte, an unknown
        // command; all their bytes.
        em.host_input(&[0x2B, 0x04, 0x03, 0x09, 0x00, 0x00], &mut out);
        em.host_input(&[0x2B, 0x03, 0x03, 0x03, 0x01], &mut out);
        em.host_input(&[0x2B, 0x03, 0x03, 0x77, 0x00], &mut out);
        assert_eq!(em.unknown_bytes(), 7 + 6 + 5 + 5);
        assert_eq!(
            &em.unknown_sample()[..7],
            &[0x4A, 0x60, 0x87, 0x00, 0x00, 0x07, 0x4C]
        );
        // Still in step: the next command is answered.
        out.clear();
        em.host_input(&[0x45], &mut out);
        assert_eq!(decode(&out), [DgtMessage::SerialNumber("10001".into())]);
        // Text for a DGT XL, which cannot show it.
        let mut xl = Emulator::new(
            script(),
            EmulatorConfig {
                clock: ClockModel::Xl,
                ..Default::default()
            },
        );
        xl.host_input(&[0x2B, 0x03, 0x03, 0x09, 0x00], &mut out);
        assert_eq!(xl.unknown_bytes(), 0);
        xl.host_input(b"\x2b\x0c\x03\x0cNf3     \x00\x00", &mut out);
        assert_eq!(xl.unknown_bytes(), 14);
    }

    #[test]
    fn the_memory_records_in_idle_and_0x49_sends_it() {
        let s = script();
        let first = s.plies[0].settled + 1;
        let mut em = Emulator::new(s, EmulatorConfig::default());
        let mut out = Vec::new();
        em.advance(first, &mut out);
        assert!(out.is_empty(), "IDLE");
        em.host_input(&[0x49], &mut out);
        assert_eq!(em.unknown_bytes(), 0);
        assert_eq!(out.len(), 0x1F03);
        assert_eq!(&out[..3], &[0x8F, 0x3E, 0x03]);
        assert_eq!(*out.last().unwrap(), dgt_memory::tag::EOF);
        // The decoder takes it as the EE_MOVES frame it is.
        let msgs = decode(&out);
        let [DgtMessage::EeMoves { entries }] = &msgs[..] else {
            panic!("{msgs:?}")
        };
        assert!(
            entries.contains(&crate::driver::dgt::EeEntry::Tag(
                crate::driver::dgt::EeTag::BeginPos
            )),
            "{entries:?}"
        );
        let data = &out[3..out.len() - 1];
        let begin = data
            .iter()
            .position(|&b| b == dgt_memory::tag::BEGINPOS)
            .expect("the start position tagged at power-up");
        // Entries by their first byte (`dgtbrd.h`): field 40–5F (2 bytes), time 60–69 and
        // 70–79 (3 bytes), the rest one byte.
        let mut entries = Vec::new();
        let mut i = begin + 1;
        while i < data.len() {
            let n = match data[i] {
                0x40..=0x5F => 2,
                0x60..=0x69 | 0x70..=0x79 => 3,
                _ => 1,
            };
            entries.push(&data[i..(i + n).min(data.len())]);
            i += n;
        }
        // 1. e4 moved the pawn: e2 (field 52) emptied, a white pawn on e4 (36), then White's
        // press: a time entry of the face that stopped.
        let fields: Vec<(u8, u8)> = entries
            .iter()
            .filter(|e| e.len() == 2)
            .map(|e| (e[0] & 0x4F, e[1]))
            .collect();
        assert!(fields.contains(&(0x40, 52)), "{entries:02x?}");
        assert_eq!(fields.last(), Some(&(0x41, 36)), "{entries:02x?}");
        assert_eq!(entries.iter().filter(|e| e.len() == 3).count(), 1);
        assert_eq!(entries.last().map(|e| e.len()), Some(3), "{entries:02x?}");
        out.clear();
        em.host_input(&[0x49], &mut out);
        assert_eq!(out[out.len() - 2], dgt_memory::tag::DOWNLOADED);
    }

    #[test]
    fn after_plies_stops_between_moves() {
        let s = script();
        let em = Emulator::new(s.clone(), EmulatorConfig::default());
        let t = em.after_plies(0, 2);
        assert_eq!(em.plies_started(t), 2);
        assert_eq!(em.plies_settled(t), 2);
        assert!(t >= s.plies[1].settled);
        assert!(t < s.plies[2].first_action);
        // From the middle of ply 3: ply 3 is finished, and that is the one more ply.
        let mid = s.plies[2].first_action + 1;
        let t = em.after_plies(mid, 1);
        assert_eq!(em.plies_settled(t), 3);
        assert_eq!(em.plies_started(t), 3);
    }
}
