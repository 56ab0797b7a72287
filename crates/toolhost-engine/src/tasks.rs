//! MCP tasks (docs/design/talk-back.md §6): a `tools/call` answered at once with a task id,
//! its tool run in the background on the request path (lease, executor, timeout, size limit),
//! its status and result asked for later.
//!
//! One store ([`Tasks`]) for both wire dialects: 2025-11-25's (a `task` param on the call;
//! `tasks/get`, `tasks/result`, `tasks/list`, `tasks/cancel`) and 2026-07-28's extension
//! `io.modelcontextprotocol/tasks` (server-directed tasks, `tasks/get` carrying the result,
//! `tasks/update` answering the questions the tool waits on): `wire.rs` speaks them.
//!
//! Bounds: each owner (a session, the stdio client, a bearer token) holds at most
//! [`MAX_TASKS`] tasks, and the whole process at most [`TaskLimits::max_tasks`] tasks and
//! [`TaskLimits::max_bytes`] bytes, over every owner: the owners are as many as the sessions
//! and tokens, so a bound per owner alone bounds nothing. A task's bytes are its call's
//! arguments until it ends (its request was answered with the task, so the HTTP body budget
//! no longer counts them), then its outcome (each result is also under the router's result
//! size limit). A finished task is kept for its time to live
//! after it ends, or until the room is needed: the oldest finished one (in creation order)
//! makes way, first among its owner's when that owner is full, else among all. A task that
//! has not ended is never dropped for room: a new one is refused instead. An owner's tasks
//! are cancelled and dropped when its session ends. A task's id is 128 random bits, and is
//! looked up among its owner's only: another client's id is an unknown task.

mod asker;
mod promote;
mod wire;

use std::{
    collections::{BTreeMap, HashMap},
    sync::{
        atomic::{AtomicUsize, Ordering},
        mpsc, Arc, Mutex,
    },
    time::{Duration, Instant, SystemTime},
};

use serde_json::{json, value::RawValue, Map, Value};

pub(super) use asker::{SessionTaskAsker, TaskAsker};
pub(super) use wire::Later;

use super::{Outcome, Scope};
use crate::{
    plugin::{AskFailure, CallControl},
    sync::lock,
};

/// Most tasks one owner holds, running or finished (a finished one makes room when needed).
pub const MAX_TASKS: usize = 32;
/// Default of [`TaskLimits::max_tasks`] (`--max-tasks`).
pub const DEFAULT_MAX_KEPT_TASKS: usize = 1024;
/// Default of [`TaskLimits::max_bytes`] (`--max-task-bytes`): 256 results of the default
/// size limit.
pub const DEFAULT_MAX_TASK_BYTES: usize = 256 << 20;
/// How long a finished task is kept when the client asks for no time to live.
pub const DEFAULT_TTL: Duration = Duration::from_secs(600);
/// The shortest and longest time to live a client may ask for (others are clamped).
pub const MIN_TTL: Duration = Duration::from_secs(1);
pub const MAX_TTL: Duration = Duration::from_secs(3600);
/// How often clients are told to poll, in milliseconds.
pub const POLL_INTERVAL_MS: u64 = 500;
/// Most questions one task may have waiting (a plugin asking from many threads at once
/// cannot grow its task without bound).
pub const MAX_QUESTIONS: usize = 64;
/// The 2026-07-28 extension's name.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// Whether a 2026-07-28 request's client capabilities declare the tasks extension.
pub fn declares_tasks(capabilities: Option<&RawValue>) -> bool {
    capabilities
        .and_then(|c| serde_json::from_str::<Value>(c.get()).ok())
        .is_some_and(|c| c["extensions"].get(EXTENSION).is_some())
}

/// The `_meta` key a 2025-11-25 message related to a task names it by.
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The bounds of the tasks kept over every owner (docs/deploy.md, "Memory and open files").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// Tasks kept at once, running or finished, over every owner.
    pub max_tasks: usize,
    /// Bytes held by tasks at once, over every owner: a running task's arguments, a finished
    /// one's outcome (result, error message).
    pub max_bytes: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_tasks: DEFAULT_MAX_KEPT_TASKS,
            max_bytes: DEFAULT_MAX_TASK_BYTES,
        }
    }
}

