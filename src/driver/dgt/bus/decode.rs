//! Bus reply decoding: a sans-IO, resynchronising, checksum-checking frame decoder (§1.9).

use super::{BusReply, FirmwareVersion, ReplyKind};
use crate::core::observation::{FieldArray, SquareReading};
use crate::driver::dgt::bwtime::BwTime;
use crate::driver::dgt::{ee, reading_from_code};

/// Decodes the board → host byte stream of a bus line into [`BusReply`]s.
///
/// Bytes may be split or joined anywhere. Where a header is expected, a byte without bit 7 is
/// dropped and a byte with bit 7 that is no reply id (`0x83`–`0x8A`) is a bad frame of one
/// byte. Inside a frame, a byte with bit 7 aborts the frame (bad) and starts a new one there.
/// A frame is bad when its total length is implausible for its kind (PING and
/// START_GAME_WRITTEN 6, VERSION 8 or 6, BRD_DUMP 70, BWTIME 13, BRD_DUMP_50B 56, UPDATE and
/// FROM_START 6 to 16,383), its checksum is wrong, or its contents are (a piece code above 15
/// in a dump, a clock face out of range). Bytes of EE entries that are not valid are skipped
/// and counted ([`BusDecoder::ee_skipped_bytes`]); the frame stays good. Made with
/// [`BusDecoder::for_address`], good frames of other boards are dropped and counted as foreign
/// frames. Memory stays bounded: one frame of at most 16,383 bytes is buffered.
#[derive(Debug, Default)]
pub struct BusDecoder {
    /// The only address kept, if any.
    filter: Option<u16>,
    /// The frame being collected (header first).
    frame: Vec<u8>,
    /// Its total length, once the length bytes are in.
    expected: usize,
    /// Bytes thrown away.
    dropped: u64,
    /// Frames rejected or aborted.
    bad: u64,
    /// Good frames of other addresses.
    foreign: u64,
    /// Bytes of EE data that started no valid entry.
    ee_skipped: u64,
}

/// Largest frame kept in the buffer's capacity between frames.
const KEEP_CAPACITY: usize = 80;

impl BusDecoder {
    /// A decoder keeping the replies of every board (the whole line).
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder keeping only the replies of the board at `address`.
    pub fn for_address(address: u16) -> Self {
        BusDecoder {
            filter: Some(address),
            ..Self::default()
        }
    }

    /// The address replies are filtered on, if any.
    pub fn address(&self) -> Option<u16> {
        self.filter
    }

    /// Feeds received bytes, appending every reply completed so far to `out`, in order.
    pub fn decode(&mut self, bytes: &[u8], out: &mut Vec<BusReply>) {
        for &b in bytes {
            if let Some(r) = self.step(b) {
                out.push(r);
            }
        }
    }

    /// Forgets any partial frame (e.g. after a reconnect); the counters are kept.
    pub fn reset(&mut self) {
        self.release_frame();
        self.expected = 0;
    }

    /// Bytes thrown away so far (garbage, aborted and bad frames; not foreign frames).
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// Frames rejected or aborted so far.
    pub fn bad_frames(&self) -> u64 {
        self.bad
    }

    /// Good frames of other boards dropped so far (always 0 without an address filter).
    pub fn foreign_frames(&self) -> u64 {
        self.foreign
    }

    /// Bytes of UPDATE and FROM_START data so far that started no valid EE entry.
    pub fn ee_skipped_bytes(&self) -> u64 {
        self.ee_skipped
    }

    /// Processes one byte.
    fn step(&mut self, b: u8) -> Option<BusReply> {
        if self.frame.is_empty() {
            self.start(b);
            return None;
        }
        if b & 0x80 != 0 {
            self.abort(self.frame.len());
            self.start(b);
            return None;
        }
        self.frame.push(b);
        if self.frame.len() == 3 {
            let total = usize::from(self.frame[1]) << 7 | usize::from(self.frame[2]);
            let plausible = ReplyKind::from_id(self.frame[0]).is_some_and(|k| k.length_ok(total));
            if !plausible {
                self.abort(3);
                return None;
            }
            self.expected = total;
        }
        if self.frame.len() < 3 || self.frame.len() < self.expected {
            return None;
        }
        let reply = self.complete();
        self.release_frame();
        self.expected = 0;
        reply
    }

