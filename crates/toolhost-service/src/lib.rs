//! The control loop with the `claude` CLI: one reader task that parses each line once and
//! routes it (MCP messages to the [`Router`], permission questions to the asker, answers to
//! their waiters, stream messages to the front-end), one writer task for every outgoing line,
//! and a handle to send requests and user turns.
//!
//! Also stdio `serve` ([`serve`]), the 2026-07-28 rounds of every transport and their signed
//! request state ([`rounds`], which `toolhost-http` takes too), and the session limits shared by
//! `chat`, `serve` and `call`. Layer 6 of docs/internals.md: it uses the engine and the crates
//! below it, and no front end; HTTP is the crate above it (`toolhost-http`), so the loops never
//! link hyper or rustls.

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

// The engine (the router, `handler` since it was a module) and the modules of the crates below
// it, under the names the code has always used (`crate::model::…`, `crate::handler::Router`).
use toolhost_engine as handler;
use toolhost_engine::{executor, model, plugin, registry, relay, sync, transport, trust};

mod init;
mod lane;
mod pending;
mod reload;
pub mod rounds;
pub mod serve;
mod session_limits;

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
};

use serde_json::{value::RawValue, Value};
use tokio::{
    io::AsyncWrite,
    sync::{mpsc, OwnedSemaphorePermit, Semaphore},
    task::AbortHandle,
};

/// At the end of a session, how long cancelled calls get to stop before the host abandons
/// them (and then again how long their answers may take to be written).
pub const WIND_DOWN: std::time::Duration = std::time::Duration::from_millis(400);

pub use init::{initialize_request, sdk_server_set, server_manifest};
pub use lane::LineSource;
pub use pending::{ControlError, Pending};
pub use reload::{follow_notices, follow_registry};
pub use session_limits::{CallLimits, SessionLimits, TaskArgs};

use crate::{
    handler::{hooks, Answer, Client, HereRun, Notify, Router, Sink},
    model::{
        control_error, control_request, control_success, mcp_message_request, ClientMessage,
        Incoming, IncomingRequest,
    },
    sync::lock,
    transport::{Latest, LineSender, ReadError, TooLong, Writer},
};

/// A `can_use_tool` question from the CLI (docs/protocol.md §7).
#[derive(Debug, Clone)]
pub struct PermissionRequest {
    pub request_id: String,
    /// API name, e.g. `mcp__calc__add`.
    pub tool_name: String,
    pub display_name: Option<String>,
    pub tool_use_id: Option<String>,
    /// The tool input as the model gave it.
    pub input: Box<RawValue>,
}

/// Answers permission questions: `Ok` is the `response` body (`{"behavior":...}`), `Err` a
/// control-level error. The future is dropped if the CLI withdraws the question.
pub type PermissionHandler = Arc<
    dyn Fn(PermissionRequest) -> Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>
        + Send
        + Sync,
>;

/// Answers the CLI's own `elicitation` control requests (a user's MCP server asks, docs/protocol.md
/// §16.3): the future gets the request and gives the `response` body (`{"action", "content"?}`).
/// It is dropped if the CLI withdraws the request (`control_cancel_request`).
pub type ElicitHandler =
    Arc<dyn Fn(Value) -> Pin<Box<dyn Future<Output = Value> + Send>> + Send + Sync>;

/// The [`Asker`](crate::plugin::Asker) of the calls of one sdk server (named), when the front
/// end can ask the person a plugin's questions.
pub type AskerFor = Arc<dyn Fn(&str) -> Arc<dyn crate::plugin::Asker> + Send + Sync>;

/// Who answers the person's questions in a chat session (all `None`: nobody; permission
/// questions are then refused and the CLI's elicitations declined).
#[derive(Default, Clone)]
pub struct PersonAsks {
    /// `can_use_tool` questions the policies leave open.
    pub permissions: Option<PermissionHandler>,
    /// The CLI's own `elicitation` requests.
    pub elicit: Option<ElicitHandler>,
    /// The plugins' own questions.
    pub asker: Option<AskerFor>,
}

/// What the front-end sees of the CLI's output.
#[derive(Debug)]
pub enum Event {
    /// A stream message (`system`, `assistant`, `user`, `result`, `stream_event`, ...),
    /// with its `type` and the line exactly as the CLI wrote it.
    Message { kind: String, line: String },
    /// The CLI's stdout closed: it exited or is about to.
    Closed,
}

/// Sends requests, notifications and user turns to the CLI. Cheap to clone.
#[derive(Clone)]
pub struct SessionHandle {
    out: LineSender,
    pending: Arc<Pending>,
}

