//! The bus decoders behind the [`Decoder`] seam: [`BusStream`] for one board of a chain,
//! [`BusLineStream`] for the whole line (§1.9).

use super::{BusCommand, BusDecoder, BusReply};
use crate::core::observation::{MemoryEntry, Observation};
use crate::driver::dgt::BwTime;
use crate::driver::dgt::ee::{EeEntry, memory_entries};
use crate::driver::{Decoder, Message, SessionMessage};

/// The [`Decoder`] of one board of a bus chain: the replies of its address, as observations
/// and session messages.
///
/// For every good frame of the board it appends the frame's observations, then (VERSION only)
/// a [`SessionMessage::Version`], then exactly one [`SessionMessage::Driver`] with the reply's
/// [`BusReply::driver_reply`], so that a session knows which reply completed:
///
/// - BRD_DUMP: [`Observation::BoardDump`];
/// - BWTIME: [`Observation::Clock`] for times, [`Observation::ClockAbsent`] for "no clock",
///   nothing for an ack or a null payload;
/// - UPDATE: one [`Observation::Field`] per field change, in order (time entries and tags of a
///   live update give nothing: presses are read from the clock's BWTIME readings), then
///   [`Observation::Polled`] (the board's changes until this poll are in; also after an
///   empty UPDATE, and after the memory an UPDATE is joined to);
/// - FROM_START: held back. The next UPDATE is joined to it and one [`Observation::Memory`] of
///   both is emitted then, instead of the update's fields. DGTCentaurMods' emulation (which
///   LiveChess reads) sends in FROM_START the changes not yet sent by SEND_CHANGES, and then
///   sends them again in the next UPDATE; DGT's header says FROM_START leaves them out. Both
///   readings give the same memory: the longest prefix of the update that equals a suffix of
///   the FROM_START entries is dropped from the update. (Dropping it never changes what the
///   memory ends in: writing a run of field changes twice leaves every field as writing it
///   once does.) When another reply of the board comes first, the held FROM_START is emitted
///   alone before that reply's messages; [`BusStream::flush`] emits it at the end of a stream.
///
/// Everything follows from the received bytes alone: replay feeds a capture's rx records to a
/// fresh `BusStream` and gets the same messages.
#[derive(Debug)]
pub struct BusStream {
    decoder: BusDecoder,
    replies: Vec<BusReply>,
    /// The entries of a FROM_START waiting for the next UPDATE.
    from_start: Option<Vec<EeEntry>>,
    /// The last command sent to the board was REPEAT_CHANGES: its UPDATE is the packet of an
    /// earlier SEND_CHANGES, and changes made since may still wait in the board.
    repeating: bool,
}

impl BusStream {
    /// A decoder for the board at `address`.
    pub fn new(address: u16) -> Self {
        BusStream {
            decoder: BusDecoder::for_address(address),
            replies: Vec::new(),
            from_start: None,
            repeating: false,
        }
    }

    /// The board's address.
    pub fn address(&self) -> u16 {
        self.decoder.address().unwrap_or_default()
    }

    /// Good frames of other boards dropped so far.
    pub fn foreign_frames(&self) -> u64 {
        self.decoder.foreign_frames()
    }

    /// Bytes of UPDATE and FROM_START data so far that started no valid EE entry.
    pub fn ee_skipped_bytes(&self) -> u64 {
        self.decoder.ee_skipped_bytes()
    }

    /// Whether a FROM_START is held back, waiting for the next UPDATE.
    pub fn holds_from_start(&self) -> bool {
        self.from_start.is_some()
    }

    /// Emits a held FROM_START alone (at the end of a stream, or when the session gives up
    /// waiting for the UPDATE).
    pub fn flush(&mut self, out: &mut Vec<Message>) {
        if let Some(entries) = self.from_start.take() {
            out.push(memory(&entries));
        }
    }

