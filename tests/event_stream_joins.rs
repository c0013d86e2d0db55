//! Clients that join the event stream while events flow: whatever moment a WebSocket or SSE
//! client connects (with or without `since`, with or without a board filter), it is sent every
//! event after its start exactly once and in order. The fan-out gathers events into batches
//! encoded once for every client, so a start that overlaps a batch must skip what it already
//! had and a batch must not be skipped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use serde_json::Value;

mod support;
use support::streams::*;

use eboardd::core::event::{CoreEvent, EventKind};
use eboardd::output::{Hub, HubConfig, OutputConfig, RoundInfo};

const BOARDS: [&str; 3] = ["b1", "b2", "b3"];
const EVENTS: usize = 30_000;

fn event(i: usize) -> CoreEvent {
    CoreEvent {
        t: i as i64 * 1000,
        game: 0,
        kind: EventKind::BoardConnected {
            driver: format!("driver-{i}"),
            serial: None,
        },
    }
}

/// What one client was sent, parsed: `(seq, board or "snapshot")`.
fn check(
    label: &str,
    got: &[(u64, String)],
    since: Option<u64>,
    board: Option<&str>,
    boards: &[String],
) {
    // Where the client starts: after `since`, or after a snapshot's seq.
    let mut next_wanted = since.map(|s| s + 1);
    let mut events = 0;
    for (seq, what) in got {
        if what == "snapshot" {
            // A snapshot (at the start, or after a lag): what follows continues after it.
            next_wanted = Some(seq + 1);
            continue;
        }
        let from = next_wanted.unwrap_or_else(|| panic!("{label}: an event before any start"));
        // Every event of the client's board between where it is and this one was sent.
        let skipped: Vec<u64> = (from..*seq)
            .filter(|s| board.is_none_or(|b| boards[*s as usize - 1] == b))
            .collect();
        assert!(
            skipped.is_empty(),
            "{label}: events {skipped:?} missing before {seq}"
        );
        assert!(
            *seq >= from,
            "{label}: event {seq} again (or out of order), wanted {from}+"
        );
        if let Some(b) = board {
            assert_eq!(what, b, "{label}: event {seq} of another board");
        }
        next_wanted = Some(seq + 1);
        events += 1;
    }
    assert!(events > 0, "{label}: no event at all");
}

async fn ws_client(addr: SocketAddr, query: String, last: u64) -> Vec<(u64, String)> {
    let mut ws = ws_connect(&format!("ws://{addr}/api/v1/events{query}")).await;
    let mut out = Vec::new();
    loop {
        let v: Value = ws_next(&mut ws).await;
        let seq = v["seq"].as_u64().unwrap();
        let what = if v["kind"] == "snapshot" {
            "snapshot".to_string()
        } else {
            v["board"].as_str().unwrap().to_string()
        };
        out.push((seq, what));
        if seq >= last {
            return out;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_joining_mid_stream_get_every_event_once() {
    let hub = Hub::new(
        RoundInfo {
            boards: BOARDS.iter().map(|b| b.to_string()).collect(),
            ..Default::default()
        },
        HubConfig::default(),
    );
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let outputs = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let addr = outputs.http.unwrap();
    // The board of every seq, as published.
    let boards = Arc::new(Mutex::new(Vec::<String>::new()));
    let last = EVENTS as u64;
    let publisher = {
        let (hub, boards) = (hub.clone(), boards.clone());
        std::thread::spawn(move || {
            for i in 0..EVENTS {
                let b = BOARDS[i % BOARDS.len()];
                // The board is recorded before the event can reach a client.
                boards.lock().unwrap().push(b.to_string());
                let seq = hub.publish(b, &event(i));
                assert_eq!(seq as usize, i + 1);
                if i % 64 == 0 {
                    std::thread::yield_now();
                }
            }
        })
    };
    // Clients join one after another while the publisher runs: live, resumed a little behind,
    // filtered to one board; over WebSocket and SSE.
    let mut clients = Vec::new();
    for k in 0..24u64 {
        let now = hub.last_seq();
        if now >= last - 1000 {
            break;
        }
        let since = match k % 3 {
            0 => None,
            1 => Some(now.saturating_sub(k * 37)),
            _ => Some(now),
        };
        let board = (k % 4 == 3).then_some(BOARDS[(k % 3) as usize]);
        let mut query = Vec::new();
        if let Some(s) = since {
            query.push(format!("since={s}"));
        }
        if let Some(b) = board {
            query.push(format!("board={b}"));
        }
        let query = if query.is_empty() {
            String::new()
        } else {
            format!("?{}", query.join("&"))
        };
        // The last event of a filtered client's board.
        let board_last = match board {
            None => last,
            Some(b) => {
                let i = BOARDS.iter().position(|x| *x == b).unwrap() as u64;
                (1..=last).rev().find(|s| (s - 1) % 3 == i).unwrap()
            }
        };
        let label = format!("client {k} ({query})");
        if k % 2 == 0 {
            clients.push((
                label,
                since,
                board,
                tokio::spawn(ws_client(addr, query, board_last)),
            ));
        } else {
            let path = format!("/api/v1/events/sse{query}");
            clients.push((
                label,
                since,
                board,
                tokio::task::spawn_blocking(move || {
                    read_sse(addr, &path, board_last)
                        .into_iter()
                        .map(|(id, data)| {
                            let v: Value = serde_json::from_str(&data).unwrap();
                            let what = if v["kind"] == "snapshot" {
                                "snapshot".to_string()
                            } else {
                                v["board"].as_str().unwrap().to_string()
                            };
                            let seq = v["seq"].as_u64().unwrap();
                            assert_eq!(id, Some(seq), "SSE id is the event's seq");
                            (seq, what)
                        })
                        .collect()
                }),
            ));
        }
        tokio::task::yield_now().await;
        // Let some events pass before the next client joins.
        let mut changes = hub.changes();
        let _ = changes.wait_for(|s| *s >= now + 500 || *s >= last).await;
    }
    publisher.join().unwrap();
    assert!(clients.len() >= 6, "only {} clients joined", clients.len());
    let boards = boards.lock().unwrap().clone();
    for (label, since, board, client) in clients {
        let got = client.await.unwrap();
        check(&label, &got, since, board, &boards);
    }
    outputs.shutdown().await;
}
