//! The event stream over WebSocket and SSE, with resume (`since`, `Last-Event-ID`), a board
//! filter and keep-alives. A client is sent the hub's fan-out batches ([`crate::output::fanout`]),
//! one write each, the batch's shared encoding when it wants the whole stream; a [`Cursor`]
//! skips what its start already had. Both transports follow one lag policy, [`LagPolicy`]: a
//! client too slow for the fan-out gets a snapshot in place of what it missed, and is dropped if
//! it lags again within [`LAG_WINDOW`].

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::boards::valid_board_id;
use super::{App, Reject, error, reject};
use crate::output::fanout::{self, Batch, Transport};
use crate::output::hub::{Hub, Published, Start};
use crate::output::metrics::{ClientGuard, ClientKind};
use crate::output::ws::{self, Ws};
use tokio_util::sync::CancellationToken;

/// How long one write to a client may take before the client is dropped.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// A client that lags twice within this window is dropped.
const LAG_WINDOW: Duration = Duration::from_secs(30);

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

/// What a stream client does when it lags behind the fan-out (its receiver overflowed): the
/// first time, or once [`LAG_WINDOW`] has passed since the last time, it starts again from a
/// snapshot; a second lag within the window drops it. The one policy of both the WebSocket and
/// the SSE stream.
#[derive(Debug, Default)]
struct LagPolicy {
    /// When the client last lagged.
    last_lag: Option<Instant>,
}

impl LagPolicy {
    /// The client lagged: the start (snapshot) to send next, with `rx` replaced by a new
    /// subscription; `None` when the client lagged twice within [`LAG_WINDOW`] and is to be
    /// dropped.
    fn lagged(&mut self, hub: &Hub, rx: &mut Receiver<Arc<Batch>>) -> Option<Start> {
        if self.last_lag.is_some_and(|t| t.elapsed() < LAG_WINDOW) {
            return None;
        }
        self.last_lag = Some(Instant::now());
        let (start, new_rx) = subscribe(hub, None);
        *rx = new_rx;
        Some(start)
    }
}

/// A client's start and its batches: the batches first, so that every message after the start
/// is in a batch it receives (the [`Cursor`] skips those the start already had).
fn subscribe(hub: &Hub, since: Option<u64>) -> (Start, Receiver<Arc<Batch>>) {
    let rx = hub.fanout().subscribe();
    let (start, _) = hub.subscribe(since);
    (start, rx)
}

/// Where a client is in the stream: the last `seq` its start or a batch covered, the board it
/// follows, and its encoding.
struct Cursor {
    last: u64,
    board: Option<String>,
    transport: Transport,
}

/// Start messages are written in pieces of about this many bytes.
const START_PIECE: usize = 64 * 1024;

impl Cursor {
    fn wanted(&self, msg: &Published) -> bool {
        msg.seq > self.last && self.board.as_deref().is_none_or(|b| &*msg.board == b)
    }

    /// The bytes of a (re)start, in pieces: the snapshot (shared, not copied), then the
    /// messages after it. Moves the cursor to the end of the start.
    fn start(&mut self, start: Start, since: Option<u64>) -> Vec<Bytes> {
        let mut pieces = Vec::new();
        let msgs = match start {
            Start::Backlog(msgs) => {
                self.last = since.unwrap_or(0);
                msgs
            }
            Start::Snapshot { json, seq, then } => {
                let json = Bytes::from(json);
                match self.transport {
                    Transport::Ws => pieces.push(fanout::ws_text_header(json.len())),
                    Transport::Sse => pieces.push(Bytes::from(format!("id: {seq}\ndata: "))),
                }
                pieces.push(json);
                if let Transport::Sse = self.transport {
                    pieces.push(Bytes::from_static(b"\n\n"));
                }
                self.last = seq;
                then
            }
        };
        let mut out = BytesMut::new();
        for m in &msgs {
            if self.wanted(m) {
                self.transport.push(&mut out, m.seq, m.json.as_bytes());
                if out.len() >= START_PIECE {
                    pieces.push(out.split().freeze());
                }
            }
            self.last = self.last.max(m.seq);
        }
        if !out.is_empty() {
            pieces.push(out.freeze());
        }
        pieces
    }

