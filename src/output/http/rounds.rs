//! The round routes: loading a round's pairings (behind the token), the rounds, one round and
//! its games as PGN.

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::auth::authorised;
use super::body::{MAX_PAIRINGS_BODY, read_body};
use super::cache::{cached, json_response};
use super::{App, JSON_TYPE, PGN_TYPE, Reject, error, reject};
use crate::output::hub::Hub;
use crate::output::render;
use crate::output::rounds::{ResultsFileError, ResultsFormat};

#[derive(Debug, Deserialize)]
pub(super) struct LoadRoundQuery {
    round: Option<String>,
    format: Option<String>,
    pairs: Option<String>,
}

/// The `pairs` of a load: a pairing engine's list as `W-B,W-B,...` (`N-0` a bye), in board
/// order.
fn query_pairs(raw: &str) -> Result<Vec<crate::round::pairs::Pair>, String> {
    raw.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            let (w, b) = p.trim().split_once('-').ok_or_else(|| {
                format!("pairs: {p:?} is not a pair of start ranks \"white-black\"")
            })?;
            let n = |s: &str| {
                s.trim()
                    .parse::<u32>()
                    .map_err(|_| format!("pairs: {s:?} is not a start rank"))
            };
            Ok(crate::round::pairs::Pair {
                white: n(w)?,
                black: n(b)?,
            })
        })
        .collect()
}

