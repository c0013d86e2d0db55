//! The hub's typed vocabulary: the [`Change`]s it takes (every change of the round model, made
//! on the live hub and, under a broadcast delay, again on the delayed public hub), and the
//! [`Content`]s it hands out with every numbered [`super::Published`] (core events and the hub's own
//! [`Notice`]s), named by their [`MsgKind`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::model::{BoardStatus, GameResult, Pairing, Player, RoundInfo};
use crate::core::event::{CoreEvent, EventKind};
use crate::core::game::GameRecord;
use crate::core::vocab::IrregularityCode;

/// One change of a hub's round model. The live hub makes each one it takes and hands it on to
/// the delayed public hub, which makes it `delay` later (see [`super::delay`]).
#[derive(Debug, Clone)]
pub enum Change {
    /// A core event of a board.
    Event {
        /// Board id.
        board: String,
        /// The event.
        event: Arc<CoreEvent>,
    },
    /// A board's health changed.
    Status {
        /// Board id.
        board: String,
        /// Its new health.
        status: BoardStatus,
    },
    /// A board's health, set without a message.
    Preset {
        /// Board id.
        board: String,
        /// Its health.
        status: BoardStatus,
    },
    /// Games rebuilt from a capture at start.
    Restore {
        /// Board id.
        board: String,
        /// The games.
        games: Vec<GameRecord>,
        /// The round of each game, as its capture tagged it (`None`: the board's round).
        rounds: Vec<Option<u32>>,
        /// Its health.
        status: BoardStatus,
    },
    /// Finished games read back late, before every game the board has.
    RestoreEarlier {
        /// Board id.
        board: String,
        /// The games, oldest first.
        games: Vec<GameRecord>,
        /// The round of each game, as its capture tagged it (`None`: the board's round).
        rounds: Vec<Option<u32>>,
    },
    /// A board's number, given before its first event.
    Number {
        /// Board id.
        board: String,
        /// The number wanted (`None`: its own, or the next free one). What the delayed hub is
        /// given is the number the board got.
        wanted: Option<u32>,
    },
    /// A board's players.
    Pairing {
        /// Board id.
        board: String,
        /// The players.
        pairing: Pairing,
    },
    /// An irregularity acknowledged.
    Ack {
        /// Board id.
        board: String,
        /// Irregularity id.
        id: u64,
    },
    /// A board's result in a round, confirmed or set by the arbiter.
    Result {
        /// The round.
        round: u32,
        /// Board id.
        board: String,
        /// The result.
        result: GameResult,
    },
    /// New round information.
    Info(Box<RoundInfo>),
    /// A new round started (the previous one keeps its games).
    StartRound(Box<RoundInfo>),
}

/// A message the hub makes itself (not a core event), tagged by `kind` on the wire.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Notice {
    /// A board's health changed.
    BoardStatus {
        /// Its new health.
        status: BoardStatus,
    },
    /// A board's players were set (by the arbiter, or for a new round). (Boxed: a player with
    /// every detail and a team is the largest thing a message carries.)
    Players {
        /// White.
        white: Box<Player>,
        /// Black.
        black: Box<Player>,
        /// The new round's number, when a round started.
        #[serde(skip_serializing_if = "Option::is_none")]
        round: Option<u32>,
    },
    /// An irregularity was acknowledged.
    IrregularityAcknowledged {
        /// Its id (the `seq` of its `irregularity` event).
        irregularity: u64,
        /// Its code.
        code: IrregularityCode,
    },
    /// The arbiter confirmed or set a board's result of a round.
    ResultConfirmed {
        /// The round.
        round: u32,
        /// The result (`1-0`, `0-1`, `1/2-1/2`, `+`, `-`, `--`).
        result: GameResult,
    },
}

/// What one numbered message of the hub says, typed (its JSON is [`super::Published::json`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// A core event of the board.
    Event(Arc<CoreEvent>),
    /// A message of the hub's own.
    Notice(Notice),
}

/// The kind of a hub message: its serialised name is the message's `kind` on the wire
/// (`docs/events.md`), the serde tag of [`EventKind`] or [`Notice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MsgKind {
    /// [`EventKind::BoardConnected`].
    BoardConnected,
    /// [`EventKind::BoardDisconnected`].
    BoardDisconnected,
    /// [`EventKind::GameStarted`].
    GameStarted,
    /// [`EventKind::MoveMade`].
    MoveMade,
    /// [`EventKind::MoveRetracted`].
    MoveRetracted,
    /// [`EventKind::MoveCompleted`].
    MoveCompleted,
    /// [`EventKind::Clock`].
    Clock,
    /// [`EventKind::FlagShown`].
    FlagShown,
    /// [`EventKind::Irregularity`].
    Irregularity,
    /// [`EventKind::IrregularityResolved`].
    IrregularityResolved,
    /// [`EventKind::ClaimAvailable`].
    ClaimAvailable,
    /// [`EventKind::Correction`].
    Correction,
    /// [`EventKind::GameEnded`].
    GameEnded,
    /// [`Notice::BoardStatus`].
    BoardStatus,
    /// [`Notice::Players`].
    Players,
    /// [`Notice::IrregularityAcknowledged`].
    IrregularityAcknowledged,
    /// [`Notice::ResultConfirmed`].
    ResultConfirmed,
}

impl MsgKind {
    /// The kind of a core event.
    pub fn of(kind: &EventKind) -> MsgKind {
        match kind {
            EventKind::BoardConnected { .. } => MsgKind::BoardConnected,
            EventKind::BoardDisconnected { .. } => MsgKind::BoardDisconnected,
            EventKind::GameStarted { .. } => MsgKind::GameStarted,
            EventKind::MoveMade { .. } => MsgKind::MoveMade,
            EventKind::MoveRetracted { .. } => MsgKind::MoveRetracted,
            EventKind::MoveCompleted { .. } => MsgKind::MoveCompleted,
            EventKind::Clock { .. } => MsgKind::Clock,
            EventKind::FlagShown { .. } => MsgKind::FlagShown,
            EventKind::Irregularity { .. } => MsgKind::Irregularity,
            EventKind::IrregularityResolved { .. } => MsgKind::IrregularityResolved,
            EventKind::ClaimAvailable { .. } => MsgKind::ClaimAvailable,
            EventKind::Correction { .. } => MsgKind::Correction,
            EventKind::GameEnded { .. } => MsgKind::GameEnded,
        }
    }
}

impl Notice {
    /// Its kind.
    pub fn kind(&self) -> MsgKind {
        match self {
            Notice::BoardStatus { .. } => MsgKind::BoardStatus,
            Notice::Players { .. } => MsgKind::Players,
            Notice::IrregularityAcknowledged { .. } => MsgKind::IrregularityAcknowledged,
            Notice::ResultConfirmed { .. } => MsgKind::ResultConfirmed,
        }
    }
}

impl Content {
    /// Its kind.
    pub fn kind(&self) -> MsgKind {
        match self {
            Content::Event(e) => MsgKind::of(&e.kind),
            Content::Notice(n) => n.kind(),
        }
    }
}
