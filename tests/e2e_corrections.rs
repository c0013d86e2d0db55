//! End to end: an arbiter corrects a game through the HTTP API of `eboardd run` (take back,
//! replace a move, set and change the result); refused corrections change nothing and write
//! nothing; `eboardd replay` of the capture gives exactly the corrected game the API shows.

mod support;

use std::path::Path;

use shakmaty::Position;
use shakmaty::san::SanPlus;
use support::daemon::*;
use support::http::{self, free_port};

const TOKEN: &str = "corrections-token";

/// A JSON request with the bearer `token` if any; returns (status code, body).
fn request(port: u16, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("Content-Type", "application/json")];
    headers.extend(auth.as_deref().map(|a| ("Authorization", a)));
    let r = http::request(http::local(port), method, path, &headers, body).expect("an HTTP answer");
    (r.status, r.body)
}

/// The `op` records of every capture under `dir`.
fn op_records(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(op_records(&p));
        } else if p.is_file() {
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            out.extend(
                text.lines()
                    .filter(|l| l.contains("\"op\""))
                    .map(str::to_string),
            );
        }
    }
    out
}

fn sans_of(game: &eboardd::sim::pgn::ScriptGame) -> Vec<String> {
    let mut pos = game.start.clone();
    game.moves
        .iter()
        .map(|m| SanPlus::from_move_and_play_unchecked(&mut pos, *m).to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrections_through_the_api_replay_exactly_from_the_capture() {
    let one = single("e2e-corrections", 2, 41077, 1000.0, None);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = one.start(&["--http", &addr, "--token", TOKEN]);
    one.wait_done(&mut d, &one.id).await;
    let path = format!("/api/v1/boards/{}/correct", one.id);
    let played = sans_of(&one.game);
    assert!(played.len() > 12, "a game long enough to correct");

    // Without the token: 401, nothing recorded.
    let ops_before = op_records(&one.caps);
    let (code, _) = request(
        port,
        "POST",
        &path,
        None,
        r#"{"action":"take_back","ply":4}"#,
    );
    assert_eq!(code, 401);

    // Impossible corrections: 400 with the reason; nothing recorded, nothing changed.
    let game_pgn = || {
        request(
            port,
            "GET",
            &format!("/api/v1/boards/{}/game.pgn", one.id),
            None,
            "",
        )
        .1
    };
    let pgn_before = game_pgn();
    for (body, reason) in [
        (r#"{"action":"take_back","ply":100000}"#, "out of range"),
        (
            r#"{"action":"replace_move","ply":1,"san":"Ke2"}"#,
            "not a legal move",
        ),
        (
            r#"{"action":"set_position","fen":"8/8/8 w - - 0 1"}"#,
            "not a legal position",
        ),
        (
            r#"{"action":"set_result","result":"3-0"}"#,
            "result must be",
        ),
        (r#"{"action":"take_back"}"#, "invalid JSON body"),
    ] {
        let (code, text) = request(port, "POST", &path, Some(TOKEN), body);
        assert_eq!(code, 400, "{body}: {text}");
        assert!(text.contains(reason), "{body}: {text}");
    }
    assert_eq!(
        op_records(&one.caps),
        ops_before,
        "refusals are not captured"
    );
    let pgn_after = game_pgn();
    assert_eq!(pgn_after, pgn_before, "refusals change nothing");
    let (code, _) = request(
        port,
        "POST",
        "/api/v1/boards/nosuchboard/correct",
        Some(TOKEN),
        r#"{"action":"take_back","ply":0}"#,
    );
    assert_eq!(code, 404);

    // Take back to ply 10, replace ply 10 by another legal move, set a result, change it.
    let k = 10usize;
    let mut pos = one.game.start.clone();
    for m in &one.game.moves[..k - 1] {
        pos.play_unchecked(*m);
    }
    let other = pos
        .legal_moves()
        .into_iter()
        .find(|m| *m != one.game.moves[k - 1])
        .expect("another legal move");
    let other_uci = shakmaty::uci::UciMove::from_move(other, shakmaty::CastlingMode::Standard);
    let other_san = SanPlus::from_move(pos.clone(), other).to_string();
    for body in [
        format!(r#"{{"action":"take_back","ply":{k}}}"#),
        format!(r#"{{"action":"replace_move","ply":{k},"uci":"{other_uci}"}}"#),
        r#"{"action":"set_result","result":"1/2-1/2"}"#.to_string(),
        r#"{"action":"set_result","result":"0-1"}"#.to_string(),
    ] {
        let (code, text) = request(port, "POST", &path, Some(TOKEN), &body);
        assert_eq!(code, 200, "{body}: {text}");
    }
    let ops = op_records(&one.caps);
    assert_eq!(
        ops.len(),
        ops_before.len() + 4,
        "one op record per correction"
    );
    assert!(ops.iter().any(|l| l.contains("\"take_back\"")));

    let mut want: Vec<String> = played[..k - 1].to_vec();
    want.push(other_san);
    let live = game_pgn();
    d.wait_for(
        "the correction events",
        std::time::Duration::from_secs(10),
        |ev| of(ev, &one.id, "correction").len() >= 3,
    )
    .await;
    {
        let ev = d.events.lock().unwrap();
        let corrections = of(&ev, &one.id, "correction");
        let take_back = corrections
            .iter()
            .find(|e| e["op"]["action"] == "take_back")
            .expect("a correction event for the take back");
        assert_eq!(take_back["op"]["ply"], k);
        assert_eq!(take_back["ply"], k);
        assert_eq!(take_back["result"], "*");
        let retracted = of(&ev, &one.id, "move_retracted").len();
        assert!(retracted >= played.len() - k, "{retracted} plies retracted");
    }
    d.terminate();
    stop_strict(one.board, &one.id).await;

    let live_games = games_by_board(&live);
    assert_eq!(live_games.len(), 1, "{live}");
    assert_eq!(sans_of(&live_games[0].1), want, "the API's PGN:\n{live}");
    assert_eq!(live_games[0].1.tag("Result"), Some("0-1"), "{live}");

    let replayed = replay(&one.caps);
    let games = games_by_board(&replayed);
    let ours: Vec<_> = games.iter().filter(|(b, _)| *b == one.id).collect();
    assert_eq!(ours.len(), 1, "{replayed}");
    assert_eq!(sans_of(&ours[0].1), want, "the replay:\n{replayed}");
    assert_eq!(ours[0].1.tag("Result"), Some("0-1"), "{replayed}");
    let _ = std::fs::remove_dir_all(&one.dir);
}
