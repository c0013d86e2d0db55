//! The HTTP side: JSON snapshots, PGN, the event stream over WebSocket and SSE with resume,
//! relay files, operator actions behind a token, and the arbiter page.

use std::collections::hash_map::DefaultHasher;
use std::convert::Infallible;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::SinkExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::hub::{Broadcaster, Msg, Start};
use super::model::Pairing;
use super::relay;
use super::render;
use crate::core::observation::OperatorAction;

/// The arbiter and monitor page.
const INDEX_HTML: &str = include_str!("../../web/index.html");

/// How long one write to a client may take before the client is dropped.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);
/// A client that lags twice within this window is dropped.
const LAG_WINDOW: Duration = Duration::from_secs(30);
/// Most messages written to a WebSocket before a flush.
const BATCH: usize = 256;

/// Content type of PGN.
pub const PGN_TYPE: &str = "application/x-chess-pgn; charset=utf-8";
/// Content type of JSON.
pub const JSON_TYPE: &str = "application/json; charset=utf-8";

#[derive(Clone)]
struct App {
    hub: Broadcaster,
    token: Option<Arc<str>>,
    stop: tokio::sync::watch::Receiver<bool>,
}

/// The router of the HTTP API (`token`: the secret that state-changing requests must carry;
/// without one they are refused). Event streams end when `stop` turns true.
pub fn router(
    hub: Broadcaster,
    token: Option<String>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Router {
    let app = App {
        hub,
        token: token.filter(|t| !t.is_empty()).map(Arc::from),
        stop,
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
        .route(
            "/api/v1/boards/{board}/irregularities/{id}/ack",
            post(acknowledge),
        )
        .route("/relay/{*path}", get(relay_file))
        .fallback(not_found)
        .with_state(app)
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
fn cached(headers: &HeaderMap, content_type: &'static str, body: String) -> Response {
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
        (common, body).into_response()
    }
}

fn json_response(headers: &HeaderMap, v: &Value) -> Response {
    cached(headers, JSON_TYPE, v.to_string())
}

async fn index() -> Response {
    ([(header::CACHE_CONTROL, "no-cache")], Html(INDEX_HTML)).into_response()
}

async fn health(State(app): State<App>) -> Response {
    let body = json!({
        "ok": true,
        "seq": app.hub.last_seq(),
        "subscribers": app.hub.subscribers(),
        "control": app.token.is_some(),
    });
    (
        [
            (header::CONTENT_TYPE, JSON_TYPE),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body.to_string(),
    )
        .into_response()
}

/// A board id from a URL: 1–64 characters of `A-Z a-z 0-9 . _ : -`.
pub fn valid_board_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
}

fn check_board(app: &App, id: &str) -> Result<(), Reject> {
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

async fn boards(State(app): State<App>, headers: HeaderMap) -> Response {
    json_response(&headers, &app.hub.snapshot())
}

async fn board(State(app): State<App>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(r) = check_board(&app, &id) {
        return *r;
    }
    match app.hub.board_snapshot(&id) {
        Some(v) => json_response(&headers, &v),
        None => error(StatusCode::NOT_FOUND, format!("no board {id:?}")),
    }
}

async fn board_pgn(State(app): State<App>, Path(id): Path<String>, headers: HeaderMap) -> Response {
    if let Err(r) = check_board(&app, &id) {
        return *r;
    }
    let body = app.hub.with_round(|r| {
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
    let body = app.hub.with_round(|r| {
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
    match app.hub.with_round(|r| relay::render_path(r, &path)) {
        Some((content_type, body)) => cached(&headers, content_type, body),
        None => error(StatusCode::NOT_FOUND, format!("no relay file {path:?}")),
    }
}

// --- Event streams -------------------------------------------------------------------------

#[derive(Debug, Deserialize)]
struct EventsQuery {
    since: Option<String>,
    board: Option<String>,
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
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    let (since, board) = match stream_params(&q, &headers) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    // Clients send next to nothing: a small read buffer keeps thousands of them cheap.
    ws.max_message_size(64 * 1024)
        .read_buffer_size(4 * 1024)
        .on_upgrade(move |socket| ws_client(socket, app.hub, since, board, app.stop))
}

async fn send_batch(socket: &mut WebSocket, msgs: Vec<Message>) -> bool {
    let write = async {
        for m in msgs {
            socket.feed(m).await?;
        }
        socket.flush().await
    };
    matches!(tokio::time::timeout(SEND_TIMEOUT, write).await, Ok(Ok(())))
}

/// The first frames of a (re)subscription.
fn ws_start(start: Start, board: &Option<String>) -> Vec<Message> {
    let text = |m: &Arc<Msg>| Message::Text(m.json.clone());
    match start {
        Start::Backlog(msgs) => msgs.iter().filter(|m| wanted(m, board)).map(text).collect(),
        Start::Snapshot { json, then, .. } => std::iter::once(Message::Text(json))
            .chain(then.iter().filter(|m| wanted(m, board)).map(text))
            .collect(),
    }
}

/// The first SSE events of a (re)subscription.
fn sse_start(start: Start, board: &Option<String>) -> std::collections::VecDeque<Event> {
    match start {
        Start::Backlog(msgs) => msgs
            .iter()
            .filter(|m| wanted(m, board))
            .map(|m| sse_event(m))
            .collect(),
        Start::Snapshot { json, seq, then } => {
            std::iter::once(Event::default().id(seq.to_string()).data(&*json))
                .chain(
                    then.iter()
                        .filter(|m| wanted(m, board))
                        .map(|m| sse_event(m)),
                )
                .collect()
        }
    }
}

async fn ws_client(
    mut socket: WebSocket,
    hub: Broadcaster,
    since: Option<u64>,
    board: Option<String>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let (start, mut rx) = hub.subscribe(since);
    let first = ws_start(start, &board);
    // Send the backlog in bounded batches.
    let mut first = first.into_iter().peekable();
    while first.peek().is_some() {
        let chunk: Vec<Message> = first.by_ref().take(BATCH).collect();
        if !send_batch(&mut socket, chunk).await {
            return;
        }
    }
    let mut last_lag: Option<Instant> = None;
    loop {
        tokio::select! {
            r = rx.recv() => {
                let mut batch = Vec::new();
                let mut lagged = false;
                match r {
                    Ok(m) => {
                        if wanted(&m, &board) {
                            batch.push(Message::Text(m.json.clone()));
                        }
                        while batch.len() < BATCH {
                            match rx.try_recv() {
                                Ok(m) => if wanted(&m, &board) {
                                    batch.push(Message::Text(m.json.clone()));
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
                        let _ = tokio::time::timeout(
                            Duration::from_secs(1),
                            socket.send(Message::Close(Some(axum::extract::ws::CloseFrame {
                                code: 1008,
                                reason: "client too slow; reconnect with ?since=".into(),
                            }))),
                        )
                        .await;
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
            incoming = socket.recv() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                Some(Ok(_)) => {}
            },
            _ = super::stopped(&mut stop) => {
                let close = Message::Close(Some(axum::extract::ws::CloseFrame {
                    code: 1001,
                    reason: "server shutting down".into(),
                }));
                let _ = tokio::time::timeout(Duration::from_secs(1), socket.send(close)).await;
                break;
            }
        }
    }
}

struct SseState {
    hub: Broadcaster,
    board: Option<String>,
    pending: std::collections::VecDeque<Event>,
    rx: tokio::sync::broadcast::Receiver<Arc<Msg>>,
    last_lag: Option<Instant>,
    done: bool,
    stop: tokio::sync::watch::Receiver<bool>,
}

fn sse_event(m: &Msg) -> Event {
    Event::default().id(m.seq.to_string()).data(&*m.json)
}

async fn sse_events(
    State(app): State<App>,
    Query(q): Query<EventsQuery>,
    headers: HeaderMap,
) -> Response {
    let (since, board) = match stream_params(&q, &headers) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let (start, rx) = app.hub.subscribe(since);
    let pending = sse_start(start, &board);
    let state = SseState {
        hub: app.hub.clone(),
        board,
        pending,
        rx,
        last_lag: None,
        done: false,
        stop: app.stop.clone(),
    };
    let stream = futures_util::stream::unfold(state, next_sse);
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

async fn next_sse(mut st: SseState) -> Option<(Result<Event, Infallible>, SseState)> {
    loop {
        if let Some(e) = st.pending.pop_front() {
            return Some((Ok(e), st));
        }
        if st.done {
            return None;
        }
        let r = tokio::select! {
            r = st.rx.recv() => r,
            _ = super::stopped(&mut st.stop) => return None,
        };
        match r {
            Ok(m) => {
                if wanted(&m, &st.board) {
                    return Some((Ok(sse_event(&m)), st));
                }
            }
            Err(RecvError::Lagged(_)) => {
                if st.last_lag.is_some_and(|t| t.elapsed() < LAG_WINDOW) {
                    st.done = true;
                    let bye = Event::default()
                        .event("error")
                        .data("client too slow; reconnect (Last-Event-ID resumes)");
                    return Some((Ok(bye), st));
                }
                st.last_lag = Some(Instant::now());
                let (start, rx) = st.hub.resync();
                st.rx = rx;
                st.pending = sse_start(start, &st.board);
                continue;
            }
            Err(RecvError::Closed) => return None,
        }
    }
}

// --- Operator actions ----------------------------------------------------------------------

/// Constant-time comparison of the presented token with the configured one.
fn authorised(app: &App, headers: &HeaderMap) -> Result<(), Reject> {
    let Some(expected) = &app.token else {
        return Err(reject(
            StatusCode::FORBIDDEN,
            "changes are disabled: no access token is configured (--token or [output] token)",
        ));
    };
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .or_else(|| headers.get("x-eboardd-token").and_then(|v| v.to_str().ok()));
    let Some(presented) = presented else {
        return Err(reject(
            StatusCode::UNAUTHORIZED,
            "missing token: send 'Authorization: Bearer <token>'",
        ));
    };
    let (a, b) = (presented.as_bytes(), expected.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, &x) in b.iter().enumerate() {
        diff |= usize::from(x ^ a.get(i).copied().unwrap_or(0));
    }
    if diff != 0 {
        return Err(reject(StatusCode::UNAUTHORIZED, "wrong token"));
    }
    Ok(())
}

/// Parse a JSON body, with a clear error.
fn parse_body<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, Reject> {
    if body.len() > 16 * 1024 {
        return Err(reject(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body over 16 KiB",
        ));
    }
    let body = if body.trim().is_empty() { "{}" } else { body };
    serde_json::from_str(body)
        .map_err(|e| reject(StatusCode::BAD_REQUEST, format!("invalid JSON body: {e}")))
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

async fn set_result(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    if let Err(r) = authorised(&app, &headers).and_then(|_| check_board(&app, &id)) {
        return *r;
    }
    let b: ResultBody = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    if !matches!(b.result.as_str(), "1-0" | "0-1" | "1/2-1/2") {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "result must be \"1-0\", \"0-1\" or \"1/2-1/2\", not {:?}",
                b.result
            ),
        );
    }
    let running = app.hub.with_round(|r| {
        r.board(&id)
            .and_then(|b| b.game())
            .is_some_and(|g| !g.ended())
    });
    if !running {
        return error(
            StatusCode::CONFLICT,
            format!("board {id:?} has no running game"),
        );
    }
    match app
        .hub
        .operator(&id, OperatorAction::SetResult { result: b.result })
    {
        Ok(()) => ok(),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewGameBody {
    #[serde(default)]
    fen: Option<String>,
}

async fn new_game(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    if let Err(r) = authorised(&app, &headers).and_then(|_| check_board(&app, &id)) {
        return *r;
    }
    let b: NewGameBody = match parse_body(&body) {
        Ok(b) => b,
        Err(r) => return *r,
    };
    if let Some(fen) = &b.fen
        && !render::valid_fen(fen)
    {
        return error(
            StatusCode::BAD_REQUEST,
            format!("not a legal position: {fen:?}"),
        );
    }
    match app
        .hub
        .operator(&id, OperatorAction::NewGame { fen: b.fen })
    {
        Ok(()) => ok(),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

async fn set_players(
    State(app): State<App>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: String,
) -> Response {
    if let Err(r) = authorised(&app, &headers).and_then(|_| check_board(&app, &id)) {
        return *r;
    }
    let p: Pairing = match parse_body(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    match app.hub.set_pairing(&id, p) {
        Ok(()) => ok(),
        Err(e) => error(StatusCode::BAD_REQUEST, e),
    }
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
    match app.hub.acknowledge(&id, irr) {
        Ok(()) => ok(),
        Err(e) => error(StatusCode::NOT_FOUND, e),
    }
}
