//! One task per port: open it with its driver's line settings, let the port's
//! [`Session`] (the driver's, sans-IO) talk to the board or boards on it, and reopen it with
//! backoff when it is lost. A slow or broken board only ever stalls its own port. This task does
//! the I/O and nothing of any board family: every byte written comes from the session, and so
//! from the driver ([`crate::session`]).
//!
//! Bytes received belong to the board the session listens to: they go to that board's capture
//! first, are decoded once by that board's decoder (the core gets the observations, the session
//! the messages), and the events they cause are published. Before a board is known its
//! exchanges are kept (and decoded for the session, to learn who it is) and written to its
//! capture once it is ([`Action::Found`]); bytes the session receives from the line as a whole
//! (a chain's discovery, where any board may answer) go to the port's line capture
//! (`line-<port>`). Every session decision worth it (a dump that differs, a reset, a battery, a
//! board of a chain that stopped answering) is logged and noted in the board's capture.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use std::collections::BTreeMap;

use super::board::LiveBoard;
use super::captures::CaptureFile;
use super::ctx::Ctx;
use super::wire::{SerialWire, Wire};
use crate::capture::RecordKind;
use crate::core::event::CoreEvent;
use crate::core::observation::FieldArray;
use crate::driver::{BoardDriver, Decoder, Message, SessionMessage};
use crate::family;
use crate::output::LinkState;
use crate::session::clock_text::ClockText;
use crate::session::link::LinkKind;
use crate::session::{Action, Boards, Note, Session, SessionConfig, Unit};

/// How a port task ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortEnd {
    /// The daemon is shutting down (or the port was removed from the configuration).
    Stopped,
    /// A probed generic device is not a board of its driver.
    NotABoard,
    /// A discovered device node went away.
    Gone,
}

/// How one session on an open link ended.
#[derive(Debug)]
pub enum SessionEnd {
    /// Told to stop.
    Stopped,
    /// A probed device is not a board of its driver.
    NotABoard,
    /// The link was lost (why).
    Lost(String),
}

/// Serves one session on an open link (`wire`) at port `path` (a device node, or a BLE
/// board's `ble:ADDRESS`): the port's session talks to its boards until the link is lost or
/// the task is told to stop. Every transport's port task ends up here.
pub async fn serve_session<W: Wire>(
    ctx: &Arc<Ctx>,
    path: &Path,
    origin: Origin,
    wire: W,
    stop: &CancellationToken,
) -> SessionEnd {
    Port::new(ctx, path, origin).serve(wire, stop).await
}

/// Where a port comes from, with the driver that serves it.
#[derive(Debug, Clone, Copy)]
pub enum Origin {
    /// Configured (file or `--port`): retried forever, even while the node is missing.
    Configured {
        /// The driver to serve it with (`<driver>:<path>`; the default for a plain path).
        driver: &'static dyn BoardDriver,
    },
    /// Found on USB; `generic` ids are probed first. The task ends when the node goes away.
    Discovered {
        /// A shared USB id (FTDI): probe before serving.
        generic: bool,
        /// The driver whose USB id it carries.
        driver: &'static dyn BoardDriver,
    },
}

impl Origin {
    /// The driver to serve the port with.
    pub fn driver(self) -> &'static dyn BoardDriver {
        match self {
            Origin::Discovered { driver, .. } | Origin::Configured { driver } => driver,
        }
    }

    /// A configured port: `<family>:<path>` (e.g. `millennium:/dev/ttyUSB0`) names its driver;
    /// a plain path is served with the default driver ([`family::parse_port`]). A port naming
    /// no family is refused (the configuration is checked for that before it is used).
    pub fn configured(spec: &Path) -> Result<(PathBuf, Origin), family::UnknownFamily> {
        let (d, path) = family::parse_port(spec)?;
        Ok((path, Origin::Configured { driver: d }))
    }
}

/// Period of the core's settle decisions and of the session's own timers.
const TICK: Duration = Duration::from_millis(100);

