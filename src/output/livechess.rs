//! A DGT LiveChess-compatible EBoards API (`docs/broadcast.md` §4) on `ws://HOST:1982/api/v1.0`:
//! the `eboards` call, `subscribe` to the `eboardevent` feed, and the `setup` / `flip` /
//! `unsubscribe` methods on a feed, with LiveChess's JSON shapes, so tools written for LiveChess
//! work unchanged. `GET /api/v1.0/eboards` answers the same list over plain HTTP. The tournament
//! calls (`tournaments`, `tournament`, `round`, `game`) are answered by
//! [`super::livechess_rounds`], over HTTP and as WebSocket calls.
//!
//! `setup` and `flip` only change what this client's feed shows (the start position the SAN
//! list is counted from, the orientation flag); they never change a game.
//!
//! Feeds cost the hub next to nothing: under the hub lock only a board's data is copied, once
//! per change whatever the number of feeds and clients ([`BoardView`], shared through a
//! cache); payloads are built outside the lock from that shared copy, one per distinct
//! (`setup`, `flip`) and change, and a client's feeds are brought up to date once per burst of
//! events. A connection holds at most [`MAX_FEEDS`] feeds.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::Router;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::SinkExt;
use serde_json::{Value, json};
use shakmaty::Chess;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::hub::Hub;
use super::model::{BoardState, BoardStatus, RoundState};
use super::render;
use tokio_util::sync::CancellationToken;

/// Most feeds on one connection (LiveChess clients subscribe one per board).
pub const MAX_FEEDS: usize = 256;

#[derive(Clone)]
struct App {
    hub: Hub,
    stop: CancellationToken,
    allowed_origins: Option<Arc<[String]>>,
    views: Arc<Views>,
}

/// The router of the EBoards API; connections close when `stop` turns true. Pages of any
/// origin may connect (as to LiveChess).
pub fn router(hub: Hub, stop: CancellationToken) -> Router {
    router_with(hub, stop, None)
}

/// The router of the EBoards API; `allowed_origins`: the only web origins whose pages may
/// connect (`None`: any).
pub fn router_with(
    hub: Hub,
    stop: CancellationToken,
    allowed_origins: Option<Vec<String>>,
) -> Router {
    Router::new()
        .route("/api/v1.0", get(ws))
        .route("/api/v1.0/", get(ws))
        .route("/api/v1.0/eboards", get(eboards_http))
        .route("/api/v1.0/tournaments", get(tournaments_http))
        .route("/api/v1.0/tournament/{id}", get(tournament_http))
        .route("/api/v1.0/round/{id}/{nr}", get(round_http))
        .route("/api/v1.0/game/{id}", get(game_http))
        .fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, super::files::JSON_TYPE)],
                json!({"error": "no such resource; the EBoards API is ws://HOST:PORT/api/v1.0"})
                    .to_string(),
            )
        })
        .with_state(App {
            hub,
            stop,
            allowed_origins: allowed_origins.map(Into::into),
            views: Arc::new(Views::default()),
        })
        .layer(axum::middleware::map_response(super::http::json_errors))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn eboards(hub: &Hub) -> Value {
    hub.with_round(|r| {
        Value::Array(
            r.boards()
                .iter()
                .map(|b| render::eboard_object(r, b))
                .collect(),
        )
    })
}

async fn eboards_http(State(app): State<App>) -> Response {
    (
        [(header::CONTENT_TYPE, super::files::JSON_TYPE)],
        eboards(&app.hub).to_string(),
    )
        .into_response()
}

/// A JSON answer, or a 404 with the LiveChess-style error object.
fn found(v: Option<Value>, what: &str) -> Response {
    match v {
        Some(v) => (
            [(header::CONTENT_TYPE, super::files::JSON_TYPE)],
            v.to_string(),
        )
            .into_response(),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, super::files::JSON_TYPE)],
            json!({ "error": format!("no such {what}") }).to_string(),
        )
            .into_response(),
    }
}

