//! The sensed board: what every field reads now, in device numbering, and how device fields map
//! to squares for a board that may be turned round.

use shakmaty::{Board, File, Rank, Square};

use super::observation::{FieldArray, SpecialPiece, SquareReading};

/// How the board lies: the connector on White's left (normal) or turned round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Orientation {
    /// Field 0 is a8.
    #[default]
    Normal,
    /// Field 0 is h1 (board turned round).
    Reversed,
}

impl Orientation {
    /// The square a device field shows under this orientation.
    pub fn square_of(self, index: u8) -> Square {
        let i = match self {
            Orientation::Normal => index as u32,
            Orientation::Reversed => 63 - index as u32,
        };
        Square::from_coords(File::new(i % 8), Rank::new(7 - i / 8))
    }

    /// The device field that shows a square under this orientation.
    pub fn index_of(self, sq: Square) -> u8 {
        let normal = (7 - sq.rank() as u8) * 8 + sq.file() as u8;
        match self {
            Orientation::Normal => normal,
            Orientation::Reversed => 63 - normal,
        }
    }
}

/// The latest reading of every field.
#[derive(Debug, Clone)]
pub struct SensedBoard {
    fields: FieldArray,
}

impl Default for SensedBoard {
    fn default() -> Self {
        SensedBoard {
            fields: [SquareReading::Empty; 64],
        }
    }
}

impl SensedBoard {
    /// Replace every field (a board dump).
    pub fn set_all(&mut self, fields: &FieldArray) {
        self.fields = *fields;
    }

    /// Set one field; returns what it read before.
    pub fn set(&mut self, index: u8, reading: SquareReading) -> SquareReading {
        let slot = &mut self.fields[(index & 63) as usize];
        std::mem::replace(slot, reading)
    }

    /// Every field's reading, in device numbering.
    pub fn fields(&self) -> &FieldArray {
        &self.fields
    }

    /// What a field reads.
    pub fn get(&self, index: u8) -> SquareReading {
        self.fields[(index & 63) as usize]
    }

    /// The chess pieces on the board under an orientation (special pieces left out).
    pub fn board(&self, orientation: Orientation) -> Board {
        let mut board = Board::empty();
        for (i, reading) in self.fields.iter().enumerate() {
            if let SquareReading::Piece(p) = reading {
                board.set_piece_at(orientation.square_of(i as u8), *p);
            }
        }
        board
    }

    /// Squares (under an orientation) holding a special result piece.
    pub fn specials(
        &self,
        orientation: Orientation,
    ) -> Vec<(Square, super::observation::SpecialPiece)> {
        self.fields
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                SquareReading::Special(s) => Some((orientation.square_of(i as u8), *s)),
                _ => None,
            })
            .collect()
    }

    /// Number of occupied fields.
    pub fn occupied(&self) -> usize {
        self.fields
            .iter()
            .filter(|r| **r != SquareReading::Empty)
            .count()
    }
}

/// A field's reading as one character (for a saved board): a piece's FEN letter, `.` for an
/// empty field, `1`/`2`/`3` for the draw, White-wins and Black-wins pieces.
fn reading_char(r: SquareReading) -> char {
    match r {
        SquareReading::Empty => '.',
        SquareReading::Piece(p) => p.char(),
        SquareReading::Special(SpecialPiece::Draw) => '1',
        SquareReading::Special(SpecialPiece::WhiteWins) => '2',
        SquareReading::Special(SpecialPiece::BlackWins) => '3',
    }
}

/// The reading [`reading_char`] gives `c`.
fn char_reading(c: char) -> Option<SquareReading> {
    Some(match c {
        '.' => SquareReading::Empty,
        '1' => SquareReading::Special(SpecialPiece::Draw),
        '2' => SquareReading::Special(SpecialPiece::WhiteWins),
        '3' => SquareReading::Special(SpecialPiece::BlackWins),
        c => SquareReading::Piece(shakmaty::Piece::from_char(c)?),
    })
}

/// Saved as 64 characters, field 0 first ([`reading_char`]).
impl serde::Serialize for SensedBoard {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text: String = self.fields.iter().map(|r| reading_char(*r)).collect();
        s.serialize_str(&text)
    }
}

impl<'de> serde::Deserialize<'de> for SensedBoard {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let mut board = SensedBoard::default();
        let mut n = 0;
        for (i, c) in text.chars().enumerate() {
            let r = (i < 64).then(|| char_reading(c)).flatten().ok_or_else(|| {
                serde::de::Error::custom(format!("not a board of 64 fields: {text:?}"))
            })?;
            board.fields[i] = r;
            n += 1;
        }
        if n != 64 {
            return Err(serde::de::Error::custom(format!(
                "not a board of 64 fields: {text:?}"
            )));
        }
        Ok(board)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dgt_numbering() {
        let o = Orientation::Normal;
        assert_eq!(o.square_of(0), Square::A8);
        assert_eq!(o.square_of(63), Square::H1);
        assert_eq!(o.square_of(52), Square::E2);
        assert_eq!(o.square_of(36), Square::E4);
        assert_eq!(o.square_of(62), Square::G1);
        assert_eq!(o.square_of(45), Square::F3);
        assert_eq!(Orientation::Reversed.square_of(0), Square::H1);
        for i in 0..64 {
            for o in [Orientation::Normal, Orientation::Reversed] {
                assert_eq!(o.index_of(o.square_of(i)), i);
            }
        }
    }
}
