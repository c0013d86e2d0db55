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

use std::collections::BTreeMap;
use std::fmt;

use super::runner::{BoardStatus, EmulatedBoard};
use super::{ClockCommandStats, ClockModel, Emulator, EmulatorConfig, Script, Unknown};
use crate::core::observation::Micros;
use crate::driver::dgt::DgtMessage;
use crate::sim::rng::Rng;

/// Time of one byte on the line: 10 bits (start, 8 data, stop) at 9600 baud.
pub const BYTE_TIME: Micros = 1_042;
/// A pause this long between two bytes of one reply as the emulator puts them out is the
/// emulator falling behind (its machine busy), never the board: a board sends a reply's bytes
/// back to back (see [`BusBoardStats::commands_lost_in_stalls`]).
pub const STALL_GAP: Micros = 10_000;

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
fn single_board_command(b: u8) -> bool {
    matches!(b, 0x2B | 0x40..=0x4E | 0x50..=0x55 | 0x60)
}

/// Which data SEND_FROM_START sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FromStartReading {
    /// DGT's header: from the last EE_START_TAG to the last SEND_CHANGES, "excluding the moves
    /// that are to be sent with the DGT_BUS_SEND_CHANGES command".
    #[default]
    Header,
    /// DGTCentaurMods: from the last EE_START_TAG to the newest entry, unsent changes included.
    IncludingUnsent,
}

/// A time a board is off the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outage {
    /// From this script time (the runner's) on…
    pub from: Micros,
    /// …until this one.
    pub until: Micros,
    /// Powered off (memory records nothing; power-up sequence on return) rather than its cable
    /// pulled (memory goes on recording).
    pub power_off: bool,
}

/// One board of the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusBoardConfig {
    /// The 5-digit serial number; the bus address is its value (1–16383).
    pub serial: String,
    /// Firmware version (SEND_VERSION).
    pub version: (u8, u8),
    /// The clock on the board's cable.
    pub clock: ClockModel,
    /// The clock is in a time-per-move mode (hours D5 in BWTIME).
    pub increment_mode: bool,
    /// Times the board is off the line.
    pub outages: Vec<Outage>,
}

impl BusBoardConfig {
    /// Board `i` of a chain (from 0): serial `01001` + `i`, version 3.1, a DGT 3000 in
    /// increment mode, always on the line.
    pub fn numbered(i: usize) -> BusBoardConfig {
        BusBoardConfig {
            serial: format!("{:05}", 1001 + i),
            version: (3, 1),
            clock: ClockModel::Dgt3000,
            increment_mode: true,
            outages: Vec::new(),
        }
    }
}

/// The chain and its line.
#[derive(Debug, Clone, PartialEq)]
pub struct ChainConfig {
    /// Board `i`'s settings; boards beyond the list get [`BusBoardConfig::numbered`].
    pub boards: Vec<BusBoardConfig>,
    /// Seed of the boards' random delays and of the line's faults.
    pub seed: u64,
    /// What SEND_FROM_START sends.
    pub from_start: FromStartReading,
    /// A reply starts this long after its command (uniform in `lo..=hi` µs, link time).
    pub reply_delay: (Micros, Micros),
    /// A board's replies start at most this long after its EEPROM began writing an entry.
    pub eeprom_busy: Micros,
    /// Spread of the replies to PING at address 0.
    pub ping_spread: Micros,
    /// SET_START_GAME is answered this long after the command.
    pub start_game_delay: Micros,
    /// A board is deaf this long after a RESET.
    pub reset_time: Micros,
    /// Time of one byte on the line.
    pub byte_time: Micros,
    /// Probability that the line loses a reply byte (of every reply kind).
    pub lossy: f64,
    /// Probability that a reply byte comes through with one bit flipped (noise on the line).
    pub garble: f64,
    /// Probability that a reply is cut short: the line carries it up to a random byte and no
    /// further (a burst of noise, a loose contact); the board is free again at once.
    pub cut: f64,
    /// A burst of noise bytes on the line about this often (link time).
    pub noise_every: Option<Micros>,
    /// The USB-serial adapter between the line and the host holds the bytes it receives until
    /// its latency timer, running with this period, expires or [`ADAPTER_PACKET`] bytes are
    /// in (an FTDI FT232's default: 16 ms [FTDI AN232B-04]; 0: each byte reaches the host as
    /// its time on the line ends). The host sees a reply begin up to this much later.
    pub adapter_latency: Micros,
}

/// Bytes an FTDI adapter sends the host at once, whatever its latency timer: its 64-byte USB
/// packet less two status bytes [FTDI AN232B-04].
pub const ADAPTER_PACKET: usize = 62;

/// An FTDI FT232's default latency timer [FTDI AN232B-04].
pub const FTDI_LATENCY: Micros = 16_000;

impl ChainConfig {
    /// `n` numbered boards on a clean line, the header's timing.
    pub fn new(n: usize) -> ChainConfig {
        ChainConfig {
            boards: (0..n).map(BusBoardConfig::numbered).collect(),
            ..Default::default()
        }
    }
}

impl Default for ChainConfig {
    fn default() -> Self {
        ChainConfig {
            boards: Vec::new(),
            seed: 1,
            from_start: FromStartReading::Header,
            reply_delay: (1_000, 5_000),
            eeprom_busy: 20_000,
            ping_spread: 1_100_000,
            start_game_delay: 70_000,
            reset_time: 3_000_000,
            byte_time: BYTE_TIME,
            lossy: 0.0,
            garble: 0.0,
            cut: 0.0,
            noise_every: None,
            adapter_latency: FTDI_LATENCY,
        }
    }
}

/// Why a chain cannot be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainError {
    /// No script: a chain needs a board.
    Empty,
    /// A serial number that gives no bus address (not a number in 1–16383).
    BadSerial(String),
    /// Two boards with the same bus address.
    DuplicateAddress(u16),
}

impl fmt::Display for ChainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChainError::Empty => write!(f, "a chain needs at least one board"),
            ChainError::BadSerial(s) => {
                write!(f, "serial number {s:?} gives no bus address (1–16383)")
            }
            ChainError::DuplicateAddress(a) => write!(f, "two boards with bus address {a}"),
        }
    }
}

impl std::error::Error for ChainError {}

/// What one board of the chain did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BusBoardStats {
    /// Commands it took, by command byte (addressed to it or to every board).
    pub commands: BTreeMap<u8, u64>,
    /// Commands lost: they came while it was still busy with the previous one.
    pub commands_lost: u64,
    /// Commands that came while its reply was still going out after the emulator itself had
    /// fallen behind in the middle of that reply (a pause of [`STALL_GAP`] or more between two
    /// of its bytes, which a real board never leaves: the machine running the emulator was
    /// busy): the host saw a quiet line, so they are not counted in `commands_lost`.
    pub commands_lost_in_stalls: u64,
    /// Commands it missed: off the line, or deaf after a RESET.
    pub missed: u64,
    /// PINGs to address 0 it ignored after IGNORE_NEXT_BUS_PING.
    pub pings_ignored: u64,
    /// Replies it sent to the end.
    pub replies_sent: u64,
    /// Of those, replies garbled by another transmission on the line.
    pub replies_garbled: u64,
    /// Of those, replies to a command addressed to this board alone: the host addressed it
    /// while another transmission was on the line, or before its reply could begin.
    pub collisions: u64,
    /// The first collisions (up to 8), described: the reply (its first byte, link time) and
    /// the transmission that overlapped it, so that a test that fails on a collision says
    /// which exchange the host cut short.
    pub collided_with: Vec<String>,
    /// Replies to a command addressed to it that collided with another board's reply which
    /// the emulator itself had held up mid-way ([`STALL_GAP`]; the host saw a quiet line and
    /// went on): not the host's, so not counted in `collisions`.
    pub collisions_in_stalls: u64,
    /// Replies cut short (the board went off the line, or the chain was unplugged).
    pub replies_cut: u64,
}

/// What the line did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Commands with a bad checksum (ignored).
    pub bad_checksums: u64,
    /// Single-board command bytes (no board takes them here).
    pub single_board_bytes: u64,
    /// Commands to an address no board has.
    pub unaddressed: u64,
    /// Reply bytes the lossy line dropped.
    pub bytes_dropped: u64,
    /// Reply bytes the line changed (one bit flipped).
    pub bytes_garbled: u64,
    /// Replies the line cut short.
    pub replies_cut: u64,
    /// Noise bytes put on the line.
    pub noise_bytes: u64,
}

/// A change of a board's presence on the line, in the runner's script time.
#[derive(Debug, Clone, Copy)]
struct Edge {
    at: Micros,
    off: bool,
    power: bool,
}

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

