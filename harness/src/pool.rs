//! The one worker pool of the harness: `jobs` threads take the next item in order, and the
//! results come back in the items' order, whatever order they end in. A check plays its
//! scenarios on it, and a campaign its scenarios and then its reproductions.

/// Runs `one` on every item on `jobs` threads; `done` hears of each result as it ends (on the
/// calling thread, so a progress line needs no lock). `one` must not panic: a panic of one
/// item would end the whole pool, so a caller that runs gauntlet's own code catches it first.
pub fn map_in_order<T: Send, R: Send>(
    items: Vec<T>,
    jobs: usize,
    one: impl Fn(usize, T) -> R + Sync,
    mut done: impl FnMut(usize, &R),
) -> Vec<R> {
    let total = items.len();
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let (sender, receiver) = std::sync::mpsc::channel::<(usize, R)>();
    let mut results: Vec<Option<R>> = (0..total).map(|_| None).collect();
    std::thread::scope(|scope| {
        for _ in 0..jobs.clamp(1, total.max(1)) {
            let (queue, sender, one) = (&queue, sender.clone(), &one);
            scope.spawn(move || {
                // A poisoned queue means another worker panicked: stop taking work.
                while let Some((idx, item)) = queue.lock().ok().and_then(|mut queue| queue.next()) {
                    if sender.send((idx, one(idx, item))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(sender);
        for (idx, result) in receiver {
            done(idx, &result);
            results[idx] = Some(result);
        }
    });
    results.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Results keep the items' order though later items end first.
    #[test]
    fn results_come_back_in_the_items_order() {
        let items: Vec<u64> = (0..8).collect();
        let mut heard = Vec::new();
        let results = map_in_order(
            items,
            3,
            |_, n| {
                std::thread::sleep(std::time::Duration::from_millis(8 - n));
                n * 10
            },
            |idx, _| heard.push(idx),
        );
        assert_eq!(results, [0, 10, 20, 30, 40, 50, 60, 70]);
        heard.sort_unstable();
        assert_eq!(heard, (0..8).collect::<Vec<_>>());
    }
}