impl SessionHandle {
    /// Sends a control request (`body` holds its `subtype`) at once, and returns a future
    /// of the answer (so the request keeps its place in the output even if awaited later).
    pub fn request(
        &self,
        body: &Value,
    ) -> impl Future<Output = Result<Value, ControlError>> + Send + 'static {
        let id = self.pending.next_id();
        let rx = self.pending.wait(&id);
        if !self.out.send(control_request(&id, body)) {
            self.pending.complete(&id, Err(ControlError::Closed));
        }
        async move { rx.await.unwrap_or(Err(ControlError::Closed)) }
    }

    /// Sends a control request without waiting for its acknowledgement.
    pub fn post(&self, body: &Value) {
        self.out
            .send(control_request(&self.pending.next_id(), body));
    }

    /// Sends a JSON-RPC notification to the CLI's client of sdk server `server`.
    pub fn notify_server(&self, server: &str, message: &str) {
        self.out.send(mcp_message_request(
            &self.pending.next_id(),
            server,
            message,
        ));
    }

    /// Starts a user turn whose content is a list of content blocks (a plugin's prompt).
    pub fn send_user_content(&self, content: Value) {
        let line = serde_json::json!({
            "type": "user",
            "message": {"role": "user", "content": content},
            "parent_tool_use_id": null,
            "session_id": "default",
        });
        self.out.send(line.to_string());
    }

    /// Starts a user turn.
    pub fn send_user(&self, text: &str) {
        self.send_user_content(Value::from(text));
    }

    /// Asks the CLI to stop the running turn.
    pub fn interrupt(&self) {
        self.post(&serde_json::json!({"subtype": "interrupt"}));
    }
}

/// A running control loop.
pub struct Session {
    pub handle: SessionHandle,
    pub events: mpsc::UnboundedReceiver<Event>,
    writer: Writer,
    router: Arc<Router>,
}

impl Session {
    /// Starts serving the CLI on `input` (its stdout, as lines: see
    /// [`blocking_lines`](crate::transport::blocking_lines), or
    /// [`read_lines`](crate::transport::read_lines) for an in-memory pipe) and `output` (its
    /// stdin), every line written by the writer task. MCP messages are served from this
    /// moment on, before any `initialize` is sent.
    pub fn start<I, W>(
        input: I,
        output: W,
        router: Arc<Router>,
        permissions: Option<PermissionHandler>,
    ) -> std::io::Result<Session>
    where
        I: LineSource,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_with(input, Writer::spawn(output), router, permissions)
    }

    /// [`Session::start`] with a writer of the caller's (for the CLI's stdin,
    /// [`Writer::spawn_direct`]: replies are written by the thread that ran the call).
    /// Fails only when the reader's threads cannot be started.
    pub fn start_with<I: LineSource>(
        input: I,
        out: (LineSender, Writer),
        router: Arc<Router>,
        permissions: Option<PermissionHandler>,
    ) -> std::io::Result<Session> {
        Self::start_hooked(input, out, router, permissions, None)
    }

    /// [`Session::start_with`] answering `hook_callback` with the plugins' `hooks` and asking
    /// their permission policies before `permissions` (docs/protocol.md §14). Without
    /// `hooks`, every callback is answered `{}`.
    pub fn start_hooked<I: LineSource>(
        input: I,
        out: (LineSender, Writer),
        router: Arc<Router>,
        permissions: Option<PermissionHandler>,
        hooks: Option<Arc<hooks::Hooks>>,
    ) -> std::io::Result<Session> {
        let person = PersonAsks {
            permissions,
            ..PersonAsks::default()
        };
        Self::start_asking(input, out, router, person, hooks)
    }

    /// [`Session::start_hooked`] with everything the `person` answers: permission questions,
    /// the CLI's elicitations and the plugins' questions.
    pub fn start_asking<I: LineSource>(
        input: I,
        (out, writer): (LineSender, Writer),
        router: Arc<Router>,
        person: PersonAsks,
        hooks: Option<Arc<hooks::Hooks>>,
    ) -> std::io::Result<Session> {
        let pending = Arc::new(Pending::default());
        let handle = SessionHandle {
            out: out.clone(),
            pending: pending.clone(),
        };
        let (events_tx, events) = mpsc::unbounded_channel();
        let reader = Control {
            router: router.clone(),
            out,
            sink: Arc::new(handle.clone()),
            pending,
            person,
            hooks,
            asking: Arc::new(Mutex::new(HashMap::new())),
            events: events_tx,
        };
        lane::Lane::start(reader, Box::new(input))?;
        Ok(Session {
            handle,
            events,
            writer,
            router,
        })
    }

    /// Closes the CLI's stdin after what is queued, and stops serving. Calls still running
    /// are cancelled. (The reader threads end when the CLI's output does.)
    pub async fn close(self) {
        self.router.wind_down(WIND_DOWN).await;
        self.writer.close().await;
    }
}

