//! Captures as a live source: records go through the same decoder and board engines as
//! `eboardd replay`, at the recorded pace (or faster), and every event is published to a
//! [`Hub`] — a stand-in for the live daemon, for tests, demos and load runs.
//!
//! Two layouts:
//! - *sequential* (as `eboardd replay`): captures play one after another, each continuing in
//!   time where the previous ended, and devices keep their ids, so the published stream equals
//!   `eboardd replay --events` of the same files;
//! - *boards*: every file is its own board (`board-N` for file N, or `fN-DEV` when a file has
//!   several devices) and all start together, as in a round.
//!
//! Operator actions that arrive over HTTP ([`Control`]) are fed to the board's engine at the
//! current replay time.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::hub::{Control, ControlError, Hub};
use crate::capture::{self, RecordKind};
use crate::core::engine::EngineConfig;
use crate::core::event::CoreEvent;
use crate::core::observation::{Micros, Observation, OperatorAction};
use crate::device::{Applied, Device, apply_record};
use crate::driver::BoardDriver;

/// One record to play: time, board id, what.
#[derive(Debug, Clone)]
struct Step {
    t: Micros,
    board: Arc<str>,
    kind: RecordKind,
}

/// Captures loaded and laid out in time.
#[derive(Debug, Default)]
pub struct Plan {
    steps: Vec<Step>,
    /// Board ids in order of first appearance.
    pub boards: Vec<String>,
    /// Date of the first capture (`YYYY.MM.DD`), from its header.
    pub date: Option<String>,
    /// Warnings of the capture reader.
    pub warnings: Vec<String>,
    /// Each board's driver, from its capture's header.
    drivers: BTreeMap<String, &'static dyn BoardDriver>,
}

