//! End to end: the hall check (`GET /api/v1/round/check`, `/metrics`) of `eboardd run` serving
//! three emulated DGT boards over pseudo-terminals, round 1 configured with players on all
//! three and `--time-control 5400+30`. Board 1 stands set up, its clock at 1:30:00 a side;
//! board 2's king's knight stands on f3 (the players put it on g1 after 30 s); board 3 has no
//! clock. The check names board 2 with its squares and board 3 with "no clock" (the metrics
//! gauge: 1 of 3 ready); once the knight is on g1 only board 3 is left; a round 2 loaded
//! without board 3 is ready (2 of 2).

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use eboardd::core::observation::{ClockFace, ClockReading, SquareReading};
use eboardd::core::sensed::Orientation;
use eboardd::driver::dgt::DgtMessage;
use eboardd::sim::emulator::runner::{self, Handle, RunnerConfig};
use eboardd::sim::emulator::{ClockModel, Emulator, EmulatorConfig, Script};
use serde_json::Value;
use shakmaty::{Board, Square};
use support::daemon::*;
use support::http::{self, free_port, get_local};

const TOKEN: &str = "e2e-hall-token";

/// When (script time, from the host's first mode command) the players put board 2's knight
/// from f3 on g1.
const KNIGHT_FIXED_AT: i64 = 30_000_000;

/// A DGT 3000 showing `secs` on both faces, stopped.
fn clock_at(secs: u32) -> ClockReading {
    let face = ClockFace {
        millis: secs * 1000,
        ..Default::default()
    };
    ClockReading {
        left: face,
        right: face,
        ..Default::default()
    }
}

/// An emulated board standing with `initial` on it and `steps` to come, its pty at `link`.
fn standing(
    serial: &str,
    initial: &Board,
    steps: Vec<(i64, DgtMessage)>,
    clock: ClockModel,
    link: &Path,
) -> Handle {
    let script = Script {
        steps,
        plies: Vec::new(),
        initial: support::fields_of(initial, Orientation::Normal),
        game_starts: Vec::new(),
        lap: None,
    };
    let em = EmulatorConfig {
        serial: serial.into(),
        clock,
        ..Default::default()
    };
    runner::spawn(
        Emulator::new(script, em),
        RunnerConfig {
            speed: 1.0,
            link: Some(link.to_path_buf()),
            wait_for_host: true,
        },
    )
    .unwrap()
}

/// The hall check, once the server answers.
fn check(port: u16) -> Option<Value> {
    let (code, body) = get_local(port, "/api/v1/round/check")?;
    assert_eq!(code, 200, "{body}");
    Some(serde_json::from_str(&body).unwrap())
}

