//! `eboardd replay`: captures through the same decoding, inference and game logic as the live
//! daemon, to PGN or to the event stream.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::capture::{self, RecordKind};
use crate::core::engine::{BoardEngine, EngineConfig};
use crate::core::event::{CoreEvent, EventEnvelope};
use crate::core::observation::{Micros, Observation, OperatorAction};
use crate::pgn::{self, GameTags};
use crate::protocol::dgt::{self, DgtDecoder, DgtMessage};

/// The operator record that carries PGN tags (event, site, round, players) for a device.
pub const SET_TAGS: &str = "set_tags";

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A capture could not be read.
    #[error(transparent)]
    Capture(#[from] capture::CaptureError),
    /// Output could not be written.
    #[error("writing output: {0}")]
    Output(#[from] std::io::Error),
}

/// Device ids that a capture header's `devices` list says are on a Bluetooth link (their
/// boards scan at half speed: the core's settle windows are doubled, as the daemon did).
pub fn bluetooth_devices(header: &serde_json::Map<String, serde_json::Value>) -> Vec<&str> {
    header
        .get("devices")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
        .filter(|d| d.get("link").and_then(|l| l.as_str()) == Some("bluetooth"))
        .filter_map(|d| d.get("id").and_then(|i| i.as_str()))
        .collect()
}

/// One device of a capture: its decoder and its state machine.
#[derive(Debug)]
pub struct Device {
    /// Device id as in the capture.
    pub id: String,
    decoder: DgtDecoder,
    /// The board's state machine.
    pub engine: BoardEngine,
    messages: Vec<DgtMessage>,
}

impl Device {
    /// A device with a fresh decoder and engine.
    pub fn new(id: &str, cfg: EngineConfig) -> Self {
        Device {
            id: id.to_string(),
            decoder: DgtDecoder::new(),
            engine: BoardEngine::new(cfg),
            messages: Vec::new(),
        }
    }

    /// Feed received bytes; events go to `out`.
    pub fn receive(&mut self, t: Micros, bytes: &[u8], out: &mut Vec<CoreEvent>) {
        self.messages.clear();
        self.decoder.decode(bytes, &mut self.messages);
        for msg in &self.messages {
            if let Some(obs) = dgt::to_observation(msg) {
                self.engine.handle(t, &obs, out);
            }
        }
    }
}

/// Replays records of any number of devices, in order, through one code path.
#[derive(Debug, Default)]
pub struct Replayer {
    cfg: EngineConfig,
    devices: BTreeMap<String, Device>,
    /// Device ids in order of first appearance.
    order: Vec<String>,
    seq: u64,
    offset: Micros,
    last_t: Micros,
    /// Date from the first capture header (`YYYY.MM.DD`).
    pub date: Option<String>,
    /// Non-fatal problems met (cut-off lines, unknown operator actions).
    pub warnings: Vec<String>,
    /// PGN tags per device, from capture headers (`tags`) and `set_tags` operator records.
    tags: BTreeMap<String, GameTags>,
}

impl Replayer {
    /// A replayer with the given engine configuration.
    pub fn new(cfg: EngineConfig) -> Self {
        Replayer {
            cfg,
            ..Default::default()
        }
    }

    /// The devices seen, by id.
    pub fn devices(&self) -> impl Iterator<Item = &Device> {
        self.order.iter().filter_map(|id| self.devices.get(id))
    }

    fn device(&mut self, id: &str) -> &mut Device {
        if !self.devices.contains_key(id) {
            self.order.push(id.to_string());
            self.devices
                .insert(id.to_string(), Device::new(id, self.cfg.clone()));
        }
        self.devices.get_mut(id).expect("inserted")
    }

    /// Replay one capture; events are passed to `sink` as JSON lines when given.
    pub fn replay_capture(
        &mut self,
        cap: &capture::Capture,
        sink: &mut dyn FnMut(&str, &CoreEvent) -> std::io::Result<()>,
    ) -> Result<(), ReplayError> {
        if self.date.is_none() {
            self.date = capture::header_date(&cap.header);
        }
        self.warnings.extend(cap.warnings.iter().cloned());
        if let Some(header_tags) = cap.header.extra.get("tags") {
            let devices: std::collections::BTreeSet<String> =
                cap.records.iter().map(|r| r.dev.clone()).collect();
            for dev in devices {
                self.tags.entry(dev).or_default().apply_json(header_tags);
            }
        }
        for id in bluetooth_devices(&cap.header.extra) {
            if !self.devices.contains_key(id) {
                let mut cfg = self.cfg.clone();
                cfg.settle *= 2;
                cfg.displaced_after *= 2;
                self.order.push(id.to_string());
                self.devices.insert(id.to_string(), Device::new(id, cfg));
            }
        }
        // Captures given one after another continue in time.
        self.offset = self.last_t;
        let mut events = Vec::new();
        for record in &cap.records {
            let t = record.t + self.offset;
            self.last_t = self.last_t.max(t);
            let device = self.device(&record.dev);
            match &record.kind {
                RecordKind::Rx(bytes) => device.receive(t, bytes, &mut events),
                RecordKind::Op(value)
                    if value.get("action").and_then(|a| a.as_str()) == Some(SET_TAGS) =>
                {
                    self.tags
                        .entry(record.dev.clone())
                        .or_default()
                        .apply_json(value);
                }
                RecordKind::Op(value) => {
                    match serde_json::from_value::<OperatorAction>(value.clone()) {
                        Ok(action) => {
                            device
                                .engine
                                .handle(t, &Observation::Operator(action), &mut events)
                        }
                        Err(e) => self
                            .warnings
                            .push(format!("ignored operator action {value}: {e}")),
                    }
                }
                RecordKind::Tx(_) | RecordKind::Note(_) => {}
            }
            for e in events.drain(..) {
                sink(&record.dev, &e)?;
            }
        }
        Ok(())
    }

    /// End of input: every board takes its pending decisions.
    pub fn finish(
        &mut self,
        sink: &mut dyn FnMut(&str, &CoreEvent) -> std::io::Result<()>,
    ) -> Result<(), ReplayError> {
        let t = self.last_t;
        let mut events = Vec::new();
        for id in self.order.clone() {
            if let Some(device) = self.devices.get_mut(&id) {
                device.engine.finish(t, &mut events);
                for e in events.drain(..) {
                    sink(&id, &e)?;
                }
            }
        }
        Ok(())
    }

    /// Next event sequence number.
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Every game of every board as PGN, in the order the games started.
    pub fn pgn(&self) -> String {
        let mut games: Vec<_> = self
            .devices()
            .enumerate()
            .flat_map(|(i, d)| {
                d.engine
                    .games()
                    .iter()
                    .map(move |g| (g.started_at, i, d, g))
            })
            .collect();
        games.sort_by_key(|(t, i, _, g)| (*t, *i, g.number));
        let mut out = String::new();
        for (_, _, device, game) in games {
            let tags = GameTags {
                date: self.date.clone(),
                board: Some(device.id.clone()),
                ..self.tags.get(&device.id).cloned().unwrap_or_default()
            };
            pgn::write_game(game, &tags, &mut out);
        }
        out
    }
}

/// Replay capture files to `out`: PGN, or JSON Lines events when `events` is set.
pub fn replay_files(
    paths: &[PathBuf],
    events: bool,
    out: &mut dyn Write,
    warn: &mut dyn FnMut(&str),
) -> Result<(), ReplayError> {
    let mut replayer = Replayer::new(EngineConfig::default());
    let mut seq = 0u64;
    let mut sink = |board: &str, e: &CoreEvent| -> std::io::Result<()> {
        if events {
            seq += 1;
            writeln!(out, "{}", EventEnvelope::new(seq, board, e).to_json())?;
        }
        Ok(())
    };
    for path in paths {
        let cap = read(path)?;
        replayer.replay_capture(&cap, &mut sink)?;
    }
    replayer.finish(&mut sink)?;
    for w in &replayer.warnings {
        warn(w);
    }
    if !events {
        out.write_all(replayer.pgn().as_bytes())?;
    }
    out.flush()?;
    Ok(())
}

fn read(path: &Path) -> Result<capture::Capture, ReplayError> {
    Ok(capture::read_capture(path)?)
}
