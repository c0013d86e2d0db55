//! Recognising start positions: the standard one, the 960 Chess960 ones (with their numbers),
//! and double-Chess960 set-ups where White and Black back ranks differ.

use shakmaty::{
    Bitboard, Board, CastlingMode, Chess, Color, File, FromSetup, Piece, Position, Rank, Role,
    Setup, Square,
};

/// A recognised start position.
#[derive(Debug, Clone)]
pub struct StartPosition {
    /// The position, White to move.
    pub position: Chess,
    /// The castling mode to use for the game.
    pub mode: CastlingMode,
    /// Chess960 start number when both back ranks are the same 960 arrangement.
    pub chess960: Option<u16>,
}

/// The standard start arrangement number (RNBQKBNR).
pub const STANDARD_960_NUMBER: u16 = 518;

/// Where the two knights go among the five squares left after bishops and queen, by the
/// Scharnagl numbering's knight index (0..10).
const KNIGHTS: [(usize, usize); 10] = [
    (0, 1),
    (0, 2),
    (0, 3),
    (0, 4),
    (1, 2),
    (1, 3),
    (1, 4),
    (2, 3),
    (2, 4),
    (3, 4),
];

/// The back rank of Chess960 start number `n` (0..960), files a..h, by the Scharnagl numbering.
pub fn back_rank(n: u16) -> [Role; 8] {
    let mut rank: [Option<Role>; 8] = [None; 8];
    let n = n as usize % 960;
    let (n1, light) = (n / 4, n % 4);
    rank[2 * light + 1] = Some(Role::Bishop);
    let (n2, dark) = (n1 / 4, n1 % 4);
    rank[2 * dark] = Some(Role::Bishop);
    let (n3, queen) = (n2 / 6, n2 % 6);
    place_in_nth_empty(&mut rank, queen, Role::Queen);
    let (k1, k2) = KNIGHTS[n3];
    // Place the second knight first so the first one's empty-index stays valid.
    place_in_nth_empty(&mut rank, k2, Role::Knight);
    place_in_nth_empty(&mut rank, k1, Role::Knight);
    place_in_nth_empty(&mut rank, 0, Role::Rook);
    place_in_nth_empty(&mut rank, 0, Role::King);
    place_in_nth_empty(&mut rank, 0, Role::Rook);
    rank.map(|r| r.unwrap_or(Role::Pawn))
}

fn place_in_nth_empty(rank: &mut [Option<Role>; 8], nth: usize, role: Role) {
    if let Some(slot) = rank.iter_mut().filter(|r| r.is_none()).nth(nth) {
        *slot = Some(role);
    }
}

/// The Chess960 number of a back rank, if it is a valid 960 arrangement.
pub fn number_of_back_rank(roles: &[Role; 8]) -> Option<u16> {
    // 960 entries: a linear search over a lazily built table is fast enough for set-up checks,
    // but a direct decode is simpler: compute and verify.
    let file_of = |role: Role| roles.iter().position(|&r| r == role);
    let bishops: Vec<usize> = (0..8).filter(|&f| roles[f] == Role::Bishop).collect();
    if bishops.len() != 2 || bishops[0] % 2 == bishops[1] % 2 {
        return None;
    }
    let light = bishops.iter().find(|&&f| f % 2 == 1)?;
    let dark = bishops.iter().find(|&&f| f % 2 == 0)?;
    let empties_after_bishops: Vec<usize> = (0..8).filter(|f| !bishops.contains(f)).collect();
    let queen = empties_after_bishops
        .iter()
        .position(|&f| Some(f) == file_of(Role::Queen))?;
    let rest: Vec<usize> = empties_after_bishops
        .iter()
        .copied()
        .filter(|&f| roles[f] != Role::Queen)
        .collect();
    let knights: Vec<usize> = (0..rest.len())
        .filter(|&i| roles[rest[i]] == Role::Knight)
        .collect();
    if knights.len() != 2 {
        return None;
    }
    let kn = KNIGHTS
        .iter()
        .position(|&p| p == (knights[0], knights[1]))?;
    let n = ((kn * 6 + queen) * 4 + dark / 2) * 4 + (light - 1) / 2;
    (back_rank(n as u16) == *roles).then_some(n as u16)
}

fn back_rank_roles(board: &Board, color: Color) -> Option<[Role; 8]> {
    let rank = color.fold_wb(Rank::First, Rank::Eighth);
    let mut roles = [Role::Pawn; 8];
    for (i, file) in File::ALL.into_iter().enumerate() {
        let piece = board.piece_at(Square::from_coords(file, rank))?;
        if piece.color != color {
            return None;
        }
        roles[i] = piece.role;
    }
    Some(roles)
}

fn is_valid_960_rank(roles: &[Role; 8]) -> bool {
    number_of_back_rank(roles).is_some()
}

/// Recognise a start position: pawns on ranks 2 and 7, a valid Chess960 arrangement (the
/// standard one included) on ranks 1 and 8, nothing else on the board.
pub fn recognise(board: &Board) -> Option<StartPosition> {
    if board.occupied().count() != 32 {
        return None;
    }
    let pawns_ok = File::ALL.into_iter().all(|f| {
        board.piece_at(Square::from_coords(f, Rank::Second)) == Some(Color::White.pawn())
            && board.piece_at(Square::from_coords(f, Rank::Seventh)) == Some(Color::Black.pawn())
    });
    if !pawns_ok {
        return None;
    }
    let white = back_rank_roles(board, Color::White)?;
    let black = back_rank_roles(board, Color::Black)?;
    if !is_valid_960_rank(&white) || !is_valid_960_rank(&black) {
        return None;
    }
    let symmetric = white == black;
    let number = if symmetric {
        number_of_back_rank(&white)
    } else {
        None
    };
    let mode = if number == Some(STANDARD_960_NUMBER) {
        CastlingMode::Standard
    } else {
        CastlingMode::Chess960
    };
    let rooks =
        board.rooks() & (Bitboard::from_rank(Rank::First) | Bitboard::from_rank(Rank::Eighth));
    let setup = Setup {
        board: board.clone(),
        castling_rights: rooks,
        ..Setup::empty()
    };
    let position = Chess::from_setup(setup, mode).ok()?;
    Some(StartPosition {
        position,
        mode,
        chess960: number,
    })
}

