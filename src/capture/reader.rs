//! Reading capture files: strict about the header; a damaged or cut-off record line is skipped
//! with a warning naming it, and every good record around it is kept.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{Map, Value};

use super::{
    Capture, CaptureError, FORMAT, Header, OpRecord, Record, RecordKind, VERSION, hex_decode,
};
use crate::core::observation::{LinkChange, Micros};

/// Largest `t` accepted, in seconds (about 31 years): keeps the microsecond value exact.
const MAX_T_SECONDS: f64 = 1e9;

/// Reads and parses a capture file. Errors name the file as `path` is displayed.
pub fn read_capture(path: &Path) -> Result<Capture, CaptureError> {
    CaptureReader::open(path)?.read_all()
}

/// Parses the text of a capture; `name` is used in error and warning messages.
///
/// The header (first non-empty line) must be a JSON object with
/// `"format":"eboard-capture"` and `"version":1`: without it the file is an error. Each record
/// needs a number `t` (seconds, ≥ 0), a string `dev` and one payload (`rx`/`tx`/`notify`/
/// `write`/`op`/`link`/`note`); unknown fields are ignored. A record line that is not one
/// (damaged, cut off, not JSON, a bad field) is skipped with a warning naming the file and the
/// line, and every good record before and after it is kept. A `t` smaller than the previous record's is
/// raised to it with a warning, so the records' times never decrease.
pub fn parse_capture(name: &str, text: &str) -> Result<Capture, CaptureError> {
    CaptureReader::new(name, text.as_bytes())?.read_all()
}

/// One line of a capture file, as far as reading it goes.
#[derive(Debug)]
struct Piece {
    /// Its number, from 1.
    line: usize,
    /// Its text (without the line end); `None`: not valid UTF-8 (a crash in the middle of a
    /// multi-byte character cuts the last line; a damaged disk block garbles one in the
    /// middle).
    text: Option<String>,
    /// Nothing but ASCII white space.
    ascii_blank: bool,
}

impl Piece {
    /// Holds something to read: valid text that is not all white space.
    fn readable(&self) -> bool {
        self.text.as_deref().is_some_and(|t| !t.trim().is_empty())
    }
}

/// A capture read one record at a time, the way every reader of captures reads them: the
/// header at once, each record as it is asked for (a whole event's captures are replayed
/// without holding them), the warnings as they are met. [`read_capture`] and
/// [`parse_capture`] take every record of one.
pub struct CaptureReader<R: BufRead> {
    name: String,
    header: Header,
    input: R,
    /// Lines read ahead (to tell whether a line is the last of the file).
    ahead: VecDeque<Piece>,
    /// Lines read so far.
    lines: usize,
    /// The end of the input was met (or an error reading it, kept in `error`).
    ended: bool,
    error: Option<std::io::Error>,
    last_t: Option<Micros>,
    warnings: Vec<String>,
}

impl<R: BufRead> std::fmt::Debug for CaptureReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureReader")
            .field("name", &self.name)
            .field("lines", &self.lines)
            .finish_non_exhaustive()
    }
}

impl CaptureReader<BufReader<std::fs::File>> {
    /// Opens the capture file at `path` and reads its header. Errors name the file as `path`
    /// is displayed.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| CaptureError::Io {
            file: name.clone(),
            source,
        })?;
        CaptureReader::new(&name, BufReader::new(file))
    }
}

impl<R: BufRead> CaptureReader<R> {
    /// Reads the header of the capture `input` (named `name` in messages): the first line
    /// that is not blank must be one.
    pub fn new(name: &str, input: R) -> Result<Self, CaptureError> {
        let mut reader = CaptureReader {
            name: name.to_string(),
            header: Header::new(Map::new()),
            input,
            ahead: VecDeque::new(),
            lines: 0,
            ended: false,
            error: None,
            last_t: None,
            warnings: Vec::new(),
        };
        loop {
            let Some(piece) = reader.next_piece() else {
                reader.io_error()?;
                return Err(line_error(name, 1, "empty file: no capture header"));
            };
            match &piece.text {
                None => return Err(line_error(name, piece.line, "not valid UTF-8 text")),
                Some(text) if !text.trim().is_empty() => {
                    reader.header = parse_header(name, piece.line, text)?;
                    return Ok(reader);
                }
                Some(_) => {}
            }
        }
    }

