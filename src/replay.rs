//! Every replay of captures goes one way: `eboardd replay` (files or directories, to PGN or to
//! the event stream), `eboardd serve-replay` (paced, into the broadcast hub), the daemon's
//! rebuild of a board after a restart, and the tests and benchmarks.
//!
//! - [`Timeline`]: captures in, laid out once. Line captures are skipped (they hold no board); every
//!   device is set up from its capture's header (decoder from `devices[].driver`, settle windows
//!   from `devices[].link`, bus unit from `devices[].address`); the records of several captures
//!   are merged by absolute time (`created` + `t`), one capture staying exactly as it is; a
//!   device id that overlapping captures share is told apart by file; the PGN tags each device
//!   has over time are taken from headers' `tags` and `set_tags` records; warnings are gathered.
//! - [`Playback`]: a plan played one record at a time through [`crate::device::apply_record`],
//!   the function the live daemon uses too. Callers differ only in what they do with the events:
//!   print them ([`replay_paths`]), publish them at a pace (`output::replay_source`), or rebuild a
//!   board without publishing (`daemon::board`).

use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset};
use serde_json::Map;

use crate::capture::{self, Capture, CaptureError, Header, OpRecord, Record, RecordKind};
use crate::core::event::{CoreEvent, EventEnvelope};
use crate::core::game::GameRecord;
use crate::core::observation::{ClockSide, Micros, Observation, OperatorAction};
use crate::device::{Applied, apply_record};
use crate::driver::BoardDriver;
use crate::pgn::{self, GameTags, TagUpdate};
use crate::session::link::LinkKind;
use crate::session::{SINGLE, Unit};

pub use crate::device::Device;

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// A capture could not be read.
    #[error(transparent)]
    Capture(#[from] CaptureError),
    /// Output could not be written.
    #[error("writing output: {0}")]
    Output(#[from] io::Error),
}

/// Where events go: the board (device name) and the event. An error stops the replay.
pub type Sink<'a> = dyn FnMut(&str, &CoreEvent) -> io::Result<()> + 'a;

/// How captures are laid out in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Layout {
    /// As recorded: every record at its absolute time, `created` + `t`, counted from the
    /// earliest `created` (a capture without one starts there). A device id used by several
    /// captures whose times overlap (unrelated captures all made as `board-1`) is renamed
    /// `<file>/<id>`, `<file>` being the file's name without `.jsonl` (with as many of its
    /// folders as it takes to tell two files apart); otherwise the same id is the same board.
    #[default]
    AsRecorded,
    /// A round made of unrelated captures: every capture is its own board (`board-N` for the
    /// N-th capture, `fN-DEV` when it has several devices) and all start together at `t` = 0.
    Round,
}

/// How one device is set up, from its capture's header.
#[derive(Debug)]
struct Setup {
    /// The device's name in the replay (its id, or the id made distinct).
    name: String,
    driver: &'static dyn BoardDriver,
    unit: Unit,
    link: LinkKind,
    /// The serial number its header gives (its link events carry it).
    serial: Option<String>,
}

impl Setup {
    /// Device `id` of a capture with `header`, named `name`; and a warning for a driver this
    /// build does not have. A device the header does not list is a wired `dgt` board.
    fn of(header: &Header, id: &str, name: String) -> (Setup, Option<String>) {
        let entry = header.device(id).unwrap_or_default();
        let (driver, warning) = crate::family::for_name_or_default(entry.driver.as_deref());
        let unit = entry.address.unwrap_or(SINGLE);
        let link = entry
            .link
            .as_deref()
            .and_then(|l| {
                [LinkKind::Wired, LinkKind::Bluetooth]
                    .into_iter()
                    .find(|k| k.name() == l)
            })
            .unwrap_or(LinkKind::Wired);
        let setup = Setup {
            name,
            driver,
            unit,
            link,
            serial: entry.serial,
        };
        (setup, warning)
    }

    /// A fresh device: decoder of its driver and unit, core with its link's settle windows.
    fn device(&self) -> Device {
        Device::for_unit(
            &self.name,
            self.driver,
            self.unit,
            self.link.engine_config(),
        )
        .with_serial(self.serial.clone())
    }
}

/// One record to play: its time in the replay, its device (index), what it carries.
#[derive(Debug)]
struct Step {
    t: Micros,
    device: usize,
    kind: RecordKind,
}

/// What laying captures out takes from one of them, met record by record (its records need
/// not be kept).
#[derive(Debug, Default)]
struct Summary {
    /// Device ids, in the order the header lists them and then of their first record.
    ids: Vec<String>,
    /// Per device id: its first record (order key) and the time of its last.
    spans: BTreeMap<String, Span>,
    /// The `set_tags` records: order key, device id, update.
    set_tags: Vec<(Key, String, TagUpdate)>,
    /// Records met.
    records: usize,
    /// The order key of the first record.
    first: Option<Key>,
    /// The largest `t` so far (the order of a capture whose `t` went back, see [`Key`]).
    running: Micros,
}

/// Where a record of a capture falls in the merge, its capture's offset aside: the largest `t`
/// of the capture up to it (a record whose `t` went back is played right after the one before
/// it, as the merge takes them), then its position in the capture.
type Key = (Micros, usize);

/// The records of one device in one capture.
#[derive(Debug, Clone, Copy)]
struct Span {
    first: Key,
    /// The smallest and largest `t` of its records (whether two captures' uses of one device id
    /// overlap).
    low: Micros,
    high: Micros,
}

impl Summary {
    /// Nothing met yet; the devices its header lists.
    fn new(header: &Header) -> Summary {
        let mut s = Summary::default();
        for id in header.devices().map(|d| d.id).filter(|id| !id.is_empty()) {
            if !s.ids.contains(&id) {
                s.ids.push(id);
            }
        }
        s
    }