    /// Appends the messages of one reply.
    fn emit(&mut self, reply: BusReply, out: &mut Vec<Message>) {
        let driver = reply.driver_reply();
        match reply {
            BusReply::Update { entries, .. } => {
                match self.from_start.take() {
                    Some(mut joined) => {
                        let overlap = overlap(&joined, &entries);
                        joined.extend_from_slice(&entries[overlap..]);
                        out.push(memory(&joined));
                    }
                    None => out.extend(entries.iter().filter_map(|e| match *e {
                        EeEntry::Field { index, reading, .. } => {
                            Some(Message::Observation(Observation::Field { index, reading }))
                        }
                        EeEntry::Time { .. } | EeEntry::Tag(_) => None,
                    })),
                }
                // The board's changes until this poll are in; not so after REPEAT_CHANGES (the
                // packet of an earlier SEND_CHANGES: changes since may wait in the board).
                if !self.repeating {
                    out.push(Message::Observation(Observation::Polled));
                }
            }
            other => {
                self.flush(out);
                match other {
                    BusReply::BoardDump { fields, .. } => {
                        out.push(Message::Observation(Observation::BoardDump(fields)));
                    }
                    BusReply::Clock { clock, .. } => match clock {
                        BwTime::Times(r) => out.push(Message::Observation(Observation::Clock(r))),
                        BwTime::NoClock => out.push(Message::Observation(Observation::ClockAbsent)),
                        BwTime::Ack(_) | BwTime::Null => {}
                    },
                    BusReply::FromStart { entries, .. } => self.from_start = Some(entries),
                    BusReply::Version {
                        version: Some(v), ..
                    } => out.push(Message::Session(SessionMessage::Version {
                        major: v.major,
                        minor: v.minor,
                    })),
                    _ => {}
                }
            }
        }
        out.push(Message::Session(SessionMessage::Driver(driver)));
    }
}

impl Decoder for BusStream {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        self.decoder.decode(bytes, &mut self.replies);
        let replies = std::mem::take(&mut self.replies);
        for r in replies {
            self.emit(r, out);
        }
    }

    fn sent(&mut self, bytes: &[u8]) {
        // Whatever the reply being collected was, it is over: a new command went out.
        self.decoder.cut();
        // A bus command (§1.9.2): `<cmd> <address> <address> <checksum>`, to this board.
        if let [cmd, hi, lo, _] = *bytes
            && (u16::from(hi) << 7 | u16::from(lo)) == self.address()
        {
            match cmd {
                c if c == BusCommand::SendChanges.byte() => self.repeating = false,
                c if c == BusCommand::RepeatChanges.byte() => self.repeating = true,
                _ => {}
            }
        }
    }

    fn dropped_bytes(&self) -> u64 {
        self.decoder.dropped_bytes()
    }

    fn bad_frames(&self) -> u64 {
        self.decoder.bad_frames()
    }
}

/// The [`Decoder`] of a bus line as a whole (no address filter), while boards are discovered
/// with PING to address 0: one [`SessionMessage::Driver`] per good frame of any board, nothing
/// else (which board's game an observation would belong to is not known yet).
#[derive(Debug, Default)]
pub struct BusLineStream {
    decoder: BusDecoder,
    replies: Vec<BusReply>,
}

impl BusLineStream {
    /// A decoder of every board's replies.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Decoder for BusLineStream {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        self.decoder.decode(bytes, &mut self.replies);
        out.extend(
            self.replies
                .drain(..)
                .map(|r| Message::Session(SessionMessage::Driver(r.driver_reply()))),
        );
    }

    fn dropped_bytes(&self) -> u64 {
        self.decoder.dropped_bytes()
    }

    fn bad_frames(&self) -> u64 {
        self.decoder.bad_frames()
    }
}

/// The memory observation of EE entries.
fn memory(entries: &[EeEntry]) -> Message {
    let m: Vec<MemoryEntry> = memory_entries(entries);
    Message::Observation(Observation::Memory(m))
}

