//! The Certabo driver: Certabo RFID boards on USB serial, behind the
//! [`crate::driver::BoardDriver`] seam.
//!
//! The wire format (lines of 64 five-byte piece ids, the LED command) is in [`codec`], with the
//! sources of every protocol fact; the read filter (misreads, drop-outs, junk) in [`filter`];
//! the id table learnt from the start position in [`calibration`]; the session and the
//! translation of lines into the core's observations in [`Certabo`] and [`CertaboStream`].
//!
//! **What a whole-position board can tell the core about touch-move.** A Certabo board sends
//! the whole position about twice a second and nothing when a piece is lifted or put down, so
//! the core sees a sequence of positions about 0.56 s apart, each change one line late (a
//! reading counts once two lines agree). It can see a piece lifted and put back on its square
//! when the piece is off the board for two lines or more (about a second), a piece lifted and
//! moved elsewhere, a released move changed to another square, pieces of both sides handled in
//! one turn when the lines show them apart, and the capture order when the lines show it. It
//! cannot see a touch without a lift (a piece touched or adjusted in place), a lift shorter
//! than about a second, the order of changes made between two lines (the driver reports the
//! pieces put down first, then the squares emptied), or the exact moment of a change (to
//! ±0.3 s, plus the line's delay); two moves made between the same two lines reach the core
//! as one jump, which it recovers from the next whole board (moves marked `recovered`). Piece ids tell pieces of one kind apart, but the core is
//! told pieces, not ids, so "the same knight came back" is not used.
//!
//! **Limits.** The ids are learnt from a start position (the first one the normal way round):
//! a decoder that starts on a game in progress reads nothing until a start position stands on
//! the board. The daemon keeps one decoder per board across replugs and rebuilds it from the
//! day's capture after a restart, so this concerns a fresh capture only. A set-up (adjourned)
//! position laid out after the calibration is not taken as a new game by the core, which starts
//! set-up games only before any game: the operator's `set_position` does it.

pub mod calibration;
pub mod codec;
mod driver;
pub mod filter;

pub use driver::{Certabo, CertaboStream, DUMP_AFTER_QUIET_LINES, NAME};
