//! The pure core: observations with timestamps in, events out. No I/O, no clock reads.

pub mod observation;
