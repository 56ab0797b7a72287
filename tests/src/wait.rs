//! Bounded waits: every wait in these tests has a deadline, so a hang fails instead of stalling CI.

use std::{
    thread,
    time::{Duration, Instant},
};

/// A generous bound for one step of a test (a CLI start, a turn), so a hang fails, not stalls.
pub const STEP: Duration = Duration::from_secs(30);

/// Tries `probe` every `every` until it gives a value; `None` once `timeout` has passed without
/// one. It is tried at least once.
pub fn poll<T>(
    timeout: Duration,
    every: Duration,
    mut probe: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if Instant::now() > deadline {
            return None;
        }
        thread::sleep(every);
    }
}

/// Retries `check` until it holds, pausing 200 ms between tries; panics after `timeout`.
/// For things that happen on another process's schedule (a file watcher, a marker file).
#[track_caller]
pub fn eventually(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let held = poll(timeout, Duration::from_millis(200), || {
        check().then_some(())
    });
    assert!(
        held.is_some(),
        "gave up after {timeout:?} waiting for {what}"
    );
}
