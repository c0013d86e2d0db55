//! The DGT board's own memory: the cyclic EEPROM in which the board writes every change it
//! senses, in every mode (also in IDLE, also with no host at all), as DGT's protocol header
//! describes it (`dgtbrd.h`, "Description of the EEPROM data storage and dump format"; a copy is
//! in `jromang/picochess`, `test/dgtbrd-ruud.h`). Both DGT emulators keep one per board: the
//! single-board [`Emulator`](super::Emulator) sends it on `0x49` (SEND_EE_MOVES), the bus
//! [`ChainEmulator`](super::dgt_bus::ChainEmulator) answers SEND_CHANGES, REPEAT_CHANGES and
//! SEND_FROM_START from it.
//!
//! What the header says, and how it is modelled here (each line: the fact, then the model):
//!
//! - "a cyclic buffer with length 0x1f00 bytes, with one pointer, pointing to the last written
//!   byte … The written data always overwrites the oldest data" and the dump "starting with the
//!   oldest data, until the last written changes, and will always end with EE_EOF", of size
//!   `DGT_SIZE_EE_MOVES` = 0x2000 − 0x100 + 3. That size leaves 0x1F00 bytes after the 3-byte
//!   header, EE_EOF included: the ring holds [`EE_SIZE`] bytes of which one is the EE_EOF at
//!   the write pointer, so [`EE_DATA`] = 0x1EFF bytes of entries, and the dump
//!   ([`DgtMemory::dump_frame`]) is always the full `8F 3E 03 <0x1EFF bytes> 6B`. Bytes never
//!   written read as EE_NOP (`0x7F`: an erased EEPROM byte, `0xFF`, with the 7 bits the board
//!   sends); this is the emulator's choice, a used board has older games there.
//! - "At power-on, three tags EE_NOP are written, followed by a one-byte EE_POWERUP message.
//!   After this, an UPDATE_BOARD message is written (in virtually random sequence) for every
//!   piece that is found on the board": [`DgtMemory::power_up`], the pieces in a seeded
//!   random order. "When … the watchdog times out, an EE_WATCHDOG_ACTION is written and after
//!   that, the above described power-up procedure": [`DgtMemory::watchdog`].
//! - "On every detected change of piece positions this change is written to EEPROM in a 2-byte
//!   message": `0t0r nnnn` (t = 1, r = 1 when "the time since the previous update tag was
//!   written is less than approx. 250 ms", n the piece code, 0 when emptied), then `00ii iiii`
//!   the field: [`DgtMemory::field_changed`], r from script time (the players' time).
//! - "when one piece only is changing, the new value overwrites the piece update field …
//!   instead of generating a new message": a change of the field the newest entry is about,
//!   with nothing written since, rewrites that entry's piece code (t and r kept). One
//!   reading of ours: an entry the host has already been sent with SEND_CHANGES is not
//!   rewritten (a new entry is written), so that no change the host was told of is changed
//!   behind its back; the header does not say.
//! - "When at any time a normal starting position for chess is found, with the player for
//!   white having the board connector on his left hand, an EE_BEGINPOS tag is written, and an
//!   EE_BEGINPOS_ROT tag is written when white has the connector at his right hand": field 0 is
//!   a8 with the connector on White's left (`docs/dgt-protocol.md` §1.4). EE_FOURROWS when 16
//!   figures "all in the A, B, G and H row, which are not(!) in a normal chess starting
//!   position" are found: the header's rows of the board are our ranks 8, 7, 2, 1; we write it
//!   when those 32 squares are all occupied and the rest empty and it is no begin position (a
//!   Chess960 set-up; the header's "16" we cannot place). EE_EMPTYBOARD "when an empty board is
//!   detected".
//! - Hysteresis: "only after more than two pieces have been out of the begin positions the
//!   search for begin positions is restarted", and "a EE_BEGINPOS or EE_BEGINPOS_ROT or
//!   EE_FOURROWS is not written, when between the previous written tags and the new occurence
//!   of the begin-situation only 2 or 1 piece were out of the tagged beginsituation": after a
//!   tag, no tag until more than two of the tagged situation's pieces have been off their
//!   squares at once (for the empty board: more than two pieces on it).
//! - "On the pressing of the clock, the time of the halted clock is written", "on tumbler
//!   position change, so at the beginning of the game, the game starting times will be lost",
//!   3 bytes `0uuf hhhh` (uu = 11, f = 1 for the left face seen from the front), `0MMM mmmm`,
//!   `0SSS ssss` (BCD): [`DgtMemory::clock`], on every change of the lever bit, the face that
//!   stopped, as the clock shows it after the press.
//! - EE_START_TAG (bus SET_START_GAME): "sets an EE_START_TAG tag … After this EE_START_TAG the
//!   positions of the pieces are all logged in the file": [`DgtMemory::start_game`].
//! - "When the data of the internal storage are sent upon reception of the DGT_SEND_EE_MOVES
//!   command, the one-byte EE_DOWNLOADED message is" written: [`DgtMemory::downloaded`].
//!
//! The bus-mode pointers (the board's RAM, lost at power-up): SEND_CHANGES sends "all stored
//! information changes from the moment of the last DGT_BUS_SEND_CHANGES"
//! ([`DgtMemory::take_changes`]); after power-up the first SEND_CHANGES starts after
//! EE_POWERUP, as DGTCentaurMods' emulation of a DGT board for LiveChess does
//! (`eepromlastsendpoint = 4`, `DGTCentaurMods/game/eboard.py`). SEND_FROM_START sends from
//! the last EE_START_TAG "until the last registered changes (excluding the moves that are to
//! be sent with the DGT_BUS_SEND_CHANGES command)" ([`DgtMemory::from_start`]).

