//! [`Millennium`]: ChessLink boards behind the [`BoardDriver`] seam. Line 38400 7O1, handshake
//! `V` (version; the protocol has no serial number: the board is named after its port), then
//! `W0203` (a status on every change), `R02` and `S` (the whole board) once it has answered.
//!
//! The board reports whole positions, never square changes: [`MillenniumStream`] keeps the last
//! status and turns each new one into the core's observations. The first status of a stream,
//! and the first one after an `r` reply, is an [`Observation::BoardDump`]; every other one gives
//! one [`Observation::Field`] per square that differs from the last status (the squares that
//! emptied first, then the others, each in field order). The board request is `R02` followed by
//! `S`: the `r` reply marks the status that answers it in the received bytes alone, so replay
//! decodes a capture exactly as the live session did. ChessLink order is a8, b8 … h8, a7 … h1,
//! which is the core's device numbering (0 = a8 … 63 = h1) unchanged. The square changes come
//! from the helper every whole-position family shares, [`PositionDiff`].
//!
//! [`Observation::BoardDump`]: crate::core::observation::Observation::BoardDump
//! [`Observation::Field`]: crate::core::observation::Observation::Field

use super::codec::{
    AUTO_REPORT_ON_CHANGE, ChessLinkCommand, ChessLinkDecoder, ChessLinkReply, E2_AUTO_REPORT,
};
use crate::core::observation::FieldArray;
use crate::driver::positions::PositionDiff;
use crate::driver::{
    BoardDriver, Decoder, LineSettings, Message, Parity, SessionMessage, Transport, UsbId,
};

/// The driver's name in capture headers and events (never change it: captures name it).
pub const NAME: &str = "millennium";

/// The USB ids tried for ChessLink boards. No driver we could read matches ids: python-mchess
/// and picochess (the drivers that have met real boards) open every serial port and probe it
/// with `V`. The
/// ChessLink USB module and the eONE reach the host through a USB-serial bridge, so the ids
/// are those of the common bridge chips, all `generic`: served only after the handshake finds
/// a ChessLink board behind them (a DGT board behind an FTDI chip is found by the DGT driver's
/// own probe). Unconfirmed against real hardware: configure the port (`millennium:/dev/…`)
/// when discovery does not find the board.
static USB_IDS: [UsbId; 2] = [
    UsbId {
        vid: 0x10c4,
        pid: Some(0xea60),
        generic: true,
        name: "Silicon Labs CP210x (Millennium ChessLink?)",
    },
    UsbId {
        vid: 0x1a86,
        pid: Some(0x7523),
        generic: true,
        name: "WCH CH340 (Millennium ChessLink?)",
    },
];

/// The Millennium ChessLink boards (ChessGenius Exclusive with ChessLink, eONE). No clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct Millennium;

fn encode(cmds: &[ChessLinkCommand]) -> Vec<u8> {
    cmds.iter().flat_map(ChessLinkCommand::encode).collect()
}

/// The board request: `R02` (its `r` reply marks the next status as the whole board) and `S`.
fn board_request() -> Vec<u8> {
    encode(&[
        ChessLinkCommand::Read {
            address: E2_AUTO_REPORT,
        },
        ChessLinkCommand::Status,
    ])
}

impl BoardDriver for Millennium {
    fn name(&self) -> &'static str {
        NAME
    }

    fn transport(&self) -> Transport {
        Transport::Serial {
            line: LineSettings {
                baud: 38400,
                data_bits: 7,
                parity: Parity::Odd,
                stop_bits: 1,
            },
            usb_ids: &USB_IDS,
        }
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(MillenniumStream::default())
    }

    fn handshake(&self) -> Vec<u8> {
        ChessLinkCommand::Version.encode()
    }

    fn reports_serial(&self) -> bool {
        false
    }

    fn start(&self) -> Vec<u8> {
        let mut v = ChessLinkCommand::Write {
            address: E2_AUTO_REPORT,
            value: AUTO_REPORT_ON_CHANGE,
        }
        .encode();
        v.extend(board_request());
        v
    }

    fn keepalive(&self) -> Vec<u8> {
        ChessLinkCommand::Version.encode()
    }

    fn dump_request(&self) -> Vec<u8> {
        board_request()
    }
}

/// The ChessLink decoder speaking [`Message`]s: whole-board statuses become a board dump or
/// the changed squares.
#[derive(Debug, Default)]
pub struct MillenniumStream {
    decoder: ChessLinkDecoder,
    replies: Vec<ChessLinkReply>,
    /// The last status, and the square changes to the next one.
    positions: PositionDiff,
    /// An `r` reply came: the next status answers a board request.
    board_asked: bool,
}

impl MillenniumStream {
    fn status(&mut self, fields: Box<FieldArray>, out: &mut Vec<Message>) {
        if std::mem::take(&mut self.board_asked) {
            self.positions.dump(&fields, out);
        } else {
            self.positions.report(&fields, out);
        }
    }
}

