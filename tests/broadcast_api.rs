//! Broadcast outputs end to end: captures are replayed into a `Hub` and every output is
//! read back — WebSocket and SSE streams (live and resumed) against `eboardd replay --events`,
//! PGN against `eboardd replay`, relay files on disk and over HTTP, LiveChessCloud JSON field
//! rules, operator actions behind the token, and the LiveChess EBoards API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

mod support;
use support::{capture, scratch};

use eboardd::output::replay_source;
use eboardd::output::{Hub, HubConfig, OutputConfig, Outputs, RoundInfo};
use eboardd::replay::{Layout, Timeline};
use support::http::header;
use support::streams::*;

const TOKEN: &str = "test-token-123";

/// `eboardd replay --events` (or PGN) of `files`, through the same library function.
fn replay(files: &[PathBuf], events: bool) -> String {
    let mut out = Vec::new();
    eboardd::replay::replay_paths(files, events, &mut out, &mut |_| {}).expect("replay");
    String::from_utf8(out).expect("utf-8")
}

struct Setup {
    hub: Hub,
    outputs: Outputs,
    plan: Option<Timeline>,
    http: SocketAddr,
}

async fn setup(files: &[PathBuf], layout: Layout, relay: Option<PathBuf>) -> Setup {
    let plan = Timeline::load(files, layout).expect("load captures");
    let info = RoundInfo {
        event: Some("Test Open".into()),
        site: Some("Bergen NOR".into()),
        round: 3,
        date: plan.date(),
        boards: plan.boards().map(String::from).collect(),
        time_control: Some("5400+30".into()),
        epoch_ms: 1_780_000_000_000,
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        livechess: Some("127.0.0.1:0".parse().unwrap()),
        relay_dir: relay,
        token: Some(TOKEN.into()),
        relay_debounce_ms: Some(20),
        ..Default::default()
    };
    let outputs = eboardd::output::start(hub.clone(), &cfg)
        .await
        .expect("start outputs");
    let http = outputs.http.expect("http bound");
    Setup {
        hub,
        outputs,
        plan: Some(plan),
        http,
    }
}

/// [`support::http::request`] as `(status, headers lower-cased, body)`.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    support::http::request(addr, method, path, headers, body)
        .expect("an HTTP answer")
        .into_parts()
}

fn get(addr: SocketAddr, path: &str) -> (u16, Vec<(String, String)>, String) {
    http(addr, "GET", path, &[], "")
}

