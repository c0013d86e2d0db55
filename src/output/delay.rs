//! Broadcast delay (FIDE's anti-cheating guidelines ask top events to transmit moves late):
//! a *public* [`Hub`] that shows the round as it stood `delay` ago.
//!
//! The live hub tells every [`Change`] it makes (events, board health, players, acknowledgements,
//! round information, restored games) on to a [`DelayLine`]; a task applies each change to the
//! public hub once `delay` has passed since it happened, in the order they happened. Every
//! public output (relay files, LiveChess API, MQTT, unauthenticated HTTP routes and event
//! streams, the page without a token) reads the public hub, so nothing younger than the delay
//! can reach them; the arbiter (with the token) reads the live hub.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use super::change::{Change, Follower};
use super::hub::{Hub, Mirror};

/// The sending end the live hub's changes go into: a [`Follower`] of the live hub.
#[derive(Debug, Clone)]
pub struct DelayLine {
    tx: mpsc::UnboundedSender<(Instant, Change)>,
}

impl Follower for DelayLine {
    fn changed(&self, change: &Change) {
        // A closed line means the outputs are shutting down: nothing left to show.
        let _ = self.tx.send((Instant::now(), change.clone()));
    }
}

/// The public hub showing `live` `delay` late (the broadcast delay): made on the first call,
/// the same one while the delay stays the same (outputs restarted on a reload keep it), a new
/// one when it changes. Every later change of `live` reaches it `delay` late.
pub fn public(live: &Hub, delay: Duration) -> Hub {
    let mut mirror = live.mirror();
    if let Some(m) = mirror.as_ref() {
        if m.delay == delay {
            return m.public.clone();
        }
        live.unfollow(&m.feed);
    }
    let (public, line) = spawn(live, delay);
    if let Some(metrics) = live.metrics() {
        public.lend_metrics(metrics.clone());
    }
    let feed: Arc<dyn Follower> = Arc::new(line);
    live.follow(feed.clone());
    *mirror = Some(Mirror {
        delay,
        public: public.clone(),
        feed,
    });
    public
}

/// No broadcast delay any more: the public hub stops being fed.
pub fn stop(live: &Hub) {
    if let Some(m) = live.mirror().take() {
        live.unfollow(&m.feed);
    }
}

/// Make a public hub for `live`, shown `delay` late, and start the task that feeds it. The
/// task runs as long as the returned line is kept (the live hub's followers keep it; see
/// [`public`]), so restarting the outputs on a reload loses nothing of the delay.
fn spawn(live: &Hub, delay: Duration) -> (Hub, DelayLine) {
    let public = Hub::new(live.with_round(|r| r.info.clone()), live.config().clone());
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Change)>();
    let target = public.clone();
    tokio::spawn(async move {
        let mut queue: VecDeque<(Instant, Change)> = VecDeque::new();
        loop {
            let due = queue.front().map(|(at, _)| *at + delay);
            tokio::select! {
                got = rx.recv() => match got {
                    Some(item) => queue.push_back(item),
                    None => break,
                },
                _ = async {
                    match due {
                        Some(due) => tokio::time::sleep_until(due).await,
                        None => std::future::pending().await,
                    }
                } => {}
            }
            let now = Instant::now();
            while queue.front().is_some_and(|(at, _)| *at + delay <= now) {
                if let Some((_, change)) = queue.pop_front() {
                    apply(&target, change);
                }
            }
        }
    });
    (public, DelayLine { tx })
}

/// Make one mirrored change on the public hub.
fn apply(public: &Hub, change: Change) {
    match change {
        Change::Event { board, event } => {
            public.publish(&board, &event);
        }
        Change::Status { board, status } => public.set_status(&board, status),
        Change::Preset { board, status } => public.preset_status(&board, status),
        Change::Restore {
            board,
            games,
            rounds,
            status,
        } => public.restore(&board, &games, &rounds, status),
        Change::RestoreEarlier {
            board,
            games,
            rounds,
        } => public.restore_earlier(&board, &games, &rounds),
        Change::Number { board, wanted } => {
            public.number_board(&board, wanted);
        }
        Change::Pairing { board, pairing } => {
            let _ = public.set_pairing(&board, pairing);
        }
        Change::Ack { board, id } => {
            let _ = public.acknowledge(&board, id);
        }
        Change::Result {
            round,
            board,
            result,
        } => public.set_result(round, &board, result),
        Change::Info(info) => public.update_info(|i| *i = *info),
        Change::StartRound(info) => {
            let _ = public.start_round(*info);
        }
    }
}
