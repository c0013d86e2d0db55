//! The core's vocabulary as types: irregularity codes with their FIDE articles, draw claims,
//! and the serde forms of colours and squares used on the wire (`docs/events.md`).
//! Each serialises to exactly the string the spec gives, so the event stream is unchanged.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use shakmaty::uci::UciMove;
use shakmaty::{Color, KnownOutcome, Outcome, Square};

/// An irregularity an arbiter must know about (`docs/events.md`, `docs/fide-laws.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IrregularityCode {
    /// A piece of the mover's touched and put back, another piece moved (4.3a).
    TouchedPieceNotMoved,
    /// An opponent's piece touched that could be captured, and was not (4.3b).
    TouchedOpponentNotCaptured,
    /// The rook touched first when castling (4.4b).
    CastlingRookTouchedFirst,
    /// The king touched for castling when castling is illegal (4.4c).
    KingTouchedCastlingIllegal,
    /// The promotion piece changed after it touched the square (4.4d).
    PromotionPieceChanged,
    /// A move changed after the piece was released on its square (4.6).
    MoveChangedAfterRelease,
    /// An illegal move completed (7.5.1).
    IllegalMove,
    /// A pawn on the last rank not replaced (7.5.2).
    PawnNotPromoted,
    /// The clock pressed without a move (7.8.1).
    ClockPressedWithoutMove,
    /// Pieces displaced (7.4, 7.6).
    DisplacedPieces,
    /// Pieces adjusted out of turn (6.2.5).
    AdjustedOutOfTurn,
    /// A move that looks made with two hands (7.7.1).
    TwoHandsHint,
    /// The board set up the wrong way round (7.2.2).
    BoardReversed,
    /// Moves the board jumped over that cannot be recovered (8.1).
    MovesMissing,
}

impl IrregularityCode {
    /// Every code, in the order of the spec's table.
    pub const ALL: [IrregularityCode; 14] = [
        IrregularityCode::TouchedPieceNotMoved,
        IrregularityCode::TouchedOpponentNotCaptured,
        IrregularityCode::CastlingRookTouchedFirst,
        IrregularityCode::KingTouchedCastlingIllegal,
        IrregularityCode::PromotionPieceChanged,
        IrregularityCode::MoveChangedAfterRelease,
        IrregularityCode::IllegalMove,
        IrregularityCode::PawnNotPromoted,
        IrregularityCode::ClockPressedWithoutMove,
        IrregularityCode::DisplacedPieces,
        IrregularityCode::AdjustedOutOfTurn,
        IrregularityCode::TwoHandsHint,
        IrregularityCode::BoardReversed,
        IrregularityCode::MovesMissing,
    ];

    /// The article of the FIDE Laws of Chess it comes under.
    pub const fn rule(self) -> &'static str {
        match self {
            IrregularityCode::TouchedPieceNotMoved => "4.3a",
            IrregularityCode::TouchedOpponentNotCaptured => "4.3b",
            IrregularityCode::CastlingRookTouchedFirst => "4.4b",
            IrregularityCode::KingTouchedCastlingIllegal => "4.4c",
            IrregularityCode::PromotionPieceChanged => "4.4d",
            IrregularityCode::MoveChangedAfterRelease => "4.6",
            IrregularityCode::IllegalMove => "7.5.1",
            IrregularityCode::PawnNotPromoted => "7.5.2",
            IrregularityCode::ClockPressedWithoutMove => "7.8.1",
            IrregularityCode::DisplacedPieces => "7.4 / 7.6",
            IrregularityCode::AdjustedOutOfTurn => "6.2.5",
            IrregularityCode::TwoHandsHint => "7.7.1",
            IrregularityCode::BoardReversed => "7.2.2",
            IrregularityCode::MovesMissing => "8.1",
        }
    }

    /// The spec's name, e.g. `"touched_piece_not_moved"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            IrregularityCode::TouchedPieceNotMoved => "touched_piece_not_moved",
            IrregularityCode::TouchedOpponentNotCaptured => "touched_opponent_not_captured",
            IrregularityCode::CastlingRookTouchedFirst => "castling_rook_touched_first",
            IrregularityCode::KingTouchedCastlingIllegal => "king_touched_castling_illegal",
            IrregularityCode::PromotionPieceChanged => "promotion_piece_changed",
            IrregularityCode::MoveChangedAfterRelease => "move_changed_after_release",
            IrregularityCode::IllegalMove => "illegal_move",
            IrregularityCode::PawnNotPromoted => "pawn_not_promoted",
            IrregularityCode::ClockPressedWithoutMove => "clock_pressed_without_move",
            IrregularityCode::DisplacedPieces => "displaced_pieces",
            IrregularityCode::AdjustedOutOfTurn => "adjusted_out_of_turn",
            IrregularityCode::TwoHandsHint => "two_hands_hint",
            IrregularityCode::BoardReversed => "board_reversed",
            IrregularityCode::MovesMissing => "moves_missing",
        }
    }
}

