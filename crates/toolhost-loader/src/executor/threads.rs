//! The executor's threads: started on demand, each running jobs until it has been idle for
//! `keep_idle`; an idle one spins briefly, then parks.

#[cfg(not(feature = "loom"))]
use std::time::Instant;
use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    sync::Arc,
    time::Duration,
};

use super::state::{State, Wake};
use super::ExecutorConfig;
use crate::sync::{
    atomic::{AtomicUsize, Ordering},
    lock, thread, wait_timeout, Condvar, Mutex, MutexGuard,
};

pub(super) struct Inner {
    pub(super) config: ExecutorConfig,
    pub(super) state: Mutex<State>,
    pub(super) work: Condvar,
    /// Length of `State::ready`, readable without the lock (what spinning threads watch).
    pub(super) ready_len: AtomicUsize,
    /// Whether idle threads spin before parking (more than one CPU).
    pub(super) spin: bool,
    /// Notified when a thread parks, ends or finishes a job, for tests that wait for that.
    #[cfg(all(test, not(feature = "loom")))]
    pub(super) changed: Condvar,
}

/// How long an idle thread spins before it parks.
#[cfg_attr(feature = "loom", allow(dead_code))]
const SPIN: Duration = Duration::from_micros(50);

impl Inner {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A job never runs under the lock (see `crate::sync` for the policy).
        lock(&self.state)
    }

    /// Tells the thread `wake` names, once the lock is released (so that the thread does not
    /// wake into a held lock).
    pub(super) fn wake(self: &Arc<Self>, st: MutexGuard<'_, State>, wake: Wake) {
        drop(st);
        match wake {
            Wake::None => {}
            Wake::Parked => self.work.notify_one(),
            Wake::Spawn => self.spawn_thread(),
        }
    }

    fn spawn_thread(self: &Arc<Self>) {
        let inner = self.clone();
        let spawned = thread::Builder::new()
            .name("toolhost-call".into())
            .spawn(move || inner.work_loop());
        if let Err(e) = spawned {
            self.lock().transition_to_not_started();
            // The job stays ready: a running thread takes it when its current job ends.
            tracing::error!("cannot start a call thread: {e}");
        }
    }

    fn work_loop(self: Arc<Self>) {
        let mut st = self.lock();
        st.transition_to_started();
        let serial = st.next_serial;
        st.next_serial += 1;
        loop {
            if let Some(job) = st.ready.pop_front() {
                self.ready_len.store(st.ready.len(), Ordering::Release);
                st.running.insert(serial, job.label);
                drop(st);
                // A panic in the job must not take the thread's bookkeeping with it (jobs
                // catch their own; this is the backstop).
                let _ = catch_unwind(AssertUnwindSafe(job.run));
                st = self.lock();
                st.running.remove(&serial);
                self.changed();
                if let Some(next) = st.next_waiting(&job.plugin) {
                    // This thread takes it on its next turn (it is not idle: no wake-up).
                    st.ready.push_back(next);
                    self.ready_len.store(st.ready.len(), Ordering::Release);
                }
                continue;
            }
            if self.spin {
                st.transition_to_spinning();
                drop(st);
                self.spin_for_work();
                st = self.lock();
                st.transition_from_spinning();
                if !st.ready.is_empty() {
                    continue;
                }
            }
            if st.is_retiring() {
                st.threads -= 1;
                return;
            }
            st.transition_to_parked();
            self.changed();
            // One wait, not `wait_timeout_while`: every wake-up must be accounted for here,
            // also one that finds the job already taken.
            let timed_out;
            (st, timed_out) = wait_timeout(&self.work, st, self.config.keep_idle);
            st.transition_from_parked();
            if (timed_out || st.is_retiring()) && st.ready.is_empty() {
                st.threads -= 1;
                self.changed();
                return;
            }
        }
    }

    #[cfg(all(test, not(feature = "loom")))]
    fn changed(&self) {
        self.changed.notify_all();
    }

    #[cfg(not(all(test, not(feature = "loom"))))]
    fn changed(&self) {}

    /// Waits (at most 10 s) until the state satisfies `cond`.
    #[cfg(all(test, not(feature = "loom")))]
    pub(super) fn wait_until(&self, what: &str, mut cond: impl FnMut(&State) -> bool) {
        let (_guard, timed_out) = crate::sync::wait_timeout_while(
            &self.changed,
            self.lock(),
            Duration::from_secs(10),
            |st| !cond(st),
        );
        assert!(!timed_out, "{what}");
    }

    /// Spins until a job is ready, for at most [`SPIN`].
    #[cfg(not(feature = "loom"))]
    fn spin_for_work(&self) {
        let until = Instant::now() + SPIN;
        while self.ready_len.load(Ordering::Acquire) == 0 && Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    /// Loom has no clock: the spin is one look, after the other threads had a turn.
    #[cfg(feature = "loom")]
    fn spin_for_work(&self) {
        if self.ready_len.load(Ordering::Acquire) == 0 {
            thread::yield_now();
        }
    }

    /// Ends idle threads at once, and every thread once the ready jobs are done.
    #[cfg(all(test, feature = "loom"))]
    pub(super) fn retire(&self) {
        self.lock().retiring = true;
        self.work.notify_all();
    }
}
