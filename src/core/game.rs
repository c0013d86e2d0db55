//! The record of one game: start position, moves made and completed, clock times, result, and
//! the rules that end a game or allow a claim.

use shakmaty::{
    CastlingMode, Chess, Color, EnPassantMode, Move, Outcome, Position, fen::Fen, san::SanPlus,
    uci::UciMove, zobrist::Zobrist64,
};

use super::event::{ClockTimes, CompletedBy, EndReason, EventKind};
use super::observation::Micros;
use super::vocab::{DRAW, win_for};

/// One move of the game.
#[derive(Debug, Clone, PartialEq)]
pub struct MoveRecord {
    /// The move.
    pub mv: Move,
    /// SAN with check/mate suffix.
    pub san: String,
    /// UCI in the game's castling mode.
    pub uci: String,
    /// FEN after the move.
    pub fen: String,
    /// When it was made.
    pub made_at: Micros,
    /// How it was completed; `None` while only made.
    pub completed: Option<CompletedBy>,
    /// Both clocks after the move, when a clock was read.
    pub clock: Option<ClockTimes>,
    /// Recovered from a board that jumped ahead of the record (not seen being made).
    pub recovered: bool,
}

impl MoveRecord {
    /// The mover's remaining time after the move (for `[%clk]`), when known.
    pub fn mover_clock(&self, mover: Color) -> Option<u32> {
        self.clock.map(|c| mover.fold_wb(c.white, c.black))
    }
}

/// One game on one board.
#[derive(Debug, Clone)]
pub struct GameRecord {
    /// Game number on the board, from 1.
    pub number: u32,
    /// Castling mode (Chess960 for 960 starts and set-ups).
    pub mode: CastlingMode,
    /// Chess960 start number when it is one.
    pub chess960: Option<u16>,
    /// Whether the board was turned round for this game.
    pub reversed: bool,
    /// When the game started.
    pub started_at: Micros,
    /// The moves, made and completed.
    pub moves: Vec<MoveRecord>,
    /// The result and why, once ended.
    pub result: Option<(Outcome, EndReason)>,
    positions: Vec<Chess>,
    hashes: Vec<u64>,
}

/// Why a position ends the game, with the result.
pub type Ending = (Outcome, EndReason);

impl GameRecord {
    /// A new game from a start position.
    pub fn new(
        number: u32,
        start: Chess,
        mode: CastlingMode,
        chess960: Option<u16>,
        started_at: Micros,
    ) -> Self {
        let hash = position_key(&start);
        GameRecord {
            number,
            mode,
            chess960,
            reversed: false,
            started_at,
            moves: Vec::new(),
            result: None,
            positions: vec![start],
            hashes: vec![hash],
        }
    }

    /// The start position.
    pub fn start(&self) -> &Chess {
        &self.positions[0]
    }

    /// FEN of the start position.
    pub fn start_fen(&self) -> String {
        fen_of(self.start())
    }

    /// The position after every made move.
    pub fn position(&self) -> &Chess {
        self.positions.last().unwrap_or(&self.positions[0])
    }

    /// The position after `n` made moves (0 = the start position).
    pub fn position_after(&self, n: u32) -> &Chess {
        &self.positions[(n as usize).min(self.positions.len() - 1)]
    }

    /// The position before the last made move (the start position when there is none).
    pub fn position_before_last(&self) -> &Chess {
        let n = self.positions.len();
        &self.positions[n.saturating_sub(2)]
    }

    /// The last made move, if it is not completed yet.
    pub fn uncompleted_last(&self) -> Option<&MoveRecord> {
        self.moves.last().filter(|m| m.completed.is_none())
    }

    /// Number of made moves (plies).
    pub fn ply(&self) -> u32 {
        self.moves.len() as u32
    }

    /// Whether the game has ended.
    pub fn ended(&self) -> bool {
        self.result.is_some()
    }

    /// Whether the game ended for good: any result but a draw by fivefold repetition or 75
    /// moves, after which play that goes on is still judged (the arbiter decides). After a dead
    /// position the board is only tidied up.
    pub fn over(&self) -> bool {
        self.result.is_some_and(|(_, reason)| {
            !matches!(reason, EndReason::Fivefold | EndReason::SeventyFiveMoves)
        })
    }

