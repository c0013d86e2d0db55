//! A stand-in BlueZ: emulated Bluetooth LE boards ([`GattBoard`]s) served as `org.bluez` on a
//! private D-Bus, so that the daemon's real BLE path (`bluer`, `src/daemon/ble.rs`) meets them
//! as it would meet boards through `bluetoothd`. The tests run it in their own process and start
//! the daemon with `DBUS_SYSTEM_BUS_ADDRESS` set to [`BlueZ::bus_address`].
//!
//! [`PrivateBus`] is a `dbus-daemon` (Debian package `dbus`) with a generated configuration: a
//! system bus listening on a unix socket in a scratch directory, every connection, name and
//! message allowed. Without `dbus-daemon` [`BlueZ::start`] fails, saying so.
//!
//! What is served, after BlueZ's D-Bus API (`doc/org.bluez.*.rst`), as far as a host's client
//! uses it: the object manager at `/` (`GetManagedObjects`, `InterfacesAdded`,
//! `InterfacesRemoved`); one adapter, `/org/bluez/hci0` (`org.bluez.Adapter1`: `Address`,
//! `Name`, `Alias`, `Powered`, `Discovering`, `UUIDs`; `StartDiscovery`, `StopDiscovery` per
//! client as BlueZ counts them, `SetDiscoveryFilter`, `RemoveDevice`); per board in range a
//! `org.bluez.Device1` (`Address`, `AddressType`, `Name`, `Alias`, `Connected`,
//! `ServicesResolved`, `UUIDs`, `RSSI`, `Adapter`, `Paired`, `Trusted`; `Connect`,
//! `Disconnect`); while a board is connected its services (`org.bluez.GattService1`: `UUID`,
//! `Primary`, `Device`, `Includes`) and characteristics (`org.bluez.GattCharacteristic1`:
//! `UUID`, `Service`, `Flags`, `Value`, `Notifying`, `MTU`; `ReadValue`, `WriteValue`,
//! `StartNotify`, `StopNotify`); `org.freedesktop.DBus.Properties` and `Introspectable` on every
//! object. Notifications are `PropertiesChanged` signals of `Value`, as BlueZ sends them to a
//! client that called `StartNotify` (`bluer`'s `Characteristic::notify`; it never asks for
//! `AcquireNotify` or `AcquireWrite` unless told to, and the daemon does not, so those are not
//! offered: no `NotifyAcquired`/`WriteAcquired` property, and a call is an unknown method).
//!
//! Strict like BlueZ: an unknown object, interface, method or property is an error; connecting a
//! connected board, disconnecting one not connected, `StartNotify` on a characteristic without
//! `notify`, a write while not connected: errors, each noted ([`BlueZ::refused`]). Every
//! `WriteValue` goes to the board, which counts the writes it does not take
//! ([`GattBoard::unknown_writes`], in [`BoardStatus`]).
//!
//! A board's link: its ATT MTU ([`BoardSpec::mtu`]); a notification carries at most MTU − 3
//! bytes, so a board with the default MTU of 23 delivers every frame cut to 20 bytes. A board
//! can go out of range at a set point of its script ([`BlueZ::drop_out_after`]: `Connected`
//! and `ServicesResolved` false, its services and the device object removed) and come back
//! ([`BlueZ::come_back`]: the device object added again, as a scan sees it).
//!
//! Time: each board's script runs at `speed` × real time while a host is connected to it,
//! from the host's first write on (the players wait for the host, as with the pseudo-terminal
//! runner, `super::emulator::runner`), and holds while the board is away or disconnected. The
//! service thread paces the boards in steps of the frame interval at that speed (at least 1 ms,
//! at most 20 ms); the frames due in a step are notified in order.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use dbus::arg::{PropMap, RefArg, Variant};
use dbus::blocking::stdintf::org_freedesktop_dbus::PropertiesPropertiesChanged;
use dbus::channel::{Channel, Sender};
use dbus::message::{MessageType, SignalArgs};
use dbus::{Message, MethodErr};
use dbus_crossroads::{Crossroads, IfaceBuilder, IfaceToken};
use tokio::sync::watch;

use super::emulator::gatt::{GattBoard, Notification};
use crate::core::observation::Micros;

/// The adapter's object path.
pub const ADAPTER_PATH: &str = "/org/bluez/hci0";
/// The adapter's address.
pub const ADAPTER_ADDRESS: &str = "00:1A:7D:DA:71:13";
/// Script time between two frames of an emulated board (about ten a second): the pace of the
/// service thread's steps at speed 1.
const FRAME_STEP: Micros = 100_000;

const ADAPTER_IFACE: &str = "org.bluez.Adapter1";
const DEVICE_IFACE: &str = "org.bluez.Device1";
const SERVICE_IFACE: &str = "org.bluez.GattService1";
const CHAR_IFACE: &str = "org.bluez.GattCharacteristic1";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Where a program is: the directories of `PATH`, then `/usr/bin`, `/usr/sbin`, `/bin`.
fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin", "/usr/sbin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A private `dbus-daemon`, stopped when dropped.
#[derive(Debug)]
pub struct PrivateBus {
    child: Child,
    address: String,
    socket: PathBuf,
}

