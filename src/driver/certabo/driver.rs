//! [`Certabo`]: Certabo RFID boards behind the [`BoardDriver`] seam. Line 38400 8N1, USB id
//! 10c4:ea60 (a Silicon Labs CP210x bridge, shared: probed), no handshake bytes (the board
//! streams unasked; its first line answers), LEDs off at start; no serial number, no clock, no
//! battery.
//!
//! [`CertaboStream`] turns the lines into the core's observations: the [`ReadFilter`] accepts a
//! square's new reading once a majority of three lines reads it; the [`PieceTable`] is learnt from the start
//! position ([`super::calibration`]; a board lying turned round at its first calibration is
//! found from the spare queens or the first move, [`CertaboStream`]); nothing is reported before it knows an id, then the
//! first position is a board dump and every later one the squares that changed
//! ([`PositionDiff`], shared with the other whole-position family), with a whole board again
//! once a position has stood still after a change. Known ids read as their
//! pieces, empty squares as empty, and an unknown id that has stood two lines as an *unknown
//! object*: a king of a side whose own king is on the board (see [`CertaboStream`]).

use std::collections::BTreeMap;

use shakmaty::{Color, Role};

use super::calibration::{PieceTable, Reading, is_start_field};
use super::codec::{CertaboFrame, CertaboLine, LEDS_OFF, LineDecoder, PieceId, SQUARES};
use super::filter::{CONFIRM_LINES, ReadFilter};
use crate::core::observation::{FieldArray, SquareReading};
use crate::core::sensed::Orientation;
use crate::driver::positions::PositionDiff;
use crate::driver::{
    BoardDriver, Decoder, LineSettings, Message, Parity, SessionMessage, Transport, UsbId,
};

/// The driver's name in capture headers and events (never change it: captures name it).
pub const NAME: &str = "certabo";

/// Lines without a change after which the position is reported once more as a whole board
/// (about 1.7 s; see [`CertaboStream`]).
pub const DUMP_AFTER_QUIET_LINES: u32 = 3;

/// The USB id of the bridge on the one real board whose logs are public (FirePlank's, "Silicon
/// Labs CP210x USB to UART Bridge"); picochess and Certabo's software match no ids (they probe
/// ports). The CP210x is a common chip (the Millennium driver lists it too): `generic`, served
/// only once a Certabo line has come.
static USB_IDS: [UsbId; 1] = [UsbId {
    vid: 0x10c4,
    pid: Some(0xea60),
    generic: true,
    name: "Silicon Labs CP210x (Certabo?)",
}];

/// The Certabo boards (USB, piece recognition by RFID). No clock, no battery.
#[derive(Debug, Clone, Copy, Default)]
pub struct Certabo;

impl BoardDriver for Certabo {
    fn name(&self) -> &'static str {
        NAME
    }

    /// 38400 baud 8N1 (picochess's `usb_transport.py`, Certabo's `usbtool.py` and simulator).
    fn transport(&self) -> Transport {
        Transport::Serial {
            line: LineSettings {
                baud: 38400,
                data_bits: 8,
                parity: Parity::None,
                stop_bits: 1,
            },
            usb_ids: &USB_IDS,
        }
    }

    fn decoder(&self) -> Box<dyn Decoder> {
        Box::new(CertaboStream::default())
    }

    /// Nothing: the board streams its lines unasked and takes no request; the first complete
    /// line is its answer ([`SessionMessage::Answer`]: the protocol has no version).
    fn handshake(&self) -> Vec<u8> {
        Vec::new()
    }

    /// The protocol has no serial number: the board is named after its port.
    fn reports_serial(&self) -> bool {
        false
    }

    /// Every LED off (the board streams by itself; Certabo's software also clears the LEDs at
    /// start-up). The board answers `L` (or `D`).
    fn start(&self) -> Vec<u8> {
        LEDS_OFF.to_vec()
    }

    /// Nothing: the board sends a line about every 0.56 s unasked, so silence is a dead link.
    fn keepalive(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Nothing: every line is the whole board, and no command asks for one.
    fn dump_request(&self) -> Vec<u8> {
        Vec::new()
    }
}

