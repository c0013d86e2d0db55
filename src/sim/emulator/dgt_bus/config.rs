//! How a chain is set up ([`ChainConfig`]): its boards ([`BusBoardConfig`]: serial number,
//! version, clock, times off the line), the boards' timing, the line's faults, the USB-serial
//! adapter; and why a chain cannot be made ([`ChainError`]).

use std::fmt;

use super::BYTE_TIME;
use crate::core::observation::Micros;
use crate::sim::emulator::ClockModel;

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
