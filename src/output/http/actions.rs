//! Operator actions on one board, behind the token: result, players, new game, corrections and
//! acknowledged irregularities.

use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Path, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::auth::authorised;
use super::boards::check_board;
use super::body::{MAX_BODY, parse_body, read_body};
use super::{App, JSON_TYPE, Reject, error, reject};
use crate::core::observation::OperatorAction;
use crate::output::hub::Hub;
use crate::output::model::{GameResult, Pairing};
use crate::output::render;

/// Parse `body` as each operator action's body would be, and apply a parsed pairing to `hub`
/// (for the fuzz target of the HTTP handlers): the number of bodies accepted.
#[cfg(feature = "test-support")]
pub fn parse_bodies_for_fuzzing(hub: &Hub, board: &str, body: &[u8]) -> usize {
    let mut accepted = 0;
    if parse_body::<ResultBody>(body).is_ok() {
        accepted += 1;
    }
    if let Ok(b) = parse_body::<NewGameBody>(body) {
        accepted += 1;
        if let Some(fen) = &b.fen {
            let _ = render::valid_fen(fen);
        }
    }
    if parse_body::<OperatorAction>(body).is_ok() {
        accepted += 1;
    }
    if let Ok(p) = parse_body::<Pairing>(body)
        && hub.set_pairing(board, p).is_ok()
    {
        accepted += 1;
    }
    accepted
}

/// An operator's POST to one board (`/api/v1/boards/{board}/...`), its body not yet read.
pub(super) struct BoardPost {
    app: App,
    id: String,
    headers: HeaderMap,
    body: Body,
}

impl FromRequest<App> for BoardPost {
    type Rejection = Response;

    async fn from_request(req: Request, app: &App) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let Path(id) = Path::<String>::from_request_parts(&mut parts, app)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(BoardPost {
            app: app.clone(),
            id,
            headers: parts.headers,
            body,
        })
    }
}

impl BoardPost {
    /// Check the token and the board, then read and parse the body and answer with `then`;
    /// a refusal on the way is the answer.
    async fn run<T: serde::de::DeserializeOwned>(
        self,
        then: impl FnOnce(&App, &str, T) -> Response,
    ) -> Response {
        let parsed = async {
            authorised(&self.app, &self.headers)?;
            check_board(&self.app, &self.id)?;
            let bytes = read_body(&self.app, &self.headers, self.body, MAX_BODY).await?;
            parse_body(&bytes)
        };
        match parsed.await {
            Ok(b) => then(&self.app, &self.id, b),
            Err(r) => *r,
        }
    }
}

/// `{"ok": true}` when the hub took the call, else its error with the status `status` gives.
fn done<E: std::fmt::Display>(r: Result<(), E>, status: impl FnOnce(&E) -> StatusCode) -> Response {
    match r {
        Ok(()) => ok(),
        Err(e) => error(status(&e), e.to_string()),
    }
}

