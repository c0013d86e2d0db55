//! Gap recovery: the legal move sequences that lead from the recorded position to a board that
//! jumped ahead of it (a reconnection's board dump, lost field messages).
//!
//! The search is depth-first over legal moves, by increasing length, and stops at the first
//! length that reaches the board. Two rules keep it small and make "the" sequence well defined:
//! a piece that stands where the target board wants it is never moved (no excursions: a piece
//! moved away and back is invisible to the board and cannot be recovered), and a node is cut
//! when the squares still to fill or empty cannot be reached with the moves left.

use shakmaty::{Board, Chess, Color, Move, Position, Role, Square};

use super::super::irregular::castle_targets;

/// The longest gap searched, in plies.
pub const MAX_PLIES: u32 = 4;

/// A bound on the nodes visited by one search; past it the answer is [`Gap::TooMany`].
pub const NODE_LIMIT: u64 = 2_000_000;

/// What the search found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gap {
    /// Exactly one sequence (the shortest length that reaches the board).
    One(Vec<Move>),
    /// Several sequences of the shortest length reach the board (up to a few are kept).
    Several(Vec<Vec<Move>>),
    /// No sequence of up to `MAX_PLIES` plies reaches the board.
    None,
    /// The search gave up (node limit): too many possibilities to name one.
    TooMany,
}

struct Search<'a> {
    target: &'a Board,
    /// Whether a sequence that reaches the target counts (other evidence of the moves).
    accept: &'a dyn Fn(&[Move]) -> bool,
    found: Vec<Vec<Move>>,
    count: usize,
    nodes: u64,
    path: Vec<Move>,
}

/// Legal move sequences of 1..=`max_plies` plies from `pos` whose board is `target`.
pub fn search(pos: &Chess, target: &Board, max_plies: u32) -> Gap {
    search_accepting(pos, target, max_plies, &|_| true)
}

/// [`search`], counting only the sequences `accept` takes (those that agree with what else is
/// known of the moves: the order in which the board reported its changes).
pub fn search_accepting(
    pos: &Chess,
    target: &Board,
    max_plies: u32,
    accept: &dyn Fn(&[Move]) -> bool,
) -> Gap {
    let mut s = Search {
        target,
        accept,
        found: Vec::new(),
        count: 0,
        nodes: 0,
        path: Vec::new(),
    };
    for depth in 1..=max_plies {
        s.visit(pos, depth);
        if s.nodes > NODE_LIMIT {
            return Gap::TooMany;
        }
        match s.count {
            0 => continue,
            1 => return Gap::One(s.found.remove(0)),
            _ => return Gap::Several(s.found),
        }
    }
    Gap::None
}

/// Pieces a hand may hold while the next move is made (a capture: the captured piece and the
/// capturing one).
pub const IN_HAND: usize = 2;

/// Whether up to `max_plies` legal plies from `pos` lead to `sensed`, but for at most
/// [`IN_HAND`] pieces lifted (squares `sensed` shows empty): the position after them with the
/// next move's pieces in hand. Depth-first, with the search's rule that a piece standing where
/// `sensed` has it is never moved; bounded by [`NODE_LIMIT`] (past it the answer is `false`).
pub fn reaches_with_lifts(pos: &Chess, sensed: &Board, max_plies: u32) -> bool {
    fn shows(board: &Board, sensed: &Board) -> bool {
        let mut lifted = 0;
        for sq in (board.occupied() | sensed.occupied()).into_iter() {
            match (board.piece_at(sq), sensed.piece_at(sq)) {
                (a, b) if a == b => {}
                (Some(_), None) => lifted += 1,
                _ => return false,
            }
        }
        lifted <= IN_HAND
    }
    fn visit(pos: &Chess, sensed: &Board, left: u32, nodes: &mut u64) -> bool {
        *nodes += 1;
        if *nodes > NODE_LIMIT {
            return false;
        }
        if shows(pos.board(), sensed) {
            return true;
        }
        if left == 0 {
            return false;
        }
        for mv in pos.legal_moves() {
            if !moves_a_wrong_piece(pos.board(), sensed, &mv) {
                continue;
            }
            let mut next = pos.clone();
            next.play_unchecked(mv);
            if visit(&next, sensed, left - 1, nodes) {
                return true;
            }
        }
        false
    }
    visit(pos, sensed, max_plies, &mut 0)
}

/// Squares where `board` lacks the piece `target` has there, and where `board` has a piece
/// `target` does not have there, per colour (White, Black).
fn distance(board: &Board, target: &Board) -> ([u32; 2], [u32; 2]) {
    let mut fill = [0; 2];
    let mut empty = [0; 2];
    for sq in (board.occupied() | target.occupied()).into_iter() {
        let (a, b) = (board.piece_at(sq), target.piece_at(sq));
        if a == b {
            continue;
        }
        if let Some(p) = b {
            fill[p.color.fold_wb(0, 1)] += 1;
        }
        if let Some(p) = a {
            empty[p.color.fold_wb(0, 1)] += 1;
        }
    }
    (fill, empty)
}

