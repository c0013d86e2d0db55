//! WebSocket plumbing of the event stream: the handshake on hyper's upgrade, Origin checks, and
//! writing frames made once for every client ([`super::fanout`]) straight to the connection:
//! tungstenite reads the client's frames (and answers pings), but the stream's messages do not
//! pass through its write buffer, so a client holds no copy of what it is sent.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::SinkExt;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

/// A server-side WebSocket on an upgraded HTTP connection.
pub type Ws = WebSocketStream<hyper_util::rt::TokioIo<hyper::upgrade::Upgraded>>;

/// Frames are gathered up to this many bytes before a write, on WebSockets written through
/// tungstenite (the LiveChess API's).
pub const WRITE_BUFFER: usize = 8 * 1024;

/// Buffers of a WebSocket whose client sends next to nothing and whose messages are written
/// around tungstenite: small read and write buffers (the write buffer holds only pongs and the
/// closing frame).
pub fn config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(4 * 1024)
        .write_buffer_size(0)
        .max_write_buffer_size(64 * 1024)
        .max_message_size(Some(64 * 1024))
        .max_frame_size(Some(64 * 1024))
}

/// An origin as compared: lower case, no trailing slash.
fn normal(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// Whether an origin (`scheme://host[:port]`) is well formed.
pub fn valid_origin(origin: &str) -> bool {
    let o = origin.trim_end_matches('/');
    let rest = o
        .strip_prefix("http://")
        .or_else(|| o.strip_prefix("https://"));
    rest.is_some_and(|h| {
        !h.is_empty()
            && h.len() <= 253
            && h.bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b':' | b'[' | b']'))
    })
}

/// Whether the request's `Origin` may open the socket: no `Origin` (not a browser), the
/// server's own origin (same host and port as `Host`), or one of `allowed` (`"*"`: any).
pub fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = normal(origin);
    if allowed.iter().any(|a| a == "*" || normal(a) == origin) {
        return true;
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|h| h.trim().to_ascii_lowercase());
    host.is_some_and(|h| {
        !h.is_empty() && (origin == format!("http://{h}") || origin == format!("https://{h}"))
    })
}

/// A refusal as JSON `{"error": ...}` (boxed: a response is large).
fn refuse(status: StatusCode, message: &str) -> Box<Response> {
    let body = serde_json::json!({ "error": message }).to_string();
    Box::new(
        (
            status,
            [(header::CONTENT_TYPE, super::files::JSON_TYPE)],
            body,
        )
            .into_response(),
    )
}

/// Answer a WebSocket handshake: the `101` response and the upgrade to wait for, or the
/// refusal to send.
pub fn accept(req: &mut Request) -> Result<(Response, hyper::upgrade::OnUpgrade), Box<Response>> {
    let h = req.headers();
    let has = |name: header::HeaderName, token: &str| {
        h.get_all(name).iter().any(|v| {
            v.to_str()
                .is_ok_and(|v| v.split(',').any(|p| p.trim().eq_ignore_ascii_case(token)))
        })
    };
    if !has(header::CONNECTION, "upgrade") || !has(header::UPGRADE, "websocket") {
        return Err(refuse(
            StatusCode::UPGRADE_REQUIRED,
            "this is a WebSocket endpoint (or use /api/v1/events/sse)",
        ));
    }
    if h.get(header::SEC_WEBSOCKET_VERSION)
        .is_none_or(|v| v.as_bytes() != b"13")
    {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "Sec-WebSocket-Version must be 13",
        ));
    }
    let Some(key) = h.get(header::SEC_WEBSOCKET_KEY) else {
        return Err(refuse(StatusCode::BAD_REQUEST, "missing Sec-WebSocket-Key"));
    };
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let Some(on_upgrade) = req.extensions_mut().remove::<hyper::upgrade::OnUpgrade>() else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "this connection cannot be upgraded",
        ));
    };
    let mut resp = StatusCode::SWITCHING_PROTOCOLS.into_response();
    let rh = resp.headers_mut();
    rh.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    rh.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        rh.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    Ok((resp, on_upgrade))
}

/// The socket once the `101` went out.
pub async fn upgraded(on_upgrade: hyper::upgrade::OnUpgrade) -> Option<Ws> {
    let io = on_upgrade.await.ok()?;
    Some(
        WebSocketStream::from_raw_socket(
            hyper_util::rt::TokioIo::new(io),
            Role::Server,
            Some(config()),
        )
        .await,
    )
}

/// Write `frames` (whole WebSocket frames, made by [`super::fanout`]) to the connection: first
/// whatever tungstenite has pending (a pong), so that frames never interleave.
pub async fn write_frames(ws: &mut Ws, frames: &[u8]) -> std::io::Result<()> {
    ws.flush().await.map_err(std::io::Error::other)?;
    let io = ws.get_mut();
    io.write_all(frames).await?;
    io.flush().await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(origin: Option<&str>, host: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        if let Some(o) = origin {
            h.insert(header::ORIGIN, HeaderValue::from_str(o).unwrap());
        }
        h
    }

    #[test]
    fn own_origin_and_allowed_ones_only() {
        let allowed = vec!["https://broadcast.example.org".to_string()];
        assert!(origin_allowed(&headers(None, "127.0.0.1:8080"), &[]));
        assert!(origin_allowed(
            &headers(Some("http://127.0.0.1:8080"), "127.0.0.1:8080"),
            &[]
        ));
        assert!(!origin_allowed(
            &headers(Some("http://127.0.0.1:9999"), "127.0.0.1:8080"),
            &[]
        ));
        assert!(!origin_allowed(
            &headers(Some("https://evil.example"), "127.0.0.1:8080"),
            &allowed
        ));
        assert!(!origin_allowed(
            &headers(Some("null"), "127.0.0.1:8080"),
            &allowed
        ));
        assert!(origin_allowed(
            &headers(Some("https://Broadcast.example.org/"), "127.0.0.1:8080"),
            &allowed
        ));
    }

    #[test]
    fn origins_are_checked_for_shape() {
        assert!(valid_origin("https://lichess.org"));
        assert!(valid_origin("http://192.168.1.10:8080"));
        assert!(!valid_origin("lichess.org"));
        assert!(!valid_origin("https://a b"));
        assert!(!valid_origin("https://x/path"));
    }
}
