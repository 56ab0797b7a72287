//! The MCP router: decides what each JSON-RPC message addressed to a plugin server does.
//!
//! It is transport-agnostic: the control loop (`service`) hands it `mcp_message` payloads for
//! one sdk server ([`Scope::Server`]), `toolhost serve` hands it plain JSON-RPC for all plugins
//! at once ([`Scope::All`], tools named `<plugin>__<tool>`), and `toolhost call` calls one
//! tool through [`Router::call_tool`]. Quick requests are answered at once; a request a plugin
//! answers (`tools/call`) becomes a [`Request`], which the caller starts with where its answer
//! goes; its notifications go to the [`Sink`] the caller handed over.
//!
//! A request's path, in the order the code runs, is in the doc of [`Request`]'s module
//! (`handler/request.rs`).

#[cfg(test)]
pub(crate) mod fake;
mod notices;
mod offered;
mod offers;
mod plugin_request;
mod progress;
mod prompts;
mod request;
mod resources;
mod subscriptions;
mod tool_call;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use serde_json::{value::RawValue, Value};

// What the registry's snapshot holds, under the names the router has always used.
pub use crate::catalog::{
    flat_name, FlatCatalog, FlatCollision, OfferCollision, Offers, Resolved, ToolCheck, Tools,
    FLAT_SEPARATOR,
};
pub use notices::{NoticeFeed, NOTICE_BATCH};
pub use offers::check_prompt_arguments;
pub use plugin_request::PluginRequest;
pub use progress::{Discard, Notify, Sink};
pub use prompts::check as check_prompt;
pub use request::{Answer, Failure, HereRun, Method, Outcome, Request, Respond};
pub use resources::PAGE_SIZE;
pub use tool_call::{CallError, CallOutput};

use offered::{complete, declare};
use progress::Progress;
use tool_call::{show, show_bytes, ToolCall};

pub use crate::relay::HERE_BUDGET;
use crate::{
    executor::{Executor, ExecutorConfig},
    model::{
        error_code, initialize_result, negotiate_version, rpc_error, rpc_result, rpc_result_raw,
        tool_json, CancelledParams, InitializeParams, JsonRpc, LogLevel, ServerInfo,
    },
    plugin::{CallControl, LoadedPlugin, Report},
    registry::{Registry, Version},
    sync::lock,
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

impl Scope<'_> {
    fn key(&self) -> &str {
        match self {
            Scope::Server(s) => s,
            // Plugin names are never empty, so this cannot collide.
            Scope::All => "",
        }
    }
}

/// What became of one incoming message.
pub enum Dispatch {
    /// Answer with this serialized JSON-RPC reply.
    Reply(String),
    /// A notification was handled; JSON-RPC has nothing to answer (the control loop still
    /// acknowledges it, see `model::NOTIFICATION_ACK`).
    Handled,
    /// A request for a plugin: start it ([`Request::start`]) with where its answer goes.
    Request(Request),
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
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            default_timeout: DEFAULT_TIMEOUT,
            plugin_timeouts: HashMap::new(),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            executor: ExecutorConfig::default(),
        }
    }
}

/// Routes MCP messages to plugins of a [`Registry`].
pub struct Router {
    registry: Arc<Registry>,
    config: RouterConfig,
    /// The threads tools run on.
    executor: Executor,
    /// Requests in flight by [`cancel_key`], for `notifications/cancelled`.
    calls: Mutex<HashMap<String, Arc<CallControl>>>,
    /// Told when `calls` becomes empty.
    idle: tokio::sync::Notify,
    /// The session winds down: a request registered from now on is cancelled at once.
    closing: AtomicBool,
    /// The URIs clients subscribed to.
    subscriptions: subscriptions::Subscriptions,
    /// The log level each client set with `logging/setLevel`, by [`client_key`]: its calls'
    /// plugin log records at or above it are sent to it.
    log_levels: Mutex<HashMap<String, LogLevel>>,
}