/// The emulated chain of bus boards (see the module documentation).
#[derive(Debug)]
pub struct ChainEmulator {
    cfg: ChainConfig,
    boards: Vec<Board>,
    /// Runner script time of the last [`ChainEmulator::advance`].
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

impl ChainEmulator {
    /// A chain of one board per script (board `i` set by `cfg.boards[i]`, or numbered), all
    /// powered up with their script's first position, in bus mode, their players waiting.
    pub fn new(scripts: Vec<Script>, mut cfg: ChainConfig) -> Result<ChainEmulator, ChainError> {
        cfg.byte_time = cfg.byte_time.max(1);
        if scripts.is_empty() {
            return Err(ChainError::Empty);
        }
        let mut boards: Vec<Board> = Vec::with_capacity(scripts.len());
        for (i, script) in scripts.into_iter().enumerate() {
            let bc = cfg
                .boards
                .get(i)
                .cloned()
                .unwrap_or_else(|| BusBoardConfig::numbered(i));
            let address = bc
                .serial
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|a| (1..=0x3FFF).contains(a))
                .ok_or_else(|| ChainError::BadSerial(bc.serial.clone()))?
                as u16;
            if boards.iter().any(|b| b.address == address) {
                return Err(ChainError::DuplicateAddress(address));
            }
            let players = Emulator::new(
                script,
                EmulatorConfig {
                    serial: bc.serial.clone(),
                    version: bc.version,
                    clock: bc.clock,
                    increment_mode: bc.increment_mode,
                    // Clock times are read when asked for (SEND_CLK): no wake-ups per second.
                    clock_ticks: false,
                    ..Default::default()
                },
            );
            let mut edges = Vec::new();
            for o in &bc.outages {
                if o.until > o.from {
                    edges.push(Edge {
                        at: o.from,
                        off: true,
                        power: o.power_off,
                    });
                    edges.push(Edge {
                        at: o.until,
                        off: false,
                        power: o.power_off,
                    });
                }
            }
            edges.sort_by_key(|e| e.at);
            boards.push(Board {
                address,
                version: bc.version,
                seen_writes: players.memory().writes(),
                players,
                started_at: None,
                reporting: false,
                ignore_next_ping: false,
                off: 0,
                unpowered: 0,
                edges,
                next_edge: 0,
                deaf_until: 0,
                eeprom_until: 0,
                stats: BusBoardStats::default(),
            });
        }
        let mut chain = ChainEmulator {
            delays: Rng::derive(cfg.seed, 0xB05),
            loss: Rng::derive(cfg.seed, 0x1055),
            noise: Rng::derive(cfg.seed, 0x5EED),
            faults: Rng::derive(cfg.seed, 0xFA17),
            boards,
            now: 0,
            link_now: 0,
            host_free: 0,
            parser: Vec::new(),
            line: Vec::new(),
            unknown: Unknown::default(),
            stats: LineStats::default(),
            adapter: Vec::new(),
            adapter_due: None,
            cfg,
        };
        chain.schedule_noise(0);
        Ok(chain)
    }

    /// The configuration.
    pub fn config(&self) -> &ChainConfig {
        &self.cfg
    }

    /// Number of boards.
    pub fn len(&self) -> usize {
        self.boards.len()
    }

