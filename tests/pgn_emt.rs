//! `[%emt]`, the time each move took, as DGT LiveChess writes it beside `[%clk]`.
//!
//! - The shape is LiveChess's: read off its real files (`tests/data/livechess-output/`), every
//!   move with a clock has `{[%clk h:mm:ss]}` and then `{[%emt h:mm:ss]}` as a comment of its
//!   own (the game's first move may have no `[%emt]`); `eboardd replay` writes every sample capture's moves in
//!   that shape, without exception.
//! - The value is what the mover's clock shows they spent: their time when the opponent pressed,
//!   plus the increment, minus their time after the move. It is checked against the captures'
//!   ground truth (`clk` of each ply as the clock showed it, 90 min + 30 s), not against
//!   eboardd's own `[%clk]`.
//! - The increment of a `TimeControl` value, in PGN's form and in the words LiveChess writes.

mod support;

use std::process::Command;

use serde_json::Value;
use support::pgn::{PgnGame, clock_comments, parse_pgn};

/// The captures' time control (`tests/data/captures/README.md`): 90 min + 30 s.
const BASE_S: u32 = 5400;
const INCREMENT_S: u32 = 30;

fn livechess_games() -> Vec<(String, PgnGame)> {
    let dir = support::data("livechess-output/tournament-2/round-1");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("game-"))
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 12, "the real round has 12 games");
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read(&p).expect("read a LiveChess game");
            let mut games = parse_pgn(&text).expect("LiveChess PGN parses");
            assert_eq!(games.len(), 1, "{}", p.display());
            (p.display().to_string(), games.remove(0))
        })
        .collect()
}

#[test]
fn livechess_writes_clk_then_emt_on_every_move_but_the_first() {
    let mut moves = 0;
    let mut other_shape = Vec::new();
    for (file, game) in livechess_games() {
        let first = game.moves.first().expect("a game with moves");
        // The first move has `[%clk]`, and `[%emt]` too when LiveChess saw the clock start.
        assert!(
            clock_comments(first, true).is_ok() || clock_comments(first, false).is_ok(),
            "{file}: {first:?}"
        );
        for (i, m) in game.moves.iter().enumerate().skip(1) {
            moves += 1;
            if let Err(why) = clock_comments(m, false) {
                other_shape.push(format!("{file} ply {}: {why}", i + 1));
            }
        }
    }
    // LiveChess leaves out a `[%clk]` or an `[%emt]` here and there (game-8 has dozens, game-3
    // one); the shape of the rest is the one eboardd writes on every move.
    assert!(moves > 800, "{moves} moves read");
    assert!(
        other_shape.len() * 100 < moves * 10,
        "{} of {moves}: {other_shape:#?}",
        other_shape.len()
    );
}

#[test]
fn livechess_time_control_words_give_the_increment() {
    for (file, game) in livechess_games() {
        let tc = game
            .tag("TimeControl")
            .expect("LiveChess writes TimeControl");
        assert_eq!(
            eboardd::pgn::increment_in_time_control(tc),
            Some(10_000),
            "{file}: {tc}"
        );
    }
    for (value, want) in [
        ("5400+30", Some(30_000)),
        ("40/5400+30:1800+30", Some(30_000)),
        ("300", Some(0)),
        ("180+2", Some(2_000)),
        ("?", None),
        ("-", None),
        ("*180", None),
        ("", None),
    ] {
        assert_eq!(
            eboardd::pgn::increment_in_time_control(value),
            want,
            "{value:?}"
        );
    }
}

/// Every sample capture with its truth, replayed by the binary.
fn replayed_captures() -> Vec<(String, Value, PgnGame)> {
    let root = support::data("captures");
    let mut out = Vec::new();
    let mut folders: Vec<_> = std::fs::read_dir(&root)
        .expect("captures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    for folder in folders {
        let mut files: Vec<_> = std::fs::read_dir(&folder)
            .expect("folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        for capture in files {
            let truth_path = capture.with_extension("truth.json");
            let truth: Value =
                serde_json::from_slice(&std::fs::read(&truth_path).expect("truth")).expect("json");
            let run = Command::new(support::daemon::bin())
                .arg("replay")
                .arg(&capture)
                .output()
                .expect("run eboardd replay");
            assert!(run.status.success(), "{}", capture.display());
            let mut games = parse_pgn(&run.stdout).expect("our PGN parses");
            assert_eq!(games.len(), 1, "{}", capture.display());
            out.push((capture.display().to_string(), truth, games.remove(0)));
        }
    }
    assert!(out.len() >= 100, "{} captures", out.len());
    out
}

#[test]
fn every_move_with_a_clock_has_the_time_its_clock_shows_it_spent() {
    let mut checked = 0usize;
    let mut agree = 0usize;
    let mut disagree = Vec::new();
    let mut shape = Vec::new();
    for (name, truth, game) in replayed_captures() {
        let clk = |ply: usize| -> Option<u32> {
            if ply == 0 {
                return Some(BASE_S);
            }
            truth["clk"][ply.to_string()].as_u64().map(|s| s as u32)
        };
        for (i, m) in game.moves.iter().enumerate() {
            let ply = i + 1;
            let (_, emt) = match clock_comments(m, i == 0) {
                Ok(c) => c,
                Err(why) => {
                    shape.push(format!("{name} ply {ply}: {why}"));
                    continue;
                }
            };
            // The mover's time when the opponent pressed is their time after their previous
            // move (the start time before their first).
            let before = if ply >= 3 { clk(ply - 2) } else { clk(0) };
            let (Some(emt), Some(before), Some(after)) = (emt, before, clk(ply)) else {
                continue;
            };
            checked += 1;
            let want = i64::from(before) + i64::from(INCREMENT_S) - i64::from(after);
            if (i64::from(emt) - want).abs() <= 1 {
                agree += 1;
            } else {
                disagree.push(format!(
                    "{name} ply {ply}: emt {emt} s, the clock says {want} s"
                ));
            }
        }
    }
    assert!(shape.is_empty(), "{shape:#?}");
    assert!(checked > 5_000, "{checked} moves checked");
    assert!(
        agree * 100 >= checked * 99,
        "{agree} of {checked} agree; first disagreements: {:#?}",
        &disagree[..disagree.len().min(20)]
    );
    eprintln!(
        "[%emt] agrees with the clock on {agree} of {checked} moves ({:.2}%)",
        agree as f64 * 100.0 / checked as f64
    );
}
