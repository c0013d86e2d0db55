//! Gaps between the record and the board: a board dump after a reconnection or a board that
//! jumped (lost field messages) may be several plies ahead. The moves are recovered when exactly
//! one legal sequence leads there; otherwise one `moves_missing` irregularity tells the arbiter.

use shakmaty::{Board, Chess, Color, Move, Position, Square, san::San};

use super::super::event::{ClockTimes, CompletedBy, CoreEvent};
use super::super::game::mover_of_ply;
use super::super::irregular::{diff, is_move_in_progress};
use super::super::observation::Micros;
use super::super::vocab::IrregularityCode;
use super::BoardEngine;
use super::gap::{self, Gap};

/// A move recovered from a gap or from the board's memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Recovered {
    /// The move.
    pub mv: Move,
    /// Its player's press completed it (the board's memory says so).
    pub pressed: bool,
    /// Both clocks after it, when known.
    pub clock: Option<ClockTimes>,
}

/// What asks for a reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Trigger {
    /// A full board dump (after a reconnection).
    Dump,
    /// An unexplained board that stood still (before it would be reported as displaced).
    Stable,
    /// A clock press that no move explains.
    Press,
    /// A polled board answered with a board no move explains (`BoardEngine::on_polled`): as
    /// a dump, but nothing is raised (the board may be a move in progress after the gap).
    Poll,
}

/// What a reconciliation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reconciled {
    /// Nothing to do or nothing found that is a gap.
    No,
    /// The missing moves were recorded.
    Recovered,
    /// The arbiter was told that moves are missing.
    Raised,
}

/// Whether `board` may be `pos` some plies on (the record at `ply`), with `changed` the
/// squares that differ: both sides' pieces changed, both kings on the board, at most one piece
/// lost a ply, and not the set-up of a game not begun.
fn could_be_gap(pos: &Chess, board: &Board, changed: &[Square], ply: u32) -> bool {
    // Both sides' pieces changed: a gap is possible. One side's only: a move, a knock.
    let both = [Color::White, Color::Black].into_iter().all(|c| {
        changed
            .iter()
            .any(|&sq| pos.board().color_at(sq) == Some(c) || board.color_at(sq) == Some(c))
    });
    // A gap of a few plies keeps both kings and loses at most one piece a ply.
    let (now, then) = (board.occupied().count(), pos.board().occupied().count());
    let plausible = board.kings().count() == 2
        && board.king_of(Color::White).is_some()
        && board.king_of(Color::Black).is_some()
        && now <= then
        && then - now <= gap::MAX_PLIES as usize;
    let setting_up = ply == 0 && super::super::start::on_start_ranks(board);
    both && plausible && !setting_up
}

impl BoardEngine {
    /// Compare the board with the record and recover or report missing moves.
    pub(super) fn reconcile(
        &mut self,
        t: Micros,
        trigger: Trigger,
        out: &mut Vec<CoreEvent>,
    ) -> Reconciled {
        let Some(game) = self.active_game() else {
            return Reconciled::No;
        };
        // A made move not yet completed is still being revised (a slide, a knock on the way):
        // only a dump can show a gap behind it.
        // On a polled board the board stood unexplained from one poll to another, a whole
        // window apart: no revision of the last move is under way any more.
        let revising =
            game.uncompleted_last().is_some() && trigger == Trigger::Stable && !self.polled;
        if self.illegal_open.is_some() || game.over() || revising || self.correcting.is_some() {
            return Reconciled::No;
        }
        let board = self.sensed.board(self.orientation);
        let pos = game.position().clone();
        if board == *pos.board() {
            return Reconciled::No;
        }
        let changed = diff(pos.board(), &board);
        if !could_be_gap(&pos, &board, &changed, game.ply()) {
            return Reconciled::No;
        }
        // A dump that shows pieces in hand for a legal move (a capture's two pieces lifted while
        // the player fetches the queen to promote to) shows a move in progress, not a gap: no
        // sequence of complete moves is looked for, the live engine follows the move. A board
        // that reports whole positions sends such dumps whenever it stands still (Certabo).
        if matches!(trigger, Trigger::Dump | Trigger::Poll) && is_move_in_progress(&pos, &board) {
            return Reconciled::No;
        }
        // At a press the presser made the last move: a sequence ending with the other side's
        // move is no gap but a knocked piece that looks like the opponent's move.
        // A board that stood still unexplained recovers only two plies (one move of each side):
        // longer sequences are as often one move with a piece knocked where the other side's
        // piece could go in two moves, which is displaced pieces, not a gap (a dump settles it).
        // One move and one knocked piece change at most four squares (castling); a board that
        // differs on five or more is a gap whatever the length.
        let gap_shaped = trigger == Trigger::Dump || changed.len() >= 5;
        let presser_last = |n: usize| match trigger {
            Trigger::Press => n % 2 == 1,
            Trigger::Stable => n == 2 || gap_shaped,
            Trigger::Dump | Trigger::Poll => true,
        };
        match gap::search(&pos, &board, gap::MAX_PLIES) {
            Gap::One(moves) if moves.len() >= 2 && presser_last(moves.len()) => {
                self.recover(t, &moves, out);
                Reconciled::Recovered
            }
            Gap::One(_) => Reconciled::No,
            // A polled board's answer recovers; it raises nothing before the displaced window.
            // Several orders, or none within reach: the order in which the board reported its
            // changes tells which moves were made (a chain's line delayed them: `stream.rs`);
            // when it does not, and there are several orders or (on five squares or more) none
            // within reach, its memory is wanted now.
            g @ (Gap::Several(_) | Gap::None | Gap::TooMany) if trigger == Trigger::Poll => {
                if let Some(moves) = self.stream_sequence(&pos, &board) {
                    self.recover(t, &moves, out);
                    return Reconciled::Recovered;
                }
                if gap_shaped || matches!(g, Gap::Several(_)) {
                    self.memory_wanted_since.get_or_insert(t);
                }
                Reconciled::No
            }
            Gap::Several(_) if !gap_shaped => Reconciled::No,
            Gap::Several(options) => {
                let list: Vec<String> = options.iter().map(|o| sans(&pos, o)).collect();
                let detail = format!(
                    "The board is ahead of the record and several move sequences lead there ({}); the arbiter must say which was played.",
                    list.join(" | ")
                );
                self.moves_missing(t, changed, detail, out)
            }
            Gap::None | Gap::TooMany if trigger != Trigger::Dump => Reconciled::No,
            // A dump taken while the next move is being made after the gap (its pieces in
            // hand): the board is followed until they are put down, and the next dump or the
            // board standing still recovers the gap then.
            Gap::None | Gap::TooMany if gap::reaches_with_lifts(&pos, &board, gap::MAX_PLIES) => {
                Reconciled::No
            }
            Gap::None | Gap::TooMany => self.missing_unknown(t, out),
        }
    }

