//! Board→host frame decoding: a sans-IO, resynchronising byte-stream decoder (§1.1, §1.3, §5.3).

use std::collections::VecDeque;

use super::{
    BatteryStatus, BwTime, DgtMessage, MAX_BATTERY_PAYLOAD, MAX_TRADEMARK_PAYLOAD, ee, id,
    reading_from_code,
};
use crate::core::observation::{ClockReading, FieldArray, SquareReading};

/// Largest total length (header included) of a frame other than EE_MOVES the decoder keeps in
/// memory.
pub const MAX_BUFFERED_FRAME: usize = 3 + MAX_TRADEMARK_PAYLOAD;

/// Largest total length of an EE_MOVES frame (header included): what the 14-bit length field
/// can carry. A board's dump is `0x1F03` bytes (§1.6).
pub const MAX_EE_FRAME: usize = 0x3FFF;

/// Decodes the board→host byte stream into [`DgtMessage`]s.
///
/// Bytes may be split or joined anywhere. The decoder resynchronises on garbage: a byte without
/// bit 7 where a header is expected is dropped; a byte with bit 7 inside a frame aborts that
/// frame and starts a new one at that byte; frames with an unknown id, a wrong length or
/// implausible contents (bad BCD, field index > 63, piece code > 15 in a dump) are rejected.
/// An all-zero BWTIME payload is a null message and yields nothing. An EE_MOVES frame is
/// buffered whole and decoded into its EE entries ([`ee::parse`]; bytes that start no valid
/// entry are skipped and counted in [`DgtDecoder::ee_skipped_bytes`], the frame stays good).
/// Memory stays bounded: at most one frame is buffered, of at most [`MAX_EE_FRAME`] bytes for
/// EE_MOVES and [`MAX_BUFFERED_FRAME`] for every other message (plus the messages decoded by
/// [`DgtDecoder::push`] and not yet taken).
#[derive(Debug, Default)]
pub struct DgtDecoder {
    /// The frame being collected (header first).
    frame: Vec<u8>,
    /// Total length of the frame being collected, once its header is complete.
    expected: usize,
    /// Messages decoded by `push` and not yet returned by `next_message`.
    ready: VecDeque<DgtMessage>,
    /// Bytes thrown away.
    dropped: u64,
    /// Frames rejected or aborted.
    bad: u64,
    /// Bytes of EE_MOVES payloads that started no valid EE entry.
    ee_skipped: u64,
    /// Clock messages whose turn bits (D3/D4) disagree with the lever bit (D1) while running.
    status_mismatches: u64,
}

/// The outcome of checking a complete frame.
enum Parsed {
    Message(DgtMessage),
    /// An all-zero BWTIME: ignored without counting it as bad.
    Null,
    Bad,
}

