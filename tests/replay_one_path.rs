//! One replay path: a daemon's capture directory replays as its files do, and the daemon's rebuild
//! of a board after a restart gives the games the replay of its file gives.
//!
//! The directory is laid out as the daemon writes it: `board-1` over two days (two rounds on the
//! first, the players changed between the games by a `set_tags` record), `board-2` on a
//! Bluetooth link (doubled settle windows), and a line capture (`line-*`, a chain's discovery
//! bytes), which holds no board. The games are synthesised from known moves, and the players
//! are the ones written here, so the expected games and tags come from the test, not from replay.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use eboardd::capture::{CaptureWriter, OpRecord, Record, RecordKind};
use eboardd::core::game::GameRecord;
use eboardd::core::observation::Micros;
use eboardd::daemon::board::{BoardMeta, LiveBoard};
use eboardd::daemon::captures::CaptureStore;
use eboardd::replay::{Layout, Playback, Timeline};
use eboardd::session::link::LinkKind;
use eboardd::sim::pgn::{ScriptGame, parse_games};
use eboardd::sim::{SimConfig, synthesize};
use serde_json::{Value, json};
use support::daemon::{bin, san, scratch};

const RUY: &str = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 *";
const QGD: &str = "1. d4 d5 2. c4 e6 3. Nc3 Nf6 4. Bg5 Be7 5. e3 O-O 6. Nf3 h6 *";
const SICILIAN: &str = "1. e4 c5 2. Nf3 d6 3. d4 cxd4 4. Nxd4 Nf6 5. Nc3 a6 6. Be3 e5 *";
const ENGLISH: &str = "1. c4 e5 2. Nc3 Nf6 3. g3 d5 4. cxd5 Nxd5 5. Bg2 Nb6 *";

fn game(pgn: &str) -> ScriptGame {
    parse_games(pgn).remove(0).unwrap()
}

/// The records of `pgn` played on `dev` from `at` on (human handling and scanning).
fn played(pgn: &str, dev: &str, seed: u64, at: Micros) -> Vec<Record> {
    let cfg = SimConfig {
        dev: dev.into(),
        ..SimConfig::human(seed)
    };
    synthesize(&game(pgn), &cfg)
        .into_iter()
        .map(|r| Record { t: r.t + at, ..r })
        .collect()
}

fn op(t: Micros, dev: &str, value: Value) -> Record {
    Record {
        t,
        dev: dev.into(),
        kind: RecordKind::Op(OpRecord::read(value)),
    }
}

/// The arbiter's result 2 s after the last record, which ends the game.
fn ended(mut records: Vec<Record>, result: &str) -> Vec<Record> {
    let t = records.last().unwrap().t + 2_000_000;
    let dev = records[0].dev.clone();
    records.push(op(
        t,
        &dev,
        json!({"action": "set_result", "result": result}),
    ));
    records
}

fn tags(round: &str, white: &str, black: &str) -> Value {
    json!({"event": "Test Open", "site": null, "round": round, "white": white, "black": black})
}

/// A capture file as the daemon writes one: `created`, `board`, `tags`, `devices`.
fn write(path: &Path, created: &str, device: Value, tags: Option<Value>, records: &[Record]) {
    let mut header = serde_json::Map::new();
    header.insert("created".into(), created.into());
    header.insert("daemon".into(), "eboardd test".into());
    header.insert("board".into(), device["id"].clone());
    if let Some(t) = tags {
        header.insert("tags".into(), t);
    }
    header.insert("devices".into(), json!([device]));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut w = CaptureWriter::new(Vec::new(), header).unwrap();
    for r in records {
        w.write_record(r).unwrap();
    }
    std::fs::write(path, w.into_inner()).unwrap();
}

fn board(id: &str, link: &str) -> Value {
    json!({"id": id, "driver": "dgt", "serial": "1", "link": link})
}