impl PrivateBus {
    /// Starts a bus of type system listening on `dir/bus`, with its configuration in
    /// `dir/bus.conf` and its log in `dir/bus.log`; returns once it takes connections. Fails,
    /// saying why, when `dbus-daemon` is not installed or does not start.
    pub fn start(dir: &Path) -> Result<PrivateBus, String> {
        let exe = find_program("dbus-daemon").ok_or_else(|| {
            "dbus-daemon is not installed (Debian package dbus): the stand-in BlueZ needs it \
             for its private bus"
                .to_string()
        })?;
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let socket = dir.join("bus");
        let config = dir.join("bus.conf");
        let _ = std::fs::remove_file(&socket);
        let text = format!(
            "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN\"\n \
             \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n\
             <busconfig>\n  <type>system</type>\n  <listen>unix:path={}</listen>\n  \
             <auth>EXTERNAL</auth>\n  <policy context=\"default\">\n    \
             <allow user=\"*\"/>\n    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n    \
             <allow eavesdrop=\"true\"/>\n    <allow own=\"*\"/>\n  </policy>\n</busconfig>\n",
            socket.display()
        );
        std::fs::write(&config, text).map_err(|e| format!("{}: {e}", config.display()))?;
        let log_path = dir.join("bus.log");
        let log =
            std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut child = Command::new(&exe)
            .arg(format!("--config-file={}", config.display()))
            .args(["--nofork", "--nopidfile", "--print-address=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        // It prints its address once it listens.
        let mut line = String::new();
        let read = child
            .stdout
            .take()
            .map(|out| BufReader::new(out).read_line(&mut line));
        if !matches!(read, Some(Ok(n)) if n > 0) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "dbus-daemon did not start: {}",
                std::fs::read_to_string(&log_path)
                    .unwrap_or_default()
                    .trim()
            ));
        }
        Ok(PrivateBus {
            child,
            address: line.trim().to_string(),
            socket,
        })
    }

    /// Its address (`unix:path=…,guid=…`), for `DBUS_SYSTEM_BUS_ADDRESS`.
    pub fn address(&self) -> &str {
        &self.address
    }
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// One board the stand-in serves.
pub struct BoardSpec {
    /// The emulated board.
    pub board: Box<dyn GattBoard>,
    /// Its address (`AA:BB:CC:DD:EE:FF`).
    pub address: String,
    /// The ATT MTU of its link: a notification carries at most MTU − 3 bytes (23, BlueZ's
    /// default before an exchange, cuts a Chessnut's 38-byte frame to 20 bytes).
    pub mtu: u16,
}

/// What a board has done, as the tests read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoardStatus {
    /// Its address.
    pub address: String,
    /// In range (its device object is on the bus).
    pub present: bool,
    /// A host is connected.
    pub connected: bool,
    /// Connections made by hosts.
    pub connections: u64,
    /// Its script time.
    pub script_time: Micros,
    /// Plies settled in its script by now.
    pub plies_settled: usize,
    /// Every step of its script has been played.
    pub finished: bool,
    /// Notifications sent (each a `PropertiesChanged` of `Value`).
    pub notifications: u64,
    /// Notifications cut to MTU − 3 bytes.
    pub cut: u64,
    /// Writes the board took.
    pub writes_taken: u64,
    /// Bytes of the writes the board did not take ([`GattBoard::unknown_writes`]): tests
    /// assert 0.
    pub unknown_writes: u64,
    /// The first write it did not take (characteristic, bytes).
    pub unknown_sample: Option<(String, Vec<u8>)>,
}

/// Where an object is: what the crossroads data of each path says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Root,
    Adapter,
    Device(usize),
    Service(usize, usize),
    Char(usize, usize),
}

#[derive(Debug)]
struct CharState {
    uuid: &'static str,
    flags: &'static [&'static str],
    service: usize,
    value: Vec<u8>,
    notifying: bool,
}

struct Board {
    em: Box<dyn GattBoard>,
    name: String,
    address: String,
    mtu: u16,
    present: bool,
    connected: bool,
    resolved: bool,
    services: Vec<&'static str>,
    chars: Vec<CharState>,
    /// Script time when its clock last stopped.
    script: Micros,
    /// When its clock started again (`None`: holding).
    since: Option<Instant>,
    drop_at: Option<Micros>,
    connections: u64,
    notifications: u64,
    cut: u64,
}

impl Board {
    fn path(&self) -> dbus::Path<'static> {
        device_path(&self.address)
    }

    fn now(&self, speed: f64) -> Micros {
        self.script
            + self
                .since
                .map_or(0, |s| (s.elapsed().as_secs_f64() * 1e6 * speed) as Micros)
    }

    fn hold(&mut self, speed: f64) {
        self.script = self.now(speed);
        self.since = None;
    }
}

fn device_path(address: &str) -> dbus::Path<'static> {
    dbus::Path::new(format!("{ADAPTER_PATH}/dev_{}", address.replace(':', "_")))
        .expect("an address makes a path")
}

