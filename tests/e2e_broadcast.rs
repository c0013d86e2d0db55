//! End to end: `eboardd run` with its broadcast outputs on, serving an emulated board over a
//! pseudo-terminal; the HTTP API and the round's PGN show the game the board played.

mod e2e_support;

use std::io::{Read, Write};
use std::net::TcpStream;

use e2e_support::*;

/// A free localhost port (bound once and released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A plain HTTP/1.0 GET; returns (status line, body).
fn get(port: u16, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").expect("request");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("response");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (
        head.lines().next().unwrap_or_default().to_string(),
        body.to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_feeds_its_http_outputs() {
    let one = single("e2e-broadcast", 1, 41001, 1000.0, None);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = Daemon::start(
        std::slice::from_ref(&one.link),
        &one.caps,
        &["--http", &addr, "--event", "E2E Broadcast"],
    );
    one.wait_done(&mut d, &one.id).await;

    let (status, boards) = get(port, "/api/v1/boards");
    assert!(status.contains("200"), "{status}");
    assert!(boards.contains(&one.id), "{boards}");

    let (status, pgn) = get(port, "/api/v1/games.pgn");
    assert!(status.contains("200"), "{status}");
    let sans = san(&one.game);
    let mut rest = pgn.as_str();
    for s in &sans {
        let at = rest
            .find(s.as_str())
            .unwrap_or_else(|| panic!("{s} missing from the round's PGN:\n{pgn}"));
        rest = &rest[at + s.len()..];
    }
    assert!(pgn.contains("[Event \"E2E Broadcast\"]"), "{pgn}");

    let (status, page) = get(port, "/");
    assert!(status.contains("200"), "{status}");
    assert!(page.contains("<html"), "the arbiter page is served");
    let id = one.id.clone();
    one.finish(d, &id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_file_alone_drives_the_outputs() {
    let one = single("e2e-config-outputs", 2, 41002, 1000.0, None);
    let port = free_port();
    let relay = one.dir.join("relay");
    let config = one.dir.join("eboardd.toml");
    std::fs::write(
        &config,
        format!(
            "[event]\nname = \"Config Open\"\nsite = \"Hall 2\"\nround = \"4\"\n\n\
             [[board]]\nnumber = 1\nserial = \"41002\"\nwhite = \"Alpha, Ann\"\nblack = \"Beta, Bob\"\n\n\
             [outputs]\nhttp = \"127.0.0.1:{port}\"\nrelay_dir = \"{}\"\n",
            relay.display()
        ),
    )
    .unwrap();
    let cfg = config.to_string_lossy().to_string();
    let mut d = Daemon::start(
        std::slice::from_ref(&one.link),
        &one.caps,
        &["--config", &cfg],
    );
    one.wait_done(&mut d, "board-1").await;

    // The API on the configured address, with the configured event.
    let (status, pgn) = get(port, "/api/v1/games.pgn");
    assert!(status.contains("200"), "{status}");
    assert!(pgn.contains("[Event \"Config Open\"]"), "{pgn}");
    assert!(pgn.contains("[Site \"Hall 2\"]"), "{pgn}");
    assert!(pgn.contains("[White \"Alpha, Ann\"]"), "{pgn}");
    assert!(pgn.contains("[Round \"4."), "{pgn}");
    // Relay files in the configured folder.
    let relay_pgn = std::fs::read_to_string(relay.join("games.pgn")).expect("relay games.pgn");
    assert!(relay_pgn.contains("[Event \"Config Open\"]"), "{relay_pgn}");
    assert!(relay_pgn.contains("[Black \"Beta, Bob\"]"), "{relay_pgn}");
    let sans = san(&one.game);
    assert!(relay_pgn.contains(sans[0].as_str()), "{relay_pgn}");
    one.finish(d, "board-1");
}
