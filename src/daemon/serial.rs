//! Opening a board's serial port: 9600 baud, 8 data bits, no parity, 1 stop bit, no flow
//! control (`dgt-protocol.md` §1.1), exclusive, with stale input thrown away.

use std::io;
use std::path::Path;

use tokio_serial::{
    ClearBuffer, DataBits, FlowControl, Parity, SerialPort, SerialPortBuilderExt, SerialStream,
    StopBits,
};

/// The DGT line speed.
pub const BAUD: u32 = 9600;

/// Opens `path` for a DGT board. Whatever the port had buffered before (bytes sent while no
/// one was listening) is discarded: the handshake asks for the board's state afresh.
pub fn open(path: &Path) -> io::Result<SerialStream> {
    let port = tokio_serial::new(path.to_string_lossy(), BAUD)
        .data_bits(DataBits::Eight)
        .parity(Parity::None)
        .stop_bits(StopBits::One)
        .flow_control(FlowControl::None)
        .open_native_async()
        .map_err(io::Error::from)?;
    port.clear(ClearBuffer::Input).map_err(io::Error::from)?;
    Ok(port)
}
