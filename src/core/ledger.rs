//! The touch ledger: every lift the sensors showed, with when the piece came back, per turn.
//! It is the evidence for touch-move (FIDE 4.3/4.4) and for telling castling orders apart.

use serde::{Deserialize, Serialize};
use shakmaty::{Color, Piece, Square};

use super::observation::Micros;

/// A put-back sooner than this after the lift is sensor noise, not a touch.
pub const NOISE: Micros = 300_000;

/// Reports closer together than this come from one scan of the board: their order says nothing
/// about the order in which hands moved the pieces.
pub const SAME_SCAN: Micros = 60_000;

/// A board scan period and some: a placement this recent can be the same piece as a lift
/// reported after it in the same or the next scan.
const SCAN_WINDOW: Micros = 300_000;

/// One lift of a piece (saved with its square as a number, its piece as a FEN letter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Touch {
    /// Where the piece was lifted.
    #[serde(with = "square_number")]
    pub square: Square,
    /// The piece lifted.
    #[serde(with = "fen_letter")]
    pub piece: Piece,
    /// When it was lifted.
    pub lifted_at: Micros,
    /// When the same piece was put back on the same square, if it was.
    pub back_at: Option<Micros>,
    /// The ply of the turn during which it was lifted.
    pub turn: u32,
    /// Another piece was placed on the square before this one came back.
    pub replaced: bool,
    /// While it was off its square, the same kind of piece appeared on another square: it was
    /// carried somewhere (a move, a slide, a displacement), not just touched.
    pub moved_on: bool,
    /// Lifted together with other pieces in a way no move explains (a knocked group, a lifted
    /// board): a displacement, never a touch.
    pub knocked: bool,
    /// Carried to a square as a legal move and back to its origin without being released: a
    /// touch (4.3a) even though it was seen elsewhere.
    pub carried: bool,
    /// Stands for a piece moved or captured by an illegal move (7.5.1: 4.3 applies to the move
    /// that replaces it), not for a lift the sensors saw.
    pub illegal: bool,
}

impl Touch {
    /// Lifted and put back on its square, and held longer than sensor noise.
    pub fn is_touch(&self) -> bool {
        !self.knocked
            && (!self.moved_on || self.carried)
            && self.back_at.is_some_and(|b| b - self.lifted_at >= NOISE)
    }

    /// Lifted and put back within the noise window: a sensor glitch.
    pub fn is_glitch(&self) -> bool {
        self.back_at.is_some_and(|b| b - self.lifted_at < NOISE)
    }
}

/// The lifts of the last few turns. Saved (a board's resume point) with squares as their
/// numbers (a1 = 0) and pieces as FEN letters.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(into = "SavedLedger", from = "SavedLedger")]
pub struct Ledger {
    touches: Vec<Touch>,
    /// Recent placements (square, piece, when), to spot a piece reported on its new square
    /// before its old square was reported empty.
    placements: Vec<(Square, Piece, Micros)>,
    /// The last few placements of each colour's pieces, whenever (a hand letting go).
    recent_placed: Vec<(Color, Micros)>,
}

/// A square saved as its number (a1 = 0), read back checked.
mod square_number {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use shakmaty::Square;

    pub fn serialize<S: Serializer>(sq: &Square, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(u8::from(*sq))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Square, D::Error> {
        let n = u8::deserialize(d)?;
        Square::try_from(n).map_err(|_| D::Error::custom(format!("no square {n}")))
    }
}

/// A piece saved as its FEN letter, read back checked.
mod fen_letter {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use shakmaty::Piece;

