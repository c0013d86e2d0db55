//! The lichess push, end to end: `eboardd run --config FILE` with `[outputs.lichess]`, emulated
//! DGT boards on pseudo-terminals, and a local stand-in of lichess's push endpoint
//! (`POST /api/broadcast/round/{id}/push`) that answers as lichess's API documentation says:
//! 200 with `{"games": [{"tags": …, "moves": N} | {"tags": …, "error": "…"}]}`, 429 with
//! `Retry-After`, 401 for a token it does not know, 5xx when it fails.
//!
//! - Refusals (a 429, a 500) are waited out as lichess asks (`Retry-After`) or backed off; the
//!   last push lichess took holds the whole game and its result; never more than one push a
//!   second; a game lichess refused is in health with lichess's reason; the token is nowhere
//!   in the log or in health.
//! - 401 stops pushing and says the token is wrong; a 404 (a round id lichess does not know)
//!   is a failing part in health, and is not tried again at once.
//! - A broadcast delay: lichess gets the delayed view (nothing of a game not yet public).
//! - Too few round ids for the boards configured: a one-line error at start, exit 2.

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use eboardd::sim::Style;
use serde_json::{Value, json};
use support::daemon::*;
use support::http::{free_port, get, local, request};
use support::pgn::parse_pgn;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(90);
const ROUND_ID: &str = "AbCd1234";
const LICHESS_TOKEN: &str = "lip_StandInSecret0123456789";
const API_TOKEN: &str = "arbiter-token-1";

/// What the stand-in answers to the next request.
#[derive(Debug, Clone, Copy)]
enum Reply {
    /// 200 and the games (a game of the refused board gets an `error`).
    Take,
    /// 429 with `Retry-After: N`.
    TooMany(u64),
    /// This status with an error body.
    Fail(u16),
}

/// One request the stand-in received.
#[derive(Debug, Clone)]
struct Received {
    at: Instant,
    path: String,
    authorization: Option<String>,
    content_type: Option<String>,
    body: String,
    status: u16,
}

#[derive(Clone)]
struct StandIn {
    script: Arc<Mutex<VecDeque<Reply>>>,
    otherwise: Reply,
    refuse_board: Option<u32>,
    received: Arc<Mutex<Vec<Received>>>,
    count: Arc<tokio::sync::watch::Sender<usize>>,
}

const REFUSAL: &str = "Cannot parse move: Zz9 (stand-in refusal)";

async fn push(
    State(s): State<StandIn>,
    UrlPath(id): UrlPath<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let reply = s.script.lock().unwrap().pop_front().unwrap_or(s.otherwise);
    let text = |h: header::HeaderName| {
        headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let authorized =
        text(header::AUTHORIZATION).as_deref() == Some(&format!("Bearer {LICHESS_TOKEN}"));
    let reply = if authorized { reply } else { Reply::Fail(401) };
    let (status, response) = match reply {
        Reply::Take => {
            let games: Vec<Value> = parse_pgn(body.as_bytes())
                .unwrap_or_default()
                .into_iter()
                .map(|g| {
                    let board: Option<u32> = g
                        .tag("Round")
                        .and_then(|r| r.rsplit_once('.'))
                        .and_then(|(_, b)| b.parse().ok());
                    if board.is_some() && board == s.refuse_board {
                        json!({"tags": g.tags, "error": REFUSAL})
                    } else {
                        json!({"tags": g.tags, "moves": g.moves.len()})
                    }
                })
                .collect();
            (
                200,
                (StatusCode::OK, axum::Json(json!({"games": games}))).into_response(),
            )
        }
        Reply::TooMany(secs) => (
            429,
            (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, secs.to_string())],
                axum::Json(json!({"error": "Too many requests. Try again later."})),
            )
                .into_response(),
        ),
        Reply::Fail(code) => (
            code,
            (
                StatusCode::from_u16(code).unwrap(),
                axum::Json(json!({"error": match code {
                    401 => "No such token",
                    404 => "No such broadcast round",
                    _ => "Internal error",
                }})),
            )
                .into_response(),
        ),
    };
    let n = {
        let mut r = s.received.lock().unwrap();
        r.push(Received {
            at: Instant::now(),
            path: format!("/api/broadcast/round/{id}/push"),
            authorization: text(header::AUTHORIZATION),
            content_type: text(header::CONTENT_TYPE),
            body,
            status,
        });
        r.len()
    };
    s.count.send_replace(n);
    response
}

