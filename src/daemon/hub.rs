//! The in-process hub between the boards and the outputs (WebSocket, MQTT, PGN files...).
//!
//! Two things come out of it:
//! - a [`tokio::sync::broadcast`] of [`EventLine`]s: every event of every board as its JSON line
//!   (`capture-and-events.md` §3), with `seq` increasing by one per event over the daemon run;
//! - per-board [`BoardSnapshot`]s (position, last move, clocks, connection state, the game as
//!   PGN) behind an `Arc<RwLock<..>>`, for late joiners and for polling outputs.
//!
//! Events are published only after the capture record that caused them is written (and synced),
//! so nothing a subscriber saw can be missing from the captures after a crash.
//!
//! ```
//! use eboardd::daemon::hub::Hub;
//! let hub = Hub::new(1024);
//! let (snapshots, mut events) = hub.subscribe_with_snapshots();
//! assert!(snapshots.is_empty());
//! assert!(events.try_recv().is_err());
//! ```
//!
//! A subscriber that falls more than the channel's capacity behind gets
//! [`broadcast::error::RecvError::Lagged`]: it should then take fresh snapshots
//! ([`Hub::subscribe_with_snapshots`]) and carry on from there.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};

use serde::Serialize;
use tokio::sync::{broadcast, mpsc};

use crate::core::event::{CoreEvent, EventEnvelope};
use crate::core::observation::OperatorAction;

/// One event as broadcast: its sequence number, board and JSON line (no trailing newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLine {
    /// Increasing by one per event over the daemon run, from 1.
    pub seq: u64,
    /// The board (device id) the event is about.
    pub board: String,
    /// The event as one JSON object (`capture-and-events.md` §3).
    pub json: String,
}

/// Whether a board's link is up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Connection {
    /// Known from the captures but not seen on a port since the daemon started.
    #[default]
    Offline,
    /// Handshake done, bytes flowing.
    Connected,
    /// The link was lost; the daemon is trying to reconnect.
    Disconnected,
}

/// The last move of the current game.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastMove {
    /// Ply number (1 = White's first move).
    pub ply: u32,
    /// SAN.
    pub san: String,
    /// UCI.
    pub uci: String,
    /// Whether the move is completed (clock pressed, or the next move made).
    pub completed: bool,
}

/// Clock times as last reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClockSnapshot {
    /// White's remaining milliseconds.
    pub white: u32,
    /// Black's remaining milliseconds.
    pub black: u32,
    /// `"white"`, `"black"` or `None` when stopped.
    pub running: Option<String>,
}

/// What an output needs to show one board without having seen its events.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct BoardSnapshot {
    /// Device id (the `board` of its events).
    pub board: String,
    /// Board number from the configuration.
    pub number: Option<u32>,
    /// The board's serial number, when known.
    pub serial: Option<String>,
    /// The port it is on (or was last on).
    pub port: Option<String>,
    /// Link state.
    pub connection: Connection,
    /// Current game number on this board (0 before the first game).
    pub game: u32,
    /// FEN of the current game's position (empty before the first game).
    pub fen: String,
    /// The current game's last move.
    pub last_move: Option<LastMove>,
    /// Clock times, when a clock has reported.
    pub clock: Option<ClockSnapshot>,
    /// The current game's result (`"1-0"`, `"0-1"`, `"1/2-1/2"`), once ended.
    pub result: Option<String>,
    /// The current game as PGN (`capture-and-events.md` §4); empty before the first game.
    pub pgn: String,
    /// `seq` of the last event that changed this snapshot (0: none this run).
    pub seq: u64,
}

/// The shared per-board snapshots.
pub type Snapshots = Arc<RwLock<BTreeMap<String, BoardSnapshot>>>;

/// An operator action asked for by an output (e.g. an arbiter's console), for one board.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorRequest {
    /// The board.
    pub board: String,
    /// What to do.
    pub action: OperatorAction,
}

/// Events and snapshots of every board. Cheap to share (`Arc<Hub>`).
#[derive(Debug)]
pub struct Hub {
    /// Held while assigning `seq`, sending and updating snapshots, so that the order of the
    /// channel, the `seq` numbers and the snapshots agree.
    seq: Mutex<u64>,
    tx: broadcast::Sender<Arc<EventLine>>,
    boards: Snapshots,
    operator: Mutex<Option<mpsc::UnboundedSender<OperatorRequest>>>,
    /// The broadcast outputs (HTTP, streams, relay files, MQTT, LiveChess API), when served.
    outputs: RwLock<Option<crate::output::Broadcaster>>,
}

impl Hub {
    /// A hub whose channel keeps up to `capacity` events for slow subscribers.
    pub fn new(capacity: usize) -> Hub {
        let (tx, _) = broadcast::channel(capacity.max(1));
        Hub {
            seq: Mutex::new(0),
            tx,
            boards: Arc::default(),
            operator: Mutex::new(None),
            outputs: RwLock::new(None),
        }
    }

    /// Feed every event and board health change to the broadcast outputs from now on.
    pub fn attach_outputs(&self, outputs: crate::output::Broadcaster) {
        *self.outputs.write().unwrap_or_else(|e| e.into_inner()) = Some(outputs);
    }

