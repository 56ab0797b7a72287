//! The host's one lock-poisoning policy, and the switch that puts the hand-made concurrency
//! protocols under the loom model checker.
//!
//! # Poisoning
//! A panic while a lock is held poisons it. The host recovers the data instead of propagating
//! the panic: every lock in the host guards bookkeeping that stays consistent between
//! statements (no plugin code runs under a host lock), so a panic elsewhere must not take the
//! session down with it. [`lock`] is `m.lock().unwrap_or_else(PoisonError::into_inner)`;
//! [`read`] and [`write`] do the same for a `RwLock`, [`get_mut`] and [`into_inner`] for a
//! mutex owned outright, and [`wait`], [`wait_timeout`] and [`wait_timeout_while`] for
//! condition variables. `lock` and the waits take std's types and, in the loom build, loom's.
//! Production code takes its locks only through these: clippy's `disallowed-methods` and
//! `disallowed-types` (crates/clippy.toml) refuse std's lock, wait and `PoisonError` anywhere
//! else, so this file alone allows them.
//!
//! # Loom
//! The leader/follower relay ([`crate::relay`]), the executor's wake protocol
//! ([`crate::executor`]), a worker's lead token (`worker::host`) and the binary's batched log
//! lines (`toolhost::logs`) take their atomics,
//! `Mutex`, `Condvar` and thread spawning from this module ([`atomic`], [`Mutex`], [`Condvar`],
//! [`thread`]). They are std's, unless toolhost is built with its `loom` feature: then they are
//! loom's, and the `loom_model` tests explore every interleaving of those protocols:
//!
//! ```text
//! cargo test -p toolhost-base -p toolhost-loader -p toolhost-worker -p toolhost --features loom --lib -- loom_model
//! ```
//!
//! (`scripts/test` runs it.) Only those tests run in that build: loom's types panic outside a
//! `loom::model`, so everything else is tested in the ordinary build. A feature rather than
//! `--cfg loom` keeps the dependencies as they are (tokio has a `cfg(loom)` of its own), so the
//! step rebuilds only the host's crates; each crate with `loom_model` tests has a `loom`
//! feature that turns on this one.

// The one place that may take std locks and name `PoisonError` (crates/clippy.toml).
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

#[cfg(not(feature = "loom"))]
pub use std::{
    sync::{atomic, Condvar, Mutex, MutexGuard},
    thread,
};

#[cfg(feature = "loom")]
pub use loom::{
    sync::{atomic, Condvar, Mutex, MutexGuard},
    thread,
};

use std::{sync::PoisonError, time::Duration};

/// A mutex whose data [`lock`] hands out even when a panic poisoned it.
pub trait Lock {
    type Guard<'a>
    where
        Self: 'a;
    fn lock_recovered(&self) -> Self::Guard<'_>;
}

/// A condition variable whose waits [`wait`] and [`wait_timeout`] recover from poisoning.
pub trait Wait<G> {
    fn wait_recovered(&self, guard: G) -> G;
    /// The guard, and whether the wait timed out.
    fn wait_timeout_recovered(&self, guard: G, dur: Duration) -> (G, bool);
}

/// [`Lock`] and [`Wait`] for one library's `Mutex`, `Arc` and `Condvar`: std's, and loom's in
/// the loom build, from the same text. `?Sized` where the library allows it.
macro_rules! recovering {
    ($($lib:ident)::+ $(, ?$sized:ident)?) => {
        impl<T $(: ?$sized)?> Lock for $($lib)::+::Mutex<T> {
            type Guard<'a>
                = $($lib)::+::MutexGuard<'a, T>
            where
                T: 'a;
            fn lock_recovered(&self) -> Self::Guard<'_> {
                self.lock().unwrap_or_else(PoisonError::into_inner)
            }
        }

        /// `lock(&arc)` as with a plain reference (generic arguments get no deref coercion).
        impl<M: Lock $(+ ?$sized)?> Lock for $($lib)::+::Arc<M> {
            type Guard<'a>
                = M::Guard<'a>
            where
                Self: 'a;
            fn lock_recovered(&self) -> Self::Guard<'_> {
                (**self).lock_recovered()
            }
        }

        impl<'a, T> Wait<$($lib)::+::MutexGuard<'a, T>> for $($lib)::+::Condvar {
            fn wait_recovered(
                &self,
                guard: $($lib)::+::MutexGuard<'a, T>,
            ) -> $($lib)::+::MutexGuard<'a, T> {
                self.wait(guard).unwrap_or_else(PoisonError::into_inner)
            }
            fn wait_timeout_recovered(
                &self,
                guard: $($lib)::+::MutexGuard<'a, T>,
                dur: Duration,
            ) -> ($($lib)::+::MutexGuard<'a, T>, bool) {
                let (guard, result) = self
                    .wait_timeout(guard, dur)
                    .unwrap_or_else(PoisonError::into_inner);
                (guard, result.timed_out())
            }
        }
    };
}

