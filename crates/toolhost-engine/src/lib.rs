//! The MCP router (layer 5 of docs/internals.md): decides what each JSON-RPC message addressed
//! to a plugin server does.
//!
//! It is transport-agnostic: the control loop (`service`) hands it `mcp_message` payloads for
//! one sdk server ([`Scope::Server`]), `toolhost serve` hands it plain JSON-RPC for all plugins
//! at once ([`Scope::All`], tools named `<plugin>__<tool>`), and `toolhost call` calls one
//! tool through [`Router::call_tool`]. Quick requests are answered at once; a request a plugin
//! answers (`tools/call`) becomes a [`Request`], which the caller starts with where its answer
//! goes; its notifications go to the [`Sink`] the caller handed over.
//!
//! A request's path, in the order the code runs, is in the doc of [`Request`]'s module
//! (`request.rs`).
//!
//! The modules of the crates below are re-exported under their own names, so `crate::x::…`
//! paths read the same in every crate of the host; `host` re-exports this crate as
//! `toolhost::handler`, the router's name before it was a crate.

// Unit tests may unwrap a lock; production code takes them by `sync` (clippy.toml).
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_types))]

pub use toolhost_registry::{
    catalog, config, error, executor, model, plugin, plugin_dir, registry, relay, sync, sys,
    terminal, transport, trust, worker,
};

mod asks;
#[cfg(test)]
pub(crate) use crate::plugin::fake;
pub mod hooks;
mod in_flight;
mod notices;
mod offer_checks;
mod offered;
mod plugin_request;
mod progress;
mod prompts;
mod protocol;
mod replay;
mod request;
mod request_key;
mod resources;
mod server;
mod subscriptions;
mod tasks;
mod tool_call;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::value::RawValue;

/// A plugin's questions, checked (another front end's [`crate::plugin::Asker`] reads them so).
pub use asks::read_asks;
pub use asks::{Asks, ClientCaps, StreamAsker, PLUGIN_META};
pub use in_flight::Duplicate;
// What the registry's snapshot holds, under the names the router has always used.
pub use crate::catalog::{
    flat_name, FlatCatalog, FlatCollision, OfferCollision, Offers, Resolved, ToolCheck, Tools,
    FLAT_SEPARATOR,
};
pub use notices::{ClientNotices, NoticeFeed, NoticeOut, Servers, NOTICE_BATCH};
pub use offer_checks::check_prompt_arguments;
pub use offered::{Due, ListChanges};
pub use plugin_request::PluginRequest;
pub use progress::{Discard, Notify, Sink};
pub use prompts::check as check_prompt;
pub use protocol::{check_version, list_changed, Reply, Revision, DISCOVER_VERSIONS};
pub use replay::{Replay, Round};
pub use request::{
    Answer, CallError, Failure, HereRun, Method, Outcome, Request, Respond, Watched,
};
pub use request_key::RequestKey;
pub use resources::PAGE_SIZE;
pub use subscriptions::MAX_SUBSCRIPTIONS;
pub use tasks::{
    declares_tasks, Status as TaskStatus, TaskLimits, Tasking, Tasks, DEFAULT_MAX_KEPT_TASKS,
    DEFAULT_MAX_TASK_BYTES, EXTENSION as TASKS_EXTENSION, MAX_TASKS,
};
pub use tool_call::CallOutput;

use in_flight::Requests;
use offered::complete;
use progress::Progress;
use tool_call::ToolCall;

pub use crate::relay::HERE_BUDGET;
use crate::{
    executor::{Executor, ExecutorConfig},
    model::{
        ClientMessage, ClientNotification, ClientRequest, ErrorCode, Family, JsonRpc, LogLevel,
    },
    plugin::{Asker, CallControl},
    registry::{Registry, Version},
};

/// Server name reported by [`Scope::All`].
pub const ALL_SERVER_NAME: &str = "toolhost";

/// Most tools in one page of `tools/list`: a plugin's whole list (see
/// [`MAX_TOOLS`](crate::model::MAX_TOOLS)), so the sdk servers of `chat` never page (the CLI
/// follows `nextCursor` there too: docs/protocol.md §1.6) and the all-plugins server of
/// `serve` pages once its plugins have more.
pub const TOOLS_PAGE_SIZE: usize = crate::model::MAX_TOOLS;

