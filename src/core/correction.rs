//! Why an arbiter's correction (an [`OperatorAction`](super::observation::OperatorAction)) is
//! refused. A refused correction changes nothing, and the daemon records nothing of it.

/// A correction that cannot be carried out, with what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CorrectionError {
    /// The board has no game to correct.
    #[error("there is no game on this board")]
    NoGame,
    /// The ply is not one of the game's.
    #[error("ply {ply} is out of range: the game has plies {min}..={max}")]
    PlyOutOfRange {
        /// The ply asked for.
        ply: u32,
        /// The smallest ply accepted.
        min: u32,
        /// The game's ply.
        max: u32,
    },
    /// `replace_move` needs exactly one of `uci` and `san`.
    #[error("give the new move as exactly one of \"uci\" or \"san\"")]
    MoveNotation,
    /// The move given is not legal (or does not parse) in the position.
    #[error("{mv:?} is not a legal move at ply {ply} (position {fen})")]
    IllegalMove {
        /// The move as given.
        mv: String,
        /// The ply it was to be.
        ply: u32,
        /// The position it was to be played in.
        fen: String,
    },
    /// A later move kept by `replace_move` is no longer legal after the new move.
    #[error(
        "after the new move, the later move {san} (ply {ply}) is no longer legal: take the game back to ply {keep} first"
    )]
    LaterMoveIllegal {
        /// Its ply.
        ply: u32,
        /// Its SAN as recorded.
        san: String,
        /// The ply to take back to before replacing.
        keep: u32,
    },
    /// The FEN does not parse or is not a legal position.
    #[error("not a legal position {fen:?}: {reason}")]
    BadFen {
        /// The FEN as given.
        fen: String,
        /// Why.
        reason: String,
    },
    /// The position is already over (checkmate, stalemate, dead): nothing to continue.
    #[error("the game cannot go on from {fen}: it is {why}")]
    PositionOver {
        /// The position.
        fen: String,
        /// `"checkmate"`, `"stalemate"`, ...
        why: String,
    },
    /// Not a result.
    #[error("result must be \"1-0\", \"0-1\", \"1/2-1/2\" or \"*\" (reopen), not {0:?}")]
    BadResult(String),
    /// A game ended by the position itself cannot be reopened without taking a move back.
    #[error("the game ended by {0} on the board: take a move back to reopen it")]
    EndedOnBoard(String),
}
