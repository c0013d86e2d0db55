//! The per-board state machine: observations with timestamps in, events out.
//!
//! Moves are inferred by comparing the sensed board with the board after every legal move of
//! the current position (design rule 2). A made move stays revisable until it is completed (by a
//! clock press, the opponent's next move, or the end of the game): a rook placed before the king
//! is first a rook move and then castling; a sliding piece is first a move to a square it passed.
//! Time is an input; decisions that wait for the board to settle (a press reported before the
//! move's last field update) are taken at the first observation past their deadline, or at
//! [`BoardEngine::tick`] / [`BoardEngine::finish`].

use shakmaty::{Board, CastlingMode, Chess, Color, Move, Piece, Position, Square};

use super::clock::{ClockChange, ClockTracker};
use super::event::{ClockTimes, CompletedBy, CoreEvent, EndReason, EventKind};
use super::game::{GameRecord, mover_of_ply};
use super::observation::{
    ClockReading, ClockSide, Micros, Observation, OperatorAction, SpecialPiece, SquareReading,
};
use super::sensed::{Orientation, SensedBoard};
use super::start;

/// Tunables of the state machine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// How long after a clock press the board may still report the move's last field update.
    pub settle: Micros,
    /// White's physical clock side when fixed by configuration (else learned).
    pub white_clock_side: Option<ClockSide>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            settle: 400_000,
            white_clock_side: None,
        }
    }
}

/// How long a board must stand still before it counts as a set-up position.
const SETUP_STILL: Micros = 2_000_000;

/// A lift seen on the board: the touch evidence of a turn.
#[derive(Debug, Clone, Copy)]
struct Lift {
    square: Square,
    piece: Piece,
    /// Number of moves made when the lift was seen.
    ply: u32,
}

/// A press waiting for the board to settle.
#[derive(Debug, Clone, Copy)]
struct PendingPress {
    side: ClockSide,
    deadline: Micros,
    reading: ClockReading,
}

/// Boards after each legal move of one position.
#[derive(Debug, Default)]
struct Candidates {
    key: Option<(u32, u64)>,
    moves: Vec<(Move, Board)>,
}

impl Candidates {
    fn for_position(&mut self, key: (u32, u64), pos: &Chess) -> &[(Move, Board)] {
        if self.key != Some(key) {
            self.moves.clear();
            for m in pos.legal_moves() {
                let mut after = pos.clone();
                after.play_unchecked(m);
                self.moves.push((m, after.board().clone()));
            }
            self.key = Some(key);
        }
        &self.moves
    }
}

/// The state machine of one board.
#[derive(Debug, Default)]
pub struct BoardEngine {
    cfg: EngineConfig,
    sensed: SensedBoard,
    orientation: Orientation,
    clock: ClockTracker,
    games: Vec<GameRecord>,
    lifts: Vec<Lift>,
    pending_press: Option<PendingPress>,
    pending_end: Option<Micros>,
    last_clock_event: Option<(ClockTimes, Option<Color>)>,
    fifty_claimed: bool,
    /// Before any game: the last board that stood still, a candidate set-up position (I.5).
    setup_ref: Option<Board>,
    last_change: Micros,
    /// Bumped whenever the move list changes, to key the candidate caches.
    version: u64,
    current: Candidates,
    before: Candidates,
}

impl BoardEngine {
    /// A new engine.
    pub fn new(cfg: EngineConfig) -> Self {
        let clock = ClockTracker::new(cfg.white_clock_side);
        BoardEngine {
            cfg,
            clock,
            ..Default::default()
        }
    }

    /// Every game seen so far, in the order they started.
    pub fn games(&self) -> &[GameRecord] {
        &self.games
    }

    /// The board's orientation (of the current game).
    pub fn orientation(&self) -> Orientation {
        self.orientation
    }

