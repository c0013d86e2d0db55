//! Test support shared by the test files (`mod support;`): the PGN corpus under
//! `tests/data/pgn` (here), the daemon as a child process with emulated boards and a pty relay
//! ([`daemon`]), a board-and-clock rig for the core ([`rig`]), readers of the event streams
//! ([`streams`]), a real MQTT broker ([`broker`]) and a NATS cluster ([`nats`]), a plain HTTP client ([`http`]), headless Chromium
//! ([`chromium`]). Each test file uses only part of it.
#![allow(dead_code)]

pub mod broker;
pub mod chromium;
pub mod daemon;
pub mod http;
pub mod nats;
pub mod pgn;
pub mod rig;
pub mod streams;

use std::path::{Path, PathBuf};

use eboardd::core::observation::{FieldArray, SquareReading};
use eboardd::core::sensed::Orientation;
use eboardd::sim::pgn::{ScriptGame, parse_games_bytes};

/// `board`'s fields in device numbering (DGT: field 0 is a8 on a board lying
/// [`Orientation::Normal`], h1 on one turned round), as a board dump reports them.
pub fn fields_of(board: &shakmaty::Board, orientation: Orientation) -> FieldArray {
    let mut f = [SquareReading::Empty; 64];
    for (sq, p) in board.iter() {
        f[orientation.index_of(sq) as usize] = SquareReading::Piece(p);
    }
    f
}

/// A fresh, empty scratch directory for one test: `eboardd-<name>-<pid>` in the system's
/// temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("eboardd-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `tests/data/<rel>`.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// A capture under `tests/data/captures`.
pub fn capture(rel: &str) -> PathBuf {
    data("captures").join(rel)
}

/// The PGN corpus, `tests/data/pgn`.
pub fn pgn_dir() -> PathBuf {
    data("pgn")
}

/// Every `.pgn` file under `dir`, sorted.
pub fn pgn_files(dir: &Path) -> Vec<PathBuf> {
    files_with_extension(dir, "pgn")
}

/// Every file under `dir` (and its folders) whose name ends in `.<ext>`, sorted.
pub fn files_with_extension(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.expect("directory entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every game of every PGN file under `tests/data/pgn/<sub>`, in file order (a game that does
/// not parse fails the test, naming its file).
pub fn games(sub: &str) -> Vec<ScriptGame> {
    let mut out = Vec::new();
    for f in pgn_files(&pgn_dir().join(sub)) {
        let bytes = std::fs::read(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for g in parse_games_bytes(&bytes) {
            out.push(g.unwrap_or_else(|e| panic!("{}: {e}", f.display())));
        }
    }
    out
}

/// Every game of one PGN file under `tests/data/pgn` that parses, in file order.
pub fn corpus_file(rel: &str) -> Vec<ScriptGame> {
    let p = pgn_dir().join(rel);
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    parse_games_bytes(&bytes)
        .into_iter()
        .filter_map(Result::ok)
        .collect()
}

/// Chess960 castling kinds (corpus README): king-only, rook-only, swap, king onto the rook's
/// square, rook onto the king's square, both to other squares (`"disjoint"`).
pub fn castle_kind(pos: &shakmaty::Chess, m: &shakmaty::Move) -> Option<&'static str> {
    let shakmaty::Move::Castle { king, rook } = *m else {
        return None;
    };
    let side = m.castling_side()?;
    let turn = shakmaty::Position::turn(pos);
    let (kt, rt) = (side.king_to(turn), side.rook_to(turn));
    Some(if rook == rt {
        "king-only"
    } else if king == kt {
        "rook-only"
    } else if kt == rook && rt == king {
        "swap"
    } else if kt == rook {
        "king-onto-rook"
    } else if rt == king {
        "rook-onto-king"
    } else {
        "disjoint"
    })
}

/// `events` in their wire form (`docs/events.md`), as JSON values.
pub fn wire_events(events: &[eboardd::core::event::CoreEvent]) -> Vec<serde_json::Value> {
    use eboardd::core::event::EventEnvelope;
    events
        .iter()
        .map(|e| {
            serde_json::from_str(&EventEnvelope::new(0, "board", e).to_json())
                .expect("an event's wire form is JSON")
        })
        .collect()
}

/// Field `field` (a string; empty when absent) of every event of kind `kind` among `events`,
/// read from their wire form.
pub fn event_fields(
    events: &[eboardd::core::event::CoreEvent],
    kind: &str,
    field: &str,
) -> Vec<String> {
    wire_events(events)
        .into_iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| e[field].as_str().unwrap_or("").to_string())
        .collect()
}

/// `(code, ply)` of every irregularity among `events`.
pub fn raised(events: &[eboardd::core::event::CoreEvent]) -> Vec<(String, u32)> {
    use eboardd::core::event::EventKind;
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Irregularity { code, ply, .. } => Some((code.to_string(), *ply)),
            _ => None,
        })
        .collect()
}

/// Replays synthesised records (a wired `dgt` board, no header) as `eboardd replay` does: every
/// record, then the board's pending decisions; its events go to `events`. Returns the board.
pub fn replay_records(
    records: &[eboardd::capture::Record],
    events: &mut Vec<eboardd::core::event::CoreEvent>,
) -> eboardd::replay::Device {
    use eboardd::replay::{Playback, Timeline};
    let mut sink = |_: &str, e: &eboardd::core::event::CoreEvent| {
        events.push(e.clone());
        Ok(())
    };
    let session = Playback::play(Timeline::from_records(records.to_vec()), &mut sink)
        .expect("collecting events cannot fail");
    let id = records.first().map_or("board-1", |r| r.dev.as_str());
    session.into_board(id).device
}
