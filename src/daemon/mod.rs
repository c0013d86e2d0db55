//! The live daemon: boards on serial ports (configured, or found on USB), one task per port,
//! captures always on, an in-process [`hub`] for the outputs, systemd integration, signals.
//!
//! Start-up: the configuration is loaded and checked; every board's capture of the current
//! round is read back and its games rebuilt ([`captures`]); then the ports are opened and the
//! boards carry on where they were. `kill -9` or a power cut loses no completed move: every
//! record is written (and, for records that cause move or game events, synced) before the
//! events it causes are published.
//!
//! Rooms: [`ctx`] (the context every task shares), `ports` (one task per port, the USB
//! discovery loop), [`board_task`] (a port's task), [`board`] (one board: capture, device,
//! health), [`captures`] (the capture files), [`discovery`] (USB ids, hotplug), `control`
//! (operator actions and corrections), `followers` (the `--print` printer, players into the
//! captures), [`demo`] (`simulate` and `demo`); here: the options, `serve` and the reload.

pub mod ble;
pub mod board;
pub mod board_task;
pub mod captures;
mod control;
pub mod ctx;
pub mod demo;
pub mod descriptors;
pub mod discovery;
mod followers;
pub mod heartbeat;
pub mod notify;
mod ports;
mod running;
pub mod serial;
pub mod signals;
pub mod wire;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::config::{Config, ConfigError, Overrides};
use crate::output::Hub;
pub use ctx::Ctx;
use followers::follow_players;
pub use followers::print_events;

/// Why the daemon could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// The configuration is not usable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Something the daemon needs at start could not be set up.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// The broadcast outputs could not start (e.g. the HTTP address is in use).
    #[error(transparent)]
    Outputs(#[from] crate::output::OutputError),
    /// Emulated boards (`simulate`, `demo`) could not be made as asked.
    #[error("emulated boards: {0}")]
    Emulator(String),
    /// Another daemon uses the capture directory.
    #[error(transparent)]
    Locked(#[from] captures::lock::LockError),
}

fn io_err(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DaemonError {
    let what = what.into();
    move |source| DaemonError::Io { what, source }
}

/// Where the configuration comes from.
#[derive(Debug, Clone)]
pub enum ConfigSource {
    /// A file (or none) with command-line overrides; read again on SIGHUP.
    File {
        /// The file.
        path: Option<PathBuf>,
        /// Command-line overrides.
        overrides: Overrides,
    },
    /// A configuration given whole (the demo).
    Fixed(Box<Config>),
}

impl ConfigSource {
    fn load(&self) -> Result<Config, ConfigError> {
        match self {
            ConfigSource::File { path, overrides } => Config::load_with(path.as_deref(), overrides),
            ConfigSource::Fixed(c) => Ok((**c).clone()),
        }
    }
}

/// What to print on standard output while running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Print {
    /// Nothing (logs go to standard error).
    #[default]
    Nothing,
    /// Every event as a JSON line.
    Events,
    /// Moves and game results, for people.
    Moves,
}

/// Options of `eboardd run`.
#[derive(Debug, Clone)]
pub struct Options {
    /// The configuration.
    pub config: ConfigSource,
    /// What to print on standard output.
    pub print: Print,
    /// The broadcast outputs to serve (HTTP API and page, streams, relay files, MQTT,
    /// LiveChess API), if any.
    pub outputs: Option<OutputSetup>,
    /// How the outputs follow a reloaded configuration file (SIGHUP), if they do.
    pub reload_outputs: Option<OutputReload>,
}

/// Makes the output setup from a (re)loaded configuration file: the command line's output
/// flags completed from the file's `[outputs]` and `[event]`.
#[derive(Clone)]
pub struct OutputReload(Arc<MakeSetup>);

/// The function behind [`OutputReload`].
type MakeSetup = dyn Fn(&Config) -> Result<OutputSetup, Box<dyn std::error::Error>> + Send + Sync;

impl OutputReload {
    /// Wraps the function that makes the setup.
    pub fn new<E: std::error::Error + 'static>(
        f: impl Fn(&Config) -> Result<OutputSetup, E> + Send + Sync + 'static,
    ) -> Self {
        OutputReload(Arc::new(move |cfg: &Config| {
            f(cfg).map_err(|e| Box::new(e) as Box<dyn std::error::Error>)
        }))
    }

    /// The setup for `cfg`.
    pub fn setup(&self, cfg: &Config) -> Result<OutputSetup, Box<dyn std::error::Error>> {
        (self.0)(cfg)
    }
}

