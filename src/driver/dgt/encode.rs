//! Board→host frame encoding: what a DGT board would send (used by the simulator and tests).

use super::{ClockAck, DgtMessage, id, piece_code};
use crate::core::observation::{ClockFace, ClockReading};

/// EE_NOP filler byte of an EE_MOVES log (§1.6).
const EE_NOP: u8 = 0x7F;
/// EE_EOF, the last byte of every EE_MOVES dump (§1.6).
const EE_EOF: u8 = 0x6B;
/// Largest total length the 14-bit length field can carry.
const MAX_TOTAL_LEN: usize = 0x3FFF;

impl DgtMessage {
    /// The exact bytes a board sends for this message: header `0x80|id`, total length
    /// (header included) as two 7-bit bytes, then the payload (§1.1, §1.3, §2.1).
    ///
    /// Values that do not fit the wire format are clamped: clock times above 9:59:59 become
    /// 9:59:59, milliseconds are truncated to whole seconds, text is made 7-bit printable ASCII
    /// (other characters become `?`) and serial numbers are padded on the left with `0` or
    /// truncated to their fixed size. Payload bytes are masked to 7 bits.
    pub fn encode(&self) -> Vec<u8> {
        let (header, payload): (u8, Vec<u8>) = match self {
            DgtMessage::BoardDump(fields) => (
                id::BOARD_DUMP,
                fields.iter().map(|&r| piece_code(r)).collect(),
            ),
            DgtMessage::FieldUpdate { index, reading } => {
                (id::FIELD_UPDATE, vec![index & 0x3F, piece_code(*reading)])
            }
            DgtMessage::ClockTimes(reading) => (id::BWTIME, clock_payload(reading).to_vec()),
            DgtMessage::NoClock => (id::BWTIME, vec![0, 0, 0, 0, 0, 0, 0x20]),
            DgtMessage::ClockAck(ack) => (id::BWTIME, ack_payload(ack).to_vec()),
            DgtMessage::Version { major, minor } => (id::VERSION, vec![*major, *minor]),
            DgtMessage::SerialNumber(s) => (id::SERIAL_NUMBER, fixed_text(s, 5)),
            DgtMessage::LongSerialNumber(s) => (id::LONG_SERIAL_NUMBER, fixed_text(s, 10)),
            DgtMessage::BusAddress(a) => (
                id::BUS_ADDRESS,
                vec![((a >> 7) & 0x7F) as u8, (a & 0x7F) as u8],
            ),
            DgtMessage::Trademark(s) => {
                let mut text = ascii_text(s);
                text.truncate(super::MAX_TRADEMARK_PAYLOAD);
                (id::TRADEMARK, text)
            }
            DgtMessage::Battery(b) => {
                let mut raw = b.raw.clone();
                raw.truncate(super::MAX_BATTERY_PAYLOAD);
                (id::BATTERY, raw)
            }
            DgtMessage::EeMoves { len } => {
                let len = (*len).min(MAX_TOTAL_LEN - 3);
                let mut log = vec![EE_NOP; len];
                if let Some(last) = log.last_mut() {
                    *last = EE_EOF;
                }
                (id::EE_MOVES, log)
            }
        };
        frame(header, &payload)
    }
}

/// Wraps a payload into a board→host frame.
fn frame(header: u8, payload: &[u8]) -> Vec<u8> {
    let total = payload.len() + 3;
    let mut out = Vec::with_capacity(total);
    out.push(header);
    out.push(((total >> 7) & 0x7F) as u8);
    out.push((total & 0x7F) as u8);
    out.extend(payload.iter().map(|b| b & 0x7F));
    out
}

/// Binary value 0..=99 as two BCD digits.
fn bcd(v: u32) -> u8 {
    (((v / 10) << 4) | (v % 10)) as u8
}

