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

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use chrono::{DateTime, Local, NaiveDate, SecondsFormat, Utc};
use serde_json::{Map, Value};

use crate::capture::{self, Capture, CaptureWriter, Record, RecordKind};
use crate::core::observation::Micros;
use prometheus_client::metrics::counter::Counter;

/// Writes to a file, dropping everything up to and including the first newline (so a
/// [`CaptureWriter`] can append records to an existing capture without a second header).
#[derive(Debug)]
struct AppendSink {
    file: File,
    skip_line: bool,
    /// Counts the bytes written (the daemon's `eboardd_capture_bytes_total`).
    bytes: Option<Counter>,
}

impl AppendSink {
    fn counted(&self, n: usize) -> usize {
        if let Some(c) = &self.bytes {
            c.inc_by(n as u64);
        }
        n
    }
}

impl Write for AppendSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.skip_line {
            if let Some(i) = buf.iter().position(|&b| b == b'\n') {
                self.skip_line = false;
                self.file.write_all(&buf[i + 1..])?;
                self.counted(buf.len() - i - 1);
            }
            return Ok(buf.len());
        }
        let n = self.file.write(buf)?;
        Ok(self.counted(n))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// One open capture file: appends records with `t` from a monotonic clock.
#[derive(Debug)]
pub struct CaptureFile {
    path: PathBuf,
    writer: CaptureWriter<AppendSink>,
    created: DateTime<Utc>,
    origin: Instant,
    origin_t: Micros,
    last_t: Micros,
    fsync: bool,
    /// Records that could not be written since the last successful write (disk full, I/O
    /// error): the board is still served, and a note marks the gap once writing works again.
    lost: u64,
}

/// A capture file opened for appending, with what it already held.
#[derive(Debug)]
pub struct Opened {
    /// The file, ready for new records.
    pub file: CaptureFile,
    /// The records already there (none for a new file).
    pub existing: Option<Capture>,
}

impl CaptureFile {
    /// Creates `path` (and its directory) with a header: `created` now plus `header_extra`.
    pub fn create(path: &Path, header_extra: Map<String, Value>, fsync: bool) -> io::Result<Self> {
        Self::create_counting(path, header_extra, fsync, None)
    }

    /// [`CaptureFile::create`], adding every byte written to `bytes`.
    fn create_counting(
        path: &Path,
        header_extra: Map<String, Value>,
        fsync: bool,
        bytes: Option<Counter>,
    ) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            create_private_dir(dir)?;
        }
        let created = Utc::now();
        let mut extra = Map::new();
        extra.insert(
            "created".into(),
            created.to_rfc3339_opts(SecondsFormat::Micros, true).into(),
        );
        extra.insert(
            "daemon".into(),
            format!("eboardd {}", env!("CARGO_PKG_VERSION")).into(),
        );
        extra.extend(header_extra);
        let file = File::options()
            .create_new(true)
            .append(true)
            .mode(FILE_MODE)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(path)?;
        file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
        let writer = CaptureWriter::new(
            AppendSink {
                file,
                skip_line: false,
                bytes,
            },
            extra,
        )?;
        let f = CaptureFile {
            path: path.to_path_buf(),
            writer,
            created,
            origin: Instant::now(),
            origin_t: 0,
            last_t: 0,
            fsync,
            lost: 0,
        };
        f.sync()?;
        if let Some(dir) = path.parent() {
            // The new directory entry must survive a power cut too.
            let _ = File::open(dir).and_then(|d| d.sync_all());
        }
        Ok(f)
    }

    /// Opens `path` to append to it, after dropping a last line cut off by a crash. A missing
    /// or empty file, or one without a readable header, is (re)created.
    pub fn open(path: &Path, header_extra: Map<String, Value>, fsync: bool) -> io::Result<Opened> {
        Self::open_counting(path, header_extra, fsync, None)
    }

    /// [`CaptureFile::open`], adding every byte written to `counter` from now on.
    pub fn open_counting(
        path: &Path,
        header_extra: Map<String, Value>,
        fsync: bool,
        counter: Option<Counter>,
    ) -> io::Result<Opened> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(e),
        };
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let text = String::from_utf8_lossy(&bytes[..complete]);
        let parsed = if complete == 0 {
            None
        } else {
            match capture::parse_capture(&path.display().to_string(), &text) {
                Ok(c) => Some(c),
                Err(e) => {
                    // Keep the unreadable file aside rather than write into it.
                    let aside = path
                        .with_extension(format!("corrupt-{}", Utc::now().format("%Y%m%dT%H%M%S")));
                    tracing::error!("{e}; moved to {}", aside.display());
                    std::fs::rename(path, &aside)?;
                    None
                }
            }
        };
        let Some(cap) = parsed else {
            if complete == 0 && !bytes.is_empty() {
                std::fs::remove_file(path)?;
            }
            let file = CaptureFile::create_counting(path, header_extra, fsync, counter)?;
            return Ok(Opened {
                file,
                existing: None,
            });
        };
        let file = File::options()
            .append(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(path)?;
        if complete < bytes.len() {
            file.set_len(complete as u64)?;
            tracing::warn!(
                "{}: dropped a last line cut off by a crash ({} bytes)",
                path.display(),
                bytes.len() - complete
            );
        }
        let created = cap
            .header
            .created()
            .map_or_else(Utc::now, |d| d.with_timezone(&Utc));
        let last_t = cap.records.last().map_or(0, |r| r.t);
        let since = SystemTime::now()
            .duration_since(SystemTime::from(created))
            .map_or(0, |d| d.as_micros() as Micros);
        let writer = CaptureWriter::new(
            AppendSink {
                file,
                skip_line: true,
                bytes: counter,
            },
            Map::new(),
        )?;
        Ok(Opened {
            file: CaptureFile {
                path: path.to_path_buf(),
                writer,
                created,
                origin: Instant::now(),
                origin_t: since.max(last_t),
                last_t,
                fsync,
                lost: 0,
            },
            existing: Some(cap),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// When the capture was created (its `t` = 0).
    pub fn created(&self) -> DateTime<Utc> {
        self.created
    }

    /// `t` now: microseconds since `created`, from a monotonic clock, never below the last
    /// record's.
    pub fn now(&self) -> Micros {
        let t = self.origin_t + self.origin.elapsed().as_micros() as Micros;
        t.max(self.last_t)
    }

    /// Appends one record at `t` (raised to the last record's `t` if smaller) and flushes it to
    /// the kernel.
    pub fn write(&mut self, t: Micros, dev: &str, kind: RecordKind) -> io::Result<Micros> {
        let t = t.max(self.last_t);
        let record = Record {
            t,
            dev: dev.to_string(),
            kind,
        };
        // A failed write may leave part of a line: cut the file back to where it was, so that
        // the capture stays readable and later records follow a whole line.
        let before = self.writer.get_ref().file.metadata().map(|m| m.len());
        match self.writer.write_record(&record) {
            Ok(()) => {
                self.last_t = t;
                if self.lost > 0 {
                    let lost = std::mem::take(&mut self.lost);
                    tracing::warn!(
                        "{}: capture writing again; {lost} record(s) could not be written",
                        self.path.display()
                    );
                    let note = format!("capture gap: {lost} record(s) could not be written");
                    let _ = self.write(t, dev, RecordKind::Note(note));
                }
                Ok(t)
            }
            Err(e) => {
                if let Ok(len) = before {
                    let _ = self.writer.get_ref().file.set_len(len);
                }
                if self.lost == 0 {
                    tracing::error!(
                        "{}: capture write failed: {e}; the board is still served, records are lost until the write works again",
                        self.path.display()
                    );
                }
                self.lost += 1;
                self.last_t = t;
                Ok(t)
            }
        }
    }

    /// Records lost since the last successful write.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Makes what was written durable (when fsync is on): done before broadcasting the events a
    /// record caused.
    pub fn sync(&self) -> io::Result<()> {
        if !self.fsync || self.lost > 0 {
            return Ok(());
        }
        let file = &self.writer.get_ref().file;
        let synced = match tokio::runtime::Handle::try_current() {
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| file.sync_data())
            }
            _ => file.sync_data(),
        };
        if let Err(e) = synced {
            // Serving the board matters more than this record's durability: say so and go on.
            tracing::error!("{}: capture sync failed: {e}", self.path.display());
        }
        Ok(())
    }
}

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

