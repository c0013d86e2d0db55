//! Loading a round's pairings into the hub ([`load`], [`load_paired`]), the list of rounds and
//! an earlier round's games for the API, a round's results files ([`results_file`]), and the
//! file that keeps the loaded round and its confirmed results across a restart ([`save`] /
//! [`restore`]).
//!
//! A pairing for board N goes to the board numbered N (the configured board N, `board-N`, or
//! the board given number N when it appeared), else to a new board `board-N`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::hub::Hub;
use super::model::{GameResult, Pairing, RoundInfo, RoundSource, RoundState};
use super::render;
use crate::round::{self, Format, LoadedRound, PairingError};

/// Name of the file, next to the captures, that keeps the loaded round.
pub const ROUND_FILE: &str = "round.json";

/// The board id that board number `n` of a pairings file stands for.
pub fn board_id(round: &RoundState, n: u32) -> String {
    round
        .board_numbered(n)
        .map_or_else(|| format!("board-{n}"), |b| b.id.clone())
}

/// The round information `loaded` makes of the current one: same event, site, date, time
/// control, board order and clock reference; the file's round number and players (and its
/// event and site when none is configured).
fn info_for(round: &RoundState, loaded: &LoadedRound, trf: Option<&[u8]>) -> RoundInfo {
    let mut info = round.info.clone();
    info.round = loaded.round;
    info.results = HashMap::new();
    info.source = trf.map(|bytes| {
        Arc::new(RoundSource {
            trf: bytes.to_vec(),
            ranks: loaded
                .ranks
                .iter()
                .map(|(n, r)| (board_id(round, *n), *r))
                .collect(),
        })
    });
    if info.event.is_none() {
        info.event.clone_from(&loaded.event);
    }
    if info.site.is_none() {
        info.site.clone_from(&loaded.site);
    }
    info.pairings = loaded
        .boards
        .iter()
        .map(|(n, p)| (board_id(round, *n), p.clone()))
        .collect();
    info
}

/// Why a round was not loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file is bad (nothing applied).
    #[error("{0}")]
    File(#[from] PairingError),
    /// The hub refused the players (nothing applied).
    #[error("{0}")]
    Refused(String),
}

/// Parse a pairings file and make it the current round of `hub`. On any error nothing
/// changes. Returns what was applied (`GET /api/v1/rounds/R` shape).
pub fn load(hub: &Hub, format: Format, round: u32, bytes: &[u8]) -> Result<Value, LoadError> {
    let loaded = round::parse(format, bytes, round)?;
    let trf = (format == Format::Trf).then_some(bytes);
    let info = hub.with_round(|r| info_for(r, &loaded, trf));
    hub.start_round(info)
        .map_err(|e| LoadError::Refused(e.to_string()))?;
    Ok(hub
        .with_round(|r| round_json(r, round))
        .unwrap_or(Value::Null))
}

/// Make round `round` of the TRF `trf`, paired by a pairing engine's list `pairs`
/// ([`round::pairs`]), the current round of `hub`: the list is written into the TRF (which is
/// kept for the results) and the boards follow the list's order. On any error nothing changes.
pub fn load_paired(
    hub: &Hub,
    round: u32,
    trf: &[u8],
    pairs: &[round::pairs::Pair],
) -> Result<Value, LoadError> {
    let merged = round::pairs::merge(trf, round, pairs)
        .map_err(|e| PairingError::new(0, "pairs", e.to_string()))?;
    let loaded = round::parse(Format::Trf, &merged, round)?;
    let loaded = round::pairs::in_list_order(loaded, pairs);
    let info = hub.with_round(|r| info_for(r, &loaded, Some(&merged)));
    hub.start_round(info)
        .map_err(|e| LoadError::Refused(e.to_string()))?;
    Ok(hub
        .with_round(|r| round_json(r, round))
        .unwrap_or(Value::Null))
}

fn pairing_json(p: &Pairing) -> Value {
    json!({ "white": p.white, "black": p.black })
}

/// `GET /api/v1/rounds`: every round of this run, the current one marked.
pub fn rounds_json(r: &RoundState) -> Value {
    let rounds: Vec<Value> = r
        .round_numbers()
        .into_iter()
        .map(|n| {
            let games = r
                .boards()
                .iter()
                .filter(|b| render::ended_for(r, b, n).is_some())
                .count();
            json!({ "round": n, "current": n == r.info.round, "games": games })
        })
        .collect();
    json!({ "current": r.info.round, "rounds": rounds })
}