/// How a client speaks of tasks.
#[derive(Debug, Clone, Copy)]
pub enum Tasking<'a> {
    /// MCP 2025-11-25 (stdio `serve`, HTTP sessions): the client asks for a task with the
    /// call's `task` param; its tasks are the session's.
    Session,
    /// The 2026-07-28 extension: `owner` names whose tasks these are (the bearer token),
    /// `negotiated` whether this request declared the extension, `capabilities` its
    /// `clientCapabilities` (what a task's questions may be).
    Extension {
        owner: &'a str,
        negotiated: bool,
        capabilities: Option<&'a RawValue>,
    },
}

impl Tasking<'_> {
    /// The revision whose tasks these are.
    pub fn revision(&self) -> super::Revision {
        match self {
            Tasking::Session => super::Revision::Nov2025,
            Tasking::Extension { .. } => super::Revision::Jul2026,
        }
    }
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    /// Its MCP name.
    pub fn name(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// How a task ended: the tool's `CallToolResult` (an error result too), or a JSON-RPC error
/// (the call failed at the protocol level: a panic, a crashed worker, a timeout).
#[derive(Debug, Clone)]
enum Ended {
    Result(String),
    Error {
        code: crate::model::ErrorCode,
        message: String,
    },
}

/// One task.
pub(super) struct Task {
    id: String,
    /// Whose it is (its key in the store).
    owner: String,
    /// Its place in creation order over every owner (the oldest finished makes room first).
    seq: u64,
    /// The bytes the store counts for it (its arguments, then its outcome): changed only
    /// under the store's lock.
    charged: AtomicUsize,
    /// The tool it runs (a panic result names it).
    tool: String,
    created: SystemTime,
    ttl: Duration,
    control: Arc<CallControl>,
    state: Mutex<State>,
    /// Set to true at the end, for whoever waits for it (`tasks/result`).
    ended: tokio::sync::watch::Sender<bool>,
}

struct State {
    status: Status,
    updated: SystemTime,
    message: Option<String>,
    outcome: Option<Ended>,
    /// When it ended: it is kept for its time to live from then.
    ended_at: Option<Instant>,
    /// The questions the tool waits on, by the key the client answers (`tasks/update`).
    questions: BTreeMap<String, Question>,
    /// Questions asked so far (their keys are numbered).
    asked: u64,
    /// Asks of a 2025-11-25 task waiting for the client's answers (its session's asker has
    /// them, not `questions`).
    awaiting: usize,
}

/// A question of the tool's, and where its answer goes.
struct Question {
    /// `{"method", "params"}`: an MCP input request.
    request: Value,
    answer: mpsc::SyncSender<Value>,
}

/// What a task looks like at one moment.
pub(super) struct Snapshot {
    status: Status,
    updated: SystemTime,
    message: Option<String>,
    outcome: Option<Ended>,
    questions: Map<String, Value>,
}

impl Task {
    /// Its status now.
    pub(super) fn status(&self) -> Status {
        lock(&self.state).status
    }

    fn snapshot(&self) -> Snapshot {
        let s = lock(&self.state);
        Snapshot {
            status: s.status,
            updated: s.updated,
            message: s.message.clone(),
            outcome: s.outcome.clone(),
            questions: s
                .questions
                .iter()
                .map(|(k, q)| (k.clone(), q.request.clone()))
                .collect(),
        }
    }

    /// Records how its call ended (unless it was cancelled first): the bytes of the outcome
    /// it keeps, `None` when it had ended already. [`Tasks::settle`] counts them.
    fn settle(&self, outcome: Outcome) -> Option<usize> {
        let ended = match (self.control.failure(), outcome) {
            (Some(why), _) => Ended::Error {
                code: crate::model::ErrorCode::INTERNAL_ERROR,
                message: why,
            },
            (None, Err(e)) => Ended::Error {
                code: e.code(),
                message: e.to_string(),
            },
            (None, Ok(result)) => match panic_of(&self.tool, &result) {
                Some(message) => Ended::Error {
                    code: crate::model::ErrorCode::INTERNAL_ERROR,
                    message,
                },
                None => Ended::Result(result),
            },
        };
        let (status, bytes) = match &ended {
            Ended::Result(r) => (Status::Completed, r.len()),
            Ended::Error { message, .. } => (Status::Failed, message.len()),
        };
        self.end(status, Some(ended)).then_some(bytes)
    }

    /// Ends it with `status`, unless it ended already: false then.
    fn end(&self, status: Status, outcome: Option<Ended>) -> bool {
        let mut s = lock(&self.state);
        if s.status.is_terminal() {
            return false;
        }
        s.status = status;
        s.outcome = outcome;
        s.updated = SystemTime::now();
        s.ended_at = Some(Instant::now());
        // Whoever waits on a question hears it is over.
        s.questions.clear();
        drop(s);
        self.ended.send_replace(true);
        true
    }

    /// Cancels it: its call is told to stop and it ends `cancelled` at once, whatever its call
    /// still does. False when it had ended already.
    pub(super) fn cancel(&self) -> bool {
        self.control.cancel();
        self.end(Status::Cancelled, None)
    }

    /// Hands each answer of `responses` to the question of its key (keys of no question are
    /// ignored); the task works again once no question waits.
    fn answer(&self, responses: &Map<String, Value>) {
        let mut s = lock(&self.state);
        for (key, response) in responses {
            if let Some(q) = s.questions.remove(key) {
                let _ = q.answer.try_send(response.clone());
            }
        }
        if s.questions.is_empty() && s.status == Status::InputRequired {
            s.status = Status::Working;
            s.updated = SystemTime::now();
        }
    }

    /// Puts `requests` to the client as questions; the receivers get their answers. Refused
    /// when the task has ended, or would have over [`MAX_QUESTIONS`] waiting.
    fn ask(&self, requests: Vec<Value>) -> Result<Vec<mpsc::Receiver<Value>>, AskFailure> {
        let mut s = lock(&self.state);
        if s.status.is_terminal() {
            return Err(AskFailure::Cancelled);
        }
        if s.questions.len() + requests.len() > MAX_QUESTIONS {
            return Err(AskFailure::Unsupported(format!(
                "{MAX_QUESTIONS} questions of this task wait for their answers already"
            )));
        }
        let mut answers = Vec::with_capacity(requests.len());
        for request in requests {
            s.asked += 1;
            let key = format!("input-{}", s.asked);
            let (tx, rx) = mpsc::sync_channel(1);
            s.questions.insert(
                key,
                Question {
                    request,
                    answer: tx,
                },
            );
            answers.push(rx);
        }
        s.status = Status::InputRequired;
        s.updated = SystemTime::now();
        Ok(answers)
    }

    /// Counts an ask put to the client by its session (`start`), or one answered: the task
    /// is `input_required` while one waits. Refused once the task has ended.
    fn awaiting(&self, start: bool) -> Result<(), AskFailure> {
        let mut s = lock(&self.state);
        if start {
            s.awaiting += 1;
        } else {
            s.awaiting = s.awaiting.saturating_sub(1);
        }
        if s.status.is_terminal() {
            return Err(AskFailure::Cancelled);
        }
        let status = match s.awaiting {
            0 => Status::Working,
            _ => Status::InputRequired,
        };
        if s.status != status {
            s.status = status;
            s.updated = SystemTime::now();
        }
        Ok(())
    }

    /// Whether it can go: ended more than its time to live ago.
    fn expired(&self, now: Instant) -> bool {
        lock(&self.state)
            .ended_at
            .is_some_and(|at| now.duration_since(at) >= self.ttl)
    }

    /// Waits until it has ended.
    async fn ended(&self) {
        let mut rx = self.ended.subscribe();
        let _ = rx.wait_for(|ended| *ended).await;
    }
}

/// The panic message of a result a tool's panic produced (the SDK's words), if it is one.
fn panic_of(tool: &str, result: &str) -> Option<String> {
    if !result.contains("panicked: ") {
        return None;
    }
    let v: Value = serde_json::from_str(result).ok()?;
    let text = v["content"][0]["text"].as_str()?;
    (v["isError"] == true && toolhost_plugin::extras::is_panic_text(tool, text))
        .then(|| text.to_string())
}

/// Every client's tasks, by owner, within [`TaskLimits`].
pub struct Tasks {
    limits: TaskLimits,
    store: Mutex<Store>,
}

/// What [`Tasks`] holds under its lock.
#[derive(Default)]
struct Store {
    /// Each owner's tasks, in creation order (an owner with none has no entry).
    owners: HashMap<String, Vec<Arc<Task>>>,
    /// Tasks kept, over every owner.
    count: usize,
    /// Bytes held (each task's `charged`), over every owner.
    bytes: usize,
    /// The next task's `seq`.
    next: u64,
}

impl Store {
    /// Forgets the tasks of `owner` that `gone` picks; returns them.
    fn drop_where(&mut self, owner: &str, gone: impl Fn(&Task) -> bool) -> Vec<Arc<Task>> {
        let Some(tasks) = self.owners.get_mut(owner) else {
            return Vec::new();
        };
        let (dropped, kept): (Vec<_>, Vec<_>) =
            std::mem::take(tasks).into_iter().partition(|t| gone(t));
        *tasks = kept;
        if tasks.is_empty() {
            self.owners.remove(owner);
        }
        for t in &dropped {
            self.forget(t);
        }
        dropped
    }

    /// Takes `task`'s counts off the totals (it has just left `owners`).
    fn forget(&mut self, task: &Task) {
        self.count -= 1;
        self.bytes -= task.charged.swap(0, Ordering::Relaxed);
    }

    /// Forgets every task whose time to live has passed, of every owner.
    fn expire_all(&mut self, now: Instant) {
        let owners: Vec<String> = self.owners.keys().cloned().collect();
        for owner in owners {
            self.drop_where(&owner, |t| t.expired(now));
        }
    }

    /// Forgets the finished task made first, of every owner; false when none has finished.
    fn evict_oldest_finished(&mut self) -> bool {
        let oldest = self
            .owners
            .values()
            .filter_map(|tasks| tasks.iter().find(|t| t.status().is_terminal()))
            .min_by_key(|t| t.seq)
            .cloned();
        let Some(oldest) = oldest else {
            return false;
        };
        tracing::debug!(task = %oldest.id, "a finished task forgotten to make room");
        self.drop_where(&oldest.owner, |t| std::ptr::eq(t, &*oldest));
        true
    }

    /// Whether `task` is still kept.
    fn holds(&self, task: &Arc<Task>) -> bool {
        self.owners
            .get(&task.owner)
            .is_some_and(|tasks| tasks.iter().any(|t| Arc::ptr_eq(t, task)))
    }
}

/// No room for another task: its owner's [`MAX_TASKS`] have all not ended, or the process's
/// tasks that have not ended fill its [`TaskLimits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Full {
    Owner,
    Host(TaskLimits),
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Full::Owner => write!(
                f,
                "too many tasks: this client's {MAX_TASKS} tasks are all running; wait for one to end or cancel one"
            ),
            Full::Host(l) => write!(
                f,
                "too many tasks: the server's tasks (over every client) are all running, at its bound of {} tasks holding {} bytes; try again later",
                l.max_tasks, l.max_bytes
            ),
        }
    }
}

