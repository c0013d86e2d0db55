//! The chain emulator's tests, each against DGT's header: discovery, collisions, the
//! memory commands, the line's faults, the adapter, timing, resets.

use super::*;
use crate::core::observation::FieldArray;
use crate::core::observation::Micros;
use crate::driver::dgt::piece_code;
use crate::sim::emulator::Script;
use crate::sim::emulator::dgt_memory::tag;
use crate::sim::emulator::runner::EmulatedBoard;
use crate::sim::{SimConfig, pgn::parse_games};

const PGN: &str = "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Ba4 Nf6 5. O-O Be7 6. Re1 b5 7. Bb3 d6 *";

fn scripts(n: usize) -> Vec<Script> {
    let games: Vec<_> = parse_games(PGN).into_iter().map(|g| g.unwrap()).collect();
    (0..n)
        .map(|i| Script::from_games(&games, &SimConfig::human(10 + i as u64), 5_000_000))
        .collect()
}

/// A host command, encoded here from the header (not with the module's encoder).
fn bus(cmd: u8, addr: u16) -> Vec<u8> {
    let mut v = vec![cmd, (addr >> 7) as u8 & 0x7F, addr as u8 & 0x7F];
    let sum: u32 = v.iter().map(|&b| u32::from(b)).sum();
    v.push((sum % 128) as u8);
    v
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Frame {
    id: u8,
    addr: u16,
    data: Vec<u8>,
}

/// The valid reply frames in `bytes` (header's format, checksum checked) and the number of
/// bytes in none.
fn frames(bytes: &[u8]) -> (Vec<Frame>, usize) {
    let (mut out, mut bad, mut i) = (Vec::new(), 0, 0);
    while i < bytes.len() {
        if (0x83..=0x89).contains(&bytes[i]) && i + 6 <= bytes.len() {
            let len = (usize::from(bytes[i + 1]) << 7) | usize::from(bytes[i + 2]);
            if len >= 6 && i + len <= bytes.len() && bytes[i + 1..i + len].iter().all(|&b| b < 0x80)
            {
                let f = &bytes[i..i + len];
                let sum: u32 = f[..len - 1].iter().map(|&b| u32::from(b)).sum();
                if (sum % 128) as u8 == f[len - 1] {
                    out.push(Frame {
                        id: f[0],
                        addr: (u16::from(f[3]) << 7) | u16::from(f[4]),
                        data: f[5..len - 1].to_vec(),
                    });
                    i += len;
                    continue;
                }
            }
        }
        bad += 1;
        i += 1;
    }
    (out, bad)
}

/// Plays memory entries (header's format) onto `board`: field entries set a field; time and
/// one-byte entries change nothing.
fn replay(board: &mut [u8; 64], entries: &[u8]) {
    let mut i = 0;
    while i < entries.len() {
        match entries[i] {
            0x40..=0x5F if i + 1 < entries.len() => {
                board[usize::from(entries[i + 1] & 0x3F)] = entries[i] & 0x0F;
                i += 2;
            }
            0x60..=0x69 | 0x70..=0x79 => i += 3,
            _ => i += 1,
        }
    }
}

fn codes(f: &FieldArray) -> [u8; 64] {
    let mut c = [0; 64];
    for (c, r) in c.iter_mut().zip(f) {
        *c = piece_code(*r);
    }
    c
}

/// The host's side of the line, in link time.
struct Host {
    chain: ChainEmulator,
    link: Micros,
    rx: Vec<(Micros, u8)>,
}

impl Host {
    fn new(chain: ChainEmulator) -> Host {
        Host {
            chain,
            link: 0,
            rx: Vec::new(),
        }
    }

    fn send(&mut self, bytes: &[u8]) -> bool {
        let mut out = Vec::new();
        self.chain.link_time(self.link, &mut out);
        self.rx.extend(out.drain(..).map(|b| (self.link, b)));
        let on = self.chain.host_input(bytes, &mut out);
        assert!(out.is_empty(), "no reply without a delay");
        on
    }

    /// Link time goes on by `dt`; the bytes that arrive are kept.
    fn wait(&mut self, dt: Micros) {
        let end = self.link + dt;
        loop {
            let next = self.chain.next_link_due().filter(|&t| t <= end);
            self.link = next.unwrap_or(end).max(self.link);
            let mut out = Vec::new();
            self.chain.link_time(self.link, &mut out);
            self.rx.extend(out.iter().map(|&b| (self.link, b)));
            if next.is_none() {
                break;
            }
        }
    }

    /// Link time goes on until no board has anything left to send.
    fn settle(&mut self) {
        while self
            .chain
            .line
            .iter()
            .any(|t| t.board.is_some() && t.sent < t.bytes.len())
        {
            self.wait(10_000);
        }
    }

    fn take(&mut self) -> Vec<u8> {
        self.rx.drain(..).map(|(_, b)| b).collect()
    }

    /// One command, 80 ms for the answer to start (the header's advice) and the time to
    /// send it, the frames that came.
    fn ask(&mut self, cmd: u8, addr: u16) -> Vec<Frame> {
        self.send(&bus(cmd, addr));
        self.wait(80_000);
        self.settle();
        let bytes = self.take();
        let (f, bad) = frames(&bytes);
        assert_eq!(bad, 0, "{bytes:02x?}");
        f
    }

    fn changes(&mut self, addr: u16) -> Vec<u8> {
        let f = self.ask(command::SEND_CHANGES, addr);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!((f[0].id, f[0].addr), (reply::UPDATE, addr));
        f[0].data.clone()
    }

    /// The players play on to runner script time `t`.
    fn play(&mut self, t: Micros) {
        self.chain.advance(t, &mut Vec::new());
    }
}

/// A chain whose line the host reads directly (no adapter's latency: these tests time the
/// line's bytes; `the_adapter_holds_bytes_until_its_timer_or_a_full_packet` times the
/// adapter).
fn chain(n: usize, mut cfg: ChainConfig) -> Host {
    cfg.adapter_latency = 0;
    Host::new(ChainEmulator::new(scripts(n), cfg).unwrap())
}

#[test]
fn the_adapter_holds_bytes_until_its_timer_or_a_full_packet() {
    let cfg = ChainConfig::new(1);
    assert_eq!(
        cfg.adapter_latency, FTDI_LATENCY,
        "an FTDI adapter by default"
    );
    let mut h = Host::new(ChainEmulator::new(scripts(1), cfg).unwrap());
    let a = h.chain.address(0).unwrap();
    // A PING's reply (6 bytes) ends within 12 ms of the command: the host gets it whole,
    // at the timer's next expiry (16 ms after link time 0).
    h.send(&bus(command::PING, a));
    h.wait(80_000);
    let at: Vec<Micros> = h.rx.iter().map(|&(t, _)| t).collect();
    assert_eq!(at, vec![FTDI_LATENCY; 6], "{:?}", h.rx);
    h.take();
    // A board dump (70 bytes, 73 ms at 9600 baud): a batch at each expiry, every 16 ms.
    h.link = 10 * FTDI_LATENCY;
    h.send(&bus(command::SEND_BRD, a));
    h.wait(200_000);
    let rx = std::mem::take(&mut h.rx);
    assert_eq!(rx.len(), 70);
    let mut batches: Vec<Micros> = rx.iter().map(|&(t, _)| t).collect();
    batches.dedup();
    assert!(batches.iter().all(|t| t % FTDI_LATENCY == 0), "{rx:?}");
    assert!(
        batches.windows(2).all(|w| w[1] - w[0] == FTDI_LATENCY),
        "{rx:?}"
    );
    assert_eq!(batches.len(), 5, "{rx:?}");
    let (f, bad) = frames(&rx.iter().map(|&(_, b)| b).collect::<Vec<u8>>());
    assert_eq!((f.len(), f[0].id, bad), (1, reply::BRD_DUMP, 0));
    // On a fast line the adapter's packet fills first: 62 bytes at once, the rest at the
    // next expiry.
    let mut cfg = ChainConfig::new(1);
    cfg.byte_time = 100;
    let mut h = Host::new(ChainEmulator::new(scripts(1), cfg).unwrap());
    h.send(&bus(command::SEND_BRD, a));
    h.wait(80_000);
    let rx = std::mem::take(&mut h.rx);
    assert_eq!(rx.len(), 70);
    let first = rx[0].0;
    assert!(first % FTDI_LATENCY != 0, "{rx:?}");
    assert!(rx[..62].iter().all(|&(t, _)| t == first), "{rx:?}");
    assert!(rx[62..].iter().all(|&(t, _)| t == FTDI_LATENCY), "{rx:?}");
    assert_eq!((f.len(), f[0].id, bad), (1, reply::BRD_DUMP, 0));
}

#[test]
fn bad_configurations_are_refused() {
    assert_eq!(
        ChainEmulator::new(Vec::new(), ChainConfig::new(0)).err(),
        Some(ChainError::Empty)
    );
    let mut cfg = ChainConfig::new(2);
    cfg.boards[1].serial = "01001".into();
    assert_eq!(
        ChainEmulator::new(scripts(2), cfg).err(),
        Some(ChainError::DuplicateAddress(1001))
    );
    for bad in ["00000", "16384", "99999", "abc", ""] {
        let mut cfg = ChainConfig::new(1);
        cfg.boards[0].serial = bad.into();
        assert_eq!(
            ChainEmulator::new(scripts(1), cfg).err(),
            Some(ChainError::BadSerial(bad.into()))
        );
    }
    // Serial "01025" is address 1025 (the header's example), 0x08 0x01 on the wire.
    let mut cfg = ChainConfig::new(1);
    cfg.boards[0].serial = "01025".into();
    let mut h = Host::new(ChainEmulator::new(scripts(1), cfg).unwrap());
    assert_eq!(h.chain.addresses(), [1025]);
    h.send(&bus(command::PING, 1025));
    h.wait(80_000);
    let bytes = h.take();
    assert_eq!(&bytes[..5], &[0x87, 0x00, 0x06, 0x08, 0x01]);
}

#[test]
fn discovery_with_ignore_rounds_finds_every_board() {
    let n = 24;
    let mut h = chain(n, ChainConfig::new(n));
    let all: std::collections::BTreeSet<u16> = h.chain.addresses().into_iter().collect();
    let mut found = std::collections::BTreeSet::new();
    let mut per_round = Vec::new();
    // The header's procedure: IGNORE_NEXT_BUS_PING to every board found, PING to 0, register
    // the boards that answered with a good checksum, again.
    for _ in 0..30 {
        for &a in &found.clone() {
            let f = h.ask(command::IGNORE_NEXT_BUS_PING, a);
            assert_eq!(
                f,
                [Frame {
                    id: reply::PING,
                    addr: a,
                    data: vec![]
                }]
            );
        }
        h.send(&bus(command::PING, 0));
        h.wait(1_200_000);
        let bytes = h.take();
        let (f, _garbage) = frames(&bytes);
        for fr in &f {
            assert_eq!(fr.id, reply::PING);
            assert!(all.contains(&fr.addr), "no board has address {}", fr.addr);
            assert!(
                !found.contains(&fr.addr),
                "{} answered though told to ignore",
                fr.addr
            );
        }
        per_round.push(f.len());
        found.extend(f.iter().map(|f| f.addr));
        if found == all {
            break;
        }
    }
    eprintln!("boards found per round: {per_round:?}");
    assert_eq!(found, all, "rounds: {per_round:?}");
    let garbled: u64 = (0..n)
        .map(|i| h.chain.stats(i).unwrap().replies_garbled)
        .sum();
    assert!(garbled > 0, "24 replies in 1.1 s collide");
    assert!(per_round[0] < n, "{per_round:?}");
    assert!(per_round.len() > 1);
    // Every board found early ignored the later rounds' pings.
    let ignored: u64 = (0..n)
        .map(|i| h.chain.stats(i).unwrap().pings_ignored)
        .sum();
    assert!(ignored >= (n - per_round[0]) as u64, "{ignored}");
    assert_eq!(h.chain.unknown_bytes(), 0);
}

#[test]
fn overlapping_replies_garble_each_other() {
    let mut h = chain(2, ChainConfig::new(2));
    let [a, b] = [h.chain.address(0).unwrap(), h.chain.address(1).unwrap()];
    // Both boards answer a dump request to address 0 within 1–5 ms: 70-byte replies
    // (73 ms each) overlap.
    h.send(&bus(command::SEND_BRD, 0));
    h.wait(200_000);
    let bytes = h.take();
    let (f, bad) = frames(&bytes);
    assert!(f.is_empty(), "{f:?}");
    assert!(bad > 0);
    assert!(bytes.len() < 140, "one line: fewer bytes than both replies");
    for i in 0..2 {
        let s = h.chain.stats(i).unwrap();
        assert_eq!((s.replies_sent, s.replies_garbled), (1, 1), "{s:?}");
    }
    // One at a time: both come through, the start position's piece codes.
    for addr in [a, b] {
        let f = h.ask(command::SEND_BRD, addr);
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].id, f[0].addr), (reply::BRD_DUMP, addr));
        let d = &f[0].data;
        assert_eq!(d.len(), 64);
        // a8 black rook, e8 black king, a7 black pawn, e2 white pawn, e1 white king.
        assert_eq!([d[0], d[4], d[8], d[52], d[60]], [8, 11, 7, 1, 5]);
        assert!(d[16..48].iter().all(|&c| c == 0));
    }
    assert_eq!(h.chain.stats(0).unwrap().replies_garbled, 1);
    assert_eq!(h.chain.unknown_bytes(), 0);
}

