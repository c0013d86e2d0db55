//! Events the core emits (`docs/events.md`). The board id, `seq` and `v` are added by
//! whoever broadcasts them ([`EventEnvelope`]); the core knows only its own board.

use serde::{Deserialize, Serialize};

use shakmaty::uci::UciMove;
use shakmaty::{Color, Outcome, Square};

use super::observation::{ClockSide, Micros};
use super::vocab::{
    Claim, IrregularityCode, de_color, de_opt_color, de_outcome, de_squares, de_uci, ser_color,
    ser_opt_color, ser_outcome, ser_squares, ser_uci,
};

/// How a move was completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletedBy {
    /// The mover pressed the clock.
    Clock,
    /// The opponent made the next move.
    NextMove,
    /// The move ended the game.
    GameEnd,
}

/// Remaining clock times of both players when they are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClockTimes {
    /// White's remaining milliseconds.
    pub white: u32,
    /// Black's remaining milliseconds.
    pub black: u32,
}

/// A game's end: result and reason, as in `docs/events.md` §5.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// Checkmate on the board.
    Checkmate,
    /// Stalemate on the board.
    Stalemate,
    /// Neither side can mate (dead position).
    InsufficientMaterial,
    /// The same position for the fifth time.
    Fivefold,
    /// 75 moves by each side without capture or pawn move.
    SeventyFiveMoves,
    /// A flag fell.
    Flag,
    /// Second illegal move (7.5.3).
    IllegalMoves,
    /// Result signalled on the board (kings on the centre, special pieces).
    KingsSignal,
    /// Set by the arbiter/operator.
    Arbiter,
}

/// The payload of an event, tagged by `kind`. Its kinds without their payloads are
/// [`EventTag`] (derived, so the two never disagree), serialised as the same `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, strum::EnumDiscriminants)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[strum_discriminants(
    name(EventTag),
    vis(pub),
    derive(Hash, Serialize, Deserialize, strum::EnumIter),
    serde(rename_all = "snake_case")
)]
pub enum EventKind {
    /// The device link came up.
    BoardConnected {
        /// Driver name.
        driver: String,
        /// Serial number, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        serial: Option<String>,
    },
    /// The device link went down.
    BoardDisconnected {
        /// Driver name.
        driver: String,
        /// Serial number, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        serial: Option<String>,
    },
    /// A game started on this board.
    GameStarted {
        /// Start position.
        fen: String,
        /// Chess960 start position number (0–959), when it is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        chess960: Option<u16>,
    },
    /// A move was made (provisional until completed).
    MoveMade {
        /// Ply number, 1 = White's first move.
        ply: u32,
        /// Standard algebraic notation.
        san: String,
        /// The move, typed and position-free (`e2e4`, `e7e8q`; Chess960 castling as the
        /// king taking its rook): whoever keeps the game plays it on its own position, no
        /// notation parsed again. On the wire its UCI notation.
        #[serde(serialize_with = "ser_uci", deserialize_with = "de_uci")]
        uci: UciMove,
        /// FEN after the move.
        fen: String,
        /// The move was not seen being made: it was recovered from a board that jumped ahead of
        /// the record (a reconnection, a lost message); its clock time is unknown.
        #[serde(default, skip_serializing_if = "is_false")]
        recovered: bool,
    },
    /// A made move turned out not to be the move after all.
    MoveRetracted {
        /// Ply of the retracted move.
        ply: u32,
    },
    /// A move was completed.
    MoveCompleted {
        /// Ply number.
        ply: u32,
        /// SAN of the move.
        san: String,
        /// What completed it.
        by: CompletedBy,
        /// Clock times after the move, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        clock: Option<ClockTimes>,
        /// The move was recovered from a board that jumped ahead of the record.
        #[serde(default, skip_serializing_if = "is_false")]
        recovered: bool,
    },
    /// Clock times changed.
    Clock {
        /// White's remaining milliseconds.
        white: u32,
        /// Black's remaining milliseconds.
        black: u32,
        /// Whose clock runs: `"white"`, `"black"` or null.
        #[serde(serialize_with = "ser_opt_color", deserialize_with = "de_opt_color")]
        running: Option<Color>,
    },
    /// A clock face shows its flag (hours D6) but the clock may go on into the next period:
    /// reported for the arbiter, never a result by itself (the final flag ends the game, 6.9).
    FlagShown {
        /// The colour of that face, when the sides are known.
        #[serde(serialize_with = "ser_opt_color", deserialize_with = "de_opt_color")]
        player: Option<Color>,
        /// The physical face.
        side: ClockSide,
    },
    /// Something an arbiter must know.
    Irregularity {
        /// The ply of the turn in which it happened (0 before the first move).
        ply: u32,
        /// The code (`docs/events.md` §4), e.g. `"touched_piece_not_moved"`.
        code: IrregularityCode,
        /// The article, e.g. `"4.3a"` (always `code.rule()`; read back as `""`: see
        /// [`CoreEvent::from_wire`]).
        #[serde(skip_deserializing)]
        rule: &'static str,
        /// `"white"` or `"black"`.
        #[serde(serialize_with = "ser_color", deserialize_with = "de_color")]
        player: Color,
        /// Squares involved, algebraic.
        #[serde(serialize_with = "ser_squares", deserialize_with = "de_squares")]
        squares: Vec<Square>,
        /// One human sentence.
        detail: String,
    },
    /// An irregularity was put right.
    IrregularityResolved {
        /// The code of the irregularity.
        code: IrregularityCode,
        /// Its squares.
        #[serde(serialize_with = "ser_squares", deserialize_with = "de_squares")]
        squares: Vec<Square>,
    },
    /// A draw claim would be correct now.
    ClaimAvailable {
        /// `"threefold"` or `"fifty_moves"`.
        claim: Claim,
    },
    /// An arbiter's correction (an `op` record: take back, replace a move, set a position,
    /// change or reopen a result) was applied. The standard events it implies (`move_retracted`,
    /// `move_made`, `move_completed`, `game_started`, `game_ended`) come before it; this one
    /// says what was done and the state it left.
    Correction {
        /// The operator action, as in the capture's `op` record.
        op: super::observation::OperatorAction,
        /// The game's ply after the correction.
        ply: u32,
        /// The position after the correction.
        fen: String,
        /// The game's result after it (`"*"` while it runs).
        #[serde(serialize_with = "ser_outcome", deserialize_with = "de_outcome")]
        result: Outcome,
        /// The board does not show the corrected position yet: the squares that differ
        /// (`displaced_pieces` follows them until the board is set right).
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            serialize_with = "ser_squares",
            deserialize_with = "de_squares"
        )]
        squares: Vec<Square>,
    },
    /// The game ended.
    GameEnded {
        /// `"1-0"`, `"0-1"` or `"1/2-1/2"`.
        #[serde(serialize_with = "ser_outcome", deserialize_with = "de_outcome")]
        result: Outcome,
        /// Why.
        reason: EndReason,
    },
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// An event as the core emits it: time of the causing observation, game number, payload.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreEvent {
    /// Time of the observation that caused it.
    pub t: Micros,
    /// Game number on this board, from 1 (0 before the first game).
    pub game: u32,
    /// The payload.
    pub kind: EventKind,
}

