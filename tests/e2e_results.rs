//! End to end: results back out. `eboardd run --config FILE` serves one emulated board; round 1
//! of a four-player TRF is loaded with the pairing engine's list (`eboardd round load FILE
//! --pairs LIST`): board 1 is the emulated board's, board 2 has no board. The arbiter ends
//! board 1's game with `1-0` and confirms it, and gives board 2 to White by forfeit; the round
//! is complete only then. `GET /api/v1/rounds/1/results.trf` and `eboardd round results` give
//! the TRF with round 1's columns, points and ranks filled in and every other byte as loaded
//! (CRLF line ends included), and a restart keeps the confirmed results (`round.json`).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::daemon::*;
use support::http::{self, free_port};

use support::http::json_when_up as json;

const TOKEN: &str = "e2e-results-token";

/// The four-player TRF before round 1 (CRLF line ends), as written for this test from TRF16.
const START: &[u8] = include_bytes!("data/trf/e2e-start.trf");

/// POST `body` to `path` with the token: (status, body).
fn post(port: u16, path: &str, body: &str) -> (u16, String) {
    let r = http::with_token(port, "POST", path, TOKEN, body);
    (r.status, r.body)
}

/// GET with the token, the body as bytes: (status, complete header, body).
fn get_bytes(port: u16, path: &str) -> (u16, Option<String>, Vec<u8>) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(http::local(port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: localhost\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let complete = head
        .lines()
        .find_map(|l| l.strip_prefix("x-round-complete: "))
        .map(str::to_string);
    (status, complete, raw[split + 4..].to_vec())
}

/// GET until `pred` holds on the JSON body; panics with the last body after 20 s.
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

/// `eboardd round ARGS...` against the daemon; (success, stdout, stderr).
async fn round_cli(args: Vec<String>) -> (bool, Vec<u8>, String) {
    let out = tokio::task::spawn_blocking(move || {
        Command::new(bin())
            .arg("round")
            .args(&args)
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// What round 1's results make of `START`, worked out by hand from TRF16: board 1 (start rank
/// 1 White against 3) `1-0`; board 2 (4 White against 2) `+` (2 forfeited). Points 81–84; ranks
/// 86–89 by points, ties by the rank before (1 and 4 have a point: 1 first); round 1 at 92–99.
fn expected() -> Vec<u8> {
    let text = String::from_utf8(START.to_vec()).unwrap();
    let mut out = String::new();
    for line in text.split_inclusive("\r\n") {
        let body = line.trim_end_matches("\r\n");
        let new = match body.get(0..8) {
            Some("001    1") => format!("{} 1.0    1     3 w 1", &body[..80]),
            Some("001    2") => format!("{} 0.0    3     4 b -", &body[..80]),
            Some("001    3") => format!("{} 0.0    4     1 b 0", &body[..80]),
            Some("001    4") => format!("{} 1.0    2     2 w +", &body[..80]),
            _ => body.to_string(),
        };
        out.push_str(&new);
        out.push_str("\r\n");
    }
    out.into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirmed_results_go_back_into_the_trf_and_survive_a_restart() {
    let one = single("e2e-results", 3, 41021, 1000.0, None);
    let http = free_port();
    let token = one.dir.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let cfg = one.write_config(&format!(
        "[event]\nname = \"Results Cup\"\nround = \"1\"\n\n\
         [[board]]\nnumber = 1\nserial = \"41021\"\n\n\
         [outputs]\nhttp = \"127.0.0.1:{http}\"\ntoken_file = \"{}\"\n",
        token.display()
    ));
    let mut d = one.start(&["--config", &cfg]);
    one.wait_done(&mut d, "board-1").await;

    // Round 1 from the TRF and the engine's list.
    let trf = one.dir.join("event.trf");
    std::fs::write(&trf, START).unwrap();
    let list = one.dir.join("round1.txt");
    std::fs::write(&list, "2\n1 3\n4 2\n").unwrap();
    let (ok, _, err) = round_cli(vec![
        "load".into(),
        trf.display().to_string(),
        "--pairs".into(),
        list.display().to_string(),
        "--round".into(),
        "1".into(),
        "--config".into(),
        cfg.clone(),
    ])
    .await;
    assert!(ok, "round load --pairs: {err}");
    let r1 = json_until(http, "/api/v1/rounds/1", |v| {
        v["boards"][1]["white"]["name"] == "Delta, Dan"
    })
    .await;
    assert_eq!(r1["boards"][0]["white"]["name"], "Alpha, Ann", "{r1:#}");
    assert_eq!(r1["boards"][0]["black"]["name"], "Gamma, Gus", "{r1:#}");
    assert_eq!(r1["boards"][1]["board"], "board-2", "{r1:#}");
    assert_eq!(r1["complete"], false);
    assert_eq!(r1["boards"][0]["confirmed"], false);
    assert!(r1["boards"][0]["result"].is_null(), "no result yet: {r1:#}");

    // Nothing to confirm yet on board 1 (its game runs), nor on board 2 (no game).
    let (code, msg) = post(http, "/api/v1/boards/board-1/result", r#"{"confirm":true}"#);
    assert_eq!(code, 409, "{msg}");
    let (code, msg) = post(http, "/api/v1/boards/board-2/result", r#"{"confirm":true}"#);
    assert_eq!(code, 409, "{msg}");
    let (code, msg) = post(http, "/api/v1/boards/board-2/result", r#"{"result":"H"}"#);
    assert_eq!(code, 400, "a bye has no board: {msg}");
    let (code, _, _) = get_bytes(http, "/api/v1/rounds/1/results.trf");
    assert_eq!(code, 200);

    // Board 1: the arbiter ends the game 1-0; its game then proposes 1-0, confirmed again.
    let (code, msg) = post(http, "/api/v1/boards/board-1/result", r#"{"result":"1-0"}"#);
    assert_eq!(code, 200, "{msg}");
    json_until(http, "/api/v1/rounds/1", |v| {
        v["boards"][0]["game"]["result"] == "1-0"
    })
    .await;
    let (code, msg) = post(http, "/api/v1/boards/board-1/result", r#"{"confirm":true}"#);
    assert_eq!(code, 200, "{msg}");
    let r1 = json(http, "/api/v1/rounds/1").await;
    assert_eq!(r1["boards"][0]["result"], "1-0");
    assert_eq!(r1["boards"][0]["confirmed"], true);
    assert_eq!(r1["complete"], false, "board 2 is not confirmed: {r1:#}");
    let (_, complete, _) = get_bytes(http, "/api/v1/rounds/1/results.trf");
    assert_eq!(complete.as_deref(), Some("false"));

    // Board 2: Black (start rank 2) did not come.
    let (code, msg) = post(http, "/api/v1/boards/board-2/result", r#"{"result":"+"}"#);
    assert_eq!(code, 200, "{msg}");
    let r1 = json(http, "/api/v1/rounds/1").await;
    assert_eq!(r1["complete"], true, "{r1:#}");
    let boards = json(http, "/api/v1/boards").await;
    let b2 = boards["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["board"] == "board-2")
        .unwrap();
    assert_eq!(
        (&b2["result"], &b2["confirmed"]),
        (&"+".into(), &true.into())
    );

    // The TRF back: round 1 filled in, every other byte as loaded.
    let (code, complete, body) = get_bytes(http, "/api/v1/rounds/1/results.trf");
    assert_eq!(code, 200);
    assert_eq!(complete.as_deref(), Some("true"));
    assert_eq!(
        String::from_utf8_lossy(&body),
        String::from_utf8_lossy(&expected())
    );
    assert_eq!(body, expected());
    let (code, _, res) = get_bytes(http, "/api/v1/rounds/1/results.res");
    assert_eq!(code, 200);
    assert_eq!(String::from_utf8_lossy(&res), "2 1\n1 3 1\n4 2 3\n");
    let (_, _, csv) = get_bytes(http, "/api/v1/rounds/1/results.csv");
    assert_eq!(
        String::from_utf8_lossy(&csv),
        "round,board,white,black,white_rank,black_rank,result\n\
         1,1,\"Alpha, Ann\",\"Gamma, Gus\",1,3,1-0\n\
         1,2,\"Delta, Dan\",\"Beta, Bob\",4,2,+-\n"
    );

    // The same file from the command line, after a restart (the results are kept).
    d.terminate();
    let d = one.start(&["--config", &cfg]);
    json_until(http, "/api/v1/rounds/1", |v| v["complete"] == true).await;
    let out = one.dir.join("results.trf");
    let (ok, _, err) = round_cli(vec![
        "results".into(),
        "--round".into(),
        "1".into(),
        "--config".into(),
        cfg.clone(),
        "--out".into(),
        out.display().to_string(),
    ])
    .await;
    assert!(ok, "round results: {err}");
    assert!(!err.contains("not complete"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), expected());
    let (ok, _, err) = round_cli(vec![
        "results".into(),
        "--round".into(),
        "7".into(),
        "--config".into(),
        cfg.clone(),
    ])
    .await;
    assert!(!ok);
    assert!(
        err.starts_with("eboardd: error: round 7 results refused (404)")
            && err.lines().count() == 1,
        "{err}"
    );
    one.finish(d, "board-1").await;
}
