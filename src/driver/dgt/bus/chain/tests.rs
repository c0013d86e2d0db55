//! The chain session's tests: discovery, polling, retries and losses, start marks, memory
//! reads, a board without a clock.

use std::collections::VecDeque;

use super::*;
use crate::driver::Decoder;
use crate::driver::dgt::bus::{BusLineStream, BusReply, BusStream};
use crate::driver::port::LinkKind;

/// What the chain's session is told of its boards' games, the same for every board.
struct View {
    /// A board's fields are explained by its record.
    explains: bool,
    /// A game is in progress.
    in_progress: bool,
    /// The games have just started: no move recorded, the board as recorded.
    at_start: bool,
    /// The boards are ahead of their record by moves no sequence explains.
    missing: bool,
}

impl View {
    /// Boards whose records explain them, their games in progress or not.
    const fn playing(in_progress: bool) -> View {
        View {
            explains: true,
            in_progress,
            at_start: false,
            missing: false,
        }
    }
}

/// A view whose boards are all ahead of their record by moves no sequence explains.
const MISSING: View = View {
    explains: false,
    in_progress: true,
    at_start: false,
    missing: true,
};

/// A view whose boards' games have just started: no move recorded, the board as recorded.
const AT_START: View = View {
    explains: true,
    in_progress: false,
    at_start: true,
    missing: false,
};

impl Boards for View {
    fn explains(&self, _unit: Unit, _fields: &FieldArray) -> bool {
        self.explains
    }
    fn game_in_progress(&self, _unit: Unit) -> bool {
        self.in_progress
    }
    fn at_game_start(&self, _unit: Unit) -> bool {
        self.at_start
    }
    fn away_for(&self, _unit: Unit) -> Option<Duration> {
        None
    }
    fn moves_missing(&self, _unit: Unit) -> bool {
        self.missing
    }
}

fn chain() -> Chain {
    Chain::new(SessionConfig {
        link: LinkKind::Wired,
        keepalive: Duration::from_secs(5),
        quiet_dump: Duration::from_secs(20),
        probing: false,
        port_serial: "port-ttyUSB0".into(),
        memory_after: Duration::from_secs(10),
    })
}

/// The commands in `out`, as (address, command byte).
fn commands(out: &[Action]) -> Vec<(u16, u8)> {
    out.iter()
        .filter_map(|a| match a {
            Action::Send { bytes, .. } => {
                assert_eq!(bytes.len(), 4, "bus commands only: {bytes:02x?}");
                assert!(
                    bytes[0] & 0x80 != 0,
                    "no single-board command: {bytes:02x?}"
                );
                Some((u16::from(bytes[1]) << 7 | u16::from(bytes[2]), bytes[0]))
            }
            _ => None,
        })
        .collect()
}

/// `reply` decoded as the port task would: by the board's decoder while the session listens
/// to it, by the line's otherwise.
fn deliver(s: &mut Chain, t: Instant, reply: &BusReply, view: &View, out: &mut Vec<Action>) {
    let from = s.listener();
    let mut dec: Box<dyn Decoder> = match from {
        Some(u) => Box::new(BusStream::new(u)),
        None => Box::new(BusLineStream::new()),
    };
    let mut msgs = Vec::new();
    dec.decode(&reply.encode(), &mut msgs);
    s.received(t, from, &msgs, dec.bad_frames(), view, out);
}

/// A chain that found the board at `address` and opened it, with what it did so far.
fn with_board(t0: Instant, address: Unit, view: &View) -> (Chain, Vec<Action>) {
    let mut s = chain();
    let mut out = Vec::new();
    s.open(t0, &mut out);
    deliver(&mut s, t0, &BusReply::Ping { address }, view, &mut out);
    s.opened(t0, address, view, &mut out);
    (s, out)
}

