//! MQTT fan-out: every event and a retained per-board state on a broker, so several daemons in
//! one hall can feed one broadcast and late subscribers catch up at once.
//!
//! Topic layout (`PREFIX` defaults to `eboardd`, `NODE` names this daemon):
//!
//! | topic | retained | QoS | payload |
//! | --- | --- | --- | --- |
//! | `PREFIX/NODE/status` | yes | 1 | `{"node":…, "online":true\|false, ...}` (Last Will: offline) |
//! | `PREFIX/NODE/board/BOARD/events` | no | 1 | each event of that board (JSON v1, as on the WebSocket) |
//! | `PREFIX/NODE/board/BOARD/state` | yes | 1 | the board's snapshot (as in `GET /api/v1/boards/BOARD`) |
//!
//! Subscribe to `PREFIX/+/board/+/events` for every event of every daemon and
//! `PREFIX/+/board/+/state` for the current state of every board.
//!
//! Publishing never blocks the boards: every event published after [`spawn`] returns goes into
//! a bounded queue (oldest dropped first, counted), also before the first connection, that is
//! emptied while the broker is connected; the connection is retried with exponential backoff
//! (0.2 s to 10 s). Events handed to the MQTT client but not acknowledged by the broker when the
//! connection breaks are sent again first on the next connection (QoS 1: at least once). States
//! are published once per batch of events.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rumqttc::{AsyncClient, Event, LastWill, MqttOptions, Packet, QoS, Request};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use super::hub::{Hub, Msg};

/// Where and how to publish.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqttConfig {
    /// Broker host.
    pub host: String,
    /// Broker port.
    pub port: u16,
    /// First topic level.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// This daemon's name (second topic level); distinct per daemon.
    #[serde(default = "default_node")]
    pub node: String,
    /// Events kept while the broker cannot be reached.
    #[serde(default = "default_queue")]
    pub queue: usize,
}

fn default_prefix() -> String {
    "eboardd".into()
}

fn default_queue() -> usize {
    10_000
}

/// The host name, or `eboardd`.
pub fn default_node() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| topic_level(s.trim()))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "eboardd".into())
}

