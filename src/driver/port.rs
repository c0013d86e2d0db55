//! The port-session seam (sans-IO): the words a port's session and the port task speak, under
//! the driver seam so that a family that brings its own session (DGT's bus mode) names nothing
//! above `driver`. A [`Session`] takes bytes and time in and gives [`Action`]s out; each board
//! it serves is a [`Unit`] of the port. The family-neutral sessions (`crate::session`) and the
//! port task (`daemon::board_task`) build on these.

use std::fmt;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::core::engine::EngineConfig;
use crate::core::event::CoreEvent;
use crate::core::observation::FieldArray;
use crate::driver::{BatteryLevel, Message};

/// A board on a port: [`SINGLE`] on a port that serves one board, its bus address on a chain.
pub type Unit = u16;

/// The unit of a port that serves one board.
pub const SINGLE: Unit = 0;

/// What a clock can be asked to show (family-neutral).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClockShow {
    /// A short text (a move, "ILLEGAL"); clocks that show text cut or pad it.
    Text(String),
    /// The times again, after a text.
    Times,
}

/// How a port is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionConfig {
    /// The link the port is (a Bluetooth board scans at half speed and has a battery).
    pub link: LinkKind,
    /// Silence before a keep-alive request (twice this: a dead link).
    pub keepalive: Duration,
    /// Field updates quiet this long: a dump (and the update mode set again).
    pub quiet_dump: Duration,
    /// A generic USB device being probed: not answering the handshake means "not a board of
    /// this family" rather than a dead link.
    pub probing: bool,
    /// The name of a board that tells no serial number: after its port (`port-ttyUSB0`).
    pub port_serial: String,
    /// An absence after which a board with a game in progress is asked for its memory (when
    /// its family keeps one): a shorter one leaves a few plies at most, which the core's gap
    /// search recovers from the board dump (`daemon.memory_after_secs`).
    pub memory_after: Duration,
}

impl SessionConfig {
    /// Handshake tries before the port is given up (or a probed device is not a board).
    pub fn handshake_tries(&self) -> u32 {
        if self.probing { 2 } else { 5 }
    }
}

/// Something worth a log line and a capture note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The board answers requests but stopped sending updates while its clock ran: it reset to
    /// IDLE; the update mode is set again.
    Reset {
        /// Seconds since the last update.
        silent_secs: u64,
    },
    /// A dump differs from the field updates received: updates were lost.
    DumpDiffers {
        /// Fields that differ.
        fields: usize,
        /// The first of them (device field index).
        first: u8,
    },
    /// Battery status of a wireless board.
    Battery(BatteryLevel),
    /// The clock said "no clock" (or did not answer) and then sent times: probed again.
    ClockBack,
    /// The board told no serial number after every try: it is named after its port.
    NoSerial,
    /// The board's memory was asked for after its absence, to recover the moves made meanwhile.
    MemoryAsked,
    /// The board's memory did not come in time; streaming starts without it.
    MemoryLate,
    /// The board is ahead of the record by moves no single sequence explains: its memory was
    /// asked for again (with a board dump after it).
    MemoryAskedAgain,
    /// A board of a chain did not answer a command in time (it is asked again).
    NoReply {
        /// Commands it left unanswered in a row.
        missed: u32,
    },
}

impl Note {
    /// Whether it is only information (logged at info level; the others warn).
    pub fn informational(&self) -> bool {
        matches!(
            self,
            Note::Battery(_) | Note::MemoryAsked | Note::MemoryAskedAgain
        )
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Reset { silent_secs } => write!(
                f,
                "the board answers but has sent nothing for {silent_secs} s while its clock \
                 ran: it has reset to IDLE; update mode set again, board dump asked for"
            ),
            Note::DumpDiffers { fields, first } => {
                let square = crate::core::sensed::Orientation::Normal.square_of(*first);
                write!(
                    f,
                    "board dump differs from the field updates received in {fields} field(s) \
                     (first: field {first}, {square} seen from White on a normal board): \
                     updates were lost; the game is reconciled with the dump"
                )
            }
            Note::Battery(b) => {
                match b.percent {
                    Some(p) => write!(f, "battery {p}%")?,
                    None => write!(f, "battery unknown")?,
                }
                if b.charging == Some(true) {
                    write!(f, ", charging")?;
                }
                Ok(())
            }
            Note::ClockBack => write!(
                f,
                "the clock sends times after saying \"no clock\": probing it again"
            ),
            Note::NoSerial => write!(f, "no serial number; named after the port"),
            Note::MemoryAsked => write!(
                f,
                "board away for a while with a game in progress: its memory asked for, to \
                 recover the moves made meanwhile"
            ),
            Note::MemoryAskedAgain => write!(
                f,
                "the board is ahead of the record by moves no single sequence explains: its \
                 memory asked for again, to recover them"
            ),
            Note::MemoryLate => write!(
                f,
                "the board's memory did not come in time; streaming without it"
            ),
            Note::NoReply { missed } => {
                write!(f, "no reply to {missed} command(s) in a row")
            }
        }
    }
}

/// What a session asks the port task to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Write bytes, on behalf of board `unit` (they go to its capture) or of the line (`None`).
    Send {
        /// The board the bytes are for, or `None` for the line as a whole.
        unit: Option<Unit>,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// A board answered and is known: open its capture, show it connected, then tell the
    /// session with [`Session::opened`].
    Found {
        /// The board.
        unit: Unit,
        /// Its serial number (or the name it is known by).
        serial: String,
        /// Its firmware version, when it told.
        version: Option<(u8, u8)>,
    },
    /// A board stopped answering while the port stays open: show it disconnected (its game is
    /// kept; it may be found again).
    Lost {
        /// The board.
        unit: Unit,
        /// Why.
        why: String,
    },
    /// Worth a log line and a note in the board's capture.
    Note {
        /// The board.
        unit: Unit,
        /// What.
        note: Note,
    },
    /// The port is no use any more: close it (it is reopened with backoff).
    Dead(PortDead),
    /// A probed generic device is not a board of this family.
    NotABoard,
}