#[test]
fn send_changes_gives_exactly_the_changes_since_the_last_and_repeat_the_same() {
    let mut h = chain(1, ChainConfig::new(1));
    let a = h.chain.address(0).unwrap();
    assert_eq!(h.chain.plies_settled_on(0, 1_000_000_000), 0, "not started");
    // The first request switches reporting on and starts the players.
    assert!(h.send(&bus(command::SEND_CHANGES, a)));
    h.wait(80_000);
    h.settle();
    let (f, _) = frames(&h.take());
    let c0 = f[0].data.clone();
    assert_eq!(c0.len(), 64 + 1, "power-up: every piece, EE_BEGINPOS");
    assert_eq!(*c0.last().unwrap(), tag::BEGINPOS);
    assert!(!h.send(&bus(command::SEND_CHANGES, a)), "on only once");
    h.wait(80_000);
    assert_eq!(frames(&h.take()).0[0].data, Vec::<u8>::new(), "nothing new");
    let mut got = c0.clone();
    let mut t = 0;
    for plies in [2, 3, 4] {
        t = h.chain.after_plies(t, plies);
        h.play(t);
        h.send(&bus(command::SEND_CHANGES, a));
        h.wait(80_000);
        h.settle();
        let sent = h.take();
        let c = frames(&sent).0[0].data.clone();
        assert!(!c.is_empty());
        // REPEAT_CHANGES: the same packet, byte for byte.
        h.send(&bus(command::REPEAT_CHANGES, a));
        h.wait(80_000);
        h.settle();
        assert_eq!(h.take(), sent);
        got.extend(c);
    }
    assert_eq!(h.chain.plies_settled_on(0, t), 9);
    // The host went away and came back: its next request switches reporting on again.
    assert!(!h.send(&bus(command::SEND_CHANGES, a)));
    h.wait(80_000);
    h.settle();
    h.chain.host_gone();
    assert!(h.send(&bus(command::SEND_CHANGES, a)));
    h.wait(80_000);
    h.settle();
    assert!(frames(&h.take()).0.iter().all(|f| f.data.is_empty()));
    let p = h.chain.players(0).unwrap();
    // Nothing lost, nothing twice: every byte since EE_POWERUP, in order.
    assert_eq!(got, p.memory().bytes(4, p.memory().end()));
    let mut board = [0u8; 64];
    replay(&mut board, &got);
    assert_eq!(board, codes(p.fields()));
    assert_eq!(h.chain.unknown_bytes(), 0);
}

