//! A port's conversation with its board or boards, sans-IO: what to send and when, what the
//! board's answers mean for the link, which board is which. The port task
//! (`daemon::board_task`) only moves bytes and time between the port, the boards' captures and
//! a [`Session`]; every byte written comes from the session, and so from the board's driver.
//!
//! Two kinds of sessions exist:
//!
//! - [`single::SingleBoard`], for the families that put one board on a port (DGT boards on USB,
//!   serial or Bluetooth, Millennium ChessLink): the driver's handshake, then streaming kept
//!   right by the family-neutral [`link::Link`] state machine (keep-alive, dumps, resets,
//!   battery), the board's memory read back after a long absence, and the driver's own
//!   [`crate::driver::ClockControl`] for a clock on the board's cable;
//! - a driver's own session for a protocol that is not one board per port (DGT's bus mode: a
//!   chain of boards polled one after the other), returned by
//!   [`crate::driver::BoardDriver::session`].
//!
//! Each board a session serves is a [`Unit`] of the port: [`SINGLE`] on a port with one board,
//! its bus address on a chain. The bytes received while the session listens to a unit are that
//! board's (its capture's `rx`), decoded once, by that board's own decoder, and the messages go
//! back to the session; bytes received while it listens to the line as a whole (a chain's
//! discovery, where any board may answer) go to the port's line capture.

pub mod clock_text;
pub mod link;
pub mod single;

pub use crate::driver::port::{
    Action, Boards, ClockShow, Note, PortDead, SINGLE, Session, SessionConfig, Unit,
};

/// The session that serves a port of `driver`'s family: the family's own
/// ([`crate::driver::BoardDriver::session`]) or one board on the port ([`single::SingleBoard`]).
pub fn open(
    driver: &'static dyn crate::driver::BoardDriver,
    cfg: SessionConfig,
) -> Box<dyn Session> {
    match driver.session(&cfg) {
        Some(s) => s,
        None => Box::new(single::SingleBoard::new(driver, cfg)),
    }
}
