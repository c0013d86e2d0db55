//! The broadcast server and the replay tools under hostile input (issue 13): unauthenticated
//! uploads, half-sent requests, connection floods, foreign origins, hostile capture headers,
//! names that would forge PGN tags, planted symlinks, directory loops.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use eboardd::output::{Hub, HubConfig, OutputConfig, Outputs, RoundInfo};
use eboardd::replay::{Layout, Timeline};

const TOKEN: &str = "test-token-123";

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/hostile")
        .join(name)
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("eboardd-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The sample game with its header line replaced.
fn with_header(dir: &Path, name: &str, header: &str) -> PathBuf {
    let text = std::fs::read_to_string(data("game.jsonl")).unwrap();
    let body = text.split_once('\n').unwrap().1;
    let path = dir.join(name);
    std::fs::write(&path, format!("{header}\n{body}")).unwrap();
    path
}

async fn serve(cfg: OutputConfig) -> (Hub, Outputs, SocketAddr) {
    let plan = Timeline::load(&[data("game.jsonl")], Layout::AsRecorded).unwrap();
    let info = RoundInfo {
        round: 1,
        boards: plan.boards().map(String::from).collect(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        token: Some(TOKEN.into()),
        ..cfg
    };
    let outputs = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let http = outputs.http.unwrap();
    (hub, outputs, http)
}

/// Send `head` (and `body`), then read the whole answer; `None` when the server closed the
/// connection without answering.
fn exchange(addr: SocketAddr, head: &str, body: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    match s.read_to_end(&mut raw) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("no answer: {e}"),
    }
    (!raw.is_empty()).then(|| String::from_utf8_lossy(&raw).into_owned())
}

fn status(resp: &str) -> u16 {
    resp.split(' ').nth(1).unwrap().parse().unwrap()
}

fn body_json(resp: &str) -> serde_json::Value {
    serde_json::from_str(resp.split_once("\r\n\r\n").unwrap().1).unwrap()
}

fn header<'a>(resp: &'a str, name: &str) -> Option<&'a str> {
    let head = resp.split_once("\r\n\r\n").unwrap().0;
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_checked_before_any_body_is_read() {
    let (_hub, outputs, addr) = serve(OutputConfig::default()).await;
    // A 2 MB upload without a token, of which only the first KiB is ever sent: the answer
    // comes without the server waiting for the rest.
    let head = "POST /api/v1/boards/board-1/result HTTP/1.1\r\nHost: t\r\n\
                Content-Type: application/json\r\nContent-Length: 2000000\r\n\r\n";
    let resp = tokio::task::spawn_blocking(move || exchange(addr, head, &[b' '; 1024]))
        .await
        .unwrap()
        .expect("an answer");
    assert_eq!(status(&resp), 401, "{resp}");
    assert!(body_json(&resp)["error"].is_string());

    // With the token, a body over 16 KiB is refused from its length alone.
    let head = format!(
        "POST /api/v1/boards/board-1/players HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Length: 2000000\r\n\r\n"
    );
    let resp = tokio::task::spawn_blocking(move || exchange(addr, &head, b"{"))
        .await
        .unwrap()
        .expect("an answer");
    assert_eq!(status(&resp), 413, "{resp}");

    // A body that never arrives in full is given up at the body deadline (408).
    let head = format!(
        "POST /api/v1/boards/board-1/players HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Length: 100\r\n\r\n"
    );
    let resp = tokio::task::spawn_blocking(move || exchange(addr, &head, b"{\"white\""))
        .await
        .unwrap()
        .expect("an answer");
    assert_eq!(status(&resp), 408, "{resp}");

    // JSON arrays where an object is meant are refused, in the JSON error shape.
    let body = r#"[{"name":"A"},{"name":"B"}]"#;
    let head = format!(
        "POST /api/v1/boards/board-1/players HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let resp = tokio::task::spawn_blocking(move || exchange(addr, &head, body.as_bytes()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status(&resp), 400, "{resp}");
    assert!(
        body_json(&resp)["error"]
            .as_str()
            .unwrap()
            .contains("object")
    );

    // Framework errors (a wrong method, a bad query) are JSON too.
    let resp = tokio::task::spawn_blocking(move || {
        exchange(
            addr,
            "DELETE /api/v1/boards HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            b"",
        )
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status(&resp), 405, "{resp}");
    assert!(body_json(&resp)["error"].is_string(), "{resp}");
    outputs.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_are_closed_by_the_server() {
    let (_hub, outputs, addr) = serve(OutputConfig::default()).await;
    // Slowloris: a request line and one header, then nothing. The server closes the
    // connection (header deadline) instead of keeping it for ever.
    let closed = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: t\r\n")
            .unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).is_ok()
    })
    .await
    .unwrap();
    assert!(closed, "the server never closed a half-sent request");
    // An idle keep-alive connection is closed too, after answering its request.
    let closed = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        s.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).is_ok() && String::from_utf8_lossy(&buf).contains("200 OK")
    })
    .await
    .unwrap();
    assert!(closed, "an idle keep-alive connection was kept for ever");
    outputs.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_capped_per_address() {
    let (_hub, outputs, addr) = serve(OutputConfig {
        max_connections_per_address: Some(3),
        ..Default::default()
    })
    .await;
    let result = tokio::task::spawn_blocking(move || {
        // Three idle connections take this address's places...
        let held: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // ...so a fourth is closed without an answer (the server may already have accepted it
        // before counting: wait for the answer or the close).
        let fourth = exchange(
            addr,
            "GET /api/v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
            b"",
        );
        drop(held);
        // Places come back when connections close: poll until one is free again.
        let mut answered = None;
        for _ in 0..200 {
            answered = exchange(
                addr,
                "GET /api/v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                b"",
            );
            if answered.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        (fourth, answered)
    })
    .await
    .unwrap();
    assert_eq!(result.0, None, "the fourth connection was served");
    assert_eq!(status(&result.1.expect("served again")), 200);
    outputs.shutdown().await;
}

fn ws_handshake(addr: SocketAddr, path: &str, origin: Option<&str>) -> u16 {
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{origin}Connection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(head.as_bytes()).unwrap();
    let mut buf = [0u8; 12];
    s.read_exact(&mut buf).unwrap();
    String::from_utf8_lossy(&buf[9..12]).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_origins_are_refused_on_the_event_stream() {
    let (_hub, outputs, addr) = serve(OutputConfig {
        livechess: Some("127.0.0.1:0".parse().unwrap()),
        allowed_origins: vec!["https://broadcast.example.org".into()],
        ..Default::default()
    })
    .await;
    let lc = outputs.livechess.unwrap();
    let codes = tokio::task::spawn_blocking(move || {
        [
            ws_handshake(addr, "/api/v1/events", Some("https://evil.example")),
            ws_handshake(addr, "/api/v1/events", Some(&format!("http://{addr}"))),
            ws_handshake(
                addr,
                "/api/v1/events",
                Some("https://broadcast.example.org"),
            ),
            ws_handshake(addr, "/api/v1/events", None),
            // LiveChess keeps accepting other origins by default (lichess's DGT page).
            ws_handshake(lc, "/api/v1.0", Some("https://lichess.org")),
        ]
    })
    .await
    .unwrap();
    assert_eq!(codes, [403, 101, 101, 101, 101]);
    // The SSE stream follows the same rule.
    let sse = tokio::task::spawn_blocking(move || {
        exchange(
            addr,
            "GET /api/v1/events/sse HTTP/1.1\r\nHost: t\r\nOrigin: https://evil.example\r\n\
             Connection: close\r\n\r\n",
            b"",
        )
        .unwrap()
    })
    .await
    .unwrap();
    assert_eq!(status(&sse), 403, "{sse}");
    outputs.shutdown().await;

    // With an allow-list, LiveChess refuses other origins.
    let (_hub, outputs, _) = serve(OutputConfig {
        livechess: Some("127.0.0.1:0".parse().unwrap()),
        livechess_allowed_origins: Some(vec!["https://lichess.org".into()]),
        ..Default::default()
    })
    .await;
    let lc = outputs.livechess.unwrap();
    let codes = tokio::task::spawn_blocking(move || {
        [
            ws_handshake(lc, "/api/v1.0", Some("https://evil.example")),
            ws_handshake(lc, "/api/v1.0", Some("https://lichess.org")),
        ]
    })
    .await
    .unwrap();
    assert_eq!(codes, [403, 101]);
    outputs.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_carries_security_headers() {
    let (_hub, outputs, addr) = serve(OutputConfig::default()).await;
    let (page, api) = tokio::task::spawn_blocking(move || {
        let get = |p: &str| {
            exchange(
                addr,
                &format!("GET {p} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"),
                b"",
            )
            .unwrap()
        };
        (get("/"), get("/api/v1/boards"))
    })
    .await
    .unwrap();
    assert_eq!(header(&page, "x-content-type-options"), Some("nosniff"));
    assert_eq!(header(&page, "x-frame-options"), Some("DENY"));
    assert!(
        header(&page, "content-security-policy").is_some_and(|v| v.contains("frame-ancestors"))
    );
    assert_eq!(header(&api, "x-content-type-options"), Some("nosniff"));
    outputs.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_snapshot_arrives_whole_over_the_websocket() {
    use futures_util::StreamExt;
    // A round of many boards: a snapshot of many kilobytes.
    let boards: Vec<String> = (1..=60).map(|i| format!("board-{i}")).collect();
    let info = RoundInfo {
        round: 1,
        boards: boards.clone(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    for b in &boards {
        hub.set_status(
            b,
            eboardd::output::BoardStatus {
                comment: Some("x".repeat(400)),
                ..Default::default()
            },
        );
    }
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let outputs = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let url = format!("ws://{}/api/v1/events", outputs.http.unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let first = ws.next().await.unwrap().unwrap();
    let text = first.into_text().unwrap();
    assert!(text.len() > 32 * 1024, "{}", text.len());
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["kind"], "snapshot");
    assert_eq!(v["boards"].as_array().unwrap().len(), 60);
    outputs.shutdown().await;
}

fn eboardd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_eboardd"))
}

#[test]
fn a_multi_byte_date_in_a_capture_header_is_a_clean_error() {
    let dir = temp_dir("date");
    // "é" is two bytes: byte 10 falls inside it.
    let cap = with_header(
        &dir,
        "date.jsonl",
        r#"{"format":"eboard-capture","version":1,"created":"2026-11-2éT10:00:00Z"}"#,
    );
    let out = eboardd().arg("replay").arg(&cap).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "replay: {err}");
    assert!(err.contains("created"), "{err}");
    let out = eboardd()
        .args([
            "serve-replay",
            "--exit",
            "--speed",
            "0",
            "--http",
            "127.0.0.1:0",
        ])
        .arg(&cap)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "serve-replay: {err}");
    // Directory replay too.
    let out = eboardd().arg("replay").arg(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_name_with_a_line_break_cannot_forge_pgn_tags() {
    let dir = temp_dir("names");
    let header = serde_json::json!({
        "format": "eboard-capture", "version": 1, "created": "2026-11-29T10:00:00Z",
        "tags": {
            "white": "Carlsen\n[Result \"0-1\"]\n\n1. f3 e5 0-1\n\n[Event \"Forged\"]",
            "black": "\u{202E}tsinmoN",
            "event": "Open\r\n[WhiteElo \"3000\"]",
        }
    });
    let cap = with_header(&dir, "names.jsonl", &header.to_string());
    let out = eboardd().arg("replay").arg(&cap).output().unwrap();
    assert!(out.status.success());
    let pgn = String::from_utf8(out.stdout).unwrap();
    let tags: Vec<&str> = pgn.lines().filter(|l| l.starts_with('[')).collect();
    let count = |name: &str| tags.iter().filter(|l| l.starts_with(name)).count();
    assert_eq!(count("[Event "), 1, "{pgn}");
    assert_eq!(count("[Result "), 1, "{pgn}");
    assert_eq!(count("[WhiteElo "), 0, "{pgn}");
    assert!(!pgn.contains('\u{202E}'), "{pgn}");
    for line in pgn.lines().filter(|l| l.starts_with('[')) {
        assert!(line.ends_with("\"]"), "tag line broken: {line:?}");
    }
    assert!(
        pgn.contains("[White \"Carlsen [Result \\\"0-1\\\"]"),
        "{pgn}"
    );
}

#[test]
fn a_directory_loop_does_not_stop_replay() {
    let dir = temp_dir("loop");
    std::fs::copy(data("game.jsonl"), dir.join("game.jsonl")).unwrap();
    std::os::unix::fs::symlink(&dir, dir.join("again")).unwrap();
    let out = eboardd().arg("replay").arg(&dir).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pgn = String::from_utf8(out.stdout).unwrap();
    assert_eq!(pgn.matches("[Event ").count(), 1, "{pgn}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_files_never_go_through_a_planted_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let (hub, outputs, _) = serve(OutputConfig::default()).await;
    let dir = temp_dir("relay");
    let elsewhere = temp_dir("relay-elsewhere");
    std::os::unix::fs::symlink(&elsewhere, dir.join("round-1")).unwrap();
    let mut writer = eboardd::output::relay::RelayWriter::new(&dir).unwrap();
    let err = writer
        .flush(&hub)
        .expect_err("a planted round folder is refused");
    assert!(err.to_string().contains("round-1"), "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // Without the link, files are written with their own modes.
    std::fs::remove_file(dir.join("round-1")).unwrap();
    writer.flush(&hub).unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir.join("games.pgn")), 0o644);
    assert_eq!(mode(&dir.join("round-1")), 0o755);
    outputs.shutdown().await;
}

#[test]
fn capture_files_and_folders_have_fixed_modes() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("modes");
    let path = dir.join("2026-11-30").join("board-1.jsonl");
    let _f = eboardd::daemon::captures::CaptureFile::create(&path, serde_json::Map::new(), false)
        .unwrap();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o640);
    assert_eq!(mode(path.parent().unwrap()), 0o750);
    // A planted day folder (a link) is refused.
    let elsewhere = temp_dir("modes-elsewhere");
    std::os::unix::fs::symlink(&elsewhere, dir.join("2026-12-01")).unwrap();
    let planted = dir.join("2026-12-01").join("board-1.jsonl");
    assert!(
        eboardd::daemon::captures::CaptureFile::create(&planted, serde_json::Map::new(), false)
            .is_err()
    );
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
