//! The Chessnut Air / Air+ / Pro / GO wire format over Bluetooth LE: the GATT profile, the
//! host's commands and the board's frames. Every fact is from `tests/data/chessnut/README.md`
//! (the vendor's public protocol notes and a bridge run against a real Chessnut GO, with one
//! frame captured off that board); `docs/boards.md` cites them.

use shakmaty::{Color, Piece, Role};

use crate::core::observation::{FieldArray, SquareReading};
use crate::driver::GattProfile;

/// The position service.
pub const POSITION_SERVICE: &str = "1b7e8261-2877-41c3-b46e-cf057c562023";
/// The position frames' notify characteristic.
pub const POSITION_CHAR: &str = "1b7e8262-2877-41c3-b46e-cf057c562023";
/// The command service.
pub const COMMAND_SERVICE: &str = "1b7e8271-2877-41c3-b46e-cf057c562023";
/// The characteristic the host writes commands to.
pub const WRITE_CHAR: &str = "1b7e8272-2877-41c3-b46e-cf057c562023";
/// The characteristic the board notifies command replies (battery) on.
pub const REPLY_CHAR: &str = "1b7e8273-2877-41c3-b46e-cf057c562023";

/// The first byte of a position frame.
pub const POSITION_TAG: u8 = 0x01;
/// A position frame's payload length as a real GO sends it (`0x24`: 32 square bytes and a
/// 4-byte little-endian tick; the vendor documents 2 trailer bytes: the length byte says which).
pub const POSITION_PAYLOAD: u8 = 0x24;
/// Bytes of a position frame's squares (64 nibbles).
pub const SQUARE_BYTES: usize = 32;
/// The longest frame the host must receive whole: a real GO's 38-byte position frame (an ATT
/// MTU of at least 41).
pub const POSITION_FRAME_LEN: usize = 2 + POSITION_PAYLOAD as usize;
/// The first byte of the battery reply (`2a 02 <b> <c>`).
pub const BATTERY_TAG: u8 = 0x2a;

/// Start streaming positions (the board sends none before it).
pub const START_STREAM: [u8; 3] = [0x21, 0x01, 0x00];
/// Ask for the battery level.
pub const BATTERY_REQUEST: [u8; 3] = [0x29, 0x01, 0x00];
/// The LED command's first two bytes (then 8 bytes, rank 8 first, bit 7 = file a).
pub const LEDS: [u8; 2] = [0x0a, 0x08];

/// The Chessnut boards' GATT profile.
pub static PROFILE: GattProfile = GattProfile {
    name_prefixes: &["Chessnut"],
    service: POSITION_SERVICE,
    notify: &[POSITION_CHAR, REPLY_CHAR],
    write: WRITE_CHAR,
    longest_notification: POSITION_FRAME_LEN,
};

/// The LED command lighting `fields` (device field numbering, 0 = a8 … 63 = h1); no fields:
/// every LED off.
pub fn leds(fields: &[u8]) -> Vec<u8> {
    let mut rows = [0u8; 8];
    for &f in fields.iter().filter(|f| **f < 64) {
        rows[usize::from(f / 8)] |= 0x80 >> (f % 8);
    }
    let mut out = LEDS.to_vec();
    out.extend(rows);
    out
}

/// The piece a nibble codes (0 empty, 1 q, 2 k, 3 b, 4 p, 5 n, 6 R, 7 P, 8 r, 9 B, 10 N, 11 Q,
/// 12 K); `None` for 13–15, which no source defines (refused, never guessed).
pub fn reading_of(code: u8) -> Option<SquareReading> {
    let (color, role) = match code {
        0 => return Some(SquareReading::Empty),
        1 => (Color::Black, Role::Queen),
        2 => (Color::Black, Role::King),
        3 => (Color::Black, Role::Bishop),
        4 => (Color::Black, Role::Pawn),
        5 => (Color::Black, Role::Knight),
        6 => (Color::White, Role::Rook),
        7 => (Color::White, Role::Pawn),
        8 => (Color::Black, Role::Rook),
        9 => (Color::White, Role::Bishop),
        10 => (Color::White, Role::Knight),
        11 => (Color::White, Role::Queen),
        12 => (Color::White, Role::King),
        _ => return None,
    };
    Some(SquareReading::Piece(Piece { color, role }))
}

/// The nibble coding `reading` (`None` for a reading no Chessnut sends).
pub fn code_of(reading: SquareReading) -> Option<u8> {
    let SquareReading::Piece(p) = reading else {
        return (reading == SquareReading::Empty).then_some(0);
    };
    Some(match (p.color, p.role) {
        (Color::Black, Role::Queen) => 1,
        (Color::Black, Role::King) => 2,
        (Color::Black, Role::Bishop) => 3,
        (Color::Black, Role::Pawn) => 4,
        (Color::Black, Role::Knight) => 5,
        (Color::White, Role::Rook) => 6,
        (Color::White, Role::Pawn) => 7,
        (Color::Black, Role::Rook) => 8,
        (Color::White, Role::Bishop) => 9,
        (Color::White, Role::Knight) => 10,
        (Color::White, Role::Queen) => 11,
        (Color::White, Role::King) => 12,
    })
}

/// The device field (0 = a8 … 63 = h1) of the `k`-th square of a frame, which runs h8, g8, …
/// a8, h7, … a1.
pub fn field_of_square(k: usize) -> usize {
    (k / 8) * 8 + 7 - k % 8
}

