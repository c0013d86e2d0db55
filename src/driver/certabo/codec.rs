//! The Certabo wire format (sans-IO): board bytes in, lines out; LED commands in, bytes out.
//!
//! A Certabo board streams, unasked and about twice a second, one line of what its 64 RFID
//! readers see: `:` then 320 decimal numbers separated by spaces (five bytes per square, the
//! square's piece id, `0 0 0 0 0` for an empty square), then CR LF. The squares come in line
//! order, index 0 first; with the board the normal way round index 0 is a8, 7 is h8, 8 is a7 …
//! 63 is h1, which is the core's device numbering unchanged (a board turned round is found by
//! the core from the position, [`crate::core::sensed::Orientation`]). The board takes one
//! command, eight bytes that set its LEDs, and answers it with a line `L` (boards with RGB LEDs
//! answer `D`).
//!
//! Sources (facts read, no code copied):
//! - picochess (`JohanSjoblom/picochess`, GPL-3.0-or-later), `eboard/certabo/`:
//!   `usb_transport.py` opens the board at 38400 baud (pySerial's default 8N1, DTR low) and
//!   probes a port by reading it and looking for `:` and CR LF (no USB ids are matched);
//!   `parser.py` splits the stream at `:`, deletes CR, LF, `L`, `D` and `*` and reads a line of
//!   at least 320 numbers as 64 five-byte ids in a8-first order (an 8-number line is a
//!   Tabutronic Sentio's occupancy: one byte per rank from rank 8, bit 7 the a-file), treats an
//!   `L` as the sign of a board with single-colour LEDs and a `D` as one with RGB LEDs, and
//!   calibrates from the start position (see [`super::calibration`]); `command.py`: the LED
//!   command is 8 bytes, one per rank from rank 8, bit `f` lit for file `f` (a = bit 0), all
//!   zero = every LED off; `led_control.py` sends at most one command every 0.6 s. Its tests
//!   (`tests/test_certabo_parser.py`) hold the real lines decoded in `tests/certabo_frames.rs`.
//! - Certabo's own software (`CERTABO/CERTABO-CHESSBOARDS-SOFTWARE`, GPL-3.0): `usbtool.py`
//!   opens the board at 38400 baud, takes a line at LF, drops its `:` and its last two
//!   characters and keeps it when it has 320 numbers; `codes.py` reads a square as empty when
//!   more than two of its five bytes are zero ([`PieceId::is_empty`]) and maps ids to pieces
//!   with a table made from the start position; `run.py` sends the LED bytes (`move2led`: byte
//!   `8 − rank`, bit `2^file`, the same layout as picochess's) and turns every LED on and then
//!   off at start-up; `chess_sim/chess_sim.ino`, Certabo's board simulator: 38400 baud, `:`,
//!   the numbers separated by spaces, ` \r\n` at the end; empty squares sometimes read
//!   `0 0 56 0 0` or `201 0 0 0 0`; it takes an LED command once 8 bytes have come and throws
//!   away whatever else is waiting.
//! - FirePlank/Certabo-Android-App (GPL-3.0), logs of a real board: 2 lines a second (median
//!   563 ms apart), a "Silicon Labs CP210x USB to UART Bridge" on the port.
//!
//! The decoder resynchronises at every `:`: bytes before a line are dropped (and counted), a
//! line with a byte that has no place in it, a number over 255, or the wrong count of numbers
//! is a bad line (counted); a bare LF is deleted wherever it is, even inside a number (a host
//! that logs read by read puts one there: the sample `A-wrapped`), as picochess deletes it.
//! A line ends with its 320th number (a space, CR or `:` after it), so the same bytes give the
//! same lines however they are cut.

use std::fmt;

