//! Leader/follower among the threads that read one input and run what they read themselves
//! (no hand-off to another thread for a quick job), with a watchdog that starts another reader
//! when a job outlives a budget. The session's reader threads (`service::lane`) and a worker's
//! (`worker::child`) both run on it.
//!
//! # The protocol
//! One state word holds everything the threads decide on, changed only by the named
//! `transition_to_*` methods of [`State`], each one read-modify-write (so every thread sees
//! the changes in one order):
//!
//! - `READING`: a thread reads the input (or is about to). Set at first; cleared by
//!   [`Relay::running`] when the reader runs what it read; set again either by
//!   [`Relay::read_again`] when the job returned (the same thread reads on) or by the watchdog
//!   when the job outlived the budget (it starts another reader, and the job's thread is done
//!   when its job returns: `read_again` says false). Never two readers.
//! - `ASLEEP`: the watchdog waits to be woken, set by the watchdog itself only while `READING`
//!   (no job runs, so nothing can outlive a budget). Whoever takes the state out of `READING`
//!   or ends it clears `ASLEEP` in the same step, and then wakes the watchdog: a job that
//!   starts while the watchdog falls asleep either prevents the sleep or wakes it.
//! - `ENDED`: the input is done; the watchdog returns. Never cleared.
//! - the job count, incremented by every [`Relay::running`]: the watchdog promotes exactly the
//!   job it measured (not a quick later one that happens to run when it looks again).
//!
//! Time stays out of the word: when the current job started is kept beside it, and the
//! watchdog's decision takes "the budget elapsed" as an input, so that the `loom_model` tests
//! can explore the protocol with any timing (see `crate::sync`).

use std::{
    io,
    sync::atomic::AtomicU64,
    time::{Duration, Instant},
};

use crate::sync::{
    atomic::{AtomicUsize, Ordering},
    lock, wait, wait_timeout, Condvar, Mutex,
};

/// After the last job started, how long a watchdog keeps checking every budget instead of
/// sleeping until woken (waking it costs the next job a system call).
pub const STAY_AWAKE: Duration = Duration::from_millis(250);

/// How long a job may run on the thread that read it before the watchdog starts another reader
/// (the session's reader threads and a worker's). The router also calls a tool whose calls
/// outlive it one that "runs long", and sends its calls to the executor until one returns
/// within half of it.
pub const HERE_BUDGET: Duration = Duration::from_millis(2);

/// Who reads, since when the reader runs a job, and the watchdog's sleep.
pub struct Relay {
    state: State,
    /// When the last job started, in nanoseconds since `epoch` (written before its
    /// `transition_to_running`, so whoever sees that transition reads this time or a later
    /// one).
    since: AtomicU64,
    epoch: Instant,
    sleep: Mutex<()>,
    wake: Condvar,
}

