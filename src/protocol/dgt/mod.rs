//! DGT e-board and clock wire protocol (sans-IO): board→host frames and host→board commands.
//!
//! See `dgt-protocol.md` §1.3 (board messages), §2.1 (BWTIME: clock times and clock acks),
//! §2.2 (clock commands). Bytes go in, [`DgtMessage`]s come out; commands go in, bytes come out.

use crate::core::observation::{ClockReading, FieldArray, SquareReading};

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
    /// 0x8F: internal EE move log (skipped; only its length is kept).
    EeMoves {
        /// Payload length in bytes.
        len: usize,
    },
}
