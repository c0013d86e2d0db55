//! End to end: `kill -9` of the daemon in the middle of a game (and a capture line cut off as
//! by a power cut), then a restart. No completed move may be lost: the restarted daemon
//! rebuilds the game from its capture, appends to the same file, recovers the move made while it
//! was down from the board dump, and the replay of the capture directory gives the whole game.

mod support;

use std::io::Write;
use std::time::Duration;

use eboardd::sim::emulator::runner::Control;
use support::daemon::*;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(60);

/// Board `id`'s capture file under the capture directory `caps`.
fn capture_of(caps: &std::path::Path, id: &str) -> std::path::PathBuf {
    std::fs::read_dir(caps)
        .unwrap()
        .flat_map(|day| std::fs::read_dir(day.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(&format!("{id}.jsonl")))
        .expect("the board's capture")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_and_restart_loses_no_completed_move() {
    let one = single("kill9", 5, 33000, SPEED, None);
    let (g, id) = (&one.game, one.id.as_str());
    let mut d = one.start(&[]);
    d.wait_for("ply 16 to be completed", WAIT, |ev| completed(ev, id, 16))
        .await;
    // The players go on for one more move while the daemon is down.
    one.board.send(Control::Hold { plies: 1 });
    let seen = {
        let ev = d.events.lock().unwrap();
        completed_plies(&ev, id)
    };
    d.kill9();
    // A power cut in the middle of writing a record.
    let file = capture_of(&one.caps, id);
    let lines_before = std::fs::read_to_string(&file).unwrap().lines().count();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(b"{\"t\":99.5,\"dev\":\"dgt-33000\",\"rx\":\"8e00")
        .unwrap();

    let mut d = one.start(&[]);
    d.wait_for("the game to be completed", WAIT, |ev| {
        completed(ev, id, g.moves.len())
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        assert!(
            of(&ev, id, "game_started").is_empty(),
            "a restart is not a new game"
        );
        // The moves of the second run continue the first.
        let first_made = of(&ev, id, "move_made")[0]["ply"].as_u64().unwrap() as usize;
        assert!(first_made > seen, "ply {first_made} after {seen}");
    }
    d.terminate();
    stop_strict(one.board, id).await;
    // One file, appended to, its cut-off line gone.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.lines().count() > lines_before);
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("{\"format\""))
            .count(),
        1
    );
    assert!(!text.contains("\"t\":99.5"));
    let cap = eboardd::capture::read_capture(&file).unwrap();
    assert!(cap.warnings.is_empty(), "{:?}", cap.warnings);
    assert_replay_exact(&one.caps, &[(id, g)]);
    let _ = std::fs::remove_dir_all(&one.dir);
}

/// The events of `board` after its `n`th `game_started` (from 1).
fn after_start<'a>(
    events: &'a [serde_json::Value],
    board: &str,
    n: usize,
) -> &'a [serde_json::Value] {
    let at = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e["board"] == board && e["kind"] == "game_started")
        .nth(n - 1)
        .map_or(events.len(), |(i, _)| i);
    &events[at..]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_goes_on_from_the_resume_point_and_reads_the_earlier_games_back() {
    let dir = scratch("kill9-resume");
    let games: Vec<_> = demo_games().into_iter().skip(2).take(3).collect();
    let link = dir.join("board");
    let board = board(
        &games,
        eboardd::sim::Style::Human,
        11,
        "33100",
        &link,
        SPEED,
        None,
    );
    let (id, caps) = ("dgt-33100", dir.join("captures"));
    let port = support::http::free_port();
    let http = format!("127.0.0.1:{port}");
    let mut d = Daemon::start(std::slice::from_ref(&link), &caps, &["--http", &http]);
    d.wait_for("ply 6 of the third game", WAIT, |ev| {
        completed(after_start(ev, id, 3), id, 6)
    })
    .await;
    board.send(Control::Hold { plies: 1 });
    d.kill9();
    let capture = capture_of(&caps, id);
    let point = std::fs::read_to_string(format!("{}.resume", capture.display()))
        .expect("a resume point next to the capture");
    let point: serde_json::Value = serde_json::from_str(&point).unwrap();
    // Taken when the third game started: the board keeps its last two games.
    assert_eq!(point["engine"]["games"][0]["number"], 2, "{point}");

    let mut d = Daemon::start(std::slice::from_ref(&link), &caps, &["--http", &http]);
    let third = &games[2];
    d.wait_for("the third game to be completed", WAIT, |ev| {
        completed(ev, id, third.moves.len())
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        assert!(
            of(&ev, id, "game_started").is_empty(),
            "a restart is not a new game"
        );
    }
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert!(log.contains("went on from its resume point"), "{log}");
    // The earlier games come back from the capture in the background, then the API has all.
    let mut all = String::new();
    for _ in 0..600 {
        let health = support::http::get(&http, "/api/v1/health");
        all = support::http::get(&http, "/api/v1/games.pgn?all=1").body;
        if !health.body.contains("earlier_games") && all.matches("[Event ").count() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let by_board = games_by_board(&all);
    let sans: Vec<Vec<String>> = by_board.iter().map(|(_, g)| san(g)).collect();
    let want: Vec<Vec<String>> = games.iter().map(san).collect();
    assert_eq!(sans, want, "games.pgn?all=1:\n{all}");
    d.terminate();
    stop_strict(board, id).await;
    let replayed: Vec<Vec<String>> = games_by_board(&replay(&caps))
        .iter()
        .map(|(_, g)| san(g))
        .collect();
    assert_eq!(replayed, want, "the replay of the captures");
    let _ = std::fs::remove_dir_all(&dir);
}
