//! The daemon's shared context: the hub, the configuration in force, the captures, the metrics,
//! and every board in memory. Every task of the daemon (port tasks, control, discovery, reload)
//! holds an `Arc<Ctx>`.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use super::board::{BoardMeta, LiveBoard};
use super::captures::{self, CaptureStore};
use super::reconfigure_round;
use crate::config::Config;
use crate::output::{Hub, LinkState};

/// Shared by every task of the daemon.
#[derive(Debug)]
pub struct Ctx {
    /// The hub.
    pub hub: Hub,
    pub(super) config: RwLock<Arc<Config>>,
    /// The captures.
    pub store: CaptureStore,
    /// The daemon's metrics (`GET /metrics`), counted into by the hub, the port tasks and the
    /// captures.
    pub metrics: Arc<crate::output::metrics::Metrics>,
    pub(super) boards: Mutex<BTreeMap<String, Arc<Mutex<LiveBoard>>>>,
    pub(super) open_ports: Mutex<HashSet<PathBuf>>,
    pub(super) sessions: AtomicU64,
    /// The Bluetooth LE adapters the BLE port tasks share.
    pub(super) ble: super::ble::BleRoom,
    /// Whether the capture directory could not be written at the last check.
    capture_failing: AtomicBool,
    /// The port tasks' progress, for the watchdog.
    pub heartbeats: super::heartbeat::Heartbeats,
}

