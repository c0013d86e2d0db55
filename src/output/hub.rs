//! The [`Hub`], the only one between the boards and every consumer: it numbers events (one
//! `seq` counter per daemon run, shared by `run --events` on standard output, WebSocket, SSE,
//! MQTT and the LiveChess API), keeps the round model (the one board view) and a bounded
//! backlog, and fans messages out to live subscribers through a `tokio::sync::broadcast`
//! channel. The live daemon publishes into it directly, after the capture record that caused
//! an event is written; operator actions asked for by an output go back through [`Control`].
//!
//! The hub is the model, the `seq` and the backlog; everything else that must see every change
//! in order follows it ([`Follower`]): the delayed public hub's line ([`super::delay`]), the
//! [`Fanout`] of the WebSocket and SSE clients once one has connected, the metrics' event
//! counters ([`super::metrics::CountEvents`]).
//!
//! Publishing never waits: it takes a short lock, serialises the event once and sends it to the
//! channel and its followers. A subscriber that falls more than the channel's capacity behind gets a `Lagged` error; the
//! transports (behind the fan-out, in batches) then send it a snapshot and drop it if it lags
//! again.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock};

use axum::extract::ws::Utf8Bytes;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use super::bluetooth::BluetoothHealth;
pub use super::change::Published;
use super::change::{Change, Content, Follower, Notice};
pub use super::corrections::ControlError;
use super::fanout::Fanout;
use super::metrics::Metrics;
use super::model::{BoardStatus, Pairing, RoundInfo, RoundState, board_json, round_json};
use crate::core::event::{CoreEvent, EventEnvelope};
use crate::core::observation::{Micros, OperatorAction};
use crate::round::check::BoardSenses;

/// What a new subscriber gets first.
#[derive(Debug)]
pub enum Start {
    /// Every message after the requested `seq`, from the backlog (may be empty).
    Backlog(Vec<Arc<Published>>),
    /// A snapshot, when the requested `seq` is older than the backlog or none was given.
    Snapshot {
        /// JSON text of the `snapshot` message.
        json: Utf8Bytes,
        /// The last seq the snapshot includes.
        seq: u64,
        /// Messages published after the snapshot was made, to send right after it.
        then: Vec<Arc<Published>>,
    },
}

/// How long a snapshot may be reused for resynchronising clients (with the backlog since
/// filling the gap): many lagging clients then cost one serialisation.
const SNAPSHOT_REUSE: std::time::Duration = std::time::Duration::from_millis(250);

/// Limits of the hub.
#[derive(Debug, Clone)]
pub struct HubConfig {
    /// Messages kept for resuming clients.
    pub backlog: usize,
    /// How far a live subscriber may fall behind before it lags.
    pub channel: usize,
    /// Where the finished games' file is made ([`super::archive`]): the temporary directory
    /// when `None`.
    pub archive_dir: Option<std::path::PathBuf>,
}

impl Default for HubConfig {
    fn default() -> Self {
        HubConfig {
            backlog: 50_000,
            channel: 4096,
            archive_dir: None,
        }
    }
}

/// Operator actions the hub cannot carry out itself (they change a game), forwarded to
/// whoever owns the board engines: the live daemon, or the replay driver.
pub trait Control: Send + Sync {
    /// Carry out `action` on `board`.
    fn operator(&self, board: &str, action: OperatorAction) -> Result<(), ControlError>;

    /// Check `action` on `board` and carry it out, or say why not (an arbiter's correction:
    /// refused ones change nothing). By default the same as [`Control::operator`].
    fn correct(&self, board: &str, action: OperatorAction) -> Result<(), ControlError> {
        self.operator(board, action)
    }

    /// Record the players an output set for `board` before they take effect (the daemon
    /// writes them to the board's capture as a `set_tags` record, so a restart and a replay
    /// name them). By default nothing is recorded.
    fn players(&self, board: &str, pairing: &Pairing) -> Result<(), ControlError> {
        let _ = (board, pairing);
        Ok(())
    }

    /// What each board senses now (every field and the clock), by board id, for the hall
    /// check ([`crate::round::check`]). By default nothing is known.
    fn senses(&self) -> HashMap<String, BoardSenses> {
        HashMap::new()
    }
}

