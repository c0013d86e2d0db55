//! Signals: SIGTERM and SIGINT shut the daemon down cleanly (captures flushed, boards told),
//! SIGHUP reloads the configuration.

use std::io;

use tokio::signal::unix::{Signal, SignalKind, signal};

/// What a signal asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// SIGTERM or SIGINT.
    Shutdown,
    /// SIGHUP.
    Reload,
}

/// The daemon's signal handlers.
#[derive(Debug)]
pub struct Signals {
    term: Signal,
    int: Signal,
    hup: Signal,
}

impl Signals {
    /// Installs the handlers (inside a tokio runtime).
    pub fn new() -> io::Result<Signals> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// The next request.
    pub async fn recv(&mut self) -> Request {
        tokio::select! {
            _ = self.term.recv() => Request::Shutdown,
            _ = self.int.recv() => Request::Shutdown,
            _ = self.hup.recv() => Request::Reload,
        }
    }
}
