//! Keeping one board link right while it misbehaves the way real links do (sans-IO: times and
//! received messages in, bytes to send and notes out).
//!
//! Board protocols may have no checksums (DGT's has none) and USB and Bluetooth links drop
//! bytes; boards reset. The bytes it asks to send come from the board's driver.
//! What this state machine does about it:
//!
//! - **Shadow board.** The fields as the board reported them (dumps and field updates). A dump
//!   is a snapshot taken in stream order, so it must equal the shadow; when it does not, field
//!   updates were lost (or the board reset and missed changes): noted, and the dump goes to the
//!   core, which reconciles the game with it.
//! - **Dumps when they are cheap and useful.** After every (re)connection (the driver's
//!   [`BoardDriver::start`]: streaming on, and the whole board); shortly after a bad frame; when the field updates have settled
//!   ([`LinkConfig::settle_dump`]) on a board the game does not explain, or a quarter of that
//!   after a clock press on such a board (a lost update leaves the board unexplained; a dump
//!   repairs it before the core judges the press or calls the pieces displaced); and
//!   after a quiet spell ([`LinkConfig::quiet_dump`], 20 s by default) with the start re-sent,
//!   which also wakes a board that reset while the clock was stopped.
//! - **A board that reset with its port open** may come back answering requests but sending
//!   nothing unasked (a DGT board in IDLE, `docs/dgt-protocol.md`). While a clock runs, a
//!   board that reports it sends its times about once a second; when they stop but the board
//!   answers the keep-alive, it has reset: noted, and the start is sent again (with a dump).
//! - **Keep-alive.** After [`LinkConfig::keepalive`] of silence the serial number is asked
//!   for; twice that is a dead link.
//! - **Bluetooth boards** are asked for their battery status now and then.
//!
//! Line cost of the dumps: 1 byte out and 67 back per dump; at most one per quiet spell
//! (20 s: 3.4 B/s) plus one per move whose updates leave the board unexplained for longer than
//! the settle window (a piece held in the hand), far under 5% of the 960 B/s of a 9600-baud line.

use std::time::{Duration, Instant};

use super::Note;
use crate::core::engine::BoardEngine;
use crate::core::observation::{FieldArray, Observation, SquareReading};
use crate::driver::port::{Boards, PortDead, SINGLE};
use crate::driver::{BoardDriver, Message, SessionMessage};

/// Whether the core's game explains `fields` (device field numbering): they show the current game's
/// position, or there is no game being played to explain them.
pub fn game_explains(engine: &BoardEngine, fields: &FieldArray) -> bool {
    let Some(game) = engine.games().last().filter(|g| g.accepts_moves()) else {
        return true;
    };
    let orientation = engine.orientation();
    let mut board = shakmaty::Board::empty();
    for (i, f) in fields.iter().enumerate() {
        match f {
            SquareReading::Piece(p) => board.set_piece_at(orientation.square_of(i as u8), *p),
            SquareReading::Special(_) => return false,
            SquareReading::Empty => {}
        }
    }
    board == *shakmaty::Position::board(game.position())
}

/// How many times a link asks the board's memory again while moves are missing
/// ([`Link::poll`]): each read of a DGT board's full memory takes about 8 s at 9,600 baud.
pub const MEMORY_RECALLS: u32 = 2;

pub use crate::driver::port::LinkKind;

/// Timings of a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkConfig {
    /// Silence before a keep-alive request (twice this: a dead link).
    pub keepalive: Duration,
    /// Field updates quiet this long: send the start again (streaming on, a dump).
    pub quiet_dump: Duration,
    /// Field updates settled this long on a board the game does not explain: ask for a dump.
    pub settle_dump: Duration,
    /// Ask a Bluetooth board for its battery status this often (first at once).
    pub battery_every: Option<Duration>,
    /// A dump asked for and not come after this is asked for again when due.
    pub dump_timeout: Duration,
}

impl LinkConfig {
    /// The timings for a link of `kind`, with the configured keep-alive and quiet spell.
    pub fn new(kind: LinkKind, keepalive: Duration, quiet_dump: Duration) -> LinkConfig {
        let k = kind.scan_factor();
        LinkConfig {
            keepalive,
            quiet_dump,
            settle_dump: Duration::from_millis(400) * k,
            battery_every: (kind == LinkKind::Bluetooth).then_some(Duration::from_secs(300)),
            dump_timeout: Duration::from_secs(3),
        }
    }
}

