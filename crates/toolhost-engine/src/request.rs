//! One MCP request a plugin answers ([`Request`]), from its arrival to its one answer, whatever
//! its method; and the one place that decides where it runs.
//!
//! The path, in the order the code runs (docs/internals.md, "A request's path"):
//! 1. [`Router::handle`] reads the message's typed request ([`crate::model::ClientRequest`])
//!    and makes the request: registered under its [`super::RequestKey`] for cancellation
//!    (`Router::registered`), its progress sink made; its deadline counts from then (the
//!    plugin's timeout is looked up when the timer is armed, step 5).
//! 2. The caller hands it where its answer goes ([`Respond`]) and whether its own thread may
//!    run it: [`Request::start`].
//! 3. `start` leases the plugin without waiting, lets the [`Method`] check the request against
//!    that version (unknown tool, invalid arguments: answered at once), and decides where it
//!    runs ([`Request::start`]'s body): on the caller's thread ([`HereRun`]), or on the
//!    executor (`run_away`), after waiting for the lease if a state hand-off holds it.
//! 4. [`Method::run`] calls the plugin: the one place plugin code runs for a request.
//! 5. `finish` bounds the result's size and answers. The timeout is a timer (`arm_timeout`),
//!    armed when the request goes to the executor or outlives the reading thread's budget; it
//!    answers instead if the deadline comes first. The first to take the responder answers:
//!    exactly one answer, by construction (and a request dropped unanswered answers that it
//!    was lost).

use std::{
    fmt,
    sync::{Arc, Mutex, OnceLock, Weak},
    time::{Duration, Instant},
};

use serde_json::value::RawValue;

use super::{
    progress::Progress,
    protocol::{shape_code, shape_result},
    Reply, RequestKey, Revision, Router,
};
use crate::{
    executor::{HereId, HereTicket, Job},
    model::{
        control_success_raw, rpc_error_data, rpc_result_raw, ErrorCode, RequestError,
        NOTIFICATION_ACK,
    },
    plugin::CallControl,
    registry::{Lease, TryLease, Version},
    relay::HERE_BUDGET,
};

/// What a request produced: its `result` as JSON text, or a JSON-RPC error.
pub type Outcome = Result<String, CallError>;

/// Why a request did not reach its plugin: a JSON-RPC error (invalid params) rather than a
/// result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("unknown MCP server `{0}`: no plugin of that name is loaded")]
    UnknownServer(String),
    #[error("unknown tool: `{tool}` is not a tool of plugin `{plugin}`")]
    UnknownTool { plugin: String, tool: String },
    /// A `<plugin>__<tool>` name of `toolhost serve` that names no tool.
    #[error("unknown tool: {0}")]
    UnknownFlatTool(String),
    /// A JSON-RPC error with its own code: a plugin's answer to a request beyond tool calls
    /// (`resources/read` of an unknown URI is -32002), or the host's check of one.
    #[error("{0}")]
    Rpc(RequestError),
    /// MCP's "resource not found" (-32002): no plugin serves `uri`, or its plugin said so.
    #[error("{message}")]
    ResourceNotFound { uri: String, message: String },
}

impl CallError {
    /// The JSON-RPC error code of the reply.
    pub fn code(&self) -> ErrorCode {
        match self {
            CallError::Rpc(e) => e.code.into(),
            CallError::ResourceNotFound { .. } => ErrorCode::RESOURCE_NOT_FOUND,
            _ => ErrorCode::INVALID_PARAMS,
        }
    }

    /// The error's `data`, when it has one.
    pub fn data(&self) -> Option<serde_json::Value> {
        match self {
            CallError::ResourceNotFound { uri, .. } => Some(serde_json::json!({ "uri": uri })),
            _ => None,
        }
    }
}

