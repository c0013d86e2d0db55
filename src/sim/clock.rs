//! A DGT 3000 clock as the board relays it (BWTIME, `docs/dgt-protocol.md` §2.1).
//!
//! Times are kept per physical side (left/right, seen from the front). The lever is a seesaw:
//! the side that is up is the side whose time runs, so pressing one's own side down starts the
//! opponent's time. With White on the left and White to move the clock reads `p6 = 0x09`
//! (running, left player's turn: D3); after White's press `0x13` (running, right side up, right
//! player's turn: D4), as real DGT 3000s send it (`docs/dgt-protocol.md` §2.1).

use shakmaty::Color;

use crate::core::observation::{ClockFace, ClockReading, ClockSide, Micros};

/// Clock settings for one game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockConfig {
    /// Starting time of each side, in milliseconds.
    pub base_ms: u32,
    /// Fischer increment added to a player's time on each press, in milliseconds.
    pub increment_ms: u32,
    /// White's clock face is the right one (else the left one).
    pub white_on_right: bool,
}

impl Default for ClockConfig {
    /// 90 minutes + 30 seconds, White on the left.
    fn default() -> Self {
        ClockConfig {
            base_ms: 90 * 60 * 1000,
            increment_ms: 30_000,
            white_on_right: false,
        }
    }
}

/// The simulated clock: remaining times, which side runs, lever position.
#[derive(Debug, Clone)]
pub struct Dgt3000 {
    cfg: ClockConfig,
    /// Remaining time of the left / right face at `since`, in microseconds.
    left_us: i64,
    right_us: i64,
    /// The side whose time runs, once started.
    running: Option<ClockSide>,
    /// When the running side's time last started.
    since: Micros,
    /// Lever: right side up.
    right_side_up: bool,
    /// Stopped by the arbiter (the pause button): no time runs, the lever and the side to
    /// move stay as they were.
    paused: bool,
}

impl Dgt3000 {
    /// A clock set to the base time on both faces, not yet started.
    pub fn new(cfg: ClockConfig) -> Dgt3000 {
        let base = i64::from(cfg.base_ms) * 1000;
        Dgt3000 {
            cfg,
            left_us: base,
            right_us: base,
            running: None,
            since: 0,
            right_side_up: false,
            paused: false,
        }
    }

    /// The settings.
    pub fn config(&self) -> ClockConfig {
        self.cfg
    }

    /// The physical side of a colour.
    pub fn side_of(&self, color: Color) -> ClockSide {
        match (color == Color::White) == self.cfg.white_on_right {
            true => ClockSide::Right,
            false => ClockSide::Left,
        }
    }

    /// Starts the clock at `t` for the player of `to_move` (their side up and running).
    pub fn start(&mut self, t: Micros, to_move: Color) -> ClockReading {
        let side = self.side_of(to_move);
        self.running = Some(side);
        self.right_side_up = side == ClockSide::Right;
        self.since = t;
        self.reading(t)
    }

    /// The running side's player presses their lever at `t`: their elapsed time is taken off,
    /// the increment added (unless their flag fell), and the other side starts.
    pub fn press(&mut self, t: Micros) -> ClockReading {
        let Some(side) = self.running.filter(|_| !self.paused) else {
            return self.reading(t);
        };
        let inc = i64::from(self.cfg.increment_ms) * 1000;
        let elapsed = (t - self.since).max(0);
        let face = match side {
            ClockSide::Left => &mut self.left_us,
            ClockSide::Right => &mut self.right_us,
        };
        *face = if *face - elapsed > 0 {
            *face - elapsed + inc
        } else {
            0
        };
        let other = match side {
            ClockSide::Left => ClockSide::Right,
            ClockSide::Right => ClockSide::Left,
        };
        self.running = Some(other);
        self.right_side_up = other == ClockSide::Right;
        self.since = t;
        self.reading(t)
    }

