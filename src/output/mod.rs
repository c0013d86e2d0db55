//! Broadcasting: the hub ([`Hub`]) and every output fed from it — the HTTP API with
//! WebSocket and SSE event streams, relay files (PGN and LiveChessCloud JSON), MQTT, the
//! LiveChess EBoards API and the arbiter web page.
//!
//! Feeding it (the live daemon, or [`replay_source`] for captures):
//! - [`Hub::publish`] for every core event of a board, in order;
//! - [`Hub::set_status`] whenever a board's health changes (link, port, battery,
//!   clock presence);
//! - [`Hub::set_control`] once, with the handler of game-changing operator actions;
//! - [`start`] once, with an [`OutputConfig`], inside a tokio runtime.

pub mod archive;
pub mod bluetooth;
pub mod change;
pub mod corrections;
pub mod delay;
pub mod fanout;
pub mod files;
pub mod hall;
pub mod http;
pub mod hub;
pub mod lichess;
pub mod livechess;
pub mod livechess_rounds;
pub mod metrics;
pub mod model;
pub mod mqtt;
pub mod mqtt_schedule;
pub mod mqtt_source;
pub mod overlay;
pub mod relay;
pub mod render;
pub mod replay_source;
pub mod rounds;
pub mod server;
pub mod ws;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::task::AbortOnDropHandle;

use crate::service::Services;

pub use change::{Change, Content, EventTag, MsgKind, Notice, NoticeTag};
pub use hub::{Control, ControlError, Hub, HubConfig, HubError, Published, Start};
pub use model::{BoardStatus, LinkState, Pairing, Player, PlayerError, RoundInfo, RoundState};
pub use mqtt::{MqttBroker, MqttConfig};

/// One string or a list of them (`key = "a"` or `key = ["a", "b"]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    /// One.
    One(String),
    /// Several (maybe none).
    Many(Vec<String>),
}

impl OneOrMany {
    /// The strings in order.
    pub fn to_vec(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// Default address of the HTTP API and page.
pub const DEFAULT_HTTP: &str = "127.0.0.1:8080";
/// Default address of the LiveChess-compatible API.
pub const DEFAULT_LIVECHESS: &str = "127.0.0.1:1982";

/// Which outputs to run and where.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutputConfig {
    /// HTTP API, event streams, relay files and page (`None`: off).
    pub http: Option<SocketAddr>,
    /// LiveChess-compatible EBoards API (`None`: off).
    pub livechess: Option<SocketAddr>,
    /// MQTT publisher (`None`: off).
    pub mqtt: Option<MqttConfig>,
    /// Directory for relay files (`None`: not written).
    pub relay_dir: Option<PathBuf>,
    /// Secret required by every state-changing request (`None`: such requests are refused).
    pub token: Option<String>,
    /// Coalescing delay of relay file writes, milliseconds (default 300).
    pub relay_debounce_ms: Option<u64>,
    /// Web origins (`scheme://host[:port]`) besides the server's own whose pages may open the
    /// event-stream WebSocket.
    pub allowed_origins: Vec<String>,
    /// Web origins whose pages may open the LiveChess WebSocket (`None`: any, as LiveChess).
    pub livechess_allowed_origins: Option<Vec<String>>,
    /// Client connections at once over both servers (`None`: from the descriptor limit).
    pub max_connections: Option<usize>,
    /// Client connections at once from one address (`None`: half of `max_connections`).
    pub max_connections_per_address: Option<usize>,
    /// Broadcast delay: every public output shows the round as it stood this long ago; the
    /// token holder sees it live (`None` or zero: no delay).
    pub delay: Option<Duration>,
    /// Where a round loaded over the API is saved, to be restored on restart (`None`: not
    /// saved; the daemon uses `round.json` next to the captures).
    pub round_file: Option<PathBuf>,
    /// Push the round to a lichess broadcast (`None`: off). Never serialised: it holds the
    /// token.
    #[serde(skip)]
    pub lichess: Option<lichess::LichessConfig>,
    /// Descriptors the process keeps for its boards (ports, captures), which client connections
    /// may not take: the daemon's own budget (`daemon::descriptors`), 0 for the servers that
    /// have no boards.
    #[serde(skip)]
    pub descriptors_for_boards: usize,
}

/// Why outputs could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    /// A listening address could not be bound.
    #[error("cannot listen on {addr} ({what}): {source}{hint}")]
    Bind {
        /// Which server.
        what: &'static str,
        /// The address.
        addr: SocketAddr,
        /// The reason.
        source: std::io::Error,
        /// What to do about it, when known (starts with "; ").
        hint: &'static str,
    },
    /// The lichess pusher could not start.
    #[error("{0}")]
    Lichess(String),
    /// The relay directory could not be created.
    #[error("relay directory {dir}: {source}")]
    RelayDir {
        /// The directory.
        dir: PathBuf,
        /// The reason.
        source: std::io::Error,
    },
}

