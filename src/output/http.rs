//! The HTTP side: JSON snapshots, PGN, the event stream over WebSocket and SSE with resume,
//! relay files, operator actions behind a token, and the arbiter page.

use std::collections::hash_map::DefaultHasher;
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;

use super::hub::{Hub, Msg, Start};
use super::metrics::{ClientGuard, ClientKind};
use super::model::Pairing;
use super::relay;
use super::render;
use super::ws::{self, Ws};
use crate::core::observation::OperatorAction;

/// The arbiter and monitor page.
const INDEX_HTML: &str = include_str!("../../web/index.html");

/// How long one write to a client may take before the client is dropped.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// A client that lags twice within this window is dropped.
const LAG_WINDOW: Duration = Duration::from_secs(30);
/// Most messages written to a WebSocket before a flush.
const BATCH: usize = 256;
/// Largest request body of an operator action.
pub const MAX_BODY: usize = 16 * 1024;
/// Largest request body of a route that takes a whole pairings file (a route with its own,
/// larger cap: read it with `read_body(.., MAX_PAIRINGS_BODY)` after the token check, like
/// every other body).
pub const MAX_PAIRINGS_BODY: usize = 1024 * 1024;
/// Interval of SSE keep-alive comments.
const SSE_KEEPALIVE: Duration = Duration::from_secs(15);

/// Content type of PGN.
pub const PGN_TYPE: &str = "application/x-chess-pgn; charset=utf-8";
/// Content type of JSON.
pub const JSON_TYPE: &str = "application/json; charset=utf-8";

#[derive(Clone)]
struct App {
    /// The live hub: operator actions, and every view of a request that carries the token.
    hub: Hub,
    /// The delayed public hub (`delay_secs`), for every request without the token.
    public: Option<Hub>,
    token: Option<Arc<str>>,
    stop: tokio::sync::watch::Receiver<bool>,
    allowed_origins: Arc<[String]>,
    body_timeout: Duration,
    round_file: Option<Arc<std::path::Path>>,
    lichess: Option<Arc<super::lichess::LichessReport>>,
}

/// What the HTTP API is built from.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The hub (live).
    pub hub: Hub,
    /// With a broadcast delay: the delayed hub that requests without the token see.
    pub public: Option<Hub>,
    /// The secret that state-changing requests must carry (without one they are refused).
    pub token: Option<String>,
    /// Event streams end when it turns true.
    pub stop: tokio::sync::watch::Receiver<bool>,
    /// Origins besides the server's own allowed to open the event-stream WebSocket.
    pub allowed_origins: Vec<String>,
    /// Time a request body has to arrive in full.
    pub body_timeout: Duration,
    /// Where a loaded round is saved (`None`: not saved).
    pub round_file: Option<std::path::PathBuf>,
    /// The lichess pusher's report, shown in health (`None`: not pushing).
    pub lichess: Option<Arc<super::lichess::LichessReport>>,
}

/// The router of the HTTP API with default limits and no foreign origin allowed.
pub fn router(hub: Hub, token: Option<String>, stop: tokio::sync::watch::Receiver<bool>) -> Router {
    router_with(HttpOptions {
        hub,
        public: None,
        token,
        stop,
        allowed_origins: Vec::new(),
        body_timeout: Duration::from_secs(10),
        round_file: None,
        lichess: None,
    })
}

/// The router of the HTTP API.
pub fn router_with(o: HttpOptions) -> Router {
    // Public pages: the delayed view when there is one.
    let overlays = super::overlay::router(o.public.clone().unwrap_or_else(|| o.hub.clone()));
    let app = App {
        hub: o.hub,
        public: o.public,
        token: o.token.filter(|t| !t.is_empty()).map(Arc::from),
        stop: o.stop,
        allowed_origins: o.allowed_origins.into(),
        body_timeout: o.body_timeout,
        round_file: o.round_file.map(Arc::from),
        lichess: o.lichess,
    };
    Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/api/v1/health", get(health))
        .route("/api/v1/boards", get(boards))
        .route("/api/v1/boards/{board}", get(board))
        .route("/api/v1/boards/{board}/game.pgn", get(board_pgn))
        .route("/api/v1/games.pgn", get(games_pgn))
        .route("/api/v1/events", get(ws_events))
        .route("/api/v1/events/sse", get(sse_events))
        .route("/api/v1/boards/{board}/result", post(set_result))
        .route("/api/v1/boards/{board}/players", post(set_players))
        .route("/api/v1/boards/{board}/new-game", post(new_game))
        .route("/api/v1/boards/{board}/correct", post(correct))
        .route(
            "/api/v1/boards/{board}/irregularities/{id}/ack",
            post(acknowledge),
        )
        .route("/api/v1/round", post(load_round))
        .route("/api/v1/rounds", get(rounds))
        .route("/api/v1/rounds/{round}", get(round_view))
        .route("/api/v1/rounds/{round}/games.pgn", get(round_games_pgn))
        .route("/relay/{*path}", get(relay_file))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .with_state(app)
        .layer(axum::middleware::map_response(json_errors))
        .merge(overlays)
}

