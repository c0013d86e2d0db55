//! End to end over a pseudo-terminal: a touch seen before the cable is pulled (issue 34).
//!
//! White lifts the e2 pawn and holds it; the board reports the lift; the cable is pulled while
//! the pawn is up. While the board is away White puts the pawn back, plays Nf3 and presses the
//! clock. When the board is back, its dump shows e2 home and the knight on f3, and the clock
//! shows Black's time running. The pawn could have moved: 4.3a, the touched piece must be
//! moved. The daemon learns that the link dropped only from its own capture (a `link` record
//! the core reads, live and in replay alike), so the touch is reported live, in the replay of
//! the daemon's capture, and the replay gives the live stream's events exactly.
//!
//! Twice: back after a short absence (the dump alone tells what happened) and after a long one
//! (the board's memory is read first and tells it exactly).

mod support;

use std::time::Duration;

use eboardd::capture::RecordKind;
use eboardd::core::observation::{ClockReading, LinkChange, Micros, SquareReading};
use eboardd::driver::dgt::DgtMessage;
use eboardd::sim::emulator::runner::{self, Control, RunnerConfig};
use eboardd::sim::emulator::{Emulator, EmulatorConfig, Script};
use eboardd::sim::pgn::{ScriptGame, parse_games};
use eboardd::sim::{SimConfig, Style, field_index};
use serde_json::Value;
use shakmaty::{Color, Piece, Role, Square};
use support::daemon::*;

const WAIT: Duration = Duration::from_secs(90);
/// Script time the pawn is held before it is put back.
const HOLD: Micros = 20_000_000;

/// The kinds of events the core makes (`docs/events.md` §3): what a replay gives.
const CORE_KINDS: &[&str] = &[
    "board_connected",
    "board_disconnected",
    "game_started",
    "move_made",
    "move_retracted",
    "move_completed",
    "clock",
    "flag_shown",
    "irregularity",
    "irregularity_resolved",
    "claim_available",
    "game_ended",
    "correction",
];

/// The game, and the ply (from 1) White plays Nf3 at with the e2 pawn touched first.
fn game(nf3_at: usize) -> ScriptGame {
    let pgn = match nf3_at {
        1 => "1. Nf3 d5 2. g3 Nf6 3. Bg2 c6 4. O-O Bg4 5. d3 e6 6. Nbd2 Be7 *",
        _ => "1. d4 d5 2. Nf3 Nf6 3. g3 c6 4. Bg2 Bf5 5. O-O e6 6. c4 Nbd7 *",
    };
    parse_games(pgn).remove(0).unwrap()
}

/// The script of `game` with a touch before White's move at `ply`: the e2 pawn lifted at the
/// ply's first hand action and put back [`HOLD`] later; everything after it (and White's
/// time on the clock) moves on by the time it took.
fn with_touch(game: &ScriptGame, sim: &SimConfig, ply: usize) -> Script {
    let mut script = Script::from_games(std::slice::from_ref(game), sim, 5_000_000);
    let lift = script.plies[ply - 1].first_action;
    let shift = HOLD + 1_500_000;
    let pawn = Piece {
        color: Color::White,
        role: Role::Pawn,
    };
    let e2 = field_index(Square::E2, false);
    let white_left = sim.white_on_right == Some(false);
    let mut steps = Vec::new();
    for (t, m) in std::mem::take(&mut script.steps) {
        if t < lift {
            steps.push((t, m));
            continue;
        }
        let m = match m {
            DgtMessage::ClockTimes(r) => DgtMessage::ClockTimes(white_spent(r, white_left, shift)),
            m => m,
        };
        steps.push((t + shift, m));
    }
    let at = steps.partition_point(|(t, _)| *t < lift);
    steps.insert(
        at,
        (
            lift,
            DgtMessage::FieldUpdate {
                index: e2,
                reading: SquareReading::Empty,
            },
        ),
    );
    steps.insert(
        at + 1,
        (
            lift + HOLD,
            DgtMessage::FieldUpdate {
                index: e2,
                reading: SquareReading::Piece(pawn),
            },
        ),
    );
    script.steps = steps;
    for p in script.plies.iter_mut().skip(ply - 1) {
        if p.ply != ply {
            p.first_action += shift;
        }
        p.settled += shift;
    }
    script
}

/// `r` with White's face `spent` µs lower (the time the touch took, in White's turn).
fn white_spent(mut r: ClockReading, white_left: bool, spent: Micros) -> ClockReading {
    let face = if white_left {
        &mut r.left
    } else {
        &mut r.right
    };
    face.millis = face.millis.saturating_sub((spent / 1000) as u32);
    r
}

/// The core's events of a stream, each without its `seq` (the live stream numbers the hub's
/// notices too).
fn core_events(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["kind"].as_str().is_some_and(|k| CORE_KINDS.contains(&k)))
        .map(|e| {
            let mut e = e.clone();
            e.as_object_mut().unwrap().remove("seq");
            e
        })
        .collect()
}

