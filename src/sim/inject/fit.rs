//! Where an irregularity fits in a game and what it takes (the chess helpers, independent of
//! the daemon's own judgement), and the plan of a game's injections.

use shakmaty::{Bitboard, Board, Chess, Color, Move, Piece, Position, Role, Square, attacks};

use crate::sim::hand::{self, HandAction, normal_move};
use crate::sim::rng::Rng;
use crate::sim::timeline::PlyTrace;

use super::world::World;
use super::{InjectConfig, Kind, is_rook_first};

// ---------------------------------------------------------------------------------------------
// Chess helpers (independent of the daemon's own judgement)

/// Every square a move changes: origin, destination, en passant victim, castling squares.
pub(super) fn move_squares(m: &Move, us: Color) -> Bitboard {
    match *m {
        Move::Normal { from, to, .. } => Bitboard::from(from) | to,
        Move::EnPassant { from, to } => {
            Bitboard::from(from) | to | Square::from_coords(to.file(), from.rank())
        }
        Move::Castle { king, rook } => {
            let side = m.castling_side().expect("castling");
            Bitboard::from(king) | rook | side.king_to(us) | side.rook_to(us)
        }
        Move::Put { to, .. } => Bitboard::from(to),
    }
}

/// The squares a move's pieces pass over on their way.
pub(super) fn move_path(m: &Move, us: Color) -> Bitboard {
    match *m {
        Move::Normal { from, to, .. } | Move::EnPassant { from, to } => attacks::between(from, to),
        Move::Castle { king, rook } => {
            let side = m.castling_side().expect("castling");
            attacks::between(king, side.king_to(us)) | attacks::between(rook, side.rook_to(us))
        }
        Move::Put { .. } => Bitboard::EMPTY,
    }
}

/// Every square a legal move of the piece on `s` may show it on or pass over (destinations,
/// squares between for any piece, every square of a castling it takes part in).
pub(super) fn legal_reach(pos: &Chess, s: Square) -> Bitboard {
    let mut reach = Bitboard::EMPTY;
    for m in pos.legal_moves() {
        match m {
            Move::Normal { from, to, .. } | Move::EnPassant { from, to } if from == s => {
                reach |= attacks::between(from, to) | to;
            }
            Move::Castle { king, rook } if king == s || rook == s => {
                let side = m.castling_side().expect("castling");
                let (kt, rt) = (side.king_to(pos.turn()), side.rook_to(pos.turn()));
                reach |= Bitboard::from(king) | rook | kt | rt;
                reach |= attacks::between(king, kt) | attacks::between(rook, rt);
            }
            _ => {}
        }
    }
    reach
}

/// Whether the piece on `s` has a legal move (a castling rook or king counts).
pub(super) fn can_move(pos: &Chess, s: Square) -> bool {
    pos.legal_moves().iter().any(|m| match *m {
        Move::Castle { king, rook } => king == s || rook == s,
        _ => m.from() == Some(s),
    })
}

/// Whether a legal move captures the piece on `s`.
pub(super) fn capturable(pos: &Chess, s: Square) -> bool {
    pos.legal_moves()
        .iter()
        .any(|m| captured_square(m) == Some(s))
}

/// The square of the piece a move captures.
pub(super) fn captured_square(m: &Move) -> Option<Square> {
    match *m {
        Move::Normal {
            capture: Some(_),
            to,
            ..
        } => Some(to),
        Move::EnPassant { from, to } => Some(Square::from_coords(to.file(), from.rank())),
        _ => None,
    }
}

/// Both kings on the centre squares (the DGT result signal).
pub(super) fn kings_in_centre(board: &Board) -> bool {
    let centre = Bitboard::from(Square::D4) | Square::E4 | Square::D5 | Square::E5;
    (board.kings() & centre).count() == 2
}

/// Every pawn on its home rank: the board might read as a start position.
pub(super) fn looks_like_a_start(board: &Board) -> bool {
    board.pawns().count() == 16
        && (board.pawns() & board.white()) == Bitboard::from(shakmaty::Rank::Second)
        && (board.pawns() & board.black()) == Bitboard::from(shakmaty::Rank::Seventh)
}

/// `board` with the piece on `from` moved to the empty square `to`.
pub(super) fn relocated(board: &Board, from: Square, to: Square) -> Board {
    let mut b = board.clone();
    let p = b.remove_piece_at(from).expect("a piece to relocate");
    b.set_piece_at(to, p);
    b
}

pub(super) fn ends_game(pos: &Chess) -> bool {
    pos.is_game_over()
}

/// A touch of one of `squares` that passes `ok`, chosen at random.
pub(super) fn touch_one(
    board: &Board,
    squares: Bitboard,
    ok: impl Fn(Square) -> bool,
    rng: &mut Rng,
) -> Option<Spec> {
    let candidates: Vec<Square> = squares.into_iter().filter(|&s| ok(s)).collect();
    let square = choose(&candidates, rng)?;
    Some(Spec::Touch {
        square,
        piece: board.piece_at(square)?,
    })
}