/// The daemon's capture directory; returns it and its board files.
fn round_dir(name: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = scratch(name);
    let day1 = dir.join("2026-11-29");
    let day2 = dir.join("2026-11-30");
    // board-1, round 1 then round 2: the players change between the games.
    let mut b1 = ended(played(RUY, "board-1", 1, 0), "1-0");
    let after = b1.last().unwrap().t;
    b1.push(op(
        after + 3_000_000,
        "board-1",
        json!({"action": "set_tags", "event": "Test Open", "site": null, "round": "2",
               "white": "Gamma, Gus", "black": "Delta, Dan"}),
    ));
    b1.extend(ended(
        played(QGD, "board-1", 2, after + 10_000_000),
        "1/2-1/2",
    ));
    let b1_path = day1.join("board-1.jsonl");
    write(
        &b1_path,
        "2026-11-29T10:00:00.000000Z",
        board("board-1", "wired"),
        Some(tags("1", "Alpha, Ann", "Beta, Bob")),
        &b1,
    );
    // board-2 on Bluetooth, created a few seconds after board-1 (its records interleave).
    let b2_path = day1.join("board-2.jsonl");
    write(
        &b2_path,
        "2026-11-29T10:00:03.500000Z",
        board("board-2", "bluetooth"),
        Some(tags("1", "Omega, Olga", "Psi, Paul")),
        &ended(played(SICILIAN, "board-2", 3, 0), "0-1"),
    );
    // The line of a chain: discovery bytes. Here a board's start position dump, which a board
    // would take for a game's start: a replay that did not skip it would show a game.
    let line = json!({"id": "line-ttyUSB0", "driver": "dgt", "role": "line",
                      "port": "/dev/ttyUSB0"});
    let line_records: Vec<Record> = played(ENGLISH, "line-ttyUSB0", 4, 0)
        .into_iter()
        .take(6)
        .collect();
    write(
        &day1.join("line-ttyUSB0.jsonl"),
        "2026-11-29T09:59:59.000000Z",
        line,
        None,
        &line_records,
    );
    // board-1 on the next day: the same board (the files' times do not overlap), a game still
    // running.
    let b1_day2 = day2.join("board-1.jsonl");
    write(
        &b1_day2,
        "2026-11-30T10:00:00.000000Z",
        board("board-1", "wired"),
        Some(tags("3", "Alpha, Ann", "Delta, Dan")),
        &played(ENGLISH, "board-1", 5, 0),
    );
    (dir, vec![b1_path, b2_path, b1_day2])
}

/// `eboardd replay ARGS...`: standard output, which must be a success with no warning.
fn replay(args: &[&Path], events: bool) -> String {
    let mut cmd = Command::new(bin());
    cmd.arg("replay");
    if events {
        cmd.arg("--events");
    }
    let out = cmd.args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "replay {args:?}: {err}");
    assert!(err.is_empty(), "replay {args:?} warned: {err}");
    String::from_utf8(out.stdout).unwrap()
}

/// Every game of a PGN text: (Board, Round, White, Black, SAN moves).
fn games(pgn: &str) -> Vec<(String, String, String, String, Vec<String>)> {
    parse_games(pgn)
        .into_iter()
        .map(|g| {
            let g = g.unwrap();
            let tag = |k: &str| g.tag(k).unwrap_or("").to_string();
            (
                tag("Board"),
                tag("Round"),
                tag("White"),
                tag("Black"),
                san(&g),
            )
        })
        .collect()
}

/// The events of `board` in `replay --events` output, without their `seq`, `t` in microseconds
/// since `start` microseconds.
fn events_of(text: &str, board: &str, start: Micros) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["board"] == board)
        .map(|mut v| {
            let t = (v["t"].as_f64().unwrap() * 1e6).round() as Micros;
            v["t"] = (t - start).into();
            v.as_object_mut().unwrap().remove("seq");
            v
        })
        .collect()
}

