//! A DGT board's EE memory (`docs/dgt-protocol.md` §1.6), sans-IO: the cyclic log of field
//! changes, clock presses and tags that a board writes to its EEPROM, as it comes in an EE_MOVES
//! dump (single-board `0x8F`) and in the bus replies UPDATE (`0x85`) and FROM_START (`0x86`).
//!
//! [`parse`] turns the bytes into [`EeEntry`]s (bytes that start no valid entry are skipped and
//! counted, never a panic); [`encode`] is its inverse; [`memory_entries`] turns entries into the
//! family-neutral [`MemoryEntry`]s the core reads.

use super::bwtime::{bcd, clamped_secs, to_bcd};
use super::{piece_code, reading_from_code};
use crate::core::observation::{ClockSide, FieldArray, MemoryEntry, SquareReading};

/// A one-byte entry of the EE memory (§1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EeTag {
    /// `0x6A` EE_POWERUP: the board was switched on; the pieces it found follow as field
    /// changes, in no particular order.
    PowerUp,
    /// `0x6B` EE_EOF: the end of a dump.
    Eof,
    /// `0x6C` EE_FOURROWS: sixteen pieces on the four outer ranks, not in the start position.
    FourRows,
    /// `0x6D` EE_EMPTYBOARD: the board was found empty.
    EmptyBoard,
    /// `0x6E` EE_DOWNLOADED: a dump was sent.
    Downloaded,
    /// `0x6F` EE_BEGINPOS: the start position, White with the connector on the left.
    BeginPos,
    /// `0x7A` EE_BEGINPOS_ROT: the start position on a board turned round.
    BeginPosRotated,
    /// `0x7B` EE_START_TAG: written by the bus command SET_START_GAME; every piece on the
    /// board follows as a field change.
    StartTag,
    /// `0x7C` EE_WATCHDOG_ACTION: the watchdog reset the board; the power-up sequence follows.
    WatchdogAction,
    /// `0x7D` EE_FUTURE_1, reserved.
    Reserved1,
    /// `0x7E` EE_FUTURE_2, reserved.
    Reserved2,
    /// `0x7F` EE_NOP, filler.
    Nop,
    /// `0x00` EE_NOP2, filler.
    Nop2,
}

impl EeTag {
    /// Every tag, in byte order of the header's list.
    pub const ALL: [EeTag; 13] = [
        EeTag::PowerUp,
        EeTag::Eof,
        EeTag::FourRows,
        EeTag::EmptyBoard,
        EeTag::Downloaded,
        EeTag::BeginPos,
        EeTag::BeginPosRotated,
        EeTag::StartTag,
        EeTag::WatchdogAction,
        EeTag::Reserved1,
        EeTag::Reserved2,
        EeTag::Nop,
        EeTag::Nop2,
    ];

    /// The tag's byte.
    pub fn byte(self) -> u8 {
        match self {
            EeTag::PowerUp => 0x6A,
            EeTag::Eof => 0x6B,
            EeTag::FourRows => 0x6C,
            EeTag::EmptyBoard => 0x6D,
            EeTag::Downloaded => 0x6E,
            EeTag::BeginPos => 0x6F,
            EeTag::BeginPosRotated => 0x7A,
            EeTag::StartTag => 0x7B,
            EeTag::WatchdogAction => 0x7C,
            EeTag::Reserved1 => 0x7D,
            EeTag::Reserved2 => 0x7E,
            EeTag::Nop => 0x7F,
            EeTag::Nop2 => 0x00,
        }
    }

    /// The tag a byte stands for; `None` for bytes that are no one-byte entry.
    pub fn from_byte(b: u8) -> Option<EeTag> {
        EeTag::ALL.into_iter().find(|t| t.byte() == b)
    }
}

/// One entry of the EE memory (§1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EeEntry {
    /// Two bytes `010r nnnn` `00ii iiii`: field `i` now reads piece code `n`.
    Field {
        /// Field index 0..63 (DGT numbering, §1.4).
        index: u8,
        /// What the field now reads (piece code 0: the piece was taken away).
        reading: SquareReading,
        /// Bit `r`: written less than about 250 ms after the previous field change.
        quick: bool,
    },
    /// Three bytes `011f hhhh` `0MMM mmmm` `0SSS ssss`: a clock press, the time of the face that
    /// stopped (written when the lever moves).
    Time {
        /// Bit `f`: 1 = the left face seen from the front (physical sides: a board turned round
        /// does not swap them).
        side: ClockSide,
        /// The time that face showed, in whole seconds as milliseconds (at most 9:59:59).
        millis: u32,
    },
    /// A one-byte entry.
    Tag(EeTag),
}

