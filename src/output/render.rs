//! Renderings of the round model: PGN (`docs/broadcast.md` §2, §3), the LiveChessCloud JSON tree
//! (§1) and the LiveChess EBoards API objects (§4).

use serde_json::{Value, json};
use shakmaty::{Color, Position};

use super::model::{BoardState, ClockState, Player, RoundInfo, RoundState, Shown};
use crate::core::game::{GameRecord, mover_of_ply};
use crate::core::observation::Micros;
use crate::pgn::{self, GameTags};

/// `Round "R.B"` of what a board shows (its current game's round, else the current round).
pub fn round_tag(board: &BoardState) -> String {
    format!("{}.{}", board.shown_round(), board.number)
}

/// The game of board `b` shown for round `r`: for the current round, the board's current game
/// when it was started in that round; for an earlier round, the last game started in it (a
/// game of that round still running included; read back from the archive when it left the
/// board). A game never shows under a round it was not started in.
pub fn game_for<'a>(round: &'a RoundState, b: &'a BoardState, r: u32) -> Option<Shown<'a>> {
    if r == round.info.round {
        current(b).filter(|g| g.round == r)
    } else {
        round.game_in(b, r)
    }
}

/// Whether board `b` shows a game for round `r` (as [`game_for`]), and whether it ended.
pub fn ended_for(round: &RoundState, b: &BoardState, r: u32) -> Option<bool> {
    if r == round.info.round {
        current(b).filter(|g| g.round == r).map(|g| g.ended())
    } else {
        round.ended_in(b, r)
    }
}

/// The board's current game with the round it was started in.
fn current(b: &BoardState) -> Option<Shown<'_>> {
    b.game().map(|g| Shown {
        game: std::borrow::Cow::Borrowed(g),
        round: b.round_of(g),
    })
}

/// The PGN date (`YYYY.MM.DD`, UTC) a game started on, as `eboardd replay` dates it from its
/// capture: known when the board's or the round's time origin is. A round's configured date
/// (or a paced replay's, the captures' own) comes first.
pub fn game_date(round: &RoundState, board: &BoardState, game: &GameRecord) -> Option<String> {
    if board.status.t0_ms.is_none() && round.info.epoch_ms == 0 {
        return None;
    }
    let ms = round.epoch_ms(board, game.started_at);
    let at = chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms)?;
    Some(at.format("%Y.%m.%d").to_string())
}

/// Append one game as PGN: the same writer as `eboardd replay`, with the stable tags of the
/// round the game was played in (Event, Site, Round `R.B`, players) and extra tags (FIDE ids,
/// titles, ratings, federations, teams, TimeControl).
pub fn write_game_pgn(round: &RoundState, board: &BoardState, game: &Shown, out: &mut String) {
    let r = game.round;
    let info = round.info_of(r);
    let pairing = round.pairing_in(r, &board.id);
    let number = board.number;
    let tags = GameTags {
        event: info.event.clone(),
        site: info.site.clone(),
        date: info.date.clone().or_else(|| game_date(round, board, game)),
        round: Some(format!("{r}.{number}")),
        white: pairing.white.name.clone(),
        black: pairing.black.name.clone(),
        board: Some(board.id.clone()),
        number: Some(number),
        increment_ms: increment_of(info),
        white_team: pairing.white.team.clone(),
        black_team: pairing.black.team.clone(),
    };
    let mut text = String::new();
    pgn::write_game(game, &tags, &mut text);
    let mut extra = String::new();
    let mut tag = |name: &str, value: String| pgn::tag_line(&mut extra, name, &value);
    for (side, p) in [("White", &pairing.white), ("Black", &pairing.black)] {
        if let Some(v) = &p.title {
            tag(&format!("{side}Title"), v.clone());
        }
        if let Some(v) = p.elo {
            tag(&format!("{side}Elo"), v.to_string());
        }
        if let Some(v) = p.fide_id {
            tag(&format!("{side}FideId"), v.to_string());
        }
        if let Some(v) = &p.federation {
            tag(&format!("{side}Fed"), v.clone());
        }
    }
    if let Some(tc) = &info.time_control {
        tag("TimeControl", tc.clone());
    }
    // A game in progress: the clocks as last read, as LiveChess writes them, so a viewer's
    // clocks are right between moves (lila #19227 reads these tags).
    if !game.ended()
        && current(board).is_some_and(|c| c.number == game.number)
        && let Some(c) = &board.clock
    {
        for (name, v) in clock_tags(round, board, c, game.position().turn()) {
            tag(name, v);
        }
    }
    // The tag section ends at the first empty line.
    match text.find("\n\n") {
        Some(i) => {
            out.push_str(&text[..=i]);
            out.push_str(&extra);
            out.push_str(&text[i + 1..]);
        }
        None => out.push_str(&text),
    }
}

