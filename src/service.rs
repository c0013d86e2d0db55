//! The daemon's services: tasks that run until told to stop. A [`Services`] set spawns each
//! with the set's [`CancellationToken`] on a [`JoinSet`], stops them together, waits a grace
//! period for them, and names in the log the ones that did not stop in time (then aborted).
//! The outputs are one set, the daemon's own followers of its hub another.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Tasks run until the set is shut down (or dropped: every task is told to stop, and the set
/// aborts what is left).
#[derive(Debug, Default)]
pub struct Services {
    stop: CancellationToken,
    tasks: JoinSet<()>,
    /// The tasks running, by the order they were spawned in: each task takes itself out as it
    /// ends (returns, panics or is aborted).
    running: Arc<Mutex<BTreeMap<usize, &'static str>>>,
    spawned: usize,
}

/// Takes its task out of the set's running ones when the task ends, however it ends.
struct Running {
    running: Arc<Mutex<BTreeMap<usize, &'static str>>>,
    key: usize,
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&self.running).remove(&self.key);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Services {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The token every task of the set stops on (for a part of a service that stops with it:
    /// a server's streams).
    pub fn token(&self) -> CancellationToken {
        self.stop.clone()
    }

    /// Runs the task `make` returns, given the set's token, as `name` (for the logs).
    pub fn spawn<F>(&mut self, name: &'static str, make: impl FnOnce(CancellationToken) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let task = make(self.stop.clone());
        let key = self.spawned;
        self.spawned += 1;
        lock(&self.running).insert(key, name);
        let guard = Running {
            running: self.running.clone(),
            key,
        };
        self.tasks.spawn(async move {
            let _guard = guard;
            task.await;
        });
    }

    /// The names of the tasks still running, in the order they were spawned.
    pub fn running(&self) -> Vec<&'static str> {
        lock(&self.running).values().copied().collect()
    }

    /// Tells every task to stop and waits up to `grace` for them; the ones still running then
    /// are named in the log and aborted. Returns the names of those.
    pub async fn shutdown(mut self, grace: Duration) -> Vec<&'static str> {
        self.stop.cancel();
        let all = async { while self.tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(grace, all).await.is_ok() {
            return Vec::new();
        }
        let left = self.running();
        tracing::warn!(
            "did not stop within {} ms, aborted: {}",
            grace.as_millis(),
            left.join(", ")
        );
        self.tasks.shutdown().await;
        left
    }
}

/// A set let go without [`Services::shutdown`] (a start that failed half-way) stops at once:
/// its tasks are told to stop, and the set aborts what is left.
impl Drop for Services {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_task_stops_on_the_sets_token() {
        let mut set = Services::new();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for name in ["a", "b"] {
            let tx = tx.clone();
            set.spawn(name, move |stop| async move {
                stop.cancelled().await;
                let _ = tx.send(name);
            });
        }
        drop(tx);
        assert!(set.shutdown(Duration::from_secs(5)).await.is_empty());
        let mut stopped = Vec::new();
        while let Some(n) = rx.recv().await {
            stopped.push(n);
        }
        stopped.sort_unstable();
        assert_eq!(stopped, ["a", "b"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_that_does_not_stop_is_named_and_aborted() {
        let mut set = Services::new();
        set.spawn("polite", |stop| async move { stop.cancelled().await });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        set.spawn("deaf", move |_stop| async move {
            // Never ends by itself: only the abort drops it (and its sender with it).
            let _keep = tx;
            std::future::pending::<()>().await;
        });
        assert_eq!(set.shutdown(Duration::from_secs(1)).await, ["deaf"]);
        assert!(rx.await.is_err(), "the deaf task was aborted");
    }

    #[tokio::test]
    async fn a_set_let_go_tells_its_tasks_to_stop() {
        let mut set = Services::new();
        let (tx, rx) = tokio::sync::oneshot::channel();
        set.spawn("one", move |stop| async move {
            stop.cancelled().await;
            let _ = tx.send(());
        });
        let token = set.token();
        drop(set);
        assert!(token.is_cancelled());
        // Aborted with the set or stopped by the token first: either way it ends.
        let _ = rx.await;
    }
}
