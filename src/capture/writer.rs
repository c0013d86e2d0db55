//! Writing capture files, one flushed line per record (append-only, crash tolerant).

use std::io::{self, Write};

use serde_json::{Map, Value};

use super::{FORMAT, Record, RecordKind, VERSION, hex_encode};

/// Writes a capture: the header line at creation, then one line per record, flushed after each
/// so that a crash loses at most the line being written.
#[derive(Debug)]
pub struct CaptureWriter<W: Write> {
    w: W,
}

impl<W: Write> CaptureWriter<W> {
    /// Writes the header line `{"format":"eboard-capture","version":1,…}` with the fields of
    /// `header_extra` after the two fixed ones (any `format`/`version` in it are ignored).
    pub fn new(mut w: W, header_extra: Map<String, Value>) -> io::Result<Self> {
        let mut line = format!("{{\"format\":{},\"version\":{VERSION}", json(FORMAT));
        for (k, v) in &header_extra {
            if k != "format" && k != "version" {
                line.push_str(&format!(",{}:{}", json(k), v));
            }
        }
        line.push_str("}\n");
        w.write_all(line.as_bytes())?;
        w.flush()?;
        Ok(CaptureWriter { w })
    }

    /// Writes one record as a line, e.g. `{"t":5.250000,"dev":"board-1","rx":"8e00053400"}`
    /// (`t` with exactly 6 decimals, bytes as lowercase hex), then flushes.
    pub fn write_record(&mut self, record: &Record) -> io::Result<()> {
        let (key, value) = match &record.kind {
            RecordKind::Rx(b) => ("rx", json(&hex_encode(b))),
            RecordKind::Tx(b) => ("tx", json(&hex_encode(b))),
            RecordKind::Notify { char, bytes } => (
                "notify",
                format!("{},\"char\":{}", json(&hex_encode(bytes)), json(char)),
            ),
            RecordKind::Write { char, bytes } => (
                "write",
                format!("{},\"char\":{}", json(&hex_encode(bytes)), json(char)),
            ),
            RecordKind::Op(op) => ("op", op.to_json().to_string()),
            RecordKind::Link(change) => ("link", json(change.name())),
            RecordKind::Note(n) => ("note", json(n)),
        };
        let t = record.t;
        let sign = if t < 0 { "-" } else { "" };
        let a = t.unsigned_abs();
        let line = format!(
            "{{\"t\":{sign}{}.{:06},\"dev\":{},\"{key}\":{value}}}\n",
            a / 1_000_000,
            a % 1_000_000,
            json(&record.dev),
        );
        self.w.write_all(line.as_bytes())?;
        self.w.flush()
    }

    /// The underlying writer.
    pub fn get_ref(&self) -> &W {
        &self.w
    }

    /// Gives back the underlying writer.
    pub fn into_inner(self) -> W {
        self.w
    }
}

/// A JSON string literal.
fn json(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::super::{OpRecord, parse_capture};
    use super::*;

    fn extra() -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("created".into(), "2026-11-29T10:00:00Z".into());
        m.insert("version".into(), 7.into());
        m.insert(
            "devices".into(),
            serde_json::json!([{"id": "board-1", "driver": "dgt"}]),
        );
        m
    }

    #[test]
    fn exact_lines() {
        let mut w = CaptureWriter::new(Vec::new(), Map::new()).unwrap();
        w.write_record(&Record {
            t: 5_250_000,
            dev: "board-1".into(),
            kind: RecordKind::Rx(vec![0x8e, 0x00, 0x05, 0x34, 0x00]),
        })
        .unwrap();
        w.write_record(&Record {
            t: 12,
            dev: "b\"2".into(),
            kind: RecordKind::Note("é\n".into()),
        })
        .unwrap();
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            text,
            concat!(
                "{\"format\":\"eboard-capture\",\"version\":1}\n",
                "{\"t\":5.250000,\"dev\":\"board-1\",\"rx\":\"8e00053400\"}\n",
                "{\"t\":0.000012,\"dev\":\"b\\\"2\",\"note\":\"é\\n\"}\n",
            )
        );
    }

    #[test]
    fn gatt_records_name_their_characteristic_and_read_back() {
        let char = "1b7e8262-2877-41c3-b46e-cf057c562023";
        let mut w = CaptureWriter::new(Vec::new(), Map::new()).unwrap();
        let records = [
            Record {
                t: 1_000_000,
                dev: "chessnut-1".into(),
                kind: RecordKind::Write {
                    char: "1b7e8272-2877-41c3-b46e-cf057c562023".into(),
                    bytes: vec![0x21, 0x01, 0x00],
                },
            },
            Record {
                t: 1_100_000,
                dev: "chessnut-1".into(),
                kind: RecordKind::Notify {
                    char: char.into(),
                    bytes: vec![0x01, 0x24],
                },
            },
        ];
        for r in &records {
            w.write_record(r).unwrap();
        }
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert_eq!(
            text.lines().skip(1).collect::<Vec<_>>(),
            [
                r#"{"t":1.000000,"dev":"chessnut-1","write":"210100","char":"1b7e8272-2877-41c3-b46e-cf057c562023"}"#,
                r#"{"t":1.100000,"dev":"chessnut-1","notify":"0124","char":"1b7e8262-2877-41c3-b46e-cf057c562023"}"#,
            ]
        );
        let back = parse_capture("c", &text).unwrap();
        assert_eq!(back.records, records);
        let no_char = format!(
            "{}\n{{\"t\":1,\"dev\":\"d\",\"notify\":\"01\"}}\n",
            text.lines().next().unwrap()
        );
        let read = parse_capture("c", &no_char);
        let why = match read {
            Ok(c) => c.warnings.join(" "),
            Err(e) => e.to_string(),
        };
        assert!(why.contains("\"char\""), "{why}");
    }

    #[test]
    fn writer_reader_round_trip() {
        let records = vec![
            Record {
                t: 0,
                dev: "board-1".into(),
                kind: RecordKind::Tx(vec![0x42]),
            },
            Record {
                t: 10_000,
                dev: "board-1".into(),
                kind: RecordKind::Rx((0..=255).collect()),
            },
            Record {
                t: 10_000,
                dev: "board-2".into(),
                kind: RecordKind::Rx(Vec::new()),
            },
            Record {
                t: 3_600_123_457,
                dev: "board-2".into(),
                kind: RecordKind::Op(OpRecord::read(
                    serde_json::json!({"action": "set_result", "result": "1-0"}),
                )),
            },
            Record {
                t: 3_600_500_000,
                dev: "board-2".into(),
                kind: RecordKind::Link(crate::core::observation::LinkChange::Down),
            },
            Record {
                t: 3_600_999_999,
                dev: "operator".into(),
                kind: RecordKind::Note("unicode ♞ and \"quotes\"".into()),
            },
        ];
        let mut w = CaptureWriter::new(Vec::new(), extra()).unwrap();
        for r in &records {
            w.write_record(r).unwrap();
        }
        let text = String::from_utf8(w.into_inner()).unwrap();
        assert!(text.starts_with("{\"format\":\"eboard-capture\",\"version\":1,"));
        let cap = parse_capture("w.jsonl", &text).unwrap();
        assert_eq!(cap.records, records);
        assert!(cap.warnings.is_empty());
        let mut expected = extra();
        expected.remove("version");
        assert_eq!(cap.header.extra, expected);
    }
}