async fn tournaments_http(State(app): State<App>) -> Response {
    found(
        Some(app.hub.with_round(super::livechess_rounds::tournaments)),
        "tournament",
    )
}

async fn tournament_http(State(app): State<App>, Path(id): Path<String>) -> Response {
    let v = app
        .hub
        .with_round(|r| super::livechess_rounds::tournament(r, &id));
    found(v, "tournament")
}

async fn round_http(State(app): State<App>, Path((id, nr)): Path<(String, String)>) -> Response {
    let v = nr.parse::<u32>().ok().and_then(|nr| {
        app.hub
            .with_round(|r| super::livechess_rounds::round(r, &id, nr))
    });
    found(v, "round")
}

async fn game_http(State(app): State<App>, Path(id): Path<String>) -> Response {
    let v = app
        .hub
        .with_round(|r| super::livechess_rounds::game(r, &id));
    found(v, "game")
}

fn origin_ok(app: &App, headers: &HeaderMap) -> bool {
    match &app.allowed_origins {
        None => true,
        Some(list) => super::ws::origin_allowed(headers, list),
    }
}

async fn ws(State(app): State<App>, headers: HeaderMap, ws: WebSocketUpgrade) -> Response {
    if !origin_ok(&app, &headers) {
        let body = json!({"error": "this page's origin may not use the EBoards API"});
        return (
            StatusCode::FORBIDDEN,
            [(header::CONTENT_TYPE, super::files::JSON_TYPE)],
            body.to_string(),
        )
            .into_response();
    }
    ws.max_message_size(64 * 1024)
        .read_buffer_size(4 * 1024)
        .write_buffer_size(super::ws::WRITE_BUFFER)
        .on_upgrade(move |socket| client(socket, app.hub, app.views, app.stop))
}

/// A position as compared with a `setup` FEN: placement, turn, castling, en passant.
fn position_key(fen: &str) -> String {
    fen.split_whitespace().take(4).collect::<Vec<_>>().join(" ")
}

/// What a feed payload depends on besides the board: its `setup` FEN and orientation.
type PayloadKey = (Option<String>, bool);

/// What feeds show of one board at one moment: copied under the hub lock once per change and
/// shared by every feed of every client.
#[derive(Debug)]
pub struct BoardView {
    seq: u64,
    status: BoardStatus,
    serialnr: String,
    placement: Option<String>,
    clock: Value,
    reversed: bool,
    matches: bool,
    game: Option<GameView>,
    /// Payloads by (`setup`, `flip`), built on first use.
    payloads: Mutex<HashMap<PayloadKey, Arc<Value>>>,
}

#[derive(Debug)]
struct GameView {
    start_fen: String,
    san: Vec<String>,
    positions: Vec<Chess>,
    /// The first ply after which each position occurs, built on first use (by a `setup`).
    plies: OnceLock<HashMap<String, usize>>,
}

impl BoardView {
    fn new(round: &RoundState, b: &BoardState) -> BoardView {
        let game = b.game().map(|g| GameView {
            start_fen: g.start_fen(),
            san: g.moves.iter().map(|m| m.san.clone()).collect(),
            positions: (1..=g.ply()).map(|n| g.position_after(n).clone()).collect(),
            plies: OnceLock::new(),
        });
        BoardView {
            seq: b.last_seq,
            status: b.status.clone(),
            serialnr: render::serialnr(b),
            placement: b.placement(),
            clock: b
                .clock
                .as_ref()
                .map_or(Value::Null, |c| render::clock_object(round, b, c)),
            reversed: b.game().is_some_and(|g| g.reversed),
            matches: b.matches(),
            game,
            payloads: Mutex::new(HashMap::new()),
        }
    }

