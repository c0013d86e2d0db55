//! Several daemons, one round: a [`Hub`] fed from an MQTT broker's topics of every node
//! (`eboardd serve-mqtt`), so the whole round — API, page, event streams, relay files,
//! LiveChess API — has one source while each hall runs its own daemon.
//!
//! Each node publishes (see [`super::mqtt`]) `PREFIX/NODE/status` (retained, its Last Will says
//! offline), `PREFIX/NODE/board/BOARD/state` (retained snapshot) and
//! `PREFIX/NODE/board/BOARD/events` (every event). This source subscribes to all three for
//! every node:
//! - a board seen for the first time is restored from its retained state: current game,
//!   players, health; seen again (a new broker connection), its state brings what the round
//!   lacks of its game as events (the moves, their completions, the game's start and end), so
//!   event-stream clients get them too; a state behind the round's game takes nothing back;
//! - events are read back into core events ([`CoreEvent::from_wire`]) and published into the
//!   hub, so the round model is built exactly as on the node. A move that does not follow the
//!   round's game (QoS 0: a message lost with a broker node) holds the board's game events
//!   until its next state, which brings the missing ones in order; an event the round has
//!   taken already (its node `seq` not above the board's latest taken) is not published twice,
//!   and a state older than that gives nothing of its game. The node's own messages
//!   (`board_status`, `players`, `irregularity_acknowledged`, `result_confirmed`) are applied
//!   as such;
//! - a node that goes offline (its Last Will, or the offline status of a clean stop) marks its
//!   boards disconnected with a comment naming the node; their games stay as they were. The
//!   status is retained, so a source that starts (or reconnects) after the node went offline
//!   restores the node's boards from their retained states and still shows them offline; the
//!   node's next `online` status and states bring them back;
//! - while the source itself has no broker connection, every board shows disconnected (the
//!   source cannot know more); the retained states of the next connection restore them.
//!
//! With several brokers (a cluster's nodes) the source reads from one and goes on with the next
//! when the connection breaks or the broker refuses a subscription; subscriptions are QoS 0
//! (see [`spawn`]).
//!
//! Board ids are the nodes' ids (give each hall its own board numbers); a board id that two
//! nodes use is served as `NODE.BOARD` for the second one.

use std::collections::{HashMap, HashSet};

use rumqttc::{AsyncClient, Event, Packet, QoS, SubscribeFilter, SubscribeReasonCode};
use serde::Deserialize;
use serde_json::Value;
use shakmaty::uci::UciMove;
use shakmaty::{CastlingMode, Chess, Outcome, fen::Fen};

use super::change::{MsgKind, NoticeTag};
use super::hub::Hub;
use super::model::{BoardStatus, LinkState, Pairing};
use super::mqtt::{Failover, MqttBroker};
use crate::core::event::{CompletedBy, CoreEvent, EndReason, EventKind};
use crate::core::game::GameRecord;
use crate::core::observation::Micros;
use tokio_util::sync::CancellationToken;

/// Where to read the round from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceConfig {
    /// The brokers, tried in this order (round-robin): one, or the nodes of a cluster.
    pub brokers: Vec<MqttBroker>,
    /// First topic level the nodes publish under.
    pub prefix: String,
}

/// What one MQTT message is, by its topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Topic<'a> {
    /// `PREFIX/NODE/status`.
    Status {
        /// The node.
        node: &'a str,
    },
    /// `PREFIX/NODE/board/BOARD/state`.
    State {
        /// The node.
        node: &'a str,
        /// The board id on that node.
        board: &'a str,
    },
    /// `PREFIX/NODE/board/BOARD/events`.
    Events {
        /// The node.
        node: &'a str,
        /// The board id on that node.
        board: &'a str,
    },
}

/// Parse a topic under `prefix` (`None`: not one of ours).
pub fn parse_topic<'a>(prefix: &str, topic: &'a str) -> Option<Topic<'a>> {
    let rest = topic.strip_prefix(prefix)?.strip_prefix('/')?;
    let parts: Vec<&str> = rest.split('/').collect();
    match parts.as_slice() {
        [node, "status"] => Some(Topic::Status { node }),
        [node, "board", board, "state"] => Some(Topic::State { node, board }),
        [node, "board", board, "events"] => Some(Topic::Events { node, board }),
        _ => None,
    }
}