/// The Certabo decoder speaking [`Message`]s.
///
/// **Unknown ids.** An id the table does not know that stands two lines on a square (a piece
/// never shown to the board, a spare queen not shown before the game, a chip misread the same
/// way twice) is no piece the core may use: read as empty it could complete a move that only
/// waited for a square to empty (an en-passant capture) and would leave the object unreported
/// when it stands on an empty square. It is read as a *second king* of a side whose king is on
/// the board: no legal position has two kings of one colour, so no legal move and no sequence
/// of moves explains the board while the object is there (the core keeps the position and
/// reports the square displaced once its window is over), and it is never the kings' result
/// signal (which needs one king of each colour). The side is kept while its king is on the
/// board. Within a line the changes are ordered so that an object is never shown as a king of
/// a side whose real king is off the board or on the move: objects whose side's king moves in
/// this line (or whose side changes) are first shown as the other side's king if that one
/// stands still, else empty; then the line's real changes come, every object's field left as
/// it was (a piece an object replaced is not reported lifted); last the objects are shown as
/// they are now.
///
/// **Order.** The real changes a line accepts come in the order the lines first read them
/// ([`ReadFilter::read_at`]: a placement a drop-out put off by a line comes before the next
/// move's first lift, read in that same line), and those first read in one line as
/// [`PositionDiff`] orders them: placed pieces first, then emptied squares (a placement that
/// completes one side's move before the other side's lift read in the same line; a single move
/// reads the same either way), each in field order.
///
/// **Whole boards.** The first position is a board dump, every later one square changes; and a
/// position that stood still for [`DUMP_AFTER_QUIET_LINES`] lines after a change is reported
/// once more as a whole board. The board cannot be asked for one, and a dump is what makes the
/// core reconcile its record with a board that may be a move of each side ahead (two moves
/// that fell between the same two lines, or a change a noisy line put off onto the next move's
/// line): its gap recovery records them (`recovered`). Square changes alone do not start it on
/// a board without a clock, whose last move stays open to revision. Measured with the emulator
/// (60 corpus games each, `certabo_core` `wider_sample_with_noisy_reads`): human handling
/// 60/60 exact clean and with noisy readers; blitz 58/60 clean, 50/60 noisy (without these
/// dumps: 60, 53, 26 and 11). The cost: a capture whose pieces of both sides stay off the
/// board longer than that may be reported as moves missing (2 in the 60 noisy human games).
#[derive(Debug, Default)]
pub struct CertaboStream {
    decoder: LineDecoder,
    frames: Vec<CertaboFrame>,
    filter: ReadFilter,
    table: PieceTable,
    positions: PositionDiff,
    identified: bool,
    /// The known pieces of the last position reported (unknown objects left out).
    last_real: Option<Box<FieldArray>>,
    /// The side whose king the unknown objects are shown as.
    object_side: Option<Color>,
    /// Fields showing an unknown object in the last position reported (bit per field).
    objects: u64,
    /// An accepted reading changed since the last whole board.
    unsettled: bool,
    /// Lines since an accepted reading last changed.
    quiet: u32,
    /// The first calibration, while its way round is not known.
    first: Option<Box<FirstCalibration>>,
}

/// What a first calibration learnt (every id and the device field it stood on), kept until
/// the spare queens or the first move show which way round the board lay.
#[derive(Debug, Default)]
struct FirstCalibration {
    learnt: BTreeMap<PieceId, u8>,
    decided: bool,
}

/// Which way round a board calibrated the first time lies, from what stood or moved in the
/// middle ranks (device fields 16..48): `Some(true)` for turned round.
///
/// - The spare queens of the calibration ([`super::calibration`]): picochess shows them on d3
///   and d6; a board lying turned round shows them on its e6 and e3. Spare queens all on the
///   e-file say turned; anywhere else, normal.
/// - Else the first move: on a board lying turned round, the first move (White's) is made in
///   what the board takes for Black's half (fields 16..32).
fn turned_from(middle: impl Iterator<Item = u8>, spares: bool) -> Option<bool> {
    let fields: Vec<u8> = middle.filter(|f| (16..48).contains(f)).collect();
    if fields.is_empty() {
        return None;
    }
    Some(if spares {
        fields.iter().all(|f| f % 8 == 4)
    } else {
        fields.iter().all(|f| *f < 32)
    })
}

