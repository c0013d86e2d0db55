//! One task per port: open it with its driver's line settings, do the driver's handshake,
//! stream, keep the link alive, and reopen it with backoff when it is lost. A slow or broken
//! board only ever stalls its own task. Every byte written comes from the driver
//! ([`BoardDriver`]); this task does the I/O.
//!
//! Handshake: the driver's handshake bytes (DGT: reset to IDLE, version, serial number), its
//! retry bytes every 2 s until the version and serial number are in; then the board is known by
//! its serial number and its capture is opened; then the driver's start bytes (DGT: update mode
//! and a board dump, which the core compares with the game: a move made while the board was
//! away is recovered when it is one legal move away) and the clock probe. Bytes exchanged
//! before the serial number is known are kept and written to the capture once it is.
//!
//! Once streaming, the [`Link`] state machine keeps the link right (see [`super::link`]):
//! keep-alive (after `keepalive` of silence the serial number is asked for; a link silent for
//! twice that is dead; bytes of a long EE dump count as life), board dumps after bad frames,
//! after field updates that settle on a board the game does not explain, and after quiet
//! spells (the DGT protocol has no checksums: a lost field update is repaired by the dump),
//! a board that reset with its port open put back into update mode, and a Bluetooth board's
//! battery asked for. Every such decision is logged and noted in the capture.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;
use tokio::time::Instant;

use super::Ctx;
use super::board::BoardState;
use super::clock::ClockQueue;
use super::link::{Link, LinkConfig, LinkKind, Note};
use crate::capture::RecordKind;
use crate::core::event::{CoreEvent, EventKind};
use crate::core::observation::Observation;
use crate::driver::dgt::ClockCommand;
use crate::driver::{self, BoardDriver, Decoder, Message, SessionMessage};
use crate::output::LinkState;

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

/// How one session on an open port ended.
#[derive(Debug)]
enum SessionEnd {
    Stopped,
    NotABoard,
    Lost(String),
}

/// Where a port comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Configured (file or `--port`): retried forever, even while the node is missing.
    Configured {
        /// The driver to serve it with (`<driver>:<path>`; the default for a plain path).
        driver: &'static str,
    },
    /// Found on USB; `generic` ids are probed first. The task ends when the node goes away.
    Discovered {
        /// A shared USB id (FTDI): probe before serving.
        generic: bool,
        /// The driver whose USB id it carries.
        driver: &'static str,
    },
}

impl Origin {
    /// The driver to serve the port with.
    pub fn driver(self) -> &'static dyn BoardDriver {
        match self {
            Origin::Discovered { driver, .. } | Origin::Configured { driver } => {
                driver::by_name(driver)
            }
        }
        .unwrap_or_else(driver::default)
    }

    /// A configured port: `<driver>:<path>` (e.g. `millennium:/dev/ttyUSB0`) names its driver;
    /// any other path is served with the default driver.
    pub fn configured(spec: &Path) -> (PathBuf, Origin) {
        let named = spec
            .to_str()
            .and_then(|s| s.split_once(':'))
            .and_then(|(name, path)| Some((driver::by_name(name)?, path)));
        match named {
            Some((d, path)) => (PathBuf::from(path), Origin::Configured { driver: d.name() }),
            None => (
                spec.to_path_buf(),
                Origin::Configured {
                    driver: driver::DEFAULT_DRIVER,
                },
            ),
        }
    }
}

/// Handshake tries before a generic device counts as not a board.
const PROBE_TRIES: u32 = 2;
/// Handshake tries before a board's port is reopened.
const HANDSHAKE_TRIES: u32 = 5;
/// Time between handshake tries.
const HANDSHAKE_RETRY: Duration = Duration::from_secs(2);
/// A write that takes longer than this means a dead link.
const WRITE_TIMEOUT: Duration = Duration::from_secs(3);
/// Period of the core's settle decisions and of the clock queue.
const TICK: Duration = Duration::from_millis(100);