/// The round as the source has assembled it so far (the pure part: messages in, hub calls
/// out).
#[derive(Debug, Default)]
pub struct Assembler {
    /// (node, node's board id) → id served.
    ids: HashMap<(String, String), String>,
    /// Ids served, to find collisions.
    taken: HashSet<String>,
    /// Boards restored from their retained state since the last broker connection.
    synced: HashSet<String>,
    /// (served id, the node's irregularity id) → the hub's irregularity id.
    irregularities: HashMap<(String, u64), u64>,
    /// Nodes whose last status said offline.
    offline: HashSet<String>,
    /// Boards that lost a move on the way: their game's events wait for their next state.
    gapped: HashSet<String>,
    /// Served id → the node's `seq` of the latest message of the board the round has taken
    /// (an event, or a state's `last_seq`): a state older than that is not read for its game.
    seqs: HashMap<String, u64>,
    /// Node → the run its status named (`run`: a daemon started again counts from 1 again).
    runs: HashMap<String, u64>,
}

impl Assembler {
    /// The id served for `board` of `node`.
    fn id(&mut self, node: &str, board: &str) -> String {
        if let Some(id) = self.ids.get(&(node.to_string(), board.to_string())) {
            return id.clone();
        }
        let id = if self.taken.contains(board) {
            let id = format!("{node}.{board}");
            tracing::warn!(
                node,
                board,
                served = %id,
                "board id already used by another node: served under the node's name"
            );
            id
        } else {
            board.to_string()
        };
        self.taken.insert(id.clone());
        self.ids
            .insert((node.to_string(), board.to_string()), id.clone());
        id
    }

    /// A new broker connection: retained states are sent again and restore every board.
    pub fn reconnected(&mut self) {
        self.synced.clear();
    }

    /// The broker connection is lost: nothing is known of any node until it is back, so every
    /// board shows disconnected (the next connection's retained states restore them).
    pub fn broker_lost(&mut self, hub: &Hub) {
        let ids: Vec<String> = self.ids.values().cloned().collect();
        for id in ids {
            mark_disconnected(hub, &id, "MQTT broker connection lost".into());
        }
        self.synced.clear();
    }

    /// Apply one message of topic `topic` with payload `payload` to `hub`.
    pub fn apply(&mut self, hub: &Hub, topic: &Topic<'_>, payload: &[u8]) {
        let Ok(v) = serde_json::from_slice::<Value>(payload) else {
            tracing::warn!(?topic, "MQTT payload is not JSON; ignored");
            return;
        };
        match *topic {
            Topic::Status { node } => self.node_status(hub, node, &v),
            Topic::State { node, board } => {
                let id = self.id(node, board);
                let first = self.synced.insert(id.clone());
                self.gapped.remove(&id);
                // Every state is read for what the round lacks of its game (one retained
                // before this source subscribed can be behind events it will never get),
                // unless it is older than what the round has of the board (a retained state
                // from before a node's loss: its later states were lost with the node).
                let theirs = v["last_seq"].as_u64().unwrap_or(0);
                let stale = self.seqs.get(&id).is_some_and(|&ours| theirs < ours);
                if !stale {
                    self.seqs.insert(id.clone(), theirs);
                }
                catch_up(hub, &id, &v, first, stale);
                if first && self.offline.contains(node) {
                    // Its state was retained before the node went offline.
                    mark_disconnected(hub, &id, format!("node {node} offline"));
                }
            }
            Topic::Events { node, board } => {
                let id = self.id(node, board);
                self.event(hub, &id, &v);
            }
        }
    }

    fn node_status(&mut self, hub: &Hub, node: &str, v: &Value) {
        let boards: Vec<String> = self
            .ids
            .iter()
            .filter(|((n, _), _)| n == node)
            .map(|(_, id)| id.clone())
            .collect();
        // Either way the node's next state restores its boards (their link, when it is back).
        for id in &boards {
            self.synced.remove(id);
        }
        if let Some(run) = v["run"].as_u64()
            && self
                .runs
                .insert(node.to_string(), run)
                .is_some_and(|r| r != run)
        {
            // The node's daemon started again: its messages count from 1 again.
            for id in &boards {
                self.seqs.remove(id);
            }
        }
        if v["online"] != Value::Bool(false) {
            self.offline.remove(node);
            return;
        }
        tracing::warn!(
            node,
            "node offline (its Last Will): its boards keep their last state"
        );
        self.offline.insert(node.to_string());
        for id in boards {
            mark_disconnected(hub, &id, format!("node {node} offline"));
        }
    }