/// Running outputs: bound addresses, counters, and a way to stop them.
#[derive(Debug)]
pub struct Outputs {
    /// Address the HTTP server listens on.
    pub http: Option<SocketAddr>,
    /// Address the LiveChess API listens on.
    pub livechess: Option<SocketAddr>,
    /// MQTT counters, when publishing.
    pub mqtt: Option<Arc<mqtt::MqttStats>>,
    /// The delayed public hub, when a broadcast delay is configured.
    pub public: Option<Hub>,
    /// The lichess pusher's report, when pushing.
    pub lichess: Option<Arc<lichess::LichessReport>>,
    /// The outputs' tasks, stopped together.
    services: Services,
}

impl Outputs {
    /// Stop every output (a last relay write, MQTT offline status) and wait for them (5 s;
    /// the ones that do not stop by then are named in the log and aborted).
    pub async fn shutdown(self) {
        self.services.shutdown(Duration::from_secs(5)).await;
    }
}

async fn bind(
    what: &'static str,
    addr: SocketAddr,
) -> Result<tokio::net::TcpListener, OutputError> {
    tokio::net::TcpListener::bind(addr).await.map_err(|source| {
        let hint = match (source.kind(), what) {
            (std::io::ErrorKind::AddrInUse, "HTTP") => {
                "; another program listens there: choose another address with --http ADDR, \
                 or --http off"
            }
            (std::io::ErrorKind::AddrInUse, _) => {
                "; another program listens there: choose another address with --livechess ADDR"
            }
            _ => "",
        };
        OutputError::Bind {
            what,
            addr,
            source,
            hint,
        }
    })
}

/// The connection limits of `cfg`: from the descriptor limit less what the boards keep, with
/// the configured caps (never above what the descriptor limit allows).
pub fn limits(cfg: &OutputConfig) -> server::Limits {
    let mut limits = server::Limits::for_budget(server::nofile(), cfg.descriptors_for_boards);
    if let Some(n) = cfg.max_connections {
        limits.total = n.clamp(1, limits.total);
        limits.per_address = limits.per_address.min(limits.total);
    }
    if let Some(n) = cfg.max_connections_per_address {
        limits.per_address = n.clamp(1, limits.total);
    }
    limits
}

/// Start the configured outputs on `hub`. Must run inside a tokio runtime. Listening
/// addresses are bound before it returns (port 0 picks a free port; see [`Outputs`]).
pub async fn start(hub: Hub, cfg: &OutputConfig) -> Result<Outputs, OutputError> {
    let mut out = Outputs {
        http: None,
        livechess: None,
        mqtt: None,
        public: None,
        lichess: None,
        services: Services::new(),
    };
    let live = hub;
    let hub = out.public_hub(&live, cfg);
    let limiter = server::Limiter::new(limits(cfg));
    if cfg.http.is_some() || cfg.livechess.is_some() {
        let l = limiter.limits();
        tracing::info!(
            "client connections: at most {} ({} per address); headers within {:?}, bodies \
             within {:?}, a client that stops reading is dropped after {:?}",
            l.total,
            l.per_address,
            l.header_timeout,
            l.body_timeout,
            l.write_stall
        );
    }
    if let Some(l) = &cfg.lichess {
        out.start_lichess(&hub, l)?;
    }
    if let Some(addr) = cfg.http {
        out.start_http(addr, &live, cfg, &limiter).await?;
    }
    if let Some(addr) = cfg.livechess {
        out.start_livechess(addr, &hub, cfg, &limiter).await?;
    }
    if let Some(dir) = &cfg.relay_dir {
        out.start_relay(dir, &hub, cfg)?;
    }
    if let Some(m) = &cfg.mqtt {
        out.start_mqtt(&hub, m);
    }
    Ok(out)
}

impl Outputs {
    /// The hub the public outputs read: with a broadcast delay the delayed public hub (the live
    /// one is only for requests that present the token), else the live hub itself.
    fn public_hub(&mut self, live: &Hub, cfg: &OutputConfig) -> Hub {
        match cfg.delay.filter(|d| !d.is_zero()) {
            Some(delay) => {
                let public = delay::public(live, delay);
                tracing::info!(
                    "broadcast delay {} s: public outputs show the round as it stood then",
                    delay.as_secs_f64()
                );
                self.public = Some(public.clone());
                public
            }
            None => {
                delay::stop(live);
                live.clone()
            }
        }
    }