    /// Whether the chain has no board (never: [`ChainEmulator::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.boards.is_empty()
    }

    /// Board `i`'s bus address.
    pub fn address(&self, i: usize) -> Option<u16> {
        self.boards.get(i).map(|b| b.address)
    }

    /// Every board's bus address, in chain order.
    pub fn addresses(&self) -> Vec<u16> {
        self.boards.iter().map(|b| b.address).collect()
    }

    /// Board `i`'s players, pieces and memory (its single-board emulator, never spoken to).
    pub fn players(&self, i: usize) -> Option<&Emulator> {
        self.boards.get(i).map(|b| &b.players)
    }

    /// What board `i` did.
    pub fn stats(&self, i: usize) -> Option<&BusBoardStats> {
        self.boards.get(i).map(|b| &b.stats)
    }

    /// What the line did.
    pub fn line_stats(&self) -> &LineStats {
        &self.stats
    }

    /// The runner script time at which board `i`'s players started (its first SEND_CHANGES).
    pub fn started_at(&self, i: usize) -> Option<Micros> {
        self.boards.get(i).and_then(|b| b.started_at)
    }

    /// Board `i`'s own script time at runner script time `t` (0 until it started).
    pub fn board_time(&self, i: usize, t: Micros) -> Micros {
        self.boards.get(i).map_or(0, |b| board_time(b, t))
    }

    /// Plies started on board `i` at runner script time `t`.
    pub fn plies_started_on(&self, i: usize, t: Micros) -> usize {
        self.boards.get(i).map_or(0, |b| match b.started_at {
            Some(_) => b.players.plies_started(board_time(b, t)),
            None => 0,
        })
    }

    /// Plies settled on board `i` at runner script time `t`.
    pub fn plies_settled_on(&self, i: usize, t: Micros) -> usize {
        self.boards.get(i).map_or(0, |b| match b.started_at {
            Some(_) => b.players.plies_settled(board_time(b, t)),
            None => 0,
        })
    }

    /// Host bytes no board took (see the module documentation).
    pub fn unknown_bytes(&self) -> u64 {
        self.unknown.count
    }

    /// Link time as last told.
    pub fn link_now(&self) -> Micros {
        self.link_now
    }

    fn schedule_noise(&mut self, after: Micros) {
        let Some(every) = self.cfg.noise_every.filter(|e| *e > 0) else {
            return;
        };
        let at = after + self.noise.range(every / 2, every + every / 2);
        let n = 1 + self.noise.below(8) as usize;
        // Bytes without bit 7 (no frame starts there) and headers that are no reply id.
        let bytes: Vec<u8> = (0..n)
            .map(|_| match self.noise.below(4) {
                0 => [0x80, 0xC0, 0xFF, 0x8F][self.noise.below(4) as usize],
                _ => self.noise.below(0x80) as u8,
            })
            .collect();
        self.line.push(Transmission {
            board: None,
            start: at,
            bytes,
            sent: 0,
            garbled: false,
            addressed: false,
            last_out: None,
            longest_gap: 0,
            garbled_by: None,
            excused: false,
        });
    }

    fn end_of(&self, t: &Transmission) -> Micros {
        t.start + t.bytes.len() as Micros * self.cfg.byte_time
    }

    /// A board's EEPROM began writing when its memory changed since last seen.
    fn observe_eeprom(&mut self) {
        for b in &mut self.boards {
            let w = b.players.memory().writes();
            if w != b.seen_writes {
                b.seen_writes = w;
                b.eeprom_until = self.link_now + self.cfg.eeprom_busy;
            }
        }
    }

    /// Whether board `i` has a reply not yet off the line (its one-command buffer is full).
    fn busy(&self, i: usize) -> bool {
        self.line
            .iter()
            .any(|t| t.board == Some(i) && t.sent < t.bytes.len())
    }

    /// The adapter receives `byte`, its time on the line over at `at`: it holds it until its
    /// latency timer (running since link time 0) next expires, and hands over a full packet at
    /// once.
    fn adapter_takes(&mut self, at: Micros, byte: u8, out: &mut Vec<u8>) {
        let period = self.cfg.adapter_latency;
        if period <= 0 {
            out.push(byte);
            return;
        }
        // The timer expired before this byte came: what it held went then.
        self.adapter_hands_over(at, out);
        self.adapter.push(byte);
        if self.adapter.len() >= ADAPTER_PACKET {
            self.adapter_hands_over(Micros::MAX, out);
        } else if self.adapter_due.is_none() {
            self.adapter_due = Some((at / period + 1) * period);
        }
    }

    /// The adapter hands the host what it holds when its timer expired by `t`.
    fn adapter_hands_over(&mut self, t: Micros, out: &mut Vec<u8>) {
        if self.adapter_due.is_some_and(|due| due <= t) {
            self.adapter_due = None;
            out.append(&mut self.adapter);
        }
    }

    /// Transmission `j` of the line, for a collision's record: who sent what, from when.
    fn describe(&self, j: usize) -> String {
        let t = &self.line[j];
        match t.board {
            None => format!("noise from {} µs", t.start),
            Some(b) => format!(
                "board {}'s reply {:02x} to a command {}, {} bytes from {} µs, its longest \
                 pause so far {} µs",
                self.boards[b].address,
                t.bytes[0],
                if t.addressed {
                    "to it"
                } else {
                    "to every board"
                },
                t.bytes.len(),
                t.start,
                t.longest_gap
            ),
        }
    }

    /// Whether board `i`'s reply still going out paused for [`STALL_GAP`] or more.
    fn stalled(&self, i: usize) -> bool {
        self.line
            .iter()
            .any(|t| t.board == Some(i) && t.sent < t.bytes.len() && t.longest_gap >= STALL_GAP)
    }

    /// Drops what board `i` still had to send.
    fn cut(&mut self, i: usize) {
        let mut cut = 0;
        for t in &mut self.line {
            if t.board == Some(i) && t.sent < t.bytes.len() {
                t.bytes.truncate(t.sent);
                cut += 1;
            }
        }
        self.line.retain(|t| !t.bytes.is_empty());
        if let Some(b) = self.boards.get_mut(i) {
            b.stats.replies_cut += cut;
        }
    }

    fn reply_delay(&mut self, i: usize, at: Micros) -> Micros {
        let (lo, hi) = self.cfg.reply_delay;
        let base = self.delays.range(lo, hi);
        let eeprom = self.boards[i].eeprom_until - at;
        base.max(eeprom)
    }

    fn send(&mut self, i: usize, start: Micros, mut bytes: Vec<u8>, addressed: bool) {
        if bytes.is_empty() {
            return;
        }
        if self.cfg.cut > 0.0 && self.faults.chance(self.cfg.cut) {
            let keep = self.faults.below(bytes.len() as u64) as usize;
            bytes.truncate(keep);
            self.stats.replies_cut += 1;
            if bytes.is_empty() {
                return;
            }
        }
        let excused = addressed
            && self.line.iter().any(|t| {
                t.board != Some(i) && t.sent < t.bytes.len() && t.longest_gap >= STALL_GAP
            });
        self.line.push(Transmission {
            board: Some(i),
            start,
            bytes,
            sent: 0,
            garbled: false,
            addressed,
            last_out: None,
            longest_gap: 0,
            garbled_by: None,
            excused,
        });
    }

    /// A complete command with a good checksum, its last byte in at link time `at`; whether
    /// it switched reporting on for a board.
    fn command(&mut self, c: [u8; 4], at: Micros) -> bool {
        let cmd = c[0];
        if matches!(cmd, command::END_BUSMODE | command::SEND_BRD_50B) {
            // Not modelled (see the module documentation): not taken.
            self.unknown.add(&c);
            return false;
        }
        let address = (u16::from(c[1]) << 7) | u16::from(c[2]);
        let targets: Vec<usize> = (0..self.boards.len())
            .filter(|&i| address == 0 || self.boards[i].address == address)
            .collect();
        if targets.is_empty() {
            self.stats.unaddressed += 1;
            return false;
        }
        let mut on = false;
        for i in targets {
            on |= self.board_command(i, cmd, address == 0, at);
        }
        on
    }

    fn board_command(&mut self, i: usize, cmd: u8, broadcast: bool, at: Micros) -> bool {
        let b = &mut self.boards[i];
        if b.off > 0 || at < b.deaf_until {
            b.stats.missed += 1;
            return false;
        }
        *b.stats.commands.entry(cmd).or_default() += 1;
        if self.busy(i) {
            let stalled = self.stalled(i);
            let stats = &mut self.boards[i].stats;
            if stalled {
                stats.commands_lost_in_stalls += 1;
            } else {
                stats.commands_lost += 1;
            }
            return false;
        }
        let mut on = false;
        let address = self.boards[i].address;
        let (delay, bytes) = match cmd {
            command::PING if broadcast && self.boards[i].ignore_next_ping => {
                let b = &mut self.boards[i];
                b.ignore_next_ping = false;
                b.stats.pings_ignored += 1;
                return false;
            }
            command::PING if broadcast => (
                self.delays.range(0, self.cfg.ping_spread),
                reply_frame(reply::PING, address, &[]),
            ),
            command::PING => (
                self.reply_delay(i, at),
                reply_frame(reply::PING, address, &[]),
            ),
            command::IGNORE_NEXT_BUS_PING => {
                self.boards[i].ignore_next_ping = true;
                (
                    self.reply_delay(i, at),
                    reply_frame(reply::PING, address, &[]),
                )
            }
            command::SEND_VERSION => {
                let (major, minor) = self.boards[i].version;
                (
                    self.reply_delay(i, at),
                    reply_frame(reply::VERSION, address, &[major, minor]),
                )
            }
            command::SEND_BRD => (self.reply_delay(i, at), self.dump_reply(i)),
            command::SEND_CLK => (self.reply_delay(i, at), self.clock_reply(i)),
            command::SEND_CHANGES => {
                on = self.reporting_on(i);
                (self.reply_delay(i, at), self.changes_reply(i))
            }
            command::SEND_ALL_D => {
                on = self.reporting_on(i);
                let mut bytes = self.changes_reply(i);
                bytes.extend(self.clock_reply(i));
                bytes.extend(self.dump_reply(i));
                (self.reply_delay(i, at), bytes)
            }
            command::REPEAT_CHANGES => {
                let data = self.boards[i]
                    .players
                    .memory()
                    .last_changes()
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default();
                (
                    self.reply_delay(i, at),
                    reply_frame(reply::UPDATE, address, &data),
                )
            }
            command::SET_START_GAME => {
                let p = &mut self.boards[i].players;
                let (t, fields) = (p.now(), *p.fields());
                p.memory_mut().start_game(t, &fields);
                let (lo, hi) = self.cfg.reply_delay;
                let jitter = self.delays.range(lo, hi) - lo;
                (
                    self.cfg.start_game_delay + jitter,
                    reply_frame(reply::START_GAME_WRITTEN, address, &[]),
                )
            }
            command::SEND_FROM_START => {
                let include = self.cfg.from_start == FromStartReading::IncludingUnsent;
                let data = self.boards[i].players.memory().from_start(include);
                (
                    self.reply_delay(i, at),
                    reply_frame(reply::FROM_START, address, &data),
                )
            }
            command::RESET => {
                let b = &mut self.boards[i];
                b.players.set_powered(false);
                b.players.set_powered(true);
                b.ignore_next_ping = false;
                b.reporting = false;
                b.deaf_until = at + self.cfg.reset_time;
                return false;
            }
            _ => {
                // No other byte with bit 7 starts a command (see `host_input`).
                return false;
            }
        };
        self.send(i, at + delay.max(0), bytes, !broadcast);
        on
    }

    fn reporting_on(&mut self, i: usize) -> bool {
        let now = self.now;
        let b = &mut self.boards[i];
        b.started_at.get_or_insert(now);
        !std::mem::replace(&mut b.reporting, true)
    }

    fn changes_reply(&mut self, i: usize) -> Vec<u8> {
        let b = &mut self.boards[i];
        let data = b.players.memory_mut().take_changes();
        reply_frame(reply::UPDATE, b.address, &data)
    }

    fn clock_reply(&self, i: usize) -> Vec<u8> {
        let b = &self.boards[i];
        reply_frame(reply::BWTIME, b.address, &b.players.clock_payload())
    }

    fn dump_reply(&self, i: usize) -> Vec<u8> {
        let b = &self.boards[i];
        let dump = DgtMessage::BoardDump(Box::new(*b.players.fields())).encode();
        reply_frame(
            reply::BRD_DUMP,
            b.address,
            dump.get(3..).unwrap_or_default(),
        )
    }

    fn apply_edge(&mut self, i: usize, e: Edge) {
        if e.off {
            self.cut(i);
        }
        let b = &mut self.boards[i];
        let count = |n: &mut u32| {
            *n = if e.off {
                n.saturating_add(1)
            } else {
                n.saturating_sub(1)
            }
        };
        count(&mut b.off);
        if e.power {
            count(&mut b.unpowered);
            let on = b.unpowered == 0;
            if on && !e.off {
                // Power back: the power-up sequence; the board's RAM starts afresh.
                b.players.set_powered(true);
                b.ignore_next_ping = false;
                b.reporting = false;
            } else if !on {
                b.players.set_powered(false);
            }
        }
    }
}

fn board_time(b: &Board, t: Micros) -> Micros {
    b.started_at.map_or(0, |s| (t - s).max(0))
}

impl EmulatedBoard for ChainEmulator {
    fn next_due(&self) -> Option<Micros> {
        self.boards
            .iter()
            .flat_map(|b| {
                let step = b
                    .started_at
                    .and_then(|s| b.players.next_due().map(|t| t + s));
                let edge = b.edges.get(b.next_edge).map(|e| e.at);
                [step, edge]
            })
            .flatten()
            .min()
    }

    fn next_link_due(&self) -> Option<Micros> {
        self.line
            .iter()
            .filter(|t| t.sent < t.bytes.len())
            .map(|t| t.start + (t.sent as Micros + 1) * self.cfg.byte_time)
            .chain(self.adapter_due)
            .min()
    }