    fn event(&mut self, hub: &Hub, id: &str, v: &Value) {
        match MsgKind::deserialize(&v["kind"]).ok() {
            Some(MsgKind::Notice(NoticeTag::BoardStatus)) => {
                if let Ok(status) = serde_json::from_value::<BoardStatus>(v["status"].clone()) {
                    hub.set_status(id, status);
                }
            }
            Some(MsgKind::Notice(NoticeTag::Players)) => {
                let pairing = Pairing {
                    white: serde_json::from_value(v["white"].clone()).unwrap_or_default(),
                    black: serde_json::from_value(v["black"].clone()).unwrap_or_default(),
                };
                let _ = hub.set_pairing(id, pairing);
            }
            Some(MsgKind::Notice(NoticeTag::ResultConfirmed)) => {
                let round = v["round"].as_u64().and_then(|r| u32::try_from(r).ok());
                let result = serde_json::from_value(v["result"].clone()).ok();
                if let (Some(round), Some(result)) = (round, result) {
                    hub.set_result(round, id, result);
                }
            }
            Some(MsgKind::Notice(NoticeTag::IrregularityAcknowledged)) => {
                let theirs = v["irregularity"].as_u64().unwrap_or(0);
                if let Some(&ours) = self.irregularities.get(&(id.to_string(), theirs)) {
                    let _ = hub.acknowledge(id, ours);
                }
            }
            _ => match CoreEvent::from_wire(v) {
                Ok(ev) => self.core_event(hub, id, v, ev),
                Err(e) => tracing::debug!(board = id, "MQTT event not understood: {e}"),
            },
        }
    }

    /// A board's core event from another daemon (`v`, its envelope): published in order, once;
    /// one that comes after a lost move waits for the board's next state.
    fn core_event(&mut self, hub: &Hub, id: &str, v: &Value, ev: CoreEvent) {
        if let Some(theirs) = v["seq"].as_u64()
            && self.seqs.get(id).is_some_and(|&had| theirs <= had)
        {
            // Taken already (sent again after a broken connection: QoS 1 is at
            // least once), or in a state read since.
            return;
        }
        if self.gapped.contains(id) && of_the_game(&ev.kind) {
            // Held: the board's next state brings the game, in order.
            return;
        }
        let placed = match &ev.kind {
            EventKind::MoveMade { ply, uci, .. } => {
                Some((*ply, place(hub, id, ev.game, *ply, Some(uci))))
            }
            EventKind::MoveCompleted { ply, .. } => {
                Some((*ply, place(hub, id, ev.game, *ply, None)))
            }
            _ => None,
        };
        if let Some((ply, placed)) = placed {
            match placed {
                Place::Next => {}
                Place::Had => return,
                Place::Beyond => {
                    // A move lost on the way (a broker node's loss): the board's
                    // next state brings what is missing, then the stream goes on.
                    tracing::info!(
                        board = id,
                        game = ev.game,
                        ply,
                        "a move did not come through: the board catches up from its next state"
                    );
                    self.gapped.insert(id.to_string());
                    self.synced.remove(id);
                    return;
                }
            }
        }
        if let Some(theirs) = v["seq"].as_u64() {
            let seen = self.seqs.entry(id.to_string()).or_default();
            *seen = (*seen).max(theirs);
        }
        let seq = hub.publish(id, &ev);
        if matches!(ev.kind, EventKind::Irregularity { .. })
            && let Some(theirs) = v["seq"].as_u64()
        {
            self.irregularities.insert((id.to_string(), theirs), seq);
        }
    }
}

/// Whether an event of this kind changes the game record (held while a board waits for its
/// state after a lost move).
fn of_the_game(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::GameStarted { .. }
            | EventKind::MoveMade { .. }
            | EventKind::MoveRetracted { .. }
            | EventKind::MoveCompleted { .. }
            | EventKind::GameEnded { .. }
    )
}

/// Where a `move_made` stands against the game the round has of its board.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The next move: taken.
    Next,
    /// A move the round already has (a state brought it first): nothing to do.
    Had,
    /// Beyond the round's game, or not the move the round has at its ply: a message was lost.
    Beyond,
}

