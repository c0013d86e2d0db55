//! Loading a round's pairings into the hub ([`load`]), the list of rounds and an earlier
//! round's games for the API, and the file that keeps the loaded round across a restart
//! ([`save`] / [`restore`]).
//!
//! A pairing for board N goes to the board numbered N (the configured board N, `board-N`, or
//! the board given number N when it appeared), else to a new board `board-N`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::hub::Hub;
use super::model::{Pairing, RoundInfo, RoundState};
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
fn info_for(round: &RoundState, loaded: &LoadedRound) -> RoundInfo {
    let mut info = round.info.clone();
    info.round = loaded.round;
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
    let info = hub.with_round(|r| info_for(r, &loaded));
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
            if let Value::Object(m) = &mut v {
                m.insert("board".into(), b.id.clone().into());
                m.insert("number".into(), r.board_number(&b.id).into());
                m.insert(
                    "game".into(),
                    render::game_for(r, b, n).map_or(Value::Null, |g| super::model::game_json(&g)),
                );
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
        "boards": boards,
    }))
}

/// What the round file keeps: the current round's number, event, site and players, and the
/// earlier rounds' of this run.
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
    });
    let text = serde_json::to_string_pretty(&saved).map_err(std::io::Error::other)?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| std::io::Error::other("no file name"))?;
    super::relay::write_atomic(dir, name, text.as_bytes())
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
    for (n, pairings) in saved.previous {
        hub.start_round(RoundInfo {
            round: n,
            pairings,
            ..base.clone()
        })
        .map_err(|e| bad(e.to_string()))?;
    }
    hub.start_round(RoundInfo {
        round: saved.round,
        pairings: saved.pairings,
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
}
