//! End to end: a team round. `eboardd run --config FILE` serves eight emulated DGT boards
//! (boards 1–8); round 1 of a TRF-26 with four teams (`310` records) is loaded with `eboardd
//! round load`: two matches of four boards, SK Aachen–SF Berlin on boards 1–4 and SV
//! Chemnitz–USV Dresden on boards 5–8, colours alternating by board as the file pairs them.
//! Each board plays a real game to its real result (the players tell it on the board).
//!
//! - Every PGN eboardd writes — the API's `games.pgn` (all, the round's, each board's), the
//!   relay files and the lichess push (a local stand-in) — tags each game's `WhiteTeam` and
//!   `BlackTeam`; the relay JSON names each player's team; and so does `eboardd replay` of the
//!   captures the daemon wrote.
//! - `GET /api/v1/rounds/1/matches`: once the games ended, the provisional board points and
//!   match points (nothing confirmed); then after each result the arbiter confirms, the
//!   confirmed score — worked out by hand below from the games' results and the colours.
//! - `GET /overlay/match` is served and headless Chromium draws the matches' scores from it
//!   (without Chromium the test fails with the reason); the public view of the matches is the
//!   same as the arbiter's.

mod support;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::routing::post;
use serde_json::{Value, json};
use support::daemon::*;
use support::http::{self, free_port, get, local};
use support::pgn::parse_pgn;

const SPEED: f64 = 300.0;
const WAIT: Duration = Duration::from_secs(120);
const TOKEN: &str = "e2e-teams-token";
const LICHESS_TOKEN: &str = "lip_TeamsStandIn0123456789";

/// The TRF-26 of the event, round 1 paired (written for these tests from TRF-26's team section).
const TRF: &[u8] = include_bytes!("data/trf/teams-26.trf");

/// One board of the round: White's and Black's teams as the TRF pairs them, the demo game it
/// plays and that game's result (its `Result` tag).
struct Board {
    white_team: &'static str,
    black_team: &'static str,
    game: usize,
    result: &'static str,
}

const A: &str = "SK Aachen";
const B: &str = "SF Berlin";
const C: &str = "SV Chemnitz";
const D: &str = "USV Dresden";

/// Boards 1–8. Match 1 (Aachen, Berlin): board 1 Berlin's Black wins, board 2 Berlin's White
/// wins, board 3 a draw, board 4 Aachen's Black wins: Aachen 1½, Berlin 2½. Match 2 (Chemnitz,
/// Dresden): White wins on every board, two for each team: 2–2.
const BOARDS: [Board; 8] = [
    Board {
        white_team: A,
        black_team: B,
        game: 6,
        result: "0-1",
    },
    Board {
        white_team: B,
        black_team: A,
        game: 47,
        result: "1-0",
    },
    Board {
        white_team: A,
        black_team: B,
        game: 42,
        result: "1/2-1/2",
    },
    Board {
        white_team: B,
        black_team: A,
        game: 0,
        result: "0-1",
    },
    Board {
        white_team: C,
        black_team: D,
        game: 7,
        result: "1-0",
    },
    Board {
        white_team: D,
        black_team: C,
        game: 50,
        result: "1-0",
    },
    Board {
        white_team: C,
        black_team: D,
        game: 32,
        result: "1-0",
    },
    Board {
        white_team: D,
        black_team: C,
        game: 45,
        result: "1-0",
    },
];

/// Board points (half points) each board gives the match's first team and its second, by hand
/// from [`BOARDS`]: the first team of match 1 is Aachen, of match 2 Chemnitz (White on the
/// match's first board).
const HALVES: [[u32; 2]; 8] = [
    [0, 2],
    [0, 2],
    [1, 1],
    [2, 0],
    [2, 0],
    [0, 2],
    [2, 0],
    [0, 2],
];

fn id(n: usize) -> String {
    format!("board-{n}")
}

/// What the lichess stand-in received: every body pushed.
#[derive(Clone, Default)]
struct Pushed(Arc<Mutex<Vec<String>>>);

