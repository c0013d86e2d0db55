//! The read routes: the page, health, metrics, the boards as JSON, PGN and relay files.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::cache::{cached, json_response};
use super::{App, JSON_TYPE, PGN_TYPE, Reject, error, reject};
use crate::output::hub::Hub;
use crate::output::{relay, render};

/// The arbiter and monitor page.
const INDEX_HTML: &str = include_str!("../../../web/index.html");

pub(super) async fn index() -> Response {
    ([(header::CACHE_CONTROL, "no-cache")], Html(INDEX_HTML)).into_response()
}

pub(super) async fn health(State(app): State<App>, headers: HeaderMap) -> Response {
    let hub = app.view(&headers, None);
    // Not ready while the daemon still rebuilds its boards from their captures: a monitoring
    // check or a load balancer must not take a half-built daemon for a ready one.
    let recovering = app.hub.recovering();
    let status = if recovering.is_some() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    // The parts failing now (a configured port that cannot open, the capture directory, the
    // MQTT broker, lichess), with their reasons: `ok` is false while one does.
    let failing = app.hub.metrics().map(|m| m.faults()).unwrap_or_default();
    let body = json!({
        "ok": recovering.is_none() && failing.is_empty(),
        "failing": failing,
        "state": if recovering.is_some() { "recovering" } else { "ready" },
        "recovery": recovering.map(|(done, total)| json!({"done": done, "total": total})),
        "earlier_games": app.hub.backfill().map(|(done, total)| json!({"boards_done": done, "boards": total})),
        "seq": hub.last_seq(),
        "subscribers": hub.subscribers(),
        "control": app.token.is_some(),
        "delayed": app.public.as_ref().is_some_and(|p| std::ptr::eq(hub, p)),
        "lichess": app.lichess.as_ref().map(|l| l.snapshot()),
        "link_problems": app.hub.link_problems(),
        "bluetooth": app.hub.bluetooth(),
    });
    (
        status,
        [
            (header::CONTENT_TYPE, JSON_TYPE),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body.to_string(),
    )
        .into_response()
}

/// `GET /metrics`: the live daemon's metrics in the Prometheus text format (see
/// [`crate::output::metrics`]); 404 on a server without them (no daemon behind it).
pub(super) async fn metrics(State(app): State<App>) -> Response {
    match app.hub.metrics() {
        Some(m) => (
            [
                (header::CONTENT_TYPE, crate::output::metrics::CONTENT_TYPE),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            m.encode(&crate::output::hall::gauges(&app.hub)),
        )
            .into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            "no metrics here: only the live daemon (eboardd run, eboardd demo) has them",
        ),
    }
}

/// A board id from a URL: 1–64 characters of `A-Z a-z 0-9 . _ : -`.
pub fn valid_board_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
}

pub(super) fn check_board(app: &App, id: &str) -> Result<(), Reject> {
    if !valid_board_id(id) {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            "a board id has 1 to 64 characters: letters, digits, '.', '_', ':' or '-'",
        ));
    }
    if app.hub.with_round(|r| r.board(id).is_none()) {
        return Err(reject(StatusCode::NOT_FOUND, format!("no board {id:?}")));
    }
    Ok(())
}

/// The id of the board a read route names: a board id, else a board number (as the overlay
/// takes it, [`crate::output::overlay::resolve`]).
fn resolve_board(hub: &Hub, key: &str) -> Result<String, Reject> {
    if !valid_board_id(key) {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            "a board id has 1 to 64 characters: letters, digits, '.', '_', ':' or '-'",
        ));
    }
    hub.with_round(|r| crate::output::overlay::resolve(r, key).map(|b| b.id.clone()))
        .ok_or_else(|| {
            reject(
                StatusCode::NOT_FOUND,
                format!("no board {key:?} (a board id, or a board number)"),
            )
        })
}