    /// Whether moves are still recorded: while the game runs, and after a draw that the rules
    /// declare on their own (fivefold, 75 moves, dead position) when the players play on — the
    /// daemon records the game exactly as played and leaves the rest to the arbiter.
    pub fn accepts_moves(&self) -> bool {
        match self.result {
            None => true,
            Some((_, reason)) => matches!(
                reason,
                EndReason::Fivefold | EndReason::SeventyFiveMoves | EndReason::InsufficientMaterial
            ),
        }
    }

    /// Whether this game was set up from a non-standard position.
    pub fn is_setup(&self) -> bool {
        self.chess960 != Some(super::start::STANDARD_960_NUMBER)
    }

    /// Make a legal move; returns the new record.
    pub fn push(&mut self, mv: Move, t: Micros) -> &MoveRecord {
        let mut pos = self.position().clone();
        let uci = UciMove::from_move(mv, self.mode).to_string();
        let san = SanPlus::from_move_and_play_unchecked(&mut pos, mv).to_string();
        let fen = fen_of(&pos);
        self.hashes.push(position_key(&pos));
        self.positions.push(pos);
        self.moves.push(MoveRecord {
            mv,
            san,
            uci,
            fen,
            made_at: t,
            completed: None,
            clock: None,
            recovered: false,
        });
        self.moves.last().expect("just pushed")
    }

    /// The `move_made` of the move at `index` (ply `index + 1`), as the record has it now
    /// (`None`: no such move): the one way a record's move becomes an event.
    pub fn move_made(&self, index: usize) -> Option<EventKind> {
        let m = self.moves.get(index)?;
        Some(EventKind::MoveMade {
            ply: index as u32 + 1,
            san: m.san.clone(),
            uci: UciMove::from_move(m.mv, self.mode),
            fen: m.fen.clone(),
            recovered: m.recovered,
        })
    }

    /// Take back the last made move.
    pub fn pop(&mut self) -> Option<MoveRecord> {
        if self.moves.is_empty() {
            return None;
        }
        self.positions.pop();
        self.hashes.pop();
        self.moves.pop()
    }

    /// The [`position_key`] of the start position and of the position after every made move.
    pub fn position_keys(&self) -> &[u64] {
        &self.hashes
    }

    /// How often the current position has occurred (same placement, turn, rights, e.p.).
    pub fn repetitions(&self) -> usize {
        let Some(&last) = self.hashes.last() else {
            return 0;
        };
        // Only positions since the last irreversible move can repeat; halfmoves bounds that.
        let window = self.position().halfmoves() as usize + 1;
        self.hashes
            .iter()
            .rev()
            .take(window)
            .filter(|&&h| h == last)
            .count()
    }

    /// Whether the current position ends the game by rule, and how.
    pub fn ending(&self) -> Option<Ending> {
        let pos = self.position();
        if pos.is_checkmate() {
            return Some((win_for(!pos.turn()), EndReason::Checkmate));
        }
        if pos.is_stalemate() {
            return Some((DRAW, EndReason::Stalemate));
        }
        if pos.is_insufficient_material() {
            return Some((DRAW, EndReason::InsufficientMaterial));
        }
        if self.repetitions() >= 5 {
            return Some((DRAW, EndReason::Fivefold));
        }
        if pos.halfmoves() >= 150 {
            return Some((DRAW, EndReason::SeventyFiveMoves));
        }
        None
    }

    /// The result of a flag fall of `loser` under 6.9.
    pub fn flag_result(&self, loser: Color) -> Outcome {
        if self.position().has_insufficient_material(!loser) {
            DRAW
        } else {
            win_for(!loser)
        }
    }
}

/// FEN of a position (legal en passant squares only).
pub fn fen_of(pos: &Chess) -> String {
    Fen::from_position(pos, EnPassantMode::Legal).to_string()
}

/// The key under which positions are the same for FIDE 9.2.2: the same side to move, the same
/// pieces on the same squares, the same castling rights and the same en passant capture
/// possible (a legal one only). The one position-equality test of eboardd: repetitions
/// ([`GameRecord::repetitions`]) and the claims helper ([`super::claims`]) both use it.
pub fn position_key(pos: &Chess) -> u64 {
    let z: Zobrist64 = pos.zobrist_hash(EnPassantMode::Legal);
    z.0
}

/// The side that made the move at `ply` (1 = White's first move) in a game from `start`.
pub fn mover_of_ply(start: &Chess, ply: u32) -> Color {
    if (ply % 2 == 1) == (start.turn() == Color::White) {
        Color::White
    } else {
        Color::Black
    }
}
