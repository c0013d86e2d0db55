//! The event stream over WebSocket and SSE, with resume (`since`, `Last-Event-ID`), a board
//! filter and keep-alives. Both transports follow one lag policy, [`LagPolicy`]: a client too
//! slow for the hub gets a snapshot in place of what it missed, and is dropped if it lags again
//! within [`LAG_WINDOW`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::boards::valid_board_id;
use super::{App, Reject, error, reject};
use crate::output::hub::{Hub, Msg, Start};
use crate::output::metrics::{ClientGuard, ClientKind};
use crate::output::ws::{self, Ws};

/// How long one write to a client may take before the client is dropped.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// A client that lags twice within this window is dropped.
const LAG_WINDOW: Duration = Duration::from_secs(30);
/// Most messages written to a WebSocket before a flush.
const BATCH: usize = 256;

/// Interval of SSE keep-alive comments.
const SSE_KEEPALIVE: Duration = Duration::from_secs(15);

#[derive(Debug, Deserialize)]
pub(super) struct EventsQuery {
    since: Option<String>,
    board: Option<String>,
    /// The access token, for clients that cannot set headers (a browser's WebSocket): with a
    /// broadcast delay, the stream is then live.
    token: Option<String>,
}

/// Parse `since` / `board` of an event-stream request.
fn stream_params(
    q: &EventsQuery,
    headers: &HeaderMap,
) -> Result<(Option<u64>, Option<String>), Reject> {
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let since = match q.since.clone().or(last_event_id) {
        None => None,
        Some(s) => Some(s.trim().parse::<u64>().map_err(|_| {
            reject(
                StatusCode::BAD_REQUEST,
                format!("since must be a sequence number (a non-negative integer), not {s:?}"),
            )
        })?),
    };
    if let Some(b) = &q.board
        && !valid_board_id(b)
    {
        return Err(reject(StatusCode::BAD_REQUEST, "invalid board id"));
    }
    Ok((since, q.board.clone()))
}

/// What a stream client does when it lags behind the hub (its receiver overflowed): the first
/// time, or once [`LAG_WINDOW`] has passed since the last time, it resubscribes and starts again
/// from a snapshot; a second lag within the window drops it. The one policy of both the
/// WebSocket and the SSE stream.
#[derive(Debug, Default)]
struct LagPolicy {
    /// When the client last lagged.
    last_lag: Option<Instant>,
}

impl LagPolicy {
    /// The client lagged: the start (snapshot) to send next, with `rx` replaced by the new
    /// subscription; `None` when the client lagged twice within [`LAG_WINDOW`] and is to be
    /// dropped.
    fn lagged(&mut self, hub: &Hub, rx: &mut Receiver<Arc<Msg>>) -> Option<Start> {
        if self.last_lag.is_some_and(|t| t.elapsed() < LAG_WINDOW) {
            return None;
        }
        self.last_lag = Some(Instant::now());
        let (start, new_rx) = hub.resync();
        *rx = new_rx;
        Some(start)
    }
}

fn wanted(msg: &Msg, board: &Option<String>) -> bool {
    board.as_deref().is_none_or(|b| &*msg.board == b)
}

pub(super) async fn ws_events(
    State(app): State<App>,
    Query(q): Query<EventsQuery>,
    mut req: Request,
) -> Response {
    if !ws::origin_allowed(req.headers(), &app.allowed_origins) {
        return error(
            StatusCode::FORBIDDEN,
            "this page's origin may not open the event stream (allow it with --allow-origin)",
        );
    }
    let (since, board) = match stream_params(&q, req.headers()) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let (resp, on_upgrade) = match ws::accept(&mut req) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let hub = app.view(req.headers(), q.token.as_deref()).clone();
    drop(req);
    tokio::spawn(async move {
        if let Some(socket) = ws::upgraded(on_upgrade).await {
            let _client = app.hub.metrics().map(|m| m.client(ClientKind::Ws));
            ws_client(socket, hub, since, board, app.stop).await;
        }
    });
    resp
}

/// Write `msgs` (shared JSON texts) and flush, within [`SEND_TIMEOUT`].
async fn send_batch(socket: &mut Ws, msgs: Vec<Bytes>) -> bool {
    let write = async {
        for m in msgs {
            ws::feed_text(socket, m).await?;
        }
        socket.flush().await
    };
    matches!(tokio::time::timeout(SEND_TIMEOUT, write).await, Ok(Ok(())))
}

fn text(m: &Arc<Msg>) -> Bytes {
    Bytes::from(m.json.clone())
}

/// The first frames of a (re)subscription.
fn ws_start(start: Start, board: &Option<String>) -> Vec<Bytes> {
    match start {
        Start::Backlog(msgs) => msgs.iter().filter(|m| wanted(m, board)).map(text).collect(),
        Start::Snapshot { json, then, .. } => std::iter::once(Bytes::from(json))
            .chain(then.iter().filter(|m| wanted(m, board)).map(text))
            .collect(),
    }
}

/// One SSE event: `id`, then the JSON (one line) as `data`; the JSON is the shared copy.
fn sse_chunks(seq: u64, json: Bytes, out: &mut std::collections::VecDeque<Bytes>) {
    out.push_back(Bytes::from(format!("id: {seq}\ndata: ")));
    out.push_back(json);
    out.push_back(Bytes::from_static(b"\n\n"));
}

