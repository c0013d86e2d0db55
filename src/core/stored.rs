//! A game's record in a compact, serialisable form: its start and its moves; positions,
//! hashes and SAN are derived again when it is read back. The finished games' archive
//! (`crate::output::archive`) and the daemon's resume points (`crate::core::engine::seed`) keep
//! games in it.

use std::str::FromStr as _;

use serde::{Deserialize, Serialize};
use shakmaty::{CastlingMode, Chess, Outcome, fen::Fen, uci::UciMove};

use super::event::{ClockTimes, CompletedBy, EndReason};
use super::game::{GameRecord, fen_of};
use super::observation::Micros;
use super::vocab::{de_outcome, ser_outcome};

/// A game's record as stored: its start and moves, the rest is derived again (positions,
/// hashes, SAN).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredGame {
    start: String,
    chess960: Option<u16>,
    mode960: bool,
    reversed: bool,
    result: Option<StoredResult>,
    moves: Vec<StoredMove>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredResult {
    #[serde(serialize_with = "ser_outcome", deserialize_with = "de_outcome")]
    result: Outcome,
    reason: EndReason,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct StoredMove {
    uci: String,
    t: Micros,
    by: Option<CompletedBy>,
    clock: Option<ClockTimes>,
    recovered: bool,
}

impl StoredGame {
    /// The stored form of `g`.
    pub fn of(g: &GameRecord) -> Self {
        StoredGame {
            start: fen_of(g.start()),
            chess960: g.chess960,
            mode960: g.mode == CastlingMode::Chess960,
            reversed: g.reversed,
            result: g
                .result
                .map(|(result, reason)| StoredResult { result, reason }),
            moves: g
                .moves
                .iter()
                .map(|m| StoredMove {
                    uci: m.uci.clone(),
                    t: m.made_at,
                    by: m.completed,
                    clock: m.clock,
                    recovered: m.recovered,
                })
                .collect(),
        }
    }

    /// The game again, numbered `number` and started at `started_at` (kept apart: the
    /// archive's index has them); an error names the move that does not play.
    pub fn game(self, number: u32, started_at: Micros) -> Result<GameRecord, String> {
        let mode = if self.mode960 {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let fen = Fen::from_str(&self.start).map_err(|e| format!("{:?}: {e}", self.start))?;
        let start: Chess = fen
            .into_position(mode)
            .map_err(|e| format!("{:?}: {e}", self.start))?;
        let mut g = GameRecord::new(number, start, mode, self.chess960, started_at);
        g.reversed = self.reversed;
        for m in self.moves {
            let mv = UciMove::from_ascii(m.uci.as_bytes())
                .ok()
                .and_then(|u| u.to_move(g.position()).ok())
                .ok_or_else(|| format!("move {:?} after ply {}", m.uci, g.ply()))?;
            g.push(mv, m.t);
            if let Some(last) = g.moves.last_mut() {
                last.completed = m.by;
                last.clock = m.clock;
                last.recovered = m.recovered;
            }
        }
        g.result = self.result.map(|r| (r.result, r.reason));
        Ok(g)
    }
}