#[test]
fn finds_the_boards_in_rounds_then_polls_them_one_after_the_other() {
    let t0 = Instant::now();
    let view = View::playing(false);
    let mut s = chain();
    let mut out = Vec::new();
    s.open(t0, &mut out);
    assert_eq!(commands(&out), [(0, 0x87)], "PING to every board");
    out.clear();
    let mut t = t0 + Duration::from_millis(300);
    deliver(
        &mut s,
        t,
        &BusReply::Ping { address: 1025 },
        &view,
        &mut out,
    );
    t += Duration::from_millis(400);
    deliver(&mut s, t, &BusReply::Ping { address: 7 }, &view, &mut out);
    let found: Vec<u16> = out
        .iter()
        .filter_map(|a| match a {
            Action::Found { unit, serial, .. } => {
                assert_eq!(*serial, format!("{unit:05}"));
                Some(*unit)
            }
            _ => None,
        })
        .collect();
    assert_eq!(found, [1025, 7]);
    for u in found {
        s.opened(t, u, &view, &mut out);
    }
    assert!(
        commands(&out).is_empty(),
        "nothing while the boards may answer"
    );
    out.clear();
    // The window closes: a new board was found, so another round: IGNORE to each, PING.
    t = t0 + DISCOVERY_WINDOW + Duration::from_millis(10);
    s.poll(t, &view, &mut out);
    assert_eq!(commands(&out), [(7, 0x8A)]);
    out.clear();
    deliver(&mut s, t, &BusReply::Ping { address: 7 }, &view, &mut out);
    assert_eq!(commands(&out), [(1025, 0x8A)]);
    out.clear();
    deliver(
        &mut s,
        t,
        &BusReply::Ping { address: 1025 },
        &view,
        &mut out,
    );
    assert_eq!(commands(&out), [(0, 0x87)]);
    out.clear();
    // Nobody new: the search ends; polling starts with each board's first commands.
    t += DISCOVERY_WINDOW + Duration::from_millis(10);
    s.poll(t, &view, &mut out);
    assert_eq!(commands(&out), [(7, 0x8B)], "version first");
    out.clear();
    let version = BusReply::Version {
        address: 7,
        version: Some(crate::driver::dgt::bus::FirmwareVersion { major: 1, minor: 2 }),
    };
    deliver(&mut s, t, &version, &view, &mut out);
    assert_eq!(commands(&out), [(7, 0x83)], "changes, then the board");
    out.clear();
    let update = BusReply::Update {
        address: 7,
        entries: Vec::new(),
    };
    deliver(&mut s, t, &update, &view, &mut out);
    assert_eq!(commands(&out), [(7, 0x82)]);
    out.clear();
    let dump = BusReply::BoardDump {
        address: 7,
        fields: Box::new([crate::core::observation::SquareReading::Empty; 64]),
    };
    deliver(&mut s, t, &dump, &view, &mut out);
    assert_eq!(commands(&out), [(7, 0x81)], "the turn ends with the clock");
    out.clear();
    let clock = BusReply::Clock {
        address: 7,
        clock: crate::driver::dgt::BwTime::NoClock,
    };
    deliver(&mut s, t, &clock, &view, &mut out);
    assert_eq!(commands(&out), [(1025, 0x8B)], "the next board's turn");
}

#[test]
fn a_bad_reply_to_changes_is_repeated_and_a_silent_board_is_lost() {
    let t0 = Instant::now();
    let view = View::playing(true);
    let (mut s, mut out) = with_board(t0, 3, &view);
    assert!(out.contains(&Action::Note {
        unit: 3,
        note: Note::MemoryAsked
    }));
    // Two quiet rounds end the search (the first round found a board: a second one runs).
    let mut t = t0;
    for _ in 0..4 {
        t += DISCOVERY_WINDOW + Duration::from_millis(1);
        out.clear();
        s.poll(t, &view, &mut out);
        if commands(&out) == [(3, 0x8A)] {
            deliver(&mut s, t, &BusReply::Ping { address: 3 }, &view, &mut out);
        }
        if commands(&out).contains(&(3, 0x8B)) {
            break;
        }
    }
    assert_eq!(commands(&out).last(), Some(&(3, 0x8B)));
    out.clear();
    let version = BusReply::Version {
        address: 3,
        version: None,
    };
    deliver(&mut s, t, &version, &view, &mut out);
    assert_eq!(
        commands(&out),
        [(3, 0x86)],
        "the memory since the game's start"
    );
    out.clear();
    // A FROM_START with a bad checksum: once the line is quiet, the turn goes on (a memory
    // gets one try a turn: it is asked again in the board's next turn).
    let mut bad = BusReply::FromStart {
        address: 3,
        entries: Vec::new(),
    }
    .encode();
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    let mut dec = BusStream::new(3);
    let mut msgs = Vec::new();
    dec.decode(&bad, &mut msgs);
    s.received(t, Some(3), &msgs, dec.bad_frames(), &view, &mut out);
    assert!(
        commands(&out).is_empty(),
        "nothing while the line may be busy"
    );
    s.poll(t + REPLY_QUIET - Duration::from_millis(1), &view, &mut out);
    assert!(
        commands(&out).is_empty(),
        "nothing while the line may be busy"
    );
    t += REPLY_QUIET;
    s.poll(t, &view, &mut out);
    assert_eq!(commands(&out), [(3, 0x83)]);
    assert!(s.members[&3].extra.contains(&BusCommand::SendFromStart));
    out.clear();
    // Then no answer at all, three times in a row for three exchanges: lost.
    let mut lost = false;
    for _ in 0..(MAX_TRIES * LOST_AFTER + 2) {
        t += Duration::from_millis(200);
        s.poll(t, &view, &mut out);
        lost |= out
            .iter()
            .any(|a| matches!(a, Action::Lost { unit: 3, .. }));
    }
    assert!(lost, "{out:?}");
    assert_eq!(s.stats.lost, 1);
}

