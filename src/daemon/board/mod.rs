//! One board's state in the daemon: its capture file, its decoder and core state machine (the
//! same [`Device`] that `replay` uses), and its health in the hub.
//!
//! Every input goes to the capture first (`rx`, `tx`, `op` records), then through the core; the
//! events it causes are published only after the record is written (and synced when it
//! matters). The core is fed exactly what the capture holds, at the capture's `t`, so replaying
//! the capture reproduces the live games.

use std::io;
use std::path::Path;

use super::captures::CaptureFile;
use crate::capture::{OpRecord, RecordKind};
use crate::core::event::{CoreEvent, EventKind};
use crate::core::game::GameRecord;
use crate::core::observation::{ClockSide, FieldArray, LinkChange, Micros, OperatorAction};
use crate::device::{Applied, Device, apply_record};
use crate::driver::Message;
use crate::output::corrections::ControlError;
use crate::output::{BoardStatus, Hub, LinkState};
use crate::pgn::{GameTags, TagUpdate};
use crate::session::Unit;

mod rebuild;

/// What the configuration says about a board (PGN tags, clock side).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoardMeta {
    /// Board number.
    pub number: Option<u32>,
    /// Serial number.
    pub serial: Option<String>,
    /// PGN Event.
    pub event: Option<String>,
    /// PGN Site.
    pub site: Option<String>,
    /// PGN Round (with the board number appended).
    pub round: Option<String>,
    /// PGN White.
    pub white: Option<String>,
    /// PGN Black.
    pub black: Option<String>,
    /// PGN WhiteTeam (team events).
    pub white_team: Option<String>,
    /// PGN BlackTeam (team events).
    pub black_team: Option<String>,
    /// White's clock side when fixed.
    pub white_clock: Option<ClockSide>,
    /// The board's driver (`None`: the default), for a new capture; a capture continued
    /// keeps the driver its header names.
    pub driver: Option<&'static str>,
    /// The board's unit on its port (a bus address on a chain), for a new capture's header.
    pub unit: Option<Unit>,
}

impl BoardMeta {
    /// The tags as a JSON object (for the capture header and `set_tags` records).
    fn tag_update(&self) -> TagUpdate {
        TagUpdate {
            event: Some(self.event.clone()),
            site: Some(self.site.clone()),
            round: Some(self.round.clone()),
            white: Some(self.white.clone()),
            black: Some(self.black.clone()),
            number: Some(self.number),
            // Only in a team event: an individual event's records keep the keys they had.
            white_team: self.white_team.clone().map(Some),
            black_team: self.black_team.clone().map(Some),
        }
    }

    /// The tags as replay reads them from the capture.
    fn tags(&self) -> GameTags {
        let mut tags = GameTags::default();
        tags.apply(&self.tag_update());
        tags
    }
}

/// One board of the live daemon: its capture, its device (decoder and core), its health. (What
/// the broadcast shows of a board is [`crate::output::model::BoardState`].)
#[derive(Debug)]
pub struct LiveBoard {
    /// Device id (`board` of its events, `dev` of its records).
    pub id: String,
    meta: BoardMeta,
    device: Device,
    capture: CaptureFile,
    /// Whether a clock has reported on this board.
    clock_seen: bool,
    /// The battery as the board last reported it (wireless boards), for its status.
    battery: Option<String>,
    connection: LinkState,
    port: Option<String>,
    /// The tags last written to the capture.
    tags_written: GameTags,
    /// The clock side last written to the capture as an operator action.
    side_written: Option<ClockSide>,
    events: Vec<CoreEvent>,
    /// The port session that has the board now.
    owner: Option<u64>,
    /// Capture time at which the board was last disconnected (`None`: not in this run).
    away_since: Option<crate::core::observation::Micros>,
    /// The decoder's counters when the current session took the board.
    counters_at_claim: (u64, u64),
    /// White's clock side as the last `set_clock_side` record fixed it (for a resume point).
    side_recorded: Option<ClockSide>,
    /// Records left in which to try taking a resume point (set when a game starts).
    resume_tries: u8,
    /// Where the board's rebuild went on from a resume point: its offset in the capture and
    /// the first game it kept (the games before it are only in the capture before the offset).
    resumed_from: Option<(u64, Option<u32>)>,
    /// The round of each game the core keeps, by game number: the round its capture's tags
    /// gave at the game's last move, as the replay tags it.
    rounds: Vec<(u32, Option<u32>)>,
}

