//! The arbiter page in headless Chromium: six boards replayed to mid-round, one with an open
//! irregularity, one disconnected, one without a clock and a low battery, one finished. The page
//! is loaded by Debian's `chromium` (`--dump-dom` for DOM assertions, `--screenshot` for a
//! picture). Without Chromium the test fails with the reason (CI installs it, see `.ci/run`).
//!
//! `EBOARDD_UPDATE_SCREENSHOT=1 cargo test --release --test broadcast_web` rewrites
//! `docs/screenshot.png`.

use std::path::PathBuf;
use std::time::Duration;

mod support;
use support::capture;
use support::chromium::{chromium, rendered, run_chromium};

use eboardd::core::observation::OperatorAction;
use eboardd::output::replay_source;
use eboardd::output::{BoardStatus, Hub, HubConfig, LinkState, OutputConfig, RoundInfo};
use eboardd::replay::{Layout, Timeline};

async fn round() -> (Hub, eboardd::output::Outputs, replay_source::ReplayHandle) {
    let files = [
        "clean/g0001.jsonl",
        "clean/g0004.jsonl",
        "human/g0003.jsonl",
        "chess960/g0005.jsonl",
        "blitz/g0003.jsonl",
        "irregular/g0007.jsonl",
    ]
    .map(capture);
    let plan = Timeline::load(&files, Layout::Round)
        .unwrap()
        .until(600_000_000);
    let info = RoundInfo {
        event: Some("Bergen Open 2026".into()),
        round: 4,
        boards: plan.boards().map(String::from).collect(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let names = [
        ("Hansen, Ida", "Berg, Ola"),
        ("Nilsen, Kari", "Dahl, Per"),
        ("Lie, Nora", "Moen, Jon"),
        ("Strand, Eva", "Holm, Lars"),
        ("Vik, Anna", "Bakke, Tor"),
        ("Lund, Sara", "Ruud, Erik"),
    ];
    for (i, (w, b)) in names.iter().enumerate() {
        let pairing = serde_json::from_value(serde_json::json!({
            "white": {"name": w}, "black": {"name": b}
        }))
        .unwrap();
        hub.set_pairing(&format!("board-{}", i + 1), pairing)
            .unwrap();
    }
    let mut replay = replay_source::spawn(hub.clone(), plan, None);
    replay.wait_done().await;
    let active = |battery: &str| BoardStatus {
        state: LinkState::Active,
        source: Some("/dev/ttyUSB0".into()),
        clock_connected: Some(true),
        battery: Some(battery.into()),
        ..Default::default()
    };
    for i in [1, 4, 5, 6] {
        hub.set_status(&format!("board-{i}"), active("87%"));
    }
    hub.set_status(
        "board-2",
        BoardStatus {
            state: LinkState::Disconnected,
            ..active("64%")
        },
    );
    hub.set_status(
        "board-3",
        BoardStatus {
            clock_connected: Some(false),
            ..active("12%")
        },
    );
    // Every irregularity acknowledged but the last of board 6.
    let open: Vec<(String, u64)> = hub.with_round(|r| {
        r.boards()
            .iter()
            .flat_map(|b| b.irregularities.iter().map(|i| (b.id.clone(), i.id)))
            .collect()
    });
    let keep = open
        .iter()
        .rfind(|(b, _)| b == "board-6")
        .cloned()
        .expect("board 6 irregularity");
    for (b, id) in &open {
        if (b, id) != (&keep.0, &keep.1) {
            hub.acknowledge(b, *id).unwrap();
        }
    }
    // An arbiter's result on board 4.
    let mut rx = hub.receiver();
    hub.operator(
        "board-4",
        OperatorAction::SetResult {
            result: "1/2-1/2".into(),
        },
    )
    .unwrap();
    tokio::time::timeout(Duration::from_secs(10), async {
        while rx.recv().await.map(|m| m.kind)
            != Ok(eboardd::output::MsgKind::Event(
                eboardd::output::EventTag::GameEnded,
            ))
        {}
    })
    .await
    .expect("result set");
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    (hub, out, replay)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbiter_page_in_headless_chromium() {
    let Some(bin) = chromium() else {
        return;
    };
    let (_hub, out, replay) = round().await;
    let url = format!("http://{}/", out.http.unwrap());
    let work = std::env::temp_dir().join(format!("eboardd-web-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();

    let (b1, p1, u1) = (bin.clone(), work.join("profile-dom"), url.clone());
    let dom = tokio::task::spawn_blocking(move || run_chromium(&b1, &p1, &u1, &["--dump-dom"]))
        .await
        .unwrap();
    let dom = rendered(dom);
    // Six boards, rendered from the live API.
    assert_eq!(
        dom.matches("<section data-board=").count(),
        6,
        "six board cards:\n{dom}"
    );
    assert_eq!(
        dom.matches("class=\"sq ").count(),
        6 * 64,
        "six diagrams of 64 squares"
    );
    assert!(dom.contains("Bergen Open 2026 · round 4"));
    assert!(dom.contains("Hansen, Ida") && dom.contains("Ruud, Erik"));
    // The open irregularity, with its article and an acknowledge button; the others are gone.
    assert!(
        dom.contains("Art. 4.3b"),
        "open irregularity with its article"
    );
    assert!(dom.contains("Touched opponent's piece not captured"));
    assert_eq!(
        dom.matches("data-ack=").count(),
        1,
        "exactly one irregularity to acknowledge"
    );
    assert!(dom.contains("card alert"), "its board is highlighted");
    assert!(
        dom.contains("class=\"sq l irr\"")
            || dom.contains("class=\"sq d irr\"")
            || dom.contains(" irr\""),
        "its squares are marked"
    );
    // Connection health.
    assert!(dom.contains("DISCONNECTED"));
    assert!(dom.contains("no clock"));
    assert!(dom.contains("battery 12%"));
    // Results, last moves and clocks.
    assert!(dom.contains(">0-1<"), "board 5 ended by checkmate");
    assert!(dom.contains(">1/2-1/2<"), "board 4 adjudicated");
    assert!(dom.contains("last move:<br><b>"));
    assert!(dom.contains("data-clk=\"white\""));
    assert!(dom.contains("Chess960 #"));
    // The arbiter's corrections: a panel per board, its moves clickable to take back to.
    assert_eq!(
        dom.matches("<details class=\"fix\"").count(),
        6,
        "a corrections panel per board"
    );
    assert!(
        dom.matches("data-takeback=").count() > 6 * 10,
        "every move (and the start) can be taken back to"
    );
    assert!(dom.contains("data-fixact=\"replace\"") && dom.contains("data-fixact=\"position\""));
    assert!(dom.contains("data-fixact=\"rresult\"") && dom.contains("data-fixact=\"confirm\""));
    // The claims helper: a "Check a claim" panel per board.
    assert_eq!(
        dom.matches("<details class=\"claim\" data-claim=").count(),
        6,
        "a claims panel per board"
    );
    assert!(dom.contains("data-claimact=\"check\""));
    assert!(
        dom.contains("class=\"up\">live<"),
        "the WebSocket connected"
    );
    // Pieces are drawn (SVG), two kings on each of the six boards, one of each colour.
    assert_eq!(
        dom.matches("<use href=\"#pK\"").count(),
        12,
        "two kings per board"
    );
    assert_eq!(
        dom.matches("aria-label=\"white king\"").count(),
        6,
        "one white king per board"
    );
    assert!(!dom.contains('\u{2654}'), "no font glyphs for pieces");
    // The last move is marked on its two squares, on every board that has one.
    assert_eq!(dom.matches(" last from").count(), 6, "from-squares marked");
    assert_eq!(dom.matches(" last to").count(), 6, "to-squares marked");
    // Singular and plural.
    assert!(
        dom.contains("6 boards · ") && dom.contains(" 1 irregularity open"),
        "summary counts in words: {}",
        dom.split("id=\"summary\">")
            .nth(1)
            .unwrap_or("")
            .split('<')
            .next()
            .unwrap_or("")
    );
    assert!(dom.contains(" plies · "), "ply counts in the plural");

    let shot = work.join("screenshot.png");
    let (b2, p2, u2, s2) = (
        bin.clone(),
        work.join("profile-shot"),
        url.clone(),
        shot.clone(),
    );
    tokio::task::spawn_blocking(move || {
        run_chromium(
            &b2,
            &p2,
            &u2,
            &[
                &format!("--screenshot={}", s2.display()),
                "--window-size=1400,1000",
            ],
        )
    })
    .await
    .unwrap();
    let png = std::fs::read(&shot).expect("screenshot written");
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000,
        "a real screenshot"
    );
    if std::env::var_os("EBOARDD_UPDATE_SCREENSHOT").is_some() {
        let dest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/screenshot.png");
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(&dest, &png).unwrap();
    }

    // The one-board view: only board 6 shown, large, with its move list.
    let one = format!("{url}#board=board-6");
    let (b3, p3, u3) = (bin.clone(), work.join("profile-one"), one.clone());
    let dom = rendered(
        tokio::task::spawn_blocking(move || run_chromium(&b3, &p3, &u3, &["--dump-dom"]))
            .await
            .unwrap(),
    );
    assert!(
        dom.contains("<body class=\"single\">"),
        "single-board layout"
    );
    assert_eq!(
        dom.matches("<section data-board=").count(),
        6,
        "every card is still built"
    );
    assert_eq!(
        dom.matches("style=\"display: none;\"").count(),
        5,
        "five of them hidden"
    );
    assert!(
        dom.contains("class=\"moves\""),
        "the move list of the board shown"
    );
    assert_eq!(
        dom.matches("class=\"moves\"").count(),
        1,
        "only for that board"
    );
    let shot_one = work.join("screenshot-board.png");
    let (b4, p4, s4) = (bin.clone(), work.join("profile-shot-one"), shot_one.clone());
    tokio::task::spawn_blocking(move || {
        run_chromium(
            &b4,
            &p4,
            &one,
            &[
                &format!("--screenshot={}", s4.display()),
                "--window-size=1400,1000",
            ],
        )
    })
    .await
    .unwrap();
    let png_one = std::fs::read(&shot_one).expect("one-board screenshot written");
    assert!(png_one.starts_with(b"\x89PNG\r\n\x1a\n") && png_one.len() > 20_000);
    if std::env::var_os("EBOARDD_UPDATE_SCREENSHOT").is_some() {
        let dest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/screenshot-board.png");
        std::fs::write(&dest, &png_one).unwrap();
    }

    replay.stop();
    out.shutdown().await;
    let _ = std::fs::remove_dir_all(&work);
}