#[test]
fn a_game_start_marks_the_boards_memory() {
    let t0 = Instant::now();
    let view = View::playing(false);
    let (mut s, mut out) = with_board(t0, 9, &view);
    let started = CoreEvent {
        t: 0,
        game: 1,
        kind: EventKind::GameStarted {
            fen: "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1".into(),
            chess960: None,
        },
    };
    s.events(t0, 9, std::slice::from_ref(&started), &mut out);
    assert!(s.members[&9].start_pending);
    // A game that starts during the board's turn is marked in that turn, before its clock
    // (the first move may come before the next turn); once only.
    s.current = Some(9);
    let m = s.members.get_mut(&9).unwrap();
    m.start_pending = false;
    m.turn = VecDeque::from([BusCommand::SendBoard, BusCommand::SendClock]);
    s.events(t0, 9, std::slice::from_ref(&started), &mut out);
    s.events(t0, 9, std::slice::from_ref(&started), &mut out);
    assert_eq!(
        Vec::from(s.members[&9].turn.clone()),
        [
            BusCommand::SendBoard,
            BusCommand::SetStartGame,
            BusCommand::SendClock
        ]
    );
    // A turn that does not read the clock (a board without one) marks it last (issue 38:
    // the next turn came after the first move, and the game went unmarked).
    let m = s.members.get_mut(&9).unwrap();
    m.start_pending = false;
    m.turn = VecDeque::from([BusCommand::SendBoard]);
    s.events(t0, 9, &[started], &mut out);
    assert_eq!(
        Vec::from(s.members[&9].turn.clone()),
        [BusCommand::SendBoard, BusCommand::SetStartGame]
    );
}

#[test]
fn a_game_start_is_marked_while_a_packet_of_changes_is_still_asked_for() {
    // Issue 38: a board's long power-up packet did not come through for 32 s on a line
    // losing 3% of its bytes, nor its first dump; its game began meanwhile and was never
    // marked, so its memory was empty when its moves were wanted.
    let mut s = polling(&[5]);
    let m = s.members.get_mut(&5).unwrap();
    m.repeat_pending = true;
    m.start_pending = true;
    // No dump came through yet (the shadow is unknown): the record's start is enough.
    m.ask(BusCommand::SendBoard);
    let mut t = Instant::now();
    let mut out = Vec::new();
    let mut sent = Vec::new();
    for _ in 0..50 {
        s.poll(t, &AT_START, &mut out);
        sent.extend(commands(&out));
        out.clear();
        if sent.contains(&(5, 0x85)) {
            break;
        }
        t += Duration::from_millis(50);
    }
    assert_eq!(sent[0], (5, 0x84), "the packet is asked for again first");
    assert!(
        sent.contains(&(5, 0x85)),
        "the start is marked: {sent:02x?}"
    );
    assert!(!sent.contains(&(5, 0x82)), "no dump ahead of the changes");
    assert!(
        s.members[&5].repeat_pending,
        "the packet is still asked for"
    );
    assert!(!s.members[&5].start_pending, "once");
}

/// A session with the boards at `addrs` found and open, no search under way: its next
/// poll starts polling them.
fn polling(addrs: &[u16]) -> Chain {
    let mut s = chain();
    for &a in addrs {
        let mut m = Member::new();
        m.opened = true;
        s.members.insert(a, m);
    }
    s
}

