//! Property tests of the DGT board→host codecs, single-board and bus mode: encode → decode
//! round trips over arbitrary splits, resynchronisation on garbage, and robustness against
//! random bytes.

use eboardd::core::observation::{ClockFace, ClockReading, ClockSide, SquareReading};
use eboardd::driver::dgt::bus::{BusDecoder, BusLineStream, BusReply, BusStream, FirmwareVersion};
use eboardd::driver::dgt::{
    BatteryStatus, BwTime, ClockAck, DgtDecoder, DgtMessage, EeEntry, EeTag, MAX_BUFFERED_FRAME,
    reading_from_code,
};
use eboardd::driver::{Decoder, Message};
use proptest::prelude::*;

fn reading() -> impl Strategy<Value = SquareReading> {
    (0u8..=15).prop_map(|c| reading_from_code(c).unwrap())
}

fn face() -> impl Strategy<Value = ClockFace> {
    (0u32..10 * 3600, any::<bool>()).prop_map(|(s, flag)| ClockFace {
        millis: s * 1000,
        flag,
        flag_shown: false,
    })
}

fn clock() -> impl Strategy<Value = ClockReading> {
    (face(), face(), any::<[bool; 5]>())
        .prop_map(|(left, right, b)| ClockReading {
            left,
            right,
            running: b[0],
            right_side_up: b[1],
            battery_low: b[2],
            right_turn: b[3],
            left_turn: b[4],
        })
        // An all-zero BWTIME is a null message and is (rightly) dropped by the decoder.
        .prop_filter("null BWTIME", |r| *r != ClockReading::default())
}

fn fields() -> impl Strategy<Value = Box<[SquareReading; 64]>> {
    proptest::array::uniform32(reading())
        .prop_flat_map(|a| (Just(a), proptest::array::uniform32(reading())))
        .prop_map(|(a, b)| {
            let mut fields = [SquareReading::Empty; 64];
            fields[..32].copy_from_slice(&a);
            fields[32..].copy_from_slice(&b);
            Box::new(fields)
        })
}

fn ack() -> impl Strategy<Value = ClockAck> {
    any::<[u8; 4]>().prop_map(|a| ClockAck {
        ack0: a[0],
        ack1: a[1],
        ack2: a[2],
        ack3: a[3],
    })
}

/// EE entries in canonical form: whole seconds up to 9:59:59.
fn ee_entry() -> impl Strategy<Value = EeEntry> {
    prop_oneof![
        (0u8..64, reading(), any::<bool>()).prop_map(|(index, reading, quick)| EeEntry::Field {
            index,
            reading,
            quick
        }),
        (any::<bool>(), 0u32..10 * 3600).prop_map(|(left, s)| EeEntry::Time {
            side: if left {
                ClockSide::Left
            } else {
                ClockSide::Right
            },
            millis: s * 1000,
        }),
        proptest::sample::select(EeTag::ALL.to_vec()).prop_map(EeEntry::Tag),
    ]
}

/// Messages in their canonical form (what the decoder gives back for their encoding).
fn message() -> impl Strategy<Value = DgtMessage> {
    prop_oneof![
        fields().prop_map(DgtMessage::BoardDump),
        (0u8..64, reading())
            .prop_map(|(index, reading)| DgtMessage::FieldUpdate { index, reading }),
        clock().prop_map(DgtMessage::ClockTimes),
        Just(DgtMessage::NoClock),
        ack().prop_map(DgtMessage::ClockAck),
        (0u8..128, 0u8..128).prop_map(|(major, minor)| DgtMessage::Version { major, minor }),
        "[ -~]{5}".prop_map(DgtMessage::SerialNumber),
        "[ -~]{10}".prop_map(DgtMessage::LongSerialNumber),
        (0u16..0x4000).prop_map(DgtMessage::BusAddress),
        "[ -~\n]{1,200}".prop_map(DgtMessage::Trademark),
        proptest::collection::vec(0u8..128, 1..=64)
            .prop_map(|raw| DgtMessage::Battery(BatteryStatus::from_raw(raw))),
        // A log is never empty (an empty one is sent as a lone EE_EOF).
        proptest::collection::vec(ee_entry(), 1..300)
            .prop_map(|entries| DgtMessage::EeMoves { entries }),
    ]
}