/// Why a request did not produce its own result; a [`Method`] says it in its own terms.
pub enum Failure<'a> {
    /// No answer within the plugin's timeout.
    TimedOut(Duration),
    /// The result is over the size limit.
    TooLarge { bytes: usize, max: usize },
    /// It never ran (the plugin's queue is full).
    NotRun(&'a dyn fmt::Display),
    /// The call panicked in the host, with this message: the same answer whichever thread
    /// ran it.
    Panicked(&'a str),
    /// The host dropped it without an answer (a bug; said rather than left unanswered).
    Lost,
}

impl Failure<'_> {
    /// What the client is told of `subject` (``tool `add` ``, `resources/read notes://index of
    /// plugin notes`), which did not answer: one wording for every method.
    pub fn message(&self, subject: &str) -> String {
        match self {
            Failure::TimedOut(limit) => format!("{subject} timed out after {}", show(*limit)),
            Failure::TooLarge { bytes, max } => format!(
                "{subject} returned {}, over the {} limit (raise it with --max-result-bytes)",
                show_bytes(*bytes),
                show_bytes(*max)
            ),
            Failure::NotRun(why) => format!("{subject} was not run: {why}"),
            Failure::Panicked(why) => format!("{subject} failed in the host: it panicked: {why}"),
            Failure::Lost => format!("{subject} failed in the host: it ended without an answer"),
        }
    }
}

/// `2.0 MB`, `512.0 kB`, `80 bytes` (decimal units, as people read sizes).
fn show_bytes(n: usize) -> String {
    let n64 = n as f64;
    if n >= 1_000_000 {
        format!("{:.1} MB", n64 / 1e6)
    } else if n >= 1_000 {
        format!("{:.1} kB", n64 / 1e3)
    } else {
        format!("{n} bytes")
    }
}

/// `60s`, or `250ms` when not whole seconds.
fn show(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// One kind of request a plugin answers (`tools/call`; `resources/read` and `prompts/get`
/// next): the parts of the path that differ by method. Registration for cancellation, the
/// lease, where it runs, the timeout, the size limit and the one answer are the request's.
pub trait Method: Send + Sync + 'static {
    /// What the request asks for, in labels (`add` for a tool).
    fn name(&self) -> &str;
    /// Checks the request to `plugin` against the version that will run it (`None`: no plugin
    /// of that name). `Err` is the answer, given without running anything.
    fn check(&self, plugin: &str, version: Option<&Version>) -> Result<(), Outcome>;
    /// Runs it on the calling thread.
    fn run(&self, version: &Version, control: &CallControl) -> Outcome;
    /// The answer when it could not produce its own.
    fn failed(&self, plugin: &str, why: Failure<'_>) -> Outcome;
    /// Whether its recent calls outlived the reading thread's budget: it then goes to the
    /// executor at once, so a batch of slow calls starts together.
    fn runs_long(&self, _version: &Version) -> bool {
        false
    }
    /// Records whether a call of it just ran long.
    fn ran(&self, _version: &Version, _long: bool) {}
    /// Its own time limit, instead of its plugin's call timeout (a hook's is shorter).
    fn timeout(&self) -> Option<Duration> {
        None
    }
    /// Whether its result is a list or a read, which 2026-07-28 gives caching hints.
    fn lists(&self) -> bool {
        false
    }
}

/// Where a request's one answer goes. Any `FnOnce(Answer)` is one.
pub trait Respond: Send {
    fn respond(self: Box<Self>, answer: Answer<'_>);
}

impl<F: FnOnce(Answer<'_>) + Send> Respond for F {
    fn respond(self: Box<Self>, answer: Answer<'_>) {
        self(answer)
    }
}

/// What a message to the router gets: the router's own reply, nothing (a notification), or a
/// request's outcome for the id it echoes. Every front end hands the router one [`Respond`]
/// and reads this, whatever became of the message.
pub enum Answer<'a> {
    /// A reply the router made without a plugin (a list, `ping`, an invalid message).
    Reply(Reply),
    /// A notification was handled: JSON-RPC answers nothing (the control protocol still
    /// acknowledges it, see `model::NOTIFICATION_ACK`).
    Notified,
    /// A request's outcome; `lists`: its result is a list or a read
    /// ([`Method::lists`]).
    Outcome {
        id: &'a RawValue,
        outcome: Outcome,
        lists: bool,
    },
}

impl Answer<'_> {
    /// The JSON-RPC reply as `revision` says it (`None` for a notification).
    pub fn rpc(self, revision: Revision) -> Option<String> {
        match self {
            Answer::Reply(reply) => Some(reply.render(revision)),
            Answer::Notified => None,
            Answer::Outcome { id, outcome, lists } => Some(match outcome {
                Ok(result) => rpc_result_raw(Some(id), &shape_result(revision, &result, lists)),
                Err(e) => {
                    let code = shape_code(revision, e.code());
                    rpc_error_data(Some(id), code, &e.to_string(), e.data().as_ref())
                }
            }),
        }
    }

    /// Its JSON-RPC error code, when it is an error (what HTTP picks a status by).
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Answer::Reply(reply) => reply.code(),
            Answer::Notified => None,
            Answer::Outcome { outcome, .. } => outcome.as_ref().err().map(CallError::code),
        }
    }

    /// The reply as the `control_response` line to control request `request_id` (a
    /// notification's is the acknowledgement the CLI expects). The CLI speaks 2025-11-25 to
    /// sdk servers (docs/protocol.md §16.1).
    pub fn control_line(self, request_id: &str) -> String {
        control_success_raw(
            request_id,
            self.rpc(Revision::Nov2025)
                .as_deref()
                .unwrap_or(NOTIFICATION_ACK),
        )
    }

    /// The outcome itself (for callers outside any protocol, whose requests always have one).
    pub fn into_outcome(self) -> Outcome {
        match self {
            Answer::Outcome { outcome, .. } => outcome,
            Answer::Reply(reply) => reply.into_result().map_err(CallError::Rpc),
            Answer::Notified => Ok("{}".to_string()),
        }
    }
}

