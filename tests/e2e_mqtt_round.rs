//! Several daemons, one round, end to end: two `eboardd run` daemons (two halls), each serving
//! an emulated DGT board over a pseudo-terminal and publishing to one mosquitto broker, and
//! `eboardd serve-mqtt` serving the whole round from the broker. Its API must show both boards
//! with the games their halls played; a hall whose daemon dies (its Last Will) shows offline and
//! its board keeps its game.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::broker::{Broker, require_mosquitto};
use support::daemon::*;
use support::http::{self, free_port};

/// `GET /api/v1/boards` of the round server, if it answers.
fn boards(port: u16) -> Option<Value> {
    let r = http::try_get(http::local(port), "/api/v1/boards")?;
    serde_json::from_str(&r.body).ok()
}

/// SAN of a board's current game in a round snapshot.
fn sans(round: &Value, board: &str) -> Vec<String> {
    round["boards"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["board"] == board))
        .and_then(|b| b["game"]["moves"].as_array())
        .map(|m| {
            m.iter()
                .map(|m| m["san"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The board's snapshot in a round snapshot.
fn board_of<'a>(round: &'a Value, board: &str) -> Option<&'a Value> {
    round["boards"]
        .as_array()?
        .iter()
        .find(|b| b["board"] == board)
}

/// Polls the round server until `cond` holds (at most 30 s).
async fn until(what: &str, port: u16, log: &std::path::Path, cond: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if boards(port).is_some_and(|v| cond(&v)) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: not in time; round server log:\n{}\nlast answer: {:?}",
            std::fs::read_to_string(log).unwrap_or_default(),
            boards(port)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_on_one_broker_are_served_as_one_round() {
    let Some(bin) = require_mosquitto() else {
        return;
    };
    let broker = Broker::start(&bin, None);
    let mqtt = format!("mqtt://127.0.0.1:{}", broker.port);

    // The round server, started first: it learns both halls from the broker.
    let http = free_port();
    let scratch_dir = scratch("e2e-mqtt-round-server");
    std::fs::create_dir_all(&scratch_dir).unwrap();
    let log = scratch_dir.join("serve-mqtt.log");
    let _server = Server(
        Command::new(support::daemon::bin())
            .args(["serve-mqtt", "--from", &mqtt, "--http"])
            .arg(format!("127.0.0.1:{http}"))
            .args(["--event", "Two Halls Open"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start eboardd serve-mqtt"),
    );

    // Two halls, one board each.
    let one = single("e2e-mqtt-round-1", 1, 42001, 1000.0, None);
    let two = single("e2e-mqtt-round-2", 2, 42002, 1000.0, None);
    let mut d1 = Daemon::start(
        std::slice::from_ref(&one.link),
        &one.caps,
        &["--mqtt", &mqtt, "--mqtt-node", "hall-1"],
    );
    let mut d2 = Daemon::start(
        std::slice::from_ref(&two.link),
        &two.caps,
        &["--mqtt", &mqtt, "--mqtt-node", "hall-2"],
    );
    let (id1, id2) = (one.id.clone(), two.id.clone());
    one.wait_done(&mut d1, &id1).await;
    two.wait_done(&mut d2, &id2).await;

    // One round: both boards, each with the game its hall played.
    let (want1, want2) = (san(&one.game), san(&two.game));
    until("both games in the round", http, &log, |v| {
        sans(v, &id1) == want1 && sans(v, &id2) == want2
    })
    .await;
    let round = boards(http).unwrap();
    assert_eq!(round["event"], "Two Halls Open");
    assert_eq!(round["boards"].as_array().unwrap().len(), 2);

    // Hall 1's daemon dies: its Last Will marks the board offline; the game stays.
    d1.kill9();
    until("hall-1 offline", http, &log, |v| {
        board_of(v, &id1).is_some_and(|b| b["link"] == "disconnected")
    })
    .await;
    let round = boards(http).unwrap();
    let b1 = board_of(&round, &id1).unwrap();
    assert_eq!(b1["status"]["comment"], "node hall-1 offline");
    assert_eq!(sans(&round, &id1), want1, "its game stays");
    assert_ne!(
        board_of(&round, &id2).unwrap()["link"],
        "disconnected",
        "hall 2 is still on line"
    );
    two.finish(d2, &id2).await;
    stop_strict(one.board, &id1).await;
    drop(broker);
}
