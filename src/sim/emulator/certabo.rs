//! An emulated Certabo board, as a daemon sees it on a serial port: it streams a line of its 64
//! RFID readers about twice a second (`:`, 320 numbers, ` \r\n`), takes the 8-byte LED command
//! and answers it with `L`, and reads every piece by the id of the chip in it.
//!
//! The players are the DGT [`Emulator`]'s (with no clock: a Certabo board has none), so the
//! same script of games with human handling plays on every family; only the wire differs. The
//! pieces keep their ids as they move: a piece put down is the last one of its kind taken off
//! the board (a capture's taker, the piece itself after a slide or a glitch), a promotion takes
//! a queen from off the board — a captured one, or a spare queen shown to the board before the
//! game — and when there is none (an under-promotion, no spare shown) a piece whose id the board
//! never showed ([`CertaboEmulator::unknown_pieces`]).
//!
//! Before the players begin the board stands set up for calibration ([`CertaboConfig::setup`]):
//! the start position with the spare queens beside it on the third and sixth ranks (d3 and d6
//! first, picochess's layout), then without them; with [`CertaboConfig::reversed`] the board is
//! turned round when the spare queens go (calibrated the normal way round, played the other).
//!
//! Noisy readers ([`CertaboConfig`]): one or two of bytes 2-4 of an id misread (as in the
//! "with noise" sample of the real lines, `B-h7-lifted-noise`: five of 32 ids at once), a
//! square dropping out (reading `0 0 0 0 0`), junk on empty squares (random bytes, or the
//! `0 0 x 0 0` forms of Certabo's simulator). By default a square is never noisy in two
//! successive lines (the real boards' errors in the public samples last one line); with
//! [`CertaboConfig::independent`] every line draws its errors afresh, so a square can be
//! misread line after line, as the hosts' filters are built for (picochess: the majority of
//! each square over the last three lines for "low gain" chips; Certabo's software: the most
//! frequent known code over a history), and [`CertaboConfig::low_gain`] of the pieces carry
//! chips misread four times as often.
//!
//! Strict about what it is sent: the board takes LED commands only, eight bytes each, and like
//! Certabo's simulator (`chess_sim.ino`) throws away whatever else is waiting once it has
//! taken one; every byte thrown away (and every byte of a command cut short by an unplug) is
//! counted ([`CertaboEmulator::unknown_bytes`]). The players wait for the host's first LED
//! command (eboardd's driver turns the LEDs off at start); until then the board streams on
//! link time, the players' script not begun.

use shakmaty::{Board, Color, Piece, Role};

use super::runner::EmulatedBoard;
use super::{ClockCommandStats, Emulator, Unknown};
use crate::core::observation::{FieldArray, Micros, SquareReading};
use crate::driver::certabo::codec::{CertaboLine, ID_BYTES, PieceId};
use crate::sim::rng::Rng;

/// How the emulated board and its pieces behave.
#[derive(Debug, Clone, PartialEq)]
pub struct CertaboConfig {
    /// Seed of the piece ids, the line timing and the noise.
    pub seed: u64,
    /// Spare queens per side shown to the board during calibration (0..=8).
    pub spare_queens: u8,
    /// Script time the board stands set up before the players begin.
    pub setup: Micros,
    /// Script time the spare queens stand beside the start position (from the beginning; at
    /// most [`CertaboConfig::setup`]).
    pub show_spares: Micros,
    /// The board is turned round after calibration (line index 0 on h1).
    pub reversed: bool,
    /// Time between lines, uniform in `lo..=hi` µs (a real board: median 563 ms).
    pub line_interval: (Micros, Micros),
    /// Chance that an occupied square's id has one byte misread in a line.
    pub misread: f64,
    /// Chance that an occupied square reads empty in a line.
    pub dropout: f64,
    /// Chance that an empty square reads junk in a line.
    pub junk: f64,
    /// Errors drawn afresh in every line (a square may be noisy line after line); else a
    /// square noisy in one line is read right in the next.
    pub independent: bool,
    /// Share of the pieces (the set and the spares) whose chips are "low gain": misread four
    /// times as often as [`CertaboConfig::misread`].
    pub low_gain: f64,
    /// The board lies turned round from the start (line index 0 on h1), calibration included:
    /// the host learns the ids from the start position seen turned round.
    pub turned_at_calibration: bool,
}