/// Most calls a session runs at once: requests read whose replies are not queued yet. Past
/// it, the reader waits for a reply before it takes the next request. Well above what a
/// client runs at once, it bounds what a flood of calls can hold (their results, their
/// threads) before backpressure from the output queue sets in.
pub const MAX_CALLS_IN_FLIGHT: usize = 256;

/// The reader's brake: before each line it waits for room in the output queue (a peer that
/// does not read its input stops being read) and for a free call slot.
pub(crate) struct Intake {
    out: LineSender,
    slots: Arc<Semaphore>,
}

/// A call slot: held by a tool call until its reply is queued.
pub(crate) struct CallSlot {
    _permit: Option<OwnedSemaphorePermit>,
}

impl CallSlot {
    /// No slot: for a line that makes no call and writes nothing (a client's response).
    pub(crate) fn none() -> Self {
        CallSlot { _permit: None }
    }
}

impl Intake {
    pub(crate) fn new(out: LineSender) -> Self {
        Intake {
            out,
            slots: Arc::new(Semaphore::new(MAX_CALLS_IN_FLIGHT)),
        }
    }

    /// [`Intake::ready`] if it would not wait.
    pub(crate) fn try_ready(&self) -> Option<CallSlot> {
        if !self.out.is_ready() {
            return None;
        }
        let permit = self.slots.clone().try_acquire_owned().ok()?;
        Some(CallSlot {
            _permit: Some(permit),
        })
    }

    /// Waits until the next line may be read; the slot stands for its reply if it is a call.
    pub(crate) async fn ready(&self) -> CallSlot {
        let slot = self.slots.clone().acquire_owned().await;
        self.out.ready().await;
        CallSlot {
            _permit: Some(slot.expect("the semaphore is never closed")),
        }
    }
}

/// What one read means for a reading loop: `Some(Some(line))` a message, `Some(None)` the end
/// of the input (or a failed read, logged naming `peer`), `None` nothing (a blank line, or an
/// over-long one handed to `too_long`).
pub(crate) fn sort_read(
    read: Result<Option<String>, ReadError>,
    peer: &str,
    too_long: &mut impl FnMut(TooLong),
) -> Option<Option<String>> {
    match read {
        Ok(Some(line)) if line.trim().is_empty() => None,
        Ok(Some(line)) => {
            tracing::trace!(target: "toolhost::wire", "<< {line}");
            Some(Some(line))
        }
        Ok(None) => Some(None),
        Err(ReadError::TooLong(t)) => {
            too_long(t);
            None
        }
        Err(ReadError::Io(e)) => {
            tracing::warn!("cannot read from {peer}: {e}");
            Some(None)
        }
    }
}

/// Parses a line that must hold a JSON object with `parse`. Serde would also read a struct
/// from an array (`["control_request","x"]`), which no peer means as a message.
pub fn parse_object<'a, T>(
    line: &'a str,
    parse: impl FnOnce(&'a str) -> Result<T, serde_json::Error>,
) -> Result<T, serde_json::Error> {
    if !line.trim_start().starts_with('{') {
        return Err(serde::de::Error::custom("a message must be a JSON object"));
    }
    parse(line)
}

/// A call's notifications go to the CLI as `mcp_message` requests of its server, through the
/// same writer as the call's reply.
impl Notify for SessionHandle {
    fn notify(&self, server: Option<&str>, latest: Arc<dyn Latest>) {
        if let Some(server) = server {
            self.out.send_latest(Arc::new(ToServer {
                latest,
                server: server.to_string(),
                pending: self.pending.clone(),
            }));
        }
    }
}

/// A [`Latest`] notification wrapped, when written, in an `mcp_message` request to `server`.
struct ToServer {
    latest: Arc<dyn Latest>,
    server: String,
    pending: Arc<Pending>,
}

impl Latest for ToServer {
    fn take(&self) -> Option<String> {
        let message = self.latest.take()?;
        Some(mcp_message_request(
            &self.pending.next_id(),
            &self.server,
            &message,
        ))
    }
}

/// The answer to a permission question nobody can settle: without `--ask` there is no one to
/// ask (as the CLI itself refuses without `--permission-prompt-tool`).
fn cannot_ask() -> Value {
    serde_json::json!({
        "behavior": "deny",
        "message": "toolhost was started without --ask, so it cannot ask the user",
    })
}

