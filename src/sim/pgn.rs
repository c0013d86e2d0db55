//! Games to simulate, read from PGN text with `pgn-reader` (main line only).

use std::io::Cursor;
use std::ops::ControlFlow;

use pgn_reader::{RawComment, RawTag, Reader, SanPlus, Visitor};
use shakmaty::fen::Fen;
use shakmaty::{CastlingMode, Chess, Move, Position, PositionError};

/// One game to play on the simulated board: start position, main-line moves, clock comments.
#[derive(Debug, Clone)]
pub struct ScriptGame {
    /// The PGN tags, in file order.
    pub tags: Vec<(String, String)>,
    /// The start position (the `[FEN]` tag, else the standard start).
    pub start: Chess,
    /// `Chess960` for Chess960 games or X-FEN / Shredder-FEN castling rights, else `Standard`.
    pub castling_mode: CastlingMode,
    /// The main-line moves, legal from `start`.
    pub moves: Vec<Move>,
    /// Per move: the `[%clk]` time left after it, in milliseconds, when the PGN gives one.
    pub clocks: Vec<Option<u32>>,
}

impl ScriptGame {
    /// The value of tag `name` (case-sensitive), if present.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Base time and increment in milliseconds from the `[TimeControl]` tag: PGN style
    /// `"900+10"` (seconds) → `(900000, 10000)`, or spelt out like `"15 min. + 10 s. per move"`;
    /// only the first period of a multi-period control.
    pub fn time_control(&self) -> Option<(u32, u32)> {
        let tc = self.tag("TimeControl")?.split(':').next()?;
        let (base, inc) = tc.split_once('+').unwrap_or((tc, "0"));
        Some((duration_ms(base)?, duration_ms(inc)?))
    }

    /// Whether the game is a Chess960 game (castling mode `Chess960`).
    pub fn is_chess960(&self) -> bool {
        self.castling_mode == CastlingMode::Chess960
    }
}

/// Parses every game of `pgn`. Games without moves are skipped; a game whose start position or
/// Why a game of a PGN text could not be read (which game, which ply, what was wrong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PgnError(String);

impl From<String> for PgnError {
    fn from(reason: String) -> Self {
        PgnError(reason)
    }
}

/// moves cannot be read gives an `Err` with the reason (and the game number, from 1).
pub fn parse_games(pgn: &str) -> Vec<Result<ScriptGame, PgnError>> {
    parse_games_bytes(pgn.as_bytes())
}

/// [`parse_games`] for PGN bytes that may not be UTF-8 (tags are decoded lossily).
pub fn parse_games_bytes(pgn: &[u8]) -> Vec<Result<ScriptGame, PgnError>> {
    let mut reader = Reader::new(Cursor::new(pgn));
    let mut visitor = GameVisitor { games: 0 };
    let mut out = Vec::new();
    loop {
        match reader.read_game(&mut visitor) {
            Ok(Some(Some(game))) => out.push(game),
            Ok(Some(None)) => {}
            Ok(None) => break,
            Err(e) => {
                out.push(Err(PgnError::from(format!(
                    "read error after game {}: {e}",
                    visitor.games
                ))));
                break;
            }
        }
    }
    out
}

/// Milliseconds of a `[%clk h:mm:ss(.f)]` command inside a comment.
pub fn parse_clk(comment: &str) -> Option<u32> {
    let rest = &comment[comment.find("[%clk")? + 5..];
    let value = rest[..rest.find(']')?].trim();
    let mut parts = value.split(':').rev();
    let secs: f64 = parts.next()?.trim().parse().ok()?;
    let mins: u32 = parts.next().map_or(Some(0), |m| m.trim().parse().ok())?;
    let hours: u32 = parts.next().map_or(Some(0), |h| h.trim().parse().ok())?;
    if !(0.0..60.0).contains(&secs) || parts.next().is_some() {
        return None;
    }
    Some((hours * 3600 + mins * 60) * 1000 + (secs * 1000.0).round() as u32)
}

/// Milliseconds of a time like `"900"`, `"15 min."`, `"10 s. per move"` or `"1h"` (seconds
/// unless a unit says otherwise).
fn duration_ms(text: &str) -> Option<u32> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let value: f64 = text[..end].parse().ok()?;
    let unit = text[end..].trim_start().to_ascii_lowercase();
    let scale = if unit.starts_with('m') || unit.starts_with('\'') {
        60_000.0
    } else if unit.starts_with('h') {
        3_600_000.0
    } else {
        1000.0
    };
    Some((value * scale) as u32)
}

/// Whether a `[Variant]` tag names Chess960.
fn is_960_variant(v: &str) -> bool {
    let v: String = v
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    v.contains("960") || v.contains("fischer") || v == "frc"
}

