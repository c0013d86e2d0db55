//! Captures as a live source: a [`Timeline`] played through [`Playback`], the same replay as
//! `eboardd replay`, at the recorded pace (or faster), every event published to a [`Hub`] — a
//! stand-in for the live daemon, for tests, demos and load runs.
//!
//! Two layouts ([`crate::replay::Layout`]): as recorded (the captures merged by absolute time,
//! as `eboardd replay` does, so the published stream equals `eboardd replay --events` of the
//! same captures), or a round (every file its own board, all starting together).
//!
//! Operator actions that arrive over HTTP ([`Control`]) are fed to the board's engine at the
//! current replay time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::hub::{Control, ControlError, Hub};
use crate::core::event::CoreEvent;
use crate::core::observation::OperatorAction;
use crate::replay::{Playback, Sink, Timeline};

/// A running replay.
#[derive(Debug)]
pub struct ReplayHandle {
    stop: Arc<AtomicBool>,
    /// Turns true when every record has been played and the engines finished.
    pub done: tokio::sync::watch::Receiver<bool>,
    /// Events published so far.
    pub events: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ReplayHandle {
    /// Wait until every record has been played.
    pub async fn wait_done(&mut self) {
        let _ = self.done.wait_for(|d| *d).await;
    }

    /// Stop the replay thread (also after it finished: it keeps serving operator actions).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ReplayHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

struct ReplayControl {
    tx: Mutex<mpsc::Sender<(String, OperatorAction)>>,
}

impl Control for ReplayControl {
    fn operator(&self, board: &str, action: OperatorAction) -> Result<(), ControlError> {
        self.tx
            .lock()
            .map_err(|_| ControlError::Stopped("the replay"))?
            .send((board.to_string(), action))
            .map_err(|_| ControlError::Stopped("the replay"))
    }
}

/// An operator action from the hub, for the replay's board.
fn operator(
    session: &mut Playback,
    (board, action): (String, OperatorAction),
    publish: &mut Sink<'_>,
) {
    if !matches!(session.operator(&board, action, publish), Ok(true)) {
        tracing::warn!("operator action for unknown board {board}");
    }
}

/// Play `plan` into `hub` on a thread of its own. `speed`: event seconds per wall second
/// (`None` or 0: as fast as possible). After the last record the engines take their pending
/// decisions; the thread then keeps serving operator actions until stopped.
pub fn spawn(hub: Hub, plan: Timeline, speed: Option<f64>) -> ReplayHandle {
    let (tx, rx) = mpsc::channel::<(String, OperatorAction)>();
    hub.set_control(Arc::new(ReplayControl { tx: Mutex::new(tx) }));
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done) = tokio::sync::watch::channel(false);
    let count = Arc::new(AtomicU64::new(0));
    let speed = speed.filter(|s| *s > 0.0 && s.is_finite());
    let thread_stop = stop.clone();
    let thread_count = count.clone();
    let thread = std::thread::Builder::new()
        .name("replay".into())
        .spawn(move || {
            let mut publish = |board: &str, e: &CoreEvent| -> std::io::Result<()> {
                hub.publish(board, e);
                thread_count.fetch_add(1, Ordering::Relaxed);
                Ok(())
            };
            // The hub keeps the games (its archive the finished ones).
            let mut session = Playback::new(plan).forgetting_finished_games();
            let mut warned = 0;
            let started = Instant::now();
            let t0 = session.next_t().unwrap_or(0);
            while let Some(t) = session.next_t() {
                if thread_stop.load(Ordering::Relaxed) {
                    return;
                }
                if let Some(speed) = speed {
                    let due = Duration::from_secs_f64(((t - t0).max(0) as f64 / 1e6) / speed);
                    loop {
                        let now = started.elapsed();
                        if now >= due || thread_stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let wait = (due - now).min(Duration::from_millis(200));
                        match rx.recv_timeout(wait) {
                            Ok(op) => operator(&mut session, op, &mut publish),
                            Err(mpsc::RecvTimeoutError::Timeout) => {}
                            Err(mpsc::RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
                        }
                    }
                } else {
                    while let Ok(op) = rx.try_recv() {
                        operator(&mut session, op, &mut publish);
                    }
                }
                let _ = session.step(&mut publish);
                for w in &session.warnings()[warned..] {
                    tracing::warn!("{w}");
                }
                warned = session.warnings().len();
            }
            let _ = session.finish(&mut publish);
            done_tx.send_replace(true);
            while !thread_stop.load(Ordering::Relaxed) {
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(op) => operator(&mut session, op, &mut publish),
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            }
        })
        .expect("spawn replay thread");
    ReplayHandle {
        stop,
        done,
        events: count,
        thread: Some(thread),
    }
}
