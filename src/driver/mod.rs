//! The board-driver seam (sans-IO): what the daemon, the captures and replay need to know about
//! one family of boards, and nothing else.
//!
//! A driver names itself (the `driver` of capture headers and `board_connected` events), says
//! how its boards are reached ([`Transport`]: a serial line and the USB ids it answers to, or a
//! Bluetooth LE GATT profile), makes decoders (bytes in →
//! [`Message`]s out: observations for the core, session messages for the port task), and
//! encodes the few commands a session sends (handshake, start of streaming, keep-alive, dump
//! request, clock commands). It does no I/O: the port task (`daemon::board_task`) reads and
//! writes (a serial port, or a GATT link through `daemon::ble`: notifications in, writes to the
//! profile's write characteristic out), replay feeds recorded bytes.
//!
//! To add a board family, copy `src/driver/TEMPLATE.md`'s skeleton into `src/driver/<name>/`
//! and add its row to the family table ([`crate::family::FAMILIES`]).

use std::time::Instant;

use crate::core::observation::Observation;
use port::{ClockShow, Session, SessionConfig, Unit};

pub mod ble_target;
pub mod certabo;
pub mod chessnut;
pub mod dgt;
pub mod millennium;
pub mod port;
pub mod positions;

/// Parity of a serial line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parity {
    /// No parity bit.
    None,
    /// Odd parity.
    Odd,
    /// Even parity.
    Even,
}

/// How a board's serial line is set up (no flow control for any board known so far).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineSettings {
    /// Bits per second.
    pub baud: u32,
    /// Data bits (7 or 8).
    pub data_bits: u8,
    /// Parity.
    pub parity: Parity,
    /// Stop bits (1 or 2).
    pub stop_bits: u8,
}

/// A USB id a driver serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsbId {
    /// Vendor id.
    pub vid: u16,
    /// Product id; `None`: any product of the vendor.
    pub pid: Option<u16>,
    /// Shared with other devices (e.g. an FTDI bridge): probe with the handshake before serving.
    pub generic: bool,
    /// What it is, for logs.
    pub name: &'static str,
}

/// A Bluetooth LE board's GATT profile: how it is found and which characteristics carry its
/// protocol. UUIDs are lowercase, as BlueZ writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GattProfile {
    /// Advertised names of its boards start with one of these (compared without regard to case).
    pub name_prefixes: &'static [&'static str],
    /// The service a board advertises or offers, by which discovery knows it too.
    pub service: &'static str,
    /// Characteristics the host subscribes to; their notifications go to the decoder
    /// ([`Decoder::notified`]).
    pub notify: &'static [&'static str],
    /// The characteristic every command of the session is written to.
    pub write: &'static str,
    /// The longest notification the protocol needs whole (a position frame): a link whose ATT
    /// MTU gives fewer bytes (MTU − 3) cannot carry it.
    pub longest_notification: usize,
}

impl GattProfile {
    /// Whether an advertised `name` is one of the profile's boards.
    pub fn matches_name(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        self.name_prefixes
            .iter()
            .any(|p| name.starts_with(&p.to_ascii_lowercase()))
    }
}

/// How a family's boards are reached: the port task, discovery and the udev rules read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// A byte stream on a serial port (USB, RS-232, Bluetooth Classic's rfcomm).
    Serial {
        /// The line settings.
        line: LineSettings,
        /// The USB ids of its boards (for discovery and the udev rules).
        usb_ids: &'static [UsbId],
    },
    /// Bluetooth LE GATT, through BlueZ (`daemon::ble`).
    Gatt(&'static GattProfile),
}

impl Transport {
    /// The USB ids of a serial family's boards (none for other transports).
    pub fn usb_ids(&self) -> &'static [UsbId] {
        match self {
            Transport::Serial { usb_ids, .. } => usb_ids,
            Transport::Gatt(_) => &[],
        }
    }

    /// A serial family's line settings.
    pub fn line(&self) -> Option<LineSettings> {
        match self {
            Transport::Serial { line, .. } => Some(*line),
            Transport::Gatt(_) => None,
        }
    }

    /// A GATT family's profile.
    pub fn gatt(&self) -> Option<&'static GattProfile> {
        match self {
            Transport::Gatt(p) => Some(p),
            Transport::Serial { .. } => None,
        }
    }
}

/// A battery's charge, as a wireless board reports it (family-neutral).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatteryLevel {
    /// Charge left in percent, when the board tells it plausibly (0..=100).
    pub percent: Option<u8>,
    /// Whether it is charging, when the board tells it.
    pub charging: Option<bool>,
}

/// A reply that only its own family's session reads, in that family's types: opaque to the
/// port task, which hands it back to the driver's [`port::Session`] (and its clock control).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverReply {
    /// A DGT clock's acknowledgement, through the board it is cabled to.
    DgtClockAck(dgt::ClockAck),
    /// A reply of a board on a DGT bus: which request it answers, and which board sent it.
    DgtBus(dgt::bus::BusAnswer),
}

/// What a session learns from a board besides observations.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionMessage {
    /// Firmware version (an answer to the handshake).
    Version {
        /// Major version.
        major: u8,
        /// Minor version.
        minor: u8,
    },
    /// The board answered as its family does, in a protocol that has no version to tell (a
    /// Certabo board's first line): the handshake's answer for a family that reports neither
    /// version nor serial number.
    Answer,
    /// The board's serial number (an answer to the handshake or to a keep-alive).
    Serial(String),
    /// Battery status (wireless boards).
    Battery(BatteryLevel),
    /// A reply for the driver's own session only.
    Driver(DriverReply),
    /// A frame the link cut short: `got` bytes of the `needed` its header announced (a
    /// Bluetooth LE notification over a too-small ATT MTU). Never read as what it would have
    /// said; the port task names the link's limit.
    Cut {
        /// Bytes received.
        got: usize,
        /// Bytes the frame has.
        needed: usize,
    },
    /// Anything else the board said that is a sign of life but carries nothing the daemon uses.
    Other,
}