    /// The bytes of `batch` this client is to be sent (empty: none): the batch's shared
    /// encoding when the client wants all of it, else its own.
    fn batch(&mut self, batch: &Batch) -> Bytes {
        let whole = self.board.is_none() && batch.first_seq().is_some_and(|s| s > self.last);
        let out = if whole {
            batch.encoded(self.transport)
        } else {
            let mut out = BytesMut::new();
            for m in batch.msgs.iter().filter(|m| self.wanted(m)) {
                self.transport.push(&mut out, m.seq, m.json.as_bytes());
            }
            out.freeze()
        };
        if let Some(s) = batch.last_seq() {
            self.last = self.last.max(s);
        }
        out
    }
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

/// Write `pieces` (frames already made) to the socket, each within [`SEND_TIMEOUT`].
async fn send(socket: &mut Ws, pieces: impl IntoIterator<Item = Bytes>) -> bool {
    for piece in pieces {
        if piece.is_empty() {
            continue;
        }
        if !matches!(
            tokio::time::timeout(SEND_TIMEOUT, ws::write_frames(socket, &piece)).await,
            Ok(Ok(()))
        ) {
            return false;
        }
    }
    true
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
    stop: CancellationToken,
) {
    let mut cursor = Cursor {
        last: 0,
        board,
        transport: Transport::Ws,
    };
    let (start, mut rx) = subscribe(&hub, since);
    if !send(&mut socket, cursor.start(start, since)).await {
        return;
    }
    let mut lag = LagPolicy::default();
    loop {
        tokio::select! {
            r = rx.recv() => {
                let pieces = match r {
                    // Messages were dropped before they reached the fan-out: a snapshot, not
                    // the client's fault.
                    Ok(b) if b.gap => {
                        let (start, new_rx) = subscribe(&hub, None);
                        rx = new_rx;
                        cursor.start(start, None)
                    }
                    Ok(b) => vec![cursor.batch(&b)],
                    // Too slow: a snapshot replaces what was missed; a second lag soon after
                    // drops the client.
                    Err(RecvError::Lagged(_)) => match lag.lagged(&hub, &mut rx) {
                        Some(start) => cursor.start(start, None),
                        None => {
                            close(&mut socket, CloseCode::Policy, "client too slow; reconnect with ?since=").await;
                            break;
                        }
                    },
                    Err(RecvError::Closed) => break,
                };
                if !send(&mut socket, pieces).await {
                    break;
                }
            }
            incoming = socket.next() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                Some(Ok(_)) => {}
            },
            _ = stop.cancelled() => {
                close(&mut socket, CloseCode::Away, "server shutting down").await;
                break;
            }
        }
    }
}

struct SseState {
    hub: Hub,
    cursor: Cursor,
    pending: std::collections::VecDeque<Bytes>,
    rx: Receiver<Arc<Batch>>,
    lag: LagPolicy,
    done: bool,
    stop: CancellationToken,
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
    let mut cursor = Cursor {
        last: 0,
        board,
        transport: Transport::Sse,
    };
    let (start, rx) = subscribe(&hub, since);
    let pending = cursor.start(start, since).into();
    let state = SseState {
        hub,
        cursor,
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
            if e.is_empty() {
                continue;
            }
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
            _ = st.stop.cancelled() => return None,
        };
        match r {
            // Messages were dropped before they reached the fan-out: a snapshot, not the
            // client's fault.
            Ok(b) if b.gap => {
                let (start, rx) = subscribe(&st.hub, None);
                st.rx = rx;
                st.pending = st.cursor.start(start, None).into();
            }
            Ok(b) => st.pending.push_back(st.cursor.batch(&b)),
            Err(RecvError::Lagged(_)) => match st.lag.lagged(&st.hub, &mut st.rx) {
                Some(start) => st.pending = st.cursor.start(start, None).into(),
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
