//! Independent work on every core: boards replay apart from each other, so a directory of
//! captures is read, replayed and rebuilt by as many threads as there are cores, the results
//! taken in the order of the input (the output does not depend on which thread did what).

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Condvar, Mutex};

/// Threads for work on every core: the cores there are (at least one).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f` of every item, on up to `workers` threads taking the next item as they finish one;
/// the results in the order of `items`. One worker (or one item): on this thread.
pub fn map_in_order<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let mut out = Vec::with_capacity(items.len());
    for_each_in_order(items, workers, f, |_, r| out.push(r));
    out
}

/// What the workers and the taker of [`for_each_in_order`] share.
struct Shared<R> {
    /// The next item no worker has started.
    next: usize,
    /// The next item to hand to the taker.
    taken: usize,
    /// Results done and not yet taken, by item.
    done: BTreeMap<usize, R>,
    /// A worker's panic, passed on to the caller.
    panic: Option<Box<dyn std::any::Any + Send>>,
    /// A worker panicked: every worker stops.
    failed: bool,
}

/// `f` of every item on up to `workers` threads, each result handed to `take` (with its item)
/// on this thread, in the order of `items`, as soon as it and every one before it are done.
/// Workers start an item only while fewer than twice their number of results wait for their
/// turn, so memory holds a few results whatever the number of items (a daemon rebuilding
/// thousands of boards). One worker (or one item): all on this thread. A panic in `f` is
/// passed on to the caller.
pub fn for_each_in_order<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
    mut take: impl FnMut(&T, R),
) {
    let workers = workers.min(items.len());
    if workers <= 1 {
        items.iter().for_each(|item| take(item, f(item)));
        return;
    }
    let window = 2 * workers;
    let shared = Mutex::new(Shared {
        next: 0,
        taken: 0,
        done: BTreeMap::new(),
        panic: None,
        failed: false,
    });
    let turn = Condvar::new();
    let lock = || shared.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let mut s = lock();
                    while s.next < items.len() && s.next >= s.taken + window && !s.failed {
                        s = turn.wait(s).unwrap_or_else(|e| e.into_inner());
                    }
                    if s.next >= items.len() || s.failed {
                        break;
                    }
                    let i = s.next;
                    s.next += 1;
                    drop(s);
                    let r = catch_unwind(AssertUnwindSafe(|| f(&items[i])));
                    let mut s = lock();
                    match r {
                        Ok(r) => {
                            s.done.insert(i, r);
                        }
                        Err(p) => {
                            s.panic = Some(p);
                            s.failed = true;
                        }
                    }
                    turn.notify_all();
                }
            });
        }
        for (i, item) in items.iter().enumerate() {
            let mut s = lock();
            let r = loop {
                if let Some(p) = s.panic.take() {
                    drop(s);
                    resume_unwind(p);
                }
                if let Some(r) = s.done.remove(&i) {
                    break r;
                }
                s = turn.wait(s).unwrap_or_else(|e| e.into_inner());
            };
            s.taken = i + 1;
            turn.notify_all();
            drop(s);
            take(item, r);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn results_keep_the_order_of_the_items_whatever_the_threads() {
        let items: Vec<u64> = (0..1000).collect();
        for workers in [1, 2, 7] {
            let got = map_in_order(&items, workers, |&i| {
                // Uneven work, so threads finish out of order.
                (0..(i % 13) * 1000).fold(i, |a, b| a.wrapping_add(b % 3))
                    - (0..(i % 13) * 1000).map(|b| b % 3).sum::<u64>()
            });
            assert_eq!(got, items, "{workers} workers");
        }
        assert!(map_in_order(&[] as &[u8], 4, |_| 0).is_empty());
    }

    #[test]
    fn few_results_wait_for_their_turn_however_slow_the_taker() {
        let items: Vec<usize> = (0..200).collect();
        let started = AtomicUsize::new(0);
        let mut most_ahead = 0;
        let mut seen = Vec::new();
        for_each_in_order(
            &items,
            3,
            |&i| {
                started.fetch_add(1, Ordering::SeqCst);
                i
            },
            |&item, r| {
                assert_eq!(item, r);
                seen.push(r);
                // Started but not yet taken (this one counts as taken).
                let ahead = started.load(Ordering::SeqCst) - seen.len();
                most_ahead = most_ahead.max(ahead);
                std::thread::yield_now();
            },
        );
        assert_eq!(seen, items);
        assert!(
            most_ahead <= 6,
            "{most_ahead} results were ahead of the taker"
        );
    }

    #[test]
    fn a_panic_in_a_worker_reaches_the_caller() {
        let items: Vec<usize> = (0..50).collect();
        let r = std::panic::catch_unwind(|| {
            for_each_in_order(&items, 2, |&i| assert_ne!(i, 17, "item 17"), |_, _| {});
        });
        assert!(r.is_err());
    }
}