    /// Tell the arbiter that moves are missing and no sequence of legal moves explains the
    /// board (when both sides' pieces changed, so that it is no single player's doing).
    pub(super) fn missing_unknown(&mut self, t: Micros, out: &mut Vec<CoreEvent>) -> Reconciled {
        let Some(game) = self.active_game() else {
            return Reconciled::No;
        };
        let board = self.sensed.board(self.orientation);
        let changed = diff(game.position().board(), &board);
        let detail = format!(
            "The board differs from the record on {} squares and no sequence of up to {} legal moves leads there; moves are missing from the record.",
            changed.len(),
            gap::MAX_PLIES
        );
        self.moves_missing(t, changed, detail, out)
    }

    /// Record moves recovered from a gap (their clock times are unknown).
    fn recover(&mut self, t: Micros, moves: &[Move], out: &mut Vec<CoreEvent>) {
        let moves: Vec<Recovered> = moves
            .iter()
            .map(|&mv| Recovered {
                mv,
                pressed: false,
                clock: None,
            })
            .collect();
        self.recover_with(t, &moves, out);
    }

    /// Record recovered moves in order. A move its player's press completed (known from the
    /// board's memory) is completed by the clock, with the times when known; the others are
    /// completed by the next move, clock unknown.
    pub(super) fn recover_with(
        &mut self,
        t: Micros,
        moves: &[Recovered],
        out: &mut Vec<CoreEvent>,
    ) {
        self.recovering = true;
        self.memory_wanted_since = None;
        for m in moves {
            // Each move completes the one before it, unless its press did.
            self.make(t, m.mv, out);
            if m.pressed {
                self.complete(t, CompletedBy::Clock, m.clock, out);
                self.moves_since_press = 0;
            }
        }
        self.recovering = false;
        self.displaced = None;
        self.relocation = None;
        if let Some(squares) = self.gap_open.take() {
            self.emit_resolved(t, out, IrregularityCode::MovesMissing, squares);
        }
    }

    fn moves_missing(
        &mut self,
        t: Micros,
        squares: Vec<shakmaty::Square>,
        detail: String,
        out: &mut Vec<CoreEvent>,
    ) -> Reconciled {
        self.displaced = None;
        self.relocation = None;
        if self.gap_open.is_some() {
            return Reconciled::Raised;
        }
        self.gap_open = Some(squares.clone());
        let player = self
            .active_game()
            .map_or(Color::White, |g| mover_of_ply(g.start(), g.ply() + 1));
        self.irregularity(
            t,
            out,
            IrregularityCode::MovesMissing,
            player,
            squares,
            detail,
        );
        Reconciled::Raised
    }
}

/// SAN of a move sequence from `pos`.
fn sans(pos: &shakmaty::Chess, moves: &[Move]) -> String {
    let mut pos = pos.clone();
    let mut out = Vec::new();
    for &m in moves {
        out.push(San::from_move(&pos, m).to_string());
        pos.play_unchecked(m);
    }
    out.join(" ")
}
