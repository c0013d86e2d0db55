//! Finished games leave the broadcast model for its archive (issue 22) and nothing served
//! changes: every game of every board (`games.pgn?all=1`) and every earlier round's games read
//! back exactly as the replay of the same captures records them, while each board keeps only
//! its latest game in memory.

mod support;

use std::collections::HashMap;
use std::path::Path;

use eboardd::core::event::{CoreEvent, EventKind};
use eboardd::output::{Hub, HubConfig, RoundInfo, render};
use eboardd::replay::{Layout, Playback, Timeline};
use serde_json::Value;

const BOARDS: usize = 3;
const GAMES: usize = 4;

/// One capture per board of `BOARDS` boards, each playing `GAMES` of the clean sample
/// captures one after another (times shifted, 30 s between games), as the daemon writes them.
fn write_event(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut k = 1;
    let mut paths = Vec::new();
    for b in 1..=BOARDS {
        let mut out = format!(
            "{{\"format\":\"eboard-capture\",\"version\":1,\"created\":\"2026-11-29T08:00:00Z\",\"board\":\"board-{b}\"}}\n"
        );
        let mut off = 0.0;
        for _ in 0..GAMES {
            let path = support::data(&format!("captures/clean/g{k:04}.jsonl"));
            k += 1;
            let text = std::fs::read_to_string(&path).unwrap();
            let mut last = 0.0;
            for line in text.lines().skip(1) {
                let mut r: Value = serde_json::from_str(line).unwrap();
                let t = r["t"].as_f64().unwrap();
                last = t;
                r["t"] = (((t + off) * 1e6).round() / 1e6).into();
                r["dev"] = format!("board-{b}").into();
                out.push_str(&r.to_string());
                out.push('\n');
            }
            off += last + 30.0;
        }
        let path = dir.join(format!("board-{b}.jsonl"));
        std::fs::write(&path, out).unwrap();
        paths.push(path);
    }
    paths
}

/// The movetext of every game of a PGN text, in order (the tags differ between the replay's
/// writer and the round's; the moves, clocks and results must not).
fn movetexts(pgn: &str) -> Vec<String> {
    let mut games = Vec::new();
    let mut body = String::new();
    let mut in_moves = false;
    for line in pgn.lines() {
        if line.starts_with('[') && !in_moves {
            continue;
        }
        if line.is_empty() {
            if in_moves {
                games.push(std::mem::take(&mut body));
                in_moves = false;
            }
            continue;
        }
        in_moves = true;
        body.push_str(line);
        body.push('\n');
    }
    if in_moves {
        games.push(body);
    }
    games
}

#[test]
fn archived_games_are_served_exactly_as_replay_records_them() {
    let dir = support::scratch("archive");
    let paths = write_event(&dir);
    let plan = Timeline::load(&paths, Layout::AsRecorded).unwrap();
    let mut events: Vec<(String, CoreEvent)> = Vec::new();
    let session = Playback::play(plan, &mut |b: &str, e: &CoreEvent| {
        events.push((b.to_string(), e.clone()));
        Ok(())
    })
    .unwrap();
    // The boards played side by side: their events in time order.
    events.sort_by_key(|(_, e)| e.t);
    let replayed = session.pgn();
    let expected = movetexts(&replayed);
    assert_eq!(expected.len(), BOARDS * GAMES, "{replayed}");

    // The hub gets the same events; round 2 starts halfway through the event.
    let archive_dir = dir.join("archive");
    std::fs::create_dir_all(&archive_dir).unwrap();
    let cfg = HubConfig {
        archive_dir: Some(archive_dir.clone()),
        ..HubConfig::default()
    };
    let hub = Hub::new(RoundInfo::default(), cfg);
    let switch = events.len() / 2;
    // (board, game number) -> round it started in.
    let mut started_in: HashMap<(String, u32), u32> = HashMap::new();
    for (i, (b, e)) in events.iter().enumerate() {
        let round = if i < switch { 1 } else { 2 };
        if i == switch {
            let info = RoundInfo {
                round: 2,
                ..hub.with_round(|r| r.info.clone())
            };
            hub.start_round(info).unwrap();
        }
        if matches!(e.kind, EventKind::GameStarted { .. }) {
            started_in.insert((b.clone(), e.game), round);
        }
        hub.publish(b, e);
    }

    // Memory keeps each board's latest game; the rest is in the archive (an unlinked file).
    hub.with_round(|r| {
        assert!(r.boards().iter().all(|b| b.games.len() == 1));
        assert_eq!(r.archive().games().len(), BOARDS * GAMES - BOARDS);
    });
    assert_eq!(std::fs::read_dir(&archive_dir).unwrap().count(), 0);

    // Every game of every board, in the order they started.
    let all = hub.with_round(render::all_games_pgn);
    assert_eq!(movetexts(&all), expected);

    // Each earlier round shows each board's last game started in it, read back.
    // Round 1, an earlier round: each board's last game started in it, read back from the
    // archive (every board started later games in round 2).
    let mut want = Vec::new();
    for b in 1..=BOARDS {
        let id = format!("board-{b}");
        let last = started_in
            .iter()
            .filter(|((board, _), round)| *board == id && **round == 1)
            .map(|((_, n), _)| *n)
            .max()
            .unwrap_or_else(|| panic!("{id}: no game in round 1: {started_in:?}"));
        want.push(game_text(&session, &id, last));
    }
    let got = hub.with_round(|s| render::round_pgn_of(s, 1));
    assert_eq!(movetexts(&got), want, "round 1");
    // The current round: each board's latest game (the sample games have no result, so one
    // begun in round 1 stays shown).
    let want: Vec<String> = (1..=BOARDS)
        .map(|b| game_text(&session, &format!("board-{b}"), GAMES as u32))
        .collect();
    let got = hub.with_round(|s| render::round_pgn_of(s, 2));
    assert_eq!(movetexts(&got), want, "round 2");
    // The LiveChessCloud index of round 1 gives every board's game of that round.
    let index = hub.with_round(|s| render::lcc_index_of(s, 1));
    assert_eq!(index["pairings"].as_array().unwrap().len(), BOARDS);
    let rounds = hub.with_round(eboardd::output::rounds::rounds_json);
    let counts: Vec<u64> = rounds["rounds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["games"].as_u64().unwrap())
        .collect();
    assert_eq!(counts, [BOARDS as u64, BOARDS as u64]);
    let boards = hub.with_round(|r| {
        r.boards()
            .iter()
            .map(|b| eboardd::output::model::board_json(r, b)["games"].as_u64())
            .collect::<Vec<_>>()
    });
    assert_eq!(boards, vec![Some(GAMES as u64); BOARDS]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The movetext of game `number` of board `id` as the replay recorded it.
fn game_text(session: &Playback, id: &str, number: u32) -> String {
    let d = session.devices().find(|d| d.id == id).unwrap();
    let g = d
        .engine
        .games()
        .iter()
        .find(|g| g.number == number)
        .unwrap();
    let mut out = String::new();
    eboardd::pgn::write_game(g, &eboardd::pgn::GameTags::default(), &mut out);
    movetexts(&out).remove(0)
}