/// The device fields of `color`'s king in `fields`.
fn king_fields(fields: &FieldArray, color: Color) -> u64 {
    fields
        .iter()
        .enumerate()
        .filter(|(_, r)| **r == SquareReading::Piece(color.king()))
        .fold(0, |acc, (i, _)| acc | 1 << i)
}

fn bit(mask: u64, i: usize) -> bool {
    mask & (1 << i) != 0
}

impl CertaboStream {
    /// A decoder that knows no id yet.
    pub fn new() -> CertaboStream {
        CertaboStream::default()
    }

    /// A decoder that starts from a table learnt before (a later calibration still adds ids).
    pub fn with_table(table: PieceTable) -> CertaboStream {
        CertaboStream {
            table,
            ..CertaboStream::default()
        }
    }

    /// The id table learnt so far.
    pub fn table(&self) -> &PieceTable {
        &self.table
    }

    /// Lines taken.
    pub fn lines(&self) -> u64 {
        self.filter.lines()
    }

    /// Readings of one line only that were not taken (junk, misreads, drop-outs).
    pub fn ignored_reads(&self) -> u64 {
        self.filter.ignored_reads()
    }

    /// The fields where an unknown id stands now (accepted, not in the table).
    pub fn unknown_fields(&self) -> Vec<u8> {
        (0..SQUARES)
            .filter(|&i| {
                matches!(
                    self.table.reading(self.filter.accepted(i)),
                    Reading::Unknown(_)
                )
            })
            .map(|i| i as u8)
            .collect()
    }

    fn line(&mut self, line: &CertaboLine, out: &mut Vec<Message>) {
        if !std::mem::replace(&mut self.identified, true) {
            out.push(Message::Session(SessionMessage::Answer));
        }
        let table = &self.table;
        let changed_now = self
            .filter
            .update_known(line, |id| table.piece(id).is_some());
        // A board that is no start position teaches nothing: that is the usual case.
        let first_ever = self.table.is_empty();
        let settled = self.filter.settled();
        let learned = self.table.learn(&settled);
        // Nothing before an id is known, nor before every square had its two lines.
        if self.table.is_empty() || self.filter.lines() < u64::from(CONFIRM_LINES) {
            return;
        }
        let turned_now = self.first_calibration(first_ever, learned.is_ok(), &settled);
        let (real, objects) = self.readings();
        if turned_now && self.positions.last().is_some() {
            // The board lay turned round after all (its first move said so): what was reported
            // as the start position is the start position turned round; the move comes next.
            let start = self.turned_start();
            self.positions.dump(&start, out);
            self.last_real = Some(Box::new(start));
            self.objects = 0;
        }
        let last_real = self.last_real.as_deref();
        // A side whose king stands on the same field in the last position and this one.
        let still = |c: Color| {
            let now = king_fields(&real, c);
            now != 0 && last_real.is_some_and(|l| king_fields(l, c) == now)
        };
        let present = |c: Color| king_fields(&real, c) != 0;
        let side = [self.object_side, Some(Color::White), Some(Color::Black)]
            .into_iter()
            .flatten()
            .find(|c| present(*c));
        let shown = |side: Option<Color>| match side {
            Some(c) => SquareReading::Piece(Role::King.of(c)),
            None => SquareReading::Empty,
        };
        let object = shown(side.filter(|_| objects != 0));
        if let Some(last) = self.positions.last().copied() {
            // First: every object shown before becomes what is safe now (kept, or turned into a
            // king of a side whose king stands still), else empty.
            let safe = side.filter(|c| still(*c));
            let mut first = last;
            for i in (0..SQUARES).filter(|i| bit(self.objects, *i)) {
                first[i] = if bit(objects, i) && safe.is_some() {
                    shown(safe)
                } else {
                    SquareReading::Empty
                };
            }
            self.positions.report(&first, out);
            // Then the real changes, every object's field kept as it is (a piece an object
            // replaced stays until the object is shown: its field never reads empty).
            let mut second = real;
            for i in (0..SQUARES).filter(|i| bit(objects, *i)) {
                second[i] = first[i];
            }
            self.report_in_read_order(first, &second, out);
        }
        // Last: the objects as they are now.
        let mut fields = real;
        for i in (0..SQUARES).filter(|i| bit(objects, *i)) {
            fields[i] = object;
        }
        self.positions.report(&fields, out);
        self.dump_when_settled(changed_now, &fields, out);
        self.objects = if object == SquareReading::Empty {
            0
        } else {
            objects
        };
        self.object_side = side.or(self.object_side);
        self.last_real = Some(Box::new(real));
    }