/// Serves one port until told to stop (or, for discovered ports, until it goes away).
pub async fn serve_port(
    ctx: Arc<Ctx>,
    path: PathBuf,
    origin: Origin,
    mut stop: watch::Receiver<bool>,
) -> PortEnd {
    let mut backoff = Duration::from_millis(250);
    let mut failing_since: Option<String> = None;
    loop {
        if *stop.borrow() {
            return PortEnd::Stopped;
        }
        let opened = super::serial::open(&path, origin.driver().line());
        match opened {
            Ok(port) => {
                let canonical = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                if !ctx.claim_port(&canonical) {
                    tracing::debug!("{}: already served under another name", path.display());
                    drop(port);
                } else {
                    failing_since = None;
                    let started = Instant::now();
                    let end = session(&ctx, &path, origin, port, &mut stop).await;
                    ctx.release_port(&canonical);
                    match end {
                        SessionEnd::Stopped => return PortEnd::Stopped,
                        SessionEnd::NotABoard => {
                            tracing::info!(
                                "{}: not a {} board; left alone",
                                path.display(),
                                origin.driver().name()
                            );
                            return PortEnd::NotABoard;
                        }
                        SessionEnd::Lost(why) => {
                            tracing::warn!("{}: link lost: {why}", path.display());
                            if started.elapsed() > Duration::from_secs(30) {
                                backoff = Duration::from_millis(250);
                            }
                        }
                    }
                }
            }
            Err(e) => {
                if matches!(origin, Origin::Discovered { .. }) && !path.exists() {
                    return PortEnd::Gone;
                }
                let msg = e.to_string();
                if failing_since.as_deref() != Some(&msg) {
                    tracing::info!("{}: cannot open ({msg}); retrying", path.display());
                    failing_since = Some(msg);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => return PortEnd::Stopped,
        }
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

/// Writes `bytes` to the port, with a timeout.
async fn write<W: AsyncWrite + Unpin>(w: &mut W, bytes: &[u8]) -> Result<(), String> {
    match tokio::time::timeout(WRITE_TIMEOUT, async {
        w.write_all(bytes).await?;
        w.flush().await
    })
    .await
    {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("write: {e}")),
        Err(_) => Err("write timed out".into()),
    }
}

type Board = Arc<Mutex<BoardState>>;

fn lock(b: &Board) -> std::sync::MutexGuard<'_, BoardState> {
    b.lock().unwrap_or_else(|e| e.into_inner())
}

/// State of a session once the board is known.
struct Live {
    id: String,
    board: Board,
    clock: ClockQueue,
    /// When to send END TEXT (a text is showing).
    text_until: Option<Instant>,
    kind: LinkKind,
}

async fn session<S>(
    ctx: &Arc<Ctx>,
    path: &Path,
    origin: Origin,
    port: S,
    stop: &mut watch::Receiver<bool>,
) -> SessionEnd
where
    S: tokio::io::AsyncRead + AsyncWrite + Unpin,
{
    let (mut rd, mut wr) = tokio::io::split(port);
    let driver = origin.driver();
    let mut dec = driver.decoder();
    let mut msgs = Vec::new();
    let mut buf = vec![0u8; 4096];
    // Before the board is known: (when, record) kept for its capture.
    let mut early: Vec<(Instant, RecordKind)> = Vec::new();
    let hello = driver.handshake();
    early.push((Instant::now(), RecordKind::Tx(hello.to_vec())));
    if let Err(e) = write(&mut wr, &hello).await {
        return SessionEnd::Lost(e);
    }
    let tries_max = match origin {
        Origin::Discovered { generic: true, .. } => PROBE_TRIES,
        _ => HANDSHAKE_TRIES,
    };
    let mut tries = 1;
    let mut next_try = Instant::now() + HANDSHAKE_RETRY;
    let (mut version, mut serial) = (None, None);
    let serial = loop {
        if let (Some(_), Some(s)) = (&version, &serial) {
            break String::clone(s);
        }
        if version.is_some() && serial.is_none() && !driver.reports_serial() {
            // A board whose protocol has no serial number: known by its port.
            serial = Some(port_serial(path));
            continue;
        }
        tokio::select! {
            r = rd.read(&mut buf) => match r {
                Ok(0) => return SessionEnd::Lost("end of file".into()),
                Ok(n) => {
                    early.push((Instant::now(), RecordKind::Rx(buf[..n].to_vec())));
                    dec.decode(&buf[..n], &mut msgs);
                    for m in msgs.drain(..) {
                        match m {
                            Message::Session(SessionMessage::Version { major, minor }) => {
                                version = Some((major, minor))
                            }
                            Message::Session(SessionMessage::Serial(s)) => serial = Some(s),
                            _ => {}
                        }
                    }
                }
                Err(e) => return SessionEnd::Lost(format!("read: {e}")),
            },
            _ = tokio::time::sleep_until(next_try) => {
                if version.is_some() && serial.is_none() && tries >= 3 {
                    // A board that answers everything but its serial number: known by its port.
                    tracing::warn!("{}: no serial number; named after the port", path.display());
                    serial = Some(port_serial(path));
                    continue;
                }
                if tries >= tries_max {
                    return match origin {
                        Origin::Discovered { generic: true, .. } => SessionEnd::NotABoard,
                        _ => SessionEnd::Lost("no answer to the handshake".into()),
                    };
                }
                tries += 1;
                next_try = Instant::now() + HANDSHAKE_RETRY;
                let again = driver.handshake_retry();
                early.push((Instant::now(), RecordKind::Tx(again.to_vec())));
                if let Err(e) = write(&mut wr, &again).await {
                    return SessionEnd::Lost(e);
                }
            }
            _ = stop.changed() => return SessionEnd::Stopped,
        }
    };
    let (major, minor) = version.unwrap_or_default();
    let (id, mut meta) = ctx.identify(driver.name(), &serial);
    meta.driver = Some(driver.name());
    let kind = LinkKind::of_path(path);
    let board = match ctx.board(&id, meta, kind) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!("{id}: cannot open its capture: {e}");
            return SessionEnd::Lost(format!("capture: {e}"));
        }
    };
    let session_id = ctx.new_session();
    let port_name = path.display().to_string();
    {
        let mut b = lock(&board);
        b.claim(session_id);
        let now = Instant::now();
        let base = b.now();
        let result: io::Result<()> = (|| {
            for (at, kind) in early.drain(..) {
                let t = base - now.duration_since(at).as_micros() as i64;
                match kind {
                    RecordKind::Tx(bytes) => b.tx(t, &bytes)?,
                    RecordKind::Rx(bytes) => {
                        b.rx(t, &bytes, &ctx.hub)?;
                    }
                    _ => {}
                }
            }
            b.note(&format!(
                "board version {major}.{minor}, {} link",
                kind.name()
            ))?;
            b.set_connection(LinkState::Active, Some(&port_name), &ctx.hub)
        })();
        if let Err(e) = result {
            return SessionEnd::Lost(format!("capture: {e}"));
        }
    }
    tracing::info!(
        "{id}: connected on {} (serial {serial}, version {major}.{minor}, {} link)",
        path.display(),
        kind.name()
    );
    let mut live = Live {
        id: id.clone(),
        board,
        clock: ClockQueue::new(),
        text_until: None,
        kind,
    };
    let end = stream(ctx, &mut live, &mut rd, &mut wr, &mut *dec, stop).await;
    let line = format!(
        "{} bytes dropped, {} bad frames on the line",
        dec.dropped_bytes(),
        dec.bad_frames()
    );
    {
        let mut b = lock(&live.board);
        let _ = b.note(&format!("session ended: {line}"));
        if b.release(session_id) {
            let _ = b.set_connection(LinkState::Disconnected, None, &ctx.hub);
        }
    }
    tracing::info!("{id}: disconnected from {} ({line})", path.display());
    end
}

