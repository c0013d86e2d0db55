//! The captures' records as they are played: met once to lay them out ([`Summary`]), then
//! merged by time from memory or from the files again ([`Merge`], [`Steps`]).

use std::collections::{BTreeMap, BinaryHeap};
use std::io::{self};
use std::path::PathBuf;

use crate::capture::{self, Header, OpRecord, Record, RecordKind};
use crate::core::observation::Micros;
use crate::pgn::TagUpdate;

/// One record to play: its time in the replay, its device (index), what it carries.
#[derive(Debug)]
pub(super) struct Step {
    pub(super) t: Micros,
    pub(super) device: usize,
    pub(super) kind: RecordKind,
}

/// What laying captures out takes from one of them, met record by record (its records need
/// not be kept).
#[derive(Debug, Default)]
pub(super) struct Summary {
    /// Device ids, in the order the header lists them and then of their first record.
    pub(super) ids: Vec<String>,
    /// Per device id: its first record (order key) and the time of its last.
    pub(super) spans: BTreeMap<String, Span>,
    /// The `set_tags` records: order key, device id, update.
    pub(super) set_tags: Vec<(Key, String, TagUpdate)>,
    /// Records met.
    pub(super) records: usize,
    /// The order key of the first record.
    pub(super) first: Option<Key>,
    /// The largest `t` so far (the order of a capture whose `t` went back, see [`Key`]).
    pub(super) running: Micros,
}

/// Where a record of a capture falls in the merge, its capture's offset aside: the largest `t`
/// of the capture up to it (a record whose `t` went back is played right after the one before
/// it, as the merge takes them), then its position in the capture.
pub(super) type Key = (Micros, usize);

/// The records of one device in one capture.
#[derive(Debug, Clone, Copy)]
pub(super) struct Span {
    pub(super) first: Key,
    /// The smallest and largest `t` of its records (whether two captures' uses of one device id
    /// overlap).
    pub(super) low: Micros,
    pub(super) high: Micros,
}

impl Summary {
    /// Nothing met yet; the devices its header lists.
    pub(super) fn new(header: &Header) -> Summary {
        let mut s = Summary::default();
        for id in header.devices().map(|d| d.id).filter(|id| !id.is_empty()) {
            if !s.ids.contains(&id) {
                s.ids.push(id);
            }
        }
        s
    }

    /// Record `r`, the next of the capture.
    pub(super) fn add(&mut self, r: &Record) {
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
    pub(super) fn of(header: &Header, records: &[Record]) -> Summary {
        let mut s = Summary::new(header);
        records.iter().for_each(|r| s.add(r));
        s
    }
}

/// Where a capture's records come from as they are played.
#[derive(Debug)]
pub(super) enum Source {
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
    pub(super) fn next(&mut self, warnings: &mut Vec<String>) -> Option<Record> {
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
pub(super) struct Merge {
    /// Per capture: its records, its offset, its device ids' device indices.
    pub(super) sources: Vec<(Source, Micros, BTreeMap<String, usize>)>,
    /// Each capture's next record, waiting for its turn.
    pub(super) heads: Vec<Option<Record>>,
    pub(super) queue: BinaryHeap<std::cmp::Reverse<(Micros, usize)>>,
    /// Records after this time are not played ([`Timeline::until`]).
    pub(super) until: Option<Micros>,
    /// Problems met reading captures again.
    pub(super) warnings: Vec<String>,
}

impl Merge {
    /// The replay time of the next record.
    pub(super) fn peek_t(&self) -> Option<Micros> {
        let std::cmp::Reverse((t, _)) = self.queue.peek()?;
        Some(*t).filter(|t| self.until.is_none_or(|u| *t <= u))
    }

    /// The next record to play.
    pub(super) fn next(&mut self) -> Option<Step> {
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
pub(super) enum Steps {
    Memory(std::collections::VecDeque<Step>),
    Stream(Box<Merge>),
}

impl Default for Steps {
    fn default() -> Steps {
        Steps::Memory(Default::default())
    }
}

impl Steps {
    pub(super) fn peek_t(&self) -> Option<Micros> {
        match self {
            Steps::Memory(steps) => steps.front().map(|s| s.t),
            Steps::Stream(merge) => merge.peek_t(),
        }
    }

    pub(super) fn next(&mut self) -> Option<Step> {
        match self {
            Steps::Memory(steps) => steps.pop_front(),
            Steps::Stream(merge) => merge.next(),
        }
    }

    /// Problems met reading captures again since the last call.
    pub(super) fn take_warnings(&mut self) -> Vec<String> {
        match self {
            Steps::Memory(_) => Vec::new(),
            Steps::Stream(merge) => std::mem::take(&mut merge.warnings),
        }
    }

    /// Every step, in memory.
    pub(super) fn into_memory(self) -> std::collections::VecDeque<Step> {
        match self {
            Steps::Memory(steps) => steps,
            Steps::Stream(mut merge) => std::iter::from_fn(|| merge.next()).collect(),
        }
    }
}