/// What a request's answer goes through on its way to its [`Respond`].
pub(super) type Through = Box<dyn FnOnce(Box<dyn Respond>) -> Box<dyn Respond> + Send>;

/// One request in flight. Cheap to clone: the watchdog of the reading threads and the timeout
/// timer hold it too.
#[derive(Clone)]
pub struct Request(Arc<Inner>);

struct Inner {
    router: Arc<Router>,
    /// The plugin asked (resolved from a flat name already in the all-plugins scope).
    plugin: String,
    id: Box<RawValue>,
    /// The key it is registered under for `notifications/cancelled`, if it is.
    key: Option<RequestKey>,
    control: Arc<CallControl>,
    progress: Option<Arc<Progress>>,
    method: Box<dyn Method>,
    /// Its deadline counts from here.
    arrived: Instant,
    /// Its plugin's timeout, looked up when its timer is armed: a call answered within its
    /// reading thread's budget never needs it.
    limit: OnceLock<Duration>,
    /// Taken by whoever answers first.
    reply: Mutex<Option<Box<dyn Respond>>>,
    /// Puts itself between the request and where [`Request::start`] sends its answer (a call
    /// that may become a task: `tasks/promote.rs`).
    through: Mutex<Option<Through>>,
    /// Set while it runs on a reading thread: its executor slot and version, for the
    /// watchdog's escalation.
    here: OnceLock<(HereId, Arc<Version>)>,
}

/// A request ready to run on the caller's thread: [`HereRun::run`], then drop it (which
/// gives the plugin's call slot back).
pub struct HereRun {
    request: Request,
    lease: Lease,
    ticket: Option<HereTicket>,
}

