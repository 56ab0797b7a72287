//! The call executor: dedicated threads that run plugin code, and nothing else.
//!
//! Tools block for as long as they like, and some never return. They therefore run on threads
//! of their own rather than on tokio's blocking pool, which the host's own I/O needs (tokio's
//! stdin and stdout use it): a thousand stuck tools must not keep `ping` from being answered.
//!
//! Each plugin may have at most [`ExecutorConfig::per_plugin`] calls running; calls beyond that
//! wait in the plugin's queue (bounded by [`ExecutorConfig::queue`]; beyond it a call is
//! refused with [`Refused`]). Threads are started on demand, kept for a while when idle
//! ([`ExecutorConfig::keep_idle`]) and never joined: a thread stuck in a tool cannot be
//! stopped in process, so the host can always exit, and [`Executor::running`] names the calls
//! it abandons.
//!
//! An idle thread spins briefly before it parks when there is another CPU to feed it work:
//! the next call of a busy session then starts without a futex wake-up.
//!
//! # Waking threads
//! Under the one lock, every thread is running a job, or idle in one of four ways, each
//! counted in `State`: *spinning* (it looks at the ready queue by itself), *parked* (it
//! waits to be told), *waking* (told, not back from its wait yet) or *starting* (started for
//! a job, not in its loop yet). A job made ready needs no wake-up while the ready jobs are no
//! more than the spinning, waking and starting threads; otherwise one parked thread is told
//! (it is waking), or, with none parked, a thread is started. A thread back in its loop takes
//! a ready job if there is one. Whichever parked thread leaves its wait first stands for a
//! thread told to wake (parked threads are interchangeable), so a wake-up that finds its job
//! already taken is accounted for as well. The counts change only in the `transition_*`
//! methods of `State`.
//!
//! The invariants the `loom_model` tests check (see `crate::sync`): no job stays ready while
//! every thread is parked; a thread is started only for a ready job no idle thread is on its
//! way to, so the threads never outnumber the jobs running and ready.

mod state;
mod threads;

use std::{sync::Arc, time::Duration};

use crate::sync::atomic::AtomicUsize;
use crate::sync::{Condvar, Mutex};
use state::State;
use threads::Inner;

/// Default for [`ExecutorConfig::per_plugin`].
pub const DEFAULT_PER_PLUGIN: u64 = 32;
/// Default for [`ExecutorConfig::queue`].
pub const DEFAULT_QUEUE: usize = 4096;

/// Limits of an [`Executor`].
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// Calls of one plugin running at once.
    pub per_plugin: usize,
    /// Calls of one plugin waiting for a free slot; more are refused.
    pub queue: usize,
    /// How long an idle thread waits for work before it ends.
    pub keep_idle: Duration,
}

impl Default for ExecutorConfig {
    fn default() -> Self {
        ExecutorConfig {
            per_plugin: DEFAULT_PER_PLUGIN as usize,
            queue: DEFAULT_QUEUE,
            keep_idle: Duration::from_secs(10),
        }
    }
}

/// A call refused because its plugin's queue is full.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "plugin `{plugin}` is busy: {running} calls running and {queued} waiting (the limits); try again later"
)]
pub struct Refused {
    pub plugin: String,
    pub running: usize,
    pub queued: usize,
}

/// Work for one call: runs once, on an executor thread.
pub struct Job {
    plugin: String,
    label: String,
    run: Box<dyn FnOnce() + Send>,
}

impl Job {
    /// `label` names the call in warnings (for example `calc.add (call 5)`).
    pub fn new(
        plugin: impl Into<String>,
        label: impl Into<String>,
        run: impl FnOnce() + Send + 'static,
    ) -> Self {
        Job {
            plugin: plugin.into(),
            label: label.into(),
            run: Box::new(run),
        }
    }
}

/// A slot taken by [`Executor::try_here`]; give it back with [`Executor::here_done`].
#[must_use = "the slot stays taken until given back with `here_done`"]
#[derive(Debug)]
pub struct HereTicket {
    serial: u64,
}

impl HereTicket {
    /// Names the call for [`Executor::label_here`].
    pub fn id(&self) -> HereId {
        HereId(self.serial)
    }
}

/// Which call run with [`Executor::try_here`] (see [`HereTicket::id`]).
#[derive(Debug, Clone, Copy)]
pub struct HereId(u64);