impl Router {
    /// A router over `registry`.
    pub fn new(registry: Arc<Registry>, config: RouterConfig) -> Arc<Self> {
        Arc::new(Router {
            registry,
            executor: Executor::new(config.executor.clone()),
            config,
            calls: Mutex::new(HashMap::new()),
            idle: tokio::sync::Notify::new(),
            closing: AtomicBool::new(false),
            subscriptions: Default::default(),
            log_levels: Mutex::new(HashMap::new()),
        })
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

    /// At the end of a session: cancels every call, gives them `grace` to stop, then warns
    /// about each one still running in its plugin, which the host abandons (a stuck tool
    /// cannot be stopped in process; it must not keep the host alive).
    pub async fn wind_down(&self, grace: Duration) {
        // Set first: a request registered from now on is cancelled at once.
        self.closing.store(true, Ordering::Release);
        self.cancel_all();
        let deadline = tokio::time::Instant::now() + grace;
        while !self.executor.is_idle() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.executor.warn_abandoned();
    }

    /// Handles one message. Never blocks: a request for a plugin comes back as a [`Request`]
    /// for the caller to start. The notifications of a request (its progress) go to `sink`.
    pub fn dispatch(
        self: &Arc<Self>,
        scope: Scope<'_>,
        msg: &JsonRpc<'_>,
        sink: &Sink,
    ) -> Dispatch {
        self.dispatch_from(scope, "", msg, sink)
    }

    /// [`Router::dispatch`] for one of several clients sharing the router (the sessions of
    /// `serve --http`): `client` keeps its request ids apart from every other client's, so
    /// its `notifications/cancelled` reaches only its own calls. `""` is the one client of a
    /// stdio session.
    pub fn dispatch_from(
        self: &Arc<Self>,
        scope: Scope<'_>,
        client: &str,
        msg: &JsonRpc<'_>,
        sink: &Sink,
    ) -> Dispatch {
        let id = msg.id;
        if id.is_some_and(|id| !valid_id(id)) {
            // Echoing it would hand the client back a value it cannot match (JSON-RPC 2.0 §4:
            // a string, a number or null; MCP: a string or an integer).
            return Dispatch::Reply(rpc_error(
                None,
                error_code::INVALID_REQUEST,
                "invalid request: the id must be a string or a number",
            ));
        }
        let Some(method) = msg.method.as_deref() else {
            return match id {
                Some(_) => Dispatch::Reply(rpc_error(
                    id,
                    error_code::INVALID_REQUEST,
                    "invalid request: no method",
                )),
                None => Dispatch::Handled,
            };
        };
        if let (Some(id), "tools/call") = (id, method) {
            return self.tool_call(scope, client, id, msg, sink);
        }
        let plugin = match scope {
            Scope::Server(name) => match self.registry.version(name) {
                Some(v) => Some(v),
                None => {
                    return Dispatch::Reply(rpc_error(
                        id,
                        error_code::INVALID_PARAMS,
                        &CallError::UnknownServer(name.to_string()).to_string(),
                    ))
                }
            },
            Scope::All => None,
        };
        if id.is_none() {
            if method == "notifications/cancelled" {
                self.cancel(scope, client, msg.params);
            }
            // `notifications/initialized` and any other notification need no action.
            return Dispatch::Handled;
        }
        let offered = id.and_then(|id| self.dispatch_offers(scope, client, id, method, msg.params));
        if let Some(d) = offered {
            return d;
        }
        let reply = match method {
            "initialize" => self.initialize(
                plugin.as_deref().map(|v| v.plugin().as_ref()),
                id,
                msg.params,
            ),
            "ping" => rpc_result(id, &serde_json::json!({})),
            "tools/list" => self.tools_list(plugin.as_deref(), id, msg.params),
            "logging/setLevel" => self.set_log_level(scope, client, id, msg.params),
            "completion/complete" => complete(id, msg.params),
            other => rpc_error(
                id,
                error_code::METHOD_NOT_FOUND,
                &format!("method not found: {other}"),
            ),
        };
        Dispatch::Reply(reply)
    }

    /// A request of `method` to `plugin`, as if it came with JSON-RPC id `id` to `scope`:
    /// registered for `notifications/cancelled` there. How a method beyond `tools/call` is
    /// routed to a plugin: it then gets the lease, the placement, the timeout, the size limit
    /// and the one answer of every request.
    pub fn request(
        self: &Arc<Self>,
        scope: Scope<'_>,
        plugin: &str,
        id: &RawValue,
        method: Box<dyn Method>,
    ) -> Request {
        self.request_from(scope, "", plugin, id, method)
    }

    /// [`Router::request`] from `client` (see [`Router::dispatch_from`]): its id is kept apart
    /// from other clients' ids.
    pub fn request_from(
        self: &Arc<Self>,
        scope: Scope<'_>,
        client: &str,
        plugin: &str,
        id: &RawValue,
        method: Box<dyn Method>,
    ) -> Request {
        let control = Arc::new(CallControl::new(id.get(), None));
        Request::new(
            self.clone(),
            plugin.to_string(),
            id.to_owned(),
            Some(cancel_key(scope, client, id)),
            control,
            None,
            method,
        )
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
        let id = RawValue::from_string("0".to_string()).expect("valid JSON");
        let request = Request::new(
            self.clone(),
            plugin.to_string(),
            id,
            None,
            control,
            None,
            Box::new(method),
        );
        let (tx, rx) = tokio::sync::oneshot::channel();
        let respond = move |answer: Answer<'_>| {
            let _ = tx.send(answer.into_outcome());
        };
        request.start(Box::new(respond), false);
        let outcome = rx.await.expect("a request always answers");
        outcome.map(CallOutput::from_json)
    }

