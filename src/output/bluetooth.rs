//! What health shows of the Bluetooth LE side: each adapter, how many boards it holds and how
//! many it is given at most (an adapter holds few links at once; the limit is configured, not
//! discovered by failing), and the BLE ports still looking for their board.

use serde::Serialize;

/// The Bluetooth LE adapters and the BLE ports, as health shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BluetoothHealth {
    /// Every adapter BlueZ has, in its order (`hci0`, `hci1`, ...).
    pub adapters: Vec<AdapterHealth>,
    /// BLE ports with no board connected yet (their spec, e.g. `chessnut:ble`).
    pub searching: Vec<String>,
    /// Why BLE cannot be used at all (no BlueZ on the system bus), if so.
    pub error: Option<String>,
}

/// One adapter.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AdapterHealth {
    /// Its name (`hci0`).
    pub name: String,
    /// Its address.
    pub address: String,
    /// Boards connected through it now.
    pub boards: usize,
    /// Boards it is given at most (`[bluetooth] boards_per_adapter`).
    pub capacity: usize,
}