/// The length of the longest prefix of `p` that is a suffix of `s` (the Knuth–Morris–Pratt
/// failure function of `p`, run over `s`: linear in both lengths).
fn overlap<T: PartialEq>(s: &[T], p: &[T]) -> usize {
    if p.is_empty() {
        return 0;
    }
    let mut fail = vec![0usize; p.len()];
    let mut k = 0;
    for i in 1..p.len() {
        while k > 0 && p[i] != p[k] {
            k = fail[k - 1];
        }
        if p[i] == p[k] {
            k += 1;
        }
        fail[i] = k;
    }
    let mut k = 0;
    for x in s {
        if k == p.len() {
            k = fail[k - 1];
        }
        while k > 0 && *x != p[k] {
            k = fail[k - 1];
        }
        if *x == p[k] {
            k += 1;
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observation::{ClockSide, SquareReading};
    use crate::driver::DriverReply;
    use crate::driver::dgt::bus::FirmwareVersion;
    use crate::driver::dgt::ee::{EeTag, start_position};
    use crate::driver::dgt::{ClockAck, reading_from_code};
    use proptest::prelude::*;

    const A: u16 = 1025;
    const B: u16 = 2047;

    fn field(index: u8, code: u8) -> EeEntry {
        EeEntry::Field {
            index,
            reading: reading_from_code(code).unwrap(),
            quick: false,
        }
    }

    /// The chain session's reply: reply id byte `kind` from the board at `address`.
    fn driver(kind: u8, address: u16) -> Message {
        Message::Session(SessionMessage::Driver(DriverReply::DgtBus(
            crate::driver::dgt::bus::BusAnswer {
                kind: crate::driver::dgt::bus::ReplyKind::from_id(kind).unwrap(),
                address,
            },
        )))
    }

    fn decode(d: &mut dyn Decoder, bytes: &[u8]) -> Vec<Message> {
        let mut out = Vec::new();
        d.decode(bytes, &mut out);
        out
    }

    /// Two boards answering a poll round: pings, versions, a start game, a dump, clocks,
    /// changes with a move, a repeated update, a FROM_START and the next UPDATE.
    fn chain() -> Vec<u8> {
        let mut dump = start_position();
        dump[52] = SquareReading::Empty;
        [
            BusReply::Ping { address: A },
            BusReply::Ping { address: B },
            BusReply::Version {
                address: A,
                version: Some(FirmwareVersion { major: 1, minor: 2 }),
            },
            BusReply::Version {
                address: B,
                version: None,
            },
            BusReply::StartGameWritten { address: A },
            BusReply::BoardDump {
                address: A,
                fields: Box::new(dump),
            },
            BusReply::Clock {
                address: B,
                clock: BwTime::NoClock,
            },
            BusReply::Update {
                address: A,
                entries: vec![field(52, 0), field(36, 1), EeEntry::Tag(EeTag::Nop)],
            },
            BusReply::Update {
                address: B,
                entries: vec![field(12, 0)],
            },
            BusReply::FromStart {
                address: A,
                entries: vec![EeEntry::Tag(EeTag::StartTag), field(60, 5), field(52, 0)],
            },
            BusReply::Update {
                address: A,
                entries: vec![field(52, 0), field(36, 1)],
            },
        ]
        .iter()
        .flat_map(BusReply::encode)
        .collect()
    }

    #[test]
    fn one_board_of_a_chain() {
        let mut d = BusStream::new(A);
        assert_eq!(d.address(), A);
        let out = decode(&mut d, &chain());
        let mut dump = start_position();
        dump[52] = SquareReading::Empty;
        let empty = MemoryEntry::Board(Box::new([SquareReading::Empty; 64]));
        let memory_field = |index, code| MemoryEntry::Field {
            index,
            reading: reading_from_code(code).unwrap(),
            quick: false,
        };
        assert_eq!(
            out,
            vec![
                driver(0x87, A),
                Message::Session(SessionMessage::Version { major: 1, minor: 2 }),
                driver(0x89, A),
                driver(0x88, A),
                Message::Observation(Observation::BoardDump(Box::new(dump))),
                driver(0x83, A),
                Message::Observation(Observation::Field {
                    index: 52,
                    reading: SquareReading::Empty
                }),
                Message::Observation(Observation::Field {
                    index: 36,
                    reading: reading_from_code(1).unwrap()
                }),
                Message::Observation(Observation::Polled),
                driver(0x85, A),
                driver(0x86, A),
                // FROM_START ends in e2 emptied; the UPDATE starts with it again: dropped once.
                Message::Observation(Observation::Memory(vec![
                    empty,
                    memory_field(60, 5),
                    memory_field(52, 0),
                    memory_field(36, 1),
                ])),
                Message::Observation(Observation::Polled),
                driver(0x85, A),
            ]
        );
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (0, 0));
        assert_eq!(d.foreign_frames(), 4);
        assert!(!d.holds_from_start());

        let mut d = BusStream::new(B);
        let out = decode(&mut d, &chain());
        assert_eq!(
            out,
            vec![
                driver(0x87, B),
                driver(0x89, B),
                Message::Observation(Observation::ClockAbsent),
                driver(0x84, B),
                Message::Observation(Observation::Field {
                    index: 12,
                    reading: SquareReading::Empty
                }),
                Message::Observation(Observation::Polled),
                driver(0x85, B),
            ]
        );
        assert_eq!(d.foreign_frames(), 7);
    }

    #[test]
    fn every_cut_of_a_chain_gives_the_same_messages() {
        let stream = chain();
        for address in [A, B] {
            let whole = decode(&mut BusStream::new(address), &stream);
            let line = decode(&mut BusLineStream::new(), &stream);
            for cut in 0..=stream.len() {
                let mut d = BusStream::new(address);
                let mut out = decode(&mut d, &stream[..cut]);
                out.extend(decode(&mut d, &stream[cut..]));
                assert_eq!(out, whole, "cut at {cut}");
                let mut l = BusLineStream::new();
                let mut out = decode(&mut l, &stream[..cut]);
                out.extend(decode(&mut l, &stream[cut..]));
                assert_eq!(out, line, "line cut at {cut}");
            }
            let mut d = BusStream::new(address);
            let mut out = Vec::new();
            for b in &stream {
                d.decode(std::slice::from_ref(b), &mut out);
            }
            assert_eq!(out, whole, "byte by byte");
        }
    }

    #[test]
    fn the_line_gives_every_boards_driver_replies() {
        let out = decode(&mut BusLineStream::new(), &chain());
        let kinds: Vec<(u8, u16)> = out
            .iter()
            .map(|m| match m {
                Message::Session(SessionMessage::Driver(DriverReply::DgtBus(r))) => {
                    (r.kind.id(), r.address)
                }
                other => panic!("not a driver reply: {other:?}"),
            })
            .collect();
        assert_eq!(
            kinds,
            vec![
                (0x87, A),
                (0x87, B),
                (0x89, A),
                (0x89, B),
                (0x88, A),
                (0x83, A),
                (0x84, B),
                (0x85, A),
                (0x85, B),
                (0x86, A),
                (0x85, A),
            ]
        );
    }

    #[test]
    fn garbage_and_bad_checksums_are_never_observations() {
        let mut stream = hex_bytes("00 7F 12");
        let mut ping = BusReply::Ping { address: A }.encode();
        ping[5] ^= 0x01;
        stream.extend(&ping);
        let mut update = BusReply::Update {
            address: A,
            entries: vec![field(52, 0)],
        }
        .encode();
        let last = update.len() - 1;
        update[last] = (update[last] + 1) & 0x7F;
        stream.extend(&update);
        stream.extend(hex_bytes("93 00 05 03 01"));
        let mut d = BusStream::new(A);
        assert!(decode(&mut d, &stream).is_empty());
        assert_eq!(d.bad_frames(), 3);
        assert_eq!(d.dropped_bytes(), stream.len() as u64);
        let mut l = BusLineStream::new();
        assert!(decode(&mut l, &stream).is_empty());
        assert_eq!(
            (l.dropped_bytes(), l.bad_frames()),
            (stream.len() as u64, 3)
        );
    }

    fn hex_bytes(s: &str) -> Vec<u8> {
        crate::driver::dgt::hex(s)
    }

    #[test]
    fn clock_replies() {
        let times = crate::core::observation::ClockReading {
            right: crate::driver::dgt::face(60_000),
            left: crate::driver::dgt::face(59_000),
            running: true,
            left_turn: true,
            ..Default::default()
        };
        let ack = ClockAck {
            ack0: 0x10,
            ack1: 0x88,
            ack2: 0x05,
            ack3: 0x31,
        };
        let stream: Vec<u8> = [BwTime::Times(times), BwTime::Ack(ack), BwTime::Null]
            .into_iter()
            .flat_map(|clock| BusReply::Clock { address: A, clock }.encode())
            .collect();
        let out = decode(&mut BusStream::new(A), &stream);
        assert_eq!(
            out,
            vec![
                Message::Observation(Observation::Clock(times)),
                driver(0x84, A),
                driver(0x84, A),
                driver(0x84, A),
            ]
        );
    }

    #[test]
    fn an_update_answering_repeat_changes_is_no_poll() {
        let update = BusReply::Update {
            address: A,
            entries: vec![field(52, 0)],
        }
        .encode();
        let polls = |d: &mut BusStream| {
            decode(d, &update)
                .iter()
                .filter(|m| **m == Message::Observation(Observation::Polled))
                .count()
        };
        let mut d = BusStream::new(A);
        d.sent(&BusCommand::SendChanges.encode(A));
        assert_eq!(polls(&mut d), 1);
        // The packet of an earlier SEND_CHANGES: its fields, but no poll (changes made since
        // may still wait in the board).
        d.sent(&BusCommand::RepeatChanges.encode(A));
        assert_eq!(polls(&mut d), 0);
        // Another board's commands change nothing; this board's clock neither.
        d.sent(&BusCommand::SendChanges.encode(B));
        d.sent(&BusCommand::SendClock.encode(A));
        assert_eq!(polls(&mut d), 0);
        d.sent(&BusCommand::SendChanges.encode(A));
        assert_eq!(polls(&mut d), 1);
    }

    #[test]
    fn a_reply_cut_short_is_never_completed_by_the_next_one() {
        // Issue 38: an UPDATE that lost its 7th byte, then the next reply (its header lost):
        // its second byte, 0x00, completed the first frame with a checksum that matched.
        let first = hex_bytes("85 00 0f 07 6d 40 1b 24 41 1b 71 30 54 28");
        let mut d = BusStream::new(0x3ED);
        assert!(decode(&mut d, &first).is_empty());
        d.sent(&BusCommand::RepeatChanges.encode(0x3ED));
        assert!(decode(&mut d, &[0x00]).is_empty(), "no frame made up");
        assert_eq!(d.bad_frames(), 1);
        // Without the command in between, the bytes made a frame (what the fix prevents).
        let mut d = BusStream::new(0x3ED);
        assert!(!decode(&mut d, &[first, vec![0x00]].concat()).is_empty());
    }

    #[test]
    fn from_start_joined_with_and_without_overlap() {
        let fs = vec![
            EeEntry::Tag(EeTag::StartTag),
            field(60, 5),
            field(52, 1),
            field(52, 0),
            field(36, 1),
        ];
        let memory_of = |entries: &[EeEntry]| {
            Message::Observation(Observation::Memory(memory_entries(entries)))
        };
        let run = |update: Vec<EeEntry>| {
            let stream = [
                BusReply::FromStart {
                    address: A,
                    entries: fs.clone(),
                },
                BusReply::Update {
                    address: A,
                    entries: update,
                },
            ]
            .iter()
            .flat_map(BusReply::encode)
            .collect::<Vec<u8>>();
            let out = decode(&mut BusStream::new(A), &stream);
            // FROM_START's reply, the memory, the poll's end, UPDATE's reply.
            assert_eq!(out.len(), 4);
            assert_eq!(out[2], Message::Observation(Observation::Polled));
            out[1].clone()
        };
        let press = EeEntry::Time {
            side: ClockSide::Right,
            millis: 60_000,
        };
        // The header's reading: FROM_START leaves the unsent changes out.
        assert_eq!(
            run(vec![press, field(12, 0)]),
            memory_of(&[fs.clone(), vec![press, field(12, 0)]].concat())
        );
        // DGTCentaurMods' reading: the unsent changes come in both; the overlap is dropped.
        assert_eq!(
            run(vec![field(52, 0), field(36, 1), press]),
            memory_of(&[fs.clone(), vec![press]].concat())
        );
        // The longest overlap is taken.
        assert_eq!(run(fs[1..].to_vec()), memory_of(&fs));
        // An update that only partly matches the end is kept whole.
        assert_eq!(
            run(vec![field(52, 0), field(12, 0)]),
            memory_of(&[fs.clone(), vec![field(52, 0), field(12, 0)]].concat())
        );
        // An empty update: FROM_START alone.
        assert_eq!(run(vec![]), memory_of(&fs));
    }

    #[test]
    fn a_held_from_start_goes_out_before_any_other_reply() {
        let fs = vec![EeEntry::Tag(EeTag::StartTag), field(60, 5)];
        let stream: Vec<u8> = [
            BusReply::FromStart {
                address: A,
                entries: fs.clone(),
            },
            BusReply::Ping { address: B },
            BusReply::Ping { address: A },
            BusReply::FromStart {
                address: A,
                entries: fs.clone(),
            },
            BusReply::FromStart {
                address: A,
                entries: vec![],
            },
        ]
        .iter()
        .flat_map(BusReply::encode)
        .collect();
        let mut d = BusStream::new(A);
        let mut out = decode(&mut d, &stream);
        assert!(d.holds_from_start());
        d.flush(&mut out);
        assert!(!d.holds_from_start());
        let memory = Message::Observation(Observation::Memory(memory_entries(&fs)));
        assert_eq!(
            out,
            vec![
                driver(0x86, A),
                // Board B's ping is foreign: it does not release the FROM_START; A's does.
                memory.clone(),
                driver(0x87, A),
                driver(0x86, A),
                memory,
                driver(0x86, A),
                Message::Observation(Observation::Memory(vec![])),
            ]
        );
    }

    proptest! {
        #[test]
        fn overlap_is_the_longest_prefix_that_is_a_suffix(
            s in proptest::collection::vec(0u8..3, 0..12),
            p in proptest::collection::vec(0u8..3, 0..12),
        ) {
            // Oracle: try every length, longest first.
            let brute = (0..=s.len().min(p.len()))
                .rev()
                .find(|&k| s[s.len() - k..] == p[..k])
                .unwrap_or(0);
            prop_assert_eq!(overlap(&s, &p), brute);
        }
    }
}