fn service_path(address: &str, s: usize) -> dbus::Path<'static> {
    dbus::Path::new(format!(
        "{}/service{:04x}",
        device_path(address),
        0x10 * (s + 1)
    ))
    .expect("a valid path")
}

fn char_path(address: &str, s: usize, c: usize) -> dbus::Path<'static> {
    dbus::Path::new(format!(
        "{}/char{:04x}",
        service_path(address, s),
        0x10 * (s + 1) + 2 * (c + 1)
    ))
    .expect("a valid path")
}

/// Changes that need the object tree: made by the service thread between messages.
#[derive(Debug)]
enum Op {
    /// The board's services are resolved: their objects appear, then `ServicesResolved`.
    Resolve(usize),
    /// The link is gone: its services' objects go.
    Unresolve(usize),
    /// The board is in range: its device object appears.
    AddDevice(usize),
    /// The board is out of range: its device object goes.
    RemoveDevice(usize),
}

/// Messages to send, in order: signals from the world and from the object tree.
#[derive(Clone, Default)]
struct Outbox(Arc<Mutex<Vec<Message>>>);

impl Sender for Outbox {
    fn send(&self, msg: Message) -> Result<u32, ()> {
        lock(&self.0).push(msg);
        Ok(0)
    }
}

struct World {
    boards: Vec<Board>,
    speed: f64,
    out: Outbox,
    ops: Vec<Op>,
    refused: Vec<String>,
    /// Clients (unique names) that started discovery and have not stopped it.
    discovering: BTreeSet<String>,
}

type Shared = Arc<Mutex<World>>;

fn err(name: &str, text: impl Into<String>) -> MethodErr {
    MethodErr::from((format!("org.bluez.Error.{name}"), text.into()))
}

fn changed(
    path: &dbus::Path<'static>,
    iface: &str,
    props: Vec<(&str, Box<dyn RefArg>)>,
) -> Message {
    let mut m = PropMap::new();
    for (k, v) in props {
        m.insert(k.to_string(), Variant(v));
    }
    PropertiesPropertiesChanged {
        interface_name: iface.to_string(),
        changed_properties: m,
        invalidated_properties: Vec::new(),
    }
    .to_emit_message(path)
}

impl World {
    fn emit(&self, m: Message) {
        let _ = self.out.send(m);
    }

    /// A refusal, noted, as the error BlueZ would answer.
    fn refuse(&mut self, name: &str, text: String) -> MethodErr {
        self.refused.push(format!("{name}: {text}"));
        err(name, text)
    }

    fn board(&self, i: usize) -> Result<&Board, MethodErr> {
        self.boards
            .get(i)
            .filter(|b| b.present)
            .ok_or_else(|| MethodErr::from(("org.freedesktop.DBus.Error.UnknownObject", "gone")))
    }

    fn set_discovering(&mut self, client: String, on: bool) -> Result<(), MethodErr> {
        let before = !self.discovering.is_empty();
        if on {
            self.discovering.insert(client);
        } else if !self.discovering.remove(&client) {
            return Err(self.refuse("Failed", "No discovery started".into()));
        }
        let after = !self.discovering.is_empty();
        if before != after {
            let path = dbus::Path::new(ADAPTER_PATH).expect("a valid path");
            self.emit(changed(
                &path,
                ADAPTER_IFACE,
                vec![("Discovering", Box::new(after))],
            ));
        }
        Ok(())
    }

    fn connect(&mut self, i: usize) -> Result<(), MethodErr> {
        let b = &mut self.boards[i];
        if b.connected {
            let why = format!("{} is connected already", b.address);
            return Err(self.refuse("AlreadyConnected", why));
        }
        b.connected = true;
        b.connections += 1;
        let path = b.path();
        self.emit(changed(
            &path,
            DEVICE_IFACE,
            vec![("Connected", Box::new(true))],
        ));
        self.ops.push(Op::Resolve(i));
        Ok(())
    }

    /// The link to board `i` is gone (the host hung up, or the board went away).
    fn link_down(&mut self, i: usize) {
        let speed = self.speed;
        let b = &mut self.boards[i];
        if !b.connected {
            return;
        }
        b.connected = false;
        b.resolved = false;
        for c in &mut b.chars {
            c.notifying = false;
        }
        b.hold(speed);
        b.em.disconnected();
        let path = b.path();
        self.emit(changed(
            &path,
            DEVICE_IFACE,
            vec![
                ("ServicesResolved", Box::new(false)),
                ("Connected", Box::new(false)),
            ],
        ));
        self.ops.push(Op::Unresolve(i));
    }

    fn notify(&mut self, i: usize, notes: Vec<Notification>) {
        let b = &mut self.boards[i];
        for n in notes {
            let Some(c) = b
                .chars
                .iter()
                .position(|c| c.uuid.eq_ignore_ascii_case(n.char))
            else {
                continue;
            };
            let room = usize::from(b.mtu.saturating_sub(3));
            let mut bytes = n.bytes;
            if bytes.len() > room {
                bytes.truncate(room);
                b.cut += 1;
            }
            let ch = &mut b.chars[c];
            ch.value = bytes.clone();
            if !ch.notifying {
                continue;
            }
            b.notifications += 1;
            let path = char_path(&b.address, ch.service, c);
            let _ = self
                .out
                .send(changed(&path, CHAR_IFACE, vec![("Value", Box::new(bytes))]));
        }
    }

