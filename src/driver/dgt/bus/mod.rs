//! DGT bus mode (`docs/dgt-protocol.md` §1.9), sans-IO: several boards on one serial line, each
//! answering only the commands addressed to it.
//!
//! - [`BusCommand`]: host → board commands, `<cmd> <addr_hi7> <addr_lo7> <checksum>`.
//! - [`BusReply`]: board → host replies,
//!   `<id> <len_hi7> <len_lo7> <addr_hi7> <addr_lo7> <data…> <checksum>`.
//! - [`BusDecoder`]: a resynchronising, checksum-checking frame decoder, optionally for one
//!   address.
//! - [`DgtBus`]: the driver of a chain of boards on one line; [`chain`]: its session
//!   (discovery, polling, repair).
//! - [`BusStream`]: the [`crate::driver::Decoder`] of one board of a chain;
//!   [`BusLineStream`]: the decoder of the whole line, while boards are being discovered.
//!
//! Every reply becomes one [`DriverReply::DgtBus`] (a [`BusAnswer`]: the reply's kind, the
//! board's address) so that the chain's session knows which of its requests was answered.

use super::bwtime::BwTime;
use super::ee::{self, EeEntry};
use super::piece_code;
use crate::core::observation::{FieldArray, SquareReading};
use crate::driver::DriverReply;

pub mod chain;
mod decode;
mod driver;
mod member;
mod stream;

pub use decode::BusDecoder;
pub use driver::{DgtBus, NAME};
pub use stream::{BusLineStream, BusStream};

/// Largest bus address: 14 bits, sent as two 7-bit bytes.
pub const MAX_ADDRESS: u16 = 0x3FFF;

/// Largest total length of a reply: what the 14-bit length field can carry.
pub const MAX_REPLY_LEN: usize = 0x3FFF;

/// The bus address of a board with this serial number: the 5-digit serial read as a decimal
/// number (DGT_MSG_BUSADRES: serial `"01025"` → 1025, sent as `08 01`). `None` when the text is
/// not decimal digits or the number does not fit 14 bits.
pub fn address_from_serial(serial: &str) -> Option<u16> {
    let digits = serial.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u16>().ok().filter(|&a| a <= MAX_ADDRESS)
}

/// The bus checksum: the sum of `bytes` with bit 7 forced to 0 (`81 10 06` → `17`).
pub fn checksum(bytes: &[u8]) -> u8 {
    (bytes.iter().map(|&b| u32::from(b)).sum::<u32>() & 0x7F) as u8
}

/// An address as two 7-bit bytes (bits above 14 are not sent).
fn address_bytes(address: u16) -> [u8; 2] {
    [((address >> 7) & 0x7F) as u8, (address & 0x7F) as u8]
}

/// A host → board command in bus mode (§1.9).
///
/// END_BUSMODE (`0x88`), RESET (`0x89`) and SEND_ALL_D (`0x8D`) cannot be expressed: the
/// first takes a board out of bus mode (DGT: "be careful not to use this command in a multiple
/// board configuration": a board in single-board mode answers every command on the shared
/// line and collides with the others), the second restarts the board (some seconds without
/// answers, and addressed to 0 it restarts every board), and the third answers with three
/// replies at once (changes, clock, board) whose order and timing no source confirms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BusCommand {
    /// `0x81` SEND_CLK: answered with BWTIME (`0x84`).
    SendClock,
    /// `0x82` SEND_BRD: answered with BRD_DUMP (`0x83`).
    SendBoard,
    /// `0x83` SEND_CHANGES: the EE entries written since the last SEND_CHANGES, answered with
    /// UPDATE (`0x85`).
    SendChanges,
    /// `0x84` REPEAT_CHANGES: the last UPDATE again (after a bad checksum, so that no change is
    /// lost).
    RepeatChanges,
    /// `0x85` SET_START_GAME: writes EE_START_TAG and every piece on the board; answered with
    /// START_GAME_WRITTEN (`0x88`) about 70 ms later.
    SetStartGame,
    /// `0x86` SEND_FROM_START: the entries from the last EE_START_TAG, answered with
    /// FROM_START (`0x86`).
    SendFromStart,
    /// `0x87` PING: answered with PING (`0x87`). Sent to address 0, every board answers, at a
    /// random moment within about 1.1 s.
    Ping,
    /// `0x8A` IGNORE_NEXT_BUS_PING: answered with PING at once; the board then ignores the next
    /// PING to address 0 (so that boards already found stay quiet while others are searched).
    IgnoreNextPing,
    /// `0x8B` SEND_VERSION: answered with VERSION (`0x89`).
    SendVersion,
}