    /// The capture's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Warnings met so far (each `FILE:LINE: reason`), taken: the reader forgets them.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    /// Every record left, with the header and every warning.
    pub fn read_all(mut self) -> Result<Capture, CaptureError> {
        let records = self.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok(Capture {
            header: self.header,
            records,
            warnings: self.warnings,
        })
    }

    /// The next line, read ahead or from the input; `None` at the end (or an error, kept).
    fn next_piece(&mut self) -> Option<Piece> {
        if let Some(p) = self.ahead.pop_front() {
            return Some(p);
        }
        self.read_piece()
    }

    /// A line from the input.
    fn read_piece(&mut self) -> Option<Piece> {
        if self.ended {
            return None;
        }
        let mut bytes = Vec::new();
        match self.input.read_until(b'\n', &mut bytes) {
            Ok(0) => {
                self.ended = true;
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                self.ended = true;
                self.error = Some(e);
                return None;
            }
        }
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        self.lines += 1;
        let ascii_blank = bytes.iter().all(u8::is_ascii_whitespace);
        let text = String::from_utf8(bytes).ok().map(|mut t| {
            if t.ends_with('\r') {
                t.pop();
            }
            t
        });
        Some(Piece {
            line: self.lines,
            text,
            ascii_blank,
        })
    }

    /// Whether a line after those handed out so far is `wanted`, reading ahead as far as it
    /// takes.
    fn any_ahead(&mut self, wanted: fn(&Piece) -> bool) -> bool {
        if self.ahead.iter().any(wanted) {
            return true;
        }
        while let Some(p) = self.read_piece() {
            let found = wanted(&p);
            self.ahead.push_back(p);
            if found {
                return true;
            }
        }
        false
    }

    /// The error met reading the input, once.
    fn io_error(&mut self) -> Result<(), CaptureError> {
        match self.error.take() {
            Some(source) => Err(CaptureError::Io {
                file: self.name.clone(),
                source,
            }),
            None => Ok(()),
        }
    }
}

impl<R: BufRead> Iterator for CaptureReader<R> {
    type Item = Result<Record, CaptureError>;

    /// The next record; a line that is not one is skipped with a warning. An error reading
    /// the input ends the records.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let Some(piece) = self.next_piece() else {
                return self.io_error().err().map(Err);
            };
            let line = piece.line;
            let Some(text) = piece.text else {
                // Skipped, named; the last line is likely cut off by a crash.
                let w = if self.any_ahead(|p| !p.ascii_blank) {
                    "not valid UTF-8 text; line skipped"
                } else {
                    "last line is not valid UTF-8 (cut off?); ignored"
                };
                self.warnings.push(format!("{}:{line}: {w}", self.name));
                continue;
            };
            if text.trim().is_empty() {
                continue;
            }
            let at = (self.name.as_str(), line);
            let w = match parse_record(&text, &mut self.last_t, &mut self.warnings, at) {
                Ok(Some(record)) => return Some(Ok(record)),
                Ok(None) => continue,
                Err(RecordError::NotJson(e)) if !self.any_ahead(Piece::readable) => {
                    format!("last line is not valid JSON (cut off?); ignored: {e}")
                }
                // A damaged line never costs the records around it: it is skipped, named.
                Err(e) => format!("{e}; line skipped"),
            };
            self.warnings.push(format!("{}:{line}: {w}", self.name));
        }
    }
}

