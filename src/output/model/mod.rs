//! The broadcast side's own model of the round: per-board state rebuilt from the event stream
//! alone (`docs/events.md`), so every output — PGN, LiveChessCloud JSON, the
//! LiveChess EBoards API, JSON snapshots, MQTT state — is derived from one place and never
//! disagrees with the events a client saw.
//!
//! Games are rebuilt as [`GameRecord`]s by playing the typed move of `move_made` events on the start
//! position of `game_started`, so PGN export goes through the same writer as `eboardd replay`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use shakmaty::{CastlingMode, Chess, Color, Position, Square, fen::Fen, uci::UciMove};

use super::archive::Archive;
use crate::core::event::{CoreEvent, EventKind};
use crate::core::game::GameRecord;
use crate::core::observation::Micros;
use crate::core::start;
use crate::core::vocab::{Claim, IrregularityCode};
/// A board's result as the arbiter confirms it, and the file a round was loaded from.
pub use crate::round::results::{GameResult, RoundSource};
/// The pairing types live with the pairings in [`crate::round`]; the model uses them.
pub use crate::round::{Pairing, Player, PlayerError};

mod json;

pub use json::{board_json, game_json, reason_str, round_json};

/// Most irregularities kept per board (oldest dropped first).
const MAX_IRREGULARITIES: usize = 200;

/// What the round is: names and numbers that the sensors cannot know.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RoundInfo {
    /// Event name (PGN `Event`, LCC `name`).
    pub event: Option<String>,
    /// Site (PGN `Site`, LCC `location`).
    pub site: Option<String>,
    /// Date `YYYY.MM.DD`.
    pub date: Option<String>,
    /// Round number (PGN `Round "R.B"`, LCC `round-R`).
    pub round: u32,
    /// PGN `TimeControl`, e.g. `5400+30`.
    pub time_control: Option<String>,
    /// Boards listed from the start (the configured ones, or a replay's), before any event.
    /// Board order is number order (see [`RoundState::board_number`]).
    pub boards: Vec<String>,
    /// Players per board id.
    pub pairings: HashMap<String, Pairing>,
    /// Serial numbers of configured boards by board id, shown (e.g. as LiveChess `serialnr`)
    /// until a board reports its own.
    pub serials: HashMap<String, String>,
    /// Wall-clock epoch milliseconds at event time `t = 0` (for LCC/LiveChess `time` fields).
    pub epoch_ms: i64,
    /// Results the arbiter confirmed or set, per board id (a board's game proposes its own
    /// result until then).
    #[serde(skip_serializing_if = "HashMap::is_empty")]
    pub results: HashMap<String, GameResult>,
    /// The TRF the round was loaded from, with its boards' start ranks (`GET
    /// /api/v1/rounds/R/results.trf` writes the results back into it).
    #[serde(skip)]
    pub source: Option<std::sync::Arc<RoundSource>>,
}

impl Default for RoundInfo {
    fn default() -> Self {
        RoundInfo {
            event: None,
            site: None,
            date: None,
            round: 1,
            time_control: None,
            boards: Vec::new(),
            pairings: HashMap::new(),
            serials: HashMap::new(),
            epoch_ms: 0,
            results: HashMap::new(),
            source: None,
        }
    }
}

/// Link state of a board as the daemon sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LinkState {
    /// Not known yet (no event, no status).
    #[default]
    Unknown,
    /// Connected and answering.
    Active,
    /// Connected but silent for too long.
    NotResponding,
    /// Disconnected.
    Disconnected,
}

