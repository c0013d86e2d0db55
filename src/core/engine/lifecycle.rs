//! Games beginning and ending, the clock, and operator actions.

use shakmaty::{Board, CastlingMode, Chess, Color, Position};

use super::super::clock::ClockChange;
use super::super::event::{CoreEvent, EndReason, EventKind};
use super::super::game::GameRecord;
use super::super::observation::{ClockReading, ClockSide, Micros, OperatorAction};
use super::super::sensed::Orientation;
use super::super::start;
use super::super::vocab::IrregularityCode;
use super::{BoardEngine, PendingPress};

/// How long a board must stand still before it counts as a set-up position.
pub(super) const SETUP_STILL: Micros = 2_000_000;

impl BoardEngine {
    /// Start a game when the board shows a start position (standard or Chess960, either way
    /// round), or before any game a set-up position. Returns whether a game started.
    pub(super) fn try_start(&mut self, t: Micros, out: &mut Vec<CoreEvent>) -> bool {
        let full = self.sensed.occupied() == 32;
        for orientation in [Orientation::Normal, Orientation::Reversed] {
            let Some(s) = full
                .then(|| start::recognise(&self.sensed.board(orientation)))
                .flatten()
            else {
                continue;
            };
            if let Some(g) = self.games.last() {
                let same = g.ply() == 0
                    && g.accepts_moves()
                    && g.start().board() == s.position.board()
                    && self.orientation == orientation;
                if same || self.taken_back_to_start(&s, orientation) {
                    return false;
                }
            }
            self.start_game(t, s, orientation, out);
            return true;
        }
        // White moved while Black was still setting up (or the previous game was still being
        // tidied away): the game starts from the start position before that move.
        for orientation in [Orientation::Normal, Orientation::Reversed] {
            let Some((s, m)) = full
                .then(|| start::start_plus_one(&self.sensed.board(orientation)))
                .flatten()
            else {
                continue;
            };
            if self.taken_back_to_start(&s, orientation) {
                return false;
            }
            self.start_game(t, s, orientation, out);
            self.make(t, m, out);
            self.first_move_in_setup = true;
            return true;
        }
        self.games.is_empty() && self.try_setup(t, out)
    }

    /// A running game's first move taken back after it was completed shows its start position
    /// again: that is no new game.
    fn taken_back_to_start(&self, s: &start::StartPosition, orientation: Orientation) -> bool {
        self.active_game().is_some_and(|g| {
            g.ply() == 1
                && g.start().board() == s.position.board()
                && self.orientation == orientation
        })
    }

    /// Guidelines I.5: a board first seen in another position is a set-up position; the side
    /// to move is the side whose legal move the board shows first.
    fn try_setup(&mut self, t: Micros, out: &mut Vec<CoreEvent>) -> bool {
        let Some(reference) = self.setup_ref.clone() else {
            return false;
        };
        let normal_first = homeward_score(&reference.board(Orientation::Normal)) >= 0;
        let orientations = if normal_first {
            [Orientation::Normal, Orientation::Reversed]
        } else {
            [Orientation::Reversed, Orientation::Normal]
        };
        // A start position still being set up (either way round), not an adjourned game's
        // position: also when the "move" puts a piece of it on its start square (a set-up
        // corrected while the board is still being filled).
        let being_set_up = |b: &super::super::sensed::SensedBoard| {
            [Orientation::Normal, Orientation::Reversed]
                .into_iter()
                .any(|o| start::is_partial_start(&b.board(o)))
        };
        if being_set_up(&reference) || being_set_up(&self.sensed) {
            return false;
        }
        for orientation in orientations {
            let board = self.sensed.board(orientation);
            let before = reference.board(orientation);
            for turn in [Color::White, Color::Black] {
                let Some(pos) = setup_position(&before, turn) else {
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
                    let early_press = self.early_press.take();
                    self.start_game(t, s, orientation, out);
                    self.make(t, m, out);
                    // A blitz press can be reported before the first move's last field update.
                    if let Some(press) = early_press.filter(|p| p.deadline >= t) {
                        self.clock.learn_press(press.side, turn);
                        self.pending_press = Some(press);
                    }
                    return true;
                }
            }
        }
        false
    }