fn from_start_after_unplug(reading: FromStartReading) {
    let cfg = ChainConfig {
        from_start: reading,
        ..ChainConfig::new(1)
    };
    let mut h = chain(1, cfg);
    let a = h.chain.address(0).unwrap();
    h.changes(a);
    let t0 = h.link;
    h.send(&bus(command::SET_START_GAME, a));
    h.wait(100_000);
    let got = h.rx.clone();
    let written = frames(&h.take()).0;
    assert_eq!(written[0].id, reply::START_GAME_WRITTEN);
    let arrived = got.last().unwrap().0 - t0;
    assert!((70_000..=85_000).contains(&arrived), "{arrived} µs");
    let mut t = 0;
    for _ in 0..3 {
        t = h.chain.after_plies(t, 1);
        h.play(t);
        h.changes(a);
    }
    let at_unplug = *h.chain.players(0).unwrap().fields();
    // The chain is unplugged; the players go on for four plies; plugged in again.
    h.chain.unplugged();
    t = h.chain.after_plies(t, 4);
    h.play(t);
    h.chain.unplugged();
    let now = *h.chain.players(0).unwrap().fields();
    assert_ne!(now, at_unplug, "moves were made while unplugged");
    let f = h.ask(command::SEND_FROM_START, a);
    assert_eq!(f[0].id, reply::FROM_START);
    let from_start = f[0].data.clone();
    assert_eq!(from_start[0], tag::START_TAG);
    let mut board = [0u8; 64];
    replay(&mut board, &from_start);
    match reading {
        FromStartReading::IncludingUnsent => assert_eq!(board, codes(&now)),
        FromStartReading::Header => {
            assert_eq!(board, codes(&at_unplug), "up to the last SEND_CHANGES");
            // The rest comes with SEND_CHANGES, the first since the replug.
            assert!(h.send(&bus(command::SEND_CHANGES, a)));
            h.wait(80_000);
            h.settle();
            let rest = frames(&h.take()).0[0].data.clone();
            replay(&mut board, &rest);
            assert_eq!(board, codes(&now));
        }
    }
    assert_eq!(h.chain.unknown_bytes(), 0);
}

