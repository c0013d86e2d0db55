//! A DGT LiveChess-compatible EBoards API (`broadcast.md` §4) on `ws://HOST:1982/api/v1.0`:
//! the `eboards` call, `subscribe` to the `eboardevent` feed, and the `setup` / `flip` /
//! `unsubscribe` methods on a feed, with LiveChess's JSON shapes, so tools written for LiveChess
//! work unchanged. `GET /api/v1.0/eboards` answers the same list over plain HTTP.
//!
//! `setup` and `flip` only change what this client's feed shows (the start position the SAN
//! list is counted from, the orientation flag); they never change a game.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{Message, WebSocket, WebSocketUpgrade};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::SinkExt;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::hub::Broadcaster;
use super::render;

#[derive(Clone)]
struct App {
    hub: Broadcaster,
    stop: tokio::sync::watch::Receiver<bool>,
}

/// The router of the EBoards API; connections close when `stop` turns true.
pub fn router(hub: Broadcaster, stop: tokio::sync::watch::Receiver<bool>) -> Router {
    Router::new()
        .route("/api/v1.0", get(ws))
        .route("/api/v1.0/", get(ws))
        .route("/api/v1.0/eboards", get(eboards_http))
        .with_state(App { hub, stop })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn eboards(hub: &Broadcaster) -> Value {
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
        [(header::CONTENT_TYPE, super::http::JSON_TYPE)],
        eboards(&app.hub).to_string(),
    )
        .into_response()
}

async fn ws(State(app): State<App>, ws: WebSocketUpgrade) -> Response {
    ws.max_message_size(64 * 1024)
        .on_upgrade(move |socket| client(socket, app.hub, app.stop))
}

/// One subscription of one client.
#[derive(Debug)]
struct Feed {
    /// Board id.
    board: String,
    setup: Option<String>,
    flipped: Option<bool>,
    /// The last payload sent (to omit unchanged `board` / `clock`).
    last: Option<Value>,
}

struct Session {
    hub: Broadcaster,
    feeds: BTreeMap<i64, Feed>,
}

fn frame(response: &str, id: Value, param: Value) -> Message {
    let v = json!({"response": response, "id": id, "param": param, "time": now_ms()});
    Message::Text(v.to_string().into())
}

fn call_error(id: Value, message: impl Into<String>) -> Message {
    frame("error", id, json!({"message": message.into()}))
}

impl Session {
    /// The board id whose serial number (or id) is `serialnr`.
    fn board_of(&self, serialnr: &str) -> Option<String> {
        self.hub.with_round(|r| {
            r.boards()
                .iter()
                .find(|b| render::serialnr(b) == serialnr || b.id == serialnr)
                .map(|b| b.id.clone())
        })
    }

    /// The feed payload of `feed` now, with unchanged `board`/`clock` omitted unless `full`.
    fn payload(&mut self, feed_id: i64, full: bool) -> Option<Value> {
        let feed = self.feeds.get_mut(&feed_id)?;
        let mut v = self.hub.with_round(|r| {
            let b = r.board(&feed.board)?;
            let flipped = feed
                .flipped
                .unwrap_or_else(|| b.game().is_some_and(|g| g.reversed));
            Some(render::eboard_event(r, b, feed.setup.as_deref(), flipped))
        })?;
        let previous = feed.last.replace(v.clone());
        if full {
            return Some(v);
        }
        let prev = previous?;
        if prev == v {
            return None;
        }
        if let Value::Object(map) = &mut v {
            for key in ["board", "clock"] {
                if prev.get(key) == map.get(key) {
                    map.remove(key);
                }
            }
        }
        Some(v)
    }

    fn handle(&mut self, text: &str, out: &mut Vec<Message>) {
        let req: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                out.push(call_error(Value::Null, format!("invalid JSON: {e}")));
                return;
            }
        };
        let id = req.get("id").cloned().unwrap_or(Value::Null);
        if !id.is_i64() && !id.is_u64() {
            out.push(call_error(id, "a call needs an integer \"id\""));
            return;
        }
        let param = req.get("param").cloned().unwrap_or(Value::Null);
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
            Some(other) => out.push(call_error(id, format!("unknown call {other:?}"))),
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
        if self.feeds.len() >= 1000 && !self.feeds.contains_key(&feed_id) {
            out.push(call_error(id, "too many feeds on one connection"));
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

    /// Frames for the feeds of `board` after a change.
    fn changed(&mut self, board: Option<&str>, out: &mut Vec<Message>) {
        let ids: Vec<i64> = self
            .feeds
            .iter()
            .filter(|(_, f)| board.is_none_or(|b| f.board == b))
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            if let Some(p) = self.payload(id, board.is_none()) {
                out.push(frame("feed", id.into(), p));
            }
        }
    }
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

async fn client(
    mut socket: WebSocket,
    hub: Broadcaster,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut rx = hub.receiver();
    let mut session = Session {
        hub,
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
            r = rx.recv() => match r {
                Ok(m) => {
                    if !session.feeds.is_empty() {
                        session.changed(Some(&m.board), &mut out);
                    }
                }
                // Missed changes: send every feed's full state.
                Err(RecvError::Lagged(_)) => session.changed(None, &mut out),
                Err(RecvError::Closed) => break,
            },
            _ = super::stopped(&mut stop) => break,
        }
        if !out.is_empty() && !send_all(&mut socket, out).await {
            break;
        }
    }
}