/// Runs [`Job`]s on dedicated threads, a bounded number per plugin at once.
pub struct Executor {
    inner: Arc<Inner>,
}

impl Executor {
    pub fn new(config: ExecutorConfig) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self::with_spin(config, cpus > 1)
    }

    fn with_spin(config: ExecutorConfig, spin: bool) -> Self {
        Executor {
            inner: Arc::new(Inner {
                config: ExecutorConfig {
                    per_plugin: config.per_plugin.max(1),
                    ..config
                },
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                ready_len: AtomicUsize::new(0),
                spin,
                #[cfg(all(test, not(feature = "loom")))]
                changed: Condvar::new(),
            }),
        }
    }

    /// Runs `job` as soon as its plugin has a free slot; refuses it when the plugin's queue
    /// is full. Never blocks.
    pub fn submit(&self, job: Job) -> Result<(), Refused> {
        let inner = &self.inner;
        let mut st = inner.lock();
        let slots = st.slots(&job.plugin);
        if slots.active < inner.config.per_plugin {
            slots.active += 1;
            let wake = st.transition_to_ready(job, &inner.ready_len);
            inner.wake(st, wake);
        } else if slots.waiting.len() < inner.config.queue {
            slots.waiting.push_back(job);
        } else {
            return Err(Refused {
                plugin: job.plugin,
                running: slots.active,
                queued: slots.waiting.len(),
            });
        }
        Ok(())
    }

    /// Takes one of `plugin`'s slots for a call its caller runs on its own thread, if one is
    /// free and no call of the plugin waits for one (they go first). The slot is held until
    /// [`Executor::here_done`]. Such a call has no label until [`Executor::label_here`]
    /// gives it one (labelling costs an allocation a fast call does not need).
    pub fn try_here(&self, plugin: &str) -> Option<HereTicket> {
        let inner = &self.inner;
        let mut st = inner.lock();
        let slots = st.slots(plugin);
        if slots.active >= inner.config.per_plugin || !slots.waiting.is_empty() {
            return None;
        }
        slots.active += 1;
        st.here += 1;
        let serial = st.next_serial;
        st.next_serial += 1;
        Some(HereTicket { serial })
    }

    /// Names a call run with [`Executor::try_here`] in [`Executor::running`].
    pub fn label_here(&self, id: HereId, label: String) {
        self.inner.lock().running.insert(id.0, label);
    }

    /// The call of `ticket` (of `plugin`) returned: its slot goes to the plugin's next waiting
    /// call, if any.
    pub fn here_done(&self, ticket: HereTicket, plugin: &str) {
        let inner = &self.inner;
        let mut st = inner.lock();
        st.here -= 1;
        st.running.remove(&ticket.serial);
        if let Some(next) = st.next_waiting(plugin) {
            let wake = st.transition_to_ready(next, &inner.ready_len);
            inner.wake(st, wake);
        }
    }

    /// Whether no call is running.
    pub fn is_idle(&self) -> bool {
        let st = self.inner.lock();
        st.running.is_empty() && st.here == 0
    }

    /// Labels of the calls running now (for the warning when the host exits anyway).
    pub fn running(&self) -> Vec<String> {
        let mut v: Vec<String> = self.inner.lock().running.values().cloned().collect();
        v.sort();
        v
    }

    /// Threads alive (running, spinning or parked).
    pub fn threads(&self) -> usize {
        self.inner.lock().threads
    }

    /// Logs a warning naming each call still running, which the exiting host abandons.
    pub fn warn_abandoned(&self) {
        for label in self.running() {
            tracing::warn!("abandoning {label}: its tool is still running (exiting anyway)");
        }
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;
    use crate::sync::atomic::Ordering;
    use std::sync::{atomic::AtomicBool, mpsc};

    fn config(per_plugin: usize, queue: usize) -> ExecutorConfig {
        ExecutorConfig {
            per_plugin,
            queue,
            keep_idle: Duration::from_millis(200),
        }
    }

    const WAIT: Duration = Duration::from_secs(10);

    #[test]
    fn runs_jobs_and_reuses_threads() {
        let ex = Executor::new(config(4, 10));
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            ex.submit(Job::new("p", format!("job {i}"), move || {
                tx.send(i).unwrap()
            }))
            .unwrap();
            rx.recv_timeout(WAIT).unwrap();
        }
        // A job's thread is busy a moment after its result was sent, so the next job may start
        // one more thread; never more than the plugin's limit.
        assert!(ex.threads() <= 4, "{} threads", ex.threads());
    }

    #[test]
    fn bounds_running_calls_per_plugin_and_queues_the_rest() {
        let ex = Executor::new(config(2, 3));
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let (done_tx, done_rx) = mpsc::channel();
        let job = |i: usize| {
            let (release, running, peak, done) = (
                release.clone(),
                running.clone(),
                peak.clone(),
                done_tx.clone(),
            );
            Job::new("p", format!("p.block (call {i})"), move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                let (lock, cv) = &*release;
                let _g = cv
                    .wait_timeout_while(lock.lock().unwrap(), WAIT, |go| !*go)
                    .unwrap();
                running.fetch_sub(1, Ordering::SeqCst);
                done.send(i).unwrap();
            })
        };
        for i in 0..5 {
            ex.submit(job(i)).unwrap();
        }
        let refused = ex.submit(job(5)).unwrap_err();
        assert_eq!((refused.running, refused.queued), (2, 3));
        assert!(
            refused.to_string().contains("plugin `p` is busy"),
            "{refused}"
        );
        // Another plugin is not held up by p's full slots.
        let (tx, rx) = mpsc::channel();
        ex.submit(Job::new("q", "q", move || tx.send(()).unwrap()))
            .unwrap();
        rx.recv_timeout(WAIT).unwrap();
        // q's thread may still be finishing q after its answer was sent.
        ex.inner
            .wait_until("q's thread is done", |st| st.running.len() == 2);
        let expected = vec!["p.block (call 0)".to_string(), "p.block (call 1)".into()];
        assert_eq!(ex.running(), expected);
        *release.0.lock().unwrap() = true;
        release.1.notify_all();
        let mut done: Vec<usize> = (0..5)
            .map(|_| done_rx.recv_timeout(WAIT).unwrap())
            .collect();
        done.sort();
        assert_eq!(done, vec![0, 1, 2, 3, 4]);
        assert_eq!(peak.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_second_call_is_not_left_to_a_thread_woken_for_the_first() {
        let ex = Executor::new(config(4, 10));
        let (tx, rx) = mpsc::channel();
        ex.submit(Job::new("p", "first", move || tx.send(()).unwrap()))
            .unwrap();
        rx.recv_timeout(WAIT).unwrap();
        // Its thread is idle now; past the spin it parks.
        ex.inner.wait_until("the thread parks", |st| st.parked == 1);
        assert_eq!(ex.threads(), 1);
        // Two calls back to back: the one parked thread is woken for the first, which blocks;
        // the second must get a thread of its own instead of waiting behind it.
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let r = release.clone();
        ex.submit(Job::new("p", "blocks", move || {
            let (lock, cv) = &*r;
            let _g = cv
                .wait_timeout_while(lock.lock().unwrap(), WAIT, |go| !*go)
                .unwrap();
        }))
        .unwrap();
        let (tx, rx) = mpsc::channel();
        ex.submit(Job::new("p", "second", move || tx.send(()).unwrap()))
            .unwrap();
        let second = rx.recv_timeout(Duration::from_secs(5));
        *release.0.lock().unwrap() = true;
        release.1.notify_all();
        second.expect("the second call ran while the first was blocked");
    }

    #[test]
    fn a_panicking_job_leaves_the_executor_working() {
        let ex = Executor::new(config(1, 10));
        ex.submit(Job::new("p", "boom", || panic!("job panic")))
            .unwrap();
        let (tx, rx) = mpsc::channel();
        ex.submit(Job::new("p", "next", move || tx.send(()).unwrap()))
            .unwrap();
        rx.recv_timeout(WAIT).unwrap();
    }

    #[test]
    fn idle_threads_end() {
        let ex = Executor::new(config(4, 10));
        let flag = Arc::new(AtomicBool::new(false));
        let f = flag.clone();
        ex.submit(Job::new("p", "j", move || f.store(true, Ordering::SeqCst)))
            .unwrap();
        ex.inner
            .wait_until("the idle thread ends", |st| st.threads == 0);
        assert!(flag.load(Ordering::SeqCst));
    }
}

