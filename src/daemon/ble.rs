//! The Bluetooth LE port task: a board of a GATT family ([`crate::driver::Transport::Gatt`]),
//! found, connected and served through BlueZ with `bluer`. A port is a typed target
//! ([`BleTarget`]): `ble:AA:BB:CC:DD:EE:FF` (that board), `ble:name=Chessnut GO*` (the first
//! free board whose advertised name starts so), or `ble` (the first free board of the
//! family's name prefixes), after the family: `chessnut:ble:AA:BB:CC:DD:EE:FF`.
//!
//! Each round: look on every adapter (the boards BlueZ knows, then a scan) for a board the
//! target names that no other port serves, on an adapter with room (an adapter holds few
//! links: `daemon.ble_boards_per_adapter`, shown in health beside the boards it holds); drop
//! an orphaned link BlueZ kept from an earlier run (such a board never advertises again until
//! it is disconnected on the host); connect; wait for the services; subscribe to the
//! profile's notify characteristics; then serve it like any other port ([`board_task`]) over a
//! [`GattWire`]: each notification is a `notify` record of its characteristic, each command a
//! `write` record to the write characteristic. A board that vanishes is a lost link like a
//! pulled cable: its game resumes when it is back, after `daemon.ble_reconnect_secs` (a
//! Chessnut GO reconnected 2 s after a hang-up never streamed again; 8 s worked).
//!
//! Nothing here knows a board family: the driver's profile says what to look for and where.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bluer::{AdapterEvent, Device, DeviceEvent, DeviceProperty, Session, Uuid};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::board_task::{Origin, PortEnd, SessionEnd, serve_session};
use super::ctx::Ctx;
use super::wire::{WRITE_TIMEOUT, Wire};
use crate::capture::RecordKind;
use crate::driver::GattProfile;
use crate::output::bluetooth::{AdapterHealth, BluetoothHealth};

/// How long one scan for a board lasts before the next round.
const SCAN: Duration = Duration::from_secs(10);
/// How long connecting and resolving a board's services may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

pub use crate::driver::ble_target::{BleTarget, NotABleTarget};

/// The adapters as the BLE port tasks share them: boards held by each, ports searching.
#[derive(Debug, Default)]
pub struct BleRoom {
    state: Mutex<RoomState>,
}

#[derive(Debug, Default)]
struct RoomState {
    /// Adapter name → (address, boards held).
    adapters: BTreeMap<String, (String, usize)>,
    searching: BTreeMap<String, usize>,
    error: Option<String>,
}

impl BleRoom {
    fn lock(&self) -> std::sync::MutexGuard<'_, RoomState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, ctx: &Ctx) {
        let capacity = ctx.config().daemon.ble_boards_per_adapter;
        let s = self.lock();
        ctx.hub.set_bluetooth(Some(BluetoothHealth {
            adapters: s
                .adapters
                .iter()
                .map(|(name, (address, boards))| AdapterHealth {
                    name: name.clone(),
                    address: address.clone(),
                    boards: *boards,
                    capacity,
                })
                .collect(),
            searching: s.searching.keys().cloned().collect(),
            error: s.error.clone(),
        }));
    }

    /// Takes a place on `adapter` if it has room.
    fn take(&self, adapter: &str, capacity: usize) -> bool {
        let mut s = self.lock();
        let held = &mut s.adapters.entry(adapter.to_string()).or_default().1;
        if *held >= capacity {
            return false;
        }
        *held += 1;
        true
    }

    fn give_back(&self, adapter: &str) {
        if let Some((_, held)) = self.lock().adapters.get_mut(adapter) {
            *held = held.saturating_sub(1);
        }
    }

    fn seen(&self, adapter: &str, address: String) {
        self.lock()
            .adapters
            .entry(adapter.to_string())
            .or_default()
            .0 = address;
    }

    fn searching(&self, port: &str, yes: bool) {
        let mut s = self.lock();
        let n = s.searching.entry(port.to_string()).or_default();
        if yes {
            *n += 1;
        } else {
            *n = n.saturating_sub(1);
            if *n == 0 {
                s.searching.remove(port);
            }
        }
    }

    fn error(&self, why: Option<String>) {
        self.lock().error = why;
    }
}

