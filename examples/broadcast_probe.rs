//! Client side of the broadcast probes (not a test): run against a separate `eboardd
//! serve-replay` process, so that server and clients can be pinned to different cores
//! (`scripts/probe_broadcast.sh` does it with `taskset`). One probe per run:
//!
//! - `ws URL CLIENTS SECONDS SPEED`: WebSocket clients on the event stream; prints events
//!   delivered and two lags, p50/p99/max. "Replay lag": arrival time minus the event's capture
//!   time scaled by SPEED, less the smallest such difference (the replay's start); it includes
//!   the core's own decision delays (an event can be decided on a later observation than the
//!   one whose time it carries), so compare it with a run without load. "Fan-out lag": arrival
//!   minus the first arrival of the same event at any client (every 10th event sampled): what
//!   serving many clients adds.
//! - `frames URL CLIENTS SECONDS SPEED` and `sse URL CLIENTS SECONDS SPEED`: the same two lags
//!   from clients that read the WebSocket's frames (or the SSE stream, over HTTP/1.0) straight
//!   from the socket, without a WebSocket library, and look only at the events' leading `seq` and
//!   `t`: cheap enough that one core keeps up with 1,000 clients at 1.5 M events/s, where the
//!   `ws` clients saturate their core and their own queueing shows in the lags. Both lags are
//!   sampled on every 10th event.
//! - `stamps FILE`: reads the server's `--events` lines on standard input (`eboardd
//!   serve-replay --events ... > >(broadcast_probe stamps FILE)`) and writes `seq wall-µs` of
//!   every 10th event to FILE, the moment the server's printer wrote it: the hub's publish time,
//!   seen from outside the server. With `PUBLISHED=FILE` in their environment, the client probes
//!   above report "publish → client": each arrival (wall clock, the same clock on one machine)
//!   less the publish stamp of its event. The printer follows the hub, not the fan-out, so the
//!   stamp is at most the printer's own scheduling delay late (an underestimate under load).
//! - `idle URL CLIENTS SECONDS`: WebSocket clients that connect, read what comes, and stay.
//! - `livechess URL CONNS FEEDS SECONDS`: LiveChess connections each subscribing FEEDS feeds
//!   round the boards, each with a `setup` position that occurs in no game.
//! - `slowloris ADDR CONNS SECONDS`: connections sending a request's headers one byte every
//!   5 s; prints how many the server closed and when, and the slowest health answer meanwhile.
//! - `uploads ADDR CONNS SECONDS`: unauthenticated 2 MB POSTs that stall after 64 KiB; prints
//!   how many were answered or closed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// The number after `key` in a JSON text.
fn field(text: &str, key: &str) -> Option<f64> {
    let i = text.find(key)? + key.len();
    let end = text[i..]
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
        .map_or(text.len(), |e| i + e);
    text[i..end].parse().ok()
}

/// The wall time at the client probe's `start` (its arrivals are seconds since then).
static WALL0: std::sync::OnceLock<f64> = std::sync::OnceLock::new();

/// Seconds since the Unix epoch, as a float (the clock the server's publish stamps use).
fn wall() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// `stamps FILE`: every 10th event's seq and the wall time its `--events` line came in.
fn stamps(out: &str) {
    use std::io::BufRead;
    let mut file = std::io::BufWriter::new(std::fs::File::create(out).expect("stamps file"));
    let stdin = std::io::stdin();
    for line in stdin.lock().split(b'\n') {
        let Ok(line) = line else { break };
        let at = wall();
        if let Some((seq, _)) = seq_and_t(&line)
            && seq.is_multiple_of(10)
        {
            writeln!(file, "{seq} {}", (at * 1e6) as u64).expect("write stamps");
            // Read at the report, after the server stopped: flushed per line is cheap enough
            // for a tenth of the events.
            file.flush().expect("write stamps");
        }
    }
}