    /// Feed one observation.
    pub fn handle(&mut self, t: Micros, obs: &Observation, out: &mut Vec<CoreEvent>) {
        self.tick(t, out);
        match obs {
            Observation::BoardDump(fields) => {
                self.sensed.set_all(fields);
                if self.games.is_empty() {
                    self.setup_ref = Some(self.sensed.board(Orientation::Normal));
                }
                self.last_change = t;
                self.evaluate(t, out);
            }
            Observation::Field { index, reading } => {
                if self.sensed.get(*index) == *reading {
                    return;
                }
                if self.games.is_empty() && t - self.last_change >= SETUP_STILL {
                    self.setup_ref = Some(self.sensed.board(Orientation::Normal));
                }
                self.last_change = t;
                let before = self.sensed.set(*index, *reading);
                if let (SquareReading::Empty, SquareReading::Piece(piece)) = (reading, before) {
                    let ply = self.game().map_or(0, |g| g.ply());
                    let square = self.orientation.square_of(*index);
                    self.lifts.push(Lift { square, piece, ply });
                    self.lifts.retain(|l| l.ply + 3 >= ply);
                }
                self.evaluate(t, out);
            }
            Observation::Clock(reading) => self.on_clock(t, *reading, out),
            Observation::ClockAbsent => {}
            Observation::Connected { driver, serial } => self.emit(
                t,
                out,
                EventKind::BoardConnected {
                    driver: driver.clone(),
                    serial: serial.clone(),
                },
            ),
            Observation::Disconnected => self.emit(
                t,
                out,
                EventKind::BoardDisconnected {
                    driver: "dgt".into(),
                    serial: None,
                },
            ),
            Observation::Operator(action) => self.on_operator(t, action, out),
        }
    }

    /// Take every decision whose settle deadline has passed at time `t`.
    pub fn tick(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        loop {
            let press = self.pending_press.map(|p| p.deadline).filter(|&d| d <= t);
            let end = self.pending_end.filter(|&d| d <= t);
            match (press, end) {
                (Some(p), Some(e)) if e < p => self.resolve_end(t, out),
                (Some(_), _) => self.resolve_press(t, out),
                (None, Some(_)) => self.resolve_end(t, out),
                (None, None) => break,
            }
        }
    }

    /// End of input: take every pending decision now.
    pub fn finish(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        self.tick(Micros::MAX, out);
        let _ = t;
    }

    fn game(&self) -> Option<&GameRecord> {
        self.games.last()
    }

    fn active_game(&self) -> Option<&GameRecord> {
        self.games.last().filter(|g| !g.ended())
    }

    fn game_number(&self) -> u32 {
        self.game().map_or(0, |g| g.number)
    }

    fn emit(&self, t: Micros, out: &mut Vec<CoreEvent>, kind: EventKind) {
        out.push(CoreEvent {
            t,
            game: self.game_number(),
            kind,
        });
    }

    fn evaluate(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some(game) = self.active_game() else {
            self.try_start(t, out);
            return;
        };
        let board = self.sensed.board(self.orientation);
        let specials = self.sensed.specials(self.orientation);
        if let Some((_, special)) = specials.first() {
            let result = match special {
                SpecialPiece::Draw => "1/2-1/2",
                SpecialPiece::WhiteWins => "1-0",
                SpecialPiece::BlackWins => "0-1",
            };
            self.end_game(t, result, EndReason::KingsSignal, out);
            return;
        }
        let ply = game.ply();
        if board == *game.position().board() {
            self.check_preference(t, &board, out);
            return;
        }
        if let Some(m) = self.choose_current(&board) {
            self.make(t, m, out);
            return;
        }
        let game = self.active_game().expect("active");
        if game.uncompleted_last().is_some() {
            if let Some(m) = self.choose_before(&board) {
                self.retract(t, out);
                self.make(t, m, out);
                return;
            }
            let game = self.active_game().expect("active");
            if board == *game.position_before_last().board() {
                self.retract(t, out);
                return;
            }
        }
        if ply > 0 {
            self.try_start(t, out);
        }
    }