impl Default for CertaboConfig {
    fn default() -> Self {
        CertaboConfig {
            seed: 1,
            spare_queens: 1,
            setup: 10_000_000,
            show_spares: 6_000_000,
            reversed: false,
            line_interval: (480_000, 650_000),
            misread: 0.0,
            dropout: 0.0,
            junk: 0.0,
            independent: false,
            low_gain: 0.0,
            turned_at_calibration: false,
        }
    }
}

impl CertaboConfig {
    /// Noisy readers: 3 % misreads, 3 % drop-outs, junk on a quarter of the empty squares
    /// (set A of the samples: 16-37 %).
    pub fn noisy(seed: u64) -> CertaboConfig {
        CertaboConfig {
            seed,
            misread: 0.03,
            dropout: 0.03,
            junk: 0.25,
            ..CertaboConfig::default()
        }
    }

    /// Misreading readers at `rate` per id and line, drawn afresh every line, a quarter of the
    /// chips low gain (4 × `rate`), with drop-outs at `rate` and junk on a quarter of the empty
    /// squares: the worst the sources report (a real line with 5 of 32 ids misread at once).
    pub fn misreading(seed: u64, rate: f64) -> CertaboConfig {
        CertaboConfig {
            seed,
            misread: rate,
            dropout: rate,
            junk: 0.25,
            independent: true,
            low_gain: 0.25,
            ..CertaboConfig::default()
        }
    }
}

/// How soon after a placement the lift of the piece carried may be reported (a scan of a
/// DGT board is 200-250 ms; the script's reports of one scan come in any order).
const CARRIED_WITHIN: Micros = 1_000_000;

/// The fields of the spare queens of `color` (d, e, c, f, b, g, a, h on rank 3 or 6).
fn spare_field(color: Color, k: usize) -> usize {
    const FILES: [usize; 8] = [3, 4, 2, 5, 1, 6, 0, 7];
    let row = if color == Color::White { 5 } else { 2 };
    row * 8 + FILES[k % 8]
}

fn start_fields() -> FieldArray {
    let mut f = [SquareReading::Empty; 64];
    for (sq, p) in Board::default() {
        f[usize::from(crate::sim::field_index(sq, false))] = SquareReading::Piece(p);
    }
    f
}

/// The emulated Certabo board.
#[derive(Debug)]
pub struct CertaboEmulator {
    players: Emulator,
    cfg: CertaboConfig,
    rng: Rng,
    /// The ids on the board, in the players' field numbering (0 = a8).
    ids: [Option<PieceId>; 64],
    /// What the pieces on the board are.
    fields: FieldArray,
    /// Pieces off the board, last taken off last.
    off: Vec<(Piece, PieceId)>,
    /// Spare queens standing beside the start position (field, piece, id).
    spares: Vec<(usize, Piece, PieceId)>,
    /// Every id the board was shown (the set and the spare queens).
    shown: Vec<(Piece, PieceId)>,
    spares_removed: bool,
    started: bool,
    turned: bool,
    /// The host has sent an LED command: lines on script time, players going.
    host_seen: bool,
    next_line: Micros,
    link_now: Micros,
    next_link_line: Micros,
    /// Line indexes noisy in the last line (bit per index).
    noisy: u64,
    /// The ids of low-gain chips.
    low_gain: Vec<PieceId>,
    host: Vec<u8>,
    leds: [u8; 8],
    unknown: Unknown,
    unknown_pieces: u64,
    /// Lines sent.
    pub lines: u64,
    /// Ids misread, squares dropped out, junk readings sent.
    pub noise: (u64, u64, u64),
    /// LED commands taken.
    pub led_commands: u64,
}