fn strip_tags(pgn: &str) -> String {
    pgn.lines()
        .filter(|l| !l.starts_with('['))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_and_pgn_equal_replay() {
    // One board's two captures, as the daemon writes a board's two days: the second created
    // after the first one's last record, so the two games are one board's, one after the other.
    let dir = scratch("two-days");
    std::fs::create_dir_all(&dir).unwrap();
    let second = dir.join("g0002.jsonl");
    let text = std::fs::read_to_string(capture("chess960/g0002.jsonl")).unwrap();
    let (head, records) = text.split_once('\n').unwrap();
    let mut head: Value = serde_json::from_str(head).unwrap();
    head["created"] = "2026-11-29T11:00:00Z".into();
    std::fs::write(&second, format!("{head}\n{records}")).unwrap();
    let files = vec![capture("irregular/g0001.jsonl"), second];
    let expected = replay(&files, true);
    let expected: Vec<&str> = expected.lines().collect();
    let mut s = setup(&files, Layout::AsRecorded, None).await;
    let base = format!("ws://{}/api/v1/events", s.http);

    // A live client, connected before the first event: an (empty) snapshot, then every event.
    let mut live = ws_connect(&base).await;
    let first = ws_next(&mut live).await;
    assert_eq!(first["kind"], "snapshot");
    assert_eq!(first["seq"], 0);

    let mut handle = replay_source::spawn(s.hub.clone(), s.plan.take().unwrap(), None);
    handle.wait_done().await;
    let last = s.hub.last_seq();
    assert_eq!(last as usize, expected.len(), "one seq per replayed event");

    let got = ws_events_until(&mut live, last).await;
    assert_eq!(
        got, expected,
        "WebSocket stream differs from replay --events"
    );

    // Resume in the middle: exactly the rest, no snapshot.
    let mid = last / 2;
    let mut resumed = ws_connect(&format!("{base}?since={mid}")).await;
    let v = ws_next(&mut resumed).await;
    assert_eq!(v["seq"], mid + 1, "resume starts right after since");
    let mut rest = vec![v.to_string()];
    rest.extend(ws_events_until(&mut resumed, last).await);
    let rest: Vec<Value> = rest
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let want: Vec<Value> = expected[mid as usize..]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rest, want);

    // A board filter.
    let mut one = ws_connect(&format!("{base}?since=0&board=board-1")).await;
    assert_eq!(ws_events_until(&mut one, last).await.len(), expected.len());

    // SSE: from the start, and resumed with Last-Event-ID semantics (?since).
    let addr = s.http;
    let sse =
        tokio::task::spawn_blocking(move || read_sse(addr, "/api/v1/events/sse?since=0", last))
            .await
            .unwrap();
    let sse_lines: Vec<&str> = sse.iter().map(|(_, d)| d.as_str()).collect();
    assert_eq!(
        sse_lines, expected,
        "SSE stream differs from replay --events"
    );
    assert!(
        sse.iter()
            .enumerate()
            .all(|(i, (id, _))| *id == Some(i as u64 + 1))
    );
    let sse_mid = tokio::task::spawn_blocking(move || {
        read_sse(addr, &format!("/api/v1/events/sse?since={mid}"), last)
    })
    .await
    .unwrap();
    assert_eq!(sse_mid.len() as u64, last - mid);

    // No since: a snapshot carrying the last seq.
    let sse_snap = tokio::task::spawn_blocking(move || read_sse(addr, "/api/v1/events/sse", last))
        .await
        .unwrap();
    let snap: Value = serde_json::from_str(&sse_snap[0].1).unwrap();
    assert_eq!(snap["kind"], "snapshot");
    // A recent snapshot may be reused: what followed it comes right after.
    let snap_seq = snap["seq"].as_u64().unwrap();
    assert_eq!(sse_snap.len() as u64 - 1, last - snap_seq);

    // PGN of every game equals replay's, modulo tags; the round's stable tags are there.
    let (status, h, all) = get(s.http, "/api/v1/games.pgn?all=1");
    assert_eq!(status, 200);
    assert_eq!(
        header(&h, "content-type"),
        Some("application/x-chess-pgn; charset=utf-8")
    );
    let replay_pgn = replay(&files, false);
    assert_eq!(strip_tags(&all), strip_tags(&replay_pgn));
    for tag in [
        "[Event \"Test Open\"]",
        "[Site \"Bergen NOR\"]",
        "[Round \"3.1\"]",
        "[TimeControl \"5400+30\"]",
        "[Variant \"Chess960\"]",
    ] {
        assert!(all.contains(tag), "missing {tag}");
    }
    // The round's games.pgn holds the current game of each board.
    let (_, _, round) = get(s.http, "/api/v1/games.pgn");
    let (_, _, board) = get(s.http, "/api/v1/boards/board-1/game.pgn");
    assert_eq!(round, board);
    assert!(all.ends_with(&round));

    // Snapshot JSON.
    let (status, h, body) = get(s.http, "/api/v1/boards");
    assert_eq!(status, 200);
    assert_eq!(
        header(&h, "content-type"),
        Some("application/json; charset=utf-8")
    );
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["seq"], last);
    assert_eq!(v["boards"][0]["board"], "board-1");
    assert_eq!(v["boards"][0]["games"], 2);
    // A board by its number, as the overlay takes it: the same board and game.
    let number = v["boards"][0]["number"].as_u64().unwrap();
    let (status, _, one) = get(s.http, &format!("/api/v1/boards/{number}"));
    assert_eq!(status, 200, "{one}");
    let one: Value = serde_json::from_str(&one).unwrap();
    assert_eq!(one["board"], "board-1");
    let (_, _, by_number) = get(s.http, &format!("/api/v1/boards/{number}/game.pgn"));
    assert_eq!(by_number, board);
    let (status, _, _) = get(s.http, "/api/v1/boards/99");
    assert_eq!(status, 404);

    // Errors are clear.
    let (status, _, body) = get(s.http, "/api/v1/events/sse?since=abc");
    assert_eq!(status, 400);
    assert!(body.contains("since must be a sequence number"), "{body}");
    let (status, _, _) = get(s.http, "/api/v1/boards/nope/game.pgn");
    assert_eq!(status, 404);
    let (status, _, _) = get(s.http, "/api/v1/boards/..%2Fetc/game.pgn");
    assert!(status == 400 || status == 404);

    handle.stop();
    s.outputs.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

