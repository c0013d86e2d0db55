//! Board→host frame encoding: what a DGT board would send (used by the simulator and tests).

use super::{BwTime, DgtMessage, ee, id, piece_code};

/// Largest total length the 14-bit length field can carry.
const MAX_TOTAL_LEN: usize = 0x3FFF;

impl DgtMessage {
    /// The exact bytes a board sends for this message: header `0x80|id`, total length
    /// (header included) as two 7-bit bytes, then the payload (§1.1, §1.3, §2.1).
    ///
    /// Values that do not fit the wire format are clamped: clock times above 9:59:59 become
    /// 9:59:59, milliseconds are truncated to whole seconds, text is made 7-bit printable ASCII
    /// (other characters become `?`) and serial numbers are padded on the left with `0` or
    /// truncated to their fixed size. Payload bytes are masked to 7 bits. An EE_MOVES log is
    /// written entry by entry as given ([`ee::encode`]), cut after the last whole entry that
    /// fits the 14-bit length; an empty log is sent as a lone EE_EOF (a board's dump always
    /// ends with one, §1.6).
    pub fn encode(&self) -> Vec<u8> {
        let (header, payload): (u8, Vec<u8>) = match self {
            DgtMessage::BoardDump(fields) => (
                id::BOARD_DUMP,
                fields.iter().map(|&r| piece_code(r)).collect(),
            ),
            DgtMessage::FieldUpdate { index, reading } => {
                (id::FIELD_UPDATE, vec![index & 0x3F, piece_code(*reading)])
            }
            DgtMessage::ClockTimes(reading) => {
                (id::BWTIME, BwTime::Times(*reading).payload().to_vec())
            }
            DgtMessage::NoClock => (id::BWTIME, BwTime::NoClock.payload().to_vec()),
            DgtMessage::ClockAck(ack) => (id::BWTIME, BwTime::Ack(*ack).payload().to_vec()),
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
            DgtMessage::EeMoves { entries } => {
                let mut log = ee::encode_within(entries, MAX_TOTAL_LEN - 3);
                if log.is_empty() {
                    log.push(ee::EeTag::Eof.byte());
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
    use super::super::{BatteryStatus, ClockAck, EeEntry, EeTag, face, hex, reading_from_code};
    use super::*;
    use crate::core::observation::{ClockFace, ClockReading, FieldArray, SquareReading};

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
    }

    #[test]
    fn ee_moves_vectors() {
        // A board's dump: 0x1F00 bytes of memory, total 0x1F03 = 7939 (`3E 03`).
        let mut entries = vec![EeEntry::Tag(EeTag::Nop); 0x1F00 - 3];
        entries.push(EeEntry::Tag(EeTag::PowerUp));
        entries.push(EeEntry::Field {
            index: 60,
            reading: reading_from_code(5).unwrap(),
            quick: true,
        });
        let ee = DgtMessage::EeMoves { entries }.encode();
        assert_eq!(ee.len(), 7939);
        assert_eq!(&ee[..3], &[0x8F, 0x3E, 0x03]);
        assert_eq!(&ee[ee.len() - 4..], &[0x7F, 0x6A, 0x55, 60]);
        // An empty log is a lone EE_EOF; a too long one is cut after its last whole entry.
        let empty = DgtMessage::EeMoves { entries: vec![] }.encode();
        assert_eq!(empty, hex("8F 00 04 6B"));
        let long = vec![
            EeEntry::Time {
                side: crate::core::observation::ClockSide::Left,
                millis: 0,
            };
            6000
        ];
        let ee = DgtMessage::EeMoves { entries: long }.encode();
        assert_eq!(ee.len(), 3 + 5460 * 3);
        assert_eq!(&ee[..3], &[0x8F, 0x7F, 0x7F]);
    }
}
