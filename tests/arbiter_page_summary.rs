//! The arbiter page's summary line in headless Chromium: an irregularity put right is not
//! counted as open, and a board that is disconnected is not counted as playing (what the page
//! reads, `GET /api/v1/boards`, is checked alongside). Without Chromium the test fails with the
//! reason (CI installs it, see `.ci/run`).

use std::time::Duration;

mod support;
use support::capture;
use support::chromium::{chromium, rendered_page};

use eboardd::output::replay_source;
use eboardd::output::{BoardStatus, Hub, HubConfig, LinkState, OutputConfig, RoundInfo};
use eboardd::replay::{Layout, Timeline};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_counts_only_open_irregularities_and_boards_playing() {
    let Some(bin) = chromium() else {
        return;
    };
    let files = ["human/g0003.jsonl", "irregular/g0001.jsonl"].map(capture);
    let plan = Timeline::load(&files, Layout::Round).unwrap();
    let info = RoundInfo {
        event: Some("Summary Open".into()),
        round: 1,
        boards: plan.boards().map(String::from).collect(),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let mut replay = replay_source::spawn(hub.clone(), plan, None);
    replay.wait_done().await;
    let status = |state| BoardStatus {
        state,
        source: Some("/dev/ttyUSB0".into()),
        clock_connected: Some(true),
        ..Default::default()
    };
    hub.set_status("board-1", status(LinkState::Disconnected));
    hub.set_status("board-2", status(LinkState::Active));
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let addr = out.http.unwrap();

    // What the page reads: both games running, board 1 disconnected, and on board 2 both
    // open irregularities and ones put right (neither acknowledged).
    let api: Value = {
        let r = tokio::task::spawn_blocking(move || support::http::get(addr, "/api/v1/boards"))
            .await
            .unwrap();
        serde_json::from_str(&r.body).unwrap()
    };
    let boards = api["boards"].as_array().unwrap();
    assert_eq!(boards.len(), 2);
    let running = |b: &Value| b["game"]["result"] == "*";
    assert!(boards.iter().all(running), "{api}");
    assert_eq!(boards[0]["link"], "disconnected", "{api}");
    let irr: Vec<&Value> = boards
        .iter()
        .flat_map(|b| b["irregularities"].as_array().unwrap())
        .filter(|i| i["acknowledged"] != true)
        .collect();
    let open = irr.iter().filter(|i| i["resolved"] != true).count();
    let put_right = irr.len() - open;
    assert!(put_right > 0 && open > 0, "{api}");

    let dom = rendered_page(&bin, "summary", format!("http://{addr}/")).await;
    let summary = dom
        .split("id=\"summary\">")
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or("")
        .to_string();
    let open_words = if open == 1 {
        "1 irregularity open".to_string()
    } else {
        format!("{open} irregularities open")
    };
    assert!(summary.contains("2 boards · 1 playing · "), "{summary:?}");
    assert!(
        summary.contains(&open_words),
        "{summary:?} ({open} open, {put_right} put right)"
    );
    tokio::time::timeout(Duration::from_secs(10), out.shutdown())
        .await
        .unwrap();
}