/// Bus replies in canonical form, from boards at the given addresses.
fn bus_reply(addresses: Vec<u16>) -> impl Strategy<Value = BusReply> {
    let address = proptest::sample::select(addresses);
    let entries = || proptest::collection::vec(ee_entry(), 0..40);
    let clock = prop_oneof![
        clock().prop_map(BwTime::Times),
        Just(BwTime::NoClock),
        ack().prop_map(BwTime::Ack),
        Just(BwTime::Null),
    ];
    let version = proptest::option::of((0u8..128, 0u8..128))
        .prop_map(|v| v.map(|(major, minor)| FirmwareVersion { major, minor }));
    prop_oneof![
        (address.clone(), fields())
            .prop_map(|(address, fields)| BusReply::BoardDump { address, fields }),
        (address.clone(), clock).prop_map(|(address, clock)| BusReply::Clock { address, clock }),
        (address.clone(), entries())
            .prop_map(|(address, entries)| BusReply::Update { address, entries }),
        (address.clone(), entries())
            .prop_map(|(address, entries)| BusReply::FromStart { address, entries }),
        address
            .clone()
            .prop_map(|address| BusReply::Ping { address }),
        address
            .clone()
            .prop_map(|address| BusReply::StartGameWritten { address }),
        (address.clone(), version)
            .prop_map(|(address, version)| BusReply::Version { address, version }),
        address.prop_map(|address| BusReply::BoardDump50B { address }),
    ]
}

/// Whether `again` is what decoding `r`'s encoding should give: `r` itself, except that clock
/// times that are all zero are sent as the null payload.
fn same_reply(r: &BusReply, again: &BusReply) -> bool {
    match (r, again) {
        (
            BusReply::Clock {
                address: a,
                clock: BwTime::Times(t),
            },
            BusReply::Clock {
                address: b,
                clock: BwTime::Null,
            },
        ) => a == b && *t == ClockReading::default(),
        _ => r == again,
    }
}

/// Decodes a bus stream fed in chunks ending at the given cut points.
fn bus_split(stream: &[u8], cuts: &[usize], d: &mut BusDecoder) -> Vec<BusReply> {
    let mut out = Vec::new();
    for chunk in chunks(stream, cuts) {
        d.decode(chunk, &mut out);
    }
    out
}

/// The messages of a [`Decoder`] fed in chunks ending at the given cut points.
fn stream_split(stream: &[u8], cuts: &[usize], d: &mut dyn Decoder) -> Vec<Message> {
    let mut out = Vec::new();
    for chunk in chunks(stream, cuts) {
        d.decode(chunk, &mut out);
    }
    out
}

/// `stream` cut at the given points (taken modulo its length + 1).
fn chunks<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut from = 0;
    for cut in cuts.into_iter().chain([stream.len()]) {
        out.push(&stream[from..cut]);
        from = cut;
    }
    out
}