    /// The board as read now: the pieces the table knows, and the fields (a bit each) where
    /// an object it does not know stands.
    fn readings(&self) -> ([SquareReading; SQUARES], u64) {
        let mut real = [SquareReading::Empty; SQUARES];
        let mut objects = 0u64;
        for (i, r) in real.iter_mut().enumerate() {
            match self.table.reading(self.filter.accepted(i)) {
                Reading::Piece(p) => *r = SquareReading::Piece(p),
                Reading::Unknown(_) => objects |= 1 << i,
                Reading::Empty => {}
            }
        }
        (real, objects)
    }

    /// Reports the way from `first` to `second` in the order the lines first read its changes
    /// (a change a noisy line put off comes before the next move's first changes), each
    /// line's placements first.
    fn report_in_read_order(
        &mut self,
        first: [SquareReading; SQUARES],
        second: &[SquareReading; SQUARES],
        out: &mut Vec<Message>,
    ) {
        let mut order: Vec<u64> = (0..SQUARES)
            .filter(|&i| second[i] != first[i])
            .map(|i| self.filter.read_at(i))
            .collect();
        order.sort_unstable();
        order.dedup();
        let mut step = first;
        for at in order {
            for filled in [true, false] {
                for i in (0..SQUARES).filter(|&i| self.filter.read_at(i) == at) {
                    if (second[i] != SquareReading::Empty) == filled {
                        step[i] = second[i];
                    }
                }
                self.positions.report(&step, out);
            }
        }
    }

    /// A position that stood still for [`DUMP_AFTER_QUIET_LINES`] lines after a change is
    /// reported once more as a whole board.
    fn dump_when_settled(
        &mut self,
        changed_now: bool,
        fields: &[SquareReading; SQUARES],
        out: &mut Vec<Message>,
    ) {
        if changed_now {
            self.quiet = 0;
            self.unsettled = true;
        } else {
            self.quiet = self.quiet.saturating_add(1);
            if self.unsettled && self.quiet >= DUMP_AFTER_QUIET_LINES {
                self.unsettled = false;
                self.positions.dump(fields, out);
            }
        }
    }
}

impl CertaboStream {
    /// Follows a first calibration until its way round is known: records what it learnt,
    /// then decides from the spare queens or the first move ([`turned_from`]) and, for a board
    /// lying turned round, learns every id again that way round. Whether it turned the table
    /// now.
    fn first_calibration(
        &mut self,
        first_ever: bool,
        start_shown: bool,
        settled: &[Option<PieceId>; SQUARES],
    ) -> bool {
        if first_ever {
            self.first = Some(Box::default());
        }
        let Some(first) = self.first.as_mut().filter(|f| !f.decided) else {
            return false;
        };
        if start_shown {
            for (field, id) in settled.iter().enumerate() {
                if let Some(id) = id.filter(|id| self.table.piece(id).is_some()) {
                    first.learnt.entry(id).or_insert(field as u8);
                }
            }
        }
        let spares = first
            .learnt
            .values()
            .copied()
            .filter(|f| !is_start_field(*f));
        let turned = turned_from(spares, true).or_else(|| {
            // The first move: pieces of the start squares now on the middle ranks (read while
            // the square they left may not count as empty yet).
            let learnt = &first.learnt;
            turned_from(
                (0..SQUARES as u8).filter(|&f| {
                    learnt
                        .get(&self.filter.accepted(usize::from(f)))
                        .is_some_and(|from| is_start_field(*from))
                }),
                false,
            )
        });
        let Some(turned) = turned else {
            return false;
        };
        first.decided = true;
        if turned {
            self.table.relearn(&first.learnt, Orientation::Reversed);
        }
        turned
    }

