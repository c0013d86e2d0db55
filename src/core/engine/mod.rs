//! The per-board state machine: observations with timestamps in, events out.
//!
//! Moves are inferred by comparing the sensed board with the board after every legal move of
//! the current position (`docs/README.md`, design rule 2). A made move stays revisable until it is completed (by a
//! clock press, the opponent's next move, or the end of the game): a rook placed before the king
//! is first a rook move and then castling; a sliding piece is first a move to a square it passed.
//! Time is an input; decisions that wait for the board to settle (a press reported before the
//! move's last field update, a displaced piece) are taken at their deadline, found by the first
//! observation past it or by [`BoardEngine::tick`] / [`BoardEngine::finish`].

mod arbiter;
mod correction;
pub mod gap;
mod lifecycle;
mod memory;
mod recovery;
pub mod seed;
pub mod stream;

use shakmaty::{Board, Chess, Color, Move, Position, Square};

use super::clock::ClockTracker;
use super::event::{ClockTimes, CompletedBy, CoreEvent, EventKind};
use super::game::GameRecord;
use super::ledger::Ledger;
use super::observation::{ClockReading, ClockSide, Micros, Observation, SquareReading};
use super::sensed::{Orientation, SensedBoard};
use super::vocab::Claim;

/// How long displaced pieces on a polled board wait for the board's memory once its polls show
/// it ahead of the record by moves no search resolves ([`BoardEngine::memory_wanted`]): a chain
/// asks for the memory at the board's next turn (up to a few seconds on a line that loses
/// bytes), and the memory, the changes and a dump after it come in a few polls more.
pub const MEMORY_GRACE: Micros = 10_000_000;

/// Tunables of the state machine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// How long after a clock press the board may still report the move's last field update.
    pub settle: Micros,
    /// How long a board must stay unexplained by any legal move in progress before its pieces
    /// count as displaced.
    pub displaced_after: Micros,
    /// How long a piece must stand on a square after a legal move before lifting it again counts
    /// as changing a released move (4.6) rather than a slide passing over the square.
    pub release_hold: Micros,
    /// White's physical clock side when fixed by configuration (else learned).
    pub white_clock_side: Option<ClockSide>,
    /// The board reports only when polled (a board of a DGT chain), known from its family
    /// before any poll is seen: decisions wait for its polls from the start, even when the
    /// line garbled every answer to a poll so far (else learned at the first
    /// [`Observation::Polled`]).
    pub polled: bool,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            settle: 400_000,
            displaced_after: 1_000_000,
            release_hold: 1_000_000,
            white_clock_side: None,
            polled: false,
        }
    }
}

/// How [`BoardEngine::decide`] takes the decisions that are due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Decide {
    /// Each at its deadline (a board that reports every change as it happens; end of input).
    AtDeadlines,
    /// At a polled board's poll: presses and ends at the poll's time; displaced pieces are
    /// judged by the poll itself.
    AtPoll,
}

/// A press waiting for the board to settle.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct PendingPress {
    side: ClockSide,
    deadline: Micros,
    reading: ClockReading,
}

/// A board that no legal move in progress explains.
#[derive(Debug, Clone)]
struct Displaced {
    since: Micros,
    /// How long to wait before raising it (longer while a kings signal may be half made).
    wait: Micros,
    /// The squares reported, once raised.
    raised: Option<Vec<Square>>,
}

/// Boards after each legal move of one position.
#[derive(Default)]
struct Candidates {
    key: Option<(u32, u64)>,
    moves: Vec<(Move, Board)>,
}