/// Polls the hall check until `pred` holds; panics with the last answer at `deadline`.
async fn check_until(
    port: u16,
    what: &str,
    deadline: Instant,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = None;
    loop {
        if let Some(v) = check(port) {
            if pred(&v) {
                return v;
            }
            last = Some(v);
        }
        assert!(
            Instant::now() < deadline,
            "the hall check never showed {what}: {last:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The value of an unlabelled gauge in a Prometheus exposition.
fn gauge(text: &str, name: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

fn board<'a>(c: &'a Value, id: &str) -> &'a Value {
    c["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["board"] == id)
        .unwrap_or_else(|| panic!("no {id} in {c:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hall_check_names_each_board_not_ready_and_goes_green_when_all_are() {
    let dir = scratch("hall-check");
    let http_port = free_port();
    let token = dir.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let cfg = dir.join("eboardd.toml");
    std::fs::write(
        &cfg,
        format!(
            "[event]\nname = \"Hall Open\"\nround = \"1\"\n\n\
             [[board]]\nnumber = 1\nserial = \"41101\"\nwhite = \"Alpha, Ann\"\nblack = \"Beta, Bob\"\n\n\
             [[board]]\nnumber = 2\nserial = \"41102\"\nwhite = \"Gamma, Gus\"\nblack = \"Delta, Dan\"\n\n\
             [[board]]\nnumber = 3\nserial = \"41103\"\nwhite = \"Eps, Eve\"\nblack = \"Zeta, Zoe\"\n\n\
             [outputs]\nhttp = \"127.0.0.1:{http_port}\"\ntoken_file = \"{}\"\n",
            token.display()
        ),
    )
    .unwrap();

    let set = vec![(0, DgtMessage::ClockTimes(clock_at(5400)))];
    let start = Board::default();
    let mut knight_out = start.clone();
    let knight = knight_out.remove_piece_at(Square::G1).unwrap();
    knight_out.set_piece_at(Square::F3, knight);
    let field = |sq| Orientation::Normal.index_of(sq);
    let mut fix = set.clone();
    fix.push((
        KNIGHT_FIXED_AT,
        DgtMessage::FieldUpdate {
            index: field(Square::F3),
            reading: SquareReading::Empty,
        },
    ));
    fix.push((
        KNIGHT_FIXED_AT + 400_000,
        DgtMessage::FieldUpdate {
            index: field(Square::G1),
            reading: SquareReading::Piece(knight),
        },
    ));
    let links: Vec<_> = (1..=3).map(|n| dir.join(format!("board{n}"))).collect();
    let boards = [
        standing("41101", &start, set.clone(), ClockModel::Dgt3000, &links[0]),
        standing("41102", &knight_out, fix, ClockModel::Dgt3000, &links[1]),
        standing("41103", &start, Vec::new(), ClockModel::None, &links[2]),
    ];
    let cfg_arg = cfg.display().to_string();
    let d = Daemon::start(
        &links,
        &dir.join("captures"),
        &["--config", &cfg_arg, "--time-control", "5400+30"],
    );
    let started = Instant::now();

    // Every board connected and read: board 1 ready, board 2 named with its squares, board 3
    // with "no clock" (well before the knight is put right).
    let first = check_until(
        http_port,
        "boards 2 and 3 named",
        started + Duration::from_secs(25),
        |c| {
            c["boards_checked"] == 3
                && c["not_ready"].as_array().is_some_and(|n| {
                    n.len() == 2
                        && n[0]["board"] == "board-2"
                        && n[0]["reasons"][0] == "g1 empty, f3: white knight"
                        && n[1]["board"] == "board-3"
                })
        },
    )
    .await;
    assert_eq!(first["ready"], false, "{first:#}");
    assert_eq!(first["scope"], "round");
    assert_eq!(first["boards_ready"], 1);
    assert_eq!(first["clock_start_ms"], 5_400_000);
    assert_eq!(
        first["not_ready"][1]["reasons"],
        serde_json::json!(["no clock"])
    );
    let b1 = board(&first, "board-1");
    assert_eq!(b1["ready"], true, "{b1:#}");
    assert_eq!(b1["checks"]["clock_time"]["code"], "clock_set", "{b1:#}");
    assert_eq!(b1["checks"]["players"]["reason"], "Alpha, Ann – Beta, Bob");
    let b2 = board(&first, "board-2");
    assert_eq!(b2["checks"]["pieces"]["code"], "pieces_wrong");
    assert_eq!(
        b2["checks"]["pieces"]["squares"],
        serde_json::json!([
            {"square": "g1", "expected": "white knight", "found": null},
            {"square": "f3", "expected": null, "found": "white knight"},
        ])
    );
    assert_eq!(b2["checks"]["clock"]["ok"], true, "{b2:#}");
    let b3 = board(&first, "board-3");
    assert_eq!(b3["checks"]["pieces"]["ok"], true, "{b3:#}");
    assert_eq!(b3["checks"]["clock"]["code"], "no_clock");

    // The gauge counts them.
    let (code, metrics) = get_local(http_port, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert_eq!(
        gauge(&metrics, "eboardd_hall_boards_checked"),
        Some(3),
        "{metrics}"
    );
    assert_eq!(
        gauge(&metrics, "eboardd_hall_boards_ready"),
        Some(1),
        "{metrics}"
    );

    // The knight goes to g1: board 2 is ready; the round is not, board 3 has no clock.
    let second = check_until(
        http_port,
        "board 2 ready",
        Instant::now() + Duration::from_secs(60),
        |c| board(c, "board-2")["ready"] == true,
    )
    .await;
    assert_eq!(second["ready"], false, "{second:#}");
    assert_eq!(second["boards_ready"], 2);
    assert_eq!(second["not_ready"].as_array().map(Vec::len), Some(1));
    assert_eq!(second["not_ready"][0]["board"], "board-3");

    // Round 2 is played on boards 1 and 2 only: every board of it is set up, the round is ready.
    let auth = format!("Bearer {TOKEN}");
    let r = http::request(
        http::local(http_port),
        "POST",
        "/api/v1/round?round=2&format=csv",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "text/csv"),
        ],
        "board,white,black\n1,\"Eta, Ed\",\"Theta, Tom\"\n2,\"Iota, Ida\",\"Kappa, Kim\"\n",
    )
    .unwrap();
    assert_eq!(r.status, 200, "{}", r.body);
    let green = check_until(
        http_port,
        "round 2 ready",
        Instant::now() + Duration::from_secs(20),
        |c| c["round"] == 2,
    )
    .await;
    assert_eq!(green["ready"], true, "{green:#}");
    assert_eq!(
        (
            green["boards_checked"].as_u64(),
            green["boards_ready"].as_u64()
        ),
        (Some(2), Some(2))
    );
    assert_eq!(green["unpaired"], serde_json::json!(["board-3"]));
    let (_, metrics) = get_local(http_port, "/metrics").unwrap();
    assert_eq!(
        gauge(&metrics, "eboardd_hall_boards_checked"),
        Some(2),
        "{metrics}"
    );
    assert_eq!(
        gauge(&metrics, "eboardd_hall_boards_ready"),
        Some(2),
        "{metrics}"
    );

    d.terminate();
    for (b, serial) in boards.into_iter().zip(["41101", "41102", "41103"]) {
        stop_strict(b, serial).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