#[test]
fn from_start_after_an_unplug_holds_the_moves_made_while_unplugged() {
    from_start_after_unplug(FromStartReading::Header);
    from_start_after_unplug(FromStartReading::IncludingUnsent);
}

#[test]
fn strict_single_board_bytes_and_bad_checksums_are_counted() {
    let mut h = chain(1, ChainConfig::new(1));
    let a = h.chain.address(0).unwrap();
    // A single-board handshake: not taken, no answer.
    h.send(&[0x40, 0x4D, 0x45]);
    h.wait(80_000);
    assert!(h.take().is_empty());
    assert_eq!(h.chain.line_stats().single_board_bytes, 3);
    assert_eq!(h.chain.unknown_bytes(), 3);
    // A bad checksum: ignored.
    let mut bad = bus(command::PING, a);
    bad[3] ^= 1;
    h.send(&bad);
    h.wait(80_000);
    assert!(h.take().is_empty());
    assert_eq!(h.chain.line_stats().bad_checksums, 1);
    assert_eq!(h.chain.unknown_bytes(), 7);
    // A command cut short by the next, an id no command has, a command not modelled.
    h.send(&[0x87, 0x00]);
    h.send(&[0x92]);
    h.send(&bus(command::END_BUSMODE, a));
    assert_eq!(h.chain.unknown_bytes(), 7 + 2 + 1 + 4);
    let sample = &h.chain.unknown.sample;
    assert_eq!(&sample[..3], &[0x40, 0x4D, 0x45]);
    assert_eq!(&sample[3..7], &bad[..]);
    assert_eq!(&sample[7..10], &[0x87, 0x00, 0x92]);
    assert_eq!(&sample[10..14], &bus(command::END_BUSMODE, a)[..]);
    // Still in step.
    let f = h.ask(command::SEND_VERSION, a);
    assert_eq!(
        f,
        [Frame {
            id: reply::VERSION,
            addr: a,
            data: vec![3, 1]
        }]
    );
    assert_eq!(h.chain.unknown_bytes(), 14);
}

