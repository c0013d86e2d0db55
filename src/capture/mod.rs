//! Capture files, format `eboard-capture` version 1 (`docs/capture-format.md`).
//!
//! A capture is JSON Lines: a header line, then one record per line with `t` (seconds since
//! the capture started, microsecond precision), `dev`, and one of `rx`/`tx`/`op`/`note`.

use crate::core::observation::{LinkChange, Micros, OperatorAction};
use crate::pgn::TagUpdate;

mod reader;
mod writer;

pub use reader::{CaptureReader, parse_capture, read_capture};
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
    /// A notification from a Bluetooth LE characteristic (`notify`, with `char`): the bytes of
    /// one notification, as the device sent them.
    Notify {
        /// The characteristic's UUID.
        char: String,
        /// The notification's bytes.
        bytes: Vec<u8>,
    },
    /// A write to a Bluetooth LE characteristic (`write`, with `char`).
    Write {
        /// The characteristic's UUID.
        char: String,
        /// The bytes written.
        bytes: Vec<u8>,
    },
    /// An operator record (`op`).
    Op(OpRecord),
    /// The device's link came up or went down (`link`): an input of the core, live and in
    /// replay alike.
    Link(LinkChange),
    /// Free text, ignored by replay.
    Note(String),
}

/// What an `op` record holds: an operator action for the core, the PGN tags from then on, or
/// an action this build does not know (kept as written, skipped by replay with a warning).
#[derive(Debug, Clone, PartialEq)]
pub enum OpRecord {
    /// An operator action, handled by the core.
    Action(OperatorAction),
    /// A `set_tags` record: PGN tags from now on, not for the core.
    SetTags(TagUpdate),
    /// An operator record this build cannot read.
    Unknown {
        /// The record's object, as written.
        value: serde_json::Value,
        /// Why it could not be read.
        error: String,
    },
}

impl OpRecord {
    /// Reads an `op` record's object: `set_tags`, else an [`OperatorAction`], else unknown.
    pub fn read(value: serde_json::Value) -> OpRecord {
        if value.get("action").and_then(serde_json::Value::as_str) == Some(crate::pgn::SET_TAGS) {
            return OpRecord::SetTags(TagUpdate::read(&value));
        }
        match serde_json::from_value::<OperatorAction>(value.clone()) {
            Ok(action) => OpRecord::Action(action),
            Err(e) => OpRecord::Unknown {
                value,
                error: e.to_string(),
            },
        }
    }

    /// The record's object, as the writer writes it.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            OpRecord::Action(action) => serde_json::to_value(action)
                .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() })),
            OpRecord::SetTags(tags) => tags.to_op(),
            OpRecord::Unknown { value, .. } => value.clone(),
        }
    }
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

    /// The entries of the header's `devices` list, typed (an entry that is no JSON object is
    /// skipped; a field of the wrong type reads as absent).
    pub fn devices(&self) -> impl Iterator<Item = DeviceEntry> + '_ {
        self.extra
            .get("devices")
            .and_then(serde_json::Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(serde_json::Value::as_object)
            .map(DeviceEntry::read)
    }

    /// The `devices` entry of device `id`.
    pub fn device(&self, id: &str) -> Option<DeviceEntry> {
        self.devices().find(|d| d.id == id)
    }

    /// Whether the capture is a line capture: every device it lists has the role
    /// [`LINE_ROLE`] (and it lists one at least).
    pub fn is_line(&self) -> bool {
        let role = |d: DeviceEntry| d.role.as_deref() == Some(LINE_ROLE);
        self.devices().next().is_some() && self.devices().all(role)
    }
}

/// One entry of a capture header's `devices` list (`docs/capture-format.md` §2): the device id
/// its records carry, and what replay sets it up from.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceEntry {
    /// The device id (`dev` of its records).
    pub id: String,
    /// The board family whose decoder reads its bytes (`dgt` when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Its serial number (`null` when the board tells none).
    pub serial: Option<String>,
    /// `wired` or `bluetooth`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// A board's bus address on a chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<u16>,
    /// [`LINE_ROLE`] for a line capture's device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// The port it was served on (a line capture's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
}

impl DeviceEntry {
    /// Reads an entry leniently: a field of the wrong type (or an id that is no string) reads
    /// as absent, as readers always took them.
    fn read(d: &serde_json::Map<String, serde_json::Value>) -> DeviceEntry {
        let text = |k: &str| {
            d.get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        };
        DeviceEntry {
            id: text("id").unwrap_or_default(),
            driver: text("driver"),
            serial: text("serial"),
            link: text("link"),
            address: d
                .get("address")
                .and_then(serde_json::Value::as_u64)
                .and_then(|a| u16::try_from(a).ok()),
            role: text("role"),
            port: text("port"),
        }
    }
}

/// The header fields a writer of captures gives (the daemon adds `created` and `daemon`):
/// typed, so that every header is made one way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeaderFields {
    /// The board the capture is of.
    pub board: Option<String>,
    /// The PGN tags the capture starts with.
    pub tags: Option<TagUpdate>,
    /// The devices of the capture.
    pub devices: Vec<DeviceEntry>,
}

impl HeaderFields {
    /// The fields as a header's JSON object (besides `format` and `version`).
    pub fn to_map(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        if let Some(board) = &self.board {
            m.insert("board".into(), board.clone().into());
        }
        if let Some(tags) = &self.tags {
            m.insert("tags".into(), tags.to_json());
        }
        if !self.devices.is_empty() {
            m.insert(
                "devices".into(),
                serde_json::to_value(&self.devices).unwrap_or_default(),
            );
        }
        m
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
