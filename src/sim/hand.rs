//! The physical actions of a move: which pieces a player's hand lifts and places, in which order.
//!
//! Every order listed by [`orders`] is physically possible (a piece is only lifted from an
//! occupied square and only placed on an empty one) and leaves the board exactly as the move
//! does. The first order listed is the textbook one (captured piece lifted first, direct
//! promotion, king-first castling or the Guideline II recommendation in Chess960).

use shakmaty::{Board, Chess, Color, Move, Piece, Position, Role, Square, attacks};

use super::Style;
use super::rng::Rng;

/// One physical action of a hand on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HandAction {
    /// The piece on the square is lifted off the board.
    Lift(Square),
    /// The piece is put down on the (empty) square.
    Place(Square, Piece),
}

/// Applies `action` to a physical board. Returns `false` (and leaves the board unchanged) when
/// it is impossible: lifting from an empty square or placing onto an occupied one.
pub fn apply_action(board: &mut Board, action: HandAction) -> bool {
    match action {
        HandAction::Lift(sq) => board.remove_piece_at(sq).is_some(),
        HandAction::Place(sq, piece) => {
            if board.piece_at(sq).is_some() {
                return false;
            }
            board.set_piece_at(sq, piece);
            true
        }
    }
}

/// Whether every action of `order` is possible in turn, starting from `board`.
pub fn is_physical(board: &Board, order: &[HandAction]) -> bool {
    let mut b = board.clone();
    order.iter().all(|&a| apply_action(&mut b, a))
}

/// Every physical order in which a player may carry out `m` in `pos`, textbook order first.
/// Empty for a move that is not a chess move on this board (a drop).
pub fn orders(pos: &Chess, m: &Move) -> Vec<Vec<HandAction>> {
    use HandAction::{Lift, Place};
    let us = pos.turn();
    if let Some((role, from, capture, to)) = normal_move(m) {
        let promotion = m.promotion();
        let mover = Piece { color: us, role };
        let result = Piece {
            color: us,
            role: promotion.unwrap_or(role),
        };
        let removals = if capture.is_some() {
            vec![vec![Lift(to), Lift(from)], vec![Lift(from), Lift(to)]]
        } else {
            vec![vec![Lift(from)]]
        };
        let mut out = Vec::new();
        for pre in removals {
            let mut direct = pre.clone();
            direct.push(Place(to, result));
            out.push(direct);
            if promotion.is_some() {
                // The pawn is put on the last rank first, then exchanged for the new piece.
                let mut via = pre;
                via.extend([Place(to, mover), Lift(to), Place(to, result)]);
                out.push(via);
            }
        }
        return out;
    }
    match *m {
        Move::EnPassant { from, to } => {
            let victim = Square::from_coords(to.file(), from.rank());
            let pawn = Piece {
                color: us,
                role: Role::Pawn,
            };
            vec![
                vec![Lift(victim), Lift(from), Place(to, pawn)],
                vec![Lift(from), Lift(victim), Place(to, pawn)],
                vec![Lift(from), Place(to, pawn), Lift(victim)],
            ]
        }
        Move::Castle { king, rook } => castle_orders(pos.board(), us, king, rook, m),
        // A normal move is answered above.
        Move::Normal { .. } | Move::Put { .. } => Vec::new(),
    }
}

/// The piece, origin, captured piece and destination of a normal move.
pub(super) fn normal_move(m: &Move) -> Option<(Role, Square, Option<Role>, Square)> {
    match *m {
        Move::Normal {
            role,
            from,
            capture,
            to,
            ..
        } => Some((role, from, capture, to)),
        _ => None,
    }
}

