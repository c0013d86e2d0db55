//! The transport room's seam: what a port task reads from and writes to a board's link,
//! whatever carries it. A serial port is a byte stream ([`SerialWire`]); a Bluetooth LE board
//! is notifications from characteristics and writes to one (`super::ble`). The port task
//! ([`super::board_task`]) is written once against [`Wire`]: what comes in is the capture
//! record it becomes (`rx`, `notify`), what goes out likewise (`tx`, `write`), so the capture
//! holds exactly what crossed the link and replay reads it through the same path.

use std::future::Future;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};

use crate::capture::RecordKind;

/// A write that takes longer than this means a dead link.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(3);

/// One open link to a board (or a chain of boards).
pub trait Wire: Send {
    /// Waits for what the board says next, as the record it becomes (`Rx` or `Notify`); why
    /// the link is lost otherwise. Cancel-safe (it is raced against the port's timers).
    fn recv(&mut self) -> impl Future<Output = Result<RecordKind, String>> + Send;
    /// The record for bytes the session sends (`Tx`, or `Write` to the write characteristic).
    fn record_of(&self, bytes: Vec<u8>) -> RecordKind;
    /// Sends what `record` holds (with a timeout); why the link is lost otherwise.
    fn send(&mut self, record: &RecordKind) -> impl Future<Output = Result<(), String>> + Send;
    /// Why a frame of `needed` bytes arrived as `got`, in the link's terms (a BLE link names
    /// its MTU), for the error shown to people.
    fn cut_reason(&self, got: usize, needed: usize) -> String {
        format!("a {needed}-byte frame arrived as {got} bytes: no position is read from it")
    }
}

/// A serial port (USB, RS-232, rfcomm): bytes both ways.
pub struct SerialWire<S> {
    rd: ReadHalf<S>,
    wr: WriteHalf<S>,
    buf: Vec<u8>,
}

impl<S: AsyncRead + AsyncWrite> SerialWire<S> {
    /// The wire of an open port.
    pub fn new(port: S) -> SerialWire<S> {
        let (rd, wr) = tokio::io::split(port);
        SerialWire {
            rd,
            wr,
            buf: vec![0u8; 4096],
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Send + Unpin> Wire for SerialWire<S> {
    async fn recv(&mut self) -> Result<RecordKind, String> {
        match self.rd.read(&mut self.buf).await {
            Ok(0) => Err("end of file".into()),
            Ok(n) => Ok(RecordKind::Rx(self.buf[..n].to_vec())),
            Err(e) => Err(format!("read: {e}")),
        }
    }

    fn record_of(&self, bytes: Vec<u8>) -> RecordKind {
        RecordKind::Tx(bytes)
    }

    async fn send(&mut self, record: &RecordKind) -> Result<(), String> {
        let RecordKind::Tx(bytes) = record else {
            return Err(format!("a serial port cannot send {record:?}"));
        };
        match tokio::time::timeout(WRITE_TIMEOUT, async {
            self.wr.write_all(bytes).await?;
            self.wr.flush().await
        })
        .await
        {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("write: {e}")),
            Err(_) => Err("write timed out".into()),
        }
    }
}
