//! Which piece id is which piece: the table a Certabo host learns from the start position.
//!
//! Every piece carries an RFID chip with a 5-byte id that says nothing about the piece; the
//! host learns the ids from the start position, as Certabo's software (`codes.py`
//! `calibration`, after averaging 15 lines) and picochess (`parser.py` `CertaboCalibrator`, a
//! majority over at least 7 lines) do: the id on a8 is a black rook, on e1 the white king, and
//! so on. The rule here ([`PieceTable::learn`]) takes a *settled* board (each square's reading
//! kept long enough, see [`super::filter`]) and learns when it shows a start position:
//!
//! - the 32 start squares all hold ids, 32 different ones;
//! - every id already known stands on a square of its own piece in the start position seen
//!   one way round (normal, or turned round: then the new ids are learnt turned round too);
//!   with no id known yet the board is taken the normal way round, as both sources take it.
//!   A first calibration on a board turned round would swap colours, kings and queens: make
//!   it the normal way round (index 0 of the line on a8), then turn the board if need be;
//! - every unknown id on a start square is learnt as that square's piece: the first
//!   calibration, a second set, a replaced piece, and Certabo's own way of adding a piece
//!   (its "calibration" without "new setup": put the spare piece on its start square instead
//!   of the original one, keep the old ids);
//! - every unknown settled id on the four middle ranks is a spare queen, White's on ranks 3-4
//!   and Black's on ranks 5-6 (the board seen the way round found above): picochess's
//!   procedure shows the spare queens on d3 and d6 during calibration (its calibration LED
//!   pattern lights them, `command.py` `set_leds_calibrate`), Certabo's adds them on d1/d8.
//!
//! Known ids are never learnt again as another piece (a king and queen swapped on a known set
//! is a wrong position, not a calibration). The table holds at most [`MAX_IDS`] ids.

use std::collections::BTreeMap;

use shakmaty::{Board, Color, Piece, Role};

use super::codec::{CertaboLine, PieceId, SQUARES};
use crate::core::sensed::Orientation;

/// Most ids a table holds (two sets and their spares).
pub const MAX_IDS: usize = 128;

/// Why a settled board taught nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotAStart {
    /// A start square has no settled reading yet.
    #[error("field {field} has not settled")]
    Unsettled {
        /// Device field index.
        field: u8,
    },
    /// A start square reads empty.
    #[error("field {field} is empty")]
    Empty {
        /// Device field index.
        field: u8,
    },
    /// The id on this start square is on another start square too.
    #[error("field {field} repeats the id of another square")]
    Repeated {
        /// Device field index.
        field: u8,
    },
    /// A known id stands on a start square of another piece, either way round.
    #[error("field {field} holds a known piece that does not start there")]
    Misplaced {
        /// Device field index.
        field: u8,
    },
}

/// What one square reads, through the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Nothing (more than two zero bytes).
    Empty,
    /// A known piece.
    Piece(Piece),
    /// An id the table does not know (junk, a misread, a piece never shown).
    Unknown(PieceId),
}

/// What a calibration taught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Learned {
    /// Ids added to the table.
    pub added: usize,
    /// The way round the start position was seen.
    pub orientation: Orientation,
    /// Ids left out because the table was full.
    pub left_out: usize,
}

/// The piece of the standard start position on device field `field` with the board lying
/// `orientation`, if any.
pub fn start_piece(orientation: Orientation, field: u8) -> Option<Piece> {
    Board::default().piece_at(orientation.square_of(field))
}

/// The piece a calibration takes an unknown id on device field `field` for, the board lying
/// `orientation`: the start position's piece there, else a spare queen of the side whose half
/// of the board the field is in (ranks 3-4 White's, 5-6 Black's).
pub fn calibration_piece(orientation: Orientation, field: u8) -> Piece {
    start_piece(orientation, field).unwrap_or_else(|| {
        // Ranks 6-5 (fields 16..32) are Black's half the normal way round.
        let black_half = (field < 32) == (orientation == Orientation::Normal);
        let color = if black_half {
            Color::Black
        } else {
            Color::White
        };
        Role::Queen.of(color)
    })
}

/// Whether a device field is a start square (ranks 1, 2, 7 and 8 either way round).
pub fn is_start_field(field: u8) -> bool {
    !(16..48).contains(&field)
}

/// The id → piece table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PieceTable {
    ids: BTreeMap<PieceId, Piece>,
}

impl PieceTable {
    /// An empty table.
    pub fn new() -> PieceTable {
        PieceTable::default()
    }

