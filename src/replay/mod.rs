//! Every replay of captures goes one way: `eboardd replay` (files or directories, to PGN or to
//! the event stream), `eboardd serve-replay` (paced, into the broadcast hub), the daemon's
//! rebuild of a board after a restart, and the tests and benchmarks.
//!
//! - [`Timeline`]: captures in, laid out once. Line captures are skipped (they hold no board); every
//!   device is set up from its capture's header (decoder from `devices[].driver`, settle windows
//!   from `devices[].link`, bus unit from `devices[].address`); the records of several captures
//!   are merged by absolute time (`created` + `t`), one capture staying exactly as it is; a
//!   device id that overlapping captures share is told apart by file; the PGN tags each device
//!   has over time are taken from headers' `tags` and `set_tags` records; warnings are gathered.
//! - [`Playback`]: a plan played one record at a time through [`crate::device::apply_record`],
//!   the function the live daemon uses too. Callers differ only in what they do with the events:
//!   print them ([`replay_paths`]), publish them at a pace (`output::replay_source`), or rebuild a
//!   board without publishing (`daemon::board`).

mod merge;
mod playback;
mod timeline;

use std::io::{self, Write};
use std::path::PathBuf;

use crate::capture::CaptureError;
use crate::core::event::{CoreEvent, EventEnvelope};

pub use crate::device::Device;

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A capture could not be read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// Output could not be written.
    #[error("writing output: {0}")]
    Output(#[from] io::Error),
}

/// Where events go: the board (device name) and the event. An error stops the replay.
pub type Sink<'a> = dyn FnMut(&str, &CoreEvent) -> io::Result<()> + 'a;

/// How captures are laid out in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// As recorded: every record at its absolute time, `created` + `t`, counted from the
    /// earliest `created` (a capture without one starts there). A device id used by several
    /// captures whose times overlap (unrelated captures all made as `board-1`) is renamed
    /// `<file>/<id>`, `<file>` being the file's name without `.jsonl` (with as many of its
    /// folders as it takes to tell two files apart); otherwise the same id is the same board.
    #[default]
    AsRecorded,
    /// A round made of unrelated captures: every capture is its own board (`board-N` for the
    /// N-th capture, `fN-DEV` when it has several devices) and all start together at `t` = 0.
    Round,
}

pub use playback::{Playback, Replayed, round_number};
pub use timeline::Timeline;

