//! The board-and-clock rig shared by the core's scenario tests (`use support::rig::*;`): timed
//! observations fed straight into a [`BoardEngine`], with a DGT 3000 (White on the left, times
//! frozen) that can be pressed, paused, set and flagged. How far apart observations come and
//! which way round the board lies are options ([`Rig::every`], [`Rig::turned`]); a test file
//! adds its own queries in an `impl Rig` block of its own. Each test file uses part of it.

use eboardd::core::engine::{BoardEngine, EngineConfig};
use eboardd::core::event::{CoreEvent, EndReason, EventKind};
use eboardd::core::observation::{
    ClockFace, ClockReading, Micros, Observation, OperatorAction, SquareReading,
};
use eboardd::core::sensed::Orientation;
use shakmaty::fen::Fen;
use shakmaty::san::San;
use shakmaty::{Board, CastlingMode, Chess, Color, Piece, Position, Role, Square};

/// A millisecond in the core's microseconds.
pub const MS: Micros = 1000;

/// A DGT 3000 as the rig drives it: White on the left, times frozen (they do not matter here).
#[derive(Clone, Copy)]
pub struct Clock {
    pub left_turn: bool,
    pub running: bool,
    pub left_flag: bool,
    pub right_flag: bool,
}

impl Clock {
    /// Started for the left (White's) side.
    pub fn started() -> Clock {
        Clock {
            left_turn: true,
            running: true,
            left_flag: false,
            right_flag: false,
        }
    }

    /// The reading a real DGT 3000 would send (lever and turn bits agree).
    pub fn reading(self) -> ClockReading {
        let face = |flag: bool| ClockFace {
            millis: if flag { 0 } else { 300_000 },
            flag,
            flag_shown: false,
        };
        ClockReading {
            left: face(self.left_flag),
            right: face(self.right_flag),
            running: self.running,
            right_side_up: !self.left_turn,
            left_turn: self.left_turn,
            right_turn: !self.left_turn,
            battery_low: false,
        }
    }
}

pub use super::fields_of;

/// The engine, its time, the events so far and the clock.
pub struct Rig {
    pub engine: BoardEngine,
    pub t: Micros,
    pub events: Vec<CoreEvent>,
    pub clock: Clock,
    /// Which way round the board lies: how squares become field indices in dumps and reports.
    pub orientation: Orientation,
    /// The time [`Rig::feed`] lets pass before each observation.
    pub step: Micros,
    /// The position a test that plays moves by SAN has on the board (the standard start unless
    /// the test sets it).
    pub pos: Chess,
}

/// A legal position from a FEN (Chess960 castling notation accepted).
pub fn position(fen: &str) -> Chess {
    fen.parse::<Fen>()
        .expect("FEN")
        .into_position(CastlingMode::Chess960)
        .expect("legal position")
}

/// The position after `sans` from `pos`.
pub fn after(pos: &Chess, sans: &[&str]) -> Chess {
    let mut pos = pos.clone();
    for s in sans {
        let m = s.parse::<San>().expect("SAN").to_move(&pos).expect("legal");
        pos.play_unchecked(m);
    }
    pos
}

/// A white piece.
pub fn white(role: Role) -> Piece {
    Piece {
        color: Color::White,
        role,
    }
}

/// A black piece.
pub fn black(role: Role) -> Piece {
    Piece {
        color: Color::Black,
        role,
    }
}

impl Rig {
    /// An engine with `cfg` that has observed nothing yet: observations 60 ms apart, the board
    /// the right way round.
    pub fn configured(cfg: EngineConfig) -> Rig {
        Rig {
            engine: BoardEngine::new(cfg),
            t: 0,
            events: Vec::new(),
            clock: Clock::started(),
            orientation: Orientation::Normal,
            step: 60 * MS,
            pos: Chess::default(),
        }
    }

    /// Observations fed `step` apart from now on.
    pub fn every(mut self, step: Micros) -> Rig {
        self.step = step;
        self
    }

    /// The board lying `orientation` from now on.
    pub fn turned(mut self, orientation: Orientation) -> Rig {
        self.orientation = orientation;
        self
    }

    /// The board dumps `board`; returns the rig.
    pub fn showing(mut self, board: &Board) -> Rig {
        self.dump(board);
        self
    }

    /// A board showing `board` first (no clock yet).
    pub fn bare(board: &Board) -> Rig {
        Rig::configured(EngineConfig::default()).showing(board)
    }

    /// The standard start position on the board, the clock started for White.
    pub fn standard() -> Rig {
        let mut rig = Rig::bare(&Board::default());
        rig.clock();
        rig
    }

    /// A game from `fen` given by an operator, the clock started for the side to move; the
    /// events of setting it up are cleared.
    pub fn from_fen(fen: &str) -> Rig {
        let mut rig = Rig::standard();
        rig.feed(Observation::Operator(OperatorAction::NewGame {
            fen: Some(fen.into()),
        }));
        rig.dump(position(fen).board());
        rig.events.clear();
        rig
    }

    /// The clock sends its reading.
    pub fn clock(&mut self) {
        self.feed(Observation::Clock(self.clock.reading()));
    }

    /// An observation [`Rig::step`] (60 ms unless set) after the previous one.
    pub fn feed(&mut self, obs: Observation) {
        self.t += self.step;
        self.observe(&obs);
    }

    /// An observation now, no time passing.
    pub fn observe(&mut self, obs: &Observation) {
        self.engine.handle(self.t, obs, &mut self.events);
    }

