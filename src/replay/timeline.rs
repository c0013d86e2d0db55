//! Captures laid out once for replay ([`Timeline`]): each device set up from its capture's
//! header, the records in the order they are played, the PGN tags of each device over time.

use super::merge::{Merge, Source, Steps, Summary};
use super::{Device, Layout};
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, FixedOffset};
use serde_json::Map;

use crate::capture::{self, Capture, CaptureError, Header, Record};
use crate::core::observation::Micros;
use crate::driver::BoardDriver;
use crate::pgn::{GameTags, TagUpdate};
use crate::session::link::LinkKind;
use crate::session::{SINGLE, Unit};

/// How one device is set up, from its capture's header.
#[derive(Debug)]
pub(super) struct Setup {
    /// The device's name in the replay (its id, or the id made distinct).
    pub(super) name: String,
    pub(super) driver: &'static dyn BoardDriver,
    pub(super) unit: Unit,
    pub(super) link: LinkKind,
    /// The serial number its header gives (its link events carry it).
    pub(super) serial: Option<String>,
}

impl Setup {
    /// Device `id` of a capture with `header`, named `name`; and a warning for a driver this
    /// build does not have. A device the header does not list is a wired `dgt` board.
    pub(super) fn of(header: &Header, id: &str, name: String) -> (Setup, Option<String>) {
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
    pub(super) fn device(&self) -> Device {
        Device::for_unit(
            &self.name,
            self.driver,
            self.unit,
            self.link.engine_config(),
        )
        .with_serial(self.serial.clone())
    }
}

/// Captures laid out for replay: the devices, the records in the order they are played, the PGN
/// tags of each device over time, the warnings met.
#[derive(Debug, Default)]
pub struct Timeline {
    pub(super) steps: Steps,
    /// In the order of their first record; devices a header lists without records last.
    pub(super) devices: Vec<Setup>,
    /// Per device, the tags in force from each time on, in time order.
    pub(super) tags: Vec<TagsOverTime>,
    /// The earliest `created`: `t` = 0 of the replay, and the PGN dates.
    pub(super) origin: Option<DateTime<FixedOffset>>,
    pub(super) warnings: Vec<String>,
}

/// The tags in force from each time on, in time order.
pub(super) type TagsOverTime = Vec<(Micros, GameTags)>;

/// One capture to lay out: its label, header, summary and records.
pub(super) type Laid = (String, Header, Summary, Source);

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
    pub(super) fn new(files: Vec<(String, Capture)>, layout: Layout) -> Timeline {
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
    pub(super) fn lay_out(mut files: Vec<Laid>, layout: Layout, stream: bool) -> Timeline {
        files.retain(|(_, header, _, _)| !header.is_line());
        let (origin, offsets) = offsets(&files, layout);
        let summaries: Vec<(&str, &Summary)> =
            files.iter().map(|(l, _, s, _)| (l.as_str(), s)).collect();
        let names = names(&summaries, &offsets, layout);
        let mut plan = Timeline {
            origin,
            ..Timeline::default()
        };
        let index = plan.set_up_devices(&files, &names, &offsets);
        let mut tags = tags_by_name(&files, &names, &offsets);
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

    /// Sets up one device per name (`names`: each file's device ids to their names), in the
    /// order of their first record in the merge (see `Key`), then those a header lists without
    /// records; the index of each name's device.
    fn set_up_devices(
        &mut self,
        files: &[Laid],
        names: &[BTreeMap<String, String>],
        offsets: &[Micros],
    ) -> BTreeMap<String, usize> {
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
            self.warnings.extend(warning);
            self.devices.push(setup);
            index.insert(name.clone(), self.devices.len() - 1);
        }
        index
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
    pub(super) fn date_at(&self, t: Micros) -> Option<String> {
        let at = self
            .origin?
            .checked_add_signed(chrono::TimeDelta::microseconds(t))?;
        Some(at.format("%Y.%m.%d").to_string())
    }

    /// The tags of device `d` in force at replay time `t`.
    pub(super) fn tags_at(&self, d: usize, t: Micros) -> GameTags {
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
pub(super) fn files_under(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CaptureError> {
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
pub(super) fn capture_files(path: &Path) -> io::Result<Vec<PathBuf>> {
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
pub(super) fn labels(files: &[PathBuf]) -> Vec<String> {
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

/// When the layout plays captures as recorded, the earliest capture's start and each
/// capture's offset from it (all 0 otherwise).
fn offsets(files: &[Laid], layout: Layout) -> (Option<DateTime<FixedOffset>>, Vec<Micros>) {
    let created: Vec<_> = files.iter().map(|(_, h, _, _)| h.created()).collect();
    let origin = created.iter().flatten().min().copied();
    let offsets = created
        .iter()
        .map(|c| match (layout, origin, c) {
            (Layout::AsRecorded, Some(o), Some(c)) => (*c - o).num_microseconds().unwrap_or(0),
            _ => 0,
        })
        .collect();
    (origin, offsets)
}

/// The tags of each device name over time: each header's from its capture's start (before its
/// first record), for its board or every device it has; then the `set_tags` records. Per
/// name: the tags now, and from each time on.
fn tags_by_name<'a>(
    files: &'a [Laid],
    names: &'a [BTreeMap<String, String>],
    offsets: &[Micros],
) -> BTreeMap<&'a str, (GameTags, TagsOverTime)> {
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
    let mut tags: BTreeMap<&str, (GameTags, TagsOverTime)> = BTreeMap::new();
    for ((t, _, _), name, update) in changes {
        let (now, list) = tags.entry(name).or_default();
        now.apply(update);
        list.push((t, now.clone()));
    }
    tags
}

/// Per capture (label, summary), the replay name of each of its device ids ([`Layout`]).
pub(super) fn names(
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
