//! `eboardd demo` as a newcomer runs it: every board plays its own game, which ends on the
//! board with its real result and starts again, until Ctrl-C; `[%emt]` is the clock's time
//! spent at any speed; a board count it cannot run and an address in use are refused in one
//! line, before anything is printed about them.

mod support;

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use eboardd::sim::pgn::ScriptGame;
use support::daemon::*;

/// A demo running as a child process, its standard output read line by line.
struct Demo {
    child: Option<Child>,
    lines: Receiver<String>,
    out: Vec<String>,
}

impl Demo {
    fn start(args: &[&str]) -> Demo {
        let mut child = Command::new(bin())
            .arg("demo")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start eboardd demo");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Demo {
            child: Some(child),
            lines,
            out: Vec::new(),
        }
    }

    /// Reads lines until `done(all lines so far)` holds; panics with the output after `limit`.
    fn wait_for(&mut self, limit: Duration, what: &str, done: impl Fn(&[String]) -> bool) {
        let deadline = Instant::now() + limit;
        while !done(&self.out) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.out.push(line),
                Err(_) => panic!(
                    "timed out waiting for {what}; the demo printed:\n{}",
                    self.text()
                ),
            }
        }
    }

    /// Whether the demo is still running.
    fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().ok().flatten().is_none())
    }

    /// Ctrl-C; returns the exit status and reads the rest of the output.
    fn interrupt(&mut self) -> std::process::ExitStatus {
        let child = self.child.take().unwrap();
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
        let status =
            wait_timeout(child, Duration::from_secs(60)).expect("the demo stops on Ctrl-C");
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            self.out.push(line);
        }
        status
    }

    fn text(&self) -> String {
        self.out.join("\n")
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The line the demo prints when `board`'s game `n` ends with `result` told on the board.
fn ended(board: usize, n: u32, result: &str) -> String {
    format!(
        "{:<9} game {n} ended: {result} (kings signal)",
        format!("board-{board}")
    )
}

/// Seconds of a clock text `h:mm:ss`.
fn seconds(text: &str) -> i64 {
    text.split(':')
        .fold(0, |acc, p| acc * 60 + p.parse::<i64>().unwrap())
}

/// The time the source game's player took for ply index `i` (from 0): their `[%clk]` before,
/// plus the increment, minus their `[%clk]` after; `None` where the source does not tell.
fn source_spent(game: &ScriptGame, i: usize) -> Option<i64> {
    let (_, inc) = game.time_control()?;
    let before = i64::from(game.clocks.get(i.checked_sub(2)?).copied().flatten()?);
    let after = i64::from(game.clocks.get(i).copied().flatten()?);
    Some((before + i64::from(inc) - after) / 1000)
}

#[test]
fn demo_games_end_with_their_results_and_start_again_until_ctrl_c() {
    let dir = scratch("demo-results");
    let caps = dir.join("captures");
    let games = demo_games();
    let boards = 3;
    let mut demo = Demo::start(&[
        "--boards",
        "3",
        "--speed",
        "300",
        "--http",
        "off",
        "--capture-dir",
        caps.to_str().unwrap(),
    ]);
    // Every board's game ends with the source game's result, told on the board, and the
    // board's next game starts: the demo goes on by itself.
    let want: Vec<String> = (0..boards)
        .map(|i| ended(i + 1, 1, games[i].tag("Result").unwrap()))
        .collect();
    demo.wait_for(
        Duration::from_secs(120),
        "every first game's result",
        |out| want.iter().all(|w| out.iter().any(|l| l == w)),
    );
    // Board 1 well into its second game: its moves so far are printed with [%emt] at Ctrl-C.
    demo.wait_for(Duration::from_secs(120), "board-1's second game", |out| {
        out.iter()
            .position(|l| l.starts_with("board-1   game 2 started"))
            .is_some_and(|p| out[p..].iter().any(|l| l.starts_with("board-1   12. ")))
    });
    assert!(
        demo.running(),
        "the demo stopped by itself:\n{}",
        demo.text()
    );
    let status = demo.interrupt();
    assert!(status.success(), "{status:?}\n{}", demo.text());
    let out = demo.text();
    assert!(out.contains("Ctrl-C to stop"), "{out}");
    assert!(out.contains("Captures are in"), "{out}");

    // The captures replay to the same games with the same results.
    let pgn = replay(&caps);
    let got = games_by_board(&pgn);
    for (i, source) in games.iter().take(boards).enumerate() {
        let board = format!("board-{}", i + 1);
        let played: Vec<&ScriptGame> = got
            .iter()
            .filter(|(b, _)| *b == board)
            .map(|(_, g)| g)
            .collect();
        assert!(!played.is_empty(), "{board}: no game\n{pgn}");
        assert_eq!(san(played[0]), san(source), "{board}");
        assert_eq!(
            played[0].tag("Result"),
            source.tag("Result"),
            "{board}\n{pgn}"
        );
        // Board 1 (seen into its second game): the game again, from the start position.
        if i == 0 {
            assert!(played.len() >= 2, "{board}: {} games\n{pgn}", played.len());
            let again = san(played[1]);
            assert!(
                again.len() >= 23 && san(source).starts_with(&again),
                "{board}\n{pgn}"
            );
        }
    }

    // [%emt] in the demo's own PGN (the round's time control known): the clock's time spent,
    // the source game's where its player took more than the hands need.
    let at = out
        .find("[Board \"board-1\"]")
        .expect("board-1's game printed");
    let printed = &out[at..];
    let printed = &printed[..printed.find("[Event").unwrap_or(printed.len())];
    assert!(out.contains("[TimeControl \"900+10\"]"), "{out}");
    // (ply index, seconds) of every [%emt].
    let mut emts: Vec<(usize, i64)> = Vec::new();
    let mut plies = 0;
    let mut tokens = printed[printed.find("\n\n").unwrap()..].split_whitespace();
    while let Some(token) = tokens.next() {
        if token == "{[%emt" {
            let value = tokens.next().unwrap().trim_end_matches("]}");
            emts.push((plies - 1, seconds(value)));
        } else if !token.starts_with('{')
            && !token.ends_with("]}")
            && !token.ends_with('.')
            && token != "*"
        {
            plies += 1;
        }
    }
    assert!(plies >= 20, "{printed}");
    assert!(
        emts.len() + 3 >= plies,
        "an [%emt] on every move but the first:\n{printed}"
    );
    let zeros = emts.iter().filter(|(_, s)| *s == 0).count();
    assert!(
        zeros * 5 <= emts.len(),
        "{zeros} of {} [%emt] are 0:\n{printed}",
        emts.len()
    );
    let mut compared = 0;
    for (i, spent) in emts {
        if let Some(source) = source_spent(&games[0], i).filter(|s| *s >= 10) {
            assert!(
                (spent - source).abs() <= 2,
                "ply {}: [%emt] {spent} s, the source's {source} s\n{printed}",
                i + 1
            );
            compared += 1;
        }
    }
    assert!(compared >= 3, "{printed}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_board_count_the_demo_cannot_run_is_refused_in_one_line() {
    for boards in ["0", "100", "dgt:30,millennium:30"] {
        let out = Command::new(bin())
            .args(["demo", "--boards", boards, "--http", "off"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = out.id();
        let out = std::thread::spawn(move || out.wait_with_output().unwrap());
        let deadline = Instant::now() + Duration::from_secs(20);
        while !out.is_finished() && Instant::now() < deadline {
            std::thread::park_timeout(Duration::from_millis(50));
        }
        if !out.is_finished() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            panic!("--boards {boards}: the demo ran");
        }
        let out = out.join().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--boards {boards}: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "--boards {boards}: printed {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(
            stderr.trim_end().lines().count(),
            1,
            "--boards {boards}: {stderr}"
        );
        assert!(stderr.contains("1 to 55"), "--boards {boards}: {stderr}");
    }
}

#[test]
fn an_address_in_use_is_refused_before_the_page_is_announced() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = scratch("demo-addr");
    let child = Command::new(bin())
        .args(["demo", "--boards", "1", "--http", &addr, "--capture-dir"])
        .arg(dir.join("captures"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = std::thread::spawn(move || child.wait_with_output().unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    while !out.is_finished() && Instant::now() < deadline {
        std::thread::park_timeout(Duration::from_millis(50));
    }
    if !out.is_finished() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        panic!("the demo ran with {addr} in use");
    }
    let out = out.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stdout.contains("http://"), "the page announced:\n{stdout}");
    assert!(stderr.contains(&addr), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    drop(taken);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn demo_mixes_dgt_and_millennium_boards() {
    let dir = scratch("millennium-demo");
    let caps = dir.join("captures");
    let games = demo_games();
    let mut demo = Demo::start(&[
        "--boards",
        "dgt:1,millennium:1",
        "--speed",
        "1000",
        "--http",
        "off",
        "--capture-dir",
        caps.to_str().unwrap(),
    ]);
    let want: Vec<String> = (0..2)
        .map(|i| ended(i + 1, 1, games[i].tag("Result").unwrap()))
        .collect();
    demo.wait_for(Duration::from_secs(120), "both games' results", |out| {
        want.iter().all(|w| out.iter().any(|l| l == w))
    });
    assert!(demo.interrupt().success());
    let out = demo.text();
    assert!(out.contains("1 millennium ("), "{out}");
    // The Millennium board's capture names its driver and replays to its game.
    let day = std::fs::read_dir(&caps)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(day.join("board-2.jsonl")).unwrap();
    assert!(
        text.lines()
            .next()
            .unwrap()
            .contains("\"driver\":\"millennium\"")
    );
    let got = games_by_board(&replay(&caps));
    for (board, want) in [("board-1", &games[0]), ("board-2", &games[1])] {
        let first = got
            .iter()
            .find(|(b, _)| b == board)
            .unwrap_or_else(|| panic!("{board} missing:\n{out}"));
        assert_eq!(san(&first.1), san(want), "{board}");
        assert_eq!(first.1.tag("Result"), want.tag("Result"), "{board}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