    fn write(&mut self, i: usize, c: usize, value: Vec<u8>) -> Result<(), MethodErr> {
        let speed = self.speed;
        let b = &mut self.boards[i];
        let ch = &b.chars[c];
        let (uuid, writable) = (
            ch.uuid,
            ch.flags
                .iter()
                .any(|f| *f == "write" || *f == "write-without-response"),
        );
        if !b.connected {
            return Err(self.refuse("Failed", "Not connected".into()));
        }
        if b.since.is_none() {
            b.since = Some(Instant::now());
        }
        let now = b.now(speed);
        let mut notes = Vec::new();
        // Every write reaches the board, which counts what it does not take.
        b.em.write(now, uuid, &value, &mut notes);
        self.notify(i, notes);
        if !writable {
            return Err(self.refuse("NotPermitted", format!("{uuid}: write not permitted")));
        }
        Ok(())
    }

    /// One step: each board with a host plays its script up to now; a board due to go away
    /// goes at its point.
    fn step(&mut self) {
        let speed = self.speed;
        for i in 0..self.boards.len() {
            let b = &mut self.boards[i];
            if !b.connected || b.since.is_none() {
                continue;
            }
            let mut now = b.now(speed);
            let leave = b.drop_at.filter(|d| *d <= now);
            if let Some(d) = leave {
                now = d;
            }
            let mut notes = Vec::new();
            b.em.advance(now, &mut notes);
            self.notify(i, notes);
            if let Some(d) = leave {
                let b = &mut self.boards[i];
                b.drop_at = None;
                self.link_down(i);
                let b = &mut self.boards[i];
                b.script = d;
                b.present = false;
                self.ops.push(Op::RemoveDevice(i));
            }
        }
    }

    fn status(&self) -> Vec<BoardStatus> {
        self.boards
            .iter()
            .map(|b| {
                let t = b.now(self.speed);
                BoardStatus {
                    address: b.address.clone(),
                    present: b.present,
                    connected: b.connected,
                    connections: b.connections,
                    script_time: t,
                    plies_settled: b.em.plies_settled(t),
                    finished: b.em.finished(),
                    notifications: b.notifications,
                    cut: b.cut,
                    writes_taken: b.em.writes_taken(),
                    unknown_writes: b.em.unknown_writes(),
                    unknown_sample: b.em.unknown_sample().cloned(),
                }
            })
            .collect()
    }
}

/// A property of an interface: its name, type and getter, from the world.
macro_rules! prop {
    ($b:expr, $w:expr, $name:literal, $ty:ty, $f:expr) => {{
        let w = $w.clone();
        let f: fn(&World, Node) -> Result<$ty, MethodErr> = $f;
        $b.property::<$ty, _>($name)
            .get(move |_, n: &mut Node| f(&lock(&w), *n));
    }};
}

/// The board a node belongs to (`usize::MAX` for the root and the adapter).
fn dev(n: Node) -> usize {
    match n {
        Node::Device(i) | Node::Service(i, _) | Node::Char(i, _) => i,
        _ => usize::MAX,
    }
}

/// The board and characteristic of a characteristic's node, and the characteristic's index.
fn ch(w: &World, n: Node) -> Result<(&Board, &CharState, usize), MethodErr> {
    match n {
        Node::Char(i, c) => {
            let b = w.board(i)?;
            Ok((b, &b.chars[c], c))
        }
        _ => Err(MethodErr::no_property("characteristic")),
    }
}

/// Registers the interfaces; returns (adapter, device, service, characteristic) tokens.
fn register(
    cr: &mut Crossroads,
    w: &Shared,
) -> (
    IfaceToken<Node>,
    IfaceToken<Node>,
    IfaceToken<Node>,
    IfaceToken<Node>,
) {
    let adapter = cr.register(ADAPTER_IFACE, |b: &mut IfaceBuilder<Node>| {
        adapter_properties(b, w);
        adapter_methods(b, w);
    });
    let device = cr.register(DEVICE_IFACE, |b: &mut IfaceBuilder<Node>| {
        device_iface(b, w)
    });
    let service = cr.register(SERVICE_IFACE, |b: &mut IfaceBuilder<Node>| {
        service_iface(b, w)
    });
    let characteristic = cr.register(CHAR_IFACE, |b: &mut IfaceBuilder<Node>| {
        characteristic_properties(b, w);
        read_write_methods(b, w);
        notify_methods(b, w);
    });
    (adapter, device, service, characteristic)
}

