//! What an arbiter must know (FIDE Laws 4, 6, 7): touch-move, changed moves, clock presses
//! without a move, illegal moves, unpromoted pawns, displaced pieces, result signals.

use shakmaty::{Chess, Color, Move, Position, Role, Square};

use super::super::event::{ClockTimes, CompletedBy, CoreEvent, EndReason, EventKind};
use super::super::game::{GameRecord, mover_of_ply};
use super::super::irregular::{
    can_move, capturable, diff, half_kings_signal, is_move_in_progress, kings_signal, knocked_off,
    move_squares, moves_with_knocks, presser_only, single_relocation, unpromoted_pawn,
};
use super::super::ledger::{Ledger, NOISE, SAME_SCAN, Touch};
use super::super::observation::{Micros, SpecialPiece};
use super::super::vocab::{BLACK_WINS, DRAW, IrregularityCode, WHITE_WINS};
use super::recovery::{Reconciled, Trigger};
use super::{BoardEngine, Displaced, PendingPress};

/// How long a king may stand on a centre square, the other king not there yet, before the
/// board counts as displaced rather than a result signal being made.
const KINGS_SIGNAL_WAIT: Micros = 10_000_000;

/// A piece lifted sooner than this after the other player placed a piece was not lifted by its
/// own player's hand (no one reacts and reaches that fast): it was knocked.
const KNOCK_REACTION: Micros = 400_000;

/// More pieces than two hands can hold (three each, generously): gone from the board together
/// with none put anywhere, they were not taken away by anyone. The board was lifted or jolted,
/// or its sensors lost power for a moment.
const MORE_THAN_HANDS_HOLD: usize = 6;

/// How long such a board may read pieces gone before they are reported displaced: a jolt or a
/// power glitch reads empty for about a second and then whole again, and is nothing to report.
const JOLT_WAIT: Micros = 3_000_000;

fn names(squares: &[Square]) -> Vec<String> {
    squares.iter().map(|s| s.to_string()).collect()
}

fn colour(c: Color) -> &'static str {
    c.fold_wb("White", "Black")
}

/// An irregularity found in a turn: its code, the player it is charged to, its squares and
/// what happened.
type Finding = (IrregularityCode, Color, Vec<Square>, String);

/// A piece of the mover's touched (`touches`: lifted and put back, not part of the move) that
/// could move, and another piece moved (4.3a).
fn touched_own(pos: &Chess, touches: &[Touch]) -> Option<Finding> {
    let mover = pos.turn();
    let x = touches
        .iter()
        .find(|x| x.piece.color == mover && can_move(pos, x.square))?;
    Some((
        IrregularityCode::TouchedPieceNotMoved,
        mover,
        vec![x.square],
        format!(
            "{} touched the {} on {} which could move, and moved another piece.",
            colour(mover),
            x.piece.role.upper_char(),
            x.square
        ),
    ))
}

/// An opponent's piece touched (`touches`) that could be captured and was not (4.3b), or one
/// that could not, lifted and put back while the mover's clock ran (a hint: the sensors cannot
/// tell whose hand). A piece an illegal move took that cannot be taken legally is no
/// obligation.
fn touched_opponent(pos: &Chess, m: Move, touches: &[Touch]) -> Option<Finding> {
    let mover = pos.turn();
    let x = touches.iter().find(|x| x.piece.color != mover)?;
    let captured = match m {
        Move::EnPassant { from, to } => Some(Square::from_coords(to.file(), from.rank())),
        Move::Normal {
            capture: Some(_),
            to,
            ..
        } => Some(to),
        _ => None,
    };
    if capturable(pos, x.square) {
        (captured != Some(x.square)).then(|| {
            (
                IrregularityCode::TouchedOpponentNotCaptured,
                mover,
                vec![x.square],
                format!(
                    "{} touched the opponent's piece on {} which could be captured, and did not capture it.",
                    colour(mover),
                    x.square
                ),
            )
        })
    } else if x.illegal {
        None
    } else {
        Some((
            IrregularityCode::AdjustedOutOfTurn,
            !mover,
            vec![x.square],
            format!(
                "A {} piece on {} was lifted and put back while {}'s clock was running (a hint: the sensors cannot tell whose hand).",
                colour(!mover).to_lowercase(),
                x.square,
                colour(mover)
            ),
        ))
    }
}

