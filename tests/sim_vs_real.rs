//! The emulated board's byte stream against a real one: the recording of a real DGT board with
//! a DGT 3000 in UPDATE_NICE (`tests/data/arnsholt-dgtdriver/1.inbytes`, AGPL-3.0, see its
//! LICENSE and `tests/data/real/README.md`). The emulator, playing a game in UPDATE_NICE, must
//! send the same kinds of messages at the same rates: only dumps, field updates and clock
//! messages; the status bytes of the recording (`0x09` left running, `0x13` right running,
//! `0x08`/`0x12` paused with the turn kept); hours bytes with D5 (time per move); while the
//! clock runs, one message per second of the running face (every consecutive message of one
//! turn shows it one second lower); a similar number of field updates per move.

use std::collections::BTreeSet;
use std::path::Path;

use eboardd::sim::emulator::{Emulator, EmulatorConfig, Script};
use eboardd::sim::pgn::parse_games;
use eboardd::sim::{SimConfig, Style};

fn base64(line: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let sextets: Vec<u8> = line.bytes().filter_map(val).collect();
    let mut out = Vec::new();
    for chunk in sextets.chunks(4) {
        let mut n = 0u32;
        for (i, s) in chunk.iter().enumerate() {
            n |= u32::from(*s) << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        out.extend(&bytes[1..chunk.len()]);
    }
    out
}

/// The recording's bytes.
fn real() -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/arnsholt-dgtdriver/1.inbytes");
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .flat_map(base64)
        .collect()
}

/// What a board stream looks like.
#[derive(Debug, Default)]
struct Profile {
    kinds: BTreeSet<u8>,
    statuses: BTreeSet<u8>,
    hours: BTreeSet<u8>,
    field_updates: usize,
    /// Turn changes while running (presses).
    presses: usize,
    /// Consecutive running messages of one turn, and those a second apart on the running face.
    same_turn: usize,
    one_second: usize,
    /// Clock messages while running, and running-face seconds they span.
    running_msgs: usize,
    running_secs: u32,
}

fn bcd(b: u8) -> u32 {
    u32::from(b >> 4) * 10 + u32::from(b & 0x0F)
}

fn secs(f: &[u8]) -> u32 {
    (u32::from(f[0] & 0x0F) * 60 + bcd(f[1])) * 60 + bcd(f[2])
}

fn profile(bytes: &[u8]) -> Profile {
    let mut p = Profile::default();
    let mut i = 0;
    let mut prev: Option<(u8, u32)> = None;
    while i + 3 <= bytes.len() {
        let len = usize::from(bytes[i + 1]) << 7 | usize::from(bytes[i + 2]);
        assert!(len >= 3 && i + len <= bytes.len(), "frame at {i}");
        let f = &bytes[i..i + len];
        p.kinds.insert(f[0]);
        match f[0] {
            0x8E => p.field_updates += 1,
            0x8D if f[3] & 0x0F != 0x0A => {
                let status = f[9];
                p.statuses.insert(status);
                p.hours.insert(f[3] & 0xF0);
                p.hours.insert(f[6] & 0xF0);
                let (right, left) = (secs(&f[3..6]), secs(&f[6..9]));
                let face = if status & 0x08 != 0 { left } else { right };
                if status & 0x01 != 0 {
                    p.running_msgs += 1;
                    match prev {
                        Some((st, before)) if st == status => {
                            p.same_turn += 1;
                            p.running_secs += before.saturating_sub(face);
                            if before == face + 1 {
                                p.one_second += 1;
                            }
                        }
                        Some((st, _)) if st & 0x01 != 0 => p.presses += 1,
                        _ => {}
                    }
                }
                prev = Some((status, face));
            }
            _ => {}
        }
        i += len;
    }
    p
}