impl Default for Tasks {
    fn default() -> Self {
        Tasks::new(TaskLimits::default())
    }
}

impl Tasks {
    /// An empty store within `limits`.
    pub fn new(limits: TaskLimits) -> Self {
        Tasks {
            limits,
            store: Mutex::new(Store::default()),
        }
    }

    /// A new task of `owner` running `tool` (with `args` bytes of arguments) under `control`,
    /// kept `ttl` after it ends; `Full` when its owner's tasks, or the process's, have all not
    /// ended (a finished one makes room otherwise: its owner's oldest when the owner is full,
    /// else the oldest of all).
    fn create(
        &self,
        owner: &str,
        tool: &str,
        args: usize,
        ttl: Duration,
        control: Arc<CallControl>,
    ) -> Result<Arc<Task>, Full> {
        let mut store = lock(&self.store);
        let now = Instant::now();
        store.drop_where(owner, |t| t.expired(now));
        let mine = store.owners.get(owner).map_or(0, Vec::len);
        if mine >= MAX_TASKS {
            // The oldest finished one goes (they are in creation order).
            let finished = store.owners[owner]
                .iter()
                .find(|t| t.status().is_terminal())
                .cloned()
                .ok_or(Full::Owner)?;
            store.drop_where(owner, |t| std::ptr::eq(t, &*finished));
        }
        let limits = self.limits;
        let over = |s: &Store| s.count >= limits.max_tasks || s.bytes + args > limits.max_bytes;
        if over(&store) {
            store.expire_all(now);
        }
        while over(&store) {
            if !store.evict_oldest_finished() {
                return Err(Full::Host(limits));
            }
        }
        let created = SystemTime::now();
        let seq = store.next;
        store.next += 1;
        let task = Arc::new(Task {
            id: new_task_id(),
            owner: owner.to_string(),
            seq,
            charged: AtomicUsize::new(args),
            tool: tool.to_string(),
            created,
            ttl,
            control,
            state: Mutex::new(State {
                status: Status::Working,
                updated: created,
                message: None,
                outcome: None,
                ended_at: None,
                questions: BTreeMap::new(),
                asked: 0,
                awaiting: 0,
            }),
            ended: tokio::sync::watch::channel(false).0,
        });
        store
            .owners
            .entry(owner.to_string())
            .or_default()
            .push(task.clone());
        store.count += 1;
        store.bytes += args;
        Ok(task)
    }