    /// A table learnt from the start position in `lines` (each square's reading in more than
    /// half of them, as picochess's calibration takes it).
    pub fn from_start_lines(lines: &[CertaboLine]) -> Result<PieceTable, NotAStart> {
        let mut table = PieceTable::new();
        table.learn(&settled_by_majority(lines))?;
        Ok(table)
    }

    /// Number of ids known.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no id is known.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The piece an id belongs to.
    pub fn piece(&self, id: &PieceId) -> Option<Piece> {
        self.ids.get(id).copied()
    }

    /// Every id and its piece, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&PieceId, &Piece)> {
        self.ids.iter()
    }

    /// What a square reading `id` shows.
    pub fn reading(&self, id: PieceId) -> Reading {
        if id.is_empty() {
            Reading::Empty
        } else {
            self.piece(&id).map_or(Reading::Unknown(id), Reading::Piece)
        }
    }

    /// Learns the ids a settled board shows when it shows a start position (the rule in the
    /// module docs). `settled[i]`: field `i`'s settled reading, `None` while it has not
    /// settled.
    pub fn learn(&mut self, settled: &[Option<PieceId>; SQUARES]) -> Result<Learned, NotAStart> {
        let mut start = [PieceId::EMPTY; SQUARES];
        for field in (0..SQUARES as u8).filter(|f| is_start_field(*f)) {
            let i = usize::from(field);
            let id = settled[i].ok_or(NotAStart::Unsettled { field })?;
            if id.is_empty() {
                return Err(NotAStart::Empty { field });
            }
            if (0..i).any(|j| is_start_field(j as u8) && start[j] == id) {
                return Err(NotAStart::Repeated { field });
            }
            start[i] = id;
        }
        let fits = |o: Orientation| {
            (0..SQUARES as u8)
                .filter(|f| is_start_field(*f))
                .find(|&f| {
                    self.piece(&start[usize::from(f)])
                        .is_some_and(|p| Some(p) != start_piece(o, f))
                })
        };
        let orientation = match (fits(Orientation::Normal), fits(Orientation::Reversed)) {
            (None, _) => Orientation::Normal,
            (Some(_), None) => Orientation::Reversed,
            (Some(field), Some(_)) => return Err(NotAStart::Misplaced { field }),
        };
        let mut new: Vec<(PieceId, Piece)> = Vec::new();
        for field in 0..SQUARES as u8 {
            let Some(id) = settled[usize::from(field)].filter(|id| !id.is_empty()) else {
                continue;
            };
            if self.ids.contains_key(&id) || new.iter().any(|(n, _)| *n == id) {
                continue;
            }
            new.push((id, calibration_piece(orientation, field)));
        }
        let room = MAX_IDS.saturating_sub(self.ids.len());
        let left_out = new.len().saturating_sub(room);
        let added = new.len() - left_out;
        self.ids.extend(new.into_iter().take(room));
        Ok(Learned {
            added,
            orientation,
            left_out,
        })
    }

    /// Takes the ids of a first calibration (`learnt`: each id and the device field it stood
    /// on) as learnt the board lying `orientation` after all: the first calibration takes a
    /// board the normal way round, and a board that was lying turned round shows it later
    /// (see [`super::driver::CertaboStream`]).
    pub fn relearn(&mut self, learnt: &BTreeMap<PieceId, u8>, orientation: Orientation) {
        for (id, field) in learnt {
            if self.ids.contains_key(id) {
                self.ids.insert(*id, calibration_piece(orientation, *field));
            }
        }
    }

    /// Adds one id (a table kept from elsewhere); `false` when the table is full or the id is
    /// known as another piece.
    pub fn insert(&mut self, id: PieceId, piece: Piece) -> bool {
        if id.is_empty() || self.piece(&id).is_some_and(|p| p != piece) {
            return false;
        }
        if !self.ids.contains_key(&id) && self.ids.len() >= MAX_IDS {
            return false;
        }
        self.ids.insert(id, piece);
        true
    }
}

