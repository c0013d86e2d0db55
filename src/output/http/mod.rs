//! The HTTP side: JSON snapshots, PGN, the event stream over WebSocket and SSE with resume,
//! relay files, operator actions behind a token, and the arbiter page.
//!
//! The rooms: `cache` (ETag and `304` of a rendered body), `auth` (the token, and which hub a
//! request sees), `body` (reading and parsing a request body), `events` (the WebSocket and
//! SSE event streams and their one lag policy), `boards` (the page, health, metrics, boards,
//! PGN and relay files), `actions` (operator actions on a board), `rounds` (the round
//! routes) and `hall` (the hall check); the router and what they share are here.

mod actions;
mod auth;
mod boards;
mod body;
mod cache;
mod events;
mod hall;
mod rounds;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::hub::Hub;
#[cfg(feature = "test-support")]
pub use actions::parse_bodies_for_fuzzing;
use actions::{acknowledge, correct, new_game, set_players, set_result};
pub use boards::valid_board_id;
use boards::{
    board, board_claim, board_pgn, boards, games_pgn, health, index, metrics, relay_file,
};
pub use body::{MAX_BODY, MAX_PAIRINGS_BODY};
use events::{sse_events, ws_events};
use rounds::{
    load_round, round_games_pgn, round_matches, round_results_csv, round_results_res,
    round_results_trf, round_view, rounds,
};
use tokio_util::sync::CancellationToken;

pub use super::files::{JSON_TYPE, PGN_TYPE};

#[derive(Clone)]
struct App {
    /// The live hub: operator actions, and every view of a request that carries the token.
    hub: Hub,
    /// The delayed public hub (`delay_secs`), for every request without the token.
    public: Option<Hub>,
    token: Option<Arc<str>>,
    stop: CancellationToken,
    allowed_origins: Arc<[String]>,
    body_timeout: Duration,
    round_file: Option<Arc<std::path::Path>>,
    lichess: Option<Arc<super::lichess::LichessReport>>,
}

/// What the HTTP API is built from.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The hub (live).
    pub hub: Hub,
    /// With a broadcast delay: the delayed hub that requests without the token see.
    pub public: Option<Hub>,
    /// The secret that state-changing requests must carry (without one they are refused).
    pub token: Option<String>,
    /// Event streams end when it turns true.
    pub stop: CancellationToken,
    /// Origins besides the server's own allowed to open the event-stream WebSocket.
    pub allowed_origins: Vec<String>,
    /// Time a request body has to arrive in full.
    pub body_timeout: Duration,
    /// Where a loaded round is saved (`None`: not saved).
    pub round_file: Option<std::path::PathBuf>,
    /// The lichess pusher's report, shown in health (`None`: not pushing).
    pub lichess: Option<Arc<super::lichess::LichessReport>>,
}

/// The router of the HTTP API with default limits and no foreign origin allowed.
pub fn router(hub: Hub, token: Option<String>, stop: CancellationToken) -> Router {
    router_with(HttpOptions {
        hub,
        public: None,
        token,
        stop,
        allowed_origins: Vec::new(),
        body_timeout: Duration::from_secs(10),
        round_file: None,
        lichess: None,
    })
}

/// The router of the HTTP API.
pub fn router_with(o: HttpOptions) -> Router {
    // Public pages: the delayed view when there is one.
    let overlays = super::overlay::router(o.public.clone().unwrap_or_else(|| o.hub.clone()));
    let app = App {
        hub: o.hub,
        public: o.public,
        token: o.token.filter(|t| !t.is_empty()).map(Arc::from),
        stop: o.stop,
        allowed_origins: o.allowed_origins.into(),
        body_timeout: o.body_timeout,
        round_file: o.round_file.map(Arc::from),
        lichess: o.lichess,
    };
    Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/api/v1/health", get(health))
        .route("/api/v1/boards", get(boards))
        .route("/api/v1/boards/{board}", get(board))
        .route("/api/v1/boards/{board}/game.pgn", get(board_pgn))
        .route("/api/v1/boards/{board}/claim", get(board_claim))
        .route("/api/v1/games.pgn", get(games_pgn))
        .route("/api/v1/events", get(ws_events))
        .route("/api/v1/events/sse", get(sse_events))
        .route("/api/v1/boards/{board}/result", post(set_result))
        .route("/api/v1/boards/{board}/players", post(set_players))
        .route("/api/v1/boards/{board}/new-game", post(new_game))
        .route("/api/v1/boards/{board}/correct", post(correct))
        .route(
            "/api/v1/boards/{board}/irregularities/{id}/ack",
            post(acknowledge),
        )
        .route("/api/v1/round", post(load_round))
        .route("/api/v1/round/check", get(hall::round_check))
        .route("/api/v1/rounds", get(rounds))
        .route("/api/v1/rounds/{round}", get(round_view))
        .route("/api/v1/rounds/{round}/games.pgn", get(round_games_pgn))
        .route("/api/v1/rounds/{round}/matches", get(round_matches))
        .route("/api/v1/rounds/{round}/results.trf", get(round_results_trf))
        .route("/api/v1/rounds/{round}/results.csv", get(round_results_csv))
        .route("/api/v1/rounds/{round}/results.res", get(round_results_res))
        .route("/relay/{*path}", get(relay_file))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(app)
        .layer(axum::middleware::map_response(json_errors))
        .merge(overlays)
}

/// Errors made by the framework (a bad path or query, a wrong method) in the JSON error shape.
pub(crate) async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, 4096).await {
        Ok(b) if !b.is_empty() => String::from_utf8_lossy(&b).trim().to_string(),
        _ => status.canonical_reason().unwrap_or("error").to_string(),
    };
    let mut out = error(status, text);
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

/// A refused request (boxed: a response is large).
type Reject = Box<Response>;

/// An error as JSON `{"error": "..."}`, boxed.
fn reject(status: StatusCode, message: impl Into<String>) -> Reject {
    Box::new(error(status, message))
}

/// An error as JSON `{"error": "..."}`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = json!({ "error": message.into() }).to_string();
    (status, [(header::CONTENT_TYPE, JSON_TYPE)], body).into_response()
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "no such resource")
}
