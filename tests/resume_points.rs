//! Resume points (issue 22, part 2): a board's state machine saved at rest and rebuilt from the
//! seed goes on exactly as the full replay does. For multi-game captures made of the sample
//! captures of every kind, at **every** point where a game starts and the board is at rest (as
//! the daemon takes them), a device seeded there and fed the rest of the capture gives the same
//! events as the replay of the whole capture from that record on, and the same games at the end.

mod support;

use eboardd::capture::{Capture, Header, Record, parse_capture};
use eboardd::core::engine::seed::EngineSeed;
use eboardd::core::event::{CoreEvent, EventKind};
use eboardd::core::stored::StoredGame;
use eboardd::replay::{Playback, Timeline};
use serde_json::Value;

/// The sample captures of `kind` played one after another on one board (times shifted, 30 s
/// between games), as the daemon writes a board's day.
fn joined(kind: &str) -> Capture {
    let mut out = String::from(
        "{\"format\":\"eboard-capture\",\"version\":1,\"created\":\"2026-11-29T08:00:00Z\",\"board\":\"board-1\"}\n",
    );
    let mut off = 0.0;
    let dir = support::data(&format!("captures/{kind}"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut last = 0.0;
        for line in text.lines().skip(1) {
            let mut r: Value = serde_json::from_str(line).unwrap();
            let t = r["t"].as_f64().unwrap();
            last = t;
            r["t"] = (((t + off) * 1e6).round() / 1e6).into();
            r["dev"] = "board-1".into();
            out.push_str(&r.to_string());
            out.push('\n');
        }
        off += last + 30.0;
    }
    parse_capture(kind, &out).unwrap()
}

fn plan_of(header: &Header, records: &[Record]) -> Timeline {
    Timeline::from_capture(Capture {
        header: header.clone(),
        records: records.to_vec(),
        warnings: Vec::new(),
    })
}

/// Plays every record, then the end of input; the events with the number of records played
/// before each.
fn events_of(mut session: Playback) -> (Vec<(usize, CoreEvent)>, Playback) {
    let mut events = Vec::new();
    let mut n = 0;
    loop {
        let mut got = Vec::new();
        let more = session
            .step(&mut |_, e| {
                got.push(e.clone());
                Ok(())
            })
            .unwrap();
        if more {
            n += 1;
        }
        events.extend(got.into_iter().map(|e| (n, e)));
        if !more {
            break;
        }
    }
    let mut got = Vec::new();
    session
        .finish(&mut |_, e| {
            got.push(e.clone());
            Ok(())
        })
        .unwrap();
    events.extend(got.into_iter().map(|e| (n + 1, e)));
    (events, session)
}

/// The resume points the daemon takes: after a record whose events start a game, the finished
/// games forgotten as the live board does, when the decoder and the engine are at rest.
fn resume_points(cap: &Capture) -> (Vec<(usize, EngineSeed)>, usize) {
    let mut session = Playback::new(plan_of(&cap.header, &cap.records));
    let mut points = Vec::new();
    let mut starts = 0;
    let mut n = 0;
    loop {
        let mut started = false;
        let more = session
            .step(&mut |_, e| {
                started |= matches!(e.kind, EventKind::GameStarted { .. });
                Ok(())
            })
            .unwrap();
        if !more {
            break;
        }
        n += 1;
        if started {
            starts += 1;
            let device = session.device_mut("board-1").unwrap();
            device.engine.forget_finished();
            if device.at_rest()
                && let Some(seed) = EngineSeed::of(&device.engine)
            {
                points.push((n, seed));
            }
        }
    }
    (points, starts)
}

fn last_games(session: &Playback) -> Vec<(u32, StoredGame)> {
    let games = session.devices().next().unwrap().engine.games();
    games[games.len().saturating_sub(2)..]
        .iter()
        .map(|g| (g.number, StoredGame::of(g)))
        .collect()
}

fn check(kind: &str) -> (usize, usize) {
    let cap = joined(kind);
    let (full, full_session) = events_of(Playback::new(plan_of(&cap.header, &cap.records)));
    let want_games = last_games(&full_session);
    let (points, starts) = resume_points(&cap);
    for (at, seed) in &points {
        let mut session = Playback::new(plan_of(&cap.header, &cap.records[*at..]));
        let device = session.device_mut("board-1").unwrap();
        device.engine = seed.engine(device.engine.config().clone()).unwrap();
        let (tail, session) = events_of(session);
        let tail: Vec<(usize, CoreEvent)> = tail.into_iter().map(|(n, e)| (n + at, e)).collect();
        let want: Vec<(usize, CoreEvent)> = full.iter().filter(|(n, _)| n > at).cloned().collect();
        assert_eq!(tail.len(), want.len(), "{kind}: events after record {at}");
        for (got, want) in tail.iter().zip(&want) {
            assert_eq!(got, want, "{kind}: resumed after record {at}");
        }
        assert_eq!(
            last_games(&session),
            want_games,
            "{kind}: games after record {at}"
        );
    }
    (points.len(), starts)
}

#[test]
fn every_resume_point_goes_on_as_the_full_replay() {
    let mut report = Vec::new();
    for kind in [
        "clean",
        "blitz",
        "human",
        "chess960",
        "irregular",
        "irregular-promotion",
    ] {
        let (points, starts) = check(kind);
        report.push(format!("{kind}: {points} of {starts} game starts"));
        // Most game starts are at rest: a restart resumes within a game or two.
        assert!(
            points * 2 >= starts,
            "{kind}: {points} resume points of {starts} game starts"
        );
    }
    eprintln!("resume points: {}", report.join(", "));
}
