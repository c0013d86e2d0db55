//! The ChessLink wire format (sans-IO): host commands in, bytes out; board bytes in, replies out.
//!
//! Every message is printable 7-bit ASCII: one command letter (upper case from the host, the
//! same letter in lower case in the board's reply), its data, and a block check of two
//! upper-case hex digits, the XOR of the 7-bit values of every character before it. Each
//! character travels with an odd parity bit: a 7O1 UART adds and strips it; on a line opened
//! 8N1 (or a pty) it arrives as bit 7, which [`ChessLinkDecoder`] checks and strips.
//!
//! Sources (protocol facts confirmed against real boards, not copied code):
//! - the ChessLink protocol document by Dave Woodfield (Millennium, 25/10/17), as kept in
//!   `domschl/python-mchess` (`mchess/magic-board.md`): 38400 baud 7O1; the XOR block check as
//!   2 hex digits; `S`→`s`+64 piece letters (A8…H8, A7…H7, …; `KQRNBP` white, `kqrnbp` black,
//!   `.` empty); `V`→`v`+4 hex (version high, low); `L`+slot+81 LED codes→`l`; `X`→`x`;
//!   `W`+address+value→`w`+address+value; `R`+address→`r`+address+value; `T` resets with no
//!   reply; E2ROM address 02 selects automatic status reports (`03`: on any change), 01 the
//!   scan time (default 20 × 2.048 ms: 24.4 scans a second);
//! - `domschl/python-mchess` (`chess_link_usb.py`, `chess_link_protocol.py`, `chess_link.py`),
//!   which has run against Millennium ChessGenius Exclusive boards with the ChessLink module
//!   and eONE boards, and its copy in picochess (`JohanSjoblom/picochess`, `eboard/chesslink/`):
//!   the reply lengths (`v` 7, `s` 67, `l` 3, `x` 3, `w` 7, `r` 7 characters), the parity bit
//!   set by the host in bit 7 of each byte and masked with 0x7F on receipt, the block check over
//!   the 7-bit characters, 38400 baud, that a board answers `V` (their probe of every port; no
//!   USB ids are matched), `W02` with 03..07 for reports on change without / with debounce and
//!   `R02` to read it back, and a real board's bytes in a log (`V56` sent as `D6 B5 B6`, the
//!   reply `v010374`; a unit test below decodes them). They read the 64 letters in the opposite
//!   order (index 0 as h1) and then find the board's orientation from the start position; the
//!   core does the same ([`crate::core::sensed::Orientation`]), so the order only decides which
//!   way round counts as normal.

use crate::core::observation::{FieldArray, SquareReading};
use shakmaty::{Color, Piece, Role};

/// Number of LEDs the `L` command drives (9 × 9, at the corners of the squares).
pub const LED_COUNT: usize = 81;

/// E2ROM address of the automatic status report setting.
pub const E2_AUTO_REPORT: u8 = 0x02;
/// E2ROM address of the scan time (units of 2.048 ms).
pub const E2_SCAN_TIME: u8 = 0x01;
/// Automatic reports: a status on any change (no debounce).
pub const AUTO_REPORT_ON_CHANGE: u8 = 0x03;
/// Automatic reports: none (the host asks with `S`).
pub const AUTO_REPORT_OFF: u8 = 0x01;

/// A host→board command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChessLinkCommand {
    /// `V`: firmware version.
    Version,
    /// `S`: the status of the whole board.
    Status,
    /// `T`: hardware reset (no reply; the board scans again after about 3 s).
    Reset,
    /// `X`: extinguish every LED.
    Extinguish,
    /// `L`: the flash pattern of every LED.
    Leds {
        /// Slot time, units of 4.096 ms.
        slot: u8,
        /// One pattern byte per LED (bit 7 first, one bit a slot), LED 1 in the a8 corner,
        /// LED 9 in the a1 corner, LED 81 in the h1 corner.
        patterns: Box<[u8; LED_COUNT]>,
    },
    /// `W`: write an E2ROM byte.
    Write {
        /// Address.
        address: u8,
        /// Value.
        value: u8,
    },
    /// `R`: read an E2ROM byte.
    Read {
        /// Address.
        address: u8,
    },
}

