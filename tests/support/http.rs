//! A minimal HTTP/1.0 client for the tests: one request per connection, the whole response read
//! until the server closes it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// A parsed response: status code, headers (names lower-cased), body.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code of the status line.
    pub status: u16,
    /// The headers in order, names lower-cased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body, decoded as UTF-8 (lossily).
    pub body: String,
}

impl Response {
    /// The value of the first header called `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// `(status, headers, body)`.
    pub fn into_parts(self) -> (u16, Vec<(String, String)>, String) {
        (self.status, self.headers, self.body)
    }
}

/// The value of the first header called `name` (lower-case) in `headers`.
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A free localhost port (bound once and released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `127.0.0.1:port`.
pub fn local(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// One HTTP/1.0 request with `headers` and `body` (a `Content-Length` is always sent); `None` if
/// nobody listens, the exchange fails or the answer is not HTTP.
pub fn request(
    addr: impl ToSocketAddrs,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl AsRef<[u8]>,
) -> Option<Response> {
    let body = body.as_ref();
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut req = format!(
        "{method} {path} HTTP/1.0\r\nHost: localhost\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Response {
        status,
        headers,
        body: body.to_string(),
    })
}

/// A request to localhost `port` with the bearer token `token` (a body is sent as JSON);
/// panics when there is no answer.
pub fn with_token(port: u16, method: &str, path: &str, token: &str, body: &str) -> Response {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("Authorization", auth.as_str())];
    if !body.is_empty() {
        headers.push(("Content-Type", "application/json"));
    }
    request(local(port), method, path, &headers, body)
        .unwrap_or_else(|| panic!("no answer to {method} {path}"))
}

/// A GET; `None` if nobody listens or there is no answer.
pub fn try_get(addr: impl ToSocketAddrs, path: &str) -> Option<Response> {
    request(addr, "GET", path, &[], b"")
}

/// A GET, panicking when there is no answer.
pub fn get(addr: impl ToSocketAddrs, path: &str) -> Response {
    try_get(addr, path).unwrap_or_else(|| panic!("no HTTP answer to GET {path}"))
}

/// A GET on localhost `port`: (status code, body); `None` while nothing listens.
pub fn get_local(port: u16, path: &str) -> Option<(u16, String)> {
    try_get(local(port), path).map(|r| (r.status, r.body))
}

/// GET on localhost `port`, waiting (up to 20 s) for the server to listen; the JSON body of a
/// 200 (panics on another status).
pub async fn json_when_up(port: u16, path: &str) -> serde_json::Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Some((code, body)) = get_local(port, path) {
            assert_eq!(code, 200, "{path}: {body}");
            return serde_json::from_str(&body).expect("json");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing listens on {port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
