//! Opening a board's serial port with its driver's line settings (no flow control),
//! exclusive, with stale input thrown away.

use std::io;
use std::path::Path;

use tokio_serial::{
    ClearBuffer, DataBits, FlowControl, Parity, SerialPort, SerialPortBuilderExt, SerialStream,
    StopBits,
};

use crate::driver::{self, LineSettings};

/// Opens `path` with the line settings `line`. Whatever the port had buffered before (bytes
/// sent while no one was listening) is discarded: the handshake asks for the board's state
/// afresh.
pub fn open(path: &Path, line: LineSettings) -> io::Result<SerialStream> {
    let port = tokio_serial::new(path.to_string_lossy(), line.baud)
        .data_bits(match line.data_bits {
            5 => DataBits::Five,
            6 => DataBits::Six,
            7 => DataBits::Seven,
            _ => DataBits::Eight,
        })
        .parity(match line.parity {
            driver::Parity::None => Parity::None,
            driver::Parity::Odd => Parity::Odd,
            driver::Parity::Even => Parity::Even,
        })
        .stop_bits(match line.stop_bits {
            2 => StopBits::Two,
            _ => StopBits::One,
        })
        .flow_control(FlowControl::None)
        .open_native_async()
        .map_err(io::Error::from)?;
    port.clear(ClearBuffer::Input).map_err(io::Error::from)?;
    Ok(port)
}
