//! Pure judgements behind the irregularity events: what a move touches, whether a sensed board
//! is a legal move in progress, what an unexplained board looks like, result signals.

use shakmaty::{
    Bitboard, Board, CastlingSide, Chess, Color, Move, Outcome, Piece, Position, Role, Square,
};

use super::vocab::{BLACK_WINS, DRAW, WHITE_WINS};

/// The squares a move changes (origin, destination, en-passant victim, castling squares).
pub fn move_squares(m: &Move) -> Vec<Square> {
    match *m {
        Move::Normal { from, to, .. } => vec![from, to],
        Move::EnPassant { from, to } => {
            vec![from, to, Square::from_coords(to.file(), from.rank())]
        }
        Move::Castle { king, rook } => {
            let (k, r) = castle_targets(king, rook);
            vec![king, rook, k, r]
        }
        Move::Put { to, .. } => vec![to],
    }
}

/// Final king and rook squares of a castling move.
pub fn castle_targets(king: Square, rook: Square) -> (Square, Square) {
    let side = CastlingSide::from_queen_side(rook < king);
    let rank = king.rank();
    (
        Square::from_coords(side.king_to_file(), rank),
        Square::from_coords(side.rook_to_file(), rank),
    )
}

/// Whether `reading` on `sq` can be a moment of move `m` from `pos` being carried out.
fn allowed(pos: &Chess, m: &Move, sq: Square, reading: Option<Piece>) -> bool {
    let mover = pos.turn();
    let piece = |role| Some(Piece { color: mover, role });
    match *m {
        Move::Normal {
            role,
            from,
            to,
            promotion,
            ..
        } => {
            if sq == from {
                return reading.is_none();
            }
            if sq == to {
                return reading.is_none()
                    || reading == piece(role)
                    || promotion.is_some_and(|p| reading == piece(p));
            }
            // A sliding piece passing over the squares in between.
            matches!(role, Role::Rook | Role::Bishop | Role::Queen)
                && shakmaty::attacks::between(from, to).contains(sq)
                && reading == piece(role)
        }
        Move::EnPassant { from, to } => {
            let victim = Square::from_coords(to.file(), from.rank());
            (sq == from || sq == victim) && reading.is_none()
                || sq == to && (reading.is_none() || reading == piece(Role::Pawn))
        }
        Move::Castle { king, rook } => {
            let (k, r) = castle_targets(king, rook);
            let corners = [king, rook, k, r];
            let between = shakmaty::attacks::between(king, k) | shakmaty::attacks::between(rook, r);
            (corners.contains(&sq) || between.contains(sq))
                && (reading.is_none()
                    || reading == piece(Role::King)
                    || reading == piece(Role::Rook))
        }
        Move::Put { .. } => false,
    }
}

/// Squares where `sensed` differs from `board`.
pub fn diff(board: &Board, sensed: &Board) -> Vec<Square> {
    let mut out = Vec::new();
    for sq in Square::ALL {
        if board.piece_at(sq) != sensed.piece_at(sq) {
            out.push(sq);
        }
    }
    out
}

/// Whether `sensed` is `pos` with some legal move partly (or wholly) carried out.
pub fn is_move_in_progress(pos: &Chess, sensed: &Board) -> bool {
    let d = diff(pos.board(), sensed);
    if d.iter().all(|&sq| sensed.piece_at(sq).is_none()) {
        // Only pieces lifted: touches.
        return true;
    }
    pos.legal_moves()
        .iter()
        .any(|m| d.iter().all(|&sq| allowed(pos, m, sq, sensed.piece_at(sq))))
}

/// One piece of `color` taken from one square and put on another (empty or holding an
/// opponent's piece), nothing else changed: the shape of a move, legal or not.
pub fn single_relocation(board: &Board, sensed: &Board, color: Color) -> Option<(Square, Square)> {
    let d = diff(board, sensed);
    if d.len() != 2 {
        return None;
    }
    let (a, b) = (d[0], d[1]);
    let check = |from: Square, to: Square| {
        let piece = board.piece_at(from)?;
        let target_ok = board.piece_at(to).is_none_or(|p| p.color != color);
        (piece.color == color
            && sensed.piece_at(from).is_none()
            && sensed.piece_at(to) == Some(piece)
            && target_ok)
            .then_some((from, to))
    };
    check(a, b).or_else(|| check(b, a))
}

/// A pawn of the side to move put on the last rank without being replaced (7.5.2): the queen
/// promotion it counts as.
pub fn unpromoted_pawn(pos: &Chess, sensed: &Board) -> Option<Move> {
    let (from, to) = single_relocation(pos.board(), sensed, pos.turn())?;
    if pos.board().role_at(from) != Some(Role::Pawn)
        || to.rank()
            != pos
                .turn()
                .fold_wb(shakmaty::Rank::Eighth, shakmaty::Rank::First)
    {
        return None;
    }
    pos.legal_moves()
        .into_iter()
        .find(|m| m.from() == Some(from) && m.to() == to && m.promotion() == Some(Role::Queen))
}

/// Whether a piece on `sq` can be captured by a legal move of the side to move.
pub fn capturable(pos: &Chess, sq: Square) -> bool {
    pos.legal_moves().iter().any(|m| match *m {
        Move::EnPassant { from, to } => Square::from_coords(to.file(), from.rank()) == sq,
        Move::Normal {
            capture: Some(_),
            to,
            ..
        } => to == sq,
        _ => false,
    })
}