/// PGN of the current game of one board (empty when no game started).
pub fn board_pgn(round: &RoundState, board: &BoardState) -> String {
    let mut out = String::new();
    if let Some(g) = current(board) {
        write_game_pgn(round, board, &g, &mut out);
    }
    out
}

/// The round's `games.pgn`: the current game of every board, in board order.
pub fn round_pgn(round: &RoundState) -> String {
    round_pgn_of(round, round.info.round)
}

/// `games.pgn` of round `r` (the current or an earlier one): each board's game, in board order.
pub fn round_pgn_of(round: &RoundState, r: u32) -> String {
    let mut out = String::new();
    for b in round.boards() {
        if let Some(g) = game_for(round, b, r) {
            write_game_pgn(round, b, &g, &mut out);
        }
    }
    out
}

/// Every game of every board, in the order they started (as `eboardd replay` prints them):
/// the archived ones read back, then the boards' own.
pub fn all_games_pgn(round: &RoundState) -> String {
    let mut games: Vec<(
        Micros,
        usize,
        u32,
        Option<&crate::output::archive::Archived>,
    )> = round
        .archive()
        .games()
        .iter()
        .filter_map(|a| Some((a.started_at, round.place_of(&a.board)?, a.number, Some(a))))
        .collect();
    for (i, b) in round.boards().iter().enumerate() {
        games.extend(b.games.iter().map(|g| (g.started_at, i, g.number, None)));
    }
    games.sort_by_key(|(t, i, n, _)| (*t, *i, *n));
    let mut out = String::new();
    let mut own = vec![0usize; round.boards().len()];
    for (_, i, _, archived) in games {
        let b = &round.boards()[i];
        let shown = match archived {
            Some(a) => round.archive().game(a).map(|g| Shown {
                game: std::borrow::Cow::Owned(g),
                round: a.round,
            }),
            None => {
                let g = &b.games[own[i]];
                own[i] += 1;
                Some(Shown {
                    game: std::borrow::Cow::Borrowed(g),
                    round: b.round_of(g),
                })
            }
        };
        if let Some(g) = shown {
            write_game_pgn(round, b, &g, &mut out);
        }
    }
    out
}

/// Split `"Last, First Middle"` (or `"First Last"`) into LCC's `fname`, `mname`, `lname`.
fn split_name(name: Option<&str>) -> (Value, Value, Value) {
    let Some(name) = name.map(str::trim).filter(|n| !n.is_empty()) else {
        return (Value::Null, Value::Null, Value::Null);
    };
    if let Some((last, first)) = name.split_once(',') {
        let first = first.trim();
        let (f, m) = match first.split_once(' ') {
            Some((f, m)) => (f.trim(), Some(m.trim())),
            None => (first, None),
        };
        let f = if f.is_empty() { Value::Null } else { f.into() };
        return (f, m.map_or(Value::Null, Into::into), last.trim().into());
    }
    match name.rsplit_once(' ') {
        Some((first, last)) => (first.trim().into(), Value::Null, last.into()),
        None => (Value::Null, Value::Null, name.into()),
    }
}

/// An LCC / LiveChess player object (`fname`, `mname`, `lname`, `title`, `federation`,
/// `gender`, `fideid`), and `team` when the player has one (team events; eboardd's own key).
pub fn lcc_player(p: &Player) -> Value {
    let (fname, mname, lname) = split_name(p.name.as_deref());
    let mut v = json!({
        "fname": fname,
        "mname": mname,
        "lname": lname,
        "title": p.title,
        "federation": p.federation,
        "gender": null,
        "fideid": p.fide_id,
    });
    if let (Some(team), Value::Object(o)) = (&p.team, &mut v) {
        o.insert("team".into(), team.clone().into());
    }
    v
}