/// Castling orders: each piece either goes from its square to its target (lift, place) or,
/// when already on its target, is left alone or lifted and put back; all interleavings that
/// respect occupancy (a king cannot be put on a square the rook still stands on).
fn castle_orders(
    board: &Board,
    us: Color,
    king: Square,
    rook: Square,
    m: &Move,
) -> Vec<Vec<HandAction>> {
    use HandAction::{Lift, Place};
    let Some(side) = m.castling_side() else {
        return Vec::new();
    };
    let (kt, rt) = (side.king_to(us), side.rook_to(us));
    let kp = Piece {
        color: us,
        role: Role::King,
    };
    let rp = Piece {
        color: us,
        role: Role::Rook,
    };
    // Per piece: None = not touched; Some = lifted then placed.
    let paths = |from: Square, to: Square| {
        if from == to {
            vec![false, true]
        } else {
            vec![true]
        }
    };
    let mut out: Vec<Vec<HandAction>> = Vec::new();
    for &k_moves in &paths(king, kt) {
        for &r_moves in &paths(rook, rt) {
            let k = [Lift(king), Place(kt, kp)];
            let r = [Lift(rook), Place(rt, rp)];
            let candidates: Vec<Vec<HandAction>> = match (k_moves, r_moves) {
                (false, false) => continue,
                (true, false) => vec![k.to_vec()],
                (false, true) => vec![r.to_vec()],
                (true, true) => vec![
                    vec![k[0], k[1], r[0], r[1]], // king first
                    vec![k[0], r[0], r[1], k[1]], // king off, rook over, king down (II.3.2)
                    vec![k[0], r[0], k[1], r[1]], // both lifted, king down first
                    vec![r[0], r[1], k[0], k[1]], // rook first
                    vec![r[0], k[0], k[1], r[1]],
                    vec![r[0], k[0], r[1], k[1]],
                ],
            };
            for c in candidates {
                if is_physical(board, &c) && !out.contains(&c) {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// How likely a style is to use `order`, relative to the other orders of the same move.
fn weight(board: &Board, m: &Move, order: &[HandAction]) -> u32 {
    match *m {
        Move::Castle { .. } => {
            let rook_first = matches!(order.first(),
                Some(HandAction::Lift(sq)) if board.piece_at(*sq).is_some_and(|p| p.role == Role::Rook));
            let touches_both = order.len() == 4;
            match (rook_first, touches_both) {
                (true, _) => 1,
                (false, true) => 4,
                (false, false) => 3,
            }
        }
        _ => 1,
    }
}

/// One order for `m` as a player of `style` would use it: the textbook order for
/// [`Style::Clean`], else a weighted random choice among [`orders`] (rook-first castling is
/// rarer than king-first).
pub fn random_order(pos: &Chess, m: &Move, style: Style, rng: &mut Rng) -> Vec<HandAction> {
    let mut all = orders(pos, m);
    if all.is_empty() {
        return Vec::new();
    }
    if style == Style::Clean {
        return all.swap_remove(0);
    }
    let weights: Vec<u32> = all.iter().map(|o| weight(pos.board(), m, o)).collect();
    let i = rng.weighted(&weights);
    all.swap_remove(i)
}

/// The squares a piece passes over when it is slid from `from` to `to` (nearest first):
/// the squares strictly between them on a rank, file or diagonal, else none.
pub fn slide_path(from: Square, to: Square) -> Vec<Square> {
    let mut path: Vec<Square> = attacks::between(from, to).into_iter().collect();
    path.sort_by_key(|sq| from.distance(*sq));
    path
}

/// Whether a piece of this role is slid along the board rather than carried: rooks, bishops
/// and queens always may; a king only when castling (`castling`).
pub fn slides(role: Role, castling: bool) -> bool {
    matches!(role, Role::Rook | Role::Bishop | Role::Queen) || (castling && role == Role::King)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::fen::Fen;
    use shakmaty::{CastlingMode, uci::UciMove};

    fn pos(fen: &str) -> Chess {
        Fen::from_ascii(fen.as_bytes())
            .unwrap()
            .into_position(CastlingMode::Chess960)
            .unwrap()
    }

    #[test]
    fn swap_castling_has_no_king_first_order() {
        // King f1, rook g1: O-O swaps them.
        let p = pos("4k3/8/8/8/8/8/8/5KR1 w G - 0 1");
        let m = UciMove::from_ascii(b"f1g1").unwrap().to_move(&p).unwrap();
        let all = orders(&p, &m);
        assert_eq!(all.len(), 4);
        for o in &all {
            assert!(is_physical(p.board(), o));
        }
    }

    #[test]
    fn king_only_castling_touches_rook_or_not() {
        // King b1, rook f1 (already on its target) → O-O: king g1.
        let p = pos("4k3/8/8/8/8/8/8/1K3R2 w F - 0 1");
        let m = UciMove::from_ascii(b"b1f1").unwrap().to_move(&p).unwrap();
        let all = orders(&p, &m);
        assert_eq!(all[0].len(), 2);
        assert!(all.iter().any(|o| o.len() == 4));
    }
}
