//! Property tests of the DGT board→host codec: encode → decode round trips over arbitrary
//! splits, resynchronisation on garbage, and robustness against random bytes.

use eboardd::core::observation::{ClockFace, ClockReading, SquareReading};
use eboardd::protocol::dgt::{
    BatteryStatus, ClockAck, DgtDecoder, DgtMessage, MAX_BUFFERED_FRAME, reading_from_code,
};
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

/// Messages in their canonical form (what the decoder gives back for their encoding).
fn message() -> impl Strategy<Value = DgtMessage> {
    prop_oneof![
        proptest::array::uniform32(reading())
            .prop_flat_map(|a| (Just(a), proptest::array::uniform32(reading())))
            .prop_map(|(a, b)| {
                let mut fields = [SquareReading::Empty; 64];
                fields[..32].copy_from_slice(&a);
                fields[32..].copy_from_slice(&b);
                DgtMessage::BoardDump(Box::new(fields))
            }),
        (0u8..64, reading())
            .prop_map(|(index, reading)| DgtMessage::FieldUpdate { index, reading }),
        clock().prop_map(DgtMessage::ClockTimes),
        Just(DgtMessage::NoClock),
        any::<[u8; 4]>().prop_map(|a| DgtMessage::ClockAck(ClockAck {
            ack0: a[0],
            ack1: a[1],
            ack2: a[2],
            ack3: a[3],
        })),
        (0u8..128, 0u8..128).prop_map(|(major, minor)| DgtMessage::Version { major, minor }),
        "[ -~]{5}".prop_map(DgtMessage::SerialNumber),
        "[ -~]{10}".prop_map(DgtMessage::LongSerialNumber),
        (0u16..0x4000).prop_map(DgtMessage::BusAddress),
        "[ -~\n]{1,200}".prop_map(DgtMessage::Trademark),
        proptest::collection::vec(0u8..128, 1..=64)
            .prop_map(|raw| DgtMessage::Battery(BatteryStatus::from_raw(raw))),
        (1usize..8000).prop_map(|len| DgtMessage::EeMoves { len }),
    ]
}

/// Decodes `stream` fed in chunks ending at the given cut points.
fn decode_split(stream: &[u8], cuts: &[usize]) -> (Vec<DgtMessage>, DgtDecoder) {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    cuts.sort_unstable();
    let mut d = DgtDecoder::new();
    let mut out = Vec::new();
    let mut from = 0;
    for cut in cuts.into_iter().chain([stream.len()]) {
        d.decode(&stream[from..cut], &mut out);
        from = cut;
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