/// A board→host reply (or automatic status report).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChessLinkReply {
    /// `v`: firmware version.
    Version {
        /// High byte.
        major: u8,
        /// Low byte.
        minor: u8,
    },
    /// `s`: the whole board, in ChessLink order (0 = a8, 1 = b8 … 63 = h1).
    Status(Box<FieldArray>),
    /// `l`: LEDs set.
    LedsSet,
    /// `x`: LEDs extinguished.
    Extinguished,
    /// `w`: E2ROM byte written.
    Written {
        /// Address.
        address: u8,
        /// Value.
        value: u8,
    },
    /// `r`: E2ROM byte read.
    Read {
        /// Address.
        address: u8,
        /// Value.
        value: u8,
    },
}

/// The odd parity bit of a 7-bit character, in bit 7.
pub fn with_parity(c: u8) -> u8 {
    let c = c & 0x7F;
    if c.count_ones().is_multiple_of(2) {
        c | 0x80
    } else {
        c
    }
}

/// The two hex digits of `n`, upper case.
fn hex2(n: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    [DIGITS[usize::from(n >> 4)], DIGITS[usize::from(n & 15)]]
}

/// The value of two hex digits (either case).
fn unhex2(d: &[u8]) -> Option<u8> {
    let v = |c: u8| (c as char).to_digit(16);
    Some((v(*d.first()?)? * 16 + v(*d.get(1)?)?) as u8)
}

/// The block check of `chars`: XOR of their 7-bit values.
pub fn block_check(chars: &[u8]) -> u8 {
    chars.iter().fold(0, |acc, c| acc ^ (c & 0x7F))
}

/// Appends the block check to `chars` and sets each byte's odd parity bit.
pub fn frame(chars: &[u8]) -> Vec<u8> {
    let mut v = chars.to_vec();
    v.extend(hex2(block_check(chars)));
    v.into_iter().map(with_parity).collect()
}

impl ChessLinkCommand {
    /// The command's characters without the block check.
    fn chars(&self) -> Vec<u8> {
        match self {
            ChessLinkCommand::Version => b"V".to_vec(),
            ChessLinkCommand::Status => b"S".to_vec(),
            ChessLinkCommand::Reset => b"T".to_vec(),
            ChessLinkCommand::Extinguish => b"X".to_vec(),
            ChessLinkCommand::Leds { slot, patterns } => {
                let mut v = vec![b'L'];
                v.extend(hex2(*slot));
                patterns.iter().for_each(|p| v.extend(hex2(*p)));
                v
            }
            ChessLinkCommand::Write { address, value } => {
                let mut v = vec![b'W'];
                v.extend(hex2(*address));
                v.extend(hex2(*value));
                v
            }
            ChessLinkCommand::Read { address } => {
                let mut v = vec![b'R'];
                v.extend(hex2(*address));
                v
            }
        }
    }

    /// The bytes on the line: characters, block check, odd parity in bit 7.
    pub fn encode(&self) -> Vec<u8> {
        frame(&self.chars())
    }
}

/// The ChessLink letter of a square reading (`.` for empty; specials have none).
pub fn piece_letter(r: SquareReading) -> u8 {
    match r {
        SquareReading::Piece(p) => {
            let c = p.role.char() as u8;
            match p.color {
                Color::White => c.to_ascii_uppercase(),
                Color::Black => c,
            }
        }
        SquareReading::Empty | SquareReading::Special(_) => b'.',
    }
}

/// The square reading of a ChessLink piece letter; `None` for anything else.
pub fn reading_of(c: u8) -> Option<SquareReading> {
    if c == b'.' {
        return Some(SquareReading::Empty);
    }
    let role = Role::from_char(c.to_ascii_lowercase() as char)?;
    let color = if c.is_ascii_uppercase() {
        Color::White
    } else {
        Color::Black
    };
    Some(SquareReading::Piece(Piece { color, role }))
}

impl ChessLinkReply {
    /// The reply's characters without the block check.
    fn chars(&self) -> Vec<u8> {
        let with = |letter: u8, bytes: &[u8]| {
            let mut v = vec![letter];
            bytes.iter().for_each(|b| v.extend(hex2(*b)));
            v
        };
        match self {
            ChessLinkReply::Version { major, minor } => with(b'v', &[*major, *minor]),
            ChessLinkReply::Status(fields) => {
                let mut v = vec![b's'];
                v.extend(fields.iter().map(|f| piece_letter(*f)));
                v
            }
            ChessLinkReply::LedsSet => vec![b'l'],
            ChessLinkReply::Extinguished => vec![b'x'],
            ChessLinkReply::Written { address, value } => with(b'w', &[*address, *value]),
            ChessLinkReply::Read { address, value } => with(b'r', &[*address, *value]),
        }
    }

    /// The bytes a board sends: characters, block check, odd parity in bit 7.
    pub fn encode(&self) -> Vec<u8> {
        frame(&self.chars())
    }
}