/// Where move `uci` at ply `ply` of game `game` (`move_made`; `None`: the `move_completed` of
/// ply `ply`) stands against board `id`'s game in `hub`.
fn place(hub: &Hub, id: &str, game: u32, ply: u32, uci: Option<&UciMove>) -> Place {
    hub.with_round(|r| {
        let Some(g) = r.board(id).and_then(|b| b.games.last()) else {
            return Place::Beyond;
        };
        if game < g.number {
            return Place::Had;
        }
        let Some(uci) = uci else {
            // A completion: of the round's last move, once; of a move it has not got, a loss.
            return match (game > g.number || ply > g.ply(), g.moves.last()) {
                (true, _) => Place::Beyond,
                (false, Some(last)) if ply == g.ply() && last.completed.is_none() => Place::Next,
                (false, _) => Place::Had,
            };
        };
        if game > g.number || ply > g.ply() + 1 {
            return Place::Beyond;
        }
        if ply == g.ply() + 1 {
            return Place::Next;
        }
        let had = ply
            .checked_sub(1)
            .and_then(|i| g.moves.get(i as usize))
            .is_some_and(|m| UciMove::from_move(m.mv, g.mode) == *uci);
        if had { Place::Had } else { Place::Beyond }
    })
}

/// Bring board `id` to its retained `state`: when the state's game continues the game the
/// round has, the missing moves (and the game's start and end) are published as the node
/// published them, so every event-stream client gets them too; a state behind the round's game
/// takes nothing back, and a `stale` one (older than what the round has of the board) gives
/// only its health and players, with `first`. With `first` (a board seen for the first time since the last broker
/// connection, or after a lost move) a game that does not continue the round's (or the game
/// of a board the round does not have yet) is restored whole, and the board's health and
/// players are set from the state.
fn catch_up(hub: &Hub, id: &str, state: &Value, first: bool, stale: bool) {
    let status: BoardStatus = serde_json::from_value(state["status"].clone()).unwrap_or_default();
    let theirs = game_from_json(&state["game"]).filter(|_| !stale);
    let ours = hub.with_round(|r| r.board(id).and_then(|b| b.games.last().cloned()));
    if let Some(theirs) = &theirs {
        match missing(ours.as_ref(), theirs) {
            Missing::Nothing => {}
            Missing::Events(events) if !first || ours.is_some() => {
                for ev in &events {
                    hub.publish(id, ev);
                }
            }
            Missing::Events(_) | Missing::Whole if first => {
                hub.restore(id, std::slice::from_ref(theirs), &[], status.clone());
            }
            Missing::Events(_) | Missing::Whole => {}
        }
    }
    if !first {
        return;
    }
    hub.set_status(id, status);
    let pairing = Pairing {
        white: serde_json::from_value(state["white"].clone()).unwrap_or_default(),
        black: serde_json::from_value(state["black"].clone()).unwrap_or_default(),
    };
    if pairing != Pairing::default() {
        let _ = hub.set_pairing(id, pairing);
    }
}

/// What the round lacks of a board's game, against the game of the board's state.
#[derive(Debug)]
enum Missing {
    /// Nothing: the state is the round's game, or behind it.
    Nothing,
    /// These events bring the round's game to the state's.
    Events(Vec<CoreEvent>),
    /// The state's game does not continue the round's: restore it whole.
    Whole,
}

/// What `ours` (the round's latest game of a board, if any) lacks of `theirs` (its state's
/// game).
fn missing(ours: Option<&GameRecord>, theirs: &GameRecord) -> Missing {
    let Some(ours) = ours else {
        return match starting(theirs) {
            Some(start) => Missing::Events(with_moves(vec![start], theirs, 0, false)),
            None => Missing::Whole,
        };
    };
    let same_moves = |n: usize| {
        ours.moves
            .iter()
            .zip(&theirs.moves)
            .take(n)
            .all(|(a, b)| a.uci == b.uci)
    };
    let mut events = Vec::new();
    let from = if theirs.number < ours.number {
        return Missing::Nothing;
    } else if theirs.number > ours.number {
        if theirs.reversed {
            return Missing::Whole;
        }
        events.push(CoreEvent {
            t: theirs.started_at,
            game: theirs.number,
            kind: EventKind::GameStarted {
                fen: theirs.start_fen(),
                chess960: theirs
                    .chess960
                    .filter(|_| theirs.mode == CastlingMode::Chess960),
            },
        });
        0
    } else if theirs.moves.len() < ours.moves.len() && same_moves(theirs.moves.len()) {
        // Behind: its events came after it was published.
        return Missing::Nothing;
    } else if !same_moves(ours.moves.len()) {
        // Moves taken back on the board (their `move_retracted` lost): back to the moves
        // both have, then the state's.
        let both = ours
            .moves
            .iter()
            .zip(&theirs.moves)
            .take_while(|(a, b)| a.uci == b.uci)
            .count();
        let t = theirs
            .moves
            .get(both)
            .map_or(theirs.started_at, |m| m.made_at);
        for ply in (both + 1..=ours.moves.len()).rev() {
            events.push(CoreEvent {
                t,
                game: ours.number,
                kind: EventKind::MoveRetracted { ply: ply as u32 },
            });
        }
        both
    } else {
        if let Some(last) = ours.moves.last()
            && last.completed.is_none()
        {
            let m = &theirs.moves[ours.moves.len() - 1];
            if let Some(by) = m.completed {
                events.push(completed(theirs.number, ours.moves.len(), m, by));
            }
        }
        ours.moves.len()
    };
    let ended = theirs.number == ours.number && ours.result.is_some();
    let events = with_moves(events, theirs, from, ended);
    if events.is_empty() {
        Missing::Nothing
    } else {
        Missing::Events(events)
    }
}