#[test]
fn a_board_off_the_line_misses_commands_and_its_memory_tells_what_happened() {
    for power_off in [false, true] {
        let mut cfg = ChainConfig::new(2);
        let (from, until) = (60_000_000, 200_000_000);
        cfg.boards[1].outages = vec![Outage {
            from,
            until,
            power_off,
        }];
        let mut h = chain(2, cfg);
        let [a, b] = [h.chain.address(0).unwrap(), h.chain.address(1).unwrap()];
        let mut board = [0u8; 64];
        replay(&mut board, &h.changes(b));
        h.changes(a);
        h.play(from - 1);
        replay(&mut board, &h.changes(b));
        h.play(from + 1);
        let end_at_off = h.chain.players(1).unwrap().memory().end();
        // Off the line: no answer, the other board answers.
        h.send(&bus(command::PING, b));
        h.wait(80_000);
        assert!(h.take().is_empty());
        assert_eq!(h.chain.stats(1).unwrap().missed, 1);
        assert_eq!(h.ask(command::PING, a).len(), 1);
        h.play(until - 1);
        let memory = h.chain.players(1).unwrap().memory();
        assert_eq!(
            memory.end() == end_at_off,
            power_off,
            "a powered-off board records nothing"
        );
        assert!(
            h.chain.plies_settled_on(1, until) > h.chain.plies_settled_on(1, from),
            "the players went on"
        );
        h.play(until);
        let c = h.changes(b);
        if power_off {
            // Power-up: the pieces found, from scratch.
            let mut fresh = [0u8; 64];
            replay(&mut fresh, &c);
            board = fresh;
            let m = h.chain.players(1).unwrap().memory();
            let all = m.bytes(0, m.end());
            assert_eq!(all.iter().filter(|&&x| x == tag::POWERUP).count(), 2);
        } else {
            replay(&mut board, &c);
        }
        assert_eq!(board, codes(h.chain.players(1).unwrap().fields()));
        assert_eq!(h.chain.unknown_bytes(), 0);
    }
}

#[test]
fn overlapping_outages_keep_a_board_off_until_the_last_ends() {
    let mut cfg = ChainConfig::new(1);
    cfg.boards[0].outages = vec![
        Outage {
            from: 10_000_000,
            until: 30_000_000,
            power_off: true,
        },
        Outage {
            from: 20_000_000,
            until: 40_000_000,
            power_off: false,
        },
    ];
    let mut h = chain(1, cfg);
    let a = h.chain.address(0).unwrap();
    h.changes(a);
    for (t, answers) in [(15, false), (35, false), (45, true)] {
        h.play(t * 1_000_000);
        h.send(&bus(command::PING, a));
        h.wait(80_000);
        assert_eq!(!h.take().is_empty(), answers, "at {t} s");
    }
    // Powered on again at 30 s (cable still out): the power-up sequence is in memory.
    let m = h.chain.players(0).unwrap().memory();
    assert_eq!(
        m.bytes(0, m.end())
            .iter()
            .filter(|&&b| b == tag::POWERUP)
            .count(),
        2
    );
}

