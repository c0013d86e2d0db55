//! The pure core: observations with timestamps in, events out. No I/O, no clock reads.

pub mod claims;
pub mod clock;
pub mod correction;
pub mod engine;
pub mod event;
pub mod game;
pub mod irregular;
pub mod ledger;
pub mod observation;
pub mod sensed;
pub mod start;
pub mod stored;
pub mod vocab;