/// An UPDATE of board `address` with one field change, its last byte dropped.
fn cut_update(address: u16) -> Vec<u8> {
    let mut bytes = BusReply::Update {
        address,
        entries: vec![crate::driver::dgt::ee::EeEntry::Field {
            index: 12,
            reading: crate::core::observation::SquareReading::Empty,
            quick: false,
        }],
    }
    .encode();
    bytes.pop();
    bytes
}

/// Feeds `bytes` to the decoder of the board the session listens to.
fn feed(s: &mut Chain, t: Instant, dec: &mut BusStream, bytes: &[u8], out: &mut Vec<Action>) {
    let view = View::playing(false);
    let mut msgs = Vec::new();
    let before = dec.bad_frames();
    dec.decode(bytes, &mut msgs);
    let from = s.listener();
    s.received(t, from, &msgs, dec.bad_frames() - before, &view, out);
}

#[test]
fn spoilt_changes_are_waited_out_repeated_in_later_turns_and_never_lost() {
    let view = View::playing(false);
    let mut s = polling(&[5, 6]);
    let mut t = Instant::now();
    let mut out = Vec::new();
    s.poll(t, &view, &mut out);
    assert_eq!(commands(&out), [(5, 0x83)]);
    let mut dec = BusStream::new(5);
    // Three replies cut short: each waited out until the line is quiet, then asked again
    // with REPEAT_CHANGES; nothing goes out while the reply may still be coming.
    for _ in 0..MAX_TRIES {
        out.clear();
        t += Duration::from_millis(10);
        feed(&mut s, t, &mut dec, &cut_update(5), &mut out);
        assert!(commands(&out).is_empty(), "{out:?}");
        s.poll(t + REPLY_QUIET - Duration::from_millis(1), &view, &mut out);
        assert!(commands(&out).is_empty(), "{out:?}");
        t += REPLY_QUIET;
        s.poll(t, &view, &mut out);
        if commands(&out) != [(5, 0x84)] {
            break;
        }
    }
    // The board answered (garbled): it is not lost; the other board gets its turn.
    assert_eq!(
        commands(&out),
        [(5, 0x81)],
        "the turn goes on with the clock"
    );
    assert!(!out.iter().any(|a| matches!(a, Action::Note { .. })));
    out.clear();
    deliver(
        &mut s,
        t,
        &BusReply::Clock {
            address: 5,
            clock: crate::driver::dgt::BwTime::NoClock,
        },
        &view,
        &mut out,
    );
    assert_eq!(commands(&out), [(6, 0x83)], "the next board's turn");
    out.clear();
    deliver(
        &mut s,
        t,
        &BusReply::Update {
            address: 6,
            entries: Vec::new(),
        },
        &view,
        &mut out,
    );
    out.clear();
    deliver(
        &mut s,
        t,
        &BusReply::Clock {
            address: 6,
            clock: crate::driver::dgt::BwTime::NoClock,
        },
        &view,
        &mut out,
    );
    // Board 5's next turn asks for the same packet again, never for new changes.
    assert_eq!(commands(&out), [(5, 0x84)]);
    out.clear();
    let update = BusReply::Update {
        address: 5,
        entries: Vec::new(),
    };
    deliver(&mut s, t, &update, &view, &mut out);
    // That packet was the earlier one: the changes made since are asked for at once.
    assert_eq!(commands(&out), [(5, 0x83)]);
    out.clear();
    deliver(&mut s, t, &update, &view, &mut out);
    // Board 5 said "no clock": its clock waits for a later turn; board 6's turn comes.
    assert_eq!(commands(&out), [(6, 0x83)]);
    assert!(!s.members[&5].repeat_pending);
    assert_eq!(s.stats.lost, 0);
}

#[test]
fn a_packet_that_came_with_repeat_changes_is_followed_by_new_changes_before_a_dump() {
    let view = View::playing(false);
    let mut s = polling(&[5]);
    s.members.get_mut(&5).unwrap().ask(BusCommand::SendBoard);
    let t = Instant::now();
    let mut out = Vec::new();
    s.poll(t, &view, &mut out);
    assert_eq!(commands(&out), [(5, 0x83)]);
    // The reply to SEND_CHANGES is lost: REPEAT_CHANGES, whose packet comes through.
    out.clear();
    s.poll(t + Duration::from_millis(100), &view, &mut out);
    assert_eq!(commands(&out), [(5, 0x84)]);
    out.clear();
    let update = BusReply::Update {
        address: 5,
        entries: Vec::new(),
    };
    deliver(&mut s, t, &update, &view, &mut out);
    // That packet is the board's earlier one: the changes since come first, then the dump.
    assert_eq!(commands(&out), [(5, 0x83)], "new changes before the dump");
    out.clear();
    deliver(&mut s, t, &update, &view, &mut out);
    assert_eq!(commands(&out), [(5, 0x82)]);
}

