//! The daemon's port tasks: one task per port (configured, or found on USB by the discovery
//! loop), each with its own stop switch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::board_task::{self, Origin, PortEnd};
use super::ctx::Ctx;
use super::discovery;

/// A running task with its own stop switch: the task stops when the switch is dropped (let go
/// of on purpose, or with the task's entry).
pub(super) struct Task<T> {
    /// Dropped to stop it (cancels the task's token).
    pub(super) stop: DropGuard,
    /// The task.
    pub(super) handle: JoinHandle<T>,
}

impl<T: Send + 'static> Task<T> {
    /// Spawn the task made by `make` from its stop token.
    fn spawn<F>(make: impl FnOnce(CancellationToken) -> F) -> Task<T>
    where
        F: std::future::Future<Output = T> + Send + 'static,
    {
        let token = CancellationToken::new();
        let handle = tokio::spawn(make(token.clone()));
        Task {
            stop: token.drop_guard(),
            handle,
        }
    }

    /// Stop it; the handle to wait for it.
    fn stop(self) -> JoinHandle<T> {
        drop(self.stop);
        self.handle
    }
}

/// The daemon's port tasks: one per configured port, and the USB discovery loop (which has
/// its own per board found) while the configuration turns it on.
#[derive(Default)]
pub(super) struct PortTasks {
    configured: BTreeMap<PathBuf, Task<PortEnd>>,
    discovery: Option<Task<()>>,
}

impl PortTasks {
    /// Starts and stops tasks so that they serve what the configuration now asks for: a port
    /// no longer listed is stopped, a new one started, discovery turned on or off.
    pub(super) fn reconcile(&mut self, ctx: &Arc<Ctx>) {
        let cfg = ctx.config();
        let wanted = &cfg.daemon.ports;
        // A port no longer listed is stopped: its entry, stop switch and all, is let go.
        self.configured.retain(|p, _| wanted.contains(p));
        for p in wanted {
            if self.configured.contains_key(p) {
                continue;
            }
            // The configuration was checked: every port names a family this build has.
            match Origin::configured(p) {
                Ok((path, origin)) => {
                    self.configured
                        .insert(p.clone(), spawn_port(ctx, path, origin));
                }
                Err(e) => tracing::error!("port not served: {e}"),
            }
        }
        match (cfg.daemon.discovery, self.discovery.is_some()) {
            (true, false) => {
                let ctx = ctx.clone();
                self.discovery = Some(Task::spawn(|stop| discover(ctx, stop)));
            }
            (false, true) => self.discovery = None,
            _ => {}
        }
    }

    /// How many configured ports are served.
    pub(super) fn configured(&self) -> usize {
        self.configured.len()
    }

    /// Whether USB discovery runs.
    pub(super) fn discovering(&self) -> bool {
        self.discovery.is_some()
    }

    /// Stops every task and waits for them, `within` at most (a warning when some did not end
    /// in time).
    pub(super) async fn stop(self, within: Duration) {
        let PortTasks {
            configured,
            discovery,
        } = self;
        let ports: Vec<_> = configured.into_values().map(Task::stop).collect();
        let discovery = discovery.map(Task::stop);
        let all = async move {
            for t in ports {
                let _ = t.await;
            }
            if let Some(t) = discovery {
                let _ = t.await;
            }
        };
        if tokio::time::timeout(within, all).await.is_err() {
            tracing::warn!("some ports did not close in time");
        }
    }
}

/// Serve the port at `path` in a task of its own.
pub(super) fn spawn_port(ctx: &Arc<Ctx>, path: PathBuf, origin: Origin) -> Task<PortEnd> {
    let ctx = ctx.clone();
    Task::spawn(|stop| board_task::serve_port(ctx, path, origin, stop))
}

/// Discovery: rescans on hotplug events (or every 2 s without hotplug) and serves every new
/// DGT board found on USB.
pub(super) async fn discover(ctx: Arc<Ctx>, stop: CancellationToken) {
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
            _ = stop.cancelled() => break,
        }
    }
    for (_, (t, _)) in tasks {
        let _ = t.stop().await;
    }
}