/// How many records after a game starts a resume point is tried for (the board at rest).
const RESUME_TRIES: u8 = 8;

/// What bytes received did.
#[derive(Debug, Default)]
pub struct Received {
    /// The events they caused (already published).
    pub events: Vec<CoreEvent>,
    /// The messages decoded from them, for the port's session.
    pub messages: Vec<Message>,
    /// Frames the decoder rejected among them.
    pub bad_frames: u64,
}

/// Whether events are worth a disk sync before they go out (everything but clock readings).
fn needs_sync(events: &[CoreEvent]) -> bool {
    events
        .iter()
        .any(|e| !matches!(e.kind, EventKind::Clock { .. }))
}

impl LiveBoard {
    /// The board number its capture recorded last (`None`: a new file, or one written before
    /// captures recorded numbers).
    pub fn recorded_number(&self) -> Option<u32> {
        self.tags_written.number
    }

    /// The board's configuration changed (or is first known): new tags go to the capture as a
    /// `set_tags` record, a fixed clock side as a `set_clock_side` operator action.
    pub fn set_meta(&mut self, meta: BoardMeta) -> io::Result<()> {
        let tags = meta.tags();
        if tags != self.tags_written {
            let t = self.capture.now();
            let mut update = meta.tag_update();
            // A team no longer there is cleared (`null`), not left to the next game.
            if self.tags_written.white_team.is_some() && update.white_team.is_none() {
                update.white_team = Some(None);
            }
            if self.tags_written.black_team.is_some() && update.black_team.is_none() {
                update.black_team = Some(None);
            }
            self.record(t, RecordKind::Op(OpRecord::SetTags(update)))?;
            self.tags_written = tags;
        }
        let side = meta.white_clock;
        self.meta = meta;
        if let Some(white) = side
            && self.side_written != Some(white)
        {
            self.side_written = Some(white);
            self.operator_quiet(OperatorAction::SetClockSide { white })
                .map_err(|e| io::Error::other(e.to_string()))?;
        }
        Ok(())
    }

    /// A port session takes the board (a replugged board's new session may come before the
    /// old one has noticed its link is gone).
    pub fn claim(&mut self, session: u64) {
        self.owner = Some(session);
        self.counters_at_claim = self.device.line_counters();
    }

    /// Bytes dropped and frames rejected by the board's decoder since the current session took
    /// the board.
    pub fn session_counters(&self) -> (u64, u64) {
        let (d, b) = self.device.line_counters();
        (
            d.saturating_sub(self.counters_at_claim.0),
            b.saturating_sub(self.counters_at_claim.1),
        )
    }

    /// How long the board was away before now (`None`: not disconnected in this run).
    pub fn away_for(&self) -> Option<std::time::Duration> {
        let since = self.away_since?;
        let us = (self.capture.now() - since).max(0);
        Some(std::time::Duration::from_micros(us as u64))
    }

    /// A port session lets the board go; `false` when another session has it since.
    pub fn release(&mut self, session: u64) -> bool {
        if self.owner == Some(session) {
            self.owner = None;
            true
        } else {
            false
        }
    }

