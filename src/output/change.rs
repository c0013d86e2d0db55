//! The hub's typed vocabulary: the [`Change`]s it takes (every change of the round model, made
//! on the live hub and, under a broadcast delay, again on the delayed public hub), and the
//! [`Content`]s it hands out with every numbered [`Published`] message (core events and the
//! hub's own [`Notice`]s), named by their [`MsgKind`], and the [`Follower`]s told of both.

use std::sync::Arc;

use axum::extract::ws::Utf8Bytes;
use serde::{Deserialize, Serialize};

use super::model::{BoardStatus, GameResult, Pairing, Player, RoundInfo};
pub use crate::core::event::EventTag;
use crate::core::event::{CoreEvent, EventKind};
use crate::core::game::GameRecord;
use crate::core::observation::Micros;
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
#[derive(Debug, Clone, PartialEq, Serialize, strum::EnumDiscriminants)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[strum_discriminants(
    name(NoticeTag),
    vis(pub),
    derive(Hash, Serialize, Deserialize, strum::EnumIter),
    serde(rename_all = "snake_case")
)]
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

/// One numbered message of the event stream, serialised once for every consumer.
#[derive(Debug, Clone)]
pub struct Published {
    /// Its `seq`.
    pub seq: u64,
    /// The board it is about.
    pub board: Arc<str>,
    /// Its kind (`move_made`, ..., `board_status`).
    pub kind: MsgKind,
    /// What it says, typed.
    pub content: Content,
    /// Event time.
    pub t: Micros,
    /// The JSON line.
    pub json: Utf8Bytes,
    /// When it was published (for latency measurements).
    pub at: std::time::Instant,
}

/// Who follows the hub: told of every change it makes and every message it publishes, in the
/// hub's order and under its lock, so a follower only hands them on and never waits (the
/// delayed public hub's line, the event streams' fan-out, the metrics' counters).
pub trait Follower: Send + Sync {
    /// The hub made `change` (as a mirror of the hub is to make it).
    fn changed(&self, change: &Change) {
        let _ = change;
    }

    /// The hub published `message`.
    fn published(&self, message: &Arc<Published>) {
        let _ = message;
    }

    /// Clients this follower serves (counted into the hub's subscribers).
    fn receivers(&self) -> usize {
        0
    }
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
/// (`docs/events.md`), the serde tag of [`EventKind`] or [`Notice`]. Both halves are derived
/// from those enums ([`EventTag`], [`NoticeTag`]), so a new kind needs no copy here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum MsgKind {
    /// A core event's kind.
    Event(EventTag),
    /// A notice's kind.
    Notice(NoticeTag),
}

impl MsgKind {
    /// The kind of a core event.
    pub fn of(kind: &EventKind) -> MsgKind {
        MsgKind::Event(kind.into())
    }
}

impl Notice {
    /// Its kind.
    pub fn kind(&self) -> MsgKind {
        MsgKind::Notice(self.into())
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

#[cfg(test)]
mod tests {
    use super::*;
    use strum::IntoEnumIterator;

    /// Every kind goes on the wire as its enum's serde tag and comes back as itself: the
    /// events' and the notices' tags never clash (a clash would read a notice as an event).
    #[test]
    fn every_kind_is_its_tag_on_the_wire_and_reads_back_as_itself() {
        let kinds: Vec<MsgKind> = EventTag::iter()
            .map(MsgKind::Event)
            .chain(NoticeTag::iter().map(MsgKind::Notice))
            .collect();
        assert_eq!(kinds.len(), 17);
        let mut names = std::collections::HashSet::new();
        for kind in kinds {
            let wire = serde_json::to_value(kind).unwrap();
            let name = wire.as_str().unwrap().to_string();
            assert!(
                name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
                "{name}"
            );
            assert!(names.insert(name.clone()), "{name} twice");
            assert_eq!(MsgKind::deserialize(&wire).unwrap(), kind, "{name}");
        }
        let made = serde_json::to_value(MsgKind::of(&EventKind::MoveRetracted { ply: 3 })).unwrap();
        assert_eq!(made, "move_retracted");
        let notice = Notice::ResultConfirmed {
            round: 1,
            result: GameResult::Draw,
        };
        let json = serde_json::to_value(&notice).unwrap();
        assert_eq!(json["kind"], serde_json::to_value(notice.kind()).unwrap());
    }
}