/// `eboardd replay`: replays the captures under `paths` (files, or directories searched for
/// `*.jsonl`) and writes every game as PGN, or the events as JSON Lines when `events` is set,
/// to `out`; warnings go to `warn`.
pub fn replay_paths(
    paths: &[PathBuf],
    events: bool,
    out: &mut dyn Write,
    warn: &mut dyn FnMut(&str),
) -> Result<(), ReplayError> {
    let plan = Timeline::load(paths, Layout::AsRecorded)?;
    let mut seq = 0u64;
    let mut sink = |board: &str, e: &CoreEvent| -> io::Result<()> {
        seq += 1;
        writeln!(out, "{}", EventEnvelope::new(seq, board, e).to_json())
    };
    let session =
        Playback::play_parallel(plan, events.then_some(&mut sink), crate::parallel::cores())?;
    for w in session.warnings() {
        warn(w);
    }
    if !events {
        out.write_all(session.pgn().as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::merge::Steps;
    use super::timeline::{capture_files, labels};
    use super::*;
    use crate::capture::{self, Capture, Record, RecordKind};
    use crate::core::observation::Micros;
    use serde_json::Value;

    fn data(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/captures")
            .join(path)
    }

    fn pgn_of(paths: &[PathBuf]) -> String {
        let mut out = Vec::new();
        replay_paths(paths, false, &mut out, &mut |_| {}).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// (Board tag, moves) of every game.
    fn games(pgn: &str) -> Vec<(String, Vec<shakmaty::Move>)> {
        crate::sim::pgn::parse_games(pgn)
            .into_iter()
            .map(|g| {
                let g = g.unwrap();
                (g.tag("Board").unwrap_or("").to_string(), g.moves)
            })
            .collect()
    }

    fn capture(header: Value, records: &[(f64, &str, &str)]) -> Capture {
        let mut text = header.to_string();
        for (t, dev, note) in records {
            text.push('\n');
            text.push_str(&serde_json::json!({"t": t, "dev": dev, "note": note}).to_string());
        }
        capture::parse_capture("test.jsonl", &text).unwrap()
    }

    fn header(created: &str) -> Value {
        serde_json::json!({"format": "eboard-capture", "version": 1, "created": created})
    }

    /// The (time, device name, note) of every step.
    fn steps(plan: &Timeline) -> Vec<(Micros, &str, &str)> {
        let Steps::Memory(steps) = &plan.steps else {
            panic!("a plan in memory")
        };
        steps
            .iter()
            .map(|s| {
                let RecordKind::Note(n) = &s.kind else {
                    panic!("{s:?}")
                };
                (s.t, plan.devices[s.device].name.as_str(), n.as_str())
            })
            .collect()
    }

    #[test]
    fn unrelated_captures_of_one_device_id_stay_apart() {
        // Every sample capture, all made as `board-1` at the same time, and their names clash
        // across folders (`clean/g0001`, `human/g0001`...).
        let dir = data("");
        let files = capture_files(&dir).unwrap();
        assert!(files.len() >= 100);
        let all = pgn_of(std::slice::from_ref(&dir));
        let merged = games(&all);
        assert_eq!(merged.len(), files.len());
        for f in &files {
            let folder = f.parent().unwrap().file_name().unwrap().to_string_lossy();
            let stem = f.file_stem().unwrap().to_string_lossy();
            let board = format!("{folder}/{stem}/board-1");
            // Each game as when its file is replayed alone.
            let alone = games(&pgn_of(std::slice::from_ref(f))).remove(0).1;
            let here = merged.iter().find(|(b, _)| *b == board);
            assert_eq!(here.map(|(_, m)| m), Some(&alone), "{board}");
        }
    }

    #[test]
    fn captures_merge_by_absolute_time_and_one_stays_as_it_is() {
        let a = capture(
            header("2026-11-29T10:00:00Z"),
            &[(0.0, "board-1", "a0"), (2.0, "board-1", "a2")],
        );
        // Created a second later, another board.
        let b = capture(
            header("2026-11-29T10:00:01Z"),
            &[(0.0, "board-2", "b1"), (1.0, "board-2", "b2")],
        );
        let plan = Timeline::new(vec![("a".into(), a), ("b".into(), b)], Layout::AsRecorded);
        assert_eq!(
            steps(&plan),
            [
                (0, "board-1", "a0"),
                (1_000_000, "board-2", "b1"),
                // Equal times: the earlier capture first.
                (2_000_000, "board-1", "a2"),
                (2_000_000, "board-2", "b2"),
            ]
        );
        assert_eq!(plan.date().as_deref(), Some("2026.11.29"));
        // One capture whose records go back in time (built, not read): played as it is.
        let records = [(5, "x"), (3, "y"), (4, "z")]
            .map(|(t, n)| Record {
                t,
                dev: "board-1".into(),
                kind: RecordKind::Note(n.into()),
            })
            .to_vec();
        let plan = Timeline::from_records(records);
        assert_eq!(
            steps(&plan),
            [
                (5, "board-1", "x"),
                (3, "board-1", "y"),
                (4, "board-1", "z")
            ]
        );
        assert_eq!(plan.date(), None);
    }

    #[test]
    fn a_device_in_two_captures_is_one_board_unless_their_times_overlap() {
        let day = |created: &str| capture(header(created), &[(0.0, "board-1", "n")]);
        let plan = Timeline::new(
            vec![
                ("d1/board-1".into(), day("2026-11-29T10:00:00Z")),
                ("d2/board-1".into(), day("2026-11-30T10:00:00Z")),
            ],
            Layout::AsRecorded,
        );
        assert_eq!(plan.boards().collect::<Vec<_>>(), ["board-1"]);
        assert_eq!(steps(&plan).len(), 2);
        let plan = Timeline::new(
            vec![
                ("x".into(), day("2026-11-29T10:00:00Z")),
                ("y".into(), day("2026-11-29T10:00:00Z")),
            ],
            Layout::AsRecorded,
        );
        assert_eq!(
            plan.boards().collect::<Vec<_>>(),
            ["x/board-1", "y/board-1"]
        );
        // A round: every capture its own board, all from t = 0.
        let plan = Timeline::new(
            vec![
                ("x".into(), day("2026-11-29T10:00:00Z")),
                ("y".into(), day("2026-11-30T10:00:00Z")),
            ],
            Layout::Round,
        );
        assert_eq!(plan.boards().collect::<Vec<_>>(), ["board-1", "board-2"]);
        assert!(steps(&plan).iter().all(|(t, _, _)| *t == 0));
    }

    #[test]
    fn labels_take_folders_only_to_tell_files_apart() {
        let files: Vec<PathBuf> = ["c/clean/g1.jsonl", "c/human/g1.jsonl", "c/human/g2.jsonl"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(labels(&files), ["clean/g1", "human/g1", "g2"]);
        let twice = [PathBuf::from("a/g1.jsonl"), PathBuf::from("a/g1.jsonl")];
        assert_eq!(labels(&twice), ["a/g1", "a/g1#2"]);
    }

    #[test]
    fn line_captures_hold_no_board() {
        let line = capture(
            serde_json::json!({"format": "eboard-capture", "version": 1,
                "created": "2026-11-29T10:00:00Z", "board": "line-ttyUSB0",
                "devices": [{"id": "line-ttyUSB0", "driver": "nonesuch", "role": "line"}]}),
            &[(0.0, "line-ttyUSB0", "n")],
        );
        let board = capture(header("2026-11-29T10:00:00Z"), &[(1.0, "board-1", "n")]);
        let plan = Timeline::new(
            vec![("line".into(), line), ("board".into(), board)],
            Layout::AsRecorded,
        );
        assert_eq!(plan.boards().collect::<Vec<_>>(), ["board-1"]);
        assert_eq!(steps(&plan).len(), 1);
        assert!(plan.warnings().is_empty(), "{:?}", plan.warnings());
    }

    #[test]
    fn header_tags_are_the_boards_or_every_devices() {
        let two = |board: Option<&str>| {
            let mut h = header("2026-11-29T10:00:00Z");
            h["tags"] = serde_json::json!({"white": "W"});
            if let Some(b) = board {
                h["board"] = b.into();
            }
            let cap = capture(h, &[(0.0, "a", "n"), (0.0, "b", "n")]);
            let plan = Timeline::from_capture(cap);
            (0..2).map(|d| plan.tags_at(d, 0).white).collect::<Vec<_>>()
        };
        assert_eq!(two(Some("b")), [None, Some("W".to_string())]);
        assert_eq!(two(None), [Some("W".to_string()), Some("W".to_string())]);
    }
}
