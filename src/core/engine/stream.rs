//! Moves recovered from the order of a polled board's changes. A chain's board hands over its
//! field changes a packet at a time, in the order it logged them; a packet that a bad line kept
//! back for seconds brings several plies at once, and the board's log rewrote a square changed
//! twice in a row as one change (a pawn put on d4 and taken there at once is never seen on d4).
//! The live engine then loses the thread, and the gap search, which sees only where the board
//! ends up, cannot tell the moves beyond [`gap::MAX_PLIES`] plies, or where several orders lead
//! there. The order of the changes can.
//!
//! The engine keeps the field changes a polled board reported since its record last changed.
//! When a poll shows the board ahead of the record by moves the gap search does not settle, the
//! search runs again, up to [`STREAM_PLIES`] plies, counting only the sequences that agree with
//! that order: each change the sequence makes (a square emptied, a piece arriving) is matched to
//! the first ply at or after the previous change's that makes it, and a sequence whose changes
//! cannot be matched in the order reported is not counted (a change no ply makes, a piece put
//! back or adjusted, says nothing and is passed over). The moves are recorded, marked
//! `recovered`, only when exactly one sequence agrees; else the board's memory is read as
//! before.

use shakmaty::{Board, Chess, Move, Piece, Position, Square};

use super::super::observation::SquareReading;
use super::BoardEngine;
use super::gap::{self, Gap};

/// The longest gap the order of the changes may settle, in plies (a line that kept a board's
/// changes back for 30 s at blitz).
pub const STREAM_PLIES: u32 = 8;

/// The most changes kept: past it the order is forgotten and the board's memory tells (a
/// board this far ahead of its record is beyond [`STREAM_PLIES`] anyway).
pub const STREAM_CHANGES: usize = 256;

/// A polled board's field changes since its record last changed.
#[derive(Debug, Default)]
pub(super) struct Stream {
    /// The record's version they follow.
    version: u64,
    /// Field (device numbering) and reading, in the order reported.
    changes: Vec<(u8, SquareReading)>,
    /// More than [`STREAM_CHANGES`] came.
    overflowed: bool,
    /// The record's version and the number of changes at the last search: the same search is
    /// not run again at every poll.
    searched: Option<(u64, usize)>,
}

impl Stream {
    /// A field change reported while the record is at `version`.
    pub(super) fn keep(&mut self, version: u64, index: u8, reading: SquareReading) {
        if version != self.version {
            *self = Stream {
                version,
                ..Stream::default()
            };
        }
        if self.changes.len() >= STREAM_CHANGES {
            self.overflowed = true;
            self.changes.clear();
        }
        if !self.overflowed {
            self.changes.push((index, reading));
        }
    }
}

impl BoardEngine {
    /// The one sequence of legal moves from `pos` to `board` that agrees with the order of the
    /// changes reported since the record last changed, if exactly one does.
    pub(super) fn stream_sequence(&mut self, pos: &Chess, board: &Board) -> Option<Vec<Move>> {
        let s = &mut self.stream;
        if s.version != self.version || s.overflowed || s.changes.is_empty() {
            return None;
        }
        let key = (s.version, s.changes.len());
        if s.searched == Some(key) {
            return None;
        }
        s.searched = Some(key);
        let orientation = self.orientation;
        let changes: Vec<(Square, Option<Piece>)> = s
            .changes
            .iter()
            .filter_map(|&(index, reading)| {
                let piece = match reading {
                    SquareReading::Empty => None,
                    SquareReading::Piece(p) => Some(p),
                    SquareReading::Special(_) => return None,
                };
                Some((orientation.square_of(index), piece))
            })
            .collect();
        let agrees = |moves: &[Move]| in_order(pos, moves, &changes);
        match gap::search_accepting(pos, board, STREAM_PLIES, &agrees) {
            Gap::One(moves) => Some(moves),
            _ => None,
        }
    }
}

/// Whether the changes reported, in their order, can be those of `moves` played from `pos`.
/// Each change some ply makes is matched to the first ply, at or after the last one matched,
/// that makes it; one that only an earlier ply makes, and was not matched already, is out of
/// order. A change no ply makes (a piece adjusted on its square, one lifted and put back) and a
/// change matched already (every piece logged where it stands, as a start mark writes them) are
/// passed over.
fn in_order(pos: &Chess, moves: &[Move], changes: &[(Square, Option<Piece>)]) -> bool {
    // The squares each ply changes, and what they hold after it.
    let mut made: Vec<Vec<(Square, Option<Piece>)>> = Vec::with_capacity(moves.len());
    let mut p = pos.clone();
    for mv in moves {
        let before = p.board().clone();
        p.play_unchecked(*mv);
        let after = p.board();
        made.push(
            (before.occupied() | after.occupied())
                .into_iter()
                .filter(|&sq| before.piece_at(sq) != after.piece_at(sq))
                .map(|sq| (sq, after.piece_at(sq)))
                .collect(),
        );
    }
    let mut last = 0;
    let mut matched: Vec<(Square, Option<Piece>)> = Vec::new();
    for change in changes {
        if matched.contains(change) || !made.iter().any(|m| m.contains(change)) {
            continue;
        }
        match (last..made.len()).find(|&k| made[k].contains(change)) {
            Some(k) => {
                last = k;
                matched.push(*change);
            }
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::{Color, Role, san::San};

    fn play(sans: &[&str]) -> (Chess, Vec<Move>) {
        let start = Chess::default();
        let mut pos = start.clone();
        let mut moves = Vec::new();
        for s in sans {
            let mv = s.parse::<San>().unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(mv);
            moves.push(mv);
        }
        (start, moves)
    }

    fn piece(color: Color, role: Role) -> Option<Piece> {
        Some(Piece { color, role })
    }

    #[test]
    fn changes_in_the_order_of_the_moves_agree_and_in_another_order_do_not() {
        let (pos, moves) = play(&["e4", "e5", "Nf3"]);
        let w = Color::White;
        let b = Color::Black;
        let order = [
            (Square::E2, None),
            (Square::E4, piece(w, Role::Pawn)),
            // A piece adjusted on its square: no ply makes it, passed over.
            (Square::D8, piece(b, Role::Queen)),
            (Square::E7, None),
            (Square::E5, piece(b, Role::Pawn)),
            (Square::G1, None),
            (Square::F3, piece(w, Role::Knight)),
        ];
        assert!(in_order(&pos, &moves, &order));
        // Every piece logged where it stands after 1... e5 (a start mark written then): passed
        // over.
        let mut marked = order.to_vec();
        marked.insert(5, (Square::E4, piece(w, Role::Pawn)));
        marked.insert(6, (Square::E5, piece(b, Role::Pawn)));
        marked.insert(7, (Square::G1, piece(w, Role::Knight)));
        assert!(in_order(&pos, &moves, &marked));
        // 1... e5 reported before 1. e4 was: out of order.
        let mut swapped = order;
        swapped.swap(1, 4);
        assert!(!in_order(&pos, &moves, &swapped));
    }
}
