//! Rounds and pairings end to end: a TRF and a CSV loaded over the API with the token reach
//! the API, the relay PGN and JSON (over HTTP and on disk) and the LiveChess API on the right
//! boards; a broken file is refused with line and field and changes nothing; no token, no
//! load; the previous round's games stay served; `eboardd round load` talks to the daemon;
//! the LiveChess tournaments / tournament / round / game calls answer in the client's shapes.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

mod support;

use eboardd::core::event::{CoreEvent, EndReason, EventKind};
use eboardd::output::relay::RelayWriter;
use eboardd::output::{Hub, HubConfig, OutputConfig, Outputs, RoundInfo};

const TOKEN: &str = "round-token-123";
const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

/// The bytes of `tests/data/rounds/<name>`.
fn round_data(name: &str) -> Vec<u8> {
    std::fs::read(support::data("rounds").join(name)).expect("test data")
}

struct Setup {
    hub: Hub,
    outputs: Outputs,
    http: SocketAddr,
    livechess: SocketAddr,
}

async fn setup(round_file: Option<PathBuf>) -> Setup {
    let info = RoundInfo {
        event: Some("Rhein-Main Open".into()),
        round: 1,
        date: Some("2026.11.30".into()),
        boards: vec!["board-1".into(), "board-2".into(), "board-3".into()],
        epoch_ms: 1_780_000_000_000,
        ..Default::default()
    };
    let hub = Hub::new(info, HubConfig::default());
    let cfg = OutputConfig {
        http: Some("127.0.0.1:0".parse().unwrap()),
        livechess: Some("127.0.0.1:0".parse().unwrap()),
        token: Some(TOKEN.into()),
        round_file,
        ..Default::default()
    };
    let outputs = eboardd::output::start(hub.clone(), &cfg)
        .await
        .expect("start");
    Setup {
        hub,
        http: outputs.http.unwrap(),
        livechess: outputs.livechess.unwrap(),
        outputs,
    }
}

/// [`support::http::request`] as `(status, body)`.
fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let r = support::http::request(addr, method, path, headers, body).expect("an HTTP answer");
    (r.status, r.body)
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    http(addr, "GET", path, &[], b"")
}

fn get_json(addr: SocketAddr, path: &str) -> Value {
    let (status, body) = get(addr, path);
    assert_eq!(status, 200, "{path}: {body}");
    serde_json::from_str(&body).expect("json")
}

fn load(addr: SocketAddr, query: &str, body: &[u8]) -> (u16, String) {
    let bearer = format!("Bearer {TOKEN}");
    http(
        addr,
        "POST",
        &format!("/api/v1/round?{query}"),
        &[("Authorization", &bearer)],
        body,
    )
}

fn ev(t: i64, game: u32, kind: EventKind) -> CoreEvent {
    CoreEvent { t, game, kind }
}

/// Board `board` starts game `game` and plays 1. e4 e5.
fn play(hub: &Hub, board: &str, game: u32, t: i64) {
    hub.publish(
        board,
        &ev(
            t,
            game,
            EventKind::GameStarted {
                fen: START.into(),
                chess960: None,
            },
        ),
    );
    for (ply, san, uci) in [(1, "e4", "e2e4"), (2, "e5", "e7e5")] {
        hub.publish(
            board,
            &ev(
                t + ply as i64 * 1_000_000,
                game,
                EventKind::MoveMade {
                    ply,
                    san: san.into(),
                    uci: uci.parse().unwrap(),
                    fen: String::new(),
                    recovered: false,
                },
            ),
        );
    }
}

fn end(hub: &Hub, board: &str, game: u32, t: i64) {
    hub.publish(
        board,
        &ev(
            t,
            game,
            EventKind::GameEnded {
                result: eboardd::core::vocab::WHITE_WINS,
                reason: EndReason::Checkmate,
            },
        ),
    );
}

fn board<'a>(snapshot: &'a Value, id: &str) -> &'a Value {
    snapshot["boards"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["board"] == id)
        .expect("board")
}

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
    k.sort();
    k
}