impl Relay {
    /// One thread reads (the first reader, which the caller starts).
    // No `Default`: a relay starts with a reader the caller starts, which `new` names.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        Relay {
            state: State::new(),
            since: AtomicU64::new(0),
            epoch: Instant::now(),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
        }
    }

    /// The reader is about to run what it read: it reads no more until that returns.
    pub fn running(&self) {
        self.since.store(
            self.epoch.elapsed().as_nanos() as u64,
            std::sync::atomic::Ordering::Release,
        );
        if self.state.transition_to_running().was_asleep() {
            self.wake_watchdog();
        }
    }

    /// The reader's job returned: whether it reads again (otherwise another thread reads now
    /// and this one is done).
    pub fn read_again(&self) -> bool {
        self.state.transition_to_read_again().is_ok()
    }

    /// The input is done; the watchdog returns.
    pub fn end(&self) {
        self.state.transition_to_ended();
        // Always: the watchdog may be in a timed wait, not asleep.
        self.wake_watchdog();
    }

    pub fn ended(&self) -> bool {
        self.state.load().is_ended()
    }

    /// Under the lock the watchdog holds from its last look at the state until it waits, so
    /// that the notification cannot fall between the two.
    fn wake_watchdog(&self) {
        let _guard = lock(&self.sleep);
        self.wake.notify_one();
    }

    /// The watchdog, until [`Self::end`]: calls `promote` (which starts another reader) when
    /// the reader's job outlives `budget`. It checks every budget while a job runs or one
    /// started within `stay_awake` (so a job starting then costs no wake-up), and sleeps
    /// until woken otherwise. At every check, before promoting, `check` sees the time and may
    /// ask to be called again at some instant even while the watchdog sleeps (a deadline).
    pub fn watch(
        &self,
        budget: Duration,
        stay_awake: Duration,
        promote: impl FnMut() -> io::Result<()>,
        mut check: impl FnMut(Instant) -> Option<Instant>,
    ) {
        // One reading of the clock for the check and the promotion, so that a job the check
        // found within its budget is not promoted by a later reading.
        let at = std::cell::Cell::new(Instant::now());
        self.watch_with(
            budget,
            || {
                at.set(Instant::now());
                check(at.get())
            },
            || {
                let now = at.get().duration_since(self.epoch);
                let since =
                    Duration::from_nanos(self.since.load(std::sync::atomic::Ordering::Acquire));
                Times {
                    spent: now >= since + budget,
                    recent: now < since + stay_awake,
                }
            },
            promote,
        )
    }

    /// [`Self::watch`] with the clock given: `check` at the start of every round (returns the
    /// next deadline), `times` once the round has read the state (so that it times this job
    /// or a later one, never an earlier one).
    fn watch_with(
        &self,
        budget: Duration,
        mut check: impl FnMut() -> Option<Instant>,
        mut times: impl FnMut() -> Times,
        mut promote: impl FnMut() -> io::Result<()>,
    ) {
        loop {
            let next = check();
            match self.round(&mut times, &mut promote) {
                Round::Ended => return,
                Round::Again => {}
                Round::Watch => {
                    let guard = lock(&self.sleep);
                    if !self.ended() {
                        drop(wait_timeout(&self.wake, guard, budget));
                    }
                }
                Round::Sleep => self.sleep(next),
            }
        }
    }

    /// One look at the state: promotes the job if its budget is spent, and says what next.
    fn round(
        &self,
        times: &mut impl FnMut() -> Times,
        promote: &mut impl FnMut() -> io::Result<()>,
    ) -> Round {
        let seen = self.state.load();
        if seen.is_ended() {
            return Round::Ended;
        }
        let times = times();
        if !seen.is_reading() {
            if !times.spent {
                return Round::Watch;
            }
            if self.state.transition_to_promoted(seen).is_err() {
                // The job returned, another started, or the input ended: look again.
                return Round::Again;
            }
            if let Err(e) = promote() {
                tracing::error!("cannot start another reader thread: {e}");
                // Tried again at the next check.
                self.state.transition_to_unpromoted();
                return Round::Watch;
            }
            return Round::Again;
        }
        if times.recent {
            Round::Watch
        } else {
            Round::Sleep
        }
    }

    /// Sleeps until a job starts or the input ends (or until `deadline`).
    fn sleep(&self, deadline: Option<Instant>) {
        let mut guard = lock(&self.sleep);
        if self.state.transition_to_asleep().is_err() {
            // A job started (or the input ended) since the round looked: look again.
            return;
        }
        while self.state.load().is_asleep() {
            guard = match deadline {
                None => wait(&self.wake, guard),
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        self.state.transition_to_awake();
                        return;
                    }
                    wait_timeout(&self.wake, guard, left).0
                }
            };
        }
    }
}

/// What the watchdog knows of the time at one round.
#[derive(Clone, Copy)]
struct Times {
    /// The current job (or a later one) started at least a budget ago.
    spent: bool,
    /// The current job (or a later one) started within the stay-awake period.
    recent: bool,
}

