//! A chain of DGT boards in bus mode on one serial line, as a host sees it: [`ChainEmulator`]
//! holds N boards (each with its own script of games, serial number, clock and
//! [memory](super::dgt_memory)) and is one [`EmulatedBoard`] for the
//! [runner](super::runner), which puts it on one pty.
//!
//! Written from DGT's protocol header (`dgtbrd.h`, paragraph "Bus communication protocol"; a
//! copy is `test/dgtbrd-ruud.h` in `jromang/picochess`) and, where the header is silent, from
//! DGTCentaurMods' emulation of a bus board for DGT LiveChess (`DGTCentaurMods/game/eboard.py`).
//! It shares no code with the daemon's bus codec (its own frame encoding and command parsing
//! are here), so that a mistake in one is caught by the other; the payloads that are the same
//! as single-board frames (a dump's piece codes, a BWTIME payload) come from the single-board
//! emulator.
//!
//! What the boards do, fact by fact (header unless said otherwise):
//!
//! - "Bus mode is default power up mode of the board": every board starts in bus mode.
//! - Commands are `<cmd> <addr_hi7> <addr_lo7> <checksum>`, the checksum "the sum of all bytes
//!   from start of the message upto the last byte before the checksum" with D7 0 ("message
//!   code 0x81 0x10 0x06 will carry checksum byte 0x17"); the address is the 14-bit value of
//!   the serial number read as a decimal number (BUSADRES: "serial number is "01025" … busadres
//!   … 0x08 0x01"). A command with a bad checksum is ignored (and counted). Replies are
//!   `<id> <len_hi7> <len_lo7> <addr_hi7> <addr_lo7> <data> <checksum>`, the length "from
//!   byte 1 to checksum".
//! - Commands (`DGT_BUS_*`, `0x80 | n`): SEND_CLK → BUS_BWTIME ("the clock time information, in
//!   format identical as the single board command": the single-board emulator's 7-byte
//!   payload, its real status bytes); SEND_BRD → BUS_BRD_DUMP (the 64 piece codes);
//!   SEND_CHANGES → BUS_UPDATE, "all stored information changes from the moment of the last
//!   DGT_BUS_SEND_CHANGES"; REPEAT_CHANGES: "the last sent packet of changes again";
//!   SET_START_GAME: EE_START_TAG and every piece's position, "answered with a
//!   DGT_MSG_BUS_START_GAME_WRITTEN message, about 70 msec. after receipt"; SEND_FROM_START →
//!   BUS_FROM_START from the last EE_START_TAG "until the last registered changes (excluding
//!   the moves that are to be sent with the DGT_BUS_SEND_CHANGES command)" — DGTCentaurMods
//!   sends everything after the tag, the unsent changes included: [`FromStartReading`];
//!   PING → BUS_PING (6 bytes); IGNORE_NEXT_BUS_PING: "the first following DGT_BUS_PING with
//!   address zero (!) is ignored", and it "responds immediately with a DGT_MSG_BUS_PING";
//!   SEND_VERSION → BUS_VERSION, size 8 ("was 6 up to version 1.2"), as DGTCentaurMods sends
//!   it (`89 00 08 <addr> 01 02 <cs>`); RESET "forces a power-up reset procedure … takes some
//!   seconds" (the board is deaf meanwhile); SEND_ALL_D "sends consequitively: CHANGES, CLOCK,
//!   BOARD". Not modelled, and counted as not taken: END_BUSMODE (a board would leave bus
//!   mode: on a chain every board would then talk at once) and SEND_BRD_50B (draughts).
//! - "PING … with board address 0 (zero) all connected boards will reply … randomly spread
//!   over a 1100 msec. interval": each board after its own uniform delay in 0–1100 ms of link
//!   time. Every other command to address 0 is carried out by every board (the header says so
//!   for END_BUSMODE and RESET), so their replies collide.
//! - "The responce time at the board is within milliseconds normally, except when the board
//!   is storing a measured change in the internal EEPROM: Then the responce time can be up to
//!   20 milliseconds": a reply starts 1–5 ms after its command's last byte, later (up to
//!   20 ms after the EEPROM write began) while the board's memory is being written.
//! - "The bus mode has only a one-command incoming commands buffer": a command for a board
//!   still busy with the previous one (its reply not yet sent) is lost (counted).
//! - "RS232 output … configured as a pull-up driver", all boards on one line: two replies
//!   whose transmissions overlap (a byte takes [`BYTE_TIME`], 10 bits at 9600 baud) garble each
//!   other. The model: in the time both are on the line the host receives one `0x00` per byte
//!   time (two unsynchronised transmitters give framing errors, which the Linux tty layer in
//!   raw mode hands over as `0x00`), the first transmission's byte slots giving the pace; the
//!   bytes outside the overlap come through. The later reply loses its header; the earlier
//!   one its tail, checksum included (only a tail that was all `0x00` comes through, as it
//!   would on a real line). [`BusBoardStats::replies_garbled`] counts the replies that came
//!   through changed.
//! - "Any single-board command arriving during bus mode will switch a board to single-board
//!   mode and will be processed": real boards would all leave bus mode at once and answer
//!   together. The emulator does not follow: it counts such bytes as not taken
//!   ([`LineStats::single_board_bytes`], [`ChainEmulator::unknown_bytes`]), and tests assert
//!   that a host never sends one.
//!
//! The players of a board start when the host first asks that board for its changes
//! (SEND_CHANGES or SEND_ALL_D): that is the chain's "reporting on" for
//! [`EmulatedBoard::host_input`], which returns `true` for the first such request to each
//! board since power-up, the last (re)plug or the host's going away
//! ([`EmulatedBoard::host_gone`]), so that the runner's script clock starts at the first board
//! asked and goes on after a replug or a hold at the next request. A board not asked yet
//! keeps its first position. From then on its script time is the runner's minus the time it
//! started.
//!
//! Line faults ([`ChainConfig`], [`BusBoardConfig::outages`]): a lossy line drops reply bytes
//! with a given probability (seeded); noise bursts come every so often (link time), bytes that
//! never form a reply; a board is off the line from one script time to another, powered off
//! (its memory records nothing, and it writes the power-up sequence when it comes back, its
//! RAM — pointers, IGNORE flag — lost) or with the cable to it pulled (its memory goes on
//! recording). Unplugging the whole chain ([`super::runner::Control::Unplug`]) cuts the replies
//! on the line; the players go on and the memories keep recording, so the moves made
//! meanwhile are in them.
//!
//! The files: `frame.rs`, the bus's frames; `config.rs`, a chain's settings; `board.rs`, one
//! board; `line.rs`, the line and the adapter; `commands.rs`, the host's commands and the
//! boards' answers; `chain.rs`, the [`ChainEmulator`] that holds them. The state they share
//! (the chain, a board, a transmission on the line) is defined here.
//!
//! [`EmulatedBoard`]: super::runner::EmulatedBoard
//! [`EmulatedBoard::host_input`]: super::runner::EmulatedBoard::host_input
//! [`EmulatedBoard::host_gone`]: super::runner::EmulatedBoard::host_gone

