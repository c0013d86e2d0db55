//! End to end: rounds are facts with a history. `eboardd run --config FILE` serves an emulated
//! board whose round-1 game is still running when round 2 is loaded (`eboardd round load`, with
//! a pairing for a board that is not connected). The running game keeps round 1 and round 1's
//! players in every output (API, rounds, relay tree, LiveChess), after SIGHUP, after `kill -9`
//! and a restart (with a damaged line in the middle of its capture), and in `eboardd replay`;
//! round 2's pairing without a board is listed as that board, waiting.

mod support;

use std::time::{Duration, Instant};

use eboardd::sim::Style;
use serde_json::Value;
use support::daemon::*;
use support::http::{self, free_port};

/// Plies the board plays before its players stop (the game stays in progress).
const PLIES: usize = 14;

use support::http::{get_local as get, json_when_up as json};

/// GET until `pred` holds on the JSON body (the daemon applies a load or a reload soon after
/// it answers); panics with the last body after 20 s.
async fn json_until(port: u16, path: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = json(port, path).await;
        if pred(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "{path} never as expected: {v:#}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The board numbered `n` in a `boards` list.
fn numbered(boards: &Value, n: u64) -> &Value {
    boards["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["number"] == n)
        .unwrap_or_else(|| panic!("no board {n}: {boards:#}"))
}

/// Every output shows the running round-1 game with round 1's players, never under round 2;
/// round 2 lists its pairings, board 3 (no board connected) waiting. `when` names the stage.
async fn check_outputs(http: u16, livechess: u16, when: &str) {
    let boards = json(http, "/api/v1/boards").await;
    assert_eq!(boards["round"], 2, "{when}: the current round");
    let b1 = numbered(&boards, 1);
    assert_eq!(b1["white"]["name"], "Alpha, Ann", "{when}: {b1:#}");
    assert_eq!(b1["black"]["name"], "Beta, Bob", "{when}: {b1:#}");
    assert_eq!(b1["round"], 1, "{when}: the game's round");
    assert_eq!(
        b1["game"]["moves"].as_array().unwrap().len(),
        PLIES,
        "{when}"
    );
    let b3 = numbered(&boards, 3);
    assert_eq!(b3["white"]["name"], "Epsilon, Eve", "{when}: {b3:#}");
    assert_eq!(b3["waiting"], true, "{when}: {b3:#}");
    assert!(b3["game"].is_null(), "{when}");

    let r2 = json(http, "/api/v1/rounds/2").await;
    let r2b1 = numbered(&r2, 1);
    assert_eq!(r2b1["white"]["name"], "Gamma, Gus", "{when}");
    assert!(
        r2b1["game"].is_null(),
        "{when}: round 1's game shown in round 2: {r2b1:#}"
    );
    assert_eq!(numbered(&r2, 3)["white"]["name"], "Epsilon, Eve", "{when}");
    let r1 = json(http, "/api/v1/rounds/1").await;
    let r1b1 = numbered(&r1, 1);
    assert_eq!(r1b1["white"]["name"], "Alpha, Ann", "{when}");
    assert_eq!(
        r1b1["game"]["moves"].as_array().unwrap().len(),
        PLIES,
        "{when}"
    );

    // The relay tree: round 2's game 1 is empty, round 1's has the game.
    let idx2 = json(http, "/relay/round-2/index.json").await;
    assert_eq!(idx2["pairings"][0]["white"]["lname"], "Gamma", "{when}");
    assert_eq!(idx2["pairings"][0]["live"], false, "{when}: {idx2:#}");
    assert_eq!(idx2["pairings"][2]["white"]["lname"], "Epsilon", "{when}");
    let g2 = json(http, "/relay/round-2/game-1.json").await;
    assert_eq!(g2["moves"].as_array().unwrap().len(), 0, "{when}: {g2:#}");
    let idx1 = json(http, "/relay/round-1/index.json").await;
    assert_eq!(idx1["pairings"][0]["white"]["lname"], "Alpha", "{when}");
    assert_eq!(idx1["pairings"][0]["live"], true, "{when}: {idx1:#}");
    let g1 = json(http, "/relay/round-1/game-1.json").await;
    assert_eq!(g1["moves"].as_array().unwrap().len(), PLIES, "{when}");
    let (_, pgn2) = get(http, "/api/v1/rounds/2/games.pgn").unwrap();
    assert!(!pgn2.contains("Alpha"), "{when}: {pgn2}");
    let (_, pgn1) = get(http, "/api/v1/rounds/1/games.pgn").unwrap();
    assert!(
        pgn1.contains("[Round \"1.1\"]") && pgn1.contains("[White \"Alpha, Ann\"]"),
        "{when}: {pgn1}"
    );
    assert!(
        !pgn1.contains("[Date \"????"),
        "{when}: the game's date: {pgn1}"
    );

    // LiveChess: round 2's pairing of board 1 is Gamma's, with no live game.
    let ts = json(livechess, "/api/v1.0/tournaments").await;
    let id = ts[0]["uuid"].as_str().unwrap().to_string();
    let lc2 = json(livechess, &format!("/api/v1.0/round/{id}/2")).await;
    assert_eq!(lc2["pairings"][0]["white"]["lname"], "Gamma", "{when}");
    assert_eq!(lc2["pairings"][0]["live"], false, "{when}: {lc2:#}");
    let lc1 = json(livechess, &format!("/api/v1.0/round/{id}/1")).await;
    assert_eq!(lc1["pairings"][0]["white"]["lname"], "Alpha", "{when}");
}

/// The capture file of board `id` under the capture directory.
fn capture_of(caps: &std::path::Path, id: &str) -> std::path::PathBuf {
    std::fs::read_dir(caps)
        .unwrap()
        .flatten()
        .filter(|d| d.path().is_dir())
        .map(|d| d.path().join(format!("{id}.jsonl")))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no capture of {id} in {}", caps.display()))
}

/// A board playing a real game cut after [`PLIES`] plies with no result (it stays in
/// progress), in a fresh scratch directory.
struct Unfinished {
    dir: std::path::PathBuf,
    caps: std::path::PathBuf,
    link: std::path::PathBuf,
    game: eboardd::sim::pgn::ScriptGame,
    board: eboardd::sim::emulator::runner::Handle,
}

fn unfinished(name: &str, index: usize, serial: &str) -> Unfinished {
    let dir = scratch(name);
    let link = dir.join("board");
    let mut game = demo_games().swap_remove(index);
    game.moves.truncate(PLIES);
    game.clocks.truncate(PLIES);
    for (k, v) in &mut game.tags {
        if k == "Result" {
            *v = "*".into();
        }
    }
    let board = board(
        std::slice::from_ref(&game),
        Style::Human,
        index as u64,
        serial,
        &link,
        200.0,
        None,
    );
    Unfinished {
        caps: dir.join("captures"),
        dir,
        link,
        game,
        board,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_game_keeps_its_round_through_a_load_a_reload_a_crash_and_replay() {
    let Unfinished {
        dir,
        caps,
        link,
        game,
        board,
    } = unfinished("e2e-round-history", 2, "41011");
    let (http, livechess) = (free_port(), free_port());
    let token = dir.join("token");
    std::fs::write(&token, "e2e-history-token\n").unwrap();
    let config = dir.join("eboardd.toml");
    std::fs::write(
        &config,
        format!(
            "[event]\nname = \"History Open\"\nsite = \"Hall A\"\nround = \"1\"\n\n\
             [[board]]\nnumber = 1\nserial = \"41011\"\nwhite = \"Alpha, Ann\"\nblack = \"Beta, Bob\"\n\n\
             [outputs]\nhttp = \"127.0.0.1:{http}\"\nlivechess = \"127.0.0.1:{livechess}\"\n\
             token_file = \"{}\"\n",
            token.display()
        ),
    )
    .unwrap();
    let cfg = config.to_string_lossy().to_string();
    let start = || Daemon::start(std::slice::from_ref(&link), &caps, &["--config", &cfg]);
    let mut d = start();
    d.wait_for("the round-1 game's plies", Duration::from_secs(60), |ev| {
        made(ev, "board-1", PLIES)
    })
    .await;

    // Round 2 while round 1's game runs, with a pairing for board 3, which has no board.
    let csv = dir.join("round2.csv");
    std::fs::write(
        &csv,
        "board,white,black\n1,\"Gamma, Gus\",\"Delta, Dan\"\n3,\"Epsilon, Eve\",\"Zeta, Zed\"\n",
    )
    .unwrap();
    round_load(&csv, 2, &cfg).await;
    json_until(http, "/api/v1/boards", |v| v["round"] == 2).await;
    check_outputs(http, livechess, "after the load").await;

    // SIGHUP with the file unchanged: the loaded round stays.
    d.signal(nix::sys::signal::Signal::SIGHUP);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&d.log)
        .unwrap_or_default()
        .contains("configuration reloaded")
    {
        assert!(Instant::now() < deadline, "no reload in the log");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check_outputs(http, livechess, "after SIGHUP").await;

    // kill -9, a damaged line in the middle of the board's capture, and a restart: every move
    // comes back, the game still in round 1.
    d.kill9();
    let path = capture_of(&caps, "board-1");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let middle = lines.len() / 2;
    let mut damaged = lines[..middle].join("\n");
    damaged.push_str("\n{\"t\":12.5,\"dev\":\"board-1\",\"rx\":\"8e00\x00garbage\n");
    damaged.push_str(&lines[middle..].join("\n"));
    damaged.push('\n');
    std::fs::write(&path, damaged).unwrap();
    let d = start();
    let boards = json_until(http, "/api/v1/boards", |v| {
        numbered(v, 1)["game"]["moves"]
            .as_array()
            .is_some_and(|m| m.len() == PLIES)
    })
    .await;
    assert_eq!(boards["round"], 2);
    check_outputs(http, livechess, "after kill -9 and a restart").await;
    let log = std::fs::read_to_string(&d.log).unwrap_or_default();
    assert!(
        log.contains("line skipped"),
        "the damaged line is named in the log:\n{log}"
    );
    assert!(
        std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .flatten()
            .all(|f| !f.file_name().to_string_lossy().contains("corrupt")),
        "the capture was moved aside"
    );

    // The replay of the captures: the game in round 1 with round 1's players, every move.
    d.terminate();
    stop_strict(board, "board-1").await;
    let pgn = replay(&caps);
    assert!(
        pgn.contains("[Round \"1.1\"]")
            && pgn.contains("[White \"Alpha, Ann\"]")
            && pgn.contains("[Site \"Hall A\"]")
            && !pgn.contains("Gamma"),
        "replay:\n{pgn}"
    );
    let games = games_by_board(&pgn);
    assert_eq!(games.len(), 1, "{pgn}");
    assert_eq!(san(&games[0].1), san(&game), "the replayed moves");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn players_set_by_the_arbiter_are_captured_first_and_survive_a_crash_and_replay() {
    let Unfinished {
        dir,
        caps,
        link,
        board,
        ..
    } = unfinished("e2e-players-captured", 1, "41012");
    let http = free_port();
    let token = dir.join("token");
    std::fs::write(&token, "e2e-players-token\n").unwrap();
    let config = dir.join("eboardd.toml");
    std::fs::write(
        &config,
        format!(
            "[event]\nname = \"Players Open\"\nround = \"1\"\n\n\
             [[board]]\nnumber = 1\nserial = \"41012\"\nwhite = \"Alpha, Ann\"\nblack = \"Beta, Bob\"\n\n\
             [outputs]\nhttp = \"127.0.0.1:{http}\"\ntoken_file = \"{}\"\n",
            token.display()
        ),
    )
    .unwrap();
    let cfg = config.to_string_lossy().to_string();
    let start = || Daemon::start(std::slice::from_ref(&link), &caps, &["--config", &cfg]);
    let mut d = start();
    d.wait_for("the game's plies", Duration::from_secs(60), |ev| {
        made(ev, "board-1", PLIES)
    })
    .await;

    // The arbiter corrects the players of the game in progress.
    let answer = http::request(
        http::local(http),
        "POST",
        "/api/v1/boards/board-1/players",
        &[("Authorization", "Bearer e2e-players-token")],
        r#"{"white":{"name":"Omega, Oz"},"black":{"name":"Psi, Pia"}}"#,
    )
    .expect("an answer");
    assert_eq!(answer.status, 200, "{}", answer.body);
    // Captured before the answer: the record is in the file already.
    let captured = std::fs::read_to_string(capture_of(&caps, "board-1")).unwrap();
    let last_tags = captured
        .lines()
        .rfind(|l| l.contains("\"set_tags\""))
        .unwrap_or_default();
    assert!(
        last_tags.contains("Omega, Oz") && last_tags.contains("Psi, Pia"),
        "the players are captured: {last_tags}"
    );

    // kill -9 and a restart: the players stay (round.json and the capture).
    d.kill9();
    let d = start();
    let boards = json_until(http, "/api/v1/boards", |v| {
        numbered(v, 1)["game"]["moves"]
            .as_array()
            .is_some_and(|m| m.len() == PLIES)
    })
    .await;
    assert_eq!(numbered(&boards, 1)["white"]["name"], "Omega, Oz");
    assert_eq!(numbered(&boards, 1)["black"]["name"], "Psi, Pia");
    d.terminate();
    stop_strict(board, "board-1").await;
    let pgn = replay(&caps);
    assert!(
        pgn.contains("[White \"Omega, Oz\"]") && pgn.contains("[Black \"Psi, Pia\"]"),
        "replay names the corrected players:\n{pgn}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