/// A cache, derived from the game and keyed by it: left out of the engine's `Debug`, which
/// tells two engines' states apart ([`seed::EngineSeed::of`]).
impl std::fmt::Debug for Candidates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Candidates")
    }
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
    ledger: Ledger,
    pending_press: Option<PendingPress>,
    /// A press seen before any game, kept for a set-up game whose first move it may complete.
    early_press: Option<PendingPress>,
    pending_end: Option<Micros>,
    last_clock_event: Option<(ClockTimes, Option<Color>)>,
    fifty_claimed: bool,
    /// Completed illegal moves per player (White, Black) in the current game.
    illegal_moves: [u32; 2],
    /// An illegal move was completed and the position is not restored yet.
    illegal_open: Option<Vec<shakmaty::Square>>,
    displaced: Option<Displaced>,
    /// A single piece off to a square no legal move explains: (since, ply, squares). Judged when
    /// it ends: an illegal move if the clock is pressed, a displaced piece if it is put right.
    relocation: Option<(Micros, u32, Vec<Square>)>,
    /// A released move taken back to its origin in this turn: (move, ply).
    taken_back: Option<(Move, u32)>,
    /// The game's first move was made the moment the game started, its start position never
    /// seen on the board: a piece still being set up, not yet a move, until a press completes
    /// it. Put right (the start position shown), it is a set-up correction, no move.
    first_move_in_setup: bool,
    /// When the link dropped, until the board dump after it is taken.
    link_dropped_at: Option<Micros>,
    /// Moves made since the last press was resolved (or the game started): a press after
    /// exactly one move puts clock and board in phase.
    moves_since_press: u32,
    /// Clock and board in phase since this time (a press completed exactly one move, and no
    /// move was made since): the running face is the side to move's, evidence for
    /// [`ClockTracker::observe`].
    in_phase_from: Option<Micros>,
    /// Before any game: the last board that stood still, a candidate set-up position (I.5).
    setup_ref: Option<SensedBoard>,
    /// A released move revised into another one in its turn: (released move, ply, when). Judged
    /// when the turn's move is completed (4.6), or a displacement if the move comes back.
    changed: Option<(Move, u32, Micros)>,
    /// Moves are missing from the record (a gap no unique sequence explains): the squares.
    gap_open: Option<Vec<shakmaty::Square>>,
    /// Since when a polled board's polls show it ahead of the record by moves no search
    /// resolves (no sequence within reach, or several orders): its memory is wanted
    /// ([`BoardEngine::memory_wanted`]), and displaced pieces wait for it ([`MEMORY_GRACE`]).
    memory_wanted_since: Option<Micros>,
    /// Moves being recorded now are recovered from a gap, not seen being made.
    recovering: bool,
    /// After an arbiter's correction, the board does not show the corrected position yet: the
    /// squares that differed. Nothing is inferred until it does.
    correcting: Option<Vec<Square>>,
    last_change: Micros,
    /// Whether the clock said it is there (a reading) or not ("no clock") last; `None`
    /// before either.
    clock_present: Option<bool>,
    /// The board's memory, replayed, waiting for the board dump that follows it.
    memory: Option<memory::MemoryReplay>,
    /// The board reports only when polled ([`Observation::Polled`] seen): what it shows is
    /// judged at its polls, not by the time passed since its last report.
    polled: bool,
    /// A polled board: its field changes since the record last changed, in order
    /// (`stream.rs`).
    stream: stream::Stream,
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
            polled: cfg.polled,
            cfg,
            clock,
            ..Default::default()
        }
    }

    /// The tunables it runs with.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Every game seen so far, in the order they started (the last two only, once
    /// [`BoardEngine::forget_finished`] was called).
    pub fn games(&self) -> &[GameRecord] {
        &self.games
    }

    /// Forget every game but the last two: no rule, correction or recovery reaches them (they
    /// all act on the latest game, a recovery also looks at the one before), so nothing the
    /// engine decides changes. The live daemon calls it as games start, for memory that does
    /// not grow with the games of an event; their record stays in the capture and in the
    /// hub's archive. Returns how many were forgotten.
    pub fn forget_finished(&mut self) -> usize {
        let n = self.games.len().saturating_sub(2);
        self.games.drain(..n);
        n
    }

    /// Whether a `moves_missing` is open: the board is ahead of the record by moves that no
    /// single legal sequence explains (the arbiter was told; the board's memory may still tell).
    pub fn moves_missing_open(&self) -> bool {
        self.gap_open.is_some()
    }

    /// Whether the board's memory would tell what the record lacks: a `moves_missing` is open,
    /// or a polled board's poll shows it ahead of the record by moves no search resolves (a
    /// chain's line lost or delayed its changes for several plies: nothing is raised yet, its
    /// memory is read and recovers them exactly).
    pub fn memory_wanted(&self) -> bool {
        self.gap_open.is_some() || self.memory_wanted_since.is_some()
    }

    /// The board's orientation (of the current game).
    pub fn orientation(&self) -> Orientation {
        self.orientation
    }

    /// What every field of the board reads now (the pieces as they stand, before, during or
    /// after a game), in device numbering.
    pub fn sensed(&self) -> &SensedBoard {
        &self.sensed
    }

    /// The clock's latest reading, while a clock is there: `None` before any reading and after
    /// the clock said "no clock".
    pub fn clock_reading(&self) -> Option<&ClockReading> {
        self.clock
            .last()
            .filter(|_| self.clock_present != Some(false))
    }

    /// Feed one observation.
    pub fn handle(&mut self, t: Micros, obs: &Observation, out: &mut Vec<CoreEvent>) {
        self.tick(t, out);
        if self.polled
            && let Observation::Field { index, reading } = obs
        {
            self.stream.keep(self.version, *index, *reading);
        }
        // A memory is for the board dump right after it: anything that may change the board or
        // the record in between makes it stale.
        let memory = match obs {
            Observation::Clock(_)
            | Observation::ClockAbsent
            | Observation::Connected { .. }
            | Observation::Polled => None,
            _ => self.memory.take(),
        };
        match obs {
            Observation::BoardDump(fields) => {
                self.sensed.set_all(fields);
                // A piece seen lifted before the link dropped and on its square in the dump
                // after it was put back while the link was away: held at least until the
                // drop, a touch when that is long enough (4.3a). (A dump that repairs lost
                // updates on a live link closes nothing: a lost placement says nothing of how
                // long the piece was up.)
                if let Some(dropped) = self.link_dropped_at.take() {
                    let board = self.sensed.board(self.orientation);
                    for (square, piece, lifted_at) in self.ledger.open_lifts() {
                        if lifted_at < dropped && board.piece_at(square) == Some(piece) {
                            self.ledger.place(square, piece, dropped);
                        }
                    }
                }
                if self.games.is_empty() {
                    self.setup_ref = Some(self.sensed.clone());
                }
                self.last_change = t;
                // The moves made while the link was away, exactly, from the board's memory.
                if let Some(memory) = memory {
                    self.recover_from_memory(t, memory, out);
                }
                self.evaluate(t, out);
                // A dump after a reconnection may be several plies ahead of the record.
                self.reconcile(t, recovery::Trigger::Dump, out);
            }
            Observation::Field { index, reading } => self.on_field(t, *index, *reading, out),
            Observation::Clock(reading) => {
                self.clock_present = Some(true);
                self.on_clock(t, *reading, out)
            }
            Observation::ClockAbsent => self.clock_present = Some(false),
            Observation::Disconnected { driver, serial } => {
                self.link_dropped_at.get_or_insert(t);
                self.emit(
                    t,
                    out,
                    EventKind::BoardDisconnected {
                        driver: driver.clone(),
                        serial: serial.clone(),
                    },
                )
            }
            Observation::Connected { driver, serial } => self.emit(
                t,
                out,
                EventKind::BoardConnected {
                    driver: driver.clone(),
                    serial: serial.clone(),
                },
            ),
            Observation::Operator(action) => self.on_operator(t, action, out),
            Observation::Memory(entries) => self.on_memory(entries),
            Observation::Polled => {
                self.polled = true;
                self.on_polled(t, out);
            }
        }
    }

    /// Take every decision whose deadline has passed at time `t` (events carry the deadline).
    /// On a board that reports only when polled, nothing is decided here: its decisions are
    /// taken at its polls ([`Observation::Polled`]), since between two polls what the board
    /// shows is not known (a press's settle window may end before the poll that reports the
    /// move's last placement: a bishop slid f1-e2-b5 would be completed as Be2).
    pub fn tick(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        if !self.polled {
            self.decide(t, Decide::AtDeadlines, out);
        }
    }

    /// Every decision due at `t`: a press, a game's end by rule, and (but at a poll, which
    /// judges them itself) displaced pieces.
    fn decide(&mut self, t: Micros, how: Decide, out: &mut Vec<CoreEvent>) {
        loop {
            let press = self.pending_press.map(|p| (p.deadline, 0));
            let end = self.pending_end.map(|d| (d, 1));
            let displaced = self
                .displaced
                .as_ref()
                .filter(|d| how != Decide::AtPoll && d.raised.is_none())
                .map(|d| (d.since + d.wait, 2));
            let next = [press, end, displaced].into_iter().flatten().min();
            // At a poll, a decision carries the poll's time: it was taken then, after the
            // changes the poll brought (events stay in time order).
            let at = |d: Micros| if how == Decide::AtPoll { t } else { d };
            match next {
                Some((d, 0)) if d <= t => self.resolve_press(at(d), out),
                Some((d, 1)) if d <= t => self.resolve_end(at(d), out),
                Some((d, _)) if d <= t => self.raise_displaced(d, out),
                _ => break,
            }
        }
    }

    /// End of input at time `_t`: take every pending decision now.
    pub fn finish(&mut self, _t: Micros, out: &mut Vec<CoreEvent>) {
        self.decide(Micros::MAX, Decide::AtDeadlines, out);
    }

    /// A polled board answered ([`Observation::Polled`]): its changes since the last poll are
    /// in, and the sensed board is the board as it stands. Its changes arrive a poll at a
    /// time, up to a polling cycle late and all at once, and its memory keeps only the last
    /// reading of a square changed twice in a row (a piece placed and taken off again before
    /// the poll: a recapture's captured piece is never seen on its square), so the board may
    /// show a position a few plies ahead with no report in between: recovered now, as at a
    /// board dump, when exactly one legal sequence leads there (nothing is raised here: an
    /// image a sequence does not explain may be moves still in progress). Displaced pieces are
    /// raised only here, when a poll at least the displaced window after the board stopped
    /// being explained still shows it unexplained.
    fn on_polled(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        if self.memory.is_some() {
            // The memory waits for its board dump, which recovers the moves.
            return;
        }
        if self.displaced.is_none() {
            // Explained (or a move under way): no memory is wanted any more.
            self.memory_wanted_since = None;
        }
        if self.displaced.is_some()
            && self.reconcile(t, recovery::Trigger::Poll, out) == recovery::Reconciled::Recovered
        {
            return;
        }
        // A press or a game's end whose settle window is over: the board as this poll shows
        // it is the board after the move.
        self.decide(t, Decide::AtPoll, out);
        let due = self
            .displaced
            .as_ref()
            .filter(|d| d.raised.is_none())
            .is_some_and(|d| t >= d.since + d.wait)
            && self
                .memory_wanted_since
                .is_none_or(|since| t >= since + MEMORY_GRACE);
        if due {
            self.raise_displaced(t, out);
        }
    }

    fn game(&self) -> Option<&GameRecord> {
        self.games.last()
    }

    /// The game that moves go to (see [`GameRecord::accepts_moves`]).
    fn active_game(&self) -> Option<&GameRecord> {
        self.games.last().filter(|g| g.accepts_moves())
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

    /// The ply of the turn being played: the uncompleted move's, until its player presses.
    fn current_turn(&self) -> u32 {
        match self.active_game() {
            None => 0,
            Some(g) if g.uncompleted_last().is_some() && self.pending_press.is_none() => g.ply(),
            Some(g) => g.ply() + 1,
        }
    }

    /// The turn a lift of a piece of `color` belongs to. Once a move is made the opponent has
    /// the move (1.3): a lift of the opponent's piece before the press is the opponent's.
    fn lift_turn(&self, color: Color) -> u32 {
        match self.active_game() {
            None => 0,
            Some(g) if g.uncompleted_last().is_some() && self.pending_press.is_none() => {
                if color == g.position().turn() {
                    g.ply() + 1
                } else {
                    g.ply()
                }
            }
            Some(g) => g.ply() + 1,
        }
    }

    fn on_field(&mut self, t: Micros, index: u8, reading: SquareReading, out: &mut Vec<CoreEvent>) {
        if self.sensed.get(index) == reading {
            return;
        }
        if self.games.is_empty() && t - self.last_change >= lifecycle::SETUP_STILL {
            self.setup_ref = Some(self.sensed.clone());
        }
        self.last_change = t;
        let before = self.sensed.set(index, reading);
        let square = self.orientation.square_of(index);
        if let SquareReading::Piece(piece) = before {
            let turn = self.lift_turn(piece.color);
            self.ledger.lift(square, piece, t, turn);
        }
        if let SquareReading::Piece(piece) = reading {
            self.ledger.place(square, piece, t);
        }
        self.evaluate(t, out);
    }

    fn evaluate(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some(game) = self.active_game() else {
            self.try_start(t, out);
            return;
        };
        let ply = game.ply();
        if self.await_corrected(t, out) {
            return;
        }
        let board = self.sensed.board(self.orientation);
        if self.result_signal(t, &board, out) {
            return;
        }
        let game = self.active_game().expect("active");
        if board == *game.position().board() {
            self.board_restored(t, out);
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
                self.judge_revision(t, m, out);
                self.retract(t, out);
                self.make(t, m, out);
                return;
            }
            let game = self.active_game().expect("active");
            if board == *game.position_before_last().board() {
                if self.first_move_in_setup && game.ply() == 1 {
                    // A piece set up on a wrong square and put right before the game began
                    // (Guidelines I.5 aside, no one has moved yet): no move, and no touch.
                    self.first_move_in_setup = false;
                    self.ledger.clear();
                } else if self.illegal_open.is_none() {
                    self.note_taken_back(t, out);
                }
                self.retract(t, out);
                // The board shows the game position again (an arbiter restoring it after an
                // illegal move through a square that was a legal move).
                self.board_restored(t, out);
                return;
            }
        }
        if self.try_start(t, out) {
            return;
        }
        if ply == 0 && super::start::on_start_ranks(&board) {
            // Before the first move, pieces rearranged on their start ranks are the position
            // being set up: nothing is displaced (what was reported before is put right).
            self.clear_displaced(t, out);
            self.close_relocation(t, out);
            return;
        }
        self.track_displaced(t, &board, out);
    }

    /// Among the legal moves whose board equals `board`, the one the lifts point to.
    fn pick(
        moves: &[(Move, Board)],
        board: &Board,
        ledger: &Ledger,
        since_ply: u32,
        mover: Color,
    ) -> Option<Move> {
        let mut found = moves.iter().filter(|(_, b)| b == board).map(|(m, _)| *m);
        let first = found.next()?;
        let Some(second) = found.next() else {
            return Some(first);
        };
        // Identical boards: a castling that looks like a plain king or rook move. It is
        // castling when both king and rook were lifted during the turn.
        let lifted = |sq: Square| {
            ledger
                .since(since_ply)
                .any(|x| x.square == sq && x.piece.color == mover && !x.is_glitch())
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
        let since = game.ply() + 1;
        let moves = self.current.for_position(key, pos);
        Self::pick(moves, board, &self.ledger, since, pos.turn())
    }

    fn choose_before(&mut self, board: &Board) -> Option<Move> {
        let game = self.games.last()?;
        let pos = game.position_before_last();
        let key = (game.number, self.version);
        let since = game.ply();
        let moves = self.before.for_position(key, pos);
        Self::pick(moves, board, &self.ledger, since, pos.turn())
    }

    /// The board equals the position: a made move may still be re-read as another move with
    /// the same board (a castling whose king and rook were both lifted).
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
        if self.pending_end.is_some() {
            // The opponent replied: the move that ended the game by rule stands.
            self.resolve_end(t, out);
        }
        if self.has_uncompleted() {
            if self.pending_press.is_some() {
                self.resolve_press(t, out);
            }
            if self.has_uncompleted() {
                let clock = self.clock.times();
                self.complete(t, CompletedBy::NextMove, clock, out);
            }
        }
        self.observe_in_phase(t);
        self.in_phase_from = None;
        self.moves_since_press += 1;
        self.close_relocation(t, out);
        self.judge_taken_back(t, m, out);
        let recovered = self.recovering;
        let Some(game) = self.games.last_mut() else {
            return;
        };
        game.push(m, t);
        if let Some(last) = game.moves.last_mut() {
            last.recovered = recovered;
        }
        let kind = game.move_made(game.moves.len() - 1).expect("just pushed");
        let ends = game.result.is_none() && game.ending().is_some();
        self.version += 1;
        self.emit(t, out, kind);
        self.pending_end = ends.then_some(t + self.cfg.settle);
        let board = self.sensed.board(self.orientation);
        self.displaced_resolved(t, &board, out);
        if self.displaced.as_ref().is_some_and(|d| d.raised.is_none()) {
            self.displaced = None;
        }
    }

    /// Clock evidence: while clock and board are in phase, the running face counted down for
    /// the side to move until `t`.
    fn observe_in_phase(&mut self, t: Micros) {
        let Some(from) = self.in_phase_from else {
            return;
        };
        if let Some(turn) = self.active_game().map(|g| g.position().turn()) {
            self.clock.observe(turn, t - from);
        }
        self.in_phase_from = Some(t);
    }

    fn has_uncompleted(&self) -> bool {
        self.active_game()
            .and_then(|g| g.uncompleted_last())
            .is_some()
    }

    fn retract(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some(game) = self.games.last_mut() else {
            return;
        };
        let ply = game.ply();
        if game.pop().is_some() {
            self.moves_since_press = self.moves_since_press.saturating_sub(1);
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
        let recovered = record.recovered;
        // A recovered move's clock time is unknown, unless its player's press completes it.
        let clock = if recovered && by != CompletedBy::Clock {
            None
        } else {
            clock
        };
        record.completed = Some(by);
        record.clock = clock;
        let kind = EventKind::MoveCompleted {
            ply,
            san: record.san.clone(),
            by,
            clock,
            recovered,
        };
        let final_move = record.mv;
        let threefold = game.repetitions() >= 3;
        let fifty = game.position().halfmoves() >= 100;
        self.emit(t, out, kind);
        // The touches of the turn are judged even when its move was recovered (from the
        // board's memory or a gap): the ledger holds only what was seen live, so a touch in it
        // (a piece seen lifted, and put back before the link dropped or on its square in the
        // dump after it) is evidence whatever happened while no one listened. A change after
        // release needs the whole move seen.
        self.judge_turn(t, ply, out);
        if !recovered {
            self.judge_changed(t, ply, final_move, out);
        }
        self.changed = None;
        self.taken_back = None;
        if threefold {
            self.emit(
                t,
                out,
                EventKind::ClaimAvailable {
                    claim: Claim::Threefold,
                },
            );
        }
        if fifty && !self.fifty_claimed {
            self.fifty_claimed = true;
            self.emit(
                t,
                out,
                EventKind::ClaimAvailable {
                    claim: Claim::FiftyMoves,
                },
            );
        }
    }
}