/// Health of a board that only the daemon knows (port, battery, clock presence). Set with
/// [`super::Hub::set_status`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BoardStatus {
    /// Link state.
    pub state: LinkState,
    /// Wall-clock time (Unix milliseconds) of `t` = 0 on this board's event clock (its
    /// capture's `created`), when the source knows it; else the round's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub t0_ms: Option<i64>,
    /// Port or device path the board is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Board serial number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial: Option<String>,
    /// Whether a clock is connected (`None` = not known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_connected: Option<bool>,
    /// Battery, as the device reports it (`"87%"`, `"4.1V"`, `"low"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub battery: Option<String>,
    /// Free operator comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Last clock reading of a board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockState {
    /// White's remaining milliseconds.
    pub white: u32,
    /// Black's remaining milliseconds.
    pub black: u32,
    /// Whose clock runs.
    pub running: Option<Color>,
    /// Event time of the reading.
    pub t: Micros,
}

/// One irregularity raised on a board.
#[derive(Debug, Clone, Serialize)]
pub struct Irregularity {
    /// Id: the `seq` of the event that raised it (unique per daemon run).
    pub id: u64,
    /// Game number.
    pub game: u32,
    /// Event time, seconds.
    pub t: f64,
    /// Ply of the turn.
    pub ply: u32,
    /// Spec code.
    pub code: IrregularityCode,
    /// FIDE article.
    pub rule: &'static str,
    /// `"white"` or `"black"`.
    #[serde(serialize_with = "crate::core::vocab::ser_color")]
    pub player: Color,
    /// Squares involved.
    #[serde(serialize_with = "crate::core::vocab::ser_squares")]
    pub squares: Vec<Square>,
    /// One sentence.
    pub detail: String,
    /// Put right (an `irregularity_resolved` event).
    pub resolved: bool,
    /// Acknowledged by an arbiter.
    pub acknowledged: bool,
}

/// Per-game extras that a [`GameRecord`] does not hold.
#[derive(Debug, Clone, Default)]
struct GameExtra {
    claims: Vec<Claim>,
    /// The round the game was started in.
    round: u32,
}

/// Everything known about one board.
#[derive(Debug, Clone)]
pub struct BoardState {
    /// Device id.
    pub id: String,
    /// Board number (PGN `Round "R.B"`, the page's "Board B", relay `game-B`): a configured
    /// board's (`board-B`), else the one given it when it first appeared.
    pub number: u32,
    /// The board's latest game (rebuilt from events); the earlier ones are in the round's
    /// [`Archive`] (see [`RoundState::game_in`]).
    pub games: Vec<GameRecord>,
    /// How many of its games went to the archive.
    pub archived: u32,
    extras: Vec<GameExtra>,
    /// Last clock reading.
    pub clock: Option<ClockState>,
    /// Whether the link is up according to the events (`None` before any connect event).
    pub connected: Option<bool>,
    /// Driver name from the connect event.
    pub driver: Option<String>,
    /// Serial number from the connect event.
    pub serial: Option<String>,
    /// Health from the daemon.
    pub status: BoardStatus,
    /// Irregularities, oldest first.
    pub irregularities: Vec<Irregularity>,
    /// Seq of the last event about this board.
    pub last_seq: u64,
    /// Time of the last event about this board.
    pub last_t: Micros,
    /// An event could not be applied to the model (e.g. a SAN that does not parse): the
    /// reason, for the status display. The stream itself is unaffected.
    pub model_error: Option<String>,
    /// The round in progress (games started now belong to it).
    round: u32,
}

impl BoardState {
    fn new(id: &str, number: u32) -> Self {
        BoardState {
            id: id.to_string(),
            number,
            games: Vec::new(),
            archived: 0,
            extras: Vec::new(),
            clock: None,
            connected: None,
            driver: None,
            serial: None,
            status: BoardStatus::default(),
            irregularities: Vec::new(),
            last_seq: 0,
            last_t: 0,
            model_error: None,
            round: 1,
        }
    }

    /// The current game: the last started, unless it belongs to an earlier round and ended
    /// (a board shows no game between rounds; a game still running when the next round was
    /// loaded stays shown until it ends).
    pub fn game(&self) -> Option<&GameRecord> {
        let g = self.games.last()?;
        let this_round = self.extras.last().is_none_or(|x| x.round == self.round);
        (this_round || !g.ended()).then_some(g)
    }

