//! Emulated boards, as a daemon sees them on a serial port or over Bluetooth LE: one module per
//! board family (the DGT board with its clock: [`dgt`]; a DGT chain in bus mode: [`dgt_bus`];
//! Millennium, Certabo, Chessnut), sans-IO, paced on a pseudo-terminal by [`runner`] (or behind
//! the stand-in BlueZ, [`crate::sim::bluez`]). What every family shares lives here: the players'
//! [`Script`] of games made by the [simulator](super), the clock model on a board's cable
//! ([`ClockModel`]) and a board's settings ([`EmulatorConfig`]).

pub mod certabo;
pub mod chessnut;
pub mod dgt;
pub mod dgt_bus;
pub mod dgt_memory;
pub mod gatt;
pub mod millennium;
pub mod runner;

pub use dgt::{ClockCommandStats, Emulator, Mode, UNKNOWN_SAMPLE, Unknown};

use shakmaty::Position;

use super::SimConfig;
use super::pgn::ScriptGame;
use super::rng::Rng;
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
        for (i, game) in games.iter().enumerate() {
            let mut c = cfg.clone();
            c.seed = cfg.seed.wrapping_add(i as u64 * 0x9E37_79B9);
            // The emulated clock sends its own once-a-second messages.
            c.clock_ticks = Some(false);
            let (syn, start_fields, game_steps) = game_messages(game, &mut c, &mut decoder);
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
                last = signal_result(game, &c, &mut board, last, &mut steps);
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

/// One game simulated with `cfg` and decoded as the board sends it: the simulation, its first
/// board dump (the start position) and the messages after it.
fn game_messages(
    game: &ScriptGame,
    cfg: &mut SimConfig,
    decoder: &mut DgtDecoder,
) -> (
    super::Synthesis,
    Option<FieldArray>,
    Vec<(Micros, DgtMessage)>,
) {
    let syn = if cfg.signal_result {
        simulate_on_time(game, cfg)
    } else {
        super::synthesize_game(game, cfg)
    };
    let mut start_fields = None;
    let mut game_steps = Vec::new();
    let mut msgs = Vec::new();
    for r in &syn.records {
        let RecordKind::Rx(bytes) = &r.kind else {
            continue;
        };
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
    (syn, start_fields, game_steps)
}

/// The result of `game` told on the board from two seconds after `last` (its kings put on the
/// centre as [`result_signal`] gives them), on `board` and in `steps`: the time of the last.
fn signal_result(
    game: &ScriptGame,
    cfg: &SimConfig,
    board: &mut FieldArray,
    last: Micros,
    steps: &mut Vec<(Micros, DgtMessage)>,
) -> Micros {
    let mut last = last;
    let mut t = last + 2_000_000;
    for (index, reading) in result_signal(game, cfg.reversed_board) {
        t += 150_000;
        board[usize::from(index)] = reading;
        steps.push((t, DgtMessage::FieldUpdate { index, reading }));
        last = t;
    }
    last
}

/// `game` simulated with `cfg`, the clock's base time raised (in whole seconds) by the most
/// the hands took from a side beyond its `[%clk]` (a move the source game made in no time
/// still takes a hand a second or two): the clock then never shows less than the source's
/// after a move, and no flag falls where the source's did not.
fn simulate_on_time(game: &ScriptGame, cfg: &mut SimConfig) -> super::Synthesis {
    let run = |cfg: &SimConfig| super::synthesize_game(game, cfg);
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