    /// The full-state `eboardevent` payload for a feed's `setup` and `flip`: as
    /// [`render::eboard_event`], from the shared copy.
    fn payload(&self, setup: Option<&str>, flipped: Option<bool>) -> Arc<Value> {
        let flipped = flipped.unwrap_or(self.reversed);
        let key = (setup.map(str::to_string), flipped);
        let mut memo = self.payloads.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = memo.get(&key) {
            return p.clone();
        }
        let (start, san, matched): (Option<String>, &[String], bool) = match &self.game {
            None => (setup.map(str::to_string), &[], false),
            Some(g) => {
                let from = match setup {
                    None => Some(0),
                    Some(f) => {
                        let k = position_key(f);
                        if k == position_key(&g.start_fen) {
                            Some(0)
                        } else {
                            g.plies
                                .get_or_init(|| {
                                    let mut m = HashMap::new();
                                    for (i, p) in g.positions.iter().enumerate() {
                                        let k = position_key(&crate::core::game::fen_of(p));
                                        m.entry(k).or_insert(i + 1);
                                    }
                                    m
                                })
                                .get(&k)
                                .copied()
                        }
                    }
                };
                match from {
                    Some(n) => (
                        Some(setup.map_or_else(|| g.start_fen.clone(), str::to_string)),
                        &g.san[n.min(g.san.len())..],
                        self.matches,
                    ),
                    None => (setup.map(str::to_string), &[], false),
                }
            }
        };
        let v = Arc::new(json!({
            "serialnr": self.serialnr,
            "flipped": flipped,
            "board": self.placement,
            "clock": self.clock,
            "start": start,
            "san": san,
            "match": matched,
        }));
        // Bounded: a client can only ask for so many distinct set-ups.
        if memo.len() < 4 * MAX_FEEDS {
            memo.insert(key, v.clone());
        }
        v
    }
}

/// The latest [`BoardView`] of every board, shared by all clients.
#[derive(Debug, Default)]
struct Views {
    boards: Mutex<HashMap<String, Arc<BoardView>>>,
}

impl Views {
    /// The view of `board` now: the cached one while the board did not change, else a fresh
    /// copy (the only work done under the hub lock).
    fn get(&self, hub: &Hub, board: &str) -> Option<Arc<BoardView>> {
        let cached = self
            .boards
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(board)
            .cloned();
        let view = hub.with_round(|r| {
            let b = r.board(board)?;
            match cached {
                Some(v) if v.seq == b.last_seq && v.status == b.status => Some(Ok(v)),
                _ => Some(Err(BoardView::new(r, b))),
            }
        })?;
        Some(match view {
            Ok(v) => v,
            Err(fresh) => {
                let fresh = Arc::new(fresh);
                let mut boards = self.boards.lock().unwrap_or_else(|p| p.into_inner());
                let newer = boards.get(board).is_some_and(|v| v.seq > fresh.seq);
                if !newer {
                    boards.insert(board.to_string(), fresh.clone());
                }
                fresh
            }
        })
    }
}

/// One subscription of one client.
#[derive(Debug)]
struct Feed {
    /// Board id.
    board: String,
    setup: Option<String>,
    flipped: Option<bool>,
    /// The last payload sent (to omit unchanged `board` / `clock`).
    last: Option<Arc<Value>>,
}

/// One client connection to the LiveChess EBoards API: its subscriptions (feeds) by id.
struct ApiClient {
    hub: Hub,
    views: Arc<Views>,
    feeds: BTreeMap<i64, Feed>,
}

fn frame(response: &str, id: Value, param: Value) -> Message {
    let v = json!({"response": response, "id": id, "param": param, "time": now_ms()});
    Message::Text(v.to_string().into())
}

fn call_error(id: Value, message: impl Into<String>) -> Message {
    frame("error", id, json!({"message": message.into()}))
}

impl ApiClient {
    /// The board id whose serial number (or id) is `serialnr`.
    fn board_of(&self, serialnr: &str) -> Option<String> {
        self.hub.with_round(|r| {
            r.boards()
                .iter()
                .find(|b| render::serialnr(b) == serialnr || b.id == serialnr)
                .map(|b| b.id.clone())
        })
    }