/// Why one record line was not taken.
#[derive(Debug, thiserror::Error)]
enum RecordError {
    /// The line is not JSON (a cut-off or garbled line).
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    /// The line is JSON but not a record this format allows.
    #[error("{0}")]
    Bad(&'static str),
}

/// One record line: the record, `None` for a line skipped with a warning of its own (no
/// payload, an extension this build does not know), or why it is not a record. A `t` smaller
/// than the previous record's is raised to it with a warning.
fn parse_record(
    text: &str,
    last_t: &mut Option<Micros>,
    warnings: &mut Vec<String>,
    (name, line): (&str, usize),
) -> Result<Option<Record>, RecordError> {
    let value: Value = serde_json::from_str(text).map_err(RecordError::NotJson)?;
    let Value::Object(obj) = value else {
        return Err(RecordError::Bad("a record must be a JSON object"));
    };
    let mut t = parse_t(&obj).map_err(RecordError::Bad)?;
    let dev = match obj.get("dev") {
        Some(Value::String(d)) => d.clone(),
        Some(_) => return Err(RecordError::Bad("\"dev\" must be a string")),
        None => return Err(RecordError::Bad("record has no \"dev\"")),
    };
    let kinds: Vec<&str> = PAYLOADS
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    let Some(&key) = kinds.first() else {
        warnings.push(format!(
            "{name}:{line}: record has none of rx/tx/notify/write/op/link/note; ignored"
        ));
        return Ok(None);
    };
    let kind = parse_kind(key, &obj).map_err(RecordError::Bad)?;
    if let Some(prev) = *last_t
        && t < prev
    {
        // The format promises never-decreasing times, but a whole round's replay should
        // not fail over one misordered line: keep the record, at the previous time.
        warnings.push(format!(
            "{name}:{line}: t goes back in time ({} s after {} s); taken as {} s",
            seconds(t),
            seconds(prev),
            seconds(prev)
        ));
        t = prev;
    }
    *last_t = Some(t);
    if kinds.len() > 1 {
        warnings.push(format!(
            "{name}:{line}: record has several of rx/tx/notify/write/op/link/note; only \"{key}\" is used"
        ));
    }
    match kind {
        Some(kind) => Ok(Some(Record { t, dev, kind })),
        None => {
            warnings.push(format!(
                "{name}:{line}: a {key} record this build does not know ({}); ignored",
                super::printable(&obj[key].to_string(), 40)
            ));
            Ok(None)
        }
    }
}

fn line_error(name: &str, line: usize, reason: &str) -> CaptureError {
    CaptureError::Line {
        file: name.to_string(),
        line,
        reason: reason.to_string(),
    }
}

fn parse_header(name: &str, line: usize, text: &str) -> Result<Header, CaptureError> {
    let err = |reason: String| line_error(name, line, &reason);
    let value: Value =
        serde_json::from_str(text).map_err(|e| err(format!("header is not valid JSON: {e}")))?;
    let Value::Object(mut extra) = value else {
        return Err(err("header must be a JSON object".into()));
    };
    match extra.remove("format") {
        Some(Value::String(f)) if f == FORMAT => {}
        Some(other) => {
            return Err(err(format!(
                "not an {FORMAT} file (format is {other}, expected \"{FORMAT}\")"
            )));
        }
        None => {
            return Err(err(format!(
                "not an {FORMAT} file (header has no \"format\")"
            )));
        }
    }
    let version = match extra.remove("version") {
        Some(Value::Number(n)) if n.as_u64() == Some(VERSION) => VERSION,
        Some(other) => {
            return Err(err(format!(
                "capture version {other} is not supported (this reader reads version {VERSION})"
            )));
        }
        None => return Err(err("header has no \"version\"".into())),
    };
    match extra.get("created") {
        None => {}
        Some(Value::String(c)) if chrono::DateTime::parse_from_rfc3339(c).is_ok() => {}
        Some(other) => {
            return Err(err(format!(
                "header \"created\" must be an RFC 3339 time like \"2026-11-29T10:00:00Z\", not {}",
                super::printable(&other.to_string(), 60)
            )));
        }
    }
    Ok(Header {
        format: FORMAT.to_string(),
        version,
        extra,
    })
}

/// `t` in seconds → microseconds, rounded to the nearest microsecond.
fn parse_t(obj: &Map<String, Value>) -> Result<Micros, &'static str> {
    let t = match obj.get("t") {
        Some(Value::Number(n)) => n.as_f64().ok_or("\"t\" is not a usable number")?,
        Some(_) => return Err("\"t\" must be a number"),
        None => return Err("record has no \"t\""),
    };
    if !(0.0..=MAX_T_SECONDS).contains(&t) {
        return Err("\"t\" is out of range (negative or too large)");
    }
    Ok((t * 1e6).round() as Micros)
}