impl EeEntry {
    /// Number of bytes the entry takes in the memory (1, 2 or 3).
    pub fn encoded_len(&self) -> usize {
        match self {
            EeEntry::Field { .. } => 2,
            EeEntry::Time { .. } => 3,
            EeEntry::Tag(_) => 1,
        }
    }

    /// Appends the entry's bytes to `out`. Values that do not fit are clamped: the field index
    /// to 6 bits, times above 9:59:59 to 9:59:59, milliseconds truncated to whole seconds.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        match *self {
            EeEntry::Field {
                index,
                reading,
                quick,
            } => {
                out.push(0x40 | u8::from(quick) << 4 | piece_code(reading));
                out.push(index & 0x3F);
            }
            EeEntry::Time { side, millis } => {
                let secs = clamped_secs(millis);
                let left = u8::from(side == ClockSide::Left) << 4;
                out.push(0x60 | left | (secs / 3600) as u8);
                out.push(to_bcd(secs / 60 % 60));
                out.push(to_bcd(secs % 60));
            }
            EeEntry::Tag(t) => out.push(t.byte()),
        }
    }
}

/// The entries read from EE memory bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EeLog {
    /// The valid entries, in memory order (oldest first).
    pub entries: Vec<EeEntry>,
    /// Bytes that started no valid entry and were skipped (with the entries' lengths, they add
    /// up to the input's length).
    pub skipped_bytes: usize,
}

/// Reads EE memory bytes into entries (§1.6).
///
/// A byte that cannot start an entry (`0x01`–`0x3F`, or bit 7 set), a field change whose second
/// byte is above 63, and a time whose minutes or seconds are not 00–59 in the `0TTT uuuu` form
/// are each skipped by their first byte alone: reading goes on at the next byte, which may
/// start a valid entry (a cyclic memory that wrapped begins inside a partly overwritten entry,
/// and the bytes after a stray one are not lost). An entry cut off by the end of the bytes is
/// skipped whole.
pub fn parse(bytes: &[u8]) -> EeLog {
    let mut log = EeLog::default();
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let (entry, len) = match b {
            0x40..=0x5F => (field(b, bytes.get(i + 1).copied()), 2),
            0x60..=0x69 | 0x70..=0x79 => (
                time(b, bytes.get(i + 1).copied(), bytes.get(i + 2).copied()),
                3,
            ),
            _ => (EeTag::from_byte(b).map(EeEntry::Tag).ok_or(Bad::Invalid), 1),
        };
        match entry {
            Ok(e) => {
                log.entries.push(e);
                i += len;
            }
            Err(Bad::Invalid) => {
                log.skipped_bytes += 1;
                i += 1;
            }
            Err(Bad::Truncated) => {
                log.skipped_bytes += bytes.len() - i;
                break;
            }
        }
    }
    log
}

/// Why bytes make no entry.
enum Bad {
    /// The entry's bytes are out of range.
    Invalid,
    /// The bytes end inside the entry.
    Truncated,
}

/// A field change from its two bytes.
fn field(b: u8, next: Option<u8>) -> Result<EeEntry, Bad> {
    let index = next.ok_or(Bad::Truncated)?;
    match (index, reading_from_code(b & 0x0F)) {
        (0..=63, Some(reading)) => Ok(EeEntry::Field {
            index,
            reading,
            quick: b & 0x10 != 0,
        }),
        _ => Err(Bad::Invalid),
    }
}

/// A time entry from its three bytes.
fn time(b: u8, minutes: Option<u8>, seconds: Option<u8>) -> Result<EeEntry, Bad> {
    let (minutes, seconds) = (
        minutes.ok_or(Bad::Truncated)?,
        seconds.ok_or(Bad::Truncated)?,
    );
    let hours = u32::from(b & 0x0F);
    match (bcd(minutes), bcd(seconds)) {
        (Some(m), Some(s)) if hours <= 9 => Ok(EeEntry::Time {
            side: if b & 0x10 != 0 {
                ClockSide::Left
            } else {
                ClockSide::Right
            },
            millis: ((hours * 60 + m) * 60 + s) * 1000,
        }),
        _ => Err(Bad::Invalid),
    }
}

