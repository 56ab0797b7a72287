//! The threads that read the CLI's lines. The thread that reads a `tools/call` runs the tool
//! itself and writes the reply: a fast call costs no hand-off between threads (on one CPU
//! that hand-off was most of a call's round trip; docs/benchmarks.md).
//!
//! A tool may block, though, and the session must go on meanwhile. A watchdog thread sees a
//! call outlive [`HERE_BUDGET`] and promotes a new thread to read (leader/follower): the
//! input is read again within about two budgets, the call is registered for cancellation
//! then, and the watchdog answers its timeout if the tool never returns. The thread ends
//! when its tool returns, if another one reads by then. A tool whose call outlived the budget
//! runs on the executor from then on, until one of its calls is quick again there: a batch
//! of slow calls is not started one budget after the other.
//!
//! Lines are handled in the order they were read: everything up to the start of a tool
//! (routing, the lease, the argument check) happens while the thread still holds the input.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
        Arc, Condvar, Mutex, MutexGuard,
    },
    time::{Duration, Instant},
};

use tokio::runtime::Handle;

use super::{parse_object, sort_read, Intake, Reader, Routed, Slot};
use crate::{
    handler::{Ending, HERE_BUDGET},
    model::Incoming,
    transport::{BlockingLines, LineReader, ReadError, TooLong},
};

/// After the last call started, how long the watchdog keeps checking every budget instead of
/// sleeping until woken (waking it costs the next call a system call).
const STAY_AWAKE: Duration = Duration::from_millis(250);

/// A source of the CLI's lines that a plain thread reads with blocking calls.
pub trait LineSource: Send + 'static {
    /// The next line; `None` at the end of the input.
    fn next_line(&mut self) -> Result<Option<String>, ReadError>;
}

impl LineSource for BlockingLines {
    fn next_line(&mut self) -> Result<Option<String>, ReadError> {
        BlockingLines::next_line(self)
    }
}

/// An async reader (an in-memory pipe in tests), read by blocking on the runtime the session
/// was started on.
impl<R> LineSource for LineReader<R>
where
    R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
{
    fn next_line(&mut self) -> Result<Option<String>, ReadError> {
        Handle::current().block_on(LineReader::next_line(self))
    }
}

/// The reading side of a session: the reader threads and their watchdog.
pub(super) struct Lane {
    reader: Reader,
    source: Mutex<Box<dyn LineSource>>,
    intake: Intake,
    rt: Handle,
    /// Threads reading or waiting to read. 0 while the last reader runs a tool.
    readers: AtomicUsize,
    /// When the last reader started its tool, in nanoseconds since `epoch`.
    call_since: AtomicU64,
    epoch: Instant,
    /// The input ended (or failed): no thread reads any more.
    ended: AtomicBool,
    /// The watchdog sleeps until woken (rather than checking every budget).
    watch_asleep: AtomicBool,
    watch: Mutex<()>,
    watch_wake: Condvar,
    /// Every reader thread's running call.
    threads: Mutex<Vec<Arc<Running>>>,
}

/// The call a reader thread runs, if any.
#[derive(Default)]
struct Running(Mutex<Option<HereRunning>>);

/// A call running on the thread that read it; taken by whoever answers it first: the thread
/// when its tool returns, or the watchdog at its deadline.
struct HereRunning {
    request_id: String,
    ending: Ending,
    slot: Slot,
    started: Instant,
    /// Set when the call outlived the budget (looking the timeout up costs a fast call for
    /// nothing).
    deadline: Option<Instant>,
}