/// The emulator's stream for a game played in UPDATE_NICE from the first dump on.
fn emulated(style: Style, seed: u64) -> Vec<u8> {
    let pgn = "[TimeControl \"180+2\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 \
               6. Re1 b5 7. Bb3 d6 8. c3 O-O 9. h3 Nb8 10. d4 Nbd7 11. c4 c6 12. cxb5 axb5 \
               13. Nc3 Bb7 14. Bg5 b4 15. Nb1 h6 16. Bh4 c5 17. dxe5 Nxe4 18. Bxe7 Qxe7 \
               19. exd6 Qf6 20. Nbd2 Nxd6 *";
    let games: Vec<_> = parse_games(pgn).into_iter().map(|g| g.unwrap()).collect();
    let mut sim = SimConfig::new(style, seed);
    sim.base_ms = 180_000;
    sim.increment_ms = 2_000;
    let script = Script::from_games(&games, &sim, 5_000_000);
    let end = script.end();
    let mut em = Emulator::new(script, EmulatorConfig::default());
    let mut out = Vec::new();
    em.host_input(&[0x42, 0x4B], &mut out);
    em.advance(end, &mut out);
    assert!(em.finished());
    assert_eq!(em.unknown_bytes(), 0);
    out
}

#[test]
fn the_emulated_board_sends_what_the_real_one_sends() {
    let real = profile(&real());
    let ours = profile(&emulated(Style::Blitz, 11));
    // The recording as the notes describe it (a check of the reading, not of the emulator).
    assert_eq!(real.kinds, [0x86, 0x8D, 0x8E].into());
    assert_eq!(real.statuses, [0x08, 0x09, 0x12, 0x13].into());
    assert_eq!(real.hours, [0x20].into());
    assert!(real.presses > 50, "{real:?}");

    // Message kinds: the same.
    assert_eq!(ours.kinds, real.kinds, "message kinds");
    // Status bytes: only the recording's, both running ones used.
    assert!(
        ours.statuses.is_subset(&real.statuses),
        "{:x?}",
        ours.statuses
    );
    assert!(ours.statuses.contains(&0x09) && ours.statuses.contains(&0x13));
    // Hours bytes: D5 (time per move), like the recording.
    assert_eq!(ours.hours, real.hours, "hours byte flags");
    // While the clock runs, one message per second of the running face.
    let rate = |p: &Profile| p.one_second as f64 / p.same_turn as f64;
    assert_eq!(rate(&real), 1.0);
    assert!(rate(&ours) >= 0.99, "{ours:?}");
    let per_sec = |p: &Profile| p.same_turn as f64 / p.running_secs as f64;
    assert!(
        (per_sec(&ours) - per_sec(&real)).abs() < 0.05,
        "clock messages per running second: ours {:.3}, real {:.3}",
        per_sec(&ours),
        per_sec(&real)
    );
    // Field updates per move: within a factor of 1.5 of the recording's.
    let per_move = |p: &Profile| p.field_updates as f64 / p.presses as f64;
    let ratio = per_move(&ours) / per_move(&real);
    assert!(
        (1.0 / 1.5..=1.5).contains(&ratio),
        "field updates per move: ours {:.2}, real {:.2}",
        per_move(&ours),
        per_move(&real)
    );
    // Clock messages are most of the traffic in both.
    let clock_share =
        |p: &Profile| p.running_msgs as f64 / (p.running_msgs + p.field_updates) as f64;
    assert!(clock_share(&ours) > 0.5 && clock_share(&real) > 0.5);
    eprintln!(
        "real: {:.2} field updates/move, {:.3} clock msgs/running s; ours (blitz): {:.2}, {:.3}",
        per_move(&real),
        per_sec(&real),
        per_move(&ours),
        per_sec(&ours)
    );
}

#[test]
fn every_style_keeps_the_real_status_bytes_and_rate() {
    for (style, seed) in [(Style::Clean, 1), (Style::Human, 2), (Style::Blitz, 3)] {
        let p = profile(&emulated(style, seed));
        assert!(
            p.statuses.is_subset(&[0x08, 0x09, 0x12, 0x13].into()),
            "{style:?}: {:x?}",
            p.statuses
        );
        assert!(
            p.one_second as f64 / p.same_turn as f64 >= 0.99,
            "{style:?}: {p:?}"
        );
        assert!(p.presses >= 38, "{style:?}: {p:?}");
    }
}
