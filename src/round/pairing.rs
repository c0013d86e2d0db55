//! The players of a board: a [`Pairing`] of two [`Player`]s, as configured or loaded from a
//! pairings file (nothing here comes from the board), and why a player's details are refused.

use serde::{Deserialize, Serialize};

/// One player of a pairing, as configured (nothing here comes from the board).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Player {
    /// Name, DGT style `"Last, First"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// FIDE id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fide_id: Option<u64>,
    /// FIDE title (`GM`, `WFM`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Rating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elo: Option<u32>,
    /// Federation (three letters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub federation: Option<String>,
    /// Team, in a team event (PGN `WhiteTeam`/`BlackTeam`; boards of two teams form a match:
    /// [`super::matches`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub team: Option<String>,
}

/// Whether a name (of a player or a team) is 1 to 100 characters: `Err(true)` when its length
/// is wrong, `Err(false)` when it holds characters that would break PGN or a page.
fn check_name(name: &str) -> Result<(), bool> {
    if name.trim().is_empty() || name.chars().count() > 100 {
        return Err(true);
    }
    if name
        .chars()
        .any(|c| crate::pgn::unsafe_char(c) || c == '"' || c == '\\')
    {
        return Err(false);
    }
    Ok(())
}

impl Player {
    /// Check the fields; the first bad one.
    pub fn validate(&self) -> Result<(), PlayerError> {
        if let Some(Err(length)) = self.name.as_deref().map(check_name) {
            return Err(if length {
                PlayerError::NameLength
            } else {
                PlayerError::NameCharacters
            });
        }
        if let Some(Err(length)) = self.team.as_deref().map(check_name) {
            return Err(if length {
                PlayerError::TeamLength
            } else {
                PlayerError::TeamCharacters
            });
        }
        for (what, v) in [("title", &self.title), ("federation", &self.federation)] {
            if let Some(v) = v
                && (v.is_empty() || v.len() > 4 || !v.chars().all(|c| c.is_ascii_alphabetic()))
            {
                return Err(PlayerError::Letters(what));
            }
        }
        if self.fide_id.is_some_and(|id| id == 0 || id > 999_999_999) {
            return Err(PlayerError::FideId);
        }
        if self.elo.is_some_and(|e| e > 4000) {
            return Err(PlayerError::Rating);
        }
        Ok(())
    }
}

/// Why a player's details were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlayerError {
    /// The name is empty or too long.
    #[error("player name must have 1 to 100 characters")]
    NameLength,
    /// The name holds characters that would break PGN or a page.
    #[error("player name must not contain control or direction characters, quotes or backslashes")]
    NameCharacters,
    /// The team name is empty or too long.
    #[error("team name must have 1 to 100 characters")]
    TeamLength,
    /// The team name holds characters that would break PGN or a page.
    #[error("team name must not contain control or direction characters, quotes or backslashes")]
    TeamCharacters,
    /// The title or federation (named) is not 1 to 4 letters.
    #[error("player {0} must be 1 to 4 letters")]
    Letters(&'static str),
    /// The FIDE id is out of range.
    #[error("FIDE id must be a number from 1 to 999999999")]
    FideId,
    /// The rating is out of range.
    #[error("rating must be at most 4000")]
    Rating,
}

/// The players of one board.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pairing {
    /// White.
    #[serde(default)]
    pub white: Player,
    /// Black.
    #[serde(default)]
    pub black: Player,
}
