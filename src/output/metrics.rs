//! The live daemon's metrics, served as `GET /metrics` in the Prometheus text exposition
//! format (version 0.0.4) by the official Prometheus Rust client (`prometheus-client`).
//!
//! One [`Metrics`] per daemon run, owned by its shared context (`daemon::Ctx`) and attached
//! to its hub ([`super::Hub::set_metrics`]). What is counted, and where:
//! - moves, retractions, games and irregularities: by [`CountEvents`], a follower of the live
//!   hub, where every core event of the live daemon passes (the delayed public hub does not
//!   count them again);
//! - boards by link state, irregularities open and the hall check's boards: read from the
//!   round model at each scrape ([`RoundGauges`], by [`super::hall::gauges`]), so they are
//!   what `GET /api/v1/boards` says at that moment;
//! - link errors: in the port task (`daemon::board_task`): frames the decoder rejected, board
//!   dumps that repaired lost field updates, boards that reset, chained boards that missed a
//!   reply;
//! - clients: a [`ClientGuard`] held by each WebSocket, SSE and LiveChess connection;
//! - capture bytes: in the capture files' writer (`daemon::captures`);
//! - lichess pushes: [`Metrics::lichess_push`], for the lichess pusher;
//! - failing parts ([`Metrics::set_fault`]): a configured port that cannot open, the capture
//!   directory, the MQTT broker, lichess. Health (`GET /api/v1/health`, `failing`) lists them
//!   with their reasons; `eboardd_failing{part}` counts them.
//!
//! Nothing here is per board: every label has a small fixed set of values.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::change::{Content, Follower, Published};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::model::{LinkState, RoundState};
use crate::core::event::EventKind;

/// Content type of `GET /metrics`: the Prometheus text format, version 0.0.4.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// Every link state a board can have, in the order they are exposed.
const LINK_STATES: [LinkState; 4] = [
    LinkState::Active,
    LinkState::NotResponding,
    LinkState::Disconnected,
    LinkState::Unknown,
];

/// The name of a link state, as `GET /api/v1/boards` gives it (`link`).
pub fn link_state_name(state: LinkState) -> &'static str {
    match state {
        LinkState::Unknown => "unknown",
        LinkState::Active => "active",
        LinkState::NotResponding => "not_responding",
        LinkState::Disconnected => "disconnected",
    }
}

/// The kind of a connected client (label `kind` of `eboardd_clients`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientKind {
    /// The event stream over WebSocket (`/api/v1/events`).
    Ws,
    /// The event stream over Server-Sent Events (`/api/v1/events/sse`).
    Sse,
    /// A LiveChess EBoards API WebSocket (`/api/v1.0`).
    LiveChess,
}

impl ClientKind {
    /// Every kind, in the order they are exposed.
    pub const ALL: [ClientKind; 3] = [ClientKind::Ws, ClientKind::Sse, ClientKind::LiveChess];

    /// Its label value.
    pub fn name(self) -> &'static str {
        match self {
            ClientKind::Ws => "ws",
            ClientKind::Sse => "sse",
            ClientKind::LiveChess => "livechess",
        }
    }
}

/// A link error of a board's port (label `kind` of `eboardd_link_errors_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkError {
    /// A frame the decoder rejected (bad length, checksum, unknown message); it resynchronises
    /// on the next frame.
    BadFrame,
    /// A board dump differed from the field updates received: updates were lost, and the game
    /// was repaired from the dump.
    Repair,
    /// The board reset (it stopped sending updates while its clock ran); its update mode was
    /// set again.
    Reset,
    /// A board of a chain left a command unanswered in time.
    NoReply,
}

impl LinkError {
    /// Every kind, in the order they are exposed.
    pub const ALL: [LinkError; 4] = [
        LinkError::BadFrame,
        LinkError::Repair,
        LinkError::Reset,
        LinkError::NoReply,
    ];

    /// Its label value.
    pub fn name(self) -> &'static str {
        match self {
            LinkError::BadFrame => "bad_frame",
            LinkError::Repair => "repair",
            LinkError::Reset => "reset",
            LinkError::NoReply => "no_reply",
        }
    }
}