impl Lane {
    /// Starts the first reader thread and the watchdog.
    pub(super) fn start(reader: Reader, source: Box<dyn LineSource>) -> std::io::Result<()> {
        let lane = Arc::new(Lane {
            intake: Intake::new(reader.out.clone()),
            reader,
            source: Mutex::new(source),
            rt: Handle::current(),
            readers: AtomicUsize::new(1),
            call_since: AtomicU64::new(0),
            epoch: Instant::now(),
            ended: AtomicBool::new(false),
            watch_asleep: AtomicBool::new(false),
            watch: Mutex::new(()),
            watch_wake: Condvar::new(),
            threads: Mutex::new(Vec::new()),
        });
        lane.spawn_reader()?;
        let watched = lane.clone();
        std::thread::Builder::new()
            .name("toolhost-watchdog".into())
            .spawn(move || watched.watchdog())?;
        Ok(())
    }

    fn spawn_reader(self: &Arc<Self>) -> std::io::Result<()> {
        let running = Arc::new(Running::default());
        lock(&self.threads).push(running.clone());
        let lane = self.clone();
        let spawned = std::thread::Builder::new()
            .name("toolhost-reader".into())
            .spawn(move || lane.read_loop(running));
        if spawned.is_err() {
            self.readers.fetch_sub(1, Ordering::SeqCst);
        }
        spawned.map(drop)
    }

