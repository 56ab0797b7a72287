//! The MCP router: decides what each JSON-RPC message addressed to a plugin server does.
//!
//! It is transport-agnostic: the control loop (`service`) hands it `mcp_message` payloads for
//! one sdk server ([`Scope::Server`]), `toolhost serve` hands it plain JSON-RPC for all plugins
//! at once ([`Scope::All`], tools named `<plugin>__<tool>`). Quick requests are answered at
//! once; `tools/call` comes back as a future the caller spawns, so calls run concurrently.

mod call;
mod catalog;

use std::{
    collections::HashMap,
    future::Future,
    pin::Pin,
    sync::{Arc, Mutex},
    time::Duration,
};

use serde_json::{value::RawValue, Value};
use tokio::sync::mpsc;

pub use catalog::{Catalog, Compiled, ToolCheck};

use crate::{
    model::{
        error_code, initialize_result, negotiate_version, rpc_error, rpc_result, CallParams,
        CancelledParams, InitializeParams, JsonRpc, ServerInfo, LATEST_PROTOCOL_VERSION,
    },
    plugin::{CallControl, LoadedPlugin},
    registry::Registry,
};

/// Separator between plugin and tool names in [`Scope::All`] (`calc__add`).
pub const FLAT_SEPARATOR: &str = "__";

/// Server name reported by [`Scope::All`].
pub const ALL_SERVER_NAME: &str = "toolhost";

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

/// A notification the router wants delivered to the client (progress of a call).
#[derive(Debug)]
pub struct Notice {
    /// The sdk server it comes from; `None` for [`Scope::All`].
    pub server: Option<String>,
    /// The JSON-RPC notification, serialized.
    pub message: String,
}

/// What became of one incoming message.
pub enum Dispatch {
    /// Answer with this serialized JSON-RPC reply.
    Reply(String),
    /// A notification was handled; JSON-RPC has nothing to answer (the control loop still
    /// acknowledges it, see `model::NOTIFICATION_ACK`).
    Handled,
    /// A tool call: spawn this future; it yields the serialized reply.
    Call(Pin<Box<dyn Future<Output = String> + Send + 'static>>),
}

/// Call limits: timeouts (a default and per-plugin overrides) and the result size.
#[derive(Debug, Clone)]
pub struct RouterConfig {
    pub default_timeout: Duration,
    pub plugin_timeouts: HashMap<String, Duration>,
    /// Largest serialized `CallToolResult`, in bytes.
    pub max_result_bytes: usize,
}

impl Default for RouterConfig {
    fn default() -> Self {
        RouterConfig {
            default_timeout: DEFAULT_TIMEOUT,
            plugin_timeouts: HashMap::new(),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        }
    }
}

impl RouterConfig {
    /// The call timeout of plugin `name`.
    pub fn timeout_for(&self, name: &str) -> Duration {
        self.plugin_timeouts
            .get(name)
            .copied()
            .unwrap_or(self.default_timeout)
    }
}

type CallKey = (String, String);

/// Routes MCP messages to plugins of a [`Registry`].
pub struct Router {
    registry: Arc<Registry>,
    config: RouterConfig,
    catalog: Catalog,
    /// Calls in flight by (server, JSON-RPC id), for `notifications/cancelled`.
    calls: Mutex<HashMap<CallKey, Arc<CallControl>>>,
    notices: mpsc::UnboundedSender<Notice>,
}

impl Router {
    /// A router over `registry`; progress notifications go to `notices`.
    pub fn new(
        registry: Arc<Registry>,
        config: RouterConfig,
        notices: mpsc::UnboundedSender<Notice>,
    ) -> Arc<Self> {
        Arc::new(Router {
            registry,
            config,
            catalog: Catalog::default(),
            calls: Mutex::new(HashMap::new()),
            notices,
        })
    }

    /// The plugins served.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The call timeouts.
    pub fn config(&self) -> &RouterConfig {
        &self.config
    }

