//! End to end: board numbers as configured, everywhere, live and in replay, across a `kill -9`.
//!
//! Four emulated DGT boards: serial 10001 configured as board 7, 10002 as board 3 (numbers
//! out of order), 10003 and 10004 not configured. The unconfigured ones are brought in one after
//! the other (10004 first, then 10003 by a reloaded configuration), so that they get numbers 1
//! and 2 in the order they appeared, not in the order of their names. After `kill -9` the daemon
//! comes back with the ports listed the other way round: every board keeps its number (the
//! unconfigured ones from their captures), in the API, the relay files and `eboardd replay`.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use eboardd::sim::Style;
use eboardd::sim::emulator::runner::Control;
use serde_json::Value;
use support::daemon::*;
use support::http::{free_port, get, local};

const SPEED: f64 = 300.0;
const WAIT: Duration = Duration::from_secs(90);

/// The boards: serial, device id, the number it must have, the game it plays (by White).
struct Want {
    serial: &'static str,
    id: &'static str,
    number: u32,
}

const BOARDS: [Want; 4] = [
    Want {
        serial: "10001",
        id: "board-7",
        number: 7,
    },
    Want {
        serial: "10002",
        id: "board-3",
        number: 3,
    },
    Want {
        serial: "10003",
        id: "dgt-10003",
        number: 2,
    },
    Want {
        serial: "10004",
        id: "dgt-10004",
        number: 1,
    },
];

fn config(http: u16, relay: &Path, ports: &[&PathBuf]) -> String {
    let ports: Vec<String> = ports
        .iter()
        .map(|p| format!("{:?}", p.display().to_string()))
        .collect();
    format!(
        "[event]\nname = \"Numbers Open\"\nround = \"5\"\n\n\
         [daemon]\nports = [{}]\n\n\
         [outputs]\nhttp = \"127.0.0.1:{http}\"\nrelay_dir = {:?}\n\n\
         [[board]]\nnumber = 7\nserial = \"10001\"\n\n\
         [[board]]\nnumber = 3\nserial = \"10002\"\n",
        ports.join(", "),
        relay.display().to_string()
    )
}

fn connected(ev: &[Value], id: &str) -> bool {
    !of(ev, id, "board_connected").is_empty()
}