impl Plan {
    /// Load capture files; `separate`: one board per file, all starting at once.
    pub fn load(files: &[PathBuf], separate: bool) -> Result<Plan, capture::CaptureError> {
        let caps = files
            .iter()
            .map(|p| capture::read_capture(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Plan::from_captures(&caps, separate))
    }

    /// Lay out loaded captures.
    pub fn from_captures(caps: &[capture::Capture], separate: bool) -> Plan {
        let mut plan = Plan {
            date: caps.first().and_then(|c| capture::header_date(&c.header)),
            ..Plan::default()
        };
        let mut names: BTreeMap<String, Arc<str>> = BTreeMap::new();
        let mut last_t: Micros = 0;
        for (i, cap) in caps.iter().enumerate() {
            plan.warnings.extend(cap.warnings.iter().cloned());
            let devs: std::collections::BTreeSet<&str> =
                cap.records.iter().map(|r| r.dev.as_str()).collect();
            let offset = if separate { 0 } else { last_t };
            for r in &cap.records {
                let id = if !separate {
                    r.dev.clone()
                } else if devs.len() == 1 {
                    format!("board-{}", i + 1)
                } else {
                    format!("f{}-{}", i + 1, r.dev)
                };
                let board = names
                    .entry(id.clone())
                    .or_insert_with(|| {
                        let (driver, warning) = crate::replay::driver_of(&cap.header.extra, &r.dev);
                        plan.warnings.extend(warning);
                        plan.drivers.insert(id.clone(), driver);
                        plan.boards.push(id.clone());
                        Arc::from(id.as_str())
                    })
                    .clone();
                let t = r.t + offset;
                if !separate {
                    last_t = last_t.max(t);
                }
                plan.steps.push(Step {
                    t,
                    board,
                    kind: r.kind.clone(),
                });
            }
        }
        if separate {
            // A stable sort keeps each file's own order for equal times.
            plan.steps.sort_by_key(|s| s.t);
        }
        plan
    }

    /// Keep only the records up to event time `t` (to show a round in mid-play).
    pub fn until(mut self, t: Micros) -> Plan {
        self.steps.retain(|s| s.t <= t);
        self
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether there is nothing to play.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Event time of the last record.
    pub fn duration(&self) -> Micros {
        self.steps.last().map_or(0, |s| s.t)
    }
}

/// A running replay.
#[derive(Debug)]
pub struct ReplayHandle {
    stop: Arc<AtomicBool>,
    /// Turns true when every record has been played and the engines finished.
    pub done: tokio::sync::watch::Receiver<bool>,
    /// Events published so far.
    pub events: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ReplayHandle {
    /// Wait until every record has been played.
    pub async fn wait_done(&mut self) {
        let _ = self.done.wait_for(|d| *d).await;
    }

    /// Stop the replay thread (also after it finished: it keeps serving operator actions).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ReplayHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

struct ReplayControl {
    tx: Mutex<mpsc::Sender<(String, OperatorAction)>>,
}

impl Control for ReplayControl {
    fn operator(&self, board: &str, action: OperatorAction) -> Result<(), ControlError> {
        self.tx
            .lock()
            .map_err(|_| ControlError::Stopped("the replay"))?
            .send((board.to_string(), action))
            .map_err(|_| ControlError::Stopped("the replay"))
    }
}

struct Runner {
    hub: Hub,
    drivers: BTreeMap<String, &'static dyn BoardDriver>,
    devices: BTreeMap<Arc<str>, Device>,
    order: Vec<Arc<str>>,
    events: Vec<CoreEvent>,
    count: Arc<AtomicU64>,
    t: Micros,
}

impl Runner {
    fn device(&mut self, board: &Arc<str>) -> &mut Device {
        if !self.devices.contains_key(board) {
            self.order.push(board.clone());
            let driver = self
                .drivers
                .get(&**board)
                .copied()
                .unwrap_or_else(crate::driver::default);
            self.devices.insert(
                board.clone(),
                Device::with_driver(board, driver, EngineConfig::default()),
            );
        }
        self.devices.get_mut(board).expect("inserted")
    }

    fn publish(&mut self, board: &str) {
        for e in self.events.drain(..) {
            self.hub.publish(board, &e);
            self.count.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn step(&mut self, s: &Step) {
        self.t = self.t.max(s.t);
        let mut events = std::mem::take(&mut self.events);
        let device = self.device(&s.board);
        match apply_record(device, s.t, &s.kind, &mut events) {
            Applied::Ignored { value, error } => {
                tracing::warn!("ignored operator action {value}: {error}")
            }
            Applied::Fed | Applied::Operator(_) | Applied::Tags(_) => {}
        }
        self.events = events;
        self.publish(&s.board);
    }

    fn operator(&mut self, board: &str, action: OperatorAction) {
        let Some((key, _)) = self.devices.get_key_value(board) else {
            tracing::warn!("operator action for unknown board {board}");
            return;
        };
        let key = key.clone();
        let t = self.t;
        let mut events = std::mem::take(&mut self.events);
        if let Some(d) = self.devices.get_mut(&key) {
            d.engine
                .handle(t, &Observation::Operator(action), &mut events);
        }
        self.events = events;
        self.publish(&key);
    }

    fn finish(&mut self) {
        for id in self.order.clone() {
            let mut events = std::mem::take(&mut self.events);
            if let Some(d) = self.devices.get_mut(&id) {
                d.engine.finish(self.t, &mut events);
            }
            self.events = events;
            self.publish(&id);
        }
    }
}

/// Play `plan` into `hub` on a thread of its own. `speed`: event seconds per wall second
/// (`None` or 0: as fast as possible). After the last record the engines take their pending
/// decisions; the thread then keeps serving operator actions until stopped.
pub fn spawn(hub: Hub, plan: Plan, speed: Option<f64>) -> ReplayHandle {
    let (tx, rx) = mpsc::channel::<(String, OperatorAction)>();
    hub.set_control(Arc::new(ReplayControl { tx: Mutex::new(tx) }));
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done) = tokio::sync::watch::channel(false);
    let count = Arc::new(AtomicU64::new(0));
    let speed = speed.filter(|s| *s > 0.0 && s.is_finite());
    let thread_stop = stop.clone();
    let thread_count = count.clone();
    let thread = std::thread::Builder::new()
        .name("replay".into())
        .spawn(move || {
            let mut runner = Runner {
                hub,
                drivers: plan.drivers.clone(),
                devices: BTreeMap::new(),
                order: Vec::new(),
                events: Vec::new(),
                count: thread_count,
                t: 0,
            };
            let started = Instant::now();
            let t0 = plan.steps.first().map_or(0, |s| s.t);
            for s in &plan.steps {
                if thread_stop.load(Ordering::Relaxed) {
                    return;
                }
                if let Some(speed) = speed {
                    let due = Duration::from_secs_f64(((s.t - t0).max(0) as f64 / 1e6) / speed);
                    loop {
                        let now = started.elapsed();
                        if now >= due || thread_stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let wait = (due - now).min(Duration::from_millis(200));
                        match rx.recv_timeout(wait) {
                            Ok((b, a)) => runner.operator(&b, a),
                            Err(mpsc::RecvTimeoutError::Timeout) => {}
                            Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
                        }
                    }
                } else {
                    while let Ok((b, a)) = rx.try_recv() {
                        runner.operator(&b, a);
                    }
                }
                runner.step(s);
            }
            runner.finish();
            done_tx.send_replace(true);
            while !thread_stop.load(Ordering::Relaxed) {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok((b, a)) => runner.operator(&b, a),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
        })
        .expect("spawn replay thread");
    ReplayHandle {
        stop,
        done,
        events: count,
        thread: Some(thread),
    }
}
