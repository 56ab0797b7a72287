//! One running worker process: its channel, the requests waiting for its replies, and the
//! asks of its calls in flight.

use std::{
    os::unix::net::UnixStream,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Condvar, Mutex,
    },
    time::{Duration, Instant},
};

use serde_json::value::RawValue;

use super::{
    asks::AskBook,
    lead::{Lead, Turn},
    logs::LogGate,
    wire::{self, FrameReader, FromWorker, Next, Oversize, Restore, ResultWire, ToWorker},
};
use crate::plugin::{AskFailure, CallControl, CallResult, RequestError};
use crate::sync::{lock, wait_timeout_while};

/// What a call waiting on the worker hears.
pub(super) enum Reply {
    Result(CallResult),
    Progress(f64, Option<f64>, String),
    /// A log record of the call (level, module, message), for its client.
    Log(u8, String, String),
    State(Option<Vec<u8>>),
    Restored(Restore),
    /// The worker is gone; the cause (`SIGSEGV`, `exit code 3`, ...).
    Died(String),
    /// The typed parse refused the arguments of a typed call; the tool did not run.
    Untyped,
    /// The reply, of this many bytes, was over the caller's size limit: skipped unread.
    TooLarge(usize),
    /// The plugin's answer to a request beyond tool calls.
    Answer(Result<String, RequestError>),
    /// The call asks its client (admitted by the [`AskBook`]): number `ask`, `asks` JSON.
    Ask {
        ask: u64,
        asks: String,
    },
}

/// One running worker process.
pub(super) struct Proc {
    pub(super) pid: u32,
    /// Where its plugin's notifications and catalog changes go: the registry that loaded this
    /// version.
    pub(super) events: crate::plugin::Events,
    pub(super) writer: Mutex<UnixStream>,
    /// The worker's replies (results, progress, states): read by whoever has the lead
    /// (`lead`), alone.
    pub(super) replies: Mutex<FrameReader>,
    /// The requests waiting for replies, and which of them reads (see `super::lead`).
    pub(super) lead: Lead<Reply>,
    /// Why the host killed it, if it did (then its death is not a crash).
    pub(super) killed_because: Mutex<Option<String>>,
    /// Set once the process has been reaped.
    pub(super) exited: (Mutex<bool>, Condvar),
    /// Set when the host decided to kill it: no new call may start on it.
    pub(super) doomed: AtomicBool,
    /// Its log records, rate-limited.
    pub(super) logs: LogGate,
    /// The asks of its calls in flight.
    pub(super) asks: AskBook,
}

impl Proc {
    pub(super) fn send(&self, frame: &ToWorker) -> bool {
        wire::send_locked(&self.writer, &wire::encode(frame)).is_ok()
    }