/// Serves one port until told to stop (or, for discovered ports, until it goes away): opens it,
/// serves a session on it while it stays open, and reopens it with backoff ([`Reopen`]).
pub async fn serve_port(
    ctx: Arc<Ctx>,
    path: PathBuf,
    origin: Origin,
    stop: CancellationToken,
) -> PortEnd {
    if origin.driver().transport().gatt().is_some() {
        return super::ble::serve_ble(ctx, path, origin, stop).await;
    }
    let Some(line) = origin.driver().transport().line() else {
        tracing::error!(
            "{}: the {} driver is not served on a serial port",
            path.display(),
            origin.driver().name()
        );
        return PortEnd::NotABoard;
    };
    let mut reopen = Reopen::new(&ctx, &path, origin);
    while !stop.is_cancelled() {
        match super::serial::open(&path, line) {
            Ok(port) => {
                if let Some(end) = serve_opened(&ctx, &path, origin, port, &stop, &mut reopen).await
                {
                    return end;
                }
            }
            Err(e) => {
                if matches!(origin, Origin::Discovered { .. }) && !path.exists() {
                    return PortEnd::Gone;
                }
                reopen.failed(&e);
            }
        }
        if !reopen.wait(&stop).await {
            break;
        }
    }
    PortEnd::Stopped
}

/// Serves a session on a port just opened, unless another task serves the same device under
/// another name. `None` while the port task goes on (the link was lost, or the port was
/// someone else's), the task's end otherwise.
async fn serve_opened(
    ctx: &Arc<Ctx>,
    path: &Path,
    origin: Origin,
    port: tokio_serial::SerialStream,
    stop: &CancellationToken,
    reopen: &mut Reopen<'_>,
) -> Option<PortEnd> {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if !ctx.claim_port(&canonical) {
        tracing::debug!("{}: already served under another name", path.display());
        return None;
    }
    reopen.opened();
    let started = Instant::now();
    let end = Port::new(ctx, path, origin)
        .serve(SerialWire::new(port), stop)
        .await;
    ctx.release_port(&canonical);
    match end {
        SessionEnd::Stopped => Some(PortEnd::Stopped),
        SessionEnd::NotABoard => {
            tracing::info!(
                "{}: not a {} board; left alone",
                path.display(),
                origin.driver().name()
            );
            Some(PortEnd::NotABoard)
        }
        SessionEnd::Lost(why) => {
            tracing::warn!("{}: link lost: {why}", path.display());
            reopen.lost(started.elapsed());
            None
        }
    }
}

/// When a serial port task tries its port again: backoff doubling from 250 ms to 5 s, a slow
/// retry ([`SLOW_RETRY`]) for what waiting cannot heal, a failure logged once per reason, and
/// the port's entry in health while it does not open.
struct Reopen<'a> {
    path: &'a Path,
    backoff: Duration,
    failing_since: Option<String>,
    /// A configured port (or a board's own USB id) that does not open is in health until it
    /// does, or until its task ends.
    reported: bool,
    fault: PortFault<'a>,
}

impl<'a> Reopen<'a> {
    fn new(ctx: &'a Ctx, path: &'a Path, origin: Origin) -> Self {
        Reopen {
            path,
            backoff: Duration::from_millis(250),
            failing_since: None,
            reported: matches!(
                origin,
                Origin::Configured { .. } | Origin::Discovered { generic: false, .. }
            ),
            fault: PortFault {
                ctx,
                name: path.display().to_string(),
            },
        }
    }

    /// The port opened: its failure is over.
    fn opened(&mut self) {
        self.failing_since = None;
        self.fault.set(None);
        self.backoff = self.backoff.min(Duration::from_secs(5));
    }

    /// The link was lost after `served`: a link that lived a while is reopened quickly.
    fn lost(&mut self, served: Duration) {
        if served > Duration::from_secs(30) {
            self.backoff = Duration::from_millis(250);
        }
    }

