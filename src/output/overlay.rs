//! Overlays for streams and venue screens: `GET /overlay/BOARD` (one board: diagram, players,
//! both clocks, last move, result), `GET /overlay/round` (every board of the round on one
//! strip) and `GET /overlay/match` (the round's team matches and their scores), on a
//! transparent background for a browser source in OBS. Static pages embedded in the binary
//! (`web/overlay.html`, `web/overlay-round.html`, `web/overlay-match.html`, which polls
//! `GET /api/v1/rounds/R/matches`); the first two's script (`web/overlay.js`) and
//! the chess drawing shared with the arbiter page (`web/chess.js`, served here as
//! `/web/chess.js`) read the JSON API and the event stream like any other client.
//!
//! The overlays are public pages: they carry no token, so under a broadcast delay they are
//! answered from, and their scripts see, the delayed view (the hub given to [`router`]).

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::hub::Hub;
use super::model::{BoardState, RoundState};

/// The one-board overlay.
const BOARD_HTML: &str = include_str!("../../web/overlay.html");
/// The round's strip.
const ROUND_HTML: &str = include_str!("../../web/overlay-round.html");
/// The round's team matches.
const MATCH_HTML: &str = include_str!("../../web/overlay-match.html");
/// The overlays' script.
const OVERLAY_JS: &str = include_str!("../../web/overlay.js");
/// Pieces, diagram and clock formatting, shared by the arbiter page and the overlays.
const CHESS_JS: &str = include_str!("../../web/chess.js");

/// Content type of the scripts.
const JS_TYPE: &str = "text/javascript; charset=utf-8";
/// Content type of the pages.
const HTML_TYPE: &str = "text/html; charset=utf-8";

/// The routes of the overlays and of the shared scripts, answered from `public`: the delayed
/// public hub when a broadcast delay is set, else the live hub.
pub fn router(public: Hub) -> Router {
    Router::new()
        .route("/overlay/round", get(round))
        .route(
            "/overlay/match",
            get(|| async { asset(HTML_TYPE, MATCH_HTML) }),
        )
        .route("/overlay/{board}", get(board))
        .route("/web/chess.js", get(|| async { asset(JS_TYPE, CHESS_JS) }))
        .route(
            "/web/overlay.js",
            get(|| async { asset(JS_TYPE, OVERLAY_JS) }),
        )
        .with_state(public)
}

/// The board an overlay URL names: a board id, else a board number.
pub fn resolve<'a>(round: &'a RoundState, key: &str) -> Option<&'a BoardState> {
    round.board(key).or_else(|| {
        key.parse::<u32>()
            .ok()
            .filter(|&n| n > 0)
            .and_then(|n| round.board_numbered(n))
    })
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

async fn round() -> Response {
    asset(HTML_TYPE, ROUND_HTML)
}

async fn board(State(hub): State<Hub>, Path(key): Path<String>) -> Response {
    if hub.with_round(|r| resolve(r, &key).is_some()) {
        return asset(HTML_TYPE, BOARD_HTML);
    }
    let shown: String = key.chars().take(64).collect();
    (
        StatusCode::NOT_FOUND,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        format!(
            "no board {shown:?}: an overlay is /overlay/BOARD (a board id or number), /overlay/round or /overlay/match\n"
        ),
    )
        .into_response()
}