    /// Among the legal moves whose board equals `board`, the one the lifts point to.
    fn pick(
        moves: &[(Move, Board)],
        board: &Board,
        lifts: &[Lift],
        since_ply: u32,
        mover: Color,
    ) -> Option<Move> {
        let mut found = moves.iter().filter(|(_, b)| b == board).map(|(m, _)| *m);
        let first = found.next()?;
        let Some(second) = found.next() else {
            return Some(first);
        };
        // Identical boards: a Chess960 castling that looks like a plain king or rook move.
        // It is castling when both king and rook were lifted during the turn.
        let lifted = |sq: Square| {
            lifts
                .iter()
                .any(|l| l.square == sq && l.ply >= since_ply && l.piece.color == mover)
        };
        let (castle, plain) = if first.is_castle() {
            (first, second)
        } else {
            (second, first)
        };
        match castle {
            Move::Castle { king, rook } if lifted(king) && lifted(rook) => Some(castle),
            _ => Some(plain),
        }
    }

    fn choose_current(&mut self, board: &Board) -> Option<Move> {
        let game = self.games.last()?;
        let pos = game.position();
        let key = (game.number, self.version);
        let since = game.ply();
        let moves = self.current.for_position(key, pos);
        Self::pick(moves, board, &self.lifts, since, pos.turn())
    }

    fn choose_before(&mut self, board: &Board) -> Option<Move> {
        let game = self.games.last()?;
        let pos = game.position_before_last();
        let key = (game.number, self.version);
        let since = game.ply().saturating_sub(1);
        let moves = self.before.for_position(key, pos);
        Self::pick(moves, board, &self.lifts, since, pos.turn())
    }

    /// The board equals the position: a made move may still be re-read as another move with
    /// the same board (Chess960 rook-only castling: the king lifted and put back afterwards).
    fn check_preference(&mut self, t: Micros, board: &Board, out: &mut Vec<CoreEvent>) {
        let Some(last) = self.active_game().and_then(|g| g.uncompleted_last()) else {
            return;
        };
        let made = last.mv;
        if let Some(m) = self.choose_before(board).filter(|&m| m != made) {
            self.retract(t, out);
            self.make(t, m, out);
        }
    }

    fn make(&mut self, t: Micros, m: Move, out: &mut Vec<CoreEvent>) {
        if self
            .active_game()
            .and_then(|g| g.uncompleted_last())
            .is_some()
        {
            if self.pending_press.is_some() {
                self.resolve_press(t, out);
            }
            if self
                .active_game()
                .and_then(|g| g.uncompleted_last())
                .is_some()
            {
                let clock = self.clock.times();
                self.complete(t, CompletedBy::NextMove, clock, out);
            }
        }
        let Some(game) = self.games.last_mut() else {
            return;
        };
        let record = game.push(m, t).clone();
        let kind = EventKind::MoveMade {
            ply: game.ply(),
            san: record.san,
            uci: record.uci,
            fen: record.fen,
        };
        let ends = game.ending().is_some();
        self.version += 1;
        self.emit(t, out, kind);
        self.pending_end = ends.then_some(t + self.cfg.settle);
    }

    fn retract(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some(game) = self.games.last_mut() else {
            return;
        };
        let ply = game.ply();
        if game.pop().is_some() {
            self.version += 1;
            self.pending_end = None;
            self.emit(t, out, EventKind::MoveRetracted { ply });
        }
    }

    fn complete(
        &mut self,
        t: Micros,
        by: CompletedBy,
        clock: Option<ClockTimes>,
        out: &mut Vec<CoreEvent>,
    ) {
        let Some(game) = self.games.last_mut() else {
            return;
        };
        let ply = game.ply();
        let Some(record) = game.moves.last_mut().filter(|m| m.completed.is_none()) else {
            return;
        };
        record.completed = Some(by);
        record.clock = clock;
        let kind = EventKind::MoveCompleted {
            ply,
            san: record.san.clone(),
            by,
            clock,
        };
        let threefold = game.repetitions() >= 3;
        let fifty = game.position().halfmoves() >= 100;
        self.emit(t, out, kind);
        if threefold {
            self.emit(t, out, EventKind::ClaimAvailable { claim: "threefold" });
        }
        if fifty && !self.fifty_claimed {
            self.fifty_claimed = true;
            self.emit(
                t,
                out,
                EventKind::ClaimAvailable {
                    claim: "fifty_moves",
                },
            );
        }
    }