/// A part of the daemon that can fail while it runs (label `part` of `eboardd_failing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// A configured board port that cannot be opened (or served).
    Port,
    /// The capture directory (cannot be written).
    Capture,
    /// The MQTT broker (cannot be reached).
    Mqtt,
    /// The lichess push (lichess refuses it, or cannot be reached).
    Lichess,
}

impl Part {
    /// Every part, in the order they are exposed.
    pub const ALL: [Part; 4] = [Part::Port, Part::Capture, Part::Mqtt, Part::Lichess];

    /// Its label value (and its name in health).
    pub fn name(self) -> &'static str {
        match self {
            Part::Port => "port",
            Part::Capture => "capture",
            Part::Mqtt => "mqtt",
            Part::Lichess => "lichess",
        }
    }
}

/// A part failing now, as health lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fault {
    /// Which kind of part.
    pub part: Part,
    /// Which one: the port as configured, the directory, the broker's address, the round id.
    pub name: String,
    /// Why, on one line, with what to do when the daemon knows it.
    pub reason: String,
    /// Wall-clock epoch ms since when it fails (this reason or another).
    pub since_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PartLabels {
    part: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct BrokerLabels {
    broker: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StatusLabels {
    status: String,
}

/// The daemon's metrics and their registry. Cheap to update from any task; share it in an
/// `Arc`.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    boards: Family<StateLabels, Gauge>,
    moves: Counter,
    moves_retracted: Counter,
    games: Counter,
    irregularities: Counter,
    irregularities_open: Gauge,
    /// The hall check's boards: checked, and ready among them.
    hall: [Gauge; 2],
    link_errors: Family<KindLabels, Counter>,
    clients: Family<KindLabels, Gauge>,
    capture_bytes: Counter,
    lichess_push: Family<StatusLabels, Counter>,
    failing: Family<PartLabels, Gauge>,
    mqtt_connected: Family<BrokerLabels, Gauge>,
    faults: Mutex<BTreeMap<(Part, String), Fault>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Every metric registered, at zero (every label value of a fixed set present).
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("eboardd");
        let m = Metrics {
            boards: Family::default(),
            moves: Counter::default(),
            moves_retracted: Counter::default(),
            games: Counter::default(),
            irregularities: Counter::default(),
            irregularities_open: Gauge::default(),
            hall: Default::default(),
            link_errors: Family::default(),
            clients: Family::default(),
            capture_bytes: Counter::default(),
            lichess_push: Family::default(),
            failing: Family::default(),
            mqtt_connected: Family::default(),
            faults: Mutex::default(),
            registry: Registry::default(),
        };
        m.register(&mut registry);
        m.zero_label_sets();
        Metrics { registry, ..m }
    }

    /// Registers every metric with its help text.
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "boards",
            "Boards the daemon knows, by link state (as GET /api/v1/boards gives it)",
            self.boards.clone(),
        );
        registry.register(
            "moves",
            "Moves added to a game score (move_made events)",
            self.moves.clone(),
        );
        registry.register(
            "moves_retracted",
            "Moves taken back from a game score before the clock was pressed (move_retracted \
             events)",
            self.moves_retracted.clone(),
        );
        registry.register(
            "games",
            "Games started (game_started events)",
            self.games.clone(),
        );
        registry.register(
            "irregularities",
            "Irregularities raised (irregularity events)",
            self.irregularities.clone(),
        );
        registry.register(
            "irregularities_open",
            "Irregularities raised and not yet resolved, among those GET /api/v1/boards lists",
            self.irregularities_open.clone(),
        );
        registry.register(
            "hall_boards_checked",
            "Boards the hall check looks at (GET /api/v1/round/check: the loaded round's, else \
             the connected ones)",
            self.hall[0].clone(),
        );
        registry.register(
            "hall_boards_ready",
            "Boards the hall check finds ready for the round (GET /api/v1/round/check)",
            self.hall[1].clone(),
        );
        registry.register(
            "link_errors",
            "Link errors of the boards' ports, by kind: bad frames, repairs from a board dump, \
             board resets, missed replies",
            self.link_errors.clone(),
        );
        registry.register(
            "clients",
            "Clients connected, by kind: event stream over WebSocket or SSE, LiveChess API",
            self.clients.clone(),
        );
        registry.register(
            "capture_bytes",
            "Bytes written to capture files",
            self.capture_bytes.clone(),
        );
        registry.register(
            "lichess_push",
            "Pushes of games to lichess, by outcome",
            self.lichess_push.clone(),
        );
        registry.register(
            "failing",
            "Parts failing now, by kind: configured ports that cannot open, the capture \
             directory, the MQTT broker, lichess (GET /api/v1/health lists them with the reason)",
            self.failing.clone(),
        );
        registry.register(
            "mqtt_connected",
            "The MQTT broker the publisher is connected to, by broker (the configured ones, e.g. \
             the nodes of a cluster): 1 for the one connected, 0 for the others",
            self.mqtt_connected.clone(),
        );
    }

    /// Every label value of a fixed set present at zero.
    fn zero_label_sets(&self) {
        for part in Part::ALL {
            drop(
                self.failing
                    .get_or_create(&PartLabels { part: part.name() }),
            );
        }
        for state in LINK_STATES {
            drop(self.boards.get_or_create(&StateLabels {
                state: link_state_name(state),
            }));
        }
        for kind in LinkError::ALL {
            drop(
                self.link_errors
                    .get_or_create(&KindLabels { kind: kind.name() }),
            );
        }
        for kind in ClientKind::ALL {
            drop(
                self.clients
                    .get_or_create(&KindLabels { kind: kind.name() }),
            );
        }
    }

    /// Count one core event published on the live hub (by [`CountEvents`]).
    pub fn event(&self, kind: &EventKind) {
        match kind {
            EventKind::MoveMade { .. } => self.moves.inc(),
            EventKind::MoveRetracted { .. } => self.moves_retracted.inc(),
            EventKind::GameStarted { .. } => self.games.inc(),
            EventKind::Irregularity { .. } => self.irregularities.inc(),
            _ => 0,
        };
    }

    /// Count `n` link errors of one kind.
    pub fn link_errors(&self, kind: LinkError, n: u64) {
        if n > 0 {
            self.link_errors
                .get_or_create(&KindLabels { kind: kind.name() })
                .inc_by(n);
        }
    }

    /// A client of `kind` connected: it counts as connected until the guard is dropped.
    pub fn client(&self, kind: ClientKind) -> ClientGuard {
        let gauge = self
            .clients
            .get_or_create(&KindLabels { kind: kind.name() })
            .clone();
        gauge.inc();
        ClientGuard { gauge }
    }

    /// The counter of bytes written to capture files (`eboardd_capture_bytes_total`), for the
    /// capture writer to add to.
    pub fn capture_bytes(&self) -> Counter {
        self.capture_bytes.clone()
    }

    /// For the lichess pusher: count one push of a game to lichess that ended with `status`.
    /// Give `status` from a small fixed set (e.g. `"ok"`, `"rejected"`, `"error"`, or the
    /// HTTP status code as text) — never anything per game or per board — so that the series
    /// stay few. `eboardd_lichess_push_total{status}` shows each status once it has been
    /// counted.
    pub fn lichess_push(&self, status: &str) {
        self.lichess_push
            .get_or_create(&StatusLabels {
                status: status.to_string(),
            })
            .inc();
    }

    /// For the MQTT publisher: whether it is connected to `broker` (`HOST:PORT`, one of the
    /// configured brokers: a small fixed set) now.
    pub fn mqtt_connected(&self, broker: &str, connected: bool) {
        self.mqtt_connected
            .get_or_create(&BrokerLabels {
                broker: broker.to_string(),
            })
            .set(i64::from(connected));
    }

    /// `part` named `name` fails for `reason` (`None`: it works again). A part that keeps
    /// failing keeps the time it started failing.
    pub fn set_fault(&self, part: Part, name: &str, reason: Option<String>) {
        let mut faults = self.faults.lock().unwrap_or_else(|e| e.into_inner());
        let key = (part, name.to_string());
        match reason {
            Some(reason) => {
                let since_ms = faults.get(&key).map_or_else(now_ms, |f| f.since_ms);
                faults.insert(
                    key,
                    Fault {
                        part,
                        name: name.to_string(),
                        reason,
                        since_ms,
                    },
                );
            }
            None => {
                faults.remove(&key);
            }
        }
        let n = faults.keys().filter(|(p, _)| *p == part).count();
        self.failing
            .get_or_create(&PartLabels { part: part.name() })
            .set(n as i64);
    }

    /// The parts failing now, by kind then name.
    pub fn faults(&self) -> Vec<Fault> {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// The exposition (Prometheus text format), with the gauges of the round as it stands now
    /// (`gauges`: read by [`super::hall::gauges`]).
    pub fn encode(&self, gauges: &RoundGauges) -> String {
        for (state, n) in LINK_STATES.iter().zip(gauges.boards) {
            self.boards
                .get_or_create(&StateLabels {
                    state: link_state_name(*state),
                })
                .set(n);
        }
        self.irregularities_open.set(gauges.irregularities_open);
        self.hall[0].set(gauges.hall_checked);
        self.hall[1].set(gauges.hall_ready);
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

/// What the gauges of a scrape read from the round as it stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundGauges {
    /// Boards by link state, in the order of the exposition.
    pub boards: [i64; LINK_STATES.len()],
    /// Irregularities raised and not resolved.
    pub irregularities_open: i64,
    /// Boards the hall check looked at.
    pub hall_checked: i64,
    /// Boards the hall check found ready.
    pub hall_ready: i64,
}

impl RoundGauges {
    /// Count the boards by link state and their open irregularities in `round`.
    pub fn count(round: &RoundState) -> RoundGauges {
        let mut gauges = RoundGauges::default();
        for b in round.boards() {
            let link = b.link();
            if let Some(i) = LINK_STATES.iter().position(|s| *s == link) {
                gauges.boards[i] += 1;
            }
            gauges.irregularities_open +=
                b.open_irregularities().filter(|i| !i.resolved).count() as i64;
        }
        gauges
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A connected client, counted in `eboardd_clients{kind}` until dropped.
#[derive(Debug)]
pub struct ClientGuard {
    gauge: Gauge,
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

/// Counts the events of the hub it follows into the metrics (the live hub's; see
/// [`super::Hub::set_metrics`]).
pub struct CountEvents(pub std::sync::Arc<Metrics>);

impl Follower for CountEvents {
    fn published(&self, message: &std::sync::Arc<Published>) {
        if let Content::Event(event) = &message.content {
            self.0.event(&event.kind);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{Hub, HubConfig, RoundInfo};

    #[test]
    fn every_fixed_series_is_there_at_zero_and_clients_come_and_go() {
        let hub = Hub::new(
            RoundInfo {
                boards: vec!["board-1".into(), "board-2".into()],
                ..Default::default()
            },
            HubConfig::default(),
        );
        let m = Metrics::new();
        let text = m.encode(&crate::output::hall::gauges(&hub));
        for line in [
            "eboardd_boards{state=\"unknown\"} 2",
            "eboardd_boards{state=\"active\"} 0",
            "eboardd_moves_total 0",
            "eboardd_games_total 0",
            "eboardd_irregularities_open 0",
            "eboardd_hall_boards_checked 0",
            "eboardd_hall_boards_ready 0",
            "eboardd_link_errors_total{kind=\"bad_frame\"} 0",
            "eboardd_clients{kind=\"livechess\"} 0",
            "eboardd_capture_bytes_total 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line:?} in\n{text}");
        }
        // Registered, shown once it has a value.
        assert!(!text.contains("lichess_push"), "{text}");
        let g = m.client(ClientKind::Ws);
        assert!(
            m.encode(&crate::output::hall::gauges(&hub))
                .contains("eboardd_clients{kind=\"ws\"} 1")
        );
        drop(g);
        assert!(
            m.encode(&crate::output::hall::gauges(&hub))
                .contains("eboardd_clients{kind=\"ws\"} 0")
        );
        m.lichess_push("ok");
        m.link_errors(LinkError::Repair, 2);
        let text = m.encode(&crate::output::hall::gauges(&hub));
        assert!(text.contains("eboardd_lichess_push_total{status=\"ok\"} 1"));
        assert!(text.contains("eboardd_link_errors_total{kind=\"repair\"} 2"));
    }

    #[test]
    fn failing_parts_are_listed_and_counted_until_they_heal() {
        let hub = Hub::new(RoundInfo::default(), HubConfig::default());
        let m = Metrics::new();
        assert!(
            m.encode(&crate::output::hall::gauges(&hub))
                .contains("eboardd_failing{part=\"port\"} 0")
        );
        m.set_fault(Part::Port, "/dev/a", Some("Permission denied".into()));
        m.set_fault(Part::Port, "/dev/b", Some("Not a typewriter".into()));
        m.set_fault(Part::Mqtt, "127.0.0.1:1", Some("refused".into()));
        let since = m.faults()[0].since_ms;
        m.set_fault(Part::Port, "/dev/a", Some("No such file".into()));
        let text = m.encode(&crate::output::hall::gauges(&hub));
        assert!(text.contains("eboardd_failing{part=\"port\"} 2"), "{text}");
        assert!(text.contains("eboardd_failing{part=\"mqtt\"} 1"), "{text}");
        let f = m.faults();
        assert_eq!(
            (f[0].name.as_str(), f[0].reason.as_str()),
            ("/dev/a", "No such file")
        );
        assert_eq!(f[0].since_ms, since, "still failing since the first reason");
        m.set_fault(Part::Port, "/dev/a", None);
        m.set_fault(Part::Mqtt, "127.0.0.1:1", None);
        let text = m.encode(&crate::output::hall::gauges(&hub));
        assert!(text.contains("eboardd_failing{part=\"port\"} 1"), "{text}");
        assert!(text.contains("eboardd_failing{part=\"mqtt\"} 0"), "{text}");
        assert_eq!(m.faults().len(), 1);
    }

    #[tokio::test]
    async fn events_count_once_on_the_live_hub_and_the_delayed_hub_lends_its_clients() {
        use crate::core::event::CoreEvent;
        use std::sync::Arc;
        let live = Hub::new(RoundInfo::default(), HubConfig::default());
        let public = crate::output::delay::public(&live, std::time::Duration::from_millis(1));
        let m = Arc::new(Metrics::new());
        live.set_metrics(m.clone());
        let fen = shakmaty::fen::Fen::from_position(
            &shakmaty::Chess::default(),
            shakmaty::EnPassantMode::Legal,
        )
        .to_string();
        let events = [
            EventKind::GameStarted {
                fen: fen.clone(),
                chess960: None,
            },
            EventKind::MoveMade {
                ply: 1,
                san: "e4".into(),
                uci: "e2e4".parse().unwrap(),
                fen,
                recovered: false,
            },
        ];
        for kind in events {
            live.publish(
                "board-1",
                &CoreEvent {
                    t: 1,
                    game: 1,
                    kind,
                },
            );
        }
        // The public hub has them once the delay has passed: nothing more is counted.
        let mut changes = public.changes();
        while public.last_seq() < 2 {
            changes.changed().await.unwrap();
        }
        let text = m.encode(&crate::output::hall::gauges(&live));
        assert!(text.contains("eboardd_moves_total 1\n"), "{text}");
        assert!(text.contains("eboardd_games_total 1\n"), "{text}");
        let guard = public
            .metrics()
            .expect("lent")
            .client(ClientKind::LiveChess);
        assert!(
            m.encode(&crate::output::hall::gauges(&live))
                .contains("eboardd_clients{kind=\"livechess\"} 1")
        );
        drop(guard);
    }
}
