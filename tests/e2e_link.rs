//! End to end over pseudo-terminals: `eboardd run` against emulated boards whose links
//! misbehave the way real ones do.
//!
//! - A board that resets with its port open comes back in IDLE (answers requests, sends
//!   nothing unasked): the daemon notices, says so in its log, and puts it back into update
//!   mode; the move made meanwhile is recovered from the dump, the game stays exact.
//! - Field updates lost on the line are repaired by board dumps: the game stays exact and no
//!   irregularity is raised.
//! - The clock acks a command 1–2 s (here up to 2.2 s) after it arrives and loses a command sent
//!   before that ack: the daemon's queue never sends into a busy clock, and texts still reach
//!   it.
//! - An old Bluetooth board (12-byte serial number frame, an `rfcomm` port) is served under
//!   its serial number and its battery is asked for and reported (in its status too).

mod support;

use std::path::Path;
use std::time::Duration;

use eboardd::sim::emulator::EmulatorConfig;
use eboardd::sim::emulator::runner::Control;
use eboardd::sim::pgn::{ScriptGame, parse_games};
use eboardd::sim::{SimConfig, Style};
use support::daemon::*;

const WAIT: Duration = Duration::from_secs(90);

fn config(dir: &Path, text: &str) -> String {
    let p = dir.join("eboardd.toml");
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().to_string()
}