    /// Records how `task`'s call ended (unless it had ended already), and counts what it
    /// keeps in place of its arguments: past [`TaskLimits::max_bytes`], the oldest finished
    /// tasks (in creation order, this one among them) are forgotten until the rest fit.
    pub(super) fn settle(&self, task: &Arc<Task>, outcome: Outcome) {
        let Some(bytes) = task.settle(outcome) else {
            return;
        };
        let mut store = lock(&self.store);
        if !store.holds(task) {
            return; // Forgotten meanwhile (its session ended): nothing to count.
        }
        let was = task.charged.swap(bytes, Ordering::Relaxed);
        store.bytes = store.bytes - was + bytes;
        while store.bytes > self.limits.max_bytes && store.evict_oldest_finished() {}
    }

    /// Task `id` of `owner`, unless it expired (another owner's is never found).
    fn find(&self, owner: &str, id: &str) -> Option<Arc<Task>> {
        let mut store = lock(&self.store);
        let now = Instant::now();
        store.drop_where(owner, |t| t.expired(now));
        store
            .owners
            .get(owner)?
            .iter()
            .find(|t| t.id == id)
            .cloned()
    }

    /// The tasks of `owner` kept now, oldest first.
    fn list(&self, owner: &str) -> Vec<Arc<Task>> {
        let mut store = lock(&self.store);
        let now = Instant::now();
        store.drop_where(owner, |t| t.expired(now));
        store.owners.get(owner).cloned().unwrap_or_default()
    }

