//! Golden test on bytes recorded from a real DGT board with a DGT 3000 clock
//! (`tests/data/arnsholt-dgtdriver/`, AGPL-3.0 test data with its licence and note).
//!
//! The recording kept no timestamps, so the capture is rebuilt as its README says: each chunk
//! holding a clock message (0x8D) 1.0 s after the previous such chunk, the chunks in between
//! spread evenly. The capture then goes through `eboardd replay --events` (the same code as the
//! live daemon) and must give:
//! - the 57 moves of `1.uci`, exactly;
//! - `clock` events in which the colour named as running is the one whose time goes down;
//! - for each move completed by a press, the mover's time equal to what the mover's face showed
//!   in the clock message of that press, read here straight from the bytes.

use std::{
    fs,
    path::PathBuf,
    process::Command,
    sync::atomic::{AtomicUsize, Ordering},
};

use base64::Engine as _;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_eboardd");

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/arnsholt-dgtdriver")
        .join(name)
}

/// The recorded chunks, in order.
fn chunks() -> Vec<Vec<u8>> {
    let text = fs::read_to_string(data("1.inbytes")).expect("recording");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            base64::engine::general_purpose::STANDARD
                .decode(l.trim())
                .expect("base64 chunk")
        })
        .collect()
}

/// Seconds for each chunk: clock chunks 1.0 s apart, the others spread evenly between.
fn times(chunks: &[Vec<u8>]) -> Vec<f64> {
    let clock: Vec<usize> = (0..chunks.len())
        .filter(|&i| chunks[i].contains(&0x8D))
        .collect();
    assert!(clock.len() > 100, "the recording has clock messages");
    let mut t = vec![0.0; chunks.len()];
    // Anchors: the clock chunks at 1 s, 2 s, ...; before the first, from 0; after the last, 1 s.
    let mut anchors: Vec<(usize, f64)> = vec![];
    anchors.push((0, 0.0));
    for (k, &i) in clock.iter().enumerate() {
        anchors.push((i, 1.0 + k as f64));
    }
    anchors.push((chunks.len(), 1.0 + clock.len() as f64));
    for pair in anchors.windows(2) {
        let ((a, ta), (b, tb)) = (pair[0], pair[1]);
        let end = b.min(chunks.len());
        for (i, slot) in t.iter_mut().enumerate().take(end).skip(a) {
            *slot = ta + (tb - ta) * (i - a) as f64 / (b - a) as f64;
        }
    }
    t
}

/// The rebuilt capture, written to a temporary file.
fn capture_file() -> PathBuf {
    let chunks = chunks();
    let times = times(&chunks);
    let mut text = String::from(
        "{\"format\":\"eboard-capture\",\"version\":1,\"created\":\"2026-11-30T00:00:00Z\",\"note\":\"arnsholt/dgtdriver 1.inbytes, times rebuilt\"}\n",
    );
    for (chunk, t) in chunks.iter().zip(&times) {
        let hex: String = chunk.iter().map(|b| format!("{b:02x}")).collect();
        text.push_str(&format!(
            "{{\"t\":{t:.6},\"dev\":\"board-1\",\"rx\":\"{hex}\"}}\n"
        ));
    }
    // One file per call: the tests run in parallel.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("eboardd-real-{}-{n}.jsonl", std::process::id()));
    fs::write(&path, text).expect("write capture");
    path
}

fn replay_events() -> Vec<Value> {
    let path = capture_file();
    let out = Command::new(BIN)
        .args(["replay", "--events"])
        .arg(&path)
        .output()
        .expect("run eboardd");
    let _ = fs::remove_file(&path);
    assert!(
        out.status.success(),
        "replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON event"))
        .collect()
}

fn kind(e: &Value) -> &str {
    e["kind"].as_str().unwrap_or_default()
}

/// Clock messages straight from the bytes: (left seconds, right seconds, status).
fn raw_clock_messages() -> Vec<(u32, u32, u8)> {
    let bytes: Vec<u8> = chunks().concat();
    let bcd = |b: u8| u32::from(b >> 4) * 10 + u32::from(b & 0x0F);
    let secs = |f: &[u8]| u32::from(f[0] & 0x0F) * 3600 + bcd(f[1]) * 60 + bcd(f[2]);
    let mut out = vec![];
    let mut i = 0;
    while i + 10 <= bytes.len() {
        if bytes[i..i + 3] == [0x8D, 0x00, 0x0A] {
            let p = &bytes[i + 3..i + 10];
            // p[0..3] is the right face, p[3..6] the left one, p[6] the status byte.
            out.push((secs(&p[3..6]), secs(&p[0..3]), p[6]));
            i += 10;
        } else {
            i += 1;
        }
    }
    out
}