impl CertaboEmulator {
    /// A board whose players play `players`' script (its clock model is ignored: no clock).
    pub fn new(players: Emulator, cfg: CertaboConfig) -> CertaboEmulator {
        let mut rng = Rng::derive(cfg.seed, 0x0CE2_7AB0);
        let mut em = CertaboEmulator {
            players,
            rng: Rng::derive(cfg.seed, 0x11_4E5),
            ids: [None; 64],
            fields: start_fields(),
            off: Vec::new(),
            spares: Vec::new(),
            shown: Vec::new(),
            spares_removed: false,
            started: false,
            turned: false,
            host_seen: false,
            next_line: 0,
            link_now: 0,
            next_link_line: 0,
            noisy: 0,
            low_gain: Vec::new(),
            host: Vec::new(),
            leds: [0; 8],
            unknown: Unknown::default(),
            unknown_pieces: 0,
            lines: 0,
            noise: (0, 0, 0),
            led_commands: 0,
            cfg,
        };
        // A set of ids like a real one: a common prefix, then two bytes of their own.
        let prefix = [1 + rng.below(250) as u8, 0, 1 + rng.below(250) as u8];
        let mut fresh = |taken: &[(Piece, PieceId)]| loop {
            let id = PieceId([
                prefix[0],
                0,
                prefix[2].wrapping_add(rng.below(2) as u8).max(1),
                1 + rng.below(255) as u8,
                rng.below(256) as u8,
            ]);
            if !taken.iter().any(|(_, t)| *t == id) {
                return id;
            }
        };
        let mut shown = Vec::new();
        for (i, f) in em.fields.iter().enumerate() {
            if let SquareReading::Piece(p) = f {
                let id = fresh(&shown);
                shown.push((*p, id));
                em.ids[i] = Some(id);
            }
        }
        for color in [Color::White, Color::Black] {
            for k in 0..usize::from(em.cfg.spare_queens.min(8)) {
                let q = Role::Queen.of(color);
                let id = fresh(&shown);
                shown.push((q, id));
                em.spares.push((spare_field(color, k), q, id));
            }
        }
        em.low_gain = shown
            .iter()
            .filter(|_| rng.chance(em.cfg.low_gain))
            .map(|(_, id)| *id)
            .collect();
        em.shown = shown;
        em.turned = em.cfg.turned_at_calibration;
        em
    }

    /// The players (their script: when each ply's hand actions happen).
    pub fn players(&self) -> &Emulator {
        &self.players
    }

    /// What the board's sensors read now (players' field numbering, the board normal).
    pub fn fields(&self) -> &FieldArray {
        &self.fields
    }

    /// Every piece the board was shown before the game and its id.
    pub fn shown_ids(&self) -> &[(Piece, PieceId)] {
        &self.shown
    }

    /// The LEDs the host lit last (the 8-byte command).
    pub fn leds(&self) -> [u8; 8] {
        self.leds
    }

    /// Pieces put down whose id the board was never shown (a promotion with no queen off the
    /// board and no spare left).
    pub fn unknown_pieces(&self) -> u64 {
        self.unknown_pieces
    }

    fn interval(&mut self) -> Micros {
        let (lo, hi) = self.cfg.line_interval;
        self.rng.range(lo, hi).max(1)
    }

    /// An id no piece of the set has.
    fn unknown_id(&mut self) -> PieceId {
        loop {
            let id = PieceId([
                1 + self.rng.below(255) as u8,
                0,
                1 + self.rng.below(255) as u8,
                1 + self.rng.below(255) as u8,
                1 + self.rng.below(255) as u8,
            ]);
            if !self.shown.iter().any(|(_, s)| *s == id) {
                return id;
            }
        }
    }

