//! The Chessnut driver: Chessnut Air, Air+, Pro and GO boards on Bluetooth LE, behind the
//! [`crate::driver::BoardDriver`] seam. The first family on a transport other than a serial
//! line: its [`Transport`] is the GATT profile ([`codec::PROFILE`]); the BLE port task
//! (`daemon::ble`) finds, connects and subscribes, and hands this driver each notification
//! with its characteristic ([`Decoder::notified`]) and writes its commands to the profile's
//! write characteristic.
//!
//! **A whole-position board.** The board sends its whole position about ten times a second,
//! also when nothing changes, and nothing when a piece is lifted or put down. A square's new
//! reading is taken once two frames in a row agree on it (a piece unseen for one frame — the
//! real frame in the tests shows a rook the board did not sense — is no move), then the
//! positions become square changes ([`PositionDiff`]); the first position is a board dump, and a
//! position that stood still for [`DUMP_AFTER_QUIET_FRAMES`] frames after a change is reported
//! once more as a whole board, from which the core recovers moves that fell between two
//! frames. What that costs touch-move is what it costs a Certabo board (`driver::certabo`),
//! at a tenth of a second instead of half a second.
//!
//! **A frame the link cut** (a 23-byte ATT MTU delivers 20 bytes of a 38-byte frame) is never a
//! position: it is a bad frame, counted, and the port task names the MTU
//! ([`ChessnutStream::truncated`]). A nibble of 13–15 is refused the same way.
//!
//! **Identity.** The protocol has no serial number and no version: the board is named after
//! its Bluetooth address, and its first whole frame answers the handshake
//! ([`SessionMessage::Answer`]).

pub mod codec;

use codec::{
    BATTERY_REQUEST, POSITION_CHAR, PROFILE, PositionFrame, REPLY_CHAR, START_STREAM,
    parse_battery, parse_position,
};

use crate::core::observation::FieldArray;
use crate::driver::positions::PositionDiff;
use crate::driver::{BatteryLevel, BoardDriver, Decoder, Message, SessionMessage, Transport};

/// The driver's name in capture headers and events (never change it: captures name it).
pub const NAME: &str = "chessnut";

/// Frames without a change after which the position is reported once more as a whole board
/// (about a second).
pub const DUMP_AFTER_QUIET_FRAMES: u32 = 10;

/// The Chessnut boards (Bluetooth LE; no clock).
#[derive(Debug, Clone, Copy, Default)]
pub struct Chessnut;

impl BoardDriver for Chessnut {
    fn name(&self) -> &'static str {
        NAME
    }

    fn transport(&self) -> Transport {
        Transport::Gatt(&PROFILE)
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(ChessnutStream::default())
    }

    /// `21 01 00`: the board streams no position before it; its first frame answers.
    fn handshake(&self) -> Vec<u8> {
        START_STREAM.to_vec()
    }

    /// The protocol has no serial number: the board is named after its Bluetooth address.
    fn reports_serial(&self) -> bool {
        false
    }

    /// Every LED off (the LEDs show nothing unless the arbiter asks for them).
    fn start(&self) -> Vec<u8> {
        codec::leds(&[])
    }

    /// Nothing: the board sends about ten frames a second unasked, so silence is a dead link.
    fn keepalive(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Nothing: every frame is the whole board.
    fn dump_request(&self) -> Vec<u8> {
        Vec::new()
    }

    /// `29 01 00`, answered `2a 02 <b> <c>` on the reply characteristic.
    fn battery_request(&self) -> Option<Vec<u8>> {
        Some(BATTERY_REQUEST.to_vec())
    }
}

/// The Chessnut decoder: notifications in, the core's observations and the session's messages
/// out (see the module's documentation for what it reports when).
#[derive(Debug, Default)]
pub struct ChessnutStream {
    positions: PositionDiff,
    /// The last frame's squares, as read.
    previous: Option<Box<FieldArray>>,
    /// The squares as accepted (two frames in a row agreed), once any were.
    accepted: Option<Box<FieldArray>>,
    answered: bool,
    unsettled: bool,
    quiet: u32,
    bad: u64,
    truncated: u64,
    dropped: u64,
    /// The length of the last frame the link cut, and the length it should have had.
    last_cut: Option<(usize, usize)>,
}

impl ChessnutStream {
    /// Position frames the link cut short (see [`ChessnutStream::last_cut`]).
    pub fn truncated(&self) -> u64 {
        self.truncated
    }

    /// The last cut frame: bytes received and bytes the frame has.
    pub fn last_cut(&self) -> Option<(usize, usize)> {
        self.last_cut
    }