/// Each field's reading in more than half of `lines` (empty forms made one), `None` where no
/// reading has a majority.
pub fn settled_by_majority(lines: &[CertaboLine]) -> [Option<PieceId>; SQUARES] {
    let mut out = [None; SQUARES];
    for (i, o) in out.iter_mut().enumerate() {
        let mut counts: BTreeMap<PieceId, usize> = BTreeMap::new();
        for l in lines {
            *counts.entry(l.squares[i].normalized()).or_default() += 1;
        }
        *o = counts
            .into_iter()
            .find(|(_, n)| *n > lines.len() / 2)
            .map(|(id, _)| id);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start position whose ids are `[seed, 0, field, seed, 1]`.
    fn start_line(seed: u8) -> CertaboLine {
        let mut l = CertaboLine::default();
        for f in (0..64u8).filter(|f| is_start_field(*f)) {
            l.squares[usize::from(f)] = PieceId([seed, 0, f, seed, 1]);
        }
        l
    }

    fn settled(l: &CertaboLine) -> [Option<PieceId>; 64] {
        l.squares.map(|id| Some(id.normalized()))
    }

    #[test]
    fn the_start_position_teaches_every_piece_and_spare_queens_by_half() {
        let mut l = start_line(3);
        l.squares[19] = PieceId([3, 0, 200, 1, 1]); // d6: a black spare queen
        l.squares[43] = PieceId([3, 0, 201, 1, 1]); // d3: a white one
        let t = PieceTable::from_start_lines(&[l.clone(), l.clone(), start_line(3)]).unwrap();
        assert_eq!(t.len(), 34);
        assert_eq!(t.piece(&l.squares[0]), Some(Role::Rook.of(Color::Black)));
        assert_eq!(t.piece(&l.squares[60]), Some(Color::White.king()));
        assert_eq!(t.piece(&l.squares[59]), Some(Role::Queen.of(Color::White)));
        assert_eq!(t.piece(&l.squares[19]), Some(Role::Queen.of(Color::Black)));
        assert_eq!(t.piece(&l.squares[43]), Some(Role::Queen.of(Color::White)));
        assert_eq!(t.reading(PieceId([0, 0, 56, 0, 0])), Reading::Empty);
        assert_eq!(
            t.reading(PieceId([9, 9, 9, 9, 9])),
            Reading::Unknown(PieceId([9, 9, 9, 9, 9]))
        );
    }

    #[test]
    fn a_board_that_is_no_start_position_teaches_nothing() {
        let mut t = PieceTable::new();
        let mut l = start_line(3);
        l.squares[52] = PieceId::EMPTY;
        assert_eq!(t.learn(&settled(&l)), Err(NotAStart::Empty { field: 52 }));
        let mut s = settled(&start_line(3));
        s[7] = None;
        assert_eq!(t.learn(&s), Err(NotAStart::Unsettled { field: 7 }));
        let mut l = start_line(3);
        l.squares[9] = l.squares[8];
        assert_eq!(t.learn(&settled(&l)), Err(NotAStart::Repeated { field: 9 }));
        assert!(t.is_empty());
        // Known pieces off their start squares: king and queen swapped.
        t.learn(&settled(&start_line(3))).unwrap();
        let mut l = start_line(3);
        l.squares.swap(59, 60);
        assert_eq!(
            t.learn(&settled(&l)),
            Err(NotAStart::Misplaced { field: 59 })
        );
    }

    #[test]
    fn new_ids_are_added_the_way_round_the_known_ones_show() {
        let mut t = PieceTable::new();
        let l = start_line(3);
        t.learn(&settled(&l)).unwrap();
        // The board turned round, the white queen replaced by a new one, a spare queen on the
        // fourth field row (rank 4 the normal way round; rank 5, Black's half, turned round).
        let mut r = CertaboLine::default();
        for f in 0..64 {
            r.squares[f] = l.squares[63 - f];
        }
        let new_queen = PieceId([4, 0, 1, 2, 3]);
        let spare = PieceId([4, 0, 9, 9, 9]);
        r.squares[63 - 59] = new_queen;
        r.squares[35] = spare;
        let learned = t.learn(&settled(&r)).unwrap();
        assert_eq!(learned.orientation, Orientation::Reversed);
        assert_eq!(learned.added, 2);
        assert_eq!(t.piece(&new_queen), Some(Role::Queen.of(Color::White)));
        assert_eq!(t.piece(&spare), Some(Role::Queen.of(Color::Black)));
        // The old white queen is kept.
        assert_eq!(t.piece(&l.squares[59]), Some(Role::Queen.of(Color::White)));
        // Nothing new: nothing added.
        assert_eq!(t.learn(&settled(&r)).map(|l| l.added), Ok(0));
    }

    #[test]
    fn the_table_stops_at_its_size() {
        let mut t = PieceTable::new();
        for seed in 1..=5 {
            let l = start_line(seed);
            let learned = t.learn(&settled(&l)).unwrap();
            assert_eq!(learned.added + learned.left_out, 32);
        }
        assert_eq!(t.len(), MAX_IDS);
        assert!(!t.insert(PieceId([1, 1, 1, 1, 1]), Color::White.pawn()));
        let known = *t.iter().next().unwrap().0;
        let piece = t.piece(&known).unwrap();
        assert!(t.insert(known, piece));
        assert!(!t.insert(known, Color::Black.king()));
        assert!(!t.insert(PieceId::EMPTY, Color::Black.king()));
    }
}
