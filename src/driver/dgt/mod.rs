//! The DGT driver: e-board and clock wire protocol (sans-IO), board→host frames and host→board
//! commands, and the [`Dgt`] [`crate::driver::BoardDriver`].
//!
//! See `docs/dgt-protocol.md` §1.3 (board messages), §1.6 (the EE memory, [`ee`]), §1.9 (bus
//! mode, [`bus`]), §2.1 (BWTIME: clock times and clock acks), §2.2 (clock commands). Bytes go
//! in, [`DgtMessage`]s come out; commands go in, bytes come out.

use crate::core::observation::{
    ClockReading, FieldArray, Observation, SpecialPiece, SquareReading,
};
use shakmaty::{Color, Piece, Role};

pub mod bus;
mod bwtime;
pub mod clock;
mod command;
mod decode;
mod driver;
pub mod ee;
mod encode;

pub use bus::DgtBus;
pub use bwtime::BwTime;
pub use command::{ClockCommand, DgtCommand};
pub use decode::{DgtDecoder, MAX_BUFFERED_FRAME, MAX_EE_FRAME};
pub use driver::{Dgt, DgtStream, KEEPALIVE, NAME, message};
pub use ee::{EeEntry, EeTag, memory_entries};

/// Largest TRADEMARK (0x92) payload accepted or produced, in bytes.
pub const MAX_TRADEMARK_PAYLOAD: usize = 509;
/// Largest BATTERY_STATUS (0xA0) payload accepted or produced, in bytes.
pub const MAX_BATTERY_PAYLOAD: usize = 64;

/// Message ids (header byte, with the message bit set) of the board→host frames (§1.3).
pub mod id {
    /// 0x86 BOARD_DUMP, total length 67.
    pub const BOARD_DUMP: u8 = 0x86;
    /// 0x8D BWTIME, total length 10.
    pub const BWTIME: u8 = 0x8D;
    /// 0x8E FIELD_UPDATE, total length 5.
    pub const FIELD_UPDATE: u8 = 0x8E;
    /// 0x8F EE_MOVES, total length 7939 (`0x1F03`) from DGT's boards, at most 16,383.
    pub const EE_MOVES: u8 = 0x8F;
    /// 0x90 BUSADRES, total length 5.
    pub const BUS_ADDRESS: u8 = 0x90;
    /// 0x91 SERIALNR, total length 8.
    pub const SERIAL_NUMBER: u8 = 0x91;
    /// 0x92 TRADEMARK, variable length.
    pub const TRADEMARK: u8 = 0x92;
    /// 0x93 VERSION, total length 5.
    pub const VERSION: u8 = 0x93;
    /// 0xA0 BATTERY_STATUS, variable length (parse by header).
    pub const BATTERY: u8 = 0xA0;
    /// 0xA2 LONG_SERIALNR, total length 13.
    pub const LONG_SERIAL_NUMBER: u8 = 0xA2;
}

/// The DGT piece code (§1.4) of a field reading: 0 empty, 1–6 white P R N B K Q,
/// 7–12 black P R N B K Q, 13–15 the special draw / white-wins / black-wins pieces.
pub fn piece_code(reading: SquareReading) -> u8 {
    match reading {
        SquareReading::Empty => 0,
        SquareReading::Piece(Piece { color, role }) => {
            let base = match role {
                Role::Pawn => 1,
                Role::Rook => 2,
                Role::Knight => 3,
                Role::Bishop => 4,
                Role::King => 5,
                Role::Queen => 6,
            };
            match color {
                Color::White => base,
                Color::Black => base + 6,
            }
        }
        SquareReading::Special(SpecialPiece::Draw) => 13,
        SquareReading::Special(SpecialPiece::WhiteWins) => 14,
        SquareReading::Special(SpecialPiece::BlackWins) => 15,
    }
}

/// The field reading for a DGT piece code (§1.4); `None` for codes above 15.
pub fn reading_from_code(code: u8) -> Option<SquareReading> {
    let piece = |color, role| Some(SquareReading::Piece(Piece { color, role }));
    let role = |n: u8| match n {
        1 => Role::Pawn,
        2 => Role::Rook,
        3 => Role::Knight,
        4 => Role::Bishop,
        5 => Role::King,
        _ => Role::Queen,
    };
    match code {
        0 => Some(SquareReading::Empty),
        1..=6 => piece(Color::White, role(code)),
        7..=12 => piece(Color::Black, role(code - 6)),
        13 => Some(SquareReading::Special(SpecialPiece::Draw)),
        14 => Some(SquareReading::Special(SpecialPiece::WhiteWins)),
        15 => Some(SquareReading::Special(SpecialPiece::BlackWins)),
        _ => None,
    }
}

/// A clock acknowledgement rebuilt from a BWTIME frame that carries an ack (§2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockAck {
    /// 0x10 = normal ack; anything else is an error.
    pub ack0: u8,
    /// The command answered, or (bit 7 set) an unsolicited message (0x81 ready, 0x88 button…).
    pub ack1: u8,
    /// Data byte (version: major << 4 | minor).
    pub ack2: u8,
    /// Data byte (button code for 0x88).
    pub ack3: u8,
}

