//! Clock commands through the board, one at a time with ack tracking (`docs/dgt-protocol.md` §2.2,
//! §5.9): a command is sent, its ack awaited; without one it is resent after 2.5 s, at most
//! three times, then given up. A real DGT 3000 acks 1–2 s after a command and loses a command
//! that comes before the previous one's ack, so nothing is sent while a command is in flight
//! and the resend waits longer than the slowest ack (a resend into a busy clock would be lost
//! and its late ack taken for the next command's). The first command is the VERSION probe that
//! tells whether a clock is there and which: a DGT 3000 answers 2.x and takes ASCII text, an
//! XL answers 1.x. A clock that said "no clock" (or did not answer) and then sends times is a
//! clock after all: it is probed again.
//!
//! Sans-IO: times are inputs, bytes to send are outputs. [`ClockQueue`] is the DGT family's
//! [`ClockControl`]: texts become ASCII commands (DGT 3000 only), "times" the END command.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::core::observation::Observation;
use crate::driver::dgt::{ClockAck, ClockCommand};
use crate::driver::port::ClockShow;
use crate::driver::{ClockControl, Message, SessionMessage};

/// How long to wait for an ack before resending (the clock acks within 2 s).
pub const RESEND_AFTER: Duration = Duration::from_millis(2500);
/// Sends of one command before it is given up.
pub const MAX_TRIES: u32 = 3;
/// Commands waiting at most (older texts are dropped first when full).
const MAX_QUEUED: usize = 16;

/// What is known about the clock on the board's cable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClockKind {
    /// Not probed yet (or the probe is running).
    #[default]
    Unknown,
    /// No clock answered.
    Absent,
    /// A clock answered VERSION with this version.
    Present {
        /// Major version: 2 = DGT 3000, 1 = DGT XL.
        major: u8,
        /// Minor version.
        minor: u8,
    },
}

impl ClockKind {
    /// Whether the clock shows ASCII text (DGT 3000).
    pub fn takes_text(self) -> bool {
        matches!(self, ClockKind::Present { major, .. } if major >= 2)
    }
}

#[derive(Debug, Clone)]
struct Inflight {
    cmd: ClockCommand,
    sent: Instant,
    tries: u32,
}

/// The clock command queue of one board link.
#[derive(Debug, Default)]
pub struct ClockQueue {
    queue: VecDeque<ClockCommand>,
    inflight: Option<Inflight>,
    /// What the VERSION probe found.
    pub kind: ClockKind,
    /// Commands given up (no ack after every try, or an error ack).
    pub failed: u64,
}

/// The command byte inside the `0x2B` wrapper.
fn cmd_byte(c: &ClockCommand) -> u8 {
    c.encode().get(3).copied().unwrap_or(0)
}

impl ClockQueue {
    /// A queue whose first command is the VERSION probe.
    pub fn new() -> ClockQueue {
        let mut q = ClockQueue::default();
        q.queue.push_back(ClockCommand::Version);
        q
    }

    /// Queues a command (dropped when the clock is known to be absent).
    pub fn push(&mut self, cmd: ClockCommand) {
        if self.kind == ClockKind::Absent {
            return;
        }
        if self.queue.len() >= MAX_QUEUED {
            self.queue.pop_front();
        }
        self.queue.push_back(cmd);
    }

    /// Whether nothing is waiting or in flight.
    pub fn idle(&self) -> bool {
        self.inflight.is_none() && self.queue.is_empty()
    }

    /// The bytes to send now, if any: the next command when none is in flight, or a resend.
    pub fn poll(&mut self, now: Instant) -> Option<Vec<u8>> {
        if let Some(f) = &mut self.inflight {
            if now.duration_since(f.sent) < RESEND_AFTER {
                return None;
            }
            if f.tries < MAX_TRIES {
                f.tries += 1;
                f.sent = now;
                return Some(f.cmd.encode());
            }
            let gave_up = self.inflight.take().map(|f| f.cmd);
            self.failed += 1;
            if gave_up == Some(ClockCommand::Version) && self.kind == ClockKind::Unknown {
                self.kind = ClockKind::Absent;
                self.queue.clear();
            }
        }
        let cmd = self.queue.pop_front()?;
        let bytes = cmd.encode();
        self.inflight = Some(Inflight {
            cmd,
            sent: now,
            tries: 1,
        });
        Some(bytes)
    }

    /// When [`ClockQueue::poll`] should be called next, if anything is in flight.
    pub fn deadline(&self) -> Option<Instant> {
        self.inflight.as_ref().map(|f| f.sent + RESEND_AFTER)
    }

