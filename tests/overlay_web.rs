//! The overlays for streams and venue screens (`/overlay/BOARD`, `/overlay/round`): plain HTTP
//! (pages, scripts, a 404 for an unknown board, the delayed view under a broadcast delay), and
//! `eboardd demo` rendered by headless Chromium: the names and both clocks in the DOM, and
//! screenshots at 1920×1080 and 640×360 with transparent pixels around what is drawn. Without
//! Chromium the test fails with the reason (CI installs it, see `.ci/run`).
//!
//! `EBOARDD_UPDATE_SCREENSHOT=1 cargo test --test overlay_web` rewrites
//! `docs/screenshot-overlay.png` and `docs/screenshot-overlay-round.png`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod support;
use support::capture;
use support::chromium::{Image, chromium, run_chromium};
use support::daemon::{bin, scratch};
use support::http::{free_port, get, local, request, try_get};

use eboardd::output::replay_source;
use eboardd::output::{BoardStatus, Hub, HubConfig, LinkState, OutputConfig, RoundInfo};
use eboardd::replay::{Layout, Timeline};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlay_routes_over_http_and_the_delayed_view() {
    let info = RoundInfo {
        event: Some("Overlay Open".into()),
        round: 2,
        boards: vec!["board-1".into(), "board-2".into()],
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        token: Some("overlay-token".into()),
        delay: Some(Duration::from_secs(300)),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let addr = out.http.unwrap();
    let r = tokio::task::spawn_blocking(move || {
        let page = get(addr, "/overlay/board-1");
        assert_eq!(page.status, 200);
        assert!(
            page.header("content-type")
                .is_some_and(|t| t.starts_with("text/html")),
            "{:?}",
            page.headers
        );
        // The server's security headers stay.
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            page.header("content-security-policy"),
            Some("frame-ancestors 'none'")
        );
        assert!(page.body.contains("html, body { background:transparent"));
        assert!(page.body.contains("<script src=\"/web/overlay.js\">"));
        // By board number too, and the round's strip.
        assert_eq!(get(addr, "/overlay/2").status, 200);
        let round = get(addr, "/overlay/round");
        assert_eq!(round.status, 200);
        assert!(round.body.contains("data-view=\"round\""));
        // The scripts, shared with the arbiter page.
        for js in ["/web/chess.js", "/web/overlay.js"] {
            let r = get(addr, js);
            assert_eq!(r.status, 200, "{js}");
            assert_eq!(
                r.header("content-type"),
                Some("text/javascript; charset=utf-8")
            );
        }
        assert!(
            get(addr, "/")
                .body
                .contains("<script src=\"/web/chess.js\">")
        );
        // Unknown boards: 404 with one line.
        for bad in ["/overlay/nope", "/overlay/3", "/overlay/0"] {
            let r = get(addr, bad);
            assert_eq!(r.status, 404, "{bad}");
            assert!(
                r.header("content-type")
                    .is_some_and(|t| t.starts_with("text/plain"))
            );
            assert_eq!(r.body.trim_end().lines().count(), 1, "{}", r.body);
            assert!(r.body.starts_with("no board "), "{}", r.body);
        }
        addr
    })
    .await
    .unwrap();
    // A board that appears live is not on the public (delayed) view yet: the overlay, a public
    // page, answers from that view even for a request with the token.
    hub.set_status(
        "board-7",
        BoardStatus {
            state: LinkState::Active,
            ..Default::default()
        },
    );
    tokio::task::spawn_blocking(move || {
        let bearer = [("Authorization", "Bearer overlay-token")];
        let live = request(r, "GET", "/api/v1/boards/board-7", &bearer, b"").unwrap();
        assert_eq!(live.status, 200, "live view: {}", live.body);
        assert_eq!(get(r, "/api/v1/boards/board-7").status, 404, "public view");
        let overlay = request(r, "GET", "/overlay/board-7", &bearer, b"").unwrap();
        assert_eq!(overlay.status, 404, "the overlay shows the delayed view");
    })
    .await
    .unwrap();
    out.shutdown().await;
}