/// Why a port is no use any more ([`Action::Dead`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PortDead {
    /// The board never answered the handshake.
    #[error("no answer to the handshake")]
    NoHandshake,
    /// Nothing came from the board for this long, though it was asked to say something.
    #[error("silent for {} s", .0.as_secs())]
    Silent(Duration),
}

/// The kind of link a board is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkKind {
    /// USB or RS-232: the board scans at full speed.
    Wired,
    /// Bluetooth (an RFCOMM tty, `/dev/rfcomm*`): the board scans at half speed and has a
    /// battery.
    Bluetooth,
}

impl LinkKind {
    /// The link of a port: Bluetooth when the device node (after symlinks) is an RFCOMM tty.
    pub fn of_path(path: &Path) -> LinkKind {
        if path.to_string_lossy().starts_with("ble:") {
            return LinkKind::Bluetooth;
        }
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let rfcomm = |p: &Path| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("rfcomm"))
        };
        if rfcomm(&real) || rfcomm(path) {
            LinkKind::Bluetooth
        } else {
            LinkKind::Wired
        }
    }

    /// How much slower the board's scan is than a wired board's.
    pub fn scan_factor(self) -> u32 {
        match self {
            LinkKind::Wired => 1,
            LinkKind::Bluetooth => 2,
        }
    }

    /// The core's settings with its settle windows scaled to the link's scan speed.
    pub fn engine_config(self) -> EngineConfig {
        let d = EngineConfig::default();
        let k = i64::from(self.scan_factor());
        EngineConfig {
            settle: d.settle * k,
            displaced_after: d.displaced_after * k,
            ..d
        }
    }

    /// The name used in logs and capture notes.
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::Wired => "wired",
            LinkKind::Bluetooth => "bluetooth",
        }
    }
}

/// What a session may ask about the boards it serves (the daemon answers from their cores).
pub trait Boards {
    /// Whether board `unit`'s game explains `fields` (device numbering): they show the current
    /// position, or no game is being played to explain them. Unknown boards explain anything.
    fn explains(&self, unit: Unit, fields: &FieldArray) -> bool;
    /// Whether board `unit` has a game in progress (moves made, no result).
    fn game_in_progress(&self, unit: Unit) -> bool;
    /// Whether board `unit`'s current game has started and no move is made yet.
    fn at_game_start(&self, unit: Unit) -> bool;
    /// How long board `unit` was away before this session found it; `None` when unknown (its
    /// first connection since the daemon started, e.g. after a restart).
    fn away_for(&self, unit: Unit) -> Option<Duration>;
    /// Whether board `unit` is ahead of its record by moves that no single legal sequence
    /// explains (`moves_missing` open): its memory, if it keeps one, can tell.
    fn moves_missing(&self, _unit: Unit) -> bool {
        false
    }
}

/// A port's session (sans-IO): bytes received and time in, [`Action`]s out.
pub trait Session: Send + fmt::Debug {
    /// The port has just been opened at `now`.
    fn open(&mut self, now: Instant, out: &mut Vec<Action>);
    /// Whose bytes come in now: a board's (`Some(unit)`), or the line's as a whole (`None`).
    fn listener(&self) -> Option<Unit>;
    /// Messages decoded from a chunk received at `now` while listening to `from` (possibly
    /// none: a chunk is a sign of life even when no message is complete yet), and how many
    /// frames the decoder rejected in it.
    fn received(
        &mut self,
        now: Instant,
        from: Option<Unit>,
        msgs: &[Message],
        bad_frames: u64,
        boards: &dyn Boards,
        out: &mut Vec<Action>,
    );
    /// Board `unit`'s capture is open (after [`Action::Found`]): it may start streaming.
    fn opened(&mut self, now: Instant, unit: Unit, boards: &dyn Boards, out: &mut Vec<Action>);
    /// Time passes: what is due at `now`.
    fn poll(&mut self, now: Instant, boards: &dyn Boards, out: &mut Vec<Action>);
    /// The latest time [`Session::poll`] should be called next, if sooner than the port task's
    /// own tick.
    fn deadline(&self) -> Option<Instant> {
        None
    }
    /// The core published `events` on board `unit` (a session may act on a game's start).
    fn events(
        &mut self,
        _now: Instant,
        _unit: Unit,
        _events: &[CoreEvent],
        _out: &mut Vec<Action>,
    ) {
    }
    /// Whether board `unit` has a clock that shows text.
    fn shows_text(&self, _unit: Unit) -> bool {
        false
    }
    /// Show `what` on board `unit`'s clock (ignored without a clock that shows text).
    fn show(&mut self, _unit: Unit, _what: ClockShow) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfcomm_ports_are_bluetooth_with_slower_settle_windows() {
        assert_eq!(
            LinkKind::of_path(Path::new("/dev/rfcomm0")),
            LinkKind::Bluetooth
        );
        assert_eq!(
            LinkKind::of_path(Path::new("/dev/ttyACM0")),
            LinkKind::Wired
        );
        let bt = LinkKind::Bluetooth.engine_config();
        let usb = LinkKind::Wired.engine_config();
        assert_eq!(bt.settle, 2 * usb.settle);
        assert_eq!(bt.displaced_after, 2 * usb.displaced_after);
    }
}
