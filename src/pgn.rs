//! PGN export (`docs/events.md` §7): Seven Tag Roster, SAN, `[%clk]`, Chess960 tags, a
//! `{made}` comment on a made but not completed move.

use std::fmt::Write as _;

use shakmaty::{Color, Position};

use crate::core::event::CompletedBy;
use crate::core::game::{GameRecord, mover_of_ply};

/// The name of the operator record that carries tags (`"action": "set_tags"`).
pub const SET_TAGS: &str = "set_tags";

/// Tags a capture gives a device (`docs/capture-format.md`): its header's `tags`, or a
/// `set_tags` operator record. Each field: `None`, the record does not have it (the tag stays as
/// it is); `Some(None)`, it clears the tag (`null`, or a value of the wrong type); `Some(v)`, it
/// sets it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagUpdate {
    /// `event`.
    pub event: Option<Option<String>>,
    /// `site`.
    pub site: Option<Option<String>>,
    /// `round`.
    pub round: Option<Option<String>>,
    /// `white`.
    pub white: Option<Option<String>>,
    /// `black`.
    pub black: Option<Option<String>>,
    /// `number`, the board's number (1 or more).
    pub number: Option<Option<u32>>,
    /// `white_team`, White's team in a team event.
    pub white_team: Option<Option<String>>,
    /// `black_team`, Black's team in a team event.
    pub black_team: Option<Option<String>>,
}

impl TagUpdate {
    /// Every tag a capture records, as `tags` has them: applied to no tags, gives `tags` again.
    /// The teams only when set (a capture of an individual event has the keys it always had).
    pub fn of(tags: &GameTags) -> TagUpdate {
        TagUpdate {
            event: Some(tags.event.clone()),
            site: Some(tags.site.clone()),
            round: Some(tags.round.clone()),
            white: Some(tags.white.clone()),
            black: Some(tags.black.clone()),
            number: Some(tags.number),
            white_team: tags.white_team.clone().map(Some),
            black_team: tags.black_team.clone().map(Some),
        }
    }

    /// Read from the JSON object of a header's `tags` or a `set_tags` record (its other keys,
    /// such as `action`, ignored).
    pub fn read(value: &serde_json::Value) -> TagUpdate {
        let text = |k: &str| value.get(k).map(|v| v.as_str().map(str::to_string));
        TagUpdate {
            event: text("event"),
            site: text("site"),
            round: text("round"),
            white: text("white"),
            black: text("black"),
            number: value.get("number").map(|n| {
                n.as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|&n| n > 0)
            }),
            white_team: text("white_team"),
            black_team: text("black_team"),
        }
    }

    /// The `set_tags` operator record that carries it (`action` and the fields it has).
    pub fn to_op(&self) -> serde_json::Value {
        let mut op = self.to_json();
        if let Some(o) = op.as_object_mut() {
            o.insert("action".into(), SET_TAGS.into());
        }
        op
    }

    /// The fields it has, as a capture header's `tags`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut o = serde_json::Map::new();
        for (key, v) in [
            ("event", &self.event),
            ("site", &self.site),
            ("round", &self.round),
            ("white", &self.white),
            ("black", &self.black),
            ("white_team", &self.white_team),
            ("black_team", &self.black_team),
        ] {
            if let Some(v) = v {
                o.insert(key.into(), v.clone().into());
            }
        }
        if let Some(n) = self.number {
            o.insert("number".into(), n.into());
        }
        serde_json::Value::Object(o)
    }
}

/// Tags that come from outside the board (configuration, capture header).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GameTags {
    /// Event name.
    pub event: Option<String>,
    /// Site.
    pub site: Option<String>,
    /// Date as `YYYY.MM.DD`.
    pub date: Option<String>,
    /// Round, e.g. `"3"` or `"3.12"`.
    pub round: Option<String>,
    /// White player's name.
    pub white: Option<String>,
    /// Black player's name.
    pub black: Option<String>,
    /// Board (device) id, written as a `Board` tag when set.
    pub board: Option<String>,
    /// The board's number, as a capture records it (`tags.number`); the `Round` tag carries
    /// it into PGN (`"R.B"`), so it is no tag of its own.
    pub number: Option<u32>,
    /// The Fischer increment in milliseconds when the time control is known (configured);
    /// `None` lets the writer estimate it from the game's clock times (see [`increment_of`]).
    /// It is only used for `[%emt]`, never written as a tag.
    pub increment_ms: Option<u32>,
    /// White's team in a team event (`WhiteTeam`, after the other tags).
    pub white_team: Option<String>,
    /// Black's team in a team event (`BlackTeam`).
    pub black_team: Option<String>,
}

