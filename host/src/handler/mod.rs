//! The MCP router: decides what each JSON-RPC message addressed to a plugin server does.
//!
//! It is transport-agnostic: the control loop (`service`) hands it `mcp_message` payloads for
//! one sdk server ([`Scope::Server`]), `toolhost serve` hands it plain JSON-RPC for all plugins
//! at once ([`Scope::All`], tools named `<plugin>__<tool>`), and `toolhost call` calls one
//! tool through [`Router::call_tool`]. Quick requests are answered at once; `tools/call` comes
//! back as a future the caller spawns, so calls run concurrently; its notifications go to the
//! [`Sink`] the caller handed over.
//!
//! The path of a `tools/call`: [`Router::dispatch`] → `start_call` (parse, register for
//! cancellation) → one registry lease → `call::run` (argument check, size limit) →
//! `call::invoke`, the one place a plugin is called.

mod call;
mod catalog;
mod progress;

use std::{
    collections::HashMap,
    future::Future,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use call::{Call, Checked};
pub use call::{CallError, CallOutput};
pub use catalog::{Compiled, FlatCatalog, FlatCollision, ToolCheck};
pub use progress::{Discard, Notify, Sink};
use serde_json::{value::RawValue, Value};

use progress::Progress;

use crate::{
    executor::{Executor, ExecutorConfig, HereId, HereTicket},
    model::{
        control_call_reply, control_success_raw, error_code, initialize_result, negotiate_version,
        rpc_call_reply, rpc_error, rpc_result, CallResult, CancelledParams, InitializeParams,
        JsonRpc, MeasuredResult, ServerInfo,
    },
    plugin::{CallControl, LoadedPlugin, Report},
    registry::{Lease, Registry, TryLease},
};

/// Separator between plugin and tool names in [`Scope::All`] (`calc__add`).
pub const FLAT_SEPARATOR: &str = "__";

/// Server name reported by [`Scope::All`].
pub const ALL_SERVER_NAME: &str = "toolhost";

// The reading-thread budget belongs to the relay that enforces it; the router decides by it
// which tools run long.
pub use crate::relay::HERE_BUDGET;

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
    /// A tool call: run it here or spawn it (see [`StartedCall`]).
    Call(StartedCall),
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

type CallKey = (String, String);

/// Routes MCP messages to plugins of a [`Registry`].
pub struct Router {
    registry: Arc<Registry>,
    config: RouterConfig,
    /// The threads tools run on.
    executor: Executor,
    /// Calls in flight by (server, JSON-RPC id), for `notifications/cancelled`.
    calls: Mutex<HashMap<CallKey, Arc<CallControl>>>,
    /// The catalog of [`Scope::All`] for the plugin versions it was last built from.
    flat: Mutex<Option<Arc<FlatCatalog>>>,
    /// The session winds down: a call registered for cancellation from now on is cancelled.
    closing: AtomicBool,
}

impl Router {
    /// A router over `registry`.
    pub fn new(registry: Arc<Registry>, config: RouterConfig) -> Arc<Self> {
        Arc::new(Router {
            registry,
            executor: Executor::new(config.executor.clone()),
            config,
            calls: Mutex::new(HashMap::new()),
            flat: Mutex::new(None),
            closing: AtomicBool::new(false),
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
        // Set first: a call run on a reading thread registers itself only when escalated.
        self.closing.store(true, Ordering::Release);
        self.cancel_all();
        let deadline = tokio::time::Instant::now() + grace;
        while !self.executor.is_idle() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.executor.warn_abandoned();
    }

    /// Handles one message. Never blocks: tool calls are returned as futures. The notifications
    /// of a call (its progress) go to `sink`.
    pub fn dispatch(
        self: &Arc<Self>,
        scope: Scope<'_>,
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
            // The call looks its plugin up once, when it leases it.
            return self.start_call(scope, id, msg, sink);
        }
        let plugin = match scope {
            Scope::Server(name) => match self.registry.get(name) {
                Some(p) => Some(p),
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
                self.cancel(scope, msg.params);
            }
            // `notifications/initialized` and any other notification need no action.
            return Dispatch::Handled;
        }
        let reply = match method {
            "initialize" => self.initialize(plugin.as_deref(), id, msg.params),
            "ping" => rpc_result(id, &serde_json::json!({})),
            "tools/list" => self.tools_list(plugin.as_deref(), id),
            other => rpc_error(
                id,
                error_code::METHOD_NOT_FOUND,
                &format!("method not found: {other}"),
            ),
        };
        Dispatch::Reply(reply)
    }

    /// Calls `tool` of plugin `plugin` outside any protocol (`toolhost call`): the same
    /// argument check, timeout, size limit and messages as a `tools/call`.
    pub async fn call_tool(
        &self,
        plugin: &str,
        tool: &str,
        args: Option<&str>,
        control: Arc<CallControl>,
    ) -> Result<CallOutput, CallError> {
        let lease = self.lease(plugin).await?;
        call::run(self, lease, tool, args.map(str::to_string), control)
            .await
            .map(call::output)
    }

    async fn lease(&self, plugin: &str) -> Result<Lease, CallError> {
        self.registry
            .lease(plugin)
            .await
            .ok_or_else(|| CallError::UnknownServer(plugin.to_string()))
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
        rpc_result(id, &server_initialize_result(plugin, version))
    }

    fn tools_list(&self, plugin: Option<&LoadedPlugin>, id: Option<&RawValue>) -> String {
        match plugin {
            Some(p) => splice_result(id, Compiled::of(p).tools_list()),
            None => splice_result(id, self.flat_catalog().tools_list()),
        }
    }

    /// The `tools/list` result of one plugin (for the CLI's server manifests).
    pub fn tools_list_result(&self, plugin: &LoadedPlugin) -> Value {
        serde_json::from_str(Compiled::of(plugin).tools_list()).expect("our own JSON")
    }

    /// The catalog of [`Scope::All`] for the versions serving now, rebuilt when one changed.
    /// Tools left out of it (flat name collisions) are reported once per rebuild.
    pub fn flat_catalog(&self) -> Arc<FlatCatalog> {
        let plugins = self.registry.plugins();
        let mut cached = self.flat.lock().unwrap();
        if let Some(c) = cached.as_ref().filter(|c| c.is_of(&plugins)) {
            return c.clone();
        }
        let catalog = Arc::new(FlatCatalog::build(&plugins));
        for c in catalog.collisions() {
            tracing::warn!("{c}");
        }
        *cached = Some(catalog.clone());
        catalog
    }

    /// Leases the plugin of a [`Scope::All`] tool name, with the tool's own name.
    async fn lease_flat(&self, name: &str) -> Result<(Lease, String), CallError> {
        let unknown = || CallError::UnknownFlatTool(name.to_string());
        let (plugin, tool) = {
            let catalog = self.flat_catalog();
            let (plugin, tool) = catalog.resolve(name).ok_or_else(unknown)?;
            (plugin.to_string(), tool.to_string())
        };
        // A reload between the lookup and the lease is caught by the call's own tool check.
        let lease = self.registry.lease(&plugin).await.ok_or_else(unknown)?;
        Ok((lease, tool))
    }

    fn cancel(&self, scope: Scope<'_>, params: Option<&RawValue>) {
        let Some(p) = params.and_then(|p| serde_json::from_str::<CancelledParams>(p.get()).ok())
        else {
            tracing::warn!("notifications/cancelled without a valid requestId; ignored");
            return;
        };
        let key = (scope.key().to_string(), p.request_id.get().to_string());
        match self.calls.lock().unwrap().get(&key) {
            Some(control) => {
                tracing::debug!(server = %key.0, id = %key.1, reason = ?p.reason, "call cancelled");
                control.cancel();
            }
            None => {
                tracing::debug!(server = %key.0, id = %key.1, "cancel for a call not in flight")
            }
        }
    }

    /// Cancels every call in flight (the client went away).
    pub fn cancel_all(&self) {
        for c in self.calls.lock().unwrap().values() {
            c.cancel();
        }
    }

    /// Number of calls in flight.
    pub fn calls_in_flight(&self) -> usize {
        self.calls.lock().unwrap().len()
    }

    fn start_call(
        self: &Arc<Self>,
        scope: Scope<'_>,
        id: &RawValue,
        msg: &JsonRpc<'_>,
        sink: &Sink,
    ) -> Dispatch {
        // Read with the line when it came as the CLI writes it.
        let params = match msg.call_params() {
            Some(Ok(p)) => p,
            Some(Err(e)) => {
                return Dispatch::Reply(rpc_error(
                    Some(id),
                    error_code::INVALID_PARAMS,
                    &format!("invalid tools/call params: {e}"),
                ))
            }
            None => {
                return Dispatch::Reply(rpc_error(
                    Some(id),
                    error_code::INVALID_PARAMS,
                    "tools/call needs params",
                ))
            }
        };
        let server = match scope {
            Scope::Server(s) => Some(s.to_string()),
            Scope::All => None,
        };
        let progress = params
            .meta
            .as_ref()
            .and_then(|m| m.progress_token)
            .map(|token| Progress::new(sink.clone(), server.clone(), token));
        let report = progress.clone().map(|p| p as Arc<dyn Report>);
        let id: Box<RawValue> = id.to_owned();
        let control = Arc::new(CallControl::new(id.get(), report));
        Dispatch::Call(StartedCall {
            name: params.name.into_owned(),
            args: params.arguments.map(|a| a.get().to_string()),
            ending: Ending {
                router: self.clone(),
                server,
                id,
                control,
                progress,
                registered: None,
                here: None,
            },
        })
    }
}

/// A `tools/call` accepted and not started: [`StartedCall::here`] runs it on the caller's
/// thread when it can, [`StartedCall::spawnable`] on the executor.
pub struct StartedCall {
    /// The tool's name (in [`Scope::All`], its flat name).
    name: String,
    args: Option<String>,
    ending: Ending,
}

/// What answers a call: its reply, its cancellation key, its progress. Kept apart from the
/// running tool, so that a watchdog can answer a call whose tool does not return.
pub struct Ending {
    router: Arc<Router>,
    /// The sdk server (plugin) called; `None` in [`Scope::All`].
    server: Option<String>,
    id: Box<RawValue>,
    control: Arc<CallControl>,
    progress: Option<Arc<Progress>>,
    /// The key under which the call can be cancelled, once registered.
    registered: Option<CallKey>,
    /// Set for a call run on its caller's thread.
    here: Option<HereInfo>,
}

/// What the answer of a call run on its caller's thread needs to know of it.
struct HereInfo {
    tool: String,
    /// Its executor slot, to name it among the running calls.
    slot: HereId,
    /// The version running it (whose tool check records that it ran long).
    version: Arc<LoadedPlugin>,
}

/// A call ready to run on the caller's thread; see [`StartedCall::here`].
pub struct HereCall {
    pub run: HereRun,
    pub ending: Ending,
}

/// What [`StartedCall::here`] did.
pub enum Here {
    /// Run it here: [`HereRun::run`], then [`Ending::finish`] (or, if it does not return in
    /// time, [`Ending::time_out`] from another thread).
    Run(HereCall),
    /// Answered without running the tool (unknown tool, invalid arguments, ...).
    Answered(Answer),
    /// It cannot run here (its plugin's slots are taken, a state hand-off is under way, the
    /// all-plugins scope): spawn [`StartedCall::spawnable`].
    Elsewhere(StartedCall),
}

impl StartedCall {
    /// Prepares the call to run on the calling thread, which must be able to block for as long
    /// as the tool runs: takes one of the plugin's executor slots, leases the plugin without
    /// waiting and checks the arguments. Registers nothing for cancellation: nothing can read
    /// a cancellation while its reader runs the tool ([`Ending::make_cancellable`] is due
    /// before another thread takes over reading).
    pub fn here(self) -> Here {
        let StartedCall {
            name,
            args,
            mut ending,
        } = self;
        let router = ending.router.clone();
        let Some(server) = ending.server.as_deref() else {
            return Here::Elsewhere(StartedCall { name, args, ending });
        };
        let lease = match router.registry.try_lease(server) {
            TryLease::Leased(lease) => lease,
            TryLease::Unknown => {
                let e = CallError::UnknownServer(server.to_string());
                return Here::Answered(ending.answer(Err(e)));
            }
            TryLease::Busy => return Here::Elsewhere(StartedCall { name, args, ending }),
        };
        let compiled = Compiled::of(&lease);
        let check = match call::tool_check(&lease, compiled, &name) {
            Ok(check) => check,
            Err(e) => return Here::Answered(ending.answer(Err(e))),
        };
        if check.runs_long() {
            return Here::Elsewhere(StartedCall { name, args, ending });
        }
        let Some(ticket) = router.executor.try_here(lease.name()) else {
            return Here::Elsewhere(StartedCall { name, args, ending });
        };
        match call::check_with(&lease, check, &name, args) {
            Checked::Answered(result) => {
                router.executor.here_done(ticket, lease.name());
                Here::Answered(ending.answer(Ok(MeasuredResult::new(result))))
            }
            Checked::Run(call) => {
                ending.here = Some(HereInfo {
                    tool: name,
                    slot: ticket.id(),
                    version: lease.version().clone(),
                });
                Here::Run(HereCall {
                    run: HereRun {
                        router,
                        lease,
                        call,
                        control: ending.control.clone(),
                        ticket: Some(ticket),
                    },
                    ending,
                })
            }
        }
    }

    /// Registers the call for cancellation and returns the future that runs it on the
    /// executor, bounded by its timeout, and yields its answer.
    pub fn spawnable(self) -> impl Future<Output = Answer> + Send + 'static {
        let StartedCall {
            name,
            args,
            mut ending,
        } = self;
        ending.make_cancellable();
        async move {
            let router = ending.router.clone();
            let leased = match &ending.server {
                Some(plugin) => router.lease(plugin).await.map(|l| (l, name)),
                None => router.lease_flat(&name).await,
            };
            let outcome = match leased {
                Ok((lease, tool)) => {
                    call::run(&router, lease, &tool, args, ending.control.clone()).await
                }
                Err(e) => Err(e),
            };
            ending.answer(outcome)
        }
    }
}

/// The tool of a [`HereCall`], run on the caller's thread.
pub struct HereRun {
    router: Arc<Router>,
    lease: Lease,
    call: Call,
    control: Arc<CallControl>,
    ticket: Option<HereTicket>,
}

impl HereRun {
    /// Runs the tool on this thread. A panic in the host's part of the call (the plugin's
    /// own are caught at the ABI) becomes an error result rather than the end of the
    /// thread.
    pub fn run(&self) -> CallResult {
        let call = std::panic::AssertUnwindSafe(|| self.call.run(&self.lease, &self.control));
        std::panic::catch_unwind(call).unwrap_or_else(|_| {
            CallResult::error(format!(
                "tool `{}` failed in the host: its call panicked",
                self.call.tool()
            ))
        })
    }
}

impl Drop for HereRun {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            self.router.executor.here_done(ticket, self.lease.name());
        }
    }
}