/// Total length in characters of the reply starting with `letter` (block check included).
pub fn reply_len(letter: u8) -> Option<usize> {
    match letter {
        b's' => Some(67),
        b'v' | b'w' | b'r' => Some(7),
        b'l' | b'x' => Some(3),
        _ => None,
    }
}

/// Whether `c` may stand at position `i` (from 0) of a reply starting with `letter`.
fn fits(letter: u8, i: usize, c: u8) -> bool {
    let Some(len) = reply_len(letter) else {
        return false;
    };
    match i {
        0 => true,
        _ if i >= len => false,
        _ if i >= len - 2 => c.is_ascii_hexdigit(),
        _ if letter == b's' => reading_of(c).is_some(),
        _ => c.is_ascii_hexdigit(),
    }
}

/// Parses a complete reply (block check included), `None` when it is not a valid one.
fn parse(chars: &[u8]) -> Option<ChessLinkReply> {
    let (&letter, _) = chars.split_first()?;
    let len = reply_len(letter)?;
    if chars.len() != len || !chars.iter().enumerate().all(|(i, c)| fits(letter, i, *c)) {
        return None;
    }
    let (body, check) = chars.split_at(len - 2);
    if unhex2(check)? != block_check(body) {
        return None;
    }
    let data = &body[1..];
    let byte = |i: usize| unhex2(&data[2 * i..]);
    Some(match letter {
        b's' => {
            let mut fields = [SquareReading::Empty; 64];
            for (f, c) in fields.iter_mut().zip(data) {
                *f = reading_of(*c)?;
            }
            ChessLinkReply::Status(Box::new(fields))
        }
        b'v' => ChessLinkReply::Version {
            major: byte(0)?,
            minor: byte(1)?,
        },
        b'w' => ChessLinkReply::Written {
            address: byte(0)?,
            value: byte(1)?,
        },
        b'r' => ChessLinkReply::Read {
            address: byte(0)?,
            value: byte(1)?,
        },
        b'l' => ChessLinkReply::LedsSet,
        _ => ChessLinkReply::Extinguished,
    })
}

/// Decodes the board→host byte stream into [`ChessLinkReply`]s.
///
/// Bytes may be split or joined anywhere. A byte that cannot start a reply is dropped; a reply
/// whose characters do not fit its kind, or whose block check is wrong, is a bad frame: its
/// first byte is dropped and the bytes after it are scanned again (a real reply may start
/// inside it). Once a byte with bit 7 set has been seen the line delivers the parity bit
/// (8-bit bytes): from then on a byte with even parity is a parity error, which makes the reply
/// under way a bad frame. Bytes scanned past a bad frame up to the next good reply count as
/// that one bad frame. Memory stays bounded by one reply (67 characters).
#[derive(Debug, Default)]
pub struct ChessLinkDecoder {
    chars: Vec<u8>,
    eight_bit: bool,
    /// Scanning past a bad reply: replies that fail before the next good one are the bad
    /// reply's own bytes, not new bad frames.
    resyncing: bool,
    dropped: u64,
    bad: u64,
    parity_errors: u64,
}

impl ChessLinkDecoder {
    /// A decoder waiting for the first reply.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds received bytes, appending complete replies to `out`.
    pub fn decode(&mut self, bytes: &[u8], out: &mut Vec<ChessLinkReply>) {
        for &b in bytes {
            self.eight_bit |= b & 0x80 != 0;
            if self.eight_bit && b.count_ones().is_multiple_of(2) {
                self.parity_errors += 1;
                if !self.chars.is_empty() {
                    self.bad += 1;
                    self.resyncing = true;
                    self.dropped += self.chars.len() as u64;
                    self.chars.clear();
                }
                self.dropped += 1;
                continue;
            }
            self.chars.push(b & 0x7F);
            self.scan(out);
        }
    }

    /// Takes every complete reply from the buffer, resynchronising past bad ones.
    fn scan(&mut self, out: &mut Vec<ChessLinkReply>) {
        while let Some(&letter) = self.chars.first() {
            let Some(len) = reply_len(letter) else {
                self.chars.remove(0);
                self.dropped += 1;
                continue;
            };
            let fitting = self
                .chars
                .iter()
                .take(len)
                .enumerate()
                .all(|(i, c)| fits(letter, i, *c));
            if fitting && self.chars.len() < len {
                return;
            }
            match parse(&self.chars[..len.min(self.chars.len())]).filter(|_| fitting) {
                Some(reply) => {
                    self.resyncing = false;
                    out.push(reply);
                    self.chars.drain(..len);
                }
                None => {
                    self.bad += u64::from(!self.resyncing);
                    self.resyncing = true;
                    self.dropped += 1;
                    self.chars.remove(0);
                }
            }
        }
    }