impl std::fmt::Debug for OutputReload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputReload")
    }
}

impl Options {
    /// The hub for a daemon run with these options: the round the outputs describe (or a
    /// default one when no output is served).
    pub fn hub(&self) -> Hub {
        let round = self
            .outputs
            .as_ref()
            .map(|o| o.round.clone())
            .unwrap_or_default();
        // Finished games leave the model for a file next to the captures (issue 22).
        let archive_dir = self.config.load().ok().map(|c| c.capture_dir());
        let cfg = crate::output::HubConfig {
            archive_dir,
            ..Default::default()
        };
        Hub::new(round, cfg)
    }
}

/// What the broadcast outputs serve, and the round they describe.
#[derive(Debug, Clone)]
pub struct OutputSetup {
    /// Addresses, directories, broker, token.
    pub config: crate::output::OutputConfig,
    /// Event, site, round, time control.
    pub round: crate::output::RoundInfo,
}

/// `eboardd run`: builds the runtime and serves until SIGTERM/SIGINT.
pub fn run(opts: Options) -> Result<(), DaemonError> {
    let rt = runtime()?;
    rt.block_on(async {
        let signals = signals::Signals::new().map_err(io_err("installing signal handlers"))?;
        let hub = opts.hub();
        serve(opts, hub, signals, None).await
    })
}

/// The daemon's runtime: a few worker threads (the work is light and mostly waiting).
pub fn runtime() -> Result<tokio::runtime::Runtime, DaemonError> {
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(io_err("starting the runtime"))
}

