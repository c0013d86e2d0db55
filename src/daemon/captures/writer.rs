//! One capture written: created with private modes, or opened to append after a restart (a
//! line cut off by a crash truncated), `t` never decreasing.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use chrono::{DateTime, SecondsFormat, Utc};
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
    /// The records already there (none for a new file); when resumed, the header and the
    /// records after the resume point only.
    pub existing: Option<Capture>,
    /// The resume point the records go on from (`None`: all of them were read).
    pub resumed: Option<super::resume::ResumePoint>,
}

/// The header and the records after `point` of the capture at `path`, checked against the
/// point; with the length of its whole lines and the file's length. The error says why the
/// point does not hold.
fn read_after(
    path: &Path,
    point: &super::resume::ResumePoint,
) -> Result<(Capture, u64, u64), String> {
    use std::io::{BufRead as _, Read as _, Seek as _};
    let file = File::open(path).map_err(|e| e.to_string())?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len < point.offset {
        return Err(format!(
            "the capture is {len} bytes, the point at {}",
            point.offset
        ));
    }
    if super::resume::fingerprint(&file, point.offset).map_err(|e| e.to_string())? != point.before {
        return Err("the bytes before the point differ".into());
    }
    let mut reader = std::io::BufReader::new(file);
    let mut text = Vec::new();
    reader
        .read_until(b'\n', &mut text)
        .map_err(|e| e.to_string())?;
    let header_len = text.len() as u64;
    if !text.ends_with(b"\n") || header_len > point.offset {
        return Err("no header line before the point".into());
    }
    reader
        .seek(io::SeekFrom::Start(point.offset))
        .map_err(|e| e.to_string())?;
    reader.read_to_end(&mut text).map_err(|e| e.to_string())?;
    let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let body = std::str::from_utf8(&text[..complete]).map_err(|e| e.to_string())?;
    let cap =
        capture::parse_capture(&path.display().to_string(), body).map_err(|e| e.to_string())?;
    let created = cap.header.created().map(|d| d.timestamp_micros());
    if created != Some(point.created) {
        return Err("the capture's header is not the one of the point".into());
    }
    Ok((cap, point.offset + (complete as u64 - header_len), len))
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
        // Read too: a resume point's fingerprint reads the bytes before it.
        let file = File::options()
            .create_new(true)
            .read(true)
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
                resumed: None,
            });
        };
        let file = CaptureFile::appending(
            path,
            &cap,
            (complete as u64, bytes.len() as u64),
            0,
            fsync,
            counter,
        )?;
        Ok(Opened {
            file,
            existing: Some(cap),
            resumed: None,
        })
    }

    /// [`CaptureFile::open_counting`], going on from the capture's resume point when it holds
    /// ([`super::resume`]): only the header and the records after the point are read, and
    /// `resumed` is the point. When there is none, or it does not match the capture (cut off,
    /// damaged, of another file), the whole capture is read, as ever.
    pub fn open_resuming(
        path: &Path,
        header_extra: Map<String, Value>,
        fsync: bool,
        counter: Option<Counter>,
    ) -> io::Result<Opened> {
        if let Some(point) = super::resume::load(path) {
            match read_after(path, &point) {
                Ok((cap, complete, len)) => {
                    let file = CaptureFile::appending(
                        path,
                        &cap,
                        (complete, len),
                        point.last_t,
                        fsync,
                        counter,
                    )?;
                    return Ok(Opened {
                        file,
                        existing: Some(cap),
                        resumed: Some(point),
                    });
                }
                Err(why) => tracing::warn!(
                    "{}: its resume point does not hold ({why}): replaying the whole capture",
                    path.display()
                ),
            }
        }
        CaptureFile::open_counting(path, header_extra, fsync, counter)
    }

    /// The file opened to append after `cap` (its records read): `complete` bytes of its `len`
    /// are whole lines (a line cut off after them is dropped); `t` goes on from `last_t` or
    /// the last record's.
    fn appending(
        path: &Path,
        cap: &Capture,
        (complete, len): (u64, u64),
        last_t: Micros,
        fsync: bool,
        counter: Option<Counter>,
    ) -> io::Result<CaptureFile> {
        let file = File::options()
            .read(true)
            .append(true)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(path)?;
        if complete < len {
            file.set_len(complete)?;
            tracing::warn!(
                "{}: dropped a last line cut off by a crash ({} bytes)",
                path.display(),
                len - complete
            );
        }
        let created = cap
            .header
            .created()
            .map_or_else(Utc::now, |d| d.with_timezone(&Utc));
        let last_t = cap.records.last().map_or(0, |r| r.t).max(last_t);
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
        Ok(CaptureFile {
            path: path.to_path_buf(),
            writer,
            created,
            origin: Instant::now(),
            origin_t: since.max(last_t),
            last_t,
            fsync,
            lost: 0,
        })
    }

    /// Where a resume point taken now is: the file's length, and the fingerprint of the bytes
    /// before it ([`super::resume::fingerprint`]).
    pub fn resume_at(&self) -> io::Result<(u64, u64)> {
        let file = &self.writer.get_ref().file;
        let len = file.metadata()?.len();
        Ok((len, super::resume::fingerprint(file, len)?))
    }

    /// Whether records are synced to disk before their events go out.
    pub fn fsync(&self) -> bool {
        self.fsync
    }

    /// The last record's `t`.
    pub fn last_t(&self) -> Micros {
        self.last_t
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
    /// the kernel; its time.
    pub fn write(&mut self, t: Micros, dev: &str, kind: RecordKind) -> io::Result<Micros> {
        self.append(t, dev, kind).map(|r| r.t)
    }

    /// [`CaptureFile::write`], giving back the record as written (its `t` raised), for the
    /// caller to apply that same record to its board. A record lost to a failing disk is given
    /// back too (the board is still served; the loss is counted and noted).
    pub fn append(&mut self, t: Micros, dev: &str, kind: RecordKind) -> io::Result<Record> {
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
                Ok(record)
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
                Ok(record)
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

    use crate::daemon::captures::tmp;

    #[test]
    fn appends_across_restarts_and_drops_a_cut_off_line() {
        let dir = tmp("append");
        let path = dir.join("2026-11-29/board-1.jsonl");
        let mut f = CaptureFile::create(&path, Map::new(), true).unwrap();
        assert_eq!(
            f.resume_at().unwrap().0,
            std::fs::metadata(&path).unwrap().len()
        );
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
        // A resume point can be taken on a file appended to (its bytes are read back).
        let len = std::fs::metadata(&path).unwrap().len();
        let (offset, before) = f.resume_at().unwrap();
        assert_eq!(offset, len);
        let text = std::fs::read(&path).unwrap();
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in &text[text.len() - 64..] {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        assert_eq!(before, h, "FNV-1a of the last 64 bytes");
        drop(f);
        let cap = capture::read_capture(&path).unwrap();
        assert_eq!(cap.records.len(), 3);
        assert!(cap.warnings.is_empty(), "{:?}", cap.warnings);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 4);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
