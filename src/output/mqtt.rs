//! MQTT fan-out: every event and a retained per-board state on a broker, so several daemons in
//! one hall can feed one broadcast and late subscribers catch up at once.
//!
//! Topic layout (`PREFIX` defaults to `eboardd`, `NODE` names this daemon):
//!
//! | topic | retained | QoS | payload |
//! | --- | --- | --- | --- |
//! | `PREFIX/NODE/status` | yes | 1 | `{"node":…, "online":true\|false, "seq":…, "run":…}` (Last Will: offline) |
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
//! connection breaks are sent again first on the next connection (QoS 1: at least once). A
//! board's state follows its events once they are out, at most once a second, and after clock
//! readings alone only every 30 s (see [`super::mqtt_schedule`]).
//!
//! Several brokers (the nodes of a cluster, e.g. NATS with MQTT and JetStream on) are tried in
//! turn: when the connection to one breaks or cannot be made, the next one in the list is tried
//! at once (round-robin); the backoff waits only after a whole round of the list failed. Every
//! connection is a clean session and begins with the status, every board's retained state and
//! the events not acknowledged before, so a node that has never seen this daemon gets all it
//! needs. Only QoS 1 is used (NATS accepts 0 and 1), the Last Will is a plain retained QoS 1
//! message.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, LastWill, MqttOptions, Packet, QoS, Request};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use super::hub::{Hub, Published};
use super::mqtt_schedule::StateSchedule;
use tokio_util::sync::CancellationToken;

/// Retained states handed to the client per 50 ms tick of the publisher at most (40 a second):
/// a broker cluster stores each one before it reads on, and the events sent after them wait
/// behind them on the connection, so the states of every board after a reconnection go out
/// over a few seconds, not at once before the next move.
const STATES_PER_TICK: usize = 2;

/// One broker: a lone broker, or one node of a cluster.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqttBroker {
    /// Broker host.
    pub host: String,
    /// Broker port.
    pub port: u16,
}

impl std::fmt::Display for MqttBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Where and how to publish.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqttConfig {
    /// The brokers, tried in this order (round-robin): one, or the nodes of a cluster.
    pub brokers: Vec<MqttBroker>,
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
        Self::from_urls(&[url])
    }

    /// Parse a list of `mqtt://HOST[:PORT]`, the nodes of a cluster (at least one).
    pub fn from_urls<S: AsRef<str>>(urls: &[S]) -> Result<Self, MqttUrlError> {
        if urls.is_empty() {
            return Err(MqttUrlError::from(
                "no MQTT broker given: an empty list of addresses".to_string(),
            ));
        }
        let brokers = urls
            .iter()
            .map(|u| MqttBroker::from_url(u.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MqttConfig {
            brokers,
            prefix: default_prefix(),
            node: default_node(),
            queue: default_queue(),
        })
    }
}