    /// A byte where a header is expected.
    fn start(&mut self, b: u8) {
        if b & 0x80 == 0 {
            self.dropped += 1;
        } else if ReplyKind::from_id(b).is_some() {
            self.frame.push(b);
        } else {
            self.abort(1);
        }
    }

    /// Checks and interprets the complete frame in the buffer.
    fn complete(&mut self) -> Option<BusReply> {
        let len = self.frame.len();
        let (body, sum) = self.frame.split_at(len - 1);
        let parsed = if super::checksum(body) == sum[0] {
            self.parse()
        } else {
            None
        };
        let Some(reply) = parsed else {
            self.abort(len);
            return None;
        };
        if self.filter.is_some_and(|a| a != reply.address()) {
            self.foreign += 1;
            return None;
        }
        Some(reply)
    }

    /// The reply in the buffer, whose length and checksum are right; `None` if its contents
    /// are not.
    fn parse(&mut self) -> Option<BusReply> {
        let f = &self.frame;
        let kind = ReplyKind::from_id(f[0])?;
        let address = u16::from(f[3]) << 7 | u16::from(f[4]);
        let data = &f[5..f.len() - 1];
        let reply = match kind {
            ReplyKind::BoardDump => {
                let mut fields: FieldArray = [SquareReading::Empty; 64];
                for (field, &code) in fields.iter_mut().zip(data) {
                    *field = reading_from_code(code)?;
                }
                BusReply::BoardDump {
                    address,
                    fields: Box::new(fields),
                }
            }
            ReplyKind::Clock => BusReply::Clock {
                address,
                clock: BwTime::parse(data)?,
            },
            ReplyKind::Update | ReplyKind::FromStart => {
                let log = ee::parse(data);
                self.ee_skipped += log.skipped_bytes as u64;
                let entries = log.entries;
                if kind == ReplyKind::Update {
                    BusReply::Update { address, entries }
                } else {
                    BusReply::FromStart { address, entries }
                }
            }
            ReplyKind::Ping => BusReply::Ping { address },
            ReplyKind::StartGameWritten => BusReply::StartGameWritten { address },
            ReplyKind::Version => BusReply::Version {
                address,
                version: match data {
                    [major, minor] => Some(FirmwareVersion {
                        major: *major,
                        minor: *minor,
                    }),
                    _ => None,
                },
            },
            ReplyKind::BoardDump50B => BusReply::BoardDump50B { address },
        };
        Some(reply)
    }

    /// Throws away the current frame (`n` bytes) and counts it as bad.
    fn abort(&mut self, n: usize) {
        self.dropped += n as u64;
        self.bad += 1;
        self.release_frame();
        self.expected = 0;
    }

    /// The reply being collected is over, however much of it came (the host sent its next
    /// command only once the line was quiet): a frame still incomplete is aborted and counted
    /// bad, so that the next reply's bytes never complete it (a byte lost from one reply and
    /// the next reply's first byte taken in its place passes the 7-bit checksum once in 128).
    pub fn cut(&mut self) {
        if !self.frame.is_empty() {
            self.abort(self.frame.len());
        }
    }

