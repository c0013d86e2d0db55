//! eboardd: a daemon between tournament electronic chess boards (DGT) and the people who watch
//! and judge the games.
//!
//! Data flow: device bytes → [`protocol`] codec → [`core::observation::Observation`]s →
//! [`core`] state machine → events → outputs. [`capture`] records and replays the bytes.

pub mod capture;
pub mod cli;
pub mod config;
pub mod core;
pub mod daemon;
pub mod device;
pub mod driver;
pub mod family;
pub mod output;
pub mod pgn;
pub mod protocol;
pub mod replay;
pub mod round;
pub mod session;
pub mod sim;