use super::super::rng::Rng;
use crate::core::observation::{ClockFace, ClockReading, FieldArray, Micros, SquareReading};
use crate::driver::dgt::piece_code;
use shakmaty::{Color, Piece, Role};

/// Size of the cyclic EEPROM storage (`dgtbrd.h`: "a cyclic buffer with length 0x1f00").
pub const EE_SIZE: usize = 0x1F00;
/// Bytes of entries the ring keeps: one byte of [`EE_SIZE`] is the EE_EOF at the write pointer.
pub const EE_DATA: usize = EE_SIZE - 1;
/// Two field entries closer than this have the r bit set (`dgtbrd.h`: "less than approx.
/// 250 ms").
pub const RECENT: Micros = 250_000;

/// The one-byte EEPROM message codes (`dgtbrd.h`).
pub mod tag {
    /// Written at power-on, after three EE_NOP.
    pub const POWERUP: u8 = 0x6A;
    /// The last byte of every dump.
    pub const EOF: u8 = 0x6B;
    /// 32 pieces on the four outer rows, not a begin position.
    pub const FOURROWS: u8 = 0x6C;
    /// An empty board was found.
    pub const EMPTYBOARD: u8 = 0x6D;
    /// The memory was dumped (0x49).
    pub const DOWNLOADED: u8 = 0x6E;
    /// The start position, connector on White's left.
    pub const BEGINPOS: u8 = 0x6F;
    /// The start position, connector on White's right.
    pub const BEGINPOS_ROT: u8 = 0x7A;
    /// Bus SET_START_GAME: the positions of all pieces follow.
    pub const START_TAG: u8 = 0x7B;
    /// The watchdog reset the board; the power-up sequence follows.
    pub const WATCHDOG_ACTION: u8 = 0x7C;
    /// Filler.
    pub const NOP: u8 = 0x7F;
}

/// A begin situation the board tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Situation {
    /// The start position, connector on White's left (EE_BEGINPOS).
    BeginPos,
    /// The start position, connector on White's right (EE_BEGINPOS_ROT).
    BeginPosRot,
    /// 32 pieces on the four outer rows, not a begin position (EE_FOURROWS).
    FourRows,
    /// No piece on the board (EE_EMPTYBOARD).
    EmptyBoard,
}

impl Situation {
    /// Its one-byte tag.
    pub fn tag(self) -> u8 {
        match self {
            Situation::BeginPos => tag::BEGINPOS,
            Situation::BeginPosRot => tag::BEGINPOS_ROT,
            Situation::FourRows => tag::FOURROWS,
            Situation::EmptyBoard => tag::EMPTYBOARD,
        }
    }
}

