//! The seven payload bytes of a BWTIME message (`docs/dgt-protocol.md` §2.1), shared by the
//! single-board message `0x8D` and the bus reply `0x84` (§1.9): clock times, a clock ack, "no
//! clock", or the all-zero null message. Also the BCD digits the EE memory's time entries use
//! (§1.6).

use super::ClockAck;
use crate::core::observation::{ClockFace, ClockReading};

/// What a BWTIME payload carries (§2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BwTime {
    /// Both faces' times and the status byte.
    Times(ClockReading),
    /// Status bit D5: no clock is connected (the times are not valid).
    NoClock,
    /// A clock acknowledgement (the `0x0A` marker nibble in p0 or p3).
    Ack(ClockAck),
    /// All seven bytes zero: a null message, carrying nothing.
    Null,
}

impl BwTime {
    /// Interprets a BWTIME payload; `None` when it is not exactly 7 bytes or carries a face out
    /// of range (hours above 9, minutes or seconds not BCD 00–59).
    pub fn parse(p: &[u8]) -> Option<BwTime> {
        let p: &[u8; 7] = p.try_into().ok()?;
        if p.iter().all(|&b| b == 0) {
            return Some(BwTime::Null);
        }
        if p[0] & 0x0F == 0x0A || p[3] & 0x0F == 0x0A {
            return Some(BwTime::Ack(ClockAck {
                ack0: (p[1] & 0x7F) | ((p[3] << 3) & 0x80),
                ack1: (p[2] & 0x7F) | ((p[3] << 2) & 0x80),
                ack2: (p[4] & 0x7F) | ((p[0] << 3) & 0x80),
                ack3: (p[5] & 0x7F) | ((p[0] << 2) & 0x80),
            }));
        }
        let status = p[6];
        if status & 0x20 != 0 {
            return Some(BwTime::NoClock);
        }
        let right = face(&[p[0], p[1], p[2]])?;
        let left = face(&[p[3], p[4], p[5]])?;
        Some(BwTime::Times(ClockReading {
            left,
            right,
            running: status & 0x01 != 0,
            right_side_up: status & 0x02 != 0,
            battery_low: status & 0x04 != 0,
            // Real DGT 3000 traffic (§2.1): D3 = left face counting down (0x09), D4 = right
            // face counting down (0x13); the header's text has them the other way round.
            left_turn: status & 0x08 != 0,
            right_turn: status & 0x10 != 0,
        }))
    }

    /// The seven payload bytes a board sends for this (the inverse of [`BwTime::parse`] for
    /// values that fit: times above 9:59:59 become 9:59:59, milliseconds are truncated to whole
    /// seconds).
    pub fn payload(&self) -> [u8; 7] {
        match self {
            BwTime::Times(r) => clock_payload(r),
            BwTime::NoClock => [0, 0, 0, 0, 0, 0, 0x20],
            BwTime::Ack(a) => ack_payload(a),
            BwTime::Null => [0; 7],
        }
    }
}

/// One clock face from its hours byte and BCD minutes and seconds; `None` when out of range.
fn face(b: &[u8; 3]) -> Option<ClockFace> {
    let hours = u32::from(b[0] & 0x0F);
    if hours > 9 {
        return None;
    }
    let minutes = bcd(b[1])?;
    let seconds = bcd(b[2])?;
    Some(ClockFace {
        millis: ((hours * 60 + minutes) * 60 + seconds) * 1000,
        // D4: final flag, fallen and blocked at zero; D6: flag shown, the clock may go on.
        flag: b[0] & 0x10 != 0,
        flag_shown: b[0] & 0x40 != 0,
    })
}

/// A BCD value 00..=59 (tens in bits 4–6, units in bits 0–3); `None` otherwise.
pub(super) fn bcd(b: u8) -> Option<u32> {
    let (hi, lo) = (u32::from(b >> 4), u32::from(b & 0x0F));
    (hi <= 5 && lo <= 9).then_some(hi * 10 + lo)
}

/// Binary value 0..=99 as two BCD digits.
pub(super) fn to_bcd(v: u32) -> u8 {
    (((v / 10) << 4) | (v % 10)) as u8
}

/// Whole seconds of `millis`, at most 9:59:59 (the largest time the wire formats carry).
pub(super) fn clamped_secs(millis: u32) -> u32 {
    (millis / 1000).min(9 * 3600 + 59 * 60 + 59)
}

/// Hours, BCD minutes and BCD seconds of one face; hours D4 = final flag, D6 = flag shown.
fn face_bytes(face: &ClockFace) -> [u8; 3] {
    let secs = clamped_secs(face.millis);
    let hours = (secs / 3600) as u8
        | if face.flag { 0x10 } else { 0 }
        | if face.flag_shown { 0x40 } else { 0 };
    [hours, to_bcd(secs / 60 % 60), to_bcd(secs % 60)]
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