    pub(super) fn start_game(
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
        self.ledger.clear();
        self.pending_press = None;
        self.pending_end = None;
        self.fifty_claimed = false;
        self.illegal_moves = [0, 0];
        self.illegal_open = None;
        self.displaced = None;
        self.relocation = None;
        self.taken_back = None;
        self.first_move_in_setup = false;
        self.changed = None;
        self.gap_open = None;
        self.memory_wanted_since = None;
        self.correcting = None;
        self.moves_since_press = 0;
        self.in_phase_from = None;
        self.clock.new_game();
        let to_move = self.games.last().map_or(Color::White, |g| g.start().turn());
        self.clock.learn_start(to_move);
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
            self.irregularity(
                t,
                out,
                IrregularityCode::BoardReversed,
                Color::White,
                Vec::new(),
                "The board is turned round (h1 where a8 should be); squares are mapped and play continues.".into(),
            );
        }
    }

    pub(super) fn resolve_end(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        self.pending_end = None;
        let Some((result, reason)) = self.active_game().and_then(|g| g.ending()) else {
            return;
        };
        self.end_game(t, result, reason, out);
    }

    pub(super) fn end_game(
        &mut self,
        t: Micros,
        result: shakmaty::Outcome,
        reason: EndReason,
        out: &mut Vec<CoreEvent>,
    ) {
        if self.active_game().is_none() {
            return;
        }
        let clock = self.clock.times();
        self.complete(t, super::CompletedBy::GameEnd, clock, out);
        if self.games.last().is_some_and(|g| g.ended()) {
            // Played on after a draw the rules declared: the result stands.
            return;
        }
        if let Some(game) = self.games.last_mut() {
            game.result = Some((result, reason));
        }
        self.pending_press = None;
        self.pending_end = None;
        self.displaced = None;
        self.relocation = None;
        self.changed = None;
        self.gap_open = None;
        self.memory_wanted_since = None;
        self.emit(t, out, EventKind::GameEnded { result, reason });
    }

    pub(super) fn on_clock(&mut self, t: Micros, reading: ClockReading, out: &mut Vec<CoreEvent>) {
        self.observe_in_phase(t);
        let shown_before = self.clock.flags_shown();
        let change = self.clock.update(reading);
        if self.active_game().is_none() {
            if let ClockChange::Press { side } = change {
                self.early_press = Some(PendingPress {
                    side,
                    deadline: t + self.cfg.settle,
                    reading,
                });
            }
            return;
        }
        if let ClockChange::Press { side } = change
            && self.correcting.is_none()
        {
            // While the board is being set to a corrected position a press is not judged.
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
                        running,
                    },
                );
            }
        }
        self.report_flags_shown(t, shown_before, out);
        if self.clock.flagged().is_some() && self.pending_end.is_some() {
            // 5.1.1 / 6.9: a checkmate (or another end by rule) made before the flag fell
            // ends the game, even when the flag is reported within the settle window.
            self.resolve_end(t, out);
        }
        if let (Some(loser), Some(game)) = (self.clock.flagged(), self.active_game()) {
            if game.ending().is_some() {
                self.resolve_end(t, out);
                return;
            }
            let result = game.flag_result(loser);
            self.end_game(t, result, EndReason::Flag, out);
        }
    }

    /// A face's flag newly shown (hours D6): reported, not a result (the clock may go on into
    /// the next period).
    fn report_flags_shown(&mut self, t: Micros, before: [bool; 2], out: &mut Vec<CoreEvent>) {
        if self.active_game().is_none() {
            return;
        }
        let now = self.clock.flags_shown();
        for (i, side) in [ClockSide::Left, ClockSide::Right].into_iter().enumerate() {
            if now[i] && !before[i] {
                let player = self.clock.color_of(side);
                self.emit(t, out, EventKind::FlagShown { player, side });
            }
        }
    }

    pub(super) fn on_operator(
        &mut self,
        t: Micros,
        action: &OperatorAction,
        out: &mut Vec<CoreEvent>,
    ) {
        // A refused correction changes nothing (the daemon does not record one; an older
        // capture's is refused identically on replay).
        let Ok(plan) = self.plan(action) else {
            return;
        };
        match action {
            OperatorAction::NewGame { fen: None } => {
                if let Some(g) = self
                    .games
                    .last_mut()
                    .filter(|g| g.result.is_none() && g.ply() > 0)
                {
                    g.result = Some((shakmaty::Outcome::Unknown, EndReason::Arbiter));
                }
                self.correcting = None;
                self.try_start(t, out);
            }
            OperatorAction::SetClockSide { white } => self.clock.fix_white_side(*white),
            _ => self.apply_plan(t, action, plan, out),
        }
    }
}

/// How much a position read this way round looks like White plays up the board: White's pawns
/// and king low, Black's high. Positive when this reading is the more plausible one (a piece
/// move is often legal either way round, so the first move alone cannot tell).
fn homeward_score(board: &Board) -> i32 {
    let mut score = 0;
    for (sq, piece) in board.iter() {
        let r = sq.rank() as i32 + 1;
        let weight = match piece.role {
            shakmaty::Role::Pawn => 1,
            shakmaty::Role::King => 2,
            _ => continue,
        };
        score += weight * piece.color.fold_wb(9 - 2 * r, 2 * r - 9);
    }
    score
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
