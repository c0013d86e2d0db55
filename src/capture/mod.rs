//! Capture files, format `eboard-capture` version 1 (`docs/capture-format.md`).
//!
//! A capture is JSON Lines: a header line, then one record per line with `t` (seconds since
//! the capture started, microsecond precision), `dev`, and one of `rx`/`tx`/`op`/`note`.

use crate::core::observation::Micros;

mod reader;
mod writer;

pub use reader::{parse_capture, read_capture};
pub use writer::CaptureWriter;

/// The `format` value of every capture header.
pub const FORMAT: &str = "eboard-capture";
/// The capture format version this code reads and writes.
pub const VERSION: u64 = 1;

/// The `role` of a header's device that is no board: a *line*, the bytes a port exchanged with
/// a chain of boards as a whole (its discovery). A capture of lines only holds no game.
pub const LINE_ROLE: &str = "line";

/// `s` for a message: control and direction-changing characters escaped, at most `max`
/// characters.
pub fn printable(s: &str, max: usize) -> String {
    let mut out: String = s
        .chars()
        .take(max)
        .flat_map(|c| {
            if crate::pgn::unsafe_char(c) {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    if s.chars().count() > max {
        out.push('…');
    }
    out
}

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

/// The header line of a capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u64,
    /// Every other header field (creation time, daemon version, devices, configuration…).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl Header {
    /// A version-1 header with the given fields besides `format` and `version`.
    pub fn new(extra: serde_json::Map<String, serde_json::Value>) -> Header {
        Header {
            format: FORMAT.into(),
            version: VERSION,
            extra,
        }
    }

    /// When the capture was created (its `t` = 0), with the offset it was written with; `None`
    /// when the header does not say (the reader refuses a `created` that is no RFC 3339 time).
    pub fn created(&self) -> Option<chrono::DateTime<chrono::FixedOffset>> {
        let created = self.extra.get("created")?.as_str()?;
        chrono::DateTime::parse_from_rfc3339(created).ok()
    }

    /// The board the capture is of (`board`: the daemon writes one capture per board).
    pub fn board(&self) -> Option<&str> {
        self.extra.get("board")?.as_str()
    }

    /// The PGN tags the capture starts with (`tags`), read as a `set_tags` record is.
    pub fn tags(&self) -> Option<crate::pgn::TagUpdate> {
        self.extra.get("tags").map(crate::pgn::TagUpdate::read)
    }

    /// The entries of the header's `devices` list (`id`, `driver`, `link`, `address`, `role`...).
    pub fn devices(&self) -> impl Iterator<Item = &serde_json::Map<String, serde_json::Value>> {
        self.extra
            .get("devices")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_object)
    }

    /// The `devices` entry of device `id`.
    pub fn device(&self, id: &str) -> Option<&serde_json::Map<String, serde_json::Value>> {
        self.devices()
            .find(|d| d.get("id").and_then(serde_json::Value::as_str) == Some(id))
    }

    /// Whether the capture is a line capture: every device it lists has the role
    /// [`LINE_ROLE`] (and it lists one at least).
    pub fn is_line(&self) -> bool {
        let role = |d: &serde_json::Map<String, serde_json::Value>| {
            d.get("role").and_then(serde_json::Value::as_str) == Some(LINE_ROLE)
        };
        self.devices().next().is_some() && self.devices().all(role)
    }
}

/// A capture read from a file: header, records in file order, and non-fatal problems met.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// The header line.
    pub header: Header,
    /// The records, in file (and time) order.
    pub records: Vec<Record>,
    /// Non-fatal problems, each `FILE:LINE: reason` (a cut-off last line, a record without a
    /// payload…).
    pub warnings: Vec<String>,
}

/// Why a capture could not be read. Displays as one line, `FILE:LINE: reason`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// A line is not acceptable.
    #[error("{file}:{line}: {reason}")]
    Line {
        /// The file name as given.
        file: String,
        /// Line number, from 1.
        line: usize,
        /// What is wrong, in a few words.
        reason: String,
    },
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The file name as given.
        file: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// Lowercase hex of `bytes`, no separators.
pub fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 0x0F)]));
    }
    s
}

/// Bytes from hex (lowercase or uppercase, no separators, even length); `None` if invalid.
pub fn hex_decode(s: &str) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let s = s.as_bytes();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    s.chunks_exact(2)
        .map(|p| Some(nibble(p[0])? << 4 | nibble(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(hex_decode(&hex_encode(&all)), Some(all));
        assert_eq!(hex_encode(&[0x8e, 0x00, 0x05]), "8e0005");
        assert_eq!(hex_decode("8E0005"), Some(vec![0x8e, 0x00, 0x05]));
        assert_eq!(hex_decode(""), Some(vec![]));
        assert_eq!(hex_decode("8e0"), None);
        assert_eq!(hex_decode("8g"), None);
        assert_eq!(hex_decode("8e 0"), None);
        assert_eq!(hex_decode("é1"), None);
    }
}
