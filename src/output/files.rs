//! Files the outputs publish: their content types (the HTTP API serves the same bodies) and
//! atomic writes that follow no link below the configured directory (relay files, the saved
//! round).

use std::io::Write;
use std::path::Path;

/// Content type of PGN.
pub const PGN_TYPE: &str = "application/x-chess-pgn; charset=utf-8";
/// Content type of JSON.
pub const JSON_TYPE: &str = "application/json; charset=utf-8";

/// Mode of the files written (published).
pub const FILE_MODE: u32 = 0o644;
/// Mode of the folders made.
pub const DIR_MODE: u32 = 0o755;

fn nix_err(e: nix::errno::Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// Open the directory `dir` (itself may be a link, as configured).
pub fn open_dir(dir: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::{OFlag, open};
    use nix::sys::stat::Mode;
    open(
        dir,
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(nix_err)
}

/// Open (creating it 0755 if missing) the folder `name` inside `parent`, refusing a symlink.
pub fn open_subdir(
    parent: &std::os::fd::OwnedFd,
    name: &str,
) -> std::io::Result<std::os::fd::OwnedFd> {
    use nix::fcntl::{OFlag, openat};
    use nix::sys::stat::{Mode, fchmod, mkdirat};
    let created = match mkdirat(parent, name, Mode::from_bits_truncate(DIR_MODE)) {
        Ok(()) => true,
        Err(nix::errno::Errno::EEXIST) => false,
        Err(e) => return Err(nix_err(e)),
    };
    let fd = openat(
        parent,
        name,
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        if e == nix::errno::Errno::ELOOP || e == nix::errno::Errno::ENOTDIR {
            std::io::Error::other(format!(
                "{name} is not a plain folder (a symlink?): refused"
            ))
        } else {
            nix_err(e)
        }
    })?;
    if created {
        fchmod(&fd, Mode::from_bits_truncate(DIR_MODE)).map_err(nix_err)?;
    }
    Ok(fd)
}

/// Replace `name` in the directory `dir` atomically with `content`: a fresh temporary file
/// (0644, never through a link), fsync, rename over the target.
pub fn write_at(dir: &std::os::fd::OwnedFd, name: &str, content: &[u8]) -> std::io::Result<()> {
    use nix::fcntl::{OFlag, openat, renameat};
    use nix::sys::stat::{Mode, fchmod};
    use nix::unistd::{UnlinkatFlags, unlinkat};
    let tmp = format!(".{name}.{}.tmp", std::process::id());
    // A leftover from a crash is ours to remove (unlinkat never follows a link).
    let _ = unlinkat(dir, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
    let fd = openat(
        dir,
        tmp.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(FILE_MODE),
    )
    .map_err(nix_err)?;
    fchmod(&fd, Mode::from_bits_truncate(FILE_MODE)).map_err(nix_err)?;
    let mut f = std::fs::File::from(fd);
    let written = f.write_all(content).and_then(|_| f.sync_all());
    drop(f);
    written
        .and_then(|_| renameat(dir, tmp.as_str(), dir, name).map_err(nix_err))
        .inspect_err(|_| {
            let _ = unlinkat(dir, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
        })
}

/// Replace `dir/name` atomically with `content`: write a fresh temporary file next to it,
/// fsync it, rename it over the target (no link below `dir` is followed).
pub fn write_atomic(dir: &Path, name: &str, content: &[u8]) -> std::io::Result<()> {
    write_at(&open_dir(dir)?, name, content)
}
