//! A worker's asks, host side (docs/design/talk-back.md §4): an `Ask` frame is checked
//! against what the worker may have in flight ([`AskBook::admit`]), then put to the call's
//! real asker on a thread of its own (`running.rs`'s `Asking`) while the call goes on reading
//! its replies; the answer goes back as an `Answered` frame.
//!
//! The worker is not trusted: an ask for a call that is not running, a number already in
//! flight, more than [`MAX_PER_CALL`] per call or [`MAX_PER_WORKER`] per worker, or JSON over
//! [`MAX_ASK_BYTES`] is refused at once (answered with an error, never queued), so what a
//! flood of asks holds in the host is bounded by those numbers.

use std::{
    collections::{HashMap, HashSet},
    sync::{atomic::AtomicU64, Mutex},
};

use crate::sync::lock;

/// Most asks in flight per call (a plugin asking from several threads of one call).
pub const MAX_PER_CALL: usize = 8;
/// Most asks in flight per worker, over all its calls.
pub const MAX_PER_WORKER: usize = 64;
/// The largest ask taken from a worker, in bytes of JSON (the most a front end's asker takes:
/// `handler::asks::MAX_ASK_BYTES`).
pub const MAX_ASK_BYTES: usize = 256 << 10;

/// The calls of one worker that may ask, and their asks in flight.
#[derive(Default)]
pub(super) struct AskBook {
    /// By call id: its ask numbers in flight. A call is here only while it runs.
    calls: Mutex<HashMap<u64, HashSet<u64>>>,
    /// Asks refused so far (the host warns at 1, 2, 4, 8, ... of them).
    refused: AtomicU64,
}

impl AskBook {
    /// Call `id` runs from now on: it may ask.
    pub(super) fn open(&self, id: u64) {
        lock(&self.calls).insert(id, HashSet::new());
    }

    /// Call `id` ended: its asks still in flight are forgotten, and later ones refused.
    pub(super) fn close(&self, id: u64) {
        lock(&self.calls).remove(&id);
    }

    /// Ask `ask` of call `id` was answered.
    pub(super) fn done(&self, id: u64, ask: u64) {
        if let Some(asks) = lock(&self.calls).get_mut(&id) {
            asks.remove(&ask);
        }
    }

    /// Whether the worker may ask `asks` for call `id` under number `ask`; `Err` says why not.
    /// Admitted, the ask counts as in flight until [`Self::done`] or [`Self::close`].
    pub(super) fn admit(&self, id: u64, ask: u64, asks: &str) -> Result<(), String> {
        if asks.len() > MAX_ASK_BYTES {
            return Err(format!(
                "its JSON takes {} bytes, over the {MAX_ASK_BYTES}-byte limit",
                asks.len()
            ));
        }
        let mut calls = lock(&self.calls);
        if calls.values().any(|a| a.contains(&ask)) {
            return Err(format!("its number {ask} is in flight already"));
        }
        let in_flight: usize = calls.values().map(HashSet::len).sum();
        if in_flight >= MAX_PER_WORKER {
            return Err(format!(
                "{MAX_PER_WORKER} asks of the worker are in flight already"
            ));
        }
        let Some(mine) = calls.get_mut(&id) else {
            return Err(format!("its call {id} is not running"));
        };
        if mine.len() >= MAX_PER_CALL {
            return Err(format!(
                "{MAX_PER_CALL} asks of its call {id} are in flight already"
            ));
        }
        mine.insert(ask);
        Ok(())
    }

    /// Counts a refused ask; whether to warn about it (the 1st, 2nd, 4th, 8th, ...: a flood
    /// does not flood the log).
    pub(super) fn count_refused(&self) -> bool {
        crate::plugin::sparse_warning(&self.refused)
    }

    /// Asks refused so far.
    #[cfg(test)]
    pub(super) fn refused(&self) -> u64 {
        self.refused.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a hostile worker's asks may hold in the host is bounded: per call, per worker, by
    /// size; a number in flight or a call not running is refused.
    #[test]
    fn a_workers_asks_are_bounded() {
        let book = AskBook::default();
        let small = "{}";
        assert!(book.admit(1, 1, small).unwrap_err().contains("not running"));
        book.open(1);
        assert!(book
            .admit(1, 1, &"x".repeat(MAX_ASK_BYTES + 1))
            .unwrap_err()
            .contains("over the"));
        for n in 0..MAX_PER_CALL as u64 {
            book.admit(1, n, small).unwrap();
        }
        assert!(book
            .admit(1, 100, small)
            .unwrap_err()
            .contains("of its call 1"));
        book.open(2);
        assert!(book.admit(2, 3, small).unwrap_err().contains("number 3"));
        book.done(1, 3);
        book.admit(2, 3, small).unwrap();
        for c in 3..100u64 {
            book.open(c);
            for n in 0..MAX_PER_CALL as u64 {
                let _ = book.admit(c, c * 100 + n, small);
            }
        }
        let held: usize = lock(&book.calls).values().map(HashSet::len).sum();
        assert_eq!(held, MAX_PER_WORKER);
        book.close(1);
        assert!(book
            .admit(1, 999, small)
            .unwrap_err()
            .contains("not running"));
        let warned = (0..1000).filter(|_| book.count_refused()).count();
        assert_eq!(warned, 10, "1, 2, 4, ... 512");
        assert_eq!(book.refused(), 1000);
    }
}