impl BusCommand {
    /// The command byte (bit 7 set).
    pub fn byte(self) -> u8 {
        match self {
            BusCommand::SendClock => 0x81,
            BusCommand::SendBoard => 0x82,
            BusCommand::SendChanges => 0x83,
            BusCommand::RepeatChanges => 0x84,
            BusCommand::SetStartGame => 0x85,
            BusCommand::SendFromStart => 0x86,
            BusCommand::Ping => 0x87,
            BusCommand::IgnoreNextPing => 0x8A,
            BusCommand::SendVersion => 0x8B,
        }
    }

    /// The reply a board answers this command with.
    pub fn reply(self) -> ReplyKind {
        match self {
            BusCommand::SendClock => ReplyKind::Clock,
            BusCommand::SendBoard => ReplyKind::BoardDump,
            BusCommand::SendChanges | BusCommand::RepeatChanges => ReplyKind::Update,
            BusCommand::SetStartGame => ReplyKind::StartGameWritten,
            BusCommand::SendFromStart => ReplyKind::FromStart,
            BusCommand::Ping | BusCommand::IgnoreNextPing => ReplyKind::Ping,
            BusCommand::SendVersion => ReplyKind::Version,
        }
    }

    /// The four bytes that send the command to the board at `address` (0: every board; only
    /// meant for [`BusCommand::Ping`]). Only the low 14 bits of the address are sent: the
    /// address a board reports (BUSADRES, `0x90`) always fits them, [`address_from_serial`]
    /// checks it.
    pub fn encode(self, address: u16) -> [u8; 4] {
        let [hi, lo] = address_bytes(address);
        let head = [self.byte(), hi, lo];
        [head[0], head[1], head[2], checksum(&head)]
    }
}

/// What the chain's session reads of a bus reply ([`BusReply::driver_reply`]): which request
/// it answers and which board sent it (the content goes to the board's core as observations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BusAnswer {
    /// The reply's kind.
    pub kind: ReplyKind,
    /// The address of the board that sent it.
    pub address: u16,
}

/// The kinds of bus replies, by their id byte (§1.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyKind {
    /// `0x83` BRD_DUMP.
    BoardDump,
    /// `0x84` BWTIME.
    Clock,
    /// `0x85` UPDATE.
    Update,
    /// `0x86` FROM_START.
    FromStart,
    /// `0x87` PING.
    Ping,
    /// `0x88` START_GAME_WRITTEN.
    StartGameWritten,
    /// `0x89` VERSION.
    Version,
    /// `0x8A` BRD_DUMP_50B.
    BoardDump50B,
}

impl ReplyKind {
    /// Every kind, in id order.
    pub const ALL: [ReplyKind; 8] = [
        ReplyKind::BoardDump,
        ReplyKind::Clock,
        ReplyKind::Update,
        ReplyKind::FromStart,
        ReplyKind::Ping,
        ReplyKind::StartGameWritten,
        ReplyKind::Version,
        ReplyKind::BoardDump50B,
    ];

    /// The reply's id byte (bit 7 set).
    pub fn id(self) -> u8 {
        match self {
            ReplyKind::BoardDump => 0x83,
            ReplyKind::Clock => 0x84,
            ReplyKind::Update => 0x85,
            ReplyKind::FromStart => 0x86,
            ReplyKind::Ping => 0x87,
            ReplyKind::StartGameWritten => 0x88,
            ReplyKind::Version => 0x89,
            ReplyKind::BoardDump50B => 0x8A,
        }
    }

    /// The kind with this id byte.
    pub fn from_id(id: u8) -> Option<ReplyKind> {
        ReplyKind::ALL.into_iter().find(|k| k.id() == id)
    }

    /// Whether `total` is a plausible total length (header to checksum) for this kind.
    pub(super) fn length_ok(self, total: usize) -> bool {
        match self {
            ReplyKind::Ping | ReplyKind::StartGameWritten => total == 6,
            ReplyKind::Version => total == 8 || total == 6,
            ReplyKind::BoardDump => total == 6 + 64,
            ReplyKind::Clock => total == 6 + 7,
            ReplyKind::Update | ReplyKind::FromStart => (6..=MAX_REPLY_LEN).contains(&total),
            ReplyKind::BoardDump50B => total == 6 + 50,
        }
    }
}