    /// The start position the first calibration saw, its ids read through the table.
    fn turned_start(&self) -> FieldArray {
        let mut fields = [SquareReading::Empty; SQUARES];
        if let Some(first) = &self.first {
            for (id, field) in &first.learnt {
                if is_start_field(*field)
                    && let Some(p) = self.table.piece(id)
                {
                    fields[usize::from(*field)] = SquareReading::Piece(p);
                }
            }
        }
        fields
    }
}

impl Decoder for CertaboStream {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Message>) {
        self.decoder.decode(bytes, &mut self.frames);
        let frames = std::mem::take(&mut self.frames);
        for frame in &frames {
            match frame {
                CertaboFrame::Line(line) => self.line(line, out),
                // A Sentio board reads no pieces (and is not served: its lines are no answer
                // to the handshake); LED acknowledgements are signs of life.
                CertaboFrame::Occupancy(_) | CertaboFrame::LedAck | CertaboFrame::RgbLedAck => {
                    out.push(Message::Session(SessionMessage::Other))
                }
            }
        }
        self.frames = frames;
        self.frames.clear();
    }

    fn dropped_bytes(&self) -> u64 {
        self.decoder.dropped_bytes()
    }

    fn bad_frames(&self) -> u64 {
        self.decoder.bad_lines()
    }
}

#[cfg(test)]
mod tests {
    use super::super::calibration::is_start_field;
    use super::super::codec::PieceId;
    use super::super::filter::SETTLE_LINES;
    use super::*;
    use crate::core::observation::Observation;
    use shakmaty::{Board, Square};

    /// The start position, ids `[50, 0, field, 7, 9]`.
    fn start() -> CertaboLine {
        let mut l = CertaboLine::default();
        for f in (0..64u8).filter(|f| is_start_field(*f)) {
            l.squares[usize::from(f)] = PieceId([50, 0, f, 7, 9]);
        }
        l
    }

    fn field(sq: Square) -> usize {
        (7 - sq.rank() as usize) * 8 + sq.file() as usize
    }

    fn mv(l: &mut CertaboLine, from: Square, to: Square) {
        l.squares[field(to)] = std::mem::take(&mut l.squares[field(from)]);
    }

    fn feed(d: &mut CertaboStream, l: &CertaboLine, times: u32) -> Vec<Message> {
        let mut out = Vec::new();
        for _ in 0..times {
            d.decode(&l.encode(), &mut out);
        }
        out
    }

    fn obs(msgs: &[Message]) -> Vec<Observation> {
        msgs.iter()
            .filter_map(|m| match m {
                Message::Observation(o) => Some(o.clone()),
                _ => None,
            })
            .collect()
    }

    fn fields_of(board: &Board) -> FieldArray {
        let mut f = [SquareReading::Empty; 64];
        for (sq, p) in board.iter() {
            f[field(sq)] = SquareReading::Piece(p);
        }
        f
    }

    fn calibrated() -> CertaboStream {
        let mut d = CertaboStream::new();
        feed(&mut d, &start(), CONFIRM_LINES + SETTLE_LINES);
        assert_eq!(d.table().len(), 32);
        d
    }

    #[test]
    fn session_bytes_are_what_the_board_takes() {
        let c = Certabo;
        assert_eq!(c.name(), "certabo");
        let line = c.transport().line().unwrap();
        assert_eq!(
            (line.baud, line.data_bits, line.parity, line.stop_bits),
            (38400, 8, Parity::None, 1)
        );
        assert!(c.handshake().is_empty() && c.handshake_retry().is_empty());
        assert!(c.keepalive().is_empty() && c.dump_request().is_empty());
        assert_eq!(c.start(), vec![0; 8]);
        assert!(!c.reports_serial());
        assert!(c.battery_request().is_none());
        assert!(
            c.transport()
                .usb_ids()
                .iter()
                .all(|u| u.generic && u.vid == 0x10c4)
        );
    }

