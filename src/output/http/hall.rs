//! `GET /api/v1/round/check`: the hall check ([`crate::output::hall`]).

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::{App, JSON_TYPE, error};

/// The query of the hall check.
#[derive(Debug, Deserialize)]
pub(super) struct CheckQuery {
    /// The Chess960 position announced for the round (0–959; default the standard start, 518).
    #[serde(default)]
    chess960: Option<String>,
}

/// `GET /api/v1/round/check[?chess960=N]`: every board of the round checked before it starts.
/// It reads the boards as they stand now, so under a broadcast delay only a request with the
/// token gets it.
pub(super) async fn round_check(
    State(app): State<App>,
    Query(q): Query<CheckQuery>,
    headers: HeaderMap,
) -> Response {
    if !std::ptr::eq(app.view(&headers, None), &app.hub) {
        return error(
            StatusCode::FORBIDDEN,
            "the hall check shows the boards live: with a broadcast delay it needs the token",
        );
    }
    let chess960 = match q
        .chess960
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        None => None,
        Some(s) => match s.parse::<u16>() {
            Ok(n) if n < 960 => Some(n),
            _ => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("chess960 {s:?} is not a Chess960 position number (0 to 959)"),
                );
            }
        },
    };
    let check = crate::output::hall::round_check(&app.hub, chess960);
    let body = serde_json::to_string(&check).unwrap_or_default();
    (
        [
            (header::CONTENT_TYPE, JSON_TYPE),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}