    /// The board's driver.
    pub fn driver(&self) -> &'static dyn crate::driver::BoardDriver {
        self.device.driver()
    }

    /// The board's configuration.
    pub fn meta(&self) -> &BoardMeta {
        &self.meta
    }

    /// The capture file's path.
    pub fn capture_path(&self) -> &Path {
        self.capture.path()
    }

    /// `t` now on this board's capture clock.
    pub fn now(&self) -> Micros {
        self.capture.now()
    }

    fn observe(&mut self, e: &CoreEvent) {
        if matches!(e.kind, EventKind::Clock { .. }) {
            self.clock_seen = true;
        }
    }

    /// Publishes the events gathered (after syncing the capture when they matter), then the
    /// board's health; returns them for the caller to react to (clock texts).
    fn flush(&mut self, hub: &Hub) -> io::Result<Vec<CoreEvent>> {
        let events = std::mem::take(&mut self.events);
        if events.is_empty() {
            return Ok(events);
        }
        if needs_sync(&events) {
            self.capture.sync()?;
        }
        for e in &events {
            self.observe(e);
            hub.publish(&self.id, e);
        }
        self.note_round(&events);
        if events
            .iter()
            .any(|e| matches!(e.kind, crate::core::event::EventKind::GameStarted { .. }))
        {
            self.device.engine.forget_finished();
            self.resume_tries = RESUME_TRIES;
        }
        hub.set_status(&self.id, self.status());
        Ok(events)
    }

    /// Record-first: writes `kind` to the capture at `t` (raised to the capture's clock), then
    /// applies that same record to the board through [`apply_record`], the path every replay
    /// takes, so the core hears exactly what the capture holds. The events wait in
    /// `self.events` for [`LiveBoard::flush`].
    fn record(&mut self, t: Micros, kind: RecordKind) -> io::Result<Micros> {
        let record = self.capture.append(t, &self.id, kind)?;
        match apply_record(&mut self.device, record.t, &record.kind, &mut self.events) {
            Applied::Operator(OperatorAction::SetClockSide { white }) => {
                self.side_recorded = Some(*white);
            }
            Applied::Ignored { value, error } => {
                tracing::warn!("{}: ignored operator action {value}: {error}", self.id);
            }
            Applied::Fed | Applied::Operator(_) | Applied::Tags(_) => {}
        }
        Ok(record.t)
    }

    /// Bytes received at `t` (taken with [`LiveBoard::now`] when they arrived): captured,
    /// decoded once, their observations fed to the core and its events published.
    pub fn rx(&mut self, t: Micros, bytes: &[u8], hub: &Hub) -> io::Result<Received> {
        self.incoming(t, RecordKind::Rx(bytes.to_vec()), hub)
    }

    /// What the board said at `t` (bytes on a serial line, a GATT notification): captured,
    /// then applied; the events it caused are published.
    pub fn incoming(&mut self, t: Micros, record: RecordKind, hub: &Hub) -> io::Result<Received> {
        let bad = self.device.line_counters().1;
        self.record(t, record)?;
        let bad_frames = self.device.line_counters().1 - bad;
        let events = self.flush(hub)?;
        self.maybe_resume_point();
        Ok(Received {
            events,
            messages: self.device.messages().to_vec(),
            bad_frames,
        })
    }

    /// Bytes about to be sent at `t`.
    pub fn tx(&mut self, t: Micros, bytes: &[u8]) -> io::Result<()> {
        self.outgoing(t, RecordKind::Tx(bytes.to_vec()))
    }

    /// What is about to be sent to the board at `t` (bytes on a line, a GATT write).
    pub fn outgoing(&mut self, t: Micros, record: RecordKind) -> io::Result<()> {
        self.record(t, record).map(|_| ())
    }

    /// A free-text note in the capture.
    pub fn note(&mut self, text: &str) -> io::Result<()> {
        let t = self.capture.now();
        self.record(t, RecordKind::Note(text.to_string()))?;
        Ok(())
    }

    /// The board reported its battery: shown in its status (`"87%"`, `"87%, charging"`).
    pub fn set_battery(&mut self, level: &crate::driver::BatteryLevel, hub: &Hub) {
        let mut text = level
            .percent
            .map_or_else(|| "unknown".to_string(), |p| format!("{p}%"));
        if level.charging == Some(true) {
            text.push_str(", charging");
        }
        if self.battery.as_deref() != Some(text.as_str()) {
            self.battery = Some(text);
            hub.set_status(&self.id, self.status());
        }
    }

    /// An operator action: checked, captured, then handled; its events are published. A
    /// refused action is not captured (an error).
    pub fn operator(&mut self, action: OperatorAction, hub: &Hub) -> io::Result<Vec<CoreEvent>> {
        self.correct(action, hub)
            .map_err(|e| io::Error::other(e.to_string()))
    }

    /// An operator action (an arbiter's correction): checked against the game first, so that a
    /// refused one changes nothing and writes nothing; else captured as an `op` record, then
    /// handled, and its events published.
    pub fn correct(
        &mut self,
        action: OperatorAction,
        hub: &Hub,
    ) -> Result<Vec<CoreEvent>, ControlError> {
        let quiet = self.operator_quiet(action);
        // Decisions the check had to take first (a press whose deadline passed) are published
        // whatever the answer.
        let events = self
            .flush(hub)
            .map_err(|e| ControlError::Unavailable(format!("capture: {e}")))?;
        quiet.map(|()| events)
    }

    fn operator_quiet(&mut self, action: OperatorAction) -> Result<(), ControlError> {
        let t = self.capture.now();
        // The check sees the game as replay will when it reaches this record: with every
        // decision due by then taken.
        self.device.engine.tick(t, &mut self.events);
        self.device.engine.check_operator(&action)?;
        self.record(t, RecordKind::Op(OpRecord::Action(action)))
            .map_err(|e| ControlError::Unavailable(format!("capture: {e}")))?;
        Ok(())
    }

    /// Lets the core take decisions whose deadline has passed (a press waiting for the board to
    /// settle); nothing is captured, replay takes the same decisions at the next record.
    pub fn tick(&mut self, hub: &Hub) -> io::Result<Vec<CoreEvent>> {
        let t = self.capture.now();
        self.device.engine.tick(t, &mut self.events);
        if self.events.is_empty() {
            return Ok(Vec::new());
        }
        self.flush(hub)
    }

    /// The link came up or went down: a note for people, then a `link` record that the core
    /// reads (record-first, as replay reads it), whose `board_connected` /
    /// `board_disconnected` is published. A board a new session takes while it still shows
    /// connected (replugged before the old session noticed) was lost in between: `down`, then
    /// `up`.
    pub fn set_connection(
        &mut self,
        connection: LinkState,
        port: Option<&str>,
        hub: &Hub,
    ) -> io::Result<()> {
        if let Some(p) = port {
            self.port = Some(p.to_string());
        }
        let was = self.connection;
        self.connection = connection;
        if was == LinkState::Active && connection != LinkState::Active {
            self.away_since = Some(self.capture.now());
        }
        let changes: &[LinkChange] = match (was, connection) {
            (LinkState::Active, LinkState::Active) => &[LinkChange::Down, LinkChange::Up],
            (_, LinkState::Active) => &[LinkChange::Up],
            (LinkState::Active, _) => &[LinkChange::Down],
            _ => &[],
        };
        let note = match connection {
            LinkState::Active => format!(
                "connected on {} (serial {})",
                self.port.as_deref().unwrap_or("?"),
                self.meta.serial.as_deref().unwrap_or("?")
            ),
            _ => "disconnected".to_string(),
        };
        self.note(&note)?;
        for &change in changes {
            let t = self.capture.now();
            self.record(t, RecordKind::Link(change))?;
        }
        if self.events.is_empty() {
            hub.set_status(&self.id, self.status());
        }
        self.flush(hub)?;
        Ok(())
    }

    /// Whether the game explains `fields` (see [`crate::session::link::game_explains`]).
    pub fn explains(&self, fields: &FieldArray) -> bool {
        crate::session::link::game_explains(&self.device.engine, fields)
    }

    /// The number of games (the last one's number) and the moves of the last, for logs and
    /// tests.
    pub fn summary(&self) -> (usize, u32) {
        let last = self.device.engine.games().last();
        (
            last.map_or(0, |g| g.number as usize),
            last.map_or(0, |g| g.ply()),
        )
    }

    /// Whether the board is ahead of the record by moves no single sequence explains, so that
    /// its memory is wanted ([`BoardEngine::memory_wanted`]).
    pub fn moves_missing(&self) -> bool {
        self.device.engine.memory_wanted()
    }

    /// Whether the current game is still being played (moves made, no result).
    pub fn game_in_progress(&self) -> bool {
        self.device
            .engine
            .games()
            .last()
            .is_some_and(|g| !g.ended() && g.ply() > 0)
    }

    /// Whether the current game has started and no move is made yet.
    pub fn at_game_start(&self) -> bool {
        self.device
            .engine
            .games()
            .last()
            .is_some_and(|g| !g.ended() && g.ply() == 0)
    }

    /// What the board senses now (every field, the clock), for the hall check.
    pub fn senses(&self) -> crate::round::check::BoardSenses {
        let engine = &self.device.engine;
        crate::round::check::BoardSenses {
            board: engine.sensed().clone(),
            clock: engine.clock_reading().copied(),
        }
    }

    /// The games rebuilt or played on this board, in the order they started.
    pub fn games(&self) -> &[GameRecord] {
        self.device.engine.games()
    }

    /// The board's health for the hub: link, port, serial, clock presence.
    pub fn status(&self) -> BoardStatus {
        BoardStatus {
            state: self.connection,
            source: self.port.clone(),
            serial: self.meta.serial.clone(),
            clock_connected: self.clock_seen.then_some(true),
            battery: self.battery.clone(),
            t0_ms: Some(self.capture.created().timestamp_millis()),
            ..Default::default()
        }
    }
}