/// Board number by device id, as `GET /api/v1/boards` lists them (in board order).
fn api_numbers(http: u16) -> Vec<(String, u64)> {
    let r = get(local(http), "/api/v1/boards");
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    v["boards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["board"].as_str().unwrap().to_string(),
                b["number"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `(Board tag, Round tag)` of every game of a PGN text.
fn rounds(pgn: &str) -> Vec<(String, String)> {
    games_by_board(pgn)
        .into_iter()
        .map(|(b, g)| (b, g.tag("Round").unwrap_or("").to_string()))
        .collect()
}

/// Every game of `pgn` is on a board of [`BOARDS`] with `Round "5.N"` of its number, and
/// every board has a game; every move with a clock has its `[%emt]`.
fn assert_rounds(what: &str, pgn: &str) {
    support::pgn::assert_emt_on_every_clocked_move(what, pgn);
    let got = rounds(pgn);
    for w in &BOARDS {
        let mine: Vec<&String> = got
            .iter()
            .filter(|(b, _)| b == w.id)
            .map(|(_, r)| r)
            .collect();
        assert!(!mine.is_empty(), "{what}: no game of {}:\n{pgn}", w.id);
        let round = format!("5.{}", w.number);
        assert!(
            mine.iter().all(|r| **r == round),
            "{what}: {} has Round {mine:?}, not {round}",
            w.id
        );
    }
    assert!(
        got.iter().all(|(b, _)| BOARDS.iter().any(|w| w.id == b)),
        "{what}: a game of another board: {got:?}"
    );
}

fn assert_numbers(what: &str, http: u16) {
    let want: Vec<(String, u64)> = {
        let mut w: Vec<_> = BOARDS
            .iter()
            .map(|w| (w.id.to_string(), u64::from(w.number)))
            .collect();
        w.sort_by_key(|(_, n)| *n);
        w
    };
    assert_eq!(
        api_numbers(http),
        want,
        "{what}: board numbers, in board order"
    );
}

/// The relay files: `games.pgn`, and each board's game file under its number.
fn assert_relay(what: &str, relay: &Path) {
    let all = std::fs::read_to_string(relay.join("games.pgn")).unwrap();
    assert_rounds(&format!("{what}: relay games.pgn"), &all);
    for w in &BOARDS {
        let file = relay.join(format!("round-5/game-{}.pgn", w.number));
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            text.contains(&format!("[Board \"{}\"]", w.id))
                && text.contains(&format!("[Round \"5.{}\"]", w.number)),
            "{what}: {} holds another board's game:\n{text}",
            file.display()
        );
    }
    // LiveChessCloud numbers games by their place: board 7 is the 7th pairing.
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(relay.join("round-5/index.json")).unwrap())
            .unwrap();
    assert_eq!(
        index["pairings"].as_array().map(Vec::len),
        Some(7),
        "{index}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_numbers_everywhere_and_given_numbers_kept_across_kill_9() {
    let dir = scratch("numbers");
    let caps = dir.join("captures");
    let relay = dir.join("relay");
    let games = demo_games();
    let links: Vec<PathBuf> = BOARDS
        .iter()
        .map(|w| dir.join(format!("board-{}", w.serial)))
        .collect();
    let boards: Vec<_> = BOARDS
        .iter()
        .zip(&links)
        .enumerate()
        .map(|(i, (w, link))| {
            board(
                &games[i..=i],
                Style::Human,
                i as u64,
                w.serial,
                link,
                SPEED,
                None,
            )
        })
        .collect();
    let http = free_port();
    let cfg_path = dir.join("eboardd.toml");
    let cfg = cfg_path.to_string_lossy().to_string();
    // 10004 first, with the configured boards...
    std::fs::write(
        &cfg_path,
        config(http, &relay, &[&links[3], &links[0], &links[1]]),
    )
    .unwrap();
    let mut d = Daemon::start(&[], &caps, &["--config", &cfg]);
    d.wait_for("10004 and the configured boards", WAIT, |ev| {
        ["dgt-10004", "board-7", "board-3"]
            .iter()
            .all(|id| connected(ev, id))
    })
    .await;
    // ... then 10003, by a reloaded configuration.
    std::fs::write(
        &cfg_path,
        config(http, &relay, &[&links[3], &links[0], &links[1], &links[2]]),
    )
    .unwrap();
    d.signal(nix::sys::signal::Signal::SIGHUP);
    d.wait_for("four plies on every board", WAIT, |ev| {
        BOARDS.iter().all(|w| completed(ev, w.id, 4))
    })
    .await;
    assert_numbers("first run", http);
    assert_rounds(
        "first run: API",
        &get(local(http), "/api/v1/games.pgn").body,
    );

    // Down: the players wait. Back with the ports the other way round.
    for b in &boards {
        b.send(Control::Hold { plies: 0 });
    }
    let before: Vec<usize> = {
        let ev = d.events.lock().unwrap();
        BOARDS.iter().map(|w| completed_plies(&ev, w.id)).collect()
    };
    d.kill9();
    let reversed: Vec<&PathBuf> = links.iter().rev().collect();
    std::fs::write(&cfg_path, config(http, &relay, &reversed)).unwrap();
    let mut d = Daemon::start(&[], &caps, &["--config", &cfg]);
    d.wait_for("three more plies on every board", WAIT, |ev| {
        BOARDS
            .iter()
            .zip(&before)
            .all(|(w, n)| completed_plies(ev, w.id) >= n + 3)
    })
    .await;
    // The boards were rebuilt from their captures: health says ready (200), not recovering.
    let health = get(local(http), "/api/v1/health");
    assert_eq!(health.status, 200, "{}", health.body);
    assert!(
        health.body.contains("\"state\":\"ready\""),
        "{}",
        health.body
    );
    assert_numbers("after kill -9", http);
    assert_rounds(
        "after kill -9: API",
        &get(local(http), "/api/v1/games.pgn").body,
    );
    assert_rounds(
        "after kill -9: LiveChess-style round",
        &get(local(http), "/api/v1/rounds/5/games.pgn").body,
    );
    d.terminate();
    assert_relay("after kill -9", &relay);
    for (b, w) in boards.into_iter().zip(&BOARDS) {
        stop_strict(b, w.id).await;
    }
    assert_rounds("eboardd replay", &replay(&caps));
    let _ = std::fs::remove_dir_all(&dir);
}
