//! What the core is fed: sensor and clock observations with timestamps.
//!
//! Observations are device-neutral. A board driver (the `driver` module) turns wire frames into
//! these; the core never sees bytes.

use shakmaty::Piece;

/// Microseconds since the capture (or daemon run) started. The only clock the core knows.
pub type Micros = i64;

/// A special piece some boards have to signal a result on the board.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpecialPiece {
    /// Code 0x0D: the game is drawn.
    Draw,
    /// Code 0x0E: White wins.
    WhiteWins,
    /// Code 0x0F: Black wins.
    BlackWins,
}

/// What one sensor field reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SquareReading {
    /// Nothing on the field.
    #[default]
    Empty,
    /// An ordinary chess piece.
    Piece(Piece),
    /// A result-signalling special piece.
    Special(SpecialPiece),
}

impl SquareReading {
    /// The chess piece on the field, if it is an ordinary one.
    pub fn piece(self) -> Option<Piece> {
        match self {
            SquareReading::Piece(p) => Some(p),
            _ => None,
        }
    }
}

/// The 64 fields of a board in the device's own numbering: index 0 is the field the device
/// calls a8 when the connector is on White's left (the numbering drivers translate to), 63 is h1.
pub type FieldArray = [SquareReading; 64];

/// One face of a clock: remaining time and flag state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ClockFace {
    /// Remaining time in milliseconds.
    pub millis: u32,
    /// Final flag (hours byte D4): this side's time ran out and the clock stopped at zero.
    /// This is the flag fall of Article 6.9.
    pub flag: bool,
    /// Flag shown (hours byte D6): the flag is on the display, but the clock may go on into a
    /// next period (e.g. a move-count control). Reported, never a result by itself.
    pub flag_shown: bool,
}

/// A reading of a two-faced clock, by physical side as seen from the front.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ClockReading {
    /// The left face.
    pub left: ClockFace,
    /// The right face.
    pub right: ClockFace,
    /// The clock is running (not paused with start/stop).
    pub running: bool,
    /// Lever position: `true` when the right side is up (lever down on the left).
    pub right_side_up: bool,
    /// It is the left player's turn (their time runs when the clock runs): status bit D3, as
    /// real DGT 3000s send it (status `0x09` while the left face counts down).
    pub left_turn: bool,
    /// It is the right player's turn: status bit D4 (status `0x13` while the right face counts
    /// down, together with the lever bit D1).
    pub right_turn: bool,
    /// The clock shows a low battery.
    pub battery_low: bool,
}

/// One physical side of the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockSide {
    /// The left face, seen from the front.
    Left,
    /// The right face, seen from the front.
    Right,
}

/// An operator action recorded in a capture (`"op"` records) or given live.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum OperatorAction {
    /// Start a new game on this board now (from the position on the board, or a given FEN).
    NewGame {
        /// An exact start position, when the board alone cannot tell it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fen: Option<String>,
    },
    /// Set the result of the running game (resignation, agreed draw, arbiter decision).
    SetResult {
        /// `"1-0"`, `"0-1"` or `"1/2-1/2"`.
        result: String,
    },
    /// Fix which clock side White's clock is on.
    SetClockSide {
        /// The physical side White uses.
        white: ClockSide,
    },
    /// Take the current game back to the position after `ply` plies (0 = its start position):
    /// later moves are dropped and the game goes on from there (a result is cleared).
    TakeBack {
        /// The ply to go back to, 0..=the game's ply.
        ply: u32,
    },
    /// Replace the move at `ply` by another legal move (UCI or SAN, exactly one of them). The
    /// later moves are kept; the correction is refused if one of them is no longer legal.
    ReplaceMove {
        /// The ply of the move to replace, 1..=the game's ply.
        ply: u32,
        /// The new move in UCI (`"g1f3"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uci: Option<String>,
        /// The new move in SAN (`"Nf3"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        san: Option<String>,
    },
    /// The current game goes on from this position (FEN with side to move; Chess960 castling
    /// rights accepted): same game number, its moves so far dropped. Without a game, the first
    /// game starts from it.
    SetPosition {
        /// The position.
        fen: String,
    },
}

/// One entry of a board's own memory of what it sensed (a DGT board keeps a cyclic memory of
/// every field change and every clock press, `docs/dgt-protocol.md` §1.6), in the order the
/// board wrote them. Family-neutral: a driver turns its board's memory format into these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryEntry {
    /// From here on the board read exactly this (every field known): the start position the
    /// board recognised, or an empty board before the pieces found at power-up (or at a
    /// start-of-game tag) are logged one by one as [`MemoryEntry::Field`]s.
    Board(Box<FieldArray>),
    /// One field changed.
    Field {
        /// Device field index 0..63.
        index: u8,
        /// What the field now reads.
        reading: SquareReading,
        /// Written less than about 250 ms after the previous field change.
        quick: bool,
    },
    /// A clock press: the face that stopped, and the time it showed then.
    Press {
        /// The physical side whose time stopped (the side that pressed).
        side: ClockSide,
        /// The time that side had left, in milliseconds.
        millis: u32,
    },
    /// The board wrote something that makes its position unknown until the next
    /// [`MemoryEntry::Board`] (e.g. sixteen pieces on the back ranks in no known order).
    Unknown,
}

/// A change of a board's link, as a capture's `link` record holds it (`docs/capture-format.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkChange {
    /// The board is connected: found on a port, or back after a drop.
    Up,
    /// The board is lost: its link dropped or its port session ended.
    Down,
}

impl LinkChange {
    /// The record's value: `"up"` or `"down"`.
    pub fn name(self) -> &'static str {
        match self {
            LinkChange::Up => "up",
            LinkChange::Down => "down",
        }
    }

    /// The change a record's value names (`None`: a value this build does not know).
    pub fn from_name(name: &str) -> Option<LinkChange> {
        [LinkChange::Up, LinkChange::Down]
            .into_iter()
            .find(|c| c.name() == name)
    }
}

/// Everything the core can be told.
#[derive(Debug, Clone, PartialEq)]
pub enum Observation {
    /// A full board dump (every field), in device numbering.
    BoardDump(Box<FieldArray>),
    /// One field now reads something new.
    Field {
        /// Device field index 0..63.
        index: u8,
        /// What the field now reads.
        reading: SquareReading,
    },
    /// A clock reading (times, lever, running state).
    Clock(ClockReading),
    /// The board reports that no clock is connected.
    ClockAbsent,
    /// The device link went down (the board was lost, or its port session ended): a `link`
    /// `down` record of the capture.
    Disconnected {
        /// Driver name.
        driver: String,
        /// The board's serial number, when known.
        serial: Option<String>,
    },
    /// The device link came up (a board found on a port, or back after a drop): a `link` `up`
    /// record of the capture.
    Connected {
        /// Driver name.
        driver: String,
        /// The board's serial number, when known.
        serial: Option<String>,
    },
    /// An operator action.
    Operator(OperatorAction),
    /// The board's own memory of what it sensed, oldest first, read back after the link was
    /// away (the moves made meanwhile are recovered from it, exactly and in order).
    Memory(Vec<MemoryEntry>),
    /// A board that reports only when it is asked (a DGT board on a bus chain, polled in
    /// turn) answered a poll for its changes: the changes since its previous answer were just
    /// reported (as `Field`s, before this), so the sensed board is the board as it stood at
    /// this poll. Between two polls the sensed board may be up to a polling cycle old, and
    /// the changes of one answer arrive together: the engine of such a board decides on what
    /// the board shows only at a poll (`docs/fide-laws.md`, displaced pieces).
    Polled,
}