/// The payload keys of a record, in the order the first one present is taken.
const PAYLOADS: [&str; 7] = ["rx", "tx", "notify", "write", "op", "link", "note"];

/// The payload under `key` of record `obj`; `None`: a value of an extension this build does not know (a
/// `link` other than `up`/`down`), skipped with a warning.
fn parse_kind(key: &str, obj: &Map<String, Value>) -> Result<Option<RecordKind>, &'static str> {
    let value = &obj[key];
    let kind = match (key, value) {
        ("rx" | "tx", Value::String(h)) => {
            let bytes = hex_decode(h).ok_or("bytes must be hex digits, an even number of them")?;
            if key == "rx" {
                RecordKind::Rx(bytes)
            } else {
                RecordKind::Tx(bytes)
            }
        }
        ("rx" | "tx", _) => return Err("\"rx\"/\"tx\" must be a hex string"),
        ("notify" | "write", Value::String(h)) => {
            let bytes = hex_decode(h).ok_or("bytes must be hex digits, an even number of them")?;
            let char = match obj.get("char") {
                Some(Value::String(c)) if !c.is_empty() => c.clone(),
                _ => return Err("a \"notify\"/\"write\" record needs its \"char\" (a UUID)"),
            };
            if key == "notify" {
                RecordKind::Notify { char, bytes }
            } else {
                RecordKind::Write { char, bytes }
            }
        }
        ("notify" | "write", _) => return Err("\"notify\"/\"write\" must be a hex string"),
        ("op", Value::Object(_)) => RecordKind::Op(OpRecord::read(value.clone())),
        ("op", _) => return Err("\"op\" must be a JSON object"),
        ("link", Value::String(l)) => match LinkChange::from_name(l) {
            Some(change) => RecordKind::Link(change),
            None => return Ok(None),
        },
        ("link", _) => return Err("\"link\" must be a string"),
        (_, Value::String(n)) => RecordKind::Note(n.clone()),
        _ => return Err("\"note\" must be a string"),
    };
    Ok(Some(kind))
}

