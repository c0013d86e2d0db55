//! Relay files (`broadcast.md` §1–§3): the round's `games.pgn` (also as `live.pgn`), one PGN per
//! board, and the LiveChessCloud-shaped tree (`tournament.json`, `round-R/index.json`,
//! `round-R/game-G.json`), served under `/relay/` and written to a directory.
//!
//! Files are replaced atomically (a new temporary file in the same directory, fsync, rename)
//! and only when their content changed; writes are coalesced. Every path is built from fixed
//! names and numbers, so nothing is ever written outside the configured directory.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::hub::Broadcaster;
use super::model::RoundState;
use super::render;

/// Content type of the JSON files.
const JSON: &str = super::http::JSON_TYPE;
/// Content type of the PGN files.
const PGN: &str = super::http::PGN_TYPE;

/// Every relay file of the current round: (relative path, content type, content).
pub fn files(round: &RoundState) -> Vec<(String, &'static str, String)> {
    let r = round.info.round;
    let all = render::round_pgn(round);
    let pretty = |v: serde_json::Value| {
        let mut s = serde_json::to_string_pretty(&v).unwrap_or_default();
        s.push('\n');
        s
    };
    let mut out = vec![
        ("games.pgn".to_string(), PGN, all.clone()),
        ("live.pgn".to_string(), PGN, all.clone()),
        (
            "tournament.json".to_string(),
            JSON,
            pretty(render::lcc_tournament(round)),
        ),
        (format!("round-{r}/games.pgn"), PGN, all),
        (
            format!("round-{r}/index.json"),
            JSON,
            pretty(render::lcc_index(round)),
        ),
    ];
    for (i, b) in round.boards().iter().enumerate() {
        let g = i + 1;
        out.push((
            format!("round-{r}/game-{g}.pgn"),
            PGN,
            render::board_pgn(round, b),
        ));
        out.push((
            format!("round-{r}/game-{g}.json"),
            JSON,
            pretty(render::lcc_game(round, b)),
        ));
    }
    out
}

/// One relay file by its path under `/relay/`, rendered now.
pub fn render_path(round: &RoundState, path: &str) -> Option<(&'static str, String)> {
    let r = round.info.round;
    let rest = path.trim_start_matches('/');
    match rest {
        "games.pgn" | "live.pgn" => return Some((PGN, render::round_pgn(round))),
        "tournament.json" => return Some((JSON, render::lcc_tournament(round).to_string())),
        _ => {}
    }
    let (dir, file) = rest.split_once('/')?;
    if dir != format!("round-{r}") {
        return None;
    }
    match file {
        "games.pgn" => return Some((PGN, render::round_pgn(round))),
        "index.json" | "round.json" => return Some((JSON, render::lcc_index(round).to_string())),
        _ => {}
    }
    let stem = file.strip_prefix("game-")?;
    let (n, ext) = stem.split_once('.')?;
    if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) || n.len() > 6 {
        return None;
    }
    let n: usize = n.parse().ok()?;
    let b = round.boards().get(n.checked_sub(1)?)?;
    match ext {
        "pgn" => Some((PGN, render::board_pgn(round, b))),
        "json" => Some((JSON, render::lcc_game(round, b).to_string())),
        _ => None,
    }
}

/// Replace `dir/name` atomically with `content`: write a fresh temporary file next to it,
/// fsync it, rename it over the target.
pub fn write_atomic(dir: &Path, name: &str, content: &[u8]) -> std::io::Result<()> {
    let target = dir.join(name);
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    // A leftover from a crash is ours to remove; create_new never follows a planted link.
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)?;
    f.write_all(content)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, &target).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Writes the relay files of a broadcaster into one directory.
#[derive(Debug)]
pub struct RelayWriter {
    dir: PathBuf,
    written: HashMap<String, u64>,
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
        std::fs::create_dir_all(&dir)?;
        Ok(RelayWriter {
            dir,
            written: HashMap::new(),
            writes: 0,
        })
    }

    /// Write every file whose content changed since the last call.
    pub fn flush(&mut self, hub: &Broadcaster) -> std::io::Result<usize> {
        let files = hub.with_round(files);
        let mut n = 0;
        for (path, _, content) in files {
            let d = digest(&content);
            if self.written.get(&path) == Some(&d) {
                continue;
            }
            let (sub, name) = match path.split_once('/') {
                Some((sub, name)) => (self.dir.join(sub), name),
                None => (self.dir.clone(), path.as_str()),
            };
            std::fs::create_dir_all(&sub)?;
            write_atomic(&sub, name, content.as_bytes())?;
            self.written.insert(path, d);
            n += 1;
        }
        self.writes += n as u64;
        Ok(n)
    }

    /// Keep the files current until `stop` turns true: coalesce changes for `debounce`, then
    /// write; a final write on stop.
    pub async fn run(
        mut self,
        hub: Broadcaster,
        debounce: Duration,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut changes = hub.changes();
        loop {
            if let Err(e) = self.flush(&hub) {
                tracing::warn!("relay files in {}: {e}", self.dir.display());
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { break },
                _ = stop.changed() => break,
            }
            tokio::select! {
                _ = tokio::time::sleep(debounce) => {}
                _ = stop.changed() => break,
            }
        }
        if let Err(e) = self.flush(&hub) {
            tracing::warn!("relay files in {}: {e}", self.dir.display());
        }
    }
}
