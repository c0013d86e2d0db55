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
pub mod serial;
pub mod signals;
pub mod wire;

use std::path::{Path, PathBuf};
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

/// Feeds the service manager's watchdog when the daemon makes progress: the hub answers, and
/// every port task beat lately (`heartbeat.rs`, [`heartbeat::stall_limit`]). A stalled one is
/// logged instead, and the service manager restarts the daemon when it stays so.
fn feed_watchdog(ctx: &Ctx, notifier: &notify::Notifier, interval: Option<Duration>) {
    let Some(interval) = interval else {
        return;
    };
    ctx.hub.responsive();
    let stalled = ctx
        .heartbeats
        .stalled(std::time::Instant::now(), heartbeat::stall_limit(interval));
    if stalled.is_empty() {
        notifier.watchdog();
        return;
    }
    for (name, ago) in stalled {
        tracing::error!(
            "{name}: no progress for {} ms; the watchdog is not fed",
            ago.as_millis()
        );
    }
}

/// Makes the capture directory `dir` this daemon's: one daemon per capture directory (an error
/// when another holds it). A directory that cannot be made or written is no reason to stop:
/// it is logged, and health says why (part `capture`) until it can be written.
fn claim_capture_dir(dir: &Path) -> Result<Option<captures::lock::DirLock>, DaemonError> {
    let claimed = std::fs::create_dir_all(dir)
        .map_err(|source| captures::lock::LockError::Io {
            dir: dir.to_path_buf(),
            source,
        })
        .and_then(|()| captures::lock::lock(dir));
    match claimed {
        Ok(lock) => Ok(Some(lock)),
        Err(e @ captures::lock::LockError::Held { .. }) => Err(e.into()),
        Err(e) => {
            tracing::error!("{e}");
            Ok(None)
        }
    }
}

