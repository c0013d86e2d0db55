//! The JSON handlers of the HTTP API (operator action bodies, players) and of the LiveChess
//! EBoards API (one message per input line) on arbitrary text: never panic; a pairing that is
//! accepted renders as PGN whose tag lines are whole.
#![no_main]

use eboardd::output::{Hub, HubConfig, RoundInfo};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let info = RoundInfo {
        round: 1,
        boards: vec!["board-1".into(), "board-2".into()],
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    eboardd::output::http::parse_bodies_for_fuzzing(&hub, "board-1", data);
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().take(64).collect();
    for line in &lines {
        eboardd::output::http::parse_bodies_for_fuzzing(&hub, "board-2", line.as_bytes());
    }
    eboardd::output::livechess::handle_for_fuzzing(&hub, &lines);
    let pgn = hub.with_round(eboardd::output::render::all_games_pgn);
    for line in pgn.lines().filter(|l| l.starts_with('[')) {
        assert!(line.ends_with("\"]"), "broken tag line: {line:?}");
    }
});