/// Decodes `stream` fed in chunks ending at the given cut points.
fn decode_split(stream: &[u8], cuts: &[usize]) -> (Vec<DgtMessage>, DgtDecoder) {
    let mut d = DgtDecoder::new();
    let mut out = Vec::new();
    for chunk in chunks(stream, cuts) {
        d.decode(chunk, &mut out);
    }
    (out, d)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn round_trip_split_anywhere(
        msgs in proptest::collection::vec(message(), 0..12),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        let stream: Vec<u8> = msgs.iter().flat_map(|m| m.encode()).collect();
        let (out, d) = decode_split(&stream, &cuts);
        prop_assert_eq!(&out, &msgs);
        prop_assert_eq!(d.dropped_bytes(), 0);
        prop_assert_eq!(d.bad_frames(), 0);

        // The push / next_message API gives the same.
        let mut d = DgtDecoder::new();
        for chunk in stream.chunks(7) {
            d.push(chunk);
        }
        let pulled: Vec<_> = std::iter::from_fn(|| d.next_message()).collect();
        prop_assert_eq!(pulled, msgs);
    }

    #[test]
    fn garbage_without_bit7_between_frames(
        msgs in proptest::collection::vec(
            (message(), proptest::collection::vec(0u8..0x80, 0..10)),
            0..12,
        ),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        let mut stream = Vec::new();
        let mut garbage = 0;
        for (m, g) in &msgs {
            stream.extend(g);
            garbage += g.len();
            stream.extend(m.encode());
        }
        let (out, d) = decode_split(&stream, &cuts);
        let expected: Vec<DgtMessage> = msgs.into_iter().map(|(m, _)| m).collect();
        prop_assert_eq!(out, expected);
        prop_assert_eq!(d.dropped_bytes(), garbage as u64);
    }

    #[test]
    fn random_bytes_never_panic_and_resync(
        bytes in proptest::collection::vec(any::<u8>(), 0..3000),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
        last in message(),
    ) {
        let (out, d) = decode_split(&bytes, &cuts);
        // Whatever was decoded re-encodes to a frame of the right shape.
        for m in &out {
            let frame = m.encode();
            prop_assert!(frame[0] & 0x80 != 0);
            prop_assert!(frame[1..].iter().all(|b| b & 0x80 == 0));
        }
        prop_assert!(d.dropped_bytes() <= bytes.len() as u64);
        // After any garbage, a complete valid frame is always decoded.
        let mut stream = bytes.clone();
        stream.extend(last.encode());
        let (out, _) = decode_split(&stream, &cuts);
        prop_assert_eq!(out.last(), Some(&last));
    }

    #[test]
    fn corrupted_frames_do_not_hide_later_frames(
        msgs in proptest::collection::vec(message(), 1..8),
        victim in any::<usize>(),
        cut_at in any::<usize>(),
    ) {
        // Truncate one frame (as a lost chunk would): every other frame still decodes.
        let victim = victim % msgs.len();
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            let frame = m.encode();
            if i == victim {
                stream.extend(&frame[..cut_at % frame.len()]);
            } else {
                stream.extend(frame);
                expected.push(m.clone());
            }
        }
        let (out, _) = decode_split(&stream, &[]);
        prop_assert_eq!(out, expected);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn bus_round_trip_split_anywhere(
        replies in proptest::collection::vec(bus_reply(vec![0, 1, 1025, 0x3FFF]), 0..12),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        let stream: Vec<u8> = replies.iter().flat_map(BusReply::encode).collect();
        let mut d = BusDecoder::new();
        let out = bus_split(&stream, &cuts, &mut d);
        prop_assert_eq!(&out, &replies);
        prop_assert_eq!((d.dropped_bytes(), d.bad_frames(), d.foreign_frames()), (0, 0, 0));
        prop_assert_eq!(d.ee_skipped_bytes(), 0);
        // The line's decoder gives one driver reply per frame, in order.
        let line = stream_split(&stream, &cuts, &mut BusLineStream::new());
        let expected: Vec<Message> = replies
            .iter()
            .map(|r| Message::Session(eboardd::driver::SessionMessage::Driver(r.driver_reply())))
            .collect();
        prop_assert_eq!(line, expected);
    }

    #[test]
    fn bus_garbage_without_bit7_between_frames(
        replies in proptest::collection::vec(
            (bus_reply(vec![7, 1025]), proptest::collection::vec(0u8..0x80, 0..10)),
            0..12,
        ),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        let mut stream = Vec::new();
        let mut garbage = 0;
        for (r, g) in &replies {
            stream.extend(g);
            garbage += g.len();
            stream.extend(r.encode());
        }
        let mut d = BusDecoder::new();
        let out = bus_split(&stream, &cuts, &mut d);
        let expected: Vec<BusReply> = replies.into_iter().map(|(r, _)| r).collect();
        prop_assert_eq!(out, expected);
        prop_assert_eq!((d.dropped_bytes(), d.bad_frames()), (garbage as u64, 0));
    }

    #[test]
    fn bus_stream_of_one_board_ignores_the_others(
        replies in proptest::collection::vec(bus_reply(vec![7, 1025]), 0..16),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
    ) {
        // A board's stream decodes the chain as it would decode its own frames alone.
        let stream: Vec<u8> = replies.iter().flat_map(BusReply::encode).collect();
        let own: Vec<u8> = replies
            .iter()
            .filter(|r| r.address() == 1025)
            .flat_map(BusReply::encode)
            .collect();
        let mut d = BusStream::new(1025);
        let out = stream_split(&stream, &cuts, &mut d);
        let mut alone = BusStream::new(1025);
        let expected = stream_split(&own, &[], &mut alone);
        prop_assert_eq!(out, expected);
        let others = replies.iter().filter(|r| r.address() != 1025).count();
        prop_assert_eq!(d.foreign_frames(), others as u64);
        prop_assert_eq!((d.dropped_bytes(), d.bad_frames()), (0, 0));
    }

    #[test]
    fn bus_random_bytes_never_panic_and_resync(
        bytes in proptest::collection::vec(any::<u8>(), 0..3000),
        cuts in proptest::collection::vec(any::<usize>(), 0..20),
        last in bus_reply(vec![1025]),
    ) {
        let mut d = BusDecoder::new();
        let out = bus_split(&bytes, &cuts, &mut d);
        // Whatever was decoded re-encodes to a frame that decodes to the same reply.
        for r in &out {
            let again = bus_split(&r.encode(), &[], &mut BusDecoder::new());
            prop_assert!(again.len() == 1 && same_reply(r, &again[0]), "{:?} → {:?}", r, again);
        }
        prop_assert!(d.dropped_bytes() <= bytes.len() as u64);
        // After any garbage, a complete valid frame is always decoded.
        let mut stream = bytes.clone();
        stream.extend(last.encode());
        let mut d = BusDecoder::new();
        let out = bus_split(&stream, &cuts, &mut d);
        prop_assert_eq!(out.last(), Some(&last));
        // The single-board decoder of the same bytes does not panic either.
        let _ = stream_split(&stream, &cuts, &mut BusStream::new(1025));
    }

    #[test]
    fn bus_corrupted_frames_do_not_hide_later_frames(
        replies in proptest::collection::vec(bus_reply(vec![1025]), 1..8),
        victim in any::<usize>(),
        cut_at in any::<usize>(),
        flip in 0u8..0x7F,
    ) {
        // Truncate one frame, or change one byte after its length bytes (bit 7 kept clear: the
        // checksum sees it): the others still decode and the victim never does.
        let victim = victim % replies.len();
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (i, r) in replies.iter().enumerate() {
            let mut frame = r.encode();
            if i == victim {
                if flip % 2 == 0 {
                    frame.truncate(cut_at % frame.len());
                } else {
                    let at = 3 + cut_at % (frame.len() - 3);
                    frame[at] = (frame[at] ^ (flip | 1)) & 0x7F;
                }
            } else {
                expected.push(r.clone());
            }
            stream.extend(frame);
        }
        let mut d = BusDecoder::new();
        let out = bus_split(&stream, &[], &mut d);
        prop_assert_eq!(out, expected);
    }
}