/// `org.bluez.Adapter1`'s properties: one powered adapter, discovering while a client asked.
fn adapter_properties(b: &mut IfaceBuilder<Node>, w: &Shared) {
    prop!(b, w, "Address", String, |_, _| Ok(ADAPTER_ADDRESS.into()));
    prop!(b, w, "AddressType", String, |_, _| Ok("public".into()));
    prop!(b, w, "Name", String, |_, _| Ok("eboardd-standin".into()));
    prop!(b, w, "Alias", String, |_, _| Ok("eboardd-standin".into()));
    prop!(b, w, "Powered", bool, |_, _| Ok(true));
    prop!(b, w, "Discoverable", bool, |_, _| Ok(false));
    prop!(b, w, "Pairable", bool, |_, _| Ok(false));
    prop!(b, w, "Discovering", bool, |w, _| Ok(!w
        .discovering
        .is_empty()));
    prop!(b, w, "UUIDs", Vec<String>, |_, _| Ok(Vec::new()));
}

/// `org.bluez.Adapter1`'s methods: discovery per client, its filter checked, a device removed
/// (and seen again at once).
fn adapter_methods(b: &mut IfaceBuilder<Node>, w: &Shared) {
    let w1 = w.clone();
    b.method("StartDiscovery", (), (), move |ctx, _, ()| {
        let client = ctx
            .message()
            .sender()
            .map(|s| s.to_string())
            .unwrap_or_default();
        lock(&w1).set_discovering(client, true)
    });
    let w2 = w.clone();
    b.method("StopDiscovery", (), (), move |ctx, _, ()| {
        let client = ctx
            .message()
            .sender()
            .map(|s| s.to_string())
            .unwrap_or_default();
        lock(&w2).set_discovering(client, false)
    });
    let w3 = w.clone();
    b.method(
        "SetDiscoveryFilter",
        ("filter",),
        (),
        move |_, _, (filter,): (PropMap,)| {
            const KNOWN: [&str; 7] = [
                "UUIDs",
                "RSSI",
                "Pathloss",
                "Transport",
                "DuplicateData",
                "Discoverable",
                "Pattern",
            ];
            match filter.keys().find(|k| !KNOWN.contains(&String::as_str(k))) {
                Some(k) => Err(lock(&w3).refuse("InvalidArguments", format!("filter {k}"))),
                None => Ok(()),
            }
        },
    );
    let w4 = w.clone();
    b.method(
        "RemoveDevice",
        ("device",),
        (),
        move |_, _, (device,): (dbus::Path<'static>,)| {
            let mut w = lock(&w4);
            let Some(i) = w
                .boards
                .iter()
                .position(|b| b.present && b.path() == device)
            else {
                return Err(w.refuse("DoesNotExist", format!("no device {device}")));
            };
            // Forgotten, then seen again at once: it is still in range.
            w.link_down(i);
            w.ops.push(Op::RemoveDevice(i));
            w.ops.push(Op::AddDevice(i));
            Ok(())
        },
    );
}

/// `org.bluez.Device1`: a board in range, its properties, `Connect` and `Disconnect`.
fn device_iface(b: &mut IfaceBuilder<Node>, w: &Shared) {
    prop!(b, w, "Address", String, |w, n| Ok(w
        .board(dev(n))?
        .address
        .clone()));
    prop!(b, w, "AddressType", String, |_, _| Ok("random".into()));
    prop!(b, w, "Name", String, |w, n| Ok(w
        .board(dev(n))?
        .name
        .clone()));
    prop!(b, w, "Alias", String, |w, n| Ok(w
        .board(dev(n))?
        .name
        .clone()));
    prop!(b, w, "Connected", bool, |w, n| Ok(w
        .board(dev(n))?
        .connected));
    prop!(b, w, "ServicesResolved", bool, |w, n| Ok(w
        .board(dev(n))?
        .resolved));
    prop!(b, w, "UUIDs", Vec<String>, |w, n| Ok(w
        .board(dev(n))?
        .services
        .iter()
        .map(|s| s.to_string())
        .collect()));
    prop!(b, w, "RSSI", i16, |w, n| w.board(dev(n)).map(|_| -58));
    prop!(b, w, "Adapter", dbus::Path<'static>, |_, _| Ok(
        dbus::Path::new(ADAPTER_PATH).expect("a valid path")
    ));
    prop!(b, w, "Paired", bool, |_, _| Ok(false));
    prop!(b, w, "Trusted", bool, |_, _| Ok(false));
    prop!(b, w, "Blocked", bool, |_, _| Ok(false));
    prop!(b, w, "LegacyPairing", bool, |_, _| Ok(false));
    let w1 = w.clone();
    b.method("Connect", (), (), move |_, n: &mut Node, ()| {
        let mut w = lock(&w1);
        w.board(dev(*n))?;
        w.connect(dev(*n))
    });
    let w2 = w.clone();
    b.method("Disconnect", (), (), move |_, n: &mut Node, ()| {
        let mut w = lock(&w2);
        let i = dev(*n);
        if !w.board(i)?.connected {
            let why = format!("{} is not connected", w.boards[i].address);
            return Err(w.refuse("NotConnected", why));
        }
        w.link_down(i);
        Ok(())
    });
}