/// What a board that differs from its game's record reads like, against the record's position
/// (and the one before an uncompleted last move).
struct Displacement {
    /// Several pieces lifted at once that no move explains: knocked over, or the board lifted.
    /// Never touches.
    knocked: bool,
    /// A move being made, or an illegal move being put right.
    in_progress: bool,
    /// The first king of a result signal on the centre: no displaced piece yet, the other
    /// king may follow seconds later.
    half_kings: bool,
    /// One piece moved to another field where no move takes it (from, to).
    relocated: Option<(Square, Square)>,
    /// More pieces gone than hands hold, and nothing else changed: a jolt or a power glitch.
    jolted: bool,
}

impl Displacement {
    /// Reads `board` against `game`'s record; `illegal_open`: an illegal move is being put
    /// right.
    fn read(
        game: &GameRecord,
        board: &shakmaty::Board,
        ledger: &Ledger,
        illegal_open: bool,
    ) -> Self {
        let mut references = vec![game.position()];
        if game.uncompleted_last().is_some() {
            references.push(game.position_before_last());
        }
        let knocked = !illegal_open
            && references
                .iter()
                .all(|pos| knocked_off(pos, board, |a, b| ledger.lifted_together(a, b)));
        let in_progress = !knocked
            && (illegal_open || references.iter().any(|pos| is_move_in_progress(pos, board)));
        let half_kings = references
            .iter()
            .any(|pos| half_kings_signal(pos.board(), board));
        let relocated = references
            .iter()
            .find_map(|pos| single_relocation(pos.board(), board, pos.turn()))
            .filter(|_| !half_kings);
        let vanished = |pos: &&Chess| {
            let d = diff(pos.board(), board);
            d.iter()
                .all(|&sq| board.piece_at(sq).is_none())
                .then_some(d.len())
        };
        let jolted = references
            .iter()
            .all(|pos| vanished(pos).is_some_and(|n| n > MORE_THAN_HANDS_HOLD));
        Displacement {
            knocked,
            in_progress,
            half_kings,
            relocated,
            jolted,
        }
    }
}