#[test]
fn buffered_frame_bound_covers_every_non_ee_message() {
    let long = DgtMessage::Trademark("x".repeat(10_000)).encode();
    assert!(long.len() <= MAX_BUFFERED_FRAME);
    let mut d = DgtDecoder::new();
    d.push(&long);
    assert!(
        matches!(d.next_message(), Some(DgtMessage::Trademark(t)) if t.len() == long.len() - 3)
    );
}

#[test]
fn sample_captures_decode_without_garbage() {
    use eboardd::capture::{RecordKind, read_capture};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/captures");
    let mut messages = 0;
    for sub in std::fs::read_dir(&dir).unwrap() {
        let sub = sub.unwrap().path();
        if !sub.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&sub).unwrap() {
            let f = f.unwrap().path();
            if f.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            let cap = read_capture(&f).unwrap();
            let mut d = DgtDecoder::new();
            let mut out = Vec::new();
            for r in &cap.records {
                if let RecordKind::Rx(bytes) = &r.kind {
                    d.decode(bytes, &mut out);
                }
            }
            assert_eq!(d.dropped_bytes(), 0, "{}", f.display());
            assert_eq!(d.bad_frames(), 0, "{}", f.display());
            assert!(matches!(out.first(), Some(DgtMessage::BoardDump(_))));
            // Re-encoding gives back the received bytes exactly.
            let rx: Vec<u8> = cap
                .records
                .iter()
                .filter_map(|r| match &r.kind {
                    RecordKind::Rx(b) => Some(b.clone()),
                    _ => None,
                })
                .flatten()
                .collect();
            let again: Vec<u8> = out.iter().flat_map(|m| m.encode()).collect();
            assert_eq!(again, rx, "{}", f.display());
            messages += out.len();
        }
    }
    assert!(messages > 10_000);
}
