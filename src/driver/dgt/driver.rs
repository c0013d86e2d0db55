//! [`Dgt`]: the DGT boards behind the [`BoardDriver`] seam. Line 9600 8N1 (`docs/dgt-protocol.md`
//! §1.1), USB ids (§3.1), handshake (§5.4, §1.9): `40 4D 45` (reset to IDLE, version, serial
//! number), then `4B 42` (UPDATE_NICE and a board dump) once the board is known.

use super::{DgtCommand, DgtDecoder, DgtMessage, to_observation};
use crate::driver::{
    BoardDriver, ClockControl, Decoder, LineSettings, Message, Parity, SessionMessage, Transport,
    UsbId,
};

/// The driver's name in capture headers and events.
pub const NAME: &str = "dgt";

/// The keep-alive request: the serial number, which every DGT board answers in any mode.
pub const KEEPALIVE: DgtCommand = DgtCommand::SerialNumber;

/// The USB ids of DGT boards: vendor `045b` with any product (DGT's boards: `8111` is the USB /
/// Smart Board, CDC-ACM) is served at once; `0403:6001` (FTDI FT232, used by older DGT USB
/// boards and by countless other gadgets) only after the handshake finds a DGT board behind it.
static USB_IDS: [UsbId; 2] = [
    UsbId {
        vid: 0x045b,
        pid: None,
        generic: false,
        name: "DGT board (vendor 045b)",
    },
    UsbId {
        vid: 0x0403,
        pid: Some(0x6001),
        generic: true,
        name: "FTDI FT232 (older DGT USB board?)",
    },
];

/// The DGT board family (USB, serial, Bluetooth; clocks relayed through the board).
#[derive(Debug, Clone, Copy, Default)]
pub struct Dgt;

fn encode(cmds: &[DgtCommand]) -> Vec<u8> {
    cmds.iter().flat_map(DgtCommand::encode).collect()
}

/// A DGT board's line (single or chained): 9600 baud, 8N1.
pub const LINE: LineSettings = LineSettings {
    baud: 9600,
    data_bits: 8,
    parity: Parity::None,
    stop_bits: 1,
};

impl BoardDriver for Dgt {
    fn name(&self) -> &'static str {
        NAME
    }

    fn transport(&self) -> Transport {
        Transport::Serial {
            line: LINE,
            usb_ids: &USB_IDS,
        }
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(DgtStream::default())
    }

    fn handshake(&self) -> Vec<u8> {
        encode(&[
            DgtCommand::Reset,
            DgtCommand::Version,
            DgtCommand::SerialNumber,
        ])
    }

    fn handshake_retry(&self) -> Vec<u8> {
        encode(&[DgtCommand::Version, DgtCommand::SerialNumber])
    }

    fn start(&self) -> Vec<u8> {
        encode(&[DgtCommand::UpdateNice, DgtCommand::SendBoard])
    }

    fn keepalive(&self) -> Vec<u8> {
        KEEPALIVE.encode()
    }

    fn dump_request(&self) -> Vec<u8> {
        DgtCommand::SendBoard.encode()
    }

    fn battery_request(&self) -> Option<Vec<u8>> {
        Some(DgtCommand::Battery.encode())
    }

    fn memory_request(&self) -> Option<Vec<u8>> {
        Some(DgtCommand::SendEeMoves.encode())
    }

    fn clock(&self) -> Option<Box<dyn ClockControl>> {
        Some(Box::new(super::clock::ClockQueue::new()))
    }
}

/// A [`DgtDecoder`] speaking [`Message`]s.
#[derive(Debug, Default)]
pub struct DgtStream {
    decoder: DgtDecoder,
    messages: Vec<DgtMessage>,
}

/// The driver-neutral form of a DGT message.
pub fn message(msg: DgtMessage) -> Message {
    if let Some(obs) = to_observation(&msg) {
        return Message::Observation(obs);
    }
    Message::Session(match msg {
        DgtMessage::Version { major, minor } => SessionMessage::Version { major, minor },
        DgtMessage::SerialNumber(s) => SessionMessage::Serial(s),
        DgtMessage::ClockAck(a) => SessionMessage::Driver(a.reply()),
        DgtMessage::Battery(b) => SessionMessage::Battery(b.level()),
        _ => SessionMessage::Other,
    })
}

impl Decoder for DgtStream {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        self.decoder.decode(bytes, &mut self.messages);
        out.extend(self.messages.drain(..).map(message));
    }

    fn dropped_bytes(&self) -> u64 {
        self.decoder.dropped_bytes()
    }

    fn bad_frames(&self) -> u64 {
        self.decoder.bad_frames()
    }

    fn at_rest(&self) -> bool {
        self.decoder.at_rest() && self.messages.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_bytes_are_the_documented_commands() {
        assert_eq!(Dgt.handshake(), [0x40, 0x4D, 0x45]);
        assert_eq!(Dgt.handshake_retry(), [0x4D, 0x45]);
        assert_eq!(Dgt.start(), [0x4B, 0x42]);
        assert_eq!(Dgt.keepalive(), [0x45]);
        assert_eq!(Dgt.dump_request(), [0x42]);
        assert_eq!(Dgt.transport().line().unwrap().baud, 9600);
    }

    #[test]
    fn decodes_observations_and_session_messages() {
        let mut d = Dgt.decoder();
        let mut out = Vec::new();
        // VERSION 3.1, then a FIELD_UPDATE (field 12 empty), split across calls.
        d.decode(&[0x93, 0x00, 0x05, 0x03], &mut out);
        d.decode(&[0x01, 0x8E, 0x00, 0x05, 12, 0], &mut out);
        assert_eq!(
            out[0],
            Message::Session(SessionMessage::Version { major: 3, minor: 1 })
        );
        assert!(matches!(
            out[1],
            Message::Observation(crate::core::observation::Observation::Field { index: 12, .. })
        ));
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (0, 0));
    }
}