/// lichess's push endpoint as its API documentation says: 200 with a `games` entry per game.
async fn push(State(p): State<Pushed>, body: String) -> axum::Json<Value> {
    let games: Vec<Value> = parse_pgn(body.as_bytes())
        .unwrap_or_default()
        .into_iter()
        .map(|g| json!({"tags": g.tags, "moves": g.moves.len()}))
        .collect();
    p.0.lock().unwrap().push(body);
    axum::Json(json!({ "games": games }))
}

async fn stand_in() -> (u16, Pushed) {
    let pushed = Pushed::default();
    let app = Router::new()
        .route("/api/broadcast/round/{id}/push", post(push))
        .with_state(pushed.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, pushed)
}

fn config(dir: &Path, http: u16, lichess: u16, relay: &Path) -> String {
    let api_token = dir.join("api.token");
    std::fs::write(&api_token, format!("{TOKEN}\n")).unwrap();
    let lichess_token = dir.join("lichess.token");
    std::fs::write(&lichess_token, format!("{LICHESS_TOKEN}\n")).unwrap();
    let mut text = format!(
        "[event]\nname = \"Bundesliga Nord 2026\"\nround = \"1\"\n\n\
         [outputs]\nhttp = \"127.0.0.1:{http}\"\ntoken_file = {:?}\nrelay_dir = {:?}\n\n\
         [outputs.lichess]\nround = \"TeamsR01\"\ntoken_file = {:?}\nurl = \"http://127.0.0.1:{lichess}\"\n\n",
        api_token.display().to_string(),
        relay.display().to_string(),
        lichess_token.display().to_string(),
    );
    text.push_str(&board_sections(BOARDS.len(), 37000));
    let path = dir.join("eboardd.toml");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().to_string()
}

/// Every game of `pgn` has the teams of its board (by its `Board` tag), and every board a game.
fn assert_team_tags(what: &str, pgn: &str) {
    let games = parse_pgn(pgn.as_bytes()).unwrap_or_else(|e| panic!("{what}: {e}\n{pgn}"));
    for (i, b) in BOARDS.iter().enumerate() {
        let board = id(i + 1);
        let Some(g) = games.iter().find(|g| g.tag("Board") == Some(&board)) else {
            panic!("{what}: no game of {board}:\n{pgn}");
        };
        assert_eq!(
            (g.tag("WhiteTeam"), g.tag("BlackTeam")),
            (Some(b.white_team), Some(b.black_team)),
            "{what}: {board}"
        );
    }
}

/// `GET` with the token, JSON.
fn json_auth(port: u16, path: &str) -> Value {
    let r = http::with_token(port, "GET", path, TOKEN, "");
    assert_eq!(r.status, 200, "GET {path}: {}", r.body);
    serde_json::from_str(&r.body).unwrap()
}

/// POST `body` to `path` with the token; panics unless 200.
fn post_auth(port: u16, path: &str, body: &str) {
    let r = http::with_token(port, "POST", path, TOKEN, body);
    assert_eq!(r.status, 200, "POST {path}: {}", r.body);
}

/// Half points as the API writes them.
fn pts(half: [u32; 2]) -> Value {
    json!([f64::from(half[0]) / 2.0, f64::from(half[1]) / 2.0])
}

fn match_points(half: [u32; 2]) -> Value {
    match half[0].cmp(&half[1]) {
        std::cmp::Ordering::Greater => json!([2, 0]),
        std::cmp::Ordering::Less => json!([0, 2]),
        std::cmp::Ordering::Equal => json!([1, 1]),
    }
}

