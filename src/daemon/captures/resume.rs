//! Resume points: where a restart may go on from instead of replaying a board's whole capture
//! (issue 22, part 2). Next to `DIR/DAY/<board>.jsonl` the daemon keeps
//! `<board>.jsonl.resume`, one JSON object, replaced atomically (written aside, then renamed)
//! each time the board starts a game at rest: the capture's length then, a fingerprint of the
//! bytes before that point, and the board's state there (its core's
//! [`EngineSeed`], which checked itself when it was taken; the tags and clock side its records
//! had set; whether a clock had reported).
//!
//! **The capture is always the truth.** A point is used only when the capture still holds it:
//! at least that long, the same bytes before it, the same header. Anything else (no point, a
//! damaged or cut-off one, a capture moved aside and started again) means the whole capture is
//! replayed, as before, and the next game start writes a new point. `eboardd replay` and the
//! daemon's search for captures take only `*.jsonl`: the points are never read as captures.

use std::fs::File;
use std::io::{self, Write as _};
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::engine::seed::EngineSeed;
use crate::core::observation::{ClockSide, Micros};

/// How many bytes before a point its fingerprint covers (the end of the record before it).
const FINGERPRINT_BYTES: u64 = 64;

/// A board's resume point (see the module's documentation).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResumePoint {
    /// The capture's length at the point: the records after it are the ones replayed.
    pub offset: u64,
    /// [`fingerprint`] of the capture at `offset`.
    pub before: u64,
    /// The capture header's `created`, in µs since the Unix epoch.
    pub created: i64,
    /// The `t` of the last record before the point.
    pub last_t: Micros,
    /// Whether a clock had reported on the board.
    pub clock_seen: bool,
    /// The PGN tags in force at the point, as a capture header's `tags`.
    pub tags: Value,
    /// White's clock side as the last `set_clock_side` record before the point fixed it.
    pub white_clock: Option<ClockSide>,
    /// The board's state machine.
    pub engine: EngineSeed,
    /// The round of each game the seed keeps, by game number (as the capture's tags gave it
    /// at the game's last move; `None`: no round).
    #[serde(default)]
    pub rounds: Vec<(u32, Option<u32>)>,
}

/// The resume point's file of the capture at `capture`.
pub fn path_of(capture: &Path) -> PathBuf {
    let mut name = capture.as_os_str().to_owned();
    name.push(".resume");
    PathBuf::from(name)
}

/// FNV-1a of the (up to) [`FINGERPRINT_BYTES`] bytes of `file` before `offset`.
pub fn fingerprint(file: &File, offset: u64) -> io::Result<u64> {
    let from = offset.saturating_sub(FINGERPRINT_BYTES);
    let mut buf = vec![0u8; (offset - from) as usize];
    file.read_exact_at(&mut buf, from)?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in buf {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Ok(h)
}

/// Replaces the resume point of the capture at `capture` (synced first when `fsync`).
pub fn save(capture: &Path, point: &ResumePoint, fsync: bool) -> io::Result<()> {
    let path = path_of(capture);
    let mut aside = path.clone().into_os_string();
    aside.push(".new");
    let aside = PathBuf::from(aside);
    let mut line = serde_json::to_vec(point).map_err(io::Error::other)?;
    line.push(b'\n');
    let mut f = File::options()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(super::FILE_MODE)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(&aside)?;
    f.write_all(&line)?;
    if fsync {
        f.sync_data()?;
    }
    std::fs::rename(&aside, &path)
}

/// The resume point of the capture at `capture`, when there is one that reads (a damaged one
/// is logged and left: the whole capture is replayed).
pub fn load(capture: &Path) -> Option<ResumePoint> {
    let path = path_of(capture);
    let text = match std::fs::read(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!("{}: cannot read: {e}", path.display());
            return None;
        }
    };
    match serde_json::from_slice(&text) {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(
                "{}: not a resume point ({e}): replaying the whole capture",
                path.display()
            );
            None
        }
    }
}
