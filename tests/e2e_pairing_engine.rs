//! End to end: a Swiss round from a real pairing engine and back to it. Seven players; round 1
//! as bbpPairings (Dutch system) paired it from `start.trf` (`tests/data/trf/bbp`: three pairs
//! and a bye). `eboardd run --config FILE` serves three emulated DGT boards; `eboardd round load
//! start.trf --pairs round1.txt --round 1` puts the pairs on boards 1–3; each board plays a real
//! game to its real result (the players tell it on the board: `1-0`, `½-½`, `0-1`); the arbiter
//! confirms the three. The TRF eboardd then writes (`GET /api/v1/rounds/1/results.trf` and
//! `eboardd round results`) is byte for byte `round1-results.trf`, the file worked out by hand
//! from TRF16 that the engine checked (its round 1 is the engine's own pairing, its points the
//! engine's own count) and paired round 2 from (`round2.txt`). `eboardd round load` takes that
//! pairing with eboardd's own TRF, and round 2 shows the engine's pairs.
//!
//! With `EBOARDD_BBP` set to a bbpPairings executable (`scripts/pairing_engine.sh`; `.ci/run`
//! builds one where its source is on the machine) the engine itself checks and pairs the file
//! eboardd wrote; without it, the recorded engine output stands in (said on standard error).

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::daemon::*;
use support::http::{self, free_port};

const SPEED: f64 = 300.0;
const WAIT: Duration = Duration::from_secs(120);
const TOKEN: &str = "e2e-engine-token";

const START: &[u8] = include_bytes!("data/trf/bbp/start.trf");
const ROUND1: &str = include_str!("data/trf/bbp/round1.txt");
const ROUND1_RESULTS: &[u8] = include_bytes!("data/trf/bbp/round1-results.trf");
const ROUND2: &str = include_str!("data/trf/bbp/round2.txt");

/// Round 1's boards as the engine paired them (`round1.txt`: `1 4`, `5 2`, `3 6`, `7 0`): White's
/// and Black's names in `start.trf`, and the demo game each board plays with its result.
const BOARDS: [(&str, &str, usize, &str); 3] = [
    ("Adler, Anna", "Dorn, David", 7, "1-0"),
    ("Engel, Eva", "Brandt, Boris", 42, "1/2-1/2"),
    ("Claes, Carla", "Falk, Felix", 6, "0-1"),
];

/// Round 2 as the engine paired it (`round2.txt`: `7 1`, `6 5`, `2 3`, `4 0`).
const ROUND2_BOARDS: [(&str, &str); 3] = [
    ("Graf, Greta", "Adler, Anna"),
    ("Falk, Felix", "Engel, Eva"),
    ("Brandt, Boris", "Claes, Carla"),
];

fn id(n: usize) -> String {
    format!("board-{n}")
}

/// `GET` with the token: (status, body bytes).
fn get_auth(port: u16, path: &str) -> (u16, Vec<u8>) {
    let r = http::with_token(port, "GET", path, TOKEN, "");
    (r.status, r.body.into_bytes())
}

fn json_auth(port: u16, path: &str) -> Value {
    let (status, body) = get_auth(port, path);
    assert_eq!(
        status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&body)
    );
    serde_json::from_slice(&body).unwrap()
}