    /// The last game started in round `round` that the board still holds (see
    /// [`RoundState::game_in`] for the archived ones too).
    pub fn game_in(&self, round: u32) -> Option<&GameRecord> {
        self.games
            .iter()
            .zip(&self.extras)
            .rev()
            .find(|(_, x)| x.round == round)
            .map(|(g, _)| g)
    }

    /// The round a game of this board was started in.
    pub fn round_of(&self, game: &GameRecord) -> u32 {
        self.games
            .iter()
            .position(|g| std::ptr::eq(g, game))
            .and_then(|i| self.extras.get(i))
            .map_or(self.round, |x| x.round)
    }

    /// Whether no board has been seen yet under this id (a configured or paired board waiting
    /// for its board to be connected): no link event, no status, no game.
    pub fn waiting(&self) -> bool {
        self.connected.is_none()
            && self.status.state == LinkState::Unknown
            && self.games.is_empty()
            && self.archived == 0
    }

    /// The round of what the board shows: its current game's (a game still running when the
    /// next round was loaded stays in its own round until it ends), else the round in progress.
    pub fn shown_round(&self) -> u32 {
        self.game().map_or(self.round, |g| self.round_of(g))
    }

    /// Serial number: the daemon's, else the connect event's.
    pub fn serial(&self) -> Option<&str> {
        self.status.serial.as_deref().or(self.serial.as_deref())
    }

    /// Link state from status and events together.
    pub fn link(&self) -> LinkState {
        match (self.status.state, self.connected) {
            (LinkState::Unknown, Some(true)) => LinkState::Active,
            (LinkState::Unknown, Some(false)) => LinkState::Disconnected,
            (s, _) => s,
        }
    }

    /// Whether the current game is running (started, no result).
    pub fn live(&self) -> bool {
        self.game().is_some_and(|g| !g.ended()) && self.link() != LinkState::Disconnected
    }

    /// Open (unresolved or unacknowledged) irregularities of the current game, and any
    /// unacknowledged ones of earlier games.
    pub fn open_irregularities(&self) -> impl Iterator<Item = &Irregularity> {
        let game = self.game().map_or(0, |g| g.number);
        self.irregularities
            .iter()
            .filter(move |i| !i.acknowledged || (i.game == game && !i.resolved))
    }

    /// Piece placement (FEN field 1) of the current position, if a game runs.
    pub fn placement(&self) -> Option<String> {
        let g = self.game()?;
        Some(g.position().board().to_string())
    }

    /// Whether the board is believed to match the reconstructed position (no open
    /// displaced-piece or illegal-move irregularity).
    pub fn matches(&self) -> bool {
        let game = self.game().map_or(0, |g| g.number);
        !self.irregularities.iter().any(|i| {
            i.game == game
                && !i.resolved
                && matches!(
                    i.code,
                    IrregularityCode::DisplacedPieces
                        | IrregularityCode::IllegalMove
                        | IrregularityCode::PawnNotPromoted
                )
        })
    }