/// Hours, BCD minutes and BCD seconds of one face; hours D4 = final flag, D6 = flag shown.
fn face_bytes(face: &ClockFace) -> [u8; 3] {
    let secs = (face.millis / 1000).min(9 * 3600 + 59 * 60 + 59);
    let hours = (secs / 3600) as u8
        | if face.flag { 0x10 } else { 0 }
        | if face.flag_shown { 0x40 } else { 0 };
    [hours, bcd(secs / 60 % 60), bcd(secs % 60)]
}

/// BWTIME payload carrying clock times (§2.1).
fn clock_payload(r: &ClockReading) -> [u8; 7] {
    let right = face_bytes(&r.right);
    let left = face_bytes(&r.left);
    let status = u8::from(r.running)
        | u8::from(r.right_side_up) << 1
        | u8::from(r.battery_low) << 2
        | u8::from(r.left_turn) << 3
        | u8::from(r.right_turn) << 4;
    [
        right[0], right[1], right[2], left[0], left[1], left[2], status,
    ]
}

/// BWTIME payload carrying a clock ack: the inverse of the §2.1 ack formula, with the 0x0A
/// marker nibble in p[0] and p[3].
fn ack_payload(a: &ClockAck) -> [u8; 7] {
    let hi = |b: u8, shift: u8| ((b >> 7) & 1) << shift;
    [
        0x0A | hi(a.ack2, 4) | hi(a.ack3, 5),
        a.ack0 & 0x7F,
        a.ack1 & 0x7F,
        0x0A | hi(a.ack0, 4) | hi(a.ack1, 5),
        a.ack2 & 0x7F,
        a.ack3 & 0x7F,
        0,
    ]
}

/// Printable 7-bit ASCII bytes of `s` (newline, carriage return and tab kept), others as `?`.
pub(super) fn ascii_text(s: &str) -> Vec<u8> {
    s.chars()
        .map(|c| match c {
            ' '..='~' | '\n' | '\r' | '\t' => c as u8,
            _ => b'?',
        })
        .collect()
}

/// Exactly `n` printable ASCII bytes: truncated, or padded on the left with `0`.
fn fixed_text(s: &str, n: usize) -> Vec<u8> {
    let mut text: Vec<u8> = ascii_text(s)
        .into_iter()
        .map(|b| {
            if b.is_ascii_graphic() || b == b' ' {
                b
            } else {
                b'?'
            }
        })
        .collect();
    text.truncate(n);
    let mut out = vec![b'0'; n - text.len()];
    out.extend(text);
    out
}

#[cfg(test)]
mod tests {
    use super::super::{BatteryStatus, face, hex, reading_from_code};
    use super::*;
    use crate::core::observation::{FieldArray, SquareReading};

    fn start_position() -> FieldArray {
        let codes = [
            8, 9, 10, 12, 11, 10, 9, 8, 7, 7, 7, 7, 7, 7, 7, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2,
            3, 4, 6, 5, 4, 3, 2,
        ];
        codes.map(|c| reading_from_code(c).unwrap())
    }

    #[test]
    fn piece_codes_round_trip() {
        for code in 0..=15u8 {
            let r = reading_from_code(code).unwrap();
            assert_eq!(piece_code(r), code);
        }
        assert_eq!(reading_from_code(16), None);
        assert_eq!(reading_from_code(0xFF), None);
    }

    #[test]
    fn version_vector() {
        let m = DgtMessage::Version { major: 3, minor: 1 };
        assert_eq!(m.encode(), hex("93 00 05 03 01"));
    }

    #[test]
    fn board_dump_vector() {
        let m = DgtMessage::BoardDump(Box::new(start_position()));
        let expected = hex("86 00 43 08 09 0A 0C 0B 0A 09 08 07 07 07 07 07 07 07 07 \
             0000000000000000000000000000000000000000000000000000000000000000 \
             01 01 01 01 01 01 01 01 02 03 04 06 05 04 03 02");
        assert_eq!(m.encode(), expected);
    }

    #[test]
    fn field_update_vectors() {
        let e2 = DgtMessage::FieldUpdate {
            index: 0x34,
            reading: SquareReading::Empty,
        };
        assert_eq!(e2.encode(), hex("8E 00 05 34 00"));
        let e4 = DgtMessage::FieldUpdate {
            index: 0x24,
            reading: reading_from_code(1).unwrap(),
        };
        assert_eq!(e4.encode(), hex("8E 00 05 24 01"));
    }

