//! Reading the clock: which physical side is White, lever presses, times per colour.

use shakmaty::Color;

use super::event::ClockTimes;
use super::observation::{ClockReading, ClockSide};

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

/// The clock as the core knows it.
#[derive(Debug, Clone, Default)]
pub struct ClockTracker {
    last: Option<ClockReading>,
    /// The physical side White uses, once known.
    pub white_side: Option<ClockSide>,
    /// `true` when `white_side` came from configuration or an operator (never re-learned).
    pub fixed: bool,
}

/// The side whose turn it is according to a reading.
pub fn turn_side(r: &ClockReading) -> ClockSide {
    match (r.left_turn, r.right_turn) {
        (true, false) => ClockSide::Left,
        (false, true) => ClockSide::Right,
        // Without turn bits, the lever tells: right side up = the right player's clock runs.
        _ if r.right_side_up => ClockSide::Right,
        _ => ClockSide::Left,
    }
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

impl ClockTracker {
    /// A tracker with White's side fixed (configuration), or to be learned.
    pub fn new(white_side: Option<ClockSide>) -> Self {
        ClockTracker {
            last: None,
            white_side,
            fixed: white_side.is_some(),
        }
    }

    /// The latest reading.
    pub fn last(&self) -> Option<&ClockReading> {
        self.last.as_ref()
    }

    /// Feed a reading; says whether it was a press.
    pub fn update(&mut self, r: ClockReading) -> ClockChange {
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

    /// Learn White's side from a press by `side` after a move by `color` (unless fixed).
    pub fn learn_press(&mut self, side: ClockSide, color: Color) {
        if !self.fixed {
            self.white_side = Some(match color {
                Color::White => side,
                Color::Black => side.other(),
            });
        }
    }

    /// Learn White's side at the start of a game: the running side is the side to move's.
    pub fn learn_start(&mut self, to_move: Color) {
        if self.fixed || self.white_side.is_some() {
            return;
        }
        if let Some(r) = self
            .last
            .filter(|r| r.running && r.left_turn != r.right_turn)
        {
            let running = turn_side(&r);
            self.white_side = Some(match to_move {
                Color::White => running,
                Color::Black => running.other(),
            });
        }
    }

    /// Fix White's side (operator or configuration).
    pub fn fix_white_side(&mut self, side: ClockSide) {
        self.white_side = Some(side);
        self.fixed = true;
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
        let r = self.last?;
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

    /// The colour whose flag has fallen, if any.
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::observation::ClockFace;

    fn reading(left_turn: bool, running: bool) -> ClockReading {
        ClockReading {
            left: ClockFace {
                millis: 60_000,
                flag: false,
                flag_shown: false,
            },
            right: ClockFace {
                millis: 50_000,
                flag: false,
                flag_shown: false,
            },
            running,
            right_side_up: left_turn,
            left_turn,
            right_turn: !left_turn,
            battery_low: false,
        }
    }

    #[test]
    fn press_is_a_turn_change_while_running() {
        let mut c = ClockTracker::new(None);
        assert_eq!(c.update(reading(true, true)), ClockChange::Tick);
        c.learn_start(Color::White);
        assert_eq!(c.white_side, Some(ClockSide::Left));
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
        assert_eq!(c.white_side, Some(ClockSide::Right));
    }
}
