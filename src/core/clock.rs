//! Reading the clock: which physical side is White, lever presses, times per colour.

use shakmaty::Color;

use super::event::ClockTimes;
use super::observation::{ClockReading, ClockSide, Micros};

/// What a new clock reading means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockChange {
    /// Nothing beyond the times.
    Tick,
    /// A player pressed: their side's turn ended and the other side's began.
    Press {
        /// The physical side that pressed (whose turn ended).
        side: ClockSide,
    },
    /// The lever moved while the clock was paused: an arbiter setting the clock.
    Set,
}

/// How much net evidence (µs of running time) decides which face is White's when nothing is
/// known yet, or turns an earlier decision round.
pub const DECIDE_EVIDENCE: i64 = 3_000_000;

/// Half-life of the evidence, in µs of clock time: old evidence fades so that a clock turned
/// round mid-game is relearned within minutes, while a few seconds of out-of-phase play (a
/// forgotten press, a press from the wrong side) never outweigh the game so far.
pub const EVIDENCE_HALF_LIFE: i64 = 300_000_000;

/// Where the current idea of White's side came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum SideSource {
    /// Nothing known.
    #[default]
    Unknown,
    /// A first guess: the face running when the game started, or the first press.
    Guess,
    /// Which face counted down while which colour had the move, over several readings.
    Evidence,
    /// Configuration or an operator: never relearned.
    Fixed,
}

/// The clock as the core knows it.
///
/// Which face is White's is learned from evidence (Article 6.5 leaves it to the arbiter, and
/// real players start clocks late, press from the wrong side or forget the first press): every
/// stretch of time during which a face counts down while a colour has the move is a vote that
/// this face is that colour's. Votes fade with [`EVIDENCE_HALF_LIFE`]; the side follows the
/// votes once they lead by [`DECIDE_EVIDENCE`]. Before that, the face running at the start and
/// the first press give a guess. A configured side always wins.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct ClockTracker {
    last: Option<ClockReading>,
    /// The physical side White uses, once known.
    pub white_side: Option<ClockSide>,
    /// `true` when `white_side` came from configuration or an operator (never re-learned).
    pub fixed: bool,
    /// Where `white_side` came from.
    source: SideSource,
    /// Net evidence in µs: positive = White is on the left, negative = on the right. Kept
    /// as its bits when saved (a resume point): read back exactly.
    #[serde(with = "f64_bits")]
    evidence: f64,
    /// How often the evidence turned a decided side round (for tests and logs).
    relearned: u32,
    /// Readings whose turn bits (D3/D4) disagreed with the lever bit (D1) while running.
    disagreements: u64,
}

/// The side whose turn it is according to a reading: the lever (D1: right side up = the right
/// player's clock runs), as real DGT 3000s report it. The turn bits (D3 = left, D4 = right)
/// agree with the lever in every real recording; [`turn_bits_disagree`] tells when they do not.
pub fn turn_side(r: &ClockReading) -> ClockSide {
    if r.right_side_up {
        ClockSide::Right
    } else {
        ClockSide::Left
    }
}

/// `true` when a running reading's turn bits name one side and the lever the other.
pub fn turn_bits_disagree(r: &ClockReading) -> bool {
    let bits = match (r.left_turn, r.right_turn) {
        (true, false) => Some(ClockSide::Left),
        (false, true) => Some(ClockSide::Right),
        _ => None,
    };
    r.running && bits.is_some_and(|b| b != turn_side(r))
}

impl ClockSide {
    /// The other side.
    pub fn other(self) -> ClockSide {
        match self {
            ClockSide::Left => ClockSide::Right,
            ClockSide::Right => ClockSide::Left,
        }
    }
}

/// White's side if `side` is `color`'s.
fn white_side_if(side: ClockSide, color: Color) -> ClockSide {
    match color {
        Color::White => side,
        Color::Black => side.other(),
    }
}

impl ClockTracker {
    /// A tracker with White's side fixed (configuration), or to be learned.
    pub fn new(white_side: Option<ClockSide>) -> Self {
        ClockTracker {
            white_side,
            fixed: white_side.is_some(),
            source: if white_side.is_some() {
                SideSource::Fixed
            } else {
                SideSource::Unknown
            },
            ..Default::default()
        }
    }

    /// The latest reading.
    pub fn last(&self) -> Option<&ClockReading> {
        self.last.as_ref()
    }

    /// Where the current idea of White's side came from.
    pub fn source(&self) -> SideSource {
        self.source
    }

    /// How often the evidence turned a decided side round.
    pub fn relearned(&self) -> u32 {
        self.relearned
    }

