//! The Millennium driver: ChessLink boards (the ChessGenius Exclusive with its ChessLink
//! module, the eONE with ChessLink built in) on USB serial, behind the
//! [`crate::driver::BoardDriver`] seam.
//!
//! The wire format is in [`codec`] (with the sources that confirm each protocol fact); the
//! session (handshake, status on change, keep-alive, board requests) and the translation of
//! whole-board statuses into the core's observations in [`Millennium`] and [`MillenniumStream`].

pub mod codec;
mod driver;

pub use driver::{Millennium, MillenniumStream, NAME};