fn ok() -> Response {
    (
        [(header::CONTENT_TYPE, JSON_TYPE)],
        json!({"ok": true}).to_string(),
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResultBody {
    /// The result the arbiter sets (`1-0`, `0-1`, `1/2-1/2`, `+`, `-`, `--`).
    #[serde(default)]
    result: Option<String>,
    /// `true`: confirm the result the board's game ended with.
    #[serde(default)]
    confirm: Option<bool>,
    /// The round (default: the current one).
    #[serde(default)]
    round: Option<u32>,
}

impl ResultBody {
    /// The result the arbiter sets (`None`: the one the game ended with is confirmed).
    fn wanted(&self) -> Result<Option<GameResult>, Reject> {
        match (&self.result, self.confirm) {
            (Some(s), None) => match s.parse::<GameResult>() {
                Ok(r) => Ok(Some(r)),
                Err(e) => Err(reject(StatusCode::BAD_REQUEST, e.to_string())),
            },
            (None, Some(true)) => Ok(None),
            _ => Err(reject(
                StatusCode::BAD_REQUEST,
                "give either {\"result\": \"1-0\"} (or 0-1, 1/2-1/2, +, -, --) or \
                 {\"confirm\": true}",
            )),
        }
    }
}

/// What a board has in a round, for the arbiter's result.
struct BoardInRound {
    /// Its game of the round is running.
    running: bool,
    /// The result its game of the round ended with.
    proposed: Option<GameResult>,
}

impl BoardInRound {
    /// Board `id` in round `round`: refused when it has neither a game nor players there.
    fn of(hub: &Hub, id: &str, round: u32) -> Result<Self, Reject> {
        let on = hub.with_round(|r| {
            let b = r.board(id)?;
            let game = render::game_for(r, b, round);
            let present = game.is_some() || r.info_of(round).pairings.contains_key(id);
            present.then(|| BoardInRound {
                running: game.as_ref().is_some_and(|g| !g.ended()),
                proposed: game
                    .as_ref()
                    .and_then(|g| GameResult::played(crate::pgn::result_of(g))),
            })
        });
        on.ok_or_else(|| {
            reject(
                StatusCode::CONFLICT,
                format!("board {id:?} has no game and no players in round {round}"),
            )
        })
    }

    /// The result to record: the one `wanted` (a running game ends with it when it is a
    /// played result), or the one the game ended with.
    fn result(
        &self,
        hub: &Hub,
        id: &str,
        round: u32,
        wanted: Option<GameResult>,
    ) -> Result<GameResult, Reject> {
        match (wanted, self.proposed) {
            (Some(r), _) => {
                if self.running && r.is_played() {
                    let action = OperatorAction::SetResult {
                        result: r.as_str().to_string(),
                    };
                    if let Err(e) = hub.operator(id, action) {
                        return Err(reject(StatusCode::SERVICE_UNAVAILABLE, e.to_string()));
                    }
                }
                Ok(r)
            }
            (None, Some(r)) => Ok(r),
            (None, None) => Err(reject(
                StatusCode::CONFLICT,
                format!(
                    "board {id:?} has no result to confirm in round {round}: its game has not \
                     ended (set one with {{\"result\": \"1-0\"}})"
                ),
            )),
        }
    }
}

/// The arbiter's result of a board: `{"result": "1-0"}` sets it (a running game of the round
/// ends with it, as before), `{"confirm": true}` confirms the one its game ended with; either
/// way the round records it as confirmed (`"round": R` for an earlier round), and the round
/// file keeps it.
pub(super) async fn set_result(post: BoardPost) -> Response {
    post.run(|app, id, b: ResultBody| {
        let (current, rounds) = app.hub.with_round(|r| (r.info.round, r.round_numbers()));
        let round = b.round.unwrap_or(current);
        if !rounds.contains(&round) {
            return error(StatusCode::NOT_FOUND, format!("no round {round}"));
        }
        let result = b.wanted().and_then(|wanted| {
            BoardInRound::of(&app.hub, id, round)?.result(&app.hub, id, round, wanted)
        });
        let result = match result {
            Ok(r) => r,
            Err(e) => return *e,
        };
        app.hub.set_result(round, id, result);
        if let Some(path) = &app.round_file
            && let Err(e) = crate::output::rounds::save(&app.hub, path)
        {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "the result of {id} is recorded but not saved to {}: {e}",
                    path.display()
                ),
            );
        }
        tracing::info!("round {round}, {id}: result {} confirmed", result.as_str());
        (
            [(header::CONTENT_TYPE, JSON_TYPE)],
            json!({
                "ok": true,
                "round": round,
                "board": id,
                "result": result.as_str(),
                "confirmed": true,
            })
            .to_string(),
        )
            .into_response()
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewGameBody {
    #[serde(default)]
    fen: Option<String>,
}

pub(super) async fn new_game(post: BoardPost) -> Response {
    post.run(|app, id, b: NewGameBody| {
        if let Some(fen) = &b.fen
            && !render::valid_fen(fen)
        {
            return error(
                StatusCode::BAD_REQUEST,
                format!("not a legal position: {fen:?}"),
            );
        }
        let action = OperatorAction::NewGame { fen: b.fen };
        operate(app, id, action)
    })
    .await
}

/// Hand `action` to the board's driver: 503 when the board cannot take it now.
fn operate(app: &App, id: &str, action: OperatorAction) -> Response {
    done(app.hub.operator(id, action), |_| {
        StatusCode::SERVICE_UNAVAILABLE
    })
}

/// An arbiter's correction: the body is an operator action (`{"action":"take_back","ply":4}`,
/// see [`OperatorAction`]); 400 with the reason when it is impossible (nothing changed).
pub(super) async fn correct(post: BoardPost) -> Response {
    post.run(|app, id, action: OperatorAction| done(app.hub.correct(id, action), |e| e.status()))
        .await
}

/// Players set by the arbiter: captured first (the hub's [`crate::output::Control`]), then
/// shown, and kept in the round file so that a restart keeps them.
pub(super) async fn set_players(post: BoardPost) -> Response {
    post.run(|app, id, p: Pairing| {
        let set = app.hub.set_pairing(id, p);
        if set.is_ok()
            && let Some(path) = &app.round_file
            && let Err(e) = crate::output::rounds::save(&app.hub, path)
        {
            tracing::warn!(
                "players of {id} set but not saved to {}: {e}",
                path.display()
            );
        }
        done(set, |e| match e {
            crate::output::HubError::Control(c) => c.status(),
            _ => StatusCode::BAD_REQUEST,
        })
    })
    .await
}

pub(super) async fn acknowledge(
    State(app): State<App>,
    Path((id, irr)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = authorised(&app, &headers).and_then(|_| check_board(&app, &id)) {
        return *r;
    }
    let Ok(irr) = irr.parse::<u64>() else {
        return error(StatusCode::BAD_REQUEST, "an irregularity id is a number");
    };
    done(app.hub.acknowledge(&id, irr), |_| StatusCode::NOT_FOUND)
}