/// Serves boards until a shutdown signal (or `until` resolves). Usable in-process (the demo).
pub async fn serve(
    opts: Options,
    hub: Hub,
    mut signals: signals::Signals,
    until: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<(), DaemonError> {
    let mut daemon = running::Running::start(opts, hub).await?;
    let watchdog = notify::watchdog_interval();
    let mut wd = tokio::time::interval(watchdog.unwrap_or(Duration::from_secs(3600)));
    let mut check = tokio::time::interval(Duration::from_secs(10));
    let until = async {
        match until {
            Some(rx) => {
                let _ = rx.await;
            }
            None => std::future::pending().await,
        }
    };
    tokio::pin!(until);
    loop {
        tokio::select! {
            req = signals.recv() => match req {
                signals::Request::Shutdown => break,
                signals::Request::Reload => daemon.reload().await,
            },
            _ = wd.tick(), if watchdog.is_some() => daemon.feed_watchdog(watchdog),
            _ = check.tick() => daemon.check(),
            _ = &mut until => break,
        }
    }
    daemon.shutdown().await;
    Ok(())
}

/// The configured boards in the round the outputs show: each listed (in number order, so
/// that it has its number before it connects) with its serial number and its players (they
/// reach the captures' tags too).
pub fn configure_round(info: &mut crate::output::RoundInfo, cfg: &Config) {
    let player = |name: &Option<String>| crate::output::Player {
        name: name.clone(),
        ..Default::default()
    };
    let mut configured: Vec<_> = cfg.boards.iter().collect();
    configured.sort_by_key(|b| b.number);
    for b in configured {
        let id = format!("board-{}", b.number);
        let pairing = crate::output::Pairing {
            white: player(&b.white),
            black: player(&b.black),
        };
        info.pairings.insert(id.clone(), pairing);
        info.serials.insert(id.clone(), b.serial.clone());
        if !info.boards.contains(&id) {
            info.boards.push(id);
        }
    }
}

/// What a reload changes in the round the outputs show: only what the configuration itself
/// changed (a round loaded over the API, its players, event and site, is never thrown away by
/// a reload of a file that did not touch them). A new `round` number in the file starts that
/// round (the round in force keeps its games, as a round loaded over the API does) and is saved
/// in the round file, so that reload, restart and replay agree.
pub(super) fn reload_round(
    hub: &Hub,
    old: &crate::output::RoundInfo,
    new: &crate::output::RoundInfo,
    round_file: Option<&std::path::Path>,
) {
    let changed = |a: &Option<String>, b: &Option<String>| (a != b).then(|| b.clone());
    let (event, site, time_control) = (
        changed(&old.event, &new.event),
        changed(&old.site, &new.site),
        changed(&old.time_control, &new.time_control),
    );
    if event.is_some() || site.is_some() || time_control.is_some() {
        hub.update_info(|i| {
            if let Some(v) = event {
                i.event = v;
            }
            if let Some(v) = site {
                i.site = v;
            }
            if let Some(v) = time_control {
                i.time_control = v;
            }
        });
    }
    if new.round == old.round || new.round == hub.with_round(|r| r.info.round) {
        return;
    }
    // A new round: none of the round it replaces's results or TRF.
    let info = hub.with_round(|r| crate::output::RoundInfo {
        round: new.round,
        pairings: new.pairings.clone(),
        results: Default::default(),
        source: None,
        ..r.info.clone()
    });
    match hub.start_round(info) {
        Ok(()) => tracing::info!("round {} started by the reloaded configuration", new.round),
        Err(e) => tracing::error!(
            "round {} of the reloaded configuration refused: {e}",
            new.round
        ),
    }
    if let Some(path) = round_file
        && let Err(e) = crate::output::rounds::save(hub, path)
    {
        tracing::warn!("round not saved to {}: {e}", path.display());
    }
}

/// The configured boards' players a reload brings: those the file changed (a board added, or
/// its `white`/`black` edited). Players loaded over the API or set by the arbiter for boards
/// whose configuration did not change are kept. Boards and serial numbers follow the file.
pub fn reconfigure_round(info: &mut crate::output::RoundInfo, old: &Config, new: &Config) {
    let mut before = crate::output::RoundInfo::default();
    configure_round(&mut before, old);
    let mut after = crate::output::RoundInfo::default();
    configure_round(&mut after, new);
    for id in after.boards {
        if !info.boards.contains(&id) {
            info.boards.push(id);
        }
    }
    info.serials.extend(after.serials);
    for (id, p) in after.pairings {
        if before.pairings.get(&id) != Some(&p) {
            info.pairings.insert(id, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::pty::Pty;
    use board_task::{Origin, PortEnd};
    use tokio_util::sync::CancellationToken;

    fn ctx(name: &str) -> (Arc<Ctx>, PathBuf) {
        let dir = std::env::temp_dir().join(format!("eboardd-ctx-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cfg = Config::default();
        cfg.daemon.capture_dir = Some(dir.clone());
        let hub = Hub::new(crate::output::RoundInfo::default(), Default::default());
        (Arc::new(Ctx::new(cfg, hub)), dir)
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_generic_device_is_not_a_dgt_board() {
        let (ctx, dir) = ctx("probe");
        let pty = Pty::open().unwrap();
        let _stop = CancellationToken::new();
        let rx = _stop.clone();
        let end = board_task::serve_port(
            ctx.clone(),
            pty.path().to_path_buf(),
            Origin::Discovered {
                generic: true,
                driver: crate::family::default_driver(),
            },
            rx,
        )
        .await;
        assert_eq!(end, PortEnd::NotABoard);
        // What the probe sent: reset, version, serial number; then version and serial again.
        // Everything was written before `serve_port` returned, but a pty may hand it over in
        // more than one read (one per write).
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while got.len() < 5 {
            let n = pty.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, [0x40, 0x4D, 0x45, 0x4D, 0x45]);
        assert!(!ctx.port_open(pty.path()));
        assert!(
            !dir.exists(),
            "nothing captured for a device that is not a board"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn missing_ports_are_retried_when_configured_and_dropped_when_discovered() {
        let (ctx, _dir) = ctx("missing");
        let missing = PathBuf::from("/nonexistent/eboard-1");
        let _stop = CancellationToken::new();
        let rx = _stop.clone();
        let end = board_task::serve_port(
            ctx.clone(),
            missing.clone(),
            Origin::Discovered {
                generic: false,
                driver: crate::family::default_driver(),
            },
            rx,
        )
        .await;
        assert_eq!(end, PortEnd::Gone);
        let stop = CancellationToken::new();
        let rx = stop.clone();
        let origin = Origin::configured(&missing).unwrap().1;
        let task = tokio::spawn(board_task::serve_port(ctx, missing, origin, rx));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!task.is_finished());
        stop.cancel();
        assert_eq!(task.await.unwrap(), PortEnd::Stopped);
    }
}
