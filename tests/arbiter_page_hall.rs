//! The arbiter page's hall check bar in headless Chromium: a round of two connected boards, both
//! set up, board 1's clock at the time control's start and board 2 without a clock (as their
//! engines sense them, through the hub's `Control`): the bar says the round is not ready, 1 of 2
//! boards, and names board 2 with "no clock". Without Chromium the test fails with the reason
//! (CI installs it, see `.ci/run`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

mod support;
use support::chromium::{chromium, rendered_page};

use eboardd::core::observation::{ClockFace, ClockReading, OperatorAction};
use eboardd::core::sensed::{Orientation, SensedBoard};
use eboardd::output::{
    BoardStatus, Control, ControlError, Hub, HubConfig, LinkState, OutputConfig, Pairing, Player,
    RoundInfo,
};
use eboardd::round::check::BoardSenses;

/// Boards' engines as the daemon's would answer: board 1 with a clock, board 2 without.
struct Sensing;

/// The start position as a board senses it.
fn set_up() -> SensedBoard {
    let mut b = SensedBoard::default();
    b.set_all(&support::fields_of(
        &shakmaty::Board::default(),
        Orientation::Normal,
    ));
    b
}

impl Control for Sensing {
    fn operator(&self, _: &str, _: OperatorAction) -> Result<(), ControlError> {
        Err(ControlError::Unavailable("not in this test".into()))
    }

    fn senses(&self) -> HashMap<String, BoardSenses> {
        let face = ClockFace {
            millis: 5_400_000,
            ..Default::default()
        };
        let clock = ClockReading {
            left: face,
            right: face,
            ..Default::default()
        };
        HashMap::from([
            (
                "board-1".to_string(),
                BoardSenses {
                    board: set_up(),
                    clock: Some(clock),
                },
            ),
            (
                "board-2".to_string(),
                BoardSenses {
                    board: set_up(),
                    clock: None,
                },
            ),
        ])
    }
}

fn pairing(white: &str, black: &str) -> Pairing {
    let p = |n: &str| Player {
        name: Some(n.into()),
        ..Default::default()
    };
    Pairing {
        white: p(white),
        black: p(black),
    }
}

/// The text of the element with id `id` (up to its first child tag).
fn text_of(dom: &str, id: &str) -> String {
    dom.split(&format!("id=\"{id}\">"))
        .nth(1)
        .and_then(|s| s.split('<').next())
        .unwrap_or("")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hall_check_bar_names_the_boards_not_ready() {
    let Some(bin) = chromium() else {
        return;
    };
    let info = RoundInfo {
        event: Some("Hall Page".into()),
        round: 1,
        time_control: Some("5400+30".into()),
        boards: vec!["board-1".into(), "board-2".into()],
        pairings: HashMap::from([
            ("board-1".to_string(), pairing("Alpha, Ann", "Beta, Bob")),
            ("board-2".to_string(), pairing("Gamma, Gus", "Delta, Dan")),
        ]),
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    hub.set_control(Arc::new(Sensing));
    for id in ["board-1", "board-2"] {
        hub.set_status(
            id,
            BoardStatus {
                state: LinkState::Active,
                ..Default::default()
            },
        );
    }
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        ..Default::default()
    };
    let out = eboardd::output::start(hub.clone(), &cfg).await.unwrap();
    let addr = out.http.unwrap();

    let dom = rendered_page(&bin, "hall-page", format!("http://{addr}/")).await;
    assert_eq!(
        text_of(&dom, "hallsum"),
        "Hall check: not ready · 1 of 2 boards ready",
        "{dom}"
    );
    assert!(dom.contains("<details id=\"hall\""), "{dom}");
    assert!(
        dom.contains("class=\"notready\""),
        "the bar shows not ready: {dom}"
    );
    let bad = dom.split("id=\"hallbad\">").nth(1).unwrap_or("");
    let bad = bad.split("</ul>").next().unwrap_or("");
    assert_eq!(
        bad, "<li><b>Board 2: </b>no clock</li>",
        "the boards not ready, with their reasons"
    );
    tokio::time::timeout(Duration::from_secs(10), out.shutdown())
        .await
        .unwrap();
}