impl Request {
    /// A request to `plugin` with JSON-RPC id `id`; with `key`, the key it was registered
    /// under for cancellation ([`Router::registered`]).
    pub(super) fn new(
        router: Arc<Router>,
        plugin: String,
        id: Box<RawValue>,
        key: Option<RequestKey>,
        control: Arc<CallControl>,
        progress: Option<Arc<Progress>>,
        method: Box<dyn Method>,
    ) -> Self {
        // A backend receiving the result from elsewhere (a worker) refuses a bigger one unread.
        control.limit_result(router.config.max_result_bytes);
        // Its plugin's questions are its own: marked so, and held to its table.
        control.set_gate(router.ask_gate(&plugin));
        Request(Arc::new(Inner {
            router,
            plugin,
            id,
            key,
            control,
            progress,
            method,
            arrived: Instant::now(),
            limit: OnceLock::new(),
            reply: Mutex::new(None),
            through: Mutex::new(None),
            here: OnceLock::new(),
        }))
    }

    /// Its answer goes through `through` (given where [`Request::start`] sends it).
    pub(super) fn answer_through(self, through: Through) -> Self {
        *crate::sync::lock(&self.0.through) = Some(through);
        self
    }

    /// The plugin asked.
    pub fn plugin(&self) -> &str {
        &self.0.plugin
    }

    /// Starts the request; its answer goes to `respond`. This is the one place that decides
    /// where a request runs:
    /// - on the caller's thread (`here`: the reading threads of a `chat` session, which can
    ///   block), when the plugin can be leased without waiting, its method has not been
    ///   running long, and the plugin has a free call slot with nobody waiting for one. An
    ///   isolated plugin's request runs there too: the thread then waits for the worker's
    ///   reply as it would wait for a tool, under the same budget, and saves the executor's
    ///   hand-off on the way.
    /// - otherwise on the executor, under its per-plugin bound, once the lease is had (a
    ///   stateful plugin's hand-off may hold it: then an async task waits for it).
    ///
    /// Returns the run for the caller's thread, if that is where it runs.
    pub fn start(self, respond: Box<dyn Respond>, here: bool) -> Option<HereRun> {
        let through = crate::sync::lock(&self.0.through).take();
        let respond = match through {
            Some(through) => through(respond),
            None => respond,
        };
        *crate::sync::lock(&self.0.reply) = Some(respond);
        let inner = &self.0;
        let lease = match inner.router.registry().try_lease(&inner.plugin) {
            TryLease::Leased(lease) => lease,
            TryLease::Unknown => {
                self.answer_unknown();
                return None;
            }
            TryLease::Busy => {
                tokio::spawn(async move {
                    let lease = self.0.router.registry().lease(&self.0.plugin).await;
                    self.run_away(lease);
                });
                return None;
            }
        };
        if let Err(outcome) = inner.method.check(&inner.plugin, Some(&lease)) {
            self.answer(outcome);
            return None;
        }
        if here && !inner.method.runs_long(&lease) {
            if let Some(ticket) = inner.router.executor.try_here(&inner.plugin) {
                let _ = inner.here.set((ticket.id(), lease.version().clone()));
                return Some(HereRun {
                    request: self,
                    lease,
                    ticket: Some(ticket),
                });
            }
        }
        self.run_away(Some(lease));
        None
    }

    /// Whether the request may still start, on whichever thread runs it; when not, it is
    /// answered (or already was). Answered already: it timed out while queued, or its
    /// session ended. Cancelled (a task's `tasks/cancel`, a `notifications/cancelled`, a
    /// request registered while the router winds down): it never starts either, and is
    /// answered "not run" (a cancelled task is `cancelled` already, and that answer goes
    /// nowhere).
    fn may_start(&self) -> bool {
        if self.answered() {
            return false;
        }
        if self.0.control.is_cancelled() {
            let outcome = self.0.method.failed(
                &self.0.plugin,
                Failure::NotRun(&"it was cancelled before it started"),
            );
            self.answer(outcome);
            return false;
        }
        true
    }

    /// [`Dispatch::reply`](super::Dispatch::reply) of this request.
    pub async fn reply(self, here: bool) -> String {
        super::Dispatch::Request(self).reply(here).await
    }

