//! Rendered bodies with an `ETag`: `304 Not Modified` to a client that has the same already.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use axum::body::Body;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::Value;

use super::JSON_TYPE;

/// A body with a content type, `Cache-Control: no-cache` and an `ETag`, answering 304 to a
/// matching `If-None-Match`.
pub(super) fn cached(
    headers: &HeaderMap,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response {
    let body: Bytes = body.into();
    let mut h = DefaultHasher::new();
    body.hash(&mut h);
    let etag = format!("\"{:016x}\"", h.finish());
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|x| x.trim() == etag));
    let common = [
        (header::CONTENT_TYPE, content_type.to_string()),
        (header::CACHE_CONTROL, "no-cache".to_string()),
        (header::ETAG, etag),
    ];
    if not_modified {
        (StatusCode::NOT_MODIFIED, common).into_response()
    } else {
        (common, Body::from(body)).into_response()
    }
}

pub(super) fn json_response(headers: &HeaderMap, v: &Value) -> Response {
    cached(headers, JSON_TYPE, v.to_string())
}
