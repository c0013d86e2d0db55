//! MQTT fan-out against a real broker (mosquitto, started by the test on a free localhost port):
//! two publishers (two `Hub`s, as two daemons in one hall) feed one broker; a subscriber
//! sees every event of both, in order; a late subscriber gets the retained per-board state; a
//! broker outage never blocks publishing, drops the oldest queued events (counted), and the
//! publisher reconnects and republishes the state.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use serde_json::Value;
use tokio::sync::mpsc;

mod support;
use support::capture;

use eboardd::output::replay_source;
use eboardd::output::{
    BoardStatus, Hub, HubConfig, LinkState, MqttConfig, OutputConfig, RoundInfo,
};
use eboardd::replay::{Layout, Timeline};
use support::broker::{Broker, Relay, require_mosquitto};

/// A subscriber: every (topic, payload) received on `filter`.
async fn subscribe(
    port: u16,
    name: &str,
    filter: &str,
) -> (AsyncClient, mpsc::UnboundedReceiver<(String, Value)>) {
    let mut opts = MqttOptions::new(format!("{name}-{}", std::process::id()), "127.0.0.1", port);
    opts.set_keep_alive(Duration::from_secs(10));
    opts.set_max_packet_size(4 << 20, 4 << 20);
    let (client, mut eventloop) = AsyncClient::new(opts, 100);
    let (tx, rx) = mpsc::unbounded_channel();
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    client.subscribe(filter, QoS::AtLeastOnce).await.unwrap();
    tokio::spawn(async move {
        let mut ready = Some(ready_tx);
        loop {
            match eventloop.poll().await {
                Ok(Event::Incoming(Packet::SubAck(_))) => {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
                Ok(Event::Incoming(Packet::Publish(p))) => {
                    let v: Value = serde_json::from_slice(&p.payload).expect("JSON payload");
                    if tx.send((p.topic.clone(), v)).is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    });
    tokio::time::timeout(Duration::from_secs(10), ready_rx)
        .await
        .expect("subscribed in time")
        .unwrap();
    (client, rx)
}

async fn publisher(
    port: u16,
    node: &str,
    files: &[PathBuf],
    queue: usize,
) -> (Hub, eboardd::output::Outputs, Timeline) {
    let plan = Timeline::load(files, Layout::Round).unwrap();
    let info = RoundInfo {
        boards: plan.boards().map(String::from).collect(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let cfg = OutputConfig {
        mqtt: Some(MqttConfig {
            brokers: vec![eboardd::output::MqttBroker {
                host: "127.0.0.1".into(),
                port,
            }],
            prefix: "eboardd".into(),
            node: node.into(),
            queue,
        }),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let stats = out.mqtt.clone().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stats.connected.load(Ordering::Relaxed) {
        assert!(Instant::now() < deadline, "{node} did not connect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (hub, out, plan)
}

fn backlog(hub: &Hub) -> Vec<Value> {
    match hub.subscribe(Some(0)).0 {
        eboardd::output::Start::Backlog(m) => m
            .iter()
            .map(|m| serde_json::from_str(&m.json).unwrap())
            .collect(),
        eboardd::output::Start::Snapshot { .. } => panic!("backlog expected"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_publishers_one_broker_late_joiner_and_outage() {
    let Some(bin) = require_mosquitto() else {
        return;
    };
    let mut broker = Broker::start(&bin, None);
    let port = broker.port;
    let (_sub, mut events) = subscribe(port, "watcher", "eboardd/+/board/+/events").await;

    let (hub_a, out_a, plan_a) =
        publisher(port, "hall-a", &[capture("irregular/g0001.jsonl")], 300).await;
    let (hub_b, out_b, plan_b) = publisher(
        port,
        "hall-b",
        &[capture("clean/g0002.jsonl"), capture("blitz/g0001.jsonl")],
        300,
    )
    .await;
    let mut ra = replay_source::spawn(hub_a.clone(), plan_a, None);
    let mut rb = replay_source::spawn(hub_b.clone(), plan_b, None);
    ra.wait_done().await;
    rb.wait_done().await;
    let (na, nb) = (hub_a.last_seq(), hub_b.last_seq());
    assert!(na > 100 && nb > 100);

    // Every event of both daemons arrives, per daemon in seq order, equal to what they sent.
    let mut got: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.get("hall-a").map_or(0, Vec::len) < na as usize
        || got.get("hall-b").map_or(0, Vec::len) < nb as usize
    {
        let left = deadline.saturating_duration_since(Instant::now());
        let (topic, v) = tokio::time::timeout(left, events.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "missing events: got {:?} of ({na}, {nb})",
                    got.iter()
                        .map(|(k, v)| (k.clone(), v.len()))
                        .collect::<Vec<_>>()
                )
            })
            .unwrap();
        let parts: Vec<&str> = topic.split('/').collect();
        assert_eq!(parts.len(), 5, "{topic}");
        assert_eq!(parts[4], "events");
        assert_eq!(v["board"], parts[3], "topic names the event's board");
        got.entry(parts[1].to_string()).or_default().push(v);
    }
    assert_eq!(got["hall-a"], backlog(&hub_a), "hall-a events differ");
    assert_eq!(got["hall-b"], backlog(&hub_b), "hall-b events differ");
    assert_eq!(
        out_a.mqtt.as_ref().unwrap().dropped.load(Ordering::Relaxed),
        0
    );

    // A late subscriber gets the retained state of every board of both daemons at once.
    let (_late, mut states) = subscribe(port, "late", "eboardd/+/board/+/state").await;
    let mut seen: BTreeMap<String, Value> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while seen.len() < 3
        || seen
            .values()
            .any(|v| v["last_seq"] != expected_last(&hub_a, &hub_b, v))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        let (topic, v) = tokio::time::timeout(left, states.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "retained states missing: {:?}",
                    seen.keys().collect::<Vec<_>>()
                )
            })
            .unwrap();
        seen.insert(topic, v);
    }
    assert!(seen.contains_key("eboardd/hall-a/board/board-1/state"));
    assert!(seen.contains_key("eboardd/hall-b/board/board-2/state"));
    let a1 = &seen["eboardd/hall-a/board/board-1/state"];
    assert!(a1["game"]["moves"].as_array().unwrap().len() > 50);
    let (_st, mut status) = subscribe(port, "status", "eboardd/+/status").await;
    let (_, v) = tokio::time::timeout(Duration::from_secs(5), status.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(v["online"], true);

    // Broker outage: publishing stays instant, the bounded queue drops the oldest and counts.
    broker.stop();
    let stats = out_a.mqtt.clone().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while stats.connected.load(Ordering::Relaxed) {
        assert!(Instant::now() < deadline, "outage not noticed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ev = eboardd::core::event::CoreEvent {
        t: 99_000_000,
        game: 1,
        kind: eboardd::core::event::EventKind::Clock {
            white: 1000,
            black: 2000,
            running: None,
        },
    };
    let t0 = Instant::now();
    for _ in 0..2000 {
        hub_a.publish("board-1", &ev);
    }
    assert!(
        t0.elapsed() < Duration::from_millis(500),
        "publishing blocked while the broker is down"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while stats.dropped.load(Ordering::Relaxed) < 1700 {
        assert!(
            Instant::now() < deadline,
            "dropped {} of 2000 with a queue of 300",
            stats.dropped.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The broker comes back: the publisher reconnects by itself, sends the newest events and
    // republishes the retained state (the new broker had none).
    let broker2 = Broker::start(&broker.bin, Some(port));
    let (_again, mut fresh) = subscribe(port, "again", "eboardd/hall-a/#").await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let last = hub_a.last_seq();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (topic, v) = tokio::time::timeout(left, fresh.recv())
            .await
            .expect("no state after the broker came back")
            .unwrap();
        if topic.ends_with("/state") && v["last_seq"] == last {
            break;
        }
    }
    // And events flow again.
    let seq = hub_a.publish("board-1", &ev);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let (topic, v) = tokio::time::timeout(left, fresh.recv())
            .await
            .expect("no event after the broker came back")
            .unwrap();
        if topic.ends_with("/events") && v["seq"] == seq {
            break;
        }
    }
    assert!(stats.connects.load(Ordering::Relaxed) >= 2);

    ra.stop();
    rb.stop();
    out_a.shutdown().await;
    out_b.shutdown().await;
    drop(broker2);
}

/// A clock event at `t` (µs) of game 1.
fn clock_event(t: i64) -> eboardd::core::event::CoreEvent {
    eboardd::core::event::CoreEvent {
        t,
        game: 1,
        kind: eboardd::core::event::EventKind::Clock {
            white: 1000,
            black: 2000,
            running: None,
        },
    }
}

/// Events published right after the publisher is started, before its task has run and before
/// the broker connection is up (a daemon whose boards start at once), are all delivered, in
/// order: a publisher never loses a stream it was asked to send. On this single-threaded
/// runtime nothing of the publisher runs until the test first waits, so the events are
/// certainly published first.
#[tokio::test(flavor = "current_thread")]
async fn events_published_before_the_connection_are_delivered() {
    let Some(bin) = require_mosquitto() else {
        return;
    };
    let broker = Broker::start(&bin, None);
    let (_sub, mut events) = subscribe(broker.port, "early", "eboardd/+/board/+/events").await;
    let hub = Hub::new(RoundInfo::default(), HubConfig::default());
    let stop = tokio_util::sync::CancellationToken::new();
    let stop_rx = stop.clone();
    let (stats, task) = eboardd::output::mqtt::spawn(
        hub.clone(),
        MqttConfig {
            brokers: vec![eboardd::output::MqttBroker {
                host: "127.0.0.1".into(),
                port: broker.port,
            }],
            prefix: "eboardd".into(),
            node: "early".into(),
            queue: 1000,
        },
        stop_rx,
    );
    let n = 50;
    let sent: Vec<u64> = (0..n)
        .map(|i| hub.publish("board-1", &clock_event(i * 1000)))
        .collect();
    assert!(!stats.connected.load(Ordering::Relaxed));

    let mut got: Vec<u64> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < sent.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        let (_, v) = tokio::time::timeout(left, events.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} of {n} events published before the connection arrived (published {}, \
                     dropped {})",
                    got.len(),
                    stats.published.load(Ordering::Relaxed),
                    stats.dropped.load(Ordering::Relaxed)
                )
            })
            .unwrap();
        got.push(v["seq"].as_u64().unwrap());
    }
    assert_eq!(got, sent, "every event, in order");
    assert_eq!(stats.dropped.load(Ordering::Relaxed), 0);
    stop.cancel();
    let _ = task.await;
}

/// Receive events into `got` (their `seq`) until it holds `n`, for at most 20 s.
async fn recv_seqs(
    n: usize,
    got: &mut Vec<u64>,
    events: &mut mpsc::UnboundedReceiver<(String, Value)>,
    stats: &eboardd::output::mqtt::MqttStats,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        let (_, v) = tokio::time::timeout(left, events.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "{} of {n} events arrived (published {}, dropped {}, connects {})",
                    got.len(),
                    stats.published.load(Ordering::Relaxed),
                    stats.dropped.load(Ordering::Relaxed),
                    stats.connects.load(Ordering::Relaxed)
                )
            })
            .unwrap();
        got.push(v["seq"].as_u64().unwrap());
    }
}

/// Events handed to the MQTT client but never acknowledged by the broker when the connection
/// dies (the broker saw none of them: the link swallowed them) are sent again on the next
/// connection: all arrive, in order, none counted as dropped and none lost uncounted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_in_flight_when_the_link_dies_are_sent_again() {
    let Some(bin) = require_mosquitto() else {
        return;
    };
    let broker = Broker::start(&bin, None);
    let (_sub, mut events) = subscribe(broker.port, "inflight", "eboardd/+/board/+/events").await;
    let relay = Relay::start(broker.port).await;
    let hub = Hub::new(RoundInfo::default(), HubConfig::default());
    let stop = tokio_util::sync::CancellationToken::new();
    let stop_rx = stop.clone();
    let (stats, task) = eboardd::output::mqtt::spawn(
        hub.clone(),
        MqttConfig {
            brokers: vec![eboardd::output::MqttBroker {
                host: "127.0.0.1".into(),
                port: relay.port,
            }],
            prefix: "eboardd".into(),
            node: "inflight".into(),
            queue: 10_000,
        },
        stop_rx,
    );
    let mut got: Vec<u64> = Vec::new();
    let mut sent: Vec<u64> = Vec::new();
    // The link works.
    for i in 0..10 {
        sent.push(hub.publish("board-1", &clock_event(i * 1000)));
    }
    recv_seqs(10, &mut got, &mut events, &stats).await;

    // The link swallows everything: 300 events are handed to the client, none acknowledged.
    relay.hold();
    for i in 10..310 {
        sent.push(hub.publish("board-1", &clock_event(i * 1000)));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while stats.published.load(Ordering::Relaxed) < 310 {
        assert!(Instant::now() < deadline, "events not handed to the client");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Then it dies; the publisher reconnects and sends them again.
    relay.cut();
    recv_seqs(310, &mut got, &mut events, &stats).await;
    assert_eq!(got, sent, "every event once, in order");
    assert!(stats.connects.load(Ordering::Relaxed) >= 2);
    assert_eq!(stats.dropped.load(Ordering::Relaxed), 0);
    stop.cancel();
    let _ = task.await;
}

fn expected_last(a: &Hub, b: &Hub, state: &Value) -> Value {
    let hub = if state["node"] == "hall-a" { a } else { b };
    let board = state["board"].as_str().unwrap_or_default();
    hub.board_snapshot(board)
        .map_or(Value::Null, |s| s["last_seq"].clone())
}

/// Polls `cond` on `hub` every 20 ms for at most 20 s.
async fn until_hub(what: &str, hub: &Hub, cond: impl Fn(&Hub) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond(hub) {
        assert!(Instant::now() < deadline, "{what}: not in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// SAN of the current game of `board`, and its result.
fn game_of(hub: &Hub, board: &str) -> (Vec<String>, String) {
    let v = hub.board_snapshot(board).unwrap_or(Value::Null);
    let sans = v["game"]["moves"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|m| m["san"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    (sans, v["game"]["result"].as_str().unwrap_or("").to_string())
}

/// Every event of every sample capture survives being read back from its wire form: what the
/// round source publishes is byte for byte what the node published (except `seq`).
#[test]
fn every_event_reads_back_from_its_wire_form() {
    let dir = support::data("captures");
    let mut n = 0;
    for sub in ["clean", "human", "blitz", "chess960", "irregular", "setup"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let mut out = Vec::new();
            eboardd::replay::replay_paths(std::slice::from_ref(&p), true, &mut out, &mut |_| {})
                .unwrap();
            for line in String::from_utf8(out).unwrap().lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                let ev = eboardd::core::event::CoreEvent::from_wire(&v)
                    .unwrap_or_else(|e| panic!("{}: {line}: {e}", p.display()));
                let board = v["board"].as_str().unwrap();
                let again = eboardd::core::event::EventEnvelope::new(
                    v["seq"].as_u64().unwrap(),
                    board,
                    &ev,
                )
                .to_json();
                assert_eq!(again, line, "{}", p.display());
                n += 1;
            }
        }
    }
    println!("{n} events read back from their wire form");
    assert!(n > 10_000, "the sample captures were read ({n} events)");
}

/// Several daemons, one round: two nodes publish to one broker; a third hub reads the round from
/// it (the source of `eboardd serve-mqtt`), starting late (restored from the retained states),
/// and ends with the nodes' games move for move; a node that goes offline shows as such and its
/// board keeps its game.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_served_as_one_round_from_the_broker() {
    let Some(bin) = require_mosquitto() else {
        return;
    };
    let broker = Broker::start(&bin, None);
    let port = broker.port;
    // Node hall-1 plays one capture as board-1.
    let (hub1, out1, plan1) =
        publisher(port, "hall-1", &[capture("clean/g0001.jsonl")], 100_000).await;
    // Node hall-2 has board-21: the events of another capture, published under that id.
    let (hub2, out2, _) = publisher(port, "hall-2", &[], 100_000).await;
    let mut out = Vec::new();
    eboardd::replay::replay_paths(&[capture("human/g0002.jsonl")], true, &mut out, &mut |_| {})
        .unwrap();
    let events: Vec<eboardd::core::event::CoreEvent> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            eboardd::core::event::CoreEvent::from_wire(&serde_json::from_str(l).unwrap()).unwrap()
        })
        .collect();
    let half = events.len() / 2;
    for ev in &events[..half] {
        hub2.publish("board-21", ev);
    }
    let mut replay = replay_source::spawn(hub1.clone(), plan1, None);
    replay.wait_done().await;

    // The round source starts late: what it knows first comes from the retained states.
    let round = Hub::new(RoundInfo::default(), HubConfig::default());
    let stop = tokio_util::sync::CancellationToken::new();
    let stop_rx = stop.clone();
    let source = eboardd::output::mqtt_source::spawn(
        round.clone(),
        eboardd::output::mqtt_source::SourceConfig {
            brokers: vec![eboardd::output::MqttBroker {
                host: "127.0.0.1".into(),
                port,
            }],
            prefix: "eboardd".into(),
        },
        stop_rx,
    );
    let want1 = game_of(&hub1, "board-1");
    assert!(want1.0.len() > 40);
    until_hub("board-1 restored from its retained state", &round, |r| {
        game_of(r, "board-1") == want1
    })
    .await;
    until_hub("board-21 restored", &round, |r| {
        game_of(r, "board-21") == game_of(&hub2, "board-21")
    })
    .await;
    let restored = game_of(&round, "board-21").0.len();
    // The rest of board-21's game arrives as events.
    for ev in &events[half..] {
        hub2.publish("board-21", ev);
    }
    let want2 = game_of(&hub2, "board-21");
    until_hub("board-21 followed live", &round, |r| {
        game_of(r, "board-21") == want2
    })
    .await;
    assert!(
        want2.0.len() > restored,
        "board-21 moved on ({restored} plies restored, {} in the end)",
        want2.0.len()
    );
    // Both boards in one round, as one source.
    let ids: Vec<String> = round.with_round(|r| r.boards().iter().map(|b| b.id.clone()).collect());
    assert_eq!(ids.len(), 2, "{ids:?}");

    // Node hall-1 goes offline: its board shows it and keeps its game.
    out1.shutdown().await;
    until_hub("hall-1 offline", &round, |r| {
        r.board_snapshot("board-1")
            .is_some_and(|v| v["link"] == "disconnected")
    })
    .await;
    let v = round.board_snapshot("board-1").unwrap();
    assert_eq!(v["status"]["comment"], "node hall-1 offline");
    assert_eq!(game_of(&round, "board-1"), want1, "the game stays");
    stop.cancel();
    let _ = source.await;
    replay.stop();
    out2.shutdown().await;
    drop(broker);
}

/// The link of board `id` in `hub`'s round and its status comment.
fn link_of(hub: &Hub, id: &str) -> (String, String) {
    let v = hub.board_snapshot(id).unwrap_or(Value::Null);
    (
        v["link"].as_str().unwrap_or("").to_string(),
        v["status"]["comment"].as_str().unwrap_or("").to_string(),
    )
}

/// A node that went offline before the round source started shows its boards offline, not as
/// the `active` of their retained states (the node's offline status is retained too); a node
/// still on line does not; and while the source has lost the broker, it shows every board
/// disconnected rather than what it can no longer know.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_offline_before_the_round_source_started_shows_offline() {
    let Some(bin) = require_mosquitto() else {
        return;
    };
    let mut broker = Broker::start(&bin, None);
    let port = broker.port;
    let (_sub, mut states) = subscribe(port, "states", "eboardd/+/board/+/state").await;
    let (hub1, out1, plan1) =
        publisher(port, "hall-1", &[capture("clean/g0001.jsonl")], 100_000).await;
    let (hub2, out2, _) = publisher(port, "hall-2", &[], 100_000).await;
    let mut out = Vec::new();
    eboardd::replay::replay_paths(&[capture("clean/g0002.jsonl")], true, &mut out, &mut |_| {})
        .unwrap();
    for line in String::from_utf8(out).unwrap().lines() {
        let ev = eboardd::core::event::CoreEvent::from_wire(&serde_json::from_str(line).unwrap())
            .unwrap();
        hub2.publish("board-21", &ev);
    }
    let mut replay = replay_source::spawn(hub1.clone(), plan1, None);
    replay.wait_done().await;
    // Both boards are on line at their nodes (as a live daemon's connected boards).
    let active = BoardStatus {
        state: LinkState::Active,
        ..Default::default()
    };
    hub1.set_status("board-1", active.clone());
    hub2.set_status("board-21", active);
    assert_eq!(link_of(&hub1, "board-1").0, "active");

    // Both nodes' last states are on the broker (retained), then hall-1 stops.
    let want = [
        ("hall-1", "board-1", hub1.last_seq()),
        ("hall-2", "board-21", hub2.last_seq()),
    ];
    let mut last: BTreeMap<String, Value> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while want
        .iter()
        .any(|(n, b, s)| last.get(&format!("eboardd/{n}/board/{b}/state")) != Some(&(*s).into()))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        let (topic, v) = tokio::time::timeout(left, states.recv())
            .await
            .unwrap_or_else(|_| panic!("retained states not current: {last:?}"))
            .unwrap();
        last.insert(topic, v["last_seq"].clone());
    }
    let want1 = game_of(&hub1, "board-1");
    out1.shutdown().await;

    // The round source starts now: hall-1's board is restored with its game, and offline.
    let round = Hub::new(RoundInfo::default(), HubConfig::default());
    let stop = tokio_util::sync::CancellationToken::new();
    let stop_rx = stop.clone();
    let source = eboardd::output::mqtt_source::spawn(
        round.clone(),
        eboardd::output::mqtt_source::SourceConfig {
            brokers: vec![eboardd::output::MqttBroker {
                host: "127.0.0.1".into(),
                port,
            }],
            prefix: "eboardd".into(),
        },
        stop_rx,
    );
    until_hub("both boards restored", &round, |r| {
        game_of(r, "board-1") == want1 && game_of(r, "board-21") == game_of(&hub2, "board-21")
    })
    .await;
    until_hub("hall-1's board offline", &round, |r| {
        link_of(r, "board-1") == ("disconnected".into(), "node hall-1 offline".into())
    })
    .await;
    assert_eq!(link_of(&round, "board-21").0, "active", "hall-2 is on line");
    assert_eq!(game_of(&round, "board-1"), want1, "the game stays");

    // The source loses the broker: it cannot know any node's boards, so none shows on line.
    broker.stop();
    until_hub(
        "hall-2's board shown disconnected without a broker",
        &round,
        |r| link_of(r, "board-21") == ("disconnected".into(), "MQTT broker connection lost".into()),
    )
    .await;
    stop.cancel();
    let _ = source.await;
    out2.shutdown().await;
}