/// Whether the piece on `sq` has a legal move.
pub fn can_move(pos: &Chess, sq: Square) -> bool {
    pos.legal_moves().iter().any(|m| match *m {
        Move::Castle { king, rook } => king == sq || rook == sq,
        _ => m.from() == Some(sq),
    })
}

/// Whether `sensed` is `pos` with pieces lifted off the board that no move explains: three or
/// more, or two that no single legal move (a capture, castling, en passant) lifts together and
/// that `together` says went in one scan. A knocked-over group or a lifted board, never
/// touches. Kings alone are a result signal being made, not a knock.
pub fn knocked_off(pos: &Chess, sensed: &Board, together: impl Fn(Square, Square) -> bool) -> bool {
    let d = diff(pos.board(), sensed);
    if d.is_empty() || d.iter().any(|&sq| sensed.piece_at(sq).is_some()) {
        return false;
    }
    if d.iter()
        .all(|&sq| pos.board().role_at(sq) == Some(Role::King))
    {
        return false;
    }
    match d.len() {
        1 => false,
        2 => {
            together(d[0], d[1])
                && !pos.legal_moves().iter().any(|m| {
                    let squares = move_squares(m);
                    squares.contains(&d[0]) && squares.contains(&d[1])
                })
        }
        _ => true,
    }
}

/// Whether `sensed` differs from `board` only by kings lifted or put on the centre squares: a
/// kings result signal being made (the kings are placed one after the other, seconds apart).
pub fn half_kings_signal(board: &Board, sensed: &Board) -> bool {
    let centre = Bitboard::from(Square::D4) | Square::E4 | Square::D5 | Square::E5;
    let d = diff(board, sensed);
    !d.is_empty()
        && d.iter().any(|&sq| {
            centre.contains(sq) && sensed.piece_at(sq).is_some_and(|p| p.role == Role::King)
        })
        && d.iter().all(|&sq| {
            let was_king = board.piece_at(sq).is_some_and(|p| p.role == Role::King);
            match sensed.piece_at(sq) {
                None => was_king,
                Some(p) => p.role == Role::King && centre.contains(sq),
            }
        })
}

/// The legal moves of the side to move fully made on `sensed`, with other pieces off their
/// squares (knocked, lifted) outside the move's squares: each move with those squares.
pub fn moves_with_knocks(pos: &Chess, sensed: &Board) -> Vec<(Move, Vec<Square>)> {
    let mut found = Vec::new();
    for m in pos.legal_moves() {
        let squares = move_squares(&m);
        let mut after = pos.clone();
        after.play_unchecked(m);
        if squares
            .iter()
            .any(|&sq| after.board().piece_at(sq) != sensed.piece_at(sq))
        {
            continue;
        }
        let extra = diff(after.board(), sensed);
        if extra.is_empty() {
            continue;
        }
        found.push((m, extra));
    }
    found
}

/// Whether the change from `board` to `sensed` is the work of `presser` alone: only its pieces
/// appear on new squares, and at most one opponent's piece is gone (a capture).
pub fn presser_only(board: &Board, sensed: &Board, presser: Color) -> bool {
    let mut taken = 0;
    for sq in diff(board, sensed) {
        if sensed.piece_at(sq).is_some_and(|p| p.color != presser) {
            return false;
        }
        if board.piece_at(sq).is_some_and(|p| p.color != presser) {
            taken += 1;
        }
    }
    taken <= 1
}

/// The DGT result convention: both kings on the central squares. Both on dark squares
/// (d4, e5): Black wins; both on light squares (d5, e4): White wins; one of each: draw.
pub fn kings_signal(sensed: &Board) -> Option<Outcome> {
    let centre = Bitboard::from(Square::D4) | Square::E4 | Square::D5 | Square::E5;
    let white = sensed.king_of(Color::White)?;
    let black = sensed.king_of(Color::Black)?;
    if !centre.contains(white) || !centre.contains(black) {
        return None;
    }
    Some(match (white.is_dark(), black.is_dark()) {
        (true, true) => BLACK_WINS,
        (false, false) => WHITE_WINS,
        _ => DRAW,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kings_signal_follows_the_dgt_convention() {
        let mut b = Board::empty();
        b.set_piece_at(Square::D4, Color::White.king());
        b.set_piece_at(Square::E5, Color::Black.king());
        assert_eq!(kings_signal(&b), Some(BLACK_WINS));
        let mut b = Board::empty();
        b.set_piece_at(Square::E4, Color::White.king());
        b.set_piece_at(Square::D5, Color::Black.king());
        assert_eq!(kings_signal(&b), Some(WHITE_WINS));
        let mut b = Board::empty();
        b.set_piece_at(Square::E4, Color::White.king());
        b.set_piece_at(Square::E5, Color::Black.king());
        assert_eq!(kings_signal(&b), Some(DRAW));
        assert_eq!(kings_signal(&Board::default()), None);
    }

    #[test]
    fn partial_moves_are_in_progress() {
        let pos = Chess::default();
        let mut b = Board::default();
        b.set_piece_at(Square::E4, Color::White.pawn());
        assert!(
            is_move_in_progress(&pos, &b),
            "e4 reported before e2 emptied"
        );
        let mut b = Board::default();
        b.discard_piece_at(Square::B2);
        b.set_piece_at(Square::A3, Color::White.pawn());
        assert!(!is_move_in_progress(&pos, &b), "a pawn knocked to a3");
        assert_eq!(
            single_relocation(pos.board(), &b, Color::White),
            Some((Square::B2, Square::A3))
        );
    }
}