impl GameTags {
    /// Take the tags of `update` (a capture header's `tags`, a `set_tags` operator record):
    /// a field it has sets its tag (`None` inside clears it), a missing one leaves it.
    pub fn apply(&mut self, update: &TagUpdate) {
        for (slot, new) in [
            (&mut self.event, &update.event),
            (&mut self.site, &update.site),
            (&mut self.round, &update.round),
            (&mut self.white, &update.white),
            (&mut self.black, &update.black),
            (&mut self.white_team, &update.white_team),
            (&mut self.black_team, &update.black_team),
        ] {
            if let Some(new) = new {
                slot.clone_from(new);
            }
        }
        if let Some(number) = update.number {
            self.number = number;
        }
    }
}

/// Characters never written into a PGN tag or a file name: control characters (a newline would
/// end the tag and start a forged one), and the invisible format characters that reorder or
/// hide text (bidirectional overrides and isolates, zero-width characters, BOM).
pub fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}'
            | '\u{061C}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// A tag value from anywhere (configuration, capture, operator record, HTTP): unsafe
/// characters ([`unsafe_char`]) dropped (a line break or tab becomes a space), surrounding
/// space trimmed, at most 200 characters.
pub fn clean_tag(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\n' | '\r' | '\t') {
            out.push(' ');
        } else if !unsafe_char(c) {
            out.push(c);
        }
    }
    out.trim().chars().take(200).collect()
}

/// One tag line; the value is cleaned ([`clean_tag`]) and escaped, so it cannot end the tag.
pub fn tag_line(out: &mut String, name: &str, value: &str) {
    tag(out, name, value);
}

fn tag(out: &mut String, name: &str, value: &str) {
    let value = clean_tag(value);
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    let _ = writeln!(out, "[{name} \"{escaped}\"]");
}

/// `h:mm:ss` of a clock time in milliseconds (whole seconds, rounded down).
pub fn clk(ms: u32) -> String {
    let s = ms / 1000;
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The increment of a PGN `TimeControl` value in milliseconds: the `+N` of its first period
/// (`5400+30`, `40/5400+30:1800+30`), also in the words LiveChess writes
/// (`15 min/game + 10 sec/move`); `Some(0)` for a period without one (`5400`); `None` when the
/// value says nothing readable (`?`, `-`, an hourglass `*180`).
pub fn increment_in_time_control(value: &str) -> Option<u32> {
    let first = value.split(':').next()?.trim();
    let has_digit = |s: &str| s.chars().any(|c| c.is_ascii_digit());
    if first.starts_with('*') || !has_digit(first) {
        return None;
    }
    match first.split_once('+') {
        Some((base, inc)) if has_digit(base) => {
            let n: String = inc
                .trim()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            Some(n.parse::<u32>().ok()?.saturating_mul(1000))
        }
        Some(_) => None,
        None => Some(0),
    }
}

/// The Fischer increment a game's clock shows, in milliseconds (whole seconds), estimated from
/// its record when no time control is configured: for every move completed by a press that
/// follows the opponent's press, the mover's time after the move, minus their time when the
/// opponent pressed, plus how long they thought (from the opponent's move to theirs) is the
/// increment; the median over the game, rounded to a second, is robust to the odd move where
/// an arbiter set the clock or a period's bonus was added. `None` without two such moves.
pub fn increment_of(game: &GameRecord) -> Option<u32> {
    let start = game.start();
    let mut samples: Vec<i64> = Vec::new();
    for (i, pair) in game.moves.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        let mover = mover_of_ply(start, i as u32 + 2);
        let (Some(a), Some(b)) = (before.mover_clock(mover), after.mover_clock(mover)) else {
            continue;
        };
        if before.completed != Some(CompletedBy::Clock)
            || after.completed != Some(CompletedBy::Clock)
        {
            continue;
        }
        let thought_ms = (after.made_at - before.made_at) / 1000;
        samples.push(i64::from(b) - i64::from(a) + thought_ms);
    }
    if samples.len() < 2 {
        return None;
    }
    samples.sort_unstable();
    let median = samples[samples.len() / 2];
    let seconds = (median + 500).div_euclid(1000).max(0);
    u32::try_from(seconds * 1000).ok()
}