/// The board of Chess960 start number `n`.
pub fn board_of(n: u16) -> Board {
    let rank = back_rank(n);
    let mut board = Board::empty();
    for (i, file) in File::ALL.into_iter().enumerate() {
        board.set_piece_at(
            Square::from_coords(file, Rank::First),
            Piece {
                color: Color::White,
                role: rank[i],
            },
        );
        board.set_piece_at(
            Square::from_coords(file, Rank::Eighth),
            Piece {
                color: Color::Black,
                role: rank[i],
            },
        );
        board.set_piece_at(Square::from_coords(file, Rank::Second), Color::White.pawn());
        board.set_piece_at(
            Square::from_coords(file, Rank::Seventh),
            Color::Black.pawn(),
        );
    }
    board
}

/// Whether `board` is a start position being set up: 16 to 31 pieces, every pawn on its side's
/// second rank and every other piece on its side's back rank. (An adjourned game with so many
/// pieces, none of them ever moved off its rank, is not a position anyone sets up; one with
/// fewer, such as kings and a few pawns, is.)
pub fn is_partial_start(board: &Board) -> bool {
    let count = board.occupied().count();
    (16..32).contains(&count)
        && board.iter().all(|(sq, p)| {
            let (pawn_rank, back_rank) = p
                .color
                .fold_wb((Rank::Second, Rank::First), (Rank::Seventh, Rank::Eighth));
            sq.rank()
                == if p.role == Role::Pawn {
                    pawn_rank
                } else {
                    back_rank
                }
        })
}

/// Whether every piece of `board` stands on its side's two start ranks (White on ranks 1–2,
/// Black on 7–8): pieces being set up or rearranged, not a move being played.
pub fn on_start_ranks(board: &Board) -> bool {
    board.iter().all(|(sq, p)| {
        let r = sq.rank();
        p.color.fold_wb(
            r == Rank::First || r == Rank::Second,
            r == Rank::Seventh || r == Rank::Eighth,
        )
    })
}

/// A start position (the standard one or a Chess960 one, Black's back rank telling which) after
/// one move by White that shows `board`: White moved while Black was still setting up.
pub fn start_plus_one(board: &Board) -> Option<(StartPosition, shakmaty::Move)> {
    if board.occupied().count() != 32 {
        return None;
    }
    let black = back_rank_roles(board, Color::Black)?;
    let n = number_of_back_rank(&black)?;
    let start = recognise(&board_of(n))?;
    let m = start.position.legal_moves().into_iter().find(|&m| {
        let mut after = start.position.clone();
        after.play_unchecked(m);
        after.board() == board
    })?;
    Some((start, m))
}

/// Is this the position a start position (used to tell a new game from a continuation)?
pub fn is_start(pos: &Chess) -> bool {
    pos.turn() == Color::White && recognise(pos.board()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use shakmaty::EnPassantMode;
    use shakmaty::fen::Fen;

    #[test]
    fn standard_is_518() {
        let roles = back_rank(518);
        use Role::*;
        assert_eq!(
            roles,
            [Rook, Knight, Bishop, Queen, King, Bishop, Knight, Rook]
        );
        assert_eq!(number_of_back_rank(&roles), Some(518));
    }

    #[test]
    fn all_960_round_trip_and_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for n in 0..960 {
            let r = back_rank(n);
            assert_eq!(number_of_back_rank(&r), Some(n), "number {n}");
            assert!(seen.insert(r));
            let king = r.iter().position(|&x| x == Role::King).unwrap();
            let rooks: Vec<_> = (0..8).filter(|&i| r[i] == Role::Rook).collect();
            assert!(rooks[0] < king && king < rooks[1]);
        }
    }

    #[test]
    fn known_numbers() {
        // Number 0 is BBQNNRKR; 959 is RKRNNQBB.
        use Role::*;
        assert_eq!(
            back_rank(0),
            [Bishop, Bishop, Queen, Knight, Knight, Rook, King, Rook]
        );
        assert_eq!(
            back_rank(959),
            [Rook, King, Rook, Knight, Knight, Queen, Bishop, Bishop]
        );
    }

    #[test]
    fn recognises_standard_start() {
        let s = recognise(&Board::default()).expect("start");
        assert_eq!(s.chess960, Some(518));
        assert_eq!(s.mode, CastlingMode::Standard);
        let fen = Fen::from_position(&s.position, EnPassantMode::Legal).to_string();
        assert_eq!(
            fen,
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
        );
    }

    #[test]
    fn recognises_960_and_rejects_non_starts() {
        let s = recognise(&board_of(0)).expect("960 start");
        assert_eq!(s.chess960, Some(0));
        assert_eq!(s.mode, CastlingMode::Chess960);
        let mut b = Board::default();
        b.discard_piece_at(Square::E2);
        assert!(recognise(&b).is_none());
    }
}
