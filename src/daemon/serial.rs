//! Opening a board's serial port with its driver's line settings (no flow control),
//! exclusive, with stale input thrown away.

use std::io;
use std::os::unix::fs::OpenOptionsExt as _;
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

/// Why a serial port did not open, and whether waiting can heal it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFailure {
    /// Why, on one line, with what to do.
    pub reason: String,
    /// Waiting cannot heal it (permission, not a serial device, a directory): it is logged
    /// once as a warning and retried slowly. Otherwise (a board unplugged, a port busy) it is
    /// retried soon.
    pub lasting: bool,
}

/// What is wrong with the node at `path` for a serial port, found without opening it: missing
/// (`lasting: false`), a directory, a regular file, not a character device, a device of a
/// kind that is no terminal (`/dev/null`: its sysfs subsystem is not `tty`), or one the
/// daemon's user may not read and write (the `dialout` group and the udev rules).
/// `eboardd check` and [`diagnose`] share it.
pub fn check_node(path: &Path) -> Result<(), OpenFailure> {
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    let lasting = |reason: String| {
        Err(OpenFailure {
            reason,
            lasting: true,
        })
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(OpenFailure {
                reason: format!("{e}: no such device (board not plugged in?)"),
                lasting: false,
            });
        }
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return lasting(format!("{e}: {PERMISSION_HINT}"));
        }
        Err(e) => return lasting(e.to_string()),
    };
    let kind = meta.file_type();
    if kind.is_dir() {
        return lasting(format!("a directory, {NOT_SERIAL}"));
    }
    if kind.is_file() {
        return lasting(format!("a regular file, {NOT_SERIAL}"));
    }
    if !kind.is_char_device() {
        return lasting(format!("not a character device, {NOT_SERIAL}"));
    }
    let dev = meta.rdev();
    let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
    let subsystem = std::fs::read_link(format!("/sys/dev/char/{major}:{minor}/subsystem"));
    if let Some(name) = subsystem.ok().as_deref().and_then(Path::file_name)
        && name != "tty"
    {
        return lasting(format!(
            "a {} device that is no terminal (tty), {NOT_SERIAL}",
            name.to_string_lossy()
        ));
    }
    let rw = nix::unistd::AccessFlags::R_OK | nix::unistd::AccessFlags::W_OK;
    if let Err(e) = nix::unistd::access(path, rw) {
        return lasting(format!("{}: {PERMISSION_HINT}", io::Error::from(e)));
    }
    Ok(())
}

/// The end of a reason why a node is no serial port.
const NOT_SERIAL: &str =
    "not a serial port: give the board's device node (e.g. /dev/ttyACM0, /dev/eboard-<serial>)";

/// What went wrong opening `path` (the open failed with `err`): the node as [`check_node`]
/// finds it, else the error (permission: the `dialout` group and the udev rules), else a
/// device that does not answer as a terminal does.
pub fn diagnose(path: &Path, err: &io::Error) -> OpenFailure {
    if let Err(f) = check_node(path) {
        return f;
    }
    if err.kind() == io::ErrorKind::PermissionDenied {
        return OpenFailure {
            reason: format!("{err}: {PERMISSION_HINT}"),
            lasting: true,
        };
    }
    // A character device that is no terminal ("Not a typewriter").
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(nix::libc::O_NOCTTY | nix::libc::O_NONBLOCK)
        .open(path)
        .map(|f| nix::unistd::isatty(&f).unwrap_or(false));
    if let Ok(false) = tty {
        return OpenFailure {
            reason: format!("a device that is no terminal (tty), {NOT_SERIAL}"),
            lasting: true,
        };
    }
    OpenFailure {
        reason: err.to_string(),
        lasting: false,
    }
}

/// What to do about a port the daemon may not open.
pub const PERMISSION_HINT: &str = "the daemon's user may not open it: add the user to the \
                                   dialout group (sudo usermod -aG dialout USER, then log in \
                                   again; the systemd unit has it) and install the udev rules \
                                   (udev/70-eboardd.rules, docs/operations.md)";

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(path: &Path) -> OpenFailure {
        let line = crate::family::default_driver().transport().line().unwrap();
        let Err(err) = open(path, line) else {
            panic!("{}: opened as a serial port", path.display());
        };
        diagnose(path, &err)
    }

    #[tokio::test]
    async fn ports_that_can_never_work_say_why_and_what_to_do() {
        let dir = std::env::temp_dir().join(format!("eboardd-serial-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("file");
        std::fs::write(&file, b"x").unwrap();
        let d = diag(&dir);
        assert!(d.lasting && d.reason.starts_with("a directory"), "{d:?}");
        let f = diag(&file);
        assert!(f.lasting && f.reason.starts_with("a regular file"), "{f:?}");
        let null = diag(Path::new("/dev/null"));
        assert!(
            null.lasting && null.reason.contains("no terminal"),
            "{null:?}"
        );
        let missing = diag(&dir.join("missing"));
        assert!(
            !missing.lasting && missing.reason.contains("not plugged in"),
            "{missing:?}"
        );
        // Root opens anything: the permission error is given as the OS gives it.
        let denied = diagnose(
            Path::new("/dev/tty"),
            &io::Error::from(io::ErrorKind::PermissionDenied),
        );
        assert!(
            denied.lasting && denied.reason.contains("dialout"),
            "{denied:?}"
        );
        assert!(denied.reason.contains("udev"), "{denied:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