pub(super) fn choose<T: Copy>(items: &[T], rng: &mut Rng) -> Option<T> {
    (!items.is_empty()).then(|| items[rng.below(items.len() as u64) as usize])
}

// ---------------------------------------------------------------------------------------------
// What to inject where

/// A fitting injection with its choices made.
#[derive(Debug, Clone)]
pub(super) enum Spec {
    Touch { square: Square, piece: Piece },
    RookFirst { order: Vec<HandAction> },
    PromotionChanged { wrong: Role },
    MoveChanged { via: Square },
    Illegal { from: Square, to: Square },
    PawnNotPromoted,
    PressWithoutMove,
    Knock { from: Square, to: Square },
    OffTarget { via: Square },
}

impl Spec {
    pub(super) fn squares(&self, m: &Move) -> Vec<Square> {
        match *self {
            Spec::Touch { square, .. } => vec![square],
            Spec::RookFirst { .. } | Spec::PressWithoutMove => Vec::new(),
            Spec::PromotionChanged { .. } | Spec::PawnNotPromoted => vec![m.to()],
            Spec::MoveChanged { via } | Spec::OffTarget { via } => vec![via, m.to()],
            Spec::Illegal { from, to } | Spec::Knock { from, to } => vec![from, to],
        }
    }
}

/// [`normal_move`] of a move that promotes nothing.
pub(super) fn unpromoted(m: &Move) -> Option<(Role, Square, Option<Role>, Square)> {
    normal_move(m).filter(|_| m.promotion().is_none())
}

/// Whether `kind` fits ply index `i` (move `m` from `pos`), with the random choices made.
pub(super) fn fit(
    kind: Kind,
    pos: &Chess,
    m: &Move,
    trace: &PlyTrace,
    rng: &mut Rng,
) -> Option<Spec> {
    let us = pos.turn();
    let board = pos.board();
    let touched = move_squares(m, us);
    match kind {
        Kind::TouchedPieceNotMoved => {
            let own = board.by_color(us) & !touched;
            touch_one(board, own, |s| can_move(pos, s), rng)
        }
        Kind::TouchedOpponentNotCaptured => {
            let theirs = board.by_color(!us) & !touched;
            let victim = captured_square(m);
            touch_one(
                board,
                theirs,
                |s| capturable(pos, s) && victim != Some(s),
                rng,
            )
        }
        Kind::CastlingRookTouchedFirst => {
            if !m.is_castle() {
                return None;
            }
            let orders: Vec<Vec<HandAction>> = hand::orders(pos, m)
                .into_iter()
                .filter(|o| is_rook_first(m, o))
                .collect();
            let i = choose(&(0..orders.len()).collect::<Vec<_>>(), rng)?;
            Some(Spec::RookFirst {
                order: orders[i].clone(),
            })
        }
        Kind::PromotionPieceChanged => promotion_changed(pos, m, rng),
        Kind::MoveChangedAfterRelease => move_changed(pos, m, rng),
        Kind::IllegalMove => illegal_move(pos, rng),
        Kind::PawnNotPromoted => (m.promotion() == Some(Role::Queen) && trace.press.is_some())
            .then_some(Spec::PawnNotPromoted),
        Kind::ClockPressedWithoutMove => Some(Spec::PressWithoutMove),
        Kind::KnockedPiece => knocked_piece(pos, m, rng),
        Kind::MovedPieceOffTarget => off_target(pos, m, rng),
    }
}

/// A promotion to another piece first (the queen when it is not the one played), one that
/// does not end the game.
fn promotion_changed(pos: &Chess, m: &Move, rng: &mut Rng) -> Option<Spec> {
    let Move::Normal {
        role,
        from,
        capture,
        to,
        promotion: Some(promo),
    } = *m
    else {
        return None;
    };
    let fits = |wrong: Role| {
        let w = Move::Normal {
            role,
            from,
            capture,
            to,
            promotion: Some(wrong),
        };
        let mut p = pos.clone();
        p.play_unchecked(w);
        wrong != promo && !ends_game(&p)
    };
    let wrong = if promo != Role::Queen && fits(Role::Queen) {
        Role::Queen
    } else {
        let others: Vec<Role> = [Role::Queen, Role::Rook, Role::Bishop, Role::Knight]
            .into_iter()
            .filter(|&r| fits(r))
            .collect();
        choose(&others, rng)?
    };
    Some(Spec::PromotionChanged { wrong })
}

/// The piece put down first on another empty square it could go to (a move that does not end
/// the game), then moved on.
fn move_changed(pos: &Chess, m: &Move, rng: &mut Rng) -> Option<Spec> {
    let (_, from, _, to) = unpromoted(m)?;
    let vias: Vec<Square> = pos
        .legal_moves()
        .into_iter()
        .filter(|n| {
            matches!(*n, Move::Normal { from: f, to: t, capture: None, promotion: None, .. }
                if f == from && t != to)
                && {
                    let mut p = pos.clone();
                    p.play_unchecked(*n);
                    !ends_game(&p)
                }
        })
        .map(|n| n.to())
        .collect();
    Some(Spec::MoveChanged {
        via: choose(&vias, rng)?,
    })
}

