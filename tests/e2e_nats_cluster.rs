//! Several daemons, one round, on a broker cluster, end to end: three `nats-server` nodes
//! (Debian's package, routed to each other, JetStream and MQTT on, the MQTT streams replicated
//! on every node), two `eboardd run` daemons (two halls, an emulated DGT board each) publishing
//! to the cluster and `eboardd serve-mqtt` reading the round from it, every one of them given
//! the three nodes' addresses. The node the first hall is connected to is killed (SIGKILL) in
//! the middle of its game: the daemons and the round server go on with another node, and the
//! round goes on while that node is down (moves made after the kill reach the round server
//! before the node is back); the node is started again; in the end every game is exact in the
//! round server's PGN and in the replay of each daemon's captures.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::daemon::*;
use support::http::{self, free_port};
use support::nats::{NatsCluster, require_nats};

const SPEED: f64 = 150.0;
const WAIT: Duration = Duration::from_secs(60);

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` of the server on `port`, if it answers 200.
fn get(port: u16, path: &str) -> Option<String> {
    http::try_get(http::local(port), path)
        .filter(|r| r.status == 200)
        .map(|r| r.body)
}

/// The moves (SAN) of every game of the round server's PGN.
fn served_games(port: u16) -> Vec<Vec<String>> {
    get(port, "/api/v1/games.pgn")
        .map(|pgn| {
            games_by_board(&pgn)
                .into_iter()
                .map(|(_, g)| san(&g))
                .collect()
        })
        .unwrap_or_default()
}

/// The plies of board `id` in the round server's `GET /api/v1/boards`.
fn served_plies(port: u16, id: &str) -> usize {
    get(port, "/api/v1/boards")
        .and_then(|b| serde_json::from_str::<serde_json::Value>(&b).ok())
        .and_then(|v| {
            v["boards"]
                .as_array()?
                .iter()
                .find(|b| b["board"] == id)
                .and_then(|b| b["game"]["moves"].as_array().map(Vec::len))
        })
        .unwrap_or(0)
}

/// The broker the daemon with HTTP on `port` says it is connected to
/// (`eboardd_mqtt_connected{broker="…"} 1` of its `/metrics`).
fn connected_broker(port: u16) -> Option<String> {
    let text = get(port, "/metrics")?;
    text.lines()
        .filter(|l| l.starts_with("eboardd_mqtt_connected{") && l.ends_with(" 1"))
        .find_map(|l| {
            l.split_once("broker=\"")
                .and_then(|(_, rest)| rest.split_once('"'))
                .map(|(b, _)| b.to_string())
        })
}

/// Waits (at most [`WAIT`]) until `cond` holds; fails naming `what` with `context()`.
async fn until(what: &str, mut cond: impl FnMut() -> bool, context: impl Fn() -> String) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "{what}: not in time\n{}",
            context()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_daemons_and_the_round_server_fail_over_between_cluster_nodes() {
    let Some(bin) = require_nats() else {
        return;
    };
    let dir = support::scratch("e2e-nats-cluster");
    let mut cluster = NatsCluster::start(&bin, 3, &dir.join("nats"));
    let urls = cluster.mqtt_urls();
    let flags = |flag: &'static str| -> Vec<&str> {
        urls.iter().flat_map(|u| [flag, u.as_str()]).collect()
    };

    // The round server, given every node.
    let round_http = free_port();
    let server_log = dir.join("serve-mqtt.log");
    let mut server = Command::new(support::daemon::bin());
    server
        .arg("serve-mqtt")
        .args(flags("--from"))
        .arg("--http")
        .arg(format!("127.0.0.1:{round_http}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&server_log).unwrap());
    let _server = Server(server.spawn().expect("start eboardd serve-mqtt"));

    // Two halls, one board each, every daemon given every node.
    let one = single("e2e-nats-1", 1, 43001, SPEED, None);
    let two = single("e2e-nats-2", 2, 43002, SPEED, None);
    let (http1, http2) = (free_port(), free_port());
    let start = |s: &Single, node: &str, port: u16| {
        let http = format!("127.0.0.1:{port}");
        let mut extra = flags("--mqtt");
        extra.extend(["--mqtt-node", node, "--http", &http]);
        s.start(&extra)
    };
    let mut d1 = start(&one, "hall-1", http1);
    let mut d2 = start(&two, "hall-2", http2);
    let (id1, id2) = (one.id.clone(), two.id.clone());
    let client1 = format!("eboardd-hall-1-{}", d1.pid());
    let logs = || {
        format!(
            "serve-mqtt log:\n{}\n{}",
            std::fs::read_to_string(&server_log).unwrap_or_default(),
            cluster_logs(&dir)
        )
    };

    // Mid-game, once the round flows through the cluster (NATS's MQTT streams on every
    // node): the node hall 1 is connected to dies.
    d1.wait_for("ply 8 of hall 1", WAIT, |ev| completed(ev, &id1, 8))
        .await;
    cluster.wait_mqtt_streams();
    until(
        "both boards in the round",
        || served_plies(round_http, &id1) > 0 && served_plies(round_http, &id2) > 0,
        logs,
    )
    .await;
    let mut node = None;
    until(
        "hall 1 connected to a node (its /connz) and saying which (its /metrics)",
        || {
            node = cluster.node_of(&client1);
            node.is_some_and(|i| connected_broker(http1).is_some_and(|b| urls[i].ends_with(&b)))
        },
        logs,
    )
    .await;
    let killed = node.unwrap();
    let killed_url = urls[killed].clone();
    cluster.nodes[killed].kill9();
    let killed_at = Instant::now();
    let plies_at_kill = completed_plies(&d1.events.lock().unwrap(), &id1);
    assert!(
        plies_at_kill + 8 < one.game.moves.len(),
        "the node must die mid-game: ply {plies_at_kill} of {}",
        one.game.moves.len()
    );

    // The halls and the round server go on with another node while it is down.
    until(
        "hall 1 on another node",
        || {
            cluster.node_of(&client1).is_some_and(|i| i != killed)
                && connected_broker(http1).is_some_and(|b| !killed_url.ends_with(&b))
        },
        logs,
    )
    .await;
    let failed_over = killed_at.elapsed();
    until(
        "moves made after the kill in the round while the node is down",
        || served_plies(round_http, &id1) >= plies_at_kill + 4,
        logs,
    )
    .await;
    assert!(!cluster.nodes[killed].running());
    eprintln!(
        "node {} killed at ply {plies_at_kill} of hall 1; hall 1 on another node after {failed_over:?}; \
         ply {} in the round after {:?}",
        cluster.nodes[killed].name,
        served_plies(round_http, &id1),
        killed_at.elapsed()
    );
    cluster.restart(killed);

    // Every game exact: in the round server's PGN, in the replay of each hall's captures.
    one.wait_done(&mut d1, &id1).await;
    two.wait_done(&mut d2, &id2).await;
    let want = [san(&one.game), san(&two.game)];
    until(
        "both games exact in the round server's PGN",
        || {
            let got = served_games(round_http);
            want.iter()
                .all(|w| got.iter().filter(|g| *g == w).count() == 1)
        },
        || {
            format!(
                "served PGN: {:?}\n{}",
                get(round_http, "/api/v1/games.pgn"),
                logs()
            )
        },
    )
    .await;
    one.finish(d1, &id1).await;
    two.finish(d2, &id2).await;
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every node's log in `dir`, for failure messages (the cluster is borrowed elsewhere).
fn cluster_logs(dir: &std::path::Path) -> String {
    (1..=3)
        .map(|i| {
            let log = dir.join("nats").join(format!("n{i}.log"));
            format!(
                "--- n{i} ---\n{}\n",
                std::fs::read_to_string(log).unwrap_or_default()
            )
        })
        .collect()
}