/// One decoded message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// For the core: squares, whole boards, clock readings.
    Observation(Observation),
    /// For the port task.
    Session(SessionMessage),
}

/// A resynchronising decoder of one board's byte stream.
pub trait Decoder: Send + std::fmt::Debug {
    /// Decodes `bytes` (any split of the stream), appending complete messages to `out`.
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Message>);
    /// Decodes one Bluetooth LE notification from characteristic `char` (a GATT family's);
    /// by default as stream bytes ([`Decoder::decode`]).
    fn notified(&mut self, _char: &str, bytes: &[u8], out: &mut Vec<Message>) {
        self.decode(bytes, out);
    }
    /// Bytes the host sent to this board (a capture's `tx` record, in its place among the
    /// received bytes, live and in replay alike), for a decoder whose replies mean something
    /// different depending on the command they answer; by default nothing.
    fn sent(&mut self, _bytes: &[u8]) {}
    /// Bytes thrown away while resynchronising.
    fn dropped_bytes(&self) -> u64;
    /// Frames found bad (wrong length, bad checksum...).
    fn bad_frames(&self) -> u64;
    /// Whether the decoder holds nothing between frames (no partial frame, no message waiting,
    /// no earlier state a later frame is read against), so that a new decoder reads the bytes
    /// that follow alike: a restart may resume from here (`crate::core::engine::seed`).
    /// `false` unless the driver says so (then every restart replays the whole capture).
    fn at_rest(&self) -> bool {
        false
    }
}

/// A clock on a board's cable, driven through the board (family-neutral; each family that
/// relays a clock implements it in its own folder, e.g. `driver/dgt/clock.rs`). Sans-IO: the
/// session hands it what the board said and asks it for bytes to send.
pub trait ClockControl: Send + std::fmt::Debug {
    /// Show `what` (queued; a clock that shows no text drops texts).
    fn show(&mut self, what: ClockShow);
    /// Something the board said; `true` when it is worth a note that the clock, taken for
    /// absent, sent times and is probed again.
    fn received(&mut self, msg: &Message) -> bool;
    /// The bytes to send at `now`, if any.
    fn poll(&mut self, now: Instant) -> Option<Vec<u8>>;
    /// Whether the clock shows text (known once it answered its probe).
    fn shows_text(&self) -> bool;
}

/// One family of boards.
pub trait BoardDriver: Send + Sync + std::fmt::Debug {
    /// The driver's name, as in capture headers and events (e.g. `"dgt"`).
    fn name(&self) -> &'static str;
    /// How its boards are reached (a serial line and USB ids, or a GATT profile).
    fn transport(&self) -> Transport;
    /// A fresh decoder.
    fn decoder(&self) -> Box<dyn Decoder>;
    /// A fresh decoder for board `unit` of a port (a bus address on a chain: it takes only
    /// that board's frames); by default [`BoardDriver::decoder`].
    fn unit_decoder(&self, _unit: Unit) -> Box<dyn Decoder> {
        self.decoder()
    }
    /// Whether its boards report only when polled, one after the other on a shared line (a
    /// DGT chain): what a board shows between two of its polls is unknown, so its core takes
    /// its decisions at its polls ([`crate::core::observation::Observation::Polled`]) from the
    /// start. By default `false`: the board reports each change as it happens.
    fn polled(&self) -> bool {
        false
    }
    /// A fresh decoder for the bytes a port receives while listening to the line as a whole
    /// (a chain's discovery); by default [`BoardDriver::decoder`].
    fn line_decoder(&self) -> Box<dyn Decoder> {
        self.decoder()
    }
    /// The family's own session, for a protocol that is not one board per port (a chain of
    /// boards on a bus); `None` (the default): the standard session of one board on the port,
    /// with this driver's handshake, requests and clock ([`crate::session::single::SingleBoard`],
    /// see [`crate::session::open`]).
    fn session(&self, _cfg: &SessionConfig) -> Option<Box<dyn Session>> {
        None
    }
    /// Bytes sent on opening the port, asking the board who it is.
    fn handshake(&self) -> Vec<u8>;
    /// Bytes resent while the board has not answered the handshake (by default the handshake).
    fn handshake_retry(&self) -> Vec<u8> {
        self.handshake()
    }
    /// Whether the board tells its serial number in the handshake; `false`: its version
    /// alone completes the handshake and the board is named after its port.
    fn reports_serial(&self) -> bool {
        true
    }
    /// Bytes sent once the board is known: start streaming, and send the whole board.
    fn start(&self) -> Vec<u8>;
    /// A request the board answers, sent after a silence to prove the link alive.
    fn keepalive(&self) -> Vec<u8>;
    /// A request for the whole board.
    fn dump_request(&self) -> Vec<u8>;
    /// A battery status request, for wireless boards that answer one; `None` (the default)
    /// otherwise.
    fn battery_request(&self) -> Option<Vec<u8>> {
        None
    }
    /// A request for the board's own memory of what it sensed (answered with an
    /// [`Observation::Memory`]), for boards that keep one; `None` (the default) otherwise.
    fn memory_request(&self) -> Option<Vec<u8>> {
        None
    }
    /// The clock on the board's cable, for families that relay one; `None` (the default)
    /// otherwise: nothing is ever sent for a clock.
    fn clock(&self) -> Option<Box<dyn ClockControl>> {
        None
    }
}