/// The engine on `trf`: its check of the played rounds (no pairing of its own differs) and its
/// pairing of the next round. `None` without `EBOARDD_BBP`.
fn engine_pairs_next(trf: &Path) -> Option<String> {
    let bbp = std::env::var_os("EBOARDD_BBP")?;
    let check = Command::new(&bbp)
        .arg("--dutch")
        .arg(trf)
        .arg("-c")
        .output()
        .unwrap_or_else(|e| panic!("EBOARDD_BBP={bbp:?}: {e}"));
    let said = String::from_utf8_lossy(&check.stdout).to_string()
        + &String::from_utf8_lossy(&check.stderr);
    assert!(check.status.success(), "the engine refused the TRF: {said}");
    assert!(
        !said.contains("Checker pairings"),
        "the TRF holds a pairing the engine would not make: {said}"
    );
    let list = trf.with_extension("next.txt");
    let out = Command::new(&bbp)
        .arg("--dutch")
        .arg(trf)
        .arg("-p")
        .arg(&list)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the engine could not pair the next round: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(std::fs::read_to_string(&list).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_round_paired_by_bbp_pairings_goes_back_to_it_and_it_pairs_the_next() {
    let dir = scratch("pairing-engine");
    let caps = dir.join("captures");
    let games = demo_games();
    for (_, _, game, result) in BOARDS {
        assert_eq!(games[game].tag("Result"), Some(result), "demo game {game}");
    }
    let (boards, links) = result_telling_boards(&dir, &BOARDS.map(|b| b.2), 38000, SPEED);
    let http = free_port();
    let token = dir.join("api.token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let mut cfg = format!(
        "[event]\nname = \"Bergen Open 2026\"\nround = \"1\"\n\n\
         [outputs]\nhttp = \"127.0.0.1:{http}\"\ntoken_file = {:?}\n\n",
        token.display().to_string()
    );
    cfg.push_str(&board_sections(BOARDS.len(), 38000));
    let cfg_path = dir.join("eboardd.toml");
    std::fs::write(&cfg_path, cfg).unwrap();
    let cfg = cfg_path.display().to_string();
    let mut d = Daemon::start(&links, &caps, &["--config", &cfg]);
    d.wait_every_board("board_connected", BOARDS.len(), WAIT)
        .await;
    http::json_when_up(http, "/api/v1/rounds").await;

    // Round 1: the TRF and the engine's list.
    let trf = dir.join("bergen.trf");
    std::fs::write(&trf, START).unwrap();
    let list = dir.join("round1.txt");
    std::fs::write(&list, ROUND1).unwrap();
    round_load_with(&trf, 1, &cfg, &["--pairs", &list.display().to_string()]).await;
    let r1 = json_auth(http, "/api/v1/rounds/1");
    for (i, (white, black, _, _)) in BOARDS.iter().enumerate() {
        let on = &r1["boards"][i];
        assert_eq!(on["board"], id(i + 1), "{r1:#}");
        assert_eq!(
            (on["white"]["name"].as_str(), on["black"]["name"].as_str()),
            (Some(*white), Some(*black)),
            "{r1:#}"
        );
    }
    assert_eq!(r1["complete"], false, "{r1:#}");

    // Every game ends on its board with its real result; the arbiter confirms each.
    d.wait_every_board("game_ended", BOARDS.len(), WAIT).await;
    let r1 = json_auth(http, "/api/v1/rounds/1");
    for (i, (_, _, _, result)) in BOARDS.iter().enumerate() {
        assert_eq!(r1["boards"][i]["game"]["result"], *result, "{r1:#}");
    }
    for n in 1..=BOARDS.len() {
        assert_eq!(
            json_auth(http, "/api/v1/rounds/1")["complete"],
            false,
            "complete before board {n} is confirmed"
        );
        let r = http::with_token(
            http,
            "POST",
            &format!("/api/v1/boards/{}/result", id(n)),
            TOKEN,
            r#"{"confirm":true}"#,
        );
        assert_eq!(r.status, 200, "confirm board {n}: {}", r.body);
    }
    let r1 = json_auth(http, "/api/v1/rounds/1");
    assert_eq!(r1["complete"], true, "the bye needs no confirming: {r1:#}");

    // The TRF back is the file the engine checked and paired round 2 from.
    let (status, body) = get_auth(http, "/api/v1/rounds/1/results.trf");
    assert_eq!(status, 200);
    assert_eq!(
        String::from_utf8_lossy(&body),
        String::from_utf8_lossy(ROUND1_RESULTS)
    );
    let written = dir.join("round1-results.trf");
    let out = Command::new(bin())
        .args([
            "round", "results", "--round", "1", "--config", &cfg, "--out",
        ])
        .arg(&written)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "round results: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&written).unwrap(), ROUND1_RESULTS);

    // The engine pairs round 2 from it (itself, or as it did when recorded).
    let round2 = match engine_pairs_next(&written) {
        Some(list) => {
            assert_eq!(list, ROUND2, "the engine paired round 2 otherwise");
            list
        }
        None => {
            eprintln!(
                "e2e_pairing_engine: EBOARDD_BBP not set: the engine's recorded output \
                 (tests/data/trf/bbp/round2.txt) stands in for running it"
            );
            ROUND2.to_string()
        }
    };

    // Round 2: eboardd's own TRF and the engine's list.
    let list2 = dir.join("round2.txt");
    std::fs::write(&list2, &round2).unwrap();
    round_load_with(
        &written,
        2,
        &cfg,
        &["--pairs", &list2.display().to_string()],
    )
    .await;
    let r2 = json_auth(http, "/api/v1/rounds/2");
    for (i, (white, black)) in ROUND2_BOARDS.iter().enumerate() {
        let on = &r2["boards"][i];
        assert_eq!(
            (on["white"]["name"].as_str(), on["black"]["name"].as_str()),
            (Some(*white), Some(*black)),
            "{r2:#}"
        );
    }
    // Round 1 keeps its confirmed results beside it.
    assert_eq!(json_auth(http, "/api/v1/rounds/1")["complete"], true);

    d.terminate();
    for (i, b) in boards.into_iter().enumerate() {
        stop_strict(b, &id(i + 1)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
