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
//! Two rooms: `writer` ([`CaptureFile`]: one capture written, created private or opened for
//! appending after a restart) and `store` ([`CaptureStore`]: the folder of captures by day and
//! board).

pub mod resume;
mod store;
mod writer;

pub use store::{CaptureStore, LINE_PREFIX, today};
pub use writer::{CaptureFile, DIR_MODE, FILE_MODE, Opened, create_private_dir};

/// A fresh, empty scratch directory for one test of the captures (`eboardd-cap-<name>-<pid>`).
#[cfg(test)]
fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("eboardd-cap-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
