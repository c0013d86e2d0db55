//! eboardd: a daemon between tournament electronic chess boards (DGT, Millennium ChessLink,
//! Certabo) and the people who watch and judge the games.
//!
//! Data flow: device bytes → the board family's [`driver`] (sans-IO, in a port's [`session`]) →
//! [`core::observation::Observation`]s → the [`core`] state machine → events → the [`output`]
//! hub and its consumers. [`capture`] records every byte, and [`replay`] plays a capture through
//! the same [`device`] pipeline. The rooms and what each may import: `docs/ARCHITECTURE.md`.

pub mod capture;
pub mod cli;
pub mod config;
pub mod core;
pub mod daemon;
pub mod device;
pub mod driver;
pub mod family;
pub mod output;
pub mod parallel;
pub mod pgn;
pub mod replay;
pub mod round;
pub mod service;
pub mod session;
pub mod sim;
