//! The JSON views of the model (`docs/events.md`): a game, a board, the round, as snapshots
//! and the HTTP API show them.

use serde_json::{Value, json};
use shakmaty::{CastlingMode, Position};

use crate::core::event::{ClockTimes, CompletedBy, EndReason};
use crate::core::game::{GameRecord, mover_of_ply};

use super::{BoardState, ClockState, GameResult, Irregularity, RoundState};

/// JSON of a clock state (ms, and the running side).
fn clock_json(c: &ClockState) -> Value {
    json!({
        "white": c.white,
        "black": c.black,
        "running": c.running.map(crate::core::vocab::color_name),
        "t": c.t as f64 / 1e6,
    })
}

fn by_str(by: CompletedBy) -> &'static str {
    match by {
        CompletedBy::Clock => "clock",
        CompletedBy::NextMove => "next_move",
        CompletedBy::GameEnd => "game_end",
    }
}

/// The name of an end reason (`docs/events.md` §5).
pub fn reason_str(reason: EndReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn clock_times_json(c: Option<ClockTimes>) -> Value {
    c.map_or(Value::Null, |c| json!({"white": c.white, "black": c.black}))
}

/// JSON of one game (moves with clocks, position, result).
pub fn game_json(g: &GameRecord) -> Value {
    let moves: Vec<Value> = g
        .moves
        .iter()
        .enumerate()
        .map(|(i, m)| {
            json!({
                "ply": i + 1,
                "san": m.san,
                "uci": m.uci,
                "completed": m.completed.map(by_str),
                "clock": clock_times_json(m.clock),
                "t": m.made_at as f64 / 1e6,
            })
        })
        .collect();
    let last = g.moves.last().map(|m| {
        json!({
            "ply": g.ply(),
            "san": m.san,
            "uci": m.uci,
            "by": mover_of_ply(g.start(), g.ply()).fold_wb("white", "black"),
            "completed": m.completed.is_some(),
        })
    });
    json!({
        "number": g.number,
        "start_fen": g.start_fen(),
        "chess960": g.chess960.filter(|_| g.mode == CastlingMode::Chess960),
        "fen": crate::core::game::fen_of(g.position()),
        "turn": g.position().turn().fold_wb("white", "black"),
        "reversed": g.reversed,
        "moves": moves,
        "last_move": last,
        "result": crate::pgn::result_of(g),
        "reason": g.result.map(|(_, r)| reason_str(r)),
        "t": g.started_at as f64 / 1e6,
    })
}

/// JSON snapshot of one board (the `boards[]` items of `GET /api/v1/boards`, the MQTT state).
pub fn board_json(round: &RoundState, b: &BoardState) -> Value {
    let pairing = round.shown_pairing(b);
    let shown = b.shown_round();
    let game = b.game().filter(|g| b.round_of(g) == shown);
    let (result, confirmed) = round.result_in(b, shown, game);
    let irregularities: Vec<&Irregularity> = b.open_irregularities().collect();
    json!({
        "board": b.id,
        "number": round.board_number(&b.id),
        "link": b.link(),
        "waiting": b.waiting(),
        "connected": b.connected,
        "driver": b.driver,
        "serial": b.serial(),
        "status": b.status,
        "round": b.shown_round(),
        "white": pairing.white,
        "black": pairing.black,
        "game": b.game().map(game_json),
        "result": result.map(GameResult::as_str),
        "confirmed": confirmed,
        "games": b.games.len() + b.archived as usize,
        "clock": b.clock.as_ref().map(clock_json),
        "irregularities": irregularities,
        "claims": b.claims(),
        "match": b.matches(),
        "model_error": b.model_error,
        "last_seq": b.last_seq,
        "t": b.last_t as f64 / 1e6,
    })
}

/// The whole round as JSON (`GET /api/v1/boards`, and the body of `snapshot` messages).
pub fn round_json(round: &RoundState) -> Value {
    let boards: Vec<Value> = round
        .boards()
        .iter()
        .map(|b| board_json(round, b))
        .collect();
    json!({
        "v": 1,
        "seq": round.last_seq,
        "event": round.info.event,
        "site": round.info.site,
        "round": round.info.round,
        "t": round.last_t as f64 / 1e6,
        "boards": boards,
    })
}
