//! The systemd notify protocol (`sd_notify(3)`), done by hand: datagrams of `KEY=VALUE` lines
//! to the unix socket named by `NOTIFY_SOCKET` (a path, or `@name` in the abstract namespace).
//! Without `NOTIFY_SOCKET` (not started by systemd) every call does nothing. Sends never block.

use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::Duration;

/// A connection to the service manager, if there is one.
#[derive(Debug)]
pub struct Notifier {
    target: Option<(UnixDatagram, SocketAddr)>,
}

impl Notifier {
    /// From the environment (`NOTIFY_SOCKET`).
    pub fn from_env() -> Notifier {
        let target = std::env::var_os("NOTIFY_SOCKET").and_then(|s| {
            let s = s.to_string_lossy().to_string();
            let addr = if let Some(name) = s.strip_prefix('@') {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(name.as_bytes()).ok()?
            } else {
                SocketAddr::from_pathname(&s).ok()?
            };
            let sock = UnixDatagram::unbound().ok()?;
            // A manager that stops reading must not stall the daemon's loop (a full queue
            // drops the notification, logged below).
            sock.set_nonblocking(true).ok()?;
            Some((sock, addr))
        });
        Notifier { target }
    }

    /// Whether a service manager is listening.
    pub fn enabled(&self) -> bool {
        self.target.is_some()
    }

    /// Sends a raw notification (`KEY=VALUE` lines); errors are logged, never fatal.
    pub fn notify(&self, state: &str) {
        if let Some((sock, addr)) = &self.target
            && let Err(e) = sock.send_to_addr(state.as_bytes(), addr)
        {
            tracing::debug!("sd_notify {state:?}: {e}");
        }
    }

    /// Start-up is complete.
    pub fn ready(&self) {
        self.notify("READY=1");
    }

    /// A one-line status shown by `systemctl status`.
    pub fn status(&self, text: &str) {
        self.notify(&format!("STATUS={}", text.replace('\n', " ")));
    }

    /// Still alive (for `WatchdogSec=`).
    pub fn watchdog(&self) {
        self.notify("WATCHDOG=1");
    }

    /// Reloading the configuration (followed by [`Notifier::ready`]).
    pub fn reloading(&self) {
        let mono = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
            .map(|t| t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1000)
            .unwrap_or(0);
        self.notify(&format!("RELOADING=1\nMONOTONIC_USEC={mono}"));
    }

    /// Shutting down.
    pub fn stopping(&self) {
        self.notify("STOPPING=1");
    }
}

/// How often to send `WATCHDOG=1`: half of `WATCHDOG_USEC`, when the watchdog is for this
/// process (`WATCHDOG_PID` unset or ours).
pub fn watchdog_interval() -> Option<Duration> {
    if let Some(pid) = std::env::var_os("WATCHDOG_PID")
        && pid.to_string_lossy().trim() != std::process::id().to_string()
    {
        return None;
    }
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.trim().parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_datagrams_to_a_path_socket() {
        let path = std::env::temp_dir().join(format!("eboardd-notify-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let server = UnixDatagram::bind(&path).unwrap();
        let n = Notifier {
            target: Some((
                UnixDatagram::unbound().unwrap(),
                SocketAddr::from_pathname(&path).unwrap(),
            )),
        };
        n.ready();
        n.status("2 boards");
        let mut buf = [0u8; 64];
        let k = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..k], b"READY=1");
        let k = server.recv(&mut buf).unwrap();
        assert_eq!(&buf[..k], b"STATUS=2 boards");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn silent_without_a_socket() {
        let n = Notifier { target: None };
        assert!(!n.enabled());
        n.ready();
    }
}