/// Publish stamps (seq → wall seconds) from `PUBLISHED`, if set.
fn published() -> Option<std::collections::HashMap<u64, f64>> {
    let path = std::env::var("PUBLISHED").ok()?;
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    Some(
        text.lines()
            .filter_map(|l| {
                let (seq, us) = l.split_once(' ')?;
                Some((seq.parse().ok()?, us.parse::<f64>().ok()? / 1e6))
            })
            .collect(),
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

async fn ws_clients(url: String, clients: usize, seconds: u64, speed: Option<f64>) {
    let start = Instant::now();
    let _ = WALL0.set(wall());
    let samples = Arc::new(std::sync::Mutex::new(Vec::<f64>::new()));
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::<(u64, f64)>::new()));
    let connected = Arc::new(AtomicU64::new(0));
    let closed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for i in 0..clients {
        let (url, samples, connected, closed, arrivals) = (
            url.clone(),
            samples.clone(),
            connected.clone(),
            closed.clone(),
            arrivals.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let Ok((mut ws, _)) = tokio_tungstenite::connect_async(&url).await else {
                closed.fetch_add(1, Ordering::Relaxed);
                return;
            };
            connected.fetch_add(1, Ordering::Relaxed);
            let mut mine = Vec::new();
            let mut seen = Vec::new();
            let end = tokio::time::sleep(Duration::from_secs(seconds));
            tokio::pin!(end);
            loop {
                tokio::select! {
                    m = ws.next() => match m {
                        Some(Ok(Message::Text(t))) => {
                            if let Some(speed) = speed {
                                let now = start.elapsed().as_secs_f64();
                                // A quick scan, not a parse: the clients must stay cheaper than
                                // the server they measure.
                                if !t.contains("\"kind\":\"snapshot\"")
                                    && let (Some(t), Some(seq)) = (field(&t, "\"t\":"), field(&t, "\"seq\":"))
                                {
                                    mine.push(now - t / speed);
                                    if (seq as u64).is_multiple_of(10) {
                                        seen.push((seq as u64, now));
                                    }
                                }
                            }
                        }
                        Some(Ok(_)) => {}
                        _ => { closed.fetch_add(1, Ordering::Relaxed); break; }
                    },
                    _ = &mut end => break,
                }
            }
            samples.lock().unwrap().extend(mine);
            arrivals.lock().unwrap().extend(seen);
        }));
        if i % 50 == 49 {
            // Connect in waves rather than all at once (the listen backlog).
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    for t in tasks {
        let _ = t.await;
    }
    let arrivals = arrivals.lock().unwrap().clone();
    let mut s = samples.lock().unwrap().clone();
    if speed.is_some() {
        report_lags(&arrivals, &mut s);
    }
    println!(
        "clients {} connected, {} closed early; events delivered {}",
        connected.load(Ordering::Relaxed),
        closed.load(Ordering::Relaxed),
        s.len(),
    );
}

/// Print the fan-out lag (each arrival less the first arrival of the same event) and the replay
/// lag (`replay`: arrival less the event's scaled capture time, less the smallest of those).
fn report_lags(arrivals: &[(u64, f64)], replay: &mut [f64]) {
    let base = replay.iter().copied().fold(f64::INFINITY, f64::min);
    report_lags_as("", arrivals, replay, base);
}

/// [`report_lags`] of a part of a run, each line starting with `label`; `base` is the smallest
/// replay difference of the whole run.
fn report_lags_as(label: &str, arrivals: &[(u64, f64)], replay: &mut [f64], base: f64) {
    if let Some(published) = published() {
        let mut lag: Vec<f64> = arrivals
            .iter()
            .filter_map(|(seq, at)| {
                Some((WALL0.get().copied().unwrap_or(0.0) + at - published.get(seq)?) * 1000.0)
            })
            .collect();
        lag.sort_by(f64::total_cmp);
        println!(
            "{label}publish -> client ms p50 {:.1} p99 {:.1} max {:.1} ({} samples)",
            percentile(&lag, 0.5),
            percentile(&lag, 0.99),
            lag.last().copied().unwrap_or(f64::NAN),
            lag.len()
        );
    }
    for x in replay.iter_mut() {
        *x = (*x - base) * 1000.0;
    }
    replay.sort_by(f64::total_cmp);
    let mut first: std::collections::HashMap<u64, f64> = std::collections::HashMap::new();
    for &(seq, at) in arrivals {
        let e = first.entry(seq).or_insert(at);
        *e = e.min(at);
    }
    let mut fan: Vec<f64> = arrivals
        .iter()
        .map(|(seq, at)| (at - first[seq]) * 1000.0)
        .collect();
    fan.sort_by(f64::total_cmp);
    println!(
        "{label}spread between clients (arrival less the first client's) ms p50 {:.1} p99 {:.1} max {:.1} ({} samples)",
        percentile(&fan, 0.5),
        percentile(&fan, 0.99),
        fan.last().copied().unwrap_or(f64::NAN),
        fan.len()
    );
    println!(
        "{label}replay lag ms p50 {:.1} p99 {:.1} max {:.1}",
        percentile(replay, 0.5),
        percentile(replay, 0.99),
        replay.last().copied().unwrap_or(f64::NAN)
    );
}