/// The bytes of `entries`, in order ([`parse`] gives them back).
pub fn encode(entries: &[EeEntry]) -> Vec<u8> {
    encode_within(entries, usize::MAX)
}

/// The bytes of the longest run of `entries` from the first that takes at most `max` bytes.
pub fn encode_within(entries: &[EeEntry], max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        if out.len() + e.encoded_len() > max {
            break;
        }
        e.encode_into(&mut out);
    }
    out
}

/// The start position in DGT field numbering (field 0 = a8 with the connector on White's left,
/// §1.4): black pieces on fields 0–15, white pieces on 48–63.
pub fn start_position() -> FieldArray {
    const BACK: [u8; 8] = [2, 3, 4, 6, 5, 4, 3, 2];
    let mut codes = [0u8; 64];
    for file in 0..8 {
        codes[file] = BACK[file] + 6;
        codes[8 + file] = 7;
        codes[48 + file] = 1;
        codes[56 + file] = BACK[file];
    }
    codes.map(|c| reading_from_code(c).unwrap_or_default())
}

/// The family-neutral form of EE entries, in order (§1.6):
///
/// - EE_POWERUP, EE_WATCHDOG_ACTION (the power-up sequence follows it), EE_START_TAG and
///   EE_EMPTYBOARD: [`MemoryEntry::Board`] with every field empty (after power-up and a start
///   tag the pieces found are then logged one by one as field changes);
/// - EE_BEGINPOS: `Board` with the start position in DGT numbering ([`start_position`]);
///   EE_BEGINPOS_ROT: the same turned round (field `i` reads what field `63 − i` does);
/// - EE_FOURROWS: [`MemoryEntry::Unknown`] (sixteen pieces on the outer ranks, order unknown);
/// - a field change: [`MemoryEntry::Field`]; a time: [`MemoryEntry::Press`] (the face that
///   stopped and its time);
/// - NOPs, EE_EOF, EE_DOWNLOADED and the reserved tags: nothing.
pub fn memory_entries(entries: &[EeEntry]) -> Vec<MemoryEntry> {
    let empty = || MemoryEntry::Board(Box::new([SquareReading::Empty; 64]));
    entries
        .iter()
        .filter_map(|e| match *e {
            EeEntry::Field {
                index,
                reading,
                quick,
            } => Some(MemoryEntry::Field {
                index,
                reading,
                quick,
            }),
            EeEntry::Time { side, millis } => Some(MemoryEntry::Press { side, millis }),
            EeEntry::Tag(t) => match t {
                EeTag::PowerUp | EeTag::WatchdogAction | EeTag::StartTag | EeTag::EmptyBoard => {
                    Some(empty())
                }
                EeTag::BeginPos => Some(MemoryEntry::Board(Box::new(start_position()))),
                EeTag::BeginPosRotated => {
                    let mut fields = start_position();
                    fields.reverse();
                    Some(MemoryEntry::Board(Box::new(fields)))
                }
                EeTag::FourRows => Some(MemoryEntry::Unknown),
                EeTag::Eof
                | EeTag::Downloaded
                | EeTag::Reserved1
                | EeTag::Reserved2
                | EeTag::Nop
                | EeTag::Nop2 => None,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::sensed::Orientation;
    use shakmaty::{Chess, Color, Piece, Position, Role};

    fn piece(color: Color, role: Role) -> SquareReading {
        SquareReading::Piece(Piece { color, role })
    }

    fn field(index: u8, reading: SquareReading, quick: bool) -> EeEntry {
        EeEntry::Field {
            index,
            reading,
            quick,
        }
    }

    #[test]
    fn field_changes_from_the_header_layout() {
        // 0t0r nnnn, 00ii iiii: white pawn onto field 52 (e2), then e2 emptied quickly.
        let log = parse(&[0x41, 52, 0x50, 52]);
        assert_eq!(
            log.entries,
            vec![
                field(52, piece(Color::White, Role::Pawn), false),
                field(52, SquareReading::Empty, true),
            ]
        );
        assert_eq!(log.skipped_bytes, 0);
        // Codes 13–15 are the special pieces; 0x5C is a quick black queen.
        let log = parse(&[0x4D, 0, 0x4E, 1, 0x4F, 63, 0x5C, 9]);
        assert_eq!(
            log.entries,
            vec![
                field(0, reading_from_code(13).unwrap(), false),
                field(1, reading_from_code(14).unwrap(), false),
                field(63, reading_from_code(15).unwrap(), false),
                field(9, piece(Color::Black, Role::Queen), true),
            ]
        );
    }

    #[test]
    fn times_are_tens_and_units() {
        // 0x61 0x23 0x45: right face (f = 0), 1:23:45. 0x79 0x59 0x09: left face, 9:59:09.
        let log = parse(&[0x61, 0x23, 0x45, 0x79, 0x59, 0x09, 0x60, 0x00, 0x00]);
        assert_eq!(
            log.entries,
            vec![
                EeEntry::Time {
                    side: ClockSide::Right,
                    millis: 5_025_000
                },
                EeEntry::Time {
                    side: ClockSide::Left,
                    millis: 35_949_000
                },
                EeEntry::Time {
                    side: ClockSide::Right,
                    millis: 0
                },
            ]
        );
    }

    #[test]
    fn every_one_byte_tag() {
        let bytes = [
            0x6A, 0x6B, 0x6C, 0x6D, 0x6E, 0x6F, 0x7A, 0x7B, 0x7C, 0x7D, 0x7E, 0x7F, 0x00,
        ];
        let log = parse(&bytes);
        assert_eq!(log.skipped_bytes, 0);
        assert_eq!(
            log.entries,
            EeTag::ALL
                .iter()
                .map(|&t| EeEntry::Tag(t))
                .collect::<Vec<_>>()
        );
        for b in 0..=0xFFu8 {
            let is_tag = matches!(b, 0x00 | 0x6A..=0x6F | 0x7A..=0x7F);
            assert_eq!(EeTag::from_byte(b).is_some(), is_tag, "{b:#04x}");
        }
    }

    #[test]
    fn invalid_bytes_are_skipped_one_at_a_time() {
        // 0x01–0x3F and bytes with bit 7 start nothing; the pawn on field 8 after them counts.
        let log = parse(&[0x01, 0x3F, 0x80, 0xFF, 0x41, 8]);
        assert_eq!(
            log.entries,
            vec![field(8, piece(Color::White, Role::Pawn), false)]
        );
        assert_eq!(log.skipped_bytes, 4);
        // A field change to field 64 is invalid: its first byte is skipped and 0x40 (the
        // "field number") is read as the first byte of the next entry: empty field 5.
        let log = parse(&[0x42, 0x40, 5]);
        assert_eq!(log.entries, vec![field(5, SquareReading::Empty, false)]);
        assert_eq!(log.skipped_bytes, 1);
        // Minutes 0x60 are no 00–59: 0x62 is skipped; 0x60 then starts a time whose seconds
        // 0x6D are no 00–59 either: skipped; 0x00 and 0x6D are tags.
        let log = parse(&[0x62, 0x60, 0x00, 0x6D]);
        assert_eq!(
            log.entries,
            vec![EeEntry::Tag(EeTag::Nop2), EeEntry::Tag(EeTag::EmptyBoard)]
        );
        assert_eq!(log.skipped_bytes, 2);
        // Seconds 0x5A (units 10): 0x70 skipped; 0x5A then starts a field change to "field"
        // 0x7B: skipped; 0x00 and 0x7B are tags.
        let log = parse(&[0x70, 0x00, 0x5A, 0x7B]);
        assert_eq!(
            log.entries,
            vec![EeEntry::Tag(EeTag::Nop2), EeEntry::Tag(EeTag::StartTag)]
        );
        assert_eq!(log.skipped_bytes, 2);
    }

    #[test]
    fn truncated_entries_are_skipped_whole() {
        for (bytes, entries) in [
            (&[0x6A, 0x41][..], 1),
            (&[0x6A, 0x61, 0x00][..], 1),
            (&[0x61][..], 0),
            (&[0x41, 0x00, 0x71, 0x01][..], 1),
        ] {
            let log = parse(bytes);
            assert_eq!(log.entries.len(), entries, "{bytes:x?}");
            let used: usize = log.entries.iter().map(EeEntry::encoded_len).sum();
            assert_eq!(used + log.skipped_bytes, bytes.len(), "{bytes:x?}");
        }
    }

    #[test]
    fn garbage_never_panics_and_lengths_add_up() {
        // Every byte value in every position of short memories (a deterministic sweep).
        let mut bytes = Vec::new();
        for a in 0..=0xFFu8 {
            for b in [0x00, 0x3F, 0x40, 0x59, 0x5A, 0x7F, 0x80, 0xFF] {
                bytes.extend([a, b, a.wrapping_add(b)]);
            }
        }
        for len in [0, 1, 2, 3, 100, bytes.len()] {
            let log = parse(&bytes[..len]);
            let used: usize = log.entries.iter().map(EeEntry::encoded_len).sum();
            assert_eq!(used + log.skipped_bytes, len);
            // What was read is written back to bytes that read the same.
            assert_eq!(parse(&encode(&log.entries)).entries, log.entries);
        }
    }

    #[test]
    fn encode_writes_the_header_layout() {
        let entries = [
            EeEntry::Tag(EeTag::StartTag),
            field(52, SquareReading::Empty, true),
            field(36, piece(Color::White, Role::Pawn), false),
            EeEntry::Time {
                side: ClockSide::Left,
                millis: 5_025_999,
            },
            EeEntry::Time {
                side: ClockSide::Right,
                millis: u32::MAX,
            },
        ];
        assert_eq!(
            encode(&entries),
            [0x7B, 0x50, 52, 0x41, 36, 0x71, 0x23, 0x45, 0x69, 0x59, 0x59]
        );
        // A cap keeps whole entries only.
        assert_eq!(encode_within(&entries, 4), [0x7B, 0x50, 52]);
        assert_eq!(encode_within(&entries, 0), Vec::<u8>::new());
    }

    #[test]
    fn start_position_is_the_dgt_numbering_of_the_chess_start() {
        // Oracle: shakmaty's start position, read through the core's field → square mapping.
        let start = Chess::default();
        for index in 0..64u8 {
            let sq = Orientation::Normal.square_of(index);
            let expected = start
                .board()
                .piece_at(sq)
                .map_or(SquareReading::Empty, SquareReading::Piece);
            assert_eq!(start_position()[usize::from(index)], expected, "{index}");
        }
        assert_eq!(start_position()[4], piece(Color::Black, Role::King));
        assert_eq!(start_position()[59], piece(Color::White, Role::Queen));
    }

    #[test]
    fn memory_entries_of_every_kind() {
        let bytes = [
            0x7F, 0x7F, 0x7F, 0x6A, // power-up after three NOPs
            0x45, 60,   // white king found on e1
            0x7C, // watchdog
            0x6D, // empty board
            0x6F, // start position
            0x7A, // start position, turned round
            0x6C, // four rows
            0x50, 52, // e2 emptied, quickly
            0x72, 0x05, 0x30, // left face 2:05:30
            0x62, 0x00, 0x01, // right face 2:00:01
            0x7B, // start tag
            0x6E, 0x7D, 0x7E, 0x00, 0x6B, // downloaded, reserved, NOP2, EOF: nothing
        ];
        let log = parse(&bytes);
        assert_eq!(log.skipped_bytes, 0);
        let empty = MemoryEntry::Board(Box::new([SquareReading::Empty; 64]));
        let start = start_position();
        let mut turned = [SquareReading::Empty; 64];
        for i in 0..64 {
            turned[i] = start[63 - i];
        }
        assert_eq!(turned[60], piece(Color::Black, Role::Queen));
        assert_eq!(turned[3], piece(Color::White, Role::King));
        assert_eq!(
            memory_entries(&log.entries),
            vec![
                empty.clone(),
                MemoryEntry::Field {
                    index: 60,
                    reading: piece(Color::White, Role::King),
                    quick: false
                },
                empty.clone(),
                empty.clone(),
                MemoryEntry::Board(Box::new(start)),
                MemoryEntry::Board(Box::new(turned)),
                MemoryEntry::Unknown,
                MemoryEntry::Field {
                    index: 52,
                    reading: SquareReading::Empty,
                    quick: true
                },
                MemoryEntry::Press {
                    side: ClockSide::Left,
                    millis: (2 * 3600 + 5 * 60 + 30) * 1000
                },
                MemoryEntry::Press {
                    side: ClockSide::Right,
                    millis: (2 * 3600 + 1) * 1000
                },
                empty,
            ]
        );
    }
}
