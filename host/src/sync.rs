//! The host's one lock-poisoning policy: a poisoned lock's data is used as it is. Every lock of
//! the host guards bookkeeping that stays consistent between statements (no plugin code runs
//! under a host lock), so a panic elsewhere must not take the whole host down with it.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data over from a thread that panicked while holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