impl BoardEngine {
    /// Emit an irregularity of the turn `ply`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn irregularity_at(
        &self,
        t: Micros,
        out: &mut Vec<CoreEvent>,
        ply: u32,
        code: IrregularityCode,
        player: Color,
        squares: Vec<Square>,
        detail: String,
    ) {
        self.emit(
            t,
            out,
            EventKind::Irregularity {
                ply,
                code,
                rule: code.rule(),
                player,
                squares,
                detail,
            },
        );
    }

    /// Raise displaced pieces on `squares` and keep following them until they are put right.
    pub(super) fn report_displaced(
        &mut self,
        t: Micros,
        out: &mut Vec<CoreEvent>,
        ply: u32,
        player: Color,
        squares: Vec<Square>,
        detail: String,
    ) {
        self.displaced = Some(Displaced {
            since: t,
            wait: 0,
            raised: Some(squares.clone()),
        });
        let code = IrregularityCode::DisplacedPieces;
        self.irregularity_at(t, out, ply, code, player, squares, detail);
    }

    /// Emit that an irregularity was put right.
    pub(super) fn emit_resolved(
        &self,
        t: Micros,
        out: &mut Vec<CoreEvent>,
        code: IrregularityCode,
        squares: Vec<Square>,
    ) {
        self.emit(t, out, EventKind::IrregularityResolved { code, squares });
    }

    /// Emit an irregularity of the turn being played.
    pub(super) fn irregularity(
        &self,
        t: Micros,
        out: &mut Vec<CoreEvent>,
        code: IrregularityCode,
        player: Color,
        squares: Vec<Square>,
        detail: String,
    ) {
        let ply = if code == IrregularityCode::BoardReversed {
            0
        } else {
            self.current_turn()
        };
        self.irregularity_at(t, out, ply, code, player, squares, detail);
    }

    /// A clock press, once the board had time to settle: it completes the presser's move, or it
    /// was a press without a move, a pawn left on the last rank, or an illegal move.
    pub(super) fn resolve_press(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some(press) = self.pending_press.take() else {
            return;
        };
        let Some(game) = self.active_game() else {
            return;
        };
        // A press after exactly one move puts clock and board in phase: the presser is that
        // move's player. After none (a press without a move) or two (a forgotten press) it
        // tells nothing about the sides.
        let in_phase = self.moves_since_press == 1;
        let uncompleted = game.uncompleted_last().is_some();
        let over = game.over();
        self.moves_since_press = 0;
        if uncompleted {
            self.press_completes(t, &press, in_phase, out);
        } else if over {
            // Played on or tidied up after a dead position: moves are recorded, presses and
            // pieces are not judged.
        } else if self.gap_open.is_some() {
            // The board is ahead of the record by moves the arbiter was told are missing: a
            // press is no move of the record's position (a piece of that position moved, the
            // rest "displaced"), only another chance for the gap to resolve.
            self.reconcile(t, Trigger::Press, out);
        } else {
            self.judge_press(t, &press, out);
        }
    }

    /// A press after a move not yet completed: it completes the move when it is the mover's
    /// (and, in phase, teaches which side of the clock is whose).
    fn press_completes(
        &mut self,
        t: Micros,
        press: &PendingPress,
        in_phase: bool,
        out: &mut Vec<CoreEvent>,
    ) {
        let Some(game) = self.active_game() else {
            return;
        };
        let mover = mover_of_ply(game.start(), game.ply());
        // A first guess at which side White is on (6.5); evidence and configuration win.
        if in_phase {
            self.clock.learn_press(press.side, mover);
            self.in_phase_from = Some(t);
        }
        if self.clock.color_of(press.side) == Some(mover) {
            let clock = self.clock.times_of(&press.reading);
            self.complete(t, CompletedBy::Clock, clock, out);
        }
    }

    /// A press with every move completed: what the board shows against the record's position
    /// says whether it is a press without a move (7.8.1), a pawn left unpromoted (7.5.2), a
    /// move with knocked pieces, pieces displaced, a gap, or an illegal move (7.5.1).
    fn judge_press(&mut self, t: Micros, press: &PendingPress, out: &mut Vec<CoreEvent>) {
        let Some(game) = self.active_game() else {
            return;
        };
        let pos = game.position().clone();
        let to_move = pos.turn();
        if self
            .clock
            .color_of(press.side)
            .is_some_and(|c| c != to_move)
        {
            return;
        }
        let board = self.sensed.board(self.orientation);
        let changed = diff(pos.board(), &board);
        let first = game.ply() == 0;
        if first && !changed.is_empty() && single_relocation(pos.board(), &board, to_move).is_none()
        {
            // Before the first move the position is still being set up.
            return;
        }
        let knocks = moves_with_knocks(&pos, &board);
        if changed.iter().all(|&sq| board.piece_at(sq).is_none()) {
            self.press_without_move(t, to_move, changed, out);
        } else if let Some(m) = unpromoted_pawn(&pos, &board) {
            self.press_with_unpromoted_pawn(t, press, m, to_move, out);
        } else if let [(m, extra)] = knocks.as_slice() {
            // A legal move with knocked pieces still off their squares: the move, and the
            // pieces displaced.
            let ply = self.current_turn();
            self.make(t, *m, out);
            self.moves_since_press = 0;
            self.in_phase_from = Some(t);
            let clock = self.clock.times_of(&press.reading);
            self.complete(t, CompletedBy::Clock, clock, out);
            self.raise_displaced_now(t, extra.clone(), Some(ply), out);
        } else if knocks.len() > 1 {
            // A knocked piece on a legal square and a legal move: which is which the sensors
            // cannot tell. No move is guessed and no illegal move judged: pieces displaced.
            self.raise_displaced_now(t, changed, None, out);
        } else {
            let presser_only = presser_only(pos.board(), &board, to_move);
            self.press_unexplained(t, press, to_move, changed, presser_only, out);
        }
    }

    /// The clock pressed with no piece placed: an illegal move (7.8.1).
    fn press_without_move(
        &mut self,
        t: Micros,
        to_move: Color,
        changed: Vec<Square>,
        out: &mut Vec<CoreEvent>,
    ) {
        let consequence = self.count_offence(to_move);
        self.irregularity(
            t,
            out,
            IrregularityCode::ClockPressedWithoutMove,
            to_move,
            changed,
            format!(
                "{} pressed the clock without making a move; that counts as an illegal move (7.8.1), and 7.5.3 gives: {consequence}.",
                colour(to_move)
            ),
        );
    }

    /// The clock pressed with a pawn on the last rank not replaced: the move stands as a
    /// queen's, and it is an illegal move (7.5.2).
    fn press_with_unpromoted_pawn(
        &mut self,
        t: Micros,
        press: &PendingPress,
        m: Move,
        to_move: Color,
        out: &mut Vec<CoreEvent>,
    ) {
        let square = m.to();
        self.make(t, m, out);
        self.moves_since_press = 0;
        self.in_phase_from = Some(t);
        let clock = self.clock.times_of(&press.reading);
        self.complete(t, CompletedBy::Clock, clock, out);
        let ply = self.active_game().map_or(0, |g| g.ply());
        let consequence = self.count_offence(to_move);
        self.irregularity_at(
            t,
            out,
            ply,
            IrregularityCode::PawnNotPromoted,
            to_move,
            vec![square],
            format!(
                "{} pressed the clock with a pawn on {square} not replaced; it counts as a queen and as an illegal move (7.5.2), and 7.5.3 gives: {consequence}.",
                colour(to_move)
            ),
        );
    }

    /// A press no single legal move explains: moves recovered across a gap (the press
    /// completes the last), or an illegal move when only the presser's pieces changed.
    fn press_unexplained(
        &mut self,
        t: Micros,
        press: &PendingPress,
        to_move: Color,
        changed: Vec<Square>,
        presser_only: bool,
        out: &mut Vec<CoreEvent>,
    ) {
        match self.reconcile(t, Trigger::Press, out) {
            Reconciled::Recovered => {
                let mover = self.active_game().map(|g| mover_of_ply(g.start(), g.ply()));
                if mover == Some(to_move) || mover == self.clock.color_of(press.side) {
                    let clock = self.clock.times_of(&press.reading);
                    self.complete(t, CompletedBy::Clock, clock, out);
                }
            }
            Reconciled::Raised => {}
            Reconciled::No if self.illegal_open.is_some() || self.gap_open.is_some() => {
                // Not judged again before the position is put right.
            }
            Reconciled::No if presser_only => {
                let clock = self.clock.times_of(&press.reading);
                self.illegal_move(t, to_move, changed, clock, out);
            }
            Reconciled::No => {
                // Both sides' pieces changed and no legal sequence explains it: no single
                // player's illegal move. Knocked pieces are reported as displaced once
                // they stood 1 s; a gap once the board stands still or is dumped.
            }
        }
    }

    /// Count one more illegal move of `offender` (7.5.1, 7.5.2, 7.8.1 all count) and say what
    /// 7.5.3 gives.
    fn count_offence(&mut self, offender: Color) -> String {
        let idx = offender.fold_wb(0, 1);
        self.illegal_moves[idx] += 1;
        let count = self.illegal_moves[idx];
        match (count, self.active_game()) {
            (1, _) => format!(
                "first illegal move by {}: a warning and two minutes added to {}'s clock",
                colour(offender),
                colour(!offender)
            ),
            (_, Some(g)) if g.position().has_insufficient_material(!offender) => format!(
                "illegal move number {count} by {}: the game is drawn, {} cannot checkmate",
                colour(offender),
                colour(!offender)
            ),
            _ => format!(
                "illegal move number {count} by {}: the game is lost by {}",
                colour(offender),
                colour(offender)
            ),
        }
    }

    fn illegal_move(
        &mut self,
        t: Micros,
        offender: Color,
        squares: Vec<Square>,
        _clock: Option<ClockTimes>,
        out: &mut Vec<CoreEvent>,
    ) {
        let consequence = self.count_offence(offender);
        let turn = self.current_turn();
        self.ledger.forget_turn(turn);
        // 7.5.1: "Articles 4.3 and 4.7 apply to the move replacing the illegal move": the
        // piece the illegal move moved counts as touched (and, for a capture, the piece it
        // took), so the replacing move must be made with it when it can move legally.
        if let Some(g) = self.active_game() {
            let board = self.sensed.board(self.orientation);
            let pos = g.position().board().clone();
            for sq in diff(&pos, &board) {
                if let Some(p) = pos.piece_at(sq) {
                    self.ledger.add_illegal(sq, p, t, turn);
                }
            }
        }
        self.illegal_open = Some(squares.clone());
        self.displaced = None;
        self.relocation = None;
        self.irregularity(
            t,
            out,
            IrregularityCode::IllegalMove,
            offender,
            squares,
            format!("An illegal move was completed by a clock press; 7.5.3 gives: {consequence}."),
        );
    }

    /// Touch-move and castling order of the completed move of `ply` (4.3, 4.4b, 6.2.5).
    pub(super) fn judge_turn(&mut self, t: Micros, ply: u32, out: &mut Vec<CoreEvent>) {
        let Some(game) = self.game() else {
            return;
        };
        let Some(record) = game.moves.get(ply as usize - 1) else {
            return;
        };
        let pos = game.position_after(ply - 1).clone();
        let (m, made_at) = (record.mv, record.made_at);
        let part_of_move = move_squares(&m);
        let touches: Vec<_> = self
            .ledger
            .of_turn(ply)
            .filter(|x| x.is_touch() && x.lifted_at < made_at && !part_of_move.contains(&x.square))
            .copied()
            .collect();
        let found = [
            self.castling_order(ply, m, pos.turn()),
            touched_own(&pos, &touches),
            touched_opponent(&pos, m, &touches),
        ];
        for (code, player, squares, detail) in found.into_iter().flatten() {
            self.irregularity_at(t, out, ply, code, player, squares, detail);
        }
    }

    /// Castling begun with the rook (4.4b): its first lift well before the king's.
    fn castling_order(&self, ply: u32, m: Move, mover: Color) -> Option<Finding> {
        let Move::Castle { king, rook } = m else {
            return None;
        };
        let k = self.ledger.first_lift(ply, king)?.lifted_at;
        let r = self.ledger.first_lift(ply, rook)?.lifted_at;
        (r + SAME_SCAN < k).then(|| {
            (
                IrregularityCode::CastlingRookTouchedFirst,
                mover,
                vec![rook, king],
                format!(
                    "{} touched the rook on {rook} before the king and then castled.",
                    colour(mover)
                ),
            )
        })
    }

    /// Whether the piece of `m` stood on its square long enough to count as released.
    fn released(&self, m: Move, made_at: Micros, ply: u32, mover: Color) -> bool {
        let to = m.to();
        let moved = shakmaty::Piece {
            color: mover,
            role: m.promotion().unwrap_or(m.role()),
        };
        self.ledger.since(ply).any(|x| {
            x.square == to
                && x.piece == moved
                && x.lifted_at >= made_at
                && x.lifted_at - made_at >= self.cfg.release_hold
        })
    }

    /// The made move is about to be revised into `new`: 4.4d or 4.6 when it was released.
    pub(super) fn judge_revision(&mut self, t: Micros, new: Move, out: &mut Vec<CoreEvent>) {
        let Some(game) = self.active_game() else {
            return;
        };
        let Some(last) = game.uncompleted_last() else {
            return;
        };
        let (old, made_at, ply) = (last.mv, last.made_at, game.ply());
        let mover = game.position_before_last().turn();
        let same_squares = old.from() == new.from() && old.to() == new.to();
        if same_squares && old.promotion().is_some() && new.promotion().is_some() {
            self.irregularity_at(
                t,
                out,
                ply,
                IrregularityCode::PromotionPieceChanged,
                mover,
                vec![new.to()],
                format!(
                    "{} replaced the promoted piece on {} after placing it.",
                    colour(mover),
                    new.to()
                ),
            );
            return;
        }
        if let Move::Castle { king, rook } = new
            && (old.from() == Some(king) || old.from() == Some(rook))
        {
            return;
        }
        if let Some((first, p, since)) = self.changed
            && p == ply
        {
            if first == new {
                // Back on the square it was released on: the piece was displaced (knocked to
                // a square that happened to be a legal move), the move did not change.
                self.changed = None;
                if t - since >= self.cfg.displaced_after {
                    let detail = format!(
                        "The piece released on {} stood on {} for {:.1} s before it was put back.",
                        new.to(),
                        old.to(),
                        (t - since) as f64 / 1e6
                    );
                    let (code, squares) = (IrregularityCode::DisplacedPieces, vec![old.to()]);
                    self.irregularity_at(t, out, ply, code, mover, squares.clone(), detail);
                    self.emit_resolved(t, out, code, squares);
                }
            }
            return;
        }
        if self.illegal_open.is_none() && self.released(old, made_at, ply, mover) {
            self.changed = Some((old, ply, t));
        }
    }

    /// The move of `ply` is completed as `last`: 4.6 if a released move was changed into it.
    pub(super) fn judge_changed(
        &mut self,
        t: Micros,
        ply: u32,
        last: Move,
        out: &mut Vec<CoreEvent>,
    ) {
        let Some((old, p, _)) = self.changed.take() else {
            return;
        };
        if p != ply || old == last {
            return;
        }
        let mover = self
            .game()
            .map_or(Color::White, |g| g.position_after(ply - 1).turn());
        self.irregularity_at(
            t,
            out,
            ply,
            IrregularityCode::MoveChangedAfterRelease,
            mover,
            vec![old.to(), last.to()],
            format!(
                "{} released a piece on {} as a legal move, then moved it on.",
                colour(mover),
                old.to()
            ),
        );
    }

    /// The made move is being taken back to the position before it.
    pub(super) fn note_taken_back(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some(game) = self.active_game() else {
            return;
        };
        let Some(last) = game.uncompleted_last() else {
            return;
        };
        let mover = game.position_before_last().turn();
        let (mv, ply, made_at) = (last.mv, game.ply(), last.made_at);
        // No hand lifts a piece that soon after the other player's hand let go of theirs: the
        // piece was knocked there by that hand, the "move" no move of its player. (A scanning
        // board may report the lift in the same scan as that placement, even before it: then
        // the lift counts in the other player's turn.)
        let lifted = mv.from().and_then(|from| {
            self.ledger
                .since(ply.saturating_sub(1))
                .filter(|x| x.square == from && x.lifted_at <= made_at)
                .map(|x| x.lifted_at)
                .last()
        });
        if let (Some(lifted), Some(from)) = (lifted, mv.from())
            && ply >= 2
            && self.ledger.placed_near(!mover, lifted, KNOCK_REACTION)
        {
            let squares = vec![from, mv.to()];
            self.ledger.mark_knocked(ply - 1, &squares);
            self.ledger.mark_knocked(ply, &squares);
            if t - made_at >= self.cfg.displaced_after {
                let detail = format!(
                    "A piece was knocked from {from} to {} as {} let go of the move, and put back.",
                    mv.to(),
                    colour(!mover)
                );
                let code = IrregularityCode::DisplacedPieces;
                self.irregularity_at(t, out, ply - 1, code, !mover, squares.clone(), detail);
                self.emit_resolved(t, out, code, squares);
            }
            return;
        }
        if self.released(mv, made_at, ply, mover) {
            self.taken_back = Some((mv, ply));
        } else if let Some(from) = mv.from() {
            // Carried to a square and back without being released: a touch (4.3a).
            self.ledger.mark_carried(ply, from);
        }
    }

    /// A move is made after a released move was taken back in the same turn.
    pub(super) fn judge_taken_back(&mut self, t: Micros, m: Move, out: &mut Vec<CoreEvent>) {
        let Some((old, ply)) = self.taken_back.take() else {
            return;
        };
        let next_ply = self.active_game().map_or(0, |g| g.ply() + 1);
        if ply == next_ply && old != m {
            let mover = self
                .active_game()
                .map_or(Color::White, |g| g.position().turn());
            self.irregularity_at(
                t,
                out,
                ply,
                IrregularityCode::MoveChangedAfterRelease,
                mover,
                vec![old.to(), m.to()],
                format!(
                    "{} released a piece on {} as a legal move, took it back and played another move.",
                    colour(mover),
                    old.to()
                ),
            );
        }
    }

    /// The board differs from the position and no move matched: pieces displaced, unless a
    /// legal move is in progress or a move-shaped (possibly illegal) change awaits the clock.
    pub(super) fn track_displaced(
        &mut self,
        t: Micros,
        board: &shakmaty::Board,
        out: &mut Vec<CoreEvent>,
    ) {
        self.displaced_resolved(t, board, out);
        let Some(game) = self.active_game() else {
            return;
        };
        if self.gap_open.is_some() || game.over() {
            // The record is behind the board and the arbiter was told already; or the game is
            // over and the board is being tidied up.
            self.displaced = None;
            self.relocation = None;
            return;
        }
        let reading = Displacement::read(game, board, &self.ledger, self.illegal_open.is_some());
        let wait = self.displaced_wait(&reading);
        let Displacement {
            knocked,
            in_progress,
            relocated,
            ..
        } = reading;
        if in_progress {
            if self.displaced.as_ref().is_some_and(|d| d.raised.is_none()) {
                self.displaced = None;
            }
            self.close_relocation(t, out);
        } else if let Some((from, to)) = relocated.filter(|_| !knocked) {
            if self.displaced.as_ref().is_some_and(|d| d.raised.is_none()) {
                self.displaced = None;
            }
            if self.relocation.is_none() {
                let ply = self.current_turn();
                self.relocation = Some((t, ply, vec![from, to]));
            }
        } else {
            self.close_relocation(t, out);
            self.ledger.mark_open_knocked();
            match self.displaced.as_mut() {
                None => {
                    self.displaced = Some(Displaced {
                        since: t,
                        wait,
                        raised: None,
                    })
                }
                // A board that read like a jolt (or half a kings signal) keeps the longer wait
                // while it comes back piece by piece.
                Some(d) if d.raised.is_none() => d.wait = d.wait.max(wait),
                Some(_) => {}
            }
        }
    }

    /// How long a board reading like `reading` may stay so before its pieces are reported
    /// displaced.
    fn displaced_wait(&self, reading: &Displacement) -> Micros {
        let wait = if reading.half_kings {
            KINGS_SIGNAL_WAIT
        } else if reading.jolted {
            JOLT_WAIT
        } else if reading.knocked {
            // A knocked group or a lifted board is no hand at work: reported once it outlasts
            // sensor noise.
            NOISE
        } else {
            self.cfg.displaced_after
        };
        // A polled board's changes of one answer arrive together: pieces lifted in one answer
        // were not seen going in one scan, so no shorter wait than the displaced window.
        if self.polled {
            wait.max(self.cfg.displaced_after)
        } else {
            wait
        }
    }

    /// The displaced state lasted long enough: raise it (unless the board turns out to be
    /// moves ahead of the record).
    pub(super) fn raise_displaced(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        if self.reconcile(t, Trigger::Stable, out) != Reconciled::No {
            self.displaced = None;
            return;
        }
        let Some(game) = self.active_game() else {
            self.displaced = None;
            return;
        };
        let board = self.sensed.board(self.orientation);
        let squares = diff(game.position().board(), &board);
        self.raise_displaced_now(t, squares, None, out);
    }

    /// Report `squares` as displaced now; resolved when they show the game position again.
    pub(super) fn raise_displaced_now(
        &mut self,
        t: Micros,
        squares: Vec<shakmaty::Square>,
        turn: Option<u32>,
        out: &mut Vec<CoreEvent>,
    ) {
        if self.active_game().is_none() {
            self.displaced = None;
            return;
        }
        if let Some(d) = self.displaced.as_mut()
            && d.raised.is_some()
        {
            // Already reported (before the press): keep following the squares still wrong.
            d.raised = Some(squares);
            return;
        }
        let Some(game) = self.active_game() else {
            return;
        };
        let ply = turn.unwrap_or_else(|| self.current_turn());
        let player = mover_of_ply(game.start(), ply.max(1));
        let detail = format!(
            "Pieces are off their squares outside any legal move: {}.",
            names(&squares).join(", ")
        );
        self.report_displaced(t, out, ply, player, squares, detail);
    }

    /// A raised displacement whose squares all show the game position again is resolved.
    pub(super) fn displaced_resolved(
        &mut self,
        t: Micros,
        board: &shakmaty::Board,
        out: &mut Vec<CoreEvent>,
    ) {
        let Some(squares) = self.displaced.as_ref().and_then(|d| d.raised.as_ref()) else {
            return;
        };
        let Some(game) = self.active_game() else {
            return;
        };
        let pos = game.position().board();
        if squares
            .iter()
            .all(|&sq| pos.piece_at(sq) == board.piece_at(sq))
        {
            self.clear_displaced(t, out);
        }
    }

    pub(super) fn clear_displaced(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        if let Some(Displaced {
            raised: Some(squares),
            ..
        }) = self.displaced.take()
        {
            self.emit_resolved(t, out, IrregularityCode::DisplacedPieces, squares.clone());
        }
    }

    /// A single piece stood off its square, outside any legal move, and was then put right
    /// without a clock press: a displaced piece when it stood long enough.
    pub(super) fn close_relocation(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        let Some((since, ply, squares)) = self.relocation.take() else {
            return;
        };
        if t - since < self.cfg.displaced_after {
            return;
        }
        let player = self
            .game()
            .map_or(Color::White, |g| mover_of_ply(g.start(), ply.max(1)));
        let detail = format!(
            "A piece stood on {} outside any legal move for {:.1} s before it was put right.",
            squares.last().map_or(String::new(), |s| s.to_string()),
            (t - since) as f64 / 1e6
        );
        let code = IrregularityCode::DisplacedPieces;
        self.irregularity_at(t, out, ply, code, player, squares.clone(), detail);
        self.emit_resolved(t, out, code, squares);
    }

    /// The board shows the game position again.
    pub(super) fn board_restored(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        self.clear_displaced(t, out);
        self.close_relocation(t, out);
        if let Some(squares) = self.gap_open.take() {
            self.emit_resolved(t, out, IrregularityCode::MovesMissing, squares);
        }
        if let Some(squares) = self.illegal_open.take() {
            self.emit_resolved(t, out, IrregularityCode::IllegalMove, squares);
        }
    }

    /// Result signals on the board: a special piece (13–15) or both kings on the centre.
    /// Returns whether the game ended.
    pub(super) fn result_signal(
        &mut self,
        t: Micros,
        board: &shakmaty::Board,
        out: &mut Vec<CoreEvent>,
    ) -> bool {
        let special = self
            .sensed
            .specials(self.orientation)
            .first()
            .map(|(_, s)| match s {
                SpecialPiece::Draw => DRAW,
                SpecialPiece::WhiteWins => WHITE_WINS,
                SpecialPiece::BlackWins => BLACK_WINS,
            });
        let Some(result) = special.or_else(|| kings_signal(board)) else {
            return false;
        };
        // The first king carried to the centre may have looked like a legal king move.
        let king_move = self
            .active_game()
            .and_then(|g| g.uncompleted_last())
            .is_some_and(|m| {
                m.mv.role() == Role::King
                    && board
                        .king_of(Color::White)
                        .into_iter()
                        .chain(board.king_of(Color::Black))
                        .any(|k| k == m.mv.to())
            });
        if special.is_none() && king_move {
            self.retract(t, out);
        }
        self.end_game(t, result, EndReason::KingsSignal, out);
        true
    }
}
