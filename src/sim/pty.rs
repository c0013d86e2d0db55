//! Pseudo-terminals for simulated devices: a raw-mode pty pair whose master side is driven
//! asynchronously (tokio [`AsyncFd`]) and whose slave side is the "serial port" a daemon opens.
//!
//! The emulator keeps its own slave descriptor open, like a device that stays plugged in, so the
//! master never sees a hang-up when the daemon closes and reopens the port. Dropping a [`Pty`]
//! closes both sides: the daemon's reads then fail as after a USB unplug.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::sys::termios::{SetArg, cfmakeraw, tcgetattr, tcsetattr};
use tokio::io::unix::AsyncFd;

/// A raw-mode pseudo-terminal pair.
#[derive(Debug)]
pub struct Pty {
    master: AsyncFd<OwnedFd>,
    /// Held open so the master never reads a hang-up while no one else has the slave open.
    _slave: OwnedFd,
    path: PathBuf,
}

/// What one non-blocking write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Every byte went out.
    All,
    /// The pty's buffer was full; this many bytes went out and the rest were dropped, as a UART
    /// drops what no one reads.
    Partial(usize),
}

impl Pty {
    /// Opens a new pty pair in raw mode (no echo, no line editing, 8-bit clean). Must be called
    /// inside a tokio runtime.
    pub fn open() -> io::Result<Pty> {
        let pair = nix::pty::openpty(None, None).map_err(io::Error::from)?;
        let mut t = tcgetattr(&pair.slave).map_err(io::Error::from)?;
        cfmakeraw(&mut t);
        tcsetattr(&pair.slave, SetArg::TCSANOW, &t).map_err(io::Error::from)?;
        let path = nix::unistd::ttyname(&pair.slave).map_err(io::Error::from)?;
        // Not inherited by child processes: a daemon started later must see the hang-up when
        // this side closes.
        for fd in [&pair.master, &pair.slave] {
            fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(io::Error::from)?;
        }
        let flags = fcntl(&pair.master, FcntlArg::F_GETFL).map_err(io::Error::from)?;
        let flags = OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK;
        fcntl(&pair.master, FcntlArg::F_SETFL(flags)).map_err(io::Error::from)?;
        // `AsyncFd::new` is deprecated in favour of the unsafe `register`, whose safety
        // condition is that the descriptor outlives the registration: here the `AsyncFd` owns
        // the `OwnedFd`, so it does. No unsafe code is needed (the crate forbids it).
        #[allow(deprecated)]
        let master = AsyncFd::new(pair.master)?;
        Ok(Pty {
            master,
            _slave: pair.slave,
            path,
        })
    }

    /// The slave's device path (e.g. `/dev/pts/7`): the port a daemon opens.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads what the host wrote to the slave; waits until something is there.
    pub async fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut guard = self.master.readable().await?;
            match guard.try_io(|fd| nix::unistd::read(fd.get_ref(), buf).map_err(io::Error::from)) {
                Ok(result) => return result,
                Err(_would_block) => continue,
            }
        }
    }

    /// Reads what the host has written without waiting: 0 when nothing is there.
    pub fn read_now(&self, buf: &mut [u8]) -> io::Result<usize> {
        match nix::unistd::read(self.master.get_ref(), buf) {
            Ok(n) => Ok(n),
            Err(Errno::EAGAIN) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `bytes` without waiting: what does not fit in the pty's buffer is dropped.
    pub fn write_now(&self, mut bytes: &[u8]) -> io::Result<Written> {
        let total = bytes.len();
        while !bytes.is_empty() {
            match nix::unistd::write(self.master.get_ref(), bytes) {
                Ok(n) => bytes = &bytes[n..],
                Err(Errno::EAGAIN) => return Ok(Written::Partial(total - bytes.len())),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Written::All)
    }
}

/// Points the symlink `link` at `target`, replacing any existing link atomically (a temporary
/// link renamed over it), so a daemon opening `link` sees either the old or the new device.
pub fn relink(target: &Path, link: &Path) -> io::Result<()> {
    let name = link
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "link has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp{}", std::process::id()));
    let tmp = link.with_file_name(tmp_name);
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)?;
    std::fs::rename(&tmp, link)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[tokio::test]
    async fn bytes_cross_both_ways_unchanged() {
        let pty = Pty::open().unwrap();
        let mut slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(pty.path())
            .unwrap();
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(pty.write_now(&all).unwrap(), Written::All);
        let mut got = vec![0u8; 256];
        slave.read_exact(&mut got).unwrap();
        assert_eq!(got, all, "raw mode: no translation");
        slave.write_all(&[0x0d, 0x0a, 0x03, 0x4d]).unwrap();
        let mut buf = [0u8; 16];
        let mut read = Vec::new();
        while read.len() < 4 {
            let n = pty.read(&mut buf).await.unwrap();
            read.extend_from_slice(&buf[..n]);
        }
        assert_eq!(read, [0x0d, 0x0a, 0x03, 0x4d]);
    }

    #[test]
    fn relink_replaces_a_link() {
        let dir = std::env::temp_dir().join(format!("eboardd-relink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("board");
        relink(Path::new("/dev/null"), &link).unwrap();
        relink(Path::new("/dev/zero"), &link).unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("/dev/zero"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
