//! Readers of the broadcast event streams (SSE over plain HTTP, WebSocket), for the tests that
//! compare what the streams carry with other outputs.

use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

/// SSE over HTTP/1.0 (close-delimited body): data lines until the event with id `last`.
pub fn read_sse(addr: SocketAddr, path: &str, last: u64) -> Vec<(Option<u64>, String)> {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: test\r\nAccept: text/event-stream\r\n\r\n"
    )
    .unwrap();
    let mut reader = std::io::BufReader::new(s);
    let mut line = String::new();
    // Headers.
    loop {
        line.clear();
        std::io::BufRead::read_line(&mut reader, &mut line).expect("read header");
        if line == "\r\n" || line.is_empty() {
            break;
        }
    }
    let mut out = Vec::new();
    let (mut id, mut data) = (None, String::new());
    loop {
        line.clear();
        let n = std::io::BufRead::read_line(&mut reader, &mut line).expect("read sse");
        assert!(n > 0, "SSE stream ended early after {} events", out.len());
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            if !data.is_empty() {
                out.push((id, std::mem::take(&mut data)));
                if id == Some(last) {
                    return out;
                }
            }
            id = None;
        } else if let Some(v) = l.strip_prefix("id:") {
            id = v.trim().parse().ok();
        } else if let Some(v) = l.strip_prefix("data:") {
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
}

/// A WebSocket client.
pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Connects a WebSocket client to `url`.
pub async fn ws_connect(url: &str) -> Ws {
    let (ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("ws connect");
    ws
}

/// The next text frame, as sent (other frames skipped).
pub async fn ws_text(ws: &mut Ws) -> String {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("ws message in time")
            .expect("ws open")
            .expect("ws ok");
        if let Message::Text(t) = m {
            return t.to_string();
        }
    }
}

/// The next text frame, parsed.
pub async fn ws_next(ws: &mut Ws) -> Value {
    serde_json::from_str(&ws_text(ws).await).expect("JSON frame")
}

/// Event lines from a WebSocket until `last` (snapshots skipped; they are checked apart).
pub async fn ws_events_until(ws: &mut Ws, last: u64) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let t = ws_text(ws).await;
        let v: Value = serde_json::from_str(&t).unwrap();
        if v["kind"] == "snapshot" {
            continue;
        }
        let seq = v["seq"].as_u64().unwrap();
        out.push(t);
        if seq >= last {
            return out;
        }
    }
}