impl Ctx {
    pub(super) fn new(cfg: Config, hub: Hub) -> Ctx {
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
            ble: Default::default(),
            capture_failing: AtomicBool::new(false),
            heartbeats: Default::default(),
        }
    }

    /// Checks that captures can be written in the capture directory now
    /// ([`captures::check_writable`]); health lists it (`failing`, part `capture`) while they
    /// cannot. Logged when it turns failing and when it heals.
    pub fn check_capture_dir(&self) {
        let checked = captures::check_writable(&self.store.dir);
        self.capture_fault(checked.err());
    }

    /// The capture directory fails for `why` (`None`: it works).
    pub(super) fn capture_fault(&self, why: Option<String>) {
        let was = self.capture_failing.swap(why.is_some(), Ordering::Relaxed);
        match (&why, was) {
            (Some(why), false) => tracing::error!("{why}: no board can be served"),
            (None, true) => tracing::info!(
                "captures can be written again in {}",
                self.store.dir.display()
            ),
            _ => {}
        }
        self.metrics.set_fault(
            crate::output::metrics::Part::Capture,
            &self.store.dir.display().to_string(),
            why,
        );
    }

    /// The configuration in force.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(super) fn meta(cfg: &Config, serial: Option<&str>, number: Option<u32>) -> BoardMeta {
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
            white_team: None,
            black_team: None,
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
    pub(super) fn numbered(
        &self,
        id: &str,
        mut meta: BoardMeta,
        recorded: Option<u32>,
    ) -> BoardMeta {
        let (number, round) = self.hub.number_board(id, meta.number.or(recorded));
        meta.number = Some(number);
        meta.round = Some(format!("{round}.{number}"));
        meta
    }

    /// `meta` with the players the hub has for board `id` (the configured ones, or those of a
    /// round loaded over the API, or set by the arbiter): the captures name the players every
    /// output shows.
    pub(super) fn with_hub_players(&self, id: &str, mut meta: BoardMeta) -> BoardMeta {
        let (pairing, event, site) = self
            .hub
            .with_round(|r| (r.pairing(id), r.info.event.clone(), r.info.site.clone()));
        // The event and site the outputs show (a pairings file's `012`/`022` fill them when
        // the configuration has none): replay then tags games as the outputs did.
        if meta.event.is_none() {
            meta.event = event;
        }
        if meta.site.is_none() {
            meta.site = site;
        }
        if let Some(name) = pairing.white.name {
            meta.white = Some(name);
        }
        if let Some(name) = pairing.black.name {
            meta.black = Some(name);
        }
        if let Some(team) = pairing.black.team {
            meta.black_team = Some(team);
        }
        if let Some(team) = pairing.white.team {
            meta.white_team = Some(team);
        }
        meta
    }

    /// Metadata of a board known only by its id (from a capture file name).
    pub(super) fn meta_for_id(&self, id: &str) -> BoardMeta {
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
    ) -> std::io::Result<Arc<Mutex<LiveBoard>>> {
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
        let opened = LiveBoard::open(&self.store, id, meta, None, link);
        if let Err(e) = &opened {
            self.capture_fault(Some(format!(
                "captures cannot be written in {}: board {id}: {e}",
                self.store.dir.display()
            )));
        }
        let b = Arc::new(Mutex::new(opened?));
        boards.insert(id.to_string(), b.clone());
        Ok(b)
    }

    pub(super) fn new_session(&self) -> u64 {
        self.sessions.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Takes a port (canonical path) for a session; `false` when another session has it.
    pub(super) fn claim_port(&self, canonical: &Path) -> bool {
        self.open_ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(canonical.to_path_buf())
    }

    pub(super) fn release_port(&self, canonical: &Path) {
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

    /// Rebuilds the boards of the current round from their captures: every board's capture
    /// replayed on every core (boards are independent), each board then numbered, restored
    /// into the hub (its finished games go to the archive) and kept, in file order, as one
    /// thread would. Only a few rebuilt boards wait for their turn at a time, so a first start
    /// over a long event's captures holds a few boards' games, not the event's.
    pub(super) fn recover(&self) {
        let today = captures::today();
        let files = self.store.current_files(today);
        let total = files.len();
        self.hub.set_recovering(Some((0, total)));
        let done = std::sync::atomic::AtomicUsize::new(0);
        let mut earlier = Vec::new();
        let rebuild = |(id, path): &(String, PathBuf)| {
            let board = LiveBoard::open_with(
                &self.store,
                id,
                &self.meta_for_id(id),
                Some(path),
                crate::session::link::LinkKind::Wired,
                |_| None,
            );
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            self.hub.set_recovering(Some((n, total)));
            board
        };
        let keep = |(id, path): &(String, PathBuf), board: std::io::Result<LiveBoard>| {
            let mut board = match board {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!("{}: cannot read back: {e}", path.display());
                    return;
                }
            };
            // A board of an earlier day is taken only with a game in progress; it keeps the
            // number its capture recorded, when no other board has it.
            let of_earlier_day = *path != self.store.path_for(today, id);
            if of_earlier_day && !board.game_in_progress() {
                return;
            }
            let meta = self.numbered(id, self.meta_for_id(id), board.recorded_number());
            if let Err(e) = board.set_meta(meta) {
                tracing::error!("{}: cannot read back: {e}", path.display());
                return;
            }
            board.restore_into(&self.hub);
            match board.resumed_from() {
                Some((offset, Some(first))) if first > 1 => {
                    earlier.push((id.clone(), path.clone(), offset, first));
                }
                Some(_) => {}
                // Every record replayed: a resume point at the end (when the board is at
                // rest there) makes the next restart short.
                None => {
                    board.take_resume_point();
                }
            }
            self.boards
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(id.clone(), Arc::new(Mutex::new(board)));
        };
        crate::parallel::for_each_in_order(&files, crate::parallel::cores(), rebuild, keep);
        self.hub.set_recovering(None);
        if !earlier.is_empty() {
            let hub = self.hub.clone();
            let spawned = std::thread::Builder::new()
                .name("earlier-games".into())
                .spawn(move || read_back_earlier(&hub, earlier));
            if let Err(e) = spawned {
                tracing::error!(
                    "cannot read back the finished games before the resume points: {e}"
                );
            }
        }
    }

    /// Board `id`, when it is in memory (its capture open).
    pub(super) fn board_in_memory(&self, id: &str) -> Option<Arc<Mutex<LiveBoard>>> {
        let boards = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        boards.get(id).cloned()
    }

    /// The ids of the boards in memory.
    pub(super) fn board_ids(&self) -> Vec<String> {
        let boards = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        boards.keys().cloned().collect()
    }

    /// Every board in memory.
    pub(super) fn all_boards(&self) -> Vec<Arc<Mutex<LiveBoard>>> {
        let boards = self.boards.lock().unwrap_or_else(|e| e.into_inner());
        boards.values().cloned().collect()
    }

    /// Applies a new configuration to the boards in memory.
    pub(super) fn reconfigure(&self, cfg: Config) {
        let old = self.config();
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(cfg);
        let cfg = self.config();
        self.hub
            .update_info(|info| reconfigure_round(info, &old, &cfg));
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
    pub(super) fn counts(&self) -> (usize, usize) {
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

/// Reads back, one board after the other on one thread (the other cores serve the live
/// boards), the finished games of boards rebuilt from a resume point: each board's capture up to
/// the point is replayed, and its games numbered below the first the point kept go to the hub
/// ([`Hub::restore_earlier`]). The daemon serves meanwhile; health shows the progress.
fn read_back_earlier(hub: &Hub, boards: Vec<(String, PathBuf, u64, u32)>) {
    let started = std::time::Instant::now();
    let total = boards.len();
    hub.set_backfill(Some((0, total)));
    let mut games = 0;
    for (n, (id, path, offset, first)) in boards.into_iter().enumerate() {
        match earlier_games(&id, &path, offset, first) {
            Ok((found, rounds)) => {
                games += found.len();
                hub.restore_earlier(&id, &found, &rounds);
            }
            Err(e) => tracing::error!(
                "{}: cannot read back its earlier games: {e}",
                path.display()
            ),
        }
        hub.set_backfill(Some((n + 1, total)));
    }
    hub.set_backfill(None);
    tracing::info!(
        "{games} finished game(s) of {total} board(s) read back in {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

/// Board `id`'s games numbered below `first` in its capture at `path` up to byte `offset`,
/// with their rounds.
fn earlier_games(
    id: &str,
    path: &Path,
    offset: u64,
    first: u32,
) -> std::io::Result<(Vec<crate::core::game::GameRecord>, Vec<Option<u32>>)> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(offset)
        .read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let cap = crate::capture::parse_capture(&path.display().to_string(), &text)
        .map_err(std::io::Error::other)?;
    let mut session = crate::replay::Playback::new(crate::replay::Timeline::from_capture(cap));
    session.run(&mut |_, _| Ok(()))?;
    let replayed = session.into_board(id);
    Ok(replayed
        .device
        .engine
        .games()
        .iter()
        .zip(replayed.rounds.iter().chain(std::iter::repeat(&None)))
        .filter(|(g, _)| g.number < first)
        .map(|(g, r)| (g.clone(), *r))
        .unzip())
}