/// The `game_started` of `game` (`None`: a game the event cannot start, one turned round).
fn starting(game: &GameRecord) -> Option<CoreEvent> {
    (!game.reversed).then(|| CoreEvent {
        t: game.started_at,
        game: game.number,
        kind: EventKind::GameStarted {
            fen: game.start_fen(),
            chess960: game
                .chess960
                .filter(|_| game.mode == CastlingMode::Chess960),
        },
    })
}

/// `events` followed by the moves of `game` from index `from` (each made, and completed when
/// it was) and its end (unless `ended`: the round has it).
fn with_moves(
    mut events: Vec<CoreEvent>,
    game: &GameRecord,
    from: usize,
    ended: bool,
) -> Vec<CoreEvent> {
    for (i, m) in game.moves.iter().enumerate().skip(from) {
        events.extend(game.move_made(i).map(|kind| CoreEvent {
            t: m.made_at,
            game: game.number,
            kind,
        }));
        if let Some(by) = m.completed {
            events.push(completed(game.number, i + 1, m, by));
        }
    }
    if let (Some((result, reason)), false) = (game.result, ended) {
        let t = game.moves.last().map_or(game.started_at, |m| m.made_at);
        events.push(CoreEvent {
            t,
            game: game.number,
            kind: EventKind::GameEnded { result, reason },
        });
    }
    events
}

/// The `move_completed` of move `m`, ply `ply` of game `game`.
fn completed(
    game: u32,
    ply: usize,
    m: &crate::core::game::MoveRecord,
    by: CompletedBy,
) -> CoreEvent {
    CoreEvent {
        t: m.made_at,
        game,
        kind: EventKind::MoveCompleted {
            ply: ply as u32,
            san: m.san.clone(),
            by,
            clock: m.clock,
            recovered: m.recovered,
        },
    }
}

/// Show board `id` disconnected, with `comment` saying why; its game stays.
fn mark_disconnected(hub: &Hub, id: &str, comment: String) {
    let mut status = hub
        .with_round(|r| r.board(id).map(|b| b.status.clone()))
        .unwrap_or_default();
    status.state = LinkState::Disconnected;
    status.comment = Some(comment);
    hub.set_status(id, status);
}

/// A game rebuilt from its JSON (`game` of a board snapshot): the moves are played again
/// from the start position, with their times, completions and clocks.
pub fn game_from_json(g: &Value) -> Option<GameRecord> {
    let fen: Fen = g["start_fen"].as_str()?.parse().ok()?;
    let chess960 = g["chess960"].as_u64().and_then(|n| u16::try_from(n).ok());
    let mode = if chess960.is_some() {
        CastlingMode::Chess960
    } else {
        CastlingMode::Standard
    };
    let start: Chess = fen.into_position(mode).ok()?;
    let secs = |v: &Value| (v.as_f64().unwrap_or(0.0) * 1e6).round() as Micros;
    let number = g["number"].as_u64().and_then(|n| u32::try_from(n).ok())?;
    let mut game = GameRecord::new(number, start, mode, chess960, secs(&g["t"]));
    game.reversed = g["reversed"].as_bool().unwrap_or(false);
    for m in g["moves"].as_array()? {
        let uci: UciMove = m["uci"].as_str()?.parse().ok()?;
        let mv = uci.to_move(game.position()).ok()?;
        game.push(mv, secs(&m["t"]));
        let completed: Option<CompletedBy> = serde_json::from_value(m["completed"].clone()).ok();
        let clock = serde_json::from_value(m["clock"].clone()).ok();
        if let Some(last) = game.moves.last_mut() {
            last.completed = completed;
            last.clock = clock;
        }
    }
    let result = g["result"]
        .as_str()
        .and_then(|r| Outcome::from_ascii(r.as_bytes()).ok())
        .filter(|o| *o != Outcome::Unknown);
    let reason: Option<EndReason> = serde_json::from_value(g["reason"].clone()).ok();
    if let (Some(result), Some(reason)) = (result, reason) {
        game.result = Some((result, reason));
    }
    Some(game)
}