    /// Readings whose turn bits disagreed with the lever while running.
    pub fn disagreements(&self) -> u64 {
        self.disagreements
    }

    /// Feed a reading; says whether it was a press.
    pub fn update(&mut self, r: ClockReading) -> ClockChange {
        if turn_bits_disagree(&r) {
            self.disagreements += 1;
        }
        let change = match self.last {
            Some(prev) if turn_side(&prev) != turn_side(&r) => {
                if r.running && prev.running {
                    ClockChange::Press {
                        side: turn_side(&prev),
                    }
                } else {
                    ClockChange::Set
                }
            }
            _ => ClockChange::Tick,
        };
        self.last = Some(r);
        change
    }

    /// Evidence: the face running in the latest reading counted down for `dt` µs while `color`
    /// had the move (the engine calls this only while clock and board are known to be in
    /// phase). Nothing when the clock is paused.
    pub fn observe(&mut self, color: Color, dt: Micros) {
        let Some(r) = self.last.filter(|r| r.running) else {
            return;
        };
        if dt <= 0 {
            return;
        }
        let decay = 0.5f64.powf(dt as f64 / EVIDENCE_HALF_LIFE as f64);
        let sign = match white_side_if(turn_side(&r), color) {
            ClockSide::Left => 1.0,
            ClockSide::Right => -1.0,
        };
        self.evidence = self.evidence * decay + sign * dt as f64;
        if self.fixed || self.evidence.abs() < DECIDE_EVIDENCE as f64 {
            return;
        }
        let side = if self.evidence > 0.0 {
            ClockSide::Left
        } else {
            ClockSide::Right
        };
        if self.source == SideSource::Evidence && self.white_side != Some(side) {
            self.relearned += 1;
        }
        self.white_side = Some(side);
        self.source = SideSource::Evidence;
    }

    /// A new game: forget what was learned (the arbiter may have turned the clock round).
    pub fn new_game(&mut self) {
        if !self.fixed {
            self.white_side = None;
            self.source = SideSource::Unknown;
            self.evidence = 0.0;
        }
    }

    /// A first guess from a press by `side` completing a move by `color`: taken only while
    /// nothing better is known, so a late or wrong-side press cannot swap the colours.
    pub fn learn_press(&mut self, side: ClockSide, color: Color) {
        if matches!(self.source, SideSource::Unknown | SideSource::Guess) {
            self.white_side = Some(white_side_if(side, color));
            self.source = SideSource::Guess;
        }
    }

    /// A first guess at the start of a game: the running face is the side to move's.
    pub fn learn_start(&mut self, to_move: Color) {
        if self.source != SideSource::Unknown {
            return;
        }
        if let Some(r) = self.last.filter(|r| r.running) {
            self.white_side = Some(white_side_if(turn_side(&r), to_move));
            self.source = SideSource::Guess;
        }
    }

    /// Fix White's side (operator or configuration).
    pub fn fix_white_side(&mut self, side: ClockSide) {
        self.white_side = Some(side);
        self.fixed = true;
        self.source = SideSource::Fixed;
    }

    /// The colour of a physical side, when known.
    pub fn color_of(&self, side: ClockSide) -> Option<Color> {
        self.white_side.map(|w| {
            if w == side {
                Color::White
            } else {
                Color::Black
            }
        })
    }

    /// Times per colour of the latest reading, when the sides are known.
    pub fn times(&self) -> Option<ClockTimes> {
        self.last.and_then(|r| self.times_of(&r))
    }

    /// Times per colour of a reading, when the sides are known.
    pub fn times_of(&self, r: &ClockReading) -> Option<ClockTimes> {
        let w = self.white_side?;
        let (white, black) = match w {
            ClockSide::Left => (r.left.millis, r.right.millis),
            ClockSide::Right => (r.right.millis, r.left.millis),
        };
        Some(ClockTimes { white, black })
    }

    /// Whose clock runs, by colour (`None` when paused or unknown).
    pub fn running(&self) -> Option<Color> {
        let r = self.last?;
        if !r.running {
            return None;
        }
        self.color_of(turn_side(&r))
    }

    /// The colour whose final flag (the clock stopped at zero) is up, if any (6.9).
    pub fn flagged(&self) -> Option<Color> {
        let r = self.last?;
        if r.left.flag {
            self.color_of(ClockSide::Left)
        } else if r.right.flag {
            self.color_of(ClockSide::Right)
        } else {
            None
        }
    }