    /// The arbiter stops the clock at `t` (the pause button): the running side's elapsed time
    /// is taken off (no increment); nothing runs until [`Dgt3000::resume`].
    pub fn pause(&mut self, t: Micros) -> ClockReading {
        if let Some(side) = self.running.filter(|_| !self.paused) {
            let elapsed = (t - self.since).max(0);
            let face = match side {
                ClockSide::Left => &mut self.left_us,
                ClockSide::Right => &mut self.right_us,
            };
            *face = (*face - elapsed).max(0);
            self.paused = true;
            self.since = t;
        }
        self.reading(t)
    }

    /// The arbiter moves the lever of a stopped clock at `t`: the other side is to move.
    pub fn flip(&mut self, t: Micros) -> ClockReading {
        if let Some(side) = self.running.filter(|_| self.paused) {
            let other = side.other();
            self.running = Some(other);
            self.right_side_up = other == ClockSide::Right;
        }
        self.reading(t)
    }

    /// The arbiter restarts a stopped clock at `t`: the side to move runs again.
    pub fn resume(&mut self, t: Micros) -> ClockReading {
        if self.paused {
            self.paused = false;
            self.since = t;
        }
        self.reading(t)
    }

    /// Whether a side's time runs.
    pub fn is_running(&self) -> bool {
        self.running.is_some() && !self.paused
    }

    /// Remaining time of a side at `t`, in microseconds (never below zero).
    pub fn remaining_us(&self, side: ClockSide, t: Micros) -> i64 {
        let stored = match side {
            ClockSide::Left => self.left_us,
            ClockSide::Right => self.right_us,
        };
        let elapsed = if self.running == Some(side) && !self.paused {
            (t - self.since).max(0)
        } else {
            0
        };
        (stored - elapsed).max(0)
    }

    /// What the clock reports at `t`.
    pub fn reading(&self, t: Micros) -> ClockReading {
        let face = |side| face_of(self.remaining_us(side, t));
        ClockReading {
            left: face(ClockSide::Left),
            right: face(ClockSide::Right),
            running: self.is_running(),
            right_side_up: self.right_side_up,
            left_turn: self.running == Some(ClockSide::Left),
            right_turn: self.running == Some(ClockSide::Right),
            battery_low: false,
        }
    }
}

/// A clock face showing `us` microseconds left: whole seconds, rounded down, as the display
/// shows them; the flag when none is left.
pub(crate) fn face_of(us: Micros) -> ClockFace {
    ClockFace {
        millis: (us / 1_000_000 * 1000) as u32,
        flag: us == 0,
        flag_shown: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_and_press_match_the_samples() {
        let mut c = Dgt3000::new(ClockConfig::default());
        let r = c.start(3_850_028, Color::White);
        assert!(r.running && r.left_turn && !r.right_side_up);
        assert_eq!(r.left.millis, 5_400_000);
        let r = c.press(10_697_481);
        // 1:30:00 − 6.847 s + 30 s = 1:30:23.
        assert_eq!(r.left.millis, 5_423_000);
        assert!(r.right_turn && r.right_side_up && !r.left_turn);
        assert_eq!(c.reading(11_697_481).right.millis, 5_399_000);
    }

    #[test]
    fn the_arbiter_pauses_moves_the_lever_and_restarts() {
        let mut c = Dgt3000::new(ClockConfig {
            base_ms: 60_000,
            increment_ms: 0,
            white_on_right: false,
        });
        c.start(0, Color::White);
        let r = c.pause(10_000_000);
        assert!(!r.running && r.left_turn, "stopped, White still to move");
        assert_eq!(r.left.millis, 50_000);
        let r = c.press(20_000_000);
        assert_eq!(
            r.left.millis, 50_000,
            "a press on a stopped clock does nothing"
        );
        assert!(r.left_turn);
        let r = c.flip(21_000_000);
        assert!(r.right_turn && r.right_side_up && !r.running);
        assert_eq!(
            c.reading(30_000_000).right.millis,
            60_000,
            "no time runs while stopped"
        );
        c.resume(40_000_000);
        let r = c.reading(45_000_000);
        assert!(r.running && r.right_turn);
        assert_eq!((r.left.millis, r.right.millis), (50_000, 55_000));
    }
}