/// What a notification of the position characteristic is.
#[derive(Debug, Clone, PartialEq)]
pub enum PositionFrame {
    /// A whole position (device field numbering) and the board's tick, when the trailer has one.
    Position {
        /// The 64 squares.
        fields: Box<FieldArray>,
        /// The little-endian counter of a GO's 4-byte trailer.
        tick: Option<u32>,
    },
    /// Shorter than its length byte says: cut by the link (a 23-byte ATT MTU gives 20 bytes).
    Truncated {
        /// Bytes received.
        got: usize,
        /// Bytes the frame has.
        needed: usize,
    },
    /// Not a position frame, or a square with an undefined code.
    Bad,
}

/// Reads one notification of the position characteristic.
pub fn parse_position(bytes: &[u8]) -> PositionFrame {
    if bytes.first() != Some(&POSITION_TAG) {
        return PositionFrame::Bad;
    }
    let Some(&len) = bytes.get(1) else {
        return PositionFrame::Truncated {
            got: bytes.len(),
            needed: POSITION_FRAME_LEN,
        };
    };
    let len = usize::from(len);
    if len < SQUARE_BYTES {
        return PositionFrame::Bad;
    }
    if bytes.len() < 2 + len {
        return PositionFrame::Truncated {
            got: bytes.len(),
            needed: 2 + len,
        };
    }
    let mut fields = Box::new([SquareReading::Empty; 64]);
    for k in 0..64 {
        let byte = bytes[2 + k / 2];
        let code = if k % 2 == 0 { byte & 0x0f } else { byte >> 4 };
        let Some(reading) = reading_of(code) else {
            return PositionFrame::Bad;
        };
        fields[field_of_square(k)] = reading;
    }
    let trailer = &bytes[2 + SQUARE_BYTES..2 + len];
    let tick = (trailer.len() == 4).then(|| u32::from_le_bytes(trailer.try_into().expect("4")));
    PositionFrame::Position { fields, tick }
}

/// The position frame a real GO sends for `fields` with `tick` (the emulator's encoder).
pub fn encode_position(fields: &FieldArray, tick: u32) -> Vec<u8> {
    let mut out = vec![POSITION_TAG, POSITION_PAYLOAD];
    let mut squares = [0u8; SQUARE_BYTES];
    for k in 0..64 {
        let code = code_of(fields[field_of_square(k)]).unwrap_or(0);
        squares[k / 2] |= if k % 2 == 0 { code } else { code << 4 };
    }
    out.extend(squares);
    out.extend(tick.to_le_bytes());
    out
}

/// The battery reply `2a 02 <b> <c>`: bits 0–6 of `b` the charge in percent (clamped to 100),
/// bit 7 charging. `None` for anything else.
pub fn parse_battery(bytes: &[u8]) -> Option<(u8, bool)> {
    match bytes {
        [BATTERY_TAG, 0x02, b, _, ..] => Some(((b & 0x7f).min(100), b & 0x80 != 0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn placement(fields: &FieldArray) -> String {
        let mut board = shakmaty::Board::empty();
        for (i, f) in fields.iter().enumerate() {
            if let SquareReading::Piece(p) = f {
                let sq = shakmaty::Square::new(((7 - i / 8) * 8 + i % 8) as u32);
                board.set_piece_at(sq, *p);
            }
        }
        board.board_fen().to_string()
    }

    /// The frame captured off a real Chessnut GO (tests/data/chessnut/README.md): its position,
    /// with the a8 rook the board did not sense, and its tick.
    const REAL_GO: &str =
        "0124 2080050044044044000000000005000003a700000300770007000c7706009060 4d000000";

    #[test]
    fn the_real_go_frame_reads_as_the_position_it_showed() {
        let bytes = hex(REAL_GO);
        assert_eq!(bytes.len(), 38);
        let PositionFrame::Position { fields, tick } = parse_position(&bytes) else {
            panic!("not a position");
        };
        assert_eq!(
            placement(&fields),
            "3nr1k1/ppp2ppp/8/5n2/4NP1b/2PP3b/PP1K3P/R1B4R"
        );
        assert_eq!(
            fields[0],
            SquareReading::Empty,
            "a8: the rook the board did not sense"
        );
        assert_eq!(tick, Some(0x4d));
        assert_eq!(encode_position(&fields, 0x4d), bytes);
    }

    #[test]
    fn cut_undefined_and_foreign_frames_are_never_positions() {
        let bytes = hex(REAL_GO);
        assert_eq!(
            parse_position(&bytes[..20]),
            PositionFrame::Truncated {
                got: 20,
                needed: 38
            }
        );
        let mut bad = bytes.clone();
        bad[5] = 0x0d; // a nibble of 13
        assert_eq!(parse_position(&bad), PositionFrame::Bad);
        assert_eq!(
            parse_position(&[0x2a, 0x02, 0x50, 0x00]),
            PositionFrame::Bad
        );
        // The vendor's 36-byte frame (2 trailer bytes) reads, without a tick.
        let mut vendor = bytes[..36].to_vec();
        vendor[1] = 0x22;
        assert!(matches!(
            parse_position(&vendor),
            PositionFrame::Position { tick: None, .. }
        ));
    }

    #[test]
    fn battery_and_leds_are_as_documented() {
        assert_eq!(
            parse_battery(&[0x2a, 0x02, 0x80 | 77, 0x01]),
            Some((77, true))
        );
        assert_eq!(parse_battery(&[0x2a, 0x02, 0x7f, 0x00]), Some((100, false)));
        assert_eq!(parse_battery(&[0x01, 0x24]), None);
        // a8 (field 0) is rank 8's bit 7; h1 (field 63) rank 1's bit 0.
        assert_eq!(
            leds(&[0, 63]),
            vec![0x0a, 0x08, 0x80, 0, 0, 0, 0, 0, 0, 0x01]
        );
        assert_eq!(leds(&[]), vec![0x0a, 0x08, 0, 0, 0, 0, 0, 0, 0, 0]);
    }
}