/// Any `Fn(board, action) -> Result<(), ControlError>` is a [`Control`].
impl<F> Control for F
where
    F: Fn(&str, OperatorAction) -> Result<(), ControlError> + Send + Sync,
{
    fn operator(&self, board: &str, action: OperatorAction) -> Result<(), ControlError> {
        self(board, action)
    }
}

/// Why the hub refused a change asked for by an output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// No such board.
    #[error("no board {0:?}")]
    NoBoard(String),
    /// The board has no irregularity with that id.
    #[error("board {board:?} has no irregularity {id}")]
    NoIrregularity {
        /// The board.
        board: String,
        /// The id asked for.
        id: u64,
    },
    /// A player's details are not valid.
    #[error(transparent)]
    Player(#[from] super::model::PlayerError),
    /// No board engines are attached (a server without a daemon or replay behind it).
    #[error("this server cannot change games (no board engines attached)")]
    NoControl,
    /// The board engines did not take the action.
    #[error(transparent)]
    Control(#[from] ControlError),
}

struct State {
    round: RoundState,
    backlog: VecDeque<Arc<Published>>,
    next_seq: u64,
    /// The last snapshot made: its seq, when, its JSON.
    snapshot: Option<(u64, std::time::Instant, Utf8Bytes)>,
    /// Bumped on every change of the model (published or not).
    rev: u64,
    /// JSON text of the whole round at revision `.0` (`GET /api/v1/boards`).
    boards_json: Option<(u64, bytes::Bytes)>,
}

impl State {
    /// Messages in the backlog after `seq`, if the backlog reaches back that far.
    fn after(&self, seq: u64) -> Option<Vec<Arc<Published>>> {
        let last = self.next_seq - 1;
        if seq == last {
            return Some(Vec::new());
        }
        let first = self.backlog.front().map_or(last + 1, |m| m.seq);
        (seq < last && seq + 1 >= first).then(|| {
            self.backlog
                .iter()
                .skip((seq + 1 - first) as usize)
                .cloned()
                .collect()
        })
    }

    /// A snapshot and what followed it: a recent one is reused.
    fn snapshot_start(&mut self) -> Start {
        if let Some((seq, made, json)) = &self.snapshot
            && made.elapsed() < SNAPSHOT_REUSE
            && let Some(then) = self.after(*seq)
        {
            return Start::Snapshot {
                json: json.clone(),
                seq: *seq,
                then,
            };
        }
        let seq = self.next_seq - 1;
        let json = Utf8Bytes::from(snapshot_json(&self.round));
        self.snapshot = Some((seq, std::time::Instant::now(), json.clone()));
        Start::Snapshot {
            json,
            seq,
            then: Vec::new(),
        }
    }
}

struct Inner {
    state: Mutex<State>,
    tx: broadcast::Sender<Arc<Published>>,
    changed: watch::Sender<u64>,
    control: Mutex<Option<Arc<dyn Control>>>,
    cfg: HubConfig,
    /// Who is told of every change and message, in the hub's order ([`Follower`]).
    followers: RwLock<Vec<Arc<dyn Follower>>>,
    /// The delayed public hub that mirrors this one (`delay_secs`), once made.
    mirror: Mutex<Option<Mirror>>,
    /// While the daemon rebuilds its boards from their captures at start: boards rebuilt, and
    /// boards to rebuild (`None`: ready).
    recovering: Mutex<Option<(usize, usize)>>,
    /// Boards whose earlier games are read back, and how many (`None`: none left).
    backfill: Mutex<Option<(usize, usize)>>,
    /// What is wrong with a port's link, by port (a BLE link whose MTU cuts frames).
    link_problems: Mutex<BTreeMap<String, String>>,
    /// The Bluetooth LE adapters and how many boards each holds (`None`: no BLE port).
    bluetooth: Mutex<Option<BluetoothHealth>>,
    /// The daemon's metrics, once set (the live hub counts its events into them; the delayed
    /// public hub only lends them to its clients).
    metrics: OnceLock<Arc<Metrics>>,
    /// The batches of the event-stream transports, started by the first client.
    fanout: OnceLock<Arc<Fanout>>,
}

/// A hub that shows this one late (the broadcast delay), fed by a [`Follower`] of this one
/// (see [`super::delay`]).
#[derive(Clone)]
pub struct Mirror {
    /// How late it shows this hub.
    pub delay: std::time::Duration,
    /// The delayed public hub.
    pub public: Hub,
    /// What feeds it: a follower of this hub.
    pub feed: Arc<dyn Follower>,
}

/// The hub every output reads from. Cheap to clone; all clones share one state.
#[derive(Clone)]
pub struct Hub {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

/// JSON of a `snapshot` message.
fn snapshot_json(round: &RoundState) -> String {
    let mut v = round_json(round);
    if let Value::Object(map) = &mut v {
        map.insert("kind".into(), "snapshot".into());
    }
    v.to_string()
}

impl Hub {
    /// A broadcaster for one round.
    pub fn new(info: RoundInfo, cfg: HubConfig) -> Self {
        let (tx, _) = broadcast::channel(cfg.channel.max(16));
        let (changed, _) = watch::channel(0);
        Hub {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    round: RoundState::with_archive(
                        info,
                        super::archive::Archive::new(cfg.archive_dir.clone()),
                    ),
                    backlog: VecDeque::new(),
                    next_seq: 1,
                    snapshot: None,
                    rev: 0,
                    boards_json: None,
                }),
                tx,
                changed,
                control: Mutex::new(None),
                cfg,
                followers: RwLock::new(Vec::new()),
                mirror: Mutex::new(None),
                recovering: Mutex::new(None),
                backfill: Mutex::new(None),
                link_problems: Mutex::new(BTreeMap::new()),
                bluetooth: Mutex::new(None),
                metrics: OnceLock::new(),
                fanout: OnceLock::new(),
            }),
        }
    }

    /// The daemon is rebuilding its boards from their captures: `done` of `total` so far
    /// (`None`: done, the hub shows every board there is). Health says `recovering` meanwhile.
    pub fn set_recovering(&self, progress: Option<(usize, usize)>) {
        *self
            .inner
            .recovering
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = progress;
        if let Some(mirror) = self.mirror().as_ref() {
            mirror.public.set_recovering(progress);
        }
    }

    /// Boards whose finished games before their resume points are read back, of how many,
    /// while that goes on in the background after a restart (`None`: done). Health shows it;
    /// the daemon is ready meanwhile (every live board is back).
    pub fn set_backfill(&self, progress: Option<(usize, usize)>) {
        *self
            .inner
            .backfill
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = progress;
    }

    /// What is wrong with `port`'s link (`None`: nothing any more); health lists it.
    pub fn set_link_problem(&self, port: &str, problem: Option<String>) {
        let mut p = self
            .inner
            .link_problems
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match problem {
            Some(why) => p.insert(port.to_string(), why),
            None => p.remove(port),
        };
    }

    /// See [`Hub::set_link_problem`].
    pub fn link_problems(&self) -> BTreeMap<String, String> {
        self.inner
            .link_problems
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The Bluetooth LE adapters as the BLE port tasks see them; health shows it.
    pub fn set_bluetooth(&self, health: Option<BluetoothHealth>) {
        *self
            .inner
            .bluetooth
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = health;
    }

    /// See [`Hub::set_bluetooth`].
    pub fn bluetooth(&self) -> Option<BluetoothHealth> {
        self.inner
            .bluetooth
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// See [`Hub::set_backfill`].
    pub fn backfill(&self) -> Option<(usize, usize)> {
        *self
            .inner
            .backfill
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Boards rebuilt and to rebuild while the daemon recovers at start; `None` when ready.
    pub fn recovering(&self) -> Option<(usize, usize)> {
        *self
            .inner
            .recovering
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Count this hub's events into `metrics` (the live daemon's; the first call wins), and
    /// lend them to the delayed public hub's clients. See [`super::metrics`].
    pub fn set_metrics(&self, metrics: Arc<Metrics>) {
        if let Some(mirror) = self.mirror().as_ref() {
            mirror.public.lend_metrics(metrics.clone());
        }
        if self.inner.metrics.set(metrics.clone()).is_ok() {
            self.follow(Arc::new(super::metrics::CountEvents(metrics)));
        }
    }

    /// Lend `metrics` to this hub's clients without counting its events into them (the
    /// delayed public hub: its events are the live hub's, counted there).
    pub fn lend_metrics(&self, metrics: Arc<Metrics>) {
        let _ = self.inner.metrics.set(metrics);
    }

    /// The daemon's metrics, if set (on the live hub or the delayed public one).
    pub fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.inner.metrics.get()
    }

    /// Its limits.
    pub fn config(&self) -> &HubConfig {
        &self.inner.cfg
    }

    /// Tell `follower` of every later change and message of this hub.
    pub fn follow(&self, follower: Arc<dyn Follower>) {
        self.followers_mut().push(follower);
    }

    /// Stop telling `follower` (the same `Arc` given to [`Hub::follow`]).
    pub fn unfollow(&self, follower: &Arc<dyn Follower>) {
        self.followers_mut().retain(|f| !Arc::ptr_eq(f, follower));
    }

    fn followers_mut(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Arc<dyn Follower>>> {
        self.inner
            .followers
            .write()
            .unwrap_or_else(|p| p.into_inner())
    }

    fn followers(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<dyn Follower>>> {
        self.inner
            .followers
            .read()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The slot of the delayed public hub mirroring this one, locked ([`super::delay`] fills
    /// and empties it; the hub passes on its recovery and metrics to the mirror).
    pub fn mirror(&self) -> MutexGuard<'_, Option<Mirror>> {
        self.inner.mirror.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes the hub's lock and lets it go: returns once the hub is not wedged in it (the
    /// daemon's watchdog is fed only then).
    pub fn responsive(&self) {
        drop(self.lock());
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Publish one core event of `board`: it gets the next `seq`, updates the model, goes to
    /// the backlog and to every live subscriber. Never blocks on a subscriber. Returns its seq.
    pub fn publish(&self, board: &str, event: &CoreEvent) -> u64 {
        let mut st = self.lock();
        let change = Change::Event {
            board: board.to_string(),
            event: Arc::new(event.clone()),
        };
        let _ = self.apply(&mut st, change);
        st.next_seq - 1
    }

    /// Make `change` on the model (the state lock held), with the messages it publishes; when
    /// it changed anything, hand it on to the delayed public hub, if there is one (still under
    /// the lock, so in the hub's order; after it is out: the delay counts from the moment the
    /// live view had it). Every change of the model goes through here. `Ok(false)`: nothing
    /// changed.
    fn apply(&self, st: &mut State, change: Change) -> Result<bool, HubError> {
        let Some(made) = self.make(st, change)? else {
            return Ok(false);
        };
        for f in self.followers().iter() {
            f.changed(&made);
        }
        Ok(true)
    }

    /// The body of [`Hub::apply`]: make `change`, and return it as the delayed hub is to make
    /// it (`None`: nothing changed).
    fn make(&self, st: &mut State, change: Change) -> Result<Option<Change>, HubError> {
        let changed = match &change {
            Change::Event { board, event } => self.make_event(st, board, event),
            Change::Status { board, status } => self.make_status(st, board, status),
            Change::Preset { board, status } => {
                st.rev += 1;
                st.round.board_mut(board).status = status.clone();
                true
            }
            Change::Restore {
                board,
                games,
                rounds,
                status,
            } => {
                st.rev += 1;
                st.round.restore(board, games, rounds);
                st.round.board_mut(board).status = status.clone();
                true
            }
            Change::RestoreEarlier {
                board,
                games,
                rounds,
            } => {
                st.rev += 1;
                st.round.restore_earlier(board, games, rounds);
                true
            }
            Change::Number { board, wanted } => return Ok(Self::make_number(st, board, *wanted)),
            Change::Pairing { board, pairing } => self.make_pairing(st, board, pairing),
            Change::Ack { board, id } => self.make_ack(st, board, *id)?,
            Change::Result {
                round,
                board,
                result,
            } => {
                st.round.board_mut(board);
                let results = &mut st.round.info_of_mut(*round).results;
                results.insert(board.clone(), *result);
                let notice = Notice::ResultConfirmed {
                    round: *round,
                    result: *result,
                };
                self.publish_own(st, board, notice);
                true
            }
            Change::Info(info) => {
                st.rev += 1;
                st.round.info = (**info).clone();
                for id in st.round.info.boards.clone() {
                    st.round.board_mut(&id);
                }
                true
            }
            Change::StartRound(info) => self.make_start_round(st, info),
        };
        Ok(changed.then_some(change))
    }

    /// A core event: numbered, applied to the model, published.
    fn make_event(&self, st: &mut State, board: &str, event: &Arc<CoreEvent>) -> bool {
        let seq = st.next_seq;
        let json = EventEnvelope::new(seq, board, event).to_json();
        st.round.apply(seq, board, event);
        let message = Content::Event(event.clone());
        self.push(st, seq, board, message, event.t, json);
        true
    }

    /// A board's health: a `board_status` message when it changed.
    fn make_status(&self, st: &mut State, board: &str, status: &BoardStatus) -> bool {
        if st.round.board(board).is_some_and(|b| &b.status == status) {
            return false;
        }
        st.round.board_mut(board).status = status.clone();
        let notice = Notice::BoardStatus {
            status: status.clone(),
        };
        self.publish_own(st, board, notice);
        true
    }

    /// A board's number: the change as a mirror is to make it (the number the board got),
    /// `None` when it had that number already.
    fn make_number(st: &mut State, board: &str, wanted: Option<u32>) -> Option<Change> {
        let had = st.round.board_number(board);
        let number = st.round.board_with_number(board, wanted).number;
        if had == Some(number as usize) {
            return None;
        }
        st.rev += 1;
        Some(Change::Number {
            board: board.to_string(),
            wanted: Some(number),
        })
    }

    /// A board's players: a `players` message.
    fn make_pairing(&self, st: &mut State, board: &str, pairing: &Pairing) -> bool {
        st.round.board_mut(board);
        st.round
            .info
            .pairings
            .insert(board.to_string(), pairing.clone());
        let notice = Notice::Players {
            white: Box::new(pairing.white.clone()),
            black: Box::new(pairing.black.clone()),
            round: None,
        };
        self.publish_own(st, board, notice);
        true
    }

    /// An irregularity acknowledged: an `irregularity_acknowledged` message.
    fn make_ack(&self, st: &mut State, board: &str, id: u64) -> Result<bool, HubError> {
        let b = st
            .round
            .board(board)
            .ok_or_else(|| HubError::NoBoard(board.to_string()))?;
        let Some(i) = b.irregularities.iter().position(|i| i.id == id) else {
            return Err(HubError::NoIrregularity {
                board: board.to_string(),
                id,
            });
        };
        let irr = &mut st.round.board_mut(board).irregularities[i];
        irr.acknowledged = true;
        let notice = Notice::IrregularityAcknowledged {
            irregularity: id,
            code: irr.code,
        };
        self.publish_own(st, board, notice);
        Ok(true)
    }

    /// A new round: a `players` message for every board.
    fn make_start_round(&self, st: &mut State, info: &RoundInfo) -> bool {
        st.rev += 1;
        let round = info.round;
        st.round.start_round(info.clone());
        let ids: Vec<String> = st.round.boards().iter().map(|b| b.id.clone()).collect();
        for id in ids {
            let p = st.round.pairing(&id);
            let notice = Notice::Players {
                white: Box::new(p.white),
                black: Box::new(p.black),
                round: Some(round),
            };
            self.publish_own(st, &id, notice);
        }
        true
    }

    /// Publish a message the broadcaster makes itself (status, acknowledgement, players): the
    /// common envelope with the notice's `kind` and fields.
    fn publish_own(&self, st: &mut State, board: &str, notice: Notice) -> u64 {
        let seq = st.next_seq;
        let (t, game) = st
            .round
            .board(board)
            .map(|b| (b.last_t, b.game().map_or(0, |g| g.number)))
            .unwrap_or((st.round.last_t, 0));
        let json = EventEnvelope::of(seq, t, board, game, &notice).to_json();
        st.round.last_seq = seq;
        st.round.board_mut(board).last_seq = seq;
        self.push(st, seq, board, Content::Notice(notice), t, json)
    }

    fn push(
        &self,
        st: &mut State,
        seq: u64,
        board: &str,
        content: Content,
        t: Micros,
        json: String,
    ) -> u64 {
        st.next_seq = seq + 1;
        st.rev += 1;
        let kind = content.kind();
        debug_assert!(
            serde_json::to_string(&kind).is_ok_and(|k| json.contains(&format!("\"kind\":{k}"))),
            "{kind:?} is the kind of {json}"
        );
        let msg = Arc::new(Published {
            seq,
            board: Arc::from(board),
            kind,
            content,
            t,
            json: Utf8Bytes::from(json),
            at: std::time::Instant::now(),
        });
        if st.backlog.len() >= self.inner.cfg.backlog.max(1) {
            st.backlog.pop_front();
        }
        st.backlog.push_back(msg.clone());
        for f in self.followers().iter() {
            f.published(&msg);
        }
        // No receivers is fine: the backlog still has it.
        let _ = self.inner.tx.send(msg);
        self.inner.changed.send_replace(seq);
        seq
    }

    /// Set a board's health (link state, port, serial, clock presence, battery). Publishes a
    /// `board_status` message when it changed.
    pub fn set_status(&self, board: &str, status: BoardStatus) {
        let change = Change::Status {
            board: board.to_string(),
            status,
        };
        let _ = self.apply(&mut self.lock(), change);
    }

    /// Restore a board's games rebuilt from its capture at daemon start (their events were
    /// published by an earlier run, not this one), with its health; publishes nothing:
    /// snapshots carry it. The events that follow apply to the last of these games. `rounds`
    /// gives each game's round as its capture tagged it (`None`, or missing: the board's
    /// round), so that the games of earlier rounds go back to their rounds.
    pub fn restore(
        &self,
        board: &str,
        games: &[crate::core::game::GameRecord],
        rounds: &[Option<u32>],
        status: BoardStatus,
    ) {
        let change = Change::Restore {
            board: board.to_string(),
            games: games.to_vec(),
            rounds: rounds.to_vec(),
            status,
        };
        let _ = self.apply(&mut self.lock(), change);
        self.inner.changed.send_replace(self.last_seq());
    }

    /// Finished games of `board` read back after its restore ([`Hub::restore`]), all before
    /// its games there: archived, publishing nothing (snapshots and the rounds' files carry
    /// them). `rounds` as for [`Hub::restore`].
    pub fn restore_earlier(
        &self,
        board: &str,
        games: &[crate::core::game::GameRecord],
        rounds: &[Option<u32>],
    ) {
        if games.is_empty() {
            return;
        }
        let change = Change::RestoreEarlier {
            board: board.to_string(),
            games: games.to_vec(),
            rounds: rounds.to_vec(),
        };
        let _ = self.apply(&mut self.lock(), change);
        self.inner.changed.send_replace(self.last_seq());
    }

    /// Board `id`'s number, and the current round's: the board is created when new, with
    /// number `wanted` when it is free (see [`RoundState::board_with_number`]).
    pub fn number_board(&self, id: &str, wanted: Option<u32>) -> (u32, u32) {
        let mut st = self.lock();
        let change = Change::Number {
            board: id.to_string(),
            wanted,
        };
        let changed = self.apply(&mut st, change).unwrap_or(false);
        let number = st.round.board(id).map_or(0, |b| b.number);
        let round = st.round.info.round;
        if changed {
            let seq = st.next_seq - 1;
            drop(st);
            self.inner.changed.send_replace(seq);
        }
        (number, round)
    }

    /// Set a board's health without publishing a message (before a source starts, when no
    /// client can have missed it: snapshots carry it).
    pub fn preset_status(&self, board: &str, status: BoardStatus) {
        let change = Change::Preset {
            board: board.to_string(),
            status,
        };
        let _ = self.apply(&mut self.lock(), change);
    }

    /// Set the players of a board: checked, recorded by the installed [`Control`] (the board's
    /// capture) first, then applied. Publishes a `players` message.
    pub fn set_pairing(&self, board: &str, pairing: Pairing) -> Result<(), HubError> {
        pairing.white.validate()?;
        pairing.black.validate()?;
        if let Some(c) = self.control() {
            c.players(board, &pairing)?;
        }
        let change = Change::Pairing {
            board: board.to_string(),
            pairing,
        };
        self.apply(&mut self.lock(), change).map(drop)
    }

    /// Start a round ([`RoundState::start_round`]): the round it replaces keeps its games.
    /// Every player is checked first (nothing changes on a refusal); then each board gets a
    /// `players` message with the new round number.
    pub fn start_round(&self, info: RoundInfo) -> Result<(), super::model::PlayerError> {
        for p in info.pairings.values() {
            p.white.validate()?;
            p.black.validate()?;
        }
        let mut st = self.lock();
        let _ = self.apply(&mut st, Change::StartRound(Box::new(info)));
        let seq = st.next_seq - 1;
        drop(st);
        self.inner.changed.send_replace(seq);
        Ok(())
    }

    /// Record board `board`'s result in round `round` as the arbiter confirmed or set it (the
    /// round JSON shows it `"confirmed": true`; results files write it). Publishes a
    /// `result_confirmed` message.
    pub fn set_result(&self, round: u32, board: &str, result: super::model::GameResult) {
        let mut st = self.lock();
        let change = Change::Result {
            round,
            board: board.to_string(),
            result,
        };
        let _ = self.apply(&mut st, change);
        let seq = st.next_seq - 1;
        drop(st);
        self.inner.changed.send_replace(seq);
    }

    /// Mark an irregularity (by id) acknowledged. Publishes `irregularity_acknowledged`.
    pub fn acknowledge(&self, board: &str, id: u64) -> Result<(), HubError> {
        let change = Change::Ack {
            board: board.to_string(),
            id,
        };
        self.apply(&mut self.lock(), change).map(drop)
    }

    /// Install the handler of game-changing operator actions.
    pub fn set_control(&self, control: Arc<dyn Control>) {
        *self.inner.control.lock().unwrap_or_else(|p| p.into_inner()) = Some(control);
    }

    /// The installed [`Control`], if any (the lock is released before it is called).
    fn control(&self) -> Option<Arc<dyn Control>> {
        self.inner
            .control
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Forward an operator action to the installed [`Control`].
    pub fn operator(&self, board: &str, action: OperatorAction) -> Result<(), HubError> {
        match self.control() {
            Some(c) => Ok(c.operator(board, action)?),
            None => Err(HubError::NoControl),
        }
    }

    /// What each board senses now, from the installed [`Control`] (nothing without one). Never
    /// called with the round locked: the boards publish into the hub under their own locks.
    pub fn senses(&self) -> HashMap<String, BoardSenses> {
        self.control().map(|c| c.senses()).unwrap_or_default()
    }

    /// Forward an arbiter's correction to the installed [`Control`], with its typed refusal.
    pub fn correct(&self, board: &str, action: OperatorAction) -> Result<(), ControlError> {
        match self.control() {
            Some(c) => c.correct(board, action),
            None => Err(ControlError::Unavailable(
                "this server cannot change games (no board engines attached)".into(),
            )),
        }
    }

    /// Subscribe to live messages after `since` (`None`: start with a snapshot). Messages in
    /// the backlog after `since` come first; if `since` is older than the backlog, a snapshot
    /// does. The receiver continues exactly after what `Start` covers.
    pub fn subscribe(&self, since: Option<u64>) -> (Start, broadcast::Receiver<Arc<Published>>) {
        let mut st = self.lock();
        let rx = self.inner.tx.subscribe();
        let start = match since.and_then(|s| st.after(s)) {
            Some(msgs) => Start::Backlog(msgs),
            None => st.snapshot_start(),
        };
        (start, rx)
    }

    /// A snapshot (with what followed it) and a receiver that continues right after.
    pub fn resync(&self) -> (Start, broadcast::Receiver<Arc<Published>>) {
        self.subscribe(None)
    }

    /// The batches of this hub's messages for the event-stream transports (started on the
    /// first call, which must be inside the Tokio runtime). Every message published after this
    /// call is in a batch sent after it, so a client subscribes to the batches first and then
    /// asks [`Hub::subscribe`] for its start. It keeps a quarter of `channel` batches (a batch
    /// holds what piled up in [`super::fanout::gather_window`], up to
    /// [`super::fanout::MOST_GATHER`] of messages with a thousand clients).
    pub fn fanout(&self) -> &Fanout {
        self.inner.fanout.get_or_init(|| {
            let fanout = Arc::new(Fanout::start(self.inner.cfg.channel / 4));
            self.follow(fanout.clone());
            fanout
        })
    }

    /// A receiver of live messages only.
    pub fn receiver(&self) -> broadcast::Receiver<Arc<Published>> {
        self.inner.tx.subscribe()
    }

    /// Notified with the last seq whenever anything changed.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Run `f` on the round model (under the lock: keep it short).
    pub fn with_round<R>(&self, f: impl FnOnce(&RoundState) -> R) -> R {
        f(&self.lock().round)
    }

    /// JSON of the whole round.
    pub fn snapshot(&self) -> Value {
        self.with_round(round_json)
    }

    /// JSON text of the whole round (as [`Hub::snapshot`]), made once per change of
    /// the model and shared by every request until the next one.
    pub fn snapshot_text(&self) -> bytes::Bytes {
        let mut st = self.lock();
        if let Some((rev, text)) = &st.boards_json
            && *rev == st.rev
        {
            return text.clone();
        }
        let text = bytes::Bytes::from(round_json(&st.round).to_string());
        st.boards_json = Some((st.rev, text.clone()));
        text
    }

    /// JSON of one board, if known.
    pub fn board_snapshot(&self, board: &str) -> Option<Value> {
        self.with_round(|r| r.board(board).map(|b| board_json(r, b)))
    }

    /// The last seq published (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.lock().next_seq - 1
    }

    /// Number of live subscribers: the event-stream clients (through the fan-out) and every
    /// other receiver of the hub.
    pub fn subscribers(&self) -> usize {
        let followers: usize = self.followers().iter().map(|f| f.receivers()).sum();
        self.inner.tx.receiver_count() + followers
    }

    /// Change the round information (event, round number, date, ...).
    pub fn update_info(&self, f: impl FnOnce(&mut RoundInfo)) {
        let mut st = self.lock();
        let mut info = st.round.info.clone();
        f(&mut info);
        let _ = self.apply(&mut st, Change::Info(Box::new(info)));
        let seq = st.next_seq - 1;
        drop(st);
        self.inner.changed.send_replace(seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::change::{MsgKind, NoticeTag};

    #[test]
    fn the_round_json_is_rendered_once_per_change_and_follows_every_change() {
        let info = RoundInfo {
            round: 1,
            boards: vec!["board-1".into()],
            ..Default::default()
        };
        let hub = Hub::new(info, HubConfig::default());
        let a = hub.snapshot_text();
        let b = hub.snapshot_text();
        assert_eq!(a.as_ptr(), b.as_ptr(), "one shared rendering");
        // A change without a published message (before a source starts) is seen too.
        hub.preset_status(
            "board-1",
            BoardStatus {
                comment: Some("preset".into()),
                ..Default::default()
            },
        );
        let c = hub.snapshot_text();
        assert!(std::str::from_utf8(&c).unwrap().contains("preset"));
        hub.update_info(|i| i.event = Some("Renamed Open".into()));
        assert!(
            std::str::from_utf8(&hub.snapshot_text())
                .unwrap()
                .contains("Renamed Open")
        );
        let v: Value = serde_json::from_slice(&hub.snapshot_text()).unwrap();
        assert_eq!(v, hub.snapshot());
    }

    #[test]
    fn a_confirmed_result_is_a_message_and_in_the_board_json() {
        let info = RoundInfo {
            round: 2,
            boards: vec!["board-1".into()],
            ..Default::default()
        };
        let hub = Hub::new(info, HubConfig::default());
        let (_, mut rx) = hub.subscribe(Some(0));
        hub.set_result(
            2,
            "board-1",
            super::super::model::GameResult::WhiteByForfeit,
        );
        let m = rx.try_recv().expect("a message");
        assert_eq!(m.kind, MsgKind::Notice(NoticeTag::ResultConfirmed));
        let v: Value = serde_json::from_str(&m.json).unwrap();
        assert_eq!(
            (&v["kind"], &v["board"], &v["round"], &v["result"]),
            (
                &"result_confirmed".into(),
                &"board-1".into(),
                &2.into(),
                &"+".into()
            )
        );
        let b = &hub.snapshot()["boards"][0];
        assert_eq!((&b["result"], &b["confirmed"]), (&"+".into(), &true.into()));
    }
}