/// The time each move took as its mover's clock shows it (`[%emt]`), in milliseconds, by ply
/// index: the mover's time when the opponent pressed, minus their time after their own move,
/// plus the increment their press added. `None` where the clock does not tell (the first move
/// of the game, a move without clock times). A move whose clock gained more than the
/// increment (an arbiter added time, a period's bonus) took the time from the opponent's move
/// to this one instead.
pub fn move_times(game: &GameRecord, increment_ms: Option<u32>) -> Vec<Option<u32>> {
    let increment = increment_ms.or_else(|| increment_of(game)).unwrap_or(0);
    let start = game.start();
    let mut out = vec![None; game.moves.len()];
    for (i, pair) in game.moves.windows(2).enumerate() {
        let (before, after) = (&pair[0], &pair[1]);
        let mover = mover_of_ply(start, i as u32 + 2);
        let (Some(a), Some(b)) = (before.mover_clock(mover), after.mover_clock(mover)) else {
            continue;
        };
        let spent = i64::from(a) + i64::from(increment) - i64::from(b);
        let spent = if spent >= 0 {
            spent
        } else {
            ((after.made_at - before.made_at) / 1000).max(0)
        };
        out[i + 1] = u32::try_from(spent).ok();
    }
    out
}

/// The result token of a game (`*` while it runs).
pub fn result_of(game: &GameRecord) -> &'static str {
    game.result.map_or("*", |(r, _)| r.as_str())
}