    fn apply(&mut self, seq: u64, ev: &CoreEvent) {
        self.last_seq = seq;
        self.last_t = self.last_t.max(ev.t);
        match &ev.kind {
            EventKind::BoardConnected { driver, serial } => self.linked(true, driver, serial),
            EventKind::BoardDisconnected { driver, serial } => self.linked(false, driver, serial),
            EventKind::GameStarted { fen, chess960 } => self.start(ev, fen, *chess960),
            EventKind::MoveMade { ply, uci, .. } => {
                if let Err(e) = self.make(ev, *ply, uci) {
                    self.model_error = Some(e);
                }
            }
            EventKind::MoveRetracted { ply } => {
                if let Some(g) = self.game_mut(ev.game)
                    && g.ply() == *ply
                {
                    g.pop();
                }
            }
            EventKind::MoveCompleted { ply, by, clock, .. } => {
                if let Some(g) = self.game_mut(ev.game)
                    && g.ply() == *ply
                    && let Some(m) = g.moves.last_mut()
                {
                    m.completed = Some(*by);
                    m.clock = *clock;
                }
            }
            EventKind::Clock {
                white,
                black,
                running,
            } => {
                self.clock = Some(ClockState {
                    white: *white,
                    black: *black,
                    running: *running,
                    t: ev.t,
                });
            }
            EventKind::Irregularity { .. } => self.raise(seq, ev),
            EventKind::IrregularityResolved { code, squares } => self.resolve(*code, squares),
            // Shown in the event stream; the board model keeps no flag state.
            EventKind::FlagShown { .. } => {}
            EventKind::ClaimAvailable { claim } => {
                if let Some(x) = self.extras.last_mut()
                    && !x.claims.contains(claim)
                {
                    x.claims.push(*claim);
                }
            }
            EventKind::GameEnded { result, reason } => {
                if let Some(g) = self.game_mut(ev.game) {
                    g.result = Some((*result, *reason));
                }
            }
            // The moves and results it changed came as standard events before it; a result
            // reopened (`*`) is only said here.
            EventKind::Correction {
                result: shakmaty::Outcome::Unknown,
                ..
            } => {
                if let Some(g) = self.game_mut(ev.game) {
                    g.result = None;
                }
            }
            EventKind::Correction { .. } => {}
        }
    }

    /// The board's link came up or went down (`connected`), with its driver and serial.
    fn linked(&mut self, connected: bool, driver: &str, serial: &Option<String>) {
        self.connected = Some(connected);
        self.driver = Some(driver.to_string());
        if serial.is_some() {
            self.serial = serial.clone();
        }
    }

    /// A game started (the same game started again replaces it); a start that cannot be
    /// set up is kept as the model's error.
    fn start(&mut self, ev: &CoreEvent, fen: &str, chess960: Option<u16>) {
        match start_game(ev, fen, chess960) {
            Ok(game) => {
                if self.games.last().is_some_and(|g| g.number == game.number) {
                    self.games.pop();
                    self.extras.pop();
                }
                self.games.push(game);
                self.extras.push(GameExtra {
                    claims: Vec::new(),
                    round: self.round,
                });
                self.model_error = None;
            }
            Err(e) => self.model_error = Some(e),
        }
    }

    /// An irregularity raised (event `seq` is its id); the oldest goes beyond
    /// [`MAX_IRREGULARITIES`].
    fn raise(&mut self, seq: u64, ev: &CoreEvent) {
        let EventKind::Irregularity {
            ply,
            code,
            rule,
            player,
            squares,
            detail,
        } = &ev.kind
        else {
            return;
        };
        if self.irregularities.len() >= MAX_IRREGULARITIES {
            self.irregularities.remove(0);
        }
        self.irregularities.push(Irregularity {
            id: seq,
            game: ev.game,
            t: ev.t as f64 / 1e6,
            ply: *ply,
            code: *code,
            rule,
            player: *player,
            squares: squares.clone(),
            detail: detail.clone(),
            resolved: false,
            acknowledged: false,
        });
    }

    /// The open irregularity of `code` on `squares` (or the last open one of `code`) is
    /// resolved.
    fn resolve(&mut self, code: IrregularityCode, squares: &[Square]) {
        let open = |i: &&mut Irregularity| !i.resolved && i.code == code;
        let mut found = self
            .irregularities
            .iter_mut()
            .rev()
            .filter(open)
            .find(|i| i.squares == squares || squares.is_empty());
        if found.is_none() {
            found = self.irregularities.iter_mut().rev().find(open);
        }
        if let Some(i) = found {
            i.resolved = true;
        }
    }

    fn game_mut(&mut self, number: u32) -> Option<&mut GameRecord> {
        self.games.last_mut().filter(|g| g.number == number)
    }

