//! Progress of the daemon's working loops, for the service manager's watchdog (`WATCHDOG=1`,
//! `docs/operations.md`). A timer of its own would feed the watchdog while a port task is
//! wedged (a driver stuck in a loop, a lock never released) and the boards on it are dead: so
//! each port task (serial or Bluetooth LE: `board_task::Port::run`) beats its [`Heartbeat`] as
//! it goes round, and the watchdog is fed only while every registered loop beat lately
//! ([`Heartbeats::stalled`], [`stall_limit`]). The hub's lock is taken at each feed, so a hub
//! wedged in its lock starves the watchdog too.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The loops that report progress, and when each last did.
#[derive(Debug, Default)]
pub struct Heartbeats {
    inner: Mutex<Beats>,
}

#[derive(Debug, Default)]
struct Beats {
    next: u64,
    /// Per registration: its name and its last beat.
    last: BTreeMap<u64, (String, Instant)>,
}

/// One loop's registration ([`Heartbeats::register`]): beaten as the loop goes round, removed
/// when dropped (the loop ended).
#[derive(Debug)]
pub struct Heartbeat<'a> {
    beats: &'a Heartbeats,
    id: u64,
    /// The last beat written (a beat is written at most once a [`BEAT_EVERY`]).
    written: Instant,
}

/// How often a loop's beat is written at most: far below any watchdog interval, far above a
/// busy loop's rounds.
pub const BEAT_EVERY: Duration = Duration::from_millis(500);

/// The shortest silence taken for a stall, whatever the watchdog's interval: a loop waits up
/// to a tick or a write's time between rounds, and a beat is written once a [`BEAT_EVERY`].
pub const SHORTEST_STALL: Duration = Duration::from_secs(2);

/// How long a loop may go without a written beat before it counts as stalled, for a watchdog
/// fed every `interval`: the interval, but never less than [`SHORTEST_STALL`], plus the beat's
/// own granularity.
pub fn stall_limit(interval: Duration) -> Duration {
    interval.max(SHORTEST_STALL) + BEAT_EVERY
}

impl Heartbeats {
    fn beats(&self) -> std::sync::MutexGuard<'_, Beats> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers a loop named `name` (in the log when it stalls), as beating at `now`.
    pub fn register(&self, name: String, now: Instant) -> Heartbeat<'_> {
        let mut b = self.beats();
        let id = b.next;
        b.next += 1;
        b.last.insert(id, (name, now));
        Heartbeat {
            beats: self,
            id,
            written: now,
        }
    }

    /// The loops whose last beat is more than `limit` before `now`, with how long ago it was.
    pub fn stalled(&self, now: Instant, limit: Duration) -> Vec<(String, Duration)> {
        self.beats()
            .last
            .values()
            .filter_map(|(name, at)| {
                let ago = now.saturating_duration_since(*at);
                (ago > limit).then(|| (name.clone(), ago))
            })
            .collect()
    }
}

impl Heartbeat<'_> {
    /// The loop made progress at `now`.
    pub fn beat(&mut self, now: Instant) {
        if now.saturating_duration_since(self.written) < BEAT_EVERY {
            return;
        }
        self.written = now;
        if let Some(entry) = self.beats.beats().last.get_mut(&self.id) {
            entry.1 = now;
        }
    }
}

impl Drop for Heartbeat<'_> {
    fn drop(&mut self) {
        self.beats.beats().last.remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_stops_beating_is_stalled_and_one_that_ended_is_forgotten() {
        let beats = Heartbeats::default();
        let t0 = Instant::now();
        let s = Duration::from_secs(1);
        let mut a = beats.register("port a".into(), t0);
        let b = beats.register("port b".into(), t0);
        assert!(beats.stalled(t0 + 10 * s, 10 * s).is_empty());
        a.beat(t0 + 15 * s);
        assert_eq!(
            beats.stalled(t0 + 20 * s, 10 * s),
            [("port b".into(), 20 * s)]
        );
        drop(b);
        assert!(beats.stalled(t0 + 20 * s, 10 * s).is_empty());
        // Beats closer together than BEAT_EVERY are not written.
        a.beat(t0 + 15 * s + BEAT_EVERY / 2);
        assert_eq!(
            beats.stalled(t0 + 26 * s, 10 * s),
            [("port a".into(), 11 * s)]
        );
    }

    #[test]
    fn a_short_watchdog_interval_still_allows_a_beats_granularity() {
        let ms = Duration::from_millis;
        assert_eq!(stall_limit(ms(200)), SHORTEST_STALL + BEAT_EVERY);
        assert_eq!(stall_limit(ms(15_000)), ms(15_000) + BEAT_EVERY);
        assert!(stall_limit(ms(1)) > 2 * BEAT_EVERY);
    }
}