    fn link_time(&mut self, now: Micros, out: &mut Vec<u8>) {
        self.link_now = self.link_now.max(now);
        let now = self.link_now;
        self.observe_eeprom();
        let bt = self.cfg.byte_time;
        // Every byte whose time on the line is over, in time order.
        let spans: Vec<(Micros, Micros)> = self
            .line
            .iter()
            .map(|t| (t.start, self.end_of(t)))
            .collect();
        let mut bytes: Vec<(Micros, usize, u8)> = Vec::new();
        let mut garbled = Vec::new();
        for (ti, t) in self.line.iter().enumerate() {
            for k in t.sent..t.bytes.len() {
                let slot = t.start + k as Micros * bt;
                if slot + bt > now {
                    break;
                }
                let others: Vec<usize> = spans
                    .iter()
                    .enumerate()
                    .filter(|&(j, &(s, e))| j != ti && s < slot + bt && e > slot)
                    .map(|(j, _)| j)
                    .collect();
                if others.is_empty() {
                    bytes.push((slot, ti, t.bytes[k]));
                    continue;
                }
                // One framing error per byte time, paced by the first transmission.
                let first = others.iter().all(|&j| (spans[j].0, j) > (t.start, ti));
                if first {
                    bytes.push((slot, ti, 0x00));
                }
                if !first || t.bytes[k] != 0x00 {
                    garbled.push((ti, others[0]));
                }
            }
        }
        for (ti, other) in garbled {
            if self.line[ti].garbled_by.is_none() {
                let why = self.describe(other);
                self.line[ti].garbled_by = Some(why);
            }
            // Garbled by a reply the host could not have known of: neither side's collision
            // is the host's.
            if self.line[other].excused {
                self.line[ti].excused = true;
            }
            self.line[ti].garbled = true;
        }
        bytes.sort_by_key(|&(at, ti, _)| (at, ti));
        for (slot, ti, byte) in bytes {
            let reply = self.line[ti].board.is_some();
            let byte = if reply && self.cfg.lossy > 0.0 && self.loss.chance(self.cfg.lossy) {
                self.stats.bytes_dropped += 1;
                continue;
            } else if reply && self.cfg.garble > 0.0 && self.faults.chance(self.cfg.garble) {
                self.stats.bytes_garbled += 1;
                byte ^ (1 << self.faults.below(8))
            } else {
                byte
            };
            self.adapter_takes(slot + bt, byte, out);
        }
        self.adapter_hands_over(now, out);
        // Move the transmissions on; count the replies that ended.
        let mut noise_started = None;
        for t in &mut self.line {
            let done = ((now - t.start).max(0) / bt) as usize;
            let before = t.sent;
            t.sent = done.min(t.bytes.len()).max(t.sent);
            if t.sent > before {
                if let Some(last) = t.last_out {
                    t.longest_gap = t.longest_gap.max(now - last);
                }
                t.last_out = Some(now);
            }
            if t.board.is_none() {
                self.stats.noise_bytes += (t.sent - before) as u64;
                if before == 0 && t.sent > 0 {
                    noise_started = Some(t.start);
                }
            }
            if let Some(i) = t.board
                && before < t.bytes.len()
                && t.sent == t.bytes.len()
            {
                let s = &mut self.boards[i].stats;
                s.replies_sent += 1;
                if t.garbled {
                    s.replies_garbled += 1;
                    if t.addressed {
                        if t.excused {
                            s.collisions_in_stalls += 1;
                        } else {
                            s.collisions += 1;
                        }
                        if s.collided_with.len() < 8 {
                            s.collided_with.push(format!(
                                "reply {:02x} from {} µs{}: {}",
                                t.bytes[0],
                                t.start,
                                if t.excused { " (in a stall)" } else { "" },
                                t.garbled_by.as_deref().unwrap_or("?")
                            ));
                        }
                    }
                }
            }
        }
        if let Some(at) = noise_started {
            self.schedule_noise(at);
        }
        // A finished transmission is kept while another one still to come could overlap it.
        let open_from = self
            .line
            .iter()
            .filter(|t| t.sent < t.bytes.len())
            .map(|t| t.start)
            .min()
            .unwrap_or(Micros::MAX);
        let bt = self.cfg.byte_time;
        self.line.retain(|t| {
            t.sent < t.bytes.len() || t.start + t.bytes.len() as Micros * bt > open_from
        });
    }

    fn host_input(&mut self, bytes: &[u8], _out: &mut Vec<u8>) -> bool {
        self.observe_eeprom();
        let mut on = false;
        for &b in bytes {
            // Each host byte takes its time on the host's line.
            let at = self.host_free.max(self.link_now) + self.cfg.byte_time;
            self.host_free = at;
            if b & 0x80 != 0 {
                if !self.parser.is_empty() {
                    // A command cut short by the next one.
                    self.unknown.add(&self.parser);
                    self.parser.clear();
                }
                if (command::SEND_CLK..=command::SEND_ALL_D).contains(&b) {
                    self.parser.push(b);
                } else {
                    self.unknown.add(&[b]);
                }
                continue;
            }
            if self.parser.is_empty() {
                // Outside a bus command: a single-board command (a real chain would leave bus
                // mode; see the module documentation) or stray bytes. Not taken.
                if single_board_command(b) {
                    self.stats.single_board_bytes += 1;
                }
                self.unknown.add(&[b]);
                continue;
            }
            self.parser.push(b);
            if let [c0, c1, c2, c3] = self.parser[..] {
                self.parser.clear();
                if checksum(&[c0, c1, c2]) == c3 {
                    on |= self.command([c0, c1, c2, c3], at);
                } else {
                    self.stats.bad_checksums += 1;
                    self.unknown.add(&[c0, c1, c2, c3]);
                }
            }
        }
        on
    }

    fn advance(&mut self, now: Micros, _out: &mut Vec<u8>) {
        self.now = self.now.max(now);
        let now = self.now;
        let mut sink = Vec::new();
        for i in 0..self.boards.len() {
            while let Some(e) = self.boards[i]
                .edges
                .get(self.boards[i].next_edge)
                .copied()
                .filter(|e| e.at <= now)
            {
                let b = &mut self.boards[i];
                let t = board_time(b, e.at);
                b.players.advance(t, &mut sink);
                b.next_edge += 1;
                self.apply_edge(i, e);
            }
            let b = &mut self.boards[i];
            let t = board_time(b, now);
            b.players.advance(t, &mut sink);
        }
        self.observe_eeprom();
    }

    fn unplugged(&mut self) {
        for i in 0..self.boards.len() {
            self.cut(i);
            self.boards[i].reporting = false;
        }
        self.parser.clear();
        self.adapter.clear();
        self.adapter_due = None;
    }

    fn host_gone(&mut self) {
        for b in &mut self.boards {
            b.reporting = false;
        }
    }

    fn reset(&mut self) {
        for i in 0..self.boards.len() {
            self.cut(i);
            let b = &mut self.boards[i];
            b.players.reset();
            b.reporting = false;
            b.ignore_next_ping = false;
        }
        self.parser.clear();
    }

    fn after_plies(&self, t: Micros, k: usize) -> Micros {
        self.boards
            .iter()
            .filter_map(|b| {
                let s = b.started_at?;
                Some(s + b.players.after_plies(board_time(b, t), k))
            })
            .fold(t, Micros::max)
    }

    fn plies_started(&self, t: Micros) -> usize {
        (0..self.boards.len())
            .map(|i| self.plies_started_on(i, t))
            .sum()
    }

    fn plies_settled(&self, t: Micros) -> usize {
        (0..self.boards.len())
            .map(|i| self.plies_settled_on(i, t))
            .sum()
    }

    fn finished(&self) -> bool {
        self.boards.iter().all(|b| b.players.finished())
    }

    fn texts(&self) -> &[String] {
        &[]
    }

    fn clock_commands(&self) -> ClockCommandStats {
        ClockCommandStats::default()
    }

    fn unknown_bytes(&self) -> u64 {
        self.unknown.count
    }

    fn unknown_sample(&self) -> &[u8] {
        &self.unknown.sample
    }

