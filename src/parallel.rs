//! Independent work on every core: boards replay apart from each other, so a directory of
//! captures is read, replayed and rebuilt by as many threads as there are cores, the results
//! kept in the order of the input (the output does not depend on which thread did what).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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
    let workers = workers.min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = f(item);
                    *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|s| {
            s.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                // A worker that panicked has taken the whole scope down with it: every slot
                // is filled here.
                .expect("every item was done")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