    /// Runs the request on the executor (`None`: its plugin went away meanwhile).
    fn run_away(self, lease: Option<Lease>) {
        let Some(lease) = lease else {
            self.answer_unknown();
            return;
        };
        self.arm_timeout();
        let label = self.label();
        let request = self.clone();
        let job = Job::new(self.0.plugin.clone(), label, move || {
            if !request.may_start() {
                return;
            }
            let started = Instant::now();
            let outcome = request.0.run_caught(&lease);
            if started.elapsed() < HERE_BUDGET / 2 {
                // Quick again: its next call may run on the thread that reads it.
                request.0.method.ran(&lease, false);
            }
            request.finish(outcome);
        });
        if let Err(refused) = self.0.router.executor.submit(job) {
            tracing::warn!(plugin = %self.0.plugin, "{refused}");
            let outcome = self
                .0
                .method
                .failed(&self.0.plugin, Failure::NotRun(&refused));
            self.answer(outcome);
        }
    }

    /// Answers that its plugin is not loaded, in its method's words.
    fn answer_unknown(&self) {
        let outcome = self
            .0
            .method
            .check(&self.0.plugin, None)
            .err()
            .unwrap_or_else(|| Err(CallError::UnknownServer(self.0.plugin.clone())));
        self.answer(outcome);
    }

    /// Names the request in the executor's list of running calls.
    fn label(&self) -> String {
        format!(
            "call {} of {}.{}",
            self.0.control.label(),
            self.0.plugin,
            self.0.method.name()
        )
    }

    /// The request outlived its reading thread's budget, and another thread reads now: it is
    /// named among the running calls, its method counts as one that runs long from now on,
    /// and its timeout is armed.
    pub fn escalate(&self) {
        if let Some((slot, version)) = self.0.here.get() {
            self.0.router.executor.label_here(*slot, self.label());
            self.0.method.ran(version, true);
        }
        self.arm_timeout();
    }

    /// Its method's own limit, else its plugin's timeout (`--plugin-timeout`, the
    /// configuration file, the default).
    fn limit(&self) -> Duration {
        *self.0.limit.get_or_init(|| {
            self.0
                .method
                .timeout()
                .unwrap_or_else(|| self.0.router.timeout_for(&self.0.plugin))
        })
    }

    /// Answers the timeout at the request's deadline, unless it was answered by then.
    fn arm_timeout(&self) {
        let deadline = tokio::time::Instant::from_std(self.0.arrived + self.limit());
        let request: Weak<Inner> = Arc::downgrade(&self.0);
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    tokio::time::sleep_until(deadline).await;
                    if let Some(inner) = request.upgrade() {
                        Request(inner).time_out();
                    }
                });
            }
            Err(_) => tracing::error!("no runtime to time request {} out", self.label()),
        }
    }

    /// Answers that the request timed out, then tells the plugin to stop: in that order, as a
    /// plugin answering its cancellation at once would otherwise be the answer.
    fn time_out(self) {
        let inner = &self.0;
        inner
            .control
            .fail(format!("timed out after {:?}", self.limit()));
        let outcome = inner
            .method
            .failed(&inner.plugin, Failure::TimedOut(self.limit()));
        let answered = self.answer(outcome);
        inner.control.cancel();
        if answered {
            tracing::warn!(plugin = %inner.plugin, "{} timed out", self.label());
        }
    }

    /// Answers with the method's own outcome, unless it is over the size limit.
    fn finish(&self, outcome: Outcome) {
        let inner = &self.0;
        let max = inner.router.config.max_result_bytes;
        // A worker's result over the limit is refused before it is read: its size is noted.
        let refused = inner.control.too_large();
        let over = refused.or_else(|| outcome.as_ref().ok().map(String::len).filter(|&n| n > max));
        let outcome = match over {
            Some(bytes) => {
                let unread = if refused.is_some() {
                    " (refused unread)"
                } else {
                    ""
                };
                tracing::warn!(plugin = %inner.plugin, bytes, max, "{} over the size limit{unread}", self.label());
                inner
                    .method
                    .failed(&inner.plugin, Failure::TooLarge { bytes, max })
            }
            None => outcome,
        };
        self.answer(outcome);
    }

    /// Whether it was answered.
    fn answered(&self) -> bool {
        crate::sync::lock(&self.0.reply).is_none()
    }

    /// Answers, if nobody did: returns whether this was the answer.
    fn answer(&self, outcome: Outcome) -> bool {
        let Some(respond) = crate::sync::lock(&self.0.reply).take() else {
            return false;
        };
        self.0.answer_with(respond, outcome);
        true
    }
}