impl ClockAck {
    /// The ack as the driver's own [`crate::driver::DriverReply`].
    pub fn reply(&self) -> crate::driver::DriverReply {
        crate::driver::DriverReply::DgtClockAck(*self)
    }

    /// The ack carried by a [`crate::driver::DriverReply`] made by [`ClockAck::reply`].
    pub fn from_reply(r: &crate::driver::DriverReply) -> Option<ClockAck> {
        match r {
            crate::driver::DriverReply::DgtClockAck(a) => Some(*a),
            crate::driver::DriverReply::DgtBus(_) => None,
        }
    }
}

/// Battery status (0xA0), parsed loosely from whatever length the header gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatteryStatus {
    /// Charge left in percent, when the frame carries it and it is plausible (0..=100).
    pub percent: Option<u8>,
    /// Charging, when the status byte is present.
    pub charging: Option<bool>,
    /// The payload as received.
    pub raw: Vec<u8>,
}

impl BatteryStatus {
    /// Interprets a battery payload loosely (§1.3): byte 0 is the charge in percent (kept only
    /// when ≤ 100), byte 8, when present, has the charging flag in bit 0.
    pub fn from_raw(raw: Vec<u8>) -> Self {
        BatteryStatus {
            percent: raw.first().copied().filter(|&p| p <= 100),
            charging: raw.get(8).map(|&b| b & 0x01 != 0),
            raw,
        }
    }

    /// The family-neutral battery level.
    pub fn level(&self) -> crate::driver::BatteryLevel {
        crate::driver::BatteryLevel {
            percent: self.percent,
            charging: self.charging,
        }
    }
}

/// One decoded board→host message.
#[derive(Debug, Clone, PartialEq)]
pub enum DgtMessage {
    /// 0x86: all 64 fields, DGT numbering (0 = a8 with the connector on White's left).
    BoardDump(Box<FieldArray>),
    /// 0x8E: one field changed.
    FieldUpdate {
        /// Field index 0..63.
        index: u8,
        /// What it now reads.
        reading: SquareReading,
    },
    /// 0x8D carrying clock times.
    ClockTimes(ClockReading),
    /// 0x8D with the "no clock connected" bit (D5 of p[6]) set.
    NoClock,
    /// 0x8D carrying a clock ack.
    ClockAck(ClockAck),
    /// 0x93: board firmware version.
    Version {
        /// Major version.
        major: u8,
        /// Minor version.
        minor: u8,
    },
    /// 0x91: 5-digit serial number.
    SerialNumber(String),
    /// 0xA2: 10-character serial number.
    LongSerialNumber(String),
    /// 0x90: bus address.
    BusAddress(u16),
    /// 0x92: trademark text.
    Trademark(String),
    /// 0xA0: battery status.
    Battery(BatteryStatus),
    /// 0x8F: the board's EE memory (§1.6), oldest entry first; a dump ends with EE_EOF.
    EeMoves {
        /// The valid entries ([`ee::parse`]).
        entries: Vec<EeEntry>,
    },
}

/// The core observation a message carries: board dumps, field updates, clock times, "no clock"
/// and the board's memory (EE_MOVES, [`memory_entries`]); `None` for everything else (acks,
/// versions, serial numbers…).
pub fn to_observation(msg: &DgtMessage) -> Option<Observation> {
    match msg {
        DgtMessage::BoardDump(fields) => Some(Observation::BoardDump(fields.clone())),
        DgtMessage::FieldUpdate { index, reading } => Some(Observation::Field {
            index: *index,
            reading: *reading,
        }),
        DgtMessage::ClockTimes(r) => Some(Observation::Clock(*r)),
        DgtMessage::NoClock => Some(Observation::ClockAbsent),
        DgtMessage::EeMoves { entries } => Some(Observation::Memory(memory_entries(entries))),
        _ => None,
    }
}

/// Bytes from hex that may be spaced out (for the codec tests); panics on bad hex.
#[cfg(test)]
fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    crate::capture::hex_decode(&s).expect("valid test hex")
}

/// A clock face showing `millis`, no flag (for the codec tests).
#[cfg(test)]
fn face(millis: u32) -> crate::core::observation::ClockFace {
    crate::core::observation::ClockFace {
        millis,
        flag: false,
        flag_shown: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations() {
        let field = DgtMessage::FieldUpdate {
            index: 12,
            reading: SquareReading::Empty,
        };
        assert_eq!(
            to_observation(&field),
            Some(Observation::Field {
                index: 12,
                reading: SquareReading::Empty
            })
        );
        let dump = DgtMessage::BoardDump(Box::new([SquareReading::Empty; 64]));
        assert!(matches!(
            to_observation(&dump),
            Some(Observation::BoardDump(_))
        ));
        let clock = ClockReading::default();
        assert_eq!(
            to_observation(&DgtMessage::ClockTimes(clock)),
            Some(Observation::Clock(clock))
        );
        assert_eq!(
            to_observation(&DgtMessage::NoClock),
            Some(Observation::ClockAbsent)
        );
        assert_eq!(
            to_observation(&DgtMessage::Version { major: 1, minor: 0 }),
            None
        );
    }
}