    /// The port did not open: logged once per reason, in health, and the next try is slow when
    /// waiting cannot heal the reason.
    fn failed(&mut self, e: &io::Error) {
        let failure = super::serial::diagnose(self.path, e);
        if self.failing_since.as_deref() != Some(&failure.reason) {
            if failure.lasting {
                tracing::warn!(
                    "{}: cannot open: {}; tried again every {} s",
                    self.path.display(),
                    failure.reason,
                    SLOW_RETRY.as_secs()
                );
            } else {
                tracing::info!(
                    "{}: cannot open ({}); retrying",
                    self.path.display(),
                    failure.reason
                );
            }
            self.failing_since = Some(failure.reason.clone());
        }
        if self.reported {
            self.fault.set(Some(failure.reason));
        }
        if failure.lasting {
            self.backoff = SLOW_RETRY;
        } else if self.backoff >= SLOW_RETRY {
            self.backoff = Duration::from_millis(250);
        }
    }

    /// Waits out the backoff (`false`: told to stop meanwhile), and lengthens the next.
    async fn wait(&mut self, stop: &CancellationToken) -> bool {
        tokio::select! {
            _ = tokio::time::sleep(self.backoff) => {}
            _ = stop.cancelled() => return false,
        }
        if self.backoff < SLOW_RETRY {
            self.backoff = (self.backoff * 2).min(Duration::from_secs(5));
        }
        true
    }
}

/// How often a port that waiting cannot heal (permission, not a serial device) is tried again.
pub const SLOW_RETRY: Duration = Duration::from_secs(30);

/// A port task's entry in health's failing parts: cleared when the port opens and when the
/// task ends.
struct PortFault<'a> {
    ctx: &'a Ctx,
    name: String,
}

impl PortFault<'_> {
    fn set(&self, why: Option<String>) {
        self.ctx
            .metrics
            .set_fault(crate::output::metrics::Part::Port, &self.name, why);
    }
}

impl Drop for PortFault<'_> {
    fn drop(&mut self) {
        self.set(None);
    }
}

type Board = Arc<Mutex<LiveBoard>>;

fn lock(b: &Board) -> std::sync::MutexGuard<'_, LiveBoard> {
    b.lock().unwrap_or_else(|e| e.into_inner())
}

/// The time the sans-IO session sees (tokio's, so that paused test clocks move it too).
fn now() -> std::time::Instant {
    Instant::now().into_std()
}

/// A board of the port whose capture is open.
struct Live {
    id: String,
    board: Board,
    session: u64,
    /// Its clock's text, and when the times come back.
    clock_text: ClockText,
}

/// A board the session talks to before it is known: what was exchanged, kept for its capture,
/// and a decoder for the session to learn who it is.
struct Early {
    records: Vec<(Instant, RecordKind)>,
    decoder: Box<dyn Decoder>,
}

/// The bytes exchanged with the line as a whole (a chain's discovery): their own capture.
struct Line {
    file: CaptureFile,
    id: String,
    decoder: Box<dyn Decoder>,
}

/// The boards' cores as the session sees them.
struct View<'a>(&'a BTreeMap<Unit, Live>);

impl Boards for View<'_> {
    fn explains(&self, unit: Unit, fields: &FieldArray) -> bool {
        self.0
            .get(&unit)
            .is_none_or(|l| lock(&l.board).explains(fields))
    }
    fn game_in_progress(&self, unit: Unit) -> bool {
        self.0
            .get(&unit)
            .is_some_and(|l| lock(&l.board).game_in_progress())
    }
    fn at_game_start(&self, unit: Unit) -> bool {
        self.0
            .get(&unit)
            .is_some_and(|l| lock(&l.board).at_game_start())
    }
    fn away_for(&self, unit: Unit) -> Option<Duration> {
        self.0.get(&unit).and_then(|l| lock(&l.board).away_for())
    }
    fn moves_missing(&self, unit: Unit) -> bool {
        self.0
            .get(&unit)
            .is_some_and(|l| lock(&l.board).moves_missing())
    }
}