    #[test]
    fn bwtime_vectors() {
        let r = ClockReading {
            right: face(300_000),
            left: face(299_999),
            running: true,
            left_turn: true,
            ..Default::default()
        };
        // 4:59.999 is truncated to 4:59. The left face runs: status 0x09, as real clocks send.
        assert_eq!(
            DgtMessage::ClockTimes(r).encode(),
            hex("8D 00 0A 00 05 00 00 04 59 09")
        );

        let r = ClockReading {
            right: face(5_400_000),
            left: face(5_400_000),
            running: true,
            right_side_up: true,
            right_turn: true,
            ..Default::default()
        };
        // The right face runs: status 0x13 (running, lever, D4), as real clocks send.
        assert_eq!(
            DgtMessage::ClockTimes(r).encode(),
            hex("8d000a01300001300013")
        );

        let r = ClockReading {
            right: ClockFace {
                millis: 0,
                flag: true,
                flag_shown: false,
            },
            left: ClockFace {
                millis: 3_723_000,
                flag: false,
                flag_shown: true,
            },
            right_side_up: true,
            battery_low: true,
            ..Default::default()
        };
        // Hours D4 = final flag, D6 = flag shown.
        assert_eq!(
            DgtMessage::ClockTimes(r).encode(),
            hex("8D 00 0A 10 00 00 41 02 03 06")
        );
    }

    #[test]
    fn no_clock_vector() {
        assert_eq!(
            DgtMessage::NoClock.encode(),
            hex("8D 00 0A 00 00 00 00 00 00 20")
        );
    }

    #[test]
    fn clock_ack_vectors() {
        let version = ClockAck {
            ack0: 0x10,
            ack1: 0x09,
            ack2: 0x21,
            ack3: 0x00,
        };
        assert_eq!(
            DgtMessage::ClockAck(version).encode(),
            hex("8D 00 0A 0A 10 09 0A 21 00 00")
        );
        let button = ClockAck {
            ack0: 0x10,
            ack1: 0x88,
            ack2: 0x05,
            ack3: 0x31,
        };
        assert_eq!(
            DgtMessage::ClockAck(button).encode(),
            hex("8D 00 0A 0A 10 08 2A 05 31 00")
        );
        let high = ClockAck {
            ack0: 0x90,
            ack1: 0x00,
            ack2: 0x80,
            ack3: 0xFF,
        };
        assert_eq!(
            DgtMessage::ClockAck(high).encode(),
            hex("8D 00 0A 3A 10 00 1A 00 7F 00")
        );
    }

    #[test]
    fn text_and_misc_messages() {
        assert_eq!(
            DgtMessage::SerialNumber("137".into()).encode(),
            hex("91 00 08 30 30 31 33 37")
        );
        assert_eq!(
            DgtMessage::LongSerialNumber("3.250010001".into()).encode(),
            b"\xA2\x00\x0D3.25001000".to_vec()
        );
        assert_eq!(DgtMessage::BusAddress(1025).encode(), hex("90 00 05 08 01"));
        assert_eq!(
            DgtMessage::Trademark("DGT é".into()).encode(),
            b"\x92\x00\x08DGT ?".to_vec()
        );
        let battery = BatteryStatus::from_raw(hex("58 00 00 00 00 00 00 00 02"));
        assert_eq!(battery.percent, Some(88));
        assert_eq!(battery.charging, Some(false));
        assert_eq!(
            DgtMessage::Battery(battery).encode(),
            hex("A0 00 0C 58 00 00 00 00 00 00 00 02")
        );
        let ee = DgtMessage::EeMoves { len: 0x1F00 }.encode();
        assert_eq!(ee.len(), 7939);
        assert_eq!(&ee[..3], &[0x8F, 0x3E, 0x03]);
        assert_eq!(ee.last(), Some(&EE_EOF));
    }
}