impl Search<'_> {
    fn visit(&mut self, pos: &Chess, left: u32) {
        self.nodes += 1;
        if self.nodes > NODE_LIMIT {
            return;
        }
        if left == 0 {
            if pos.board() == self.target && (self.accept)(&self.path) {
                self.count += 1;
                if self.found.len() < 4 {
                    self.found.push(self.path.clone());
                }
            }
            return;
        }
        let mover = pos.turn();
        let (fill, empty) = distance(pos.board(), self.target);
        let own = left.div_ceil(2);
        let other = left / 2;
        let (m, o) = (mover.fold_wb(0, 1), (!mover).fold_wb(0, 1));
        // A move fills at most two squares of its colour (castling) and empties at most two of
        // its own and one of the other colour (a capture).
        if fill[m] > 2 * own
            || fill[o] > 2 * other
            || empty[m] > 2 * own + other
            || empty[o] > 2 * other + own
        {
            return;
        }
        let board = pos.board();
        for mv in pos.legal_moves() {
            if !moves_a_wrong_piece(board, self.target, &mv) || own == 1 && !self.lands(&mv, mover)
            {
                continue;
            }
            let mut next = pos.clone();
            next.play_unchecked(mv);
            self.path.push(mv);
            self.visit(&next, left - 1);
            self.path.pop();
            if self.nodes > NODE_LIMIT {
                return;
            }
        }
    }

    /// The mover's last move puts its piece where the target has it (or where the target has
    /// an opponent's piece, which may take it afterwards).
    fn lands(&self, mv: &Move, mover: Color) -> bool {
        let fits = |sq: Square, role: Role| {
            self.target
                .piece_at(sq)
                .is_some_and(|p| p.color != mover || p.role == role)
        };
        match *mv {
            Move::Castle { king, rook } => {
                let (k, r) = castle_targets(king, rook);
                fits(k, Role::King) || fits(r, Role::Rook)
            }
            _ => fits(mv.to(), mv.promotion().unwrap_or(mv.role())),
        }
    }
}

/// The piece `mv` moves does not already stand where `target` wants it (a piece moved away and
/// back is invisible to the board: the searches never move a piece that stands right).
fn moves_a_wrong_piece(board: &Board, target: &Board, mv: &Move) -> bool {
    let wrong = |sq: Square| board.piece_at(sq) != target.piece_at(sq);
    match *mv {
        Move::Castle { king, rook } => wrong(king) || wrong(rook),
        _ => mv.from().is_some_and(wrong),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::san::San;

    fn play(sans: &[&str]) -> Chess {
        let mut pos = Chess::default();
        for s in sans {
            let m = s.parse::<San>().unwrap().to_move(&pos).unwrap();
            pos.play_unchecked(m);
        }
        pos
    }

    #[test]
    fn two_plies_are_found() {
        let target = play(&["e4", "e5"]);
        assert!(matches!(
            search(&Chess::default(), target.board(), 4),
            Gap::One(m) if m.len() == 2
        ));
    }

    #[test]
    fn transpositions_are_several() {
        let target = play(&["e4", "e5", "Nf3"]);
        assert!(matches!(
            search(&Chess::default(), target.board(), 4),
            Gap::Several(_)
        ));
    }

    #[test]
    fn plies_then_pieces_in_hand_are_reached() {
        // After 1. e4 e5 the board shows 2. Nf3 played and Black's knight in hand.
        let mut board = play(&["e4", "e5", "Nf3"]).board().clone();
        board.discard_piece_at(Square::B8);
        assert!(reaches_with_lifts(&Chess::default(), &board, 3));
        assert!(!reaches_with_lifts(&Chess::default(), &board, 2));
        assert_eq!(search(&Chess::default(), &board, 4), Gap::None);
        // Three pieces off their squares are no move being made.
        board.discard_piece_at(Square::A8);
        board.discard_piece_at(Square::H8);
        assert!(!reaches_with_lifts(&Chess::default(), &board, 4));
        // A piece put where no legal play leads is not reached.
        let mut far = Board::default();
        far.discard_piece_at(Square::D1);
        far.set_piece_at(Square::D8, shakmaty::Piece::from_char('Q').unwrap());
        assert!(!reaches_with_lifts(&Chess::default(), &far, 4));
    }

    #[test]
    fn an_unreachable_board_is_none() {
        let mut b = Board::default();
        b.discard_piece_at(Square::D1);
        assert_eq!(search(&Chess::default(), &b, 4), Gap::None);
    }
}