/// `GET /api/v1/rounds/R`: the boards of round R with their players and games.
pub fn round_json(r: &RoundState, n: u32) -> Option<Value> {
    if !r.round_numbers().contains(&n) {
        return None;
    }
    let boards: Vec<Value> = r
        .boards()
        .iter()
        .map(|b| {
            let mut v = pairing_json(&r.pairing_in(n, &b.id));
            let game = render::game_for(r, b, n);
            let (result, confirmed) = r.result_in(b, n, game.as_ref().map(|g| &*g.game));
            if let Value::Object(m) = &mut v {
                m.insert("board".into(), b.id.clone().into());
                m.insert("number".into(), r.board_number(&b.id).into());
                m.insert(
                    "game".into(),
                    game.map_or(Value::Null, |g| super::model::game_json(&g)),
                );
                m.insert("result".into(), result.map(GameResult::as_str).into());
                m.insert("confirmed".into(), confirmed.into());
            }
            v
        })
        .collect();
    let info = r.info_of(n);
    Some(json!({
        "round": n,
        "current": n == r.info.round,
        "event": info.event,
        "site": info.site,
        "complete": r.complete(n),
        "trf": info.source.is_some(),
        "boards": boards,
    }))
}

/// Points in half points as a number (`2.5`).
fn points(half: u32) -> Value {
    json!(f64::from(half) / 2.0)
}

/// `GET /api/v1/rounds/R/matches`: round R's team matches ([`round::matches`]): each team's
/// board points from the confirmed results and from every result (`provisional`: the games'
/// own endings too), match points once every board has one, and each board with its players,
/// teams and result. `None` when there is no round R.
pub fn matches_json(r: &RoundState, n: u32) -> Option<Value> {
    if !r.round_numbers().contains(&n) {
        return None;
    }
    let info = r.info_of(n);
    let boards: Vec<(&super::model::BoardState, Pairing, Option<GameResult>, bool)> = r
        .boards()
        .iter()
        .filter_map(|b| {
            let p = info.pairings.get(&b.id)?.clone();
            let game = render::game_for(r, b, n);
            let (result, confirmed) = r.result_in(b, n, game.as_ref().map(|g| &*g.game));
            Some((b, p, result, confirmed))
        })
        .collect();
    let scores: Vec<round::matches::BoardScore> = boards
        .iter()
        .map(|(b, p, result, confirmed)| round::matches::BoardScore {
            number: b.number,
            white_team: p.white.team.as_deref(),
            black_team: p.black.team.as_deref(),
            result: *result,
            confirmed: *confirmed,
        })
        .collect();
    let found = round::matches::matches(&scores);
    let pair = |h: [u32; 2]| json!([points(h[0]), points(h[1])]);
    let list: Vec<Value> = found
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let on: Vec<Value> = m
                .boards
                .iter()
                .zip(&m.white)
                .filter_map(|(number, white)| {
                    let (b, p, result, confirmed) =
                        boards.iter().find(|x| x.0.number == *number)?;
                    Some(json!({
                        "number": number,
                        "board": b.id,
                        "white_team": white,
                        "white": p.white,
                        "black": p.black,
                        "result": result.map(GameResult::as_str),
                        "confirmed": confirmed,
                    }))
                })
                .collect();
            json!({
                "match": i + 1,
                "teams": m.teams,
                "boards": on,
                "finished": m.finished,
                "confirmed_boards": m.confirmed_boards,
                "complete": m.confirmed_boards == m.boards.len(),
                "board_points": {
                    "confirmed": pair(m.confirmed),
                    "provisional": pair(m.provisional),
                },
                "match_points": {
                    "confirmed": m.confirmed_match_points().map(|p| json!(p)),
                    "provisional": m.provisional_match_points().map(|p| json!(p)),
                },
            })
        })
        .collect();
    Some(json!({
        "round": n,
        "current": n == r.info.round,
        "event": info.event,
        "matches": list,
    }))
}