fn lcc_move_ok(token: &str) -> bool {
    // <SAN>[ <secondsLeft>][+<secondsSpent>]
    let mut parts = token.splitn(2, ' ');
    let san = parts.next().unwrap_or("");
    if san.is_empty() || san.parse::<shakmaty::san::SanPlus>().is_err() {
        return false;
    }
    match parts.next() {
        None => true,
        Some(t) => {
            let (left, spent) = t.split_once('+').unwrap_or((t, ""));
            left.bytes().all(|c| c.is_ascii_digit())
                && spent.bytes().all(|c| c.is_ascii_digit())
                && !(left.is_empty() && spent.is_empty())
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_files_lcc_json_and_operator_actions() {
    let files = vec![
        capture("clean/g0003.jsonl"),
        capture("irregular/g0002.jsonl"),
        capture("chess960/g0004.jsonl"),
    ];
    let dir = scratch("relay");
    let mut s = setup(&files, Layout::Round, Some(dir.clone())).await;
    s.hub
        .set_pairing(
            "board-1",
            serde_json::from_value(json!({
                "white": {"name": "Hansen, Ida", "fide_id": 1234567, "title": "WFM"},
                "black": {"name": "Berg, Ola"}
            }))
            .unwrap(),
        )
        .unwrap();
    let mut events = s.hub.receiver();
    let mut handle = replay_source::spawn(s.hub.clone(), s.plan.take().unwrap(), None);
    handle.wait_done().await;

    // Files on disk equal what HTTP serves, once the writer caught up.
    let mut same = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let disk = std::fs::read_to_string(dir.join("round-3/games.pgn")).unwrap_or_default();
        if disk == get(s.http, "/relay/round-3/games.pgn").2 {
            same = true;
            break;
        }
    }
    assert!(same, "relay games.pgn on disk never matched HTTP");
    for f in [
        "games.pgn",
        "live.pgn",
        "tournament.json",
        "round-3/index.json",
        "round-3/game-1.json",
        "round-3/game-2.pgn",
        "round-3/game-3.json",
    ] {
        assert!(dir.join(f).is_file(), "missing relay file {f}");
    }
    // No temporary files left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("round-3"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());

    // games.pgn: one game per board, Round "R.B", player tags.
    let (status, h, pgn) = get(s.http, "/relay/games.pgn");
    assert_eq!(status, 200);
    assert_eq!(
        header(&h, "content-type"),
        Some("application/x-chess-pgn; charset=utf-8")
    );
    assert_eq!(header(&h, "cache-control"), Some("no-cache"));
    let etag = header(&h, "etag").unwrap().to_string();
    let (status, _, _) = http(
        s.http,
        "GET",
        "/relay/games.pgn",
        &[("If-None-Match", &etag)],
        "",
    );
    assert_eq!(status, 304);
    for r in [
        "[Round \"3.1\"]",
        "[Round \"3.2\"]",
        "[Round \"3.3\"]",
        "[White \"Hansen, Ida\"]",
        "[WhiteFideId \"1234567\"]",
        "[WhiteTitle \"WFM\"]",
    ] {
        assert!(pgn.contains(r), "games.pgn lacks {r}");
    }
    assert_eq!(pgn.matches("[Event ").count(), 3);
    assert!(pgn.contains("{[%clk "));

    // tournament.json (`docs/broadcast.md` §1.2).
    let (status, h, body) = get(s.http, "/relay/tournament.json");
    assert_eq!(status, 200);
    assert_eq!(
        header(&h, "content-type"),
        Some("application/json; charset=utf-8")
    );
    let t: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(t["name"], "Test Open");
    assert_eq!(t["rounds"].as_array().unwrap().len(), 3);
    assert_eq!(t["rounds"][2]["count"], 3);
    assert_eq!(t["eboards"].as_array().unwrap().len(), 3);

    // index.json (§1.3): pairings in board order, PGN results, player objects.
    let (_, _, body) = get(s.http, "/relay/round-3/index.json");
    let idx: Value = serde_json::from_str(&body).unwrap();
    let pairings = idx["pairings"].as_array().unwrap();
    assert_eq!(pairings.len(), 3);
    assert_eq!(pairings[0]["white"]["lname"], "Hansen");
    assert_eq!(pairings[0]["white"]["fname"], "Ida");
    assert_eq!(pairings[0]["white"]["fideid"], 1234567);
    for p in pairings {
        assert!(["*", "1-0", "0-1", "1/2-1/2"].contains(&p["result"].as_str().unwrap()));
        assert!(p["live"].is_boolean());
        for k in [
            "fname",
            "mname",
            "lname",
            "title",
            "federation",
            "gender",
            "fideid",
        ] {
            assert!(p["white"].get(k).is_some(), "player lacks {k}");
        }
    }
    assert!(idx["date"].is_string());

    // game-G.json (§1.4): field types, move tokens, clock with an integer time.
    for g in 1..=3 {
        let (_, _, body) = get(s.http, &format!("/relay/round-3/game-{g}.json"));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert!(v["live"].is_boolean());
        assert!(v["serialNr"].is_string());
        assert!(v["chess960"].is_i64(), "chess960 must be a number");
        assert!(v["firstMove"].is_i64());
        assert!(
            v["result"].is_null()
                || ["WHITEWIN", "BLACKWIN", "DRAW"].contains(&v["result"].as_str().unwrap())
        );
        let clock = &v["clock"];
        assert!(clock["time"].is_i64(), "clock.time must be an integer");
        assert!(clock["white"].is_u64() && clock["black"].is_u64());
        let moves = v["moves"].as_array().unwrap();
        assert!(!moves.is_empty());
        for m in moves {
            let m = m.as_str().unwrap();
            assert!(lcc_move_ok(m), "bad LCC move token {m:?}");
            assert!(m.contains(' '), "every move carries a time: {m:?}");
        }
    }
    let (_, _, g3) = get(s.http, "/relay/round-3/game-3.json");
    let g3: Value = serde_json::from_str(&g3).unwrap();
    assert_ne!(g3["chess960"], 518, "board 3 plays Chess960");
    let (_, _, g1) = get(s.http, "/relay/round-3/game-1.json");
    let g1: Value = serde_json::from_str(&g1).unwrap();
    assert_eq!(g1["chess960"], 518);
    // Paths outside the tree are refused.
    for bad in [
        "/relay/round-2/index.json",
        "/relay/round-3/game-0.json",
        "/relay/round-3/game-9.json",
        "/relay/../Cargo.toml",
        "/relay/round-3/game-1.txt",
    ] {
        assert_eq!(get(s.http, bad).0, 404, "{bad}");
    }

    // Operator actions need the token.
    let body = r#"{"result":"1/2-1/2"}"#;
    let path = "/api/v1/boards/board-2/result";
    assert_eq!(http(s.http, "POST", path, &[], body).0, 401);
    assert_eq!(
        http(
            s.http,
            "POST",
            path,
            &[("Authorization", "Bearer wrong-token")],
            body
        )
        .0,
        401
    );
    let auth = format!("Bearer {TOKEN}");
    let (status, _, msg) = http(
        s.http,
        "POST",
        path,
        &[("Authorization", &auth)],
        r#"{"result":"2-0"}"#,
    );
    assert_eq!(status, 400);
    assert!(msg.contains("result must be"), "{msg}");
    let (status, _, msg) = http(
        s.http,
        "POST",
        path,
        &[("Authorization", &auth)],
        "{not json",
    );
    assert_eq!(status, 400);
    assert!(msg.contains("invalid JSON"), "{msg}");
    let (status, _, msg) = http(s.http, "POST", path, &[("Authorization", &auth)], body);
    assert_eq!(status, 200, "{msg}");
    // The result comes back as an event from the engine, and shows in every output.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let m = events.recv().await.unwrap();
            if &*m.board == "board-2"
                && m.kind == eboardd::output::MsgKind::Event(eboardd::output::EventTag::GameEnded)
            {
                return m;
            }
        }
    })
    .await
    .expect("game_ended after set result");
    assert!(ended.json.contains("\"reason\":\"arbiter\""));
    let (_, _, idx) = get(s.http, "/relay/round-3/index.json");
    let idx: Value = serde_json::from_str(&idx).unwrap();
    assert_eq!(idx["pairings"][1]["result"], "1/2-1/2");
    let (_, _, g2) = get(s.http, "/relay/round-3/game-2.json");
    assert_eq!(
        serde_json::from_str::<Value>(&g2).unwrap()["result"],
        "DRAW"
    );
    // The arbiter's result is recorded as confirmed; on the ended game, another one replaces it
    // in the round (the game keeps its own), and `confirm` takes the game's back.
    let (_, _, r3) = get(s.http, "/api/v1/rounds/3");
    let r3: Value = serde_json::from_str(&r3).unwrap();
    let b2 = |r: &Value| r["boards"][1].clone();
    assert_eq!(
        (b2(&r3)["result"].clone(), b2(&r3)["confirmed"].clone()),
        (Value::from("1/2-1/2"), Value::from(true))
    );
    let (status, _, msg) = http(
        s.http,
        "POST",
        path,
        &[("Authorization", &auth)],
        r#"{"result":"+"}"#,
    );
    assert_eq!(status, 200, "{msg}");
    let (_, _, r3) = get(s.http, "/api/v1/rounds/3");
    let r3: Value = serde_json::from_str(&r3).unwrap();
    assert_eq!(b2(&r3)["result"], "+");
    assert_eq!(b2(&r3)["game"]["result"], "1/2-1/2");
    let (status, _, msg) = http(
        s.http,
        "POST",
        path,
        &[("Authorization", &auth)],
        r#"{"confirm":true}"#,
    );
    assert_eq!(status, 200, "{msg}");
    let (_, _, r3) = get(s.http, "/api/v1/rounds/3");
    let r3: Value = serde_json::from_str(&r3).unwrap();
    assert_eq!(b2(&r3)["result"], "1/2-1/2");

    // Players: validated.
    let p = "/api/v1/boards/board-3/players";
    let (status, _, msg) = http(
        s.http,
        "POST",
        p,
        &[("Authorization", &auth)],
        r#"{"white":{"name":"A \"quoted\" name"}}"#,
    );
    assert_eq!(status, 400, "{msg}");
    let (status, _, _) = http(
        s.http,
        "POST",
        p,
        &[("Authorization", &auth)],
        r#"{"white":{"name":"Lee, Ann","fide_id":3200000},"black":{"name":"Chan, Bo"}}"#,
    );
    assert_eq!(status, 200);
    assert!(
        get(s.http, "/api/v1/boards/board-3/game.pgn")
            .2
            .contains("[White \"Lee, Ann\"]")
    );

    // Acknowledge an irregularity of board 2.
    let snap: Value = serde_json::from_str(&get(s.http, "/api/v1/boards/board-2").2).unwrap();
    let irr = snap["irregularities"].as_array().unwrap();
    assert!(!irr.is_empty(), "board 2 has irregularities");
    let id = irr[0]["id"].as_u64().unwrap();
    let ack = format!("/api/v1/boards/board-2/irregularities/{id}/ack");
    assert_eq!(http(s.http, "POST", &ack, &[], "").0, 401);
    assert_eq!(
        http(s.http, "POST", &ack, &[("Authorization", &auth)], "").0,
        200
    );
    let snap: Value = serde_json::from_str(&get(s.http, "/api/v1/boards/board-2").2).unwrap();
    assert!(
        snap["irregularities"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["id"] != id || i["acknowledged"] == true)
    );
    assert_eq!(
        http(
            s.http,
            "POST",
            "/api/v1/boards/board-2/irregularities/999999/ack",
            &[("Authorization", &auth)],
            ""
        )
        .0,
        404
    );

    handle.stop();
    s.outputs.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_are_refused_without_a_configured_token() {
    let hub = Hub::new(RoundInfo::default(), HubConfig::default());
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let addr = out.http.unwrap();
    let (status, _, msg) = http(
        addr,
        "POST",
        "/api/v1/boards/b1/result",
        &[("Authorization", "Bearer anything")],
        r#"{"result":"1-0"}"#,
    );
    assert_eq!(status, 403);
    assert!(msg.contains("no access token is configured"), "{msg}");
    // The setting it names is the configuration's: `[outputs] token_file`.
    assert!(
        msg.contains("[outputs]") && msg.contains("token_file"),
        "{msg}"
    );
    out.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_client_gets_a_snapshot_then_is_dropped() {
    let hub = Hub::new(
        RoundInfo::default(),
        HubConfig {
            backlog: 100,
            channel: 16,
            ..HubConfig::default()
        },
    );
    let (start, mut rx) = hub.subscribe(None);
    let ws_hub = hub.clone();
    assert!(matches!(start, eboardd::output::Start::Snapshot { .. }));
    // Publishing never waits for the subscriber that does not read.
    let ev = eboardd::core::event::CoreEvent {
        t: 1_000_000,
        game: 0,
        kind: eboardd::core::event::EventKind::BoardConnected {
            driver: "dgt".into(),
            serial: None,
        },
    };
    let t0 = std::time::Instant::now();
    for _ in 0..1000 {
        hub.publish("b1", &ev);
    }
    assert!(t0.elapsed() < Duration::from_secs(1));
    assert!(matches!(
        rx.recv().await,
        Err(tokio::sync::broadcast::error::RecvError::Lagged(_))
    ));
    drop(rx);
    // Resume older than the backlog: a snapshot; inside it: the rest exactly.
    assert!(matches!(
        hub.subscribe(Some(5)).0,
        eboardd::output::Start::Snapshot { .. }
    ));
    match hub.subscribe(Some(950)).0 {
        eboardd::output::Start::Backlog(m) => {
            assert_eq!(m.len(), 50);
            assert_eq!(m[0].seq, 951);
        }
        _ => panic!("expected backlog"),
    }
    // A seq from another run (ahead of ours): a snapshot.
    assert!(matches!(
        hub.subscribe(Some(5000)).0,
        eboardd::output::Start::Snapshot { .. }
    ));

    // Over WebSocket: a client that never reads is dropped, and publishing stays fast.
    let hub = ws_hub;
    let out = eboardd::output::start(
        hub.clone(),
        &OutputConfig {
            http: Some("127.0.0.1:0".parse().unwrap()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let url = format!("ws://{}/api/v1/events?since=1000", out.http.unwrap());
    let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let big = eboardd::core::event::CoreEvent {
        t: 2_000_000,
        game: 0,
        kind: eboardd::core::event::EventKind::BoardConnected {
            driver: "x".repeat(2000),
            serial: None,
        },
    };
    let t0 = std::time::Instant::now();
    for _ in 0..20_000 {
        hub.publish("b1", &big);
    }
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "publishing was slowed by a client"
    );
    // The server side of the unread socket lags twice and goes away.
    let mut gone = false;
    for _ in 0..200 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        for _ in 0..200 {
            hub.publish("b1", &big);
        }
        if hub.subscribers() == 0 {
            gone = true;
            break;
        }
    }
    assert!(gone, "the slow client was not dropped");
    drop(ws);
    out.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn livechess_eboards_api() {
    let files = vec![capture("human/g0002.jsonl"), capture("clean/g0005.jsonl")];
    let truth: Value =
        serde_json::from_str(&std::fs::read_to_string(capture("human/g0002.truth.json")).unwrap())
            .unwrap();
    let mut s = setup(&files, Layout::Round, None).await;
    let url = format!("ws://{}/api/v1.0", s.outputs.livechess.unwrap());
    let mut ws = ws_connect(&url).await;

    // eboards: both boards, LiveChess shapes.
    ws.send(Message::Text(
        r#"{"id":1,"call":"eboards","param":{}}"#.into(),
    ))
    .await
    .unwrap();
    let r = ws_next(&mut ws).await;
    assert_eq!(r["response"], "call");
    assert_eq!(r["id"], 1);
    assert!(r["time"].is_i64());
    let boards = r["param"].as_array().unwrap();
    assert_eq!(boards.len(), 2);
    for k in [
        "serialnr", "source", "state", "battery", "comment", "board", "flipped", "clock",
    ] {
        assert!(boards[0].get(k).is_some(), "e-board object lacks {k}");
    }

    // Subscribe to board-1 and board-2 on one socket, then play.
    for (id, feed, serial) in [(2, 11, "board-1"), (3, 12, "board-2")] {
        let sub = json!({"id": id, "call": "subscribe", "param": {"feed": "eboardevent", "id": feed, "param": {"serialnr": serial}}});
        ws.send(Message::Text(sub.to_string().into()))
            .await
            .unwrap();
        let ack = ws_next(&mut ws).await;
        assert_eq!(
            ack,
            json!({"response": "call", "id": id, "param": null, "time": ack["time"]})
        );
        let first = ws_next(&mut ws).await;
        assert_eq!(first["response"], "feed");
        assert_eq!(first["id"], feed);
        assert_eq!(first["param"]["serialnr"], serial);
    }
    let bad = json!({"id": 4, "call": "subscribe", "param": {"feed": "eboardevent", "id": 13, "param": {"serialnr": "nope"}}});
    ws.send(Message::Text(bad.to_string().into()))
        .await
        .unwrap();
    let e = ws_next(&mut ws).await;
    assert_eq!(e["response"], "error");
    assert_eq!(e["id"], 4);
    ws.send(Message::Text(r#"{"id":5,"call":"feeds"}"#.into()))
        .await
        .unwrap();
    assert_eq!(ws_next(&mut ws).await["response"], "error");

    let mut handle = replay_source::spawn(s.hub.clone(), s.plan.take().unwrap(), Some(2000.0));
    // Collect feed frames of board-1 until its SAN list is the whole game.
    let want: Vec<String> = truth["sans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let mut frames = 0;
    let mut saw_omitted_board = false;
    let last_san = loop {
        let f = ws_next(&mut ws).await;
        assert_eq!(f["response"], "feed");
        if f["id"] != 11 {
            continue;
        }
        frames += 1;
        let p = &f["param"];
        assert!(p["san"].is_array() && p["match"].is_boolean() && p["flipped"].is_boolean());
        if p.get("board").is_none() {
            saw_omitted_board = true;
        } else if !p["board"].is_null() {
            let placement = p["board"].as_str().unwrap();
            assert_eq!(
                placement.split('/').count(),
                8,
                "board is a bare placement: {placement}"
            );
            assert!(!placement.contains(' '));
        }
        let san: Vec<String> = p["san"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect();
        if san.len() == want.len() {
            break san;
        }
    };
    assert_eq!(last_san, want);
    assert!(
        frames > want.len() / 2,
        "updates arrive as the game goes ({frames} frames)"
    );
    assert!(saw_omitted_board, "unchanged board is omitted");
    handle.wait_done().await;

    // setup: SAN counted from a later position; flip: orientation flag.
    let fen_after_2 = {
        let start: shakmaty::fen::Fen = truth["start_fen"].as_str().unwrap().parse().unwrap();
        let mut pos: shakmaty::Chess = start
            .into_position(shakmaty::CastlingMode::Standard)
            .unwrap();
        for san in &want[..2] {
            let m = san
                .parse::<shakmaty::san::SanPlus>()
                .unwrap()
                .san
                .to_move(&pos)
                .unwrap();
            shakmaty::Position::play_unchecked(&mut pos, m);
        }
        shakmaty::fen::Fen::from_position(&pos, shakmaty::EnPassantMode::Legal).to_string()
    };
    let call = json!({"id": 6, "call": "call", "param": {"id": 11, "method": "setup", "param": {"fen": fen_after_2}}});
    ws.send(Message::Text(call.to_string().into()))
        .await
        .unwrap();
    let mut got_ack = false;
    let mut after_setup = None;
    // Frames of the replay may still be queued; the one after the call's answer counts.
    while after_setup.is_none() {
        let f = ws_next(&mut ws).await;
        if f["response"] == "call" && f["id"] == 6 {
            got_ack = true;
        } else if got_ack && f["response"] == "feed" && f["id"] == 11 {
            after_setup = Some(f);
        }
    }
    assert!(got_ack);
    let p = &after_setup.unwrap()["param"];
    assert_eq!(p["start"], fen_after_2);
    assert_eq!(p["san"].as_array().unwrap().len(), want.len() - 2);
    let call = json!({"id": 7, "call": "call", "param": {"id": 11, "method": "flip", "param": {"flip": true}}});
    ws.send(Message::Text(call.to_string().into()))
        .await
        .unwrap();
    loop {
        let f = ws_next(&mut ws).await;
        if f["response"] == "feed" && f["id"] == 11 {
            assert_eq!(f["param"]["flipped"], true);
            break;
        }
    }
    let call = json!({"id": 8, "call": "call", "param": {"id": 11, "method": "setup", "param": {"fen": "not a fen"}}});
    ws.send(Message::Text(call.to_string().into()))
        .await
        .unwrap();
    loop {
        let f = ws_next(&mut ws).await;
        if f["id"] == 8 {
            assert_eq!(f["response"], "error");
            break;
        }
    }
    // Plain HTTP list.
    let (status, _, body) = get(s.outputs.livechess.unwrap(), "/api/v1.0/eboards");
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );

    handle.stop();
    s.outputs.shutdown().await;
}

/// The model rebuilt from events gives the same games as the engines, for every sample capture.
#[test]
fn model_from_events_equals_engine_games_for_every_capture() {
    let root = support::data("captures");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|d| d.ok())
        .filter(|d| d.path().is_dir())
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().filter_map(|f| f.ok()))
        .map(|f| f.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 100);
    for f in &files {
        let plan = Timeline::load(std::slice::from_ref(f), Layout::AsRecorded).unwrap();
        let hub = Hub::new(RoundInfo::default(), HubConfig::default());
        let mut sink = |board: &str, e: &eboardd::core::event::CoreEvent| -> std::io::Result<()> {
            hub.publish(board, e);
            Ok(())
        };
        let session = eboardd::replay::Playback::play(plan, &mut sink).unwrap();
        let ours = hub.with_round(eboardd::output::render::all_games_pgn);
        assert_eq!(
            strip_tags(&ours),
            strip_tags(&session.pgn()),
            "{}",
            f.display()
        );
        let errors: Vec<String> = hub.with_round(|r| {
            r.boards()
                .iter()
                .filter_map(|b| b.model_error.clone())
                .collect()
        });
        assert!(errors.is_empty(), "{}: {errors:?}", f.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_says_recovering_with_503_until_the_boards_are_rebuilt() {
    let files = vec![capture("clean/g0003.jsonl")];
    let s = setup(&files, Layout::Round, None).await;
    let health = |addr: SocketAddr| {
        let r = support::http::get(addr, "/api/v1/health");
        (r.status, serde_json::from_str::<Value>(&r.body).unwrap())
    };
    s.hub.set_recovering(Some((3, 10)));
    let (status, v) = tokio::task::spawn_blocking(move || health(s.http))
        .await
        .unwrap();
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["state"], "recovering");
    assert_eq!(v["ok"], false);
    assert_eq!(v["recovery"], json!({"done": 3, "total": 10}));
    s.hub.set_recovering(None);
    let (status, v) = tokio::task::spawn_blocking(move || health(s.http))
        .await
        .unwrap();
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["state"], "ready");
    assert_eq!(v["ok"], true);
    assert_eq!(v["recovery"], Value::Null);
    s.outputs.shutdown().await;
}

/// The claims helper over HTTP: a real game (Kaldarova–Abrahamyan, FIDE Women's World Rapid
/// 2024, ½-½ by repetition) is published into the hub move by move; `GET .../claim` answers
/// the threefold claim at the end (plies 54, 58, 62: after 27..., 29... and 31... Rd2), the
/// one after 30. Kg1 that is correct only with the written 30... Rd1+ (9.2.1.1), the fifty-move
/// count since 25... Nxe5, and refuses an illegal move, a bad ply and an unknown board.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_route_answers_threefold_and_fifty_moves() {
    use eboardd::core::event::{CoreEvent, EventKind};
    use shakmaty::{Chess, EnPassantMode, fen::Fen, san::San, san::SanPlus, uci::UciMove};
    const GAME: &str = "Nf3 Nf6 c4 e6 g3 d5 Bg2 Be7 O-O O-O b3 c5 cxd5 Nxd5 Bb2 Nc6 d4 cxd4 \
        Nxd4 Nxd4 Qxd4 Bf6 Qd2 Bxb2 Qxb2 Nf6 Nc3 Rb8 Rfd1 Bd7 e4 Qa5 b4 Qh5 b5 Rbc8 Rac1 Rfd8 \
        h3 Be8 Rxd8 Rxd8 a4 b6 Ne2 Nd7 Nf4 Qe5 Qxe5 Nxe5 Rc7 Rd1+ Kh2 Rd2 Kg1 Rd1+ Kh2 Rd2 \
        Kg1 Rd1+ Kh2 Rd2";
    let info = RoundInfo {
        round: 1,
        boards: vec!["b1".into()],
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let addr = out.http.unwrap();
    let ev = |kind| CoreEvent {
        t: 1_000_000,
        game: 1,
        kind,
    };
    let mut pos = Chess::default();
    hub.publish(
        "b1",
        &ev(EventKind::GameStarted {
            fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
            chess960: Some(518),
        }),
    );
    for (i, tok) in GAME.split_whitespace().enumerate() {
        let m = tok
            .trim_end_matches('+')
            .parse::<San>()
            .unwrap()
            .to_move(&pos)
            .unwrap();
        let uci = UciMove::from_standard(m);
        let san = SanPlus::from_move_and_play_unchecked(&mut pos, m).to_string();
        hub.publish(
            "b1",
            &ev(EventKind::MoveMade {
                ply: i as u32 + 1,
                san,
                uci,
                fen: Fen::from_position(&pos, EnPassantMode::Legal).to_string(),
                recovered: false,
            }),
        );
    }

    let (status, _, body) = get(addr, "/api/v1/boards/b1/claim");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["ply"], 62);
    assert_eq!(v["threefold"]["correct"], true);
    let plies: Vec<_> = v["threefold"]["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["ply"].as_u64().unwrap())
        .collect();
    assert_eq!(plies, vec![54, 58, 62]);
    assert_eq!(v["threefold"]["occurrences"][0]["after"], "27... Rd2");
    assert_eq!(v["threefold"]["side_to_move"], "white");
    assert_eq!(v["fifty_moves"]["halfmoves"], 12);
    assert_eq!(v["fifty_moves"]["claimable"], false);
    assert_eq!(v["fifty_moves"]["last_irreversible"]["san"], "25... Nxe5");

    let (status, _, body) = get(addr, "/api/v1/boards/b1/claim?ply=59");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["threefold"]["correct"], false);
    let (status, _, body) = get(addr, "/api/v1/boards/b1/claim?ply=59&move=Rd1%2B");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["threefold"]["correct"], true);
    assert_eq!(v["intended"]["uci"], "d2d1");

    let (status, _, body) = get(addr, "/api/v1/boards/b1/claim?ply=59&move=Qd1");
    assert_eq!(status, 400);
    assert!(body.contains("Qd1"), "{body}");
    let (status, _, _) = get(addr, "/api/v1/boards/b1/claim?ply=99");
    assert_eq!(status, 400);
    let (status, _, _) = get(addr, "/api/v1/boards/b1/claim?ply=x");
    assert_eq!(status, 400);
    let (status, _, _) = get(addr, "/api/v1/boards/nope/claim");
    assert_eq!(status, 404);
    drop(out);
}