/// Mode of capture files: they are evidence, readable by the daemon's group only.
pub const FILE_MODE: u32 = 0o640;
/// Mode of capture folders.
pub const DIR_MODE: u32 = 0o750;

/// Create `dir` and its missing parents with [`DIR_MODE`] (whatever the umask); an existing
/// folder is left as it is, a symlink in place of `dir` (a planted day folder) refused.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => {
            return Err(io::Error::other(format!(
                "{} is not a plain folder (a symlink?)",
                dir.display()
            )));
        }
        Err(_) => {}
    }
    // Ancestors (the configured capture folder may be a link) are followed.
    if let Some(parent) = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty() && !p.is_dir())
    {
        create_private_dir(parent)?;
    }
    match std::fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(DIR_MODE)),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("eboardd-cap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn appends_across_restarts_and_drops_a_cut_off_line() {
        let dir = tmp("append");
        let path = dir.join("2026-11-29/board-1.jsonl");
        let mut f = CaptureFile::create(&path, Map::new(), true).unwrap();
        let t1 = f
            .write(f.now(), "board-1", RecordKind::Tx(vec![0x42]))
            .unwrap();
        f.write(t1 + 5, "board-1", RecordKind::Rx(vec![0x93, 0, 5, 3, 1]))
            .unwrap();
        drop(f);
        // A crash in the middle of a line.
        let mut raw = File::options().append(true).open(&path).unwrap();
        raw.write_all(b"{\"t\":1.0,\"dev\":\"board-1\",\"rx\":\"8e")
            .unwrap();
        drop(raw);
        let opened = CaptureFile::open(&path, Map::new(), false).unwrap();
        let existing = opened.existing.unwrap();
        assert_eq!(existing.records.len(), 2);
        let mut f = opened.file;
        assert!(f.now() >= t1 + 5);
        // A smaller t is raised: never decreasing.
        let t = f
            .write(0, "board-1", RecordKind::Note("again".into()))
            .unwrap();
        assert_eq!(t, t1 + 5);
        drop(f);
        let cap = capture::read_capture(&path).unwrap();
        assert_eq!(cap.records.len(), 3);
        assert!(cap.warnings.is_empty(), "{:?}", cap.warnings);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }

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