/// LCC `tournament.json`.
pub fn lcc_tournament(round: &RoundState) -> Value {
    let name = round.info.event.clone().unwrap_or_else(|| "eboardd".into());
    // Each round counts the games started in it (a game still running when the next round
    // was loaded counts, live, in its own round).
    let rounds: Vec<Value> = (1..=round.info.round.max(1))
        .map(|r| {
            let games = round.boards().iter().filter_map(|b| {
                let ended = ended_for(round, b, r)?;
                Some(!ended && (r != round.info.round || b.live()))
            });
            let (n, l) = games.fold((0, 0), |(n, l), live| (n + 1, l + usize::from(live)));
            json!({"count": n, "live": l})
        })
        .collect();
    let chess960 = round
        .boards()
        .iter()
        .filter_map(|b| b.game())
        .any(|g| g.mode == shakmaty::CastlingMode::Chess960);
    let eboards: Vec<String> = round
        .boards()
        .iter()
        .map(|b| b.serial().unwrap_or(&b.id).to_string())
        .collect();
    json!({
        "id": name,
        "name": name,
        "location": round.info.site,
        "country": null,
        "website": null,
        "rules": "STANDARD",
        "chess960": if chess960 { "CHESS960" } else { "STANDARD" },
        "timecontrol": round.info.time_control,
        "rounds": rounds,
        "eboards": eboards,
    })
}

/// `YYYY-MM-DD` from the PGN date, when complete.
fn iso_date(date: Option<&str>) -> Option<String> {
    let d = date?;
    let ok = d.len() == 10
        && d.bytes().enumerate().all(|(i, c)| match i {
            4 | 7 => c == b'.' || c == b'-',
            _ => c.is_ascii_digit(),
        });
    ok.then(|| d.replace('.', "-"))
}

/// LCC `round-R/index.json`: one pairing per board (in board order, so `game-G.json` is board
/// G), results in PGN form.
pub fn lcc_index(round: &RoundState) -> Value {
    lcc_index_of(round, round.info.round)
}

/// LCC `round-R/index.json` of round `r` (the current or an earlier one).
pub fn lcc_index_of(round: &RoundState, r: u32) -> Value {
    // LCC numbers games by their place in the list: a number no board has is an empty pairing.
    let pairings: Vec<Value> = (1..=round.max_number())
        .map(|n| {
            let Some(b) = round.board_numbered(n) else {
                return json!({"white": null, "black": null, "result": "*", "live": false});
            };
            let p = round.pairing_in(r, &b.id);
            let g = game_for(round, b, r);
            let g = g.as_deref();
            json!({
                "white": lcc_player(&p.white),
                "black": lcc_player(&p.black),
                "result": g.map_or("*", pgn::result_of),
                "live": g.is_some_and(|g| !g.ended()) && b.live(),
            })
        })
        .collect();
    // The round's date: the configured one, else the day its first game started.
    let date = round.info_of(r).date.clone().or_else(|| {
        round
            .boards()
            .iter()
            .filter_map(|b| {
                let g = game_for(round, b, r)?;
                Some((g.started_at, game_date(round, b, &g)?))
            })
            .min()
            .map(|(_, d)| d)
    });
    json!({
        "date": iso_date(date.as_deref()),
        "pairings": pairings,
    })
}

fn lcc_result(g: &GameRecord) -> Value {
    use shakmaty::KnownOutcome;
    match g.result.and_then(|(r, _)| r.known()) {
        Some(KnownOutcome::Decisive { winner }) => winner.fold_wb("WHITEWIN", "BLACKWIN").into(),
        Some(KnownOutcome::Draw) => "DRAW".into(),
        None => Value::Null,
    }
}

/// Whole seconds, rounded down, of milliseconds.
fn secs(ms: u32) -> u32 {
    ms / 1000
}

/// The Fischer increment of a round's configured time control, when it says one.
pub fn increment_of(info: &RoundInfo) -> Option<u32> {
    info.time_control
        .as_deref()
        .and_then(pgn::increment_in_time_control)
}