/// Append one game as PGN, followed by an empty line.
pub fn write_game(game: &GameRecord, tags: &GameTags, out: &mut String) {
    let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
    tag(out, "Event", &or_unknown(&tags.event));
    tag(out, "Site", &or_unknown(&tags.site));
    tag(out, "Date", tags.date.as_deref().unwrap_or("????.??.??"));
    tag(out, "Round", &or_unknown(&tags.round));
    tag(out, "White", &or_unknown(&tags.white));
    tag(out, "Black", &or_unknown(&tags.black));
    let result = result_of(game);
    tag(out, "Result", result);
    if let Some(board) = &tags.board {
        tag(out, "Board", board);
    }
    if game.mode == shakmaty::CastlingMode::Chess960 {
        tag(out, "Variant", "Chess960");
    }
    if game.is_setup() {
        tag(out, "SetUp", "1");
        tag(out, "FEN", &game.start_fen());
    }
    if let Some((_, reason)) = game.result {
        let termination = match reason {
            crate::core::event::EndReason::Flag => "time forfeit",
            crate::core::event::EndReason::Arbiter => "adjudication",
            crate::core::event::EndReason::IllegalMoves => "rules infraction",
            _ => "normal",
        };
        tag(out, "Termination", termination);
    }
    // Team events: lichess builds its match table from these (lila `RelayTeamTable`).
    if let Some(team) = &tags.white_team {
        tag(out, "WhiteTeam", team);
    }
    if let Some(team) = &tags.black_team {
        tag(out, "BlackTeam", team);
    }
    out.push('\n');
    let mut tokens: Vec<String> = Vec::new();
    let start = game.start();
    let first_number = start.fullmoves().get();
    let spent = move_times(game, tags.increment_ms);
    for (i, record) in game.moves.iter().enumerate() {
        let ply = i as u32 + 1;
        let mover = mover_of_ply(start, ply);
        let number = first_number + (i as u32 + u32::from(start.turn() == Color::Black)) / 2;
        if mover == Color::White {
            tokens.push(format!("{number}."));
        } else if i == 0 {
            tokens.push(format!("{number}..."));
        }
        tokens.push(record.san.clone());
        if let Some(ms) = record.mover_clock(mover) {
            tokens.push(format!("{{[%clk {}]}}", clk(ms)));
            if let Some(spent) = spent[i] {
                tokens.push(format!("{{[%emt {}]}}", clk(spent)));
            }
        }
        if record.completed.is_none() {
            tokens.push("{made}".into());
        }
    }
    tokens.push(result.to_string());
    let mut line = String::new();
    for token in tokens {
        if !line.is_empty() && line.len() + 1 + token.len() > 79 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&token);
    }
    out.push_str(&line);
    out.push_str("\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tag_update_sets_clears_and_leaves_tags() {
        let mut tags = GameTags {
            event: Some("Open".into()),
            white: Some("Alpha, Ann".into()),
            number: Some(3),
            ..GameTags::default()
        };
        let update = TagUpdate::read(&json!({
            "action": "set_tags", "event": null, "round": "2", "black": 7, "number": 0,
        }));
        assert_eq!(update.site, None, "absent: left as it is");
        assert_eq!(update.event, Some(None), "null: cleared");
        assert_eq!(
            update.black,
            Some(None),
            "a wrong type clears, as captures always read"
        );
        tags.apply(&update);
        assert_eq!(tags.event, None);
        assert_eq!(tags.white.as_deref(), Some("Alpha, Ann"));
        assert_eq!(tags.round.as_deref(), Some("2"));
        assert_eq!(tags.number, None, "board number 0 is no number");
    }

    /// Team events: `white_team`/`black_team` in a capture's tags (set, cleared by `null`, kept
    /// when absent) become `WhiteTeam`/`BlackTeam`; an individual event's tags have no such keys.
    #[test]
    fn teams_go_through_the_capture_into_the_pgn() {
        let record = serde_json::json!({"action": "set_tags", "white": "Adler, Anna",
            "white_team": "SK Aachen", "black_team": "SF Berlin"});
        let mut tags = GameTags::default();
        tags.apply(&TagUpdate::read(&record));
        assert_eq!(tags.white_team.as_deref(), Some("SK Aachen"));
        assert_eq!(
            TagUpdate::read(&TagUpdate::of(&tags).to_op()),
            TagUpdate::of(&tags)
        );
        let game = GameRecord::new(
            1,
            shakmaty::Chess::default(),
            shakmaty::CastlingMode::Standard,
            None,
            0,
        );
        let mut pgn = String::new();
        write_game(&game, &tags, &mut pgn);
        assert!(
            pgn.contains("[WhiteTeam \"SK Aachen\"]\n[BlackTeam \"SF Berlin\"]\n"),
            "{pgn}"
        );
        tags.apply(&TagUpdate::read(&serde_json::json!({"black_team": null})));
        tags.apply(&TagUpdate::read(
            &serde_json::json!({"white": "Claes, Carla"}),
        ));
        assert_eq!(
            tags.white_team.as_deref(),
            Some("SK Aachen"),
            "absent: kept"
        );
        assert_eq!(tags.black_team, None, "null: cleared");
        let plain = TagUpdate::of(&GameTags::default()).to_json();
        assert!(plain.get("white_team").is_none() && plain.get("black_team").is_none());
    }

    #[test]
    fn a_set_tags_record_is_written_as_captures_always_had_it() {
        let update = TagUpdate {
            event: Some(Some("Open".into())),
            site: Some(None),
            round: Some(Some("4.2".into())),
            white: Some(None),
            black: Some(Some("Beta, Bob".into())),
            number: Some(Some(2)),
            white_team: None,
            black_team: None,
        };
        // The record eboardd has written since set_tags began (keys sorted, nulls kept).
        let written = r#"{"action":"set_tags","black":"Beta, Bob","event":"Open","number":2,"round":"4.2","site":null,"white":null}"#;
        assert_eq!(update.to_op().to_string(), written);
        assert_eq!(TagUpdate::read(&update.to_op()), update);
        assert_eq!(
            update.to_json().to_string(),
            written.replace(r#""action":"set_tags","#, "")
        );
    }
}