/// The format of a round's results file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsFormat {
    /// The loaded TRF with the round's results, points and ranks (`results.trf`).
    Trf,
    /// `round,board,white,black,white_rank,black_rank,result` (`results.csv`).
    Csv,
    /// Vega's results file (`results.res`).
    Res,
}

impl std::str::FromStr for ResultsFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "trf" => Ok(ResultsFormat::Trf),
            "csv" => Ok(ResultsFormat::Csv),
            "res" => Ok(ResultsFormat::Res),
            _ => Err(format!("unknown results format {s:?}: trf, csv or res")),
        }
    }
}

/// Why a round's results file cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResultsFileError {
    /// The round came from a CSV: no TRF, no start ranks.
    #[error(
        "round {0} was not loaded from a TRF: its results.trf and results.res need the TRF's \
         start ranks (results.csv has the results)"
    )]
    NoTrf(u32),
    /// The TRF does not take the results.
    #[error(transparent)]
    Write(#[from] round::results::WriteError),
}

/// Round `n`'s results file in `format`: the confirmed results of its paired boards in board
/// order (a board not confirmed yet keeps the TRF's columns, is left out of `.res` and is `*`
/// in the CSV). The one writer of `GET /api/v1/rounds/R/results.*` and `eboardd round
/// results`.
pub fn results_file(
    r: &RoundState,
    n: u32,
    format: ResultsFormat,
) -> Result<Vec<u8>, ResultsFileError> {
    let info = r.info_of(n);
    let boards: Vec<(u32, &str, Pairing, Option<GameResult>)> = r
        .boards()
        .iter()
        .filter_map(|b| {
            let p = info.pairings.get(&b.id)?;
            Some((
                b.number,
                b.id.as_str(),
                p.clone(),
                info.results.get(&b.id).copied(),
            ))
        })
        .collect();
    let ranked = || -> Result<Vec<round::results::RankedResult>, ResultsFileError> {
        let source = info.source.as_ref().ok_or(ResultsFileError::NoTrf(n))?;
        Ok(boards
            .iter()
            .filter_map(|(_, id, _, res)| {
                let (white, black) = *source.ranks.get(*id)?;
                Some(round::results::RankedResult {
                    white,
                    black,
                    result: (*res)?,
                })
            })
            .collect())
    };
    match format {
        ResultsFormat::Trf => {
            let results = ranked()?;
            let source = info.source.as_ref().ok_or(ResultsFileError::NoTrf(n))?;
            Ok(round::results::write_trf(&source.trf, n, &results)?)
        }
        ResultsFormat::Res => Ok(round::results::write_res(n, &ranked()?).into_bytes()),
        ResultsFormat::Csv => {
            let rows: Vec<round::results::CsvRow> = boards
                .iter()
                .map(|(number, id, p, res)| round::results::CsvRow {
                    board: *number,
                    white: p.white.name.clone().unwrap_or_default(),
                    black: p.black.name.clone().unwrap_or_default(),
                    ranks: info.source.as_ref().and_then(|s| s.ranks.get(*id).copied()),
                    result: *res,
                })
                .collect();
            Ok(round::results::write_csv(n, &rows).into_bytes())
        }
    }
}

/// What the round file keeps: the current round's number, event, site and players, the
/// earlier rounds' of this run, and each round's confirmed results and TRF.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Saved {
    round: u32,
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    site: Option<String>,
    #[serde(default)]
    pairings: HashMap<String, Pairing>,
    #[serde(default)]
    previous: BTreeMap<u32, HashMap<String, Pairing>>,
    /// Confirmed results per round, per board id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    results: BTreeMap<u32, HashMap<String, GameResult>>,
    /// The TRF each round was loaded from.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    sources: BTreeMap<u32, SavedSource>,
}

/// A round's TRF in the round file: its text (UTF-8, or Latin-1 one byte a character, so that
/// it comes back byte for byte) and its boards' start ranks.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct SavedSource {
    trf: String,
    #[serde(default)]
    latin1: bool,
    ranks: HashMap<String, (u32, u32)>,
}

impl SavedSource {
    fn of(s: &RoundSource) -> SavedSource {
        let (trf, latin1) = match std::str::from_utf8(&s.trf) {
            Ok(t) => (t.to_string(), false),
            Err(_) => (s.trf.iter().map(|&b| char::from(b)).collect(), true),
        };
        SavedSource {
            trf,
            latin1,
            ranks: s.ranks.clone(),
        }
    }