/// A piece of the mover's moved one or two squares (a king one) to an empty square it cannot
/// go to, not a pawn onto its last rank, not a board that looks like a signal or a start.
fn illegal_move(pos: &Chess, rng: &mut Rng) -> Option<Spec> {
    let board = pos.board();
    let mut cands = Vec::new();
    for s in board.by_color(pos.turn()) {
        let piece = board.piece_at(s)?;
        let reach = legal_reach(pos, s);
        let range = if piece.role == Role::King { 1 } else { 2 };
        for u in !board.occupied() & !reach {
            let pawn_end = piece.role == Role::Pawn
                && matches!(u.rank(), shakmaty::Rank::First | shakmaty::Rank::Eighth);
            if s.distance(u) > range || pawn_end {
                continue;
            }
            let b = relocated(board, s, u);
            if kings_in_centre(&b) || looks_like_a_start(&b) {
                continue;
            }
            cands.push((s, u));
        }
    }
    let (from, to) = choose(&cands, rng)?;
    Some(Spec::Illegal { from, to })
}

/// A piece other than a king knocked onto an empty neighbour after the move, off the squares
/// the move passed over.
fn knocked_piece(pos: &Chess, m: &Move, rng: &mut Rng) -> Option<Spec> {
    let after = {
        let mut a = pos.clone();
        a.play_unchecked(*m);
        a
    };
    let ab = after.board();
    let us = pos.turn();
    // Not onto a square the move passed over either.
    let moved = move_squares(m, us) | move_path(m, us);
    let mut cands = Vec::new();
    // Onto any empty neighbour, a legal move of the next player's too (the knock is
    // lifted as the mover lets go, faster than any hand reacts).
    for s in ab.occupied() & !ab.kings() & !moved {
        for u in attacks::king_attacks(s) & !ab.occupied() & !moved {
            let b = relocated(ab, s, u);
            if !looks_like_a_start(&b) {
                cands.push((s, u));
            }
        }
    }
    let (from, to) = choose(&cands, rng)?;
    Some(Spec::Knock { from, to })
}

/// The moved piece (not a king) put down first on an empty neighbour of its target that it
/// cannot go to, then slid on.
fn off_target(pos: &Chess, m: &Move, rng: &mut Rng) -> Option<Spec> {
    let board = pos.board();
    let (role, from, _, to) = unpromoted(m)?;
    if role == Role::King {
        return None;
    }
    let reach = legal_reach(pos, from);
    let vias: Vec<Square> = (attacks::king_attacks(to) & !board.occupied() & !reach)
        .into_iter()
        .filter(|&u| u != from && !looks_like_a_start(&relocated(board, from, u)))
        .collect();
    Some(Spec::OffTarget {
        via: choose(&vias, rng)?,
    })
}

/// Chooses what to inject: rare kinds first where they fit, then the others in turn.
pub(super) fn plan(
    positions: &[Chess],
    moves: &[Move],
    world: &World,
    cfg: &InjectConfig,
    setup: bool,
    rng: &mut Rng,
) -> Vec<(Kind, usize, Spec)> {
    let n = moves.len();
    // Plies that take an injection: completed by a press, and in a set-up game not the first
    // two (the game only starts with the first move the board shows).
    let open = |i: usize| world.plies[i].press.is_some() && !(setup && i < 2);
    let mut chosen: Vec<(Kind, usize, Spec)> = Vec::new();
    if let Some(plan) = &cfg.plan {
        for &(kind, ply) in plan {
            let Some(i) = ply.checked_sub(1).filter(|&i| i < n && open(i)) else {
                continue;
            };
            if let Some(spec) = fit(kind, &positions[i], &moves[i], &world.plies[i], rng) {
                chosen.push((kind, i, spec));
            }
        }
        chosen.sort_by_key(|c| c.1);
        return chosen;
    }
    let mut rare: Vec<Kind> = cfg.kinds.iter().copied().filter(|k| k.is_rare()).collect();
    let mut common: Vec<Kind> = cfg.kinds.iter().copied().filter(|k| !k.is_rare()).collect();
    rng.shuffle(&mut rare);
    rng.shuffle(&mut common);
    let mut queue: Vec<Kind> = rare;
    while queue.len() < cfg.count + 8 && !common.is_empty() {
        queue.extend(common.iter().copied());
    }
    let mut illegal_by = [0u32; 2];
    for kind in queue {
        if chosen.len() >= cfg.count {
            break;
        }
        let mut plies: Vec<usize> = (0..n)
            .filter(|&i| open(i) && chosen.iter().all(|c| c.1.abs_diff(i) >= 2))
            .filter(|&i| {
                !kind.is_illegal_move() || illegal_by[positions[i].turn().fold_wb(0, 1)] == 0
            })
            .collect();
        rng.shuffle(&mut plies);
        for i in plies {
            if let Some(spec) = fit(kind, &positions[i], &moves[i], &world.plies[i], rng) {
                if kind.is_illegal_move() {
                    illegal_by[positions[i].turn().fold_wb(0, 1)] += 1;
                }
                chosen.push((kind, i, spec));
                break;
            }
        }
    }
    chosen.sort_by_key(|c| c.1);
    chosen
}
