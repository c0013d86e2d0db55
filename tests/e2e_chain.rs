//! End to end over a pseudo-terminal: `eboardd run --port dgt-bus:PATH` serving an emulated
//! chain of DGT boards in bus mode (the chain emulator of `eboardd::sim::emulator::dgt_bus`,
//! written from DGT's protocol header apart from the daemon's codec), with human handling on
//! every board. Every board's game must come out exact, live and from `eboardd replay DIR`; the
//! chain must only ever be sent bus commands; moves made while the chain was unplugged come back
//! from the boards' memories.

mod support;

use std::path::Path;
use std::time::Duration;

use eboardd::sim::emulator::dgt_bus::{ChainConfig, ChainEmulator, FTDI_LATENCY};
use eboardd::sim::emulator::runner::{self, Control, Handle, RunnerConfig};
use eboardd::sim::emulator::{ClockModel, Script};
use eboardd::sim::pgn::ScriptGame;
use eboardd::sim::{SimConfig, Style};
use serde_json::Value;
use support::daemon::*;

const WAIT: Duration = Duration::from_secs(300);

/// The first `plies` plies of demo game `i` (a rapid game with its clock times).
fn game(i: usize, plies: usize) -> ScriptGame {
    let games = demo_games();
    let mut g = games[i % games.len()].clone();
    g.moves.truncate(plies);
    g.clocks.truncate(plies);
    g
}

/// A chain of `n` boards playing `games` on one pty linked at `link`, the players at `speed`
/// times their real pace (the line and the boards' electronics run at real pace: the players'
/// pace must leave a move a polling cycle of its own most of the time, as at a tournament,
/// where a move takes seconds and a cycle of a dozen boards under half a second).
fn chain(games: &[ScriptGame], cfg: ChainConfig, link: &Path, speed: f64) -> Handle {
    let scripts: Vec<Script> = games
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let mut sim = SimConfig::new(Style::Human, 700 + i as u64);
            sim.dev = format!("chain-{i}");
            // The boards stand set up a while before the players begin (at a tournament, the
            // pieces are set up before the round): time for the first polls to mark the start.
            Script::from_games(std::slice::from_ref(g), &sim, 5_000_000).delayed(20_000_000)
        })
        .collect();
    let em = ChainEmulator::new(scripts, cfg).unwrap();
    runner::spawn(
        em,
        RunnerConfig {
            speed,
            link: Some(link.to_path_buf()),
            wait_for_host: true,
        },
    )
    .unwrap()
}

/// The board id of the chain's board `i` (addresses 1001, 1002, …).
fn id(i: usize) -> String {
    format!("dgt-bus-{:05}", 1001 + i)
}

/// Every `tx` record of the captures under `dir`: each must be a bus command (4 bytes, bit 7
/// set on the first, its checksum right). Returns how many of each command byte were sent.
fn assert_only_bus_commands(dir: &Path) -> std::collections::BTreeMap<u8, u64> {
    let mut sent = std::collections::BTreeMap::new();
    let mut n = 0;
    for day in std::fs::read_dir(dir).unwrap() {
        for f in std::fs::read_dir(day.unwrap().path()).unwrap() {
            let cap = eboardd::capture::read_capture(&f.unwrap().path()).unwrap();
            for r in cap.records {
                if let eboardd::capture::RecordKind::Tx(b) = r.kind {
                    assert_eq!(b.len(), 4, "{b:02x?}");
                    assert!(b[0] & 0x80 != 0, "{b:02x?}");
                    let sum: u32 = b[..3].iter().map(|&x| u32::from(x)).sum();
                    assert_eq!(b[3], (sum & 0x7F) as u8, "{b:02x?}");
                    *sent.entry(b[0]).or_default() += 1;
                    n += 1;
                }
            }
        }
    }
    assert!(n > 0, "no command captured");
    sent
}

fn recovered(events: &[Value], board: &str) -> usize {
    of(events, board, "move_made")
        .iter()
        .filter(|e| e["recovered"] == true)
        .count()
}

/// What the line does to the boards' replies.
#[derive(Debug, Clone, Copy)]
struct Faults {
    /// Probability that a reply byte is lost.
    lossy: f64,
    /// Probability that a reply byte comes through with a bit flipped.
    garble: f64,
    /// Probability that a reply is cut short.
    cut: f64,
    /// The USB-serial adapter's latency timer (an FTDI's 16 ms; 0: none).
    adapter: i64,
}