    /// The lichess pusher.
    fn start_lichess(
        &mut self,
        hub: &Hub,
        cfg: &lichess::LichessConfig,
    ) -> Result<(), OutputError> {
        let report = lichess::LichessReport::new(cfg);
        let pusher =
            lichess::Pusher::new(cfg.clone(), report.clone()).map_err(OutputError::Lichess)?;
        let hub = hub.clone();
        self.services.spawn("lichess", |stop| pusher.run(hub, stop));
        self.lichess = Some(report);
        Ok(())
    }

    /// The HTTP API, page and event streams on `addr` (the live hub: a request with the token
    /// reads it, the others the public one).
    async fn start_http(
        &mut self,
        addr: SocketAddr,
        live: &Hub,
        cfg: &OutputConfig,
        limiter: &Arc<server::Limiter>,
    ) -> Result<(), OutputError> {
        let listener = bind("HTTP", addr).await?;
        self.http = listener.local_addr().ok();
        let router = http::router_with(http::HttpOptions {
            hub: live.clone(),
            public: self.public.clone(),
            token: cfg.token.clone(),
            stop: self.services.token(),
            allowed_origins: cfg.allowed_origins.clone(),
            body_timeout: limiter.limits().body_timeout,
            round_file: cfg.round_file.clone(),
            lichess: self.lichess.clone(),
        });
        server::warn_if_exposed("the HTTP API", &addr);
        let limiter = limiter.clone();
        self.services.spawn("HTTP", |stop| {
            server::serve("HTTP", listener, router, limiter, stop)
        });
        tracing::info!("HTTP API and page on http://{}", self.http.unwrap_or(addr));
        Ok(())
    }

    /// The LiveChess-compatible API on `addr`.
    async fn start_livechess(
        &mut self,
        addr: SocketAddr,
        hub: &Hub,
        cfg: &OutputConfig,
        limiter: &Arc<server::Limiter>,
    ) -> Result<(), OutputError> {
        let listener = bind("LiveChess API", addr).await?;
        self.livechess = listener.local_addr().ok();
        server::warn_if_exposed("the LiveChess API", &addr);
        let router = livechess::router_with(
            hub.clone(),
            self.services.token(),
            cfg.livechess_allowed_origins.clone(),
        );
        let limiter = limiter.clone();
        self.services.spawn("LiveChess", |stop| {
            server::serve("LiveChess", listener, router, limiter, stop)
        });
        tracing::info!(
            "LiveChess EBoards API on ws://{}/api/v1.0",
            self.livechess.unwrap_or(addr)
        );
        Ok(())
    }

    /// The relay files in `dir`.
    fn start_relay(
        &mut self,
        dir: &std::path::Path,
        hub: &Hub,
        cfg: &OutputConfig,
    ) -> Result<(), OutputError> {
        let writer = relay::RelayWriter::new(dir).map_err(|source| OutputError::RelayDir {
            dir: dir.to_path_buf(),
            source,
        })?;
        let debounce = Duration::from_millis(cfg.relay_debounce_ms.unwrap_or(300));
        let hub = hub.clone();
        self.services
            .spawn("relay", |stop| writer.run(hub, debounce, stop));
        tracing::info!("relay files in {}", dir.display());
        Ok(())
    }

    /// The MQTT publisher.
    fn start_mqtt(&mut self, hub: &Hub, cfg: &mqtt::MqttConfig) {
        let (stats, task) = mqtt::spawn(hub.clone(), cfg.clone(), self.services.token());
        self.mqtt = Some(stats);
        // Aborted with the set: the handle aborts the publisher when the set drops its task.
        let task = AbortOnDropHandle::new(task);
        self.services.spawn("MQTT", |_| async move {
            let _ = task.await;
        });
        let brokers: Vec<String> = cfg.brokers.iter().map(ToString::to_string).collect();
        tracing::info!(
            "MQTT to {} as {}/{}",
            brokers.join(", "),
            cfg.prefix,
            cfg.node
        );
    }
}

#[cfg(test)]
mod bind_tests {
    #[tokio::test]
    async fn a_busy_address_says_what_to_do() {
        let taken = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = taken.local_addr().unwrap();
        let err = super::bind("HTTP", addr).await.unwrap_err().to_string();
        assert!(err.contains(&addr.to_string()), "{err}");
        assert!(
            err.contains("--http ADDR") && err.contains("--http off"),
            "{err}"
        );
    }
}