    /// Record `r`, the next of the capture.
    fn add(&mut self, r: &Record) {
        self.running = if self.records == 0 {
            r.t
        } else {
            self.running.max(r.t)
        };
        let key = (self.running, self.records);
        self.records += 1;
        self.first.get_or_insert(key);
        match self.spans.get_mut(&r.dev) {
            Some(span) => {
                span.low = span.low.min(r.t);
                span.high = span.high.max(r.t);
            }
            None => {
                self.spans.insert(
                    r.dev.clone(),
                    Span {
                        first: key,
                        low: r.t,
                        high: r.t,
                    },
                );
                if !self.ids.contains(&r.dev) {
                    self.ids.push(r.dev.clone());
                }
            }
        }
        if let RecordKind::Op(OpRecord::SetTags(update)) = &r.kind {
            self.set_tags.push((key, r.dev.clone(), update.clone()));
        }
    }

    /// The summary of records held in memory.
    fn of(header: &Header, records: &[Record]) -> Summary {
        let mut s = Summary::new(header);
        records.iter().for_each(|r| s.add(r));
        s
    }
}

/// Where a capture's records come from as they are played.
#[derive(Debug)]
enum Source {
    /// Held in memory ([`Timeline::load`] and the rest).
    Memory(std::vec::IntoIter<Record>),
    /// Read from the file again as they are played ([`Timeline::open`]): opened when its first
    /// record's turn comes, closed after its last; only the records the layout met are played.
    File {
        path: PathBuf,
        reader: Option<Box<capture::CaptureReader<io::BufReader<std::fs::File>>>>,
        left: usize,
    },
}

impl Source {
    /// The next record; a file that cannot be read again ends with a warning.
    fn next(&mut self, warnings: &mut Vec<String>) -> Option<Record> {
        match self {
            Source::Memory(records) => records.next(),
            Source::File { path, reader, left } => {
                if *left == 0 {
                    *reader = None;
                    return None;
                }
                if reader.is_none() {
                    match capture::CaptureReader::open(path) {
                        Ok(r) => *reader = Some(Box::new(r)),
                        Err(e) => {
                            warnings.push(format!("{e}: its records are not played"));
                            *left = 0;
                            return None;
                        }
                    }
                }
                let r = reader.as_mut()?;
                match r.next() {
                    Some(Ok(record)) => {
                        *left -= 1;
                        // Its warnings were given when the plan was laid out.
                        r.take_warnings();
                        Some(record)
                    }
                    Some(Err(e)) => {
                        warnings.push(format!("{e}: its records after that are not played"));
                        *left = 0;
                        *reader = None;
                        None
                    }
                    None => {
                        warnings.push(format!(
                            "{}: {left} record(s) fewer than when the replay was laid out",
                            path.display()
                        ));
                        *left = 0;
                        *reader = None;
                        None
                    }
                }
            }
        }
    }
}

/// The captures' records merged by time, each capture in its own order (a capture whose `t`
/// went back stays as it is); equal times: the earlier capture first.
#[derive(Debug, Default)]
struct Merge {
    /// Per capture: its records, its offset, its device ids' device indices.
    sources: Vec<(Source, Micros, BTreeMap<String, usize>)>,
    /// Each capture's next record, waiting for its turn.
    heads: Vec<Option<Record>>,
    queue: BinaryHeap<std::cmp::Reverse<(Micros, usize)>>,
    /// Records after this time are not played ([`Timeline::until`]).
    until: Option<Micros>,
    /// Problems met reading captures again.
    warnings: Vec<String>,
}

impl Merge {
    /// The replay time of the next record.
    fn peek_t(&self) -> Option<Micros> {
        let std::cmp::Reverse((t, _)) = self.queue.peek()?;
        Some(*t).filter(|t| self.until.is_none_or(|u| *t <= u))
    }

    /// The next record to play.
    fn next(&mut self) -> Option<Step> {
        self.peek_t()?;
        let std::cmp::Reverse((t, fi)) = self.queue.pop()?;
        let record = match self.heads[fi].take() {
            Some(r) => r,
            None => self.sources[fi].0.next(&mut self.warnings)?,
        };
        let (source, offset, devices) = &mut self.sources[fi];
        let device = devices[&record.dev];
        if let Some(next) = source.next(&mut self.warnings) {
            self.queue.push(std::cmp::Reverse((*offset + next.t, fi)));
            self.heads[fi] = Some(next);
        }
        Some(Step {
            t,
            device,
            kind: record.kind,
        })
    }
}

/// The records of a plan: laid out in memory, or merged from the files as they are played.
#[derive(Debug)]
enum Steps {
    Memory(std::collections::VecDeque<Step>),
    Stream(Box<Merge>),
}

impl Default for Steps {
    fn default() -> Steps {
        Steps::Memory(Default::default())
    }
}

impl Steps {
    fn peek_t(&self) -> Option<Micros> {
        match self {
            Steps::Memory(steps) => steps.front().map(|s| s.t),
            Steps::Stream(merge) => merge.peek_t(),
        }
    }

    fn next(&mut self) -> Option<Step> {
        match self {
            Steps::Memory(steps) => steps.pop_front(),
            Steps::Stream(merge) => merge.next(),
        }
    }

    /// Problems met reading captures again since the last call.
    fn take_warnings(&mut self) -> Vec<String> {
        match self {
            Steps::Memory(_) => Vec::new(),
            Steps::Stream(merge) => std::mem::take(&mut merge.warnings),
        }
    }

    /// Every step, in memory.
    fn into_memory(self) -> std::collections::VecDeque<Step> {
        match self {
            Steps::Memory(steps) => steps,
            Steps::Stream(mut merge) => std::iter::from_fn(|| merge.next()).collect(),
        }
    }
}