use crate::core::observation::Micros;
use crate::sim::emulator::{Emulator, Unknown};
use crate::sim::rng::Rng;

mod board;
mod chain;
mod commands;
mod config;
mod frame;
mod line;

pub use board::BusBoardStats;
pub use config::{
    ADAPTER_PACKET, BusBoardConfig, ChainConfig, ChainError, FTDI_LATENCY, FromStartReading, Outage,
};
pub use frame::{checksum, command, reply, reply_frame};
pub use line::{BYTE_TIME, LineStats, STALL_GAP};

/// The emulated chain of bus boards (see the module documentation).
#[derive(Debug)]
pub struct ChainEmulator {
    cfg: ChainConfig,
    boards: Vec<Board>,
    /// Runner script time of the last
    /// [`ChainEmulator::advance`](super::runner::EmulatedBoard::advance).
    now: Micros,
    link_now: Micros,
    /// When the host's line is free again (its bytes take [`ChainConfig::byte_time`] each).
    host_free: Micros,
    /// Bytes of a bus command so far.
    parser: Vec<u8>,
    line: Vec<Transmission>,
    delays: Rng,
    loss: Rng,
    noise: Rng,
    /// The garbling and cutting of replies.
    faults: Rng,
    unknown: Unknown,
    stats: LineStats,
    /// Bytes the adapter holds for the host ([`ChainConfig::adapter_latency`]).
    adapter: Vec<u8>,
    /// When the adapter hands them over.
    adapter_due: Option<Micros>,
}

/// One board of the chain, as the emulator keeps it.
#[derive(Debug)]
struct Board {
    address: u16,
    version: (u8, u8),
    players: Emulator,
    /// Runner script time at which its players started.
    started_at: Option<Micros>,
    /// It has been asked for its changes since power-up, the last (re)plug or the host's
    /// going away.
    reporting: bool,
    ignore_next_ping: bool,
    /// Off the line: outages under way (overlapping outages count each).
    off: u32,
    /// Powered off: power outages under way.
    unpowered: u32,
    edges: Vec<Edge>,
    next_edge: usize,
    deaf_until: Micros,
    seen_writes: u64,
    eeprom_until: Micros,
    stats: BusBoardStats,
}

/// A change of a board's presence on the line, in the runner's script time.
#[derive(Debug, Clone, Copy)]
struct Edge {
    at: Micros,
    off: bool,
    power: bool,
}

/// Bytes on the line from one sender.
#[derive(Debug)]
struct Transmission {
    /// The board sending, `None` for noise.
    board: Option<usize>,
    start: Micros,
    bytes: Vec<u8>,
    /// Bytes whose time on the line is over.
    sent: usize,
    /// Another transmission changed what the host received of it.
    garbled: bool,
    /// The reply to a command addressed to its board alone (not to every board).
    addressed: bool,
    /// Link time at which the emulator last put bytes of it out (`None` before the first).
    last_out: Option<Micros>,
    /// The longest pause between two of its bytes as the emulator put them out: a byte time
    /// when the emulator keeps pace, longer when the machine running it fell behind.
    longest_gap: Micros,
    /// The first transmission that overlapped it, described (see
    /// [`BusBoardStats::collided_with`]).
    garbled_by: Option<String>,
    /// Its command came while another board's reply was still going out after the emulator
    /// had fallen behind in its middle ([`STALL_GAP`]): the host saw a quiet line, so a
    /// collision of it is not the host's ([`BusBoardStats::collisions_in_stalls`]).
    excused: bool,
}

#[cfg(test)]
mod tests;
