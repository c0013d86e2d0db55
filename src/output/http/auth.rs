//! The access token: which hub a request sees, and whether it may change things.

use axum::http::{HeaderMap, StatusCode, header};

use super::{App, Reject, reject};
use crate::output::hub::Hub;

impl App {
    /// What a request sees: the live hub when it carries the token (header, or `token` in
    /// the query of an event stream), else the delayed public hub when there is one.
    pub(super) fn view(&self, headers: &HeaderMap, query_token: Option<&str>) -> &Hub {
        match &self.public {
            Some(public) => {
                let presented = presented_token(headers).or(query_token);
                if token_matches(self, presented) {
                    &self.hub
                } else {
                    public
                }
            }
            None => &self.hub,
        }
    }
}

/// The token a request presents in its headers.
fn presented_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-eboardd-token").and_then(|v| v.to_str().ok()))
}

/// Constant-time comparison of a presented token with the configured one (false when none is
/// configured or none presented).
fn token_matches(app: &App, presented: Option<&str>) -> bool {
    let (Some(expected), Some(presented)) = (&app.token, presented) else {
        return false;
    };
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, &x) in b.iter().enumerate() {
        diff |= usize::from(x ^ a.get(i).copied().unwrap_or(0));
    }
    diff == 0
}

/// Whether the request may change things: the token is configured and presented.
pub(super) fn authorised(app: &App, headers: &HeaderMap) -> Result<(), Reject> {
    if app.token.is_none() {
        return Err(reject(
            StatusCode::FORBIDDEN,
            "changes are disabled: no access token is configured (--token-file FILE, or token_file in the configuration's [outputs])",
        ));
    }
    let presented = presented_token(headers);
    if presented.is_none() {
        return Err(reject(
            StatusCode::UNAUTHORIZED,
            "missing token: send 'Authorization: Bearer <token>'",
        ));
    }
    if !token_matches(app, presented) {
        return Err(reject(StatusCode::UNAUTHORIZED, "wrong token"));
    }
    Ok(())
}