impl MqttBroker {
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
        Ok(MqttBroker {
            host: host.to_string(),
            port,
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
    /// The broker connected now (`HOST:PORT`, one of the configured nodes), if any.
    pub broker: std::sync::Mutex<Option<String>>,
}

impl MqttStats {
    /// The broker connected now (`HOST:PORT`), if any.
    pub fn broker(&self) -> Option<String> {
        self.broker
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// The client options shared by the publisher and the round source for `broker`: keep-alive
/// 10 s, packets up to 4 MiB, a clean session.
pub fn client_options(client_id: &str, broker: &MqttBroker) -> MqttOptions {
    let mut opts = MqttOptions::new(client_id, broker.host.clone(), broker.port);
    opts.set_keep_alive(Duration::from_secs(10));
    opts.set_max_packet_size(4 << 20, 4 << 20);
    opts.set_clean_session(true);
    opts
}

/// Which broker of a list to use, and how long to wait before the next try: the next node at
/// once after a failure, the backoff (0.2 s doubling to 10 s) only after every node failed.
#[derive(Debug)]
pub struct Failover {
    brokers: Vec<MqttBroker>,
    current: usize,
    failed: usize,
    backoff: Duration,
}

impl Failover {
    /// Start with the first of `brokers` (at least one).
    pub fn new(brokers: Vec<MqttBroker>) -> Self {
        assert!(!brokers.is_empty(), "at least one MQTT broker");
        Failover {
            brokers,
            current: 0,
            failed: 0,
            backoff: Duration::from_millis(200),
        }
    }

    /// The broker to connect to now.
    pub fn current(&self) -> &MqttBroker {
        &self.brokers[self.current]
    }

    /// Every broker.
    pub fn brokers(&self) -> &[MqttBroker] {
        &self.brokers
    }

    /// Connected: the next failure starts a fresh round of the list.
    pub fn connected(&mut self) {
        self.failed = 0;
        self.backoff = Duration::from_millis(200);
    }

    /// The current broker failed: move on to the next one; the time to wait before trying it.
    pub fn failed(&mut self) -> Duration {
        self.current = (self.current + 1) % self.brokers.len();
        self.failed += 1;
        if !self.failed.is_multiple_of(self.brokers.len()) {
            return Duration::ZERO;
        }
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(Duration::from_secs(10));
        wait
    }
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
    stop: CancellationToken,
) -> (Arc<MqttStats>, tokio::task::JoinHandle<()>) {
    let stats = Arc::new(MqttStats::default());
    let node = topic_level(&cfg.node);
    let topics = Topics {
        prefix: format!("{}/{}", topic_level(&cfg.prefix), node),
    };
    let client_id = format!("eboardd-{node}-{}", std::process::id());
    let offline = json!({"node": node, "online": false}).to_string();
    let will = LastWill::new(topics.status(), offline.clone(), QoS::AtLeastOnce, true);
    let options = move |broker: &MqttBroker| {
        let mut opts = client_options(&client_id, broker);
        opts.set_last_will(will.clone());
        opts
    };
    let failover = Failover::new(cfg.brokers.clone());
    let (client, eventloop) = AsyncClient::new(options(failover.current()), 1024);
    let (conn_tx, conn_rx) = watch::channel(0u64);
    let brokers = Brokers {
        hub: hub.clone(),
        stats: stats.clone(),
        all: cfg.brokers.clone(),
    };
    brokers.connected_to(None);
    let connection = Connection {
        eventloop,
        failover,
        options: Box::new(options),
        brokers,
        connects: conn_tx,
    };
    let driver = tokio::spawn(connection.run(stop.clone()));
    // Subscribed here, before the task runs: every event published once `spawn` returns is
    // queued, even while the task has not started yet and the broker is not connected.
    let rx = hub.receiver();
    let publisher = Publisher {
        client,
        hub,
        topics,
        // This daemon's run (its start, in Unix milliseconds): its `seq` counts from 1 in each.
        run: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64),
        node,
        offline,
        stats: stats.clone(),
        cap: cfg.queue.max(1),
    };
    let handle = tokio::spawn(async move {
        publisher.run(rx, conn_rx, stop).await;
        let _ = driver.await;
    });
    (stats, handle)
}

/// What the brokers' health and metrics say: health lists the brokers that cannot be reached
/// (part `mqtt`) until one is connected; the metrics name the one connected.
struct Brokers {
    hub: Hub,
    stats: Arc<MqttStats>,
    all: Vec<MqttBroker>,
}

impl Brokers {
    /// `broker` is reachable (`why` is `None`) or not.
    fn status(&self, broker: &MqttBroker, why: Option<String>) {
        if let Some(m) = self.hub.metrics() {
            m.set_fault(super::metrics::Part::Mqtt, &broker.to_string(), why);
        }
    }

    /// The broker connected now, if any.
    fn connected_to(&self, now: Option<&MqttBroker>) {
        if let Some(m) = self.hub.metrics() {
            for b in &self.all {
                m.mqtt_connected(&b.to_string(), Some(b) == now);
            }
        }
        *self.stats.broker.lock().unwrap_or_else(|e| e.into_inner()) = now.map(|b| b.to_string());
    }
}

/// The client's connection: its event loop connects, reconnects (to the next broker) with
/// backoff, and reports each new connection (`connects` counts them).
struct Connection {
    eventloop: rumqttc::EventLoop,
    failover: Failover,
    options: Box<dyn Fn(&MqttBroker) -> MqttOptions + Send>,
    brokers: Brokers,
    connects: watch::Sender<u64>,
}

impl Connection {
    /// Drives the connection until `stop` turns true, then flushes what was queued (the
    /// offline status, the last events).
    async fn run(mut self, stop: CancellationToken) {
        // Publishes handed to the client but not acknowledged by the broker when the connection
        // broke (in flight, or still in the client's channel). The client keeps them only for a
        // session the broker kept, and ours are clean: they go first on the next connection
        // (to whichever node it is).
        let mut unacked: VecDeque<Request> = VecDeque::new();
        let mut unreachable: Option<String> = None;
        let stats = self.brokers.stats.clone();
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                ev = self.eventloop.poll() => match ev {
                    Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                        if !ack.session_present {
                            self.eventloop.pending.extend(unacked.drain(..));
                        }
                        self.failover.connected();
                        let broker = self.failover.current().clone();
                        if unreachable.take().is_some() || self.failover.brokers().len() > 1 {
                            tracing::info!(%broker, "MQTT broker reached");
                        }
                        for b in self.failover.brokers() {
                            self.brokers.status(b, None);
                        }
                        self.brokers.connected_to(Some(&broker));
                        stats.connected.store(true, Ordering::Relaxed);
                        let n = stats.connects.fetch_add(1, Ordering::Relaxed) + 1;
                        self.connects.send_replace(n);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        unacked.extend(
                            self.eventloop
                                .pending
                                .drain(..)
                                .filter(|r| matches!(r, Request::Publish(_))),
                        );
                        let why = e.to_string();
                        let broker = self.failover.current().clone();
                        if stats.connected.swap(false, Ordering::Relaxed) {
                            tracing::warn!(%broker, "MQTT broker connection lost: {why}");
                            self.brokers.connected_to(None);
                        } else if unreachable.as_deref() != Some(&why) {
                            tracing::warn!(%broker, "MQTT broker not reachable: {why}; retrying");
                        }
                        self.brokers.status(&broker, Some(format!("not reachable: {why}")));
                        unreachable = Some(why);
                        let wait = self.failover.failed();
                        self.eventloop.mqtt_options = (self.options)(self.failover.current());
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = stop.cancelled() => break,
                        }
                    }
                }
            }
        }
        // Flush what was queued (the offline status, last events) before leaving.
        let _ = tokio::time::timeout(Duration::from_secs(2), async {
            while let Ok(ev) = self.eventloop.poll().await {
                if let Event::Outgoing(rumqttc::Outgoing::Disconnect) = ev {
                    break;
                }
            }
        })
        .await;
        for b in self.failover.brokers() {
            self.brokers.status(b, None);
        }
        self.brokers.connected_to(None);
    }
}