impl Ending {
    /// The answer to a call run here whose tool returned `result`.
    pub fn finish(self, result: CallResult) -> Answer {
        let (plugin, tool) = self.names();
        let result = call::bound(&self.router, result, plugin, tool);
        self.answer(Ok(result))
    }

    /// The answer to a call run here whose tool did not return within `limit` (its timeout):
    /// the tool is told to stop, and the answer says it timed out (the tool's result, if it
    /// ever comes, is dropped).
    pub fn time_out(self, limit: Duration) -> Answer {
        self.control.cancel();
        let (plugin, tool) = self.names();
        let result = call::timed_out(plugin, tool, limit);
        self.finish(result)
    }

    /// The call's timeout.
    pub fn limit(&self) -> Duration {
        self.router.timeout_for(self.names().0)
    }

    /// The plugin and the tool of a call run here, for messages.
    fn names(&self) -> (&str, &str) {
        match &self.here {
            Some(h) => (h.version.name(), &h.tool),
            None => ("?", "?"),
        }
    }

    /// The call outlived its caller's budget and another thread reads the input now: it is
    /// named among the running ones, and its tool counts as one that runs long from now on.
    /// Registers it for cancellation ([`Ending::make_cancellable`]).
    pub fn escalate(&mut self) {
        if let Some(h) = &self.here {
            let label = format!(
                "call {} of {}.{}",
                self.control.label(),
                h.version.name(),
                h.tool
            );
            self.router.executor.label_here(h.slot, label);
            if let Some(check) = Compiled::of(&h.version).tool(&h.tool) {
                check.set_runs_long(true);
            }
        }
        self.make_cancellable();
    }