/// `org.bluez.GattService1`: a service of a connected board.
fn service_iface(b: &mut IfaceBuilder<Node>, w: &Shared) {
    prop!(b, w, "UUID", String, |w, n| match n {
        Node::Service(i, s) => Ok(w.board(i)?.services[s].to_string()),
        _ => Err(MethodErr::no_property("UUID")),
    });
    prop!(b, w, "Primary", bool, |_, _| Ok(true));
    prop!(b, w, "Device", dbus::Path<'static>, |w, n| Ok(w
        .board(dev(n))?
        .path()));
    prop!(b, w, "Includes", Vec<dbus::Path<'static>>, |_, _| Ok(
        Vec::new()
    ));
}

/// `org.bluez.GattCharacteristic1`'s properties.
fn characteristic_properties(b: &mut IfaceBuilder<Node>, w: &Shared) {
    prop!(b, w, "UUID", String, |w, n| Ok(ch(w, n)?
        .1
        .uuid
        .to_string()));
    prop!(b, w, "Service", dbus::Path<'static>, |w, n| {
        let (b, c, _) = ch(w, n)?;
        Ok(service_path(&b.address, c.service))
    });
    prop!(b, w, "Flags", Vec<String>, |w, n| Ok(ch(w, n)?
        .1
        .flags
        .iter()
        .map(|f| f.to_string())
        .collect()));
    prop!(b, w, "Value", Vec<u8>, |w, n| Ok(ch(w, n)?.1.value.clone()));
    prop!(b, w, "Notifying", bool, |w, n| Ok(ch(w, n)?.1.notifying));
    prop!(b, w, "MTU", u16, |w, n| Ok(ch(w, n)?.0.mtu));
}

/// `ReadValue` and `WriteValue` of a characteristic (a write goes to the board).
fn read_write_methods(b: &mut IfaceBuilder<Node>, w: &Shared) {
    let w1 = w.clone();
    b.method(
        "ReadValue",
        ("options",),
        ("value",),
        move |_, n: &mut Node, (_options,): (PropMap,)| {
            let mut w = lock(&w1);
            let (_, c, _) = ch(&w, *n)?;
            if c.flags.contains(&"read") {
                return Ok((c.value.clone(),));
            }
            let why = format!("{}: read not permitted", c.uuid);
            Err(w.refuse("NotPermitted", why))
        },
    );
    let w2 = w.clone();
    b.method(
        "WriteValue",
        ("value", "options"),
        (),
        move |_, n: &mut Node, (value, _options): (Vec<u8>, PropMap)| {
            let mut w = lock(&w2);
            let (_, _, c) = ch(&w, *n)?;
            w.write(dev(*n), c, value)
        },
    );
}

/// `StartNotify` and `StopNotify` of a characteristic, as BlueZ answers them.
fn notify_methods(b: &mut IfaceBuilder<Node>, w: &Shared) {
    let w1 = w.clone();
    b.method("StartNotify", (), (), move |_, n: &mut Node, ()| {
        let mut w = lock(&w1);
        let (b, c, k) = ch(&w, *n)?;
        if !c.flags.contains(&"notify") {
            let why = format!("{}: no notify", c.uuid);
            return Err(w.refuse("NotSupported", why));
        }
        if !b.connected {
            return Err(w.refuse("NotConnected", "Not connected".into()));
        }
        if c.notifying {
            return Ok(());
        }
        let path = char_path(&b.address, c.service, k);
        w.boards[dev(*n)].chars[k].notifying = true;
        w.emit(changed(
            &path,
            CHAR_IFACE,
            vec![("Notifying", Box::new(true))],
        ));
        Ok(())
    });
    let w2 = w.clone();
    b.method("StopNotify", (), (), move |_, n: &mut Node, ()| {
        let mut w = lock(&w2);
        let (b, c, k) = ch(&w, *n)?;
        if !c.notifying {
            let why = format!("{}: No notify session started", c.uuid);
            return Err(w.refuse("Failed", why));
        }
        let path = char_path(&b.address, c.service, k);
        w.boards[dev(*n)].chars[k].notifying = false;
        w.emit(changed(
            &path,
            CHAR_IFACE,
            vec![("Notifying", Box::new(false))],
        ));
        Ok(())
    });
}

/// The object tree and what changes it.
struct Tree {
    cr: Crossroads,
    device: IfaceToken<Node>,
    service: IfaceToken<Node>,
    characteristic: IfaceToken<Node>,
}