/// What a dump request is for (counted for the line-cost figures).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpWhy {
    /// A bad frame was seen.
    BadFrame,
    /// Updates settled on a board the game does not explain.
    Unexplained,
    /// A quiet spell (with the start re-sent).
    Quiet,
    /// The board reset (with the start re-sent).
    Reset,
}

/// Counters of one link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Dumps asked for, by reason: bad frame, unexplained, quiet, reset.
    pub dumps: [u64; 4],
    /// Dumps that differed from the field updates.
    pub dumps_differing: u64,
    /// Resets detected.
    pub resets: u64,
}

/// The link state machine of one session.
#[derive(Debug)]
pub struct Link {
    driver: &'static dyn BoardDriver,
    cfg: LinkConfig,
    shadow: Option<FieldArray>,
    last_rx: Instant,
    asked_alive: bool,
    /// Last field update (or dump).
    last_field: Instant,
    /// Last message the board sent unasked (field update, clock times).
    last_stream: Instant,
    /// The clock was running (and sending its times) at the last clock message.
    clock_running: bool,
    /// The turn bits (left, right) of the last clock message.
    turn: Option<(bool, bool)>,
    /// A clock press was seen: check the board then (the move's last update may be lost, and
    /// the core judges the press once its settle window is over).
    press_check_at: Option<Instant>,
    /// The settle check was done for the current shadow.
    settled_checked: bool,
    dump_asked: Option<Instant>,
    last_dump_ask: Instant,
    bad_at: Option<Instant>,
    battery_at: Option<Instant>,
    /// Memory reads left for missing moves ([`MEMORY_RECALLS`]; 0 for a family without one).
    recalls: u32,
    /// Counters.
    pub stats: LinkStats,
}

impl Link {
    /// A link whose session has just sent the driver's start (streaming on, a dump) at `now`.
    pub fn new(driver: &'static dyn BoardDriver, cfg: LinkConfig, now: Instant) -> Link {
        Link {
            driver,
            cfg,
            shadow: None,
            last_rx: now,
            asked_alive: false,
            last_field: now,
            last_stream: now,
            clock_running: false,
            turn: None,
            press_check_at: None,
            settled_checked: true,
            dump_asked: Some(now),
            last_dump_ask: now,
            bad_at: None,
            battery_at: cfg.battery_every.map(|_| now),
            recalls: if driver.memory_request().is_some() {
                MEMORY_RECALLS
            } else {
                0
            },
            stats: LinkStats::default(),
        }
    }

    /// The fields as the board reported them.
    pub fn shadow(&self) -> Option<&FieldArray> {
        self.shadow.as_ref()
    }

    /// Bytes came in at `now`.
    pub fn on_rx(&mut self, now: Instant) {
        self.last_rx = now;
        self.asked_alive = false;
    }

    /// A frame was rejected at `now`: a dump shortly (once the rest of the burst is in).
    pub fn on_bad_frame(&mut self, now: Instant) {
        if self.bad_at.is_none() {
            self.bad_at = Some(now + Duration::from_millis(100));
        }
    }

    /// A decoded message came in at `now`.
    pub fn on_message(&mut self, now: Instant, msg: &Message) -> Option<Note> {
        match msg {
            Message::Observation(Observation::Field { index, reading }) => {
                if let Some(s) = &mut self.shadow {
                    s[usize::from(*index & 0x3F)] = *reading;
                }
                self.last_field = now;
                self.last_stream = now;
                self.settled_checked = false;
                None
            }
            Message::Observation(Observation::Clock(r)) => {
                self.last_stream = now;
                let turn = (r.left_turn, r.right_turn);
                if r.running && self.turn.is_some_and(|t| t != turn) {
                    self.press_check_at = Some(now + self.cfg.settle_dump / 4);
                }
                self.turn = Some(turn);
                let face = if r.right_turn { r.right } else { r.left };
                self.clock_running = r.running && (r.left_turn || r.right_turn) && !face.flag;
                None
            }
            Message::Observation(Observation::ClockAbsent) => {
                self.clock_running = false;
                None
            }
            Message::Observation(Observation::BoardDump(fields)) => {
                self.dump_asked = None;
                self.settled_checked = true;
                let before = self.shadow.replace(**fields);
                let diff: Vec<u8> = before
                    .iter()
                    .flat_map(|b| b.iter().zip(fields.iter()).enumerate())
                    .filter(|(_, (a, b))| a != b)
                    .map(|(i, _)| i as u8)
                    .collect();
                let first = *diff.first()?;
                self.stats.dumps_differing += 1;
                Some(Note::DumpDiffers {
                    fields: diff.len(),
                    first,
                })
            }
            Message::Session(SessionMessage::Battery(b)) => Some(Note::Battery(*b)),
            _ => None,
        }
    }