/// `eboardd demo` as a child process, killed when dropped.
struct Demo {
    child: Child,
    dir: PathBuf,
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Poll `f` every 100 ms until it gives a value, at most `limit`.
fn poll<T>(limit: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

/// The text of the element with `attr` in `dom` (up to the next tag).
fn text_of<'a>(dom: &'a str, attr: &str) -> Option<&'a str> {
    let at = dom.find(attr)?;
    let rest = &dom[at..];
    let start = rest.find('>')? + 1;
    let end = rest[start..].find('<')?;
    Some(&rest[start..start + end])
}

/// A clock as the overlay writes it: `m:ss`, `h:mm:ss` or `0:ss.t`.
fn is_clock_text(s: &str) -> bool {
    let (main, tenth) = s.split_once('.').unwrap_or((s, "0"));
    let parts: Vec<&str> = main.split(':').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
        && parts[1..].iter().all(|p| p.len() == 2)
        && tenth.len() == 1
        && tenth.bytes().all(|c| c.is_ascii_digit())
}

fn screenshot(bin: &Path, work: &Path, url: &str, name: &str, size: (u32, u32)) -> Vec<u8> {
    let shot = work.join(format!("{name}-{}x{}.png", size.0, size.1));
    run_chromium(
        bin,
        &work.join(format!("profile-{name}-{}", size.0)),
        url,
        &[
            &format!("--screenshot={}", shot.display()),
            &format!("--window-size={},{}", size.0, size.1),
            "--default-background-color=00000000",
        ],
    );
    std::fs::read(&shot).expect("screenshot written")
}

/// A screenshot of `size`, transparent somewhere and drawn somewhere.
fn assert_transparent_and_drawn(png: &[u8], size: (u32, u32), what: &str) {
    let img = Image::decode(png);
    assert_eq!((img.width, img.height), size, "{what}: screenshot size");
    let (clear, drawn) = img.alpha_counts();
    let total = (size.0 * size.1) as usize;
    assert!(
        clear > total / 10,
        "{what}: transparent background ({clear} of {total} pixels clear)"
    );
    assert!(
        drawn > total / 50,
        "{what}: something drawn ({drawn} of {total} pixels not transparent)"
    );
}