    /// A board dump.
    pub fn dump(&mut self, board: &Board) {
        self.feed(Observation::BoardDump(Box::new(fields_of(
            board,
            self.orientation,
        ))));
    }

    /// Time passes; decisions due are taken.
    pub fn wait(&mut self, ms: Micros) {
        self.t += ms * MS;
        self.tick();
    }

    /// The decisions due now are taken.
    pub fn tick(&mut self) {
        self.engine.tick(self.t, &mut self.events);
    }

    /// The board goes away: every pending decision is taken.
    pub fn finish(&mut self) {
        self.engine.finish(self.t, &mut self.events);
    }

    /// The report that field `sq` reads `reading`.
    pub fn report(&self, sq: Square, reading: SquareReading) -> Observation {
        Observation::Field {
            index: self.orientation.index_of(sq),
            reading,
        }
    }

    /// A field report `ms` after the previous one (reports of one scan come a few ms apart).
    pub fn field_after(&mut self, ms: Micros, sq: Square, reading: SquareReading) {
        self.t += ms * MS;
        let obs = self.report(sq, reading);
        self.observe(&obs);
    }

    /// The field `sq` reads `reading`, [`Rig::step`] after the previous report.
    pub fn put(&mut self, sq: Square, reading: SquareReading) {
        let obs = self.report(sq, reading);
        self.feed(obs);
    }

    /// A piece lifted from `sq`.
    pub fn lift(&mut self, sq: Square) {
        self.put(sq, SquareReading::Empty);
    }

    /// `piece` placed on `sq`.
    pub fn place(&mut self, sq: Square, piece: Piece) {
        self.put(sq, SquareReading::Piece(piece));
    }

    /// The piece on `sq` in the game position.
    pub fn piece(&self, sq: Square) -> Piece {
        let game = self.engine.games().last().expect("a game");
        game.position().board().piece_at(sq).expect("a piece there")
    }

    /// Lift and place, 0.4 s apart.
    pub fn mv(&mut self, from: Square, to: Square) {
        let piece = self.piece(from);
        self.lift(from);
        self.wait(400);
        self.place(to, piece);
    }

    /// The running side presses its lever; the press is judged after the board settled.
    pub fn press(&mut self) {
        self.wait(500);
        self.clock.left_turn = !self.clock.left_turn;
        self.clock();
        self.wait(600);
    }

    /// The arbiter pauses the clock.
    pub fn pause(&mut self) {
        self.clock.running = false;
        self.clock();
        self.wait(1000);
    }

    /// The arbiter sets the lever to the other side while the clock is paused.
    pub fn set_lever(&mut self) {
        self.clock.left_turn = !self.clock.left_turn;
        self.clock();
        self.wait(1000);
    }

    /// The arbiter restarts the clock.
    pub fn resume(&mut self) {
        self.clock.running = true;
        self.clock();
        self.wait(1000);
    }

    /// The arbiter stops the clock, sets the lever back and restarts it (0.8 s apart).
    pub fn arbiter_sets_clock_back(&mut self) {
        self.clock.running = false;
        self.clock();
        self.wait(800);
        self.clock.left_turn = !self.clock.left_turn;
        self.clock();
        self.wait(800);
        self.clock.running = true;
        self.clock();
        self.wait(800);
    }

    /// Moves with a press after each, 2 s apart.
    pub fn play(&mut self, moves: &[(Square, Square)]) {
        for &(from, to) in moves {
            self.wait(2000);
            self.mv(from, to);
            self.press();
        }
    }

    /// Lifted and put back after `hold_ms`.
    pub fn touch(&mut self, sq: Square, hold_ms: Micros) {
        let piece = self.piece(sq);
        self.lift(sq);
        self.wait(hold_ms);
        self.place(sq, piece);
        self.wait(700);
    }

    /// `(code, ply)` of every irregularity raised.
    pub fn irregularities(&self) -> Vec<(&'static str, u32)> {
        self.events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Irregularity { code, ply, .. } => Some((code.as_str(), ply)),
                _ => None,
            })
            .collect()
    }

    /// The details of the irregularities with code `wanted`.
    pub fn detail(&self, wanted: &str) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::Irregularity { code, detail, .. } if code.as_str() == wanted => {
                    Some(detail.clone())
                }
                _ => None,
            })
            .collect()
    }

    /// The codes of the irregularities resolved.
    pub fn resolved(&self) -> Vec<&'static str> {
        self.events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::IrregularityResolved { code, .. } => Some(code.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The moves of the last game, in SAN.
    pub fn sans(&self) -> Vec<String> {
        let game = self.engine.games().last().expect("a game");
        game.moves.iter().map(|m| m.san.clone()).collect()
    }

    /// The first game end, if any.
    pub fn ended(&self) -> Option<(&'static str, EndReason)> {
        self.events.iter().find_map(|e| match e.kind {
            EventKind::GameEnded { result, reason } => Some((result.as_str(), reason)),
            _ => None,
        })
    }

    /// Every event but clock times, for messages.
    pub fn log(&self) -> String {
        let lines: Vec<String> = self
            .events
            .iter()
            .filter(|e| !matches!(e.kind, EventKind::Clock { .. }))
            .map(|e| format!("{:>9} g{} {:?}", e.t / 1000, e.game, e.kind))
            .collect();
        lines.join("\n")
    }
}

/// 1. e4 e5 2. Nf3 Nc6, each move pressed.
pub fn open_game() -> Rig {
    use Square::*;
    let mut rig = Rig::standard();
    rig.play(&[(E2, E4), (E7, E5), (G1, F3), (B8, C6)]);
    rig
}
