//! The bus's frames as the emulated boards read and write them, written from DGT's header
//! (no code shared with the daemon's bus codec): the command bytes and reply ids, the
//! checksum, a reply frame, the single-board command bytes a chain does not take.

/// Bus commands (`dgtbrd.h`: `DGT_BUS_*`).
pub mod command {
    /// Clock times of the addressed board.
    pub const SEND_CLK: u8 = 0x81;
    /// Board dump.
    pub const SEND_BRD: u8 = 0x82;
    /// Memory entries since the last SEND_CHANGES.
    pub const SEND_CHANGES: u8 = 0x83;
    /// The last SEND_CHANGES packet again.
    pub const REPEAT_CHANGES: u8 = 0x84;
    /// Write EE_START_TAG and every piece's position.
    pub const SET_START_GAME: u8 = 0x85;
    /// Memory entries from the last EE_START_TAG.
    pub const SEND_FROM_START: u8 = 0x86;
    /// Ping (address 0: every board, randomly within 1100 ms).
    pub const PING: u8 = 0x87;
    /// Leave bus mode (not modelled).
    pub const END_BUSMODE: u8 = 0x88;
    /// Power-up reset.
    pub const RESET: u8 = 0x89;
    /// Answer at once, then ignore the next PING to address 0.
    pub const IGNORE_NEXT_BUS_PING: u8 = 0x8A;
    /// Firmware version.
    pub const SEND_VERSION: u8 = 0x8B;
    /// Draughts: black squares only (not modelled).
    pub const SEND_BRD_50B: u8 = 0x8C;
    /// Changes, clock and board, one after the other.
    pub const SEND_ALL_D: u8 = 0x8D;
}

/// Bus reply ids (`dgtbrd.h`: `DGT_MSG_BUS_*`).
pub mod reply {
    /// Board dump: 64 piece codes.
    pub const BRD_DUMP: u8 = 0x83;
    /// Clock times: the single-board BWTIME payload.
    pub const BWTIME: u8 = 0x84;
    /// Memory entries (SEND_CHANGES, REPEAT_CHANGES).
    pub const UPDATE: u8 = 0x85;
    /// Memory entries from the last EE_START_TAG.
    pub const FROM_START: u8 = 0x86;
    /// Ping answer (no data).
    pub const PING: u8 = 0x87;
    /// SET_START_GAME done (no data).
    pub const START_GAME_WRITTEN: u8 = 0x88;
    /// Firmware version: major, minor.
    pub const VERSION: u8 = 0x89;
}

/// The bus checksum: the sum of `bytes`, bit 7 cleared.
pub fn checksum(bytes: &[u8]) -> u8 {
    (bytes.iter().map(|&b| u32::from(b)).sum::<u32>() & 0x7F) as u8
}

/// A reply frame: id, total length and address as two 7-bit bytes each, the data (7 bits),
/// the checksum. Data beyond the 14-bit length is cut.
pub fn reply_frame(id: u8, address: u16, data: &[u8]) -> Vec<u8> {
    let data = &data[..data.len().min(0x3FFF - 6)];
    let total = data.len() + 6;
    let mut out = Vec::with_capacity(total);
    out.extend([
        id,
        ((total >> 7) & 0x7F) as u8,
        (total & 0x7F) as u8,
        ((address >> 7) & 0x7F) as u8,
        (address & 0x7F) as u8,
    ]);
    out.extend(data.iter().map(|b| b & 0x7F));
    out.push(checksum(&out));
    out
}

/// A single-board command byte (`dgtbrd.h`: 0x40–0x55, LEDs 0x60, the clock wrapper 0x2B).
pub(super) fn single_board_command(b: u8) -> bool {
    matches!(b, 0x2B | 0x40..=0x4E | 0x50..=0x55 | 0x60)
}