/// The name of a board that tells no serial number: after its port (`port-ttyUSB0`).
pub fn port_serial(path: &Path) -> String {
    let name = path
        .file_name()
        .map_or("port".into(), |n| n.to_string_lossy());
    format!("port-{}", crate::config::sanitize(&name))
}

/// Sends `bytes`: captured first, then written.
async fn send<W: AsyncWrite + Unpin>(live: &Live, wr: &mut W, bytes: &[u8]) -> Result<(), String> {
    {
        let mut b = lock(&live.board);
        let t = b.now();
        b.tx(t, bytes).map_err(|e| format!("capture: {e}"))?;
    }
    write(wr, bytes).await
}

async fn stream<R, W>(
    ctx: &Arc<Ctx>,
    live: &mut Live,
    rd: &mut R,
    wr: &mut W,
    dec: &mut dyn Decoder,
    stop: &mut watch::Receiver<bool>,
) -> SessionEnd
where
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let daemon = &ctx.config().daemon;
    let driver = lock(&live.board).driver();
    let cfg = LinkConfig::new(
        live.kind,
        Duration::from_secs(daemon.keepalive_secs),
        Duration::from_secs(daemon.dump_quiet_secs),
    );
    // Update mode and a dump after every (re)connection.
    if let Err(e) = send(live, wr, &driver.start()).await {
        return SessionEnd::Lost(e);
    }
    let mut link = Link::new(driver, cfg, std::time::Instant::now());
    let mut buf = vec![0u8; 4096];
    let mut msgs = Vec::new();
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut notes: Vec<Note> = Vec::new();
        tokio::select! {
            r = rd.read(&mut buf) => match r {
                Ok(0) => return SessionEnd::Lost("end of file".into()),
                Ok(n) => {
                    let now = std::time::Instant::now();
                    link.on_rx(now);
                    let bytes = &buf[..n];
                    let events = {
                        let mut b = lock(&live.board);
                        let t = b.now();
                        match b.rx(t, bytes, &ctx.hub) {
                            Ok(e) => e,
                            Err(e) => return SessionEnd::Lost(format!("capture: {e}")),
                        }
                    };
                    let bad = dec.bad_frames();
                    dec.decode(bytes, &mut msgs);
                    if dec.bad_frames() > bad {
                        link.on_bad_frame(now);
                    }
                    for m in msgs.drain(..) {
                        match &m {
                            Message::Session(SessionMessage::Driver(r)) => {
                                if let Some(a) = crate::driver::dgt::ClockAck::from_reply(r) {
                                    live.clock.on_ack(&a)
                                }
                            }
                            Message::Observation(Observation::ClockAbsent) => live.clock.no_clock(),
                            Message::Observation(Observation::Clock(_)) if live.clock.on_times() => {
                                tracing::info!(
                                    "{}: the clock sends times after saying \"no clock\": \
                                     probing it again",
                                    live.id
                                );
                            }
                            _ => {}
                        }
                        notes.extend(link.on_message(now, &m));
                    }
                    react(ctx, live, &events);
                }
                Err(e) => return SessionEnd::Lost(format!("read: {e}")),
            },
            _ = ticker.tick() => {
                let now = Instant::now();
                let events = match lock(&live.board).tick(&ctx.hub) {
                    Ok(e) => e,
                    Err(e) => return SessionEnd::Lost(format!("capture: {e}")),
                };
                react(ctx, live, &events);
                if live.text_until.is_some_and(|t| t <= now) {
                    live.text_until = None;
                    live.clock.push(ClockCommand::EndText);
                }
                let mut bytes = Vec::new();
                let board = &live.board;
                match link.poll(std::time::Instant::now(), |f| lock(board).explains(f), &mut bytes) {
                    Ok(note) => notes.extend(note),
                    Err(why) => return SessionEnd::Lost(why),
                }
                if !bytes.is_empty() {
                    out.push(bytes);
                }
            }
            _ = stop.changed() => return SessionEnd::Stopped,
        }
        for note in notes {
            if let Err(e) = report(live, &note) {
                return SessionEnd::Lost(format!("capture: {e}"));
            }
        }
        if let Some(bytes) = live.clock.poll(std::time::Instant::now()) {
            out.push(bytes);
        }
        for bytes in out {
            if let Err(e) = send(live, wr, &bytes).await {
                return SessionEnd::Lost(e);
            }
        }
    }
}