impl Decoder for MillenniumStream {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        self.decoder.decode(bytes, &mut self.replies);
        let replies = std::mem::take(&mut self.replies);
        for reply in replies {
            match reply {
                ChessLinkReply::Status(fields) => self.status(fields, out),
                ChessLinkReply::Version { major, minor } => {
                    out.push(Message::Session(SessionMessage::Version { major, minor }))
                }
                ChessLinkReply::Read { .. } => {
                    self.board_asked = true;
                    out.push(Message::Session(SessionMessage::Other));
                }
                _ => out.push(Message::Session(SessionMessage::Other)),
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

#[cfg(test)]
mod tests {
    use super::super::codec::reading_of;
    use super::*;
    use crate::core::observation::{Observation, SquareReading};

    fn board(text: &str) -> Box<FieldArray> {
        let mut f = [SquareReading::Empty; 64];
        for (f, c) in f.iter_mut().zip(text.bytes()) {
            *f = reading_of(c).unwrap();
        }
        Box::new(f)
    }

    const START: &str = "rnbqkbnrpppppppp................................PPPPPPPPRNBQKBNR";
    const E4: &str = "rnbqkbnrpppppppp....................P...........PPPP.PPPRNBQKBNR";

    fn status(text: &str) -> Vec<u8> {
        ChessLinkReply::Status(board(text)).encode()
    }

    fn chars(bytes: &[u8]) -> Vec<u8> {
        bytes.iter().map(|b| b & 0x7F).collect()
    }

    #[test]
    fn session_bytes_are_the_documented_commands() {
        assert_eq!(chars(&Millennium.handshake()), b"V56");
        assert_eq!(chars(&Millennium.handshake_retry()), b"V56");
        assert!(Millennium.battery_request().is_none());
        assert_eq!(chars(&Millennium.keepalive()), b"V56");
        // R ^ 0 ^ 2 = 0x52 ^ 0x30 ^ 0x32 = 0x50; S = 0x53.
        assert_eq!(chars(&Millennium.dump_request()), b"R0250S53");
        assert_eq!(chars(&Millennium.start()), b"W020356R0250S53");
        let line = Millennium.transport().line().unwrap();
        assert_eq!(
            (line.baud, line.data_bits, line.parity),
            (38400, 7, Parity::Odd)
        );
        assert!(!Millennium.reports_serial());
        assert!(Millennium.transport().usb_ids().iter().all(|u| u.generic));
    }

    #[test]
    fn first_status_is_a_dump_then_changed_squares_emptied_first() {
        let mut d = Millennium.decoder();
        let mut out = Vec::new();
        d.decode(&status(START), &mut out);
        assert_eq!(
            out,
            vec![Message::Observation(Observation::BoardDump(board(START)))]
        );
        out.clear();
        d.decode(&status(E4), &mut out);
        // e2 (field 52) emptied, then e4 (field 36) filled.
        let field = |index, reading| Message::Observation(Observation::Field { index, reading });
        assert_eq!(
            out,
            vec![field(52, SquareReading::Empty), field(36, board(E4)[36]),]
        );
        out.clear();
        // The same status again: nothing changed.
        d.decode(&status(E4), &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn a_status_after_an_r_reply_is_a_dump() {
        let mut d = Millennium.decoder();
        let mut out = Vec::new();
        d.decode(&status(START), &mut out);
        let mut bytes = ChessLinkReply::Read {
            address: 2,
            value: 3,
        }
        .encode();
        bytes.extend(status(E4));
        bytes.extend(status(START));
        out.clear();
        d.decode(&bytes, &mut out);
        assert_eq!(out[0], Message::Session(SessionMessage::Other));
        assert_eq!(
            out[1],
            Message::Observation(Observation::BoardDump(board(E4)))
        );
        assert_eq!(out.len(), 4, "{out:?}"); // then e4 emptied, e2 filled
    }

    #[test]
    fn a_bad_status_is_counted_and_the_next_one_diffs_against_the_last_good_one() {
        let mut d = Millennium.decoder();
        let mut out = Vec::new();
        d.decode(&status(START), &mut out);
        let mut bad = status(E4);
        bad[10] = super::super::codec::with_parity(b'Q'); // the check no longer matches
        d.decode(&bad, &mut out);
        assert_eq!(d.bad_frames(), 1);
        out.clear();
        d.decode(&status(E4), &mut out);
        assert_eq!(out.len(), 2);
        let mut out = Vec::new();
        d.decode(
            &ChessLinkReply::Version { major: 1, minor: 4 }.encode(),
            &mut out,
        );
        assert_eq!(
            out,
            vec![Message::Session(SessionMessage::Version {
                major: 1,
                minor: 4
            })]
        );
    }
}
