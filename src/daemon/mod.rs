//! The live daemon: boards on serial ports (configured, or found on USB), one task per port,
//! captures always on, an in-process [`hub`] for the outputs, systemd integration, signals.
//!
//! Start-up: the configuration is loaded and checked; every board's capture of the current
//! round is read back and its games rebuilt ([`captures`]); then the ports are opened and the
//! boards carry on where they were. `kill -9` or a power cut loses no completed move: every
//! record is written (and, for records that cause move or game events, synced) before the
//! events it causes are published.

pub mod board;
pub mod board_task;
pub mod captures;
mod control;
pub mod demo;
pub mod descriptors;
pub mod discovery;
pub mod notify;
pub mod serial;
pub mod signals;

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::{Config, ConfigError, Overrides};
use crate::output::{Hub, LinkState};
use board::{BoardMeta, BoardState};
use board_task::{Origin, PortEnd};
use captures::CaptureStore;

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
        Hub::new(round, crate::output::HubConfig::default())
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

/// Shared by every task of the daemon.
#[derive(Debug)]
pub struct Ctx {
    /// The hub.
    pub hub: Hub,
    config: RwLock<Arc<Config>>,
    /// The captures.
    pub store: CaptureStore,
    /// The daemon's metrics (`GET /metrics`), counted into by the hub, the port tasks and the
    /// captures.
    pub metrics: Arc<crate::output::metrics::Metrics>,
    boards: Mutex<BTreeMap<String, Arc<Mutex<BoardState>>>>,
    open_ports: Mutex<HashSet<PathBuf>>,
    sessions: AtomicU64,
}