    /// Bytes thrown away.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// Replies rejected (characters that do not fit, bad block check, parity error).
    pub fn bad_frames(&self) -> u64 {
        self.bad
    }

    /// Bytes received with even parity on a line that delivers the parity bit.
    pub fn parity_errors(&self) -> u64 {
        self.parity_errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start_position() -> FieldArray {
        let text = b"rnbqkbnrpppppppp................................PPPPPPPPRNBQKBNR";
        let mut f = [SquareReading::Empty; 64];
        for (f, c) in f.iter_mut().zip(text) {
            *f = reading_of(*c).unwrap();
        }
        f
    }

    fn decode_all(bytes: &[u8]) -> (Vec<ChessLinkReply>, ChessLinkDecoder) {
        let mut d = ChessLinkDecoder::new();
        let mut out = Vec::new();
        d.decode(bytes, &mut out);
        (out, d)
    }

    #[test]
    fn commands_carry_the_documented_check_and_odd_parity() {
        // 'V' = 0x56: the check is 0x56 → "56"; every byte has odd parity.
        let v = ChessLinkCommand::Version.encode();
        assert_eq!(v.iter().map(|b| b & 0x7F).collect::<Vec<_>>(), b"V56");
        assert!(v.iter().all(|b| b.count_ones() % 2 != 0));
        // 'W' ^ '0' ^ '2' ^ '0' ^ '3' = 0x57 ^ 0x30 ^ 0x32 ^ 0x30 ^ 0x33 = 0x56.
        let w = ChessLinkCommand::Write {
            address: 2,
            value: 3,
        }
        .encode();
        assert_eq!(w.iter().map(|b| b & 0x7F).collect::<Vec<_>>(), b"W020356");
        let x = ChessLinkCommand::Extinguish.encode();
        assert_eq!(x.iter().map(|b| b & 0x7F).collect::<Vec<_>>(), b"X58");
        let l = ChessLinkCommand::Leds {
            slot: 0x10,
            patterns: Box::new([0; LED_COUNT]),
        }
        .encode();
        assert_eq!(l.len(), 1 + 2 + 2 * LED_COUNT + 2);
        assert_eq!(&l[..1], &[with_parity(b'L')]);
    }

    #[test]
    fn a_status_is_64_letters_in_a8_to_h1_order() {
        let bytes = ChessLinkReply::Status(Box::new(start_position())).encode();
        assert_eq!(bytes.len(), 67);
        let (out, d) = decode_all(&bytes);
        let ChessLinkReply::Status(f) = &out[0] else {
            panic!("{out:?}")
        };
        let rook = |color| {
            SquareReading::Piece(Piece {
                color,
                role: Role::Rook,
            })
        };
        assert_eq!(f[0], rook(Color::Black)); // a8
        assert_eq!(
            f[4],
            SquareReading::Piece(Piece {
                color: Color::Black,
                role: Role::King
            })
        ); // e8
        assert_eq!(f[63], rook(Color::White)); // h1
        assert_eq!(f[36], SquareReading::Empty); // e4
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (0, 0));
    }

