//! Arbiter corrections: take a game back, replace a move, set a position, change or reopen a
//! result. Each is checked first ([`BoardEngine::check_operator`]): a refused correction changes
//! nothing. An accepted one emits the standard events it implies (`move_retracted`,
//! `move_made`, `move_completed`, `game_started`, `game_ended`) and then a `correction` event.
//!
//! The board usually still shows the position before the correction. Until it shows the
//! corrected position, the engine infers no move and judges no clock press: the differing
//! squares are reported as `displaced_pieces` (resolved when the board matches) and the players
//! or the arbiter set the pieces right.

use shakmaty::{
    CastlingMode, Chess, Color, Move, Outcome, Position, fen::Fen, san::San, uci::UciMove,
};

use super::super::correction::CorrectionError;
use super::super::event::{CoreEvent, EndReason, EventKind};
use super::super::game::{GameRecord, MoveRecord, fen_of};
use super::super::irregular::diff;
use super::super::observation::{Micros, OperatorAction};
use super::super::start::StartPosition;
use super::super::vocab::IrregularityCode;
use super::BoardEngine;

/// A checked correction, ready to apply.
#[derive(Debug)]
pub(super) enum Plan {
    /// An action carried out by [`BoardEngine::on_operator`] as before.
    Plain,
    /// Go back to `ply`.
    TakeBack(u32),
    /// Replace the moves from `ply` on by `moves`.
    Replace(u32, Vec<Move>),
    /// Go on from a position.
    Position(Box<StartPosition>),
    /// Change an ended game's result (`None`: reopen it).
    Result(Option<Outcome>),
    /// Set the result of a running game (the existing `set_result`).
    EndNow(Outcome),
    /// A new game from a FEN.
    NewGameAt(Box<StartPosition>),
}

/// Whether a game end comes from the position itself (and is recomputed after a correction).
fn positional(reason: EndReason) -> bool {
    matches!(
        reason,
        EndReason::Checkmate
            | EndReason::Stalemate
            | EndReason::InsufficientMaterial
            | EndReason::Fivefold
            | EndReason::SeventyFiveMoves
    )
}

/// Parse a FEN into a position: standard castling when its rights allow, else Chess960
/// (Shredder-FEN or X-FEN rights).
pub(super) fn parse_fen(text: &str) -> Result<(Chess, CastlingMode), CorrectionError> {
    let bad = |reason: String| CorrectionError::BadFen {
        fen: text.to_string(),
        reason,
    };
    let fen: Fen = text.trim().parse().map_err(|e| bad(format!("{e}")))?;
    match fen.clone().into_position::<Chess>(CastlingMode::Standard) {
        Ok(p) => Ok((p, CastlingMode::Standard)),
        Err(_) => fen
            .into_position::<Chess>(CastlingMode::Chess960)
            .map(|p| (p, CastlingMode::Chess960))
            .map_err(|e| bad(format!("{e}"))),
    }
}

/// The move `text` (UCI or SAN) in `pos`.
fn parse_move(pos: &Chess, text: &str, uci: bool) -> Option<Move> {
    let text = text.trim();
    if uci {
        UciMove::from_ascii(text.as_bytes()).ok()?.to_move(pos).ok()
    } else {
        let text = text.trim_end_matches(['+', '#', '!', '?']);
        San::from_ascii(text.as_bytes()).ok()?.to_move(pos).ok()
    }
}

fn result_str(r: &str) -> Option<Outcome> {
    r.parse::<shakmaty::KnownOutcome>().ok().map(Outcome::Known)
}

/// A new game from a FEN (read with Chess960 castling, as before).
fn plan_new_game(f: &str) -> Result<Plan, CorrectionError> {
    let bad = |reason: String| CorrectionError::BadFen {
        fen: f.to_string(),
        reason,
    };
    let fen: Fen = f.trim().parse().map_err(|e| bad(format!("{e}")))?;
    let position: Chess = fen
        .into_position(CastlingMode::Chess960)
        .map_err(|e| bad(format!("{e}")))?;
    Ok(Plan::NewGameAt(Box::new(StartPosition {
        position,
        mode: CastlingMode::Chess960,
        chess960: None,
    })))
}