    fn source(&self) -> Result<RoundSource, String> {
        let trf = if self.latin1 {
            self.trf
                .chars()
                .map(|c| u8::try_from(c).map_err(|_| "a Latin-1 TRF holds a wider character"))
                .collect::<Result<Vec<u8>, _>>()?
        } else {
            self.trf.clone().into_bytes()
        };
        Ok(RoundSource {
            trf,
            ranks: self.ranks.clone(),
        })
    }
}

/// Write the hub's round to `path` (atomically: a temporary file renamed over it).
pub fn save(hub: &Hub, path: &Path) -> std::io::Result<()> {
    let saved = hub.with_round(|r| Saved {
        round: r.info.round,
        event: r.info.event.clone(),
        site: r.info.site.clone(),
        pairings: r.info.pairings.clone(),
        previous: r
            .previous
            .iter()
            .map(|(n, i)| (*n, i.pairings.clone()))
            .collect(),
        results: r
            .round_numbers()
            .into_iter()
            .map(|n| (n, r.info_of(n).results.clone()))
            .filter(|(_, m)| !m.is_empty())
            .collect(),
        sources: r
            .round_numbers()
            .into_iter()
            .filter_map(|n| Some((n, SavedSource::of(r.info_of(n).source.as_deref()?))))
            .collect(),
    });
    let text = serde_json::to_string_pretty(&saved).map_err(std::io::Error::other)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::other("no file name"))?;
    super::files::write_atomic(dir, name, text.as_bytes())
}

/// Start the rounds saved in `path` (by [`save`]) on a hub that has published nothing yet:
/// the earlier rounds, then the current one, with their players (the configured event and
/// site stay; the saved ones fill them when none is configured). A missing file is no error
/// (`Ok(false)`); a bad one is, and changes nothing.
pub fn restore(hub: &Hub, path: &Path) -> Result<bool, SavedRoundError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(SavedRoundError {
                path: path.to_path_buf(),
                reason: e.to_string(),
            });
        }
    };
    let bad = |reason: String| SavedRoundError {
        path: path.to_path_buf(),
        reason,
    };
    let saved: Saved = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let rounds = saved.previous.keys().chain(std::iter::once(&saved.round));
    if let Some(n) = rounds.into_iter().find(|&&n| n == 0 || n > 999) {
        return Err(bad(format!("round {n} out of range")));
    }
    for p in saved
        .pairings
        .values()
        .chain(saved.previous.values().flat_map(|m| m.values()))
    {
        p.white
            .validate()
            .and_then(|_| p.black.validate())
            .map_err(|e| bad(e.to_string()))?;
    }
    let mut sources: BTreeMap<u32, Arc<RoundSource>> = BTreeMap::new();
    for (n, s) in &saved.sources {
        sources.insert(*n, Arc::new(s.source().map_err(bad)?));
    }
    let base = hub.with_round(|r| {
        let mut i = r.info.clone();
        if i.event.is_none() {
            i.event = saved.event.clone();
        }
        if i.site.is_none() {
            i.site = saved.site.clone();
        }
        i
    });
    let mut results = saved.results;
    for (n, pairings) in saved.previous {
        hub.start_round(RoundInfo {
            round: n,
            pairings,
            results: results.remove(&n).unwrap_or_default(),
            source: sources.get(&n).cloned(),
            ..base.clone()
        })
        .map_err(|e| bad(e.to_string()))?;
    }
    hub.start_round(RoundInfo {
        round: saved.round,
        pairings: saved.pairings,
        results: results.remove(&saved.round).unwrap_or_default(),
        source: sources.get(&saved.round).cloned(),
        ..base
    })
    .map_err(|e| bad(e.to_string()))?;
    Ok(true)
}

/// A saved round file that cannot be restored (nothing of it is applied).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}: {reason}", path.display())]
#[non_exhaustive]
pub struct SavedRoundError {
    /// The file.
    pub path: std::path::PathBuf,
    /// What is wrong with it.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::HubConfig;

