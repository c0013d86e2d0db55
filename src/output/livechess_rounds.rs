//! The tournament side of the LiveChess API: `tournaments`, `tournament`, `round` and `game`,
//! over HTTP (`GET /api/v1.0/tournaments`, `/api/v1.0/tournament/ID`,
//! `/api/v1.0/round/ID/R`, `/api/v1.0/game/GAME`) and as WebSocket calls, in the shapes
//! LiveChess answers and its clients (e.g. the `livechess` Python client) read: exactly these
//! keys, no others.
//!
//! One tournament: this daemon's event (its id a UUID-shaped hash of the event name, stable
//! across restarts). Rounds are numbered from 1 up to the current round; a round's pairings
//! are its boards in board order (`nr` = board number, so `eboards[nr - 1]` is its e-board);
//! a game's id is `R.B`.

use serde_json::{Value, json};

use super::model::RoundState;
use super::render;

/// FNV-1a, 64 bits, from `seed`.
fn fnv(seed: u64, text: &str) -> u64 {
    text.bytes().fold(seed, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The tournament's id: a UUID-shaped hash of the event name.
pub fn tournament_id(round: &RoundState) -> String {
    let name = round.info.event.as_deref().unwrap_or("eboardd");
    let (a, b) = (
        fnv(0xcbf2_9ce4_8422_2325, name),
        fnv(0x84222325_cbf29ce4, name),
    );
    let hex = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

fn name(round: &RoundState) -> String {
    round.info.event.clone().unwrap_or_else(|| "eboardd".into())
}

/// `tournaments`: `[{uuid, description, rounds}]`.
pub fn tournaments(round: &RoundState) -> Value {
    json!([{
        "uuid": tournament_id(round),
        "description": name(round),
        "rounds": round.info.round,
    }])
}

/// `tournament`: `{uuid, name, description, location, country, rounds, eboards}`, `None` for
/// another id.
pub fn tournament(round: &RoundState, id: &str) -> Option<Value> {
    (id == tournament_id(round)).then(|| {
        let eboards: Vec<String> = round.boards().iter().map(render::serialnr).collect();
        json!({
            "uuid": tournament_id(round),
            "name": name(round),
            "description": name(round),
            "location": round.info.site,
            "country": null,
            "rounds": round.info.round,
            "eboards": eboards,
        })
    })
}

fn result(g: &crate::core::game::GameRecord) -> Value {
    match crate::pgn::result_of(g) {
        "1-0" => "WHITEWIN".into(),
        "0-1" => "BLACKWIN".into(),
        "1/2-1/2" => "DRAW".into(),
        _ => Value::Null,
    }
}

/// `round`: `{nr, date, pairings: [{nr, uuid, white, black, live, result}]}` of round `nr`
/// of tournament `id`, if both exist.
pub fn round(state: &RoundState, id: &str, nr: u32) -> Option<Value> {
    if id != tournament_id(state) || !state.round_numbers().contains(&nr) {
        return None;
    }
    let pairings: Vec<Value> = state
        .boards()
        .iter()
        .map(|b| {
            let p = state.pairing_in(nr, &b.id);
            let g = render::game_for(state, b, nr);
            let g = g.as_deref();
            json!({
                "nr": b.number,
                "uuid": format!("{nr}.{}", b.number),
                "white": render::lcc_player(&p.white),
                "black": render::lcc_player(&p.black),
                "live": g.is_some_and(|g| !g.ended()) && b.live(),
                "result": g.map_or(Value::Null, result),
            })
        })
        .collect();
    let date = state.info_of(nr).date.as_ref().map(|d| d.replace('.', "-"));
    Some(json!({ "nr": nr, "date": date, "pairings": pairings }))
}

/// `game`: `{chess960, result, comment, clock, moves}` of game `R.B`, if it exists.
pub fn game(state: &RoundState, game_id: &str) -> Option<Value> {
    let (r, b) = game_id.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 4 && s.bytes().all(|c| c.is_ascii_digit());
    if !digits(r) || !digits(b) {
        return None;
    }
    let (r, b): (u32, u32) = (r.parse().ok()?, b.parse().ok()?);
    if !state.round_numbers().contains(&r) {
        return None;
    }
    let board = state.board_numbered(b)?;
    let full = render::lcc_game_of(state, board, r);
    let pick = |k: &str| full.get(k).cloned().unwrap_or(Value::Null);
    Some(json!({
        "chess960": pick("chess960"),
        "result": pick("result"),
        "comment": pick("comment"),
        "clock": pick("clock"),
        "moves": pick("moves"),
    }))
}

/// Answer a WebSocket call of this family: `Some(Ok(param))`, `Some(Err(message))`, or `None`
/// when `call` is not one of `tournaments`, `tournament`, `round`, `game`. Parameters:
/// `tournament`: `{"uuid"}` (or `"id"`); `round`: `{"tournament"|"uuid"|"id", "round"|"nr"}`;
/// `game`: `{"uuid"|"id"}`.
pub fn call(state: &RoundState, call: &str, param: &Value) -> Option<Result<Value, UnknownObject>> {
    let text = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| param.get(*k).and_then(Value::as_str))
            .map(str::to_string)
    };
    Some(match call {
        "tournaments" => Ok(tournaments(state)),
        "tournament" => {
            let id = text(&["uuid", "id"]).unwrap_or_default();
            tournament(state, &id).ok_or(UnknownObject::Tournament(id))
        }
        "round" => {
            let id = text(&["tournament", "uuid", "id"]).unwrap_or_default();
            let nr = ["round", "nr"]
                .iter()
                .find_map(|k| param.get(*k).and_then(Value::as_u64))
                .unwrap_or(0);
            u32::try_from(nr)
                .ok()
                .and_then(|nr| round(state, &id, nr))
                .ok_or(UnknownObject::Round {
                    round: nr,
                    tournament: id,
                })
        }
        "game" => {
            let id = text(&["uuid", "id", "game"]).unwrap_or_default();
            game(state, &id).ok_or(UnknownObject::Game(id))
        }
        _ => return None,
    })
}

/// What a LiveChess tournament call asked for and this server does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnknownObject {
    /// No tournament with that id.
    #[error("unknown tournament {0:?}")]
    Tournament(String),
    /// No such round of that tournament.
    #[error("unknown round {round} of tournament {tournament:?}")]
    Round {
        /// The round number asked for.
        round: u64,
        /// The tournament id.
        tournament: String,
    },
    /// No game with that id.
    #[error("unknown game {0:?}")]
    Game(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{Hub, HubConfig, RoundInfo};

    #[test]
    fn a_configured_serial_is_the_serialnr_before_the_board_connects() {
        let info = RoundInfo {
            boards: vec!["board-1".into(), "board-2".into()],
            serials: [("board-1".to_string(), "41002".to_string())].into(),
            ..Default::default()
        };
        let hub = Hub::new(info, HubConfig::default());
        let id = hub.with_round(tournament_id);
        let t = hub.with_round(|r| tournament(r, &id)).unwrap();
        assert_eq!(t["eboards"], json!(["41002", "board-2"]));
        let eboards = hub.with_round(|r| {
            r.boards()
                .iter()
                .map(|b| render::eboard_object(r, b)["serialnr"].clone())
                .collect::<Vec<_>>()
        });
        assert_eq!(eboards, vec![json!("41002"), json!("board-2")]);
        assert!(hub.with_round(|r| {
            call(r, "round", &json!({"uuid": id, "nr": 1}))
                .unwrap()
                .is_ok()
        }));
        assert!(hub.with_round(|r| call(r, "eboards", &Value::Null).is_none()));
    }
}
