//! What a server says of itself (`initialize`) and keeps of each client (its log level).

use serde_json::{value::RawValue, Value};

use super::{
    offered::declare,
    protocol::{discover_result, is_removed, listen_filter, listen_messages},
    Client, Reply, Revision, Router, Scope, ALL_SERVER_NAME,
};
use crate::{
    model::{
        initialize_result, negotiate_version, ClientRequest, InitializeParams, LogLevel,
        ServerInfo, MODERN_PROTOCOL_VERSION,
    },
    plugin::LoadedPlugin,
    sync::lock,
};

impl Router {
    /// The answer a request gets from its revision's rules alone, if it does: at 2026-07-28
    /// `server/discover` is answered with the server's capabilities (at 2025-11-25 it is not
    /// found: the router's match says so). The removed methods are [`Router::removed`]'s.
    pub(super) fn revision_rules(
        &self,
        client: &Client<'_>,
        id: &RawValue,
        request: &ClientRequest<'_>,
    ) -> Option<Reply> {
        if client.revision != Revision::Jul2026 {
            return None;
        }
        let ClientRequest::Discover = request else {
            return None;
        };
        let init = self.scope_result(client.scope, MODERN_PROTOCOL_VERSION);
        Some(Reply::typed(id, &discover_result(&init)))
    }

    /// The `initialize` result of the server of `scope` at `version`.
    fn scope_result(&self, scope: Scope<'_>, version: &str) -> Value {
        let plugin = match scope {
            Scope::Server(name) => self.registry.get(name),
            Scope::All => None,
        };
        self.initialize_result(plugin.as_deref(), version, true)
    }

    /// A `subscriptions/listen` request `id` (`params`) of a client of `scope`, on any
    /// transport: its acknowledgement, the list change notifications it is honoured (of the
    /// lists the server offers, after the capability whose list each is), and the reply that
    /// closes it.
    pub fn listen(
        &self,
        scope: Scope<'_>,
        id: &RawValue,
        params: Option<&RawValue>,
    ) -> (String, Vec<(&'static str, String)>, String) {
        let init = self.scope_result(scope, MODERN_PROTOCOL_VERSION);
        listen_messages(id, &listen_filter(params, &init["capabilities"]))
    }

    /// "Method not found" for a method 2026-07-28 removed, asked at that revision: decided
    /// before its parameters are read, so that a removed method is not found whatever it
    /// carries (SEP-2575: 404 and -32601 over HTTP, not -32602 for its old parameters).
    pub(super) fn removed(client: &Client<'_>, id: &RawValue, method: &str) -> Option<Reply> {
        (client.revision == Revision::Jul2026 && is_removed(method)).then(|| {
            Reply::error(
                Some(id),
                crate::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {method} (removed in 2026-07-28)"),
            )
        })
    }

    pub(super) fn initialize(
        &self,
        plugin: Option<&LoadedPlugin>,
        id: &RawValue,
        params: &InitializeParams<'_>,
        tasks: bool,
    ) -> Reply {
        let version = negotiate_version(params.protocol_version.as_deref());
        Reply::result(id, &self.initialize_result(plugin, version, tasks))
    }

    /// The `initialize` result of `plugin`'s server, or of the all-plugins server, with the
    /// resources and prompts its snapshot offers now (`Router::offers`, what `ListChanges`
    /// follows too), and tasks if a plugin runs them and the front end does (`tasks`; not the
    /// CLI's sdk servers). Whatever else states the server's capabilities (`server/discover`,
    /// a listen, the CLI's manifests) takes them from here, so a client is offered the same
    /// by each.
    pub fn initialize_result(
        &self,
        plugin: Option<&LoadedPlugin>,
        version: &str,
        tasks: bool,
    ) -> Value {
        let mut result = server_initialize_result(plugin, version);
        let scope = plugin.map_or(Scope::All, |p| Scope::Server(p.name()));
        if let Some(o) = self.offers(scope) {
            declare(&mut result, o.has_resources(), o.has_prompts());
        }
        let has_tasks = tasks
            && match plugin {
                Some(p) => !p.manifest().extras.task_support.is_empty(),
                None => self.registry.serving().versions().iter().any(|v| {
                    let support = &v.manifest().extras.task_support;
                    !support.is_empty()
                }),
            };
        if version == MODERN_PROTOCOL_VERSION {
            // 2026-07-28 removed `resources/subscribe`: its updates come only to a
            // `subscriptions/listen` stream naming the URIs (`resourceSubscriptions`), which
            // toolhost does not deliver, so it does not claim to.
            let resources = result["capabilities"].get_mut("resources");
            if let Some(r) = resources.and_then(Value::as_object_mut) {
                r.remove("subscribe");
            }
        }
        if has_tasks {
            let caps = &mut result["capabilities"];
            if version == MODERN_PROTOCOL_VERSION {
                // SEP-2663: an extension, never 2025-11-25's `tasks` slot.
                caps["extensions"][super::tasks::EXTENSION] = serde_json::json!({});
            } else {
                caps["tasks"] = serde_json::json!({
                    "list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}
                });
            }
        }
        result
    }

    /// `logging/setLevel`: from now on the client's calls send it their plugin's log records
    /// of `level` and above.
    pub(super) fn set_log_level(
        &self,
        scope: Scope<'_>,
        client: &str,
        id: &RawValue,
        level: LogLevel,
    ) -> Reply {
        lock(&self.log_levels).insert(scope.client_key(client), level);
        Reply::result(id, &serde_json::json!({}))
    }

    /// The log level `client` of `scope` set with `logging/setLevel`, if it did.
    pub fn log_level(&self, scope: Scope<'_>, client: &str) -> Option<LogLevel> {
        let levels = lock(&self.log_levels);
        // Asked on every call: no key is built until some client set a level.
        if levels.is_empty() {
            return None;
        }
        levels.get(&scope.client_key(client)).copied()
    }

    /// How many resources `client` of `scope` is subscribed to (a client gone leaves none).
    pub fn subscriptions_of(&self, scope: Scope<'_>, client: &str) -> usize {
        self.subscriptions.count(&scope.client_key(client))
    }

    /// Forgets what `client` of `scope` set (its session ended): its log level, its
    /// subscriptions, its tasks.
    pub fn forget_client(&self, scope: Scope<'_>, client: &str) {
        let key = scope.client_key(client);
        lock(&self.log_levels).remove(&key);
        self.subscriptions.forget(&key);
        self.tasks
            .end_owner(&super::tasks::owner_key(scope, client));
    }
}

/// The `initialize` result of a plugin's server, or of the all-plugins server (without the
/// capabilities of resources and prompts: [`Router::initialize_result`] adds them).
fn server_initialize_result(plugin: Option<&LoadedPlugin>, version: &str) -> Value {
    let mut result = match plugin {
        Some(p) => {
            let m = p.manifest();
            let server = ServerInfo {
                name: &m.name,
                version: &m.version,
            };
            initialize_result(version, server, Some(&m.description))
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