/// `POST /api/v1/round?round=R[&format=trf|csv][&pairs=W-B,...]` with a pairings file as the
/// body (with `pairs`: the TRF the list was paired from): the token is checked before a byte
/// of the body is read; a bad file changes nothing.
pub(super) async fn load_round(
    State(app): State<App>,
    Query(q): Query<LoadRoundQuery>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if let Err(r) = authorised(&app, &headers) {
        return *r;
    }
    let round = match q.round.as_deref().map(|r| r.trim().parse::<u32>()) {
        Some(Ok(r)) if (1..=999).contains(&r) => r,
        _ => {
            return error(
                StatusCode::BAD_REQUEST,
                "give the round number: ?round=R (1 to 999)",
            );
        }
    };
    let format = match q.format.as_deref().map(str::parse::<crate::round::Format>) {
        Some(Err(e)) => return error(StatusCode::BAD_REQUEST, e),
        Some(Ok(f)) => Some(f),
        None => None,
    };
    let pairs = match q.pairs.as_deref().map(query_pairs) {
        Some(Err(e)) => return error(StatusCode::BAD_REQUEST, e),
        Some(Ok(p)) => Some(p),
        None => None,
    };
    if pairs.is_some() && format.is_some_and(|f| f != crate::round::Format::Trf) {
        return error(
            StatusCode::BAD_REQUEST,
            "a pairing list goes with the TRF it was paired from: format=trf",
        );
    }
    let bytes = match read_body(&app, &headers, body, MAX_PAIRINGS_BODY).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let format = format.unwrap_or_else(|| crate::round::Format::guess(&bytes));
    let loaded = match &pairs {
        Some(p) => crate::output::rounds::load_paired(&app.hub, round, &bytes, p),
        None => crate::output::rounds::load(&app.hub, format, round, &bytes),
    };
    match loaded {
        Ok(v) => {
            if let Some(path) = &app.round_file
                && let Err(e) = crate::output::rounds::save(&app.hub, path)
            {
                tracing::warn!(
                    "round {round} loaded but not saved to {}: {e}",
                    path.display()
                );
            }
            tracing::info!("round {round} loaded");
            (
                [(header::CONTENT_TYPE, JSON_TYPE)],
                json!({"ok": true, "round": v}).to_string(),
            )
                .into_response()
        }
        Err(e) => error(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
    }
}

pub(super) async fn rounds(State(app): State<App>, headers: HeaderMap) -> Response {
    let hub = app.view(&headers, None);
    json_response(
        &headers,
        &hub.with_round(crate::output::rounds::rounds_json),
    )
}

fn round_number(hub: &Hub, raw: &str) -> Result<u32, Reject> {
    raw.parse::<u32>()
        .ok()
        .filter(|n| hub.with_round(|r| r.round_numbers().contains(n)))
        .ok_or_else(|| reject(StatusCode::NOT_FOUND, format!("no round {raw:?}")))
}

/// Answer with `then` for the round `raw` names in the view the request may see; 404 when
/// there is no such round.
fn with_round_number(
    app: &App,
    headers: &HeaderMap,
    raw: &str,
    then: impl FnOnce(&Hub, u32) -> Response,
) -> Response {
    let hub = app.view(headers, None);
    match round_number(hub, raw) {
        Ok(n) => then(hub, n),
        Err(r) => *r,
    }
}

pub(super) async fn round_view(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_round_number(&app, &headers, &raw, |hub, n| {
        match hub.with_round(|r| crate::output::rounds::round_json(r, n)) {
            Some(v) => json_response(&headers, &v),
            None => error(StatusCode::NOT_FOUND, format!("no round {n}")),
        }
    })
}

/// `GET /api/v1/rounds/{R}/matches`: round R's team matches
/// ([`crate::output::rounds::matches_json`]).
pub(super) async fn round_matches(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_round_number(&app, &headers, &raw, |hub, n| {
        match hub.with_round(|r| crate::output::rounds::matches_json(r, n)) {
            Some(v) => json_response(&headers, &v),
            None => error(StatusCode::NOT_FOUND, format!("no round {n}")),
        }
    })
}

pub(super) async fn round_games_pgn(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_round_number(&app, &headers, &raw, |hub, n| {
        let body = hub.with_round(|r| render::round_pgn_of(r, n));
        cached(&headers, PGN_TYPE, body)
    })
}

/// `GET /api/v1/rounds/{R}/results.trf|csv|res`: round R's confirmed results
/// ([`crate::output::rounds::results_file`]); `X-Round-Complete` says whether every board is
/// confirmed. 409 for a `.trf`/`.res` of a round not loaded from a TRF.
fn round_results(app: &App, headers: &HeaderMap, raw: &str, format: ResultsFormat) -> Response {
    with_round_number(app, headers, raw, |hub, n| {
        let (file, complete) = hub.with_round(|r| {
            (
                crate::output::rounds::results_file(r, n, format),
                r.complete(n),
            )
        });
        let (ext, kind) = match format {
            ResultsFormat::Trf => ("trf", "text/plain"),
            ResultsFormat::Csv => ("csv", "text/csv; charset=utf-8"),
            ResultsFormat::Res => ("res", "text/plain; charset=utf-8"),
        };
        match file {
            Ok(body) => (
                [
                    (header::CONTENT_TYPE, kind.to_string()),
                    (
                        header::CONTENT_DISPOSITION,
                        format!("attachment; filename=\"round-{n}-results.{ext}\""),
                    ),
                    (
                        header::HeaderName::from_static("x-round-complete"),
                        complete.to_string(),
                    ),
                ],
                body,
            )
                .into_response(),
            Err(e @ ResultsFileError::NoTrf(_)) => error(StatusCode::CONFLICT, e.to_string()),
            Err(e) => error(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()),
        }
    })
}

pub(super) async fn round_results_trf(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    round_results(&app, &headers, &raw, ResultsFormat::Trf)
}

pub(super) async fn round_results_csv(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    round_results(&app, &headers, &raw, ResultsFormat::Csv)
}

pub(super) async fn round_results_res(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    round_results(&app, &headers, &raw, ResultsFormat::Res)
}

#[cfg(test)]
mod tests {
    use crate::round::pairs::Pair;

    #[test]
    fn the_pairs_of_a_load_query() {
        assert_eq!(
            super::query_pairs("3-5,2-4, 7-0,").unwrap(),
            [
                Pair { white: 3, black: 5 },
                Pair { white: 2, black: 4 },
                Pair { white: 7, black: 0 },
            ]
        );
        assert!(super::query_pairs("3-5,2").unwrap_err().contains("\"2\""));
        assert!(super::query_pairs("3-x").unwrap_err().contains("\"x\""));
    }
}
