//! Where the captures are: one folder per day, one file per board.

use std::path::{Path, PathBuf};

use chrono::{Local, NaiveDate};
use prometheus_client::metrics::counter::Counter;
use serde_json::{Map, Value};
use std::io;

use super::writer::{CaptureFile, Opened};

/// Where the captures are, and how they are named.
#[derive(Debug, Clone)]
pub struct CaptureStore {
    /// The capture directory.
    pub dir: PathBuf,
    /// Whether to sync records to disk before broadcasting their events.
    pub fsync: bool,
    /// Counts the bytes written to the captures opened through [`CaptureStore::open`] (the
    /// daemon's `eboardd_capture_bytes_total`; `None`: not counted).
    pub bytes: Option<Counter>,
}

/// The local date today.
pub fn today() -> NaiveDate {
    Local::now().date_naive()
}

impl CaptureStore {
    /// [`CaptureFile::open`] with this store's `fsync`, its bytes counted in `bytes`.
    pub fn open(&self, path: &Path, header_extra: Map<String, Value>) -> io::Result<Opened> {
        CaptureFile::open_counting(path, header_extra, self.fsync, self.bytes.clone())
    }

    /// [`CaptureFile::open_resuming`] with this store's `fsync`, its bytes counted in `bytes`.
    pub fn open_resuming(
        &self,
        path: &Path,
        header_extra: Map<String, Value>,
    ) -> io::Result<Opened> {
        CaptureFile::open_resuming(path, header_extra, self.fsync, self.bytes.clone())
    }

    /// The directory of one day's captures.
    pub fn day_dir(&self, day: NaiveDate) -> PathBuf {
        self.dir.join(day.format("%Y-%m-%d").to_string())
    }

    /// The capture of `board` on `day`.
    pub fn path_for(&self, day: NaiveDate, board: &str) -> PathBuf {
        self.day_dir(day).join(format!("{board}.jsonl"))
    }

    /// Day directories, oldest first.
    fn days(&self) -> Vec<(NaiveDate, PathBuf)> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut days: Vec<(NaiveDate, PathBuf)> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().to_string();
                let day = NaiveDate::parse_from_str(&name, "%Y-%m-%d").ok()?;
                e.path().is_dir().then(|| (day, e.path()))
            })
            .collect();
        days.sort();
        days
    }

    /// The files that may hold the current round on `today`: every board's file of today, and
    /// each other board's latest file of an earlier day (the caller keeps it only when its last
    /// game is still running). Sorted by board id.
    /// Line captures (`line-*`) are not boards and are left out.
    pub fn current_files(&self, today: NaiveDate) -> Vec<(String, PathBuf)> {
        let mut found: std::collections::BTreeMap<String, PathBuf> = Default::default();
        for (day, dir) in self.days().into_iter().rev() {
            if day > today {
                continue;
            }
            let Ok(rd) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in rd.filter_map(|e| e.ok()) {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "jsonl")
                    && let Some(stem) = p.file_stem()
                    && !stem.to_string_lossy().starts_with(LINE_PREFIX)
                {
                    found.entry(stem.to_string_lossy().to_string()).or_insert(p);
                }
            }
            if day < today {
                // Only the latest earlier day can hold a game still running.
                break;
            }
        }
        found.into_iter().collect()
    }
}

/// The start of a line capture's name (`line-ttyUSB0`): the bytes a port exchanged with its line
/// as a whole (a chain's discovery), not a board's.
pub const LINE_PREFIX: &str = "line-";

#[cfg(test)]
mod tests {
    use super::*;

    use crate::daemon::captures::tmp;

    #[test]
    fn current_files_are_today_and_the_latest_earlier_day() {
        let dir = tmp("current");
        let store = CaptureStore {
            dir: dir.clone(),
            fsync: false,
            bytes: None,
        };
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        for (day, board) in [
            ("2026-11-27", "board-1"),
            ("2026-11-27", "board-4"),
            ("2026-11-28", "board-1"),
            ("2026-11-28", "board-2"),
            ("2026-11-29", "board-2"),
            ("2026-11-29", "board-3"),
        ] {
            let p = store.path_for(d(day), board);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "").unwrap();
        }
        let got = store.current_files(d("2026-11-29"));
        let names: Vec<String> = got
            .iter()
            .map(|(b, p)| {
                format!(
                    "{b}:{}",
                    p.parent().unwrap().file_name().unwrap().to_string_lossy()
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                "board-1:2026-11-28",
                "board-2:2026-11-29",
                "board-3:2026-11-29"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