/// Squares in a line.
pub const SQUARES: usize = 64;
/// Bytes of a piece id.
pub const ID_BYTES: usize = 5;
/// Numbers in a Certabo line (64 squares × 5 bytes).
pub const LINE_NUMBERS: usize = SQUARES * ID_BYTES;
/// Numbers in a Tabutronic Sentio line (one occupancy byte per rank).
pub const SENTIO_NUMBERS: usize = 8;
/// The LED command that turns every LED off.
pub const LEDS_OFF: [u8; 8] = [0; 8];

/// The five bytes one square's RFID reader reports: a piece's id, zeros for an empty square,
/// or junk.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PieceId(pub [u8; ID_BYTES]);

impl PieceId {
    /// The reading of an empty square.
    pub const EMPTY: PieceId = PieceId([0; ID_BYTES]);

    /// Whether the square reads empty: more than two of the five bytes are zero (Certabo's own
    /// rule, `codes.py` `cell_empty`; its simulator sends `0 0 56 0 0` for empty squares).
    /// Every piece id in the public logs has at most two zero bytes.
    pub fn is_empty(&self) -> bool {
        self.0.iter().filter(|b| **b == 0).count() > 2
    }

    /// Whether `other` could be this id misread: three of the five bytes the same (a misread
    /// spoils one or two of the last three bytes, the real "with noise" line). Every id of one
    /// set resembles every other (they share their first three bytes); junk on an empty
    /// square resembles none (`217 253 175 8 35` beside set A's `3 0 84 …`).
    pub fn resembles(&self, other: &PieceId) -> bool {
        self.0
            .iter()
            .zip(other.0.iter())
            .filter(|(a, b)| a == b)
            .count()
            >= 3
    }

    /// The reading with every empty form made [`PieceId::EMPTY`].
    pub fn normalized(self) -> PieceId {
        if self.is_empty() {
            PieceId::EMPTY
        } else {
            self
        }
    }
}

impl fmt::Debug for PieceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PieceId({self})")
    }
}

impl fmt::Display for PieceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e] = self.0;
        write!(f, "{a} {b} {c} {d} {e}")
    }
}

/// One line: what every square reads, in line order (index 0 = a8 with the board the normal
/// way round).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertaboLine {
    /// The 64 readings.
    pub squares: [PieceId; SQUARES],
}

impl Default for CertaboLine {
    fn default() -> Self {
        CertaboLine {
            squares: [PieceId::EMPTY; SQUARES],
        }
    }
}

impl CertaboLine {
    /// The line as the board sends it: `:`, the numbers separated by spaces, ` \r\n` (the form
    /// of Certabo's simulator).
    pub fn encode(&self) -> Vec<u8> {
        let mut text = String::with_capacity(4 * LINE_NUMBERS + 4);
        text.push(':');
        for (i, id) in self.squares.iter().enumerate() {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(&id.to_string());
        }
        text.push_str(" \r\n");
        text.into_bytes()
    }
}

/// Something the board sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertaboFrame {
    /// A line of 64 readings.
    Line(Box<CertaboLine>),
    /// A Tabutronic Sentio line (no piece recognition): one occupancy byte per rank from rank
    /// 8, bit 7 the a-file ([`occupied`]).
    Occupancy([u8; SENTIO_NUMBERS]),
    /// `L`: an LED command was taken (a board with single-colour LEDs).
    LedAck,
    /// `D`: an LED command was taken (a board with RGB LEDs, as picochess reads it).
    RgbLedAck,
}

/// The fields (0 = a8 … 63 = h1) a Sentio occupancy line shows occupied.
pub fn occupied(rows: &[u8; SENTIO_NUMBERS]) -> [bool; SQUARES] {
    let mut out = [false; SQUARES];
    for (i, o) in out.iter_mut().enumerate() {
        *o = rows[i / 8] & (0x80 >> (i % 8)) != 0;
    }
    out
}

/// The LED command lighting the LEDs of `fields` (device field indexes, 0 = a8 … 63 = h1;
/// taken modulo 64): byte `i / 8` (0 = the a8 rank), bit `i % 8` (the file, a = bit 0).
pub fn led_command(fields: impl IntoIterator<Item = u8>) -> [u8; 8] {
    let mut leds = LEDS_OFF;
    for i in fields {
        let i = usize::from(i & 63);
        leds[i / 8] |= 1 << (i % 8);
    }
    leds
}