/// Errors made by the framework (a bad path or query, a wrong method) in the JSON error shape.
pub(crate) async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = match axum::body::to_bytes(body, 4096).await {
        Ok(b) if !b.is_empty() => String::from_utf8_lossy(&b).trim().to_string(),
        _ => status.canonical_reason().unwrap_or("error").to_string(),
    };
    let mut out = error(status, text);
    for name in [header::ALLOW, header::RETRY_AFTER] {
        if let Some(v) = parts.headers.get(&name) {
            out.headers_mut().insert(name, v.clone());
        }
    }
    out
}

/// A refused request (boxed: a response is large).
type Reject = Box<Response>;

/// An error as JSON `{"error": "..."}`, boxed.
fn reject(status: StatusCode, message: impl Into<String>) -> Reject {
    Box::new(error(status, message))
}

/// An error as JSON `{"error": "..."}`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let body = json!({ "error": message.into() }).to_string();
    (status, [(header::CONTENT_TYPE, JSON_TYPE)], body).into_response()
}

async fn not_found() -> Response {
    error(StatusCode::NOT_FOUND, "no such resource")
}

/// A body with a content type, `Cache-Control: no-cache` and an `ETag`, answering 304 to a
/// matching `If-None-Match`.
fn cached(headers: &HeaderMap, content_type: &'static str, body: impl Into<Bytes>) -> Response {
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

fn json_response(headers: &HeaderMap, v: &Value) -> Response {
    cached(headers, JSON_TYPE, v.to_string())
}

async fn index() -> Response {
    ([(header::CACHE_CONTROL, "no-cache")], Html(INDEX_HTML)).into_response()
}

async fn health(State(app): State<App>, headers: HeaderMap) -> Response {
    let hub = app.view(&headers, None);
    // Not ready while the daemon still rebuilds its boards from their captures: a monitoring
    // check or a load balancer must not take a half-built daemon for a ready one.
    let recovering = app.hub.recovering();
    let status = if recovering.is_some() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    };
    let body = json!({
        "ok": recovering.is_none(),
        "state": if recovering.is_some() { "recovering" } else { "ready" },
        "recovery": recovering.map(|(done, total)| json!({"done": done, "total": total})),
        "seq": hub.last_seq(),
        "subscribers": hub.subscribers(),
        "control": app.token.is_some(),
        "delayed": app.public.as_ref().is_some_and(|p| std::ptr::eq(hub, p)),
        "lichess": app.lichess.as_ref().map(|l| l.snapshot()),
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
/// [`super::metrics`]); 404 on a server without them (no daemon behind it).
async fn metrics(State(app): State<App>) -> Response {
    match app.hub.metrics() {
        Some(m) => (
            [
                (header::CONTENT_TYPE, super::metrics::CONTENT_TYPE),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            m.encode(&app.hub),
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

impl App {
    /// What a request sees: the live hub when it carries the token (header, or `token` in
    /// the query of an event stream), else the delayed public hub when there is one.
    fn view(&self, headers: &HeaderMap, query_token: Option<&str>) -> &Hub {
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

fn check_board(app: &App, id: &str) -> Result<(), Reject> {
    check_board_in(&app.hub, id)
}

fn check_board_in(hub: &Hub, id: &str) -> Result<(), Reject> {
    if !valid_board_id(id) {
        return Err(reject(
            StatusCode::BAD_REQUEST,
            "a board id has 1 to 64 characters: letters, digits, '.', '_', ':' or '-'",
        ));
    }
    if hub.with_round(|r| r.board(id).is_none()) {
        return Err(reject(StatusCode::NOT_FOUND, format!("no board {id:?}")));
    }
    Ok(())
}

async fn boards(State(app): State<App>, headers: HeaderMap) -> Response {
    // One rendering per change of the round, however many clients poll.
    cached(
        &headers,
        JSON_TYPE,
        app.view(&headers, None).snapshot_text(),
    )
}

async fn board(State(app): State<App>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let hub = app.view(&headers, None);
    if let Err(r) = check_board_in(hub, &id) {
        return *r;
    }
    match hub.board_snapshot(&id) {
        Some(v) => json_response(&headers, &v),
        None => error(StatusCode::NOT_FOUND, format!("no board {id:?}")),
    }
}

async fn board_pgn(State(app): State<App>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    let hub = app.view(&headers, None);
    if let Err(r) = check_board_in(hub, &id) {
        return *r;
    }
    let body = hub.with_round(|r| {
        r.board(&id)
            .map(|b| render::board_pgn(r, b))
            .unwrap_or_default()
    });
    cached(&headers, PGN_TYPE, body)
}

#[derive(Debug, Deserialize)]
struct GamesQuery {
    /// Every game of every board (in start order), not only the round's current games.
    #[serde(default)]
    all: Option<String>,
}

async fn games_pgn(
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

async fn relay_file(
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

// --- Event streams -------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct EventsQuery {
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

fn wanted(msg: &Msg, board: &Option<String>) -> bool {
    board.as_deref().is_none_or(|b| &*msg.board == b)
}

async fn ws_events(
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
    let mut last_lag: Option<Instant> = None;
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
                    if last_lag.is_some_and(|t| t.elapsed() < LAG_WINDOW) {
                        close(&mut socket, CloseCode::Policy, "client too slow; reconnect with ?since=").await;
                        break;
                    }
                    last_lag = Some(Instant::now());
                    let (start, new_rx) = hub.resync();
                    rx = new_rx;
                    batch = ws_start(start, &board);
                }
                if !batch.is_empty() && !send_batch(&mut socket, batch).await {
                    break;
                }
            }
            incoming = socket.next() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                Some(Ok(_)) => {}
            },
            _ = super::stopped(&mut stop) => {
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
    last_lag: Option<Instant>,
    done: bool,
    stop: tokio::sync::watch::Receiver<bool>,
    /// Counts the client as connected while the stream lives.
    _client: Option<ClientGuard>,
}

async fn sse_events(
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
        last_lag: None,
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
            _ = super::stopped(&mut st.stop) => return None,
        };
        match r {
            Ok(m) => {
                if wanted(&m, &st.board) {
                    sse_chunks(m.seq, text(&m), &mut st.pending);
                }
            }
            Err(RecvError::Lagged(_)) => {
                if st.last_lag.is_some_and(|t| t.elapsed() < LAG_WINDOW) {
                    st.done = true;
                    let bye = Bytes::from_static(
                        b"event: error\ndata: client too slow; reconnect (Last-Event-ID resumes)\n\n",
                    );
                    return Some((Ok(bye), st));
                }
                st.last_lag = Some(Instant::now());
                let (start, rx) = st.hub.resync();
                st.rx = rx;
                st.pending = sse_start(start, &st.board);
            }
            Err(RecvError::Closed) => return None,
        }
    }
}

// --- Operator actions ----------------------------------------------------------------------

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
fn authorised(app: &App, headers: &HeaderMap) -> Result<(), Reject> {
    if app.token.is_none() {
        return Err(reject(
            StatusCode::FORBIDDEN,
            "changes are disabled: no access token is configured (--token or [output] token)",
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

/// Read a request body of at most `limit` bytes within the body deadline. Called only once
/// the token was checked, so an unauthenticated client never gets a byte of its body read;
/// a `Content-Length` over the limit is refused before reading.
async fn read_body(
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
fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Reject> {
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

/// Parse `body` as each operator action's body would be, and apply a parsed pairing to `hub`
/// (for the fuzz target of the HTTP handlers): the number of bodies accepted.
#[cfg(feature = "test-support")]
pub fn parse_bodies_for_fuzzing(hub: &Hub, board: &str, body: &[u8]) -> usize {
    let mut accepted = 0;
    if parse_body::<ResultBody>(body).is_ok() {
        accepted += 1;
    }
    if let Ok(b) = parse_body::<NewGameBody>(body) {
        accepted += 1;
        if let Some(fen) = &b.fen {
            let _ = render::valid_fen(fen);
        }
    }
    if parse_body::<OperatorAction>(body).is_ok() {
        accepted += 1;
    }
    if let Ok(p) = parse_body::<Pairing>(body)
        && hub.set_pairing(board, p).is_ok()
    {
        accepted += 1;
    }
    accepted
}

/// An operator's POST to one board (`/api/v1/boards/{board}/...`), its body not yet read.
struct BoardPost {
    app: App,
    id: String,
    headers: HeaderMap,
    body: Body,
}

impl FromRequest<App> for BoardPost {
    type Rejection = Response;

    async fn from_request(req: Request, app: &App) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let Path(id) = Path::<String>::from_request_parts(&mut parts, app)
            .await
            .map_err(IntoResponse::into_response)?;
        Ok(BoardPost {
            app: app.clone(),
            id,
            headers: parts.headers,
            body,
        })
    }
}

impl BoardPost {
    /// Check the token and the board, then read and parse the body and answer with `then`;
    /// a refusal on the way is the answer.
    async fn run<T: serde::de::DeserializeOwned>(
        self,
        then: impl FnOnce(&App, &str, T) -> Response,
    ) -> Response {
        let parsed = async {
            authorised(&self.app, &self.headers)?;
            check_board(&self.app, &self.id)?;
            let bytes = read_body(&self.app, &self.headers, self.body, MAX_BODY).await?;
            parse_body(&bytes)
        };
        match parsed.await {
            Ok(b) => then(&self.app, &self.id, b),
            Err(r) => *r,
        }
    }
}

/// `{"ok": true}` when the hub took the call, else its error with the status `status` gives.
fn done<E: std::fmt::Display>(r: Result<(), E>, status: impl FnOnce(&E) -> StatusCode) -> Response {
    match r {
        Ok(()) => ok(),
        Err(e) => error(status(&e), e.to_string()),
    }
}

fn ok() -> Response {
    (
        [(header::CONTENT_TYPE, JSON_TYPE)],
        json!({"ok": true}).to_string(),
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResultBody {
    result: String,
}

async fn set_result(post: BoardPost) -> Response {
    post.run(|app, id, b: ResultBody| {
        if b.result.parse::<shakmaty::KnownOutcome>().is_err() {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "result must be \"1-0\", \"0-1\" or \"1/2-1/2\", not {:?}",
                    b.result
                ),
            );
        }
        let running = app.hub.with_round(|r| {
            r.board(id)
                .and_then(|b| b.game())
                .is_some_and(|g| !g.ended())
        });
        if !running {
            return error(
                StatusCode::CONFLICT,
                format!("board {id:?} has no running game"),
            );
        }
        let action = OperatorAction::SetResult { result: b.result };
        operate(app, id, action)
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewGameBody {
    #[serde(default)]
    fen: Option<String>,
}

async fn new_game(post: BoardPost) -> Response {
    post.run(|app, id, b: NewGameBody| {
        if let Some(fen) = &b.fen
            && !render::valid_fen(fen)
        {
            return error(
                StatusCode::BAD_REQUEST,
                format!("not a legal position: {fen:?}"),
            );
        }
        let action = OperatorAction::NewGame { fen: b.fen };
        operate(app, id, action)
    })
    .await
}

/// Hand `action` to the board's driver: 503 when the board cannot take it now.
fn operate(app: &App, id: &str, action: OperatorAction) -> Response {
    done(app.hub.operator(id, action), |_| {
        StatusCode::SERVICE_UNAVAILABLE
    })
}

/// An arbiter's correction: the body is an operator action (`{"action":"take_back","ply":4}`,
/// see [`OperatorAction`]); 400 with the reason when it is impossible (nothing changed).
async fn correct(post: BoardPost) -> Response {
    post.run(|app, id, action: OperatorAction| done(app.hub.correct(id, action), |e| e.status()))
        .await
}

async fn set_players(post: BoardPost) -> Response {
    post.run(|app, id, p: Pairing| done(app.hub.set_pairing(id, p), |_| StatusCode::BAD_REQUEST))
        .await
}

async fn acknowledge(
    State(app): State<App>,
    Path((id, irr)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Err(r) = authorised(&app, &headers).and_then(|_| check_board(&app, &id)) {
        return *r;
    }
    let Ok(irr) = irr.parse::<u64>() else {
        return error(StatusCode::BAD_REQUEST, "an irregularity id is a number");
    };
    done(app.hub.acknowledge(&id, irr), |_| StatusCode::NOT_FOUND)
}

// --- Rounds --------------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct LoadRoundQuery {
    round: Option<String>,
    format: Option<String>,
}

/// `POST /api/v1/round?round=R[&format=trf|csv]` with a pairings file as the body: the token
/// is checked before a byte of the body is read; a bad file changes nothing.
async fn load_round(
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
    let bytes = match read_body(&app, &headers, body, MAX_PAIRINGS_BODY).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let format = format.unwrap_or_else(|| crate::round::Format::guess(&bytes));
    match super::rounds::load(&app.hub, format, round, &bytes) {
        Ok(v) => {
            if let Some(path) = &app.round_file
                && let Err(e) = super::rounds::save(&app.hub, path)
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

async fn rounds(State(app): State<App>, headers: HeaderMap) -> Response {
    let hub = app.view(&headers, None);
    json_response(&headers, &hub.with_round(super::rounds::rounds_json))
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

async fn round_view(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_round_number(&app, &headers, &raw, |hub, n| {
        match hub.with_round(|r| super::rounds::round_json(r, n)) {
            Some(v) => json_response(&headers, &v),
            None => error(StatusCode::NOT_FOUND, format!("no round {n}")),
        }
    })
}

async fn round_games_pgn(
    State(app): State<App>,
    Path(raw): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_round_number(&app, &headers, &raw, |hub, n| {
        let body = hub.with_round(|r| render::round_pgn_of(r, n));
        cached(&headers, PGN_TYPE, body)
    })
}