/// `seq` and `t` of an event's JSON (`{"v":1,"seq":N,"t":T,...`); `None` for anything else.
fn seq_and_t(json: &[u8]) -> Option<(u64, f64)> {
    let rest = json.strip_prefix(br#"{"v":1,"seq":"#)?;
    let end = rest.iter().position(|c| !c.is_ascii_digit())?;
    let seq = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    let rest = rest[end..].strip_prefix(br#","t":"#)?;
    let end = rest
        .iter()
        .position(|c| !(c.is_ascii_digit() || *c == b'.'))?;
    let t = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    Some((seq, t))
}

/// The events whole in `buf` (WebSocket frames, or SSE events), consumed from it.
fn take_events(buf: &mut Vec<u8>, sse: bool, mut each: impl FnMut(&[u8])) {
    let mut at = 0;
    if sse {
        // `id: N\ndata: JSON\n\n` (the JSON is one line); comments are `:\n\n`.
        while let Some(nl) = memchr::memchr(b'\n', &buf[at..]) {
            let line = &buf[at..at + nl];
            if line.is_empty() {
                at += 1;
                continue;
            }
            if let Some(json) = line.strip_prefix(b"data: ") {
                each(json);
            }
            at += nl + 1;
        }
    } else {
        while buf.len() >= at + 2 {
            let (b0, len7) = (buf[at], (buf[at + 1] & 0x7F) as usize);
            let (head, len) = match len7 {
                126 if buf.len() >= at + 4 => {
                    (4, u16::from_be_bytes([buf[at + 2], buf[at + 3]]) as usize)
                }
                127 if buf.len() >= at + 10 => {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(&buf[at + 2..at + 10]);
                    (10, u64::from_be_bytes(b) as usize)
                }
                126 | 127 => break,
                n => (2, n),
            };
            if buf.len() < at + head + len {
                break;
            }
            if b0 & 0x0F == 1 {
                each(&buf[at + head..at + head + len]);
            }
            at += head + len;
        }
    }
    buf.drain(..at);
}

async fn raw_clients(url: String, sse: bool, clients: usize, seconds: u64, speed: f64) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url
        .strip_prefix("ws://")
        .or_else(|| url.strip_prefix("http://"))
        .expect("ws:// or http:// URL");
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let request = if sse {
        format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n")
    } else {
        format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
    };
    let start = Instant::now();
    let _ = WALL0.set(wall());
    let samples = Arc::new(std::sync::Mutex::new(Vec::<(f64, f64)>::new()));
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::<(u64, f64)>::new()));
    let (connected, closed, delivered) = (
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
    );
    let mut tasks = Vec::new();
    for i in 0..clients {
        let (host, request) = (host.to_string(), request.clone());
        let (samples, arrivals) = (samples.clone(), arrivals.clone());
        let (connected, closed, delivered) = (connected.clone(), closed.clone(), delivered.clone());
        tasks.push(tokio::spawn(async move {
            let Ok(mut s) = tokio::net::TcpStream::connect(&host).await else {
                closed.fetch_add(1, Ordering::Relaxed);
                return;
            };
            if s.write_all(request.as_bytes()).await.is_err() {
                closed.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let mut buf = Vec::with_capacity(64 * 1024);
            let mut head = true;
            let (mut mine, mut seen, mut n) = (Vec::new(), Vec::new(), 0u64);
            let end = tokio::time::sleep(Duration::from_secs(seconds));
            tokio::pin!(end);
            loop {
                let mut chunk = [0u8; 64 * 1024];
                let got = tokio::select! {
                    r = s.read(&mut chunk) => r,
                    _ = &mut end => break,
                };
                match got {
                    Ok(0) | Err(_) => {
                        closed.fetch_add(1, Ordering::Relaxed);
                        break;
                    }
                    Ok(k) => buf.extend_from_slice(&chunk[..k]),
                }
                if head {
                    let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        continue;
                    };
                    buf.drain(..i + 4);
                    head = false;
                    connected.fetch_add(1, Ordering::Relaxed);
                }
                let now = start.elapsed().as_secs_f64();
                take_events(&mut buf, sse, |json| {
                    if let Some((seq, t)) = seq_and_t(json) {
                        n += 1;
                        if seq.is_multiple_of(10) {
                            mine.push((now, now - t / speed));
                            seen.push((seq, now));
                        }
                    }
                });
            }
            delivered.fetch_add(n, Ordering::Relaxed);
            samples.lock().unwrap().extend(mine);
            arrivals.lock().unwrap().extend(seen);
        }));
        if i % 50 == 49 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    // Steady state: from 2 s after the last client connected (each was sent a snapshot of the
    // whole round as it came; that storm is in the first figures only).
    while connected.load(Ordering::Relaxed) + closed.load(Ordering::Relaxed) < clients as u64
        && start.elapsed() < Duration::from_secs(seconds)
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let steady = start.elapsed().as_secs_f64() + 2.0;
    for t in tasks {
        let _ = t.await;
    }
    let arrivals = arrivals.lock().unwrap().clone();
    let samples = samples.lock().unwrap().clone();
    let mut replay: Vec<f64> = samples.iter().map(|(_, lag)| *lag).collect();
    let base = replay.iter().copied().fold(f64::INFINITY, f64::min);
    report_lags(&arrivals, &mut replay);
    let late: Vec<(u64, f64)> = arrivals
        .iter()
        .filter(|(_, at)| *at >= steady)
        .copied()
        .collect();
    let mut late_replay: Vec<f64> = samples
        .iter()
        .filter(|(at, _)| *at >= steady)
        .map(|(_, lag)| *lag)
        .collect();
    report_lags_as(
        &format!("steady (from {steady:.1} s): "),
        &late,
        &mut late_replay,
        base,
    );
    println!(
        "clients {} connected, {} closed early; events delivered {}",
        connected.load(Ordering::Relaxed),
        closed.load(Ordering::Relaxed),
        delivered.load(Ordering::Relaxed),
    );
}