/// What the forwarding tasks hand the wire.
enum Heard {
    Notify(&'static str, Vec<u8>),
    Lost(String),
}

/// A connected board's link: its notifications (forwarded by one task per characteristic and
/// one watching the device) and its write characteristic.
pub struct GattWire {
    heard: mpsc::Receiver<Heard>,
    write: bluer::gatt::remote::Characteristic,
    write_char: &'static str,
    mtu: Option<usize>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for GattWire {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Wire for GattWire {
    async fn recv(&mut self) -> Result<RecordKind, String> {
        match self.heard.recv().await {
            Some(Heard::Notify(char, bytes)) => Ok(RecordKind::Notify {
                char: char.to_string(),
                bytes,
            }),
            Some(Heard::Lost(why)) => Err(why),
            None => Err("the board's notifications ended".into()),
        }
    }

    fn record_of(&self, bytes: Vec<u8>) -> RecordKind {
        RecordKind::Write {
            char: self.write_char.to_string(),
            bytes,
        }
    }

    async fn send(&mut self, record: &RecordKind) -> Result<(), String> {
        let RecordKind::Write { bytes, .. } = record else {
            return Err(format!("a Bluetooth LE link cannot send {record:?}"));
        };
        match tokio::time::timeout(WRITE_TIMEOUT, self.write.write(bytes)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("write: {e}")),
            Err(_) => Err("write timed out".into()),
        }
    }

    fn cut_reason(&self, got: usize, needed: usize) -> String {
        let reported = self.mtu.map_or("BlueZ reports no MTU".into(), |m| {
            format!("BlueZ reports MTU {m}")
        });
        format!(
            "the Bluetooth LE link cut a {needed}-byte frame to {got} bytes: its ATT MTU is \
             too small ({reported}; a notification carries MTU - 3 bytes, so this board needs \
             MTU >= {}); no position is read from a cut frame",
            needed + 3
        )
    }
}

/// A board found, connected and subscribed.
struct Link {
    adapter: String,
    address: String,
    device: Device,
    wire: GattWire,
}

/// Why a round found no board to serve.
enum NoBoard {
    /// None free in range (keep looking, quietly).
    NotFound,
    /// Something is wrong that people must hear of.
    Failed(String),
}

fn uuid(s: &str) -> Result<Uuid, NoBoard> {
    Uuid::parse_str(s).map_err(|e| NoBoard::Failed(format!("bad UUID {s}: {e}")))
}

fn ble(e: bluer::Error) -> NoBoard {
    NoBoard::Failed(format!("BlueZ: {e}"))
}

/// The ATT MTU BlueZ reports (its `MTU` property) from `bluer`'s `Characteristic::mtu`, which
/// gives 5 bytes less (its `mtu_workaround`: what it deems safe to send at once), so that the
/// error of a cut frame names the MTU BlueZ reports (found by `tests/e2e_ble.rs`: a link of MTU
/// 23 was named "MTU 18").
fn att_mtu(bluer_mtu: usize) -> usize {
    bluer_mtu + 5
}

/// The key under which a board is claimed (one port serves it).
fn claim_key(address: &str) -> PathBuf {
    PathBuf::from(format!("ble:{address}"))
}

/// Serves one BLE port until told to stop: searches for a board the port names, serves a
/// session on it while it stays connected, and searches again (after
/// `daemon.ble_reconnect_secs` when a board was lost, after a second otherwise).
pub async fn serve_ble(
    ctx: Arc<Ctx>,
    path: PathBuf,
    origin: Origin,
    stop: CancellationToken,
) -> PortEnd {
    let driver = origin.driver();
    let Some(profile) = driver.transport().gatt() else {
        tracing::error!(
            "{}: the {} driver is not a Bluetooth LE family",
            path.display(),
            driver.name()
        );
        return PortEnd::NotABoard;
    };
    let target = match BleTarget::parse(&path) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!("{e}");
            return PortEnd::NotABoard;
        }
    };
    let spec = format!("{}:{}", driver.name(), path.display());
    let room = &ctx.ble;
    let mut failing: Option<String> = None;
    while !stop.is_cancelled() {
        room.searching(&spec, true);
        room.publish(&ctx);
        let found = tokio::select! {
            f = find_and_connect(&ctx, &target, profile) => Some(f),
            _ = stop.cancelled() => None,
        };
        room.searching(&spec, false);
        let mut wait = Duration::from_secs(1);
        match found {
            None => {
                room.publish(&ctx);
                break;
            }
            Some(Ok(link)) => {
                room.error(None);
                room.publish(&ctx);
                failing = None;
                match serve_link(&ctx, &spec, origin, link, &stop).await {
                    ControlFlow::Continue(after) => wait = after,
                    ControlFlow::Break(end) => return end,
                }
            }
            Some(Err(NoBoard::NotFound)) => {}
            Some(Err(NoBoard::Failed(why))) => {
                if failing.as_deref() != Some(&why) {
                    tracing::warn!("{spec}: {why}; trying again");
                    failing = Some(why.clone());
                }
                room.error(Some(why));
                room.publish(&ctx);
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = stop.cancelled() => break,
        }
    }
    PortEnd::Stopped
}

/// Serves a session on a connected board, then disconnects it (unless it went away by
/// itself) and gives back its adapter's room and its claim. Goes on (with the wait before the
/// next search) when the board was lost; breaks with the task's end otherwise.
async fn serve_link(
    ctx: &Arc<Ctx>,
    spec: &str,
    origin: Origin,
    link: Link,
    stop: &CancellationToken,
) -> ControlFlow<PortEnd, Duration> {
    let Link {
        adapter,
        address,
        device,
        wire,
    } = link;
    let name = PathBuf::from(format!("ble:{address}"));
    tracing::info!("{spec}: board {address} connected through {adapter}");
    let end = serve_session(ctx, &name, origin, wire, stop).await;
    if !matches!(end, SessionEnd::Lost(_)) || device.is_connected().await.unwrap_or(false) {
        let _ = device.disconnect().await;
    }
    ctx.ble.give_back(&adapter);
    ctx.release_port(&claim_key(&address));
    ctx.ble.publish(ctx);
    match end {
        SessionEnd::Stopped => ControlFlow::Break(PortEnd::Stopped),
        SessionEnd::NotABoard => ControlFlow::Break(PortEnd::NotABoard),
        SessionEnd::Lost(why) => {
            tracing::warn!("{spec}: board {address} lost: {why}");
            ControlFlow::Continue(Duration::from_secs(ctx.config().daemon.ble_reconnect_secs))
        }
    }
}

/// One round: a free board the target names, on an adapter with room, connected and
/// subscribed (claimed: no other port takes it meanwhile).
async fn find_and_connect(
    ctx: &Arc<Ctx>,
    target: &BleTarget,
    profile: &'static GattProfile,
) -> Result<Link, NoBoard> {
    let session = Session::new().await.map_err(ble)?;
    let names = session.adapter_names().await.map_err(ble)?;
    if names.is_empty() {
        return Err(NoBoard::Failed("no Bluetooth adapter".into()));
    }
    let capacity = ctx.config().daemon.ble_boards_per_adapter;
    let mut adapters = Vec::new();
    for name in &names {
        let a = session.adapter(name).map_err(ble)?;
        if let Ok(addr) = a.address().await {
            ctx.ble.seen(name, addr.to_string());
        }
        adapters.push(a);
    }
    // Scan on every adapter at once (the boards BlueZ already knows come first).
    let mut events = Vec::new();
    for a in &adapters {
        match a.discover_devices().await {
            Ok(s) => {
                let name = a.name().to_string();
                events.push(s.map(move |e| (name.clone(), e)).boxed());
            }
            Err(e) => tracing::debug!("{}: no scan: {e}", a.name()),
        }
    }
    if events.is_empty() {
        return Err(NoBoard::Failed("no adapter could scan".into()));
    }
    let mut merged = futures_util::stream::select_all(events);
    let deadline = tokio::time::Instant::now() + SCAN;
    let mut full = false;
    loop {
        let next = tokio::time::timeout_at(deadline, merged.next()).await;
        let Ok(Some((adapter_name, AdapterEvent::DeviceAdded(address)))) = next else {
            match next {
                Ok(Some(_)) => continue,
                _ if full => {
                    return Err(NoBoard::Failed(format!(
                        "every adapter holds its {capacity} boards (daemon.ble_boards_per_adapter): add an adapter"
                    )));
                }
                _ => return Err(NoBoard::NotFound),
            }
        };
        let Some(adapter) = adapters.iter().find(|a| a.name() == adapter_name) else {
            continue;
        };
        let Ok(device) = adapter.device(address) else {
            continue;
        };
        let name = device.name().await.ok().flatten();
        let text = address.to_string();
        if !target.matches(profile, &text, name.as_deref()) {
            continue;
        }
        let key = claim_key(&text);
        if !ctx.claim_port(&key) {
            continue;
        }
        if !ctx.ble.take(&adapter_name, capacity) {
            ctx.release_port(&key);
            full = true;
            continue;
        }
        drop(merged);
        return match connect(device, profile, &adapter_name).await {
            Ok(link) => Ok(link),
            Err(e) => {
                ctx.ble.give_back(&adapter_name);
                ctx.release_port(&key);
                Err(e)
            }
        };
    }
}

/// Connects `device` (dropping an orphaned link first), waits for its services and subscribes
/// to the profile's notify characteristics; a board connected but not subscribed is
/// disconnected again.
async fn connect(
    device: Device,
    profile: &'static GattProfile,
    adapter: &str,
) -> Result<Link, NoBoard> {
    let address = device.address().to_string();
    connect_resolved(&device, &address).await?;
    match subscribe(&device, &address, profile).await {
        Ok(wire) => Ok(Link {
            adapter: adapter.to_string(),
            address,
            device,
            wire,
        }),
        Err(e) => {
            let _ = device.disconnect().await;
            Err(e)
        }
    }
}

/// Connects `device`, dropping an orphaned link to it first, and waits until BlueZ has
/// resolved its services (each within [`CONNECT_TIMEOUT`]).
async fn connect_resolved(device: &Device, address: &str) -> Result<(), NoBoard> {
    if device.is_connected().await.unwrap_or(false) {
        tracing::info!("{address}: an orphaned link to it is dropped first");
        let _ = device.disconnect().await;
    }
    let timed = |what: &str| NoBoard::Failed(format!("{address}: {what} timed out"));
    match tokio::time::timeout(CONNECT_TIMEOUT, device.connect()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(NoBoard::Failed(format!("{address}: connect: {e}"))),
        Err(_) => return Err(timed("connect")),
    }
    let mut device_events = device.events().await.map_err(ble)?;
    let resolved = async {
        while !device.is_services_resolved().await.unwrap_or(false) {
            if device_events.next().await.is_none() {
                break;
            }
        }
    };
    if tokio::time::timeout(CONNECT_TIMEOUT, resolved)
        .await
        .is_err()
    {
        let _ = device.disconnect().await;
        return Err(timed("resolving its services"));
    }
    Ok(())
}

/// The wire to a connected board: the profile's write characteristic, and its notifications
/// and its disconnection heard on one channel (one forwarding task each).
async fn subscribe(
    device: &Device,
    address: &str,
    profile: &'static GattProfile,
) -> Result<GattWire, NoBoard> {
    let mut chars = Vec::new();
    for s in device.services().await.map_err(ble)? {
        for c in s.characteristics().await.map_err(ble)? {
            if let Ok(u) = c.uuid().await {
                chars.push((u, c));
            }
        }
    }
    let find = |u: &str| -> Result<bluer::gatt::remote::Characteristic, NoBoard> {
        let want = uuid(u)?;
        chars
            .iter()
            .find(|(have, _)| *have == want)
            .map(|(_, c)| c.clone())
            .ok_or_else(|| NoBoard::Failed(format!("{address}: no characteristic {u}")))
    };
    let write = find(profile.write)?;
    let (tx, heard) = mpsc::channel(1024);
    let mut tasks = Vec::new();
    let mut mtu = write.mtu().await.ok().map(att_mtu);
    for &n in profile.notify {
        let c = find(n)?;
        if mtu.is_none() {
            mtu = c.mtu().await.ok().map(att_mtu);
        }
        let stream = c
            .notify()
            .await
            .map_err(|e| NoBoard::Failed(format!("{address}: subscribe to {n}: {e}")))?;
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = Box::pin(stream);
            while let Some(v) = stream.next().await {
                if tx.send(Heard::Notify(n, v)).await.is_err() {
                    return;
                }
            }
        }));
    }
    let mut events = device.events().await.map_err(ble)?;
    tasks.push(tokio::spawn(async move {
        while let Some(e) = events.next().await {
            if let DeviceEvent::PropertyChanged(DeviceProperty::Connected(false)) = e {
                let _ = tx.send(Heard::Lost("the board disconnected".into())).await;
                return;
            }
        }
    }));
    Ok(GattWire {
        heard,
        write,
        write_char: profile.write,
        mtu,
        tasks,
    })
}