fn sorted(k: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = k.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trf_round_reaches_the_api_the_relay_files_and_livechess() {
    let dir = support::scratch("rounds-trf");
    let s = setup(None).await;
    let (status, body) = load(s.http, "round=4&format=trf", &round_data("round4.trf"));
    assert_eq!(status, 200, "{body}");
    play(&s.hub, "board-1", 1, 1_000_000);

    // API: board order by score: Kowalska - Novak on board 1, Berg - Petrov on board 3.
    let snap = get_json(s.http, "/api/v1/boards");
    assert_eq!(snap["round"], 4);
    let b1 = board(&snap, "board-1");
    assert_eq!(b1["white"]["name"], "Kowalska, Anna");
    assert_eq!(b1["white"]["title"], "WGM");
    assert_eq!(b1["white"]["elo"], 2390);
    assert_eq!(b1["white"]["federation"], "POL");
    assert_eq!(b1["white"]["fide_id"], 1100002);
    assert_eq!(b1["black"]["name"], "Novak, Petr");
    assert_eq!(board(&snap, "board-3")["black"]["name"], "Petrov, Ivan");

    // Relay PGN and JSON over HTTP and on disk.
    let (_, pgn) = get(s.http, "/relay/round-4/games.pgn");
    for tag in [
        "[Round \"4.1\"]",
        "[White \"Kowalska, Anna\"]",
        "[Black \"Novak, Petr\"]",
        "[WhiteTitle \"WGM\"]",
        "[WhiteElo \"2390\"]",
        "[WhiteFideId \"1100002\"]",
        "[BlackFed \"CZE\"]",
    ] {
        assert!(pgn.contains(tag), "{tag} missing in {pgn}");
    }
    let index = get_json(s.http, "/relay/round-4/index.json");
    assert_eq!(index["pairings"][2]["black"]["lname"], "Petrov");
    assert_eq!(index["pairings"][2]["black"]["fideid"], 24100010);
    let mut writer = RelayWriter::new(&dir).unwrap();
    writer.flush(&s.hub).unwrap();
    let disk = std::fs::read_to_string(dir.join("round-4/games.pgn")).unwrap();
    assert!(disk.contains("[White \"Kowalska, Anna\"]"), "{disk}");

    // LiveChess: the tournament, its round 4 and the game, in the client's shapes.
    let ts = get_json(s.livechess, "/api/v1.0/tournaments");
    assert_eq!(keys(&ts[0]), sorted(&["uuid", "description", "rounds"]));
    assert_eq!(ts[0]["rounds"], 4);
    let id = ts[0]["uuid"].as_str().unwrap().to_string();
    let t = get_json(s.livechess, &format!("/api/v1.0/tournament/{id}"));
    assert_eq!(
        keys(&t),
        sorted(&[
            "uuid",
            "name",
            "description",
            "location",
            "country",
            "rounds",
            "eboards"
        ])
    );
    assert_eq!(t["eboards"], json!(["board-1", "board-2", "board-3"]));
    let r = get_json(s.livechess, &format!("/api/v1.0/round/{id}/4"));
    assert_eq!(keys(&r), sorted(&["nr", "date", "pairings"]));
    let p = &r["pairings"][0];
    assert_eq!(
        keys(p),
        sorted(&["nr", "uuid", "white", "black", "live", "result"])
    );
    assert_eq!(
        keys(&p["white"]),
        sorted(&[
            "fname",
            "mname",
            "lname",
            "title",
            "federation",
            "gender",
            "fideid"
        ])
    );
    assert_eq!(
        (p["nr"].clone(), p["white"]["lname"].clone()),
        (json!(1), json!("Kowalska"))
    );
    assert_eq!(p["white"]["fname"], "Anna");
    assert_eq!(r["pairings"][2]["black"]["lname"], "Petrov");
    let g = get_json(
        s.livechess,
        &format!("/api/v1.0/game/{}", p["uuid"].as_str().unwrap()),
    );
    assert_eq!(
        keys(&g),
        sorted(&["chess960", "result", "comment", "clock", "moves"])
    );
    assert_eq!(g["moves"].as_array().unwrap().len(), 2);
    assert!(g["moves"][0].as_str().unwrap().starts_with("e4 "));
    assert_eq!(get(s.livechess, &format!("/api/v1.0/round/{id}/9")).0, 404);
    assert_eq!(get(s.livechess, "/api/v1.0/tournament/nope").0, 404);

    // The same calls over the WebSocket.
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/api/v1.0", s.livechess))
        .await
        .unwrap();
    let calls = [
        json!({"id": 1, "call": "tournaments"}),
        json!({"id": 2, "call": "round", "param": {"tournament": id, "round": 4}}),
        json!({"id": 3, "call": "game", "param": {"uuid": "4.1"}}),
    ];
    let mut answers = Vec::new();
    for c in calls {
        ws.send(Message::Text(c.to_string().into())).await.unwrap();
        let m = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        answers.push(serde_json::from_str::<Value>(m.to_text().unwrap()).unwrap());
    }
    assert_eq!(answers[0]["param"], ts);
    assert_eq!(answers[1]["param"], r);
    assert_eq!(answers[2]["param"], g);
    s.outputs.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_round_replaces_the_players_and_a_broken_file_changes_nothing() {
    let dir = support::scratch("rounds-csv");
    let round_file = dir.join("round.json");
    let s = setup(Some(round_file.clone())).await;
    let (status, body) = load(s.http, "round=5&format=csv", &round_data("round5.csv"));
    assert_eq!(status, 200, "{body}");
    let snap = get_json(s.http, "/api/v1/boards");
    assert_eq!(snap["round"], 5);
    assert_eq!(board(&snap, "board-2")["white"]["name"], "Novak, Petr");
    assert_eq!(board(&snap, "board-2")["black"]["title"], "IM");
    assert_eq!(board(&snap, "board-3")["black"]["fide_id"], 1700005);
    assert!(round_file.exists(), "the loaded round is saved");

    // A bad rating on line 7 of a TRF: refused with line and field; nothing applied.
    let bad = String::from_utf8(round_data("round4.trf"))
        .unwrap()
        .replace("2105 CZE", "21O5 CZE");
    let (status, body) = load(s.http, "round=6&format=trf", bad.as_bytes());
    assert_eq!(status, 422, "{body}");
    let err: Value = serde_json::from_str(&body).unwrap();
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .starts_with("line 10, field rating:"),
        "{body}"
    );
    let (status, body) = load(
        s.http,
        "round=6&format=csv",
        b"board,white,black\n1,A,B\n1,C,D\n",
    );
    assert_eq!(status, 422);
    assert!(body.contains("line 3, field board"), "{body}");
    let after = get_json(s.http, "/api/v1/boards");
    assert_eq!(after["round"], 5);
    assert_eq!(board(&after, "board-2")["white"]["name"], "Novak, Petr");
    assert_eq!(get_json(s.http, "/api/v1/rounds")["current"], 5);

    // Without the token (or with a wrong one): refused before the body is read. The declared
    // body never comes: a server reading it first would answer 408 after its body deadline.
    let mut sock = std::net::TcpStream::connect(s.http).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    sock.write_all(
        b"POST /api/v1/round?round=6 HTTP/1.0\r\nHost: t\r\nContent-Length: 5000\r\n\r\n",
    )
    .unwrap();
    let mut raw = String::new();
    sock.read_to_string(&mut raw).unwrap();
    assert!(
        raw.starts_with("HTTP/1.0 401") || raw.starts_with("HTTP/1.1 401"),
        "{raw}"
    );
    let (status, _) = http(
        s.http,
        "POST",
        "/api/v1/round?round=6",
        &[("Authorization", "Bearer wrong-token-000")],
        &round_data("round5.csv"),
    );
    assert_eq!(status, 401);
    assert_eq!(get_json(s.http, "/api/v1/boards")["round"], 5);

    // A restart with the saved round gets it back.
    s.outputs.shutdown().await;
    let fresh = Hub::new(RoundInfo::default(), HubConfig::default());
    assert!(eboardd::output::rounds::restore(&fresh, &round_file).unwrap());
    fresh.with_round(|r| {
        assert_eq!(r.info.round, 5);
        assert_eq!(
            r.pairing("board-2").white.name.as_deref(),
            Some("Novak, Petr")
        );
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_rounds_games_stay_served_after_the_next_round_is_loaded() {
    let dir = support::scratch("rounds-previous");
    let s = setup(None).await;
    let csv1 =
        b"board,white,black\n1,\"Alpha, Ann\",\"Beta, Bob\"\n2,\"Gamma, Gus\",\"Delta, Dan\"\n";
    let csv2 =
        b"board,white,black\n1,\"Delta, Dan\",\"Alpha, Ann\"\n2,\"Beta, Bob\",\"Gamma, Gus\"\n";
    assert_eq!(load(s.http, "round=1", csv1).0, 200);
    play(&s.hub, "board-1", 1, 1_000_000);
    end(&s.hub, "board-1", 1, 5_000_000);
    assert_eq!(load(s.http, "round=2", csv2).0, 200);
    // Between rounds the board shows no game of the new round.
    assert!(board(&get_json(s.http, "/api/v1/boards"), "board-1")["game"].is_null());
    play(&s.hub, "board-1", 2, 10_000_000);

    let rounds = get_json(s.http, "/api/v1/rounds");
    assert_eq!(rounds["current"], 2);
    assert_eq!(rounds["rounds"].as_array().unwrap().len(), 2);
    let (status, old) = get(s.http, "/api/v1/rounds/1/games.pgn");
    assert_eq!(status, 200);
    assert!(
        old.contains("[Round \"1.1\"]") && old.contains("[White \"Alpha, Ann\"]"),
        "{old}"
    );
    assert!(old.contains("1. e4 {made} e5 {made} 1-0"), "{old}");
    assert!(
        !old.contains("Delta"),
        "round 1 with round 1's players only: {old}"
    );
    let r1 = get_json(s.http, "/api/v1/rounds/1");
    assert_eq!(r1["boards"][0]["black"]["name"], "Beta, Bob");
    assert_eq!(r1["boards"][0]["game"]["result"], "1-0");
    // The current round's routes show round 2 only.
    let (_, current) = get(s.http, "/api/v1/games.pgn");
    assert!(current.contains("[Round \"2.1\"]") && current.contains("[White \"Delta, Dan\"]"));
    assert!(!current.contains("[Round \"1.1\"]"), "{current}");
    let (_, relay1) = get(s.http, "/relay/round-1/games.pgn");
    assert_eq!(relay1, old);
    assert_eq!(get(s.http, "/relay/round-1/game-1.json").0, 200);
    assert_eq!(get(s.http, "/api/v1/rounds/7/games.pgn").0, 404);
    // Both round folders on disk.
    let mut writer = RelayWriter::new(&dir).unwrap();
    writer.flush(&s.hub).unwrap();
    let disk1 = std::fs::read_to_string(dir.join("round-1/games.pgn")).unwrap();
    let disk2 = std::fs::read_to_string(dir.join("round-2/games.pgn")).unwrap();
    assert_eq!(disk1, old);
    assert!(disk2.contains("[White \"Delta, Dan\"]"), "{disk2}");
    // LiveChess: round 1 still answered with its players and result.
    let id = get_json(s.livechess, "/api/v1.0/tournaments")[0]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let lr1 = get_json(s.livechess, &format!("/api/v1.0/round/{id}/1"));
    assert_eq!(lr1["pairings"][0]["white"]["lname"], "Alpha");
    assert_eq!(lr1["pairings"][0]["result"], "WHITEWIN");
    s.outputs.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eboardd_round_load_talks_to_the_daemon() {
    let dir = support::scratch("rounds-cli");
    let s = setup(None).await;
    let token = dir.join("token");
    std::fs::write(&token, format!("{TOKEN}\n")).unwrap();
    let good = dir.join("round5.csv");
    std::fs::write(&good, round_data("round5.csv")).unwrap();
    let server = format!("http://{}", s.http);
    let run = |file: &PathBuf, round: &str| {
        let args: Vec<std::ffi::OsString> = vec![
            "round".into(),
            "load".into(),
            file.into(),
            "--round".into(),
            round.into(),
            "--server".into(),
            server.clone().into(),
            "--token-file".into(),
            token.clone().into(),
        ];
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_eboardd"))
                .args(args)
                .output()
                .unwrap()
        })
    };
    let out = run(&good, "5").await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("round 5 loaded")
            && stdout.contains("board-1: Petrov, Ivan - Kowalska, Anna"),
        "{stdout}"
    );
    assert_eq!(get_json(s.http, "/api/v1/boards")["round"], 5);

    let bad = dir.join("bad.trf");
    let text = String::from_utf8(round_data("round4.trf"))
        .unwrap()
        .replace("2390 POL", "23x0 POL");
    std::fs::write(&bad, text).unwrap();
    let out = run(&bad, "6").await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("line 8, field rating"), "{stderr}");
    assert_eq!(get_json(s.http, "/api/v1/boards")["round"], 5);
    s.outputs.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