/// Model-checked (see `crate::sync`): submitters and the executor's threads in every
/// interleaving, with and without spinning. A job left ready while every thread parks blocks
/// the model's wait for it, which loom reports as a deadlock.
#[cfg(all(test, feature = "loom"))]
mod loom_model {
    use super::*;
    use crate::sync::{lock, model, wait};

    /// Jobs done so far.
    #[derive(Default)]
    struct Done(Mutex<usize>, Condvar);

    impl Done {
        fn job(self: &Arc<Self>) -> Job {
            let done = self.clone();
            Job::new("p", "job", move || {
                *lock(&done.0) += 1;
                done.1.notify_all();
            })
        }
        fn wait_for(&self, n: usize) {
            let mut done = lock(&self.0);
            while *done < n {
                done = wait(&self.1, done);
            }
        }
    }

    /// Enough for a thread started for one job to find it taken and the next one ready, and
    /// for a woken thread to find its job taken.
    const JOBS_ONE_AFTER_ANOTHER: usize = 4;

    fn executor(per_plugin: usize, spin: bool) -> Executor {
        Executor::with_spin(
            ExecutorConfig {
                per_plugin,
                queue: 4,
                keep_idle: Duration::from_secs(1),
            },
            spin,
        )
    }

    /// With a thread idle (spinning, or parked), two jobs back to back, the first of which
    /// blocks until the second ran: the second must get a thread of its own, not be left to
    /// the one woken for the first. Every job runs, and no more threads are started than jobs
    /// were made ready.
    #[test]
    fn loom_model_no_job_is_left_ready_while_every_thread_parks() {
        for spin in [false, true] {
            model(move || {
                let ex = executor(2, spin);
                let done = Arc::new(Done::default());
                ex.submit(done.job()).unwrap();
                done.wait_for(1);
                let d = done.clone();
                let blocks = Job::new("p", "blocks", move || {
                    d.wait_for(2);
                    *lock(&d.0) += 1;
                    d.1.notify_all();
                });
                ex.submit(blocks).unwrap();
                ex.submit(done.job()).unwrap();
                done.wait_for(3);
                assert!(ex.threads() <= 3, "{} threads for 3 jobs", ex.threads());
                ex.inner.retire();
            });
        }
    }