/// One open port: its session, and the boards on it.
struct Port<'a> {
    ctx: &'a Arc<Ctx>,
    path: &'a Path,
    driver: &'static dyn BoardDriver,
    kind: LinkKind,
    session: Box<dyn Session>,
    live: BTreeMap<Unit, Live>,
    early: BTreeMap<Unit, Early>,
    line: Option<Line>,
    /// Frames the link cut short this session.
    cut: u64,
}

impl<'a> Port<'a> {
    fn new(ctx: &'a Arc<Ctx>, path: &'a Path, origin: Origin) -> Port<'a> {
        let driver = origin.driver();
        let kind = LinkKind::of_path(path);
        let daemon = &ctx.config().daemon;
        let cfg = SessionConfig {
            link: kind,
            keepalive: Duration::from_secs(daemon.keepalive_secs),
            quiet_dump: Duration::from_secs(daemon.dump_quiet_secs),
            probing: matches!(origin, Origin::Discovered { generic: true, .. }),
            port_serial: port_serial(path),
            memory_after: Duration::from_secs(daemon.memory_after_secs),
        };
        Port {
            ctx,
            path,
            driver,
            kind,
            session: crate::session::open(driver, cfg),
            live: BTreeMap::new(),
            early: BTreeMap::new(),
            line: None,
            cut: 0,
        }
    }

    async fn serve<W: Wire>(mut self, mut wire: W, stop: &CancellationToken) -> SessionEnd {
        let mut actions = Vec::new();
        self.session.open(now(), &mut actions);
        let end = self.run(&mut wire, stop, actions).await;
        for (_, l) in std::mem::take(&mut self.live) {
            self.release(&l);
        }
        end
    }

    async fn run<W: Wire>(
        &mut self,
        wire: &mut W,
        stop: &CancellationToken,
        mut actions: Vec<Action>,
    ) -> SessionEnd {
        let mut next_tick = Instant::now() + TICK;
        let ctx = self.ctx;
        let mut heartbeat = ctx
            .heartbeats
            .register(format!("port {}", self.path.display()), now());
        loop {
            if let Err(end) = self.carry_out(wire, &mut actions).await {
                return end;
            }
            heartbeat.beat(now());
            let wake = match self.session.deadline().map(Instant::from_std) {
                Some(d) => d.min(next_tick),
                None => next_tick,
            };
            tokio::select! {
                // Bytes already received come before a deadline: a reply that came while the
                // task was not running extends the session's wait (a chain's session sends the
                // next command only once the line is quiet) instead of being taken for silence.
                biased;
                r = wire.recv() => match r {
                    Ok(record) => {
                        if let Err(e) = self.received(record, wire, &mut actions) {
                            return SessionEnd::Lost(format!("capture: {e}"));
                        }
                    }
                    Err(why) => return SessionEnd::Lost(why),
                },
                _ = tokio::time::sleep_until(wake) => {
                    let at = Instant::now();
                    if at >= next_tick {
                        next_tick = at + TICK;
                        if let Err(e) = self.tick(at, &mut actions) {
                            return SessionEnd::Lost(format!("capture: {e}"));
                        }
                    }
                    self.session.poll(now(), &View(&self.live), &mut actions);
                }
                _ = stop.cancelled() => return SessionEnd::Stopped,
            }
        }
    }

    /// A chunk came in: it belongs to the board the session listens to (its capture, its
    /// decoder), or to the line; the decoded messages go to the session.
    fn received<W: Wire>(
        &mut self,
        record: RecordKind,
        wire: &W,
        actions: &mut Vec<Action>,
    ) -> io::Result<()> {
        let from = self.session.listener();
        let (msgs, bad) = match from {
            Some(unit) if self.live.contains_key(&unit) => {
                let l = &self.live[&unit];
                let r = {
                    let mut b = lock(&l.board);
                    let t = b.now();
                    b.incoming(t, record, &self.ctx.hub)?
                };
                self.react(unit, &r.events, actions);
                (r.messages, r.bad_frames)
            }
            Some(unit) => {
                let driver = self.driver;
                let e = self.early.entry(unit).or_insert_with(|| Early {
                    records: Vec::new(),
                    decoder: driver.unit_decoder(unit),
                });
                let decoded = decode(&mut *e.decoder, &record);
                e.records.push((Instant::now(), record));
                decoded
            }
            None => {
                let line = self.line()?;
                let t = line.file.now();
                let decoded = decode(&mut *line.decoder, &record);
                line.file.write(t, &line.id, record)?;
                decoded
            }
        };
        self.cut_frames(from, &msgs, wire);
        self.ctx
            .metrics
            .link_errors(crate::output::metrics::LinkError::BadFrame, bad);
        self.session
            .received(now(), from, &msgs, bad, &View(&self.live), actions);
        Ok(())
    }

    /// Frames the link cut short ([`SessionMessage::Cut`]): an error naming the link's limit
    /// (a BLE link's MTU), logged, noted in the board's capture and shown in health, once a
    /// session; cleared when whole frames come in again.
    fn cut_frames<W: Wire>(&mut self, unit: Option<Unit>, msgs: &[Message], wire: &W) {
        let port = self.path.display().to_string();
        for m in msgs {
            match m {
                Message::Session(SessionMessage::Cut { got, needed }) => {
                    self.cut += 1;
                    if self.cut > 1 {
                        continue;
                    }
                    let why = wire.cut_reason(*got, *needed);
                    tracing::error!("{port}: {why}");
                    if let Some(l) = unit.and_then(|u| self.live.get(&u)) {
                        let _ = lock(&l.board).note(&why);
                    }
                    self.ctx.hub.set_link_problem(&port, Some(why));
                }
                Message::Session(SessionMessage::Answer | SessionMessage::Other)
                    if self.cut > 0 =>
                {
                    self.cut = 0;
                    self.ctx.hub.set_link_problem(&port, None);
                }
                _ => {}
            }
        }
    }

    /// The line's capture, opened at its first use.
    fn line(&mut self) -> io::Result<&mut Line> {
        if self.line.is_none() {
            let id = format!(
                "line-{}",
                port_serial(self.path).trim_start_matches("port-")
            );
            let path = self.ctx.store.path_for(super::captures::today(), &id);
            let header = crate::capture::HeaderFields {
                board: Some(id.clone()),
                tags: None,
                devices: vec![crate::capture::DeviceEntry {
                    id: id.clone(),
                    driver: Some(self.driver.name().to_string()),
                    role: Some(crate::capture::LINE_ROLE.to_string()),
                    port: Some(self.path.display().to_string()),
                    ..Default::default()
                }],
            };
            let opened = self.ctx.store.open(&path, header.to_map())?;
            self.line = Some(Line {
                file: opened.file,
                id,
                decoder: self.driver.line_decoder(),
            });
        }
        Ok(self.line.as_mut().expect("opened above"))
    }

    /// Carries out the session's actions, in order, until none is left.
    async fn carry_out<W: Wire>(
        &mut self,
        wire: &mut W,
        actions: &mut Vec<Action>,
    ) -> Result<(), SessionEnd> {
        let capture = |e: io::Error| SessionEnd::Lost(format!("capture: {e}"));
        while !actions.is_empty() {
            for action in std::mem::take(actions) {
                match action {
                    Action::Send { unit, bytes } => {
                        if bytes.is_empty() {
                            continue;
                        }
                        let record = wire.record_of(bytes);
                        self.sent(unit, record.clone()).map_err(capture)?;
                        wire.send(&record).await.map_err(SessionEnd::Lost)?;
                    }
                    Action::Found {
                        unit,
                        serial,
                        version,
                    } => self.found(unit, &serial, version, actions)?,
                    Action::Lost { unit, why } => {
                        if let Some(l) = self.live.remove(&unit) {
                            tracing::warn!("{}: lost on {}: {why}", l.id, self.path.display());
                            let _ = lock(&l.board).note(&format!("lost: {why}"));
                            self.release(&l);
                        }
                    }
                    Action::Note { unit, note } => self.note(unit, &note).map_err(capture)?,
                    Action::Dead(why) => return Err(SessionEnd::Lost(why.to_string())),
                    Action::NotABoard => return Err(SessionEnd::NotABoard),
                }
            }
        }
        Ok(())
    }

    /// Bytes about to be written: captured first (the board's, the early list's, the line's).
    fn sent(&mut self, unit: Option<Unit>, record: RecordKind) -> io::Result<()> {
        match unit {
            Some(u) if self.live.contains_key(&u) => {
                let mut b = lock(&self.live[&u].board);
                let t = b.now();
                b.outgoing(t, record)
            }
            Some(u) => {
                let driver = self.driver;
                let e = self.early.entry(u).or_insert_with(|| Early {
                    records: Vec::new(),
                    decoder: driver.unit_decoder(u),
                });
                e.records.push((Instant::now(), record));
                Ok(())
            }
            None => {
                let line = self.line()?;
                let t = line.file.now();
                line.file.write(t, &line.id, record)?;
                Ok(())
            }
        }
    }

    /// A board is known: its capture is opened (its games rebuilt), what was exchanged before
    /// goes into it, and it shows connected.
    fn found(
        &mut self,
        unit: Unit,
        serial: &str,
        version: Option<(u8, u8)>,
        actions: &mut Vec<Action>,
    ) -> Result<(), SessionEnd> {
        let ctx = self.ctx;
        let (id, mut meta) = ctx.identify(self.driver.name(), serial);
        meta.driver = Some(self.driver.name());
        meta.unit = (unit != crate::session::SINGLE).then_some(unit);
        let board = match ctx.board(&id, meta, self.kind) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!("{id}: cannot open its capture: {e}");
                return Err(SessionEnd::Lost(format!("capture: {e}")));
            }
        };
        let session = ctx.new_session();
        let port_name = self.path.display().to_string();
        let early = self
            .early
            .remove(&unit)
            .map(|e| e.records)
            .unwrap_or_default();
        let result: io::Result<Vec<CoreEvent>> = (|| {
            let mut b = lock(&board);
            b.claim(session);
            let at = Instant::now();
            let base = b.now();
            let mut events = Vec::new();
            for (when, kind) in early {
                let t = base - at.duration_since(when).as_micros() as i64;
                match kind {
                    RecordKind::Tx(_) | RecordKind::Write { .. } => b.outgoing(t, kind)?,
                    RecordKind::Rx(_) | RecordKind::Notify { .. } => {
                        events.extend(b.incoming(t, kind, &ctx.hub)?.events)
                    }
                    _ => {}
                }
            }
            let version = version.map_or("?".into(), |(major, minor)| format!("{major}.{minor}"));
            b.note(&format!(
                "board version {version}, {} link{}",
                self.kind.name(),
                if unit == crate::session::SINGLE {
                    String::new()
                } else {
                    format!(", bus address {unit}")
                }
            ))?;
            b.set_connection(LinkState::Active, Some(&port_name), &ctx.hub)?;
            Ok(events)
        })();
        let events = result.map_err(|e| SessionEnd::Lost(format!("capture: {e}")))?;
        tracing::info!(
            "{id}: connected on {} (serial {serial}, version {}, {} link)",
            self.path.display(),
            version.map_or("?".into(), |(a, b)| format!("{a}.{b}")),
            self.kind.name()
        );
        self.live.insert(
            unit,
            Live {
                id,
                board,
                session,
                clock_text: ClockText::default(),
            },
        );
        self.react(unit, &events, actions);
        self.session.opened(now(), unit, &View(&self.live), actions);
        Ok(())
    }

    /// A board leaves this session: noted, shown disconnected (unless a newer session has it).
    fn release(&self, l: &Live) {
        let mut b = lock(&l.board);
        let (dropped, bad) = b.session_counters();
        let line = format!("{dropped} bytes dropped, {bad} bad frames on the line");
        let _ = b.note(&format!("session ended: {line}"));
        if b.release(l.session) {
            let _ = b.set_connection(LinkState::Disconnected, None, &self.ctx.hub);
        }
        tracing::info!(
            "{}: disconnected from {} ({line})",
            l.id,
            self.path.display()
        );
    }

    /// Logs a session note and writes it to the board's capture.
    fn note(&self, unit: Unit, note: &Note) -> io::Result<()> {
        use crate::output::metrics::LinkError;
        let error = match note {
            Note::DumpDiffers { .. } => Some(LinkError::Repair),
            Note::Reset { .. } => Some(LinkError::Reset),
            Note::NoReply { .. } => Some(LinkError::NoReply),
            _ => None,
        };
        if let Some(kind) = error {
            self.ctx.metrics.link_errors(kind, 1);
        }
        let Some(l) = self.live.get(&unit) else {
            tracing::info!("{} (unit {unit}): {note}", self.path.display());
            return Ok(());
        };
        if note.informational() {
            tracing::info!("{}: {note}", l.id);
        } else {
            tracing::warn!("{}: {note}", l.id);
        }
        let mut b = lock(&l.board);
        if let Note::Battery(level) = note {
            b.set_battery(level, &self.ctx.hub);
        }
        b.note(&note.to_string())
    }

    /// The port's tick: the boards' cores take their due decisions; texts on the clocks end.
    fn tick(&mut self, at: Instant, actions: &mut Vec<Action>) -> io::Result<()> {
        let units: Vec<Unit> = self.live.keys().copied().collect();
        for unit in units {
            let events = lock(&self.live[&unit].board).tick(&self.ctx.hub)?;
            self.react(unit, &events, actions);
            if let Some(times) = self
                .live
                .get_mut(&unit)
                .and_then(|l| l.clock_text.due(at.into_std()))
            {
                self.session.show(unit, times);
            }
        }
        Ok(())
    }

    /// The session hears of the events just published on `unit`, and the clock shows a text
    /// for them when so configured (`session::clock_text`).
    fn react(&mut self, unit: Unit, events: &[CoreEvent], actions: &mut Vec<Action>) {
        if events.is_empty() {
            return;
        }
        let at = now();
        self.session.events(at, unit, events, actions);
        if !self.session.shows_text(unit) {
            return;
        }
        let cfg = self.ctx.config();
        let Some(l) = self.live.get_mut(&unit) else {
            return;
        };
        for text in l.clock_text.on_events(&cfg.clock, at, events) {
            self.session.show(unit, text);
        }
    }
}