#[test]
fn a_lossy_noisy_line_spoils_replies_but_never_makes_one_up() {
    let cfg = ChainConfig {
        lossy: 0.03,
        noise_every: Some(300_000),
        ..ChainConfig::new(2)
    };
    let mut h = chain(2, cfg);
    let addrs = h.chain.addresses();
    let mut good = 0;
    for k in 0..100 {
        let a = addrs[k % 2];
        h.send(&bus(command::SEND_VERSION, a));
        h.wait(100_000);
        let (f, _) = frames(&h.take());
        for fr in &f {
            assert_eq!(
                (fr.id, fr.addr, &fr.data[..]),
                (reply::VERSION, a, &[3, 1][..])
            );
        }
        good += f.len();
    }
    let line = h.chain.line_stats();
    assert!(line.bytes_dropped > 0 && line.noise_bytes > 0, "{line:?}");
    assert!((50..100).contains(&good), "{good} of 100 replies whole");
    assert_eq!(h.chain.unknown_bytes(), 0);
}

#[test]
fn a_faulty_line_loses_garbles_and_cuts_every_kind_of_reply() {
    let cfg = ChainConfig {
        lossy: 0.01,
        garble: 0.01,
        cut: 0.05,
        ..ChainConfig::new(1)
    };
    let mut h = chain(1, cfg);
    let a = h.chain.addresses()[0];
    let kinds = [
        (command::SEND_CLK, reply::BWTIME),
        (command::SEND_BRD, reply::BRD_DUMP),
        (command::SEND_CHANGES, reply::UPDATE),
        (command::REPEAT_CHANGES, reply::UPDATE),
        (command::SEND_FROM_START, reply::FROM_START),
        (command::PING, reply::PING),
        (command::IGNORE_NEXT_BUS_PING, reply::PING),
        (command::SEND_VERSION, reply::VERSION),
    ];
    for (cmd, id) in kinds {
        let (mut whole, mut spoilt) = (0, 0);
        for _ in 0..300 {
            h.send(&bus(cmd, a));
            h.wait(100_000);
            let bytes = h.take();
            let (f, junk) = frames(&bytes);
            assert!(f.iter().all(|fr| fr.id == id && fr.addr == a), "{f:?}");
            whole += f.len();
            if f.is_empty() || junk > 0 {
                spoilt += 1;
            }
        }
        assert!(
            whole > 0 && spoilt > 0,
            "{cmd:02x}: {whole} whole, {spoilt} spoilt"
        );
    }
    let line = h.chain.line_stats();
    assert!(
        line.bytes_dropped > 0 && line.bytes_garbled > 0 && line.replies_cut > 0,
        "{line:?}"
    );
    assert_eq!(h.chain.unknown_bytes(), 0);
}

#[test]
fn replies_take_milliseconds_and_up_to_20_ms_while_the_eeprom_writes() {
    let mut h = chain(1, ChainConfig::new(1));
    let a = h.chain.address(0).unwrap();
    h.changes(a);
    let first_byte = |h: &mut Host| {
        let sent = h.link;
        h.send(&bus(command::PING, a));
        h.wait(80_000);
        h.settle();
        let t = h.rx[0].0;
        h.take();
        // The command's 4 bytes, the reply's first byte.
        t - sent - 5 * BYTE_TIME
    };
    for _ in 0..20 {
        let d = first_byte(&mut h);
        assert!((1_000..=5_000 + 1_000).contains(&d), "{d} µs");
    }
    // An entry is written now (the players' next change), then a command 2 ms later: its
    // answer waits for the EEPROM, 20 ms after the write began.
    let writes = |h: &Host| h.chain.players(0).unwrap().memory().writes();
    let before = writes(&h);
    while writes(&h) == before {
        let step = h.chain.next_due().unwrap();
        h.play(step);
    }
    let write_at = h.link;
    h.wait(2_000);
    let d = first_byte(&mut h);
    // The reply starts 20 ms after the write began (its first byte is one byte time on).
    let start = write_at + 2_000 + 4 * BYTE_TIME + d;
    assert_eq!(start - write_at, 20_000, "{d} µs after the command");
    // Long enough after the write: milliseconds again.
    let d = first_byte(&mut h);
    assert!(d <= 6_000, "{d} µs");
}