/// Serves boards until a shutdown signal (or `until` resolves). Usable in-process (the demo).
pub async fn serve(
    opts: Options,
    hub: Hub,
    mut signals: signals::Signals,
    until: Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<(), DaemonError> {
    let notifier = notify::Notifier::from_env();
    let cfg = opts.config.load()?;
    let dir = cfg.capture_dir();
    let _lock = claim_capture_dir(&dir)?;
    // Boards first: say at once when the descriptor limit cannot hold the boards configured.
    let boards = cfg.boards.len().max(cfg.daemon.ports.len());
    if let Some(line) = descriptors::shortfall(boards, crate::output::server::nofile()) {
        tracing::error!("{line}");
    }
    // Not ready until the boards are rebuilt from their captures (health says `recovering`).
    hub.set_recovering(Some((0, 0)));
    let ctx = Arc::new(Ctx::new(cfg, hub.clone()));
    hub.set_metrics(ctx.metrics.clone());
    ctx.check_capture_dir();
    // Operator actions and corrections from the outputs are carried out at once on the board
    // (checked, captured, applied), so that a refused one is answered.
    hub.set_control(Arc::new(control::DaemonControl {
        ctx: Arc::downgrade(&ctx),
    }));
    // `eboardd run` merged the file's [outputs] into the setup already. A round loaded over
    // the API is kept next to the captures, and restored from there. Client connections may
    // not take the boards' descriptors.
    let round_file = dir.join(crate::output::rounds::ROUND_FILE);
    let with_round_file = |mut s: OutputSetup| {
        s.config
            .round_file
            .get_or_insert_with(|| round_file.clone());
        s.config.descriptors_for_boards = descriptors::for_boards(boards);
        s
    };
    let mut setup = opts.outputs.clone().map(with_round_file);
    if let Some(path) = setup.as_ref().and_then(|s| s.config.round_file.as_ref()) {
        match crate::output::rounds::restore(&hub, path) {
            Ok(true) => tracing::info!(file = %path.display(), "round restored"),
            Ok(false) => {}
            Err(e) => tracing::warn!("saved round not restored: {e}"),
        }
    }
    let mut outputs = match &setup {
        Some(setup) => Some(start_outputs(setup, &hub).await?),
        None => None,
    };
    let printer = print_events(&hub, opts.print);
    ctx.recover();
    let players = follow_players(Arc::downgrade(&ctx), &hub);

    let mut ports = ports::PortTasks::default();
    ports.reconcile(&ctx);
    tracing::info!(
        "eboardd {} serving {} port(s){}; captures in {}",
        env!("CARGO_PKG_VERSION"),
        ports.configured(),
        if ports.discovering() {
            " and USB boards"
        } else {
            ""
        },
        ctx.store.dir.display()
    );
    notifier.ready();
    let status = |ctx: &Ctx| {
        let (up, all) = ctx.counts();
        notifier.status(&format!("{up} of {all} board(s) connected"));
    };
    status(&ctx);
    let watchdog = notify::watchdog_interval();
    let mut wd = tokio::time::interval(watchdog.unwrap_or(Duration::from_secs(3600)));
    let mut status_tick = tokio::time::interval(Duration::from_secs(10));
    let mut until = until;
    loop {
        tokio::select! {
            req = signals.recv() => match req {
                signals::Request::Shutdown => break,
                signals::Request::Reload => {
                    notifier.reloading();
                    match opts.config.load() {
                        Ok(cfg) => {
                            tracing::info!("configuration reloaded");
                            if let (Some(reload), Some(current)) = (&opts.reload_outputs, setup.as_mut()) {
                                match reload.setup(&cfg).map(with_round_file) {
                                    Ok(new) => {
                                        outputs = reload_outputs(&hub, current, new, outputs).await;
                                    }
                                    Err(e) => tracing::error!(
                                        "reloaded outputs refused, outputs kept as they were: {e}"
                                    ),
                                }
                            }
                            ctx.reconfigure(cfg);
                            ports.reconcile(&ctx);
                        }
                        Err(e) => tracing::error!("reload refused, configuration kept: {e}"),
                    }
                    notifier.ready();
                    status(&ctx);
                }
            },
            _ = wd.tick(), if watchdog.is_some() => feed_watchdog(&ctx, &notifier, watchdog),
            _ = status_tick.tick() => {
                ctx.check_capture_dir();
                status(&ctx);
            }
            _ = async {
                match until.as_mut() {
                    Some(rx) => { let _ = rx.await; }
                    None => std::future::pending().await,
                }
            } => break,
        }
    }
    tracing::info!("shutting down");
    notifier.stopping();
    ports.stop(Duration::from_secs(5)).await;
    // Every record is flushed as it is written; make them durable.
    for b in ctx.all_boards() {
        let s = b.lock().unwrap_or_else(|e| e.into_inner());
        let _ = std::fs::File::open(s.capture_path()).and_then(|f| f.sync_all());
    }
    drop(ctx);
    drop(hub);
    if let Some(o) = outputs {
        o.shutdown().await;
    }
    players.abort();
    if let Some(p) = printer {
        let _ = tokio::time::timeout(Duration::from_secs(1), p).await;
    }
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
fn reload_round(
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

/// Brings the running outputs to a reloaded setup: the round's event, site, round number and
/// time control change where the file changed them ([`reload_round`]); when an address, folder, broker, token or delay changed, the
/// outputs restart on the same hub (clients reconnect; the event streams resume by `seq`). If
/// the new setup cannot start (an address in use), the previous one is started again.
async fn reload_outputs(
    hub: &Hub,
    current: &mut OutputSetup,
    new: OutputSetup,
    running: Option<crate::output::Outputs>,
) -> Option<crate::output::Outputs> {
    reload_round(
        hub,
        &current.round,
        &new.round,
        new.config.round_file.as_deref(),
    );
    if new.config == current.config && running.is_some() {
        current.round = new.round;
        return running;
    }
    if let Some(o) = running {
        o.shutdown().await;
    }
    match start_outputs(&new, hub).await {
        Ok(o) => {
            tracing::info!("outputs restarted with the reloaded configuration");
            *current = new;
            Some(o)
        }
        Err(e) => {
            tracing::error!("reloaded outputs cannot start ({e}); the previous ones start again");
            match start_outputs(current, hub).await {
                Ok(o) => Some(o),
                Err(e) => {
                    tracing::error!("the previous outputs cannot start again either: {e}");
                    None
                }
            }
        }
    }
}

/// Starts the broadcast outputs, all reading the daemon's one hub.
async fn start_outputs(
    setup: &OutputSetup,
    hub: &Hub,
) -> Result<crate::output::Outputs, DaemonError> {
    let outputs = crate::output::start(hub.clone(), &setup.config).await?;
    if let Some(addr) = outputs.http {
        tracing::info!("serving http://{addr}/");
    }
    Ok(outputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::pty::Pty;
    use board_task::{Origin, PortEnd};
    use tokio::sync::watch;

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
        let (_stop, rx) = watch::channel(false);
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
        let (_stop, rx) = watch::channel(false);
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
        let (stop, rx) = watch::channel(false);
        let origin = Origin::configured(&missing).unwrap().1;
        let task = tokio::spawn(board_task::serve_port(ctx, missing, origin, rx));
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!task.is_finished());
        stop.send(true).unwrap();
        assert_eq!(task.await.unwrap(), PortEnd::Stopped);
    }
}
