//! `GET /metrics` of the live daemon: `eboardd run` against an emulated DGT board on a
//! pseudo-terminal plays a known game; the exposition, parsed by a Prometheus text-format
//! parser, agrees with the game and with `GET /api/v1/boards` (moves, games, boards by link
//! state, irregularities open, clients while event streams are open (WebSocket, SSE,
//! LiveChess), capture bytes). Then
//! Prometheus's own tools: `promtool check metrics` takes the exposition without a complaint,
//! and a real `prometheus` server scraping the daemon reports the same number of moves.
//! Without Debian's `prometheus` package the second test fails with the reason (CI installs
//! it, see `.ci/run`).

mod support;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;
use support::daemon::*;
use support::http::{self, free_port};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One scrape: every sample by metric name and its labels (sorted `k=v` pairs).
struct Scrape {
    samples: HashMap<(String, Vec<(String, String)>), f64>,
}

impl Scrape {
    /// The value of `name` with exactly `labels`; panics when there is no such sample.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let mut key: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        key.sort();
        *self
            .samples
            .get(&(name.to_string(), key))
            .unwrap_or_else(|| panic!("no sample {name}{labels:?} in /metrics"))
    }
}

/// Parses the exposition with a Prometheus text-format parser; checks the types it declares.
fn parse(text: &str) -> Scrape {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .expect("/metrics parses as the Prometheus text format");
    let mut samples = HashMap::new();
    for s in scrape.samples {
        let value = match (&s.value, s.metric.ends_with("_total")) {
            (prometheus_parse::Value::Counter(v), true) => *v,
            (prometheus_parse::Value::Gauge(v), false) => *v,
            (v, _) => panic!("{}: unexpected type {v:?}", s.metric),
        };
        let mut labels: Vec<(String, String)> = s
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        labels.sort();
        assert!(
            samples.insert((s.metric.clone(), labels), value).is_none(),
            "{}: a duplicate series",
            s.metric
        );
    }
    // Every sample line was understood (none silently skipped).
    let lines = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert_eq!(samples.len(), lines, "every sample of\n{text}");
    Scrape { samples }
}

/// `GET /metrics`: checks the status and the content type, returns the text.
fn metrics_text(port: u16) -> String {
    let r = http::get(http::local(port), "/metrics");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    r.body
}

