//! End to end over pseudo-terminals with the third board family: `eboardd run --port
//! certabo:PATH` serving emulated Certabo RFID boards (`eboardd::sim::emulator::certabo`: lines
//! of 64 piece ids about twice a second, ids learnt from the start position with a spare queen
//! shown beside it, noisy readers, a board turned round, strict about what it is sent). Every
//! game must come out exact live and from `eboardd replay DIR`, with no clock; the boards must
//! only ever be sent LED commands; a board unplugged while the players go on must give the
//! moves made meanwhile back once it is plugged in again.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use eboardd::sim::emulator::certabo::{CertaboConfig, CertaboEmulator};
use eboardd::sim::emulator::runner::{self, Control, Handle, RunnerConfig};
use eboardd::sim::emulator::{ClockModel, Emulator, EmulatorConfig, Script};
use eboardd::sim::pgn::{ScriptGame, parse_games};
use eboardd::sim::{SimConfig, Style};
use serde_json::Value;
use support::daemon::*;

/// Script time per real time: the lines come on script time, so a faster pace only makes
/// more lines a second (a line is about 1 KB: at 40× about 70 KB/s per board).
const SPEED: f64 = 40.0;
const WAIT: Duration = Duration::from_secs(240);

/// An emulated Certabo board playing `game` with human handling, its pty linked at `link`.
fn certabo_board(game: &ScriptGame, seed: u64, cfg: CertaboConfig, link: &Path) -> Handle {
    let mut sim = SimConfig::new(Style::Human, seed);
    sim.dev = "certabo".into();
    let script = Script::from_games(std::slice::from_ref(game), &sim, 5_000_000);
    let players = Emulator::new(
        script,
        EmulatorConfig {
            clock: ClockModel::None,
            ..Default::default()
        },
    );
    runner::spawn(
        CertaboEmulator::new(players, cfg),
        RunnerConfig {
            speed: SPEED,
            link: Some(link.to_path_buf()),
            wait_for_host: true,
        },
    )
    .unwrap()
}

/// The first `plies` plies of demo game `i`.
fn game(i: usize, plies: usize) -> ScriptGame {
    let mut g = demo_games()[i].clone();
    g.moves.truncate(plies);
    g.clocks.truncate(plies);
    g
}

/// Every `tx` record of the captures under `dir`: each must be the LED command eboardd sends
/// (every LED off), the one thing a Certabo board takes.
fn assert_only_led_commands(dir: &Path) {
    let mut n = 0;
    for day in std::fs::read_dir(dir).unwrap() {
        for f in std::fs::read_dir(day.unwrap().path()).unwrap() {
            let path = f.unwrap().path();
            let cap = eboardd::capture::read_capture(&path).unwrap();
            let drivers: Vec<String> = cap.header.devices().filter_map(|d| d.driver).collect();
            assert!(
                !drivers.is_empty() && drivers.iter().all(|d| *d == "certabo"),
                "{path:?}"
            );
            for r in cap.records {
                if let eboardd::capture::RecordKind::Tx(b) = r.kind {
                    assert_eq!(b, [0u8; 8], "{path:?}: not an LED command");
                    n += 1;
                }
            }
        }
    }
    assert!(n > 0, "no LED command captured");
}

/// The board id of the board on `link` (a Certabo board tells no serial number: it is named
/// after its port).
fn id(link: &Path) -> String {
    format!(
        "certabo-port-{}",
        link.file_name().unwrap().to_string_lossy()
    )
}

fn recovered(events: &[Value], board: &str) -> usize {
    of(events, board, "move_made")
        .iter()
        .filter(|e| e["recovered"] == true)
        .count()
}

/// The games played and the irregularities the players did not cause are none.
fn assert_played(events: &[Value], ids: &[String], games: &[&ScriptGame]) {
    for (b, g) in ids.iter().zip(games) {
        assert_eq!(moves_from_events(events, b), uci(g), "{b}");
        // One game: a board lying turned round at its first calibration, with no spare queen
        // to show it, starts game 1 again turned round at the first move (no move lost).
        let started = of(events, b, "game_started");
        assert!(
            !started.is_empty() && started.iter().all(|e| e["game"] == 1),
            "{b}: {started:?}"
        );
        assert!(of(events, b, "clock").is_empty(), "{b}: no clock");
        let connected = of(events, b, "board_connected");
        assert_eq!(connected[0]["driver"], "certabo", "{b}");
        let wrong: Vec<&Value> = of(events, b, "irregularity")
            .into_iter()
            .filter(|e| {
                ["moves_missing", "displaced_pieces", "illegal_move"]
                    .contains(&e["code"].as_str().unwrap_or(""))
            })
            .collect();
        assert!(wrong.is_empty(), "{b}: {wrong:?}");
    }
}