#[test]
fn the_recording_uses_the_real_status_bytes() {
    let msgs = raw_clock_messages();
    let statuses: std::collections::BTreeSet<u8> = msgs.iter().map(|m| m.2).collect();
    assert_eq!(
        statuses,
        [0x08, 0x09, 0x12, 0x13].into(),
        "status bytes of a real DGT 3000"
    );
    // While 0x09 is sent the left face counts down; while 0x13, the right one.
    for w in msgs.windows(2) {
        let ((l0, r0, s0), (l1, r1, s1)) = (w[0], w[1]);
        if s0 == s1 && s0 == 0x09 {
            assert!(l1 <= l0 && r1 == r0, "0x09: left runs ({w:?})");
        }
        if s0 == s1 && s0 == 0x13 {
            assert!(r1 <= r0 && l1 == l0, "0x13: right runs ({w:?})");
        }
    }
}

#[test]
fn the_57_moves_exact() {
    let events = replay_events();
    let mut moves: Vec<String> = vec![];
    for e in &events {
        match kind(e) {
            "move_made" => moves.push(e["uci"].as_str().expect("uci").to_string()),
            "move_retracted" => {
                moves.pop();
            }
            "game_started" => moves.clear(),
            _ => {}
        }
    }
    let truth = fs::read_to_string(data("1.uci")).expect("1.uci");
    let want: Vec<&str> = truth
        .split_whitespace()
        .filter(|w| !w.ends_with('.') && *w != "*")
        .collect();
    assert_eq!(want.len(), 57);
    assert_eq!(moves, want);
    let irregular: Vec<&Value> = events
        .iter()
        .filter(|e| kind(e) == "irregularity")
        .collect();
    assert!(irregular.is_empty(), "no irregularity: {irregular:?}");
}

#[test]
fn every_clock_event_names_the_colour_whose_time_goes_down() {
    let events = replay_events();
    let clocks: Vec<&Value> = events.iter().filter(|e| kind(e) == "clock").collect();
    assert!(clocks.len() > 250, "a clock event about every second");
    let (mut checked, mut wrong) = (0, vec![]);
    for w in clocks.windows(2) {
        let running = &w[0]["running"];
        if running.is_null() || w[1]["running"] != *running {
            continue;
        }
        let colour = running.as_str().expect("colour");
        let other = if colour == "white" { "black" } else { "white" };
        let (a, b) = (&w[0], &w[1]);
        let down = b[colour].as_u64() < a[colour].as_u64();
        let still = b[other] == a[other];
        checked += 1;
        if !(down && still) {
            wrong.push(format!("{a} -> {b}"));
        }
    }
    println!(
        "clock events: {} pairs checked, {} naming the wrong colour",
        checked,
        wrong.len()
    );
    assert!(checked > 250, "{checked} pairs checked");
    assert!(
        wrong.is_empty(),
        "{} of {checked}: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(3)]
    );
}

#[test]
fn each_clk_is_the_movers_face_right_after_the_press() {
    // Presses from the bytes: the running face changes between two running messages; the
    // face that stopped is the mover's, and its time in the press message is the [%clk].
    let msgs = raw_clock_messages();
    let running_left = |s: u8| s & 0x02 == 0;
    let mut press_times = vec![];
    for w in msgs.windows(2) {
        let ((_, _, s0), (l1, r1, s1)) = (w[0], w[1]);
        if s0 & 1 == 1 && s1 & 1 == 1 && running_left(s0) != running_left(s1) {
            press_times.push(if running_left(s0) { l1 } else { r1 });
        }
    }
    let events = replay_events();
    let mut completed: Vec<(u64, u64)> = vec![];
    for e in &events {
        if kind(e) == "move_completed" && e["by"] == "clock" {
            let ply = e["ply"].as_u64().expect("ply");
            let mover = if ply % 2 == 1 { "white" } else { "black" };
            let clk = e["clock"][mover].as_u64().expect("clock on a pressed move") / 1000;
            completed.push((ply, clk));
        }
    }
    assert!(
        completed.len() >= 56,
        "moves completed by presses: {}",
        completed.len()
    );
    assert_eq!(completed.len(), press_times.len(), "one press per move");
    println!("[%clk] checked for {} pressed moves", completed.len());
    for ((ply, clk), want) in completed.iter().zip(&press_times) {
        assert_eq!(
            *clk,
            u64::from(*want),
            "ply {ply}: [%clk] {clk} s, the mover's face showed {want} s"
        );
    }
}