/// `eboardd replay --events DIR`, parsed.
fn replay_events(dir: &std::path::Path) -> Vec<Value> {
    let out = std::process::Command::new(bin())
        .args(["replay", "--events"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn touches(events: &[Value], id: &str) -> Vec<(String, u64, String, Vec<String>)> {
    of(events, id, "irregularity")
        .into_iter()
        .map(|e| {
            let squares = e["squares"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            (
                e["code"].as_str().unwrap().to_string(),
                e["ply"].as_u64().unwrap(),
                e["player"].as_str().unwrap().to_string(),
                squares,
            )
        })
        .collect()
}

/// The daemon's capture shows what the test meant: the lift of e2, then the link down, and
/// the pawn back on e2 only after it.
fn assert_pulled_mid_touch(caps: &std::path::Path, id: &str) {
    let day = std::fs::read_dir(caps)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let cap = eboardd::capture::read_capture(&day.join(format!("{id}.jsonl"))).unwrap();
    let e2 = field_index(Square::E2, false);
    let at = |want: &dyn Fn(&RecordKind) -> bool| cap.records.iter().position(|r| want(&r.kind));
    let lifted =
        at(&|k| matches!(k, RecordKind::Rx(b) if b.windows(5).any(|w| w == [0x8e, 0, 5, e2, 0])));
    let down = at(&|k| *k == RecordKind::Link(LinkChange::Down));
    let back =
        at(&|k| matches!(k, RecordKind::Rx(b) if b.windows(5).any(|w| w == [0x8e, 0, 5, e2, 1])));
    let (Some(lifted), Some(down)) = (lifted, down) else {
        panic!("no lift of e2 ({lifted:?}) or no link down ({down:?}) in the capture");
    };
    assert!(
        lifted < down,
        "the cable was pulled before the lift was read"
    );
    assert!(
        back.is_none_or(|b| b > down),
        "the pawn was put back before the cable was pulled"
    );
}

async fn unplugged_mid_touch(
    name: &str,
    serial: &str,
    nf3_at: usize,
    away: Duration,
    memory_after_secs: u64,
) {
    let dir = scratch(name);
    let game = game(nf3_at);
    let link = dir.join("board");
    let mut sim = SimConfig::new(Style::Human, 11);
    sim.glitches = false;
    sim.white_on_right = Some(false);
    sim.dev = serial.to_string();
    let script = with_touch(&game, &sim, nf3_at);
    let em = EmulatorConfig {
        serial: serial.into(),
        ..Default::default()
    };
    let mut board = runner::spawn(
        Emulator::new(script, em),
        RunnerConfig {
            speed: 4.0,
            link: Some(link.clone()),
            wait_for_host: true,
        },
    )
    .unwrap();
    let caps = dir.join("captures");
    let config = dir.join("eboardd.toml");
    // White's clock side fixed, so that the clock's readings are published from the start
    // (they tell the test the daemon has read what came before them).
    std::fs::write(
        &config,
        format!(
            "[daemon]\nmemory_after_secs = {memory_after_secs}\n\n\
             [[board]]\nnumber = 1\nserial = \"{serial}\"\nwhite_clock = \"left\"\n"
        ),
    )
    .unwrap();
    let id = "board-1";
    let mut d = Daemon::start(
        std::slice::from_ref(&link),
        &caps,
        &["--config", config.to_str().unwrap()],
    );
    // The pawn is lifted (script time), and the daemon has read what the board sent after it:
    // clock readings that came later on the line.
    assert!(
        board.wait_for(WAIT, |st| st.plies_started >= nf3_at).await,
        "the players never got to the touch"
    );
    let clocks = of(&d.events.lock().unwrap(), id, "clock").len();
    d.wait_for("clock readings after the lift", WAIT, |ev| {
        of(ev, id, "clock").len() >= clocks + 3
    })
    .await;
    // The cable is pulled; the players put the pawn back, play Nf3 and press.
    board.send(Control::Unplug { plies: 1, away });
    d.wait_for("the game to be completed", WAIT, |ev| {
        completed(ev, id, game.moves.len())
    })
    .await;
    let live = d.events.lock().unwrap().clone();
    assert_eq!(moves_from_events(&live, id), uci(&game), "live moves");
    assert!(
        !of(&live, id, "board_disconnected").is_empty(),
        "the drop was published"
    );
    let want = vec![(
        "touched_piece_not_moved".to_string(),
        nf3_at as u64,
        "white".to_string(),
        vec!["e2".to_string()],
    )];
    assert_eq!(touches(&live, id), want, "live irregularities");
    let log = d.log.clone();
    d.terminate();
    stop_strict(board, id).await;
    assert_replay_exact(&caps, &[(id, &game)]);
    assert_pulled_mid_touch(&caps, id);
    // The replay of the daemon's own capture: the touch, and every event the live stream had,
    // in the same order (the live stream also had the session end's disconnection).
    let replayed = replay_events(&caps);
    assert_eq!(touches(&replayed, id), want, "replayed irregularities");
    let live = core_events(&live);
    let replayed = core_events(&replayed);
    assert!(replayed.len() >= live.len(), "replay has fewer events");
    for (i, (a, b)) in live.iter().zip(&replayed).enumerate() {
        assert_eq!(a, b, "event {i} differs (live, replay)");
    }
    let extra: Vec<&str> = replayed[live.len()..]
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        extra.iter().all(|k| *k == "board_disconnected"),
        "replay has events the live stream did not: {extra:?}"
    );
    let log = std::fs::read_to_string(log).unwrap_or_default();
    let day = std::fs::read_dir(&caps)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let cap = eboardd::capture::read_capture(&day.join(format!("{id}.jsonl"))).unwrap();
    let memory_asked = cap
        .records
        .iter()
        .any(|r| matches!(&r.kind, RecordKind::Tx(b) if b.first() == Some(&0x49)));
    assert_eq!(
        memory_asked,
        memory_after_secs <= 1,
        "the board's memory asked for (SEND_EE_MOVES); log:\n{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_touch_before_the_cable_is_pulled_is_reported_after_a_short_absence() {
    unplugged_mid_touch(
        "unplug-touch-short",
        "41001",
        1,
        Duration::from_millis(300),
        3600,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_touch_before_the_cable_is_pulled_is_reported_when_the_memory_is_read() {
    unplugged_mid_touch("unplug-touch-memory", "41002", 3, Duration::from_secs(2), 1).await;
}