    pub fn serialize<S: Serializer>(p: &Piece, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_char(p.char())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Piece, D::Error> {
        let c = char::deserialize(d)?;
        Piece::from_char(c).ok_or_else(|| D::Error::custom(format!("no piece {c:?}")))
    }
}

/// A placement as saved.
#[derive(Serialize, Deserialize)]
struct SavedPlacement(
    #[serde(with = "square_number")] Square,
    #[serde(with = "fen_letter")] Piece,
    Micros,
);

/// A [`Ledger`] as saved.
#[derive(Serialize, Deserialize)]
struct SavedLedger {
    touches: Vec<Touch>,
    placements: Vec<SavedPlacement>,
    /// `true`: White.
    recent_placed: Vec<(bool, Micros)>,
}

impl From<Ledger> for SavedLedger {
    fn from(l: Ledger) -> SavedLedger {
        SavedLedger {
            touches: l.touches,
            placements: l
                .placements
                .into_iter()
                .map(|(sq, p, t)| SavedPlacement(sq, p, t))
                .collect(),
            recent_placed: l
                .recent_placed
                .into_iter()
                .map(|(c, t)| (c.is_white(), t))
                .collect(),
        }
    }
}

impl From<SavedLedger> for Ledger {
    fn from(s: SavedLedger) -> Ledger {
        Ledger {
            touches: s.touches,
            placements: s
                .placements
                .into_iter()
                .map(|SavedPlacement(sq, p, t)| (sq, p, t))
                .collect(),
            recent_placed: s
                .recent_placed
                .into_iter()
                .map(|(w, t)| (Color::from_white(w), t))
                .collect(),
        }
    }
}

impl Ledger {
    /// Forget everything (new game).
    pub fn clear(&mut self) {
        self.touches.clear();
        self.placements.clear();
        self.recent_placed.clear();
    }

    /// Whether a piece of `color` was placed within `window` of `t` (before or after it).
    pub fn placed_near(&self, color: Color, t: Micros, window: Micros) -> bool {
        self.recent_placed
            .iter()
            .any(|&(c, at)| c == color && (at - t).abs() < window)
    }

    /// A piece was lifted from `square`.
    pub fn lift(&mut self, square: Square, piece: Piece, t: Micros, turn: u32) {
        // The same kind of piece just appeared elsewhere: this one was carried there.
        let moved_on = self
            .placements
            .iter()
            .any(|&(sq, p, at)| sq != square && p == piece && t - at <= SCAN_WINDOW);
        self.touches.push(Touch {
            square,
            piece,
            lifted_at: t,
            back_at: None,
            turn,
            replaced: false,
            moved_on,
            knocked: false,
            carried: false,
            illegal: false,
        });
        self.touches.retain(|x| x.turn + 4 >= turn);
    }

    /// A piece was placed on `square`: closes the open lift of the same piece there.
    pub fn place(&mut self, square: Square, piece: Piece, t: Micros) {
        self.placements.retain(|&(_, _, at)| t - at <= SCAN_WINDOW);
        self.placements.push((square, piece, t));
        if self.recent_placed.len() >= 16 {
            self.recent_placed.remove(0);
        }
        self.recent_placed.push((piece.color, t));
        for open in self.touches.iter_mut().filter(|x| {
            x.back_at.is_none() && !x.replaced && x.square != square && x.piece == piece
        }) {
            open.moved_on = true;
        }
        if let Some(open) = self
            .touches
            .iter_mut()
            .rev()
            .find(|x| x.square == square && x.back_at.is_none() && !x.replaced)
        {
            if open.piece == piece {
                open.back_at = Some(t);
            } else {
                open.replaced = true;
            }
        }
    }

    /// Whether the pieces missing from `a` and `b` went in one scan (their open lifts within
    /// [`SAME_SCAN`]), or were not seen going at all (a board dump).
    pub fn lifted_together(&self, a: Square, b: Square) -> bool {
        let open = |sq: Square| {
            self.touches
                .iter()
                .rev()
                .find(|x| x.square == sq && x.back_at.is_none() && !x.replaced)
                .map(|x| x.lifted_at)
        };
        match (open(a), open(b)) {
            (Some(x), Some(y)) => (x - y).abs() <= SAME_SCAN,
            _ => true,
        }
    }