impl Inner {
    /// Runs the method on this thread. A panic in the host's part of the call (the plugin's
    /// own are caught at the ABI) is answered as such, on a reading thread as on the
    /// executor, rather than ending the thread or dropping the request unanswered.
    fn run_caught(&self, lease: &Lease) -> Outcome {
        let run = std::panic::AssertUnwindSafe(|| self.method.run(lease, &self.control));
        std::panic::catch_unwind(run).unwrap_or_else(|payload| {
            let message = crate::error::panic_message(&*payload);
            tracing::error!(plugin = %self.plugin, "a call of {} panicked: {message}", self.method.name());
            self.control.fail(format!("the host panicked running it: {message}"));
            self.method.failed(&self.plugin, Failure::Panicked(message))
        })
    }

    fn answer_with(&self, respond: Box<dyn Respond>, outcome: Outcome) {
        // No progress after this point: the answer is queued after every report.
        if let Some(p) = &self.progress {
            p.end();
        }
        if let Some(key) = &self.key {
            self.router.unregister(key, &self.control);
        }
        respond.respond(Answer::Outcome {
            id: &self.id,
            outcome,
            lists: self.method.lists(),
        });
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let respond = crate::sync::get_mut(&mut self.reply).take();
        if let Some(respond) = respond {
            tracing::error!(plugin = %self.plugin, "a request was dropped unanswered");
            self.control.fail("the host dropped it without an answer");
            let outcome = self.method.failed(&self.plugin, Failure::Lost);
            self.answer_with(respond, outcome);
        }
    }
}

impl HereRun {
    /// The request it runs.
    pub fn request(&self) -> &Request {
        &self.request
    }

    /// The run as its thread's watchdog follows it, from now.
    pub fn watched(&self) -> Watched {
        Watched {
            request: self.request.clone(),
            started: Instant::now(),
            escalated: false,
        }
    }

    /// Runs the request on this thread and answers it (unless its timeout did). A panic in
    /// the host's part of the call (the plugin's own are caught at the ABI) becomes a failure
    /// rather than the end of the thread.
    pub fn run(&mut self) {
        if !self.request.may_start() {
            return;
        }
        let outcome = self.request.0.run_caught(&self.lease);
        self.request.finish(outcome);
    }
}

/// A [`HereRun`] as a watchdog follows it: the reading threads' (`toolhost-service`'s
/// `lane.rs`) and `serve --http`'s I/O threads' (`toolhost-http`'s `here.rs`) apply the one
/// rule here.
pub struct Watched {
    request: Request,
    started: Instant,
    escalated: bool,
}

impl Watched {
    /// Escalates the request ([`Request::escalate`]) once it has run [`HERE_BUDGET`] by `now`
    /// (`all`: whatever its time, as its session ends), and only once.
    pub fn escalate_due(&mut self, now: Instant, all: bool) {
        if !self.escalated && (all || now >= self.started + HERE_BUDGET) {
            self.escalated = true;
            self.request.escalate();
        }
    }
}

impl Drop for HereRun {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.request
                .0
                .router
                .executor
                .here_done(ticket, &self.request.0.plugin);
        }
    }
}