#[test]
fn moves_missing_read_the_boards_memory_a_few_times_apart() {
    let mut s = polling(&[5]);
    let t0 = Instant::now();
    let mut out = Vec::new();
    let mut asked = Vec::new();
    let mut reads = 0;
    // The board answers every command at once; moves stay missing for a minute.
    for k in 0..600u32 {
        let t = t0 + Duration::from_millis(100) * k;
        out.clear();
        s.poll(t, &MISSING, &mut out);
        for _ in 0..10 {
            let Line::Asking { address, cmd, .. } = s.line else {
                break;
            };
            if out.iter().any(|a| {
                matches!(
                    a,
                    Action::Note {
                        note: Note::MemoryAskedAgain,
                        ..
                    }
                )
            }) {
                asked.push(t);
            }
            reads += u32::from(cmd == BusCommand::SendFromStart);
            let reply = match cmd {
                BusCommand::SendFromStart => BusReply::FromStart {
                    address,
                    entries: Vec::new(),
                },
                BusCommand::SendChanges | BusCommand::RepeatChanges => BusReply::Update {
                    address,
                    entries: Vec::new(),
                },
                BusCommand::SendBoard => BusReply::BoardDump {
                    address,
                    fields: Box::new([crate::core::observation::SquareReading::Empty; 64]),
                },
                BusCommand::SendClock => BusReply::Clock {
                    address,
                    clock: crate::driver::dgt::BwTime::NoClock,
                },
                c => panic!("{c:?}"),
            };
            out.clear();
            let mut dec = BusStream::new(address);
            let mut msgs = Vec::new();
            dec.decode(&reply.encode(), &mut msgs);
            s.received(t, Some(address), &msgs, 0, &MISSING, &mut out);
        }
    }
    assert_eq!(asked.len(), MEMORY_RECALLS as usize, "{asked:?}");
    assert!(asked.windows(2).all(|w| w[1] - w[0] >= RECALL_EVERY));
    // Each read went out (and was answered).
    assert_eq!(reads, MEMORY_RECALLS);
}

#[test]
fn a_start_mark_whose_answer_came_in_bad_is_not_written_again() {
    let view = View::playing(false);
    let mut s = polling(&[5]);
    let t = Instant::now();
    let mut out = Vec::new();
    s.send(t, 5, BusCommand::SetStartGame, 1, false, &mut out);
    let mut bad = BusReply::StartGameWritten { address: 5 }.encode();
    let last = bad.len() - 1;
    bad[last] ^= 0x01;
    out.clear();
    let mut dec = BusStream::new(5);
    feed(&mut s, t, &mut dec, &bad, &mut out);
    s.poll(t + REPLY_QUIET, &view, &mut out);
    assert!(
        !commands(&out).contains(&(5, 0x85)),
        "a second mark: {out:?}"
    );
}

#[test]
fn a_board_without_a_clock_is_asked_for_it_once_in_a_while() {
    let view = View::playing(false);
    let mut s = polling(&[5]);
    let t = Instant::now();
    let mut out = Vec::new();
    s.poll(t, &view, &mut out);
    let mut clock_asks = Vec::new();
    for turn in 0..(2 * CLOCKLESS_EVERY + 1) {
        loop {
            let Line::Asking { address, cmd, .. } = s.line else {
                panic!("{:?}", s.line);
            };
            let reply = match cmd {
                BusCommand::SendChanges => BusReply::Update {
                    address,
                    entries: Vec::new(),
                },
                BusCommand::SendClock => BusReply::Clock {
                    address,
                    clock: crate::driver::dgt::BwTime::NoClock,
                },
                c => panic!("{c:?}"),
            };
            out.clear();
            deliver(&mut s, t, &reply, &view, &mut out);
            if cmd == BusCommand::SendClock {
                clock_asks.push(turn);
            }
            // The next turn begins with its changes.
            if commands(&out) == [(5, 0x83)] {
                break;
            }
        }
    }
    assert_eq!(clock_asks, [0, CLOCKLESS_EVERY, 2 * CLOCKLESS_EVERY]);
}