/// What the watchdog does after a round.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    Ended,
    /// Look again at once.
    Again,
    /// Look again in one budget (or when the input ends).
    Watch,
    /// Sleep until woken.
    Sleep,
}

/// The state word (see the module doc).
struct State {
    val: AtomicUsize,
    /// Notified at every transition, for tests that wait for a state.
    #[cfg(all(test, not(feature = "loom")))]
    changed: (std::sync::Mutex<()>, std::sync::Condvar),
}

/// One value of the state word.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Snapshot(usize);

const READING: usize = 0b001;
const ASLEEP: usize = 0b010;
const ENDED: usize = 0b100;
const JOB_ONE: usize = 0b1000;

impl State {
    fn new() -> Self {
        State {
            val: AtomicUsize::new(READING),
            #[cfg(all(test, not(feature = "loom")))]
            changed: Default::default(),
        }
    }

    fn load(&self) -> Snapshot {
        Snapshot(self.val.load(Ordering::Acquire))
    }

    /// Reading → running a job (nobody reads). Clears `ASLEEP`: the snapshot before says
    /// whether the caller must wake the watchdog.
    fn transition_to_running(&self) -> Snapshot {
        self.update(|s| {
            debug_assert!(
                s.is_reading(),
                "a job started by a thread that did not read"
            );
            Some(Snapshot((s.0 & !(READING | ASLEEP)).wrapping_add(JOB_ONE)))
        })
        .expect("always applies")
    }

    /// Running a job → reading, by the job's own thread; fails when the watchdog promoted
    /// another reader meanwhile.
    fn transition_to_read_again(&self) -> Result<Snapshot, Snapshot> {
        self.update(|s| (!s.is_reading()).then_some(Snapshot(s.0 | READING)))
    }

    /// Running the job of `seen` → reading, by the watchdog (which then starts the reader);
    /// fails if anything changed since `seen`.
    fn transition_to_promoted(&self, seen: Snapshot) -> Result<Snapshot, Snapshot> {
        debug_assert!(!seen.is_reading() && !seen.is_ended() && !seen.is_asleep());
        let next = Snapshot(seen.0 | READING);
        self.val
            .compare_exchange(seen.0, next.0, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| {
                self.changed();
                next
            })
            .map_err(Snapshot)
    }

    /// Undoes [`Self::transition_to_promoted`] when the reader could not be started (the
    /// watchdog tries again at its next check).
    fn transition_to_unpromoted(&self) {
        self.update(|s| {
            debug_assert!(s.is_reading() && !s.is_asleep());
            Some(Snapshot(s.0 & !READING))
        })
        .expect("always applies");
    }

    /// The watchdog falls asleep; fails unless a thread reads and the input goes on (a job
    /// that starts afterwards finds `ASLEEP` and wakes it).
    fn transition_to_asleep(&self) -> Result<Snapshot, Snapshot> {
        self.update(|s| {
            debug_assert!(!s.is_asleep(), "only the watchdog sleeps");
            (s.is_reading() && !s.is_ended()).then_some(Snapshot(s.0 | ASLEEP))
        })
    }

    /// The watchdog wakes by itself (a deadline it was given).
    fn transition_to_awake(&self) {
        self.update(|s| Some(Snapshot(s.0 & !ASLEEP)))
            .expect("always applies");
    }

    /// The input is done (clears `ASLEEP`; the caller wakes the watchdog).
    fn transition_to_ended(&self) -> Snapshot {
        self.update(|s| Some(Snapshot((s.0 | ENDED) & !ASLEEP)))
            .expect("always applies")
    }