    /// Registers the call for `notifications/cancelled` (once): due before any other thread
    /// may read the input while the call runs. A call registered while the router winds down
    /// is cancelled at once.
    pub fn make_cancellable(&mut self) {
        if self.registered.is_some() {
            return;
        }
        let server = self.server.as_deref().unwrap_or("");
        let key = (server.to_string(), self.id.get().to_string());
        // Registered before the call runs on, so a cancellation that follows is never missed.
        let reused = self
            .router
            .calls
            .lock()
            .unwrap()
            .insert(key.clone(), self.control.clone())
            .is_some();
        if reused {
            // Ids restart at 0 on a re-handshake; the newer call owns the key from now on.
            tracing::debug!(server = %key.0, id = %key.1, "call id reused while in flight");
        }
        if self.router.closing.load(Ordering::Acquire) {
            self.control.cancel();
        }
        self.registered = Some(key);
    }

    fn answer(self, outcome: Result<MeasuredResult, CallError>) -> Answer {
        // No progress after this point: the reply is queued after every report.
        if let Some(p) = &self.progress {
            p.end();
        }
        if let Some(key) = &self.registered {
            let mut calls = self.router.calls.lock().unwrap();
            if calls
                .get(key)
                .is_some_and(|c| Arc::ptr_eq(c, &self.control))
            {
                calls.remove(key);
            }
        }
        Answer {
            id: self.id,
            outcome,
        }
    }
}