/// Emulated boards `boards` (name, set-up, whether it lies turned round) playing `games` on
/// one daemon: every game exact live and from `eboardd replay`, `board_reversed` exactly once on
/// each board turned round and never on another, only LED commands sent, every byte taken.
async fn play_boards(name: &str, games: &[ScriptGame], boards: &[(&str, CertaboConfig, bool)]) {
    let dir = scratch(name);
    let caps = dir.join("captures");
    let links: Vec<PathBuf> = boards.iter().map(|(name, ..)| dir.join(name)).collect();
    let handles: Vec<Handle> = boards
        .iter()
        .zip(games)
        .zip(&links)
        .enumerate()
        .map(|(i, (((_, cfg, _), g), link))| certabo_board(g, 30 + i as u64, cfg.clone(), link))
        .collect();
    let ports: Vec<PathBuf> = links
        .iter()
        .map(|l| format!("certabo:{}", l.display()).into())
        .collect();
    let mut d = Daemon::start(&ports, &caps, &[]);
    let ids: Vec<String> = links.iter().map(|l| id(l)).collect();
    let played: Vec<&ScriptGame> = games.iter().collect();
    d.wait_for("every game to be played", WAIT, |ev| {
        ids.iter()
            .zip(&played)
            .all(|(b, g)| made(ev, b, g.moves.len()) && moves_from_events(ev, b) == uci(g))
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        assert_played(&ev, &ids, &played);
        for (b, (.., turned)) in ids.iter().zip(boards) {
            let reversed = of(&ev, b, "irregularity")
                .iter()
                .filter(|e| e["code"] == "board_reversed")
                .count();
            assert_eq!(reversed, usize::from(*turned), "{b}");
        }
    }
    d.terminate();
    for (h, b) in handles.into_iter().zip(&ids) {
        stop_strict(h, b).await;
    }
    assert_only_led_commands(&caps);
    let expected: Vec<(&str, &ScriptGame)> = ids.iter().map(String::as_str).zip(played).collect();
    assert_replay_exact(&caps, &expected);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certabo_boards_clean_noisy_turned_and_promoting_play_exact_games() {
    let promotion =
        parse_games("1. e4 d5 2. exd5 c6 3. dxc6 Nf6 4. cxb7 Nbd7 5. bxa8=Q e5 6. Qxa7 *")
            .remove(0)
            .unwrap();
    let games = [game(0, 30), game(1, 30), game(2, 30), promotion];
    let clean = CertaboConfig {
        seed: 1,
        ..CertaboConfig::default()
    };
    let turned = CertaboConfig {
        seed: 3,
        reversed: true,
        ..CertaboConfig::default()
    };
    let boards = [
        ("cert-clean", clean, false),
        ("cert-noisy", CertaboConfig::noisy(2), false),
        ("cert-turned", turned, true),
        // The spare queen shown beside the start position is the promoted queen, fetched
        // while the pawn and the captured rook are off the board (noisy readers too).
        ("cert-promo", CertaboConfig::noisy(4), false),
    ];
    play_boards("certabo", &games, &boards).await;
}

/// Boards whose readers misread ids as the hosts' filters are built for (2 % and 3 % per id and
/// line, drawn afresh every line, a quarter of the chips four times as often), two of them
/// lying turned round while they are calibrated (with a spare queen shown, and without: then
/// the first move shows it): every game exact live and from `replay`, `board_reversed` once on
/// each turned board.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misreading_and_turned_certabo_boards_play_exact_games() {
    let games = [game(3, 30), game(4, 30), game(5, 30), game(6, 30)];
    let turned = |seed, rate, spare_queens| CertaboConfig {
        spare_queens,
        turned_at_calibration: true,
        ..CertaboConfig::misreading(seed, rate)
    };
    let boards = [
        ("cert-misread-2", CertaboConfig::misreading(11, 0.02), false),
        ("cert-misread-3", CertaboConfig::misreading(12, 0.03), false),
        ("cert-turned-spare", turned(13, 0.02, 1), true),
        ("cert-turned-bare", turned(14, 0.03, 0), true),
    ];
    play_boards("certabo-misreading", &games, &boards).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certabo_board_unplugged_while_the_players_go_on_gives_their_moves_back() {
    let dir = scratch("certabo-unplug");
    let caps = dir.join("captures");
    let g = game(3, 30);
    let link = dir.join("cert-unplug");
    let mut h = certabo_board(&g, 40, CertaboConfig::default(), &link);
    let mut d = Daemon::start(&[format!("certabo:{}", link.display()).into()], &caps, &[]);
    let b = id(&link);
    d.wait_for("ply 10", WAIT, |ev| made(ev, &b, 10)).await;
    h.send(Control::Unplug {
        plies: 2,
        away: Duration::from_secs(2),
    });
    assert!(h.wait_for(WAIT, |st| st.generation == 2).await);
    d.wait_for("the game to be played", WAIT, |ev| {
        made(ev, &b, g.moves.len()) && moves_from_events(ev, &b) == uci(&g)
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        assert_played(&ev, std::slice::from_ref(&b), &[&g]);
        assert!(
            !of(&ev, &b, "board_disconnected").is_empty(),
            "the unplug was seen"
        );
        assert!(recovered(&ev, &b) > 0, "the moves made meanwhile come back");
    }
    d.terminate();
    stop_strict(h, &b).await;
    assert_only_led_commands(&caps);
    assert_replay_exact(&caps, &[(&b, &g)]);
    let _ = std::fs::remove_dir_all(&dir);
}