    /// An ack came in. Unsolicited messages (button presses, "ready") are ignored.
    pub fn on_ack(&mut self, ack: &ClockAck) {
        if ack.ack1 & 0x80 != 0 {
            return;
        }
        let Some(f) = &self.inflight else {
            return;
        };
        if ack.ack1 != cmd_byte(&f.cmd) {
            return;
        }
        if f.cmd == ClockCommand::Version {
            self.kind = ClockKind::Present {
                major: ack.ack2 >> 4,
                minor: ack.ack2 & 0x0F,
            };
        }
        if ack.ack0 != 0x10 {
            self.failed += 1;
        }
        self.inflight = None;
    }

    /// The clock sent its times. Returns `true` when it was taken for absent: it is a clock
    /// after all, and the VERSION probe is queued again.
    pub fn on_times(&mut self) -> bool {
        if self.kind != ClockKind::Absent {
            return false;
        }
        self.kind = ClockKind::Unknown;
        self.queue.push_front(ClockCommand::Version);
        true
    }

    /// The board says no clock is connected.
    pub fn no_clock(&mut self) {
        self.kind = ClockKind::Absent;
        self.queue.clear();
        self.inflight = None;
    }
}

impl ClockControl for ClockQueue {
    fn show(&mut self, what: ClockShow) {
        match what {
            ClockShow::Text(text) if self.kind.takes_text() => {
                self.push(ClockCommand::Ascii { text, beep: 0 })
            }
            ClockShow::Text(_) => {}
            ClockShow::Times => self.push(ClockCommand::EndText),
        }
    }

    fn received(&mut self, msg: &Message) -> bool {
        match msg {
            Message::Session(SessionMessage::Driver(r)) => {
                if let Some(a) = ClockAck::from_reply(r) {
                    self.on_ack(&a);
                }
                false
            }
            Message::Observation(Observation::ClockAbsent) => {
                self.no_clock();
                false
            }
            Message::Observation(Observation::Clock(_)) => self.on_times(),
            _ => false,
        }
    }

    fn poll(&mut self, now: Instant) -> Option<Vec<u8>> {
        ClockQueue::poll(self, now)
    }

    fn shows_text(&self) -> bool {
        self.kind.takes_text()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(cmd: u8, ack2: u8) -> ClockAck {
        ClockAck {
            ack0: 0x10,
            ack1: cmd,
            ack2,
            ack3: 0,
        }
    }

    #[test]
    fn probe_then_one_command_at_a_time() {
        let t0 = Instant::now();
        let mut q = ClockQueue::new();
        q.push(ClockCommand::Beep { units_64ms: 1 });
        assert_eq!(q.poll(t0), Some(vec![0x2B, 0x03, 0x03, 0x09, 0x00]));
        assert_eq!(q.poll(t0), None, "one in flight");
        q.on_ack(&ack(0x09, 0x21));
        assert_eq!(q.kind, ClockKind::Present { major: 2, minor: 1 });
        assert!(q.kind.takes_text());
        assert_eq!(q.poll(t0), Some(vec![0x2B, 0x04, 0x03, 0x0B, 0x01, 0x00]));
        // An unsolicited button message is not the ack.
        q.on_ack(&ack(0x88, 0x05));
        assert!(!q.idle());
        q.on_ack(&ack(0x0B, 0));
        assert!(q.idle());
    }

    #[test]
    fn resends_then_gives_up_and_a_silent_probe_means_no_clock() {
        let t0 = Instant::now();
        let mut q = ClockQueue::new();
        q.push(ClockCommand::EndText);
        assert!(q.poll(t0).is_some());
        let mut sends = 1;
        let mut t = t0;
        for _ in 0..10 {
            t += RESEND_AFTER;
            if q.poll(t).is_some() {
                sends += 1;
            }
        }
        assert_eq!(sends, MAX_TRIES);
        assert_eq!(q.kind, ClockKind::Absent);
        assert_eq!(q.failed, 1);
        assert!(q.idle());
        q.push(ClockCommand::EndText);
        assert!(q.idle(), "nothing is queued for an absent clock");
    }

    #[test]
    fn no_ack_before_the_slowest_clock_answers_and_a_clock_that_sends_times_is_a_clock() {
        let t0 = Instant::now();
        let mut q = ClockQueue::new();
        assert!(q.poll(t0).is_some());
        // A DGT 3000 acks up to 2 s later: no resend into the busy clock before that.
        assert_eq!(q.poll(t0 + Duration::from_millis(2100)), None);
        q.no_clock();
        assert_eq!(q.kind, ClockKind::Absent);
        assert!(!q.on_times() || q.kind == ClockKind::Unknown);
        assert_eq!(q.kind, ClockKind::Unknown);
        assert_eq!(q.poll(t0), Some(vec![0x2B, 0x03, 0x03, 0x09, 0x00]));
        q.on_ack(&ack(0x09, 0x21));
        assert_eq!(q.kind, ClockKind::Present { major: 2, minor: 1 });
        assert!(!q.on_times(), "a known clock is not probed again");
    }
}
