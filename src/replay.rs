//! `eboardd replay`: captures through the same decoding, inference and game logic as the live
//! daemon, to PGN or to the event stream.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::capture;
use crate::core::engine::EngineConfig;
use crate::core::event::{CoreEvent, EventEnvelope};
use crate::core::observation::Micros;
use crate::device::{Applied, apply_record};
use crate::driver::{self, BoardDriver};
use crate::pgn::{self, GameTags};

pub use crate::device::{Device, SET_TAGS};

/// Why a replay failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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

/// The driver a capture header's `devices` list names for device `id` (`dgt` when the capture
/// does not say: captures made before drivers were named), and a warning for a driver this
/// build does not have.
pub fn driver_of(
    header: &serde_json::Map<String, serde_json::Value>,
    id: &str,
) -> (&'static dyn BoardDriver, Option<String>) {
    let name = header
        .get("devices")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
        .find(|d| d.get("id").and_then(|i| i.as_str()) == Some(id))
        .and_then(|d| d.get("driver"))
        .and_then(|n| n.as_str());
    driver::for_name_or_default(name)
}

/// The unit a capture header's `devices` list gives device `id` on its port (`address`: a
/// board's bus address on a chain), or [`crate::session::SINGLE`].
pub fn unit_of(
    header: &serde_json::Map<String, serde_json::Value>,
    id: &str,
) -> crate::session::Unit {
    header
        .get("devices")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
        .find(|d| d.get("id").and_then(|i| i.as_str()) == Some(id))
        .and_then(|d| d.get("address"))
        .and_then(|a| a.as_u64())
        .and_then(|a| crate::session::Unit::try_from(a).ok())
        .unwrap_or(crate::session::SINGLE)
}

/// Replays records of any number of devices, in order, through one code path.
#[derive(Debug, Default)]
pub struct Replayer {
    cfg: EngineConfig,
    devices: BTreeMap<String, Device>,
    /// Device ids in order of first appearance.
    order: Vec<String>,
    /// The ids in `order`.
    listed: std::collections::BTreeSet<String>,
    seq: u64,
    offset: Micros,
    last_t: Micros,
    /// Date from the first capture header (`YYYY.MM.DD`).
    pub date: Option<String>,
    /// Non-fatal problems met (cut-off lines, unknown operator actions).
    pub warnings: Vec<String>,
    /// PGN tags per device, from capture headers (`tags`) and `set_tags` operator records.
    tags: BTreeMap<String, GameTags>,
    /// The tags in force at each game's last move (or its start), by device and game number:
    /// a later `set_tags` (the next round's players) does not rename an earlier game.
    game_tags: BTreeMap<(String, u32), GameTags>,
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
        if !self.listed.contains(id) {
            self.listed.insert(id.to_string());
            self.order.push(id.to_string());
        }
        self.devices
            .entry(id.to_string())
            .or_insert_with(|| Device::new(id, self.cfg.clone()))
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
        let bluetooth = bluetooth_devices(&cap.header.extra);
        let ids: std::collections::BTreeSet<&str> =
            cap.records.iter().map(|r| r.dev.as_str()).collect();
        for id in bluetooth.iter().copied().chain(ids) {
            if !self.devices.contains_key(id) {
                let mut cfg = self.cfg.clone();
                if bluetooth.contains(&id) {
                    cfg.settle *= 2;
                    cfg.displaced_after *= 2;
                    // Listed from the header, as before its records.
                    self.listed.insert(id.to_string());
                    self.order.push(id.to_string());
                }
                let (driver, warning) = driver_of(&cap.header.extra, id);
                self.warnings.extend(warning);
                let unit = unit_of(&cap.header.extra, id);
                self.devices
                    .insert(id.to_string(), Device::for_unit(id, driver, unit, cfg));
            }
        }
        // Captures given one after another continue in time.
        self.offset = self.last_t;
        let mut events = Vec::new();
        for record in &cap.records {
            let t = record.t + self.offset;
            self.last_t = self.last_t.max(t);
            let device = self.device(&record.dev);
            match apply_record(device, t, &record.kind, &mut events) {
                Applied::Tags(value) => self
                    .tags
                    .entry(record.dev.clone())
                    .or_default()
                    .apply_json(value),
                Applied::Ignored { value, error } => self
                    .warnings
                    .push(format!("ignored operator action {value}: {error}")),
                Applied::Fed | Applied::Operator(_) => {}
            }
            for e in events.drain(..) {
                if matches!(
                    e.kind,
                    crate::core::event::EventKind::GameStarted { .. }
                        | crate::core::event::EventKind::MoveMade { .. }
                ) {
                    let tags = self.tags.get(&record.dev).cloned().unwrap_or_default();
                    self.game_tags.insert((record.dev.clone(), e.game), tags);
                }
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
                ..self
                    .game_tags
                    .get(&(device.id.clone(), game.number))
                    .or_else(|| self.tags.get(&device.id))
                    .cloned()
                    .unwrap_or_default()
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
