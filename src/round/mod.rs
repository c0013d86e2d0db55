//! Pairings of a round from the files pairing programs write: FIDE TRF ([`trf`]) and a plain
//! CSV ([`csv`]). Pure parsers: bytes in, a [`LoadedRound`] or one [`PairingError`] out (no
//! file, clock or network access), so a bad file changes nothing. The players themselves are
//! [`pairing`]'s. The `eboardd round load` command that sends a file to the running daemon is
//! [`crate::cli::round`].

pub mod check;
pub mod csv;
pub mod matches;
pub mod pairing;
pub mod pairs;
pub mod results;
pub mod trf;

use std::collections::HashMap;

pub use pairing::{Pairing, Player, PlayerError};

/// Most boards a pairings file may give.
pub const MAX_BOARDS: usize = 1000;

/// The format of a pairings file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// FIDE Tournament Report File (TRF-16 and TRF-26, with their team records `013` and
    /// `310`), as Swiss-Manager, Vega and JaVaFo write it.
    Trf,
    /// `board,white,black[,white_fide_id,...,white_team,black_team]` with a header row.
    Csv,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "trf" | "trfx" | "txt" => Ok(Format::Trf),
            "csv" => Ok(Format::Csv),
            _ => Err(format!("unknown pairings format {s:?}: trf or csv")),
        }
    }
}

impl Format {
    /// The format a file's content looks like: TRF when a line starts with `001 ` or `012 `.
    pub fn guess(text: &[u8]) -> Format {
        let trf = text
            .split(|&c| c == b'\n')
            .any(|l| l.starts_with(b"001 ") || l.starts_with(b"012 "));
        if trf { Format::Trf } else { Format::Csv }
    }
}

/// One round's pairings, by board number (1-based, ascending).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadedRound {
    /// Round number.
    pub round: u32,
    /// Tournament name, when the file gives one (TRF `012`).
    pub event: Option<String>,
    /// Site, when the file gives one (TRF `022`).
    pub site: Option<String>,
    /// `(board number, players)`, board numbers ascending and distinct.
    pub boards: Vec<(u32, Pairing)>,
    /// Start ranks (White, Black) by board number, when the file gives them (a TRF).
    pub ranks: HashMap<u32, (u32, u32)>,
}

/// Why a pairings file was refused: the line (1-based; 0 = the file as a whole) and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, field {field}: {message}")]
pub struct PairingError {
    /// Line of the file (1-based), 0 for the file as a whole.
    pub line: usize,
    /// The field (column name, or TRF field such as `rating`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl PairingError {
    /// An error at `line` about `field`.
    pub fn new(line: usize, field: impl Into<String>, message: impl Into<String>) -> Self {
        PairingError {
            line,
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Parse a pairings file of `format` for round `round`.
pub fn parse(format: Format, bytes: &[u8], round: u32) -> Result<LoadedRound, PairingError> {
    if round == 0 || round > 999 {
        return Err(PairingError::new(
            0,
            "round",
            "the round is a number from 1 to 999",
        ));
    }
    let text = decode(bytes);
    let loaded = match format {
        Format::Trf => trf::parse(&text, round)?,
        Format::Csv => csv::parse(&text, round)?,
    };
    if loaded.boards.is_empty() {
        return Err(PairingError::new(
            0,
            "pairings",
            format!("the file pairs nobody in round {round}"),
        ));
    }
    Ok(loaded)
}

/// The text of a file: UTF-8 (a BOM dropped), else Latin-1 (as older Windows programs write).
pub fn decode(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

/// A player's name as a PGN tag takes it (`"Last, First"`), checked like every configured name.
pub(crate) fn name(line: usize, field: &str, raw: &str) -> Result<Option<String>, PairingError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    // TRF writes "Last,First": the DGT/PGN style has a space after the comma.
    let name = match raw.split_once(',') {
        Some((last, first)) if !first.starts_with(' ') && !first.is_empty() => {
            format!("{}, {}", last.trim(), first.trim())
        }
        _ => raw.to_string(),
    };
    let p = Player {
        name: Some(name.clone()),
        ..Default::default()
    };
    p.validate()
        .map_err(|e| PairingError::new(line, field, e.to_string()))?;
    Ok(Some(name))
}

/// A team's name (blank: none), checked like every player's name.
pub(crate) fn team(line: usize, field: &str, raw: &str) -> Result<Option<String>, PairingError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let p = Player {
        team: Some(raw.to_string()),
        ..Default::default()
    };
    p.validate()
        .map_err(|e| PairingError::new(line, field, e.to_string()))?;
    Ok(Some(raw.to_string()))
}

/// A FIDE title from TRF's or a CSV's spelling (`g`, `GM`, `wf`, `WFM`, ...).
pub(crate) fn title(line: usize, field: &str, raw: &str) -> Result<Option<String>, PairingError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let t = match raw.to_ascii_lowercase().as_str() {
        "g" | "gm" => "GM",
        "m" | "im" => "IM",
        "f" | "fm" => "FM",
        "c" | "cm" => "CM",
        "wg" | "wgm" => "WGM",
        "wm" | "wim" => "WIM",
        "wf" | "wfm" => "WFM",
        "wc" | "wcm" => "WCM",
        "ag" | "agm" => "AGM",
        "am" | "aim" => "AIM",
        "af" | "afm" => "AFM",
        "ac" | "acm" => "ACM",
        _ => {
            return Err(PairingError::new(
                line,
                field,
                format!("{raw:?} is not a FIDE title (GM, IM, FM, CM, WGM, WIM, WFM, WCM)"),
            ));
        }
    };
    Ok(Some(t.to_string()))
}

/// A rating (0 or blank: none).
pub(crate) fn rating(line: usize, field: &str, raw: &str) -> Result<Option<u32>, PairingError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    match raw.parse::<u32>() {
        Ok(0) => Ok(None),
        Ok(r) if r <= 4000 => Ok(Some(r)),
        _ => Err(PairingError::new(
            line,
            field,
            format!("{raw:?} is not a rating (a number up to 4000)"),
        )),
    }
}

/// A FIDE id (0 or blank: none).
pub(crate) fn fide_id(line: usize, field: &str, raw: &str) -> Result<Option<u64>, PairingError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    match raw.parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(id) if id <= 999_999_999 => Ok(Some(id)),
        _ => Err(PairingError::new(
            line,
            field,
            format!("{raw:?} is not a FIDE id (a number up to 9 digits)"),
        )),
    }
}

/// A federation (three letters; blank: none).
pub(crate) fn federation(
    line: usize,
    field: &str,
    raw: &str,
) -> Result<Option<String>, PairingError> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    if raw.len() == 3 && raw.chars().all(|c| c.is_ascii_alphabetic()) {
        Ok(Some(raw.to_ascii_uppercase()))
    } else {
        Err(PairingError::new(
            line,
            field,
            format!("{raw:?} is not a federation (three letters, e.g. GER)"),
        ))
    }
}