/// The fields an LED command lights (the inverse of [`led_command`]).
pub fn lit_fields(leds: &[u8; 8]) -> Vec<u8> {
    (0..64u8)
        .filter(|i| leds[usize::from(i / 8)] & (1 << (i % 8)) != 0)
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    /// Between lines.
    #[default]
    Outside,
    /// Inside a line (after its `:`).
    Line,
    /// Inside a bad line: skipped until the next `:` or CR.
    Skip,
}

/// The resynchronising line decoder.
#[derive(Debug, Clone)]
pub struct LineDecoder {
    state: State,
    numbers: [u8; LINE_NUMBERS],
    count: usize,
    /// The number being read and its digit count.
    current: Option<(u16, u8)>,
    dropped: u64,
    bad: u64,
}

impl Default for LineDecoder {
    fn default() -> Self {
        LineDecoder {
            state: State::Outside,
            numbers: [0; LINE_NUMBERS],
            count: 0,
            current: None,
            dropped: 0,
            bad: 0,
        }
    }
}

impl LineDecoder {
    /// A decoder waiting for a `:`.
    pub fn new() -> LineDecoder {
        LineDecoder::default()
    }

    /// Bytes dropped outside any line.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// Lines found bad.
    pub fn bad_lines(&self) -> u64 {
        self.bad
    }

    /// Decodes `bytes` (any split of the stream), appending complete frames to `out`.
    pub fn decode(&mut self, bytes: &[u8], out: &mut Vec<CertaboFrame>) {
        for &b in bytes {
            self.byte(b, out);
        }
    }

    fn start_line(&mut self) {
        self.state = State::Line;
        self.count = 0;
        self.current = None;
    }

    fn bad_line(&mut self) {
        self.bad += 1;
        self.state = State::Skip;
        self.current = None;
    }

    /// Ends the number being read; whether the line is now complete (320 numbers).
    fn end_number(&mut self) -> bool {
        if let Some((n, _)) = self.current.take() {
            // `n` is at most 255 (checked as its digits came) and `count` below 320.
            self.numbers[self.count] = n as u8;
            self.count += 1;
        }
        self.count == LINE_NUMBERS
    }

    fn emit_line(&mut self, out: &mut Vec<CertaboFrame>) {
        let mut line = CertaboLine::default();
        for (sq, chunk) in line
            .squares
            .iter_mut()
            .zip(self.numbers.chunks_exact(ID_BYTES))
        {
            let mut id = [0u8; ID_BYTES];
            id.copy_from_slice(chunk);
            *sq = PieceId(id);
        }
        out.push(CertaboFrame::Line(Box::new(line)));
        self.state = State::Outside;
    }

    /// The line ended early (CR or `:` before its 320th number): a Sentio line or a bad one.
    fn short_line(&mut self, out: &mut Vec<CertaboFrame>) {
        if self.count == SENTIO_NUMBERS {
            let mut rows = [0u8; SENTIO_NUMBERS];
            rows.copy_from_slice(&self.numbers[..SENTIO_NUMBERS]);
            out.push(CertaboFrame::Occupancy(rows));
            self.state = State::Outside;
        } else {
            self.bad_line();
        }
    }