impl DgtDecoder {
    /// A decoder waiting for the first header.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds received bytes; the decoded messages are then available from
    /// [`DgtDecoder::next_message`].
    pub fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if let Some(m) = self.step(b) {
                self.ready.push_back(m);
            }
        }
    }

    /// The next decoded message, oldest first.
    pub fn next_message(&mut self) -> Option<DgtMessage> {
        self.ready.pop_front()
    }

    /// Feeds received bytes and appends every message completed so far (including any still
    /// waiting from [`DgtDecoder::push`]) to `out`, in order.
    pub fn decode(&mut self, bytes: &[u8], out: &mut Vec<DgtMessage>) {
        out.extend(self.ready.drain(..));
        for &b in bytes {
            if let Some(m) = self.step(b) {
                out.push(m);
            }
        }
    }

    /// Forgets any partial frame and undelivered messages (e.g. after a reconnect). The
    /// counters are kept.
    pub fn reset(&mut self) {
        self.release_frame();
        self.expected = 0;
        self.ready.clear();
    }

    /// Whether no frame is being collected and no message waits: the bytes that follow read
    /// as a new decoder would read them (only the counters differ).
    pub fn at_rest(&self) -> bool {
        self.frame.is_empty() && self.ready.is_empty()
    }

    /// Number of bytes thrown away so far (garbage, aborted and rejected frames).
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// Number of frames rejected or aborted so far.
    pub fn bad_frames(&self) -> u64 {
        self.bad
    }

    /// Number of EE_MOVES payload bytes so far that started no valid EE entry (a cyclic memory
    /// may begin inside an entry that was partly overwritten, §1.6).
    pub fn ee_skipped_bytes(&self) -> u64 {
        self.ee_skipped
    }

    /// Empties the frame buffer, giving back the memory of a long EE_MOVES frame.
    fn release_frame(&mut self) {
        if self.frame.capacity() > MAX_BUFFERED_FRAME {
            self.frame = Vec::new();
        } else {
            self.frame.clear();
        }
    }

    /// Processes one byte.
    fn step(&mut self, b: u8) -> Option<DgtMessage> {
        if self.frame.is_empty() {
            return self.start(b);
        }
        if b & 0x80 != 0 {
            self.abort(self.frame.len() as u64);
            return self.start(b);
        }
        self.frame.push(b);
        if self.frame.len() == 3 {
            let total = usize::from(self.frame[1]) << 7 | usize::from(self.frame[2]);
            if !length_ok(self.frame[0], Some(total)) {
                self.abort(3);
                return None;
            }
            self.expected = total;
        }
        if self.frame.len() < 3 || self.frame.len() < self.expected {
            return None;
        }
        let parsed = if self.frame[0] == id::EE_MOVES {
            let log = ee::parse(&self.frame[3..]);
            self.ee_skipped += log.skipped_bytes as u64;
            Parsed::Message(DgtMessage::EeMoves {
                entries: log.entries,
            })
        } else {
            parse(self.frame[0], &self.frame[3..])
        };
        let len = self.frame.len() as u64;
        self.release_frame();
        match parsed {
            Parsed::Message(m) => {
                if let DgtMessage::ClockTimes(r) = &m {
                    self.check_status(r);
                }
                Some(m)
            }
            Parsed::Null => None,
            Parsed::Bad => {
                self.abort(len);
                None
            }
        }
    }

    /// Real DGT 3000s set the turn bit of the running face's side together with the lever bit;
    /// a clock that does otherwise is logged once (the lever decides, as in the recordings).
    fn check_status(&mut self, r: &ClockReading) {
        if crate::core::clock::turn_bits_disagree(r) {
            self.status_mismatches += 1;
            if self.status_mismatches == 1 {
                tracing::warn!(
                    left_turn = r.left_turn,
                    right_turn = r.right_turn,
                    right_side_up = r.right_side_up,
                    "clock status: turn bits disagree with the lever; the lever decides which face runs"
                );
            }
        }
    }

    /// Clock messages whose turn bits disagreed with the lever bit while the clock ran.
    pub fn status_mismatches(&self) -> u64 {
        self.status_mismatches
    }

    /// A byte where a header is expected.
    fn start(&mut self, b: u8) -> Option<DgtMessage> {
        if b & 0x80 == 0 {
            self.dropped += 1;
        } else if length_ok(b, None) {
            self.frame.push(b);
        } else {
            self.abort(1);
        }
        None
    }

    /// Throws away the current frame (`n` bytes) and counts it as bad.
    fn abort(&mut self, n: u64) {
        self.dropped += n;
        self.bad += 1;
        self.release_frame();
        self.expected = 0;
    }
}

/// Whether `header` is a known id and, when given, `total` a valid total length for it.
fn length_ok(header: u8, total: Option<usize>) -> bool {
    let range = match header {
        id::BOARD_DUMP => 67..=67,
        id::BWTIME => 10..=10,
        id::FIELD_UPDATE => 5..=5,
        // A dump always ends with EE_EOF (§1.6): at least one payload byte.
        id::EE_MOVES => 4..=MAX_EE_FRAME,
        id::BUS_ADDRESS => 5..=5,
        // 5 digits; old boards send a 12-byte frame (digits padded with NULs or spaces).
        id::SERIAL_NUMBER => 8..=15,
        id::TRADEMARK => 4..=3 + MAX_TRADEMARK_PAYLOAD,
        id::VERSION => 5..=5,
        id::BATTERY => 4..=3 + MAX_BATTERY_PAYLOAD,
        id::LONG_SERIAL_NUMBER => 13..=13,
        _ => return false,
    };
    total.is_none_or(|t| range.contains(&t))
}