/// Captures laid out for replay: the devices, the records in the order they are played, the PGN
/// tags of each device over time, the warnings met.
#[derive(Debug, Default)]
pub struct Timeline {
    steps: Steps,
    /// In the order of their first record; devices a header lists without records last.
    devices: Vec<Setup>,
    /// Per device, the tags in force from each time on, in time order.
    tags: Vec<TagsOverTime>,
    /// The earliest `created`: `t` = 0 of the replay, and the PGN dates.
    origin: Option<DateTime<FixedOffset>>,
    warnings: Vec<String>,
}

/// The tags in force from each time on, in time order.
type TagsOverTime = Vec<(Micros, GameTags)>;

/// One capture to lay out: its label, header, summary and records.
type Laid = (String, Header, Summary, Source);

impl Timeline {
    /// Reads the captures under `paths` (a directory stands for every `*.jsonl` under it,
    /// links to folders not followed) and lays them out, every record in memory.
    pub fn load(paths: &[PathBuf], layout: Layout) -> Result<Timeline, CaptureError> {
        let files = files_under(paths)?;
        // Files are read on every core; the first bad one (in file order) is the error.
        let read = crate::parallel::map_in_order(&files, crate::parallel::cores(), |f| {
            capture::read_capture(f)
        });
        let mut caps = Vec::with_capacity(files.len());
        for (cap, label) in read.into_iter().zip(labels(&files)) {
            caps.push((label, cap?));
        }
        Ok(Timeline::new(caps, layout))
    }

    /// [`Timeline::load`] without holding the records: the captures are read once to lay them out
    /// (devices, names, tags, warnings: what [`Timeline::load`] gives), then again as they are
    /// played, so that memory does not grow with the captures (`eboardd serve-replay` of a
    /// whole event). A capture that cannot be read again ends with a warning.
    pub fn open(paths: &[PathBuf], layout: Layout) -> Result<Timeline, CaptureError> {
        let files = files_under(paths)?;
        let read = crate::parallel::map_in_order(&files, crate::parallel::cores(), |f| {
            let mut reader = capture::CaptureReader::open(f)?;
            let mut summary = Summary::new(reader.header());
            for r in reader.by_ref() {
                summary.add(&r?);
            }
            let warnings = reader.take_warnings();
            Ok::<_, CaptureError>((reader.header().clone(), summary, warnings))
        });
        let mut laid = Vec::with_capacity(files.len());
        let mut warnings = Vec::new();
        for ((read, label), path) in read.into_iter().zip(labels(&files)).zip(files) {
            let (header, summary, w) = read?;
            warnings.extend(w);
            let left = summary.records;
            let source = Source::File {
                path,
                reader: None,
                left,
            };
            laid.push((label, header, summary, source));
        }
        let mut plan = Timeline::lay_out(laid, layout, true);
        plan.warnings.splice(0..0, warnings);
        Ok(plan)
    }

    /// One capture, as it is.
    pub fn from_capture(cap: Capture) -> Timeline {
        Timeline::new(vec![(String::new(), cap)], Layout::AsRecorded)
    }

    /// Records without a header (synthesised): wired `dgt` boards, no tags, no date.
    pub fn from_records(records: Vec<Record>) -> Timeline {
        Timeline::from_capture(Capture {
            header: Header::new(Map::new()),
            records,
            warnings: Vec::new(),
        })
    }

    /// Lays out captures held in memory, each with the label that tells its devices apart.
    fn new(files: Vec<(String, Capture)>, layout: Layout) -> Timeline {
        let mut warnings = Vec::new();
        let laid = files
            .into_iter()
            .map(|(label, cap)| {
                warnings.extend(cap.warnings);
                let summary = Summary::of(&cap.header, &cap.records);
                (
                    label,
                    cap.header,
                    summary,
                    Source::Memory(cap.records.into_iter()),
                )
            })
            .collect();
        let mut plan = Timeline::lay_out(laid, layout, false);
        plan.warnings.splice(0..0, warnings);
        plan
    }