    fn ask_dump(&mut self, now: Instant, why: DumpWhy, out: &mut Vec<u8>) -> bool {
        if self
            .dump_asked
            .is_some_and(|at| now.duration_since(at) < self.cfg.dump_timeout)
        {
            return false;
        }
        if matches!(why, DumpWhy::Quiet | DumpWhy::Reset) {
            out.extend(self.driver.start());
        } else {
            out.extend(self.driver.dump_request());
        }
        self.dump_asked = Some(now);
        self.last_dump_ask = now;
        self.stats.dumps[why as usize] += 1;
        true
    }

    /// What to do at `now`: bytes to send (appended to `out`), a note, or the reason the link
    /// is dead, asking `core` whether the game explains the board.
    ///
    /// Updates settled on a board the game does not explain ask for a dump; when moves are
    /// missing besides (the board is ahead of the record and no single legal sequence leads
    /// there) and the family keeps a memory, the memory is asked for first, then the dump: the
    /// memory holds every change since the first read (the moves made while it was being sent,
    /// which the first dump after it showed), so the core recovers them exactly. At most
    /// [`MEMORY_RECALLS`] times per link.
    pub fn poll(
        &mut self,
        now: Instant,
        boards: &dyn Boards,
        out: &mut Vec<u8>,
    ) -> Result<Option<Note>, PortDead> {
        let silent = now.duration_since(self.last_rx);
        if silent >= self.cfg.keepalive * 2 {
            return Err(PortDead::Silent(silent));
        }
        if silent >= self.cfg.keepalive && !self.asked_alive {
            self.asked_alive = true;
            out.extend(self.driver.keepalive());
        }
        let mut note = None;
        // The board answered after its clock times stopped coming: it reset, and streams no
        // more.
        let quiet_stream = now.duration_since(self.last_stream);
        if self.clock_running
            && quiet_stream >= self.cfg.keepalive.max(Duration::from_secs(3))
            && self.last_rx > self.last_stream
        {
            self.clock_running = false;
            self.dump_asked = None;
            self.ask_dump(now, DumpWhy::Reset, out);
            self.stats.resets += 1;
            self.last_stream = now;
            note = Some(Note::Reset {
                silent_secs: quiet_stream.as_secs(),
            });
        }
        if self.bad_at.is_some_and(|t| t <= now) && self.ask_dump(now, DumpWhy::BadFrame, out) {
            self.bad_at = None;
        }
        let press_check = self.press_check_at.is_some_and(|t| t <= now);
        if press_check
            || !self.settled_checked && now.duration_since(self.last_field) >= self.cfg.settle_dump
        {
            self.settled_checked = true;
            self.press_check_at = None;
            if let Some(s) = &self.shadow
                && !boards.explains(SINGLE, s)
            {
                let recall = self.recalls > 0 && boards.moves_missing(SINGLE);
                let mut asked = Vec::new();
                if self.ask_dump(now, DumpWhy::Unexplained, &mut asked) && recall {
                    self.recalls -= 1;
                    out.extend(self.driver.memory_request().unwrap_or_default());
                    note = Some(Note::MemoryAskedAgain);
                }
                out.extend(asked);
            }
        }
        if now.duration_since(self.last_field) >= self.cfg.quiet_dump
            && now.duration_since(self.last_dump_ask) >= self.cfg.quiet_dump
        {
            self.ask_dump(now, DumpWhy::Quiet, out);
        }
        if let (Some(at), Some(every)) = (self.battery_at, self.cfg.battery_every)
            && at <= now
        {
            out.extend(self.driver.battery_request().unwrap_or_default());
            self.battery_at = Some(now + every);
        }
        Ok(note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::dgt::{BatteryStatus, Dgt, DgtMessage, message};

    impl Link {
        fn on_dgt(&mut self, now: Instant, msg: &DgtMessage) -> Option<Note> {
            self.on_message(now, &message(msg.clone()))
        }
    }
    use crate::core::observation::{ClockFace, ClockReading};
    use shakmaty::{Color, Piece, Role};

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    fn cfg() -> LinkConfig {
        LinkConfig::new(LinkKind::Wired, 5 * S, 20 * S)
    }

    fn pawn() -> SquareReading {
        SquareReading::Piece(Piece {
            color: Color::White,
            role: Role::Pawn,
        })
    }

    fn start() -> FieldArray {
        let mut f = [SquareReading::Empty; 64];
        f[52] = pawn();
        f
    }

    fn running(left: bool) -> DgtMessage {
        DgtMessage::ClockTimes(ClockReading {
            left: ClockFace {
                millis: 60_000,
                ..Default::default()
            },
            right: ClockFace {
                millis: 60_000,
                ..Default::default()
            },
            running: true,
            right_side_up: !left,
            left_turn: left,
            right_turn: !left,
            battery_low: false,
        })
    }

    fn poll(l: &mut Link, t: Instant, explains: bool) -> (Vec<u8>, Option<Note>) {
        poll_missing(l, t, explains, false)
    }

    fn poll_missing(
        l: &mut Link,
        t: Instant,
        explains: bool,
        missing: bool,
    ) -> (Vec<u8>, Option<Note>) {
        let mut out = Vec::new();
        let n = l.poll(t, &Answers { explains, missing }, &mut out).unwrap();
        (out, n)
    }

    /// What the board's core answers a link's poll, whatever it asks.
    struct Answers {
        explains: bool,
        missing: bool,
    }

    impl Boards for Answers {
        fn explains(&self, _unit: crate::driver::port::Unit, _fields: &FieldArray) -> bool {
            self.explains
        }
        fn game_in_progress(&self, _unit: crate::driver::port::Unit) -> bool {
            true
        }
        fn at_game_start(&self, _unit: crate::driver::port::Unit) -> bool {
            false
        }
        fn away_for(&self, _unit: crate::driver::port::Unit) -> Option<Duration> {
            None
        }
        fn moves_missing(&self, _unit: crate::driver::port::Unit) -> bool {
            self.missing
        }
    }

    /// A white pawn reported on field `index` at `t`.
    fn put_pawn(l: &mut Link, t: Instant, index: u8) {
        l.on_dgt(
            t,
            &DgtMessage::FieldUpdate {
                index,
                reading: pawn(),
            },
        );
    }

    /// A link with the first dump in at `t0`.
    fn link(t0: Instant) -> Link {
        let mut l = Link::new(&Dgt, cfg(), t0);
        l.on_rx(t0);
        assert_eq!(
            l.on_dgt(t0, &DgtMessage::BoardDump(Box::new(start()))),
            None
        );
        l
    }

    #[test]
    fn a_dump_that_differs_from_the_updates_is_noted() {
        let t0 = Instant::now();
        let mut l = link(t0);
        // e2-e4, but the update "e2 empty" was lost.
        put_pawn(&mut l, t0 + S, 36);
        // Not settled yet: nothing.
        assert_eq!(poll(&mut l, t0 + S + 100 * MS, false).0, b"");
        // Settled on a board the game does not explain: a dump.
        assert_eq!(poll(&mut l, t0 + S + 400 * MS, false).0, [0x42]);
        assert_eq!(poll(&mut l, t0 + S + 500 * MS, false).0, b"", "asked once");
        let mut dump = start();
        dump[52] = SquareReading::Empty;
        dump[36] = pawn();
        assert_eq!(
            l.on_dgt(t0 + S + 600 * MS, &DgtMessage::BoardDump(Box::new(dump))),
            Some(Note::DumpDiffers {
                fields: 1,
                first: 52
            })
        );
        assert_eq!(l.shadow(), Some(&dump));
        assert_eq!(l.stats.dumps[DumpWhy::Unexplained as usize], 1);
    }

    #[test]
    fn while_moves_are_missing_the_memory_is_asked_again_before_the_dump_a_few_times() {
        let t0 = Instant::now();
        let mut l = link(t0);
        let mut t = t0;
        let mut asked = Vec::new();
        for k in 0..MEMORY_RECALLS + 1 {
            // A move settles on a board the record is behind by missing moves.
            t += 3 * S;
            l.on_rx(t);
            put_pawn(&mut l, t, 36 + k as u8);
            let (out, note) = poll_missing(&mut l, t + 400 * MS, false, true);
            asked.push((out, note));
        }
        let again = (vec![0x49, 0x42], Some(Note::MemoryAskedAgain));
        assert_eq!(
            asked[..MEMORY_RECALLS as usize],
            vec![again; MEMORY_RECALLS as usize][..]
        );
        // Then only the dump, as for any unexplained board.
        assert_eq!(asked[MEMORY_RECALLS as usize], (vec![0x42], None));
        // No moves missing: the dump alone.
        let mut l = link(t0);
        put_pawn(&mut l, t0 + S, 36);
        assert_eq!(
            poll_missing(&mut l, t0 + S + 400 * MS, false, false),
            (vec![0x42], None)
        );
    }

    #[test]
    fn an_explained_board_costs_no_dump_until_a_quiet_spell() {
        let t0 = Instant::now();
        let mut l = link(t0);
        l.on_dgt(
            t0 + S,
            &DgtMessage::FieldUpdate {
                index: 52,
                reading: SquareReading::Empty,
            },
        );
        l.on_dgt(
            t0 + S,
            &DgtMessage::FieldUpdate {
                index: 36,
                reading: pawn(),
            },
        );
        let mut t = t0 + S;
        let mut sent = Vec::new();
        while t < t0 + 22 * S {
            t += 250 * MS;
            // The clock keeps the link alive.
            l.on_rx(t);
            l.on_dgt(t, &running(true));
            sent.extend(poll(&mut l, t, true).0);
        }
        // One quiet dump, with the update mode set again, 20 s after the last update.
        assert_eq!(sent, [0x4B, 0x42]);
        assert_eq!(l.stats.dumps[DumpWhy::Quiet as usize], 1);
    }

    #[test]
    fn a_board_that_answers_but_stopped_streaming_while_its_clock_ran_has_reset() {
        let t0 = Instant::now();
        let mut l = link(t0);
        l.on_rx(t0 + S);
        l.on_dgt(t0 + S, &running(false));
        // The board resets: nothing more comes; the keep-alive goes out after 5 s.
        assert_eq!(poll(&mut l, t0 + 6 * S, true).0, [0x45]);
        assert_eq!(poll(&mut l, t0 + 6 * S + MS, true), (vec![], None));
        // It answers (serial number): it is alive but in IDLE.
        l.on_rx(t0 + 6 * S + 20 * MS);
        l.on_dgt(
            t0 + 6 * S + 20 * MS,
            &DgtMessage::SerialNumber("10001".into()),
        );
        let (out, note) = poll(&mut l, t0 + 6 * S + 100 * MS, true);
        assert_eq!(out, [0x4B, 0x42]);
        assert_eq!(note, Some(Note::Reset { silent_secs: 5 }));
        assert_eq!(l.stats.resets, 1);
        // Noted once.
        assert_eq!(poll(&mut l, t0 + 7 * S, true).1, None);
    }

    #[test]
    fn a_stopped_clock_is_no_sign_of_a_reset_and_silence_kills_the_link() {
        let t0 = Instant::now();
        let mut l = link(t0);
        let mut stopped = running(true);
        if let DgtMessage::ClockTimes(r) = &mut stopped {
            r.running = false;
        }
        l.on_rx(t0 + S);
        l.on_dgt(t0 + S, &stopped);
        assert_eq!(poll(&mut l, t0 + 6 * S, true).0, [0x45]);
        l.on_rx(t0 + 6 * S + 20 * MS);
        assert_eq!(poll(&mut l, t0 + 7 * S, true), (vec![], None));
        let mut out = Vec::new();
        let answers = Answers {
            explains: true,
            missing: false,
        };
        assert!(l.poll(t0 + 17 * S, &answers, &mut out).is_err());
    }

    #[test]
    fn bad_frames_ask_for_one_dump_and_bluetooth_for_the_battery() {
        let t0 = Instant::now();
        let mut l = link(t0);
        l.on_bad_frame(t0 + S);
        l.on_bad_frame(t0 + S + 10 * MS);
        assert_eq!(poll(&mut l, t0 + S + 50 * MS, true).0, b"");
        assert_eq!(poll(&mut l, t0 + S + 150 * MS, true).0, [0x42]);
        assert_eq!(poll(&mut l, t0 + S + 250 * MS, true).0, b"");

        let bt = LinkConfig::new(LinkKind::Bluetooth, 5 * S, 20 * S);
        assert_eq!(bt.settle_dump, 800 * MS);
        let mut l = Link::new(&Dgt, bt, t0);
        assert_eq!(poll(&mut l, t0, true).0, [0x4C]);
        let b = BatteryStatus::from_raw(vec![88, 0x7F, 0x7F, 0, 0, 0, 0, 0, 2]);
        assert_eq!(
            l.on_dgt(t0, &DgtMessage::Battery(b.clone())),
            Some(Note::Battery(b.level()))
        );
    }
}