fn short_game() -> ScriptGame {
    // No castling: the handling styles cannot make a rook-first castling irregularity.
    parse_games("1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. c3 Nf6 5. d3 d6 6. Nbd2 a6 7. a4 h6 8. h3 Ba7 *")
        .remove(0)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_board_reset_with_its_port_open_is_put_back_into_update_mode() {
    let s = single("reset", 2, 37000, 1000.0, None);
    let id = s.id.clone();
    let id = id.as_str();
    let cfg = config(&s.dir, "[daemon]\nkeepalive_secs = 1\n");
    let mut d = Daemon::start(std::slice::from_ref(&s.link), &s.caps, &["--config", &cfg]);
    d.wait_for("ply 10 to be completed", WAIT, |ev| completed(ev, id, 10))
        .await;
    let mut board = s.board.status.clone();
    let modes = board.borrow().modes_set;
    // The board resets; the players make one more move, unreported, and wait.
    s.board.send(Control::Reset { plies: 1 });
    assert!(
        tokio::time::timeout(WAIT, board.wait_for(|st| st.modes_set > modes))
            .await
            .is_ok(),
        "the update mode was never set again"
    );
    s.wait_done(&mut d, id).await;
    {
        let ev = d.events.lock().unwrap();
        assert!(
            of(&ev, id, "board_disconnected").is_empty(),
            "a reset board is alive: the link must not be dropped"
        );
    }
    let log = s.finish(d, id).await;
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("reset to IDLE"))
        .collect();
    assert_eq!(lines.len(), 1, "log:\n{log}");
    // The dump shows the move made while the board was in IDLE.
    assert!(
        log.contains("differs from the field updates"),
        "log:\n{log}"
    );
    for l in log.lines().filter(|l| l.contains("WARN")) {
        eprintln!("{l}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_field_updates_are_repaired_by_board_dumps_without_irregularity() {
    let dir = scratch("lostupd");
    let game = short_game();
    let link = dir.join("board");
    let mut sim = SimConfig::new(Style::Blitz, 5);
    sim.glitches = false;
    let em = EmulatorConfig {
        serial: "38000".into(),
        lose_field_updates: vec![7, 19, 30],
        ..Default::default()
    };
    let board = board_with(std::slice::from_ref(&game), sim, em, &link, 5.0);
    let caps = dir.join("captures");
    let id = "dgt-38000";
    let mut d = Daemon::start(std::slice::from_ref(&link), &caps, &[]);
    let n = game.moves.len();
    d.wait_for("the game to be completed", WAIT, |ev| completed(ev, id, n))
        .await;
    {
        let ev = d.events.lock().unwrap();
        assert_eq!(moves_from_events(&ev, id), uci(&game), "event stream");
        let irr: Vec<_> = of(&ev, id, "irregularity");
        assert!(irr.is_empty(), "{irr:?}");
    }
    let log = d.log.clone();
    d.terminate();
    stop_strict(board, id).await;
    assert_replay_exact(&caps, &[(id, &game)]);
    let log = std::fs::read_to_string(log).unwrap();
    let repaired = log
        .lines()
        .filter(|l| l.contains("differs from the field updates"))
        .count();
    assert!(repaired >= 1, "no dump found the lost updates; log:\n{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clock_commands_go_one_at_a_time_and_are_not_lost() {
    let dir = scratch("clockack");
    let game = demo_games().swap_remove(1);
    let link = dir.join("board");
    let em = EmulatorConfig {
        serial: "39000".into(),
        // Real DGT 3000s usually ack within 1–2 s; some take a little longer.
        ack_delay: (1_800_000, 2_200_000),
        ..Default::default()
    };
    let mut board = board_with(
        std::slice::from_ref(&game),
        SimConfig::human(2),
        em,
        &link,
        200.0,
    );
    let caps = dir.join("captures");
    let cfg = config(&dir, "[clock]\nshow_moves = true\ntext_secs = 1\n");
    let id = "dgt-39000";
    let mut d = Daemon::start(std::slice::from_ref(&link), &caps, &["--config", &cfg]);
    let n = game.moves.len();
    d.wait_for("the game to be completed", WAIT, |ev| completed(ev, id, n))
        .await;
    // Enough commands for the test to mean something.
    assert!(
        board
            .wait_for(WAIT, |s| s.clock_commands.accepted >= 10)
            .await,
        "{:?}",
        board.status().clock_commands
    );
    let st = board.status();
    assert_eq!(st.clock_commands.lost, 0, "{:?}", st.clock_commands);
    // The texts shown are moves of the game, in order.
    let sans = san(&game);
    let mut rest = sans.iter();
    for t in st.texts.iter().filter(|t| !t.is_empty()) {
        assert!(
            rest.any(|s| s.starts_with(t.as_str())),
            "{t} out of order: {:?}",
            st.texts
        );
    }
    d.terminate();
    stop_strict(board, id).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_old_bluetooth_board_is_served_and_its_battery_reported() {
    let dir = scratch("oldbt");
    let game = short_game();
    // An RFCOMM port name: a Bluetooth link.
    let link = dir.join("rfcomm7");
    let em = EmulatorConfig {
        serial: "40000".into(),
        old_serial: true,
        battery: Some(77),
        ..Default::default()
    };
    let board = board_with(
        std::slice::from_ref(&game),
        SimConfig::clean(3),
        em,
        &link,
        100.0,
    );
    let caps = dir.join("captures");
    let id = "dgt-40000";
    let port = support::http::free_port();
    let http = format!("127.0.0.1:{port}");
    let mut d = Daemon::start(std::slice::from_ref(&link), &caps, &["--http", &http]);
    let n = game.moves.len();
    d.wait_for("the game to be completed", WAIT, |ev| completed(ev, id, n))
        .await;
    {
        let ev = d.events.lock().unwrap();
        let conn = of(&ev, id, "board_connected");
        assert!(!conn.is_empty());
        assert_eq!(conn[0]["serial"], "40000");
    }
    // The battery reaches the board's status (the arbiter page, the hall check).
    let boards = support::http::json_when_up(port, "/api/v1/boards").await;
    assert_eq!(
        boards["boards"][0]["status"]["battery"], "77%",
        "{boards:#}"
    );
    let log = d.log.clone();
    d.terminate();
    stop_strict(board, id).await;
    assert_replay_exact(&caps, &[(id, &game)]);
    let log = std::fs::read_to_string(log).unwrap();
    assert!(log.contains("bluetooth link"), "log:\n{log}");
    assert!(log.contains("battery 77%"), "log:\n{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