recovering!(std::sync, ?Sized);

// Loom's timed wait never times out (loom has no clock): a protocol under loom must not
// count on a timeout to make progress.
#[cfg(feature = "loom")]
recovering!(loom::sync);

/// Locks `m`, recovering its data if a panic poisoned it (the policy above).
pub fn lock<M: Lock + ?Sized>(m: &M) -> M::Guard<'_> {
    m.lock_recovered()
}

/// Locks `l` for reading, recovering its data if a panic poisoned it (the policy above).
pub fn read<T: ?Sized>(l: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(PoisonError::into_inner)
}

/// Locks `l` for writing, recovering its data if a panic poisoned it (the policy above).
pub fn write<T: ?Sized>(l: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(PoisonError::into_inner)
}

/// The data of a mutex held outright (no lock needed), also if a panic poisoned it.
pub fn get_mut<T: ?Sized>(m: &mut std::sync::Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// The data of a mutex given up, also if a panic poisoned it.
pub fn into_inner<T>(m: std::sync::Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `cv` until notified (or a spurious wake-up), recovering from poisoning.
pub fn wait<G, C: Wait<G> + ?Sized>(cv: &C, guard: G) -> G {
    cv.wait_recovered(guard)
}

/// Waits on `cv` until notified or `dur` passed; the guard, and whether it timed out.
pub fn wait_timeout<G, C: Wait<G> + ?Sized>(cv: &C, guard: G, dur: Duration) -> (G, bool) {
    cv.wait_timeout_recovered(guard, dur)
}

/// Waits on `cv` while `blocked` holds of the guarded data, at most `dur` in all; the guard,
/// and whether `blocked` still holds (timed out).
pub fn wait_timeout_while<'a, T, M>(
    cv: &std::sync::Condvar,
    mut guard: std::sync::MutexGuard<'a, T>,
    dur: Duration,
    mut blocked: M,
) -> (std::sync::MutexGuard<'a, T>, bool)
where
    M: FnMut(&mut T) -> bool,
{
    let deadline = std::time::Instant::now() + dur;
    while blocked(&mut guard) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return (guard, true);
        }
        guard = wait_timeout(cv, guard, left).0;
    }
    (guard, false)
}

/// Runs a loom model of a protocol: every interleaving with at most three preemptions (as
/// tokio bounds its own; `LOOM_MAX_PREEMPTIONS` overrides), which finds the bugs two threads
/// can make in these protocols within seconds; unbounded, a model of three threads runs for
/// hours.
///
/// Public in the `loom` build for the `loom_model` tests of every crate of the host.
#[cfg(feature = "loom")]
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_poisoned_lock_hands_out_its_data() {
        let m = Arc::new(std::sync::Mutex::new(1));
        let m2 = m.clone();
        let panicked = std::thread::spawn(move || {
            let mut g = m2.lock().unwrap();
            *g = 2;
            panic!("poison it");
        })
        .join();
        assert!(panicked.is_err());
        assert!(m.is_poisoned());
        assert_eq!(*lock(&*m), 2);
        let mut m = Arc::into_inner(m).unwrap();
        *get_mut(&mut m) += 1;
        assert_eq!(into_inner(m), 3);

        let rw = Arc::new(std::sync::RwLock::new(1));
        let rw2 = rw.clone();
        let panicked = std::thread::spawn(move || {
            let mut g = rw2.write().unwrap();
            *g = 2;
            panic!("poison it");
        })
        .join();
        assert!(panicked.is_err());
        assert!(rw.is_poisoned());
        assert_eq!(*read(&*rw), 2);
        *write(&*rw) = 3;
        assert_eq!(*read(&*rw), 3);
    }

    #[test]
    fn a_bounded_wait_returns_when_the_condition_holds_or_the_time_is_up() {
        let pair = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
        let p = pair.clone();
        let setter = std::thread::spawn(move || {
            *lock(&p.0) = true;
            p.1.notify_all();
        });
        let (g, timed_out) =
            wait_timeout_while(&pair.1, lock(&pair.0), Duration::from_secs(10), |set| !*set);
        assert!(*g && !timed_out);
        drop(g);
        setter.join().unwrap();
        let (g, timed_out) =
            wait_timeout_while(&pair.1, lock(&pair.0), Duration::from_millis(1), |set| *set);
        assert!(*g && timed_out);
    }
}