/// Read the round from the broker into `hub` until `stop` turns true; reconnects with backoff,
/// to the next broker of the list (a cluster's nodes) each time a connection breaks or cannot
/// be made.
pub fn spawn(hub: Hub, cfg: SourceConfig, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
    let prefix = super::mqtt::topic_level(&cfg.prefix);
    let client_id = format!("eboardd-round-{}", std::process::id());
    let mut failover = Failover::new(cfg.brokers);
    let options = move |b: &MqttBroker| super::mqtt::client_options(&client_id, b);
    let (client, mut eventloop) = AsyncClient::new(options(failover.current()), 1024);
    let filters = [
        format!("{prefix}/+/status"),
        format!("{prefix}/+/board/+/state"),
        format!("{prefix}/+/board/+/events"),
    ];
    // QoS 0: the session is clean, so what QoS 1 would redeliver is lost with the connection
    // anyway (the next connection's states restore every board); and a NATS cluster serves
    // QoS 1 subscriptions through JetStream consumers, which stall while it elects new leaders
    // after a node died, where QoS 0 goes straight through.
    let subscribe = move |client: &AsyncClient| {
        let _ = client.try_subscribe_many(
            filters
                .iter()
                .map(|f| SubscribeFilter::new(f.clone(), QoS::AtMostOnce)),
        );
    };
    tokio::spawn(async move {
        let mut assembler = Assembler::default();
        let mut connected = false;
        loop {
            let broken = tokio::select! {
                _ = stop.cancelled() => break,
                ev = eventloop.poll() => match ev {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        failover.connected();
                        connected = true;
                        assembler.reconnected();
                        tracing::info!(broker = %failover.current(), prefix = %prefix, "reading the round from the MQTT broker");
                        subscribe(&client);
                        None
                    }
                    Ok(Event::Incoming(Packet::SubAck(ack)))
                        if ack.return_codes.contains(&SubscribeReasonCode::Failure) =>
                    {
                        // A cluster still electing its leaders after a node died refuses
                        // subscriptions for a while, and the session keeps the refusal: drop
                        // the connection and go on as after a broken one (the next node).
                        eventloop.clean();
                        Some("the MQTT broker refused a subscription".to_string())
                    }
                    Ok(Event::Incoming(Packet::Publish(p))) => {
                        if let Some(topic) = parse_topic(&prefix, &p.topic) {
                            assembler.apply(&hub, &topic, &p.payload);
                        }
                        None
                    }
                    Ok(_) => None,
                    Err(e) => Some(format!("MQTT broker not reachable: {e}")),
                }
            };
            if let Some(why) = broken {
                tracing::warn!(broker = %failover.current(), "{why}");
                if std::mem::take(&mut connected) {
                    assembler.broker_lost(&hub);
                }
                let wait = failover.failed();
                eventloop.mqtt_options = options(failover.current());
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = stop.cancelled() => break,
                }
            }
        }
        let _ = client.try_disconnect();
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::change::EventTag;

    #[test]
    fn topics_of_every_node_are_recognised() {
        assert_eq!(
            parse_topic("eboardd", "eboardd/hall-1/status"),
            Some(Topic::Status { node: "hall-1" })
        );
        assert_eq!(
            parse_topic("eboardd", "eboardd/hall-2/board/board-21/events"),
            Some(Topic::Events {
                node: "hall-2",
                board: "board-21"
            })
        );
        assert_eq!(
            parse_topic("eboardd", "eboardd/h/board/b/state"),
            Some(Topic::State {
                node: "h",
                board: "b"
            })
        );
        assert_eq!(parse_topic("eboardd", "other/h/status"), None);
        assert_eq!(parse_topic("eboardd", "eboardd/h/board/b/other"), None);
    }

    #[test]
    fn a_board_id_used_by_two_nodes_is_served_twice() {
        let mut a = Assembler::default();
        assert_eq!(a.id("hall-1", "board-1"), "board-1");
        assert_eq!(a.id("hall-2", "board-1"), "hall-2.board-1");
        assert_eq!(a.id("hall-1", "board-1"), "board-1");
    }

    /// The events (JSON lines, kinds) a node publishes for a sample game, and the node's state
    /// of the board after each of them.
    fn node_side() -> Vec<(MsgKind, Vec<u8>, Value)> {
        use crate::output::{HubConfig, RoundInfo};
        use crate::replay::{Layout, Playback, Timeline};
        let capture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/captures/clean/g0001.jsonl");
        let plan = Timeline::load(&[capture], Layout::AsRecorded).unwrap();
        let node = Hub::new(RoundInfo::default(), HubConfig::default());
        let mut rx = node.receiver();
        let mut out = Vec::new();
        let mut session = Playback::new(plan);
        let mut publish = |b: &str, e: &CoreEvent| {
            node.publish(b, e);
            Ok(())
        };
        while session.step(&mut publish).unwrap() {
            while let Ok(m) = rx.try_recv() {
                let mut state = node.board_snapshot(&m.board).unwrap();
                state["v"] = 1.into();
                state["node"] = "hall-1".into();
                out.push((m.kind, m.json.as_bytes().to_vec(), state));
            }
        }
        out
    }

    #[test]
    fn a_move_lost_on_the_way_is_healed_by_the_next_state_and_an_old_state_takes_nothing_back() {
        use crate::output::{HubConfig, RoundInfo};
        let node = node_side();
        let moves: Vec<usize> = (0..node.len())
            .filter(|&i| node[i].0 == MsgKind::Event(EventTag::MoveMade))
            .collect();
        assert!(moves.len() > 20, "{} moves", moves.len());
        let round = Hub::new(RoundInfo::default(), HubConfig::default());
        let mut stream = round.receiver();
        let mut a = Assembler::default();
        let events = Topic::Events {
            node: "hall-1",
            board: "board-1",
        };
        let state = Topic::State {
            node: "hall-1",
            board: "board-1",
        };
        let ply = |h: &Hub| {
            h.with_round(|r| {
                r.board("board-1")
                    .and_then(|b| b.games.last())
                    .map_or(0, |g| g.ply())
            })
        };
        // Every message up to the 6th move, the board restored from its state on the way.
        let sixth = moves[5];
        for (i, (_, json, st)) in node[..=sixth].iter().enumerate() {
            a.apply(&round, &events, json);
            if i == 0 {
                a.apply(&round, &state, &serde_json::to_vec(st).unwrap());
            }
        }
        assert_eq!(ply(&round), 6);
        // The 7th move is lost; the 8th cannot be taken, nor anything after it...
        let tenth = moves[9];
        for (i, (_, json, _)) in node.iter().enumerate().take(tenth + 1).skip(sixth + 1) {
            if i != moves[6] {
                a.apply(&round, &events, json);
            }
        }
        assert_eq!(ply(&round), 6, "moves after a lost one are refused");
        // ... until the board's next state, which restores the game; the rest goes on.
        let now = serde_json::to_vec(&node[tenth].2).unwrap();
        a.apply(&round, &state, &now);
        assert_eq!(ply(&round), 10);
        for (_, json, _) in &node[tenth + 1..] {
            a.apply(&round, &events, json);
        }
        let all = moves.len() as u32;
        assert_eq!(ply(&round), all);
        // A new connection's retained state older than the game: nothing taken back.
        a.reconnected();
        let old = serde_json::to_vec(&node[sixth].2).unwrap();
        a.apply(&round, &state, &old);
        assert_eq!(ply(&round), all);
        // The round's event stream has every move once, in order, as the node published them
        // (the lost one and those held after it from the state), and each move's completion.
        let mut made = Vec::new();
        let mut done = Vec::new();
        while let Ok(m) = stream.try_recv() {
            let v: Value = serde_json::from_str(&m.json).unwrap();
            match m.kind {
                MsgKind::Event(EventTag::MoveMade) => {
                    made.push((v["ply"].as_u64().unwrap(), v["uci"].clone()))
                }
                MsgKind::Event(EventTag::MoveCompleted) => done.push(v["ply"].as_u64().unwrap()),
                _ => {}
            }
        }
        let theirs: Vec<(u64, Value)> = moves
            .iter()
            .map(|&i| {
                let v: Value = serde_json::from_slice(&node[i].1).unwrap();
                (v["ply"].as_u64().unwrap(), v["uci"].clone())
            })
            .collect();
        assert_eq!(made, theirs);
        let theirs: Vec<u64> = node
            .iter()
            .filter(|(k, _, _)| *k == MsgKind::Event(EventTag::MoveCompleted))
            .map(|(_, json, _)| {
                serde_json::from_slice::<Value>(json).unwrap()["ply"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert!(theirs.len() > 20);
        assert_eq!(done, theirs, "every completion once, in order");
    }

    #[test]
    fn a_newer_state_that_took_a_move_back_retracts_it_on_the_stream_and_an_older_one_is_ignored() {
        use crate::output::{HubConfig, RoundInfo};
        use shakmaty::Position;
        let node = node_side();
        let moves: Vec<usize> = (0..node.len())
            .filter(|&i| node[i].0 == MsgKind::Event(EventTag::MoveMade))
            .collect();
        let round = Hub::new(RoundInfo::default(), HubConfig::default());
        let mut a = Assembler::default();
        let events = Topic::Events {
            node: "hall-1",
            board: "board-1",
        };
        let state = Topic::State {
            node: "hall-1",
            board: "board-1",
        };
        let sixth = moves[5];
        a.apply(&round, &state, &serde_json::to_vec(&node[0].2).unwrap());
        for (_, json, _) in &node[..=sixth] {
            a.apply(&round, &events, json);
        }
        let game = |h: &Hub| {
            h.with_round(|r| {
                r.board("board-1")
                    .and_then(|b| b.games.last())
                    .map(|g| g.moves.iter().map(|m| m.uci.clone()).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
        };
        let had = game(&round);
        assert_eq!(had.len(), 6);
        // The node's state as it would be had the 6th move been taken back and another made
        // (its `move_retracted` lost on the way).
        let mut other = node[sixth].2.clone();
        let record = game_from_json(&other["game"]).unwrap();
        let before = record.position_after(5).clone();
        let alt = before
            .legal_moves()
            .into_iter()
            .map(|m| m.to_uci(CastlingMode::Standard).to_string())
            .find(|u| *u != had[5])
            .unwrap();
        other["game"]["moves"].as_array_mut().unwrap()[5]["uci"] = alt.clone().into();
        let seen = other["last_seq"].as_u64().unwrap();
        assert!(seen > 0);
        // Older than what the round has: nothing taken back.
        let mut old = other.clone();
        old["last_seq"] = (seen - 1).into();
        let mut stream = round.receiver();
        a.apply(&round, &state, &serde_json::to_vec(&old).unwrap());
        assert_eq!(game(&round), had);
        assert!(
            stream.try_recv().is_err(),
            "nothing published for an older state"
        );
        // Newer: the 6th move taken back and the other one made, on the stream too.
        other["last_seq"] = (seen + 1).into();
        a.apply(&round, &state, &serde_json::to_vec(&other).unwrap());
        let mut want = had[..5].to_vec();
        want.push(alt.clone());
        assert_eq!(game(&round), want);
        let kinds: Vec<(MsgKind, Value)> = std::iter::from_fn(|| stream.try_recv().ok())
            .map(|m| (m.kind, serde_json::from_str::<Value>(&m.json).unwrap()))
            .filter(|(k, _)| {
                matches!(
                    k,
                    MsgKind::Event(EventTag::MoveMade) | MsgKind::Event(EventTag::MoveRetracted)
                )
            })
            .collect();
        assert_eq!(kinds.len(), 2, "{kinds:?}");
        assert_eq!(
            (kinds[0].0, kinds[0].1["ply"].as_u64()),
            (MsgKind::Event(EventTag::MoveRetracted), Some(6))
        );
        assert_eq!(
            (kinds[1].0, kinds[1].1["uci"].as_str()),
            (MsgKind::Event(EventTag::MoveMade), Some(alt.as_str()))
        );
        // Events sent again (QoS 1 after a broken connection), or older than the state read:
        // nothing taken twice.
        for (_, json, _) in &node[sixth - 3..=sixth] {
            a.apply(&round, &events, json);
        }
        assert_eq!(game(&round), want);
        assert!(stream.try_recv().is_err(), "nothing published again");
        assert!(
            a.gapped.is_empty(),
            "an old event is not taken for a lost one"
        );
    }
}