    /// Applies `f` to the current value until it sticks; `f` returns `None` to refuse (the
    /// error then holds the value it refused). Ok holds the value *before* the change.
    fn update(
        &self,
        mut f: impl FnMut(Snapshot) -> Option<Snapshot>,
    ) -> Result<Snapshot, Snapshot> {
        let mut current = self.load();
        loop {
            let Some(next) = f(current) else {
                return Err(current);
            };
            debug_assert!(
                !next.is_asleep() || next.is_reading(),
                "the watchdog sleeps only while a thread reads: {current:?} -> {next:?}"
            );
            match self
                .val
                .compare_exchange(current.0, next.0, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => {
                    self.changed();
                    return Ok(current);
                }
                Err(actual) => current = Snapshot(actual),
            }
        }
    }

    #[cfg(all(test, not(feature = "loom")))]
    fn changed(&self) {
        let _guard = lock(&self.changed.0);
        self.changed.1.notify_all();
    }

    #[cfg(not(all(test, not(feature = "loom"))))]
    fn changed(&self) {}

    /// Waits (at most 10 s) until the state satisfies `cond`.
    #[cfg(all(test, not(feature = "loom")))]
    fn wait_until(&self, what: &str, cond: impl Fn(Snapshot) -> bool) {
        let guard = lock(&self.changed.0);
        let (_guard, timed_out) = crate::sync::wait_timeout_while(
            &self.changed.1,
            guard,
            Duration::from_secs(10),
            |_| !cond(self.load()),
        );
        assert!(!timed_out, "{what}");
    }
}

impl Snapshot {
    fn is_reading(self) -> bool {
        self.0 & READING != 0
    }

    fn is_asleep(self) -> bool {
        self.0 & ASLEEP != 0
    }

    /// Whether the watchdog slept before the transition that returned this snapshot.
    fn was_asleep(self) -> bool {
        self.is_asleep()
    }

    fn is_ended(self) -> bool {
        self.0 & ENDED != 0
    }
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("reading", &self.is_reading())
            .field("asleep", &self.is_asleep())
            .field("ended", &self.is_ended())
            .field("job", &(self.0 / JOB_ONE))
            .finish()
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;
    use std::sync::{mpsc, Arc};

    const WAIT: Duration = Duration::from_secs(10);