/// Default per-call timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Default largest serialized tool result passed on (1 MiB): bigger ones are refused with an
/// error result rather than handed to a CLI that may choke on them.
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1 << 20;

/// Which server a message is addressed to.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// One plugin, as its own MCP server (the sdk servers of `toolhost chat`).
    Server(&'a str),
    /// Every plugin behind one MCP server (`toolhost serve`).
    All,
}

impl<'a> Scope<'a> {
    fn key(&self) -> &'a str {
        match self {
            Scope::Server(s) => s,
            // Plugin names are never empty, so this cannot collide.
            Scope::All => "",
        }
    }

    /// The key of `client` of this scope among the log levels set, the subscriptions, the
    /// questions in flight and the tasks' owners.
    fn client_key(self, client: &str) -> String {
        format!("{client}\n{}", self.key())
    }
}

/// Who sent a message: what the router needs of a front end besides the message itself.
#[derive(Clone, Copy)]
pub struct Client<'a> {
    pub scope: Scope<'a>,
    /// Keeps this client's request ids apart from those of other clients sharing the router
    /// (an HTTP session's id, or a fresh name per stateless request); `""` for the one client
    /// of a stdio or control session.
    pub id: &'a str,
    /// Where its requests' notifications (progress, log records) go (`None`: nowhere).
    pub sink: Option<&'a Sink>,
    /// The caller may run a request itself ([`HereRun`]): a reading thread of `chat` or stdio
    /// `serve`, which may block, or `serve --http` with a slot for it on its I/O threads
    /// (toolhost-http's `here.rs`), under a watchdog either way.
    pub here: bool,
    /// A newer request takes the id of one in flight (the control protocol, whose ids restart
    /// at 0 on a re-handshake) instead of being refused.
    pub reuses_ids: bool,
    /// Who puts its calls' questions to it (`None`: this front end cannot ask its client).
    pub asker: Option<&'a Arc<dyn Asker>>,
    /// Who puts the questions of its 2025-11-25 tasks to it, where `asker` ends with the
    /// request that makes the task (an HTTP session's POST stream): the session's GET
    /// stream. `None`: `asker`.
    pub task_asker: Option<&'a Arc<dyn Asker>>,
    /// How it runs tool calls as MCP tasks (`None`: it does not; `tasks/*` are unknown).
    pub tasks: Option<Tasking<'a>>,
    /// The MCP revision it speaks: which methods it has (`server/discover`, or
    /// `initialize` and the methods 2026-07-28 removed).
    pub revision: Revision,
}

impl<'a> Client<'a> {
    /// The one client of `scope`, answered by async tasks, refusing an id in flight, hearing
    /// no notification.
    pub fn of(scope: Scope<'a>) -> Self {
        Client {
            scope,
            id: "",
            sink: None,
            here: false,
            reuses_ids: false,
            asker: None,
            task_asker: None,
            tasks: None,
            revision: Revision::Nov2025,
        }
    }

    /// An sdk server of a `chat` control session: its reading threads run requests, a newer
    /// request takes an id in flight (the CLI's ids restart at 0 on a re-handshake), it opens
    /// with `initialize` (docs/protocol.md §16.1) and runs no call as a task.
    pub fn chat(server: &'a str, sink: &'a Sink, asker: Option<&'a Arc<dyn Asker>>) -> Self {
        Client {
            sink: Some(sink),
            here: true,
            reuses_ids: true,
            asker,
            ..Client::of(Scope::Server(server))
        }
    }

    /// The one client of stdio `serve`: its reading threads run requests; `tasks` says its
    /// revision (a 2025-11-25 session's tasks, or a 2026-07-28 request's extension).
    pub fn stdio(sink: &'a Sink, asker: Option<&'a Arc<dyn Asker>>, tasks: Tasking<'a>) -> Self {
        Client {
            sink: Some(sink),
            here: true,
            asker,
            tasks: Some(tasks),
            revision: tasks.revision(),
            ..Client::of(Scope::All)
        }
    }