/// A board's firmware version, as a bus VERSION reply gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FirmwareVersion {
    /// Main number.
    pub major: u8,
    /// Sub number.
    pub minor: u8,
}

/// One board → host reply in bus mode (§1.9), with the address of the board that sent it.
#[derive(Debug, Clone, PartialEq)]
pub enum BusReply {
    /// `0x83` BRD_DUMP: the 64 fields, as in the single-board dump.
    BoardDump {
        /// The board's address.
        address: u16,
        /// The fields in DGT numbering.
        fields: Box<FieldArray>,
    },
    /// `0x84` BWTIME: the clock payload of the single-board BWTIME.
    Clock {
        /// The board's address.
        address: u16,
        /// Times, an ack, "no clock" or null.
        clock: BwTime,
    },
    /// `0x85` UPDATE: the EE entries written since the previous SEND_CHANGES.
    Update {
        /// The board's address.
        address: u16,
        /// The entries, oldest first.
        entries: Vec<EeEntry>,
    },
    /// `0x86` FROM_START: the EE entries from the last EE_START_TAG.
    FromStart {
        /// The board's address.
        address: u16,
        /// The entries, oldest first.
        entries: Vec<EeEntry>,
    },
    /// `0x87` PING: no data.
    Ping {
        /// The board's address.
        address: u16,
    },
    /// `0x88` START_GAME_WRITTEN: no data.
    StartGameWritten {
        /// The board's address.
        address: u16,
    },
    /// `0x89` VERSION.
    Version {
        /// The board's address.
        address: u16,
        /// The version of an 8-byte reply; `None` for the 6-byte reply of firmware up to 1.2,
        /// which carries no number.
        version: Option<FirmwareVersion>,
    },
    /// `0x8A` BRD_DUMP_50B: the 50 dark squares of a draughts board (contents not kept).
    BoardDump50B {
        /// The board's address.
        address: u16,
    },
}

impl BusReply {
    /// The reply's kind.
    pub fn kind(&self) -> ReplyKind {
        match self {
            BusReply::BoardDump { .. } => ReplyKind::BoardDump,
            BusReply::Clock { .. } => ReplyKind::Clock,
            BusReply::Update { .. } => ReplyKind::Update,
            BusReply::FromStart { .. } => ReplyKind::FromStart,
            BusReply::Ping { .. } => ReplyKind::Ping,
            BusReply::StartGameWritten { .. } => ReplyKind::StartGameWritten,
            BusReply::Version { .. } => ReplyKind::Version,
            BusReply::BoardDump50B { .. } => ReplyKind::BoardDump50B,
        }
    }

    /// The address of the board that sent it.
    pub fn address(&self) -> u16 {
        match self {
            BusReply::BoardDump { address, .. }
            | BusReply::Clock { address, .. }
            | BusReply::Update { address, .. }
            | BusReply::FromStart { address, .. }
            | BusReply::Ping { address }
            | BusReply::StartGameWritten { address }
            | BusReply::Version { address, .. }
            | BusReply::BoardDump50B { address } => *address,
        }
    }

    /// The reply for the chain's session: its kind and the board that sent it.
    pub fn driver_reply(&self) -> DriverReply {
        DriverReply::DgtBus(BusAnswer {
            kind: self.kind(),
            address: self.address(),
        })
    }