    /// One reader thread: reads and handles lines until the input ends, or until its tool
    /// returned while another thread reads.
    fn read_loop(self: Arc<Self>, running: Arc<Running>) {
        let _rt = self.rt.enter();
        loop {
            let mut source = lock(&self.source);
            if self.ended.load(Ordering::Acquire) {
                break;
            }
            let slot = self.ready();
            let line = next_message(&mut **source, |t| self.reader.too_long(t));
            let Some(line) = line else {
                self.ended.store(true, Ordering::Release);
                drop(source);
                self.reader.input_ended();
                self.wake_watchdog();
                break;
            };
            let routed = match parse_object(&line, Incoming::parse) {
                Ok(msg) => self.reader.route(msg, &line, slot),
                Err(e) => {
                    self.reader.malformed(&line, e);
                    Routed::Done
                }
            };
            let Routed::Here(request_id, call, slot) = routed else {
                continue;
            };
            self.start_here(&running, request_id, call.ending, slot);
            drop(source);
            let result = call.run.run();
            let answer = lock(&running.0).take();
            // After the call left `running`: the watchdog can no longer label it.
            drop(call.run);
            if let Some(r) = answer {
                let answer = r.ending.finish(result);
                self.reader.out.send(answer.control_line(&r.request_id));
                drop(r.slot);
            }
            if self.ended.load(Ordering::Acquire) {
                // The watchdog may be waiting for this call to end before it does.
                self.wake_watchdog();
            }
            if self
                .readers
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                // Another thread reads now.
                break;
            }
        }
        lock(&self.threads).retain(|r| !Arc::ptr_eq(r, &running));
    }

    /// Waits until the next line may be read (room in the output, a free call slot).
    fn ready(&self) -> Slot {
        match self.intake.try_ready() {
            Some(slot) => slot,
            None => self.rt.block_on(self.intake.ready()),
        }
    }

    /// This thread, the last reader, is about to run a tool.
    fn start_here(&self, running: &Running, request_id: String, ending: Ending, slot: Slot) {
        let started = Instant::now();
        *lock(&running.0) = Some(HereRunning {
            request_id,
            ending,
            slot,
            started,
            deadline: None,
        });
        let since = started.duration_since(self.epoch).as_nanos() as u64;
        self.call_since.store(since, Ordering::SeqCst);
        // SeqCst, paired with the watchdog's: either it sees no reader, or we see it asleep.
        self.readers.fetch_sub(1, Ordering::SeqCst);
        if self.watch_asleep.load(Ordering::SeqCst) {
            self.wake_watchdog();
        }
    }

    fn wake_watchdog(&self) {
        let _guard = lock(&self.watch);
        self.watch_asleep.store(false, Ordering::SeqCst);
        self.watch_wake.notify_one();
    }

    /// Promotes a reader when the last one's tool outlives the budget, registers such calls
    /// for cancellation, and answers the timeout of calls whose tool does not return.
    fn watchdog(self: Arc<Self>) {
        loop {
            let now = Instant::now();
            let (running, next_deadline) = self.check_calls(now);
            let ended = self.ended.load(Ordering::Acquire);
            if ended && running == 0 {
                return;
            }
            if !ended && self.readers.load(Ordering::SeqCst) == 0 {
                let since = Duration::from_nanos(self.call_since.load(Ordering::SeqCst));
                if now.duration_since(self.epoch) >= since + HERE_BUDGET
                    && self
                        .readers
                        .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok()
                {
                    // Its call was escalated by `check_calls` above: a cancellation the new
                    // reader reads finds it.
                    tracing::debug!("a tool outlived {HERE_BUDGET:?}: another thread reads");
                    if let Err(e) = self.spawn_reader() {
                        tracing::error!("cannot start a reader thread: {e}");
                    }
                }
            }
            let recent = now.duration_since(self.epoch)
                < Duration::from_nanos(self.call_since.load(Ordering::SeqCst)) + STAY_AWAKE;
            let guard = lock(&self.watch);
            if recent || running > 0 && self.readers.load(Ordering::SeqCst) == 0 {
                // Checking every budget: a call starting now is seen without waking us.
                let _ = self.watch_wake.wait_timeout(guard, HERE_BUDGET);
                continue;
            }
            self.watch_asleep.store(true, Ordering::SeqCst);
            if self.readers.load(Ordering::SeqCst) == 0 && !self.ended.load(Ordering::Acquire) {
                // A call started between our checks: stay awake.
                self.watch_asleep.store(false, Ordering::SeqCst);
                continue;
            }
            let mut guard = guard;
            while self.watch_asleep.load(Ordering::SeqCst) {
                match next_deadline {
                    Some(at) => {
                        let wait = at.saturating_duration_since(Instant::now());
                        if wait.is_zero() {
                            break;
                        }
                        guard = self
                            .watch_wake
                            .wait_timeout(guard, wait)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                        if Instant::now() >= at {
                            break;
                        }
                    }
                    None => {
                        guard = self
                            .watch_wake
                            .wait(guard)
                            .unwrap_or_else(|e| e.into_inner());
                    }
                }
            }
            self.watch_asleep.store(false, Ordering::SeqCst);
        }
    }

    /// Escalates calls over the budget and times out calls past their deadline. Returns how
    /// many calls still run here and the nearest deadline.
    fn check_calls(&self, now: Instant) -> (usize, Option<Instant>) {
        let threads: Vec<Arc<Running>> = lock(&self.threads).clone();
        let mut count = 0;
        let mut next: Option<Instant> = None;
        for running in threads {
            let mut r = lock(&running.0);
            let Some(call) = r.as_mut() else {
                continue;
            };
            if call.deadline.is_none() && now >= call.started + HERE_BUDGET {
                call.deadline = Some(call.ending.deadline(call.started));
                call.ending.escalate();
            }
            count += 1;
            let Some(deadline) = call.deadline else {
                continue;
            };
            if now >= deadline {
                let call = r.take().expect("checked above");
                drop(r);
                let answer = call.ending.time_out();
                self.reader.out.send(answer.control_line(&call.request_id));
                count -= 1;
                continue;
            }
            next = Some(next.map_or(deadline, |n| n.min(deadline)));
        }
        (count, next)
    }
}

/// The next non-blank line; an over-long one is handed to `too_long` and reading goes on.
/// `None` at the end of the input, or when reading fails (logged).
fn next_message(source: &mut dyn LineSource, mut too_long: impl FnMut(TooLong)) -> Option<String> {
    loop {
        if let Some(message) = sort_read(source.next_line(), "the CLI", &mut too_long) {
            return message;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing here panics while holding these locks but a plugin-free bookkeeping step; the
    // data stays consistent enough to go on.
    m.lock().unwrap_or_else(|e| e.into_inner())
}