impl std::fmt::Display for IrregularityCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A draw claim that would be correct now (9.2, 9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Claim {
    /// The same position for the third time (9.2).
    Threefold,
    /// 50 moves by each side without capture or pawn move (9.3).
    FiftyMoves,
}

impl Claim {
    /// The spec's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Claim::Threefold => "threefold",
            Claim::FiftyMoves => "fifty_moves",
        }
    }
}

/// `1-0`.
pub const WHITE_WINS: Outcome = Outcome::Known(KnownOutcome::Decisive {
    winner: Color::White,
});
/// `0-1`.
pub const BLACK_WINS: Outcome = Outcome::Known(KnownOutcome::Decisive {
    winner: Color::Black,
});
/// `1/2-1/2`.
pub const DRAW: Outcome = Outcome::Known(KnownOutcome::Draw);

/// The result of a game won by `winner`.
pub const fn win_for(winner: Color) -> Outcome {
    Outcome::Known(KnownOutcome::Decisive { winner })
}

/// Serde: a result as `"1-0"`, `"0-1"`, `"1/2-1/2"` or `"*"`.
pub fn ser_outcome<S: Serializer>(o: &Outcome, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(o.as_str())
}

/// A colour's wire name, `"white"` or `"black"`.
pub const fn color_name(c: Color) -> &'static str {
    match c {
        Color::White => "white",
        Color::Black => "black",
    }
}

/// Serde: a colour as `"white"` / `"black"`.
pub fn ser_color<S: Serializer>(c: &Color, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(color_name(*c))
}

/// Serde: an optional colour as `"white"` / `"black"` / null.
pub fn ser_opt_color<S: Serializer>(c: &Option<Color>, s: S) -> Result<S::Ok, S::Error> {
    match c {
        Some(c) => s.serialize_str(color_name(*c)),
        None => s.serialize_none(),
    }
}

/// Serde: squares as a list of algebraic names (`["e2","e4"]`).
pub fn ser_squares<S: Serializer>(squares: &[Square], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(squares.iter().map(|sq| sq.to_string()))
}

/// Serde: a move as its UCI notation (`"e2e4"`).
pub fn ser_uci<S: Serializer>(uci: &UciMove, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(uci)
}

/// Serde: a move from its UCI notation.
pub fn de_uci<'de, D: Deserializer<'de>>(d: D) -> Result<UciMove, D::Error> {
    let s = String::deserialize(d)?;
    UciMove::from_ascii(s.as_bytes())
        .map_err(|_| D::Error::custom(format!("not a UCI move: {s:?}")))
}

/// Serde: a result from `"1-0"`, `"0-1"`, `"1/2-1/2"` or `"*"`.
pub fn de_outcome<'de, D: Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
    let s = String::deserialize(d)?;
    Outcome::from_ascii(s.as_bytes()).map_err(|_| D::Error::custom(format!("not a result: {s:?}")))
}

/// A colour from its wire name.
pub fn color_from_name(s: &str) -> Option<Color> {
    match s {
        "white" => Some(Color::White),
        "black" => Some(Color::Black),
        _ => None,
    }
}

/// Serde: a colour from `"white"` / `"black"`.
pub fn de_color<'de, D: Deserializer<'de>>(d: D) -> Result<Color, D::Error> {
    let s = String::deserialize(d)?;
    color_from_name(&s).ok_or_else(|| D::Error::custom(format!("not a colour: {s:?}")))
}

/// Serde: an optional colour from `"white"` / `"black"` / null.
pub fn de_opt_color<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Color>, D::Error> {
    match Option::<String>::deserialize(d)? {
        None => Ok(None),
        Some(s) => color_from_name(&s)
            .map(Some)
            .ok_or_else(|| D::Error::custom(format!("not a colour: {s:?}"))),
    }
}

/// Serde: squares from a list of algebraic names.
pub fn de_squares<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Square>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| {
            s.parse::<Square>()
                .map_err(|_| D::Error::custom(format!("not a square: {s:?}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialise_to_their_names_and_carry_distinct_articles() {
        for code in IrregularityCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
            let back: IrregularityCode = serde_json::from_str(&json).unwrap();
            assert_eq!(back, code);
            assert!(!code.rule().is_empty());
        }
        assert_eq!(IrregularityCode::DisplacedPieces.rule(), "7.4 / 7.6");
        assert_eq!(
            serde_json::to_string(&Claim::FiftyMoves).unwrap(),
            "\"fifty_moves\""
        );
    }
}