    /// Lays out captures: their devices named, set up and ordered, their tags over time, their
    /// records merged (`stream`: as they are played, else now).
    fn lay_out(mut files: Vec<Laid>, layout: Layout, stream: bool) -> Timeline {
        files.retain(|(_, header, _, _)| !header.is_line());
        let created: Vec<_> = files.iter().map(|(_, h, _, _)| h.created()).collect();
        let origin = created.iter().flatten().min().copied();
        let offsets: Vec<Micros> = created
            .iter()
            .map(|c| match (layout, origin, c) {
                (Layout::AsRecorded, Some(o), Some(c)) => (*c - o).num_microseconds().unwrap_or(0),
                _ => 0,
            })
            .collect();
        let summaries: Vec<(&str, &Summary)> =
            files.iter().map(|(l, _, s, _)| (l.as_str(), s)).collect();
        let names = names(&summaries, &offsets, layout);
        let mut plan = Timeline {
            origin,
            ..Timeline::default()
        };
        // Devices in the order of their first record in the merge (see `Key`), then those a
        // header lists without records; one name is one device.
        let mut firsts: Vec<((Micros, usize, usize), usize, &str)> = Vec::new();
        for (fi, (_, _, summary, _)) in files.iter().enumerate() {
            for (id, span) in &summary.spans {
                let (t, pos) = span.first;
                firsts.push(((offsets[fi] + t, fi, pos), fi, id));
            }
        }
        firsts.sort();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        let unrecorded = files.iter().enumerate().flat_map(|(fi, (_, _, s, _))| {
            names[fi]
                .keys()
                .filter(|id| !s.spans.contains_key(*id))
                .map(move |id| (fi, id.as_str()))
        });
        for (fi, id) in firsts.iter().map(|&(_, fi, id)| (fi, id)).chain(unrecorded) {
            let name = &names[fi][id];
            if index.contains_key(name) {
                continue;
            }
            let (setup, warning) = Setup::of(&files[fi].1, id, name.clone());
            plan.warnings.extend(warning);
            plan.devices.push(setup);
            index.insert(name.clone(), plan.devices.len() - 1);
        }
        // Tags over time: each header's from its capture's start (before its first record),
        // for its board or every device it has; then the `set_tags` records.
        let mut changes: Vec<((Micros, usize, usize), &str, &TagUpdate)> = Vec::new();
        let mut header_tags = Vec::new();
        for (fi, (_, header, summary, _)) in files.iter().enumerate() {
            if let Some(update) = header.tags() {
                header_tags.push((fi, update));
            }
            for ((t, pos), id, update) in &summary.set_tags {
                changes.push((
                    (offsets[fi] + t, fi, pos + 1),
                    names[fi][id].as_str(),
                    update,
                ));
            }
        }
        for (fi, update) in &header_tags {
            let key = (offsets[*fi], *fi, 0);
            match files[*fi].1.board() {
                Some(board) => {
                    let name = names[*fi].get(board).map_or(board, String::as_str);
                    changes.push((key, name, update));
                }
                None => changes.extend(names[*fi].values().map(|n| (key, n.as_str(), update))),
            }
        }
        changes.sort_by_key(|(key, _, _)| *key);
        // Per name: the tags now, and from each time on.
        let mut tags: BTreeMap<&str, (GameTags, TagsOverTime)> = BTreeMap::new();
        for ((t, _, _), name, update) in changes {
            let (now, list) = tags.entry(name).or_default();
            now.apply(update);
            list.push((t, now.clone()));
        }
        plan.tags = plan
            .devices
            .iter()
            .map(|s| {
                tags.remove(s.name.as_str())
                    .map(|(_, c)| c)
                    .unwrap_or_default()
            })
            .collect();
        // The records, merged by time.
        let mut merge = Merge::default();
        for (fi, (_, _, summary, source)) in files.into_iter().enumerate() {
            let devices = names[fi]
                .iter()
                .map(|(id, name)| (id.clone(), index[name]))
                .collect();
            merge.sources.push((source, offsets[fi], devices));
            merge.heads.push(None);
            if let Some((t, _)) = summary.first {
                merge.queue.push(std::cmp::Reverse((offsets[fi] + t, fi)));
            }
        }
        plan.steps = Steps::Stream(Box::new(merge));
        if !stream {
            plan.steps = Steps::Memory(std::mem::take(&mut plan.steps).into_memory());
        }
        plan
    }

    /// Keeps only the records up to replay time `t` (a round in mid-play).
    pub fn until(mut self, t: Micros) -> Timeline {
        match &mut self.steps {
            Steps::Memory(steps) => steps.retain(|s| s.t <= t),
            Steps::Stream(merge) => merge.until = Some(t),
        }
        for changes in &mut self.tags {
            changes.retain(|(when, _)| *when <= t);
        }
        self
    }

    /// The boards (device names), in the order of their first record.
    pub fn boards(&self) -> impl Iterator<Item = &str> + '_ {
        self.devices.iter().map(|s| s.name.as_str())
    }
    /// The board numbers the captures recorded (`tags.number`, the last one of each device),
    /// by device name.
    pub fn numbers(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.devices.iter().zip(&self.tags).filter_map(|(s, tags)| {
            let n = tags.iter().rev().find_map(|(_, t)| t.number)?;
            Some((s.name.as_str(), n))
        })
    }

    /// The round the captures name (the `R` of their first `Round "R.B"` tag).
    pub fn round(&self) -> Option<u32> {
        self.tags.iter().flatten().find_map(|(_, t)| {
            let r = t.round.as_deref()?;
            r.split('.').next()?.trim().parse().ok()
        })
    }

    /// The event the captures name (their first `Event` tag), as `eboardd replay` tags games.
    pub fn event(&self) -> Option<String> {
        self.tags
            .iter()
            .flatten()
            .find_map(|(_, t)| t.event.clone())
    }

    /// The site the captures name (their first `Site` tag), as `eboardd replay` tags games.
    pub fn site(&self) -> Option<String> {
        self.tags.iter().flatten().find_map(|(_, t)| t.site.clone())
    }

    /// The PGN date (`YYYY.MM.DD`) of the replay's start: the earliest capture's creation.
    pub fn date(&self) -> Option<String> {
        self.date_at(0)
    }

    /// The PGN date at replay time `t`, in the time zone the earliest `created` was written
    /// with (the daemon writes UTC), so that every machine prints the same.
    fn date_at(&self, t: Micros) -> Option<String> {
        let at = self
            .origin?
            .checked_add_signed(chrono::TimeDelta::microseconds(t))?;
        Some(at.format("%Y.%m.%d").to_string())
    }

    /// The tags of device `d` in force at replay time `t`.
    fn tags_at(&self, d: usize, t: Micros) -> GameTags {
        self.tags[d]
            .iter()
            .rfind(|(when, _)| *when <= t)
            .map(|(_, tags)| tags.clone())
            .unwrap_or_default()
    }

    /// Non-fatal problems met reading and laying out the captures (cut-off lines, unknown
    /// drivers).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }
}