    fn initialize(
        &self,
        plugin: Option<&LoadedPlugin>,
        id: Option<&RawValue>,
        params: Option<&RawValue>,
    ) -> String {
        let params: InitializeParams = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        let version = negotiate_version(params.protocol_version.as_deref());
        rpc_result(id, &self.initialize_result(plugin, version))
    }

    /// The `initialize` result of `plugin`'s server, or of the all-plugins server with the
    /// resources and prompts its plugins offer now. Whatever else states the server's
    /// capabilities (`server/discover`, the list changes a stream hears of) takes them from
    /// here, so a client is offered the same by each.
    pub fn initialize_result(&self, plugin: Option<&LoadedPlugin>, version: &str) -> Value {
        let mut result = server_initialize_result(plugin, version);
        if plugin.is_none() {
            if let Some(o) = self.offers(Scope::All) {
                declare(&mut result, o.has_resources(), o.has_prompts());
            }
        }
        result
    }

    /// `logging/setLevel`: from now on the client's calls send it their plugin's log records
    /// of `level` and above.
    fn set_log_level(
        &self,
        scope: Scope<'_>,
        client: &str,
        id: Option<&RawValue>,
        params: Option<&RawValue>,
    ) -> String {
        #[derive(serde::Deserialize)]
        struct SetLevel<'a> {
            #[serde(borrow)]
            level: std::borrow::Cow<'a, str>,
        }
        let level = params
            .and_then(|p| serde_json::from_str::<SetLevel>(p.get()).ok())
            .and_then(|p| LogLevel::parse(&p.level));
        let Some(level) = level else {
            return rpc_error(
                id,
                error_code::INVALID_PARAMS,
                "invalid params: logging/setLevel needs a level (debug, info, notice, warning, error, critical, alert or emergency)",
            );
        };
        lock(&self.log_levels).insert(client_key(scope, client), level);
        rpc_result(id, &serde_json::json!({}))
    }

    /// The log level `client` of `scope` set with `logging/setLevel`, if it did.
    pub fn log_level(&self, scope: Scope<'_>, client: &str) -> Option<LogLevel> {
        let levels = lock(&self.log_levels);
        // Asked on every call: no key is built until some client set a level.
        if levels.is_empty() {
            return None;
        }
        levels.get(&client_key(scope, client)).copied()
    }

    /// Forgets what `client` of `scope` set (its session ended).
    pub fn forget_client(&self, scope: Scope<'_>, client: &str) {
        lock(&self.log_levels).remove(&client_key(scope, client));
    }

    /// `tools/list`, [`TOOLS_PAGE_SIZE`] a page (the cursors of `resources/list`).
    fn tools_list(
        &self,
        plugin: Option<&Version>,
        id: Option<&RawValue>,
        params: Option<&RawValue>,
    ) -> String {
        let (all, whole): (std::borrow::Cow<'_, [Value]>, &str);
        let flat;
        match plugin {
            Some(p) => {
                whole = p.tools().tools_list();
                // One page in practice (a plugin has at most a page of tools): parsed only
                // for a page past the first.
                let len = p.manifest().tools.len();
                match resources::page_of(len, params, TOOLS_PAGE_SIZE) {
                    Err(e) => return rpc_error(id, error_code::INVALID_PARAMS, &e),
                    Ok((range, None)) if range.start == 0 => return rpc_result_raw(id, whole),
                    Ok(_) => {
                        let parsed: Value = serde_json::from_str(whole).expect("our own JSON");
                        all = std::borrow::Cow::Owned(
                            parsed["tools"].as_array().cloned().unwrap_or_default(),
                        );
                    }
                }
            }
            None => {
                flat = self.flat_catalog();
                whole = flat.tools_list();
                all = std::borrow::Cow::Borrowed(flat.tools());
            }
        }
        match resources::page_of(all.len(), params, TOOLS_PAGE_SIZE) {
            Err(e) => rpc_error(id, error_code::INVALID_PARAMS, &e),
            Ok((range, None)) if range.start == 0 => rpc_result_raw(id, whole),
            Ok((range, next)) => {
                rpc_result_raw(id, &resources::page_result("tools", &all[range], next))
            }
        }
    }

    /// The `tools/list` result of one plugin (for the CLI's server manifests).
    pub fn tools_list_result(&self, plugin: &LoadedPlugin) -> Value {
        let tools: Vec<Value> = plugin.manifest().tools.iter().map(tool_json).collect();
        serde_json::json!({ "tools": tools })
    }

    /// The catalog of [`Scope::All`] in the registry's snapshot of the versions serving now.
    /// Tools left out of it (flat name collisions) are reported once per snapshot.
    pub fn flat_catalog(&self) -> Arc<FlatCatalog> {
        self.registry.serving().flat().clone()
    }

    /// Cancels the request registered as `id` of `scope` (one made by [`Router::request`]),
    /// as `notifications/cancelled` would; false when none is in flight.
    pub fn cancel_request(&self, scope: Scope<'_>, id: &RawValue) -> bool {
        match lock(&self.calls).get(&cancel_key(scope, "", id)) {
            Some(control) => {
                control.cancel();
                true
            }
            None => false,
        }
    }

    fn cancel(&self, scope: Scope<'_>, client: &str, params: Option<&RawValue>) {
        let Some(p) = params.and_then(|p| serde_json::from_str::<CancelledParams>(p.get()).ok())
        else {
            tracing::warn!("notifications/cancelled without a valid requestId; ignored");
            return;
        };
        let key = cancel_key(scope, client, p.request_id);
        match lock(&self.calls).get(&key) {
            Some(control) => {
                tracing::debug!(key = %key, reason = ?p.reason, "request cancelled");
                control.cancel();
            }
            None => tracing::debug!(key = %key, "cancel for a request not in flight"),
        }
    }

    /// Cancels every request in flight (the client went away).
    pub fn cancel_all(&self) {
        for c in lock(&self.calls).values() {
            c.cancel();
        }
    }

    /// Whether request `id` of `client` of `scope` is in flight (registered, not answered):
    /// a transport refuses another request with its id, which would take its place for
    /// `notifications/cancelled`.
    pub fn in_flight(&self, scope: Scope<'_>, client: &str, id: &RawValue) -> bool {
        lock(&self.calls).contains_key(&cancel_key(scope, client, id))
    }

    /// Number of requests in flight (registered for cancellation, not answered yet).
    pub fn calls_in_flight(&self) -> usize {
        lock(&self.calls).len()
    }

    /// Waits until no request is in flight.
    pub async fn answered_all(&self) {
        loop {
            let idle = self.idle.notified();
            if self.calls_in_flight() == 0 {
                return;
            }
            idle.await;
        }
    }

    /// Registers a request's `control` under `key` for `notifications/cancelled`.
    fn register(&self, key: &str, control: &Arc<CallControl>) {
        let reused = lock(&self.calls)
            .insert(key.to_string(), control.clone())
            .is_some();
        if reused {
            // Ids restart at 0 on a re-handshake; the newer request owns the key from now on.
            tracing::debug!(key, "request id reused while in flight");
        }
        if self.closing.load(Ordering::Acquire) {
            control.cancel();
        }
    }

    /// Unregisters the request of `control` (unless a newer one took its key).
    fn unregister(&self, key: &str, control: &Arc<CallControl>) {
        let mut calls = lock(&self.calls);
        if calls.get(key).is_some_and(|c| Arc::ptr_eq(c, control)) {
            calls.remove(key);
            if calls.is_empty() {
                self.idle.notify_waiters();
            }
        }
    }

    /// A `tools/call`: its plugin resolved (from the flat name in [`Scope::All`]), made a
    /// [`Request`].
    fn tool_call(
        self: &Arc<Self>,
        scope: Scope<'_>,
        client: &str,
        id: &RawValue,
        msg: &JsonRpc<'_>,
        sink: &Sink,
    ) -> Dispatch {
        let invalid = |message: String| {
            Dispatch::Reply(rpc_error(Some(id), error_code::INVALID_PARAMS, &message))
        };
        // Read with the line when it came as the CLI writes it.
        let params = match msg.call_params() {
            Some(Ok(p)) => p,
            Some(Err(e)) => return invalid(format!("invalid tools/call params: {e}")),
            None => return invalid("tools/call needs params".to_string()),
        };
        let args = params.arguments.map(|a| a.get().to_string());
        let (server, plugin, method) = match scope {
            Scope::Server(s) => (
                Some(s.to_string()),
                s.to_string(),
                ToolCall::new(&params.name, args, None),
            ),
            Scope::All => {
                let flat = params.name.as_ref();
                let resolved = self
                    .flat_catalog()
                    .resolve(flat)
                    .map(|(p, t)| (p.to_string(), t.to_string()));
                let Some((plugin, tool)) = resolved else {
                    return invalid(CallError::UnknownFlatTool(flat.to_string()).to_string());
                };
                let method = ToolCall::new(&tool, args, Some(flat.to_string()));
                (None, plugin, method)
            }
        };
        let meta = params.meta.as_ref();
        // 2026-07-28 asks per request; a 2025-11-25 client once for its session.
        let log_min = match meta.and_then(|m| m.log_level.as_deref()) {
            Some(level) => LogLevel::parse(level),
            None => self.log_level(scope, client),
        };
        let token = meta.and_then(|m| m.progress_token);
        let progress = Progress::of_call(sink, server, token, log_min);
        let report = progress.clone().map(|p| p as Arc<dyn Report>);
        let control = Arc::new(CallControl::new(id.get(), report));
        Dispatch::Request(Request::new(
            self.clone(),
            plugin,
            id.to_owned(),
            Some(cancel_key(scope, client, id)),
            control,
            progress,
            Box::new(method),
        ))
    }
}