#[test]
fn clock_version_and_all_d_replies() {
    let mut h = chain(1, ChainConfig::new(1));
    let a = h.chain.address(0).unwrap();
    let f = h.ask(command::SEND_CLK, a);
    assert_eq!((f[0].id, f[0].data.len()), (reply::BWTIME, 7));
    // Not started: paused with the turn kept; hours D5 (increment mode).
    assert!([0x08, 0x12].contains(&f[0].data[6]), "{:02x?}", f[0].data);
    assert_eq!(f[0].data[0] & 0x20, 0x20);
    h.changes(a);
    let t = h.chain.after_plies(0, 3) + 1_500_000;
    h.play(t);
    let f = h.ask(command::SEND_CLK, a);
    assert!([0x09, 0x13].contains(&f[0].data[6]), "{:02x?}", f[0].data);
    assert_eq!(
        f[0].data,
        h.chain.players(0).unwrap().clock_payload(),
        "the single-board payload"
    );
    let f = h.ask(command::SEND_VERSION, a);
    assert_eq!(f[0].data, [3, 1]);
    // SEND_ALL_D: changes, clock, board, one after the other.
    h.play(t + 20_000_000);
    let f = h.ask(command::SEND_ALL_D, a);
    let ids: Vec<u8> = f.iter().map(|f| f.id).collect();
    assert_eq!(ids, [reply::UPDATE, reply::BWTIME, reply::BRD_DUMP]);
    assert!(!f[0].data.is_empty());
    assert_eq!(
        f[2].data,
        codes(h.chain.players(0).unwrap().fields()).to_vec()
    );
    assert_eq!(h.changes(a), Vec::<u8>::new(), "ALL_D took the changes");
}

#[test]
fn a_command_that_comes_while_the_emulator_fell_behind_mid_reply_is_not_the_hosts_loss() {
    let mut h = chain(1, ChainConfig::new(1));
    let a = h.chain.address(0).unwrap();
    // A dump's reply (70 bytes, 73 ms) under way on time: a command now is the host's loss.
    h.send(&bus(command::SEND_BRD, a));
    h.wait(5_000 + 10 * BYTE_TIME);
    assert!(!h.rx.is_empty(), "the reply began");
    h.send(&bus(command::SEND_VERSION, a));
    let st = h.chain.stats(0).unwrap();
    assert_eq!((st.commands_lost, st.commands_lost_in_stalls), (1, 0));
    h.wait(100_000);
    h.take();
    // The emulator falls behind 30 ms in the middle of the next one (its machine busy):
    // the host saw a quiet line, so a command then is not counted against it.
    h.send(&bus(command::SEND_BRD, a));
    h.wait(5_000 + 10 * BYTE_TIME);
    h.link += 30_000;
    h.send(&bus(command::SEND_VERSION, a));
    let st = h.chain.stats(0).unwrap();
    assert_eq!((st.commands_lost, st.commands_lost_in_stalls), (1, 1));
}

#[test]
fn a_board_addressed_while_another_answers_is_a_collision_that_names_the_other() {
    let mut h = chain(2, ChainConfig::new(2));
    let (a, b) = (h.chain.address(0).unwrap(), h.chain.address(1).unwrap());
    // A dump's reply takes 73 ms: the host addresses the second board at once.
    h.send(&bus(command::SEND_BRD, a));
    h.send(&bus(command::PING, b));
    h.wait(200_000);
    let (one, two) = (h.chain.stats(0).unwrap(), h.chain.stats(1).unwrap());
    assert_eq!((one.collisions, two.collisions), (1, 1));
    assert_eq!(one.collided_with.len(), 1);
    assert!(
        one.collided_with[0].starts_with("reply 83")
            && one.collided_with[0].contains(&format!("board {b}'s reply 87 to a command to it")),
        "{:?}",
        one.collided_with
    );
    assert!(
        two.collided_with[0].contains(&format!("board {a}'s reply 83")),
        "{:?}",
        two.collided_with
    );
}

#[test]
fn a_collision_with_a_reply_the_emulator_held_up_is_not_the_hosts() {
    let mut h = chain(2, ChainConfig::new(2));
    let (a, b) = (h.chain.address(0).unwrap(), h.chain.address(1).unwrap());
    h.send(&bus(command::SEND_BRD, a));
    h.wait(5_000 + 10 * BYTE_TIME);
    // The emulator falls 30 ms behind in the middle of the dump: the host saw a quiet
    // line and addresses the other board.
    h.link += 30_000;
    h.send(&bus(command::PING, b));
    h.wait(200_000);
    let (one, two) = (h.chain.stats(0).unwrap(), h.chain.stats(1).unwrap());
    // (The dump's bytes under the PING's reply are mostly 0x00, an empty square: the
    // framing errors read the same, so only the PING's reply is garbled.)
    assert_eq!((one.collisions, two.collisions), (0, 0));
    assert_eq!(two.collisions_in_stalls, 1);
    assert!(
        two.collided_with[0].contains("(in a stall)")
            && two.collided_with[0].contains("its longest pause so far 3"),
        "{:?}",
        two.collided_with
    );
}

