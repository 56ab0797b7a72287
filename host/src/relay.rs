//! Leader/follower among the threads that read one input and run what they read themselves
//! (no hand-off to another thread for a quick job), with a watchdog that starts another reader
//! when a job outlives a budget. The session's reader threads (`service::lane`) and a worker's
//! (`worker::child`) both run on it.

use std::{
    io,
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        Condvar, Mutex,
    },
    time::{Duration, Instant},
};

/// After the last job started, how long a watchdog keeps checking every budget instead of
/// sleeping until woken (waking it costs the next job a system call).
pub(crate) const STAY_AWAKE: Duration = Duration::from_millis(250);

/// How long a job may run on the thread that read it before the watchdog starts another reader
/// (the session's reader threads and a worker's). The router also calls a tool whose calls
/// outlive it one that "runs long", and sends its calls to the executor until one returns
/// within half of it.
pub const HERE_BUDGET: Duration = Duration::from_millis(2);

/// Who reads, since when the reader runs a job, and the watchdog's sleep.
pub(crate) struct Relay {
    /// Threads reading or about to read: 0 while the last reader runs a job.
    readers: AtomicUsize,
    /// When the last reader started its job, in nanoseconds since `epoch`.
    since: AtomicU64,
    epoch: Instant,
    /// The input is done: nobody reads any more, the watchdog returns.
    ended: AtomicBool,
    /// The watchdog sleeps until woken (rather than checking every budget).
    asleep: AtomicBool,
    sleep: Mutex<()>,
    wake: Condvar,
}

impl Relay {
    /// One thread reads (the first reader, which the caller starts).
    pub(crate) fn new() -> Self {
        Relay {
            readers: AtomicUsize::new(1),
            since: AtomicU64::new(0),
            epoch: Instant::now(),
            ended: AtomicBool::new(false),
            asleep: AtomicBool::new(false),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// The reader is about to run what it read: it reads no more until that returns.
    pub(crate) fn running(&self) {
        self.since
            .store(self.epoch.elapsed().as_nanos() as u64, Ordering::SeqCst);
        // SeqCst, paired with the watchdog's: either it sees no reader, or we see it asleep.
        self.readers.fetch_sub(1, Ordering::SeqCst);
        if self.asleep.load(Ordering::SeqCst) {
            self.wake_watchdog();
        }
    }

    /// The reader's job returned: whether it reads again (otherwise another thread reads now
    /// and this one is done).
    pub(crate) fn read_again(&self) -> bool {
        self.readers
            .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// The input is done; the watchdog returns.
    pub(crate) fn end(&self) {
        self.ended.store(true, Ordering::Release);
        self.wake_watchdog();
    }

    pub(crate) fn ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }

    fn wake_watchdog(&self) {
        let _guard = lock(&self.sleep);
        self.asleep.store(false, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// The watchdog, until [`Self::end`]: calls `promote` (which starts another reader) when
    /// the reader's job outlives `budget`. It checks every budget while a job runs or one
    /// started within `stay_awake` (so a job starting then costs no wake-up), and sleeps
    /// until woken otherwise. At every check, before promoting, `check` sees the time and may
    /// ask to be called again at some instant even while the watchdog sleeps (a deadline).
    pub(crate) fn watch(
        &self,
        budget: Duration,
        stay_awake: Duration,
        mut promote: impl FnMut() -> io::Result<()>,
        mut check: impl FnMut(Instant) -> Option<Instant>,
    ) {
        let mut guard = lock(&self.sleep);
        loop {
            if self.ended() {
                return;
            }
            // One reading of the clock for the check and the promotion, so that a job the check
            // found within its budget is not promoted by a later reading.
            let at = Instant::now();
            let next = check(at);
            let now = at.duration_since(self.epoch);
            let since = Duration::from_nanos(self.since.load(Ordering::SeqCst));
            if now >= since + budget && self.read_again() {
                if let Err(e) = promote() {
                    tracing::error!("cannot start another reader thread: {e}");
                    // Tried again at the next check.
                    self.readers.fetch_sub(1, Ordering::SeqCst);
                }
            }
            if now < since + stay_awake || self.readers.load(Ordering::SeqCst) == 0 {
                guard = self
                    .wake
                    .wait_timeout(guard, budget)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                continue;
            }
            self.asleep.store(true, Ordering::SeqCst);
            // A job that started between our checks keeps us awake.
            while self.asleep.load(Ordering::SeqCst)
                && self.readers.load(Ordering::SeqCst) != 0
                && !self.ended()
            {
                guard = match next {
                    None => self.wake.wait(guard).unwrap_or_else(|e| e.into_inner()),
                    Some(at) => {
                        let wait = at.saturating_duration_since(Instant::now());
                        if wait.is_zero() {
                            break;
                        }
                        self.wake
                            .wait_timeout(guard, wait)
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                };
            }
            self.asleep.store(false, Ordering::SeqCst);
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // The data these locks guard stays usable after a panic elsewhere.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{atomic::AtomicUsize, Arc};

    fn poll_until(what: &str, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < deadline, "{what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A relay whose watchdog runs on a thread, counting promotions.
    fn watched(
        stay_awake: Duration,
    ) -> (Arc<Relay>, Arc<AtomicUsize>, std::thread::JoinHandle<()>) {
        let relay = Arc::new(Relay::new());
        let promoted = Arc::new(AtomicUsize::new(0));
        let (r, p) = (relay.clone(), promoted.clone());
        let watchdog = std::thread::spawn(move || {
            r.watch(
                Duration::from_millis(2),
                stay_awake,
                || {
                    p.fetch_add(1, Ordering::SeqCst);
                    Ok(())
                },
                |_| None,
            )
        });
        (relay, promoted, watchdog)
    }

    #[test]
    fn a_quick_job_keeps_its_reader_and_a_slow_one_gets_another_reader() {
        let (relay, promoted, watchdog) = watched(Duration::from_secs(60));
        relay.running();
        assert!(relay.read_again(), "a job that returns at once reads on");
        relay.running();
        poll_until("a job past the budget gets another reader", || {
            promoted.load(Ordering::SeqCst) == 1
        });
        assert!(
            !relay.read_again(),
            "the new reader reads; this one is done"
        );
        relay.end();
        watchdog.join().unwrap();
        assert_eq!(promoted.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_sleeping_watchdog_is_woken_by_a_job_and_by_the_end() {
        let (relay, promoted, watchdog) = watched(Duration::from_millis(5));
        poll_until("the watchdog falls asleep", || {
            relay.asleep.load(Ordering::SeqCst)
        });
        relay.running();
        poll_until("the sleeping watchdog promotes a reader", || {
            promoted.load(Ordering::SeqCst) == 1
        });
        poll_until("asleep again", || relay.asleep.load(Ordering::SeqCst));
        relay.end();
        watchdog.join().unwrap();
    }
}