impl lane::Front for Control {
    fn route(&self, line: &str, slot: CallSlot) -> Option<HereRun> {
        match parse_object(line, Incoming::parse) {
            Ok(msg) => self.route(msg, line, slot),
            Err(e) => {
                self.malformed(line, e);
                None
            }
        }
    }

    fn too_long(&self, t: TooLong) {
        Control::too_long(self, t)
    }

    fn input_ended(&self) {
        Control::input_ended(self)
    }

    fn out(&self) -> &LineSender {
        &self.out
    }

    fn peer(&self) -> &'static str {
        "the CLI"
    }
}

struct Control {
    router: Arc<Router>,
    out: LineSender,
    /// The session's handle, as the sink of calls' notifications.
    sink: Sink,
    pending: Arc<Pending>,
    person: PersonAsks,
    /// The plugins' hooks and permission policies (`None`: `--no-hooks`, or not a chat).
    hooks: Option<Arc<hooks::Hooks>>,
    /// Permission questions and elicitations being asked, by control request id.
    asking: Arc<Mutex<HashMap<String, AbortHandle>>>,
    events: mpsc::UnboundedSender<Event>,
}

impl Control {
    /// The CLI's output ended: nothing will answer our requests or withdraw questions.
    fn input_ended(&self) {
        self.pending.close();
        for (_, a) in lock(&self.asking).drain() {
            a.abort();
        }
        let _ = self.events.send(Event::Closed);
    }

    /// Handles a line; returns the request the reading thread is to run, if any.
    fn route(&self, msg: Incoming<'_>, line: &str, slot: CallSlot) -> Option<HereRun> {
        match msg.kind.as_ref() {
            "control_request" => match (msg.request_id, msg.request) {
                (Some(id), Some(req)) => return self.control_request(&id, req, line, slot),
                (Some(id), None) => {
                    self.out
                        .send(control_error(&id, "control_request without a request"));
                }
                _ => tracing::warn!("ignoring a control_request without request_id: {line}"),
            },
            "control_response" => match msg.response {
                Some(r) => {
                    let answer = if r.subtype == "success" {
                        Ok(match r.response {
                            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
                            None => Value::Null,
                        })
                    } else {
                        Err(ControlError::Refused(
                            r.error.as_deref().unwrap_or("no reason given").to_string(),
                        ))
                    };
                    if !self.pending.complete(&r.request_id, answer) {
                        tracing::trace!(id = %r.request_id, "acknowledged");
                    }
                }
                None => tracing::warn!("ignoring a control_response without response: {line}"),
            },
            "control_cancel_request" => {
                if let Some(id) = msg.request_id {
                    if let Some(a) = lock(&self.asking).remove(id.as_ref()) {
                        tracing::debug!(%id, "question withdrawn");
                        a.abort();
                    } else if self.hooks.as_ref().is_some_and(|h| h.cancel(&id)) {
                        tracing::debug!(%id, "hook callback withdrawn");
                    }
                }
            }
            kind => {
                let _ = self.events.send(Event::Message {
                    kind: kind.to_string(),
                    line: line.to_string(),
                });
            }
        }
        None
    }