/// The board points of boards `range` whose result counts (`counts(board index)`).
fn sum(range: std::ops::Range<usize>, counts: impl Fn(usize) -> bool) -> [u32; 2] {
    range
        .filter(|&i| counts(i))
        .fold([0, 0], |s, i| [s[0] + HALVES[i][0], s[1] + HALVES[i][1]])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_team_round_tags_every_pgn_and_scores_its_matches() {
    let dir = scratch("teams");
    let caps = dir.join("captures");
    let relay = dir.join("relay");
    let games = demo_games();
    for b in &BOARDS {
        assert_eq!(
            games[b.game].tag("Result"),
            Some(b.result),
            "demo game {}",
            b.game
        );
    }
    // The players tell each game's result on the board, as it ended.
    let (boards, links) = result_telling_boards(&dir, &BOARDS.map(|b| b.game), 37000, SPEED);
    let (lichess, pushed) = stand_in().await;
    let http = free_port();
    let cfg = config(&dir, http, lichess, &relay);
    let mut d = Daemon::start(&links, &caps, &["--config", &cfg]);

    // Round 1 from the TRF-26, once the boards are there.
    d.wait_every_board("board_connected", BOARDS.len(), WAIT)
        .await;
    http::json_when_up(http, "/api/v1/rounds").await;
    let trf = dir.join("bundesliga.trf");
    std::fs::write(&trf, TRF).unwrap();
    round_load(&trf, 1, &cfg).await;
    let r1 = json_auth(http, "/api/v1/rounds/1");
    for (i, b) in BOARDS.iter().enumerate() {
        let on = &r1["boards"][i];
        assert_eq!(on["board"], id(i + 1), "{r1:#}");
        assert_eq!(on["white"]["team"], b.white_team, "{r1:#}");
        assert_eq!(on["black"]["team"], b.black_team, "{r1:#}");
    }

    // Every game ends on its board with its real result.
    d.wait_every_board("game_ended", BOARDS.len(), WAIT).await;
    let r1 = json_auth(http, "/api/v1/rounds/1");
    for (i, b) in BOARDS.iter().enumerate() {
        assert_eq!(r1["boards"][i]["game"]["result"], b.result, "{r1:#}");
    }

    // Nothing confirmed: the provisional score is the games' results.
    let m = json_auth(http, "/api/v1/rounds/1/matches");
    let list = m["matches"].as_array().expect("matches");
    assert_eq!(list.len(), 2, "{m:#}");
    for (k, (teams, range)) in [([A, B], 0..4), ([C, D], 4..8)].into_iter().enumerate() {
        let x = &list[k];
        assert_eq!(x["teams"], json!(teams), "{x:#}");
        let numbers: Vec<Value> = range.clone().map(|i| json!(i + 1)).collect();
        let got: Vec<Value> = x["boards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["number"].clone())
            .collect();
        assert_eq!(got, numbers, "{x:#}");
        // Colours alternate: the first team has White on the match's odd boards.
        let whites: Vec<Value> = x["boards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["white_team"].clone())
            .collect();
        assert_eq!(whites, [json!(0), json!(1), json!(0), json!(1)], "{x:#}");
        let all = sum(range.clone(), |_| true);
        assert_eq!(x["board_points"]["provisional"], pts(all), "{x:#}");
        assert_eq!(x["board_points"]["confirmed"], pts([0, 0]), "{x:#}");
        assert_eq!(x["match_points"]["provisional"], match_points(all), "{x:#}");
        assert!(x["match_points"]["confirmed"].is_null(), "{x:#}");
        assert_eq!(
            (x["finished"].clone(), x["complete"].clone()),
            (json!(4), json!(false))
        );
    }
    assert_eq!(list[0]["match_points"]["provisional"], json!([0, 2]));
    assert_eq!(list[1]["match_points"]["provisional"], json!([1, 1]));

    // The arbiter confirms the results one by one: the confirmed score after each.
    for n in 1..=BOARDS.len() {
        post_auth(
            http,
            &format!("/api/v1/boards/{}/result", id(n)),
            r#"{"confirm":true}"#,
        );
        let m = json_auth(http, "/api/v1/rounds/1/matches");
        for (k, range) in [0..4, 4..8].into_iter().enumerate() {
            let x = &m["matches"][k];
            let done = |i: usize| i < n;
            let confirmed = sum(range.clone(), done);
            let boards = range.clone().filter(|&i| done(i)).count();
            assert_eq!(
                x["board_points"]["confirmed"],
                pts(confirmed),
                "after {n}: {x:#}"
            );
            assert_eq!(x["confirmed_boards"], boards, "after {n}: {x:#}");
            let want = if boards == 4 {
                match_points(confirmed)
            } else {
                Value::Null
            };
            assert_eq!(x["match_points"]["confirmed"], want, "after {n}: {x:#}");
            assert_eq!(x["complete"], boards == 4, "after {n}: {x:#}");
        }
    }

    // The public view (no token) and the overlay.
    let public: Value =
        serde_json::from_str(&get(local(http), "/api/v1/rounds/1/matches").body).unwrap();
    assert_eq!(public, json_auth(http, "/api/v1/rounds/1/matches"));
    let page = get(local(http), "/overlay/match");
    assert_eq!(page.status, 200);
    assert!(
        page.header("content-type")
            .is_some_and(|t| t.starts_with("text/html")),
        "{:?}",
        page.headers
    );
    assert!(page.body.contains("/matches"), "{}", page.body);
    // The overlay as a browser draws it: both matches, their confirmed scores, the boards.
    let chrome = support::chromium::chromium().unwrap();
    let (profile, url) = (
        dir.join("chromium"),
        format!("http://127.0.0.1:{http}/overlay/match"),
    );
    let dom = tokio::task::spawn_blocking(move || {
        support::chromium::run_chromium(&chrome, &profile, &url, &["--dump-dom"])
    })
    .await
    .unwrap();
    let shown = support::chromium::rendered(dom);
    for text in [
        "SK Aachen",
        "1½ – 2½",
        "SF Berlin",
        "SV Chemnitz",
        "2 – 2",
        "USV Dresden",
        "Adler, Anna",
        "½-½",
    ] {
        assert!(
            shown.contains(text),
            "/overlay/match shows no {text:?}:\n{shown}"
        );
    }

    // Team tags in every PGN.
    assert_team_tags("API games.pgn", &get(local(http), "/api/v1/games.pgn").body);
    assert_team_tags(
        "API round 1 games.pgn",
        &get(local(http), "/api/v1/rounds/1/games.pgn").body,
    );
    let each: String = (1..=BOARDS.len())
        .map(|n| get(local(http), &format!("/api/v1/boards/{}/game.pgn", id(n))).body)
        .collect();
    assert_team_tags("API boards' game.pgn", &each);
    let deadline = Instant::now() + WAIT;
    let wanted = |text: &str| {
        parse_pgn(text.as_bytes()).is_ok_and(|g| {
            g.len() == BOARDS.len() && g.iter().all(|g| g.tag("Result") != Some("*"))
        })
    };
    let relay_pgn = loop {
        let text = std::fs::read_to_string(relay.join("games.pgn")).unwrap_or_default();
        if wanted(&text) {
            break text;
        }
        assert!(Instant::now() < deadline, "relay games.pgn:\n{text}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_team_tags("relay games.pgn", &relay_pgn);
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(relay.join("round-1/index.json")).unwrap())
            .unwrap();
    for (i, b) in BOARDS.iter().enumerate() {
        assert_eq!(
            index["pairings"][i]["white"]["team"], b.white_team,
            "{index:#}"
        );
        assert_eq!(
            index["pairings"][i]["black"]["team"], b.black_team,
            "{index:#}"
        );
    }
    let last_push = loop {
        let last = pushed.0.lock().unwrap().last().cloned().unwrap_or_default();
        if wanted(&last) {
            break last;
        }
        assert!(Instant::now() < deadline, "lichess push:\n{last}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_team_tags("lichess push", &last_push);

    d.terminate();
    // The captures carry the teams (`set_tags`): their replay tags every game as the outputs did.
    assert_team_tags("eboardd replay of the captures", &replay(&caps));
    for (i, b) in boards.into_iter().enumerate() {
        stop_strict(b, &id(i + 1)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