/// PGN without its tag lines: the games' moves, clocks and results.
fn movetext(pgn: &str) -> String {
    pgn.lines()
        .filter(|l| !l.starts_with('['))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_directory_replays_as_its_files_with_the_same_games_and_tags() {
    let (dir, files) = round_dir("replay-dir");
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let line = dir.join("2026-11-29/line-ttyUSB0.jsonl");
    let mut with_line = paths.clone();
    with_line.push(&line);

    let by_dir = replay(&[&dir], false);
    assert_eq!(by_dir, replay(&paths, false), "PGN: directory and files");
    assert_eq!(
        by_dir,
        replay(&with_line, false),
        "PGN: the line adds nothing"
    );
    let events = replay(&[&dir], true);
    assert_eq!(events, replay(&paths, true), "events: directory and files");

    // The games, in the order they started, with the players in force at each one's last move.
    let sans = |pgn: &str| san(&game(pgn));
    let row = |b: &str, r: &str, w: &str, bl: &str, pgn: &str| {
        let s = |x: &str| x.to_string();
        (s(b), s(r), s(w), s(bl), sans(pgn))
    };
    assert_eq!(
        games(&by_dir),
        [
            row("board-1", "1", "Alpha, Ann", "Beta, Bob", RUY),
            row("board-2", "1", "Omega, Olga", "Psi, Paul", SICILIAN),
            row("board-1", "2", "Gamma, Gus", "Delta, Dan", QGD),
            row("board-1", "3", "Alpha, Ann", "Delta, Dan", ENGLISH),
        ],
        "{by_dir}"
    );
    assert!(by_dir.contains("[Date \"2026.11.30\"]"), "{by_dir}");

    // The Bluetooth board is judged with its own link's windows in the directory as alone, and
    // those windows change its events (so the directory's cannot have been judged as wired).
    // In the directory its times count from board-1's creation, 3.5 s earlier (the line
    // capture, earlier still, is no board's).
    let b2 = &files[1];
    let alone = events_of(&replay(&[b2.as_path()], true), "board-2", 0);
    assert_eq!(events_of(&events, "board-2", 3_500_000), alone);
    let text = std::fs::read_to_string(b2).unwrap();
    let wired = dir.join("wired.jsonl");
    std::fs::write(&wired, text.replacen("\"bluetooth\"", "\"wired\"", 1)).unwrap();
    let as_wired = events_of(&replay(&[wired.as_path()], true), "board-2", 0);
    assert_ne!(as_wired, alone, "the link changes the events");

    let _ = std::fs::remove_dir_all(&dir);
}

/// The games of board `id` in the library's replay of `file`.
fn library_games(file: &Path, id: &str) -> Vec<GameRecord> {
    let plan = Timeline::load(&[file.to_path_buf()], Layout::AsRecorded).unwrap();
    let session = Playback::play(plan, &mut |_, _| Ok(())).unwrap();
    let device = session.devices().find(|d| d.id == id).unwrap();
    device.engine.games().to_vec()
}

#[test]
fn the_daemons_rebuild_of_a_board_gives_the_games_of_its_replay() {
    let (dir, files) = round_dir("replay-rebuild");
    let store = CaptureStore {
        dir: dir.clone(),
        fsync: false,
        bytes: None,
    };
    // The configuration as the capture last had it, so that opening writes nothing.
    let meta = |round: &str, white: &str, black: &str| BoardMeta {
        event: Some("Test Open".into()),
        round: Some(round.into()),
        white: Some(white.into()),
        black: Some(black.into()),
        ..Default::default()
    };
    for (file, meta) in [
        (&files[0], meta("2", "Gamma, Gus", "Delta, Dan")),
        (&files[1], meta("1", "Omega, Olga", "Psi, Paul")),
        (&files[2], meta("3", "Alpha, Ann", "Delta, Dan")),
    ] {
        let id = file.file_stem().unwrap().to_str().unwrap();
        let replayed = replay(&[file.as_path()], false);
        let before = std::fs::read(file).unwrap();
        // Told "wired": a continued capture keeps the link its header names.
        let b = LiveBoard::open(&store, id, meta, Some(file), LinkKind::Wired).unwrap();
        let mut rebuilt = String::new();
        for g in b.games() {
            eboardd::pgn::write_game(g, &Default::default(), &mut rebuilt);
        }
        assert_eq!(
            movetext(&rebuilt),
            movetext(&replayed),
            "{}",
            file.display()
        );
        assert_eq!(b.games().len(), games(&replayed).len());
        // Move for move, with the times each was made at, how it was completed, the clocks.
        let moves = |games: &[GameRecord]| {
            games
                .iter()
                .map(|g| (g.moves.clone(), g.result))
                .collect::<Vec<_>>()
        };
        assert_eq!(moves(b.games()), moves(&library_games(file, id)));
        drop(b);
        assert!(
            std::fs::read(file).unwrap() == before,
            "{}: opening with its own tags wrote to it",
            file.display()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sink that keeps every event as `replay --events` prints it.
fn lines_into(
    lines: &mut Vec<String>,
) -> impl FnMut(&str, &eboardd::core::event::CoreEvent) -> std::io::Result<()> + '_ {
    let mut seq = 0u64;
    move |board, e| {
        seq += 1;
        lines.push(eboardd::core::event::EventEnvelope::new(seq, board, e).to_json());
        Ok(())
    }
}

/// Every event (as `replay --events` prints it) and every game of a replay of `plan`.
fn events_and_pgn(plan: Timeline, workers: Option<usize>) -> (Vec<String>, String, Vec<String>) {
    let mut lines = Vec::new();
    let mut sink = lines_into(&mut lines);
    let session = match workers {
        None => Playback::play(plan, &mut sink).unwrap(),
        Some(n) => Playback::play_parallel(plan, Some(&mut sink), n).unwrap(),
    };
    drop(sink);
    let warnings = session.warnings().to_vec();
    (lines, session.pgn(), warnings)
}

#[test]
fn replay_on_several_cores_gives_the_same_events_games_and_warnings_as_on_one() {
    // The 100 sample captures merged by time (boards overlap), and the daemon-style directory
    // (two days of one board, a Bluetooth board, a line capture).
    let samples = support::data("captures");
    let (round, _) = round_dir("parallel");
    for dir in [samples, round] {
        let load = || Timeline::load(std::slice::from_ref(&dir), Layout::AsRecorded).unwrap();
        let one = events_and_pgn(load(), None);
        assert!(
            one.0.len() > 100,
            "{}: {} events",
            dir.display(),
            one.0.len()
        );
        for workers in [2, 3, 8] {
            let many = events_and_pgn(load(), Some(workers));
            assert!(
                one.0 == many.0,
                "{}: events differ with {workers} workers",
                dir.display()
            );
            assert_eq!(
                one.1,
                many.1,
                "{}: PGN with {workers} workers",
                dir.display()
            );
            assert_eq!(
                one.2,
                many.2,
                "{}: warnings with {workers} workers",
                dir.display()
            );
        }
        // Without a sink (PGN only) the games are the same too.
        let mut sink_less = Playback::play_parallel(load(), None, 2).unwrap().pgn();
        sink_less.retain(|c| c != '\r');
        assert_eq!(one.1, sink_less);
    }
}

#[test]
fn a_replay_read_as_it_plays_gives_what_the_replay_in_memory_gives() {
    // `Timeline::open` (serve-replay: records read again as they are played) against
    // `Timeline::load` (every record in memory): the same boards, events, games and warnings,
    // merged by time and as a round, whole and cut at a time; and a session forgetting its
    // finished games publishes the same events.
    let samples = support::data("captures");
    let (round, _) = round_dir("streamed");
    // Damaged captures: a garbled line in the middle and a cut-off last line.
    let damaged = scratch("streamed-damaged");
    for (i, name) in ["clean/g0001.jsonl", "human/g0002.jsonl"]
        .iter()
        .enumerate()
    {
        let mut text = std::fs::read_to_string(samples.join(name)).unwrap();
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(5, "{\"t\": 1.0, \"dev\"");
        let mut out = lines.join("\n");
        out.push_str("\n{\"t\": 999.0, \"dev\": \"board-1\", \"rx\": \"8e0");
        text = out;
        std::fs::write(damaged.join(format!("d{i}.jsonl")), text).unwrap();
    }
    for dir in [samples, round, damaged.clone()] {
        for layout in [Layout::AsRecorded, Layout::Round] {
            for until in [None, Some(90_000_000)] {
                let what = format!("{} {layout:?} until {until:?}", dir.display());
                let paths = std::slice::from_ref(&dir);
                let cut = |p: Timeline| match until {
                    Some(t) => p.until(t),
                    None => p,
                };
                let load = cut(Timeline::load(paths, layout).unwrap());
                let open = cut(Timeline::open(paths, layout).unwrap());
                let boards = |p: &Timeline| p.boards().map(String::from).collect::<Vec<_>>();
                assert_eq!(boards(&load), boards(&open), "{what}: boards");
                assert_eq!(load.round(), open.round(), "{what}: round");
                let numbers = |p: &Timeline| {
                    p.numbers()
                        .map(|(b, n)| (b.to_string(), n))
                        .collect::<Vec<_>>()
                };
                assert_eq!(numbers(&load), numbers(&open), "{what}: numbers");
                let in_memory = events_and_pgn(load, None);
                let streamed = events_and_pgn(open, None);
                assert!(in_memory.0.len() > 30, "{what}: {}", in_memory.0.len());
                assert!(in_memory.0 == streamed.0, "{what}: events differ");
                assert_eq!(in_memory.1, streamed.1, "{what}: PGN");
                assert_eq!(in_memory.2, streamed.2, "{what}: warnings");
                // Forgetting finished games changes no event.
                let mut lines = Vec::new();
                let mut sink = lines_into(&mut lines);
                let plan = Timeline::open(paths, layout).unwrap();
                let mut session = Playback::new(cut(plan)).forgetting_finished_games();
                session.run(&mut sink).unwrap();
                session.finish(&mut sink).unwrap();
                drop(sink);
                assert!(in_memory.0 == lines, "{what}: events when forgetting");
            }
        }
    }
    // Each damaged line is named once.
    let warned = events_and_pgn(
        Timeline::open(&[damaged], Layout::AsRecorded).unwrap(),
        None,
    )
    .2;
    assert_eq!(warned.len(), 4, "{warned:?}");
}