/// Every capture file under `paths`, each directory's sorted; an error for a directory that
/// holds none.
fn files_under(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CaptureError> {
    let mut files = Vec::new();
    for p in paths {
        let io = |source| CaptureError::Io {
            file: p.display().to_string(),
            source,
        };
        let found = capture_files(p).map_err(io)?;
        if found.is_empty() {
            return Err(io(io::Error::new(
                io::ErrorKind::NotFound,
                "no capture files (*.jsonl) in this directory",
            )));
        }
        files.extend(found);
    }
    Ok(files)
}

/// Every capture file under `path` (itself when it is a file), sorted. Links to folders are
/// not followed (a loop would never end).
fn capture_files(path: &Path) -> io::Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            let p = e.path();
            if e.file_type()?.is_dir() {
                stack.push(p);
            } else if p.is_dir() {
                // A link to a folder: skipped.
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A label per file that tells files apart: its name without the extension, with as many of
/// its folders in front as it takes to differ from every other file's (`#N` for the same file
/// given again).
fn labels(files: &[PathBuf]) -> Vec<String> {
    let parts: Vec<Vec<String>> = files
        .iter()
        .map(|f| {
            let mut c: Vec<String> = f
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            c.reverse();
            c
        })
        .collect();
    let label = |i: usize, depth: usize| {
        let mut p: Vec<&str> = parts[i].iter().take(depth).map(String::as_str).collect();
        p.reverse();
        p.join("/")
    };
    let mut depth = vec![1; files.len()];
    loop {
        let mut seen: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for (i, &d) in depth.iter().enumerate() {
            seen.entry(label(i, d)).or_default().push(i);
        }
        let mut deeper = false;
        for same in seen.values().filter(|v| v.len() > 1) {
            for &i in same {
                if depth[i] < parts[i].len() {
                    depth[i] += 1;
                    deeper = true;
                }
            }
        }
        if !deeper {
            break;
        }
    }
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    (0..files.len())
        .map(|i| {
            let l = label(i, depth[i]);
            let n = count.entry(l.clone()).or_default();
            *n += 1;
            if *n == 1 { l } else { format!("{l}#{n}") }
        })
        .collect()
}

/// Per capture (label, summary), the replay name of each of its device ids ([`Layout`]).
fn names(
    files: &[(&str, &Summary)],
    offsets: &[Micros],
    layout: Layout,
) -> Vec<BTreeMap<String, String>> {
    // Devices to tell apart: (file, id) of an id whose records in two files overlap in time.
    let mut renamed: BTreeSet<(usize, &str)> = BTreeSet::new();
    if layout == Layout::AsRecorded && files.len() > 1 {
        let mut spans: BTreeMap<&str, Vec<(Micros, Micros, usize)>> = BTreeMap::new();
        for (fi, (_, summary)) in files.iter().enumerate() {
            for (dev, span) in &summary.spans {
                let (a, b) = (offsets[fi] + span.low, offsets[fi] + span.high);
                spans.entry(dev).or_default().push((a, b, fi));
            }
        }
        for (dev, mut v) in spans {
            v.sort();
            if v.windows(2).any(|w| w[1].0 <= w[0].1) {
                renamed.extend(v.iter().map(|&(_, _, fi)| (fi, dev)));
            }
        }
    }
    files
        .iter()
        .enumerate()
        .map(|(fi, (label, summary))| {
            let ids = &summary.ids;
            ids.iter()
                .map(|id| {
                    let id = id.as_str();
                    let name = match layout {
                        Layout::Round if ids.len() == 1 => format!("board-{}", fi + 1),
                        Layout::Round => format!("f{}-{id}", fi + 1),
                        Layout::AsRecorded if renamed.contains(&(fi, id)) => {
                            format!("{label}/{id}")
                        }
                        Layout::AsRecorded => id.to_string(),
                    };
                    (id.to_string(), name)
                })
                .collect()
        })
        .collect()
}

/// A board as its capture's replay left it: what the daemon carries on with after a restart.
#[derive(Debug)]
pub struct Replayed {
    /// Its decoder and core, every record applied (pending decisions not taken: the board goes
    /// on live).
    pub device: Device,
    /// The tags in force at the end, when the capture carries any.
    pub tags: Option<GameTags>,
    /// White's clock side as the last `set_clock_side` record fixed it.
    pub white_clock: Option<ClockSide>,
    /// The round of each of its games, as [`Playback::pgn`] tags the game (`R` of the `Round`
    /// `"R.B"` in force at its last move); `None` where the tags give no round.
    pub rounds: Vec<Option<u32>>,
}

/// The round number of a PGN `Round` tag (`"3.12"` → 3, `"3"` → 3).
pub fn round_number(tag: &str) -> Option<u32> {
    tag.split('.').next()?.trim().parse().ok()
}

/// A [`Timeline`] being played, one record at a time.
#[derive(Debug)]
pub struct Playback {
    plan: Timeline,
    devices: Vec<Device>,
    white_clock: Vec<Option<ClockSide>>,
    /// Replay time of the last record played.
    t: Micros,
    events: Vec<CoreEvent>,
    warnings: Vec<String>,
    /// Each board keeps only its latest games ([`Playback::forgetting_finished_games`]).
    forget: bool,
}

impl Playback {
    /// Sets up the plan's devices, ready to play its first record.
    pub fn new(plan: Timeline) -> Playback {
        Playback {
            devices: plan.devices.iter().map(Setup::device).collect(),
            white_clock: vec![None; plan.devices.len()],
            warnings: plan.warnings.clone(),
            plan,
            t: 0,
            events: Vec::new(),
            forget: false,
        }
    }

    /// The session, its boards forgetting their finished games as new ones start (as the
    /// live daemon's do: [`crate::core::engine::BoardEngine::forget_finished`]), for a replay
    /// whose events are its output (a hub keeps the games): memory does not grow with the
    /// games played. [`Playback::pgn`] then has the latest games only.
    pub fn forgetting_finished_games(mut self) -> Playback {
        self.forget = true;
        self
    }

    /// Plays every record of `plan`, then lets every board take its pending decisions.
    pub fn play(plan: Timeline, sink: &mut Sink<'_>) -> io::Result<Playback> {
        let mut session = Playback::new(plan);
        session.run(sink)?;
        session.finish(sink)?;
        Ok(session)
    }

    /// [`Playback::play`] with the boards on `workers` threads (boards are independent): the
    /// same events in the same order (`sink` sees them after every board is done, in the order
    /// [`Playback::play`] gives them), the same warnings and games. `sink` `None`: no event is
    /// kept (PGN only).
    pub fn play_parallel(
        plan: Timeline,
        sink: Option<&mut Sink<'_>>,
        workers: usize,
    ) -> io::Result<Playback> {
        let n = plan.devices.len();
        if workers <= 1 || n <= 1 {
            let mut none = |_: &str, _: &CoreEvent| Ok(());
            return Playback::play(plan, sink.unwrap_or(&mut none));
        }
        let keep = sink.is_some();
        let mut plan = plan;
        let all: Vec<Step> = std::mem::take(&mut plan.steps).into_memory().into();
        let end_t = all.iter().map(|s| s.t).max().unwrap_or(0);
        let steps = all.len();
        let mut per_device: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, s) in all.iter().enumerate() {
            per_device[s.device].push(i);
        }
        // Per board: its device, White's clock side, (step, event) and (step, warning) in order;
        // the events of the end of input are keyed after every step, in board order.
        type Played = (
            Device,
            Option<ClockSide>,
            Vec<(usize, CoreEvent)>,
            Vec<(usize, String)>,
        );
        let devices: Vec<usize> = (0..n).collect();
        let results: Vec<Played> = crate::parallel::map_in_order(&devices, workers, |&d| {
            let mut device = plan.devices[d].device();
            let (mut white, mut events, mut warnings) = (None, Vec::new(), Vec::new());
            let mut buf = Vec::new();
            for &i in &per_device[d] {
                let step = &all[i];
                match apply_record(&mut device, step.t, &step.kind, &mut buf) {
                    Applied::Ignored { value, error } => {
                        warnings.push((i, format!("ignored operator action {value}: {error}")))
                    }
                    Applied::Operator(OperatorAction::SetClockSide { white: w }) => {
                        white = Some(*w);
                    }
                    Applied::Fed | Applied::Operator(_) | Applied::Tags(_) => {}
                }
                if keep {
                    events.extend(buf.drain(..).map(|e| (i, e)));
                } else {
                    buf.clear();
                }
            }
            device.engine.finish(end_t, &mut buf);
            if keep {
                events.extend(buf.drain(..).map(|e| (steps + d, e)));
            }
            (device, white, events, warnings)
        });
        let mut session = Playback {
            warnings: plan.warnings.clone(),
            devices: Vec::with_capacity(n),
            white_clock: Vec::with_capacity(n),
            t: end_t,
            events: Vec::new(),
            plan,
            forget: false,
        };
        let mut events: Vec<(usize, usize, CoreEvent)> = Vec::new();
        let mut warnings: Vec<(usize, String)> = Vec::new();
        for (d, (device, white, evs, warns)) in results.into_iter().enumerate() {
            session.devices.push(device);
            session.white_clock.push(white);
            events.extend(evs.into_iter().map(|(i, e)| (i, d, e)));
            warnings.extend(warns);
        }
        // Each key is one board's (a step is one board's record): a stable sort by key keeps
        // every board's own order.
        events.sort_by_key(|(i, _, _)| *i);
        warnings.sort_by_key(|(i, _)| *i);
        session
            .warnings
            .extend(warnings.into_iter().map(|(_, w)| w));
        if let Some(sink) = sink {
            for (_, d, e) in &events {
                sink(&session.plan.devices[*d].name, e)?;
            }
        }
        Ok(session)
    }

    /// Replay time of the next record, if any is left.
    pub fn next_t(&self) -> Option<Micros> {
        self.plan.steps.peek_t()
    }

    /// Plays the next record; `false` when none was left.
    pub fn step(&mut self, sink: &mut Sink<'_>) -> io::Result<bool> {
        let step = self.plan.steps.next();
        self.warnings.extend(self.plan.steps.take_warnings());
        let Some(step) = step else {
            return Ok(false);
        };
        self.t = self.t.max(step.t);
        let device = &mut self.devices[step.device];
        match apply_record(device, step.t, &step.kind, &mut self.events) {
            Applied::Ignored { value, error } => self
                .warnings
                .push(format!("ignored operator action {value}: {error}")),
            Applied::Operator(OperatorAction::SetClockSide { white }) => {
                self.white_clock[step.device] = Some(*white);
            }
            Applied::Fed | Applied::Operator(_) | Applied::Tags(_) => {}
        }
        if self.forget && device.engine.games().len() > 2 {
            device.engine.forget_finished();
        }
        let name = &self.plan.devices[step.device].name;
        for e in self.events.drain(..) {
            sink(name, &e)?;
        }
        Ok(true)
    }

    /// Plays every record left.
    pub fn run(&mut self, sink: &mut Sink<'_>) -> io::Result<()> {
        while self.step(sink)? {}
        Ok(())
    }

    /// End of input: every board takes its pending decisions.
    pub fn finish(&mut self, sink: &mut Sink<'_>) -> io::Result<()> {
        for (setup, device) in self.plan.devices.iter().zip(&mut self.devices) {
            device.engine.finish(self.t, &mut self.events);
            for e in self.events.drain(..) {
                sink(&setup.name, &e)?;
            }
        }
        Ok(())
    }

    /// An operator action for `board` now (at the last record's time), from outside the
    /// captures (an arbiter watching a replay); `false` for a board the replay does not have.
    pub fn operator(
        &mut self,
        board: &str,
        action: OperatorAction,
        sink: &mut Sink<'_>,
    ) -> io::Result<bool> {
        let Some(d) = self.plan.devices.iter().position(|s| s.name == board) else {
            return Ok(false);
        };
        self.devices[d]
            .engine
            .handle(self.t, &Observation::Operator(action), &mut self.events);
        for e in self.events.drain(..) {
            sink(board, &e)?;
        }
        Ok(true)
    }

    /// Board `board`'s device, to seed it before the first record is played (a restart that
    /// resumes from a saved point, `crate::core::engine::seed`); `None`: no such board.
    pub fn device_mut(&mut self, board: &str) -> Option<&mut Device> {
        let d = self.plan.devices.iter().position(|s| s.name == board)?;
        self.devices.get_mut(d)
    }

    /// The devices, in the plan's order.
    pub fn devices(&self) -> impl Iterator<Item = &Device> {
        self.devices.iter()
    }

    /// Non-fatal problems met: the plan's, then those met playing (unknown operator actions).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Every game of every board as PGN, in the order the games started; each game with the
    /// tags of its own round ([`Playback::game_tags`]) and the date
    /// of its start.
    pub fn pgn(&self) -> String {
        let mut games: Vec<_> = self
            .devices
            .iter()
            .enumerate()
            .flat_map(|(d, dev)| dev.engine.games().iter().map(move |g| (d, g)))
            .collect();
        games.sort_by_key(|(d, g)| (g.started_at, *d, g.number));
        let mut out = String::new();
        for (d, game) in games {
            let tags = GameTags {
                date: self.plan.date_at(game.started_at),
                board: Some(self.plan.devices[d].name.clone()),
                ..self.game_tags(d, game)
            };
            pgn::write_game(game, &tags, &mut out);
        }
        out
    }

    /// The tags in force for `game` of device `d`. A game belongs to the round it started in
    /// (the `R` of the `Round "R.B"` in force at its start): it has the last tags of that round
    /// set before the board's next game starts, so players corrected in its round apply and
    /// the next round's players (a `set_tags` of another round, loaded while it ran or after
    /// it) do not rename it. A game whose tags name no round has those in force at its last
    /// move (at its start when it has none).
    fn game_tags(&self, d: usize, game: &GameRecord) -> GameTags {
        let round_of = |tags: &GameTags| tags.round.as_deref().and_then(round_number);
        let started = self.plan.tags_at(d, game.started_at);
        let Some(own) = round_of(&started) else {
            let at = game.moves.last().map_or(game.started_at, |m| m.made_at);
            return self.plan.tags_at(d, at);
        };
        let next = self.devices[d]
            .engine
            .games()
            .iter()
            .map(|g| g.started_at)
            .filter(|&t| t > game.started_at)
            .min()
            .unwrap_or(Micros::MAX);
        self.plan.tags[d]
            .iter()
            .rfind(|(when, tags)| *when < next && round_of(tags) == Some(own))
            .map_or(started, |(_, tags)| tags.clone())
    }

    /// Board `id` as the replay left it (a fresh wired `dgt` board when the captures have
    /// no such device).
    pub fn into_board(mut self, id: &str) -> Replayed {
        match self.plan.devices.iter().position(|s| s.name == id) {
            Some(d) => {
                let rounds = self.devices[d]
                    .engine
                    .games()
                    .iter()
                    .map(|g| self.game_tags(d, g).round.as_deref().and_then(round_number))
                    .collect();
                Replayed {
                    device: self.devices.swap_remove(d),
                    tags: self.plan.tags[d].last().map(|(_, tags)| tags.clone()),
                    white_clock: self.white_clock[d],
                    rounds,
                }
            }
            None => Replayed {
                device: Setup::of(&Header::new(Map::new()), id, id.to_string())
                    .0
                    .device(),
                tags: None,
                white_clock: None,
                rounds: Vec::new(),
            },
        }
    }
}

/// `eboardd replay`: replays the captures under `paths` (files, or directories searched for
/// `*.jsonl`) and writes every game as PGN, or the events as JSON Lines when `events` is set,
/// to `out`; warnings go to `warn`.
pub fn replay_paths(
    paths: &[PathBuf],
    events: bool,
    out: &mut dyn Write,
    warn: &mut dyn FnMut(&str),
) -> Result<(), ReplayError> {
    let plan = Timeline::load(paths, Layout::AsRecorded)?;
    let mut seq = 0u64;
    let mut sink = |board: &str, e: &CoreEvent| -> io::Result<()> {
        seq += 1;
        writeln!(out, "{}", EventEnvelope::new(seq, board, e).to_json())
    };
    let session =
        Playback::play_parallel(plan, events.then_some(&mut sink), crate::parallel::cores())?;
    for w in session.warnings() {
        warn(w);
    }
    if !events {
        out.write_all(session.pgn().as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn data(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/captures")
            .join(path)
    }

    fn pgn_of(paths: &[PathBuf]) -> String {
        let mut out = Vec::new();
        replay_paths(paths, false, &mut out, &mut |_| {}).unwrap();
        String::from_utf8(out).unwrap()
    }

    /// (Board tag, moves) of every game.
    fn games(pgn: &str) -> Vec<(String, Vec<shakmaty::Move>)> {
        crate::sim::pgn::parse_games(pgn)
            .into_iter()
            .map(|g| {
                let g = g.unwrap();
                (g.tag("Board").unwrap_or("").to_string(), g.moves)
            })
            .collect()
    }

    fn capture(header: Value, records: &[(f64, &str, &str)]) -> Capture {
        let mut text = header.to_string();
        for (t, dev, note) in records {
            text.push('\n');
            text.push_str(&serde_json::json!({"t": t, "dev": dev, "note": note}).to_string());
        }
        capture::parse_capture("test.jsonl", &text).unwrap()
    }

    fn header(created: &str) -> Value {
        serde_json::json!({"format": "eboard-capture", "version": 1, "created": created})
    }

    /// The (time, device name, note) of every step.
    fn steps(plan: &Timeline) -> Vec<(Micros, &str, &str)> {
        let Steps::Memory(steps) = &plan.steps else {
            panic!("a plan in memory")
        };
        steps
            .iter()
            .map(|s| {
                let RecordKind::Note(n) = &s.kind else {
                    panic!("{s:?}")
                };
                (s.t, plan.devices[s.device].name.as_str(), n.as_str())
            })
            .collect()
    }

    #[test]
    fn unrelated_captures_of_one_device_id_stay_apart() {
        // Every sample capture, all made as `board-1` at the same time, and their names clash
        // across folders (`clean/g0001`, `human/g0001`...).
        let dir = data("");
        let files = capture_files(&dir).unwrap();
        assert!(files.len() >= 100);
        let all = pgn_of(std::slice::from_ref(&dir));
        let merged = games(&all);
        assert_eq!(merged.len(), files.len());
        for f in &files {
            let folder = f.parent().unwrap().file_name().unwrap().to_string_lossy();
            let stem = f.file_stem().unwrap().to_string_lossy();
            let board = format!("{folder}/{stem}/board-1");
            // Each game as when its file is replayed alone.
            let alone = games(&pgn_of(std::slice::from_ref(f))).remove(0).1;
            let here = merged.iter().find(|(b, _)| *b == board);
            assert_eq!(here.map(|(_, m)| m), Some(&alone), "{board}");
        }
    }

    #[test]
    fn captures_merge_by_absolute_time_and_one_stays_as_it_is() {
        let a = capture(
            header("2026-11-29T10:00:00Z"),
            &[(0.0, "board-1", "a0"), (2.0, "board-1", "a2")],
        );
        // Created a second later, another board.
        let b = capture(
            header("2026-11-29T10:00:01Z"),
            &[(0.0, "board-2", "b1"), (1.0, "board-2", "b2")],
        );
        let plan = Timeline::new(vec![("a".into(), a), ("b".into(), b)], Layout::AsRecorded);
        assert_eq!(
            steps(&plan),
            [
                (0, "board-1", "a0"),
                (1_000_000, "board-2", "b1"),
                // Equal times: the earlier capture first.
                (2_000_000, "board-1", "a2"),
                (2_000_000, "board-2", "b2"),
            ]
        );
        assert_eq!(plan.date().as_deref(), Some("2026.11.29"));
        // One capture whose records go back in time (built, not read): played as it is.
        let records = [(5, "x"), (3, "y"), (4, "z")]
            .map(|(t, n)| Record {
                t,
                dev: "board-1".into(),
                kind: RecordKind::Note(n.into()),
            })
            .to_vec();
        let plan = Timeline::from_records(records);
        assert_eq!(
            steps(&plan),
            [
                (5, "board-1", "x"),
                (3, "board-1", "y"),
                (4, "board-1", "z")
            ]
        );
        assert_eq!(plan.date(), None);
    }

    #[test]
    fn a_device_in_two_captures_is_one_board_unless_their_times_overlap() {
        let day = |created: &str| capture(header(created), &[(0.0, "board-1", "n")]);
        let plan = Timeline::new(
            vec![
                ("d1/board-1".into(), day("2026-11-29T10:00:00Z")),
                ("d2/board-1".into(), day("2026-11-30T10:00:00Z")),
            ],
            Layout::AsRecorded,
        );
        assert_eq!(plan.boards().collect::<Vec<_>>(), ["board-1"]);
        assert_eq!(steps(&plan).len(), 2);
        let plan = Timeline::new(
            vec![
                ("x".into(), day("2026-11-29T10:00:00Z")),
                ("y".into(), day("2026-11-29T10:00:00Z")),
            ],
            Layout::AsRecorded,
        );
        assert_eq!(
            plan.boards().collect::<Vec<_>>(),
            ["x/board-1", "y/board-1"]
        );
        // A round: every capture its own board, all from t = 0.
        let plan = Timeline::new(
            vec![
                ("x".into(), day("2026-11-29T10:00:00Z")),
                ("y".into(), day("2026-11-30T10:00:00Z")),
            ],
            Layout::Round,
        );
        assert_eq!(plan.boards().collect::<Vec<_>>(), ["board-1", "board-2"]);
        assert!(steps(&plan).iter().all(|(t, _, _)| *t == 0));
    }

    #[test]
    fn labels_take_folders_only_to_tell_files_apart() {
        let files: Vec<PathBuf> = ["c/clean/g1.jsonl", "c/human/g1.jsonl", "c/human/g2.jsonl"]
            .iter()
            .map(PathBuf::from)
            .collect();
        assert_eq!(labels(&files), ["clean/g1", "human/g1", "g2"]);
        let twice = [PathBuf::from("a/g1.jsonl"), PathBuf::from("a/g1.jsonl")];
        assert_eq!(labels(&twice), ["a/g1", "a/g1#2"]);
    }

    #[test]
    fn line_captures_hold_no_board() {
        let line = capture(
            serde_json::json!({"format": "eboard-capture", "version": 1,
                "created": "2026-11-29T10:00:00Z", "board": "line-ttyUSB0",
                "devices": [{"id": "line-ttyUSB0", "driver": "nonesuch", "role": "line"}]}),
            &[(0.0, "line-ttyUSB0", "n")],
        );
        let board = capture(header("2026-11-29T10:00:00Z"), &[(1.0, "board-1", "n")]);
        let plan = Timeline::new(
            vec![("line".into(), line), ("board".into(), board)],
            Layout::AsRecorded,
        );
        assert_eq!(plan.boards().collect::<Vec<_>>(), ["board-1"]);
        assert_eq!(steps(&plan).len(), 1);
        assert!(plan.warnings().is_empty(), "{:?}", plan.warnings());
    }

    #[test]
    fn header_tags_are_the_boards_or_every_devices() {
        let two = |board: Option<&str>| {
            let mut h = header("2026-11-29T10:00:00Z");
            h["tags"] = serde_json::json!({"white": "W"});
            if let Some(b) = board {
                h["board"] = b.into();
            }
            let cap = capture(h, &[(0.0, "a", "n"), (0.0, "b", "n")]);
            let plan = Timeline::from_capture(cap);
            (0..2).map(|d| plan.tags_at(d, 0).white).collect::<Vec<_>>()
        };
        assert_eq!(two(Some("b")), [None, Some("W".to_string())]);
        assert_eq!(two(None), [Some("W".to_string()), Some("W".to_string())]);
    }
}
