//! End to end: `eboardd run --config FILE` serving an emulated board; the configured players and
//! serial number reach the API and LiveChess; `eboardd round load` starts round 2 while round 1's
//! game stays served; a restart of the daemon keeps round 2 and its players (`round.json` next
//! to the captures).

mod support;

use support::daemon::*;
use support::http::free_port;

use support::http::{get_local as get, json_when_up as json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_round_reaches_the_daemons_outputs_and_survives_a_restart() {
    let one = single("e2e-rounds", 3, 41007, 1000.0, None);
    let (http, livechess) = (free_port(), free_port());
    let token = one.dir.join("token");
    std::fs::write(&token, "e2e-round-token\n").unwrap();
    let cfg = one.write_config(&format!(
            "[event]\nname = \"Rounds Open\"\nround = \"1\"\n\n\
             [[board]]\nnumber = 1\nserial = \"41007\"\nwhite = \"Alpha, Ann\"\nblack = \"Beta, Bob\"\n\n\
             [outputs]\nhttp = \"127.0.0.1:{http}\"\nlivechess = \"127.0.0.1:{livechess}\"\n\
             token_file = \"{}\"\n",
            token.display()
        ));
    let mut d = one.start(&["--config", &cfg]);
    one.wait_done(&mut d, "board-1").await;

    // The configured players and serial number reach the API and LiveChess.
    let boards = json(http, "/api/v1/boards").await;
    assert_eq!(boards["boards"][0]["white"]["name"], "Alpha, Ann");
    let eboards = json(livechess, "/api/v1.0/eboards").await;
    assert_eq!(eboards[0]["serialnr"], "41007");

    // Round 2 from the command line.
    let csv = one.dir.join("round2.csv");
    std::fs::write(
        &csv,
        "board,white,black,white_rating\n1,\"Gamma, Gus\",\"Delta, Dan\",2100\n",
    )
    .unwrap();
    round_load(&csv, 2, &cfg).await;

    let boards = json(http, "/api/v1/boards").await;
    assert_eq!(boards["round"], 2);
    // Round 1's game has no result (its players did not signal one): it stays on the board
    // in round 1 with round 1's players; round 2 has its pairing.
    assert_eq!(boards["boards"][0]["round"], 1);
    assert_eq!(boards["boards"][0]["white"]["name"], "Alpha, Ann");
    let r2 = json(http, "/api/v1/rounds/2").await;
    assert_eq!(r2["boards"][0]["white"]["name"], "Gamma, Gus");
    let (code, old) = get(http, "/api/v1/rounds/1/games.pgn").unwrap();
    assert_eq!(code, 200);
    assert!(
        old.contains("[Round \"1.1\"]") && old.contains("[White \"Alpha, Ann\"]"),
        "{old}"
    );
    assert!(old.contains(san(&one.game)[0].as_str()), "{old}");
    let ts = json(livechess, "/api/v1.0/tournaments").await;
    let id = ts[0]["uuid"].as_str().unwrap().to_string();
    let t = json(livechess, &format!("/api/v1.0/tournament/{id}")).await;
    assert_eq!(t["eboards"][0], "41007");
    let r2 = json(livechess, &format!("/api/v1.0/round/{id}/2")).await;
    assert_eq!(r2["pairings"][0]["white"]["lname"], "Gamma");

    // A restart keeps round 2 and its players.
    d.terminate();
    // The capture records the loaded players (a `set_tags` record), and its replay keeps round
    // 1's players on round 1's game.
    let captured: String = std::fs::read_dir(&one.caps)
        .unwrap()
        .flatten()
        .flat_map(|day| {
            std::fs::read_dir(day.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .filter(|f| f.path().extension().is_some_and(|x| x == "jsonl"))
        .map(|f| std::fs::read_to_string(f.path()).unwrap())
        .collect();
    assert!(
        captured.contains("\"set_tags\"") && captured.contains("Gamma, Gus"),
        "the loaded round's players are captured"
    );
    let replayed = replay(&one.caps);
    assert!(
        replayed.contains("[White \"Alpha, Ann\"]") && !replayed.contains("Gamma"),
        "round 1's game keeps round 1's players in the replay:\n{replayed}"
    );
    assert!(one.caps.join("round.json").exists());
    let d = one.start(&["--config", &cfg]);
    let boards = json(http, "/api/v1/boards").await;
    assert_eq!(boards["round"], 2);
    assert_eq!(boards["boards"][0]["white"]["name"], "Alpha, Ann");
    let r2 = json(http, "/api/v1/rounds/2").await;
    assert_eq!(r2["boards"][0]["white"]["name"], "Gamma, Gus");
    assert_eq!(r2["boards"][0]["white"]["elo"], 2100);
    one.finish(d, "board-1").await;
}
