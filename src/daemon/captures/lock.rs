//! One daemon per capture directory: the daemon holds an exclusive `flock` on
//! `DIR/.eboardd.lock` (which holds its pid) while it runs. A second daemon on the same
//! directory is refused at start, naming the directory and the first one's pid. The kernel
//! drops the lock when its holder dies, so a lock file left by a crashed daemon never blocks.

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// The lock file's name in the capture directory.
pub const LOCK_FILE: &str = ".eboardd.lock";

/// The capture directory's lock, held until dropped.
#[derive(Debug)]
pub struct DirLock {
    _lock: Flock<File>,
    /// The lock file.
    pub path: PathBuf,
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
        /// The other daemon's pid, when its lock file says it.
        pid: Option<u32>,
    },
    /// The lock file could not be made or locked (the directory is not writable).
    #[error("capture directory {dir}: cannot make its lock file: {source}")]
    Io {
        /// The directory.
        dir: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
}

/// Takes the lock of capture directory `dir` (which must exist) and writes this process's pid
/// in it.
pub fn lock(dir: &Path) -> Result<DirLock, LockError> {
    let path = dir.join(LOCK_FILE);
    let io = |source| LockError::Io {
        dir: dir.to_path_buf(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .open(&path)
        .map_err(io)?;
    let mut lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(l) => l,
        Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(LockError::Held {
                dir: dir.to_path_buf(),
                pid: text.trim().parse().ok(),
            });
        }
        Err((_, e)) => return Err(io(e.into())),
    };
    let file: &mut File = &mut lock;
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    writeln!(file, "{}", std::process::id()).map_err(io)?;
    Ok(DirLock { _lock: lock, path })
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
        assert!(text.contains(&format!("pid {}", std::process::id())), "{text}");
        drop(first);
        // A lock file left behind (as by a daemon that died) does not block.
        assert!(dir.join(LOCK_FILE).exists());
        let again = lock(&dir).unwrap();
        drop(again);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