    /// The feed payload of `feed` from `view`, with unchanged `board`/`clock` omitted unless
    /// `full`; `None` when nothing changed.
    fn payload_from(feed: &mut Feed, view: &BoardView, full: bool) -> Option<Value> {
        let v = view.payload(feed.setup.as_deref(), feed.flipped);
        let previous = feed.last.replace(v.clone());
        if full {
            return Some((*v).clone());
        }
        let prev = previous?;
        if Arc::ptr_eq(&prev, &v) || prev == v {
            return None;
        }
        let mut v = (*v).clone();
        if let Value::Object(map) = &mut v {
            for key in ["board", "clock"] {
                if prev.get(key) == map.get(key) {
                    map.remove(key);
                }
            }
        }
        Some(v)
    }

    /// The feed payload of `feed_id` now.
    fn payload(&mut self, feed_id: i64, full: bool) -> Option<Value> {
        let feed = self.feeds.get_mut(&feed_id)?;
        let view = self.views.get(&self.hub, &feed.board)?;
        Self::payload_from(feed, &view, full)
    }

    fn handle(&mut self, text: &str, out: &mut Vec<Message>) {
        let req: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                out.push(call_error(Value::Null, format!("invalid JSON: {e}")));
                return;
            }
        };
        if !req.is_object() {
            out.push(call_error(Value::Null, "a request is a JSON object"));
            return;
        }
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        if !id.is_i64() && !id.is_u64() {
            out.push(call_error(id, "a call needs an integer \"id\""));
            return;
        }
        let param = req.get("param").cloned().unwrap_or(Value::Null);
        if !(param.is_object() || param.is_null()) {
            out.push(call_error(id, "\"param\" must be an object"));
            return;
        }
        match req.get("call").and_then(Value::as_str) {
            Some("eboards") => out.push(frame("call", id, eboards(&self.hub))),
            Some("subscribe") => self.subscribe(id, &param, out),
            Some("call") => self.method(id, &param, out),
            Some("unsubscribe") => {
                let feed = param.get("id").and_then(Value::as_i64);
                match feed.and_then(|f| self.feeds.remove(&f)) {
                    Some(_) => out.push(frame("call", id, Value::Null)),
                    None => out.push(call_error(id, "no such feed")),
                }
            }
            Some(other) => {
                let answer = self
                    .hub
                    .with_round(|r| super::livechess_rounds::call(r, other, &param));
                match answer {
                    Some(Ok(v)) => out.push(frame("call", id, v)),
                    Some(Err(e)) => out.push(call_error(id, e.to_string())),
                    None => out.push(call_error(id, format!("unknown call {other:?}"))),
                }
            }
            None => out.push(call_error(id, "a request needs a \"call\" name")),
        }
    }

    fn subscribe(&mut self, id: Value, param: &Value, out: &mut Vec<Message>) {
        let feed = param.get("feed").and_then(Value::as_str);
        if feed != Some("eboardevent") {
            out.push(call_error(
                id,
                format!("unknown feed {feed:?}; only \"eboardevent\""),
            ));
            return;
        }
        let Some(feed_id) = param.get("id").and_then(Value::as_i64) else {
            out.push(call_error(id, "subscribe needs an integer feed \"id\""));
            return;
        };
        let Some(serial) = param
            .get("param")
            .and_then(|p| p.get("serialnr"))
            .and_then(|s| {
                s.as_str()
                    .map(str::to_string)
                    .or_else(|| s.as_u64().map(|n| n.to_string()))
            })
        else {
            out.push(call_error(id, "subscribe needs param.param.serialnr"));
            return;
        };
        let Some(board) = self.board_of(&serial) else {
            out.push(call_error(id, format!("unknown e-board {serial:?}")));
            return;
        };
        if self.feeds.len() >= MAX_FEEDS && !self.feeds.contains_key(&feed_id) {
            out.push(call_error(
                id,
                format!("too many feeds on one connection (at most {MAX_FEEDS})"),
            ));
            return;
        }
        self.feeds.insert(
            feed_id,
            Feed {
                board,
                setup: None,
                flipped: None,
                last: None,
            },
        );
        out.push(frame("call", id, Value::Null));
        if let Some(p) = self.payload(feed_id, true) {
            out.push(frame("feed", feed_id.into(), p));
        }
    }

    fn method(&mut self, id: Value, param: &Value, out: &mut Vec<Message>) {
        let Some(feed_id) = param.get("id").and_then(Value::as_i64) else {
            out.push(call_error(id, "call needs the feed \"id\""));
            return;
        };
        let Some(feed) = self.feeds.get_mut(&feed_id) else {
            out.push(call_error(id, format!("no feed {feed_id}")));
            return;
        };
        let arg = param.get("param").cloned().unwrap_or(Value::Null);
        match param.get("method").and_then(Value::as_str) {
            Some("setup") => {
                let Some(fen) = arg.get("fen").and_then(Value::as_str) else {
                    out.push(call_error(id, "setup needs param.fen"));
                    return;
                };
                if !render::valid_fen(fen) {
                    out.push(call_error(id, format!("not a legal position: {fen:?}")));
                    return;
                }
                feed.setup = Some(fen.to_string());
            }
            Some("flip") => {
                let Some(flip) = arg.get("flip").and_then(Value::as_bool) else {
                    out.push(call_error(id, "flip needs param.flip (true or false)"));
                    return;
                };
                feed.flipped = Some(flip);
            }
            Some("unsubscribe") => {
                self.feeds.remove(&feed_id);
                out.push(frame("call", id, Value::Null));
                return;
            }
            other => {
                out.push(call_error(id, format!("unknown method {other:?}")));
                return;
            }
        }
        out.push(frame("call", id, Value::Null));
        if let Some(p) = self.payload(feed_id, false) {
            out.push(frame("feed", feed_id.into(), p));
        }
    }

    /// Frames for the feeds of `boards` (`None`: every feed, in full) after changes: one view
    /// per board.
    fn changed(&mut self, boards: Option<&BTreeSet<Arc<str>>>, out: &mut Vec<Message>) {
        let mut views: HashMap<String, Option<Arc<BoardView>>> = HashMap::new();
        for (&id, feed) in self.feeds.iter_mut() {
            if boards.is_some_and(|set| !set.contains(feed.board.as_str())) {
                continue;
            }
            let view = views
                .entry(feed.board.clone())
                .or_insert_with(|| self.views.get(&self.hub, &feed.board));
            if let Some(view) = view
                && let Some(p) = Self::payload_from(feed, view, boards.is_none())
            {
                out.push(frame("feed", id.into(), p));
            }
        }
    }
}