/// LCC move tokens: `"SAN secondsLeft+secondsSpent"`, the time left only when known. The time
/// spent is the PGN's `[%emt]` where the clock tells it ([`pgn::move_times`]), else the time
/// from the previous move to this one.
pub fn lcc_moves(g: &GameRecord, increment_ms: Option<u32>) -> Vec<String> {
    let start = g.start();
    let by_clock = pgn::move_times(g, increment_ms);
    let mut prev_t: Micros = g.started_at;
    g.moves
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mover = mover_of_ply(start, i as u32 + 1);
            let spent = match by_clock[i] {
                Some(ms) => u64::from(secs(ms)),
                None => ((m.made_at - prev_t).max(0) / 1_000_000) as u64,
            };
            prev_t = m.made_at;
            match m.mover_clock(mover) {
                Some(ms) => format!("{} {}+{}", m.san, secs(ms), spent),
                None => format!("{} +{}", m.san, spent),
            }
        })
        .collect()
}

/// `H:MM:SS` of a clock's milliseconds left (LiveChess: `01:25:36`).
fn hms(ms: u32) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The `WhiteClock`, `BlackClock` and `ReferenceTime` tags of a clock reading, as real
/// LiveChess writes them (`[WhiteClock "01:25:36"] [BlackClock "01:21:35"] [ReferenceTime
/// "W/2024-05-15T14:21:57.339+02:00"]`: the running side, `to_move` when the clock is
/// stopped, and when the clocks were read; eboardd writes UTC).
pub fn clock_tags(
    round: &RoundState,
    b: &BoardState,
    c: &ClockState,
    to_move: Color,
) -> [(&'static str, String); 3] {
    let side = match c.running.unwrap_or(to_move) {
        Color::White => 'W',
        Color::Black => 'B',
    };
    let at = chrono::DateTime::from_timestamp_millis(round.epoch_ms(b, c.t)).unwrap_or_default();
    [
        ("WhiteClock", hms(c.white)),
        ("BlackClock", hms(c.black)),
        (
            "ReferenceTime",
            format!("{side}/{}", at.format("%Y-%m-%dT%H:%M:%S%.3f+00:00")),
        ),
    ]
}

/// A clock object `{white, black, run, time}`: seconds left, the running side (`true` White,
/// `false` Black, null stopped) and the epoch-ms reference of the reading.
pub fn clock_object(round: &RoundState, b: &BoardState, c: &ClockState) -> Value {
    json!({
        "white": secs(c.white),
        "black": secs(c.black),
        "run": c.running.map(|s| s == Color::White),
        "time": round.epoch_ms(b, c.t),
    })
}

/// LCC `round-R/game-G.json` with no game: of a board between games (`serial`), or of a
/// board number no board has (`None`).
pub fn lcc_no_game(serial: Option<&str>) -> Value {
    json!({
        "live": false, "serialNr": serial, "firstMove": null,
        "chess960": 518, "result": null, "comment": null, "clock": null, "moves": [],
    })
}

/// LCC `round-R/game-G.json` of one board's current game.
pub fn lcc_game(round: &RoundState, b: &BoardState) -> Value {
    lcc_game_of(round, b, round.info.round)
}

/// LCC `round-R/game-G.json` of one board's game in round `r`.
pub fn lcc_game_of(round: &RoundState, b: &BoardState, r: u32) -> Value {
    let Some(shown) = game_for(round, b, r) else {
        return lcc_no_game(Some(b.serial().unwrap_or(&b.id)));
    };
    let g: &GameRecord = &shown;
    let chess960 = match g.mode {
        shakmaty::CastlingMode::Chess960 => g.chess960.map_or(Value::Null, Into::into),
        shakmaty::CastlingMode::Standard => 518.into(),
    };
    json!({
        "live": !g.ended() && b.live(),
        "serialNr": b.serial().unwrap_or(&b.id),
        "firstMove": g.moves.first().map(|m| round.epoch_ms(b, m.made_at)),
        "chess960": chess960,
        "result": lcc_result(g),
        "comment": b.status.comment,
        "clock": b.clock.as_ref().map(|c| clock_object(round, b, c)),
        "moves": lcc_moves(g, increment_of(round.info_of(r))),
    })
}

/// LiveChess `state` string of a board.
fn eboard_state(b: &BoardState) -> Value {
    use super::model::LinkState;
    match b.link() {
        LinkState::Active => "ACTIVE".into(),
        LinkState::NotResponding => "NOTRESPONDING".into(),
        LinkState::Disconnected => "NOTRESPONDING".into(),
        LinkState::Unknown => Value::Null,
    }
}

/// The LiveChess serial number of a board: its serial, else its device id.
pub fn serialnr(b: &BoardState) -> String {
    b.serial().unwrap_or(&b.id).to_string()
}

/// A LiveChess e-board object (`eboards` call).
pub fn eboard_object(round: &RoundState, b: &BoardState) -> Value {
    json!({
        "serialnr": serialnr(b),
        "source": b.status.source,
        "state": eboard_state(b),
        "battery": b.status.battery,
        "comment": b.status.comment,
        "board": b.placement(),
        "flipped": b.game().is_some_and(|g| g.reversed),
        "clock": b.clock.as_ref().map(|c| clock_object(round, b, c)),
    })
}

/// The full-state `eboardevent` feed payload of a board, with a start position (the game's,
/// unless a client set another with `setup`) and the SAN since then.
pub fn eboard_event(
    round: &RoundState,
    b: &BoardState,
    setup: Option<&str>,
    flipped: bool,
) -> Value {
    let (start, san, matched) = match b.game() {
        None => (setup.map(str::to_string), Vec::new(), false),
        Some(g) => {
            let game_start = g.start_fen();
            let from = match setup {
                None => Some(0),
                Some(f) if same_position(f, &game_start) => Some(0),
                Some(f) => (1..=g.ply())
                    .find(|&n| same_position(f, &crate::core::game::fen_of(g.position_after(n)))),
            };
            match from {
                Some(n) => (
                    Some(setup.map_or(game_start, str::to_string)),
                    g.moves[n as usize..]
                        .iter()
                        .map(|m| m.san.clone())
                        .collect(),
                    b.matches(),
                ),
                None => (setup.map(str::to_string), Vec::new(), false),
            }
        }
    };
    json!({
        "serialnr": serialnr(b),
        "flipped": flipped,
        "board": b.placement(),
        "clock": b.clock.as_ref().map(|c| clock_object(round, b, c)),
        "start": start,
        "san": san,
        "match": matched,
    })
}

/// Two FENs describe the same position (placement, turn, castling, en passant).
fn same_position(a: &str, b: &str) -> bool {
    let key = |f: &str| f.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    key(a) == key(b)
}

/// Whether a FEN parses as a legal position (standard or Chess960 castling).
pub fn valid_fen(fen: &str) -> bool {
    fen.len() <= 100
        && fen.parse::<shakmaty::fen::Fen>().is_ok_and(|parsed| {
            parsed
                .into_position::<shakmaty::Chess>(shakmaty::CastlingMode::Chess960)
                .is_ok()
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::model::{BoardStatus, RoundInfo};

    #[test]
    fn clock_tags_are_written_as_livechess_writes_them() {
        let noon = 1_715_775_000_000; // 2024-05-15T12:10:00Z
        let mut round = RoundState::new(RoundInfo {
            epoch_ms: noon,
            ..Default::default()
        });
        let b = round.board_mut("x").clone();
        let c = ClockState {
            white: 5_136_000, // 1:25:36
            black: 4_895_500, // 1:21:35.5
            running: Some(Color::White),
            t: 117_339_000,
        };
        let tags = clock_tags(&round, &b, &c, Color::Black);
        assert_eq!(tags[0], ("WhiteClock", "01:25:36".to_string()));
        assert_eq!(tags[1], ("BlackClock", "01:21:35".to_string()));
        assert_eq!(
            tags[2],
            (
                "ReferenceTime",
                "W/2024-05-15T12:11:57.339+00:00".to_string()
            )
        );
        // Stopped: the side to move.
        let stopped = ClockState { running: None, ..c };
        assert!(
            clock_tags(&round, &b, &stopped, Color::Black)[2]
                .1
                .starts_with("B/")
        );
    }

    #[test]
    fn a_clock_reading_between_two_moves_changes_the_clock_tags_of_the_pgn() {
        use crate::core::event::{CoreEvent, EventKind};
        let mut round = RoundState::new(RoundInfo {
            epoch_ms: 1_715_775_000_000,
            ..Default::default()
        });
        let ev = |t, kind| CoreEvent { t, game: 1, kind };
        let fen = shakmaty::fen::Fen::default().to_string();
        round.apply(
            1,
            "b",
            &ev(
                0,
                EventKind::GameStarted {
                    fen,
                    chess960: None,
                },
            ),
        );
        let clock = |white| EventKind::Clock {
            white,
            black: 600_000,
            running: Some(Color::White),
        };
        round.apply(2, "b", &ev(1_000_000, clock(599_000)));
        let pgn = |round: &RoundState| board_pgn(round, round.board("b").unwrap());
        let before = pgn(&round);
        assert!(before.contains("[WhiteClock \"00:09:59\"]"), "{before}");
        assert!(before.contains("[BlackClock \"00:10:00\"]"), "{before}");
        assert!(before.contains("[ReferenceTime \"W/"), "{before}");
        // No move: only the clock reads on.
        round.apply(3, "b", &ev(5_000_000, clock(595_000)));
        let after = pgn(&round);
        assert!(after.contains("[WhiteClock \"00:09:55\"]"), "{after}");
        assert_ne!(before, after);
    }

    /// Team events: `WhiteTeam`/`BlackTeam` in the PGN every writer uses (relay files,
    /// `games.pgn`, the lichess push) and `team` in the LCC player objects.
    #[test]
    fn teams_are_tagged_in_the_pgn_and_named_in_the_relay_json() {
        use crate::core::event::{CoreEvent, EventKind};
        let player = |name: &str, team: &str| Player {
            name: Some(name.into()),
            team: Some(team.into()),
            ..Default::default()
        };
        let mut info = RoundInfo::default();
        info.pairings.insert(
            "board-1".into(),
            crate::output::model::Pairing {
                white: player("Fischer, Felix", "SF Berlin"),
                black: player("Bauer, Ben", "SK Aachen"),
            },
        );
        let mut round = RoundState::new(info);
        let fen = shakmaty::fen::Fen::default().to_string();
        let started = EventKind::GameStarted {
            fen,
            chess960: None,
        };
        round.apply(
            1,
            "board-1",
            &CoreEvent {
                t: 0,
                game: 1,
                kind: started,
            },
        );
        let pgn = board_pgn(&round, round.board("board-1").unwrap());
        assert!(pgn.contains("[WhiteTeam \"SF Berlin\"]\n"), "{pgn}");
        assert!(pgn.contains("[BlackTeam \"SK Aachen\"]\n"), "{pgn}");
        assert_eq!(round_pgn(&round), pgn);
        let (bodies, _) = crate::output::lichess::bodies(&round, 1);
        assert!(
            bodies[0].contains("[WhiteTeam \"SF Berlin\"]"),
            "{}",
            bodies[0]
        );
        let index = lcc_index(&round);
        assert_eq!(index["pairings"][0]["white"]["team"], "SF Berlin");
        assert_eq!(index["pairings"][0]["black"]["team"], "SK Aachen");
        // No team: no key, as before.
        assert!(lcc_player(&Player::default()).get("team").is_none());
    }

    #[test]
    fn clock_times_count_from_the_boards_own_capture_start() {
        // The round's outputs started at 12:00; this board's capture was created at 10:00
        // (a restart, or a board plugged in earlier): its event time 60 s is 10:01, not 12:01.
        let noon = 1_780_000_000_000;
        let ten = noon - 2 * 3_600_000;
        let mut round = RoundState::new(RoundInfo {
            epoch_ms: noon,
            ..Default::default()
        });
        let b = round.board_mut("board-1");
        b.status = BoardStatus {
            t0_ms: Some(ten),
            ..Default::default()
        };
        let c = ClockState {
            white: 60_000,
            black: 60_000,
            running: None,
            t: 60_000_000,
        };
        let b = round.board("board-1").unwrap();
        assert_eq!(clock_object(&round, b, &c)["time"], ten + 60_000);
        // A source that does not know it: the round's clock.
        let mut other = b.clone();
        other.status.t0_ms = None;
        assert_eq!(clock_object(&round, &other, &c)["time"], noon + 60_000);
    }
}