    fn control_request(
        &self,
        id: &str,
        req: IncomingRequest<'_>,
        line: &str,
        slot: CallSlot,
    ) -> Option<HereRun> {
        match req.subtype.as_ref() {
            "mcp_message" => {
                let (Some(server), Some(message)) = (req.server_name, req.message) else {
                    self.out.send(control_error(
                        id,
                        "mcp_message needs server_name and message",
                    ));
                    return None;
                };
                let asker = self.person.asker.as_ref().map(|of| of(&server));
                let client = Client::chat(&server, &self.sink, asker.as_ref());
                let out = self.out.clone();
                let id = id.to_string();
                // The slot stands for the answer until it is queued.
                let respond = move |answer: Answer<'_>| {
                    out.send(answer.control_line(&id));
                    drop(slot);
                };
                return self.router.handle(
                    &client,
                    &ClientMessage::read(&message),
                    Box::new(respond),
                );
            }
            "can_use_tool" => self.ask(id, req, line),
            "elicitation" => self.elicit(id, line),
            "hook_callback" => return self.hook_callback(id, req, slot),
            other => {
                self.out.send(control_error(
                    id,
                    &format!("toolhost does not handle control requests of subtype `{other}`"),
                ));
            }
        }
        None
    }

    /// A `hook_callback`: the plugins' matching hooks, or `{}` when hooks are off.
    fn hook_callback(&self, id: &str, req: IncomingRequest<'_>, slot: CallSlot) -> Option<HereRun> {
        let (Some(hooks), Some(input)) = (&self.hooks, req.input) else {
            self.out.send(control_success(id, &serde_json::json!({})));
            return None;
        };
        let out = self.out.clone();
        let key = id.to_string();
        hooks.callback(id, input, move |answer| {
            out.send(control_success(&key, &answer));
            // The slot stands for the answer until it is queued.
            drop(slot);
        })
    }

    /// A `can_use_tool` question: the plugins' permission policies first, then the person
    /// (`--ask`); without either, refused.
    fn ask(&self, id: &str, req: IncomingRequest<'_>, line: &str) {
        let policies = self.hooks.clone();
        if policies.is_none() && self.person.permissions.is_none() {
            self.out.send(control_success(id, &cannot_ask()));
            return;
        }
        let permissions = self.person.permissions.clone();
        // The policies get every field of the question.
        let raw = policies.as_ref().map(|_| line.to_string());
        let question = PermissionRequest {
            request_id: id.to_string(),
            tool_name: req.tool_name.as_deref().unwrap_or("?").to_string(),
            display_name: req.display_name.map(|d| d.into_owned()),
            tool_use_id: req.tool_use_id.map(|d| d.into_owned()),
            input: req
                .input
                .map(|i| i.to_owned())
                .unwrap_or_else(|| RawValue::from_string("{}".into()).expect("valid JSON")),
        };
        self.answer_later(id, async move {
            let request = raw
                .and_then(|raw| serde_json::from_str::<Value>(&raw).ok())
                .map(|mut v| v["request"].take());
            let settled = match (policies, request) {
                (Some(h), Some(request)) => h.check_permission(request).await,
                _ => None,
            };
            match (settled, permissions) {
                (Some(answer), _) => Ok(answer),
                (None, Some(permissions)) => permissions(question).await,
                (None, None) => Ok(cannot_ask()),
            }
        });
    }

    /// The CLI's own `elicitation` (a user's MCP server asks): the person's form, or
    /// `decline` when nobody can be asked (as the TypeScript SDK answers without a handler).
    fn elicit(&self, id: &str, line: &str) {
        let Some(elicit) = self.person.elicit.clone() else {
            self.out.send(control_success(
                id,
                &serde_json::json!({"action": "decline"}),
            ));
            return;
        };
        let request = serde_json::from_str::<Value>(line)
            .map(|mut v| v["request"].take())
            .unwrap_or(Value::Null);
        self.answer_later(id, async move { Ok(elicit(request).await) });
    }

    /// Answers control request `id` with what `answer` comes to; a `control_cancel_request`
    /// for it drops `answer` unanswered.
    fn answer_later(
        &self,
        id: &str,
        answer: impl Future<Output = Result<Value, String>> + Send + 'static,
    ) {
        let out = self.out.clone();
        let asking = self.asking.clone();
        let key = id.to_string();
        // Holding the lock across spawn and insert: the task removes its entry when done,
        // and must not do so before it was inserted.
        let mut map = lock(&self.asking);
        let task = tokio::spawn(async move {
            let line = match answer.await {
                Ok(body) => control_success(&key, &body),
                Err(e) => control_error(&key, &e),
            };
            out.send(line);
            lock(&asking).remove(&key);
        });
        map.insert(id.to_string(), task.abort_handle());
    }

    /// A line over the length limit was skipped: if it was a control request, answer it so the
    /// CLI does not wait forever.
    fn too_long(&self, t: TooLong) {
        tracing::warn!("from the CLI: {t}");
        let request_id = t.keys.request_id.as_deref();
        let id = request_id.and_then(|raw| serde_json::from_str::<String>(raw).ok());
        match (t.keys.kind.as_deref(), id) {
            (Some(r#""control_request""#), Some(id)) => {
                self.out.send(control_error(
                    &id,
                    &format!("{t} (raise the limit with --max-line-bytes)"),
                ));
            }
            _ => tracing::debug!(?t.keys, "no control request id to answer"),
        }
    }

    fn malformed(&self, line: &str, e: serde_json::Error) {
        let shown: String = line.chars().take(200).collect();
        tracing::warn!("ignoring a malformed line from the CLI ({e}): {shown}");
        // If it still names a control request, answer it so the CLI does not wait forever.
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            if v["type"] == "control_request" {
                if let Some(id) = v["request_id"].as_str() {
                    self.out.send(control_error(
                        id,
                        &format!("malformed control request: {e}"),
                    ));
                }
            }
        }
    }
}