    fn make(&mut self, ev: &CoreEvent, ply: u32, uci: &UciMove) -> Result<(), String> {
        let id = self.id.clone();
        let g = self
            .game_mut(ev.game)
            .ok_or_else(|| format!("{id}: move_made for game {} that did not start", ev.game))?;
        if g.ply() + 1 != ply {
            return Err(format!("{id}: move_made ply {ply} after ply {}", g.ply()));
        }
        let mv = uci.to_move(g.position()).map_err(|e| {
            format!(
                "{id}: move {uci} in {}: {e}",
                crate::core::game::fen_of(g.position())
            )
        })?;
        g.push(mv, ev.t);
        Ok(())
    }

    fn claims(&self) -> &[Claim] {
        self.extras.last().map_or(&[], |x| &x.claims[..])
    }
}

/// A [`GameRecord`] for a `game_started` event.
fn start_game(ev: &CoreEvent, fen: &str, chess960: Option<u16>) -> Result<GameRecord, String> {
    let parsed = Fen::from_str(fen).map_err(|e| format!("start FEN {fen:?}: {e}"))?;
    let (mode, number) = match chess960 {
        Some(n) => (CastlingMode::Chess960, Some(n)),
        None => match start::recognise(&parsed.as_setup().board) {
            Some(s) => (s.mode, s.chess960),
            None => (CastlingMode::Standard, None),
        },
    };
    let pos: Chess = match parsed.clone().into_position(mode) {
        Ok(p) => p,
        Err(_) => parsed
            .into_position(CastlingMode::Chess960)
            .map_err(|e| format!("start FEN {fen:?}: {e}"))?,
    };
    Ok(GameRecord::new(ev.game, pos, mode, number, ev.t))
}

/// A game of a board as shown: its live record, or one read back from the archive.
#[derive(Debug)]
pub struct Shown<'a> {
    /// The game.
    pub game: Cow<'a, GameRecord>,
    /// The round it was started in.
    pub round: u32,
}

impl std::ops::Deref for Shown<'_> {
    type Target = GameRecord;
    fn deref(&self) -> &GameRecord {
        &self.game
    }
}

/// The round: every board, in board order.
#[derive(Debug, Default)]
pub struct RoundState {
    /// Names and numbers from configuration.
    pub info: RoundInfo,
    /// Earlier rounds of this run (loaded before the current one), by number: their games stay
    /// with the boards, tagged with their round.
    pub previous: std::collections::BTreeMap<u32, RoundInfo>,
    boards: Vec<BoardState>,
    index: HashMap<String, usize>,
    /// Seq of the last event applied.
    pub last_seq: u64,
    /// Largest event time seen.
    pub last_t: Micros,
    /// The boards' finished games that left them.
    archive: Archive,
}

impl RoundState {
    /// An empty round; the configured boards are listed at once.
    pub fn new(info: RoundInfo) -> Self {
        RoundState::with_archive(info, Archive::default())
    }

    /// An empty round whose finished games go to `archive`.
    pub fn with_archive(info: RoundInfo, archive: Archive) -> Self {
        let mut state = RoundState {
            info,
            archive,
            ..Default::default()
        };
        for id in state.info.boards.clone() {
            state.board_mut(&id);
        }
        state
    }

    /// Boards in board order.
    pub fn boards(&self) -> &[BoardState] {
        &self.boards
    }