    /// The lifts still open (piece not seen back, its square not taken by another): where
    /// from, what, and when.
    pub fn open_lifts(&self) -> Vec<(Square, Piece, Micros)> {
        self.touches
            .iter()
            .filter(|x| x.back_at.is_none() && !x.replaced)
            .map(|x| (x.square, x.piece, x.lifted_at))
            .collect()
    }

    /// Mark the lifts of `squares` during the turn of `ply` as a knock, never a touch.
    pub fn mark_knocked(&mut self, ply: u32, squares: &[Square]) {
        for x in self
            .touches
            .iter_mut()
            .filter(|x| x.turn == ply && squares.contains(&x.square))
        {
            x.knocked = true;
        }
    }

    /// Mark every lift still open (piece not back) as part of a knocked group.
    pub fn mark_open_knocked(&mut self) {
        for x in self.touches.iter_mut().filter(|x| x.back_at.is_none()) {
            x.knocked = true;
        }
    }

    /// The piece lifted from `square` during the turn of `ply` came back there after being
    /// carried to a legal move's square without being released: it counts as touched.
    pub fn mark_carried(&mut self, ply: u32, square: Square) {
        if let Some(x) = self
            .touches
            .iter_mut()
            .rev()
            .find(|x| x.turn == ply && x.square == square && x.back_at.is_some())
        {
            x.carried = true;
        }
    }

    /// Record a touch that the sensors did not show as one: the pieces an illegal move moved or
    /// captured, which the move replacing it must respect (7.5.1, 4.3).
    pub fn add_illegal(&mut self, square: Square, piece: Piece, t: Micros, turn: u32) {
        self.touches.push(Touch {
            square,
            piece,
            lifted_at: t,
            back_at: Some(t + NOISE),
            turn,
            replaced: false,
            moved_on: false,
            knocked: false,
            carried: false,
            illegal: true,
        });
    }

    /// Forget the lifts of a turn (after an illegal move the arbiter's hands move pieces).
    pub fn forget_turn(&mut self, ply: u32) {
        self.touches.retain(|x| x.turn != ply);
    }

    /// Lifts during the turn of `ply`, in order.
    pub fn of_turn(&self, ply: u32) -> impl Iterator<Item = &Touch> {
        self.touches.iter().filter(move |x| x.turn == ply)
    }

    /// Lifts from `ply` on (the turn of a revisable move and after).
    pub fn since(&self, ply: u32) -> impl Iterator<Item = &Touch> {
        self.touches.iter().filter(move |x| x.turn >= ply)
    }

    /// The first non-glitch lift of `square` during the turn of `ply`.
    pub fn first_lift(&self, ply: u32, square: Square) -> Option<&Touch> {
        self.of_turn(ply)
            .find(|x| x.square == square && !x.is_glitch())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ledger_reads_back_from_its_json() {
        let mut l = Ledger::default();
        let pawn = Piece::from_char('P').unwrap();
        l.lift(Square::E2, pawn, 1_000_000, 1);
        l.place(Square::E4, pawn, 1_500_000);
        l.lift(Square::G8, Piece::from_char('n').unwrap(), 3_000_000, 2);
        let text = serde_json::to_string(&l).unwrap();
        assert!(text.contains("\"piece\":\"P\""), "{text}");
        let back: Ledger = serde_json::from_str(&text).unwrap();
        assert_eq!(format!("{back:?}"), format!("{l:?}"));
        // A square or piece that does not exist is an error, not a guess.
        let bad = text.replace("\"piece\":\"P\"", "\"piece\":\"X\"");
        assert!(serde_json::from_str::<Ledger>(&bad).is_err());
        let bad = text.replacen("\"square\":12", "\"square\":64", 1);
        assert!(serde_json::from_str::<Ledger>(&bad).is_err(), "{bad}");
    }
}
