//! Relay files (`docs/broadcast.md` §1–§3): the round's `games.pgn` (also as `live.pgn`), one PGN per
//! board, and the LiveChessCloud-shaped tree (`tournament.json`, `round-R/index.json`,
//! `round-R/game-G.json`), served under `/relay/` and written to a directory.
//!
//! Files are replaced atomically (a new temporary file in the same directory, fsync, rename)
//! and only when their content changed; writes are coalesced. Every path is built from fixed
//! names and numbers, so nothing is ever written outside the configured directory, and below
//! it nothing is followed: subfolders and files are opened relative to the directory's
//! descriptor with `O_NOFOLLOW` (a planted symlink is refused, never written through). Files
//! are 0644 and folders 0755 whatever the umask (they are published).

use std::collections::HashMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::files::{DIR_MODE, open_dir, open_subdir, write_at};
use super::hub::Hub;
use super::model::RoundState;
use super::render;
use tokio_util::sync::CancellationToken;

/// Content type of the JSON files.
const JSON: &str = super::files::JSON_TYPE;
/// Content type of the PGN files.
const PGN: &str = super::files::PGN_TYPE;

fn pretty(v: serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
    s.push('\n');
    s
}

/// The `round-R/` folder of round `r` (the current one or an earlier one of this run).
fn round_files(round: &RoundState, r: u32, out: &mut Vec<(String, &'static str, String)>) {
    out.push((
        format!("round-{r}/games.pgn"),
        PGN,
        render::round_pgn_of(round, r),
    ));
    out.push((
        format!("round-{r}/index.json"),
        JSON,
        pretty(render::lcc_index_of(round, r)),
    ));
    // Every number up to the highest, as LCC numbers games by their place in `index.json`.
    for g in 1..=round.max_number() {
        let (pgn, json) = game_files(round, g, r);
        out.push((format!("round-{r}/game-{g}.pgn"), PGN, pgn));
        out.push((format!("round-{r}/game-{g}.json"), JSON, pretty(json)));
    }
}

/// `game-G.pgn` and `game-G.json` of board number `g` in round `r` (empty for a number no board
/// has).
fn game_files(round: &RoundState, g: u32, r: u32) -> (String, Value) {
    let Some(b) = round.board_numbered(g) else {
        return (String::new(), render::lcc_no_game(None));
    };
    let pgn = render::game_for(round, b, r).map_or_else(String::new, |game| {
        let mut s = String::new();
        render::write_game_pgn(round, b, &game, &mut s);
        s
    });
    (pgn, render::lcc_game_of(round, b, r))
}

/// A digest of everything round `r`'s folder is made of: its information (players, date),
/// the boards and their numbers, and the round's games on the boards (number, start, moves,
/// result, the board's last event) and in the archive (which changes only by games added). An
/// earlier round's files are rendered again only when it changes ([`files_since`]).
fn round_signature(round: &RoundState, r: u32) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{:?}", round.info_of(r)).hash(&mut h);
    round.max_number().hash(&mut h);
    for a in round.archive().games().iter().filter(|a| a.round == r) {
        (&*a.board, a.number, a.started_at, a.ended).hash(&mut h);
    }
    for b in round.boards() {
        (&b.id, b.number, &b.status.serial, b.status.t0_ms).hash(&mut h);
        (b.connected, b.live()).hash(&mut h);
        if let Some(g) = b.game_in(r) {
            (g.number, g.started_at, g.ply(), b.last_seq).hash(&mut h);
            format!("{:?}", g.result).hash(&mut h);
        }
    }
    h.finish()
}

/// Every relay file: the current round's, and the `round-R/` folders of the earlier rounds
/// of this run: (relative path, content type, content).
pub fn files(round: &RoundState) -> Vec<(String, &'static str, String)> {
    files_since(round, &mut HashMap::new())
}

/// [`files`], but an earlier round's folder only when its [`round_signature`] is not the one in
/// `seen` (which gets the new ones): its files are unchanged otherwise, and rendering every
/// earlier round on every change of the current one costs time under the hub's lock and memory
/// that grows with the rounds.
pub fn files_since(
    round: &RoundState,
    seen: &mut HashMap<u32, u64>,
) -> Vec<(String, &'static str, String)> {
    let all = render::round_pgn(round);
    let mut out = vec![
        ("games.pgn".to_string(), PGN, all.clone()),
        ("live.pgn".to_string(), PGN, all.clone()),
        (
            "tournament.json".to_string(),
            JSON,
            pretty(render::lcc_tournament(round)),
        ),
    ];
    for r in round.round_numbers() {
        if r != round.info.round {
            let sig = round_signature(round, r);
            if seen.get(&r) == Some(&sig) {
                continue;
            }
            seen.insert(r, sig);
        }
        round_files(round, r, &mut out);
    }
    out
}

/// One relay file by its path under `/relay/`, rendered now.
pub fn render_path(round: &RoundState, path: &str) -> Option<(&'static str, String)> {
    let rest = path.trim_start_matches('/');
    match rest {
        "games.pgn" | "live.pgn" => return Some((PGN, render::round_pgn(round))),
        "tournament.json" => return Some((JSON, render::lcc_tournament(round).to_string())),
        _ => {}
    }
    let (dir, file) = rest.split_once('/')?;
    let r = dir
        .strip_prefix("round-")
        .filter(|n| !n.is_empty() && n.len() <= 3 && n.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|r| round.round_numbers().contains(r))?;
    match file {
        "games.pgn" => return Some((PGN, render::round_pgn_of(round, r))),
        "index.json" | "round.json" => {
            return Some((JSON, render::lcc_index_of(round, r).to_string()));
        }
        _ => {}
    }
    let stem = file.strip_prefix("game-")?;
    let (n, ext) = stem.split_once('.')?;
    if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) || n.len() > 6 {
        return None;
    }
    let g: u32 = n
        .parse()
        .ok()
        .filter(|&g| g >= 1 && g <= round.max_number())?;
    let (pgn, json) = game_files(round, g, r);
    match ext {
        "pgn" => Some((PGN, pgn)),
        "json" => Some((JSON, json.to_string())),
        _ => None,
    }
}