    /// A field holding `piece` that the players' script empties within [`CARRIED_WITHIN`]
    /// after players' time `t`: the piece a hand carried, its lift reported after its
    /// placement (a scanning board reports the changes of one scan in any order).
    fn carried(&self, piece: Piece, t: Micros, next: &FieldArray) -> Option<usize> {
        self.players
            .script()
            .field_updates_between(t, t + CARRIED_WITHIN)
            .filter_map(|(_, index, reading)| {
                (reading == SquareReading::Empty).then_some(usize::from(index & 63))
            })
            .find(|&i| next[i] == SquareReading::Piece(piece) && self.ids[i].is_some())
    }

    /// The pieces on the board become `next` (at players' time `t`): what left a field goes
    /// off the board, what came is the last piece of its kind taken off, else the piece of its
    /// kind the hand carried from a field whose lift is reported a moment later, else one with
    /// an id never shown.
    fn set_fields(&mut self, next: &FieldArray, t: Micros) {
        for (i, want) in next.iter().enumerate() {
            if self.fields[i] != *want
                && let (SquareReading::Piece(p), Some(id)) = (self.fields[i], self.ids[i].take())
            {
                self.off.push((p, id));
            }
        }
        for i in 0..64 {
            if self.fields[i] == next[i] {
                continue;
            }
            if let SquareReading::Piece(p) = next[i] {
                let id = match self.off.iter().rposition(|(q, _)| *q == p) {
                    Some(k) => Some(self.off.remove(k).1),
                    None => self.carried(p, t, next).and_then(|k| self.ids[k].take()),
                };
                let id = id.unwrap_or_else(|| {
                    self.unknown_pieces += 1;
                    self.unknown_id()
                });
                self.ids[i] = Some(id);
            }
        }
        self.fields = *next;
    }

    fn setup_changes(&mut self, t: Micros) {
        if !self.spares_removed && t >= self.cfg.show_spares {
            self.spares_removed = true;
            for (_, p, id) in std::mem::take(&mut self.spares) {
                self.off.push((p, id));
            }
            self.turned = self.cfg.reversed || self.cfg.turned_at_calibration;
        }
        if !self.started && t >= self.cfg.setup {
            self.started = true;
            let initial = self.players.script().initial;
            self.set_fields(&initial, -1);
        }
    }

    /// Script time of the next change of the set-up phase.
    fn next_setup_change(&self) -> Option<Micros> {
        if !self.spares_removed {
            Some(self.cfg.show_spares)
        } else if !self.started {
            Some(self.cfg.setup)
        } else {
            None
        }
    }

    fn players_due(&self) -> Option<Micros> {
        self.players.next_due().map(|t| t + self.cfg.setup)
    }

