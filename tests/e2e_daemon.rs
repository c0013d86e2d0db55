//! End to end over pseudo-terminals: `eboardd run` serving emulated DGT boards (with DGT 3000
//! clocks) that play real games with human handling at accelerated pace. The games must come
//! out exact: in the daemon's event stream, and in the replay of its capture directory.

mod support;

use std::time::Duration;

use eboardd::sim::emulator::runner::Control;
use eboardd::sim::emulator::{ClockModel, EmulatorConfig};
use eboardd::sim::{SimConfig, Style};
use support::daemon::*;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn games_come_out_exact_with_configured_boards() {
    let dir = scratch("exact");
    let caps = dir.join("captures");
    let games = demo_games();
    let styles = [Style::Human, Style::Blitz, Style::Clean];
    let mut boards = Vec::new();
    let mut ports = Vec::new();
    for (i, style) in styles.iter().enumerate() {
        let link = dir.join(format!("board{i}"));
        let mut sim = SimConfig::new(*style, 40 + i as u64);
        let mut em = EmulatorConfig {
            serial: format!("3000{i}"),
            // The game runs 1000 times faster than real play; so do the clock's acks (a real
            // DGT 3000 takes 1–2 s, which would let only a few of the moves reach it here).
            ack_delay: (1_000, 2_000),
            ..Default::default()
        };
        match i {
            // White's clock on the left, as configured below.
            1 => sim.white_on_right = Some(false),
            // No clock on the cable at all.
            2 => em.clock = ClockModel::None,
            _ => {}
        }
        boards.push(board_with(&games[i..=i], sim, em, &link, SPEED));
        ports.push(link);
    }
    // Boards 1 and 2 configured (names, numbers, a fixed clock side); board 3 not.
    let cfg = dir.join("eboardd.toml");
    std::fs::write(
        &cfg,
        format!(
            r#"
[event]
name = "E2E Open"
round = "4"
[[board]]
number = 1
serial = "30000"
white = "{}"
black = "{}"
[[board]]
number = 2
serial = "30001"
white_clock = "left"
[clock]
show_moves = true
"#,
            games[0].tag("White").unwrap(),
            games[0].tag("Black").unwrap()
        ),
    )
    .unwrap();
    let cfg_arg = cfg.to_string_lossy().to_string();
    let mut d = Daemon::start(&ports, &caps, &["--config", &cfg_arg]);
    let ids = ["board-1", "board-2", "dgt-30002"];
    d.wait_for("every game to be completed", WAIT, |ev| {
        completed(ev, ids[0], games[0].moves.len())
            && completed(ev, ids[1], games[1].moves.len())
            && made(ev, ids[2], games[2].moves.len())
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        for (id, g) in ids.iter().zip(&games) {
            assert_eq!(moves_from_events(&ev, id), uci(g), "{id}: event stream");
            assert_eq!(of(&ev, id, "game_started").len(), 1, "{id}: one game");
            assert_eq!(of(&ev, id, "board_connected").len(), 1, "{id}");
        }
        // The configured clock side: every move of board 2 completed by its clock press.
        let by_clock = of(&ev, ids[1], "move_completed")
            .iter()
            .filter(|e| e["by"] == "clock")
            .count();
        assert_eq!(
            by_clock,
            games[1].moves.len(),
            "board-2 completions by clock"
        );
        // No clock: no clock events, moves completed by the next move.
        assert!(of(&ev, ids[2], "clock").is_empty());
        assert_eq!(
            of(&ev, ids[2], "move_completed").len(),
            games[2].moves.len() - 1
        );
        let seqs: Vec<u64> = ev.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert!(
            seqs.windows(2).all(|w| w[1] == w[0] + 1),
            "seq increases by one"
        );
    }
    // The moves were shown on the configured DGT 3000s.
    // (From ply 10 on, in order; the first moves may come before the clock probe's answer, and
    // a slide shows the squares passed too.)
    let texts = boards[0].status().texts;
    let mut shown = texts.iter();
    for m in &san(&games[0])[9..] {
        let m: String = m.chars().take(8).collect();
        assert!(
            shown.any(|t| *t == m),
            "{m} not shown on the clock: {texts:?}"
        );
    }
    d.terminate();
    for (b, id) in boards.into_iter().zip(ids) {
        stop_strict(b, id).await;
    }
    let expected: Vec<(&str, &eboardd::sim::pgn::ScriptGame)> =
        ids.iter().copied().zip(games.iter()).collect();
    assert_replay_exact(&caps, &expected);
    // Tags from the configuration, in the replay.
    let pgn = replay(&caps);
    assert!(pgn.contains("[Event \"E2E Open\"]"), "{pgn}");
    assert!(pgn.contains("[Round \"4.1\"]"));
    assert!(pgn.contains(&format!("[White \"{}\"]", games[0].tag("White").unwrap())));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unplug_and_replug_mid_game_loses_nothing() {
    let mut s = single("unplug", 3, 31000, SPEED, None);
    let id = s.id.clone();
    let id = id.as_str();
    let mut d = Daemon::start(std::slice::from_ref(&s.link), &s.caps, &[]);
    // Unplugged once with a move made while away (recovered from the dump), once with none.
    for (at, plies) in [(10, 1), (30, 0)] {
        d.wait_for("ply to be completed", WAIT, |ev| completed(ev, id, at))
            .await;
        s.board.send(Control::Unplug {
            plies,
            away: Duration::from_millis(400),
        });
        let before = {
            let ev = d.events.lock().unwrap();
            of(&ev, id, "board_connected").len()
        };
        d.wait_for("the board to come back", WAIT, |ev| {
            of(ev, id, "board_disconnected").len() >= before
                && of(ev, id, "board_connected").len() > before
        })
        .await;
    }
    assert!(s.board.wait_for(WAIT, |st| st.generation == 3).await);
    s.wait_done(&mut d, id).await;
    {
        let ev = d.events.lock().unwrap();
        let started = of(&ev, id, "game_started").len();
        assert_eq!(started, 1, "a reconnect is not a new game");
    }
    s.finish(d, id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_made_while_a_board_was_away_long_come_back_from_its_memory() {
    // Eight plies while the board is unplugged: more than any gap search could tell from the
    // position (it looks four plies deep). The board kept them in its memory; with
    // `memory_after_secs = 0` every reconnection with a game in progress reads it (0x49).
    let mut s = single("memory", 6, 33000, SPEED, None);
    let id = s.id.clone();
    let id = id.as_str();
    let config = s.write_config("[daemon]\nmemory_after_secs = 0\n");
    let mut d = s.start(&["--config", &config]);
    d.wait_for("ply 10 to be completed", WAIT, |ev| completed(ev, id, 10))
        .await;
    s.board.send(Control::Unplug {
        plies: 8,
        away: Duration::from_millis(400),
    });
    assert!(s.board.wait_for(WAIT, |st| st.generation == 2).await);
    s.wait_done(&mut d, id).await;
    {
        let ev = d.events.lock().unwrap();
        let recovered: Vec<u64> = of(&ev, id, "move_made")
            .iter()
            .filter(|e| e["recovered"] == true)
            .filter_map(|e| e["ply"].as_u64())
            .collect();
        assert!(
            recovered.len() >= 7 && recovered.iter().all(|p| (11..=19).contains(p)),
            "the plies made while away, from the memory: {recovered:?}"
        );
        let codes: Vec<&str> = of(&ev, id, "irregularity")
            .iter()
            .filter_map(|e| e["code"].as_str())
            .collect();
        assert!(!codes.contains(&"moves_missing"), "{codes:?}");
        assert_eq!(of(&ev, id, "game_started").len(), 1);
    }
    // The request is in the capture: the board's memory was read, not guessed from.
    let capture = std::fs::read_dir(&s.caps)
        .unwrap()
        .flat_map(|day| std::fs::read_dir(day.unwrap().path()).unwrap())
        .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
        .collect::<String>();
    assert!(
        capture.contains("\"tx\":\"49\""),
        "no SEND_EE_MOVES in the capture"
    );
    s.finish(d, id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_line_is_survived() {
    // Line noise between frames every 3 s of play, plus bursts of raw bytes now and then.
    let s = single("noise", 4, 32000, SPEED, Some(3_000_000));
    let id = s.id.clone();
    let id = id.as_str();
    let mut d = Daemon::start(std::slice::from_ref(&s.link), &s.caps, &[]);
    for at in [5, 15, 25] {
        d.wait_for("ply to be completed", WAIT, |ev| completed(ev, id, at))
            .await;
        s.board.send(Control::Noise(vec![
            0xFF, 0x00, 0x13, 0x7F, 0x80, 0x05, 0xC0, 0x8E, 0x00, 0x86, 0x00, 0x43, 0x01, 0x55,
            0xAA,
        ]));
    }
    s.wait_done(&mut d, id).await;
    assert!(s.board.status().plugged);
    let log = s.finish(d, id).await;
    // The noise was seen, and thrown away.
    let line = log
        .lines()
        .find(|l| l.contains("bytes dropped"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(!line.contains(" 0 bytes dropped"), "{line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_configuration_and_a_bad_file_is_refused() {
    let s = single("reload", 6, 34000, SPEED, None);
    let cfg = s.dir.join("eboardd.toml");
    let write = |white: &str| {
        std::fs::write(
            &cfg,
            format!(
                "[event]\nname = \"Reload\"\n[[board]]\nnumber = 9\nserial = \"34000\"\nwhite = \"{white}\"\n"
            ),
        )
        .unwrap()
    };
    write("Before, Name");
    let cfg_arg = cfg.to_string_lossy().to_string();
    let mut d = Daemon::start(
        std::slice::from_ref(&s.link),
        &s.caps,
        &["--config", &cfg_arg],
    );
    let id = "board-9";
    d.wait_for("ply 10", WAIT, |ev| completed(ev, id, 10)).await;
    std::fs::write(&cfg, "[[board]]\nnumber = \"nine\"\n").unwrap();
    d.signal(nix::sys::signal::Signal::SIGHUP);
    d.wait_for("ply 20", WAIT, |ev| completed(ev, id, 20)).await;
    write("After, Name");
    d.signal(nix::sys::signal::Signal::SIGHUP);
    s.wait_done(&mut d, id).await;
    let caps = s.caps.clone();
    let pgn = replay(&caps);
    let log = s.finish(d, id).await;
    assert!(log.contains("reload refused"), "{log}");
    assert!(log.contains("configuration reloaded"), "{log}");
    assert!(pgn.contains("[White \"After, Name\"]"), "{pgn}");
}