/// Writes the relay files of a broadcaster into one directory.
#[derive(Debug)]
pub struct RelayWriter {
    dir: PathBuf,
    written: HashMap<String, u64>,
    /// The signatures of the earlier rounds whose files are written ([`files_since`]).
    rounds: HashMap<u32, u64>,
    /// Files written since start.
    pub writes: u64,
}

fn digest(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

impl RelayWriter {
    /// A writer into `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        if !dir.is_dir() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(&dir)?;
        }
        Ok(RelayWriter {
            dir,
            written: HashMap::new(),
            rounds: HashMap::new(),
            writes: 0,
        })
    }

    /// Write every file whose content changed since the last call.
    pub fn flush(&mut self, hub: &Hub) -> std::io::Result<usize> {
        let mut rounds = self.rounds.clone();
        let files = hub.with_round(|round| files_since(round, &mut rounds));
        let mut n = 0;
        let mut root = None;
        let mut subdirs: HashMap<String, std::os::fd::OwnedFd> = HashMap::new();
        for (path, _, content) in files {
            let d = digest(&content);
            if self.written.get(&path) == Some(&d) {
                continue;
            }
            let root = match &root {
                Some(r) => r,
                None => root.insert(open_dir(&self.dir)?),
            };
            match path.split_once('/') {
                Some((sub, name)) => {
                    if !subdirs.contains_key(sub) {
                        subdirs.insert(sub.to_string(), open_subdir(root, sub)?);
                    }
                    write_at(&subdirs[sub], name, content.as_bytes())?;
                }
                None => write_at(root, &path, content.as_bytes())?,
            }
            self.written.insert(path, d);
            n += 1;
        }
        self.writes += n as u64;
        // Only once every file is written: a round whose files failed is rendered again.
        self.rounds = rounds;
        Ok(n)
    }

    /// Keep the files current until `stop` turns true: coalesce changes for `debounce`, then
    /// write; a final write on stop.
    pub async fn run(mut self, hub: Hub, debounce: Duration, stop: CancellationToken) {
        let mut changes = hub.changes();
        loop {
            if let Err(e) = self.flush(&hub) {
                tracing::warn!("relay files in {}: {e}", self.dir.display());
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { break },
                _ = stop.cancelled() => break,
            }
            tokio::select! {
                _ = tokio::time::sleep(debounce) => {}
                _ = stop.cancelled() => break,
            }
        }
        if let Err(e) = self.flush(&hub) {
            tracing::warn!("relay files in {}: {e}", self.dir.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::event::{CoreEvent, EndReason, EventKind};
    use crate::output::model::RoundInfo;
    use shakmaty::{Color, KnownOutcome};

    fn ev(t: u64, kind: EventKind) -> CoreEvent {
        CoreEvent {
            t: t as i64,
            game: 1,
            kind,
        }
    }

    fn round_1_paths<'a>(files: &'a [(String, &'static str, String)]) -> Vec<&'a str> {
        files
            .iter()
            .map(|(p, _, _)| p.as_str())
            .filter(|p| p.starts_with("round-1/"))
            .collect()
    }

    #[test]
    fn an_earlier_round_is_rendered_again_only_when_it_changed() {
        let mut r = RoundState::new(RoundInfo {
            round: 1,
            boards: vec!["board-1".into()],
            ..Default::default()
        });
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
        r.apply(
            1,
            "board-1",
            &ev(
                1,
                EventKind::GameStarted {
                    fen: start.into(),
                    chess960: None,
                },
            ),
        );
        r.apply(
            2,
            "board-1",
            &ev(
                2,
                EventKind::MoveMade {
                    ply: 1,
                    san: "e4".into(),
                    uci: "e2e4".parse().unwrap(),
                    fen: "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1".into(),
                    recovered: false,
                },
            ),
        );
        r.start_round(RoundInfo {
            round: 2,
            boards: vec!["board-1".into()],
            ..Default::default()
        });
        let mut seen = HashMap::new();
        let first = files_since(&r, &mut seen);
        assert!(round_1_paths(&first).contains(&"round-1/games.pgn"));
        assert_eq!(
            files_since(&r, &mut seen).len(),
            first.len() - round_1_paths(&first).len(),
            "unchanged: round 1 is not rendered"
        );
        // The round-1 game, still on its board, gets its result: rendered again, with it.
        let result = shakmaty::Outcome::Known(KnownOutcome::Decisive {
            winner: Color::White,
        });
        r.apply(
            3,
            "board-1",
            &ev(
                3,
                EventKind::GameEnded {
                    result,
                    reason: EndReason::Arbiter,
                },
            ),
        );
        let again = files_since(&r, &mut seen);
        let pgn = again
            .iter()
            .find(|(p, _, _)| p == "round-1/games.pgn")
            .map(|(_, _, c)| c.as_str())
            .expect("round 1 rendered again");
        assert!(pgn.contains("[Result \"1-0\"]"), "{pgn}");
        // The plain list has everything, always.
        assert_eq!(files(&r).len(), first.len());
    }
}