    /// Cancels and forgets every task of `owner` (its session ended).
    pub(super) fn end_owner(&self, owner: &str) {
        let tasks = lock(&self.store).drop_where(owner, |_| true);
        for t in tasks {
            t.cancel();
        }
    }

    /// Cancels and forgets every task (the host winds down).
    pub(super) fn end_all(&self) {
        let store = std::mem::take(&mut *lock(&self.store));
        for t in store.owners.into_values().flatten() {
            t.cancel();
        }
    }

    /// How many tasks are kept, over every owner.
    pub fn len(&self) -> usize {
        lock(&self.store).count
    }

    /// Whether no task is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes tasks hold (running ones' arguments, finished ones' outcomes), over every
    /// owner.
    pub fn kept_bytes(&self) -> usize {
        lock(&self.store).bytes
    }
}

/// The key of the tasks of `owner` in `scope`.
pub(super) fn owner_key(scope: Scope<'_>, owner: &str) -> String {
    scope.client_key(owner)
}

/// A task id: 128 random bits in hex.
fn new_task_id() -> String {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("the OS random source works");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The time to live a client asked for (`ttl` in milliseconds), clamped to
/// [[`MIN_TTL`], [`MAX_TTL`]]; [`DEFAULT_TTL`] when it asked for none.
pub fn clamp_ttl(ms: Option<u64>) -> Duration {
    ms.map_or(DEFAULT_TTL, |ms| {
        Duration::from_millis(ms).clamp(MIN_TTL, MAX_TTL)
    })
}

/// `t` as RFC 3339 UTC with milliseconds (`2026-11-28T04:13:16.123Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        d.subsec_millis()
    )
}

