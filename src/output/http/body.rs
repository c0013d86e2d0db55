//! Request bodies: read within a size cap and a deadline once the token was checked, and
//! parsed as a JSON object.

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::Value;

use super::{App, Reject, reject};

/// Largest request body of an operator action.
pub const MAX_BODY: usize = 16 * 1024;
/// Largest request body of a route that takes a whole pairings file (a route with its own,
/// larger cap: read it with `read_body(.., MAX_PAIRINGS_BODY)` after the token check, like
/// every other body).
pub const MAX_PAIRINGS_BODY: usize = 1024 * 1024;

/// Read a request body of at most `limit` bytes within the body deadline. Called only once
/// the token was checked, so an unauthenticated client never gets a byte of its body read;
/// a `Content-Length` over the limit is refused before reading.
pub(super) async fn read_body(
    app: &App,
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, Reject> {
    let too_large = || {
        reject(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body over {} KiB", limit / 1024),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let read = async {
        let mut stream = body.into_data_stream();
        let mut buf = bytes::BytesMut::new();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk
                .map_err(|e| reject(StatusCode::BAD_REQUEST, format!("reading the body: {e}")))?;
            if buf.len() + chunk.len() > limit {
                return Err(too_large());
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(buf.freeze())
    };
    match tokio::time::timeout(app.body_timeout, read).await {
        Ok(r) => r,
        Err(_) => Err(reject(
            StatusCode::REQUEST_TIMEOUT,
            format!("the body did not arrive within {:?}", app.body_timeout),
        )),
    }
}

/// Parse a JSON body, which must be an object (or empty: `{}`), with a clear error.
pub(super) fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Reject> {
    if body.len() > MAX_BODY {
        return Err(reject(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body over 16 KiB",
        ));
    }
    let body = std::str::from_utf8(body)
        .map_err(|_| reject(StatusCode::BAD_REQUEST, "the body is not UTF-8"))?;
    let body = if body.trim().is_empty() { "{}" } else { body };
    let value: Value = serde_json::from_str(body)
        .map_err(|e| reject(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))?;
    if !value.is_object() {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object",
        ));
    }
    serde_json::from_value(value)
        .map_err(|e| reject(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
}