    /// A message of 2025-11-25 HTTP session `id`, answered by async tasks: its calls ask on
    /// their POST's stream (`asker`), its tasks on the session's GET stream (`task_asker`).
    pub fn http_session(
        scope: Scope<'a>,
        id: &'a str,
        sink: Option<&'a Sink>,
        asker: Option<&'a Arc<dyn Asker>>,
        task_asker: Option<&'a Arc<dyn Asker>>,
    ) -> Self {
        Client {
            id,
            sink,
            asker,
            task_asker,
            tasks: Some(Tasking::Session),
            ..Client::of(scope)
        }
    }

    /// A stateless 2026-07-28 HTTP request, named `id` apart for cancellation, asking in
    /// rounds (`asker`), with the tasks extension as its `_meta` declared it.
    pub fn http_request(
        scope: Scope<'a>,
        id: &'a str,
        sink: &'a Sink,
        asker: Option<&'a Arc<dyn Asker>>,
        tasks: Tasking<'a>,
    ) -> Self {
        Client {
            id,
            sink: Some(sink),
            asker,
            tasks: Some(tasks),
            revision: tasks.revision(),
            ..Client::of(scope)
        }
    }

    /// A hook event's chain ([`hooks::HOOK_SCOPE`]): a CLI that reuses a withdrawn event's id
    /// gets the newer event cancelled by it, so an id in flight is taken, never refused.
    pub(crate) fn hook() -> Self {
        Client {
            reuses_ids: true,
            ..Client::of(Scope::Server(hooks::HOOK_SCOPE))
        }
    }

    /// The control of one of its requests (`label`: the JSON-RPC id), reporting progress to
    /// `report` and asking this client, when it can be asked.
    pub(crate) fn control(
        &self,
        label: &str,
        report: Option<Arc<dyn crate::plugin::Report>>,
    ) -> Arc<CallControl> {
        let control = Arc::new(CallControl::new(label, report));
        if let Some(asker) = self.asker {
            control.set_asker(asker.clone());
        }
        control
    }
}

/// What became of one incoming message.
pub enum Dispatch {
    /// Answer with this reply (rendered in the client's revision by its front end).
    Reply(Reply),
    /// A notification was handled; JSON-RPC has nothing to answer (the control loop still
    /// acknowledges it, see `model::NOTIFICATION_ACK`).
    Handled,
    /// A request for a plugin: start it ([`Request::start`]) with where its answer goes.
    Request(Request),
    /// An answer that comes later, to the request of this id (`tasks/result` waits for its
    /// task to end).
    Later(Box<RawValue>, tasks::Later),
}

impl Dispatch {
    /// Answers through `respond`: at once, or by starting the request ([`Request::start`]),
    /// which returns the run for the caller's thread if it may run there (`here`).
    pub fn start(self, respond: Box<dyn Respond>, here: bool) -> Option<HereRun> {
        match self {
            Dispatch::Reply(reply) => respond.respond(Answer::Reply(reply)),
            Dispatch::Handled => respond.respond(Answer::Notified),
            Dispatch::Request(request) => return request.start(respond, here),
            Dispatch::Later(id, later) => match tokio::runtime::Handle::try_current() {
                Ok(rt) => {
                    rt.spawn(async move {
                        let outcome = later.await;
                        let lists = false;
                        respond.respond(Answer::Outcome {
                            id: &id,
                            outcome,
                            lists,
                        });
                    });
                }
                Err(_) => respond.respond(Answer::Outcome {
                    id: &id,
                    outcome: Err(CallError::Rpc(crate::model::RequestError::internal(
                        "no runtime to wait on",
                    ))),
                    lists: false,
                }),
            },
        }
        None
    }

    /// Starts it with its answer as a 2025-11-25 JSON-RPC reply, runs it on this thread if
    /// it may (`here`), and waits for the answer: for callers with no transport of their own
    /// (tests, benchmarks).
    pub async fn reply(self, here: bool) -> String {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let respond = move |answer: Answer<'_>| {
            let _ = tx.send(answer.rpc(Revision::Nov2025).unwrap_or_default());
        };
        if let Some(mut run) = self.start(Box::new(respond), here) {
            run.run();
        }
        rx.await.expect("a request always answers")
    }
}