    #[test]
    fn the_first_line_answers_then_the_start_position_calibrates_and_is_a_dump() {
        let mut d = CertaboStream::new();
        let out = feed(&mut d, &start(), 1);
        assert_eq!(out, vec![Message::Session(SessionMessage::Answer)]);
        let out = feed(&mut d, &start(), CONFIRM_LINES + SETTLE_LINES - 2);
        assert!(
            out.is_empty(),
            "nothing before the table knows an id: {out:?}"
        );
        let out = feed(&mut d, &start(), 1);
        assert_eq!(
            obs(&out),
            vec![Observation::BoardDump(Box::new(fields_of(
                &Board::default()
            )))]
        );
        assert!(feed(&mut d, &start(), 3).is_empty());
    }

    #[test]
    fn a_move_is_reported_one_line_late_and_one_line_noise_never() {
        let mut d = calibrated();
        let mut l = start();
        // One line of noise: e2 drops out, d2 misread, junk on e4, a bad line.
        let mut noisy = l.clone();
        noisy.squares[field(Square::E2)] = PieceId::EMPTY;
        noisy.squares[field(Square::D2)].0[4] ^= 1;
        noisy.squares[field(Square::E4)] = PieceId([217, 253, 175, 8, 35]);
        let mut out = feed(&mut d, &noisy, 1);
        d.decode(b":1 2 3\r\n", &mut out);
        out.extend(feed(&mut d, &l, 1));
        assert!(obs(&out).is_empty(), "{out:?}");
        assert_eq!(d.bad_frames(), 1);
        mv(&mut l, Square::E2, Square::E4);
        assert!(feed(&mut d, &l, 1).is_empty());
        let f = |sq, reading| Observation::Field {
            index: field(sq) as u8,
            reading,
        };
        // The placement a line late, the lift two (three lines without the piece).
        assert_eq!(
            obs(&feed(&mut d, &l, 1)),
            vec![f(Square::E4, SquareReading::Piece(Color::White.pawn()))]
        );
        assert_eq!(
            obs(&feed(&mut d, &l, 1)),
            vec![f(Square::E2, SquareReading::Empty)]
        );
        assert!(d.ignored_reads() >= 3);
        // Standing still: the whole board once more after three quiet lines, then nothing.
        assert!(feed(&mut d, &l, DUMP_AFTER_QUIET_LINES - 1).is_empty());
        let mut after = Board::default();
        after.discard_piece_at(Square::E2);
        after.set_piece_at(Square::E4, Color::White.pawn());
        assert_eq!(
            obs(&feed(&mut d, &l, 1)),
            vec![Observation::BoardDump(Box::new(fields_of(&after)))]
        );
        assert!(feed(&mut d, &l, 5).is_empty());
    }

    #[test]
    fn a_change_a_drop_out_put_off_comes_before_the_next_moves_lift() {
        let mut d = calibrated();
        let mut l = start();
        let knight = l.squares[field(Square::G1)];
        l.squares[field(Square::G1)] = PieceId::EMPTY;
        feed(&mut d, &l, 3); // g1 lifted
        l.squares[field(Square::F3)] = knight;
        feed(&mut d, &l, 1); // f3 read once
        // f3 drops out in the line where the reply's lift is first read.
        let mut dropped = l.clone();
        dropped.squares[field(Square::F3)] = PieceId::EMPTY;
        dropped.squares[field(Square::G8)] = PieceId::EMPTY;
        assert!(obs(&feed(&mut d, &dropped, 1)).is_empty());
        // The knight is accepted in the next line, the reply's lift in the one after.
        l.squares[field(Square::G8)] = PieceId::EMPTY;
        assert_eq!(
            obs(&feed(&mut d, &l, 1)),
            vec![Observation::Field {
                index: field(Square::F3) as u8,
                reading: SquareReading::Piece(Color::White.knight())
            }]
        );
        assert_eq!(
            obs(&feed(&mut d, &l, 1)),
            vec![Observation::Field {
                index: field(Square::G8) as u8,
                reading: SquareReading::Empty
            }]
        );
    }