/// The start position in field order (0 = a8 … 63 = h1), connector on White's left.
pub fn start_fields() -> FieldArray {
    let back = [
        Role::Rook,
        Role::Knight,
        Role::Bishop,
        Role::Queen,
        Role::King,
        Role::Bishop,
        Role::Knight,
        Role::Rook,
    ];
    let mut f = [SquareReading::Empty; 64];
    for (file, role) in back.iter().enumerate() {
        let p = |color, role| SquareReading::Piece(Piece { color, role });
        f[file] = p(Color::Black, *role);
        f[8 + file] = p(Color::Black, Role::Pawn);
        f[48 + file] = p(Color::White, Role::Pawn);
        f[56 + file] = p(Color::White, *role);
    }
    f
}

/// The situation `fields` is in, if any.
pub fn situation(fields: &FieldArray) -> Option<Situation> {
    let start = start_fields();
    if *fields == start {
        return Some(Situation::BeginPos);
    }
    let mut rot = start;
    rot.reverse();
    if *fields == rot {
        return Some(Situation::BeginPosRot);
    }
    if fields.iter().all(|r| *r == SquareReading::Empty) {
        return Some(Situation::EmptyBoard);
    }
    let outer = |i: usize| !(16..48).contains(&i);
    let four_rows = fields
        .iter()
        .enumerate()
        .all(|(i, r)| (*r != SquareReading::Empty) == outer(i));
    four_rows.then_some(Situation::FourRows)
}

/// How many pieces of the tagged arrangement are off their squares in `fields` (for an empty
/// arrangement: how many pieces are on the board).
fn out_of(tagged: &FieldArray, fields: &FieldArray) -> usize {
    if tagged.iter().all(|r| *r == SquareReading::Empty) {
        return fields
            .iter()
            .filter(|r| **r != SquareReading::Empty)
            .count();
    }
    tagged
        .iter()
        .zip(fields)
        .filter(|(t, f)| **t != SquareReading::Empty && t != f)
        .count()
}

/// Two BCD digits of `v` (0–99).
fn bcd(v: u32) -> u8 {
    ((((v / 10) % 10) << 4) | (v % 10)) as u8
}

/// The 3-byte time entry of one face (`0uuf hhhh`, `0MMM mmmm`, `0SSS ssss`).
pub fn time_entry(face: &ClockFace, left: bool) -> [u8; 3] {
    let secs = (face.millis / 1000).min(9 * 3600 + 59 * 60 + 59);
    [
        0x60 | if left { 0x10 } else { 0 } | (secs / 3600) as u8,
        bcd(secs / 60 % 60),
        bcd(secs % 60),
    ]
}

/// The board's cyclic EEPROM and the bus-mode pointers into it.
#[derive(Debug, Clone)]
pub struct DgtMemory {
    /// [`EE_DATA`] bytes; absolute position `p` is at `p % EE_DATA`.
    ring: Vec<u8>,
    /// Bytes written since the memory was new (the absolute write position).
    end: u64,
    /// The newest entry, when it is a field entry: its position and field.
    last_field: Option<(u64, u8)>,
    /// Script time of the newest field entry.
    last_field_at: Option<Micros>,
    /// The situation tagged last and the arrangement it was tagged in.
    tagged: Option<(Situation, FieldArray)>,
    /// The search for begin situations is on (no tag yet, or more than two pieces were out).
    armed: bool,
    /// The clock's lever as last seen (`right_side_up`).
    lever: Option<bool>,
    /// Where the next SEND_CHANGES starts.
    cursor: u64,
    /// The last SEND_CHANGES packet's data.
    last_changes: Option<Vec<u8>>,
    /// The newest EE_START_TAG.
    start_tag: Option<u64>,
    order: Rng,
    /// Write operations (entries written or rewritten).
    writes: u64,
}

impl DgtMemory {
    /// A memory never written (all EE_NOP); `seed` orders the pieces of power-up sequences.
    pub fn new(seed: u64) -> DgtMemory {
        DgtMemory {
            ring: vec![tag::NOP; EE_DATA],
            end: 0,
            last_field: None,
            last_field_at: None,
            tagged: None,
            armed: true,
            lever: None,
            cursor: 0,
            last_changes: None,
            start_tag: None,
            order: Rng::derive(seed, 0xEE),
            writes: 0,
        }
    }