/// Feed LiveChess protocol text to a fresh session and return the frames it answers (for the
/// fuzz target of the message handler).
#[cfg(feature = "test-support")]
pub fn handle_for_fuzzing(hub: &Hub, texts: &[&str]) -> usize {
    let mut session = ApiClient {
        hub: hub.clone(),
        views: Arc::new(Views::default()),
        feeds: BTreeMap::new(),
    };
    let mut out = Vec::new();
    for t in texts {
        session.handle(t, &mut out);
    }
    session.changed(None, &mut out);
    out.len()
}

async fn send_all(socket: &mut WebSocket, out: Vec<Message>) -> bool {
    let write = async {
        for m in out {
            socket.feed(m).await?;
        }
        socket.flush().await
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(10), write).await,
        Ok(Ok(()))
    )
}

async fn client(mut socket: WebSocket, hub: Hub, views: Arc<Views>, stop: CancellationToken) {
    let _client = hub
        .metrics()
        .map(|m| m.client(super::metrics::ClientKind::LiveChess));
    let mut rx = hub.receiver();
    let mut session = ApiClient {
        hub,
        views,
        feeds: BTreeMap::new(),
    };
    loop {
        let mut out = Vec::new();
        tokio::select! {
            incoming = socket.recv() => match incoming {
                Some(Ok(Message::Text(t))) => session.handle(&t, &mut out),
                Some(Ok(Message::Binary(b))) => match std::str::from_utf8(&b) {
                    Ok(t) => session.handle(t, &mut out),
                    Err(_) => out.push(call_error(Value::Null, "frames are UTF-8 JSON")),
                },
                Some(Ok(_)) => {}
                None | Some(Err(_)) => break,
            },
            r = rx.recv() => {
                // Every event waiting now is taken at once: the feeds of a board are brought
                // up to date once per burst, not once per event.
                let mut boards = BTreeSet::new();
                let mut lagged = false;
                let mut closed = false;
                match r {
                    Ok(m) => {
                        boards.insert(m.board.clone());
                        loop {
                            match rx.try_recv() {
                                Ok(m) => { boards.insert(m.board.clone()); }
                                Err(TryRecvError::Lagged(_)) => { lagged = true; break; }
                                Err(TryRecvError::Closed) => { closed = true; break; }
                                Err(TryRecvError::Empty) => break,
                            }
                        }
                    }
                    Err(RecvError::Lagged(_)) => lagged = true,
                    Err(RecvError::Closed) => closed = true,
                }
                if closed {
                    break;
                }
                if !session.feeds.is_empty() {
                    // Missed changes: send every feed's full state.
                    session.changed((!lagged).then_some(&boards), &mut out);
                }
            },
            _ = stop.cancelled() => break,
        }
        if !out.is_empty() && !send_all(&mut socket, out).await {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::RoundInfo;
    use crate::output::hub::HubConfig;

    fn session(hub: &Hub, views: &Arc<Views>) -> ApiClient {
        ApiClient {
            hub: hub.clone(),
            views: views.clone(),
            feeds: BTreeMap::new(),
        }
    }

    /// A hub of round 1 with the one board `board-1`, and an empty view cache.
    fn one_board() -> (Hub, Arc<Views>) {
        let info = RoundInfo {
            round: 1,
            boards: vec!["board-1".into()],
            ..Default::default()
        };
        (
            Hub::new(info, HubConfig::default()),
            Arc::new(Views::default()),
        )
    }

    fn texts(out: &[Message]) -> Vec<Value> {
        out.iter()
            .map(|m| serde_json::from_str(m.to_text().unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn feeds_share_one_view_and_one_payload_per_setup() {
        let (hub, views) = one_board();
        let (mut a, mut b) = (session(&hub, &views), session(&hub, &views));
        let mut out = Vec::new();
        for s in [&mut a, &mut b] {
            s.handle(
                r#"{"id":1,"call":"subscribe","param":{"feed":"eboardevent","id":7,"param":{"serialnr":"board-1"}}}"#,
                &mut out,
            );
        }
        let v1 = views.get(&hub, "board-1").unwrap();
        let v2 = views.get(&hub, "board-1").unwrap();
        assert!(Arc::ptr_eq(&v1, &v2), "unchanged board: one copy");
        let (fa, fb) = (&a.feeds[&7], &b.feeds[&7]);
        assert!(Arc::ptr_eq(
            fa.last.as_ref().unwrap(),
            fb.last.as_ref().unwrap()
        ));
        // A change gives a new view.
        hub.set_status(
            "board-1",
            BoardStatus {
                comment: Some("x".into()),
                ..Default::default()
            },
        );
        let v3 = views.get(&hub, "board-1").unwrap();
        assert!(!Arc::ptr_eq(&v1, &v3));
    }

    #[test]
    fn a_connection_holds_a_bounded_number_of_feeds_and_objects_only() {
        let (hub, views) = one_board();
        let mut s = session(&hub, &views);
        let mut out = Vec::new();
        for id in 0..=MAX_FEEDS as i64 {
            out.clear();
            s.handle(
                &json!({"id": id, "call": "subscribe", "param": {"feed": "eboardevent", "id": id, "param": {"serialnr": "board-1"}}}).to_string(),
                &mut out,
            );
        }
        assert_eq!(s.feeds.len(), MAX_FEEDS);
        let last = texts(&out);
        assert_eq!(last[0]["response"], "error");
        out.clear();
        s.handle(r#"[{"id":1,"call":"eboards"}]"#, &mut out);
        assert_eq!(texts(&out)[0]["response"], "error");
    }
}