    /// The faces whose flag is shown (hours D6) in the latest reading.
    pub fn flags_shown(&self) -> [bool; 2] {
        self.last
            .map_or([false; 2], |r| [r.left.flag_shown, r.right.flag_shown])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observation::ClockFace;

    /// A reading as a real DGT 3000 sends it: lever and turn bits agree.
    fn reading(left_running: bool, running: bool) -> ClockReading {
        ClockReading {
            left: ClockFace {
                millis: 60_000,
                ..Default::default()
            },
            right: ClockFace {
                millis: 50_000,
                ..Default::default()
            },
            running,
            right_side_up: !left_running,
            left_turn: left_running,
            right_turn: !left_running,
            battery_low: false,
        }
    }

    const S: Micros = 1_000_000;

    #[test]
    fn press_is_a_turn_change_while_running() {
        let mut c = ClockTracker::new(None);
        assert_eq!(c.update(reading(true, true)), ClockChange::Tick);
        c.learn_start(Color::White);
        assert_eq!(c.white_side, Some(ClockSide::Left));
        assert_eq!(c.source(), SideSource::Guess);
        assert_eq!(
            c.update(reading(false, true)),
            ClockChange::Press {
                side: ClockSide::Left
            }
        );
        assert_eq!(
            c.times(),
            Some(ClockTimes {
                white: 60_000,
                black: 50_000
            })
        );
        assert_eq!(c.running(), Some(Color::Black));
    }

    #[test]
    fn lever_moved_while_paused_is_a_setting() {
        let mut c = ClockTracker::new(None);
        c.update(reading(true, false));
        assert_eq!(c.update(reading(false, false)), ClockChange::Set);
    }

    #[test]
    fn fixed_side_is_not_relearned() {
        let mut c = ClockTracker::new(Some(ClockSide::Right));
        c.learn_press(ClockSide::Left, Color::White);
        c.update(reading(true, true));
        c.observe(Color::White, 60 * S);
        assert_eq!(c.white_side, Some(ClockSide::Right));
        assert_eq!(c.source(), SideSource::Fixed);
    }

    #[test]
    fn the_face_counting_down_while_white_thinks_is_whites() {
        let mut c = ClockTracker::new(None);
        c.update(reading(false, true));
        for _ in 0..5 {
            c.observe(Color::White, S);
        }
        assert_eq!(c.white_side, Some(ClockSide::Right));
        assert_eq!(c.source(), SideSource::Evidence);
        // A late press read the wrong way round (Black's move on the board) changes nothing.
        c.learn_press(ClockSide::Right, Color::Black);
        assert_eq!(c.white_side, Some(ClockSide::Right));
    }

    #[test]
    fn a_wrong_first_guess_is_turned_round_by_the_evidence() {
        let mut c = ClockTracker::new(None);
        c.update(reading(true, true));
        c.learn_press(ClockSide::Left, Color::Black);
        assert_eq!(c.white_side, Some(ClockSide::Right));
        // The left face counts down whenever White has the move, the right one for Black.
        for turn in 0..6 {
            let white = turn % 2 == 0;
            c.update(reading(white, true));
            for _ in 0..4 {
                c.observe(Color::from_white(white), S);
            }
        }
        assert_eq!(c.white_side, Some(ClockSide::Left));
        assert_eq!(c.relearned(), 0, "a guess turned round is no relearning");
    }

    #[test]
    fn a_clock_turned_round_is_relearned_and_a_new_game_forgets() {
        let mut c = ClockTracker::new(None);
        c.update(reading(true, true));
        for _ in 0..120 {
            c.observe(Color::White, S);
        }
        assert_eq!(c.white_side, Some(ClockSide::Left));
        // Minutes of the other face counting down for White: the clock was turned round.
        c.update(reading(false, true));
        for _ in 0..600 {
            c.observe(Color::White, S);
        }
        assert_eq!(c.white_side, Some(ClockSide::Right));
        assert_eq!(c.relearned(), 1);
        c.new_game();
        assert_eq!(c.white_side, None);
    }

    #[test]
    fn turn_bits_against_the_lever_are_counted() {
        let mut c = ClockTracker::new(None);
        let mut r = reading(true, true);
        c.update(r);
        assert_eq!(c.disagreements(), 0);
        r.left_turn = false;
        r.right_turn = true;
        c.update(r);
        assert_eq!(c.disagreements(), 1);
        assert_eq!(turn_side(&r), ClockSide::Left, "the lever decides");
    }
}

/// An `f64` saved as its bits, so that it reads back exactly (decimal text may not).
mod f64_bits {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(v.to_bits())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        u64::deserialize(d).map(f64::from_bits)
    }
}