pub(super) async fn boards(State(app): State<App>, headers: HeaderMap) -> Response {
    // One rendering per change of the round, however many clients poll.
    cached(
        &headers,
        JSON_TYPE,
        app.view(&headers, None).snapshot_text(),
    )
}

pub(super) async fn board(
    State(app): State<App>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Response {
    let hub = app.view(&headers, None);
    let id = match resolve_board(hub, &key) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    match hub.board_snapshot(&id) {
        Some(v) => json_response(&headers, &v),
        None => error(StatusCode::NOT_FOUND, format!("no board {id:?}")),
    }
}

pub(super) async fn board_pgn(
    State(app): State<App>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Response {
    let hub = app.view(&headers, None);
    let id = match resolve_board(hub, &key) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let body = hub.with_round(|r| {
        r.board(&id)
            .map(|b| render::board_pgn(r, b))
            .unwrap_or_default()
    });
    cached(&headers, PGN_TYPE, body)
}

/// The query of the claims helper: the ply to look at and a move written but not made.
#[derive(Debug, Deserialize)]
pub(super) struct ClaimQuery {
    /// Moves made before the position looked at (default: all made so far).
    #[serde(default)]
    ply: Option<String>,
    /// The intended move (9.2.1.1), SAN or UCI.
    #[serde(default, rename = "move")]
    intended: Option<String>,
}

/// `GET /api/v1/boards/{board}/claim[?ply=N&move=M]`: whether a threefold-repetition or
/// fifty-move claim in the board's current game is correct ([`crate::core::claims`]).
pub(super) async fn board_claim(
    State(app): State<App>,
    Path(key): Path<String>,
    Query(q): Query<ClaimQuery>,
    headers: HeaderMap,
) -> Response {
    let hub = app.view(&headers, None);
    let id = match resolve_board(hub, &key) {
        Ok(id) => id,
        Err(r) => return *r,
    };
    let ply = match q.ply.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        None => None,
        Some(s) => match s.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("ply {s:?} is not a number of moves made (0 or more)"),
                );
            }
        },
    };
    let answer = hub.with_round(|r| {
        r.board(&id).and_then(|b| b.game()).map(|g| {
            crate::core::claims::check_claim(g, ply, q.intended.as_deref()).map(|c| (g.number, c))
        })
    });
    match answer {
        None => error(
            StatusCode::NOT_FOUND,
            format!("board {id:?} has no current game"),
        ),
        Some(Err(e)) => error(StatusCode::BAD_REQUEST, e.to_string()),
        Some(Ok((game, c))) => {
            let mut v = serde_json::to_value(&c).unwrap_or_default();
            if let Some(o) = v.as_object_mut() {
                o.insert("board".into(), json!(id));
                o.insert("game".into(), json!(game));
            }
            (
                [
                    (header::CONTENT_TYPE, JSON_TYPE),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                v.to_string(),
            )
                .into_response()
        }
    }
}

#[derive(Debug, Deserialize)]
pub(super) struct GamesQuery {
    /// Every game of every board (in start order), not only the round's current games.
    #[serde(default)]
    all: Option<String>,
}

pub(super) async fn games_pgn(
    State(app): State<App>,
    Query(q): Query<GamesQuery>,
    headers: HeaderMap,
) -> Response {
    let all = matches!(q.all.as_deref(), Some("1" | "true" | "yes"));
    let body = app.view(&headers, None).with_round(|r| {
        if all {
            render::all_games_pgn(r)
        } else {
            render::round_pgn(r)
        }
    });
    cached(&headers, PGN_TYPE, body)
}

pub(super) async fn relay_file(
    State(app): State<App>,
    Path(path): Path<String>,
    headers: HeaderMap,
) -> Response {
    match app
        .view(&headers, None)
        .with_round(|r| relay::render_path(r, &path))
    {
        Some((content_type, body)) => cached(&headers, content_type, body),
        None => error(StatusCode::NOT_FOUND, format!("no relay file {path:?}")),
    }
}