    #[test]
    fn an_unknown_id_is_a_second_king_and_never_where_a_real_king_could_go() {
        let mut d = calibrated();
        let mut l = start();
        let object = PieceId([77, 1, 2, 3, 4]);
        l.squares[field(Square::E3)] = object;
        let out = obs(&feed(&mut d, &l, 2));
        let f = |sq, reading| Observation::Field {
            index: field(sq) as u8,
            reading,
        };
        let wk = SquareReading::Piece(Color::White.king());
        let bk = SquareReading::Piece(Color::Black.king());
        assert_eq!(out, vec![f(Square::E3, wk)]);
        assert_eq!(d.unknown_fields(), vec![field(Square::E3) as u8]);
        // The white king lifted: the object becomes Black's king before e1 empties.
        l.squares[field(Square::E1)] = PieceId::EMPTY;
        let out = obs(&feed(&mut d, &l, 3));
        assert_eq!(
            out,
            vec![f(Square::E3, bk), f(Square::E1, SquareReading::Empty)]
        );
        // Both kings off: the object reads empty first.
        l.squares[field(Square::E8)] = PieceId::EMPTY;
        let out = obs(&feed(&mut d, &l, 3));
        assert_eq!(
            out,
            vec![
                f(Square::E3, SquareReading::Empty),
                f(Square::E8, SquareReading::Empty)
            ]
        );
        // The white king back: it comes first, then the object as its second.
        l.squares[field(Square::E1)] = start().squares[field(Square::E1)];
        let out = obs(&feed(&mut d, &l, 2));
        assert_eq!(out, vec![f(Square::E1, wk), f(Square::E3, wk)]);
        // The object replaces a pawn: the pawn's field goes straight to the object.
        l.squares[field(Square::E3)] = PieceId::EMPTY;
        l.squares[field(Square::A2)] = object;
        let out = obs(&feed(&mut d, &l, 3));
        assert_eq!(
            out,
            vec![f(Square::A2, wk), f(Square::E3, SquareReading::Empty)]
        );
    }

    #[test]
    fn spare_queens_shown_beside_the_start_position_are_learnt() {
        let mut d = calibrated();
        let mut l = start();
        let (white, black) = (PieceId([60, 0, 1, 1, 1]), PieceId([60, 0, 2, 2, 2]));
        l.squares[field(Square::D3)] = white;
        l.squares[field(Square::D6)] = black;
        feed(&mut d, &l, CONFIRM_LINES + SETTLE_LINES);
        assert_eq!(d.table().piece(&white), Some(Role::Queen.of(Color::White)));
        assert_eq!(d.table().piece(&black), Some(Role::Queen.of(Color::Black)));
        assert!(d.unknown_fields().is_empty());
        // During a game (not the start position) nothing more is learnt.
        let mut l = start();
        mv(&mut l, Square::E2, Square::E4);
        l.squares[field(Square::H3)] = PieceId([61, 0, 1, 1, 1]);
        feed(&mut d, &l, CONFIRM_LINES + SETTLE_LINES);
        assert_eq!(d.table().len(), 34);
        assert_eq!(d.unknown_fields(), vec![field(Square::H3) as u8]);
    }

    #[test]
    fn acknowledgements_and_sentio_lines_are_signs_of_life_only() {
        let mut d = CertaboStream::new();
        let mut out = Vec::new();
        d.decode(b"L\r\n:255 255 0 0 0 0 255 255 \r\nD\r\n", &mut out);
        assert_eq!(out, vec![Message::Session(SessionMessage::Other); 3]);
        assert_eq!((d.dropped_bytes(), d.bad_frames()), (0, 0));
    }

    #[test]
    fn a_table_kept_from_before_reads_at_once() {
        let t = super::super::calibration::PieceTable::from_start_lines(&[start()]).unwrap();
        let mut d = CertaboStream::with_table(t);
        let mut l = start();
        mv(&mut l, Square::G1, Square::F3);
        let out = obs(&feed(&mut d, &l, 2));
        let mut b = Board::default();
        b.discard_piece_at(Square::G1);
        b.set_piece_at(Square::F3, Color::White.knight());
        assert_eq!(out, vec![Observation::BoardDump(Box::new(fields_of(&b)))]);
    }
}