    /// A new memory after the board's first power-up with `fields` on it at script time `t`.
    pub fn powered_up(seed: u64, t: Micros, fields: &FieldArray) -> DgtMemory {
        let mut m = DgtMemory::new(seed);
        m.power_up(t, fields);
        m
    }

    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            let i = (self.end % EE_DATA as u64) as usize;
            self.ring[i] = b & 0x7F;
            self.end += 1;
        }
        self.last_field = None;
        self.writes += 1;
    }

    /// The oldest position still in the ring.
    pub fn oldest(&self) -> u64 {
        self.end.saturating_sub(EE_DATA as u64)
    }

    /// The absolute write position: bytes written since the memory was new.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Entries written or rewritten so far (to tell when the EEPROM is busy writing).
    pub fn writes(&self) -> u64 {
        self.writes
    }

    /// The bytes at absolute positions `from..to`, clipped to what the ring still holds.
    pub fn bytes(&self, from: u64, to: u64) -> Vec<u8> {
        let from = from.max(self.oldest());
        let to = to.min(self.end);
        (from..to)
            .map(|p| self.ring[(p % EE_DATA as u64) as usize])
            .collect()
    }

    /// Power-on: EE_NOP × 3, EE_POWERUP, a field entry per piece (random order), then a begin
    /// situation's tag if the board is in one. The board's RAM starts afresh: the
    /// SEND_CHANGES pointer is after EE_POWERUP, the lever and the tag search are forgotten.
    pub fn power_up(&mut self, t: Micros, fields: &FieldArray) {
        self.push(&[tag::NOP, tag::NOP, tag::NOP, tag::POWERUP]);
        self.cursor = self.end;
        self.last_changes = None;
        self.last_field_at = None;
        self.tagged = None;
        self.armed = true;
        self.lever = None;
        let mut pieces: Vec<usize> = (0..64)
            .filter(|&i| fields[i] != SquareReading::Empty)
            .collect();
        self.order.shuffle(&mut pieces);
        for i in pieces {
            self.field_entry(t, i as u8, fields[i]);
        }
        self.look_for_situation(fields);
    }

    /// The watchdog reset the board: EE_WATCHDOG_ACTION, then the power-up sequence.
    pub fn watchdog(&mut self, t: Micros, fields: &FieldArray) {
        self.push(&[tag::WATCHDOG_ACTION]);
        self.power_up(t, fields);
    }

    fn field_entry(&mut self, t: Micros, index: u8, reading: SquareReading) {
        let recent = self.last_field_at.is_some_and(|at| t - at < RECENT);
        let first = 0x40 | if recent { 0x10 } else { 0 } | piece_code(reading);
        let at = self.end;
        self.push(&[first, index & 0x3F]);
        self.last_field = Some((at, index & 0x3F));
        self.last_field_at = Some(t);
    }

    /// Field `index` now reads `reading` (script time `t`); `fields` is the board after it.
    pub fn field_changed(
        &mut self,
        t: Micros,
        index: u8,
        reading: SquareReading,
        fields: &FieldArray,
    ) {
        match self.last_field {
            // One piece changing: its entry is rewritten (if the host has not had it yet).
            Some((at, field)) if field == index & 0x3F && at >= self.cursor => {
                let i = (at % EE_DATA as u64) as usize;
                self.ring[i] = (self.ring[i] & 0x70) | piece_code(reading);
                self.last_field_at = Some(t);
                self.writes += 1;
            }
            _ => self.field_entry(t, index, reading),
        }
        self.look_for_situation(fields);
    }

    fn look_for_situation(&mut self, fields: &FieldArray) {
        if let Some((_, arrangement)) = &self.tagged
            && !self.armed
            && out_of(arrangement, fields) > 2
        {
            self.armed = true;
        }
        if !self.armed {
            return;
        }
        if let Some(s) = situation(fields) {
            self.push(&[s.tag()]);
            self.tagged = Some((s, *fields));
            self.armed = false;
        }
    }

    /// The clock reads `r`: on a change of the lever, a time entry of the face that stopped.
    pub fn clock(&mut self, r: &ClockReading) {
        let before = self.lever.replace(r.right_side_up);
        if before.is_some_and(|b| b != r.right_side_up) {
            // Lever down on the left (right side up): the left face stopped.
            let (face, left) = if r.right_side_up {
                (&r.left, true)
            } else {
                (&r.right, false)
            };
            self.push(&time_entry(face, left));
        }
    }

    /// Bus SET_START_GAME: EE_START_TAG, then a field entry for every piece on the board.
    pub fn start_game(&mut self, t: Micros, fields: &FieldArray) {
        self.start_tag = Some(self.end);
        self.push(&[tag::START_TAG]);
        for (i, r) in fields.iter().enumerate() {
            if *r != SquareReading::Empty {
                self.field_entry(t, i as u8, *r);
            }
        }
    }

    /// The memory was dumped (0x49): EE_DOWNLOADED.
    pub fn downloaded(&mut self) {
        self.push(&[tag::DOWNLOADED]);
    }

    /// The memory as the dump sends it: [`EE_DATA`] bytes, oldest first, then EE_EOF.
    pub fn dump(&self) -> Vec<u8> {
        let split = (self.end % EE_DATA as u64) as usize;
        let mut out = Vec::with_capacity(EE_SIZE);
        out.extend_from_slice(&self.ring[split..]);
        out.extend_from_slice(&self.ring[..split]);
        out.push(tag::EOF);
        out
    }

    /// The single-board EE_MOVES message (`0x8F`, total length 0x1F03, the dump).
    pub fn dump_frame(&self) -> Vec<u8> {
        let data = self.dump();
        let total = data.len() + 3;
        let mut out = Vec::with_capacity(total);
        out.extend([0x8F, ((total >> 7) & 0x7F) as u8, (total & 0x7F) as u8]);
        out.extend(data);
        out
    }

    /// Bus SEND_CHANGES: the entries since the last SEND_CHANGES (or power-up); they are
    /// remembered for REPEAT_CHANGES.
    pub fn take_changes(&mut self) -> Vec<u8> {
        let data = self.bytes(self.cursor, self.end);
        self.cursor = self.end;
        self.last_changes = Some(data.clone());
        data
    }

    /// Bus REPEAT_CHANGES: the last SEND_CHANGES data again (`None` when there was none since
    /// power-up).
    pub fn last_changes(&self) -> Option<&[u8]> {
        self.last_changes.as_deref()
    }

    /// Bytes written and not yet sent with SEND_CHANGES.
    pub fn unsent(&self) -> u64 {
        self.end - self.cursor.max(self.oldest())
    }

    /// Bus SEND_FROM_START: from the newest EE_START_TAG (when the ring still holds it) to the
    /// SEND_CHANGES pointer (the header's reading), or to the end with `include_unsent`
    /// (DGTCentaurMods' reading). Empty without a start tag.
    pub fn from_start(&self, include_unsent: bool) -> Vec<u8> {
        match self.start_tag {
            Some(at) if at >= self.oldest() => {
                let to = if include_unsent {
                    self.end
                } else {
                    self.cursor
                };
                self.bytes(at, to.max(at))
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(color: Color, role: Role) -> SquareReading {
        SquareReading::Piece(Piece { color, role })
    }

    const WP: u8 = 1;

    #[test]
    fn power_up_writes_nops_powerup_every_piece_and_beginpos() {
        let m = DgtMemory::powered_up(1, 0, &start_fields());
        let d = m.dump();
        assert_eq!(d.len(), EE_SIZE);
        assert_eq!(m.dump_frame().len(), 0x1F03, "DGT_SIZE_EE_MOVES");
        assert_eq!(&m.dump_frame()[..3], &[0x8F, 0x3E, 0x03]);
        let written = &d[EE_DATA - m.end() as usize..EE_DATA];
        assert_eq!(written.len(), 4 + 64 + 1);
        assert_eq!(&written[..4], &[0x7F, 0x7F, 0x7F, tag::POWERUP]);
        assert_eq!(*written.last().unwrap(), tag::BEGINPOS);
        assert_eq!(*d.last().unwrap(), tag::EOF);
        let mut seen = [SquareReading::Empty; 64];
        let mut fields = Vec::new();
        for e in written[4..68].chunks(2) {
            assert_eq!(e[0] & 0xE0, 0x40, "t bit: {:02x}", e[0]);
            fields.push(e[1]);
            seen[usize::from(e[1])] = start_fields()[usize::from(e[1])];
            assert_eq!(e[0] & 0x0F, piece_code(start_fields()[usize::from(e[1])]));
        }
        assert_eq!(seen, start_fields());
        assert!(
            fields.windows(2).any(|w| w[1] < w[0]),
            "in no fixed order: {fields:?}"
        );
        // Never written: EE_NOP.
        assert!(d[..EE_DATA - 69].iter().all(|&b| b == tag::NOP));
    }

    #[test]
    fn field_entries_have_the_r_bit_and_one_piece_changing_rewrites_its_entry() {
        let mut f = start_fields();
        let mut m = DgtMemory::powered_up(1, 0, &f);
        let base = m.end();
        // e2 (field 52) lifted at 10 s, put on e4 (36) 300 ms later.
        f[52] = SquareReading::Empty;
        m.field_changed(10_000_000, 52, f[52], &f);
        f[36] = piece(Color::White, Role::Pawn);
        m.field_changed(10_300_000, 36, f[36], &f);
        // d2 (51) lifted and put back 100 ms later: one piece changing, one entry.
        f[51] = SquareReading::Empty;
        m.field_changed(11_000_000, 51, f[51], &f);
        f[51] = piece(Color::White, Role::Pawn);
        m.field_changed(11_100_000, 51, f[51], &f);
        // e4 → e5 within 250 ms of the last entry: r set.
        f[36] = SquareReading::Empty;
        m.field_changed(11_200_000, 36, f[36], &f);
        assert_eq!(
            m.bytes(base, m.end()),
            [0x40, 52, 0x40 | WP, 36, 0x40 | WP, 51, 0x50, 36]
        );
        // The rewrite kept the first entry's r bit (0) and took the new code.
        let d = m.bytes(base + 4, base + 6);
        assert_eq!(d, [0x40 | WP, 51]);
    }

    #[test]
    fn a_sent_entry_is_not_rewritten() {
        let mut f = start_fields();
        let mut m = DgtMemory::powered_up(1, 0, &f);
        m.take_changes();
        f[52] = SquareReading::Empty;
        m.field_changed(1_000_000, 52, f[52], &f);
        assert_eq!(m.take_changes(), [0x40, 52]);
        f[52] = piece(Color::White, Role::Pawn);
        m.field_changed(1_100_000, 52, f[52], &f);
        assert_eq!(m.take_changes(), [0x50 | WP, 52]);
    }

    #[test]
    fn begin_position_tags_have_hysteresis() {
        let mut f = start_fields();
        let mut m = DgtMemory::powered_up(1, 0, &f);
        let count = |m: &DgtMemory| {
            m.bytes(0, m.end())
                .iter()
                .filter(|&&b| b == tag::BEGINPOS)
                .count()
        };
        assert_eq!(count(&m), 1);
        let mut t = 1_000_000;
        let mut set = |m: &mut DgtMemory, f: &mut FieldArray, i: usize, r| {
            f[i] = r;
            t += 1_000_000;
            m.field_changed(t, i as u8, r, f);
        };
        let wp = piece(Color::White, Role::Pawn);
        // Two pawns out and back: no new tag.
        set(&mut m, &mut f, 52, SquareReading::Empty);
        set(&mut m, &mut f, 51, SquareReading::Empty);
        set(&mut m, &mut f, 52, wp);
        set(&mut m, &mut f, 51, wp);
        assert_eq!(situation(&f), Some(Situation::BeginPos));
        assert_eq!(count(&m), 1);
        // Three out at once (e2, d2, c2), then back: the search restarts, a new tag.
        set(&mut m, &mut f, 52, SquareReading::Empty);
        set(&mut m, &mut f, 51, SquareReading::Empty);
        set(&mut m, &mut f, 50, SquareReading::Empty);
        set(&mut m, &mut f, 52, wp);
        set(&mut m, &mut f, 51, wp);
        assert_eq!(count(&m), 1, "not back yet");
        set(&mut m, &mut f, 50, wp);
        assert_eq!(count(&m), 2);
        // Every piece off: EMPTYBOARD once; pieces back one by one to the rotated start.
        let mut rot = start_fields();
        rot.reverse();
        for i in 0..64 {
            if f[i] != SquareReading::Empty {
                set(&mut m, &mut f, i, SquareReading::Empty);
            }
        }
        for (i, r) in rot.iter().enumerate() {
            if *r != SquareReading::Empty {
                set(&mut m, &mut f, i, *r);
            }
        }
        let all = m.bytes(0, m.end());
        assert_eq!(all.iter().filter(|&&b| b == tag::EMPTYBOARD).count(), 1);
        assert_eq!(*all.last().unwrap(), tag::BEGINPOS_ROT);
    }

    #[test]
    fn time_entries_at_every_lever_change_with_the_halted_face() {
        let mut m = DgtMemory::new(3);
        let face = |s: u32| ClockFace {
            millis: s * 1000,
            ..Default::default()
        };
        let mut r = ClockReading {
            left: face(5400),
            right: face(5400),
            right_side_up: false,
            left_turn: true,
            ..Default::default()
        };
        m.clock(&r);
        assert_eq!(m.end(), 0, "the starting times are lost");
        // Left presses at 1:29:57 (+30 s increment shown): lever down on the left.
        r.left = face(5397 + 30);
        r.right_side_up = true;
        m.clock(&r);
        r.right = face(3600 + 59 * 60 + 58);
        r.right_side_up = false;
        m.clock(&r);
        m.clock(&r);
        assert_eq!(
            m.bytes(0, m.end()),
            [0x71, 0x30, 0x27, 0x61, 0x59, 0x58],
            "1:30:27 left, 1:59:58 right"
        );
    }

    #[test]
    fn start_tag_changes_and_from_start() {
        let mut f = start_fields();
        let mut m = DgtMemory::powered_up(1, 0, &f);
        m.take_changes();
        m.start_game(1_000_000, &f);
        let tagged = m.take_changes();
        assert_eq!(tagged.len(), 1 + 64);
        assert_eq!(tagged[0], tag::START_TAG);
        f[52] = SquareReading::Empty;
        m.field_changed(2_000_000, 52, f[52], &f);
        // Header: FROM_START excludes what SEND_CHANGES has yet to send.
        assert_eq!(m.from_start(false), tagged);
        let mut all = tagged.clone();
        all.extend([0x40, 52]);
        assert_eq!(m.from_start(true), all);
        assert_eq!(m.take_changes(), [0x40, 52]);
        assert_eq!(m.last_changes(), Some(&[0x40, 52][..]));
        assert_eq!(m.from_start(false), all);
        assert_eq!(m.take_changes(), Vec::<u8>::new());
        assert_eq!(m.last_changes(), Some(&[][..]));
        m.downloaded();
        assert_eq!(m.take_changes(), [tag::DOWNLOADED]);
    }

    #[test]
    fn wraps_around_keeping_the_newest_bytes() {
        let mut f = start_fields();
        let mut m = DgtMemory::powered_up(1, 0, &f);
        let wp = piece(Color::White, Role::Pawn);
        let mut t = 0;
        // Alternate two fields so that no entry is rewritten: 2 bytes per change.
        for k in 0..5000u64 {
            let i = if k % 2 == 0 { 52 } else { 51 };
            f[i] = if f[i] == wp { SquareReading::Empty } else { wp };
            t += 1_000_000;
            m.field_changed(t, i as u8, f[i], &f);
        }
        assert!(m.end() > EE_DATA as u64);
        let d = m.dump();
        assert_eq!(d.len(), EE_SIZE);
        assert_eq!(&d[..EE_DATA], &m.bytes(0, m.end())[..]);
        assert_eq!(m.bytes(0, m.end()).len(), EE_DATA);
        // The newest entry last, before EE_EOF.
        assert_eq!(d[EE_DATA - 1], 51);
        // The power-up sequence has been overwritten; so has the start of the changes.
        assert!(!d.contains(&tag::POWERUP));
        assert_eq!(m.unsent(), EE_DATA as u64);
        assert_eq!(m.take_changes().len(), EE_DATA);
    }

    #[test]
    fn watchdog_then_power_up() {
        let f = start_fields();
        let mut m = DgtMemory::powered_up(1, 0, &f);
        let before = m.end();
        m.watchdog(5_000_000, &f);
        let b = m.bytes(before, m.end());
        assert_eq!(
            &b[..5],
            &[tag::WATCHDOG_ACTION, 0x7F, 0x7F, 0x7F, tag::POWERUP]
        );
        assert_eq!(b.len(), 5 + 64 + 1);
        assert_eq!(m.take_changes().len(), 65, "changes start after EE_POWERUP");
    }
}
