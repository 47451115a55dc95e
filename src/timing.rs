//! Per-phase wall-clock counters for the speed harness: off unless [`enable`] was called, and then
//! only in this process (the SQL functions never turn them on). A phase is timed by holding the
//! guard [`phase`] returns.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);

thread_local! {
    static TOTALS: RefCell<Vec<(&'static str, Duration, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Turns the counters on or off (process-wide).
pub fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// Times a phase until the guard is dropped (nothing when the counters are off).
pub fn phase(name: &'static str) -> Guard {
    Guard(ON.load(Ordering::Relaxed).then(|| (name, Instant::now())))
}

/// See [`phase`].
pub struct Guard(Option<(&'static str, Instant)>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some((name, t)) = self.0.take() {
            let d = t.elapsed();
            TOTALS.with(|c| {
                let mut c = c.borrow_mut();
                match c.iter_mut().find(|e| e.0 == name) {
                    Some(e) => {
                        e.1 += d;
                        e.2 += 1;
                    }
                    None => c.push((name, d, 1)),
                }
            });
        }
    }
}

/// The totals of this thread, in first-seen order: (phase, total time, times entered); then reset.
pub fn take() -> Vec<(&'static str, Duration, u64)> {
    TOTALS.with(|c| std::mem::take(&mut *c.borrow_mut()))
}