/// Logs a link note and writes it to the capture.
fn report(live: &Live, note: &Note) -> io::Result<()> {
    let id = &live.id;
    let text = match note {
        Note::Reset { silent_secs } => format!(
            "the board answers but has sent nothing for {silent_secs} s while its clock ran: \
             it has reset to IDLE; update mode set again, board dump asked for"
        ),
        Note::DumpDiffers { fields, first } => {
            let square = crate::core::sensed::Orientation::Normal.square_of(*first);
            format!(
                "board dump differs from the field updates received in {fields} field(s) \
                 (first: field {first}, {square} seen from White on a normal board): updates \
                 were lost; the game is reconciled with the dump"
            )
        }
        Note::Battery(b) => format!(
            "battery {}{}",
            b.percent.map_or("unknown".into(), |p| format!("{p}%")),
            match b.charging {
                Some(true) => ", charging",
                _ => "",
            }
        ),
    };
    match note {
        Note::Battery(_) => tracing::info!("{id}: {text}"),
        _ => tracing::warn!("{id}: {text}"),
    }
    lock(&live.board).note(&text)
}

/// Texts on a DGT 3000 for the events just published.
fn react(ctx: &Arc<Ctx>, live: &mut Live, events: &[CoreEvent]) {
    if events.is_empty() {
        return;
    }
    let cfg = ctx.config();
    let c = &cfg.clock;
    if !c.text || !live.clock.kind.takes_text() {
        return;
    }
    for e in events {
        let text = match &e.kind {
            EventKind::MoveMade { san, .. } if c.show_moves => san.clone(),
            EventKind::Irregularity { code, .. } if c.show_irregularities => {
                if *code == crate::core::vocab::IrregularityCode::IllegalMove {
                    "ILLEGAL".to_string()
                } else {
                    "ARBITER".to_string()
                }
            }
            _ => continue,
        };
        live.clock.push(ClockCommand::Ascii { text, beep: 0 });
        live.text_until = Some(Instant::now() + Duration::from_secs(c.text_secs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configured_ports_may_name_their_driver() {
        let (path, origin) = Origin::configured(Path::new("millennium:/dev/ttyUSB0"));
        assert_eq!(path, Path::new("/dev/ttyUSB0"));
        assert_eq!(origin.driver().name(), "millennium");
        let (path, origin) = Origin::configured(Path::new("/dev/ttyACM0"));
        assert_eq!(path, Path::new("/dev/ttyACM0"));
        assert_eq!(origin.driver().name(), "dgt");
    }
}
