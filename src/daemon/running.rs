//! The running daemon between its start and its shutdown: what [`super::serve`] starts, reloads
//! on SIGHUP, checks every few seconds and stops, each one named step.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::ports::PortTasks;
use super::{
    Ctx, DaemonError, Options, OutputSetup, captures, control, descriptors, follow_players,
    heartbeat, notify, print_events, reload_round,
};
use crate::output::{Hub, Outputs};
use crate::service::Services;

/// Everything the daemon runs, from [`Running::start`] to [`Running::shutdown`].
pub(super) struct Running {
    opts: Options,
    hub: Hub,
    ctx: Arc<Ctx>,
    notifier: notify::Notifier,
    /// What every output setup is completed with (the round file, the boards' descriptors).
    defaults: SetupDefaults,
    /// The output setup in force, and the outputs it started.
    setup: Option<OutputSetup>,
    outputs: Option<Outputs>,
    ports: PortTasks,
    /// The daemon's own followers of its hub: the `--print` printer and the players follower.
    followers: Services,
    /// The capture directory's lock, held to the end.
    _lock: Option<captures::lock::DirLock>,
}

/// What `eboardd run` leaves to the daemon in every output setup: a round loaded over the API
/// is kept next to the captures (and restored from there), and client connections may not take
/// the boards' descriptors.
struct SetupDefaults {
    round_file: PathBuf,
    boards: usize,
}

impl SetupDefaults {
    fn complete(&self, mut s: OutputSetup) -> OutputSetup {
        s.config
            .round_file
            .get_or_insert_with(|| self.round_file.clone());
        s.config.descriptors_for_boards = descriptors::for_boards(self.boards);
        s
    }
}

impl Running {
    /// Claim the capture directory, rebuild the boards from their captures, start the outputs
    /// and the port tasks, and tell the service manager the daemon is ready.
    pub(super) async fn start(opts: Options, hub: Hub) -> Result<Running, DaemonError> {
        let notifier = notify::Notifier::from_env();
        let cfg = opts.config.load()?;
        let dir = cfg.capture_dir();
        let lock = claim_capture_dir(&dir)?;
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
        // Operator actions and corrections from the outputs are carried out at once on the
        // board (checked, captured, applied), so that a refused one is answered.
        hub.set_control(Arc::new(control::DaemonControl {
            ctx: Arc::downgrade(&ctx),
        }));
        // `eboardd run` merged the file's [outputs] into the setup already.
        let defaults = SetupDefaults {
            round_file: dir.join(crate::output::rounds::ROUND_FILE),
            boards,
        };
        let setup = opts.outputs.clone().map(|s| defaults.complete(s));
        restore_round(&hub, setup.as_ref());
        let outputs = match &setup {
            Some(setup) => Some(start_outputs(setup, &hub).await?),
            None => None,
        };
        let mut followers = Services::new();
        if let Some(printer) = print_events(&hub, opts.print, followers.token()) {
            followers.spawn("printer", |_| printer);
        }
        ctx.recover();
        let players = Arc::downgrade(&ctx);
        followers.spawn("players follower", |stop| {
            follow_players(players, &hub, stop)
        });
        let mut ports = PortTasks::default();
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
        let running = Running {
            opts,
            hub,
            ctx,
            notifier,
            defaults,
            setup,
            outputs,
            ports,
            followers,
            _lock: lock,
        };
        running.show_status();
        Ok(running)
    }

    /// SIGHUP: read the configuration again; the outputs follow it where they can, the boards
    /// and ports take it. A configuration that does not load changes nothing.
    pub(super) async fn reload(&mut self) {
        self.notifier.reloading();
        match self.opts.config.load() {
            Ok(cfg) => {
                tracing::info!("configuration reloaded");
                if let (Some(reload), Some(current)) =
                    (&self.opts.reload_outputs, self.setup.as_mut())
                {
                    match reload.setup(&cfg).map(|s| self.defaults.complete(s)) {
                        Ok(new) => {
                            let running = self.outputs.take();
                            self.outputs = reload_outputs(&self.hub, current, new, running).await;
                        }
                        Err(e) => tracing::error!(
                            "reloaded outputs refused, outputs kept as they were: {e}"
                        ),
                    }
                }
                self.ctx.reconfigure(cfg);
                self.ports.reconcile(&self.ctx);
            }
            Err(e) => tracing::error!("reload refused, configuration kept: {e}"),
        }
        self.notifier.ready();
        self.show_status();
    }

    /// Every few seconds: the capture directory still writable, the status line up to date.
    pub(super) fn check(&self) {
        self.ctx.check_capture_dir();
        self.show_status();
    }

    /// The service manager's status line: boards connected.
    fn show_status(&self) {
        let (up, all) = self.ctx.counts();
        self.notifier
            .status(&format!("{up} of {all} board(s) connected"));
    }

    /// Feeds the service manager's watchdog when the daemon makes progress: the hub answers,
    /// and every port task beat lately (`heartbeat.rs`, [`heartbeat::stall_limit`]). A stalled
    /// one is logged instead, and the service manager restarts the daemon when it stays so.
    pub(super) fn feed_watchdog(&self, interval: Option<Duration>) {
        let Some(interval) = interval else {
            return;
        };
        self.ctx.hub.responsive();
        let stalled = self
            .ctx
            .heartbeats
            .stalled(std::time::Instant::now(), heartbeat::stall_limit(interval));
        if stalled.is_empty() {
            self.notifier.watchdog();
            return;
        }
        for (name, ago) in stalled {
            tracing::error!(
                "{name}: no progress for {} ms; the watchdog is not fed",
                ago.as_millis()
            );
        }
    }

    /// Stop the port tasks, make every capture durable, then stop the outputs (a last relay
    /// write, MQTT offline status) and the followers; the capture directory is let go last.
    pub(super) async fn shutdown(self) {
        tracing::info!("shutting down");
        self.notifier.stopping();
        let Running {
            hub,
            ctx,
            outputs,
            ports,
            followers,
            _lock,
            ..
        } = self;
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
        // The printer prints what was published until now.
        followers.shutdown(Duration::from_secs(1)).await;
    }
}

/// The round kept next to the captures (loaded over the API before a restart), restored.
fn restore_round(hub: &Hub, setup: Option<&OutputSetup>) {
    if let Some(path) = setup.and_then(|s| s.config.round_file.as_ref()) {
        match crate::output::rounds::restore(hub, path) {
            Ok(true) => tracing::info!(file = %path.display(), "round restored"),
            Ok(false) => {}
            Err(e) => tracing::warn!("saved round not restored: {e}"),
        }
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

/// Brings the running outputs to a reloaded setup: the round's event, site, round number and
/// time control change where the file changed them ([`reload_round`]); when an address, folder, broker, token or delay changed, the
/// outputs restart on the same hub (clients reconnect; the event streams resume by `seq`). If
/// the new setup cannot start (an address in use), the previous one is started again.
async fn reload_outputs(
    hub: &Hub,
    current: &mut OutputSetup,
    new: OutputSetup,
    running: Option<Outputs>,
) -> Option<Outputs> {
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