impl Tree {
    /// Carries out the world's pending changes of the tree, in order.
    fn apply(&mut self, w: &Shared) {
        loop {
            let op = {
                let mut w = lock(w);
                if w.ops.is_empty() {
                    return;
                }
                w.ops.remove(0)
            };
            match op {
                Op::AddDevice(i) => {
                    let path = {
                        let mut w = lock(w);
                        w.boards[i].present = true;
                        w.boards[i].path()
                    };
                    self.cr.insert(path, &[self.device], Node::Device(i));
                }
                Op::RemoveDevice(i) => {
                    let path = lock(w).boards[i].path();
                    self.remove_gatt(w, i);
                    let _ = self.cr.remove::<Node>(&path);
                }
                Op::Resolve(i) => {
                    let (address, layout) = {
                        let w = lock(w);
                        let b = &w.boards[i];
                        if !b.connected {
                            continue;
                        }
                        let layout: Vec<(usize, usize)> = b
                            .chars
                            .iter()
                            .enumerate()
                            .map(|(k, c)| (c.service, k))
                            .collect();
                        (b.address.clone(), (b.services.len(), layout))
                    };
                    for s in 0..layout.0 {
                        self.cr.insert(
                            service_path(&address, s),
                            &[self.service],
                            Node::Service(i, s),
                        );
                        for &(_, k) in layout.1.iter().filter(|(cs, _)| *cs == s) {
                            self.cr.insert(
                                char_path(&address, s, k),
                                &[self.characteristic],
                                Node::Char(i, k),
                            );
                        }
                    }
                    let mut w = lock(w);
                    w.boards[i].resolved = true;
                    let path = w.boards[i].path();
                    w.emit(changed(
                        &path,
                        DEVICE_IFACE,
                        vec![("ServicesResolved", Box::new(true))],
                    ));
                }
                Op::Unresolve(i) => self.remove_gatt(w, i),
            }
        }
    }

    fn remove_gatt(&mut self, w: &Shared, i: usize) {
        let (address, layout): (String, Vec<(usize, usize)>) = {
            let w = lock(w);
            let b = &w.boards[i];
            (
                b.address.clone(),
                b.chars
                    .iter()
                    .enumerate()
                    .map(|(k, c)| (c.service, k))
                    .collect(),
            )
        };
        for &(s, k) in &layout {
            let _ = self.cr.remove::<Node>(&char_path(&address, s, k));
        }
        let services: BTreeSet<usize> = layout.iter().map(|(s, _)| *s).collect();
        for s in services {
            let _ = self.cr.remove::<Node>(&service_path(&address, s));
        }
    }
}

/// The stand-in BlueZ, running: a private bus and the service thread. Stopped when dropped.
pub struct BlueZ {
    world: Shared,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), String>>>,
    changes: watch::Receiver<u64>,
    // Dropped last: the service leaves the bus first.
    bus: PrivateBus,
}

/// Connects to the private bus and owns `org.bluez` on it (at once, or an error), subscribed
/// to the bus's `NameOwnerChanged` signals.
fn own_bluez_name(bus: &PrivateBus) -> Result<Channel, String> {
    let dbus_err = |e: dbus::Error| format!("the private bus: {e}");
    let mut ch = Channel::open_private(bus.address()).map_err(dbus_err)?;
    ch.register().map_err(dbus_err)?;
    let call = |member: &str| {
        Message::new_method_call(
            "org.freedesktop.DBus",
            "/org/freedesktop/DBus",
            "org.freedesktop.DBus",
            member,
        )
        .expect("a valid call")
    };
    // DBUS_NAME_FLAG_DO_NOT_QUEUE: owned at once, or an error.
    let reply = ch
        .send_with_reply_and_block(
            call("RequestName").append2("org.bluez", 4u32),
            Duration::from_secs(5),
        )
        .map_err(dbus_err)?;
    if reply.read1::<u32>().ok() != Some(1) {
        return Err("org.bluez is owned on the private bus already".into());
    }
    ch.send_with_reply_and_block(
        call("AddMatch")
            .append1("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged'"),
        Duration::from_secs(5),
    )
    .map_err(dbus_err)?;
    Ok(ch)
}

impl Board {
    /// A board the stand-in serves, out of range until the service starts.
    fn new(spec: BoardSpec) -> Board {
        let mut chars = Vec::new();
        for (s, svc) in spec.board.services().iter().enumerate() {
            for c in svc.chars {
                chars.push(CharState {
                    uuid: c.uuid,
                    flags: c.flags,
                    service: s,
                    value: Vec::new(),
                    notifying: false,
                });
            }
        }
        Board {
            name: spec.board.name().to_string(),
            services: spec.board.services().iter().map(|s| s.uuid).collect(),
            chars,
            em: spec.board,
            address: spec.address.to_ascii_uppercase(),
            mtu: spec.mtu,
            present: false,
            connected: false,
            resolved: false,
            script: 0,
            since: None,
            drop_at: None,
            connections: 0,
            notifications: 0,
            cut: 0,
        }
    }
}