#[test]
fn one_command_at_a_time_and_reset_makes_a_board_deaf_then_power_up() {
    let mut h = chain(1, ChainConfig::new(1));
    let a = h.chain.address(0).unwrap();
    // A second command while the first one's reply is still to come: lost.
    h.send(&bus(command::SEND_BRD, a));
    h.send(&bus(command::SEND_VERSION, a));
    h.wait(80_000);
    h.settle();
    let (f, bad) = frames(&h.take());
    assert_eq!((f.len(), f[0].id, bad), (1, reply::BRD_DUMP, 0));
    assert_eq!(h.chain.stats(0).unwrap().commands_lost, 1);
    // RESET: no answer, deaf for a while, then the power-up sequence in memory.
    let end = h.chain.players(0).unwrap().memory().end();
    h.send(&bus(command::RESET, a));
    h.wait(80_000);
    assert!(h.take().is_empty());
    let m = h.chain.players(0).unwrap().memory();
    assert_eq!(m.bytes(end, end + 4), [0x7F, 0x7F, 0x7F, tag::POWERUP]);
    h.send(&bus(command::PING, a));
    h.wait(80_000);
    assert!(h.take().is_empty());
    assert_eq!(h.chain.stats(0).unwrap().missed, 1);
    h.wait(3_000_000);
    assert_eq!(h.ask(command::PING, a).len(), 1);
    let by_kind = &h.chain.stats(0).unwrap().commands;
    assert_eq!(by_kind.get(&command::SEND_BRD), Some(&1));
    assert_eq!(by_kind.get(&command::SEND_VERSION), Some(&1));
    assert_eq!(by_kind.get(&command::RESET), Some(&1));
    assert_eq!(by_kind.get(&command::PING), Some(&1));
    assert_eq!(h.chain.unknown_bytes(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_plays_on_one_pty_once_the_host_asks_for_changes() {
    use super::super::runner::{self, RunnerConfig};
    use std::io::{Read, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    let chain = ChainEmulator::new(scripts(3), ChainConfig::new(3)).unwrap();
    let addrs = chain.addresses();
    // The players at 50 times their pace: a turn of this host (a reply waits up to the
    // adapter's 16 ms) still sees each board several times a ply.
    let mut h = runner::spawn(
        chain,
        RunnerConfig {
            speed: 50.0,
            ..Default::default()
        },
    )
    .unwrap();
    let path = h.status().path;
    let stop = Arc::new(AtomicBool::new(false));
    let done = stop.clone();
    // The host: SEND_CHANGES to each board in turn, each answer read whole.
    let host = tokio::task::spawn_blocking(move || {
        let mut port = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap();
        let mut boards = vec![[0u8; 64]; addrs.len()];
        let mut buf = [0u8; 4096];
        let mut bad = 0;
        while !done.load(Ordering::SeqCst) {
            for (i, &a) in addrs.iter().enumerate() {
                port.write_all(&bus(command::SEND_CHANGES, a)).unwrap();
                let mut got = Vec::new();
                loop {
                    let n = port.read(&mut buf).unwrap();
                    got.extend_from_slice(&buf[..n]);
                    if got.len() >= 3 {
                        let len = (usize::from(got[1]) << 7) | usize::from(got[2]);
                        if got.len() >= len {
                            break;
                        }
                    }
                }
                let (f, b) = frames(&got);
                bad += b;
                assert_eq!((f.len(), f[0].addr), (1, a));
                replay(&mut boards[i], &f[0].data);
            }
        }
        (boards, bad)
    });
    let settled = h
        .wait_for(Duration::from_secs(60), |s| {
            s.boards.len() == 3 && s.boards.iter().all(|b| b.plies_settled >= 6)
        })
        .await;
    stop.store(true, Ordering::SeqCst);
    let (boards, bad) = host.await.unwrap();
    let st = h.stop().await;
    assert!(settled, "{:?}", st.boards);
    assert_eq!(bad, 0);
    assert_eq!(st.unknown_bytes, 0, "{:02x?}", st.unknown_sample);
    assert_eq!(st.modes_set, 3, "reporting switched on once per board");
    for (b, replayed) in st.boards.iter().zip(&boards) {
        assert!(b.replies_sent >= 6 && b.replies_garbled == 0, "{b:?}");
        // Pieces moved off the start position.
        assert_ne!(replayed[52], 1, "{replayed:?}");
    }
}