    fn position(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        let fields = match parse_position(bytes) {
            PositionFrame::Position { fields, .. } => fields,
            PositionFrame::Truncated { got, needed } => {
                self.bad += 1;
                self.truncated += 1;
                self.last_cut = Some((got, needed));
                out.push(Message::Session(SessionMessage::Cut { got, needed }));
                return;
            }
            PositionFrame::Bad => {
                self.bad += 1;
                self.dropped += bytes.len() as u64;
                return;
            }
        };
        if !self.answered {
            self.answered = true;
            out.push(Message::Session(SessionMessage::Answer));
        } else {
            out.push(Message::Session(SessionMessage::Other));
        }
        let Some(previous) = self.previous.replace(fields.clone()) else {
            return;
        };
        let next: Box<FieldArray> = match &self.accepted {
            None => {
                // The first position needs two frames that agree on every square.
                if previous != fields {
                    return;
                }
                fields
            }
            Some(accepted) => {
                let mut next = accepted.clone();
                for (i, n) in next.iter_mut().enumerate() {
                    if previous[i] == fields[i] {
                        *n = fields[i];
                    }
                }
                next
            }
        };
        let changed = self.accepted.as_deref() != Some(&*next);
        if changed {
            self.unsettled = true;
            self.quiet = 0;
            self.positions.report(&next, out);
            self.accepted = Some(next);
        } else if self.unsettled {
            self.quiet += 1;
            if self.quiet >= DUMP_AFTER_QUIET_FRAMES {
                self.unsettled = false;
                self.positions.dump(&next, out);
            }
        }
    }

    fn reply(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        match parse_battery(bytes) {
            Some((percent, charging)) => {
                out.push(Message::Session(SessionMessage::Battery(BatteryLevel {
                    percent: Some(percent),
                    charging: Some(charging),
                })))
            }
            None => out.push(Message::Session(SessionMessage::Other)),
        }
    }
}

impl Decoder for ChessnutStream {
    /// Bytes with no characteristic (a capture's `rx`): a frame read by its first byte.
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        match bytes.first() {
            Some(&codec::POSITION_TAG) => self.position(bytes, out),
            Some(&codec::BATTERY_TAG) => self.reply(bytes, out),
            Some(_) => {
                self.bad += 1;
                self.dropped += bytes.len() as u64;
            }
            None => {}
        }
    }

    fn notified(&mut self, char: &str, bytes: &[u8], out: &mut Vec<Message>) {
        if char.eq_ignore_ascii_case(POSITION_CHAR) {
            self.position(bytes, out);
        } else if char.eq_ignore_ascii_case(REPLY_CHAR) {
            self.reply(bytes, out);
        } else {
            self.dropped += bytes.len() as u64;
        }
    }

    fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    fn bad_frames(&self) -> u64 {
        self.bad
    }
}

#[cfg(test)]
mod tests {
    use super::codec::encode_position;
    use super::*;
    use crate::core::observation::{Observation, SquareReading};

    fn start() -> Box<FieldArray> {
        let pos = shakmaty::Chess::default();
        let mut f = Box::new([SquareReading::Empty; 64]);
        for (sq, p) in shakmaty::Position::board(&pos).clone() {
            let i = (7 - sq.rank() as usize) * 8 + sq.file() as usize;
            f[i] = SquareReading::Piece(p);
        }
        f
    }

    fn feed(d: &mut ChessnutStream, fields: &FieldArray, n: usize) -> Vec<Message> {
        let mut out = Vec::new();
        for i in 0..n {
            d.notified(POSITION_CHAR, &encode_position(fields, i as u32), &mut out);
        }
        out.retain(|m| matches!(m, Message::Observation(_)));
        out
    }

    #[test]
    fn two_frames_that_agree_make_a_position_and_a_one_frame_flicker_is_no_move() {
        let mut d = ChessnutStream::default();
        let s = start();
        let out = feed(&mut d, &s, 2);
        assert_eq!(
            out,
            vec![Message::Observation(Observation::BoardDump(s.clone()))]
        );
        // e2 unseen for one frame, then back: nothing.
        let mut flicker = s.clone();
        flicker[52] = SquareReading::Empty;
        assert!(feed(&mut d, &flicker, 1).is_empty());
        assert!(feed(&mut d, &s, 3).is_empty());
        // e2-e4, held for two frames: e2 emptied, e4 filled; after a quiet second, a dump.
        let mut e4 = s.clone();
        e4[36] = e4[52];
        e4[52] = SquareReading::Empty;
        let out = feed(&mut d, &e4, 2);
        assert_eq!(out.len(), 2, "{out:?}");
        let out = feed(&mut d, &e4, DUMP_AFTER_QUIET_FRAMES as usize);
        assert_eq!(out, vec![Message::Observation(Observation::BoardDump(e4))]);
    }

    #[test]
    fn a_cut_frame_is_counted_never_read() {
        let mut d = ChessnutStream::default();
        let frame = encode_position(&start(), 0);
        let mut out = Vec::new();
        for _ in 0..3 {
            d.notified(POSITION_CHAR, &frame[..20], &mut out);
        }
        // Only the word that the link cut them: no observation, no answer.
        let cut = Message::Session(SessionMessage::Cut {
            got: 20,
            needed: 38,
        });
        assert_eq!(out, vec![cut; 3]);
        out.clear();
        assert_eq!(
            (d.bad_frames(), d.truncated(), d.last_cut()),
            (3, 3, Some((20, 38)))
        );
        d.notified(REPLY_CHAR, &[0x2a, 0x02, 0x80 | 64, 0x01], &mut out);
        assert_eq!(
            out,
            vec![Message::Session(SessionMessage::Battery(BatteryLevel {
                percent: Some(64),
                charging: Some(true)
            }))]
        );
    }
}