    #[test]
    fn a_real_boards_bytes() {
        // From a log of a real board in python-mchess (`chess_link.py`): the host's `V` and
        // the board's version reply 01.03.
        assert_eq!(ChessLinkCommand::Version.encode(), [0xD6, 0xB5, 0xB6]);
        let (out, d) = decode_all(b"v\xb01\xb0\xb374");
        assert_eq!(out, vec![ChessLinkReply::Version { major: 1, minor: 3 }]);
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (0, 0));
    }

    #[test]
    fn seven_bit_and_eight_bit_lines_decode_alike() {
        let bytes = ChessLinkReply::Version { major: 1, minor: 9 }.encode();
        let stripped: Vec<u8> = bytes.iter().map(|b| b & 0x7F).collect();
        assert_eq!(decode_all(&bytes).0, decode_all(&stripped).0);
        assert_eq!(
            decode_all(&stripped).0,
            vec![ChessLinkReply::Version { major: 1, minor: 9 }]
        );
    }

    fn stream() -> Vec<u8> {
        let mut s = ChessLinkReply::Version { major: 1, minor: 4 }.encode();
        s.extend(
            ChessLinkReply::Written {
                address: 2,
                value: 3,
            }
            .encode(),
        );
        s.extend(ChessLinkReply::Status(Box::new(start_position())).encode());
        s.extend(ChessLinkReply::Extinguished.encode());
        s.extend(ChessLinkReply::LedsSet.encode());
        s.extend(
            ChessLinkReply::Read {
                address: 2,
                value: 3,
            }
            .encode(),
        );
        s
    }

    #[test]
    fn every_cut_of_the_stream_gives_the_same_replies() {
        let s = stream();
        let (whole, _) = decode_all(&s);
        assert_eq!(whole.len(), 6);
        for cut in 0..=s.len() {
            let mut d = ChessLinkDecoder::new();
            let mut out = Vec::new();
            d.decode(&s[..cut], &mut out);
            d.decode(&s[cut..], &mut out);
            assert_eq!(out, whole, "cut at {cut}");
            assert_eq!((d.dropped_bytes(), d.bad_frames()), (0, 0));
        }
        // Byte by byte.
        let mut d = ChessLinkDecoder::new();
        let mut out = Vec::new();
        s.iter().for_each(|b| d.decode(&[*b], &mut out));
        assert_eq!(out, whole);
    }

    #[test]
    fn a_bad_check_is_a_counted_bad_frame_and_the_next_reply_is_found() {
        let mut bad = ChessLinkReply::Status(Box::new(start_position())).encode();
        let last = bad.len() - 1;
        bad[last] = with_parity(if bad[last] & 0x7F == b'0' { b'1' } else { b'0' });
        let good = ChessLinkReply::Version { major: 2, minor: 0 }.encode();
        let mut s = bad.clone();
        s.extend(&good);
        let (out, d) = decode_all(&s);
        assert_eq!(out, vec![ChessLinkReply::Version { major: 2, minor: 0 }]);
        assert_eq!(d.bad_frames(), 1);
        assert_eq!(d.dropped_bytes(), bad.len() as u64);
    }

    #[test]
    fn a_parity_error_spoils_the_reply_under_way() {
        let mut s = ChessLinkReply::Version { major: 1, minor: 2 }.encode();
        s[3] ^= 0x01; // one data bit flipped: even parity
        s.extend(ChessLinkReply::Extinguished.encode());
        let (out, d) = decode_all(&s);
        assert_eq!(out, vec![ChessLinkReply::Extinguished]);
        assert_eq!(d.parity_errors(), 1);
        assert_eq!(d.bad_frames(), 1);
    }

    #[test]
    fn noisy_streams_decode_alike_whatever_the_split() {
        // Valid replies with noise between them (some bytes with parity errors, some that
        // start no reply, some that start one and break it), cut at pseudo-random points.
        let mut x = 99u32;
        let mut next = move || {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        };
        let mut s = Vec::new();
        for _ in 0..40 {
            s.extend(stream());
            for _ in 0..next() % 8 {
                s.push(next());
            }
        }
        let decode = |cuts: &[usize]| {
            let mut d = ChessLinkDecoder::new();
            let mut out = Vec::new();
            let mut from = 0;
            for &c in cuts.iter().chain([&s.len()]) {
                d.decode(&s[from..c.max(from)], &mut out);
                from = c.max(from);
            }
            (out, d.dropped_bytes(), d.bad_frames(), d.parity_errors())
        };
        let whole = decode(&[]);
        assert!(whole.0.len() >= 40 * 5, "{}", whole.0.len());
        let mut cuts: Vec<usize> = (0..200)
            .map(|_| usize::from(next()) * 13 % s.len())
            .collect();
        cuts.sort_unstable();
        assert_eq!(decode(&cuts), whole);
        let every: Vec<usize> = (1..s.len()).collect();
        assert_eq!(decode(&every), whole);
    }

    #[test]
    fn garbage_is_dropped_and_counted_never_a_panic() {
        let mut s: Vec<u8> = (0..=255u8).collect();
        s.extend(b"s..zz"); // a status start that cannot be one
        let tail = stream();
        s.extend(&tail);
        let (out, d) = decode_all(&s);
        assert_eq!(out, decode_all(&tail).0);
        assert!(d.dropped_bytes() >= 256);
        // Pseudo-random noise of every length never panics and keeps memory bounded.
        let mut x = 12345u32;
        let mut d = ChessLinkDecoder::new();
        let mut out = Vec::new();
        for _ in 0..20_000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            d.decode(&[(x >> 16) as u8], &mut out);
            assert!(d.chars.len() <= 67);
        }
    }
}