/// Checks and interprets the payload of a complete frame with a valid header.
fn parse(header: u8, p: &[u8]) -> Parsed {
    let msg = match header {
        id::BOARD_DUMP => {
            let mut fields: FieldArray = [SquareReading::Empty; 64];
            for (f, &code) in fields.iter_mut().zip(p) {
                match reading_from_code(code) {
                    Some(r) => *f = r,
                    None => return Parsed::Bad,
                }
            }
            DgtMessage::BoardDump(Box::new(fields))
        }
        id::FIELD_UPDATE => {
            // Bits 4..6 of the piece byte are reserved (§1.5): mask them off.
            match (p[0], reading_from_code(p[1] & 0x0F)) {
                (index @ 0..=63, Some(reading)) => DgtMessage::FieldUpdate { index, reading },
                _ => return Parsed::Bad,
            }
        }
        id::BWTIME => return parse_bwtime(p),
        id::VERSION => DgtMessage::Version {
            major: p[0],
            minor: p[1],
        },
        id::SERIAL_NUMBER | id::LONG_SERIAL_NUMBER => {
            // Padding after the digits of old boards' longer SERIALNR frames is dropped.
            let text = match header {
                id::SERIAL_NUMBER if p.len() > 5 => {
                    let end = p
                        .iter()
                        .rposition(|&b| b != 0 && b != b' ')
                        .map_or(0, |i| i + 1);
                    &p[..end]
                }
                _ => p,
            };
            if text.is_empty() || !text.iter().all(|&b| (b' '..=b'~').contains(&b)) {
                return Parsed::Bad;
            }
            let s = text.iter().map(|&b| char::from(b)).collect();
            if header == id::SERIAL_NUMBER {
                DgtMessage::SerialNumber(s)
            } else {
                DgtMessage::LongSerialNumber(s)
            }
        }
        id::BUS_ADDRESS => DgtMessage::BusAddress(u16::from(p[0]) << 7 | u16::from(p[1])),
        id::TRADEMARK => DgtMessage::Trademark(p.iter().map(|&b| char::from(b)).collect()),
        id::BATTERY => DgtMessage::Battery(BatteryStatus::from_raw(p.to_vec())),
        _ => return Parsed::Bad,
    };
    Parsed::Message(msg)
}