/// Decodes what the board said (`rx` bytes, a notification) with `decoder`: the messages, and
/// the frames it rejected among them.
fn decode(decoder: &mut dyn Decoder, record: &RecordKind) -> (Vec<Message>, u64) {
    let bad = decoder.bad_frames();
    let mut msgs = Vec::new();
    match record {
        RecordKind::Rx(bytes) => decoder.decode(bytes, &mut msgs),
        RecordKind::Notify { char, bytes } => decoder.notified(char, bytes, &mut msgs),
        _ => {}
    }
    (msgs, decoder.bad_frames() - bad)
}

/// The name of a board that tells no serial number: after its port (`port-ttyUSB0`).
pub fn port_serial(path: &Path) -> String {
    if let Some(address) = path.to_string_lossy().strip_prefix("ble:") {
        // A BLE board: after its address.
        return address.replace(':', "");
    }
    let name = path
        .file_name()
        .map_or("port".into(), |n| n.to_string_lossy());
    format!("port-{}", crate::config::sanitize(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_ports_may_name_their_driver() {
        let (path, origin) = Origin::configured(Path::new("millennium:/dev/ttyUSB0")).unwrap();
        assert_eq!(path, Path::new("/dev/ttyUSB0"));
        assert_eq!(origin.driver().name(), "millennium");
        assert!(Origin::configured(Path::new("milenium:/dev/ttyUSB0")).is_err());
        let (path, origin) = Origin::configured(Path::new("/dev/ttyACM0")).unwrap();
        assert_eq!(path, Path::new("/dev/ttyACM0"));
        assert_eq!(origin.driver().name(), "dgt");
    }
}