    /// One line of what the readers see now, noise included.
    fn line(&mut self, out: &mut Vec<u8>) {
        let mut line = CertaboLine::default();
        let mut noisy = 0u64;
        for (i, sq) in line.squares.iter_mut().enumerate() {
            let field = if self.turned { 63 - i } else { i };
            let id = self.ids[field].or_else(|| {
                self.spares
                    .iter()
                    .find(|(f, _, _)| *f == field)
                    .map(|(_, _, id)| *id)
            });
            let calm = self.cfg.independent || self.noisy & (1 << i) == 0;
            *sq = match id {
                Some(mut id) => {
                    let misread = if self.low_gain.contains(&id) {
                        (self.cfg.misread * 4.0).min(1.0)
                    } else {
                        self.cfg.misread
                    };
                    if calm && self.rng.chance(misread) {
                        // One or two of bytes 2-4, as in the real "with noise" line.
                        let first = 2 + self.rng.below(3) as usize;
                        let second = 2 + self.rng.below(3) as usize;
                        for b in [first, second]
                            .into_iter()
                            .take(1 + self.rng.below(2) as usize)
                        {
                            id.0[b] = id.0[b].wrapping_add(1 + self.rng.below(254) as u8).max(1);
                        }
                        noisy |= 1 << i;
                        self.noise.0 += 1;
                    } else if calm && self.rng.chance(self.cfg.dropout) {
                        id = PieceId::EMPTY;
                        noisy |= 1 << i;
                        self.noise.1 += 1;
                    }
                    id
                }
                None if self.rng.chance(self.cfg.junk) => {
                    self.noise.2 += 1;
                    if calm && self.rng.chance(0.5) {
                        noisy |= 1 << i;
                        let mut junk = self.unknown_id();
                        junk.0[1] = 1 + self.rng.below(255) as u8;
                        junk
                    } else {
                        // Empty by Certabo's rule: may come line after line.
                        let mut junk = [0u8; ID_BYTES];
                        junk[self.rng.below(ID_BYTES as u64) as usize] =
                            1 + self.rng.below(255) as u8;
                        PieceId(junk)
                    }
                }
                None => PieceId::EMPTY,
            };
        }
        self.noisy = noisy;
        self.lines += 1;
        out.extend(line.encode());
    }

    fn play_at(&mut self, t: Micros) {
        self.setup_changes(t);
        if self.started && t >= self.cfg.setup {
            self.players.advance(t - self.cfg.setup, &mut Vec::new());
            let next = *self.players.fields();
            self.set_fields(&next, t - self.cfg.setup);
        }
    }
}

impl EmulatedBoard for CertaboEmulator {
    fn next_due(&self) -> Option<Micros> {
        let line = self.host_seen.then_some(self.next_line);
        [line, self.next_setup_change(), self.players_due()]
            .into_iter()
            .flatten()
            .min()
    }

    fn next_link_due(&self) -> Option<Micros> {
        (!self.host_seen).then_some(self.next_link_line)
    }

    /// Before the host's first LED command the board streams on link time.
    fn link_time(&mut self, now: Micros, out: &mut Vec<u8>) {
        self.link_now = self.link_now.max(now);
        while !self.host_seen && self.next_link_line <= self.link_now {
            self.line(out);
            self.next_link_line += self.interval();
        }
    }

    fn host_input(&mut self, bytes: &[u8], out: &mut Vec<u8>) -> bool {
        self.host.extend_from_slice(bytes);
        if self.host.len() < self.leds.len() {
            return false;
        }
        self.leds.copy_from_slice(&self.host[..8]);
        self.unknown.add(&self.host[8..]);
        self.host.clear();
        self.led_commands += 1;
        out.extend(b"L\r\n");
        self.host_seen = true;
        true
    }

    fn advance(&mut self, now: Micros, out: &mut Vec<u8>) {
        loop {
            let state = [self.next_setup_change(), self.players_due()]
                .into_iter()
                .flatten()
                .min()
                .filter(|t| *t <= now);
            let line = self
                .host_seen
                .then_some(self.next_line)
                .filter(|t| *t <= now);
            match (state, line) {
                (Some(s), l) if l.is_none_or(|l| s <= l) => self.play_at(s),
                (_, Some(l)) => {
                    self.line(out);
                    self.next_line = l + self.interval();
                }
                _ => break,
            }
        }
    }

    fn unplugged(&mut self) {
        self.players.unplugged();
        self.unknown.add(&self.host);
        self.host.clear();
        self.host_seen = false;
        self.next_link_line = self.next_link_line.max(self.link_now);
    }

    fn reset(&mut self) {
        self.players.reset();
        self.host_seen = false;
        self.next_link_line = self.next_link_line.max(self.link_now);
    }

    fn after_plies(&self, t: Micros, k: usize) -> Micros {
        self.players.after_plies(t - self.cfg.setup, k) + self.cfg.setup
    }

    fn plies_started(&self, t: Micros) -> usize {
        self.players.plies_started(t - self.cfg.setup)
    }

