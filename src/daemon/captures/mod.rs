//! The daemon's captures: one file per board per day, always on.
//!
//! Layout: `DIR/YYYY-MM-DD/<board>.jsonl` (local date; `<board>` is the device id, e.g.
//! `board-3` or `dgt-12345`). **A restarted daemon appends to the same file**: it truncates a
//! line cut off by a crash, rebuilds the board's games from the records, and goes on writing
//! with `t` continuing from the header's creation time (`t` = seconds since `created`, never
//! decreasing). So one board's day is one capture, across restarts and reconnections, and
//! replaying it gives every game in full. A board keeps its file while it stays connected; when
//! it connects again (or the daemon starts) on a later day, it goes on in the old file if a game
//! is still running there, and starts the new day's file otherwise.
//!
//! `eboardd replay DIR` replays them all (`crate::replay`): the files merged by absolute time
//! (`created` + `t`), so the boards' games come out in the order they started, whatever the files.
//!
//! Three rooms: `writer` ([`CaptureFile`]: one capture written, created private or opened for
//! appending after a restart), `store` ([`CaptureStore`]: the folder of captures by day and
//! board) and [`lock`] (one daemon per capture directory).

pub mod lock;
pub mod resume;
mod store;
mod writer;

pub use store::{CaptureStore, LINE_PREFIX, today};
pub use writer::{CaptureFile, DIR_MODE, FILE_MODE, Opened, create_private_dir};

/// Whether captures can be written in `dir` now, without writing anything: it is made if
/// missing, and must be a directory this user may write in, on a file system that is not
/// read-only and has room (blocks and inodes). `Err` says why not, on one line.
pub fn check_writable(dir: &std::path::Path) -> Result<(), String> {
    use nix::unistd::AccessFlags;
    let cannot = |why: &dyn std::fmt::Display| {
        Err(format!(
            "captures cannot be written in {}: {why}",
            dir.display()
        ))
    };
    if dir.exists() && !dir.is_dir() {
        return cannot(&"not a directory");
    }
    if let Err(e) = std::fs::create_dir_all(dir) {
        return cannot(&e);
    }
    if let Err(e) = nix::unistd::access(dir, AccessFlags::W_OK | AccessFlags::X_OK) {
        return cannot(&std::io::Error::from(e));
    }
    match nix::sys::statvfs::statvfs(dir) {
        Ok(fs) if fs.blocks_available() == 0 || fs.files_available() == 0 && fs.files() > 0 => {
            cannot(&std::io::Error::from(std::io::ErrorKind::StorageFull))
        }
        _ => Ok(()),
    }
}

/// A fresh, empty scratch directory for one test of the captures (`eboardd-cap-<name>-<pid>`).
#[cfg(test)]
fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("eboardd-cap-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
