//! [`DgtBus`]: the driver of a chain of DGT boards on one port, in DGT's bus mode
//! (`docs/dgt-protocol.md` §1.9, §5.14), and the timing of its commands on the line (a byte's
//! time, how long a reply may take, how often a command is tried in a board's turn). Its
//! session is [`Chain`].

use std::time::Duration;

use super::chain::Chain;
use super::{BusCommand, BusLineStream, BusStream};
use crate::driver::port::{Session, SessionConfig, Unit};
use crate::driver::{BoardDriver, Decoder, Transport};

/// The driver's name in capture headers and events (never change it: captures name it).
pub const NAME: &str = "dgt-bus";

/// Time a byte takes on the line at 9600 baud, 8N1 (ten bits).
pub const BYTE_TIME: Duration = Duration::from_micros(1042);
/// The longest pause before a reply before it counts as missing: DGT's header suggests 80 ms (a
/// board answers within milliseconds, up to 20 ms while it writes its memory).
pub const REPLY_GAP: Duration = Duration::from_millis(80);
/// How long after SET_START_GAME the board's START_GAME_WRITTEN comes: "about 70 msec." [notes:
/// dgtbrd.h]. Its reply is awaited this much longer than [`REPLY_GAP`]: with the 16 ms an FTDI
/// adapter may hold received bytes, it comes after 80 ms, and a second SET_START_GAME then
/// would reach a board still busy with the first (or mark the start again).
pub const START_GAME_TIME: Duration = Duration::from_millis(70);

/// The longest pause before `cmd`'s reply before it counts as missing.
pub fn reply_gap(cmd: BusCommand) -> Duration {
    match cmd {
        BusCommand::SetStartGame => START_GAME_TIME + REPLY_GAP,
        _ => REPLY_GAP,
    }
}

/// The pause after bytes of a reply that ends it (cut short, or bad): a board sends a reply's
/// bytes back to back, so the line is free once it has been quiet this long. Above the 16 ms
/// an FTDI USB-serial adapter may hold received bytes by default (its latency timer, FTDI
/// AN232B-04), so that a reply still coming in is not taken for ended.
pub const REPLY_QUIET: Duration = Duration::from_millis(30);
/// How long every board may take to answer a PING to address 0: 1.1 s (DGT's header), a reply's
/// bytes and [`REPLY_GAP`].
pub const DISCOVERY_WINDOW: Duration = Duration::from_millis(1100 + 7 + 80);
/// Sends of one command before the exchange counts as unanswered.
pub const MAX_TRIES: u32 = 3;

/// Sends of `cmd` in one board's turn before the turn goes on without its reply (asked again
/// in the board's next turn, when it matters): [`MAX_TRIES`], but one for the clock (read
/// every turn anyway), a board dump or a memory (their long replies take the line longest and
/// come through whole least often on a line that loses bytes: a dump's 70 bytes at 3% loss,
/// one try in eight), so that one board's bad replies do not hold up the others' turns.
pub fn tries_in_a_turn(cmd: BusCommand) -> u32 {
    match cmd {
        // The clock is read again next turn anyway.
        BusCommand::SendBoard | BusCommand::SendFromStart | BusCommand::SendClock => 1,
        _ => MAX_TRIES,
    }
}

/// A chain of DGT boards on one port, in bus mode. Configured (`dgt-bus:/dev/ttyUSB0`), never
/// discovered: a chain's port carries the same USB ids as a single DGT board.
#[derive(Debug, Clone, Copy, Default)]
pub struct DgtBus;

impl BoardDriver for DgtBus {
    fn name(&self) -> &'static str {
        NAME
    }

    fn polled(&self) -> bool {
        true
    }

    fn transport(&self) -> Transport {
        Transport::Serial {
            line: super::super::driver::LINE,
            usb_ids: &[],
        }
    }

    /// The decoder of a board at address 0 (no board has it): use [`BoardDriver::unit_decoder`].
    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(BusStream::new(0))
    }

    fn unit_decoder(&self, unit: Unit) -> Box<dyn Decoder> {
        Box::new(BusStream::new(unit))
    }

    fn line_decoder(&self) -> Box<dyn Decoder> {
        Box::new(BusLineStream::new())
    }

    fn session(&self, cfg: &SessionConfig) -> Option<Box<dyn Session>> {
        Some(Box::new(Chain::new(cfg.clone())))
    }

    /// Not used: the chain's session sends bus commands only.
    fn handshake(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Not used: the chain's session sends bus commands only.
    fn start(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Not used: the chain's session sends bus commands only.
    fn keepalive(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Not used: the chain's session sends bus commands only.
    fn dump_request(&self) -> Vec<u8> {
        Vec::new()
    }
}