    fn resolve_press(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some(press) = self.pending_press.take() else {
            return;
        };
        let Some(game) = self.active_game() else {
            return;
        };
        if game.uncompleted_last().is_none() {
            return;
        }
        let mover = mover_of_ply(game.start(), game.ply());
        // The first press of the game tells which side White is on (6.5), unless fixed.
        if game.ply() == 1 || self.clock.white_side.is_none() {
            self.clock.learn_press(press.side, mover);
        }
        if self.clock.color_of(press.side) != Some(mover) {
            return;
        }
        let mut tracker = self.clock.clone();
        tracker.update(press.reading);
        let clock = tracker.times();
        self.complete(t, CompletedBy::Clock, clock, out);
    }

    fn resolve_end(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        self.pending_end = None;
        let Some((result, reason)) = self.active_game().and_then(|g| g.ending()) else {
            return;
        };
        self.end_game(t, result, reason, out);
    }

    fn end_game(
        &mut self,
        t: Micros,
        result: &'static str,
        reason: EndReason,
        out: &mut Vec<CoreEvent>,
    ) {
        if self.active_game().is_none() {
            return;
        }
        let clock = self.clock.times();
        self.complete(t, CompletedBy::GameEnd, clock, out);
        if let Some(game) = self.games.last_mut() {
            game.result = Some((result, reason));
        }
        self.pending_press = None;
        self.pending_end = None;
        self.emit(t, out, EventKind::GameEnded { result, reason });
    }

    fn on_clock(&mut self, t: Micros, reading: ClockReading, out: &mut Vec<CoreEvent>) {
        let change = self.clock.update(reading);
        if self.active_game().is_none() {
            return;
        }
        if let ClockChange::Press { side } = change {
            if self.pending_press.is_some() {
                self.resolve_press(t, out);
            }
            self.pending_press = Some(PendingPress {
                side,
                deadline: t + self.cfg.settle,
                reading,
            });
        }
        if let Some(times) = self.clock.times() {
            let running = self.clock.running();
            if self.last_clock_event != Some((times, running)) {
                self.last_clock_event = Some((times, running));
                self.emit(
                    t,
                    out,
                    EventKind::Clock {
                        white: times.white,
                        black: times.black,
                        running: running.map(|c| c.fold_wb("white", "black")),
                    },
                );
            }
        }
        if let (Some(loser), Some(game)) = (self.clock.flagged(), self.active_game()) {
            let result = game.flag_result(loser);
            self.end_game(t, result, EndReason::Flag, out);
        }
    }

    fn on_operator(&mut self, t: Micros, action: &OperatorAction, out: &mut Vec<CoreEvent>) {
        match action {
            OperatorAction::NewGame { fen } => {
                let start = fen.as_deref().and_then(|f| {
                    let fen: shakmaty::fen::Fen = f.parse().ok()?;
                    let mode = CastlingMode::Chess960;
                    let pos: Chess = fen.into_position(mode).ok()?;
                    Some(start::StartPosition {
                        position: pos,
                        mode,
                        chess960: None,
                    })
                });
                match start {
                    Some(s) => self.start_game(t, s, self.orientation, out),
                    None => {
                        if let Some(g) = self
                            .games
                            .last_mut()
                            .filter(|g| g.result.is_none() && g.ply() > 0)
                        {
                            g.result = Some(("*", EndReason::Arbiter));
                        }
                        self.try_start(t, out);
                    }
                }
            }
            OperatorAction::SetResult { result } => {
                let result = match result.as_str() {
                    "1-0" => "1-0",
                    "0-1" => "0-1",
                    "1/2-1/2" => "1/2-1/2",
                    _ => return,
                };
                self.end_game(t, result, EndReason::Arbiter, out);
            }
            OperatorAction::SetClockSide { white } => self.clock.fix_white_side(*white),
        }
    }