/// Call limits: timeouts (a default and per-plugin overrides), the result size, and how many
/// calls of one plugin run at once.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    pub default_timeout: Duration,
    pub plugin_timeouts: HashMap<String, Duration>,
    /// Largest serialized `CallToolResult`, in bytes.
    pub max_result_bytes: usize,
    /// Calls of one plugin running at once, and waiting beyond those (more are refused).
    pub executor: ExecutorConfig,
    /// The MCP tasks kept over every client.
    pub tasks: TaskLimits,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            default_timeout: DEFAULT_TIMEOUT,
            plugin_timeouts: HashMap::new(),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            executor: ExecutorConfig::default(),
            tasks: TaskLimits::default(),
        }
    }
}

/// Routes MCP messages to plugins of a [`Registry`].
pub struct Router {
    registry: Arc<Registry>,
    config: RouterConfig,
    /// The threads tools run on.
    executor: Executor,
    /// The requests in flight, each with its one cancellation handle.
    requests: Requests,
    /// The URIs each client subscribed to, by [`Scope::client_key`].
    subscriptions: subscriptions::Subscriptions,
    /// The log level each client set with `logging/setLevel`, by [`Scope::client_key`]: its calls'
    /// plugin log records at or above it are sent to it.
    log_levels: Mutex<HashMap<String, LogLevel>>,
    /// The questions calls put to their clients, waiting for the answers.
    asks: Arc<Asks>,
    /// The calls running (or run) as MCP tasks.
    tasks: Tasks,
    /// Numbers the hook and policy runs that have no request id of their own.
    hook_runs: std::sync::atomic::AtomicU64,
}

impl Router {
    /// A router over `registry`.
    pub fn new(registry: Arc<Registry>, config: RouterConfig) -> Arc<Self> {
        Arc::new(Router {
            registry,
            executor: Executor::new(config.executor.clone()),
            tasks: Tasks::new(config.tasks),
            config,
            requests: Requests::default(),
            subscriptions: Default::default(),
            log_levels: Mutex::new(HashMap::new()),
            asks: Arc::default(),
            hook_runs: Default::default(),
        })
    }

