//! One daemon per capture directory: the daemon holds an exclusive `flock` on the capture
//! directory itself while it runs (no file is added to it: the directory holds only its day
//! folders, the round and the archive). A second daemon on the same directory is refused at
//! start, naming the directory and the first one's pid (read from `/proc/locks`). The kernel
//! drops the lock when its holder dies, so a daemon that was killed never blocks the next.

use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// The capture directory's lock, held until dropped.
#[derive(Debug)]
pub struct DirLock {
    _lock: Flock<File>,
}

/// Why the capture directory could not be locked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    /// Another daemon holds it.
    #[error(
        "capture directory {dir} is in use by another eboardd{}: give each daemon its own \
         (daemon.capture_dir, --capture-dir)",
        pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Held {
        /// The directory.
        dir: PathBuf,
        /// The other daemon's pid, when the kernel says it.
        pid: Option<u32>,
    },
    /// The directory could not be made, opened or locked.
    #[error("capture directory {dir}: {source}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
}

/// Takes the lock of capture directory `dir` (which must exist).
pub fn lock(dir: &Path) -> Result<DirLock, LockError> {
    let io = |source| LockError::Io {
        dir: dir.to_path_buf(),
        source,
    };
    let file = File::open(dir).map_err(io)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(DirLock { _lock: lock }),
        Err((file, nix::errno::Errno::EWOULDBLOCK)) => Err(LockError::Held {
            dir: dir.to_path_buf(),
            pid: file.metadata().ok().and_then(|m| holder(&m)),
        }),
        Err((_, e)) => Err(io(e.into())),
    }
}

/// The pid holding a `flock` on the file of `meta`, from `/proc/locks` (lines like
/// `1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234567 0 EOF`: the device's major and minor in hex,
/// the inode in decimal).
fn holder(meta: &std::fs::Metadata) -> Option<u32> {
    let dev = meta.dev();
    let id = format!(
        "{:02x}:{:02x}:{}",
        nix::sys::stat::major(dev),
        nix::sys::stat::minor(dev),
        meta.ino()
    );
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&id.as_str()))
            .then(|| f.get(4)?.parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_the_holders_pid_and_freed_on_drop() {
        let dir = super::super::tmp("lock");
        let first = lock(&dir).unwrap();
        let e = lock(&dir).unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, LockError::Held { pid: Some(p), .. } if p == std::process::id()),
            "{text}"
        );
        assert!(text.contains(&dir.display().to_string()), "{text}");
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no file added");
        drop(first);
        let again = lock(&dir).unwrap();
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
