//! Broadcast delay (`delay_secs`): while a game is played into the hub, every public route —
//! round and board JSON, PGN, relay files over HTTP and on disk, the WebSocket event stream —
//! is polled, and none may show a move younger than the delay; the same requests with the
//! token show the game live. After the delay the public view catches up with the whole game.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;

mod support;
use support::capture;

use eboardd::output::replay_source;
use eboardd::output::{Hub, HubConfig, OutputConfig, RoundInfo};
use eboardd::replay::{Layout, Timeline};

const TOKEN: &str = "delay-test-token";
const DELAY: Duration = Duration::from_secs(2);

/// A GET with the bearer `token` if any: status and body.
fn get(addr: SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<_> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let r = support::http::request(addr, "GET", path, &headers, b"").expect("an HTTP answer");
    (r.status, r.body)
}

/// Plies in a PGN text (its movetext without tags, comments, numbers and result).
fn pgn_plies(pgn: &str) -> usize {
    let mut text = String::new();
    let mut depth = 0;
    for line in pgn.lines().filter(|l| !l.starts_with('[')) {
        for c in line.chars() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                _ if depth == 0 => text.push(c),
                _ => {}
            }
        }
        text.push(' ');
    }
    text.split_whitespace()
        .filter(|t| {
            !t.ends_with('.') && !["1-0", "0-1", "1/2-1/2", "*"].contains(t) && !t.contains("...")
        })
        .count()
}

/// Plies of the one board's game in a round or board JSON.
fn json_plies(v: &Value) -> usize {
    let board = v.get("boards").map_or(v, |b| &b[0]);
    board["game"]["moves"].as_array().map_or(0, Vec::len)
}

/// When each ply was first made live (index = ply - 1).
type Made = Arc<Mutex<Vec<Instant>>>;