    /// Empties the frame buffer, giving back the memory of a long frame.
    fn release_frame(&mut self) {
        if self.frame.capacity() > KEEP_CAPACITY {
            self.frame = Vec::new();
        } else {
            self.frame.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observation::ClockReading;
    use crate::core::observation::ClockSide;
    use crate::driver::dgt::ee::{EeEntry, EeTag};
    use crate::driver::dgt::{ClockAck, face, hex};

    fn decode_all(d: &mut BusDecoder, bytes: &[u8]) -> Vec<BusReply> {
        let mut out = Vec::new();
        d.decode(bytes, &mut out);
        out
    }

    fn counters(d: &BusDecoder) -> (u64, u64, u64) {
        (d.dropped_bytes(), d.bad_frames(), d.foreign_frames())
    }

    #[test]
    fn dgt_centaur_mods_replies_decode() {
        // The replies DGTCentaurMods eboard.py sends LiveChess as board 1025 (08 01).
        let mut d = BusDecoder::new();
        let out = decode_all(
            &mut d,
            &hex("87 00 06 08 01 16  89 00 08 08 01 01 02 1D  88 00 06 08 01 17"),
        );
        assert_eq!(
            out,
            vec![
                BusReply::Ping { address: 1025 },
                BusReply::Version {
                    address: 1025,
                    version: Some(FirmwareVersion { major: 1, minor: 2 })
                },
                BusReply::StartGameWritten { address: 1025 },
            ]
        );
        assert_eq!(counters(&d), (0, 0, 0));
        // An UPDATE with a start tag, a quick white pawn on field 8 and a left-face time
        // 0:05:09: 85 00 0C 08 01 7B 51 08 70 05 09 <cs>, cs = sum & 0x7F.
        let body = hex("85 00 0C 08 01 7B 51 08 70 05 09");
        let cs = (body.iter().map(|&b| u32::from(b)).sum::<u32>() & 0x7F) as u8;
        let mut frame = body.clone();
        frame.push(cs);
        let out = decode_all(&mut d, &frame);
        assert_eq!(
            out,
            vec![BusReply::Update {
                address: 1025,
                entries: vec![
                    EeEntry::Tag(EeTag::StartTag),
                    EeEntry::Field {
                        index: 8,
                        reading: reading_from_code(1).unwrap(),
                        quick: true
                    },
                    EeEntry::Time {
                        side: ClockSide::Left,
                        millis: 309_000
                    },
                ]
            }]
        );
    }

    #[test]
    fn version_1_2_sends_six_bytes() {
        // "DGT_SIZE_BUS_VERSION 8 /* was 6 up to version 1.2 */": no number in it.
        let mut d = BusDecoder::new();
        let out = decode_all(&mut d, &hex("89 00 06 08 01 18"));
        assert_eq!(
            out,
            vec![BusReply::Version {
                address: 1025,
                version: None
            }]
        );
        // 7 bytes is neither: a bad header, then four bytes of garbage.
        let out = decode_all(&mut d, &hex("89 00 07 08 01 01 1A"));
        assert!(out.is_empty());
        assert_eq!(counters(&d), (7, 1, 0));
    }

    #[test]
    fn clock_replies_use_the_bwtime_payload() {
        let mut d = BusDecoder::new();
        let times = ClockReading {
            right: face(182_000),
            left: face(181_000),
            running: true,
            left_turn: true,
            ..Default::default()
        };
        // The real BWTIME payload of `docs/dgt-protocol.md` §2.1 inside a bus frame of 1025.
        let mut frame = hex("84 00 0D 08 01 20 03 02 20 03 01 09");
        frame.push(crate::driver::dgt::bus::checksum(&frame));
        let mut ack = hex("84 00 0D 08 01 0A 10 09 0A 21 00 00");
        ack.push(crate::driver::dgt::bus::checksum(&ack));
        let mut no_clock = hex("84 00 0D 08 01 00 00 00 00 00 00 20");
        no_clock.push(crate::driver::dgt::bus::checksum(&no_clock));
        let stream: Vec<u8> = [frame, ack, no_clock].concat();
        let out = decode_all(&mut d, &stream);
        assert_eq!(
            out,
            vec![
                BusReply::Clock {
                    address: 1025,
                    clock: BwTime::Times(times)
                },
                BusReply::Clock {
                    address: 1025,
                    clock: BwTime::Ack(ClockAck {
                        ack0: 0x10,
                        ack1: 0x09,
                        ack2: 0x21,
                        ack3: 0
                    })
                },
                BusReply::Clock {
                    address: 1025,
                    clock: BwTime::NoClock
                },
            ]
        );
        // Minutes 0x60 are no BCD time: a bad frame despite a right checksum.
        let mut bad = hex("84 00 0D 08 01 00 60 00 00 00 00 09");
        bad.push(crate::driver::dgt::bus::checksum(&bad));
        assert!(decode_all(&mut d, &bad).is_empty());
        assert_eq!(counters(&d), (13, 1, 0));
    }

    #[test]
    fn bad_checksums_lengths_and_ids_are_counted() {
        let mut d = BusDecoder::new();
        // A PING with checksum 0x17 instead of 0x16, then a good one.
        let out = decode_all(&mut d, &hex("87 00 06 08 01 17 87 00 06 08 01 16"));
        assert_eq!(out, vec![BusReply::Ping { address: 1025 }]);
        assert_eq!(counters(&d), (6, 1, 0));
        // Implausible lengths: a PING of 7, a dump of 69, an UPDATE of 5, a BWTIME of 12, a
        // 50-square dump of 53, a START_GAME_WRITTEN of 7.
        let mut d = BusDecoder::new();
        for bad in [
            "87 00 07", "83 00 45", "85 00 05", "84 00 0C", "8A 00 35", "88 00 07",
        ] {
            assert!(decode_all(&mut d, &hex(bad)).is_empty(), "{bad}");
        }
        assert_eq!(d.bad_frames(), 6);
        // Ids outside 0x83–0x8A, and single-board ids, where a header is expected.
        let mut d = BusDecoder::new();
        assert!(decode_all(&mut d, &hex("80 81 82 8B 8F 93 FF")).is_empty());
        assert_eq!(counters(&d), (7, 7, 0));
        // A piece code above 15 in a dump.
        let mut dump = vec![0x83, 0x00, 70, 0x08, 0x01];
        dump.extend([0u8; 63]);
        dump.push(16);
        dump.push(crate::driver::dgt::bus::checksum(&dump));
        let mut d = BusDecoder::new();
        assert!(decode_all(&mut d, &dump).is_empty());
        assert_eq!(counters(&d), (70, 1, 0));
    }

    #[test]
    fn resync_on_garbage_and_bit7_inside_a_frame() {
        let mut d = BusDecoder::new();
        // Garbage without bit 7, a frame cut by a new header, a frame cut inside its length.
        let out = decode_all(
            &mut d,
            &hex("00 12 7F  87 00 06 08  87 00  87 00 06 08 01 16"),
        );
        assert_eq!(out, vec![BusReply::Ping { address: 1025 }]);
        assert_eq!(counters(&d), (3 + 4 + 2, 2, 0));
    }

    #[test]
    fn foreign_frames_are_filtered_and_counted() {
        let a = BusReply::Ping { address: 1025 }.encode();
        let b = BusReply::Ping { address: 7 }.encode();
        let stream = [a.clone(), b.clone(), b, a].concat();
        let mut d = BusDecoder::for_address(1025);
        assert_eq!(d.address(), Some(1025));
        let out = decode_all(&mut d, &stream);
        assert_eq!(out, vec![BusReply::Ping { address: 1025 }; 2]);
        assert_eq!(counters(&d), (0, 0, 2));
        // Without a filter, all four.
        let mut d = BusDecoder::new();
        assert_eq!(decode_all(&mut d, &stream).len(), 4);
        assert_eq!(d.foreign_frames(), 0);
        // A bad frame of another board is bad, not foreign.
        let mut d = BusDecoder::for_address(1025);
        assert!(decode_all(&mut d, &hex("87 00 06 00 07 00")).is_empty());
        assert_eq!(counters(&d), (6, 1, 0));
    }

    #[test]
    fn long_updates_are_buffered_whole() {
        let entries: Vec<EeEntry> = (0..8000)
            .map(|i| EeEntry::Field {
                index: (i % 64) as u8,
                reading: reading_from_code((i % 13) as u8).unwrap(),
                quick: i % 3 == 0,
            })
            .collect();
        let reply = BusReply::FromStart {
            address: 3,
            entries,
        };
        let bytes = reply.encode();
        assert_eq!(bytes.len(), 6 + 16_000);
        let mut d = BusDecoder::new();
        let mut out = Vec::new();
        for chunk in bytes.chunks(333) {
            d.decode(chunk, &mut out);
        }
        assert_eq!(out, vec![reply]);
        assert!(d.frame.capacity() <= KEEP_CAPACITY);
        // The longest reply the length carries: 16,383 bytes of NOPs.
        let nops = BusReply::Update {
            address: 3,
            entries: vec![EeEntry::Tag(EeTag::Nop); 20_000],
        };
        let bytes = nops.encode();
        assert_eq!(bytes.len(), 0x3FFF);
        let out = decode_all(&mut d, &bytes);
        assert!(
            matches!(&out[..], [BusReply::Update { entries, .. }] if entries.len() == 0x3FFF - 6)
        );
    }

    #[test]
    fn invalid_ee_bytes_are_skipped_not_bad() {
        let mut frame = hex("85 00 0A 08 01 01 02 41 08");
        frame.push(crate::driver::dgt::bus::checksum(&frame));
        let mut d = BusDecoder::new();
        let out = decode_all(&mut d, &frame);
        assert_eq!(
            out,
            vec![BusReply::Update {
                address: 1025,
                entries: vec![EeEntry::Field {
                    index: 8,
                    reading: reading_from_code(1).unwrap(),
                    quick: false
                }]
            }]
        );
        assert_eq!((d.bad_frames(), d.ee_skipped_bytes()), (0, 2));
    }
}