    /// A fresh number for a hook or policy run without a request id of its own.
    fn next_hook_run(&self) -> u64 {
        self.hook_runs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// The questions in flight to clients (a front end that can ask makes its
    /// [`StreamAsker`] over them).
    pub fn asks(&self) -> &Arc<Asks> {
        &self.asks
    }

    /// The key of client `id` of `scope` among the questions in flight (what its
    /// [`StreamAsker`] is made with).
    pub fn ask_key(scope: Scope<'_>, id: &str) -> String {
        scope.client_key(id)
    }

    /// The plugins served.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The call timeout of plugin `name`: `--plugin-timeout` on the command line, else the
    /// configuration file's `timeout` (as it is now: the file may change while we run), else
    /// the default.
    pub fn timeout_for(&self, name: &str) -> Duration {
        self.config
            .plugin_timeouts
            .get(name)
            .copied()
            .or_else(|| self.registry.config().settings.timeout_for(name))
            .unwrap_or(self.config.default_timeout)
    }

    /// What plugin `name`'s calls may ask their client, as the configuration file says when
    /// they ask (see [`asks::gate`]).
    pub fn ask_gate(&self, name: &str) -> crate::plugin::AskGate {
        let settings = self.registry.config().settings.clone();
        let name = name.to_string();
        Arc::new(move |asks: &str| {
            let rights = settings
                .current()
                .plugin(&name)
                .map(crate::config::PluginSettings::ask_rights)
                .unwrap_or_default();
            asks::gate(&name, rights, asks)
        })
    }

    /// At the end of a session: cancels every call, gives them `grace` to stop, then warns
    /// about each one still running in its plugin, which the host abandons (a stuck tool
    /// cannot be stopped in process; it must not keep the host alive).
    pub async fn wind_down(&self, grace: Duration) {
        self.requests.close();
        self.tasks.end_all();
        let deadline = tokio::time::Instant::now() + grace;
        while !self.executor.is_idle() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.executor.warn_abandoned();
    }

    /// Handles one message from `client`, and answers it through `respond`: at once, or when
    /// the request it makes is answered. Never blocks: a request the calling thread is to run
    /// (only when `client.here`) comes back as a [`HereRun`]. Every front end calls this.
    pub fn handle(
        self: &Arc<Self>,
        client: &Client<'_>,
        msg: &ClientMessage<'_>,
        respond: Box<dyn Respond>,
    ) -> Option<HereRun> {
        self.decide(client, msg).start(respond, client.here)
    }

    /// What a message of the one client of `scope` means, without starting anything (for
    /// tests and benchmarks; front ends [`handle`](Router::handle)).
    pub fn dispatch(
        self: &Arc<Self>,
        scope: Scope<'_>,
        msg: &JsonRpc<'_>,
        sink: &Sink,
    ) -> Dispatch {
        let mut client = Client::of(scope);
        client.sink = Some(sink);
        self.decide(&client, &ClientMessage::read(msg))
    }

    /// What a message means: a reply, nothing, or a request to start.
    fn decide(self: &Arc<Self>, client: &Client<'_>, msg: &ClientMessage<'_>) -> Dispatch {
        let scope = client.scope;
        // A response, well formed or not, is never answered.
        if self
            .asks
            .take_response(&Self::ask_key(scope, client.id), msg)
        {
            return Dispatch::Handled;
        }
        if let Some(refused) = malformed(msg) {
            return refused;
        }
        let (id, method, request) = match msg {
            ClientMessage::Ignored
            | ClientMessage::NoMethod(_)
            | ClientMessage::Response { .. }
            | ClientMessage::BadResponse(_) => return Dispatch::Handled,
            ClientMessage::Request {
                id,
                method,
                request,
            } => (*id, method.as_ref(), request),
            ClientMessage::Notification(n) => return self.notified(client, n),
        };
        if let Some(reply) = Self::removed(client, id, method) {
            return Dispatch::Reply(reply);
        }
        let request = match request {
            Ok(ClientRequest::CallTool(params)) => return self.tool_call(client, id, params),
            Ok(ClientRequest::Tasks(params)) => {
                return self.task_request(client, id, method, *params)
            }
            Ok(r) => r,
            Err(e) if e.family == Family::Other => {
                let message = e.message.clone();
                return Dispatch::Reply(Reply::error(Some(id), ErrorCode::INVALID_PARAMS, message));
            }
            Err(e) => return self.invalid_offer(scope, id, method, e),
        };
        self.answer(client, id, method, request)
    }

    /// A well-formed request other than `tools/call` and the tasks methods: the revision's
    /// rules first, then the plugin that answers it and what it offers for the method's family
    /// (a family it does not offer is not found).
    fn answer(
        self: &Arc<Self>,
        client: &Client<'_>,
        id: &RawValue,
        method: &str,
        request: &ClientRequest<'_>,
    ) -> Dispatch {
        let scope = client.scope;
        if let Some(reply) = self.revision_rules(client, id, request) {
            return Dispatch::Reply(reply);
        }
        let plugin = match self.plugin_of(scope, Some(id)) {
            Ok(plugin) => plugin,
            Err(reply) => return reply,
        };
        let offers = match request.family() {
            Family::Other => None,
            family => match self.offered(scope, family) {
                Some(offers) => Some(offers),
                None => return Dispatch::Reply(Reply::method_not_found(id, method)),
            },
        };
        let reply = match request {
            ClientRequest::Initialize(p) => self.initialize(
                plugin.as_deref().map(|v| v.plugin().as_ref()),
                id,
                p,
                client.tasks.is_some(),
            ),
            ClientRequest::Ping => Reply::result(id, &serde_json::json!({})),
            ClientRequest::ListTools(cursor) => self.tools_list(plugin.as_deref(), id, cursor),
            ClientRequest::SetLevel(level) => self.set_log_level(scope, client.id, id, *level),
            ClientRequest::Complete => complete(id),
            ClientRequest::ListResources(cursor) => {
                return self.resources_list(client, id, cursor, offers.expect("offered"))
            }
            ClientRequest::ListResourceTemplates => {
                let list = offers.expect("offered").templates_list().to_string();
                Reply::list(id, list)
            }
            ClientRequest::ReadResource(uri) => {
                return self.resource_read(client, id, uri, &offers.expect("offered"))
            }
            ClientRequest::Subscribe(uri) => {
                self.subscription(client, id, uri, true, &offers.expect("offered"))
            }
            ClientRequest::Unsubscribe(uri) => {
                self.subscription(client, id, uri, false, &offers.expect("offered"))
            }
            ClientRequest::ListPrompts(cursor) => {
                self.prompts_list(id, cursor, &offers.expect("offered"))
            }
            ClientRequest::GetPrompt(get) => {
                return self.prompt_get(client, id, get, &offers.expect("offered"))
            }
            ClientRequest::CallTool(_) | ClientRequest::Tasks(_) => unreachable!("routed above"),
            ClientRequest::Discover | ClientRequest::Listen(_) | ClientRequest::Unknown => {
                Reply::method_not_found(id, method)
            }
        };
        Dispatch::Reply(reply)
    }

    /// A notification: `notifications/cancelled` cancels; any other needs no action.
    fn notified(&self, client: &Client<'_>, n: &ClientNotification<'_>) -> Dispatch {
        if let Err(reply) = self.plugin_of(client.scope, None) {
            return reply;
        }
        if let ClientNotification::Cancelled(p) = n {
            self.cancel(client.scope, client.id, p.as_ref());
        }
        Dispatch::Handled
    }

    /// The plugin of `scope` (`None` for the all-plugins server), or the reply that it is not
    /// loaded.
    fn plugin_of(
        &self,
        scope: Scope<'_>,
        id: Option<&RawValue>,
    ) -> Result<Option<Arc<Version>>, Dispatch> {
        let Scope::Server(name) = scope else {
            return Ok(None);
        };
        match self.registry.version(name) {
            Some(p) => Ok(Some(p)),
            None => Err(Dispatch::Reply(Reply::error(
                id,
                ErrorCode::INVALID_PARAMS,
                CallError::UnknownServer(name.to_string()).to_string(),
            ))),
        }
    }

    /// Calls `tool` of plugin `plugin` outside any protocol (`toolhost call`): the same
    /// request path as a `tools/call` (argument check, timeout, size limit, messages), on the
    /// executor. `control` is the caller's, to cancel it.
    pub async fn call_tool(
        self: &Arc<Self>,
        plugin: &str,
        tool: &str,
        args: Option<&str>,
        control: Arc<CallControl>,
    ) -> Result<CallOutput, CallError> {
        let method = ToolCall::new(tool, args.map(str::to_string), None);
        self.run(plugin, Box::new(method), control)
            .await
            .map(CallOutput::from_json)
    }
}

/// Whether a request id is a string or a number (what a reply may echo). A `null` id never
/// gets here: it parses as no id.
pub fn valid_id(id: &RawValue) -> bool {
    id.get()
        .starts_with(|c: char| c == '"' || c == '-' || c.is_ascii_digit())
}

/// The refusal of a message no route can take: an id that is neither a string nor a number,
/// or a request without a method.
fn malformed(msg: &ClientMessage<'_>) -> Option<Dispatch> {
    if msg.id().is_some_and(|id| !valid_id(id)) {
        // Echoing it would hand the client back a value it cannot match (JSON-RPC 2.0 §4:
        // a string, a number or null; MCP: a string or an integer).
        return Some(Dispatch::Reply(Reply::error(
            None,
            ErrorCode::INVALID_REQUEST,
            "invalid request: the id must be a string or a number",
        )));
    }
    match msg {
        ClientMessage::NoMethod(id) => Some(Dispatch::Reply(Reply::error(
            Some(id),
            ErrorCode::INVALID_REQUEST,
            "invalid request: no method",
        ))),
        _ => None,
    }
}
