//! When each board's retained MQTT state is published again ([`super::mqtt`]).
//!
//! A state is the whole board (its game with every move and clock), a few kilobytes; a broker
//! cluster stores each retained message (NATS: in a replicated JetStream stream) before it
//! acknowledges it. Republished after every event, states were most of what a hall's daemon
//! sent (a clock reading a second per board) and, with a few hundred boards, queued the events
//! behind them. So a board's state follows a change of its game, health or players at once,
//! but at most once every [`AFTER_A_CHANGE`]; a clock reading alone makes it due only
//! [`AFTER_A_CLOCK`] after the last one (the events carry every reading; the state is for a
//! reader that starts late or lost a message). A new connection makes every state due at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::change::{EventTag, MsgKind};

/// The shortest time between two states of a board after changes of its game, health or
/// players.
pub const AFTER_A_CHANGE: Duration = Duration::from_secs(1);

/// The shortest time between two states of a board whose only change is a clock reading.
pub const AFTER_A_CLOCK: Duration = Duration::from_secs(30);

/// The boards whose state is to be published, and when.
#[derive(Debug, Default)]
pub struct StateSchedule {
    /// Board → when its state is due.
    due: HashMap<Arc<str>, Instant>,
    /// Board → when its state was last published.
    last: HashMap<Arc<str>, Instant>,
}

impl StateSchedule {
    /// A message of `kind` about `board` was published at `now`.
    pub fn changed(&mut self, board: &Arc<str>, kind: MsgKind, now: Instant) {
        let wait = if kind == MsgKind::Event(EventTag::Clock) {
            AFTER_A_CLOCK
        } else {
            AFTER_A_CHANGE
        };
        let at = self.last.get(board).map_or(now, |l| (*l + wait).max(now));
        self.due
            .entry(board.clone())
            .and_modify(|d| *d = (*d).min(at))
            .or_insert(at);
    }

    /// Every board's state is due at `now` (a new connection: the broker may have none).
    pub fn all_due<I: IntoIterator<Item = Arc<str>>>(&mut self, boards: I, now: Instant) {
        for b in boards {
            self.due.insert(b, now);
        }
    }

    /// The board whose state is due soonest, if it is due at `now` (taken off the schedule:
    /// [`Self::published`] or [`Self::not_taken`] says what became of it).
    pub fn take_due(&mut self, now: Instant) -> Option<Arc<str>> {
        let (board, _) = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .min_by_key(|(_, at)| **at)?;
        let board = board.clone();
        self.due.remove(&board);
        Some(board)
    }

    /// `board`'s state was handed to the client at `now`.
    pub fn published(&mut self, board: Arc<str>, now: Instant) {
        self.last.insert(board, now);
    }

    /// `board`'s state could not be handed to the client: due again at `now`.
    pub fn not_taken(&mut self, board: Arc<str>, now: Instant) {
        self.due.insert(board, now);
    }

    /// Whether any state is waiting.
    pub fn is_empty(&self) -> bool {
        self.due.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::change::NoticeTag;

    fn drain(s: &mut StateSchedule, now: Instant) -> Vec<Arc<str>> {
        let mut out = Vec::new();
        while let Some(b) = s.take_due(now) {
            s.published(b.clone(), now);
            out.push(b);
        }
        out
    }

    #[test]
    fn a_change_is_published_at_once_then_at_most_once_a_second() {
        let t0 = Instant::now();
        let b: Arc<str> = Arc::from("board-1");
        let mut s = StateSchedule::default();
        s.changed(&b, MsgKind::Event(EventTag::MoveMade), t0);
        assert_eq!(drain(&mut s, t0), vec![b.clone()]);
        // Three changes within the second: one state, a second after the last one.
        for ms in [100, 300, 900] {
            s.changed(
                &b,
                MsgKind::Event(EventTag::MoveCompleted),
                t0 + Duration::from_millis(ms),
            );
        }
        assert!(drain(&mut s, t0 + Duration::from_millis(999)).is_empty());
        assert_eq!(drain(&mut s, t0 + AFTER_A_CHANGE), vec![b.clone()]);
        assert!(s.is_empty());
        // Long after: at once again.
        let later = t0 + Duration::from_secs(10);
        s.changed(&b, MsgKind::Notice(NoticeTag::BoardStatus), later);
        assert_eq!(drain(&mut s, later), vec![b]);
    }

    #[test]
    fn clock_readings_alone_wait_for_the_long_interval_and_a_move_brings_it_forward() {
        let t0 = Instant::now();
        let b: Arc<str> = Arc::from("board-1");
        let mut s = StateSchedule::default();
        s.changed(&b, MsgKind::Event(EventTag::MoveMade), t0);
        drain(&mut s, t0);
        for sec in 1..=5 {
            s.changed(
                &b,
                MsgKind::Event(EventTag::Clock),
                t0 + Duration::from_secs(sec),
            );
            assert!(drain(&mut s, t0 + Duration::from_secs(sec)).is_empty());
        }
        let moved = t0 + Duration::from_secs(6);
        s.changed(&b, MsgKind::Event(EventTag::MoveMade), moved);
        assert_eq!(drain(&mut s, moved), vec![b.clone()]);
        s.changed(
            &b,
            MsgKind::Event(EventTag::Clock),
            moved + Duration::from_secs(1),
        );
        assert!(drain(&mut s, moved + AFTER_A_CLOCK - Duration::from_millis(1)).is_empty());
        assert_eq!(drain(&mut s, moved + AFTER_A_CLOCK), vec![b]);
    }

    #[test]
    fn a_new_connection_makes_every_state_due_and_a_refused_one_comes_again() {
        let t0 = Instant::now();
        let boards: Vec<Arc<str>> = (1..=3).map(|i| Arc::from(format!("b{i}"))).collect();
        let mut s = StateSchedule::default();
        for b in &boards {
            s.changed(b, MsgKind::Event(EventTag::MoveMade), t0);
        }
        drain(&mut s, t0);
        let t1 = t0 + Duration::from_millis(10);
        s.all_due(boards.iter().cloned(), t1);
        let first = s.take_due(t1).unwrap();
        s.not_taken(first.clone(), t1);
        let mut got = drain(&mut s, t1);
        got.sort();
        assert_eq!(got, boards);
    }
}
