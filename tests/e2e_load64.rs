//! Load: 64 emulated boards on one daemon, each playing a whole real game at accelerated pace;
//! every game must come out exact, and the daemon's CPU time and memory are reported.
//!
//! Not a timed test, and not run by default: `scripts/load64.sh` runs it
//! (`cargo test --release --test e2e_load64 -- --ignored --nocapture`). Settings from the
//! environment: `LOAD_BOARDS` (64), `LOAD_SPEED` (200), `LOAD_FSYNC` (1).

mod support;

use std::time::{Duration, Instant};

use eboardd::sim::Style;
use support::daemon::*;

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// (utime + stime in seconds, peak RSS in KiB, current RSS in KiB) of a process.
fn usage(pid: u32) -> (f64, u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // /proc counts in USER_HZ, 100 on Linux.
    let ticks = 100.0;
    let cpu = (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / ticks;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (cpu, kib("VmHWM:"), kib("VmRSS:"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load run: scripts/load64.sh"]
async fn sixty_four_boards_full_games_exact() {
    let n: usize = env("LOAD_BOARDS", 64);
    let speed: f64 = env("LOAD_SPEED", 200.0);
    let fsync: u32 = env("LOAD_FSYNC", 1);
    let dir = scratch("load64");
    let caps = dir.join("captures");
    let all = support::corpus_file("standard/fide-womens-world-rapid-2024_rounds01-05.pgn");
    let games: Vec<_> = all
        .into_iter()
        .filter(|g| g.moves.len() >= 20)
        .take(n)
        .collect();
    assert_eq!(games.len(), n);
    let mut boards = Vec::new();
    let mut ports = Vec::new();
    for (i, g) in games.iter().enumerate() {
        let link = dir.join(format!("board{i:02}"));
        let style = [Style::Human, Style::Blitz][i % 2];
        let serial = format!("{}", 40000 + i);
        boards.push(board(
            std::slice::from_ref(g),
            style,
            i as u64,
            &serial,
            &link,
            speed,
            None,
        ));
        ports.push(link);
    }
    let mut extra = vec![];
    if fsync == 0 {
        extra.push("--no-fsync");
    }
    let started = Instant::now();
    let mut d = Daemon::start(&ports, &caps, &extra);
    let pid = d.pid();
    let ids: Vec<String> = (0..n).map(|i| format!("dgt-{}", 40000 + i)).collect();
    let plies: usize = games.iter().map(|g| g.moves.len()).sum();
    d.wait_for(
        "every game to be completed",
        Duration::from_secs(1800),
        |ev| {
            ids.iter()
                .zip(&games)
                .all(|(id, g)| completed(ev, id, g.moves.len()))
        },
    )
    .await;
    let wall = started.elapsed().as_secs_f64();
    let (cpu, peak_kib, rss_kib) = usage(pid);
    let events = d.events.lock().unwrap().len();
    {
        let ev = d.events.lock().unwrap();
        for (id, g) in ids.iter().zip(&games) {
            assert_eq!(moves_from_events(&ev, id), uci(g), "{id}: event stream");
        }
    }
    d.terminate();
    for (b, id) in boards.into_iter().zip(&ids) {
        stop_strict(b, id).await;
    }
    let bytes: u64 = walk(&caps)
        .iter()
        .map(|p| p.metadata().unwrap().len())
        .sum();
    let expected: Vec<(&str, &eboardd::sim::pgn::ScriptGame)> =
        ids.iter().map(String::as_str).zip(games.iter()).collect();
    assert_replay_exact(&caps, &expected);
    println!(
        "load: {n} boards, {plies} plies, speed {speed}x, fsync {}: wall {wall:.1} s; \
         daemon CPU {cpu:.2} s ({:.1} % of one core), peak RSS {:.1} MiB (RSS at end {:.1} MiB); \
         {events} events ({:.0}/s); captures {:.1} MiB; every game exact",
        fsync != 0,
        100.0 * cpu / wall,
        peak_kib as f64 / 1024.0,
        rss_kib as f64 / 1024.0,
        events as f64 / wall,
        bytes as f64 / 1048576.0,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}