    /// A receiver of every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<EventLine>> {
        self.tx.subscribe()
    }

    /// The snapshots now and a receiver of every event after them, taken atomically: an event
    /// is either reflected in the snapshots or received, never both or neither.
    pub fn subscribe_with_snapshots(
        &self,
    ) -> (Vec<BoardSnapshot>, broadcast::Receiver<Arc<EventLine>>) {
        let _order = self.seq.lock().unwrap_or_else(|e| e.into_inner());
        (self.snapshots(), self.tx.subscribe())
    }

    /// The `seq` of the last event published (0 before the first).
    pub fn last_seq(&self) -> u64 {
        *self.seq.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One board's snapshot.
    pub fn snapshot(&self, board: &str) -> Option<BoardSnapshot> {
        self.read().get(board).cloned()
    }

    /// Every board's snapshot, by board id.
    pub fn snapshots(&self) -> Vec<BoardSnapshot> {
        self.read().values().cloned().collect()
    }

    /// The shared snapshot map itself (read it; the daemon writes it).
    pub fn snapshot_map(&self) -> Snapshots {
        self.boards.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, BoardSnapshot>> {
        self.boards.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes `events` of `board` in order and then stores `snapshot` (when given) with the
    /// last `seq`; returns that `seq`.
    pub fn publish(
        &self,
        board: &str,
        events: &[CoreEvent],
        snapshot: Option<BoardSnapshot>,
    ) -> u64 {
        let mut seq = self.seq.lock().unwrap_or_else(|e| e.into_inner());
        let outputs = self.outputs.read().unwrap_or_else(|e| e.into_inner());
        for e in events {
            if let Some(o) = outputs.as_ref() {
                o.publish(board, e);
            }
            *seq += 1;
            let json = EventEnvelope::new(*seq, board, e).to_json();
            // No subscriber is not an error.
            let _ = self.tx.send(Arc::new(EventLine {
                seq: *seq,
                board: board.to_string(),
                json,
            }));
        }
        if let Some(mut s) = snapshot {
            if let Some(o) = outputs.as_ref() {
                o.set_status(board, status_of(&s));
            }
            if !events.is_empty() {
                s.seq = *seq;
            } else if let Some(old) = self.read().get(board) {
                s.seq = old.seq;
            }
            self.boards
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(board.to_string(), s);
        }
        *seq
    }

    /// Asks the daemon to carry out an operator action on a board (new game, result, clock
    /// side). It is captured as an `op` record and then acted on; its events come through the
    /// channel like any other. Returns `false` when no daemon is listening.
    pub fn request_operator(&self, board: &str, action: OperatorAction) -> bool {
        let guard = self.operator.lock().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().is_some_and(|tx| {
            tx.send(OperatorRequest {
                board: board.to_string(),
                action,
            })
            .is_ok()
        })
    }

    /// For the daemon: the receiving end of [`Hub::request_operator`] (replaces any earlier one).
    pub fn operator_requests(&self) -> mpsc::UnboundedReceiver<OperatorRequest> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.operator.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        rx
    }
}

/// A board's health as the broadcast outputs show it.
fn status_of(s: &BoardSnapshot) -> crate::output::BoardStatus {
    use crate::output::LinkState;
    crate::output::BoardStatus {
        state: match s.connection {
            Connection::Connected => LinkState::Active,
            Connection::Disconnected => LinkState::Disconnected,
            Connection::Offline => LinkState::Unknown,
        },
        source: s.port.clone(),
        serial: s.serial.clone(),
        clock_connected: s.clock.as_ref().map(|_| true),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::event::EventKind;

    fn ev(t: i64) -> CoreEvent {
        CoreEvent {
            t: t * 1_000_000,
            game: 1,
            kind: EventKind::MoveRetracted { ply: 3 },
        }
    }

    #[test]
    fn seq_increases_and_snapshots_follow() {
        let hub = Hub::new(16);
        let mut rx = hub.subscribe();
        let snap = BoardSnapshot {
            board: "board-1".into(),
            fen: "x".into(),
            ..Default::default()
        };
        assert_eq!(
            hub.publish("board-1", &[ev(1), ev(2)], Some(snap.clone())),
            2
        );
        assert_eq!(hub.publish("board-2", &[ev(3)], None), 3);
        let a = rx.try_recv().unwrap();
        assert_eq!(a.seq, 1);
        assert!(
            a.json
                .starts_with("{\"v\":1,\"seq\":1,\"t\":1.0,\"board\":\"board-1\"")
        );
        assert_eq!(rx.try_recv().unwrap().seq, 2);
        assert_eq!(rx.try_recv().unwrap().board, "board-2");
        assert_eq!(hub.snapshot("board-1").unwrap().seq, 2);
        // A snapshot change without events keeps the seq of the last event.
        hub.publish("board-1", &[], Some(snap));
        assert_eq!(hub.snapshot("board-1").unwrap().seq, 2);
        assert_eq!(hub.last_seq(), 3);
        let (snaps, mut rx2) = hub.subscribe_with_snapshots();
        assert_eq!(snaps.len(), 1);
        assert!(rx2.try_recv().is_err());
    }

    #[test]
    fn operator_requests_reach_the_daemon() {
        let hub = Hub::new(4);
        assert!(!hub.request_operator("b", OperatorAction::NewGame { fen: None }));
        let mut rx = hub.operator_requests();
        assert!(hub.request_operator(
            "b",
            OperatorAction::SetResult {
                result: "1-0".into()
            }
        ));
        assert_eq!(rx.try_recv().unwrap().board, "b");
    }
}