/// Scrapes until `ok` holds (the daemon counts a client once it is set up), at most 10 s.
async fn scrape_until(port: u16, what: &str, ok: impl Fn(&Scrape) -> bool) -> Scrape {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = tokio::task::spawn_blocking(move || metrics_text(port))
            .await
            .unwrap();
        let s = parse(&text);
        if ok(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn boards(port: u16) -> Value {
    let r = http::get(http::local(port), "/api/v1/boards");
    assert_eq!(r.status, 200);
    serde_json::from_str(&r.body).unwrap()
}

/// Bytes in the capture files under `dir`.
fn capture_bytes(dir: &Path) -> u64 {
    let mut n = 0;
    for day in std::fs::read_dir(dir).unwrap().flatten() {
        if day.path().is_dir() {
            for f in std::fs::read_dir(day.path()).unwrap().flatten() {
                n += f.metadata().map_or(0, |m| m.len());
            }
        }
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_agree_with_the_game_and_the_api() {
    let one = single("metrics", 1, 41101, 1000.0, None);
    let (port, lc) = (free_port(), free_port());
    let (addr, lc_addr) = (format!("127.0.0.1:{port}"), format!("127.0.0.1:{lc}"));
    let mut d = one.start(&["--http", &addr, "--livechess", &lc_addr]);
    one.wait_done(&mut d, &one.id).await;
    let plies = one.game.moves.len();
    let completed = completed_plies(&d.events.lock().unwrap(), &one.id);
    assert_eq!(completed, plies);

    // The numbers of the game, as the API gives them.
    let api = boards(port);
    let list = api["boards"].as_array().unwrap();
    let board = list.iter().find(|b| b["board"] == one.id.as_str()).unwrap();
    let api_moves = board["game"]["moves"].as_array().unwrap().len();
    assert_eq!(api_moves, plies);
    let api_games: u64 = list.iter().map(|b| b["games"].as_u64().unwrap()).sum();
    let by_state = |state: &str| list.iter().filter(|b| b["link"] == state).count() as f64;
    let api_open = list
        .iter()
        .flat_map(|b| b["irregularities"].as_array().unwrap())
        .filter(|i| i["resolved"] == false)
        .count() as f64;

    let s = parse(
        &tokio::task::spawn_blocking(move || metrics_text(port))
            .await
            .unwrap(),
    );
    let retracted = s.value("eboardd_moves_retracted_total", &[]);
    assert_eq!(
        s.value("eboardd_moves_total", &[]) - retracted,
        plies as f64,
        "moves made less moves taken back: the plies of the game"
    );
    assert_eq!(s.value("eboardd_games_total", &[]), api_games as f64);
    assert_eq!(api_games, 1);
    for state in ["active", "not_responding", "disconnected", "unknown"] {
        assert_eq!(
            s.value("eboardd_boards", &[("state", state)]),
            by_state(state),
            "boards {state}"
        );
    }
    assert_eq!(s.value("eboardd_boards", &[("state", "active")]), 1.0);
    assert_eq!(s.value("eboardd_irregularities_open", &[]), api_open);
    for kind in ["bad_frame", "repair", "reset", "no_reply"] {
        s.value("eboardd_link_errors_total", &[("kind", kind)]);
    }
    for kind in ["ws", "sse", "livechess"] {
        assert_eq!(s.value("eboardd_clients", &[("kind", kind)]), 0.0, "{kind}");
    }
    let written = s.value("eboardd_capture_bytes_total", &[]);
    let on_disk = capture_bytes(&one.caps) as f64;
    assert!(
        written > 0.0 && written <= on_disk,
        "capture bytes {written}, on disk {on_disk}"
    );

    // Clients: an event-stream WebSocket, then a LiveChess one, each counted while open.
    let mut ws = support::streams::ws_connect(&format!("ws://{addr}/api/v1/events")).await;
    let first = support::streams::ws_next(&mut ws).await;
    assert_eq!(first["kind"], "snapshot");
    scrape_until(port, "one WebSocket client", |s| {
        s.value("eboardd_clients", &[("kind", "ws")]) == 1.0
    })
    .await;
    let (mut lcws, _) = tokio_tungstenite::connect_async(format!("ws://{lc_addr}/api/v1.0"))
        .await
        .expect("LiveChess WebSocket");
    let s = scrape_until(port, "one LiveChess client", |s| {
        s.value("eboardd_clients", &[("kind", "livechess")]) == 1.0
    })
    .await;
    assert_eq!(s.value("eboardd_clients", &[("kind", "ws")]), 1.0);
    // An SSE client, counted while its stream is open.
    let mut sse = tokio::net::TcpStream::connect(&addr).await.unwrap();
    sse.write_all(b"GET /api/v1/events/sse HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut head = [0u8; 64];
    let n = sse.read(&mut head).await.unwrap();
    assert!(head[..n].starts_with(b"HTTP/1.1 200"), "{:?}", &head[..n]);
    let s = scrape_until(port, "one SSE client", |s| {
        s.value("eboardd_clients", &[("kind", "sse")]) == 1.0
    })
    .await;
    assert_eq!(s.value("eboardd_clients", &[("kind", "livechess")]), 1.0);
    drop(sse);
    ws.close(None).await.unwrap();
    while ws.next().await.is_some() {}
    lcws.close(None).await.unwrap();
    while lcws.next().await.is_some() {}
    scrape_until(port, "the clients gone", |s| {
        ["ws", "sse", "livechess"]
            .iter()
            .all(|kind| s.value("eboardd_clients", &[("kind", kind)]) == 0.0)
    })
    .await;

    let id = one.id.clone();
    one.finish(d, &id).await;
}

/// Debian's Prometheus tools (`prometheus`, `promtool`); fails with the reason when missing.
fn prometheus_tools() -> (PathBuf, PathBuf) {
    let find = |name: &str| {
        ["/usr/bin", "/usr/local/bin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
    };
    let (server, tool) = (find("prometheus"), find("promtool"));
    // A test that cannot run fails with its reason: never a pass that checked nothing.
    assert!(
        server.is_some() && tool.is_some(),
        "prometheus/promtool are not installed: .ci/run must install Debian's prometheus package (APT_PACKAGES) (apt-get install prometheus)"
    );
    (server.unwrap(), tool.unwrap())
}

/// A Prometheus server started by the test, killed when dropped.
struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_takes_and_scrapes_the_metrics() {
    let (server, promtool) = prometheus_tools();
    let one = single("metrics-prometheus", 2, 41102, 1000.0, None);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut d = one.start(&["--http", &addr]);
    one.wait_done(&mut d, &one.id).await;
    let plies = one.game.moves.len() as f64;

    // promtool: the exposition is valid and lint-clean.
    let text = tokio::task::spawn_blocking(move || metrics_text(port))
        .await
        .unwrap();
    let mut check = Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    check
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = check.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics: {:?}\n{said}\non:\n{text}",
        out.status
    );
    let moves = parse(&text).value("eboardd_moves_total", &[]);
    let retracted = parse(&text).value("eboardd_moves_retracted_total", &[]);
    assert_eq!(moves - retracted, plies);

    // A real Prometheus server scraping the daemon every second.
    let dir = one.dir.join("prometheus");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  \
             - job_name: eboardd\n    metrics_path: /metrics\n    static_configs:\n      \
             - targets: ['{addr}']\n"
        ),
    )
    .unwrap();
    let web = free_port();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let prom = Prometheus(
        Command::new(&server)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{web}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start prometheus"),
    );
    let query = "/api/v1/query?query=eboardd_moves_total";
    let deadline = Instant::now() + Duration::from_secs(60);
    let value = loop {
        let got = tokio::task::spawn_blocking(move || http::try_get(http::local(web), query))
            .await
            .unwrap();
        if let Some(r) = got.filter(|r| r.status == 200) {
            let v: Value = serde_json::from_str(&r.body).unwrap();
            assert_eq!(v["status"], "success", "{v}");
            if let Some(sample) = v["data"]["result"].as_array().and_then(|a| a.first()) {
                assert_eq!(sample["metric"]["job"], "eboardd", "{v}");
                break sample["value"][1].as_str().unwrap().parse::<f64>().unwrap();
            }
        }
        assert!(
            Instant::now() < deadline,
            "prometheus did not scrape the daemon within 60 s; its log:\n{}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(value, moves, "eboardd_moves_total as Prometheus has it");
    drop(prom);

    let id = one.id.clone();
    one.finish(d, &id).await;
}
