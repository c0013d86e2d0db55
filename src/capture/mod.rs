//! Capture files, format `eboard-capture` version 1 (`capture-and-events.md` §1).
//!
//! A capture is JSON Lines: a header line, then one record per line with `t` (seconds since
//! the capture started, microsecond precision), `dev`, and one of `rx`/`tx`/`op`/`note`.

use crate::core::observation::Micros;

/// What one capture record carries.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordKind {
    /// Bytes received from the device.
    Rx(Vec<u8>),
    /// Bytes sent to the device.
    Tx(Vec<u8>),
    /// An operator action (the JSON object as written).
    Op(serde_json::Value),
    /// Free text, ignored by replay.
    Note(String),
}

/// One record of a capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Microseconds since the capture started.
    pub t: Micros,
    /// Device id within the capture, e.g. `"board-1"`.
    pub dev: String,
    /// The payload.
    pub kind: RecordKind,
}
