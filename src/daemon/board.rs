//! One board's state in the daemon: its capture file, its decoder and core state machine (the
//! same [`Device`] that `replay` uses), and its health in the hub.
//!
//! Every input goes to the capture first (`rx`, `tx`, `op` records), then through the core; the
//! events it causes are published only after the record is written (and synced when it
//! matters). The core is fed exactly what the capture holds, at the capture's `t`, so replaying
//! the capture reproduces the live games.

use std::io;
use std::path::Path;

use super::captures::resume::{self, ResumePoint};
use super::captures::{CaptureFile, CaptureStore};
use crate::capture::{Capture, DeviceEntry, Header, HeaderFields, OpRecord, RecordKind};
use crate::core::engine::seed::EngineSeed;
use crate::core::event::{CoreEvent, EventKind};
use crate::core::game::GameRecord;
use crate::core::observation::{ClockSide, FieldArray, LinkChange, Micros, OperatorAction};
use crate::device::{Applied, Device, apply_record};
use crate::driver::Message;
use crate::output::corrections::ControlError;
use crate::output::{BoardStatus, Hub, LinkState};
use crate::pgn::{GameTags, TagUpdate};
use crate::replay::{Playback, Timeline};
use crate::session::Unit;
use crate::session::link::LinkKind;

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
    /// Opens the board's capture for today (or continues the file given, e.g. one of an
    /// earlier day whose game is still running), rebuilding its games from what is there by
    /// replaying it ([`Playback`], as `eboardd replay` does, without publishing: the events
    /// happened in an earlier run; [`LiveBoard::restore_into`] shows them in the hub). The
    /// board is set up as replay sets it up from the capture's header: the header of a new file
    /// names the driver, unit and link given here (a Bluetooth board scans at half speed, so
    /// its core's settle windows are doubled), a continued file keeps its own.
    pub fn open(
        store: &CaptureStore,
        id: &str,
        meta: BoardMeta,
        continue_file: Option<&Path>,
        link: LinkKind,
    ) -> io::Result<LiveBoard> {
        let header = meta.clone();
        Self::open_with(store, id, &header, continue_file, link, |_| Some(meta))
    }

    /// [`LiveBoard::open`], with the board's metadata made once its capture is read:
    /// `finish` is given the board as its capture left it (see
    /// [`LiveBoard::recorded_number`]) and gives its metadata, or `None` when the board is
    /// not wanted after all (it is left without metadata; nothing more is written to its
    /// capture). `meta` is what a new file's header says.
    pub fn open_with(
        store: &CaptureStore,
        id: &str,
        meta: &BoardMeta,
        continue_file: Option<&Path>,
        link: LinkKind,
        finish: impl FnOnce(&LiveBoard) -> Option<BoardMeta>,
    ) -> io::Result<LiveBoard> {
        let mut board = match Self::read_back(store, id, meta, continue_file, link, true)? {
            Some(b) => b,
            None => Self::read_back(store, id, meta, continue_file, link, false)?
                .ok_or_else(|| io::Error::other("capture not read back"))?,
        };
        if let Some(meta) = finish(&board) {
            board.set_meta(meta)?;
        }
        Ok(board)
    }

    /// The board as its capture leaves it: going on from the capture's resume point when
    /// `resume` and it holds, else replaying every record. `None`: the resume point's seed
    /// did not read back (the caller replays every record).
    fn read_back(
        store: &CaptureStore,
        id: &str,
        meta: &BoardMeta,
        continue_file: Option<&Path>,
        link: LinkKind,
        resume: bool,
    ) -> io::Result<Option<LiveBoard>> {
        let path = match continue_file {
            Some(p) => p.to_path_buf(),
            None => store.path_for(super::captures::today(), id),
        };
        let driver = meta
            .driver
            .and_then(crate::family::driver)
            .unwrap_or_else(crate::family::default_driver);
        let header = HeaderFields {
            board: Some(id.to_string()),
            tags: Some(meta.tag_update()),
            devices: vec![DeviceEntry {
                id: id.to_string(),
                driver: Some(driver.name().to_string()),
                serial: meta.serial.clone(),
                link: Some(link.name().to_string()),
                address: meta.unit,
                ..Default::default()
            }],
        }
        .to_map();
        let opened = if resume {
            store.open_resuming(&path, header.clone())?
        } else {
            store.open(&path, header.clone())?
        };
        let rebuilt = opened.existing.is_some();
        let mut cap = opened.existing.unwrap_or_else(|| Capture {
            header: Header::new(header),
            records: Vec::new(),
            warnings: Vec::new(),
        });
        let point = opened.resumed;
        if let Some(p) = &point {
            // The tags in force at the point are the tail's start.
            cap.header.extra.insert("tags".into(), p.tags.clone());
        }
        let records = cap.records.len();
        let mut session = Playback::new(Timeline::from_capture(cap));
        let seed = |device: &mut Device, point: &ResumePoint| {
            let engine = point.engine.engine(device.engine.config().clone());
            engine.map(|engine| device.engine = engine).map_err(|e| {
                tracing::warn!(
                    "{id}: its resume point does not read back ({e}): replaying the whole capture"
                );
            })
        };
        // A board with no record after its point is not in the tail's plan: seeded after.
        let mut seed_after = None;
        if let Some(p) = &point {
            match session.device_mut(id) {
                Some(device) => {
                    if seed(device, p).is_err() {
                        return Ok(None);
                    }
                }
                None => seed_after = Some(p),
            }
        }
        let mut clock_seen = point.as_ref().is_some_and(|p| p.clock_seen);
        session.run(&mut |board, e| {
            clock_seen |= board == id && matches!(e.kind, EventKind::Clock { .. });
            Ok(())
        })?;
        for w in session.warnings() {
            tracing::warn!("{id}: {w}");
        }
        let mut replayed = session.into_board(id);
        if let Some(p) = seed_after
            && seed(&mut replayed.device, p).is_err()
        {
            return Ok(None);
        }
        let white_clock = replayed
            .white_clock
            .or_else(|| point.as_ref().and_then(|p| p.white_clock));
        // A game's round is the tail's when it has a move there, else the point's.
        let rounds = replayed
            .device
            .engine
            .games()
            .iter()
            .zip(replayed.rounds.iter().chain(std::iter::repeat(&None)))
            .map(|(g, &tail)| {
                let saved = point.as_ref().and_then(|p| {
                    let moved = g.moves.last().is_some_and(|m| m.made_at > p.last_t);
                    let saved = p.rounds.iter().find(|(n, _)| *n == g.number);
                    saved.filter(|_| !moved).map(|(_, r)| *r)
                });
                (g.number, saved.unwrap_or(tail))
            })
            .collect();
        let board = LiveBoard {
            id: id.to_string(),
            device: replayed.device,
            capture: opened.file,
            clock_seen,
            battery: None,
            connection: LinkState::Unknown,
            port: None,
            tags_written: replayed.tags.unwrap_or_else(|| meta.tags()),
            side_written: white_clock,
            meta: BoardMeta::default(),
            events: Vec::new(),
            owner: None,
            away_since: None,
            counters_at_claim: (0, 0),
            side_recorded: white_clock,
            resume_tries: 0,
            resumed_from: point.as_ref().map(|p| (p.offset, p.engine.first_game())),
            rounds,
        };
        if let Some(p) = &point {
            let games = board.device.engine.games();
            tracing::info!(
                "{}: went on from its resume point at byte {} of {} ({} records after it, game {} with {} move(s))",
                board.id,
                p.offset,
                board.capture.path().display(),
                records,
                games.last().map_or(0, |g| g.number),
                games.last().map_or(0, |g| g.ply())
            );
        } else if rebuilt {
            let games = board.device.engine.games();
            tracing::info!(
                "{}: rebuilt from {} ({} records, {} game(s), {} move(s) in the last)",
                board.id,
                board.capture.path().display(),
                records,
                games.len(),
                games.last().map_or(0, |g| g.ply())
            );
        }
        Ok(Some(board))
    }

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

    /// Where the rebuild went on from a resume point: the capture's offset and the first game
    /// the point kept (`None`: every record was replayed, every game is here).
    pub fn resumed_from(&self) -> Option<(u64, Option<u32>)> {
        self.resumed_from
    }

    /// Takes a resume point now, when the board is at rest ([`resume`]): the decoder holds
    /// nothing and the core's seed checks itself; `true` when one was written.
    pub fn take_resume_point(&mut self) -> bool {
        if !self.device.at_rest() || self.capture.lost() > 0 {
            return false;
        }
        let Some(engine) = EngineSeed::of(&self.device.engine) else {
            return false;
        };
        let written = self.capture.resume_at().and_then(|(offset, before)| {
            let point = ResumePoint {
                offset,
                before,
                created: self.capture.created().timestamp_micros(),
                last_t: self.capture.last_t(),
                clock_seen: self.clock_seen,
                tags: TagUpdate::of(&self.tags_written).to_json(),
                white_clock: self.side_recorded,
                engine,
                rounds: self.game_rounds(),
            };
            resume::save(self.capture.path(), &point, self.capture.fsync())
        });
        match written {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!("{}: cannot write its resume point: {e}", self.id);
                false
            }
        }
    }

    /// After the records of a game start: tries a resume point while tries are left.
    fn maybe_resume_point(&mut self) {
        if self.resume_tries > 0 {
            self.resume_tries -= 1;
            if self.take_resume_point() {
                self.resume_tries = 0;
            }
        }
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

    /// Shows the board as rebuilt from its capture in the hub (its games and health), without
    /// publishing: those events went out in an earlier run.
    pub fn restore_into(&mut self, hub: &Hub) {
        let rounds: Vec<Option<u32>> = self.game_rounds().into_iter().map(|(_, r)| r).collect();
        hub.restore(&self.id, self.games(), &rounds, self.status());
        self.device.engine.forget_finished();
    }

    /// The round of each game the core keeps, in order, by game number.
    fn game_rounds(&self) -> Vec<(u32, Option<u32>)> {
        self.games()
            .iter()
            .map(|g| {
                let r = self.rounds.iter().find(|(n, _)| *n == g.number);
                (g.number, r.and_then(|(_, r)| *r))
            })
            .collect()
    }

    /// After events: a game started or a move made tags the latest game with the round in
    /// force (the replay tags a game with the tags at its last move).
    fn note_round(&mut self, events: &[CoreEvent]) {
        let tags_game = events.iter().any(|e| {
            matches!(
                e.kind,
                EventKind::GameStarted { .. } | EventKind::MoveMade { .. }
            )
        });
        let Some(latest) = self.device.engine.games().last().map(|g| g.number) else {
            return;
        };
        if !tags_game {
            return;
        }
        let round = self
            .tags_written
            .round
            .as_deref()
            .and_then(crate::replay::round_number);
        let kept: Vec<u32> = self.games().iter().map(|g| g.number).collect();
        self.rounds
            .retain(|(n, _)| *n != latest && kept.contains(n));
        self.rounds.push((latest, round));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimConfig, pgn::parse_games, synthesize};
    use serde_json::Value;
    use std::path::PathBuf;

    /// Three games played through a board, game N in round N: its capture (with a resume
    /// point at the last game's start).
    fn three_games(store: &CaptureStore, id: &str, meta: &BoardMeta) -> PathBuf {
        let hub = Hub::new(crate::output::RoundInfo::default(), Default::default());
        let mut b = LiveBoard::open(store, id, meta.clone(), None, LinkKind::Wired).unwrap();
        b.set_connection(LinkState::Active, Some("/dev/ttyACM0"), &hub)
            .unwrap();
        let pgn = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0\n\n1. d4 d5 2. c4 e6 3. Nc3 Nf6 0-1\n\n1. c4 c5 2. Nc3 Nc6 3. g3 *";
        let mut off = 0;
        for (i, game) in parse_games(pgn).into_iter().enumerate() {
            // The arbiter loads the next round before the game.
            b.set_meta(BoardMeta {
                round: Some(format!("{}.2", i + 1)),
                ..meta.clone()
            })
            .unwrap();
            let records = synthesize(&game.unwrap(), &SimConfig::human(i as u64 + 7));
            for r in &records {
                match &r.kind {
                    RecordKind::Rx(bytes) => {
                        b.rx(off + r.t, bytes, &hub).unwrap();
                    }
                    RecordKind::Tx(bytes) => b.tx(off + r.t, bytes).unwrap(),
                    _ => {}
                }
            }
            off += records.last().unwrap().t + 30_000_000;
        }
        assert_eq!(b.summary(), (3, 5), "the third game is being played");
        b.capture_path().to_path_buf()
    }

    /// What a board's rebuild kept, to compare: its last game, the first game it holds, and
    /// whether it went on from a resume point.
    fn kept(b: &LiveBoard) -> (String, u32, bool) {
        let games = b.games();
        (
            format!("{:?}", games.last().unwrap()),
            games.first().unwrap().number,
            b.resumed_from().is_some(),
        )
    }

    #[test]
    fn a_resume_point_that_does_not_hold_means_the_whole_capture_is_replayed() {
        let dir = std::env::temp_dir().join(format!("eboardd-resume-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = CaptureStore {
            dir: dir.clone(),
            fsync: false,
            bytes: None,
        };
        let meta = BoardMeta {
            number: Some(2),
            white_clock: Some(ClockSide::Left),
            ..Default::default()
        };
        let path = three_games(&store, "board-2", &meta);
        let sidecar = resume::path_of(&path);
        let good = std::fs::read_to_string(&sidecar).expect("a resume point was written");
        let point: ResumePoint = serde_json::from_str(&good).unwrap();
        // Taken when game 3 started: the board keeps its last two games.
        assert_eq!(point.engine.first_game(), Some(2));
        let reopen = |resume: bool| {
            LiveBoard::read_back(&store, "board-2", &meta, None, LinkKind::Wired, resume)
                .unwrap()
                .expect("read back")
        };
        // Each game goes back to its own round (the round in force at its last move).
        let rounds_in = |b: &mut LiveBoard| {
            let info = crate::output::RoundInfo {
                round: 3,
                ..Default::default()
            };
            let hub = Hub::new(info, Default::default());
            b.restore_into(&hub);
            hub.with_round(|r| {
                (1..=3)
                    .map(|n| {
                        let pgn = crate::output::render::round_pgn_of(r, n);
                        (
                            pgn.matches("[Event ").count(),
                            pgn.contains(&format!("[Round \"{n}.2\"]")),
                        )
                    })
                    .collect::<Vec<_>>()
            })
        };
        let mut full = reopen(false);
        assert_eq!(full.games().len(), 3);
        let (last, _, _) = kept(&full);
        assert_eq!(rounds_in(&mut full), vec![(1, true), (1, true), (1, true)]);
        let full = reopen(false);
        // The point holds: the board goes on from it with the same last game.
        let resumed = reopen(true);
        assert_eq!(resumed.resumed_from(), Some((point.offset, Some(2))));
        assert_eq!(kept(&resumed), (last.clone(), 2, true));
        let mut resumed = resumed;
        // Game 1 is read back later (the daemon's earlier games); 2 and 3 are in their rounds.
        assert_eq!(
            rounds_in(&mut resumed),
            vec![(0, false), (1, true), (1, true)]
        );
        drop(resumed);

        // Points that do not hold, each: the whole capture is replayed, every game is back.
        let mut stale = point.clone();
        stale.before ^= 1;
        let mut other_file = point.clone();
        other_file.created += 1;
        let mut past_end = point.clone();
        past_end.offset = std::fs::metadata(&path).unwrap().len() + 10;
        let mut bad_seed: Value = serde_json::from_str(&good).unwrap();
        bad_seed["engine"]["sensed"] = "not a board".into();
        let damaged = [
            ("garbage", "not json at all".to_string()),
            ("cut off", good[..good.len() / 2].to_string()),
            ("empty", String::new()),
            ("stale fingerprint", serde_json::to_string(&stale).unwrap()),
            (
                "another file's",
                serde_json::to_string(&other_file).unwrap(),
            ),
            ("past the end", serde_json::to_string(&past_end).unwrap()),
            ("a seed that does not read", bad_seed.to_string()),
        ];
        for (what, text) in damaged {
            std::fs::write(&sidecar, text).unwrap();
            let b = reopen(true);
            assert_eq!(kept(&b), (last.clone(), 1, false), "{what}");
            assert_eq!(b.games().len(), 3, "{what}");
            for (a, z) in b.games().iter().zip(full.games()) {
                assert_eq!(format!("{a:?}"), format!("{z:?}"), "{what}");
            }
        }
        // No point at all: the same.
        std::fs::remove_file(&sidecar).unwrap();
        assert_eq!(kept(&reopen(true)), (last, 1, false));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn captures_then_rebuilds_the_same_board() {
        let dir = std::env::temp_dir().join(format!("eboardd-board-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = CaptureStore {
            dir: dir.clone(),
            fsync: false,
            bytes: None,
        };
        let game = parse_games("1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O *")
            .remove(0)
            .unwrap();
        let records = synthesize(&game, &SimConfig::human(3));
        let hub = Hub::new(crate::output::RoundInfo::default(), Default::default());
        let mut rx = hub.receiver();
        let meta = BoardMeta {
            number: Some(4),
            serial: Some("12345".into()),
            white: Some("White, A".into()),
            white_clock: Some(ClockSide::Left),
            ..Default::default()
        };
        let mut b =
            LiveBoard::open(&store, "board-4", meta.clone(), None, LinkKind::Wired).unwrap();
        b.set_connection(LinkState::Active, Some("/dev/ttyACM0"), &hub)
            .unwrap();
        for r in &records {
            match &r.kind {
                RecordKind::Rx(bytes) => {
                    b.rx(r.t, bytes, &hub).unwrap();
                }
                RecordKind::Tx(bytes) => b.tx(r.t, bytes).unwrap(),
                _ => {}
            }
        }
        let live = b.games().to_vec();
        let last_move =
            |games: &[GameRecord]| games.last().unwrap().moves.last().unwrap().san.clone();
        assert_eq!(last_move(&live), "O-O");
        assert_eq!(live.last().unwrap().ply(), 9);
        let status = b.status();
        assert_eq!(status.state, LinkState::Active);
        assert_eq!(status.clock_connected, Some(true));
        // The hub's board view follows what was published.
        hub.with_round(|r| {
            let v = r.board("board-4").unwrap();
            assert_eq!(v.game().unwrap().ply(), 9);
            assert_eq!(v.status, status);
        });
        let mut n = 0;
        let mut last = 0;
        while let Ok(msg) = rx.try_recv() {
            assert_eq!(msg.seq, last + 1);
            last = msg.seq;
            n += 1;
        }
        assert!(n > 20, "{n} events");
        assert_eq!(hub.last_seq(), last);
        let path = b.capture_path().to_path_buf();
        drop(b);

        // A restart: the same file, rebuilt, nothing new written for the same configuration.
        let len = std::fs::metadata(&path).unwrap().len();
        let mut again = LiveBoard::open(&store, "board-4", meta, None, LinkKind::Wired).unwrap();
        assert_eq!(again.capture_path(), path);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len);
        let fen =
            |games: &[GameRecord]| crate::core::game::fen_of(games.last().unwrap().position());
        assert_eq!(fen(again.games()), fen(&live));
        assert_eq!(last_move(again.games()), "O-O");
        assert_eq!(again.status().clock_connected, Some(true));
        assert_eq!(again.status().state, LinkState::Unknown);
        assert_eq!(again.summary(), (1, 9));
        assert!(again.game_in_progress());
        // Shown in a fresh hub without publishing anything.
        let fresh = Hub::new(crate::output::RoundInfo::default(), Default::default());
        again.restore_into(&fresh);
        assert_eq!(fresh.last_seq(), 0);
        fresh.with_round(|r| assert_eq!(r.board("board-4").unwrap().game().unwrap().ply(), 9));

        // An operator action: captured, then acted on.
        let events = again
            .operator(
                OperatorAction::SetResult {
                    result: "1/2-1/2".into(),
                },
                &hub,
            )
            .unwrap();
        assert!(
            events.iter().any(|e| matches!(
                e.kind,
                EventKind::GameEnded {
                    result: crate::core::vocab::DRAW,
                    ..
                }
            )),
            "{events:?}"
        );
        assert!(again.games().last().unwrap().result.is_some());
        assert!(!again.game_in_progress());

        // New players: a set_tags record.
        let meta = BoardMeta {
            white: Some("Other, B".into()),
            ..again.meta().clone()
        };
        again.set_meta(meta).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"action\":\"set_tags\"").count(), 1);
        assert_eq!(text.matches("\"action\":\"set_clock_side\"").count(), 1);
        assert_eq!(text.matches("\"action\":\"set_result\"").count(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
