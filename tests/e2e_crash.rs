//! End to end: `kill -9` of the daemon in the middle of a game (and a capture line cut off as
//! by a power cut), then a restart. No completed move may be lost: the restarted daemon
//! rebuilds the game from its capture, appends to the same file, recovers the move made while it
//! was down from the board dump, and the replay of the capture directory gives the whole game.

mod support;

use std::io::Write;
use std::time::Duration;

use eboardd::sim::emulator::runner::Control;
use support::daemon::*;

const SPEED: f64 = 1000.0;
const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_and_restart_loses_no_completed_move() {
    let one = single("kill9", 5, 33000, SPEED, None);
    let (g, id) = (&one.game, one.id.as_str());
    let mut d = one.start(&[]);
    d.wait_for("ply 16 to be completed", WAIT, |ev| completed(ev, id, 16))
        .await;
    // The players go on for one more move while the daemon is down.
    one.board.send(Control::Hold { plies: 1 });
    let seen = {
        let ev = d.events.lock().unwrap();
        completed_plies(&ev, id)
    };
    d.kill9();
    // A power cut in the middle of writing a record.
    let file = std::fs::read_dir(&one.caps)
        .unwrap()
        .flat_map(|day| std::fs::read_dir(day.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(&format!("{id}.jsonl")))
        .expect("the board's capture");
    let lines_before = std::fs::read_to_string(&file).unwrap().lines().count();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(b"{\"t\":99.5,\"dev\":\"dgt-33000\",\"rx\":\"8e00")
        .unwrap();

    let mut d = one.start(&[]);
    d.wait_for("the game to be completed", WAIT, |ev| {
        completed(ev, id, g.moves.len())
    })
    .await;
    {
        let ev = d.events.lock().unwrap();
        assert!(
            of(&ev, id, "game_started").is_empty(),
            "a restart is not a new game"
        );
        // The moves of the second run continue the first.
        let first_made = of(&ev, id, "move_made")[0]["ply"].as_u64().unwrap() as usize;
        assert!(first_made > seen, "ply {first_made} after {seen}");
    }
    d.terminate();
    stop_strict(one.board, id).await;
    // One file, appended to, its cut-off line gone.
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.lines().count() > lines_before);
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("{\"format\""))
            .count(),
        1
    );
    assert!(!text.contains("\"t\":99.5"));
    let cap = eboardd::capture::read_capture(&file).unwrap();
    assert!(cap.warnings.is_empty(), "{:?}", cap.warnings);
    assert_replay_exact(&one.caps, &[(id, g)]);
    let _ = std::fs::remove_dir_all(&one.dir);
}