/// A clean line.
const CLEAN: Faults = Faults {
    lossy: 0.0,
    garble: 0.0,
    cut: 0.0,
    adapter: FTDI_LATENCY,
};

/// A line that loses `p` of the boards' bytes and cuts `p / 4` of their replies short (a cut
/// loses half a reply on average: about `p / 8` of the bytes more).
fn losing(p: f64) -> Faults {
    Faults {
        lossy: p,
        garble: 0.0,
        cut: p / 4.0,
        adapter: FTDI_LATENCY,
    }
}

async fn play(n: usize, plies: usize, speed: f64, faults: Faults, unplug_at: Option<usize>) {
    // A directory (and pty link) of its own for each case.
    let name = format!(
        "chain{n}-{}-{}",
        unplug_at.map_or(0, |p| p),
        (faults.lossy * 1000.0) as u32
    );
    let dir = scratch(&name);
    let caps = dir.join("captures");
    let link = dir.join("chain");
    let games: Vec<ScriptGame> = (0..n).map(|i| game(i, plies)).collect();
    let mut cfg = ChainConfig::new(n);
    // E2E_CHAIN_SEED runs the cases with other line faults and board delays.
    cfg.seed = std::env::var("E2E_CHAIN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40 + n as u64);
    cfg.lossy = faults.lossy;
    cfg.garble = faults.garble;
    cfg.cut = faults.cut;
    cfg.adapter_latency = faults.adapter;
    // Half the boards have no clock on their cable.
    for (i, b) in cfg.boards.iter_mut().enumerate() {
        if i % 2 == 1 {
            b.clock = ClockModel::None;
        }
    }
    let mut em = chain(&games, cfg, &link, speed);
    let port = format!("dgt-bus:{}", link.display());
    let mut d = Daemon::start(&[port.into()], &caps, &[]);
    let ids: Vec<String> = (0..n).map(id).collect();
    if let Some(at) = unplug_at {
        d.wait_for("every board to reach the unplug ply", WAIT, |ev| {
            ids.iter().all(|b| made(ev, b, at))
        })
        .await;
        em.send(Control::Unplug {
            plies: 6,
            away: Duration::from_millis(600),
        });
        assert!(em.wait_for(WAIT, |st| st.generation == 2).await);
    }
    let emulated = em.status.clone();
    d.wait_for_showing(
        "every game to be played",
        WAIT,
        |ev| {
            ids.iter()
                .zip(&games)
                .all(|(b, g)| made(ev, b, g.moves.len()))
        },
        |ev| {
            // Which boards are behind, and where each one's record stands.
            ids.iter()
                .zip(&games)
                .filter(|(b, g)| !made(ev, b, g.moves.len()))
                .map(|(b, g)| {
                    let got = moves_from_events(ev, b);
                    let last = ev.iter().rfind(|e| e["board"] == **b);
                    let last = last.map_or(String::new(), Value::to_string);
                    format!(
                        "{b} {} of {} plies, last event {last}",
                        got.len(),
                        g.moves.len()
                    )
                })
                .collect::<Vec<_>>()
                .join("; ")
                + &{
                    // And where the emulated boards are.
                    let st = emulated.borrow();
                    format!(
                        "; emulator at {} s (finished: {}): {:?}",
                        st.script_time / 1_000_000,
                        st.finished,
                        st.boards
                    )
                }
        },
    )
    .await;
    {
        let ev = d.events.lock().unwrap();
        for (b, g) in ids.iter().zip(&games) {
            assert_eq!(moves_from_events(&ev, b), uci(g), "{b}");
            // What the line could cause (the players' own irregularities, a rook touched
            // before the king, are theirs): nothing. A polled board is judged at its polls, so
            // a slow cycle raises no displaced pieces either (issue 38).
            let code = |e: &&Value| e["code"].as_str().unwrap_or("").to_string();
            let link_caused: Vec<&Value> = of(&ev, b, "irregularity")
                .into_iter()
                .filter(|e| {
                    ["moves_missing", "displaced_pieces", "illegal_move"].contains(&&*code(e))
                })
                .collect();
            assert!(link_caused.is_empty(), "{b}: {link_caused:?}");
            assert_eq!(of(&ev, b, "game_started").len(), 1, "{b}");
            if unplug_at.is_some() {
                assert!(
                    recovered(&ev, b) > 0,
                    "{b}: nothing recovered from the memory"
                );
            }
        }
    }
    d.terminate();
    let st = stop_strict(em, &name).await;
    assert!(st.boards.len() == n, "{:?}", st.boards);
    // The daemon never addressed a board while another one was answering, nor a board still
    // busy with its previous command (a command that came while the emulator itself had
    // fallen behind in the middle of a reply, its machine busy with the other cases, is not
    // the daemon's: the line it saw was quiet; such lost commands and collisions are counted
    // apart, and printed below).
    for b in &st.boards {
        assert_eq!((b.collisions, b.commands_lost), (0, 0), "{b:?}");
    }
    let sent = assert_only_bus_commands(&caps);
    // For the record (issue 38's figures): what the line needed.
    let count = |c: u8| sent.get(&c).copied().unwrap_or(0);
    eprintln!(
        "{name}: SEND_CHANGES {} REPEAT_CHANGES {} SEND_BRD {} SEND_FROM_START {} SEND_CLK {} \
         PING {} IGNORE {} SET_START_GAME {}; emulator: {:?}",
        count(0x83),
        count(0x84),
        count(0x82),
        count(0x86),
        count(0x81),
        count(0x87),
        count(0x8A),
        count(0x85),
        st.boards
            .iter()
            .map(|b| (
                b.replies_sent,
                b.replies_garbled,
                b.collisions,
                b.commands_lost,
                b.commands_lost_in_stalls,
                b.collisions_in_stalls
            ))
            .collect::<Vec<_>>()
    );
    let expected: Vec<(&str, &ScriptGame)> =
        ids.iter().map(String::as_str).zip(games.iter()).collect();
    assert_replay_exact(&caps, &expected);
    // E2E_CHAIN_KEEP keeps the captures, for scripts/chain_cycle.py --captures.
    if std::env::var_os("E2E_CHAIN_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("{name}: captures kept in {}", caps.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_boards_on_one_port() {
    play(3, 24, 10.0, CLEAN, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_boards_on_a_line_that_loses_bytes() {
    play(6, 16, 8.0, losing(0.002), None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_boards_on_one_port() {
    play(12, 12, 4.0, CLEAN, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_made_while_the_chain_was_unplugged_come_from_the_memories() {
    play(3, 24, 10.0, CLEAN, Some(8)).await;
}

/// Issue 38: a chain on a bad cable, 1% of the boards' bytes lost, some replies cut short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_boards_on_a_line_that_loses_one_percent() {
    play(6, 16, 8.0, losing(0.01), None).await;
}

/// Issue 38: 3% of the boards' bytes lost, some replies cut short. (A board's packet that came
/// only with REPEAT_CHANGES is an earlier one: the dump after it was plies ahead, seed 7.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_boards_on_a_line_that_loses_three_percent() {
    play(6, 16, 8.0, losing(0.03), None).await;
}

/// Issue 38: a long chain on a bad cable. (A recapture the board's memory folded into one
/// entry showed three pieces lifted at once, a knocked group to the core after 300 ms, long
/// before the next poll: a polled board is judged at its polls; seeds 2, 3, 5. A bishop slid
/// f1-e2-b5 was recorded as Be2: the clock's reading showed the press before the next poll
/// showed b5, and the press was resolved when its 400 ms settle window ended, shorter than
/// this chain's cycle: a polled board's presses are resolved at its polls too.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_boards_on_a_line_that_loses_one_percent() {
    play(12, 12, 4.0, losing(0.01), None).await;
}

/// Issue 38: a long chain on a worse cable (the players at twice their pace: at four times, a
/// move's changes on a dozen boards come faster than such a line carries long packets). Its
/// cycle (p95 about 2.3 s) can exceed the core's displaced window, which a polled board's
/// engine counts in polls only: no displaced pieces are tolerated. (A board's 71-byte power-up
/// packet took up to 32 s of REPEAT_CHANGES to come through, about one try in nine at 3%: its
/// game began before and went unmarked (seeds 82, 86), and six plies came in one answer, beyond
/// the gap search, with a pawn put on d4 and taken there at once logged as one change; the
/// order of the board's changes tells them (seeds 86, 82, 89); a start mark written eight plies
/// in logged every piece in the middle of those changes (seed 89).)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twelve_boards_on_a_line_that_loses_three_percent() {
    play(12, 10, 2.0, losing(0.03), None).await;
}