impl Ctx {
    fn new(cfg: Config, hub: Hub) -> Ctx {
        let metrics = Arc::new(crate::output::metrics::Metrics::new());
        let store = CaptureStore {
            dir: cfg.capture_dir(),
            fsync: cfg.daemon.fsync,
            bytes: Some(metrics.capture_bytes()),
        };
        Ctx {
            hub,
            config: RwLock::new(Arc::new(cfg)),
            store,
            metrics,
            boards: Mutex::default(),
            open_ports: Mutex::default(),
            sessions: AtomicU64::new(0),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn meta(cfg: &Config, serial: Option<&str>, number: Option<u32>) -> BoardMeta {
        let b = match (serial, number) {
            (Some(s), _) => cfg.board_by_serial(s),
            (None, Some(n)) => cfg.boards.iter().find(|b| b.number == n),
            _ => None,
        };
        BoardMeta {
            number: b.map(|b| b.number),
            serial: serial
                .map(str::to_string)
                .or_else(|| b.map(|b| b.serial.clone())),
            event: cfg.event.name.clone(),
            site: cfg.event.site.clone(),
            round: cfg.event.round.clone(),
            white: b.and_then(|b| b.white.clone()),
            black: b.and_then(|b| b.black.clone()),
            white_clock: b.and_then(|b| b.white_clock),
            driver: None,
            unit: None,
        }
    }

    /// The device id and metadata of the board of `driver` with this serial number.
    pub fn identify(&self, driver: &str, serial: &str) -> (String, BoardMeta) {
        let cfg = self.config();
        let id = cfg.board_id_of(driver, serial);
        let meta = self.with_hub_players(&id, Ctx::meta(&cfg, Some(serial), None));
        let meta = self.numbered(&id, meta, None);
        (id, meta)
    }

    /// `meta` with the board's number and the `Round "R.B"` it makes: a configured board's
    /// number, else the one the round gave the board when it first appeared (the one its
    /// capture recorded, `recorded`, when no other board has it). `R` is the round the
    /// outputs show, so that replaying the capture names the games as the outputs did.
    fn numbered(&self, id: &str, mut meta: BoardMeta, recorded: Option<u32>) -> BoardMeta {
        let (number, round) = self.hub.number_board(id, meta.number.or(recorded));
        meta.number = Some(number);
        meta.round = Some(format!("{round}.{number}"));
        meta
    }

    /// `meta` with the players the hub has for board `id` (the configured ones, or those of a
    /// round loaded over the API, or set by the arbiter): the captures name the players every
    /// output shows.
    fn with_hub_players(&self, id: &str, mut meta: BoardMeta) -> BoardMeta {
        let pairing = self.hub.with_round(|r| r.pairing(id));
        if let Some(name) = pairing.white.name {
            meta.white = Some(name);
        }
        if let Some(name) = pairing.black.name {
            meta.black = Some(name);
        }
        meta
    }

    /// Metadata of a board known only by its id (from a capture file name).
    fn meta_for_id(&self, id: &str) -> BoardMeta {
        let cfg = self.config();
        if let Some(n) = id.strip_prefix("board-").and_then(|n| n.parse().ok()) {
            return self.with_hub_players(id, Ctx::meta(&cfg, None, Some(n)));
        }
        // The longest family name that prefixes the id (`dgt-bus-01025` is a `dgt-bus` board).
        let serial = crate::family::of_board_id(id).map(|(_, serial)| serial);
        self.with_hub_players(id, Ctx::meta(&cfg, serial, None))
    }

    /// The board `id`: the one in memory (its metadata refreshed), or its capture opened (and
    /// its games rebuilt from it). A board whose file is of an earlier day and has no game in
    /// progress starts today's file.
    /// `link` is the link the board is on (its core's settle windows follow it).
    pub fn board(
        &self,
        id: &str,
        meta: BoardMeta,
        link: crate::session::link::LinkKind,
    ) -> std::io::Result<Arc<Mutex<BoardState>>> {
        let mut boards = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = boards.get(id) {
            let mut s = b.lock().unwrap_or_else(|e| e.into_inner());
            let today = self.store.path_for(captures::today(), id);
            if s.capture_path() == today || s.game_in_progress() {
                s.set_meta(meta)?;
                drop(s);
                return Ok(b.clone());
            }
        }
        let b = Arc::new(Mutex::new(BoardState::open(
            &self.store,
            id,
            meta,
            None,
            link,
        )?));
        boards.insert(id.to_string(), b.clone());
        Ok(b)
    }

    fn new_session(&self) -> u64 {
        self.sessions.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Takes a port (canonical path) for a session; `false` when another session has it.
    fn claim_port(&self, canonical: &Path) -> bool {
        self.open_ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(canonical.to_path_buf())
    }

    fn release_port(&self, canonical: &Path) {
        self.open_ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(canonical);
    }

    /// Whether a session has this port (canonical path) open.
    pub fn port_open(&self, canonical: &Path) -> bool {
        self.open_ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(canonical)
    }

    /// Rebuilds the boards of the current round from their captures.
    fn recover(&self) {
        let today = captures::today();
        let files = self.store.current_files(today);
        let total = files.len();
        self.hub.set_recovering(Some((0, total)));
        for (done, (id, path)) in files.into_iter().enumerate() {
            self.hub.set_recovering(Some((done, total)));
            let meta = self.meta_for_id(&id);
            let earlier = path != self.store.path_for(today, &id);
            // A board of an earlier day is taken only with a game in progress; it keeps the
            // number its capture recorded, when no other board has it.
            let board = match BoardState::open_with(
                &self.store,
                &id,
                &meta.clone(),
                Some(&path),
                crate::session::link::LinkKind::Wired,
                |b| {
                    (!earlier || b.game_in_progress())
                        .then(|| self.numbered(&id, meta, b.recorded_number()))
                },
            ) {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!("{}: cannot read back: {e}", path.display());
                    continue;
                }
            };
            if earlier && !board.game_in_progress() {
                continue;
            }
            board.restore_into(&self.hub);
            self.boards
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id, Arc::new(Mutex::new(board)));
        }
        self.hub.set_recovering(None);
    }

    /// Every board in memory.
    fn all_boards(&self) -> Vec<Arc<Mutex<BoardState>>> {
        let boards = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        boards.values().cloned().collect()
    }

    /// Applies a new configuration to the boards in memory.
    fn reconfigure(&self, cfg: Config) {
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(cfg);
        let cfg = self.config();
        self.hub.update_info(|info| configure_round(info, &cfg));
        for b in self.all_boards() {
            let mut s = b.lock().unwrap_or_else(|e| e.into_inner());
            let old = s.meta().clone();
            let configured = Ctx::meta(&cfg, old.serial.as_deref(), None);
            let meta = self.with_hub_players(&s.id, configured);
            let meta = self.numbered(&s.id, meta, old.number);
            if let Err(e) = s.set_meta(meta) {
                tracing::error!(board = %s.id, error = %e, "capture write failed");
            }
            self.hub.set_status(&s.id, s.status());
        }
    }

    /// Connected boards and all boards.
    fn counts(&self) -> (usize, usize) {
        self.hub.with_round(|r| {
            let up = r
                .boards()
                .iter()
                .filter(|b| b.link() == LinkState::Active)
                .count();
            (up, r.boards().len())
        })
    }
}

/// A running task with its own stop switch.
struct Task<T> {
    stop: watch::Sender<bool>,
    handle: JoinHandle<T>,
}

fn spawn_port(ctx: &Arc<Ctx>, path: PathBuf, origin: Origin) -> Task<PortEnd> {
    let (stop, rx) = watch::channel(false);
    let handle = tokio::spawn(board_task::serve_port(ctx.clone(), path, origin, rx));
    Task { stop, handle }
}

/// Discovery: rescans on hotplug events (or every 2 s without hotplug) and serves every new
/// DGT board found on USB.
async fn discover(ctx: Arc<Ctx>, mut stop: watch::Receiver<bool>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let hotplug = discovery::start_hotplug(tx);
    let period = if hotplug {
        Duration::from_secs(30)
    } else {
        Duration::from_secs(2)
    };
    tracing::info!(
        "USB discovery on ({})",
        if hotplug {
            "libusb hotplug"
        } else {
            "polling sysfs every 2 s"
        }
    );
    let mut probes = discovery::Probes::default();
    let mut tasks: BTreeMap<PathBuf, (Task<PortEnd>, PathBuf)> = BTreeMap::new();
    loop {
        let found = discovery::scan_sysfs(Path::new("/sys"), Path::new("/dev"));
        probes.retain_present(&found);
        // Collect ended tasks.
        let ended: Vec<PathBuf> = tasks
            .iter()
            .filter(|(_, (t, _))| t.handle.is_finished())
            .map(|(p, _)| p.clone())
            .collect();
        for p in ended {
            if let Some((t, usb)) = tasks.remove(&p)
                && let Ok(PortEnd::NotABoard) = t.handle.await
            {
                // The next family that lists the id probes it at the next scan.
                probes.failed(&usb);
            }
        }
        for f in found {
            let canonical = std::fs::canonicalize(&f.tty).unwrap_or_else(|_| f.tty.clone());
            if tasks.contains_key(&f.tty) || ctx.port_open(&canonical) {
                continue;
            }
            let Some(id) = probes.next(&f) else {
                continue;
            };
            tracing::info!("found {} on {}", id.name, f.tty.display());
            // A shared id is probed by each family that lists it (served outright when only
            // one family does and its id is the board's own).
            let generic = id.generic || f.candidates.len() > 1;
            let t = spawn_port(
                &ctx,
                f.tty.clone(),
                Origin::Discovered {
                    generic,
                    driver: id.driver,
                },
            );
            tasks.insert(f.tty, (t, f.usb_path));
        }
        tokio::select! {
            Some(()) = rx.recv() => {
                // Let the kernel and udev create the tty node, then drain the burst.
                tokio::time::sleep(Duration::from_millis(500)).await;
                while rx.try_recv().is_ok() {}
            }
            _ = tokio::time::sleep(period) => {}
            _ = stop.changed() => break,
        }
    }
    for (_, (t, _)) in tasks {
        let _ = t.stop.send(true);
        let _ = t.handle.await;
    }
}

fn print_events(hub: &Hub, print: Print) -> Option<JoinHandle<()>> {
    if print == Print::Nothing {
        return None;
    }
    let mut rx = hub.receiver();
    let mut describer = demo::Describer::default();
    Some(tokio::spawn(async move {
        loop {
            let msg = match rx.recv().await {
                Ok(m) => m,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(skipped = n, "printer lagged: events not printed");
                    continue;
                }
                Err(_) => break,
            };
            let text = match print {
                Print::Events => Some(msg.json.to_string()),
                _ => describer.line(&msg),
            };
            if let Some(text) = text {
                let mut out = std::io::stdout().lock();
                if writeln!(out, "{text}").and_then(|_| out.flush()).is_err() {
                    break;
                }
            }
        }
    }))
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
    let notifier = notify::Notifier::from_env();
    let cfg = opts.config.load()?;
    let dir = cfg.capture_dir();
    std::fs::create_dir_all(&dir).map_err(io_err(format!(
        "creating the capture directory {}",
        dir.display()
    )))?;
    // Boards first: say at once when the descriptor limit cannot hold the boards configured.
    let boards = cfg.boards.len().max(cfg.daemon.ports.len());
    if let Some(line) = descriptors::shortfall(boards, crate::output::server::nofile()) {
        tracing::error!("{line}");
    }
    // Not ready until the boards are rebuilt from their captures (health says `recovering`).
    hub.set_recovering(Some((0, 0)));
    let ctx = Arc::new(Ctx::new(cfg, hub.clone()));
    hub.set_metrics(ctx.metrics.clone());
    // Operator actions and corrections from the outputs are carried out at once on the board
    // (checked, captured, applied), so that a refused one is answered.
    hub.set_control(Arc::new(control::DaemonControl {
        ctx: Arc::downgrade(&ctx),
    }));
    // `eboardd run` merged the file's [outputs] into the setup already. A round loaded over
    // the API is kept next to the captures, and restored from there.
    let round_file = dir.join(crate::output::rounds::ROUND_FILE);
    let with_round_file = |mut s: OutputSetup| {
        s.config
            .round_file
            .get_or_insert_with(|| round_file.clone());
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

    let mut ports: BTreeMap<PathBuf, Task<PortEnd>> = BTreeMap::new();
    let mut discovery: Option<Task<()>> = None;
    let apply = |ctx: &Arc<Ctx>,
                 ports: &mut BTreeMap<PathBuf, Task<PortEnd>>,
                 discovery: &mut Option<Task<()>>| {
        let cfg = ctx.config();
        let wanted: Vec<PathBuf> = cfg.daemon.ports.clone();
        let gone: Vec<PathBuf> = ports
            .keys()
            .filter(|p| !wanted.contains(p))
            .cloned()
            .collect();
        for p in gone {
            if let Some(t) = ports.remove(&p) {
                let _ = t.stop.send(true);
            }
        }
        for p in wanted {
            if ports.contains_key(&p) {
                continue;
            }
            // The configuration was checked: every port names a family this build has.
            match Origin::configured(&p) {
                Ok((path, origin)) => {
                    ports.insert(p.clone(), spawn_port(ctx, path, origin));
                }
                Err(e) => tracing::error!("port not served: {e}"),
            }
        }
        match (cfg.daemon.discovery, discovery.is_some()) {
            (true, false) => {
                let (stop, rx) = watch::channel(false);
                let handle = tokio::spawn(discover(ctx.clone(), rx));
                *discovery = Some(Task { stop, handle });
            }
            (false, true) => {
                if let Some(t) = discovery.take() {
                    let _ = t.stop.send(true);
                }
            }
            _ => {}
        }
    };
    apply(&ctx, &mut ports, &mut discovery);
    tracing::info!(
        "eboardd {} serving {} port(s){}; captures in {}",
        env!("CARGO_PKG_VERSION"),
        ports.len(),
        if discovery.is_some() {
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
                            apply(&ctx, &mut ports, &mut discovery);
                        }
                        Err(e) => tracing::error!("reload refused, configuration kept: {e}"),
                    }
                    notifier.ready();
                    status(&ctx);
                }
            },
            _ = wd.tick(), if watchdog.is_some() => notifier.watchdog(),
            _ = status_tick.tick() => status(&ctx),
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
    for t in ports.values() {
        let _ = t.stop.send(true);
    }
    if let Some(t) = &discovery {
        let _ = t.stop.send(true);
    }
    let waits = ports
        .into_values()
        .map(|t| t.handle)
        .chain(discovery.map(|t| {
            tokio::spawn(async move {
                let _ = t.handle.await;
                PortEnd::Stopped
            })
        }));
    let all = futures_join(waits.collect());
    if tokio::time::timeout(Duration::from_secs(5), all)
        .await
        .is_err()
    {
        tracing::warn!("some ports did not close in time");
    }
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