impl StandIn {
    async fn start(
        script: &[Reply],
        otherwise: Reply,
        refuse_board: Option<u32>,
    ) -> (StandIn, u16) {
        let (tx, _) = tokio::sync::watch::channel(0usize);
        let s = StandIn {
            script: Arc::new(Mutex::new(script.iter().copied().collect())),
            otherwise,
            refuse_board,
            received: Arc::default(),
            count: Arc::new(tx),
        };
        let app = Router::new()
            .route("/api/broadcast/round/{id}/push", post(push))
            .with_state(s.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (s, port)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits until the requests received satisfy `pred`.
    async fn wait_for(&self, what: &str, pred: impl Fn(&[Received]) -> bool) {
        let mut count = self.count.subscribe();
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            if pred(&self.received()) {
                return;
            }
            if tokio::time::timeout_at(deadline, count.changed())
                .await
                .is_err()
            {
                panic!(
                    "lichess stand-in: {what}: not within {WAIT:?}: {:#?}",
                    self.received()
                );
            }
        }
    }
}

fn config(dir: &std::path::Path, http: u16, lichess: u16, extra_outputs: &str) -> String {
    let lichess_token = dir.join("lichess.token");
    std::fs::write(&lichess_token, format!("{LICHESS_TOKEN}\n")).unwrap();
    let api_token = dir.join("api.token");
    std::fs::write(&api_token, API_TOKEN).unwrap();
    let path = dir.join("eboardd.toml");
    std::fs::write(
        &path,
        format!(
            "[event]\nname = \"Push Open\"\nround = \"3\"\n\n\
             [outputs]\nhttp = \"127.0.0.1:{http}\"\ntoken_file = {:?}\n{extra_outputs}\n\
             [outputs.lichess]\nround = \"{ROUND_ID}\"\ntoken_file = {:?}\nurl = \"http://127.0.0.1:{lichess}\"\n\n\
             [[board]]\nnumber = 1\nserial = \"10001\"\n\n\
             [[board]]\nnumber = 2\nserial = \"10002\"\n",
            api_token.display().to_string(),
            lichess_token.display().to_string(),
        ),
    )
    .unwrap();
    path.to_string_lossy().to_string()
}

/// The game of `board` (number) in a pushed PGN.
fn pushed_game(body: &str, board: u32) -> Option<support::pgn::PgnGame> {
    parse_pgn(body.as_bytes())
        .ok()?
        .into_iter()
        .find(|g| g.tag("Round") == Some(&format!("3.{board}")))
}

fn health(http: u16) -> Value {
    serde_json::from_str(&get(local(http), "/api/v1/health").body).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_the_round_through_refusals_with_the_last_state_arriving() {
    // The 2nd request is told to wait 2 s, the 4th fails with a 500; board 2's game is
    // refused by lichess in every answer.
    let (lichess, lichess_port) = StandIn::start(
        &[
            Reply::Take,
            Reply::TooMany(2),
            Reply::Take,
            Reply::Fail(500),
        ],
        Reply::Take,
        Some(2),
    )
    .await;
    let dir = scratch("lichess");
    let caps = dir.join("captures");
    let games = demo_games();
    let links = [dir.join("board-10001"), dir.join("board-10002")];
    let boards: Vec<_> = ["10001", "10002"]
        .iter()
        .zip(&links)
        .enumerate()
        .map(|(i, (serial, link))| {
            board(
                &games[i..=i],
                Style::Human,
                i as u64,
                serial,
                link,
                SPEED,
                None,
            )
        })
        .collect();
    let http = free_port();
    let cfg = config(&dir, http, lichess_port, "");
    let mut d = Daemon::start(&links, &caps, &["--config", &cfg]);
    let plies = [games[0].moves.len(), games[1].moves.len()];
    d.wait_for("both games completed", WAIT, |ev| {
        completed(ev, "board-1", plies[0]) && completed(ev, "board-2", plies[1])
    })
    .await;
    // The arbiter enters board 1's result.
    let auth = format!("Bearer {API_TOKEN}");
    let r = request(
        local(http),
        "POST",
        "/api/v1/boards/board-1/result",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        br#"{"result":"1-0"}"#,
    )
    .expect("an answer");
    assert_eq!(r.status, 200, "{}", r.body);

    // lichess takes a push with the whole of board 1's game and its result.
    let want = san(&games[0]);
    lichess
        .wait_for("a taken push with board 1's whole game and 1-0", |rs| {
            rs.iter().any(|r| {
                r.status == 200
                    && pushed_game(&r.body, 1).is_some_and(|g| {
                        g.tag("Result") == Some("1-0")
                            && g.moves.iter().map(|m| m.san.clone()).collect::<Vec<_>>() == want
                    })
            })
        })
        .await;
    // Health says so, with the refused game and lichess's reason.
    let deadline = Instant::now() + WAIT;
    let h = loop {
        let h = health(http);
        if h["lichess"]["state"] == "ok"
            && h["lichess"]["rounds"][0]["games"]
                .as_array()
                .is_some_and(|g| g.len() == 2)
        {
            break h;
        }
        assert!(Instant::now() < deadline, "health never said ok: {h}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let l = &h["lichess"];
    assert_eq!(l["refused"], 1, "{l}");
    let refused: Vec<&Value> = l["rounds"][0]["games"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| !g["error"].is_null())
        .collect();
    assert_eq!(refused.len(), 1, "{l}");
    assert_eq!(refused[0]["board"], 2, "{l}");
    assert_eq!(refused[0]["error"], REFUSAL, "{l}");
    assert!(
        !h.to_string().contains(LICHESS_TOKEN),
        "the token in health: {h}"
    );

    let metrics = get(local(http), "/metrics").body;
    for status in ["ok", "rate_limited", "server_error"] {
        assert!(
            metrics.contains(&format!(
                "eboardd_lichess_push_total{{status=\"{status}\"}}"
            )),
            "no {status} push counted:\n{metrics}"
        );
    }

    let log_path = d.log.clone();
    d.terminate();
    for (b, id) in boards.into_iter().zip(["board-1", "board-2"]) {
        stop_strict(b, id).await;
    }
    let rs = lichess.received();
    // Every request as lichess asks: the round's endpoint, the token, plain text.
    for r in &rs {
        assert_eq!(r.path, format!("/api/broadcast/round/{ROUND_ID}/push"));
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {LICHESS_TOKEN}").as_str())
        );
        assert!(
            r.content_type
                .as_deref()
                .is_some_and(|c| c.starts_with("text/plain")),
            "{:?}",
            r.content_type
        );
    }
    // Retry-After honoured, the 500 backed off, never two pushes within a second.
    let gaps: Vec<(u16, Duration)> = rs
        .windows(2)
        .map(|w| (w[0].status, w[1].at - w[0].at))
        .collect();
    for (status, gap) in &gaps {
        let least = if *status == 429 {
            Duration::from_millis(1950)
        } else {
            Duration::from_millis(950)
        };
        assert!(
            *gap >= least,
            "a push {gap:?} after a {status} answer (at least {least:?}): {gaps:?}"
        );
    }
    assert!(
        rs.len() >= 5,
        "{} pushes: the script was not gone through",
        rs.len()
    );
    assert_eq!(rs[1].status, 429);
    assert_eq!(rs[3].status, 500);
    // While board 1's game runs, each push carries its clocks as last read (LiveChess's
    // WhiteClock/BlackClock/ReferenceTime tags); the finished game carries none.
    let running: Vec<support::pgn::PgnGame> = rs
        .iter()
        .filter(|r| r.status == 200)
        .filter_map(|r| pushed_game(&r.body, 1))
        .filter(|g| g.tag("Result") == Some("*"))
        .collect();
    assert!(!running.is_empty(), "no push of board 1's game in progress");
    let clocked = |g: &support::pgn::PgnGame| {
        ["WhiteClock", "BlackClock", "ReferenceTime"].map(|t| g.tag(t).is_some())
    };
    // Before the clock's first reading there is none; after it, all three.
    assert!(
        running.iter().any(|g| clocked(g) == [true; 3]),
        "no running push with its clocks"
    );
    for g in &running {
        let c = clocked(g);
        assert!(c == [true; 3] || c == [false; 3], "{:?}", g.tags);
    }
    // The last push lichess took is the final state: board 1's game with its result.
    let last = rs.iter().rev().find(|r| r.status == 200).unwrap();
    let g = pushed_game(&last.body, 1).expect("board 1 in the last push");
    assert_eq!(g.tag("Result"), Some("1-0"));
    assert_eq!(g.moves.len(), want.len());
    assert!(
        g.tag("WhiteClock").is_none(),
        "a finished game has no clock tags"
    );
    assert!(
        pushed_game(&last.body, 2).is_some(),
        "board 2 in the last push"
    );
    let log = std::fs::read_to_string(log_path).unwrap_or_default();
    assert!(!log.contains(LICHESS_TOKEN), "the token in the log:\n{log}");
    assert!(log.contains("429"), "the wait is not in the log:\n{log}");
    eprintln!(
        "{} pushes over {:?}; gaps {:?}",
        rs.len(),
        rs.last().unwrap().at - rs[0].at,
        gaps.iter().map(|(_, g)| g.as_millis()).collect::<Vec<_>>()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_stops_pushing_and_a_delay_keeps_the_game_back() {
    // 401: one request, then nothing while the games go on.
    let (lichess, lichess_port) = StandIn::start(&[], Reply::Fail(401), None).await;
    let dir = scratch("lichess-401");
    let caps = dir.join("captures");
    let games = demo_games();
    let link = dir.join("board-10001");
    let b = board(&games[..1], Style::Human, 0, "10001", &link, SPEED, None);
    let http = free_port();
    let cfg = config(&dir, http, lichess_port, "");
    let mut d = Daemon::start(std::slice::from_ref(&link), &caps, &["--config", &cfg]);
    lichess.wait_for("a first push", |rs| !rs.is_empty()).await;
    let n = games[0].moves.len();
    d.wait_for("the game completed", WAIT, |ev| completed(ev, "board-1", n))
        .await;
    let h = health(http);
    assert_eq!(h["lichess"]["state"], "token_refused", "{h}");
    let log_path = d.log.clone();
    d.terminate();
    stop_strict(b, "board-1").await;
    assert_eq!(lichess.received().len(), 1, "pushed again after a 401");
    let log = std::fs::read_to_string(log_path).unwrap_or_default();
    assert!(log.contains("refused the token (401)"), "{log}");
    assert!(!log.contains(LICHESS_TOKEN), "the token in the log:\n{log}");
    let _ = std::fs::remove_dir_all(&dir);

    // An hour's delay: lichess sees nothing of a game played now.
    let (lichess, lichess_port) = StandIn::start(&[], Reply::Take, None).await;
    let dir = scratch("lichess-delay");
    let caps = dir.join("captures");
    let b = board(
        &games[..1],
        Style::Human,
        0,
        "10001",
        &link_in(&dir),
        SPEED,
        None,
    );
    let http = free_port();
    let cfg = config(&dir, http, lichess_port, "delay_secs = 3600\n");
    let mut d = Daemon::start(&[link_in(&dir)], &caps, &["--config", &cfg]);
    d.wait_for("the game completed", WAIT, |ev| completed(ev, "board-1", n))
        .await;
    assert_eq!(health(http)["lichess"]["state"], "waiting");
    d.terminate();
    stop_strict(b, "board-1").await;
    assert!(
        lichess.received().is_empty(),
        "a delayed game reached lichess: {:?}",
        lichess.received()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_round_is_a_failing_part_and_not_pushed_again_at_once() {
    let (lichess, lichess_port) = StandIn::start(&[], Reply::Fail(404), None).await;
    let dir = scratch("lichess-404");
    let caps = dir.join("captures");
    let games = demo_games();
    let link = link_in(&dir);
    let b = board(&games[..1], Style::Human, 0, "10001", &link, SPEED, None);
    let http = free_port();
    let cfg = config(&dir, http, lichess_port, "");
    let mut d = Daemon::start(std::slice::from_ref(&link), &caps, &["--config", &cfg]);
    lichess.wait_for("a first push", |rs| !rs.is_empty()).await;
    let n = games[0].moves.len();
    d.wait_for("the game completed", WAIT, |ev| completed(ev, "board-1", n))
        .await;
    let h = health(http);
    assert_eq!(h["ok"], false, "{h}");
    assert_eq!(h["lichess"]["state"], "refused", "{h}");
    let failing = h["failing"].as_array().expect("failing");
    assert!(
        failing.iter().any(|f| f["part"] == "lichess"
            && f["name"] == ROUND_ID
            && f["reason"]
                .as_str()
                .is_some_and(|r| r.contains("404") && r.contains("No such broadcast round"))),
        "{h}"
    );
    let metrics = get(local(http), "/metrics").body;
    assert!(
        metrics.contains("eboardd_failing{part=\"lichess\"} 1"),
        "{metrics}"
    );
    let log_path = d.log.clone();
    d.terminate();
    stop_strict(b, "board-1").await;
    // The game went on for seconds after the refusal: a 404 is not retried at once.
    assert_eq!(lichess.received().len(), 1, "pushed again after a 404");
    let log = std::fs::read_to_string(log_path).unwrap_or_default();
    assert_eq!(
        log.matches("lichess refused the push to round").count(),
        1,
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn link_in(dir: &std::path::Path) -> std::path::PathBuf {
    dir.join("board-10001")
}

#[test]
fn too_few_round_ids_for_the_boards_is_an_error_at_start() {
    let dir = scratch("lichess-ids");
    let token = dir.join("lichess.token");
    std::fs::write(&token, LICHESS_TOKEN).unwrap();
    let mut boards = String::new();
    for n in [1, 2, 101] {
        boards.push_str(&format!(
            "[[board]]\nnumber = {n}\nserial = \"{}\"\n\n",
            20000 + n
        ));
    }
    let run = |round: &str| {
        let cfg = dir.join("eboardd.toml");
        std::fs::write(
            &cfg,
            format!(
                "[outputs]\nhttp = \"off\"\n\n[outputs.lichess]\nround = {round}\ntoken_file = {:?}\n\n{boards}",
                token.display().to_string()
            ),
        )
        .unwrap();
        std::process::Command::new(bin())
            .args(["run", "--no-discovery", "--capture-dir"])
            .arg(dir.join("captures"))
            .arg("--config")
            .arg(&cfg)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let out = run("\"AbCd1234\"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("board 101 needs 2 broadcast round ids") && err.contains("1 is given"),
        "{err}"
    );
    assert!(!err.contains(LICHESS_TOKEN));
    let out = run("[\"AbCd1234\", \"nope\"]");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"nope\" is not a broadcast round id"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