/// The first SSE chunks of a (re)subscription.
fn sse_start(start: Start, board: &Option<String>) -> std::collections::VecDeque<Bytes> {
    let mut out = std::collections::VecDeque::new();
    let (then, snapshot) = match start {
        Start::Backlog(msgs) => (msgs, None),
        Start::Snapshot { json, seq, then } => (then, Some((seq, json))),
    };
    if let Some((seq, json)) = snapshot {
        sse_chunks(seq, Bytes::from(json), &mut out);
    }
    for m in then.iter().filter(|m| wanted(m, board)) {
        sse_chunks(m.seq, text(m), &mut out);
    }
    out
}

async fn close(socket: &mut Ws, code: CloseCode, reason: &'static str) {
    let frame = Message::Close(Some(CloseFrame {
        code,
        reason: reason.into(),
    }));
    let _ = tokio::time::timeout(Duration::from_secs(1), socket.send(frame)).await;
}

async fn ws_client(
    mut socket: Ws,
    hub: Hub,
    since: Option<u64>,
    board: Option<String>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let (start, mut rx) = hub.subscribe(since);
    let first = ws_start(start, &board);
    // Send the backlog in bounded batches.
    let mut first = first.into_iter().peekable();
    while first.peek().is_some() {
        let chunk: Vec<Bytes> = first.by_ref().take(BATCH).collect();
        if !send_batch(&mut socket, chunk).await {
            return;
        }
    }
    drop(first);
    let mut lag = LagPolicy::default();
    loop {
        tokio::select! {
            r = rx.recv() => {
                let mut batch = Vec::new();
                let mut lagged = false;
                match r {
                    Ok(m) => {
                        if wanted(&m, &board) {
                            batch.push(text(&m));
                        }
                        while batch.len() < BATCH {
                            match rx.try_recv() {
                                Ok(m) => if wanted(&m, &board) {
                                    batch.push(text(&m));
                                },
                                Err(TryRecvError::Lagged(_)) => { lagged = true; break; }
                                Err(_) => break,
                            }
                        }
                    }
                    Err(RecvError::Lagged(_)) => lagged = true,
                    Err(RecvError::Closed) => break,
                }
                if lagged {
                    // Too slow: a snapshot replaces what was missed; a second lag soon after
                    // drops the client.
                    match lag.lagged(&hub, &mut rx) {
                        Some(start) => batch = ws_start(start, &board),
                        None => {
                            close(&mut socket, CloseCode::Policy, "client too slow; reconnect with ?since=").await;
                            break;
                        }
                    }
                }
                if !batch.is_empty() && !send_batch(&mut socket, batch).await {
                    break;
                }
            }
            incoming = socket.next() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                Some(Ok(_)) => {}
            },
            _ = crate::output::stopped(&mut stop) => {
                close(&mut socket, CloseCode::Away, "server shutting down").await;
                break;
            }
        }
    }
}

struct SseState {
    hub: Hub,
    board: Option<String>,
    pending: std::collections::VecDeque<Bytes>,
    rx: tokio::sync::broadcast::Receiver<Arc<Msg>>,
    lag: LagPolicy,
    done: bool,
    stop: tokio::sync::watch::Receiver<bool>,
    /// Counts the client as connected while the stream lives.
    _client: Option<ClientGuard>,
}

pub(super) async fn sse_events(
    State(app): State<App>,
    Query(q): Query<EventsQuery>,
    headers: HeaderMap,
) -> Response {
    // Browsers send `Origin` on cross-origin EventSource requests: the same rule as the
    // WebSocket.
    if !ws::origin_allowed(&headers, &app.allowed_origins) {
        return error(
            StatusCode::FORBIDDEN,
            "this page's origin may not open the event stream (allow it with --allow-origin)",
        );
    }
    let (since, board) = match stream_params(&q, &headers) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let hub = app.view(&headers, q.token.as_deref()).clone();
    let (start, rx) = hub.subscribe(since);
    let pending = sse_start(start, &board);
    let state = SseState {
        hub,
        board,
        pending,
        rx,
        lag: LagPolicy::default(),
        done: false,
        stop: app.stop.clone(),
        _client: app.hub.metrics().map(|m| m.client(ClientKind::Sse)),
    };
    let stream = futures_util::stream::unfold(state, next_sse);
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        Body::from_stream(stream),
    )
        .into_response()
}

/// The next chunk of an SSE stream. A client that stops reading is dropped by the server's
/// write-stall deadline; one that reads too slowly lags, gets a snapshot, and is dropped if it
/// lags again soon after.
async fn next_sse(mut st: SseState) -> Option<(Result<Bytes, Infallible>, SseState)> {
    loop {
        if let Some(e) = st.pending.pop_front() {
            return Some((Ok(e), st));
        }
        if st.done {
            return None;
        }
        let r = tokio::select! {
            r = st.rx.recv() => r,
            _ = tokio::time::sleep(SSE_KEEPALIVE) => {
                return Some((Ok(Bytes::from_static(b":\n\n")), st));
            }
            _ = crate::output::stopped(&mut st.stop) => return None,
        };
        match r {
            Ok(m) => {
                if wanted(&m, &st.board) {
                    sse_chunks(m.seq, text(&m), &mut st.pending);
                }
            }
            Err(RecvError::Lagged(_)) => match st.lag.lagged(&st.hub, &mut st.rx) {
                Some(start) => st.pending = sse_start(start, &st.board),
                None => {
                    st.done = true;
                    let bye = Bytes::from_static(
                        b"event: error\ndata: client too slow; reconnect (Last-Event-ID resumes)\n\n",
                    );
                    return Some((Ok(bye), st));
                }
            },
            Err(RecvError::Closed) => return None,
        }
    }
}