/// The start position of a `[FEN]` tag: the given mode first, Chess960 castling as a fallback
/// (X-FEN `KQkq` with rooks off the corners), then with invalid rights / e.p. squares dropped.
fn position_from_fen(fen: &str, mode: CastlingMode) -> Result<(Chess, CastlingMode), String> {
    let fen =
        Fen::from_ascii(fen.trim().as_bytes()).map_err(|e| format!("bad FEN {fen:?}: {e}"))?;
    let mut modes = vec![mode];
    if mode == CastlingMode::Standard {
        modes.push(CastlingMode::Chess960);
    }
    for &m in &modes {
        if let Ok(pos) = fen.clone().into_position::<Chess>(m) {
            return Ok((pos, m));
        }
    }
    fen.into_position::<Chess>(mode)
        .or_else(PositionError::ignore_invalid_ep_square)
        .or_else(PositionError::ignore_invalid_castling_rights)
        .map(|pos| (pos, mode))
        .map_err(|e| format!("illegal FEN position: {e}"))
}

struct GameVisitor {
    games: usize,
}

struct Movetext {
    game: Result<ScriptGame, PgnError>,
    pos: Chess,
}

impl Visitor for GameVisitor {
    type Tags = Vec<(String, String)>;
    type Movetext = Movetext;
    type Output = Option<Result<ScriptGame, PgnError>>;

    fn begin_tags(&mut self) -> ControlFlow<Self::Output, Self::Tags> {
        self.games += 1;
        ControlFlow::Continue(Vec::new())
    }

    fn tag(
        &mut self,
        tags: &mut Self::Tags,
        name: &[u8],
        value: RawTag<'_>,
    ) -> ControlFlow<Self::Output> {
        let name = String::from_utf8_lossy(name).into_owned();
        tags.push((name, value.decode_utf8_lossy().into_owned()));
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, tags: Self::Tags) -> ControlFlow<Self::Output, Self::Movetext> {
        let get = |n: &str| tags.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        let mut mode = if get("Variant").is_some_and(is_960_variant) {
            CastlingMode::Chess960
        } else {
            CastlingMode::Standard
        };
        let start = match get("FEN") {
            Some(fen) => {
                let rights = fen.split_whitespace().nth(2).unwrap_or("-");
                if rights.chars().any(|c| matches!(c, 'A'..='H' | 'a'..='h')) {
                    mode = CastlingMode::Chess960;
                }
                position_from_fen(fen, mode).map(|(pos, m)| {
                    mode = m;
                    pos
                })
            }
            None => Ok(Chess::default()),
        };
        let game_no = self.games;
        let (game, pos) = match start {
            Ok(pos) => {
                let game = ScriptGame {
                    tags,
                    start: pos.clone(),
                    castling_mode: mode,
                    moves: Vec::new(),
                    clocks: Vec::new(),
                };
                (Ok(game), pos)
            }
            Err(e) => (
                Err(PgnError::from(format!("game {game_no}: {e}"))),
                Chess::default(),
            ),
        };
        ControlFlow::Continue(Movetext { game, pos })
    }

    fn san(&mut self, mt: &mut Self::Movetext, san_plus: SanPlus) -> ControlFlow<Self::Output> {
        let Ok(game) = &mut mt.game else {
            return ControlFlow::Continue(());
        };
        match san_plus.san.to_move(&mt.pos) {
            Ok(m) => {
                mt.pos.play_unchecked(m);
                game.moves.push(m);
                game.clocks.push(None);
            }
            Err(e) => {
                let ply = game.moves.len() + 1;
                mt.game = Err(PgnError::from(format!(
                    "game {}: ply {ply} {san_plus}: {e}",
                    self.games
                )));
            }
        }
        ControlFlow::Continue(())
    }

    fn comment(
        &mut self,
        mt: &mut Self::Movetext,
        comment: RawComment<'_>,
    ) -> ControlFlow<Self::Output> {
        if let Ok(game) = &mut mt.game
            && let Some(ms) = parse_clk(&String::from_utf8_lossy(comment.as_bytes()))
            && let Some(last) = game.clocks.last_mut()
        {
            last.get_or_insert(ms);
        }
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, mt: Self::Movetext) -> Self::Output {
        match mt.game {
            Ok(game) if game.moves.is_empty() => None,
            other => Some(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clk_and_960() {
        assert_eq!(parse_clk("[%eval 0.2] [%clk 0:14:59.5]"), Some(899_500));
        assert_eq!(parse_clk("[%clk 1:30:00]"), Some(5_400_000));
        let pgn = "[Variant \"chess 960\"]\n[FEN \"bbrknrqn/pppppppp/8/8/8/8/PPPPPPPP/BBRKNRQN w FCfc - 0 1\"]\n\n1. e4 {[%clk 0:01:00]} e5 (1... d5) 2. Nf3 *\n\n[Event \"empty\"]\n\n*\n";
        let games = parse_games(pgn);
        assert_eq!(games.len(), 1);
        let g = games[0].as_ref().unwrap();
        assert!(g.is_chess960());
        assert_eq!(g.moves.len(), 3);
        assert_eq!(g.clocks, vec![Some(60_000), None, None]);
        assert_eq!(duration_ms("15 min. "), Some(900_000));
        assert_eq!(duration_ms(" 10 s. per move"), Some(10_000));
        assert_eq!(duration_ms("5400"), Some(5_400_000));
    }
}