#[test]
fn overlays_of_the_demo_in_headless_chromium() {
    let Some(chrome) = chromium() else {
        return;
    };
    let port = free_port();
    let dir = scratch("overlay-demo");
    let child = Command::new(bin())
        .args(["demo", "--boards", "4", "--speed", "10", "--http"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--capture-dir")
        .arg(dir.join("captures"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start eboardd demo");
    let _demo = Demo {
        child,
        dir: dir.clone(),
    };
    let addr = local(port);
    // Board 1 with its players, a clock and a few moves.
    let board: Value = poll(Duration::from_secs(60), "board-1 with a clock", || {
        let r = try_get(addr, "/api/v1/boards/board-1")?;
        let v: Value = serde_json::from_str(&r.body).ok()?;
        let moves = v["game"]["moves"].as_array().map_or(0, Vec::len);
        (r.status == 200 && v["clock"].is_object() && moves >= 4).then_some(v)
    });
    let white = board["white"]["name"]
        .as_str()
        .expect("white's name")
        .to_string();
    let black = board["black"]["name"]
        .as_str()
        .expect("black's name")
        .to_string();

    let work = dir.join("chromium");
    std::fs::create_dir_all(&work).unwrap();
    let url = format!("http://{addr}/overlay/board-1");
    let dom = run_chromium(&chrome, &work.join("profile-dom"), &url, &["--dump-dom"]);
    assert!(
        dom.contains(&white) && dom.contains(&black),
        "names:\n{dom}"
    );
    for side in ["white", "black"] {
        let clock = text_of(&dom, &format!("data-clk=\"{side}\"")).unwrap_or("");
        assert!(is_clock_text(clock), "{side}'s clock {clock:?}:\n{dom}");
    }
    assert_eq!(dom.matches("class=\"sq ").count(), 64, "a diagram");
    assert_eq!(dom.matches("<use href=\"#pK\"").count(), 2, "two kings");
    assert!(dom.contains("class=\"last\">"), "the last move");
    assert!(dom.contains("Board 1 · eboardd demo · round 1"), "{dom}");
    // The same board by its number.
    let by_number = format!("http://{addr}/overlay/1");
    let dom1 = run_chromium(
        &chrome,
        &work.join("profile-num"),
        &by_number,
        &["--dump-dom"],
    );
    assert!(dom1.contains(&white) && dom1.contains(&black));

    // The round's strip: every board, its number and names.
    let round_url = format!("http://{addr}/overlay/round");
    let strip = run_chromium(
        &chrome,
        &work.join("profile-round"),
        &round_url,
        &["--dump-dom"],
    );
    assert_eq!(strip.matches(" data-board=\"board-").count(), 4, "{strip}");
    let all: Value = serde_json::from_str(&get(addr, "/api/v1/boards").body).unwrap();
    for b in all["boards"].as_array().unwrap() {
        for side in ["white", "black"] {
            // "Last, First" shown as "Last, F.", the whole name as its title.
            let name = b[side]["name"].as_str().unwrap();
            assert!(
                strip.contains(&format!("title=\"{name}\"")),
                "{name} on the strip"
            );
            let (last, first) = name.split_once(", ").unwrap();
            let short = format!("{last}, {}.", first.chars().next().unwrap());
            assert!(
                strip.contains(&format!(">{short}<")),
                "{short} on the strip"
            );
        }
    }
    assert!(strip.contains("<span class=\"num\">4</span>"));

    for (name, url) in [("board", &url), ("round", &round_url)] {
        for size in [(1920, 1080), (640, 360)] {
            let png = screenshot(&chrome, &work, url, name, size);
            assert_transparent_and_drawn(&png, size, &format!("{name} overlay {size:?}"));
            if size.0 == 1920 && std::env::var_os("EBOARDD_UPDATE_SCREENSHOT").is_some() {
                let file = if name == "board" {
                    "docs/screenshot-overlay.png"
                } else {
                    "docs/screenshot-overlay-round.png"
                };
                std::fs::write(Path::new(env!("CARGO_MANIFEST_DIR")).join(file), &png).unwrap();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlay_shows_titles_ratings_and_the_result() {
    let Some(chrome) = chromium() else {
        return;
    };
    // A finished game (checkmate) on board 1.
    let plan = Timeline::load(&[capture("blitz/g0003.jsonl")], Layout::Round).unwrap();
    let info = RoundInfo {
        event: Some("Overlay Open".into()),
        round: 3,
        boards: plan.boards().map(String::from).collect(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let board = hub.with_round(|r| r.boards()[0].id.clone());
    let pairing = serde_json::from_value(serde_json::json!({
        "white": {"name": "Carlsen, Magnus", "title": "GM", "elo": 2830, "federation": "NOR"},
        "black": {"name": "Hou, Yifan", "title": "GM", "elo": 2633, "federation": "CHN"},
    }))
    .unwrap();
    hub.set_pairing(&board, pairing).unwrap();
    let mut replay = replay_source::spawn(hub.clone(), plan, None);
    replay.wait_done().await;
    let (result, reason) = hub.with_round(|r| {
        let v = eboardd::output::model::board_json(r, r.board(&board).unwrap());
        (
            v["game"]["result"].as_str().unwrap().to_string(),
            v["game"]["reason"].as_str().unwrap_or("").replace('_', " "),
        )
    });
    assert_ne!(result, "*", "the capture's game ends");
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let url = format!("http://{}/overlay/{board}", out.http.unwrap());
    let work = scratch("overlay-result");
    let w = work.clone();
    let dom = tokio::task::spawn_blocking(move || {
        run_chromium(&chrome, &w.join("profile"), &url, &["--dump-dom"])
    })
    .await
    .unwrap();
    assert!(
        dom.contains("<span class=\"title\">GM</span><span class=\"pname\">Carlsen, Magnus</span>"),
        "{dom}"
    );
    assert!(
        dom.contains("2830 · NOR") && dom.contains("2633 · CHN"),
        "ratings"
    );
    let shown = if result == "1/2-1/2" {
        "½-½"
    } else {
        &result
    };
    assert!(
        dom.contains(&format!("<span class=\"res\">{shown}</span>")),
        "result {shown}:\n{dom}"
    );
    assert!(dom.contains(&reason), "reason {reason}");
    // Nothing runs once the game is over: no clock highlighted as running.
    assert!(!dom.contains("clk run"), "a stopped clock");
    replay.stop();
    out.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}

/// Seconds of a clock text (`m:ss`, `h:mm:ss`, `0:ss.t`).
fn clock_secs(s: &str) -> f64 {
    s.split(':')
        .fold(0.0, |acc, p| acc * 60.0 + p.parse::<f64>().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlay_clock_counts_down_between_updates() {
    clock_counts_down(Overlay::Board).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round_overlay_shows_both_clocks_counting_down() {
    clock_counts_down(Overlay::Round).await;
}

/// Which overlay a clock test looks at.
#[derive(Clone, Copy)]
enum Overlay {
    /// `/overlay/BOARD`: its clocks are `data-clk="SIDE"`, class `clk`.
    Board,
    /// `/overlay/round`: each cell's clocks are `data-rclk="SIDE"`, class `ck`.
    Round,
}

/// A game stopped mid-way on the overlay for six seconds of page time: the running side's
/// clock counted down by about that, the other stayed, the running one marked.
async fn clock_counts_down(overlay: Overlay) {
    let Some(chrome) = chromium() else {
        return;
    };
    // A game stopped mid-way: its last clock state has a side running, and no update follows.
    let plan = Timeline::load(&[capture("clean/g0001.jsonl")], Layout::Round)
        .unwrap()
        .until(600_000_000);
    let info = RoundInfo {
        boards: plan.boards().map(String::from).collect(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let mut replay = replay_source::spawn(hub.clone(), plan, None);
    replay.wait_done().await;
    let (board, clock) = hub.with_round(|r| {
        let b = &r.boards()[0];
        let v = eboardd::output::model::board_json(r, b);
        (b.id.clone(), v["clock"].clone())
    });
    let running = clock["running"]
        .as_str()
        .expect("a clock running at 600 s")
        .to_string();
    let stopped = if running == "white" { "black" } else { "white" };
    let ms = |side: &str| clock[side].as_f64().unwrap();
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let (path, attr, class) = match overlay {
        Overlay::Board => (board.clone(), "data-clk", "clk"),
        Overlay::Round => ("round".to_string(), "data-rclk", "ck"),
    };
    let url = format!("http://{}/overlay/{path}", out.http.unwrap());
    let work = scratch(&format!("overlay-countdown-{path}"));
    let w = work.clone();
    // Six seconds of the page's (virtual) time.
    let dom = tokio::task::spawn_blocking(move || {
        run_chromium(
            &chrome,
            &w.join("profile"),
            &url,
            &["--dump-dom", "--virtual-time-budget=6000"],
        )
    })
    .await
    .unwrap();
    let shown = |side: &str| {
        let t = text_of(&dom, &format!("{attr}=\"{side}\"")).unwrap_or("");
        assert!(is_clock_text(t), "{side}'s clock {t:?}:\n{dom}");
        clock_secs(t)
    };
    // The running side counted down by about the page's time, the other stayed.
    let ran = ms(&running) / 1000.0 - shown(&running);
    assert!(
        (3.0..=7.0).contains(&ran),
        "{running}'s clock ran {ran} s in 6 s of page time"
    );
    let stayed = ms(stopped) / 1000.0 - shown(stopped);
    assert!(
        (0.0..1.0).contains(&stayed),
        "{stopped}'s clock stays ({stayed} s)"
    );
    assert!(
        dom.contains(&format!("class=\"{class} run\" {attr}=\"{running}\"")),
        "the running clock marked"
    );
    eprintln!("{running}'s clock ran {ran:.1} s, {stopped}'s {stayed:.1} s");
    replay.stop();
    out.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}