    fn boards(&self, t: Micros) -> Vec<BoardStatus> {
        (0..self.boards.len())
            .map(|i| {
                let b = &self.boards[i];
                BoardStatus {
                    address: b.address,
                    plies_started: self.plies_started_on(i, t),
                    plies_settled: self.plies_settled_on(i, t),
                    commands: b.stats.commands.values().sum(),
                    commands_lost: b.stats.commands_lost,
                    commands_lost_in_stalls: b.stats.commands_lost_in_stalls,
                    missed: b.stats.missed,
                    replies_sent: b.stats.replies_sent,
                    replies_garbled: b.stats.replies_garbled,
                    collisions: b.stats.collisions,
                    collided_with: b.stats.collided_with.clone(),
                    collisions_in_stalls: b.stats.collisions_in_stalls,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observation::FieldArray;
    use crate::driver::dgt::piece_code;
    use crate::sim::emulator::dgt_memory::tag;
    use crate::sim::{SimConfig, pgn::parse_games};

    const PGN: &str = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 *";

    fn scripts(n: usize) -> Vec<Script> {
        let games: Vec<_> = parse_games(PGN).into_iter().map(|g| g.unwrap()).collect();
        (0..n)
            .map(|i| Script::from_games(&games, &SimConfig::human(10 + i as u64), 5_000_000))
            .collect()
    }

    /// A host command, encoded here from the header (not with the module's encoder).
    fn bus(cmd: u8, addr: u16) -> Vec<u8> {
        let mut v = vec![cmd, (addr >> 7) as u8 & 0x7F, addr as u8 & 0x7F];
        let sum: u32 = v.iter().map(|&b| u32::from(b)).sum();
        v.push((sum % 128) as u8);
        v
    }

    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Frame {
        id: u8,
        addr: u16,
        data: Vec<u8>,
    }

    /// The valid reply frames in `bytes` (header's format, checksum checked) and the number of
    /// bytes in none.
    fn frames(bytes: &[u8]) -> (Vec<Frame>, usize) {
        let (mut out, mut bad, mut i) = (Vec::new(), 0, 0);
        while i < bytes.len() {
            if (0x83..=0x89).contains(&bytes[i]) && i + 6 <= bytes.len() {
                let len = (usize::from(bytes[i + 1]) << 7) | usize::from(bytes[i + 2]);
                if len >= 6
                    && i + len <= bytes.len()
                    && bytes[i + 1..i + len].iter().all(|&b| b < 0x80)
                {
                    let f = &bytes[i..i + len];
                    let sum: u32 = f[..len - 1].iter().map(|&b| u32::from(b)).sum();
                    if (sum % 128) as u8 == f[len - 1] {
                        out.push(Frame {
                            id: f[0],
                            addr: (u16::from(f[3]) << 7) | u16::from(f[4]),
                            data: f[5..len - 1].to_vec(),
                        });
                        i += len;
                        continue;
                    }
                }
            }
            bad += 1;
            i += 1;
        }
        (out, bad)
    }

    /// Plays memory entries (header's format) onto `board`: field entries set a field; time and
    /// one-byte entries change nothing.
    fn replay(board: &mut [u8; 64], entries: &[u8]) {
        let mut i = 0;
        while i < entries.len() {
            match entries[i] {
                0x40..=0x5F if i + 1 < entries.len() => {
                    board[usize::from(entries[i + 1] & 0x3F)] = entries[i] & 0x0F;
                    i += 2;
                }
                0x60..=0x69 | 0x70..=0x79 => i += 3,
                _ => i += 1,
            }
        }
    }

    fn codes(f: &FieldArray) -> [u8; 64] {
        let mut c = [0; 64];
        for (c, r) in c.iter_mut().zip(f) {
            *c = piece_code(*r);
        }
        c
    }

    /// The host's side of the line, in link time.
    struct Host {
        chain: ChainEmulator,
        link: Micros,
        rx: Vec<(Micros, u8)>,
    }

    impl Host {
        fn new(chain: ChainEmulator) -> Host {
            Host {
                chain,
                link: 0,
                rx: Vec::new(),
            }
        }

        fn send(&mut self, bytes: &[u8]) -> bool {
            let mut out = Vec::new();
            self.chain.link_time(self.link, &mut out);
            self.rx.extend(out.drain(..).map(|b| (self.link, b)));
            let on = self.chain.host_input(bytes, &mut out);
            assert!(out.is_empty(), "no reply without a delay");
            on
        }

        /// Link time goes on by `dt`; the bytes that arrive are kept.
        fn wait(&mut self, dt: Micros) {
            let end = self.link + dt;
            loop {
                let next = self.chain.next_link_due().filter(|&t| t <= end);
                self.link = next.unwrap_or(end).max(self.link);
                let mut out = Vec::new();
                self.chain.link_time(self.link, &mut out);
                self.rx.extend(out.iter().map(|&b| (self.link, b)));
                if next.is_none() {
                    break;
                }
            }
        }

        /// Link time goes on until no board has anything left to send.
        fn settle(&mut self) {
            while self
                .chain
                .line
                .iter()
                .any(|t| t.board.is_some() && t.sent < t.bytes.len())
            {
                self.wait(10_000);
            }
        }

        fn take(&mut self) -> Vec<u8> {
            self.rx.drain(..).map(|(_, b)| b).collect()
        }

        /// One command, 80 ms for the answer to start (the header's advice) and the time to
        /// send it, the frames that came.
        fn ask(&mut self, cmd: u8, addr: u16) -> Vec<Frame> {
            self.send(&bus(cmd, addr));
            self.wait(80_000);
            self.settle();
            let bytes = self.take();
            let (f, bad) = frames(&bytes);
            assert_eq!(bad, 0, "{bytes:02x?}");
            f
        }

        fn changes(&mut self, addr: u16) -> Vec<u8> {
            let f = self.ask(command::SEND_CHANGES, addr);
            assert_eq!(f.len(), 1, "{f:?}");
            assert_eq!((f[0].id, f[0].addr), (reply::UPDATE, addr));
            f[0].data.clone()
        }

        /// The players play on to runner script time `t`.
        fn play(&mut self, t: Micros) {
            self.chain.advance(t, &mut Vec::new());
        }
    }

    /// A chain whose line the host reads directly (no adapter's latency: these tests time the
    /// line's bytes; `the_adapter_holds_bytes_until_its_timer_or_a_full_packet` times the
    /// adapter).
    fn chain(n: usize, mut cfg: ChainConfig) -> Host {
        cfg.adapter_latency = 0;
        Host::new(ChainEmulator::new(scripts(n), cfg).unwrap())
    }

    #[test]
    fn the_adapter_holds_bytes_until_its_timer_or_a_full_packet() {
        let cfg = ChainConfig::new(1);
        assert_eq!(
            cfg.adapter_latency, FTDI_LATENCY,
            "an FTDI adapter by default"
        );
        let mut h = Host::new(ChainEmulator::new(scripts(1), cfg).unwrap());
        let a = h.chain.address(0).unwrap();
        // A PING's reply (6 bytes) ends within 12 ms of the command: the host gets it whole,
        // at the timer's next expiry (16 ms after link time 0).
        h.send(&bus(command::PING, a));
        h.wait(80_000);
        let at: Vec<Micros> = h.rx.iter().map(|&(t, _)| t).collect();
        assert_eq!(at, vec![FTDI_LATENCY; 6], "{:?}", h.rx);
        h.take();
        // A board dump (70 bytes, 73 ms at 9600 baud): a batch at each expiry, every 16 ms.
        h.link = 10 * FTDI_LATENCY;
        h.send(&bus(command::SEND_BRD, a));
        h.wait(200_000);
        let rx = std::mem::take(&mut h.rx);
        assert_eq!(rx.len(), 70);
        let mut batches: Vec<Micros> = rx.iter().map(|&(t, _)| t).collect();
        batches.dedup();
        assert!(batches.iter().all(|t| t % FTDI_LATENCY == 0), "{rx:?}");
        assert!(
            batches.windows(2).all(|w| w[1] - w[0] == FTDI_LATENCY),
            "{rx:?}"
        );
        assert_eq!(batches.len(), 5, "{rx:?}");
        let (f, bad) = frames(&rx.iter().map(|&(_, b)| b).collect::<Vec<u8>>());
        assert_eq!((f.len(), f[0].id, bad), (1, reply::BRD_DUMP, 0));
        // On a fast line the adapter's packet fills first: 62 bytes at once, the rest at the
        // next expiry.
        let mut cfg = ChainConfig::new(1);
        cfg.byte_time = 100;
        let mut h = Host::new(ChainEmulator::new(scripts(1), cfg).unwrap());
        h.send(&bus(command::SEND_BRD, a));
        h.wait(80_000);
        let rx = std::mem::take(&mut h.rx);
        assert_eq!(rx.len(), 70);
        let first = rx[0].0;
        assert!(first % FTDI_LATENCY != 0, "{rx:?}");
        assert!(rx[..62].iter().all(|&(t, _)| t == first), "{rx:?}");
        assert!(rx[62..].iter().all(|&(t, _)| t == FTDI_LATENCY), "{rx:?}");
        assert_eq!((f.len(), f[0].id, bad), (1, reply::BRD_DUMP, 0));
    }

    #[test]
    fn bad_configurations_are_refused() {
        assert_eq!(
            ChainEmulator::new(Vec::new(), ChainConfig::new(0)).err(),
            Some(ChainError::Empty)
        );
        let mut cfg = ChainConfig::new(2);
        cfg.boards[1].serial = "01001".into();
        assert_eq!(
            ChainEmulator::new(scripts(2), cfg).err(),
            Some(ChainError::DuplicateAddress(1001))
        );
        for bad in ["00000", "16384", "99999", "abc", ""] {
            let mut cfg = ChainConfig::new(1);
            cfg.boards[0].serial = bad.into();
            assert_eq!(
                ChainEmulator::new(scripts(1), cfg).err(),
                Some(ChainError::BadSerial(bad.into()))
            );
        }
        // Serial "01025" is address 1025 (the header's example), 0x08 0x01 on the wire.
        let mut cfg = ChainConfig::new(1);
        cfg.boards[0].serial = "01025".into();
        let mut h = Host::new(ChainEmulator::new(scripts(1), cfg).unwrap());
        assert_eq!(h.chain.addresses(), [1025]);
        h.send(&bus(command::PING, 1025));
        h.wait(80_000);
        let bytes = h.take();
        assert_eq!(&bytes[..5], &[0x87, 0x00, 0x06, 0x08, 0x01]);
    }

    #[test]
    fn discovery_with_ignore_rounds_finds_every_board() {
        let n = 24;
        let mut h = chain(n, ChainConfig::new(n));
        let all: std::collections::BTreeSet<u16> = h.chain.addresses().into_iter().collect();
        let mut found = std::collections::BTreeSet::new();
        let mut per_round = Vec::new();
        // The header's procedure: IGNORE_NEXT_BUS_PING to every board found, PING to 0, register
        // the boards that answered with a good checksum, again.
        for _ in 0..30 {
            for &a in &found.clone() {
                let f = h.ask(command::IGNORE_NEXT_BUS_PING, a);
                assert_eq!(
                    f,
                    [Frame {
                        id: reply::PING,
                        addr: a,
                        data: vec![]
                    }]
                );
            }
            h.send(&bus(command::PING, 0));
            h.wait(1_200_000);
            let bytes = h.take();
            let (f, _garbage) = frames(&bytes);
            for fr in &f {
                assert_eq!(fr.id, reply::PING);
                assert!(all.contains(&fr.addr), "no board has address {}", fr.addr);
                assert!(
                    !found.contains(&fr.addr),
                    "{} answered though told to ignore",
                    fr.addr
                );
            }
            per_round.push(f.len());
            found.extend(f.iter().map(|f| f.addr));
            if found == all {
                break;
            }
        }
        eprintln!("boards found per round: {per_round:?}");
        assert_eq!(found, all, "rounds: {per_round:?}");
        let garbled: u64 = (0..n)
            .map(|i| h.chain.stats(i).unwrap().replies_garbled)
            .sum();
        assert!(garbled > 0, "24 replies in 1.1 s collide");
        assert!(per_round[0] < n, "{per_round:?}");
        assert!(per_round.len() > 1);
        // Every board found early ignored the later rounds' pings.
        let ignored: u64 = (0..n)
            .map(|i| h.chain.stats(i).unwrap().pings_ignored)
            .sum();
        assert!(ignored >= (n - per_round[0]) as u64, "{ignored}");
        assert_eq!(h.chain.unknown_bytes(), 0);
    }

    #[test]
    fn overlapping_replies_garble_each_other() {
        let mut h = chain(2, ChainConfig::new(2));
        let [a, b] = [h.chain.address(0).unwrap(), h.chain.address(1).unwrap()];
        // Both boards answer a dump request to address 0 within 1–5 ms: 70-byte replies
        // (73 ms each) overlap.
        h.send(&bus(command::SEND_BRD, 0));
        h.wait(200_000);
        let bytes = h.take();
        let (f, bad) = frames(&bytes);
        assert!(f.is_empty(), "{f:?}");
        assert!(bad > 0);
        assert!(bytes.len() < 140, "one line: fewer bytes than both replies");
        for i in 0..2 {
            let s = h.chain.stats(i).unwrap();
            assert_eq!((s.replies_sent, s.replies_garbled), (1, 1), "{s:?}");
        }
        // One at a time: both come through, the start position's piece codes.
        for addr in [a, b] {
            let f = h.ask(command::SEND_BRD, addr);
            assert_eq!(f.len(), 1);
            assert_eq!((f[0].id, f[0].addr), (reply::BRD_DUMP, addr));
            let d = &f[0].data;
            assert_eq!(d.len(), 64);
            // a8 black rook, e8 black king, a7 black pawn, e2 white pawn, e1 white king.
            assert_eq!([d[0], d[4], d[8], d[52], d[60]], [8, 11, 7, 1, 5]);
            assert!(d[16..48].iter().all(|&c| c == 0));
        }
        assert_eq!(h.chain.stats(0).unwrap().replies_garbled, 1);
        assert_eq!(h.chain.unknown_bytes(), 0);
    }

    #[test]
    fn send_changes_gives_exactly_the_changes_since_the_last_and_repeat_the_same() {
        let mut h = chain(1, ChainConfig::new(1));
        let a = h.chain.address(0).unwrap();
        assert_eq!(h.chain.plies_settled_on(0, 1_000_000_000), 0, "not started");
        // The first request switches reporting on and starts the players.
        assert!(h.send(&bus(command::SEND_CHANGES, a)));
        h.wait(80_000);
        h.settle();
        let (f, _) = frames(&h.take());
        let c0 = f[0].data.clone();
        assert_eq!(c0.len(), 64 + 1, "power-up: every piece, EE_BEGINPOS");
        assert_eq!(*c0.last().unwrap(), tag::BEGINPOS);
        assert!(!h.send(&bus(command::SEND_CHANGES, a)), "on only once");
        h.wait(80_000);
        assert_eq!(frames(&h.take()).0[0].data, Vec::<u8>::new(), "nothing new");
        let mut got = c0.clone();
        let mut t = 0;
        for plies in [2, 3, 4] {
            t = h.chain.after_plies(t, plies);
            h.play(t);
            h.send(&bus(command::SEND_CHANGES, a));
            h.wait(80_000);
            h.settle();
            let sent = h.take();
            let c = frames(&sent).0[0].data.clone();
            assert!(!c.is_empty());
            // REPEAT_CHANGES: the same packet, byte for byte.
            h.send(&bus(command::REPEAT_CHANGES, a));
            h.wait(80_000);
            h.settle();
            assert_eq!(h.take(), sent);
            got.extend(c);
        }
        assert_eq!(h.chain.plies_settled_on(0, t), 9);
        // The host went away and came back: its next request switches reporting on again.
        assert!(!h.send(&bus(command::SEND_CHANGES, a)));
        h.wait(80_000);
        h.settle();
        h.chain.host_gone();
        assert!(h.send(&bus(command::SEND_CHANGES, a)));
        h.wait(80_000);
        h.settle();
        assert!(frames(&h.take()).0.iter().all(|f| f.data.is_empty()));
        let p = h.chain.players(0).unwrap();
        // Nothing lost, nothing twice: every byte since EE_POWERUP, in order.
        assert_eq!(got, p.memory().bytes(4, p.memory().end()));
        let mut board = [0u8; 64];
        replay(&mut board, &got);
        assert_eq!(board, codes(p.fields()));
        assert_eq!(h.chain.unknown_bytes(), 0);
    }

    fn from_start_after_unplug(reading: FromStartReading) {
        let cfg = ChainConfig {
            from_start: reading,
            ..ChainConfig::new(1)
        };
        let mut h = chain(1, cfg);
        let a = h.chain.address(0).unwrap();
        h.changes(a);
        let t0 = h.link;
        h.send(&bus(command::SET_START_GAME, a));
        h.wait(100_000);
        let got = h.rx.clone();
        let written = frames(&h.take()).0;
        assert_eq!(written[0].id, reply::START_GAME_WRITTEN);
        let arrived = got.last().unwrap().0 - t0;
        assert!((70_000..=85_000).contains(&arrived), "{arrived} µs");
        let mut t = 0;
        for _ in 0..3 {
            t = h.chain.after_plies(t, 1);
            h.play(t);
            h.changes(a);
        }
        let at_unplug = *h.chain.players(0).unwrap().fields();
        // The chain is unplugged; the players go on for four plies; plugged in again.
        h.chain.unplugged();
        t = h.chain.after_plies(t, 4);
        h.play(t);
        h.chain.unplugged();
        let now = *h.chain.players(0).unwrap().fields();
        assert_ne!(now, at_unplug, "moves were made while unplugged");
        let f = h.ask(command::SEND_FROM_START, a);
        assert_eq!(f[0].id, reply::FROM_START);
        let from_start = f[0].data.clone();
        assert_eq!(from_start[0], tag::START_TAG);
        let mut board = [0u8; 64];
        replay(&mut board, &from_start);
        match reading {
            FromStartReading::IncludingUnsent => assert_eq!(board, codes(&now)),
            FromStartReading::Header => {
                assert_eq!(board, codes(&at_unplug), "up to the last SEND_CHANGES");
                // The rest comes with SEND_CHANGES, the first since the replug.
                assert!(h.send(&bus(command::SEND_CHANGES, a)));
                h.wait(80_000);
                h.settle();
                let rest = frames(&h.take()).0[0].data.clone();
                replay(&mut board, &rest);
                assert_eq!(board, codes(&now));
            }
        }
        assert_eq!(h.chain.unknown_bytes(), 0);
    }

    #[test]
    fn from_start_after_an_unplug_holds_the_moves_made_while_unplugged() {
        from_start_after_unplug(FromStartReading::Header);
        from_start_after_unplug(FromStartReading::IncludingUnsent);
    }

    #[test]
    fn strict_single_board_bytes_and_bad_checksums_are_counted() {
        let mut h = chain(1, ChainConfig::new(1));
        let a = h.chain.address(0).unwrap();
        // A single-board handshake: not taken, no answer.
        h.send(&[0x40, 0x4D, 0x45]);
        h.wait(80_000);
        assert!(h.take().is_empty());
        assert_eq!(h.chain.line_stats().single_board_bytes, 3);
        assert_eq!(h.chain.unknown_bytes(), 3);
        // A bad checksum: ignored.
        let mut bad = bus(command::PING, a);
        bad[3] ^= 1;
        h.send(&bad);
        h.wait(80_000);
        assert!(h.take().is_empty());
        assert_eq!(h.chain.line_stats().bad_checksums, 1);
        assert_eq!(h.chain.unknown_bytes(), 7);
        // A command cut short by the next, an id no command has, a command not modelled.
        h.send(&[0x87, 0x00]);
        h.send(&[0x92]);
        h.send(&bus(command::END_BUSMODE, a));
        assert_eq!(h.chain.unknown_bytes(), 7 + 2 + 1 + 4);
        let sample = &h.chain.unknown.sample;
        assert_eq!(&sample[..3], &[0x40, 0x4D, 0x45]);
        assert_eq!(&sample[3..7], &bad[..]);
        assert_eq!(&sample[7..10], &[0x87, 0x00, 0x92]);
        assert_eq!(&sample[10..14], &bus(command::END_BUSMODE, a)[..]);
        // Still in step.
        let f = h.ask(command::SEND_VERSION, a);
        assert_eq!(
            f,
            [Frame {
                id: reply::VERSION,
                addr: a,
                data: vec![3, 1]
            }]
        );
        assert_eq!(h.chain.unknown_bytes(), 14);
    }

    #[test]
    fn a_board_off_the_line_misses_commands_and_its_memory_tells_what_happened() {
        for power_off in [false, true] {
            let mut cfg = ChainConfig::new(2);
            let (from, until) = (60_000_000, 200_000_000);
            cfg.boards[1].outages = vec![Outage {
                from,
                until,
                power_off,
            }];
            let mut h = chain(2, cfg);
            let [a, b] = [h.chain.address(0).unwrap(), h.chain.address(1).unwrap()];
            let mut board = [0u8; 64];
            replay(&mut board, &h.changes(b));
            h.changes(a);
            h.play(from - 1);
            replay(&mut board, &h.changes(b));
            h.play(from + 1);
            let end_at_off = h.chain.players(1).unwrap().memory().end();
            // Off the line: no answer, the other board answers.
            h.send(&bus(command::PING, b));
            h.wait(80_000);
            assert!(h.take().is_empty());
            assert_eq!(h.chain.stats(1).unwrap().missed, 1);
            assert_eq!(h.ask(command::PING, a).len(), 1);
            h.play(until - 1);
            let memory = h.chain.players(1).unwrap().memory();
            assert_eq!(
                memory.end() == end_at_off,
                power_off,
                "a powered-off board records nothing"
            );
            assert!(
                h.chain.plies_settled_on(1, until) > h.chain.plies_settled_on(1, from),
                "the players went on"
            );
            h.play(until);
            let c = h.changes(b);
            if power_off {
                // Power-up: the pieces found, from scratch.
                let mut fresh = [0u8; 64];
                replay(&mut fresh, &c);
                board = fresh;
                let m = h.chain.players(1).unwrap().memory();
                let all = m.bytes(0, m.end());
                assert_eq!(all.iter().filter(|&&x| x == tag::POWERUP).count(), 2);
            } else {
                replay(&mut board, &c);
            }
            assert_eq!(board, codes(h.chain.players(1).unwrap().fields()));
            assert_eq!(h.chain.unknown_bytes(), 0);
        }
    }

    #[test]
    fn overlapping_outages_keep_a_board_off_until_the_last_ends() {
        let mut cfg = ChainConfig::new(1);
        cfg.boards[0].outages = vec![
            Outage {
                from: 10_000_000,
                until: 30_000_000,
                power_off: true,
            },
            Outage {
                from: 20_000_000,
                until: 40_000_000,
                power_off: false,
            },
        ];
        let mut h = chain(1, cfg);
        let a = h.chain.address(0).unwrap();
        h.changes(a);
        for (t, answers) in [(15, false), (35, false), (45, true)] {
            h.play(t * 1_000_000);
            h.send(&bus(command::PING, a));
            h.wait(80_000);
            assert_eq!(!h.take().is_empty(), answers, "at {t} s");
        }
        // Powered on again at 30 s (cable still out): the power-up sequence is in memory.
        let m = h.chain.players(0).unwrap().memory();
        assert_eq!(
            m.bytes(0, m.end())
                .iter()
                .filter(|&&b| b == tag::POWERUP)
                .count(),
            2
        );
    }

    #[test]
    fn a_lossy_noisy_line_spoils_replies_but_never_makes_one_up() {
        let cfg = ChainConfig {
            lossy: 0.03,
            noise_every: Some(300_000),
            ..ChainConfig::new(2)
        };
        let mut h = chain(2, cfg);
        let addrs = h.chain.addresses();
        let mut good = 0;
        for k in 0..100 {
            let a = addrs[k % 2];
            h.send(&bus(command::SEND_VERSION, a));
            h.wait(100_000);
            let (f, _) = frames(&h.take());
            for fr in &f {
                assert_eq!(
                    (fr.id, fr.addr, &fr.data[..]),
                    (reply::VERSION, a, &[3, 1][..])
                );
            }
            good += f.len();
        }
        let line = h.chain.line_stats();
        assert!(line.bytes_dropped > 0 && line.noise_bytes > 0, "{line:?}");
        assert!((50..100).contains(&good), "{good} of 100 replies whole");
        assert_eq!(h.chain.unknown_bytes(), 0);
    }

    #[test]
    fn a_faulty_line_loses_garbles_and_cuts_every_kind_of_reply() {
        let cfg = ChainConfig {
            lossy: 0.01,
            garble: 0.01,
            cut: 0.05,
            ..ChainConfig::new(1)
        };
        let mut h = chain(1, cfg);
        let a = h.chain.addresses()[0];
        let kinds = [
            (command::SEND_CLK, reply::BWTIME),
            (command::SEND_BRD, reply::BRD_DUMP),
            (command::SEND_CHANGES, reply::UPDATE),
            (command::REPEAT_CHANGES, reply::UPDATE),
            (command::SEND_FROM_START, reply::FROM_START),
            (command::PING, reply::PING),
            (command::IGNORE_NEXT_BUS_PING, reply::PING),
            (command::SEND_VERSION, reply::VERSION),
        ];
        for (cmd, id) in kinds {
            let (mut whole, mut spoilt) = (0, 0);
            for _ in 0..300 {
                h.send(&bus(cmd, a));
                h.wait(100_000);
                let bytes = h.take();
                let (f, junk) = frames(&bytes);
                assert!(f.iter().all(|fr| fr.id == id && fr.addr == a), "{f:?}");
                whole += f.len();
                if f.is_empty() || junk > 0 {
                    spoilt += 1;
                }
            }
            assert!(
                whole > 0 && spoilt > 0,
                "{cmd:02x}: {whole} whole, {spoilt} spoilt"
            );
        }
        let line = h.chain.line_stats();
        assert!(
            line.bytes_dropped > 0 && line.bytes_garbled > 0 && line.replies_cut > 0,
            "{line:?}"
        );
        assert_eq!(h.chain.unknown_bytes(), 0);
    }

    #[test]
    fn replies_take_milliseconds_and_up_to_20_ms_while_the_eeprom_writes() {
        let mut h = chain(1, ChainConfig::new(1));
        let a = h.chain.address(0).unwrap();
        h.changes(a);
        let first_byte = |h: &mut Host| {
            let sent = h.link;
            h.send(&bus(command::PING, a));
            h.wait(80_000);
            h.settle();
            let t = h.rx[0].0;
            h.take();
            // The command's 4 bytes, the reply's first byte.
            t - sent - 5 * BYTE_TIME
        };
        for _ in 0..20 {
            let d = first_byte(&mut h);
            assert!((1_000..=5_000 + 1_000).contains(&d), "{d} µs");
        }
        // An entry is written now (the players' next change), then a command 2 ms later: its
        // answer waits for the EEPROM, 20 ms after the write began.
        let writes = |h: &Host| h.chain.players(0).unwrap().memory().writes();
        let before = writes(&h);
        while writes(&h) == before {
            let step = h.chain.next_due().unwrap();
            h.play(step);
        }
        let write_at = h.link;
        h.wait(2_000);
        let d = first_byte(&mut h);
        // The reply starts 20 ms after the write began (its first byte is one byte time on).
        let start = write_at + 2_000 + 4 * BYTE_TIME + d;
        assert_eq!(start - write_at, 20_000, "{d} µs after the command");
        // Long enough after the write: milliseconds again.
        let d = first_byte(&mut h);
        assert!(d <= 6_000, "{d} µs");
    }

    #[test]
    fn clock_version_and_all_d_replies() {
        let mut h = chain(1, ChainConfig::new(1));
        let a = h.chain.address(0).unwrap();
        let f = h.ask(command::SEND_CLK, a);
        assert_eq!((f[0].id, f[0].data.len()), (reply::BWTIME, 7));
        // Not started: paused with the turn kept; hours D5 (increment mode).
        assert!([0x08, 0x12].contains(&f[0].data[6]), "{:02x?}", f[0].data);
        assert_eq!(f[0].data[0] & 0x20, 0x20);
        h.changes(a);
        let t = h.chain.after_plies(0, 3) + 1_500_000;
        h.play(t);
        let f = h.ask(command::SEND_CLK, a);
        assert!([0x09, 0x13].contains(&f[0].data[6]), "{:02x?}", f[0].data);
        assert_eq!(
            f[0].data,
            h.chain.players(0).unwrap().clock_payload(),
            "the single-board payload"
        );
        let f = h.ask(command::SEND_VERSION, a);
        assert_eq!(f[0].data, [3, 1]);
        // SEND_ALL_D: changes, clock, board, one after the other.
        h.play(t + 20_000_000);
        let f = h.ask(command::SEND_ALL_D, a);
        let ids: Vec<u8> = f.iter().map(|f| f.id).collect();
        assert_eq!(ids, [reply::UPDATE, reply::BWTIME, reply::BRD_DUMP]);
        assert!(!f[0].data.is_empty());
        assert_eq!(
            f[2].data,
            codes(h.chain.players(0).unwrap().fields()).to_vec()
        );
        assert_eq!(h.changes(a), Vec::<u8>::new(), "ALL_D took the changes");
    }

    #[test]
    fn a_command_that_comes_while_the_emulator_fell_behind_mid_reply_is_not_the_hosts_loss() {
        let mut h = chain(1, ChainConfig::new(1));
        let a = h.chain.address(0).unwrap();
        // A dump's reply (70 bytes, 73 ms) under way on time: a command now is the host's loss.
        h.send(&bus(command::SEND_BRD, a));
        h.wait(5_000 + 10 * BYTE_TIME);
        assert!(!h.rx.is_empty(), "the reply began");
        h.send(&bus(command::SEND_VERSION, a));
        let st = h.chain.stats(0).unwrap();
        assert_eq!((st.commands_lost, st.commands_lost_in_stalls), (1, 0));
        h.wait(100_000);
        h.take();
        // The emulator falls behind 30 ms in the middle of the next one (its machine busy):
        // the host saw a quiet line, so a command then is not counted against it.
        h.send(&bus(command::SEND_BRD, a));
        h.wait(5_000 + 10 * BYTE_TIME);
        h.link += 30_000;
        h.send(&bus(command::SEND_VERSION, a));
        let st = h.chain.stats(0).unwrap();
        assert_eq!((st.commands_lost, st.commands_lost_in_stalls), (1, 1));
    }

    #[test]
    fn a_board_addressed_while_another_answers_is_a_collision_that_names_the_other() {
        let mut h = chain(2, ChainConfig::new(2));
        let (a, b) = (h.chain.address(0).unwrap(), h.chain.address(1).unwrap());
        // A dump's reply takes 73 ms: the host addresses the second board at once.
        h.send(&bus(command::SEND_BRD, a));
        h.send(&bus(command::PING, b));
        h.wait(200_000);
        let (one, two) = (h.chain.stats(0).unwrap(), h.chain.stats(1).unwrap());
        assert_eq!((one.collisions, two.collisions), (1, 1));
        assert_eq!(one.collided_with.len(), 1);
        assert!(
            one.collided_with[0].starts_with("reply 83")
                && one.collided_with[0]
                    .contains(&format!("board {b}'s reply 87 to a command to it")),
            "{:?}",
            one.collided_with
        );
        assert!(
            two.collided_with[0].contains(&format!("board {a}'s reply 83")),
            "{:?}",
            two.collided_with
        );
    }

    #[test]
    fn a_collision_with_a_reply_the_emulator_held_up_is_not_the_hosts() {
        let mut h = chain(2, ChainConfig::new(2));
        let (a, b) = (h.chain.address(0).unwrap(), h.chain.address(1).unwrap());
        h.send(&bus(command::SEND_BRD, a));
        h.wait(5_000 + 10 * BYTE_TIME);
        // The emulator falls 30 ms behind in the middle of the dump: the host saw a quiet
        // line and addresses the other board.
        h.link += 30_000;
        h.send(&bus(command::PING, b));
        h.wait(200_000);
        let (one, two) = (h.chain.stats(0).unwrap(), h.chain.stats(1).unwrap());
        // (The dump's bytes under the PING's reply are mostly 0x00, an empty square: the
        // framing errors read the same, so only the PING's reply is garbled.)
        assert_eq!((one.collisions, two.collisions), (0, 0));
        assert_eq!(two.collisions_in_stalls, 1);
        assert!(
            two.collided_with[0].contains("(in a stall)")
                && two.collided_with[0].contains("its longest pause so far 3"),
            "{:?}",
            two.collided_with
        );
    }

    #[test]
    fn one_command_at_a_time_and_reset_makes_a_board_deaf_then_power_up() {
        let mut h = chain(1, ChainConfig::new(1));
        let a = h.chain.address(0).unwrap();
        // A second command while the first one's reply is still to come: lost.
        h.send(&bus(command::SEND_BRD, a));
        h.send(&bus(command::SEND_VERSION, a));
        h.wait(80_000);
        h.settle();
        let (f, bad) = frames(&h.take());
        assert_eq!((f.len(), f[0].id, bad), (1, reply::BRD_DUMP, 0));
        assert_eq!(h.chain.stats(0).unwrap().commands_lost, 1);
        // RESET: no answer, deaf for a while, then the power-up sequence in memory.
        let end = h.chain.players(0).unwrap().memory().end();
        h.send(&bus(command::RESET, a));
        h.wait(80_000);
        assert!(h.take().is_empty());
        let m = h.chain.players(0).unwrap().memory();
        assert_eq!(m.bytes(end, end + 4), [0x7F, 0x7F, 0x7F, tag::POWERUP]);
        h.send(&bus(command::PING, a));
        h.wait(80_000);
        assert!(h.take().is_empty());
        assert_eq!(h.chain.stats(0).unwrap().missed, 1);
        h.wait(3_000_000);
        assert_eq!(h.ask(command::PING, a).len(), 1);
        let by_kind = &h.chain.stats(0).unwrap().commands;
        assert_eq!(by_kind.get(&command::SEND_BRD), Some(&1));
        assert_eq!(by_kind.get(&command::SEND_VERSION), Some(&1));
        assert_eq!(by_kind.get(&command::RESET), Some(&1));
        assert_eq!(by_kind.get(&command::PING), Some(&1));
        assert_eq!(h.chain.unknown_bytes(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_chain_plays_on_one_pty_once_the_host_asks_for_changes() {
        use super::super::runner::{self, RunnerConfig};
        use std::io::{Read, Write};
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::Duration;
        let chain = ChainEmulator::new(scripts(3), ChainConfig::new(3)).unwrap();
        let addrs = chain.addresses();
        // The players at 50 times their pace: a turn of this host (a reply waits up to the
        // adapter's 16 ms) still sees each board several times a ply.
        let mut h = runner::spawn(
            chain,
            RunnerConfig {
                speed: 50.0,
                ..Default::default()
            },
        )
        .unwrap();
        let path = h.status().path;
        let stop = Arc::new(AtomicBool::new(false));
        let done = stop.clone();
        // The host: SEND_CHANGES to each board in turn, each answer read whole.
        let host = tokio::task::spawn_blocking(move || {
            let mut port = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .unwrap();
            let mut boards = vec![[0u8; 64]; addrs.len()];
            let mut buf = [0u8; 4096];
            let mut bad = 0;
            while !done.load(Ordering::SeqCst) {
                for (i, &a) in addrs.iter().enumerate() {
                    port.write_all(&bus(command::SEND_CHANGES, a)).unwrap();
                    let mut got = Vec::new();
                    loop {
                        let n = port.read(&mut buf).unwrap();
                        got.extend_from_slice(&buf[..n]);
                        if got.len() >= 3 {
                            let len = (usize::from(got[1]) << 7) | usize::from(got[2]);
                            if got.len() >= len {
                                break;
                            }
                        }
                    }
                    let (f, b) = frames(&got);
                    bad += b;
                    assert_eq!((f.len(), f[0].addr), (1, a));
                    replay(&mut boards[i], &f[0].data);
                }
            }
            (boards, bad)
        });
        let settled = h
            .wait_for(Duration::from_secs(60), |s| {
                s.boards.len() == 3 && s.boards.iter().all(|b| b.plies_settled >= 6)
            })
            .await;
        stop.store(true, Ordering::SeqCst);
        let (boards, bad) = host.await.unwrap();
        let st = h.stop().await;
        assert!(settled, "{:?}", st.boards);
        assert_eq!(bad, 0);
        assert_eq!(st.unknown_bytes, 0, "{:02x?}", st.unknown_sample);
        assert_eq!(st.modes_set, 3, "reporting switched on once per board");
        for (b, replayed) in st.boards.iter().zip(&boards) {
            assert!(b.replies_sent >= 6 && b.replies_garbled == 0, "{b:?}");
            // Pieces moved off the start position.
            assert_ne!(replayed[52], 1, "{replayed:?}");
        }
    }
}