    /// Registers request `id`, then sends it; `None` if the worker already died.
    pub(super) fn ask(&self, id: u64, frame: &ToWorker) -> Option<Exchange<'_>> {
        if !self.lead.transition_to_waiting(id) {
            return None;
        }
        let exchange = Exchange { proc: self, id };
        self.send(frame);
        Some(exchange)
    }

    /// Hands a reply to the request it answers; returns it instead when that is `mine`.
    pub(super) fn dispatch(
        &self,
        frame: FromWorker,
        mine: Option<u64>,
        plugin: &str,
    ) -> Option<Reply> {
        let (id, reply) = match frame {
            FromWorker::Result { id, result } => (id, Reply::Result(from_wire(result))),
            FromWorker::Progress {
                id,
                progress,
                total,
                message,
            } => (id, Reply::Progress(progress, total, message)),
            FromWorker::CallLog {
                id,
                level,
                module,
                message,
            } => (id, Reply::Log(level, module, message)),
            FromWorker::State { id, state } => (id, Reply::State(state)),
            FromWorker::Restored { id, outcome } => (id, Reply::Restored(outcome)),
            FromWorker::Untyped { id } => (id, Reply::Untyped),
            FromWorker::Answer { id, answer } => (id, Reply::Answer(answer)),
            FromWorker::Log {
                level,
                call,
                module,
                message,
            } => {
                self.logs
                    .emit(level, plugin, call.as_deref(), &module, &message);
                return None;
            }
            FromWorker::Notify { method, params } => {
                crate::plugin::deliver_notice(&*self.events, plugin, &method, &params);
                return None;
            }
            FromWorker::Ask { id, ask, asks } => match self.asks.admit(id, ask, &asks) {
                Ok(()) => (id, Reply::Ask { ask, asks }),
                Err(why) => {
                    if self.asks.count_refused() {
                        tracing::warn!(
                            plugin,
                            pid = self.pid,
                            "refused an ask of the worker: {why} (warned at 1, 2, 4, ... refusals)"
                        );
                    }
                    self.send(&ToWorker::Answered {
                        ask,
                        answer: Err(crate::plugin::AskFailure::Invalid(format!(
                            "the host refused the ask: {why}"
                        ))),
                    });
                    return None;
                }
            },
            FromWorker::CatalogChanged { what } => {
                crate::plugin::deliver_catalog_change(&*self.events, plugin, &what);
                return None;
            }
            FromWorker::Ready { .. }
            | FromWorker::LoadFailed { .. }
            | FromWorker::ConfigQuery { .. } => return None,
        };
        if mine == Some(id) {
            return Some(reply);
        }
        self.lead.hand_out(id, reply);
        None
    }

    /// Whether new calls may start on it.
    pub(super) fn serves(&self) -> bool {
        !self.doomed.load(Ordering::Acquire) && self.lead.is_open()
    }

    pub(super) fn kill(&self, reason: String) {
        {
            let mut why = lock(&self.killed_because);
            if why.is_none() {
                *why = Some(reason);
            }
        }
        self.signal_kill();
    }

    /// Kills the worker's process group (without a reason: its death counts as a crash).
    pub(super) fn signal_kill(&self) {
        self.doomed.store(true, Ordering::Release);
        let exited = lock(&self.exited.0);
        if !*exited {
            // The pid is still ours: the reaper thread reaps it only while holding `exited`,
            // which we hold, so it cannot have been reused. Its keeper ends the whole tree.
            super::limits::end(self.pid);
        }
    }

    pub(super) fn wait_exited(&self, timeout: Duration) -> bool {
        let (exited, cv) = &self.exited;
        *wait_timeout_while(cv, lock(exited), timeout, |exited| !*exited).0
    }
}

/// A request sent to a worker, from then until its last reply.
pub(super) struct Exchange<'a> {
    proc: &'a Proc,
    id: u64,
}

impl Exchange<'_> {
    /// The next reply to this request, or `None` when none came within `wait`. A reply frame
    /// over `max` bytes (whichever request it answers) is skipped unread and answered
    /// [`Reply::TooLarge`].
    pub(super) fn next(&mut self, wait: Duration, max: usize, plugin: &str) -> Option<Reply> {
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.proc.lead.next(self.id, left) {
                Turn::Reply(reply) => return Some(reply),
                Turn::TimedOut => return None,
                Turn::Read => {}
            }
            let next = lock(&self.proc.replies).next_reply(Some(left), max);
            match next {
                Ok(Ok(Next::Frame(frame))) => {
                    if let Some(reply) = self.proc.dispatch(frame, Some(self.id), plugin) {
                        return Some(reply);
                    }
                }
                Ok(Ok(Next::TimedOut)) => return None,
                // The worker is gone; its reaper tells everyone why.
                Ok(Ok(Next::Closed)) => self.proc.lead.transition_to_stopped(self.id),
                Ok(Err(Oversize { len, id })) => {
                    tracing::warn!(
                        plugin,
                        pid = self.proc.pid,
                        len,
                        max,
                        "a reply of the worker over the size limit, skipped unread"
                    );
                    match id {
                        Some(id) if id == self.id => return Some(Reply::TooLarge(len)),
                        Some(id) => self.proc.lead.hand_out(id, Reply::TooLarge(len)),
                        // Not a reply to anything: a stream that makes no sense (as below).
                        None => {
                            self.proc.signal_kill();
                            self.proc.lead.transition_to_stopped(self.id);
                        }
                    }
                }
                Err(e) => {
                    if lock(&self.proc.killed_because).is_none() {
                        tracing::error!(plugin, pid = self.proc.pid, "worker channel: {e}");
                    }
                    // A stream that makes no sense any more: the worker is ended (a crash).
                    self.proc.signal_kill();
                    self.proc.lead.transition_to_stopped(self.id);
                }
            }
        }
    }
}