async fn livechess(url: String, conns: usize, feeds: usize, seconds: u64) {
    let mut tasks = Vec::new();
    for c in 0..conns {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let (mut ws, _) = tokio_tungstenite::connect_async(&url).await.expect("connect");
            ws.send(Message::Text(r#"{"id":1,"call":"eboards"}"#.into()))
                .await
                .unwrap();
            let boards: Vec<String> = loop {
                let Some(Ok(Message::Text(t))) = ws.next().await else {
                    return 0u64;
                };
                let v: Value = serde_json::from_str(&t).unwrap();
                if v["id"] == 1 {
                    break v["param"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|b| b["serialnr"].as_str().unwrap_or_default().to_string())
                        .collect();
                }
            };
            // A legal position that occurs in no game: kings and one rook.
            let fen = "8/8/8/8/8/2k5/8/R3K3 w - - 0 1";
            for f in 0..feeds {
                let id = (c * 100_000 + f) as i64;
                let serial = &boards[f % boards.len()];
                let sub = json!({"id": id, "call": "subscribe", "param": {"feed": "eboardevent", "id": id, "param": {"serialnr": serial}}});
                let setup = json!({"id": id + 50_000, "call": "call", "param": {"id": id, "method": "setup", "param": {"fen": fen}}});
                if ws.send(Message::Text(sub.to_string().into())).await.is_err()
                    || ws.send(Message::Text(setup.to_string().into())).await.is_err()
                {
                    break;
                }
            }
            let mut frames = 0u64;
            let end = tokio::time::sleep(Duration::from_secs(seconds));
            tokio::pin!(end);
            loop {
                tokio::select! {
                    m = ws.next() => match m { Some(Ok(_)) => frames += 1, _ => break },
                    _ = &mut end => break,
                }
            }
            frames
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap_or(0);
    }
    println!("livechess: {conns} connections x {feeds} feeds: {total} frames received");
}

fn health_ms(addr: SocketAddr) -> f64 {
    let t = Instant::now();
    let ok = (|| -> std::io::Result<bool> {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(b"GET /api/v1/health HTTP/1.1\r\nHost: p\r\nConnection: close\r\n\r\n")?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf)?;
        Ok(buf.starts_with(b"HTTP/1.1 200"))
    })()
    .unwrap_or(false);
    if ok {
        t.elapsed().as_secs_f64() * 1000.0
    } else {
        f64::INFINITY
    }
}

fn slowloris(addr: SocketAddr, conns: usize, seconds: u64) {
    let start = Instant::now();
    let closed_at = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    for chunk in 0..conns.div_ceil(50) {
        let closed_at = closed_at.clone();
        let n = 50.min(conns - chunk * 50);
        threads.push(std::thread::spawn(move || {
            let mut socks: Vec<Option<TcpStream>> =
                (0..n).map(|_| TcpStream::connect(addr).ok()).collect();
            for s in socks.iter().flatten() {
                let _ = s.set_nonblocking(true);
            }
            let head = b"GET /api/v1/health HTTP/1.1\r\nHost: p\r\nX-a: ";
            let mut i = 0;
            while start.elapsed() < Duration::from_secs(seconds) {
                for s in socks.iter_mut() {
                    let Some(sock) = s else { continue };
                    let byte = [head.get(i).copied().unwrap_or(b'a')];
                    let mut probe = [0u8; 64];
                    let gone = match sock.read(&mut probe) {
                        Ok(_) => true,
                        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                    } || sock.write(&byte).is_err();
                    if gone {
                        closed_at
                            .lock()
                            .unwrap()
                            .push(start.elapsed().as_secs_f64());
                        *s = None;
                    }
                }
                i += 1;
                std::thread::sleep(Duration::from_secs(5).min(Duration::from_millis(
                    5000 - (start.elapsed().as_millis() % 5000) as u64,
                )));
            }
        }));
    }
    let mut worst: f64 = 0.0;
    while start.elapsed() < Duration::from_secs(seconds) {
        worst = worst.max(health_ms(addr));
        std::thread::sleep(Duration::from_millis(500));
    }
    for t in threads {
        let _ = t.join();
    }
    let closed = closed_at.lock().unwrap().clone();
    println!(
        "slowloris: {}/{} connections closed by the server within {seconds} s (last at {:.1} s); slowest health answer {:.0} ms",
        closed.len(),
        conns,
        closed.iter().copied().fold(0.0, f64::max),
        worst
    );
}

fn uploads(addr: SocketAddr, conns: usize, seconds: u64) {
    let head = "POST /api/v1/boards/board-1/players HTTP/1.1\r\nHost: p\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n";
    let answered = Arc::new(AtomicU64::new(0));
    let sent = Arc::new(AtomicU64::new(0));
    let threads: Vec<_> = (0..conns)
        .map(|_| {
            let (answered, sent) = (answered.clone(), sent.clone());
            std::thread::spawn(move || {
                let Ok(mut s) = TcpStream::connect(addr) else {
                    return;
                };
                let _ = s.set_write_timeout(Some(Duration::from_secs(seconds)));
                let _ = s.write_all(head.as_bytes());
                // All of the body but its last byte, then a stall.
                let chunk = vec![b' '; 64 * 1024];
                let mut left = 2_097_152 - 1;
                while left > 0 {
                    let n = left.min(chunk.len());
                    match s.write(&chunk[..n]) {
                        Ok(n) => {
                            left -= n;
                            sent.fetch_add(n as u64, Ordering::Relaxed);
                        }
                        Err(_) => break,
                    }
                }
                let _ = s.set_read_timeout(Some(Duration::from_secs(seconds)));
                let mut buf = [0u8; 512];
                if matches!(s.read(&mut buf), Ok(n) if n > 0) {
                    answered.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_secs(seconds));
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(seconds));
    println!(
        "uploads: {conns} stalled 2 MB uploads; {} MB of body accepted by the server; {} answered so far",
        sent.load(Ordering::Relaxed) >> 20,
        answered.load(Ordering::Relaxed)
    );
    for t in threads {
        let _ = t.join();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n = |i: usize| -> u64 { args.get(i).and_then(|v| v.parse().ok()).unwrap_or(10) };
    // One thread: the probes run pinned to one core.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    match args.first().map(String::as_str) {
        Some("ws") => rt.block_on(ws_clients(
            args[1].clone(),
            n(2) as usize,
            n(3),
            Some(args.get(4).and_then(|v| v.parse().ok()).unwrap_or(1.0)),
        )),
        Some(mode @ ("frames" | "sse")) => rt.block_on(raw_clients(
            args[1].clone(),
            mode == "sse",
            n(2) as usize,
            n(3),
            args.get(4).and_then(|v| v.parse().ok()).unwrap_or(1.0),
        )),
        Some("stamps") => stamps(&args[1]),
        Some("idle") => rt.block_on(ws_clients(args[1].clone(), n(2) as usize, n(3), None)),
        Some("livechess") => rt.block_on(livechess(
            args[1].clone(),
            n(2) as usize,
            n(3) as usize,
            n(4),
        )),
        Some("slowloris") => slowloris(args[1].parse().unwrap(), n(2) as usize, n(3)),
        Some("uploads") => uploads(args[1].parse().unwrap(), n(2) as usize, n(3)),
        _ => eprintln!("usage: see the comment at the top of examples/broadcast_probe.rs"),
    }
}
