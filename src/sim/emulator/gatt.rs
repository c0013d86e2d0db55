//! A Bluetooth LE board as its GATT server sees the host: writes come to a characteristic,
//! notifications leave from one. The stand-in BlueZ (`crate::sim::bluez`) serves a
//! [`GattBoard`] on its private bus, the way a real board is served by `bluetoothd`.

use crate::core::observation::Micros;
use crate::driver::GattProfile;

/// One notification: the characteristic (its UUID) and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// The UUID of the characteristic it comes from.
    pub char: &'static str,
    /// The value notified.
    pub bytes: Vec<u8>,
}

/// A characteristic of a board's GATT server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GattChar {
    /// Its UUID.
    pub uuid: &'static str,
    /// Its flags as BlueZ names them (`notify`, `write`, `write-without-response`, `read`).
    pub flags: &'static [&'static str],
}

/// A primary service of a board's GATT server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GattService {
    /// Its UUID.
    pub uuid: &'static str,
    /// Its characteristics.
    pub chars: &'static [GattChar],
}

/// An emulated BLE board: players playing a script on it, a GATT server to the host.
pub trait GattBoard: Send + 'static {
    /// The name it advertises.
    fn name(&self) -> &str;
    /// Its services and characteristics.
    fn profile(&self) -> &'static GattProfile;
    /// Its GATT server's services, as a host resolves them.
    fn services(&self) -> &'static [GattService];
    /// The host wrote `bytes` to `char` at script time `now`; notifications it causes go to
    /// `out`. A write the board does not take is counted ([`GattBoard::unknown_writes`]).
    fn write(&mut self, now: Micros, char: &str, bytes: &[u8], out: &mut Vec<Notification>);
    /// Plays the script up to `now`; the notifications due go to `out`.
    fn advance(&mut self, now: Micros, out: &mut Vec<Notification>);
    /// The host's link is gone (a disconnection, the board out of range): the board stops
    /// notifying until the host starts it again.
    fn disconnected(&mut self);
    /// Whether every step of the script has been played.
    fn finished(&self) -> bool;
    /// Plies settled at or before script time `t`.
    fn plies_settled(&self, t: Micros) -> usize;
    /// Script time after `k` more plies from `t`.
    fn after_plies(&self, t: Micros, k: usize) -> Micros;
    /// Bytes of the writes not taken (unknown command, wrong characteristic, wrong length; an
    /// empty write counts one): tests assert 0.
    fn unknown_writes(&self) -> u64;
    /// The first write not taken, for reports.
    fn unknown_sample(&self) -> Option<&(String, Vec<u8>)>;
    /// Writes taken.
    fn writes_taken(&self) -> u64;
}