/// The answer to a `tools/call`: the tool's result, or why no tool ran.
pub struct Answer {
    id: Box<RawValue>,
    outcome: Result<MeasuredResult, CallError>,
}

impl Answer {
    /// The JSON-RPC reply.
    pub fn rpc(&self) -> String {
        match &self.outcome {
            Ok(result) => rpc_call_reply(&self.id, result),
            Err(e) => rpc_error(Some(&self.id), error_code::INVALID_PARAMS, &e.to_string()),
        }
    }

    /// The reply as the `control_response` line to control request `request_id`, written in
    /// one allocation of its final size.
    pub fn control_line(&self, request_id: &str) -> String {
        match &self.outcome {
            Ok(result) => control_call_reply(request_id, &self.id, result),
            Err(_) => control_success_raw(request_id, &self.rpc()),
        }
    }
}

/// The `initialize` result of a plugin's server, or of the all-plugins server.
pub fn server_initialize_result(plugin: Option<&LoadedPlugin>, version: &str) -> Value {
    match plugin {
        Some(p) => {
            let m = p.manifest();
            initialize_result(
                version,
                ServerInfo {
                    name: &m.name,
                    version: &m.version,
                },
                Some(&m.description),
            )
        }
        None => initialize_result(
            version,
            ServerInfo {
                name: ALL_SERVER_NAME,
                version: env!("CARGO_PKG_VERSION"),
            },
            None,
        ),
    }
}

/// The name of `tool` of `plugin` in [`Scope::All`].
pub fn flat_name(plugin: &str, tool: &str) -> String {
    format!("{plugin}{FLAT_SEPARATOR}{tool}")
}

/// Whether a request id is a string or a number (what a reply may echo). A `null` id never
/// gets here: it parses as no id.
pub(crate) fn valid_id(id: &RawValue) -> bool {
    id.get()
        .starts_with(|c: char| c == '"' || c == '-' || c.is_ascii_digit())
}

/// A success reply whose result is already serialized.
fn splice_result(id: Option<&RawValue>, result: &str) -> String {
    const HEAD: &str = r#"{"jsonrpc":"2.0","id":"#;
    const MIDDLE: &str = r#","result":"#;
    let id = id.map_or("null", RawValue::get);
    let mut reply = String::with_capacity(HEAD.len() + id.len() + MIDDLE.len() + result.len() + 1);
    reply.push_str(HEAD);
    reply.push_str(id);
    reply.push_str(MIDDLE);
    reply.push_str(result);
    reply.push('}');
    reply
}