impl Drop for Exchange<'_> {
    fn drop(&mut self) {
        self.proc.lead.transition_to_left(self.id);
    }
}

pub(super) fn from_wire(r: ResultWire) -> CallResult {
    let structured = match r.structured {
        None => None,
        Some(text) => match RawValue::from_string(text) {
            Ok(raw) => Some(raw),
            Err(_) => {
                return CallResult::error("the worker sent structuredContent that is not JSON")
            }
        },
    };
    CallResult {
        content: r.content,
        structured,
        is_error: r.is_error,
    }
}

/// The asks of one call in flight on the host: each runs on its own thread with a control of
/// its own, cancelled when the call is, or when the call ends (a worker that answered its call
/// while its asks wait). The call's end waits for them to be withdrawn, so that the client
/// hears of the withdrawal before the call's reply, as in process.
pub(super) struct Asking<'a> {
    proc: &'a Arc<Proc>,
    id: u64,
    plugin: &'a str,
    running: Vec<(Arc<CallControl>, std::thread::JoinHandle<()>)>,
}

impl<'a> Asking<'a> {
    /// Call `id` may ask from now on, until this is dropped.
    pub(super) fn open(proc: &'a Arc<Proc>, id: u64, plugin: &'a str) -> Self {
        proc.asks.open(id);
        Asking {
            proc,
            id,
            plugin,
            running: Vec::new(),
        }
    }

    /// Puts ask `ask` (admitted) to `control`'s client and sends the worker its answer.
    pub(super) fn start(&mut self, control: &CallControl, ask: u64, asks: String) {
        self.running.retain(|(_, t)| !t.is_finished());
        let answer = move |proc: &Proc, answer| {
            proc.send(&ToWorker::Answered { ask, answer });
        };
        let Some(asker) = control.asker() else {
            // Nobody to ask: answered at once, as in process.
            answer(self.proc, control.ask(&asks));
            self.proc.asks.done(self.id, ask);
            return;
        };
        let mine = Arc::new(CallControl::new(control.label(), None));
        mine.set_asker(asker);
        if control.is_cancelled() {
            mine.cancel();
        }
        let (proc, id, theirs) = (self.proc.clone(), self.id, mine.clone());
        let spawned = std::thread::Builder::new()
            .name("toolhost-worker-ask".into())
            .spawn(move || {
                let out = theirs.ask(&asks);
                proc.asks.done(id, ask);
                answer(&proc, out);
            });
        match spawned {
            Ok(thread) => self.running.push((mine, thread)),
            Err(e) => {
                tracing::warn!(plugin = self.plugin, "cannot start a thread to ask: {e}");
                self.proc.asks.done(self.id, ask);
                answer(
                    self.proc,
                    Err(AskFailure::Unsupported(format!(
                        "the host cannot start a thread to ask: {e}"
                    ))),
                );
            }
        }
    }

    /// The call was cancelled: so are its asks (their waits end, their questions are
    /// withdrawn by the asker).
    pub(super) fn cancel(&self) {
        for (c, _) in &self.running {
            c.cancel();
        }
    }
}

impl Drop for Asking<'_> {
    fn drop(&mut self) {
        self.cancel();
        self.proc.asks.close(self.id);
        // A cancelled ask returns at once (an asker's contract): this waits for withdrawals.
        for (_, thread) in self.running.drain(..) {
            let _ = thread.join();
        }
    }
}
