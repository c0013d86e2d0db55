//! Load run of the broadcast side (not a test): many boards replaying sample captures at speed
//! into one `Hub` served over HTTP, and many WebSocket clients reading the event stream.
//! Reports published and delivered events per second, latency from publication (the moment the
//! event left the core) to a client's receipt (p50/p99/max), clients dropped or resynchronised,
//! and memory. Run it with `scripts/load_broadcast.sh` (release build).
//!
//! Server and clients run in one process, on separate tokio runtimes, sharing the machine's
//! cores: the numbers include the clients' own cost.
//!
//! Options: `--boards N` (200), `--clients N` (1000), `--speed X` (20), `--seconds S` (30).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio_tungstenite::tungstenite::Message;

use eboardd::output::replay_source;
use eboardd::output::{Hub, HubConfig, OutputConfig, RoundInfo};
use eboardd::replay::{Layout, Timeline};

fn arg<T: std::str::FromStr>(name: &str, default: T) -> T {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn captures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/captures");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&root).expect("captures") {
        let dir = dir.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_some_and(|e| e == "jsonl") {
                files.push(f);
            }
        }
    }
    files.sort();
    files
}

fn memory() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .filter(|l| l.starts_with("VmRSS") || l.starts_with("VmHWM"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `"seq":N` of an event line, without parsing the whole JSON.
fn seq_of(text: &str) -> Option<u64> {
    let i = text.find("\"seq\":")? + 6;
    let digits: String = text[i..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

#[derive(Default)]
struct Totals {
    delivered: AtomicU64,
    snapshots: AtomicU64,
    closed: AtomicU64,
}

fn main() {
    let boards: usize = arg("--boards", 200);
    let clients: usize = arg("--clients", 1000);
    let speed: f64 = arg("--speed", 20.0);
    let seconds: u64 = arg("--seconds", 30);
    if std::env::args().any(|a| a == "--help") {
        eprintln!("usage: broadcast_load [--boards N] [--clients N] [--speed X] [--seconds S]");
        return;
    }

    let all = captures();
    let files: Vec<PathBuf> = all.iter().cycle().take(boards).cloned().collect();
    let plan = Timeline::load(&files, Layout::Round).expect("load captures");
    let info = RoundInfo {
        boards: plan.boards().map(String::from).collect(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());

    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("server")
        .enable_all()
        .build()
        .unwrap();
    let outputs = server
        .block_on(eboardd::output::start(
            hub.clone(),
            &OutputConfig {
                http: Some("127.0.0.1:0".parse().unwrap()),
                ..Default::default()
            },
        ))
        .expect("start server");
    let addr = outputs.http.unwrap();

    // Publication instants by seq, recorded by an in-process receiver from `Published::at`.
    let published: Arc<std::sync::Mutex<Vec<Option<Instant>>>> =
        Arc::new(std::sync::Mutex::new(Vec::new()));
    {
        let published = published.clone();
        let mut rx = hub.receiver();
        server.spawn(async move {
            loop {
                match rx.recv().await {
                    Ok(m) => {
                        let mut p = published.lock().unwrap();
                        let i = m.seq as usize;
                        if p.len() <= i {
                            p.resize(i + 1, None);
                        }
                        p[i] = Some(m.at);
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(_) => break,
                }
            }
        });
    }

    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("clients")
        .enable_all()
        .build()
        .unwrap();
    let totals = Arc::new(Totals::default());
    let samples: Arc<std::sync::Mutex<Vec<(u64, Instant)>>> =
        Arc::new(std::sync::Mutex::new(Vec::new()));
    let url = format!("ws://{addr}/api/v1/events");
    let connect_started = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let url = url.clone();
            let totals = totals.clone();
            let samples = samples.clone();
            client_rt.spawn(async move {
                let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
                    .read_buffer_size(16 * 1024);
                let connect =
                    tokio_tungstenite::connect_async_with_config(&url, Some(config), false);
                let (mut ws, _) = match connect.await {
                    Ok(x) => x,
                    Err(e) => {
                        eprintln!("client {i}: {e}");
                        totals.closed.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                };
                let mut local = Vec::new();
                let mut n = 0u64;
                while let Some(Ok(m)) = ws.next().await {
                    let Message::Text(t) = m else { continue };
                    let now = Instant::now();
                    if t.contains("\"kind\":\"snapshot\"") {
                        totals.snapshots.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                    n += 1;
                    // Sample one message in 16 per client for latency.
                    if (n + i as u64).is_multiple_of(16)
                        && let Some(seq) = seq_of(&t)
                    {
                        local.push((seq, now));
                    }
                    if n.is_multiple_of(64) {
                        totals.delivered.fetch_add(64, Ordering::Relaxed);
                    }
                    if local.len() >= 4096 {
                        samples.lock().unwrap().append(&mut local);
                    }
                }
                totals.delivered.fetch_add(n % 64, Ordering::Relaxed);
                samples.lock().unwrap().append(&mut local);
                totals.closed.fetch_add(1, Ordering::Relaxed);
            })
        })
        .collect();
    // Wait until every client is subscribed (each holds one receiver; one more is ours).
    while hub.subscribers() < clients + 1 - totals.closed.load(Ordering::Relaxed) as usize {
        std::thread::sleep(Duration::from_millis(20));
        if connect_started.elapsed() > Duration::from_secs(60) {
            eprintln!("only {} clients connected", hub.subscribers() - 1);
            break;
        }
    }
    println!(
        "setup: {boards} boards, {clients} WebSocket clients connected in {:.1} s, speed {speed}x, {seconds} s",
        connect_started.elapsed().as_secs_f64()
    );
    println!("memory before replay: {}", memory());

    let start = Instant::now();
    let replay = replay_source::spawn(hub.clone(), plan, Some(speed));
    let mut last_delivered = 0;
    let mut peak_rss = String::new();
    for s in 1..=seconds {
        std::thread::sleep(Duration::from_secs(1));
        let d = totals.delivered.load(Ordering::Relaxed);
        if s.is_multiple_of(5) || s == seconds {
            println!(
                "t={s:>3}s published={} delivered/s≈{} clients alive={} {}",
                hub.last_seq(),
                d - last_delivered,
                clients - totals.closed.load(Ordering::Relaxed) as usize,
                memory()
            );
            peak_rss = memory();
        }
        last_delivered = d;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let published_n = hub.last_seq();
    let events_emitted = replay.events.load(Ordering::Relaxed);
    replay.stop();
    // Let clients drain, then close the server.
    std::thread::sleep(Duration::from_millis(500));
    let delivered = totals.delivered.load(Ordering::Relaxed);
    let closed_during = totals.closed.load(Ordering::Relaxed);
    let snapshots = totals.snapshots.load(Ordering::Relaxed);
    server.block_on(outputs.shutdown());
    for h in handles {
        let _ = client_rt.block_on(h);
    }
    let delivered = delivered.max(totals.delivered.load(Ordering::Relaxed));

    let published = published.lock().unwrap();
    let mut lat: Vec<f64> = samples
        .lock()
        .unwrap()
        .iter()
        .filter_map(|(seq, at)| {
            let p = published.get(*seq as usize).copied().flatten()?;
            Some(at.saturating_duration_since(p).as_secs_f64() * 1e3)
        })
        .collect();
    lat.sort_by(|a, b| a.total_cmp(b));
    let pct = |q: f64| {
        lat.get(((lat.len() as f64 - 1.0) * q) as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!("--- result ---");
    println!("boards {boards}, clients {clients}, speed {speed}x, {elapsed:.1} s");
    println!(
        "published: {published_n} events ({events_emitted} from the replay), {:.0} events/s",
        published_n as f64 / elapsed
    );
    println!(
        "delivered: {delivered} messages to clients, {:.0} messages/s ({:.1}% of published x clients)",
        delivered as f64 / elapsed,
        100.0 * delivered as f64 / (published_n as f64 * clients as f64).max(1.0)
    );
    println!(
        "latency publish->client (ms, {} samples): p50 {:.2}  p99 {:.2}  max {:.2}",
        lat.len(),
        pct(0.5),
        pct(0.99),
        lat.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "snapshots sent to lagging clients: {}; clients dropped during the run: {closed_during}",
        snapshots.saturating_sub(clients as u64),
    );
    println!("memory at end of replay: {peak_rss}");
}