/// A string made safe as one topic level (no `/`, `+`, `#`, control characters).
pub fn topic_level(s: &str) -> String {
    s.chars()
        .map(|c| {
            if matches!(c, '/' | '+' | '#') || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// An MQTT address that is not `mqtt://HOST[:PORT]`: the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MqttUrlError(String);

impl From<String> for MqttUrlError {
    fn from(reason: String) -> Self {
        MqttUrlError(reason)
    }
}

impl MqttConfig {
    /// Parse `mqtt://HOST[:PORT]` (port 1883 by default).
    pub fn from_url(url: &str) -> Result<Self, MqttUrlError> {
        let rest = url
            .strip_prefix("mqtt://")
            .or_else(|| url.strip_prefix("tcp://"))
            .ok_or_else(|| format!("MQTT address must look like mqtt://HOST:PORT, not {url:?}"))?;
        let rest = rest.trim_end_matches('/');
        if rest.contains('/') || rest.contains('@') {
            return Err(MqttUrlError::from(format!(
                "MQTT address must be mqtt://HOST:PORT, not {url:?}"
            )));
        }
        let (host, port) = match rest.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (
                h.trim_start_matches('[').trim_end_matches(']'),
                p.parse::<u16>()
                    .map_err(|_| format!("bad MQTT port in {url:?}"))?,
            ),
            _ => (rest, 1883),
        };
        if host.is_empty() {
            return Err(MqttUrlError::from(format!(
                "MQTT address {url:?} has no host"
            )));
        }
        Ok(MqttConfig {
            host: host.to_string(),
            port,
            prefix: default_prefix(),
            node: default_node(),
            queue: default_queue(),
        })
    }
}

/// Counters of a running publisher.
#[derive(Debug, Default)]
pub struct MqttStats {
    /// Connected to the broker now.
    pub connected: AtomicBool,
    /// Events handed to the MQTT client.
    pub published: AtomicU64,
    /// Events dropped because the queue was full (broker down or too slow).
    pub dropped: AtomicU64,
    /// Connections made (1 after the first, more after reconnects).
    pub connects: AtomicU64,
}

struct Topics {
    prefix: String,
}

impl Topics {
    fn status(&self) -> String {
        format!("{}/status", self.prefix)
    }
    fn events(&self, board: &str) -> String {
        format!("{}/board/{}/events", self.prefix, topic_level(board))
    }
    fn state(&self, board: &str) -> String {
        format!("{}/board/{}/state", self.prefix, topic_level(board))
    }
}

/// Start publishing `hub` to the broker of `cfg`; runs until `stop` turns true.
pub fn spawn(
    hub: Hub,
    cfg: MqttConfig,
    mut stop: watch::Receiver<bool>,
) -> (Arc<MqttStats>, tokio::task::JoinHandle<()>) {
    let stats = Arc::new(MqttStats::default());
    let node = topic_level(&cfg.node);
    let topics = Topics {
        prefix: format!("{}/{}", topic_level(&cfg.prefix), node),
    };
    let client_id = format!("eboardd-{node}-{}", std::process::id());
    let mut opts = MqttOptions::new(client_id, cfg.host.clone(), cfg.port);
    opts.set_keep_alive(Duration::from_secs(10));
    opts.set_max_packet_size(4 << 20, 4 << 20);
    opts.set_clean_session(true);
    let offline = json!({"node": node, "online": false}).to_string();
    opts.set_last_will(LastWill::new(
        topics.status(),
        offline.clone(),
        QoS::AtLeastOnce,
        true,
    ));
    let (client, mut eventloop) = AsyncClient::new(opts, 1024);
    let (conn_tx, mut conn_rx) = watch::channel(0u64);

    // The event loop: connects, reconnects with backoff, reports each new connection.
    let loop_stats = stats.clone();
    let mut loop_stop = stop.clone();
    // Health lists the broker while it cannot be reached (part `mqtt`).
    let broker = format!("{}:{}", cfg.host, cfg.port);
    let fault = {
        let hub = hub.clone();
        move |why: Option<String>| {
            if let Some(m) = hub.metrics() {
                m.set_fault(super::metrics::Part::Mqtt, &broker, why);
            }
        }
    };
    let driver = tokio::spawn(async move {
        let mut backoff = Duration::from_millis(200);
        // Publishes handed to the client but not acknowledged by the broker when the connection
        // broke (in flight, or still in the client's channel). The client keeps them only for a
        // session the broker kept, and ours are clean: they go first on the next connection.
        let mut unacked: VecDeque<Request> = VecDeque::new();
        let mut unreachable: Option<String> = None;
        loop {
            tokio::select! {
                _ = loop_stop.changed() => break,
                ev = eventloop.poll() => match ev {
                    Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                        if !ack.session_present {
                            eventloop.pending.extend(unacked.drain(..));
                        }
                        backoff = Duration::from_millis(200);
                        if unreachable.take().is_some() {
                            tracing::info!("MQTT broker reached");
                        }
                        fault(None);
                        loop_stats.connected.store(true, Ordering::Relaxed);
                        let n = loop_stats.connects.fetch_add(1, Ordering::Relaxed) + 1;
                        conn_tx.send_replace(n);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        unacked.extend(
                            eventloop
                                .pending
                                .drain(..)
                                .filter(|r| matches!(r, Request::Publish(_))),
                        );
                        let why = e.to_string();
                        if loop_stats.connected.swap(false, Ordering::Relaxed) {
                            tracing::warn!("MQTT broker connection lost: {why}");
                        } else if unreachable.as_deref() != Some(&why) {
                            tracing::warn!("MQTT broker not reachable: {why}; retrying");
                        }
                        fault(Some(format!("not reachable: {why}")));
                        unreachable = Some(why);
                        tokio::select! {
                            _ = tokio::time::sleep(backoff) => {}
                            _ = loop_stop.changed() => break,
                        }
                        backoff = (backoff * 2).min(Duration::from_secs(10));
                    }
                }
            }
        }
        // Flush what was queued (the offline status, last events) before leaving.
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while let Ok(ev) = eventloop.poll().await {
                if let Event::Outgoing(rumqttc::Outgoing::Disconnect) = ev {
                    break;
                }
            }
        })
        .await;
        fault(None);
    });

    // Subscribed here, before the task runs: every event published once `spawn` returns is
    // queued, even while the task has not started yet and the broker is not connected.
    let mut rx = hub.receiver();
    let pub_stats = stats.clone();
    let handle = tokio::spawn(async move {
        let mut queue: VecDeque<Arc<Msg>> = VecDeque::new();
        let mut dirty: BTreeSet<Arc<str>> = BTreeSet::new();
        let mut all_dirty = false;
        let mut announce = false;
        let cap = cfg.queue.max(1);
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                r = rx.recv() => match r {
                    Ok(m) => {
                        if queue.len() >= cap {
                            queue.pop_front();
                            pub_stats.dropped.fetch_add(1, Ordering::Relaxed);
                        }
                        queue.push_back(m);
                    }
                    Err(RecvError::Lagged(n)) => {
                        pub_stats.dropped.fetch_add(n, Ordering::Relaxed);
                        all_dirty = true;
                    }
                    Err(RecvError::Closed) => break,
                },
                r = conn_rx.changed() => {
                    if r.is_err() { break }
                    // A new connection: announce, and republish every state.
                    announce = true;
                    all_dirty = true;
                }
                _ = tick.tick() => {}
            }
            if !pub_stats.connected.load(Ordering::Relaxed) {
                continue;
            }
            if announce {
                let online =
                    json!({"node": node, "online": true, "seq": hub.last_seq()}).to_string();
                if client
                    .try_publish(topics.status(), QoS::AtLeastOnce, true, online)
                    .is_ok()
                {
                    announce = false;
                }
            }
            while let Some(m) = queue.front() {
                match client.try_publish(
                    topics.events(&m.board),
                    QoS::AtLeastOnce,
                    false,
                    m.json.as_bytes().to_vec(),
                ) {
                    Ok(()) => {
                        pub_stats.published.fetch_add(1, Ordering::Relaxed);
                        dirty.insert(m.board.clone());
                        queue.pop_front();
                    }
                    Err(_) => break,
                }
            }
            if all_dirty {
                let ids: Vec<Arc<str>> = hub.with_round(|r| {
                    r.boards()
                        .iter()
                        .map(|b| Arc::from(b.id.as_str()))
                        .collect()
                });
                dirty.extend(ids);
                all_dirty = false;
            }
            if !queue.is_empty() {
                continue;
            }
            while let Some(board) = dirty.pop_first() {
                let Some(mut state) = hub.board_snapshot(&board) else {
                    continue;
                };
                if let serde_json::Value::Object(map) = &mut state {
                    map.insert("v".into(), 1.into());
                    map.insert("node".into(), node.clone().into());
                }
                if client
                    .try_publish(
                        topics.state(&board),
                        QoS::AtLeastOnce,
                        true,
                        state.to_string(),
                    )
                    .is_err()
                {
                    dirty.insert(board);
                    break;
                }
            }
        }
        let _ = client.try_publish(topics.status(), QoS::AtLeastOnce, true, offline);
        let _ = client.try_disconnect();
        let _ = driver.await;
    });
    (stats, handle)
}