    /// A relay whose watchdog runs on a thread; each promotion is sent on the receiver.
    fn watched(
        stay_awake: Duration,
    ) -> (Arc<Relay>, mpsc::Receiver<()>, std::thread::JoinHandle<()>) {
        let relay = Arc::new(Relay::new());
        let (tx, promoted) = mpsc::channel();
        let r = relay.clone();
        let watchdog = std::thread::spawn(move || {
            r.watch(
                Duration::from_millis(2),
                stay_awake,
                || {
                    tx.send(()).unwrap();
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
        promoted
            .recv_timeout(WAIT)
            .expect("a job past the budget gets another reader");
        assert!(
            !relay.read_again(),
            "the new reader reads; this one is done"
        );
        relay.end();
        watchdog.join().unwrap();
        assert!(promoted.try_recv().is_err(), "promoted once");
    }

    #[test]
    fn a_sleeping_watchdog_is_woken_by_a_job_and_by_the_end() {
        let (relay, promoted, watchdog) = watched(Duration::from_millis(5));
        relay
            .state
            .wait_until("the watchdog falls asleep", Snapshot::is_asleep);
        relay.running();
        promoted
            .recv_timeout(WAIT)
            .expect("the sleeping watchdog promotes a reader");
        relay.state.wait_until("asleep again", Snapshot::is_asleep);
        relay.end();
        watchdog.join().unwrap();
    }

    #[test]
    fn a_failed_promotion_is_tried_again() {
        let relay = Arc::new(Relay::new());
        let (tx, promoted) = mpsc::channel();
        let r = relay.clone();
        let mut tries = 0;
        let watchdog = std::thread::spawn(move || {
            r.watch(
                Duration::from_millis(1),
                Duration::from_secs(60),
                || {
                    tries += 1;
                    if tries == 1 {
                        return Err(io::Error::other("no thread"));
                    }
                    tx.send(tries).unwrap();
                    Ok(())
                },
                |_| None,
            )
        });
        relay.running();
        assert_eq!(promoted.recv_timeout(WAIT), Ok(2));
        assert!(!relay.read_again());
        relay.end();
        watchdog.join().unwrap();
    }
}

/// Model-checked (see `crate::sync`): every interleaving of the relay's threads, the time
/// given as an input.
#[cfg(all(test, feature = "loom"))]
mod loom_model {
    use super::*;
    use crate::sync::model;
    use loom::{sync::Arc, thread};

    const BUDGET: Duration = Duration::from_millis(1);

    /// A flag one thread raises and another waits for.
    #[derive(Default)]
    struct Flag(Mutex<bool>, Condvar);

    impl Flag {
        fn raise(&self) {
            *lock(&self.0) = true;
            self.1.notify_all();
        }
        fn wait(&self) {
            let mut raised = lock(&self.0);
            while !*raised {
                raised = wait(&self.1, raised);
            }
        }
    }

    fn watchdog(
        relay: &Arc<Relay>,
        times: Times,
        promote: impl FnMut() -> io::Result<()> + Send + 'static,
    ) -> thread::JoinHandle<()> {
        let relay = relay.clone();
        thread::spawn(move || relay.watch_with(BUDGET, || None, || times, promote))
    }

    const SPENT: Times = Times {
        spent: true,
        recent: false,
    };

    /// No lost wake-up: a job that starts while the watchdog decides to sleep is promoted
    /// (if the wake-up were lost, every thread would block and loom reports the deadlock).
    #[test]
    fn loom_model_a_job_starting_as_the_watchdog_falls_asleep_is_promoted() {
        model(|| {
            let relay = Arc::new(Relay::new());
            let promoted = Arc::new(Flag::default());
            let p = promoted.clone();
            let watchdog = watchdog(&relay, SPENT, move || {
                p.raise();
                Ok(())
            });
            relay.running();
            promoted.wait();
            assert!(!relay.read_again());
            relay.end();
            watchdog.join().unwrap();
        });
    }

    /// Exactly one thread reads after a job, whether the job's thread reads on or the watchdog
    /// promotes another: never both, never none.
    #[test]
    fn loom_model_exactly_one_reader_after_a_job() {
        model(|| {
            let relay = Arc::new(Relay::new());
            let readers = Arc::new(AtomicUsize::new(0));
            let spawned = Arc::new(Mutex::new(None));
            let (r, n, s) = (relay.clone(), readers.clone(), spawned.clone());
            let watchdog = watchdog(&relay, SPENT, move || {
                // The promoted reader reads the end of the input.
                let (r, n) = (r.clone(), n.clone());
                *lock(&s) = Some(thread::spawn(move || {
                    n.fetch_add(1, Ordering::SeqCst);
                    r.end();
                }));
                Ok(())
            });
            relay.running();
            if relay.read_again() {
                readers.fetch_add(1, Ordering::SeqCst);
                relay.end();
            }
            watchdog.join().unwrap();
            if let Some(promoted) = lock(&spawned).take() {
                promoted.join().unwrap();
            }
            assert_eq!(readers.load(Ordering::SeqCst), 1);
        });
    }

    /// `end` wakes the watchdog wherever it waits: asleep (no job runs) or watching a job
    /// within its budget (loom's timed waits never time out, so only a notification ends it).
    #[test]
    fn loom_model_the_end_always_wakes_the_watchdog() {
        for job in [false, true] {
            model(move || {
                let relay = Arc::new(Relay::new());
                let within_budget = Times {
                    spent: false,
                    recent: false,
                };
                let watchdog = watchdog(&relay, within_budget, || unreachable!("no promotion"));
                if job {
                    relay.running();
                }
                relay.end();
                watchdog.join().unwrap();
            });
        }
    }
}