/// The key of `client` of `scope` among the log levels set.
fn client_key(scope: Scope<'_>, client: &str) -> String {
    format!("{client}\n{}", scope.key())
}

/// The key of request `id` of `scope` from `client` among the requests in flight.
fn cancel_key(scope: Scope<'_>, client: &str, id: &RawValue) -> String {
    // Ids equal in JSON are one request's, however spelled.
    let (server, id) = (scope.key(), crate::model::id_key(id));
    let mut key = String::with_capacity(client.len() + server.len() + 2 + id.len());
    if !client.is_empty() {
        // A client name never holds a newline, so keys of two clients cannot meet.
        key.push_str(client);
        key.push('\n');
    }
    key.push_str(server);
    key.push('\n');
    key.push_str(&id);
    key
}

/// The `initialize` result of a plugin's server, or of the all-plugins server (without the
/// capabilities of its plugins' resources and prompts: [`Router::initialize_result`] adds
/// them).
pub fn server_initialize_result(plugin: Option<&LoadedPlugin>, version: &str) -> Value {
    let mut result = match plugin {
        Some(p) => {
            let m = p.manifest();
            let mut v = initialize_result(
                version,
                ServerInfo {
                    name: &m.name,
                    version: &m.version,
                },
                Some(&m.description),
            );
            let e = &m.extras;
            let resources =
                !(e.resources.is_empty() && e.resource_templates.is_empty()) || e.lists_resources;
            declare(&mut v, resources, !e.prompts.is_empty());
            v
        }
        None => initialize_result(
            version,
            ServerInfo {
                name: ALL_SERVER_NAME,
                version: env!("CARGO_PKG_VERSION"),
            },
            None,
        ),
    };
    // Every server takes `logging/setLevel` and `completion/complete`.
    let caps = &mut result["capabilities"];
    caps["logging"] = serde_json::json!({});
    caps["completions"] = serde_json::json!({});
    result
}

/// Whether a request id is a string or a number (what a reply may echo). A `null` id never
/// gets here: it parses as no id.
pub(crate) fn valid_id(id: &RawValue) -> bool {
    id.get()
        .starts_with(|c: char| c == '"' || c == '-' || c.is_ascii_digit())
}