/// What goes to the broker: the hub's events as they come (a bounded queue, oldest dropped),
/// the node's online status on each connection, and each board's retained state, paced.
struct Publisher {
    client: AsyncClient,
    hub: Hub,
    topics: Topics,
    node: String,
    /// This daemon's run (its start, in Unix milliseconds).
    run: u64,
    /// The offline status, published last.
    offline: String,
    stats: Arc<MqttStats>,
    /// Events queued at most.
    cap: usize,
}

impl Publisher {
    /// Publishes until `stop` turns true or the hub closes, then says the node is offline and
    /// disconnects. `rx`: the hub's messages; `connects`: each new connection.
    async fn run(
        self,
        mut rx: tokio::sync::broadcast::Receiver<Arc<Published>>,
        mut connects: watch::Receiver<u64>,
        stop: CancellationToken,
    ) {
        let mut queue: VecDeque<Arc<Published>> = VecDeque::new();
        let mut states = StateSchedule::default();
        let mut state_tokens = STATES_PER_TICK;
        let mut all_dirty = false;
        let mut announce = false;
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                r = rx.recv() => match r {
                    Ok(m) => {
                        if queue.len() >= self.cap {
                            queue.pop_front();
                            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
                        }
                        queue.push_back(m);
                    }
                    Err(RecvError::Lagged(n)) => {
                        self.stats.dropped.fetch_add(n, Ordering::Relaxed);
                        all_dirty = true;
                    }
                    Err(RecvError::Closed) => break,
                },
                r = connects.changed() => {
                    if r.is_err() { break }
                    // A new connection: announce, and republish every state.
                    announce = true;
                    all_dirty = true;
                }
                _ = tick.tick() => state_tokens = STATES_PER_TICK,
            }
            if !self.stats.connected.load(Ordering::Relaxed) {
                continue;
            }
            if announce && self.announce() {
                announce = false;
            }
            self.publish_events(&mut queue, &mut states);
            if all_dirty {
                let ids: Vec<Arc<str>> = self.hub.with_round(|r| {
                    r.boards()
                        .iter()
                        .map(|b| Arc::from(b.id.as_str()))
                        .collect()
                });
                states.all_due(ids, Instant::now());
                all_dirty = false;
            }
            if queue.is_empty() {
                self.publish_states(&mut states, &mut state_tokens);
            }
        }
        let _ = self
            .client
            .try_publish(self.topics.status(), QoS::AtLeastOnce, true, self.offline);
        let _ = self.client.try_disconnect();
    }

    /// Says the node is online (retained); `false` when the client could not take it.
    fn announce(&self) -> bool {
        let online = json!({
            "node": self.node,
            "online": true,
            "seq": self.hub.last_seq(),
            "run": self.run,
        })
        .to_string();
        self.client
            .try_publish(self.topics.status(), QoS::AtLeastOnce, true, online)
            .is_ok()
    }

    /// Hands the queued events to the client, in order, while it takes them; each makes its
    /// board's state due.
    fn publish_events(&self, queue: &mut VecDeque<Arc<Published>>, states: &mut StateSchedule) {
        while let Some(m) = queue.front() {
            let taken = self.client.try_publish(
                self.topics.events(&m.board),
                QoS::AtLeastOnce,
                false,
                m.json.as_bytes().to_vec(),
            );
            if taken.is_err() {
                break;
            }
            self.stats.published.fetch_add(1, Ordering::Relaxed);
            states.changed(&m.board, m.kind, Instant::now());
            queue.pop_front();
        }
    }

    /// Publishes the boards' states that are due (retained), `tokens` at most.
    fn publish_states(&self, states: &mut StateSchedule, tokens: &mut usize) {
        let now = Instant::now();
        while *tokens > 0
            && let Some(board) = states.take_due(now)
        {
            *tokens -= 1;
            let Some(mut state) = self.hub.board_snapshot(&board) else {
                continue;
            };
            if let serde_json::Value::Object(map) = &mut state {
                map.insert("v".into(), 1.into());
                map.insert("node".into(), self.node.clone().into());
            }
            let taken = self.client.try_publish(
                self.topics.state(&board),
                QoS::AtLeastOnce,
                true,
                state.to_string(),
            );
            if taken.is_err() {
                states.not_taken(board, now);
                break;
            }
            states.published(board, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brokers(n: u16) -> Vec<MqttBroker> {
        (1..=n)
            .map(|port| MqttBroker {
                host: "127.0.0.1".into(),
                port,
            })
            .collect()
    }

    #[test]
    fn failover_goes_round_the_nodes_and_waits_only_after_a_whole_round() {
        let mut f = Failover::new(brokers(3));
        assert_eq!(f.current().port, 1);
        assert_eq!(f.failed(), Duration::ZERO);
        assert_eq!(f.current().port, 2);
        assert_eq!(f.failed(), Duration::ZERO);
        assert_eq!(f.current().port, 3);
        assert_eq!(f.failed(), Duration::from_millis(200), "every node failed");
        assert_eq!(f.current().port, 1);
        f.failed();
        f.failed();
        assert_eq!(f.failed(), Duration::from_millis(400), "backoff doubles");
        f.connected();
        assert_eq!(f.current().port, 1);
        assert_eq!(
            f.failed(),
            Duration::ZERO,
            "a broken connection: the next node at once"
        );
        assert_eq!(f.current().port, 2);
    }

    #[test]
    fn one_broker_waits_the_backoff_after_each_failure() {
        let mut f = Failover::new(brokers(1));
        assert_eq!(f.failed(), Duration::from_millis(200));
        assert_eq!(f.failed(), Duration::from_millis(400));
        for _ in 0..10 {
            f.failed();
        }
        assert_eq!(f.failed(), Duration::from_secs(10));
        assert_eq!(f.current().port, 1);
    }

    #[test]
    fn a_list_of_addresses_is_checked_entry_by_entry() {
        let e = MqttConfig::from_urls(&["mqtt://a:1883", "mqtt://b:x"]).unwrap_err();
        assert!(e.to_string().contains("mqtt://b:x"), "{e}");
        let e = MqttConfig::from_urls::<&str>(&[]).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let c = MqttConfig::from_urls(&["mqtt://a", "tcp://[::1]:1884"]).unwrap();
        assert_eq!(c.brokers[1].to_string(), "[::1]:1884");
        assert_eq!(c.brokers[0].to_string(), "a:1883");
    }
}