    /// Where board `id` is in [`RoundState::boards`].
    pub fn place_of(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// One board by id.
    pub fn board(&self, id: &str) -> Option<&BoardState> {
        self.index.get(id).map(|&i| &self.boards[i])
    }

    /// Board number of board `id`, if the round has it.
    pub fn board_number(&self, id: &str) -> Option<usize> {
        self.board(id).map(|b| b.number as usize)
    }

    /// The highest board number (0 with no boards).
    pub fn max_number(&self) -> u32 {
        self.boards.last().map_or(0, |b| b.number)
    }

    /// The board with number `n`.
    pub fn board_numbered(&self, n: u32) -> Option<&BoardState> {
        self.boards.iter().find(|b| b.number == n)
    }

    /// The board, created when new: a configured board (`board-B`) with its number `B`, any
    /// other with the lowest number that no board has and no configured board owns.
    pub fn board_mut(&mut self, id: &str) -> &mut BoardState {
        self.board_with_number(id, None)
    }

    /// Board `id`, created when new with number `wanted` when that is free (a number recorded
    /// in its capture), else as [`RoundState::board_mut`] numbers it. An existing board keeps
    /// its number unless it has none of its own yet and `wanted` is free. A configured board's
    /// number is always its own.
    pub fn board_with_number(&mut self, id: &str, wanted: Option<u32>) -> &mut BoardState {
        let own = configured_number(id);
        let free = |r: &RoundState, n: u32| {
            n > 0
                && r.boards.iter().all(|b| b.number != n || b.id == id)
                && !r
                    .info
                    .boards
                    .iter()
                    .any(|c| c != id && configured_number(c) == Some(n))
        };
        if let Some(&i) = self.index.get(id) {
            let b = &self.boards[i];
            if own.is_none() && wanted.is_some_and(|w| w != b.number && free(self, w)) {
                self.boards[i].number = wanted.unwrap_or_default();
                self.reorder();
            }
            let i = self.index[id];
            return &mut self.boards[i];
        }
        let number = own
            .or(wanted.filter(|&w| free(self, w)))
            .unwrap_or_else(|| (1..).find(|&n| free(self, n)).unwrap_or(u32::MAX));
        // A configured board takes its number back from a board that was given it before
        // the configuration named it; that board gets the next free number.
        if let Some(n) = own
            && let Some(j) = self.boards.iter().position(|b| b.number == n)
        {
            self.boards[j].number = 0;
            self.boards[j].number = (1..).find(|&m| m != n && free(self, m)).unwrap_or(u32::MAX);
        }
        let mut b = BoardState::new(id, number);
        b.round = self.info.round;
        b.serial = self.info.serials.get(id).cloned();
        self.boards.push(b);
        self.reorder();
        let i = self.index[id];
        &mut self.boards[i]
    }

    /// Boards in number order (ids break ties: two boards given one number by their names).
    fn reorder(&mut self) {
        self.boards
            .sort_by(|a, b| (a.number, &a.id).cmp(&(b.number, &b.id)));
        self.index = self
            .boards
            .iter()
            .enumerate()
            .map(|(i, b)| (b.id.clone(), i))
            .collect();
    }

    /// Apply one event.
    pub fn apply(&mut self, seq: u64, board: &str, ev: &CoreEvent) {
        self.last_seq = self.last_seq.max(seq);
        self.last_t = self.last_t.max(ev.t);
        self.board_mut(board).apply(seq, ev);
        if matches!(ev.kind, EventKind::GameStarted { .. }) {
            self.archive_finished(board);
        }
    }

    /// Replace board `board`'s games (rebuilt elsewhere, e.g. from a capture) without any
    /// event: they are games of the round in force (an earlier run played them in it).
    pub fn restore(&mut self, board: &str, games: &[GameRecord], rounds: &[Option<u32>]) {
        let b = self.board_mut(board);
        b.games = games.to_vec();
        b.archived = 0;
        let round = b.round;
        b.extras = (0..games.len())
            .map(|i| GameExtra {
                round: rounds.get(i).copied().flatten().unwrap_or(round),
                ..GameExtra::default()
            })
            .collect();
        self.archive_finished(board);
    }

    /// Finished games of board `board` that came before every game it has (read back late,
    /// from the part of a capture before its resume point), archived in the round in force
    /// as [`RoundState::restore`] archives them (each in its own round, `rounds`).
    pub fn restore_earlier(&mut self, board: &str, games: &[GameRecord], rounds: &[Option<u32>]) {
        let b = self.board_mut(board);
        b.archived += games.len() as u32;
        let round = b.round;
        let games: Vec<(u32, &GameRecord)> = games
            .iter()
            .enumerate()
            .map(|(i, g)| (rounds.get(i).copied().flatten().unwrap_or(round), g))
            .collect();
        self.archive.put_earlier(board, &games);
    }

    /// Every game of `board` but its latest goes to the archive.
    fn archive_finished(&mut self, board: &str) {
        let Some(&i) = self.index.get(board) else {
            return;
        };
        let b = &mut self.boards[i];
        let n = b.games.len().saturating_sub(1);
        if n == 0 {
            return;
        }
        b.archived += n as u32;
        for (g, x) in b.games.drain(..n).zip(b.extras.drain(..n)) {
            self.archive.put(board, x.round, &g);
        }
    }

    /// The finished games that left the boards.
    pub fn archive(&self) -> &Archive {
        &self.archive
    }

    /// The last game of board `b` started in round `round`: the board's own, else the
    /// archive's (read back).
    pub fn game_in<'a>(&'a self, b: &'a BoardState, round: u32) -> Option<Shown<'a>> {
        if let Some(g) = b.game_in(round) {
            return Some(Shown {
                game: Cow::Borrowed(g),
                round,
            });
        }
        let a = self.archive.last_in(&b.id, round)?;
        Some(Shown {
            game: Cow::Owned(self.archive.game(a)?),
            round,
        })
    }

    /// Whether board `b` has a game started in round `round`, and whether it ended (without
    /// reading an archived game back).
    pub fn ended_in(&self, b: &BoardState, round: u32) -> Option<bool> {
        match b.game_in(round) {
            Some(g) => Some(g.ended()),
            None => self.archive.last_in(&b.id, round).map(|a| a.ended),
        }
    }

    /// The players of a board in the current round (the players of the next game it starts).
    pub fn pairing(&self, board: &str) -> Pairing {
        self.info.pairings.get(board).cloned().unwrap_or_default()
    }

    /// The players of what board `b` shows: its current game's round's (see
    /// [`BoardState::shown_round`]), else the current round's.
    pub fn shown_pairing(&self, b: &BoardState) -> Pairing {
        self.pairing_in(b.shown_round(), &b.id)
    }

    /// The information of round `round`: the current one's, an earlier one's, else the
    /// current one's.
    pub fn info_of(&self, round: u32) -> &RoundInfo {
        match self.previous.get(&round) {
            Some(i) if round != self.info.round => i,
            _ => &self.info,
        }
    }

    /// The information of round `round` to change: an earlier one's, else the current one's.
    pub fn info_of_mut(&mut self, round: u32) -> &mut RoundInfo {
        match self.previous.get_mut(&round) {
            Some(i) if round != self.info.round => i,
            _ => &mut self.info,
        }
    }

    /// Board `b`'s result in round `round` and whether the arbiter confirmed it: the
    /// arbiter's, else the one its game `game` (of that round) proposes by ending.
    pub fn result_in(
        &self,
        b: &BoardState,
        round: u32,
        game: Option<&GameRecord>,
    ) -> (Option<GameResult>, bool) {
        match self.info_of(round).results.get(&b.id) {
            Some(r) => (Some(*r), true),
            None => (
                game.and_then(|g| GameResult::played(crate::pgn::result_of(g))),
                false,
            ),
        }
    }

    /// Whether every board paired in round `round` has a confirmed result (a round without
    /// pairings is not complete).
    pub fn complete(&self, round: u32) -> bool {
        let info = self.info_of(round);
        !info.pairings.is_empty() && info.pairings.keys().all(|b| info.results.contains_key(b))
    }

    /// The players of a board in round `round`.
    pub fn pairing_in(&self, round: u32, board: &str) -> Pairing {
        self.info_of(round)
            .pairings
            .get(board)
            .cloned()
            .unwrap_or_default()
    }

    /// Every round number known, ascending: the earlier ones and the current one.
    pub fn round_numbers(&self) -> Vec<u32> {
        let mut v: Vec<u32> = self.previous.keys().copied().collect();
        if !v.contains(&self.info.round) {
            v.push(self.info.round);
        }
        v.sort_unstable();
        v
    }

    /// Make `info` the current round: the round it replaces becomes an earlier round (its games
    /// keep their round and players); boards it lists or pairs are created (a pairing for a
    /// board not connected yet shows as that board, waiting: [`BoardState::waiting`]). Loading the current round
    /// again only replaces its information.
    pub fn start_round(&mut self, info: RoundInfo) {
        let old = std::mem::replace(&mut self.info, info);
        self.previous.remove(&self.info.round);
        if old.round != self.info.round {
            self.previous.insert(old.round, old);
        }
        let round = self.info.round;
        for b in &mut self.boards {
            b.round = round;
        }
        for id in self.info.boards.clone() {
            self.board_mut(&id);
        }
        // A pairing for a board not connected yet shows as that board, waiting for it.
        let mut paired: Vec<String> = self.info.pairings.keys().cloned().collect();
        paired.sort_by_key(|id| (configured_number(id), id.clone()));
        for id in paired {
            self.board_mut(&id);
        }
    }

    /// Epoch milliseconds of event time `t` of board `b`: from the board's own `t` = 0 (its
    /// capture's creation) when known, else the round's.
    pub fn epoch_ms(&self, b: &BoardState, t: Micros) -> i64 {
        b.status.t0_ms.unwrap_or(self.info.epoch_ms) + t / 1000
    }
}

/// The number a board id names: `board-B` is configured board `B`.
pub fn configured_number(id: &str) -> Option<u32> {
    id.strip_prefix("board-")
        .filter(|n| !n.starts_with('0') && n.bytes().all(|c| c.is_ascii_digit()))
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbers(r: &RoundState) -> Vec<(String, u32)> {
        r.boards()
            .iter()
            .map(|b| (b.id.clone(), b.number))
            .collect()
    }

    #[test]
    fn configured_boards_have_their_numbers_and_others_the_lowest_free_ones() {
        let mut r = RoundState::new(RoundInfo {
            boards: vec!["board-7".into(), "board-3".into()],
            ..Default::default()
        });
        r.board_mut("dgt-10005");
        r.board_mut("dgt-10006");
        r.board_mut("dgt-10005");
        let want = [
            ("dgt-10005", 1),
            ("dgt-10006", 2),
            ("board-3", 3),
            ("board-7", 7),
        ];
        let want: Vec<(String, u32)> = want.iter().map(|(i, n)| (i.to_string(), *n)).collect();
        assert_eq!(numbers(&r), want);
        assert_eq!(r.board_numbered(7).map(|b| b.id.as_str()), Some("board-7"));
        assert_eq!(r.board_numbered(5).map(|b| b.id.as_str()), None);
        assert_eq!(r.max_number(), 7);
    }

    #[test]
    fn a_recorded_number_is_kept_when_free_and_a_configured_one_is_taken_back() {
        let mut r = RoundState::new(RoundInfo {
            boards: vec!["board-2".into()],
            ..Default::default()
        });
        // Recorded in its capture: taken. Recorded but owned by a configured board: not.
        assert_eq!(r.board_with_number("dgt-1", Some(5)).number, 5);
        assert_eq!(r.board_with_number("dgt-2", Some(2)).number, 1);
        assert_eq!(r.board_with_number("dgt-3", Some(5)).number, 3);
        // A configured board appearing later (a reload named it) takes its number back.
        assert_eq!(r.board_mut("board-5").number, 5);
        assert_eq!(r.board("dgt-1").map(|b| b.number), Some(4));
        let mut seen: Vec<u32> = r.boards().iter().map(|b| b.number).collect();
        seen.dedup();
        assert_eq!(seen, [1, 2, 3, 4, 5], "numbers are unique and in order");
    }
}