    fn byte(&mut self, b: u8, out: &mut Vec<CertaboFrame>) {
        match self.state {
            State::Outside => match b {
                b':' => self.start_line(),
                b'L' => out.push(CertaboFrame::LedAck),
                b'D' => out.push(CertaboFrame::RgbLedAck),
                b'*' | b'\r' | b'\n' | b' ' | b'\t' => {}
                _ => self.dropped += 1,
            },
            State::Skip => match b {
                b':' => self.start_line(),
                b'\r' => self.state = State::Outside,
                _ => {}
            },
            State::Line => match b {
                b'0'..=b'9' => {
                    let d = u16::from(b - b'0');
                    let (n, digits) = match self.current {
                        None => (d, 1),
                        Some((n, k)) => (n * 10 + d, k + 1),
                    };
                    if n > 255 || digits > 3 {
                        self.bad_line();
                    } else {
                        self.current = Some((n, digits));
                    }
                }
                // Deleted wherever they are, as picochess does (a logged read puts LFs inside
                // numbers); an acknowledgement inside a line still counts.
                b'\n' | b'*' => {}
                b'L' => out.push(CertaboFrame::LedAck),
                b'D' => out.push(CertaboFrame::RgbLedAck),
                b' ' | b'\t' => {
                    if self.end_number() {
                        self.emit_line(out);
                    }
                }
                b'\r' => {
                    if self.end_number() {
                        self.emit_line(out);
                    } else {
                        self.short_line(out);
                    }
                }
                b':' => {
                    if self.end_number() {
                        self.emit_line(out);
                    } else {
                        self.short_line(out);
                    }
                    self.start_line();
                }
                _ => self.bad_line(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_with(first: PieceId) -> CertaboLine {
        let mut l = CertaboLine::default();
        l.squares[0] = first;
        l.squares[63] = PieceId([3, 0, 84, 252, 170]);
        l
    }

    fn decode_all(bytes: &[u8]) -> (Vec<CertaboFrame>, LineDecoder) {
        let mut d = LineDecoder::new();
        let mut out = Vec::new();
        d.decode(bytes, &mut out);
        (out, d)
    }

    #[test]
    fn a_line_round_trips_and_is_64_ids_in_line_order() {
        let l = line_with(PieceId([3, 0, 84, 252, 153]));
        let bytes = l.encode();
        assert!(bytes.starts_with(b":3 0 84 252 153 0 0 0 0 0 "));
        assert!(bytes.ends_with(b"3 0 84 252 170 \r\n"));
        let (out, d) = decode_all(&bytes);
        assert_eq!(out, vec![CertaboFrame::Line(Box::new(l))]);
        assert_eq!((d.dropped_bytes(), d.bad_lines()), (0, 0));
    }

    #[test]
    fn every_cut_of_the_stream_gives_the_same_frames() {
        let mut stream = b"xx\xffjunk".to_vec();
        stream.extend(line_with(PieceId([1, 2, 3, 4, 5])).encode());
        stream.extend(b"L\r\n\r\n");
        // A line logged read by read: LFs inside it, one inside a number.
        let wrapped: Vec<u8> = line_with(PieceId([9, 0, 84, 7, 8]))
            .encode()
            .chunks(7)
            .flat_map(|c| c.iter().copied().chain([b'\n']))
            .collect();
        stream.extend(&wrapped);
        stream.extend(b":1 2 3\r\n"); // bad: too short
        stream.extend(b":255 255 0 0 0 0 255 254\nL\r\n"); // a Sentio line and an ack
        stream.extend(line_with(PieceId([7, 7, 7, 7, 7])).encode());
        let (whole, d) = decode_all(&stream);
        assert_eq!(whole.len(), 6, "{whole:?}");
        assert_eq!(d.bad_lines(), 1);
        assert_eq!(d.dropped_bytes(), 7, "x x \\xff j u n k");
        for cut in 0..=stream.len() {
            let mut dec = LineDecoder::new();
            let mut out = Vec::new();
            dec.decode(&stream[..cut], &mut out);
            dec.decode(&stream[cut..], &mut out);
            assert_eq!(out, whole, "cut at {cut}");
            assert_eq!(dec.bad_lines(), 1);
        }
        // Byte by byte, too.
        let mut dec = LineDecoder::new();
        let mut out = Vec::new();
        for b in &stream {
            dec.decode(std::slice::from_ref(b), &mut out);
        }
        assert_eq!(out, whole);
    }

    #[test]
    fn bad_lines_are_counted_and_the_next_colon_resynchronises() {
        let good = line_with(PieceId([1, 0, 1, 1, 1])).encode();
        for bad in [
            b":3 0 256 1 1\r\n".to_vec(), // a number over 255
            b":3 0 0012 1\r\n".to_vec(),  // four digits
            b":3 0 X 1 1\r\n".to_vec(),   // a byte with no place in a line
            b":3 0 1\r\n".to_vec(),       // too short
        ] {
            let mut stream = bad.clone();
            stream.extend(&good);
            let (out, d) = decode_all(&stream);
            assert_eq!(d.bad_lines(), 1, "{}", String::from_utf8_lossy(&bad));
            assert_eq!(out.len(), 1);
        }
        // A line cut short by the next line's `:`.
        let mut stream = good[..40].to_vec();
        stream.extend(&good);
        let (out, d) = decode_all(&stream);
        assert_eq!((out.len(), d.bad_lines()), (1, 1));
        // A line with numbers after its 320th: the rest is dropped, counted.
        let mut stream = good[..good.len() - 3].to_vec();
        stream.extend(b" 12 13\r\n");
        let (out, d) = decode_all(&stream);
        assert_eq!(out.len(), 1);
        assert_eq!(d.dropped_bytes(), 4);
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = crate::sim::rng::Rng::new(5);
        let mut d = LineDecoder::new();
        let mut out = Vec::new();
        for _ in 0..200 {
            let n = rng.below(2000) as usize;
            let bytes: Vec<u8> = (0..n)
                .map(|_| match rng.below(4) {
                    0 => b' ',
                    1 => b"0123456789"[rng.below(10) as usize],
                    2 => b":\r\nLD*"[rng.below(6) as usize],
                    _ => rng.below(256) as u8,
                })
                .collect();
            d.decode(&bytes, &mut out);
        }
        assert!(d.dropped_bytes() > 0 && d.bad_lines() > 0);
    }

    #[test]
    fn empty_squares_are_more_than_two_zero_bytes() {
        assert!(PieceId::EMPTY.is_empty());
        assert!(PieceId([0, 0, 56, 0, 0]).is_empty());
        assert!(PieceId([201, 0, 0, 0, 0]).is_empty());
        assert!(PieceId([131, 48, 0, 0, 0]).is_empty());
        assert!(!PieceId([3, 0, 85, 0, 104]).is_empty());
        assert_eq!(PieceId([0, 0, 56, 0, 0]).normalized(), PieceId::EMPTY);
        assert_eq!(PieceId([3, 0, 85, 0, 104]).to_string(), "3 0 85 0 104");
    }

    #[test]
    fn led_commands_are_one_byte_per_rank_from_rank_8_file_a_in_bit_0() {
        // e2 (field 52) and e4 (field 36): Certabo's move2led gives byte 8 − 2 = 6 and
        // byte 8 − 4 = 4, value 2^4 for the e-file.
        let leds = led_command([52, 36]);
        assert_eq!(leds, [0, 0, 0, 0, 0x10, 0, 0x10, 0]);
        assert_eq!(lit_fields(&leds), vec![36, 52]);
        // picochess's calibration pattern: ranks 8, 7, 2, 1, d6 and d3.
        let calib: Vec<u8> = (0..16).chain(48..64).chain([19, 43]).collect();
        assert_eq!(
            led_command(calib),
            [0xff, 0xff, 0x08, 0x00, 0x00, 0x08, 0xff, 0xff]
        );
        assert_eq!(led_command([]), LEDS_OFF);
    }

    #[test]
    fn sentio_rows_are_rank_8_first_bit_7_the_a_file() {
        let o = occupied(&[255, 255, 0, 0, 0, 0, 255, 254]);
        assert!(o[0] && o[15] && o[48] && o[62]);
        assert!(!o[63] && !o[16] && !o[47]);
    }
}