    #[test]
    fn a_saved_round_comes_back() {
        let dir = std::env::temp_dir().join(format!("eboardd-round-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(ROUND_FILE);
        let hub = Hub::new(
            RoundInfo {
                boards: vec!["board-1".into()],
                ..Default::default()
            },
            HubConfig::default(),
        );
        load(
            &hub,
            Format::Csv,
            1,
            b"board,white,black\n1,\"A, B\",\"C, D\"\n",
        )
        .unwrap();
        load(
            &hub,
            Format::Csv,
            2,
            b"board,white,black\n1,\"E, F\",\"G, H\"\n",
        )
        .unwrap();
        save(&hub, &path).unwrap();
        let fresh = Hub::new(RoundInfo::default(), HubConfig::default());
        assert!(restore(&fresh, &path).unwrap());
        fresh.with_round(|r| {
            assert_eq!(r.info.round, 2);
            assert_eq!(r.pairing("board-1").white.name.as_deref(), Some("E, F"));
            assert_eq!(
                r.pairing_in(1, "board-1").black.name.as_deref(),
                Some("C, D")
            );
        });
        std::fs::write(&path, "{\"round\": 0}").unwrap();
        let other = Hub::new(RoundInfo::default(), HubConfig::default());
        assert!(restore(&other, &path).is_err());
        assert!(!restore(&other, &dir.join("missing.json")).unwrap());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn confirmed_results_and_a_latin1_trf_come_back_and_write_the_same_files() {
        let dir = std::env::temp_dir().join(format!("eboardd-results-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(ROUND_FILE);
        let line = |start: u32, name: &str, opp: u32, colour: char| -> Vec<u8> {
            format!(
                "001 {start:>4} m    {name:<33} 2000 GER {:>11} 2000/01/01  0.0 {start:>4}  {opp:>4} {colour}  \r\n",
                1_000_000 + start
            )
            .chars()
            .map(|c| u8::try_from(c).unwrap())
            .collect()
        };
        let mut trf = b"012 Latin-1 Open\r\n".to_vec();
        trf.extend(line(1, "M\u{fc}ller,J\u{f6}rg", 2, 'w'));
        trf.extend(line(2, "Beta,Bob", 1, 'b'));
        let hub = Hub::new(RoundInfo::default(), HubConfig::default());
        load(&hub, Format::Trf, 1, &trf).unwrap();
        let csv_before = hub
            .with_round(|r| results_file(r, 1, ResultsFormat::Csv))
            .unwrap();
        assert!(
            String::from_utf8_lossy(&csv_before).ends_with(",1,2,*\n"),
            "not confirmed yet"
        );
        hub.set_result(1, "board-1", GameResult::Draw);
        hub.with_round(|r| assert!(r.complete(1)));
        save(&hub, &path).unwrap();
        let files = |h: &Hub| {
            h.with_round(|r| {
                [ResultsFormat::Trf, ResultsFormat::Csv, ResultsFormat::Res]
                    .map(|f| results_file(r, 1, f).unwrap())
            })
        };
        let before = files(&hub);
        // Only the round's columns, points and ranks of the two lines changed.
        let mut want = b"012 Latin-1 Open\r\n".to_vec();
        for (l, code) in [
            (line(1, "M\u{fc}ller,J\u{f6}rg", 2, 'w'), b'='),
            (line(2, "Beta,Bob", 1, 'b'), b'='),
        ] {
            let mut l = l;
            l[80..84].copy_from_slice(b" 0.5");
            l[98] = code;
            want.extend(l);
        }
        assert_eq!(before[0], want);
        assert_eq!(String::from_utf8_lossy(&before[2]), "1 1\n1 2 5\n");
        let fresh = Hub::new(RoundInfo::default(), HubConfig::default());
        assert!(restore(&fresh, &path).unwrap());
        fresh.with_round(|r| assert!(r.complete(1)));
        assert_eq!(files(&fresh), before);
        // A round from a CSV has no TRF: its .trf is refused, its .csv written.
        load(&hub, Format::Csv, 2, b"board,white,black\n1,A,B\n").unwrap();
        hub.with_round(|r| {
            assert_eq!(
                results_file(r, 2, ResultsFormat::Trf),
                Err(ResultsFileError::NoTrf(2))
            );
            assert!(results_file(r, 2, ResultsFormat::Csv).is_ok());
            assert!(!r.complete(2));
        });
        let _ = std::fs::remove_dir_all(&dir);
    }
}
