//! End to end: `eboardd run` with its broadcast outputs on, serving an emulated board over a
//! pseudo-terminal; the HTTP API and the round's PGN show the game the board played.

mod support;

use support::daemon::*;
use support::http::{self, free_port};

/// A GET on localhost: (status code as text, body).
fn get(port: u16, path: &str) -> (String, String) {
    let r = http::get(http::local(port), path);
    (r.status.to_string(), r.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_feeds_its_http_outputs() {
    let one = single("e2e-broadcast", 1, 41001, 1000.0, None);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = one.start(&["--http", &addr, "--event", "E2E Broadcast"]);
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
    one.finish(d, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_file_alone_drives_the_outputs() {
    let one = single("e2e-config-outputs", 2, 41002, 1000.0, None);
    let port = free_port();
    let relay = one.dir.join("relay");
    let cfg = one.write_config(&format!(
            "[event]\nname = \"Config Open\"\nsite = \"Hall 2\"\nround = \"4\"\n\n\
             [[board]]\nnumber = 1\nserial = \"41002\"\nwhite = \"Alpha, Ann\"\nblack = \"Beta, Bob\"\n\n\
             [outputs]\nhttp = \"127.0.0.1:{port}\"\nrelay_dir = \"{}\"\n",
            relay.display()
        ));
    let mut d = one.start(&["--config", &cfg]);
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
    one.finish(d, "board-1").await;
}

/// A GET that may find nobody listening.
fn try_get(port: u16, path: &str) -> Option<(String, String)> {
    http::try_get(http::local(port), path).map(|r| (r.status.to_string(), r.body))
}

/// Polls `cond` every 50 ms for at most 15 s (reloads are asynchronous to the signal).
async fn eventually(what: &str, log: &std::path::Path, cond: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what} never happened; daemon log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_restarts_changed_outputs_and_a_bad_file_keeps_them() {
    let one = single("e2e-reload-outputs", 3, 41003, 1000.0, None);
    let (port1, port2) = (free_port(), free_port());
    let write = |event: &str, port: u16, extra: &str| {
        one.write_config(&format!(
            "[event]\nname = \"{event}\"\n\n[outputs]\nhttp = \"127.0.0.1:{port}\"\n{extra}"
        ))
    };
    let cfg = write("Before Reload", port1, "");
    let mut d = one.start(&["--config", &cfg]);
    let id = one.id.clone();
    one.wait_done(&mut d, &id).await;
    let (_, pgn) = get(port1, "/api/v1/games.pgn");
    assert!(pgn.contains("[Event \"Before Reload\"]"), "{pgn}");

    // A new address and event name: the HTTP server moves, the game stays.
    write("After Reload", port2, "");
    d.signal(nix::sys::signal::Signal::SIGHUP);
    eventually("the API on the new address", &d.log, || {
        try_get(port2, "/api/v1/games.pgn")
            .is_some_and(|(s, b)| s.contains("200") && b.contains("[Event \"After Reload\"]"))
    })
    .await;
    let (_, pgn) = get(port2, "/api/v1/games.pgn");
    let sans = san(&one.game);
    assert!(
        pgn.contains(sans[sans.len() - 1].as_str()),
        "the game survives the restart of the outputs:\n{pgn}"
    );
    assert!(
        try_get(port1, "/api/v1/health").is_none(),
        "the old address is closed"
    );

    // A bad file: refused with its line, the outputs keep running as they were.
    write("Broken", port1, "bogus_key = 1\n");
    d.signal(nix::sys::signal::Signal::SIGHUP);
    eventually("the reload refused", &d.log, || {
        std::fs::read_to_string(&d.log).is_ok_and(|l| l.contains("reload refused"))
    })
    .await;
    let log = std::fs::read_to_string(&d.log).unwrap();
    assert!(log.contains("bogus_key"), "the error names the key:\n{log}");
    let (status, pgn) = get(port2, "/api/v1/games.pgn");
    assert!(status.contains("200") && pgn.contains("[Event \"After Reload\"]"));
    assert!(try_get(port1, "/api/v1/health").is_none());
    one.finish(d, &id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_and_the_streams_give_every_event_the_same_seq() {
    let one = single("e2e-one-seq", 3, 41003, 1000.0, None);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = one.start(&["--http", &addr]);
    one.wait_done(&mut d, &one.id).await;
    let printed: Vec<serde_json::Value> = d.events.lock().unwrap().clone();
    let last = printed
        .last()
        .and_then(|v| v["seq"].as_u64())
        .expect("events printed");
    let by_seq = |lines: Vec<String>| -> Vec<serde_json::Value> {
        let values = lines.iter().map(|l| serde_json::from_str(l).expect("JSON"));
        values
            .take_while(|v: &serde_json::Value| v["seq"].as_u64() <= Some(last))
            .collect()
    };
    // The WebSocket from the first message on.
    let url = format!("ws://{addr}/api/v1/events?since=0");
    let mut ws = support::streams::ws_connect(&url).await;
    let from_ws = by_seq(support::streams::ws_events_until(&mut ws, last).await);
    // SSE likewise.
    let sock: std::net::SocketAddr = addr.parse().unwrap();
    let sse = tokio::task::spawn_blocking(move || {
        support::streams::read_sse(sock, "/api/v1/events/sse?since=0", last)
    })
    .await
    .unwrap();
    let from_sse = by_seq(sse.into_iter().map(|(_, data)| data).collect());
    assert!(
        printed.iter().any(|v| v["kind"] == "move_made"),
        "the game's moves were printed"
    );
    assert_eq!(from_ws.len(), printed.len(), "one message per seq on both");
    for (p, w) in printed.iter().zip(&from_ws) {
        assert_eq!(p, w, "stdout and WebSocket differ");
    }
    assert_eq!(from_sse, printed, "stdout and SSE differ");
    let id = one.id.clone();
    one.finish(d, &id).await;
}