/// Interprets a BWTIME payload: clock ack, no clock, clock times or null (§2.1).
fn parse_bwtime(p: &[u8]) -> Parsed {
    match BwTime::parse(p) {
        Some(BwTime::Times(r)) => Parsed::Message(DgtMessage::ClockTimes(r)),
        Some(BwTime::NoClock) => Parsed::Message(DgtMessage::NoClock),
        Some(BwTime::Ack(a)) => Parsed::Message(DgtMessage::ClockAck(a)),
        Some(BwTime::Null) => Parsed::Null,
        None => Parsed::Bad,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::dgt::{ClockAck, face, hex, piece_code};

    fn decode_all(bytes: &[u8]) -> (Vec<DgtMessage>, DgtDecoder) {
        let mut d = DgtDecoder::new();
        let mut out = Vec::new();
        d.decode(bytes, &mut out);
        (out, d)
    }

    fn one(bytes: &str) -> DgtMessage {
        let (out, d) = decode_all(&hex(bytes));
        assert_eq!(d.dropped_bytes(), 0, "{bytes}");
        assert_eq!(out.len(), 1, "{bytes}");
        out.into_iter().next().unwrap()
    }

    fn nothing(bytes: &str) -> DgtDecoder {
        let (out, d) = decode_all(&hex(bytes));
        assert!(out.is_empty(), "{bytes}: {out:?}");
        d
    }

    const START_DUMP: &str = "86 00 43 08 09 0A 0C 0B 0A 09 08 07 07 07 07 07 07 07 07 \
        0000000000000000000000000000000000000000000000000000000000000000 \
        01 01 01 01 01 01 01 01 02 03 04 06 05 04 03 02";

    #[test]
    fn version_vector() {
        assert_eq!(
            one("93 00 05 03 01"),
            DgtMessage::Version { major: 3, minor: 1 }
        );
    }

    #[test]
    fn start_position_dump() {
        let DgtMessage::BoardDump(fields) = one(START_DUMP) else {
            panic!("not a dump");
        };
        let codes: Vec<u8> = fields.iter().map(|&r| piece_code(r)).collect();
        assert_eq!(codes, hex(START_DUMP)[3..]);
        // a1 = field 56 is a white rook, e8 = field 4 the black king.
        assert_eq!(piece_code(fields[56]), 2);
        assert_eq!(piece_code(fields[4]), 11);
    }

    #[test]
    fn field_updates_in_both_orders() {
        let e2_empty = DgtMessage::FieldUpdate {
            index: 0x34,
            reading: SquareReading::Empty,
        };
        let e4_pawn = DgtMessage::FieldUpdate {
            index: 0x24,
            reading: reading_from_code(1).unwrap(),
        };
        let (out, _) = decode_all(&hex("8E 00 05 34 00 8E 00 05 24 01"));
        assert_eq!(out, vec![e2_empty.clone(), e4_pawn.clone()]);
        let (out, _) = decode_all(&hex("8E 00 05 24 01 8E 00 05 34 00"));
        assert_eq!(out, vec![e4_pawn, e2_empty]);
    }

    #[test]
    fn bwtime_vector() {
        // Bytes of a real DGT 3000 (shared corpus, arnsholt/dgtdriver recording): the left face
        // counts down from 3:02 to 3:01 with status 0x09; hours D5 (time per move) is set.
        let expected = ClockReading {
            right: face(182_000),
            left: face(181_000),
            running: true,
            left_turn: true,
            ..Default::default()
        };
        assert_eq!(
            one("8d 00 0a 20 03 02 20 03 01 09"),
            DgtMessage::ClockTimes(expected)
        );
        // The right face counting down: status 0x13 (running, lever D1, turn D4).
        let DgtMessage::ClockTimes(r) = one("8d 00 0a 20 02 59 20 03 01 13") else {
            panic!()
        };
        assert_eq!((r.right.millis, r.left.millis), (179_000, 181_000));
        assert!(r.running && r.right_turn && !r.left_turn && r.right_side_up);
        // Hours D4 = final flag, D6 = flag shown; status D2 = low battery.
        let DgtMessage::ClockTimes(r) = one("8D 00 0A 10 00 00 41 02 03 06") else {
            panic!()
        };
        assert!(r.right.flag && !r.right.flag_shown);
        assert!(r.left.flag_shown && !r.left.flag);
        assert!(r.right_side_up && r.battery_low);
        assert_eq!(r.left.millis, 3_723_000);
    }

    #[test]
    fn clock_ack_vectors() {
        assert_eq!(
            one("8D 00 0A 0A 10 09 0A 21 00 00"),
            DgtMessage::ClockAck(ClockAck {
                ack0: 0x10,
                ack1: 0x09,
                ack2: 0x21,
                ack3: 0x00
            })
        );
        assert_eq!(
            one("8D 00 0A 0A 10 08 2A 05 31 00"),
            DgtMessage::ClockAck(ClockAck {
                ack0: 0x10,
                ack1: 0x88,
                ack2: 0x05,
                ack3: 0x31
            })
        );
    }

    #[test]
    fn no_clock_and_null_bwtime() {
        assert_eq!(one("8D 00 0A 00 00 00 00 00 00 20"), DgtMessage::NoClock);
        // Times are not valid with D5 set: not checked.
        assert_eq!(one("8D 00 0A 0F 7F 7F 00 00 00 20"), DgtMessage::NoClock);
        let d = nothing("8D 00 0A 00 00 00 00 00 00 00");
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (0, 0));
    }

    #[test]
    fn bcd_validation() {
        for bad in [
            "8D 00 0A 00 5A 00 00 04 59 09", // minutes 0x5A
            "8D 00 0A 00 60 00 00 04 59 09", // minutes 60
            "8D 00 0A 00 05 00 00 04 0A 09", // seconds 0x0A
            "8D 00 0A 0B 05 00 00 04 59 09", // hours 11
            "8D 00 0A 00 05 00 0F 04 59 09", // hours 15
        ] {
            let d = nothing(bad);
            assert_eq!((d.dropped_bytes(), d.bad_frames()), (10, 1), "{bad}");
        }
    }

    #[test]
    fn battery_by_header_length() {
        let DgtMessage::Battery(b) = one("A0 00 0C 58 00 00 00 00 00 00 00 03") else {
            panic!()
        };
        assert_eq!(
            (b.percent, b.charging, b.raw.len()),
            (Some(88), Some(true), 9)
        );
        let DgtMessage::Battery(b) = one("A0 00 0A 64 7F 7F 01 02 03 04") else {
            panic!()
        };
        assert_eq!((b.percent, b.charging, b.raw.len()), (Some(100), None, 7));
        let DgtMessage::Battery(b) = one("A0 00 04 70") else {
            panic!()
        };
        assert_eq!(b.percent, None);
    }

    #[test]
    fn serials_trademark_bus_address() {
        assert_eq!(
            one("91 00 08 30 30 31 33 37"),
            DgtMessage::SerialNumber("00137".into())
        );
        assert_eq!(
            one("A2 00 0D 33 2E 32 35 30 30 31 30 30 30"),
            DgtMessage::LongSerialNumber("3.25001000".into())
        );
        assert_eq!(one("90 00 05 08 01"), DgtMessage::BusAddress(1025));
        assert_eq!(
            one("92 00 07 44 47 54 0A"),
            DgtMessage::Trademark("DGT\n".into())
        );
        nothing("91 00 08 30 30 01 33 37");
        // Old boards: a 12-byte frame, the digits padded with NULs (or spaces).
        assert_eq!(
            one("91 00 0C 31 30 30 30 31 00 00 00 00"),
            DgtMessage::SerialNumber("10001".into())
        );
        assert_eq!(
            one("91 00 0C 30 30 31 33 37 20 20 20 20"),
            DgtMessage::SerialNumber("00137".into())
        );
        nothing("91 00 0C 00 00 00 00 00 00 00 00 00");
        nothing("91 00 10 30 30 31 33 37 30 30 31 33 37 30 30 31");
    }

    #[test]
    fn field_update_checks() {
        // Reserved bits 4..6 of the piece byte are masked off.
        assert_eq!(
            one("8E 00 05 3F 71"),
            DgtMessage::FieldUpdate {
                index: 63,
                reading: reading_from_code(1).unwrap()
            }
        );
        let d = nothing("8E 00 05 40 01");
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (5, 1));
        let mut dump = hex(START_DUMP);
        dump[10] = 0x10;
        let (out, d) = decode_all(&dump);
        assert!(out.is_empty());
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (67, 1));
    }

    #[test]
    fn wrong_lengths_and_unknown_ids() {
        for bad in [
            "8E 00 06 34 00 00",
            "8D 00 09 00 05 00 00 04 59",
            "93 00 04 03",
            "91 00 07 30 30 31 33",
            "91 00 10 30 30 31 33 37 30 30 31 33 37 30 30 31",
            "A2 00 0C 30 30 30 30 30 30 30 30 30",
            "90 00 04 08",
            "86 00 42 00",
            "A0 00 03",
            "8F 00 03",
            "92 7F 7F 41",
        ] {
            let mut bytes = hex(bad);
            let expect = one("93 00 05 03 01");
            bytes.extend(hex("93 00 05 03 01"));
            let (out, d) = decode_all(&bytes);
            assert_eq!(out, vec![expect], "{bad}");
            assert_eq!(d.dropped_bytes() as usize, bytes.len() - 5, "{bad}");
            assert!(d.bad_frames() >= 1, "{bad}");
        }
        for unknown in ["81 00 05 01 02", "94 00 35", "FF 00 05 00 00"] {
            let d = nothing(unknown);
            assert_eq!(d.bad_frames(), 1, "{unknown}");
        }
    }

    #[test]
    fn resync_on_garbage_and_bit7_in_payload() {
        // Garbage without bit 7 before a frame is dropped byte by byte.
        let (out, d) = decode_all(&hex("00 7F 12 93 00 05 03 01"));
        assert_eq!(out.len(), 1);
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (3, 0));
        // A header byte inside a payload aborts the frame and restarts there.
        let (out, d) = decode_all(&hex("8E 00 05 34 93 00 05 03 01"));
        assert_eq!(out, vec![DgtMessage::Version { major: 3, minor: 1 }]);
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (4, 1));
        // ... also inside the length bytes.
        let (out, d) = decode_all(&hex("8E 93 00 05 03 01"));
        assert_eq!(out.len(), 1);
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (1, 1));
    }

    #[test]
    fn split_anywhere() {
        let mut stream = hex(START_DUMP);
        stream.extend(hex(
            "8E 00 05 34 00 8D 00 0A 0A 10 09 0A 21 00 00 93 00 05 03 01",
        ));
        let (whole, _) = decode_all(&stream);
        assert_eq!(whole.len(), 4);
        for chunk in 1..8 {
            let mut d = DgtDecoder::new();
            for piece in stream.chunks(chunk) {
                d.push(piece);
            }
            let got: Vec<_> = std::iter::from_fn(|| d.next_message()).collect();
            assert_eq!(got, whole, "chunk {chunk}");
            assert_eq!(d.dropped_bytes(), 0);
        }
    }

    #[test]
    fn ee_moves_buffered_and_decoded() {
        use crate::core::observation::{MemoryEntry, Observation};
        use crate::driver::dgt::{EeEntry, EeTag, to_observation};
        // 8F 00 0D: three NOPs, power-up, a white king on field 60, quick; a left-face time
        // 0:59:59; EE_EOF.
        let msg = one("8F 00 0D 7F 7F 7F 6A 55 3C 70 59 59 6B");
        let entries = vec![
            EeEntry::Tag(EeTag::Nop),
            EeEntry::Tag(EeTag::Nop),
            EeEntry::Tag(EeTag::Nop),
            EeEntry::Tag(EeTag::PowerUp),
            EeEntry::Field {
                index: 60,
                reading: reading_from_code(5).unwrap(),
                quick: true,
            },
            EeEntry::Time {
                side: crate::core::observation::ClockSide::Left,
                millis: 3_599_000,
            },
            EeEntry::Tag(EeTag::Eof),
        ];
        assert_eq!(
            msg,
            DgtMessage::EeMoves {
                entries: entries.clone()
            }
        );
        let Some(Observation::Memory(memory)) = to_observation(&msg) else {
            panic!("no memory observation");
        };
        assert_eq!(memory.len(), 3);
        assert!(
            matches!(&memory[0], MemoryEntry::Board(b) if b.iter().all(|r| *r == SquareReading::Empty))
        );

        // A whole dump (0x1F03 bytes) in chunks, then a VERSION: the buffer is given back.
        let ee = DgtMessage::EeMoves {
            entries: vec![EeEntry::Tag(EeTag::Nop); 0x1F00],
        }
        .encode();
        assert_eq!(ee.len(), 0x1F03);
        let mut stream = ee.clone();
        stream.extend(hex("93 00 05 03 01"));
        let mut d = DgtDecoder::new();
        let mut out = Vec::new();
        for piece in stream.chunks(100) {
            d.decode(piece, &mut out);
            assert!(d.frame.capacity() <= MAX_EE_FRAME);
        }
        assert!(d.frame.capacity() <= MAX_BUFFERED_FRAME);
        assert_eq!(out.len(), 2);
        assert!(matches!(&out[0], DgtMessage::EeMoves { entries } if entries.len() == 0x1F00));
        assert_eq!(out[1], DgtMessage::Version { major: 3, minor: 1 });
        // A header byte inside the dump aborts it.
        let mut cut = ee[..100].to_vec();
        cut.extend(hex("93 00 05 03 01"));
        let (out, d) = decode_all(&cut);
        assert_eq!(out, vec![DgtMessage::Version { major: 3, minor: 1 }]);
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (100, 1));
        // Bytes that start no entry are skipped and counted; the frame stays good.
        let (out, d) = decode_all(&hex("8F 00 07 01 3F 45 3C"));
        assert_eq!(
            out,
            vec![DgtMessage::EeMoves {
                entries: vec![EeEntry::Field {
                    index: 60,
                    reading: reading_from_code(5).unwrap(),
                    quick: false
                }]
            }]
        );
        assert_eq!((d.bad_frames(), d.ee_skipped_bytes()), (0, 2));
    }

    #[test]
    fn push_then_decode_keeps_order() {
        let mut d = DgtDecoder::new();
        d.push(&hex("93 00 05 03 01"));
        let mut out = Vec::new();
        d.decode(&hex("93 00 05 03 02"), &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0], DgtMessage::Version { major: 3, minor: 1 });
        assert_eq!(d.next_message(), None);
        d.push(&hex("93 00"));
        d.reset();
        d.push(&hex("05 03 01"));
        assert_eq!(d.next_message(), None);
    }
}