/// The arbiter's result of `game`: `*` takes a result back (not one the board's position
/// gives), any other ends a running game or replaces the result of an ended one.
fn plan_result(game: &GameRecord, result: &str) -> Result<Plan, CorrectionError> {
    if result == "*" {
        if let Some((_, reason)) = game.ending() {
            return Err(CorrectionError::EndedOnBoard(reason_name(reason)));
        }
        return Ok(Plan::Result(None));
    }
    let r = result_str(result).ok_or_else(|| CorrectionError::BadResult(result.to_string()))?;
    if game.result.is_none() {
        Ok(Plan::EndNow(r))
    } else {
        Ok(Plan::Result(Some(r)))
    }
}

/// How the arbiter wrote a move.
enum Notation<'a> {
    /// In UCI (`e2e4`).
    Uci(&'a str),
    /// In SAN (`e4`).
    San(&'a str),
}

/// The move of `ply` replaced by `text`: every later move must still be legal after it.
fn plan_replace(game: &GameRecord, ply: u32, text: Notation) -> Result<Plan, CorrectionError> {
    if ply == 0 || ply > game.ply() {
        return Err(CorrectionError::PlyOutOfRange {
            ply,
            min: 1,
            max: game.ply(),
        });
    }
    let (text, is_uci) = match text {
        Notation::Uci(u) => (u, true),
        Notation::San(s) => (s, false),
    };
    let mut pos = game.position_after(ply - 1).clone();
    let first = parse_move(&pos, text, is_uci).ok_or_else(|| CorrectionError::IllegalMove {
        mv: text.to_string(),
        ply,
        fen: fen_of(&pos),
    })?;
    pos.play_unchecked(first);
    let mut moves = vec![first];
    for (i, rec) in game.moves.iter().enumerate().skip(ply as usize) {
        let later = i as u32 + 1;
        let m =
            parse_move(&pos, &rec.uci, true).ok_or_else(|| CorrectionError::LaterMoveIllegal {
                ply: later,
                san: rec.san.clone(),
                keep: later - 1,
            })?;
        pos.play_unchecked(m);
        moves.push(m);
    }
    Ok(Plan::Replace(ply, moves))
}

/// The board's position set by hand: not one where the game is over.
fn plan_position(fen: &str) -> Result<Plan, CorrectionError> {
    let (position, mode) = parse_fen(fen)?;
    let probe = GameRecord::new(0, position.clone(), mode, None, 0);
    if let Some((_, reason)) = probe.ending() {
        return Err(CorrectionError::PositionOver {
            fen: fen_of(&position),
            why: reason_name(reason),
        });
    }
    Ok(Plan::Position(Box::new(StartPosition {
        position,
        mode,
        chess960: None,
    })))
}

impl BoardEngine {
    /// Whether `action` can be carried out now; the reason when not. Nothing changes.
    pub fn check_operator(&self, action: &OperatorAction) -> Result<(), CorrectionError> {
        self.plan(action).map(|_| ())
    }

    /// Check `action` and work out what it does.
    pub(super) fn plan(&self, action: &OperatorAction) -> Result<Plan, CorrectionError> {
        let game = || self.games.last().ok_or(CorrectionError::NoGame);
        match action {
            OperatorAction::SetClockSide { .. } => Ok(Plan::Plain),
            OperatorAction::NewGame { fen: None } => Ok(Plan::Plain),
            OperatorAction::NewGame { fen: Some(f) } => plan_new_game(f),
            OperatorAction::SetResult { result } => plan_result(game()?, result),
            OperatorAction::TakeBack { ply } => {
                let game = game()?;
                if *ply > game.ply() {
                    return Err(CorrectionError::PlyOutOfRange {
                        ply: *ply,
                        min: 0,
                        max: game.ply(),
                    });
                }
                Ok(Plan::TakeBack(*ply))
            }
            OperatorAction::ReplaceMove { ply, uci, san } => {
                let text = match (uci, san) {
                    (Some(u), None) => Notation::Uci(u),
                    (None, Some(s)) => Notation::San(s),
                    _ => return Err(CorrectionError::MoveNotation),
                };
                plan_replace(game()?, *ply, text)
            }
            OperatorAction::SetPosition { fen } => plan_position(fen),
        }
    }

    /// Carry out a checked correction.
    pub(super) fn apply_plan(
        &mut self,
        t: Micros,
        action: &OperatorAction,
        plan: Plan,
        out: &mut Vec<CoreEvent>,
    ) {
        match plan {
            Plan::Plain => {}
            Plan::NewGameAt(s) => self.start_game(t, *s, self.orientation, out),
            Plan::EndNow(r) => self.end_game(t, r, EndReason::Arbiter, out),
            Plan::Result(r) => {
                if let Some(g) = self.games.last_mut() {
                    g.result = r.map(|r| (r, EndReason::Arbiter));
                }
                if let Some(r) = r {
                    self.pending_end = None;
                    self.pending_press = None;
                    self.emit(
                        t,
                        out,
                        EventKind::GameEnded {
                            result: r,
                            reason: EndReason::Arbiter,
                        },
                    );
                }
                self.announce(t, action, Vec::new(), out);
            }
            Plan::TakeBack(ply) => {
                self.reset_transient(t, out);
                self.unwind(t, ply, out);
                if let Some(g) = self.games.last_mut() {
                    g.result = None;
                }
                self.settle_corrected(t, action, out);
            }
            Plan::Replace(ply, moves) => {
                self.reset_transient(t, out);
                let old = self.unwind(t, ply - 1, out);
                if let Some(g) = self.games.last_mut()
                    && g.result.is_some_and(|(_, reason)| positional(reason))
                {
                    g.result = None;
                }
                for (m, rec) in moves.into_iter().zip(old) {
                    self.replay_move(t, m, &rec, out);
                }
                self.settle_corrected(t, action, out);
            }
            Plan::Position(s) => {
                self.reset_transient(t, out);
                let started = self.games.last().map(|g| g.started_at);
                if self.games.last().is_some() {
                    self.games.pop();
                }
                self.start_game(t, *s, self.orientation, out);
                if let (Some(g), Some(at)) = (self.games.last_mut(), started) {
                    g.started_at = at;
                }
                self.settle_corrected(t, action, out);
            }
        }
    }

    /// Forget decisions in progress about the old position; irregularities still open about it
    /// are put right by the correction.
    fn reset_transient(&mut self, t: Micros, out: &mut Vec<CoreEvent>) {
        self.pending_press = None;
        self.pending_end = None;
        self.clear_displaced(t, out);
        self.displaced = None;
        self.relocation = None;
        self.taken_back = None;
        self.changed = None;
        self.recovering = false;
        if let Some(squares) = self.gap_open.take() {
            self.emit_resolved(t, out, IrregularityCode::MovesMissing, squares);
        }
        if let Some(squares) = self.illegal_open.take() {
            self.emit_resolved(t, out, IrregularityCode::IllegalMove, squares);
        }
        self.correcting = None;
        self.moves_since_press = 0;
        self.in_phase_from = None;
        self.ledger.clear();
        self.version += 1;
    }

    /// Pop moves down to `ply`, emitting `move_retracted` for each; the popped records, oldest
    /// first.
    fn unwind(&mut self, t: Micros, ply: u32, out: &mut Vec<CoreEvent>) -> Vec<MoveRecord> {
        let mut old = Vec::new();
        while self.games.last().is_some_and(|g| g.ply() > ply) {
            let Some(g) = self.games.last_mut() else {
                break;
            };
            let at = g.ply();
            if let Some(rec) = g.pop() {
                old.push(rec);
            }
            self.emit(t, out, EventKind::MoveRetracted { ply: at });
        }
        self.version += 1;
        old.reverse();
        old
    }

    /// Record `m` in place of `old`, keeping how and when `old` was made and completed.
    fn replay_move(&mut self, t: Micros, m: Move, old: &MoveRecord, out: &mut Vec<CoreEvent>) {
        let Some(g) = self.games.last_mut() else {
            return;
        };
        g.push(m, old.made_at);
        let ply = g.ply();
        let Some(rec) = g.moves.last_mut() else {
            return;
        };
        rec.completed = old.completed;
        rec.clock = old.clock;
        rec.recovered = old.recovered;
        let rec = rec.clone();
        let made = g.move_made(ply as usize - 1).expect("just pushed");
        self.emit(t, out, made);
        if let Some(by) = rec.completed {
            self.emit(
                t,
                out,
                EventKind::MoveCompleted {
                    ply,
                    san: rec.san,
                    by,
                    clock: rec.clock,
                    recovered: rec.recovered,
                },
            );
        }
    }

    /// After a correction that changed the position: end the game if the position ends it,
    /// announce the correction, and wait for the board to show the corrected position.
    fn settle_corrected(&mut self, t: Micros, action: &OperatorAction, out: &mut Vec<CoreEvent>) {
        self.version += 1;
        if let Some(g) = self.games.last_mut()
            && g.result.is_none()
            && let Some((result, reason)) = g.ending()
        {
            g.result = Some((result, reason));
            self.emit(t, out, EventKind::GameEnded { result, reason });
        }
        let board = self.sensed.board(self.orientation);
        let squares = match self.active_game() {
            Some(g) if board != *g.position().board() => diff(g.position().board(), &board),
            _ => Vec::new(),
        };
        let names: Vec<String> = squares.iter().map(|s| s.to_string()).collect();
        self.announce(t, action, squares.clone(), out);
        if squares.is_empty() {
            return;
        }
        let Some(g) = self.active_game() else {
            return;
        };
        let player: Color = g.position().turn();
        let ply = g.ply();
        self.correcting = Some(squares.clone());
        let detail = format!(
            "After the arbiter's correction the board must be set to the corrected position: {}.",
            names.join(", ")
        );
        self.report_displaced(t, out, ply, player, squares, detail);
    }

    /// The `correction` event: the action and the state it left.
    fn announce(
        &self,
        t: Micros,
        action: &OperatorAction,
        squares: Vec<shakmaty::Square>,
        out: &mut Vec<CoreEvent>,
    ) {
        let Some(g) = self.games.last() else {
            return;
        };
        self.emit(
            t,
            out,
            EventKind::Correction {
                op: action.clone(),
                ply: g.ply(),
                fen: fen_of(g.position()),
                result: g.result.map_or(Outcome::Unknown, |(r, _)| r),
                squares,
            },
        );
    }

    /// While the board is being set to a corrected position: nothing is inferred until it
    /// shows it (or a start position, for a new game). Returns whether the board was handled.
    pub(super) fn await_corrected(&mut self, t: Micros, out: &mut Vec<CoreEvent>) -> bool {
        if self.correcting.is_none() {
            return false;
        }
        let Some(game) = self.active_game() else {
            self.correcting = None;
            return false;
        };
        let board = self.sensed.board(self.orientation);
        if board == *game.position().board() {
            self.correcting = None;
            self.board_restored(t, out);
            return true;
        }
        let full_start = self.sensed.occupied() == 32
            && [
                super::super::sensed::Orientation::Normal,
                super::super::sensed::Orientation::Reversed,
            ]
            .iter()
            .any(|&o| super::super::start::recognise(&self.sensed.board(o)).is_some());
        if full_start {
            // A new game set up instead: the correction is left behind.
            self.correcting = None;
            self.clear_displaced(t, out);
            return self.try_start(t, out);
        }
        true
    }
}

/// The name of an end reason (`docs/events.md` §5).
fn reason_name(reason: EndReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{reason:?}"))
}