/// Players set from the outputs — a round loaded over the API, players set by the arbiter —
/// reach the board's capture as a `set_tags` record (the hub's `players` messages), so that
/// `eboardd replay` names them as every output does.
fn follow_players(ctx: std::sync::Weak<Ctx>, hub: &Hub) -> JoinHandle<()> {
    let mut rx = hub.receiver();
    tokio::spawn(async move {
        loop {
            let m = match rx.recv().await {
                Ok(m) => m,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            };
            let crate::output::Message::Notice(crate::output::Notice::Players { round, .. }) =
                m.message
            else {
                continue;
            };
            let Some(ctx) = ctx.upgrade() else { break };
            let board = ctx
                .boards
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&*m.board)
                .cloned();
            let Some(board) = board else { continue };
            let number = ctx.hub.with_round(|r| r.board_number(&m.board));
            let mut s = board.lock().unwrap_or_else(|e| e.into_inner());
            let mut meta = ctx.with_hub_players(&m.board, s.meta().clone());
            if let Some(r) = round {
                meta.round = Some(match meta.number.map(|n| n as usize).or(number) {
                    Some(n) => format!("{r}.{n}"),
                    None => r.to_string(),
                });
            }
            if let Err(e) = s.set_meta(meta) {
                tracing::error!(board = %m.board, error = %e, "capture write failed");
            }
        }
    })
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

/// Brings the running outputs to a reloaded setup: the round's event, site, round number and
/// time control change in place; when an address, folder, broker, token or delay changed, the
/// outputs restart on the same hub (clients reconnect; the event streams resume by `seq`). If
/// the new setup cannot start (an address in use), the previous one is started again.
async fn reload_outputs(
    hub: &Hub,
    current: &mut OutputSetup,
    new: OutputSetup,
    running: Option<crate::output::Outputs>,
) -> Option<crate::output::Outputs> {
    let info = new.round.clone();
    hub.update_info(|i| {
        i.event = info.event;
        i.site = info.site;
        i.round = info.round;
        i.time_control = info.time_control;
    });
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

/// Awaits every handle.
async fn futures_join<T>(handles: Vec<JoinHandle<T>>) {
    for h in handles {
        let _ = h.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::pty::Pty;

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
                driver: crate::family::DEFAULT_FAMILY,
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
                driver: crate::family::DEFAULT_FAMILY,
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