/// The time ply `n` was made live (`None` for ply 0 or a ply not made yet).
fn made_at(made: &Made, n: usize) -> Option<Instant> {
    n.checked_sub(1)
        .and_then(|i| made.lock().unwrap().get(i).copied())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_routes_lag_by_the_delay_and_the_token_view_is_live() {
    let file = capture("clean/g0001.jsonl");
    let end_t: f64 = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .last()
        .and_then(|l| serde_json::from_str::<Value>(l).ok())
        .and_then(|v| v["t"].as_f64())
        .unwrap();
    let plan = Timeline::load(std::slice::from_ref(&file), Layout::Round).unwrap();
    let info = RoundInfo {
        event: Some("Delay Open".into()),
        round: 1,
        boards: plan.boards().map(String::from).collect(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let relay = std::env::temp_dir().join(format!("eboardd-delay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&relay);
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        relay_dir: Some(relay.clone()),
        relay_debounce_ms: Some(50),
        token: Some(TOKEN.into()),
        delay: Some(DELAY),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let addr = out.http.unwrap();

    // When each ply is made live, from the live hub's own stream.
    let made: Made = Arc::default();
    let mut live_rx = hub.receiver();
    let recorder = {
        let made = made.clone();
        tokio::spawn(async move {
            while let Ok(m) = live_rx.recv().await {
                if m.kind == eboardd::output::MsgKind::Event(eboardd::output::EventTag::MoveMade) {
                    let v: Value = serde_json::from_str(&m.json).unwrap();
                    let ply = v["ply"].as_u64().unwrap() as usize;
                    let mut made = made.lock().unwrap();
                    if ply > made.len() {
                        made.push(m.at);
                    }
                }
            }
        })
    };

    // The public WebSocket stream: when each move_made reaches it.
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{addr}/api/v1/events"))
        .await
        .expect("websocket");
    let ws_seen: Arc<Mutex<Vec<(usize, Instant)>>> = Arc::default();
    let ws_task = {
        let seen = ws_seen.clone();
        tokio::spawn(async move {
            while let Some(Ok(msg)) = ws.next().await {
                let Ok(text) = msg.into_text() else { continue };
                let Ok(v) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if v["kind"] == "move_made" {
                    let ply = v["ply"].as_u64().unwrap() as usize;
                    seen.lock().unwrap().push((ply, Instant::now()));
                }
            }
        })
    };

    // About five seconds of play.
    let speed = end_t / 5.0;
    let mut replay = replay_source::spawn(hub.clone(), plan, Some(speed));

    // Poll every public route while the game is played, and the token view.
    let poller = {
        let made = made.clone();
        let relay = relay.clone();
        tokio::task::spawn_blocking(move || {
            let routes = [
                "/api/v1/boards",
                "/api/v1/boards/board-1",
                "/api/v1/boards/board-1/game.pgn",
                "/api/v1/games.pgn",
                "/relay/games.pgn",
                "/relay/round-1/games.pgn",
            ];
            let (mut checks, mut live_checks, mut ahead) = (0, 0, 0);
            let deadline = Instant::now() + Duration::from_secs(5) + DELAY;
            while Instant::now() < deadline {
                let mut public_now = 0;
                for path in routes {
                    let (status, body) = get(addr, path, None);
                    let after = Instant::now();
                    assert_eq!(status, 200, "{path}: {body}");
                    let plies = if path.ends_with(".pgn") {
                        pgn_plies(&body)
                    } else {
                        json_plies(&serde_json::from_str(&body).unwrap())
                    };
                    if let Some(at) = made_at(&made, plies) {
                        assert!(
                            at + DELAY <= after,
                            "{path} shows ply {plies}, made {:?} ago (delay {DELAY:?})",
                            after - at
                        );
                    }
                    public_now = public_now.max(plies);
                    checks += 1;
                }
                if let Ok(pgn) = std::fs::read_to_string(relay.join("games.pgn")) {
                    let plies = pgn_plies(&pgn);
                    if let Some(at) = made_at(&made, plies) {
                        assert!(
                            at + DELAY <= Instant::now(),
                            "relay file on disk shows ply {plies} before the delay"
                        );
                    }
                    checks += 1;
                }
                // The token view: at least every ply made before the request.
                let before = made.lock().unwrap().len();
                let (status, body) = get(addr, "/api/v1/boards/board-1", Some(TOKEN));
                assert_eq!(status, 200);
                let plies = json_plies(&serde_json::from_str(&body).unwrap());
                assert!(
                    plies >= before,
                    "token view shows {plies} plies, {before} were made"
                );
                if plies > public_now {
                    ahead += 1;
                }
                live_checks += 1;
            }
            (checks, live_checks, ahead)
        })
    };
    let (checks, live_checks, ahead) = poller.await.unwrap();
    replay.wait_done().await;
    let total = made.lock().unwrap().len();
    println!(
        "{checks} public reads, {live_checks} token reads ({ahead} ahead of the public view); \
         game {total} plies"
    );
    assert!(total > 40, "the game was played ({total} plies)");
    assert!(
        ahead * 2 > live_checks,
        "the token view was ahead of the public one during play ({ahead} of {live_checks})"
    );

    // After the delay the public view has the whole game, its end included.
    let deadline = Instant::now() + DELAY + Duration::from_secs(10);
    loop {
        let (_, body) =
            tokio::task::spawn_blocking(move || get(addr, "/api/v1/boards/board-1", None))
                .await
                .unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        if json_plies(&v) == total {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "public view never caught up: {} of {total} plies",
            json_plies(&v)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // No public WebSocket message came before its time.
    let seen = ws_seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "the public stream carried moves");
    for (ply, at) in seen {
        let made = made_at(&made, ply).expect("made live first");
        assert!(made + DELAY <= at, "ply {ply} streamed publicly too early");
    }
    replay.stop();
    recorder.abort();
    ws_task.abort();
    out.shutdown().await;
    let _ = std::fs::remove_dir_all(&relay);
}