impl CoreEvent {
    /// An event read back from its wire form (a JSON line of another daemon, e.g. from MQTT):
    /// the board id and `seq` of the envelope are not part of it.
    pub fn from_wire(v: &serde_json::Value) -> Result<CoreEvent, serde_json::Error> {
        let mut kind = EventKind::deserialize(v)?;
        if let EventKind::Irregularity { code, rule, .. } = &mut kind {
            *rule = code.rule();
        }
        let t = v
            .get("t")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0);
        Ok(CoreEvent {
            t: (t * 1e6).round() as Micros,
            game: v
                .get("game")
                .and_then(serde_json::Value::as_u64)
                .and_then(|g| u32::try_from(g).ok())
                .unwrap_or(0),
            kind,
        })
    }
}

/// The wire form of an event (JSON version 1): the common envelope and, flattened into it, the
/// body's `kind` and fields — a core event's [`EventKind`], or any other message of the stream
/// (the broadcaster's own notices). The one writer of the envelope.
#[derive(Debug, Clone, Serialize)]
pub struct EventEnvelope<'a, K = EventKind> {
    /// Format version, always 1.
    pub v: u32,
    /// Increasing per daemon run (or replay).
    pub seq: u64,
    /// Seconds, same clock as the capture.
    pub t: f64,
    /// Device id.
    pub board: &'a str,
    /// Game number on that board.
    pub game: u32,
    /// The kind and its fields.
    #[serde(flatten)]
    pub kind: &'a K,
}

impl<'a> EventEnvelope<'a> {
    /// Wrap a core event for broadcasting.
    pub fn new(seq: u64, board: &'a str, event: &'a CoreEvent) -> Self {
        EventEnvelope::of(seq, event.t, board, event.game, &event.kind)
    }
}

impl<'a, K: Serialize> EventEnvelope<'a, K> {
    /// Wrap `body` (a message with its own `kind`) at capture time `t` of `board`'s game `game`.
    pub fn of(seq: u64, t: Micros, board: &'a str, game: u32, body: &'a K) -> Self {
        EventEnvelope {
            v: 1,
            seq,
            t: t as f64 / 1e6,
            board,
            game,
            kind: body,
        }
    }

    /// One JSON line (no trailing newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}