/// The `requiredCapabilities` data of the -32021 error naming the extension.
pub(super) fn extension_required() -> Value {
    json!({"requiredCapabilities": {"extensions": {EXTENSION: {}}}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_839_196_123);
        assert_eq!(rfc3339(t), "2026-11-28T04:13:16.123Z");
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn ttls_are_clamped() {
        assert_eq!(clamp_ttl(None), DEFAULT_TTL);
        assert_eq!(clamp_ttl(Some(1)), MIN_TTL);
        assert_eq!(clamp_ttl(Some(u64::MAX)), MAX_TTL);
        assert_eq!(clamp_ttl(Some(5000)), Duration::from_secs(5));
    }

    /// A plugin asking from many threads at once is refused past MAX_QUESTIONS waiting; an
    /// answer frees its place, and the task works again once none waits.
    #[test]
    fn a_task_holds_a_bounded_number_of_questions() {
        let tasks = Tasks::default();
        let control = Arc::new(CallControl::new("t", None));
        let task = tasks.create("me", "tool", 2, DEFAULT_TTL, control).unwrap();
        let q = || json!({"method": "elicitation/create", "params": {}});
        let mut waiting = Vec::new();
        for _ in 0..MAX_QUESTIONS {
            waiting.extend(task.ask(vec![q()]).expect("room for it"));
        }
        assert_eq!(task.status(), Status::InputRequired);
        assert!(matches!(
            task.ask(vec![q()]),
            Err(AskFailure::Unsupported(_))
        ));
        let keys: Vec<String> = task.snapshot().questions.keys().cloned().collect();
        assert_eq!(keys.len(), MAX_QUESTIONS);
        let answer = json!({"action": "decline"});
        task.answer(&Map::from_iter([(keys[0].clone(), answer.clone())]));
        assert_eq!(waiting[0].try_recv().unwrap(), answer);
        waiting.extend(task.ask(vec![q()]).expect("room again"));
        let all: Map<String, Value> = task
            .snapshot()
            .questions
            .keys()
            .map(|k| (k.clone(), answer.clone()))
            .collect();
        task.answer(&all);
        assert_eq!(task.status(), Status::Working);
        // Another owner's id is no task of mine.
        assert!(tasks.find("someone else", &task.id).is_none());
        assert!(tasks.find("me", &task.id).is_some());
    }

    /// The process's bounds hold over every owner: a running task's arguments count until it
    /// ends, then its result; room is made by the oldest finished task of any owner, and a
    /// task is refused when only running ones hold the room.
    #[test]
    fn the_bounds_hold_over_every_owner() {
        let tasks = Tasks::new(TaskLimits {
            max_tasks: 3,
            max_bytes: 100,
        });
        let control = || Arc::new(CallControl::new("t", None));
        let make =
            |owner: &str, args: usize| tasks.create(owner, "tool", args, DEFAULT_TTL, control());
        let a = make("a", 60).unwrap();
        assert_eq!(tasks.kept_bytes(), 60);
        // Arguments alone fill the bytes: refused while nothing has finished.
        assert_eq!(make("b", 50).err(), Some(Full::Host(tasks.limits)));
        let b = make("b", 30).unwrap();
        tasks.settle(&a, Ok("r".repeat(10)));
        assert_eq!(tasks.kept_bytes(), 40);
        let c = make("c", 5).unwrap();
        assert_eq!(tasks.len(), 3);
        // Full in number: a's finished task, the oldest, makes room for d's.
        let d = make("d", 5).unwrap();
        assert!(tasks.find("a", &a.id).is_none());
        assert_eq!((tasks.len(), tasks.kept_bytes()), (3, 40));
        // Only running tasks left: refused.
        assert!(matches!(make("e", 1), Err(Full::Host(_))));
        // Results past the bytes go oldest first, whoever's they are: b's (older) goes for
        // c's, though c's result is the one that overflowed.
        tasks.settle(&b, Ok("r".repeat(50)));
        assert_eq!(tasks.kept_bytes(), 50 + 5 + 5);
        tasks.settle(&c, Ok("r".repeat(46)));
        assert!(tasks.find("b", &b.id).is_none());
        assert!(tasks.find("c", &c.id).is_some());
        assert_eq!(tasks.kept_bytes(), 46 + 5);
        // A task cancelled and forgotten with its owner takes its bytes along; a result that
        // comes after is not counted.
        tasks.end_owner("d");
        tasks.settle(&d, Ok("r".repeat(90)));
        assert_eq!((tasks.len(), tasks.kept_bytes()), (1, 46));
    }

    #[test]
    fn a_panic_result_is_told_from_an_error_result() {
        let panic =
            r#"{"content":[{"type":"text","text":"tool `job` panicked: boom"}],"isError":true}"#;
        assert!(panic_of("job", panic).is_some());
        assert!(panic_of("other", panic).is_none());
        let error = r#"{"content":[{"type":"text","text":"it failed"}],"isError":true}"#;
        assert!(panic_of("job", error).is_none());
    }
}