/// Microseconds as seconds with 6 decimals.
fn seconds(t: Micros) -> String {
    let sign = if t < 0 { "-" } else { "" };
    let a = t.unsigned_abs();
    format!("{sign}{}.{:06}", a / 1_000_000, a % 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        r#"{"format":"eboard-capture","version":1,"created":"2026-11-29T10:00:00Z"}"#;

    fn parse(body: &str) -> Result<Capture, CaptureError> {
        parse_capture("x.jsonl", &format!("{HEADER}\n{body}"))
    }

    #[test]
    fn sample_captures_all_read() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/captures");
        let mut files = 0;
        for sub in std::fs::read_dir(&dir).unwrap() {
            let sub = sub.unwrap().path();
            if !sub.is_dir() {
                continue;
            }
            for f in std::fs::read_dir(&sub).unwrap() {
                let f = f.unwrap().path();
                if f.extension().is_none_or(|e| e != "jsonl") {
                    continue;
                }
                let text = std::fs::read_to_string(&f).unwrap();
                let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
                let cap = read_capture(&f).unwrap();
                assert_eq!(cap.records.len(), lines - 1, "{}", f.display());
                // Two sample files have a record whose `t` goes back (a generator artefact).
                assert!(
                    cap.warnings
                        .iter()
                        .all(|w| w.contains("t goes back in time")),
                    "{:?}",
                    cap.warnings
                );
                assert_eq!(cap.header.extra["created"], "2026-11-29T10:00:00Z");
                assert!(cap.records.windows(2).all(|w| w[0].t <= w[1].t));
                files += 1;
            }
        }
        assert_eq!(files, 100);
    }

    #[test]
    fn records_and_rounding() {
        let cap = parse(concat!(
            r#"{"t":0,"dev":"board-1","tx":"42"}"#,
            "\n\n",
            r#"{"t":5.2500004,"dev":"board-1","rx":"8E0005340a","extra":true}"#,
            "\r\n",
            r#"{"t":5.2500006,"dev":"b2","op":{"action":"new_game"}}"#,
            "\n",
            r#"{"t":7,"dev":"b2","note":"hello"}"#,
            "\n",
        ))
        .unwrap();
        let t: Vec<Micros> = cap.records.iter().map(|r| r.t).collect();
        assert_eq!(t, [0, 5_250_000, 5_250_001, 7_000_000]);
        assert_eq!(
            cap.records[1].kind,
            RecordKind::Rx(vec![0x8e, 0, 5, 0x34, 0x0a])
        );
        assert_eq!(cap.records[1].dev, "board-1");
        assert!(matches!(cap.records[2].kind, RecordKind::Op(_)));
        assert_eq!(cap.records[3].kind, RecordKind::Note("hello".into()));
        assert!(cap.warnings.is_empty());
    }

    #[test]
    fn cut_off_last_line_is_dropped_with_a_warning() {
        for tail in [
            r#"{"t":1.5,"dev":"b","rx":"8e00"#,
            "{\"t\":1.5,\"dev\"\n",
            "{\n\n",
        ] {
            let cap = parse(&format!("{{\"t\":1,\"dev\":\"b\",\"rx\":\"00\"}}\n{tail}")).unwrap();
            assert_eq!(cap.records.len(), 1);
            assert_eq!(cap.warnings.len(), 1);
            assert!(
                cap.warnings[0].starts_with("x.jsonl:3: "),
                "{:?}",
                cap.warnings
            );
        }
    }

    #[test]
    fn bad_middle_line_is_skipped_with_its_line_and_the_rest_kept() {
        let cap = parse(
            "{\"t\":1,\"dev\":\"b\",\"rx\":\"00\"}\n{\"t\":2,\n{\"t\":3,\"dev\":\"b\",\"rx\":\"01\"}\n",
        )
        .unwrap();
        let rx: Vec<&RecordKind> = cap.records.iter().map(|r| &r.kind).collect();
        assert_eq!(rx, [&RecordKind::Rx(vec![0]), &RecordKind::Rx(vec![1])]);
        assert_eq!(cap.warnings.len(), 1, "{:?}", cap.warnings);
        let w = &cap.warnings[0];
        assert!(w.starts_with("x.jsonl:3: not valid JSON"), "{w}");
        assert!(w.ends_with("line skipped"), "{w}");
        assert!(!w.contains('\n'));
    }

    #[test]
    fn record_errors_skip_the_line() {
        let cases = [
            (r#"{"dev":"b","rx":"00"}"#, "no \"t\""),
            (r#"{"t":"1","dev":"b","rx":"00"}"#, "must be a number"),
            (r#"{"t":-1,"dev":"b","rx":"00"}"#, "out of range"),
            (r#"{"t":1,"rx":"00"}"#, "no \"dev\""),
            (r#"{"t":1,"dev":3,"rx":"00"}"#, "\"dev\" must be a string"),
            (r#"{"t":1,"dev":"b","rx":"0"}"#, "hex"),
            (r#"{"t":1,"dev":"b","tx":"zz"}"#, "hex"),
            (r#"{"t":1,"dev":"b","rx":12}"#, "hex string"),
            (r#"{"t":1,"dev":"b","op":"new"}"#, "\"op\" must be"),
            (r#"{"t":1,"dev":"b","note":1}"#, "\"note\" must be"),
            (r#"[1,2]"#, "JSON object"),
        ];
        for (line, reason) in cases {
            // The bad line is not the last one: followed by a good record, which is kept.
            let cap = parse(&format!(
                "{line}\n{{\"t\":9,\"dev\":\"b\",\"rx\":\"00\"}}\n"
            ))
            .unwrap();
            assert_eq!(cap.records.len(), 1, "{line}");
            assert_eq!(cap.records[0].t, 9_000_000, "{line}");
            assert_eq!(cap.warnings.len(), 1, "{line}: {:?}", cap.warnings);
            let w = &cap.warnings[0];
            assert!(w.starts_with("x.jsonl:2: "), "{line}: {w}");
            assert!(w.contains(reason), "{line}: {w}");
        }
    }

    #[test]
    fn t_going_back_is_clamped_with_a_warning() {
        let cap = parse(concat!(
            "{\"t\":2,\"dev\":\"a\",\"rx\":\"00\"}\n",
            "{\"t\":1.5,\"dev\":\"b\",\"rx\":\"01\"}\n",
            "{\"t\":2,\"dev\":\"b\",\"rx\":\"02\"}\n",
        ))
        .unwrap();
        let t: Vec<Micros> = cap.records.iter().map(|r| r.t).collect();
        assert_eq!(t, [2_000_000; 3]);
        assert_eq!(cap.warnings.len(), 1);
        assert!(
            cap.warnings[0]
                .starts_with("x.jsonl:3: t goes back in time (1.500000 s after 2.000000 s)"),
            "{:?}",
            cap.warnings
        );
    }

    #[test]
    fn record_without_payload_is_ignored_with_warning() {
        let cap = parse("{\"t\":1,\"dev\":\"b\",\"what\":1}\n{\"t\":2,\"dev\":\"b\",\"rx\":\"00\",\"note\":\"n\"}\n").unwrap();
        assert_eq!(cap.records.len(), 1);
        assert_eq!(cap.records[0].kind, RecordKind::Rx(vec![0]));
        assert_eq!(cap.warnings.len(), 2);
        assert!(cap.warnings[0].starts_with("x.jsonl:2: record has none"));
    }

    #[test]
    fn header_errors() {
        let e = |text: &str| parse_capture("h.jsonl", text).unwrap_err().to_string();
        assert!(e("").starts_with("h.jsonl:1: empty file"));
        assert!(e("\n\n").starts_with("h.jsonl:1: empty file"));
        assert!(e(r#"{"format":"other","version":1}"#).contains("not an eboard-capture file"));
        assert!(e(r#"{"version":1}"#).contains("no \"format\""));
        let v2 = e(r#"{"format":"eboard-capture","version":2}"#);
        assert!(
            v2.starts_with("h.jsonl:1: capture version 2 is not supported"),
            "{v2}"
        );
        assert!(e(r#"{"format":"eboard-capture","version":"1"}"#).contains("not supported"));
        assert!(e(r#"{"format":"eboard-capture"}"#).contains("no \"version\""));
        assert!(e(r#"{"format":"eboard-capt"#).contains("header is not valid JSON"));
        assert!(e("[]").contains("JSON object"));
        let cap = parse_capture("h.jsonl", &format!("\n{HEADER}")).unwrap();
        assert!(cap.records.is_empty());
        assert_eq!(cap.header.version, 1);
        assert!(!cap.header.extra.contains_key("format"));
    }

    #[test]
    fn files_and_broken_utf8() {
        let dir = std::env::temp_dir().join(format!("eboardd-capture-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cut.jsonl");
        let mut bytes = format!("{HEADER}\n{{\"t\":1,\"dev\":\"b\",\"rx\":\"00\"}}\n").into_bytes();
        bytes.extend(b"{\"t\":2,\"dev\":\"b\",\"note\":\"\xC3");
        std::fs::write(&path, &bytes).unwrap();
        let cap = read_capture(&path).unwrap();
        assert_eq!(cap.records.len(), 1);
        assert_eq!(cap.warnings.len(), 1);
        assert!(cap.warnings[0].contains(":3: last line is not valid UTF-8"));

        // Broken UTF-8 in the middle: that line is skipped, the records around it are kept.
        bytes.extend(b"\"}\n{\"t\":3,\"dev\":\"b\",\"rx\":\"00\"}\n");
        std::fs::write(&path, &bytes).unwrap();
        let cap = read_capture(&path).unwrap();
        assert_eq!(cap.records.len(), 2);
        assert_eq!(cap.records[1].t, 3_000_000);
        assert_eq!(cap.warnings.len(), 1, "{:?}", cap.warnings);
        assert!(
            cap.warnings[0].ends_with("cut.jsonl:3: not valid UTF-8 text; line skipped"),
            "{:?}",
            cap.warnings
        );
        // The header must be readable.
        std::fs::write(&path, b"{\"format\":\"eboard-\xC3\n").unwrap();
        let e = read_capture(&path).unwrap_err().to_string();
        assert!(e.ends_with("cut.jsonl:1: not valid UTF-8 text"), "{e}");

        let missing = read_capture(&dir.join("missing.jsonl"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("missing.jsonl: "), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