impl BlueZ {
    /// Starts a private bus in `dir` and serves `boards` on it as `org.bluez`, their scripts at
    /// `speed` × real time; returns once the name is owned and every board is in range.
    pub fn start(dir: &Path, boards: Vec<BoardSpec>, speed: f64) -> Result<BlueZ, String> {
        let bus = PrivateBus::start(dir)?;
        let ch = own_bluez_name(&bus)?;

        let out = Outbox::default();
        let world: Shared = Arc::new(Mutex::new(World {
            boards: boards.into_iter().map(Board::new).collect(),
            speed: speed.max(1e-6),
            out: out.clone(),
            ops: Vec::new(),
            refused: Vec::new(),
            discovering: BTreeSet::new(),
        }));
        let mut cr = Crossroads::new();
        let (adapter, device, service, characteristic) = register(&mut cr, &world);
        let om = cr.object_manager::<Node>();
        cr.insert("/", &[om], Node::Root);
        cr.insert(ADAPTER_PATH, &[adapter], Node::Adapter);
        cr.set_object_manager_support(Some(Arc::new(out.clone())));
        let mut tree = Tree {
            cr,
            device,
            service,
            characteristic,
        };
        {
            let mut w = lock(&world);
            let n = w.boards.len();
            w.ops.extend((0..n).map(Op::AddDevice));
        }
        tree.apply(&world);
        // The boards' devices were there before anyone asked: nobody needs their signals.
        lock(&out.0).clear();

        let step = Duration::from_micros((FRAME_STEP as f64 / speed.max(1e-6)) as u64)
            .clamp(Duration::from_millis(1), Duration::from_millis(20));
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, changes) = watch::channel(0u64);
        let (w, st) = (world.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("bluez-standin".into())
            .spawn(move || serve(ch, tree, w, out, st, tx, step))
            .map_err(|e| format!("the stand-in's thread: {e}"))?;
        Ok(BlueZ {
            world,
            stop,
            thread: Some(thread),
            changes,
            bus,
        })
    }

    /// The private bus's address, for the daemon's `DBUS_SYSTEM_BUS_ADDRESS`.
    pub fn bus_address(&self) -> &str {
        self.bus.address()
    }

    /// Every board's status, in the order given.
    pub fn status(&self) -> Vec<BoardStatus> {
        lock(&self.world).status()
    }

    /// The calls refused as BlueZ would refuse them (error name: text), in order.
    pub fn refused(&self) -> Vec<String> {
        lock(&self.world).refused.clone()
    }

    /// Board `i` goes out of range once `plies` plies of its script are settled and before the
    /// next starts (its players hold while it is away).
    pub fn drop_out_after(&self, i: usize, plies: usize) {
        let mut w = lock(&self.world);
        let at = w.boards[i].em.after_plies(0, plies);
        w.boards[i].drop_at = Some(at);
    }

    /// Board `i` is in range again: its device object is back on the bus.
    pub fn come_back(&self, i: usize) {
        let mut w = lock(&self.world);
        if !w.boards[i].present {
            w.ops.push(Op::AddDevice(i));
        }
    }

    /// Waits until `pred(status)` holds, at most `timeout`; returns whether it held.
    pub async fn wait_for(
        &mut self,
        timeout: Duration,
        pred: impl Fn(&[BoardStatus]) -> bool,
    ) -> bool {
        let world = self.world.clone();
        tokio::time::timeout(
            timeout,
            self.changes.wait_for(|_| pred(&lock(&world).status())),
        )
        .await
        .is_ok_and(|r| r.is_ok())
    }

    /// Stops serving; returns every board's last status (an error if the service failed).
    pub fn stop(mut self) -> Result<Vec<BoardStatus>, String> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join()
                .map_err(|_| "the stand-in's thread panicked".to_string())??;
        }
        Ok(self.status())
    }
}

impl Drop for BlueZ {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The service thread: messages in, the boards stepped, signals out.
fn serve(
    ch: Channel,
    mut tree: Tree,
    w: Shared,
    out: Outbox,
    stop: Arc<AtomicBool>,
    tx: watch::Sender<u64>,
    step: Duration,
) -> Result<(), String> {
    let flush = |ch: &Channel| {
        let msgs: Vec<Message> = std::mem::take(&mut *lock(&out.0));
        for m in msgs {
            let _ = ch.send(m);
        }
        ch.flush();
    };
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        let wait = next.saturating_duration_since(Instant::now());
        ch.read_write(Some(wait))
            .map_err(|()| "the private bus closed".to_string())?;
        while let Some(msg) = ch.pop_message() {
            match msg.msg_type() {
                MessageType::MethodCall => {
                    let _ = tree.cr.handle_message(msg, &ch);
                    tree.apply(&w);
                    flush(&ch);
                }
                MessageType::Signal if msg.member().as_deref() == Some("NameOwnerChanged") => {
                    // A client gone: its discovery ends, as in BlueZ.
                    if let Ok((name, _, new)) = msg.read3::<String, String, String>()
                        && new.is_empty()
                    {
                        let mut world = lock(&w);
                        if world.discovering.contains(&name) {
                            let _ = world.set_discovering(name, false);
                        }
                    }
                }
                _ => {}
            }
        }
        if Instant::now() >= next {
            next += step;
            if next < Instant::now() {
                next = Instant::now() + step;
            }
            lock(&w).step();
            tree.apply(&w);
            flush(&ch);
            tx.send_modify(|n| *n += 1);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_bluez() {
        assert_eq!(
            &*device_path("AA:BB:CC:DD:EE:01"),
            "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01"
        );
        assert_eq!(
            &*char_path("AA:BB:CC:DD:EE:01", 1, 0),
            "/org/bluez/hci0/dev_AA_BB_CC_DD_EE_01/service0020/char0022"
        );
    }
}