    fn try_start(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        if self.sensed.occupied() != 32 {
            if self.games.is_empty() {
                self.try_setup(t, out);
            }
            return;
        }
        if self.games.is_empty()
            && start::recognise(&self.sensed.board(Orientation::Normal)).is_none()
            && start::recognise(&self.sensed.board(Orientation::Reversed)).is_none()
        {
            self.try_setup(t, out);
            return;
        }
        for orientation in [Orientation::Normal, Orientation::Reversed] {
            let board = self.sensed.board(orientation);
            if let Some(s) = start::recognise(&board) {
                if let Some(g) = self.games.last() {
                    let same = g.ply() == 0
                        && !g.ended()
                        && g.start().board() == s.position.board()
                        && self.orientation == orientation;
                    if same {
                        return;
                    }
                }
                self.start_game(t, s, orientation, out);
                return;
            }
        }
    }

    /// Guidelines I.5: a board first seen in another position is a set-up position; the side
    /// to move is the side whose legal move the board shows first.
    fn try_setup(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some(reference) = self.setup_ref.clone() else {
            return;
        };
        let board = self.sensed.board(Orientation::Normal);
        for turn in [Color::White, Color::Black] {
            let Some(pos) = setup_position(&reference, turn) else {
                continue;
            };
            let found = pos.legal_moves().into_iter().find(|&m| {
                let mut after = pos.clone();
                after.play_unchecked(m);
                *after.board() == board
            });
            if let Some(m) = found {
                let s = start::StartPosition {
                    position: pos,
                    mode: CastlingMode::Standard,
                    chess960: None,
                };
                self.start_game(t, s, Orientation::Normal, out);
                self.make(t, m, out);
                return;
            }
        }
    }

    fn start_game(
        &mut self,
        t: Micros,
        s: start::StartPosition,
        orientation: Orientation,
        out: &mut Vec<CoreEvent>,
    ) {
        // A game with no move at all is replaced, keeping its number.
        let number = match self.games.last() {
            Some(g) if g.ply() == 0 && !g.ended() => {
                self.games.pop();
                self.game_number() + 1
            }
            Some(g) => g.number + 1,
            None => 1,
        };
        let mut game = GameRecord::new(number, s.position, s.mode, s.chess960, t);
        game.reversed = orientation == Orientation::Reversed;
        let fen = game.start_fen();
        self.games.push(game);
        self.orientation = orientation;
        self.version += 1;
        self.lifts.clear();
        self.pending_press = None;
        self.pending_end = None;
        self.fifty_claimed = false;
        if !self.clock.fixed {
            self.clock.white_side = None;
        }
        self.clock.learn_start();
        self.emit(
            t,
            out,
            EventKind::GameStarted {
                fen,
                // The standard arrangement is number 518, but a standard game is no Chess960.
                chess960: s.chess960.filter(|&n| n != start::STANDARD_960_NUMBER),
            },
        );
        if orientation == Orientation::Reversed {
            self.emit(
                t,
                out,
                EventKind::Irregularity {
                    code: "board_reversed",
                    rule: "7.2.2",
                    player: "white",
                    squares: Vec::new(),
                    detail: "The board is turned round (h1 where a8 should be); squares are mapped and play continues.".into(),
                },
            );
        }
    }
}

/// A set-up position with `turn` to move; castling rights only for a king and rook still on
/// their original squares.
fn setup_position(board: &Board, turn: Color) -> Option<Chess> {
    use shakmaty::{Bitboard, FromSetup, Setup};
    let setup = Setup {
        board: board.clone(),
        turn,
        castling_rights: Bitboard::CORNERS,
        ..Setup::empty()
    };
    match Chess::from_setup(setup, CastlingMode::Standard) {
        Ok(pos) => Some(pos),
        Err(e) => e.ignore_invalid_castling_rights().ok(),
    }
}