    /// Handles one message. Never blocks: tool calls are returned as futures.
    pub fn dispatch(self: &Arc<Self>, scope: Scope<'_>, msg: &JsonRpc<'_>) -> Dispatch {
        let id = msg.id;
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
        let plugin = match scope {
            Scope::Server(name) => match self.registry.get(name) {
                Some(p) => Some(p),
                None => {
                    return Dispatch::Reply(rpc_error(
                        id,
                        error_code::INVALID_PARAMS,
                        &format!("unknown MCP server `{name}`: no plugin of that name is loaded"),
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
            "tools/list" => self.tools_list(plugin.as_ref(), id),
            "tools/call" => return self.start_call(scope, id, msg.params),
            other => rpc_error(
                id,
                error_code::METHOD_NOT_FOUND,
                &format!("method not found: {other}"),
            ),
        };
        Dispatch::Reply(reply)
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

    fn tools_list(&self, plugin: Option<&Arc<LoadedPlugin>>, id: Option<&RawValue>) -> String {
        // Listing is rare (handshakes, reloads): a good moment to forget removed plugins.
        self.catalog
            .retain(|name| self.registry.get(name).is_some());
        match plugin {
            Some(p) => {
                let compiled = self.catalog.get(p);
                splice_result(id, compiled.tools_list())
            }
            None => rpc_result(id, &self.flat_tools_list()),
        }
    }

    /// The `tools/list` result of one plugin (for `initialize.sdkMcpServerManifests`).
    pub fn tools_list_result(&self, plugin: &Arc<LoadedPlugin>) -> Value {
        serde_json::from_str(self.catalog.get(plugin).tools_list()).expect("our own JSON")
    }

    fn flat_tools_list(&self) -> Value {
        let mut tools = Vec::new();
        for p in self.registry.plugins() {
            for t in &p.manifest().tools {
                let mut v = crate::model::tool_json(t);
                v["name"] = Value::from(flat_name(p.name(), &t.name));
                tools.push(v);
            }
        }
        serde_json::json!({ "tools": tools })
    }

    /// Resolves a [`Scope::All`] tool name to (plugin, tool).
    fn resolve_flat(&self, name: &str) -> Option<(String, String)> {
        // Plugin names may contain `__` themselves: take the plugin that has the tool.
        self.registry.plugins().into_iter().find_map(|p| {
            let tool = name.strip_prefix(p.name())?.strip_prefix(FLAT_SEPARATOR)?;
            p.manifest()
                .tool(tool)
                .map(|_| (p.name().to_string(), tool.to_string()))
        })
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
        id: Option<&RawValue>,
        params: Option<&RawValue>,
    ) -> Dispatch {
        let parsed = params.map(|p| serde_json::from_str::<CallParams>(p.get()));
        let params = match parsed {
            Some(Ok(p)) => p,
            Some(Err(e)) => {
                return Dispatch::Reply(rpc_error(
                    id,
                    error_code::INVALID_PARAMS,
                    &format!("invalid tools/call params: {e}"),
                ))
            }
            None => {
                return Dispatch::Reply(rpc_error(
                    id,
                    error_code::INVALID_PARAMS,
                    "tools/call needs params",
                ))
            }
        };
        let (plugin, tool) = match scope {
            Scope::Server(s) => (s.to_string(), params.name.to_string()),
            Scope::All => match self.resolve_flat(&params.name) {
                Some(pt) => pt,
                None => {
                    return Dispatch::Reply(rpc_error(
                        id,
                        error_code::INVALID_PARAMS,
                        &format!("unknown tool: {}", params.name),
                    ))
                }
            },
        };
        let id: Box<RawValue> = id.expect("requests have ids").to_owned();
        let progress = params
            .meta
            .as_ref()
            .and_then(|m| m.progress_token)
            .map(|token| self.progress_fn(scope, token.to_owned()));
        let control = Arc::new(CallControl::new(id.get().to_string(), progress));
        let key = (scope.key().to_string(), id.get().to_string());
        // Registered before the future runs, so a cancellation that follows is never missed.
        let reused = self
            .calls
            .lock()
            .unwrap()
            .insert(key.clone(), control.clone())
            .is_some();
        if reused {
            // Ids restart at 0 on a re-handshake; the newer call owns the key from now on.
            tracing::debug!(server = %key.0, id = %key.1, "call id reused while in flight");
        }
        let args = params.arguments.map(|a| a.get().to_string());
        let router = self.clone();
        Dispatch::Call(Box::pin(async move {
            let reply = call::run(&router, &plugin, &tool, &id, args, control.clone()).await;
            let mut calls = router.calls.lock().unwrap();
            if calls.get(&key).is_some_and(|c| Arc::ptr_eq(c, &control)) {
                calls.remove(&key);
            }
            reply
        }))
    }

    fn progress_fn(
        &self,
        scope: Scope<'_>,
        token: Box<RawValue>,
    ) -> Box<crate::plugin::ProgressFn> {
        let server = match scope {
            Scope::Server(s) => Some(s.to_string()),
            Scope::All => None,
        };
        let notices = self.notices.clone();
        Box::new(move |progress, total, message| {
            let params = crate::model::ProgressParams {
                progress_token: &token,
                progress,
                total,
                message,
            };
            let message = crate::model::rpc_notification("notifications/progress", Some(&params));
            let _ = notices.send(Notice {
                server: server.clone(),
                message,
            });
        })
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

/// The manifest the CLI accepts in `initialize.sdkMcpServerManifests` (docs/protocol.md §9) so it skips
/// the handshake round trips for this server.
pub fn server_manifest(router: &Router, plugin: &Arc<LoadedPlugin>) -> Value {
    serde_json::json!({
        "initializeResult": server_initialize_result(Some(plugin), LATEST_PROTOCOL_VERSION),
        "toolsListResult": router.tools_list_result(plugin),
    })
}

/// The name of `tool` of `plugin` in [`Scope::All`].
pub fn flat_name(plugin: &str, tool: &str) -> String {
    format!("{plugin}{FLAT_SEPARATOR}{tool}")
}

/// A success reply whose result is already serialized.
fn splice_result(id: Option<&RawValue>, result: &str) -> String {
    let id = id.map_or("null", RawValue::get);
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}