    fn plies_settled(&self, t: Micros) -> usize {
        self.players.plies_settled(t - self.cfg.setup)
    }

    fn finished(&self) -> bool {
        self.players.finished()
    }

    fn texts(&self) -> &[String] {
        &[]
    }

    fn clock_commands(&self) -> ClockCommandStats {
        ClockCommandStats::default()
    }

    /// Bytes the board did not take (anything but whole LED commands).
    fn unknown_bytes(&self) -> u64 {
        self.unknown.count
    }

    fn unknown_sample(&self) -> &[u8] {
        &self.unknown.sample
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::certabo::codec::{CertaboFrame, LEDS_OFF, LineDecoder};
    use crate::sim::emulator::{ClockModel, EmulatorConfig, Script};
    use crate::sim::{SimConfig, pgn::parse_games};

    fn board(pgn: &str, cfg: CertaboConfig) -> CertaboEmulator {
        let games: Vec<_> = parse_games(pgn).into_iter().map(|g| g.unwrap()).collect();
        let script = Script::from_games(&games, &SimConfig::clean(1), 1_000_000);
        let players = Emulator::new(
            script,
            EmulatorConfig {
                clock: ClockModel::None,
                ..Default::default()
            },
        );
        CertaboEmulator::new(players, cfg)
    }

    fn frames(bytes: &[u8]) -> Vec<CertaboFrame> {
        let mut d = LineDecoder::new();
        let mut out = Vec::new();
        d.decode(bytes, &mut out);
        assert_eq!((d.bad_lines(), d.dropped_bytes()), (0, 0));
        out
    }

    #[test]
    fn streams_on_link_time_until_an_led_command_then_plays() {
        let mut em = board("1. e4 e5 2. Nf3 Nc6 *", CertaboConfig::default());
        let mut out = Vec::new();
        assert_eq!(em.next_link_due(), Some(0));
        em.link_time(2_000_000, &mut out);
        let lines = frames(&out).len();
        assert!((3..=5).contains(&lines), "{lines}");
        // The start position with a spare queen on d3 and d6.
        let CertaboFrame::Line(l) = &frames(&out)[0] else {
            panic!("a line")
        };
        let occupied = l.squares.iter().filter(|s| !s.is_empty()).count();
        assert_eq!(occupied, 34);
        assert!(!l.squares[43].is_empty() && !l.squares[19].is_empty());
        // No line on script time before the host is there.
        let mut none = Vec::new();
        em.advance(5_000_000, &mut none);
        assert!(none.is_empty());
        let mut em = board("1. e4 e5 2. Nf3 Nc6 *", CertaboConfig::default());
        out.clear();
        assert!(em.host_input(&LEDS_OFF, &mut out));
        assert_eq!(out, b"L\r\n");
        assert_eq!(em.next_link_due(), None);
        out.clear();
        em.advance(120_000_000, &mut out);
        assert!(em.finished());
        let got = frames(&out);
        assert!(got.len() > 150, "{}", got.len());
        assert_eq!(em.unknown_bytes(), 0);
        assert_eq!(em.unknown_pieces(), 0);
    }

    #[test]
    fn every_byte_but_whole_led_commands_is_counted() {
        let mut em = board("1. e4 *", CertaboConfig::default());
        let mut out = Vec::new();
        assert!(!em.host_input(&[1, 2, 3], &mut out));
        assert!(em.host_input(&[4, 5, 6, 7, 8, 9, 10], &mut out));
        assert_eq!(em.leds(), [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(em.unknown_bytes(), 2, "thrown away after the command");
        em.host_input(b"V5", &mut out);
        em.unplugged();
        assert_eq!(em.unknown_bytes(), 4);
        assert_eq!(em.led_commands, 1);
    }

    #[test]
    fn pieces_keep_their_ids_and_a_promotion_takes_the_spare_queen() {
        let pgn = "1. e4 d5 2. exd5 c6 3. dxc6 Nf6 4. cxb7 Nbd7 5. bxa8=Q *";
        let mut em = board(pgn, CertaboConfig::default());
        let mut out = Vec::new();
        em.host_input(&LEDS_OFF, &mut out);
        let spare = em
            .shown_ids()
            .iter()
            .filter(|(p, _)| *p == Role::Queen.of(Color::White))
            .map(|(_, id)| *id)
            .nth(1)
            .unwrap();
        let e2 = em.ids[52].unwrap();
        em.advance(200_000_000, &mut out);
        assert!(em.finished());
        assert_eq!(em.ids[0], Some(spare), "a8 holds the spare queen");
        assert!(
            em.off
                .iter()
                .any(|(p, id)| *p == Color::White.pawn() && *id == e2)
        );
        assert_eq!(em.unknown_pieces(), 0);
        // Without a spare the queen is a piece never shown.
        let mut em = board(
            pgn,
            CertaboConfig {
                spare_queens: 0,
                ..CertaboConfig::default()
            },
        );
        em.host_input(&LEDS_OFF, &mut out);
        em.advance(200_000_000, &mut out);
        assert_eq!(em.unknown_pieces(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn streams_on_a_pty_and_plays_once_the_host_turns_the_leds_off() {
        use crate::sim::emulator::runner::{self, Control, RunnerConfig};
        use std::io::{Read, Write};
        use std::time::Duration;
        let em = board("1. e4 e5 *", CertaboConfig::default());
        let mut h = runner::spawn(
            em,
            RunnerConfig {
                speed: 100.0,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(h.status().waiting);
        let path = h.status().path;
        let got = tokio::task::spawn_blocking(move || {
            let mut port = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .unwrap();
            let mut dec = LineDecoder::new();
            let mut frames = Vec::new();
            let mut buf = [0u8; 4096];
            // A line comes unasked, before the host says anything.
            while !frames.iter().any(|f| matches!(f, CertaboFrame::Line(_))) {
                let n = port.read(&mut buf).unwrap();
                dec.decode(&buf[..n], &mut frames);
            }
            port.write_all(&LEDS_OFF).unwrap();
            while !frames.contains(&CertaboFrame::LedAck) {
                let n = port.read(&mut buf).unwrap();
                dec.decode(&buf[..n], &mut frames);
            }
            (frames, dec.bad_lines())
        })
        .await
        .unwrap();
        assert_eq!(got.1, 0);
        assert!(h.wait_for(Duration::from_secs(20), |s| s.finished).await);
        h.send(Control::Stop);
        h.task.await.unwrap().unwrap();
    }

    #[test]
    fn noise_never_lasts_two_lines_on_a_square() {
        let mut em = board("1. e4 e5 2. Nf3 Nc6 *", CertaboConfig::noisy(3));
        let mut out = Vec::new();
        em.host_input(&LEDS_OFF, &mut out);
        out.clear();
        em.advance(5_900_000, &mut out); // the spare queens still stand
        let lines: Vec<CertaboLine> = frames(&out)
            .into_iter()
            .filter_map(|f| match f {
                CertaboFrame::Line(l) => Some(*l),
                _ => None,
            })
            .collect();
        let truth: Vec<Option<PieceId>> = (0..64)
            .map(|i| em.ids[i].or_else(|| em.spares.iter().find(|s| s.0 == i).map(|s| s.2)))
            .collect();
        let wrong =
            |l: &CertaboLine, i: usize| l.squares[i].normalized() != truth[i].unwrap_or_default();
        for pair in lines.windows(2) {
            for i in 0..64 {
                assert!(!(wrong(&pair[0], i) && wrong(&pair[1], i)), "field {i}");
            }
        }
        let (m, d, j) = em.noise;
        assert!(m > 0 && d > 0 && j > 0, "{:?}", em.noise);
    }
}