    /// A job submitted while the one thread is idle runs (its wake-up is not lost).
    #[test]
    fn loom_model_an_idle_thread_takes_the_next_job() {
        for spin in [false, true] {
            model(move || {
                let ex = executor(2, spin);
                let done = Arc::new(Done::default());
                ex.submit(done.job()).unwrap();
                done.wait_for(1);
                ex.submit(done.job()).unwrap();
                done.wait_for(2);
                assert!(ex.threads() <= 2, "{} threads for 2 jobs", ex.threads());
                ex.inner.retire();
            });
        }
    }

    /// Jobs submitted one after another, each once the one before is done (its thread may
    /// still be finishing it). A thread is started only for a ready job that no idle thread
    /// is on its way to: the assertion in `transition_to_ready` checks, at every start, that
    /// the threads are no more than the jobs running and ready. A thread started for an
    /// earlier job and not in its loop yet (`starting`), or one told to wake whose job another
    /// thread took (`waking`), is on its way to the next job: counting on neither starts a
    /// thread too many in some interleaving of these four jobs.
    #[test]
    fn loom_model_no_thread_is_started_for_a_job_an_idle_thread_will_take() {
        for spin in [false, true] {
            model(move || {
                let ex = executor(4, spin);
                let done = Arc::new(Done::default());
                for n in 1..=JOBS_ONE_AFTER_ANOTHER {
                    ex.submit(done.job()).unwrap();
                    done.wait_for(n);
                }
                ex.inner.retire();
            });
        }
    }

    /// A plugin's slot freed by a call run on its caller's thread goes to its waiting job,
    /// and a job waiting behind another runs on the thread that ran that one.
    #[test]
    fn loom_model_a_freed_slot_goes_to_the_waiting_job() {
        model(|| {
            let ex = executor(1, false);
            let done = Arc::new(Done::default());
            let here = ex.try_here("p").expect("a free slot");
            ex.submit(done.job()).unwrap();
            ex.submit(done.job()).unwrap();
            ex.here_done(here, "p");
            done.wait_for(2);
            assert_eq!(ex.threads(), 1, "one job at a time: one thread");
            ex.inner.retire();
        });
    }
}
