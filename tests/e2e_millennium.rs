//! End to end over pseudo-terminals with the second board family: `eboardd run` serving
//! emulated Millennium ChessLink boards (whole-board statuses on change, odd parity, block
//! checks; no clock) side by side with a DGT board. The games must come out exact in the event
//! stream without a clock press, the captures must name the `millennium` driver, and their
//! replay must give the same games.

mod support;

use std::path::Path;
use std::time::Duration;

use eboardd::sim::emulator::millennium::MillenniumEmulator;
use eboardd::sim::emulator::runner::{self, Handle, RunnerConfig};
use eboardd::sim::emulator::{ClockModel, Emulator, EmulatorConfig, Script};
use eboardd::sim::pgn::ScriptGame;
use eboardd::sim::{SimConfig, Style};
use support::daemon::*;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(90);

/// An emulated Millennium board playing `game` with `style`, its pty linked at `link`.
fn millennium_board(game: &ScriptGame, style: Style, seed: u64, link: &Path) -> Handle {
    let mut sim = SimConfig::new(style, seed);
    sim.dev = "millennium".into();
    let script = Script::from_games(std::slice::from_ref(game), &sim, 5_000_000);
    let players = Emulator::new(
        script,
        EmulatorConfig {
            clock: ClockModel::None,
            ..Default::default()
        },
    );
    runner::spawn(
        MillenniumEmulator::new(players, (1, 4)),
        RunnerConfig {
            speed: SPEED,
            link: Some(link.to_path_buf()),
            wait_for_host: true,
        },
    )
    .unwrap()
}

/// Every `tx` record of a capture, as sent.
fn sent(capture: &std::path::Path) -> Vec<Vec<u8>> {
    let cap = eboardd::capture::read_capture(capture).unwrap();
    cap.records
        .into_iter()
        .filter_map(|r| match r.kind {
            eboardd::capture::RecordKind::Tx(bytes) => Some(bytes),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn millennium_boards_play_full_games_through_run_and_replay_exactly() {
    let dir = scratch("millennium");
    let caps = dir.join("captures");
    let games = demo_games();
    let (g_human, g_blitz, g_dgt) = (&games[3], &games[4], &games[5]);
    let link_a = dir.join("mill-a");
    let link_b = dir.join("mill-b");
    let link_dgt = dir.join("dgt");
    let boards = [
        millennium_board(g_human, Style::Human, 7, &link_a),
        millennium_board(g_blitz, Style::Blitz, 8, &link_b),
        board(
            std::slice::from_ref(g_dgt),
            Style::Human,
            9,
            "36000",
            &link_dgt,
            SPEED,
            None,
        ),
    ];
    // Board A configured by its port name (a ChessLink board has no serial number); board B
    // not: it is known as millennium-<port name>.
    let cfg = dir.join("eboardd.toml");
    std::fs::write(
        &cfg,
        format!(
            "[event]\nname = \"ChessLink Open\"\n[[board]]\nnumber = 1\nserial = \"port-mill-a\"\n\
             white = \"{}\"\nblack = \"{}\"\n",
            g_human.tag("White").unwrap(),
            g_human.tag("Black").unwrap()
        ),
    )
    .unwrap();
    let ports = [
        format!("millennium:{}", link_a.display()).into(),
        format!("millennium:{}", link_b.display()).into(),
        link_dgt.clone(),
    ];
    let cfg_arg = cfg.to_string_lossy().to_string();
    let mut d = Daemon::start(&ports, &caps, &["--config", &cfg_arg]);
    let ids = ["board-1", "millennium-port-mill-b", "dgt-36000"];
    let played = [g_human, g_blitz, g_dgt];
    // Every move made, and any provisional last move revised (a sliding piece seen on a
    // square on its way): the event streams end with exactly the games played.
    d.wait_for("every game to be played", WAIT, |ev| {
        ids.iter()
            .zip(played)
            .all(|(id, g)| made(ev, id, g.moves.len()) && moves_from_events(ev, id) == uci(g))
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        for (id, g) in ids.iter().zip(played) {
            assert_eq!(moves_from_events(&ev, id), uci(g), "{id}: event stream");
            assert_eq!(of(&ev, id, "game_started").len(), 1, "{id}: one game");
        }
        for id in &ids[..2] {
            let connected = of(&ev, id, "board_connected");
            assert_eq!(connected.len(), 1, "{id}");
            assert_eq!(connected[0]["driver"], "millennium", "{id}");
            // No clock: no clock events; every move but the last completed by the next one.
            assert!(of(&ev, id, "clock").is_empty(), "{id}");
        }
        assert_eq!(
            of(&ev, ids[0], "move_completed").len(),
            g_human.moves.len() - 1
        );
        assert_eq!(of(&ev, ids[2], "board_connected")[0]["driver"], "dgt");
    }
    d.terminate();
    let [mill_a, mill_b, dgt] = boards;
    stop_strict(dgt, ids[2]).await;
    // The Millennium boards took every byte they were sent: no DGT clock frame reached them.
    for (b, id) in [(mill_a, ids[0]), (mill_b, ids[1])] {
        stop_strict(b, id).await;
    }
    // The captures name their driver, and replay picks the ChessLink decoder from it.
    for (id, driver) in ids.iter().zip(["millennium", "millennium", "dgt"]) {
        let file = std::fs::read_dir(&caps)
            .unwrap()
            .flat_map(|day| std::fs::read_dir(day.unwrap().path()).unwrap())
            .map(|f| f.unwrap().path())
            .find(|p| p.file_stem().is_some_and(|s| s == *id))
            .unwrap_or_else(|| panic!("{id}: no capture"));
        let text = std::fs::read_to_string(&file).unwrap();
        let header: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(header["devices"][0]["driver"], driver, "{id}");
        // What was sent is the family's own: ChessLink commands (printable 7-bit letters with
        // an odd parity bit, ending in two hex digits) to a ChessLink board; DGT single-board
        // commands (no bus command, no ChessLink letter) to a DGT board.
        for bytes in sent(&file) {
            if driver == "millennium" {
                let text: Vec<u8> = bytes.iter().map(|b| b & 0x7F).collect();
                assert!(
                    bytes.iter().all(|b| b.count_ones() % 2 == 1)
                        && text.iter().all(|c| c.is_ascii_alphanumeric()),
                    "{id}: not ChessLink: {bytes:02x?}"
                );
                assert!(
                    !bytes.contains(&0x2B),
                    "{id}: a DGT clock frame: {bytes:02x?}"
                );
            } else {
                assert!(
                    bytes[0] == 0x2B || (0x40..=0x55).contains(&bytes[0]),
                    "{id}: not a DGT single-board command: {bytes:02x?}"
                );
            }
        }
        // Each capture alone replays to its game.
        assert_replay_exact(
            &file,
            &[(id, played[ids.iter().position(|i| i == id).unwrap()])],
        );
    }
    let expected: Vec<(&str, &ScriptGame)> = ids.iter().copied().zip(played).collect();
    assert_replay_exact(&caps, &expected);
    let pgn = replay(&caps);
    assert!(pgn.contains("[Event \"ChessLink Open\"]"), "{pgn}");
    let _ = std::fs::remove_dir_all(&dir);
}