    /// The exact bytes a board sends for this reply (for tests and the emulator). Data bytes
    /// are masked to 7 bits, the address to 14 bits; EE entries that would make the reply
    /// longer than [`MAX_REPLY_LEN`] are left off (whole entries, from the end).
    pub fn encode(&self) -> Vec<u8> {
        let data: Vec<u8> = match self {
            BusReply::BoardDump { fields, .. } => fields.iter().map(|&r| piece_code(r)).collect(),
            BusReply::Clock { clock, .. } => clock.payload().to_vec(),
            BusReply::Update { entries, .. } | BusReply::FromStart { entries, .. } => {
                ee::encode_within(entries, MAX_REPLY_LEN - 6)
            }
            BusReply::Ping { .. } | BusReply::StartGameWritten { .. } => Vec::new(),
            BusReply::Version { version, .. } => {
                version.map_or_else(Vec::new, |v| vec![v.major, v.minor])
            }
            BusReply::BoardDump50B { .. } => vec![piece_code(SquareReading::Empty); 50],
        };
        let total = data.len() + 6;
        let [addr_hi, addr_lo] = address_bytes(self.address());
        let mut out = Vec::with_capacity(total);
        out.push(self.kind().id());
        out.push(((total >> 7) & 0x7F) as u8);
        out.push((total & 0x7F) as u8);
        out.push(addr_hi);
        out.push(addr_lo);
        out.extend(data.iter().map(|b| b & 0x7F));
        out.push(checksum(&out));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::dgt::hex;

    #[test]
    fn the_headers_checksum_example() {
        // dgtbrd.h: "message code 0x81 0x10 0x06 will carry checksum byte 0x17".
        assert_eq!(checksum(&[0x81, 0x10, 0x06]), 0x17);
        assert_eq!(
            BusCommand::SendClock.encode(0x0806).to_vec(),
            hex("81 10 06 17")
        );
        // Bit 7 of the sum is dropped: 0x8B + 0x7F + 0x7F = 0x189 → 0x09.
        assert_eq!(
            BusCommand::SendVersion.encode(MAX_ADDRESS).to_vec(),
            hex("8B 7F 7F 09")
        );
    }

    #[test]
    fn command_bytes_and_addresses() {
        let expected = [
            (BusCommand::SendClock, 0x81),
            (BusCommand::SendBoard, 0x82),
            (BusCommand::SendChanges, 0x83),
            (BusCommand::RepeatChanges, 0x84),
            (BusCommand::SetStartGame, 0x85),
            (BusCommand::SendFromStart, 0x86),
            (BusCommand::Ping, 0x87),
            (BusCommand::IgnoreNextPing, 0x8A),
            (BusCommand::SendVersion, 0x8B),
        ];
        for (cmd, byte) in expected {
            let [b, hi, lo, cs] = cmd.encode(1025);
            assert_eq!((b, hi, lo), (byte, 0x08, 0x01), "{cmd:?}");
            assert_eq!(cs, (u32::from(byte) + 9) as u8 & 0x7F, "{cmd:?}");
        }
        // Broadcast ping, as a discovery sends it.
        assert_eq!(BusCommand::Ping.encode(0).to_vec(), hex("87 00 00 07"));
        // Only the low 14 bits are sent.
        assert_eq!(
            BusCommand::Ping.encode(0x4000 | 1025).to_vec(),
            hex("87 08 01 10")
        );
    }

    #[test]
    fn addresses_from_serial_numbers() {
        // dgtbrd.h, DGT_MSG_BUSADRES: serial "01025" → 0x08 0x01.
        assert_eq!(address_from_serial("01025"), Some(1025));
        assert_eq!(address_from_serial("16383"), Some(MAX_ADDRESS));
        assert_eq!(address_from_serial("16384"), None);
        assert_eq!(address_from_serial("99999"), None);
        assert_eq!(address_from_serial("0102A"), None);
        assert_eq!(address_from_serial("+1025"), None);
        assert_eq!(address_from_serial(""), None);
    }

    #[test]
    fn reply_kinds_by_id() {
        for id in 0..=0xFFu8 {
            let kind = ReplyKind::from_id(id);
            assert_eq!(kind.is_some(), (0x83..=0x8A).contains(&id), "{id:#04x}");
            assert!(kind.is_none_or(|k| k.id() == id));
        }
    }

    #[test]
    fn dgt_centaur_mods_shaped_replies() {
        // DGTCentaurMods eboard.py answers as board 1025 (08 01); the checksums are the sum of
        // the bytes before them, & 0x7F.
        let ping = BusReply::Ping { address: 1025 };
        assert_eq!(ping.encode().to_vec(), hex("87 00 06 08 01 16"));
        let version = BusReply::Version {
            address: 1025,
            version: Some(FirmwareVersion { major: 1, minor: 2 }),
        };
        assert_eq!(version.encode().to_vec(), hex("89 00 08 08 01 01 02 1D"));
        assert_eq!(
            BusReply::StartGameWritten { address: 1025 }
                .encode()
                .to_vec(),
            hex("88 00 06 08 01 17")
        );
        let update = BusReply::Update {
            address: 1025,
            entries: vec![],
        };
        assert_eq!(update.encode().to_vec(), hex("85 00 06 08 01 14"));
    }
}
