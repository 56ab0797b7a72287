//! The router's side of resources and prompts: which methods go to them, the offers of each
//! scope (the registry snapshot's), and reading a resource or getting a prompt outside any
//! protocol.

use std::{collections::HashMap, sync::Arc};

use tokio::sync::broadcast;

use serde_json::{value::RawValue, Value};

use super::{
    prompts, resources, Answer, CallError, Dispatch, Method, Offers, Reply, Router, Scope,
};
use crate::{
    model::{ErrorCode, Family, InvalidParams},
    plugin::CallControl,
    registry::{Registry, RegistryEvent},
};

impl Router {
    /// The offers of `scope` if it offers the `family` of a request (resources or prompts);
    /// `None` makes the method one the server does not know, as for a server without the
    /// capability.
    pub(super) fn offered(&self, scope: Scope<'_>, family: Family) -> Option<Arc<Offers>> {
        let offers = self.offers(scope)?;
        let offered = match family {
            Family::Resources => offers.has_resources(),
            Family::Prompts => offers.has_prompts(),
            Family::Other => true,
        };
        offered.then_some(offers)
    }

    /// The reply to a request of resources or prompts whose params are invalid: "method not
    /// found" where the server does not offer them.
    pub(super) fn invalid_offer(
        &self,
        scope: Scope<'_>,
        id: &RawValue,
        method: &str,
        e: &InvalidParams,
    ) -> Dispatch {
        Dispatch::Reply(match self.offered(scope, e.family) {
            Some(_) => Reply::error(Some(id), ErrorCode::INVALID_PARAMS, e.message.clone()),
            None => Reply::method_not_found(id, method),
        })
    }

    /// The plugin that serves `target` (a tool's or prompt's name, a resource's URI) of a
    /// `method` in `scope` now: the endpoint's plugin, or the one the name or URI resolves to
    /// in the all-plugins scope (`None`: none does). What a 2026-07-28 `requestState` is bound
    /// to besides the request itself.
    pub fn plugin_serving(&self, scope: Scope<'_>, method: &str, target: &str) -> Option<String> {
        if let Scope::Server(name) = scope {
            return Some(name.to_string());
        }
        match method {
            "tools/call" => self
                .flat_catalog()
                .resolve(target)
                .map(|(plugin, _)| plugin.to_string()),
            "prompts/get" => self
                .offers(scope)?
                .prompt(target)
                .map(|(plugin, _)| plugin.to_string()),
            "resources/read" => self
                .offers(scope)?
                .resolve(target)
                .map(|r| r.plugin.to_string()),
            _ => None,
        }
    }

    /// The resources and prompts `scope` serves now (`None`: its plugin is not loaded), from
    /// the registry's snapshot. What a collision leaves out is reported once per snapshot.
    pub fn offers(&self, scope: Scope<'_>) -> Option<Arc<Offers>> {
        let serving = self.registry.serving();
        match scope {
            Scope::Server(name) => Some(serving.get(name)?.offers().clone()),
            Scope::All => Some(serving.offers().clone()),
        }
    }

    /// Reads resource `uri` outside any protocol (`toolhost read`): resolved as the
    /// all-plugins server does, on the request path of a `resources/read`. The result is the
    /// MCP `ReadResourceResult`, as JSON text.
    pub async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        control: Arc<CallControl>,
    ) -> Result<String, CallError> {
        let offers = self
            .offers(Scope::All)
            .expect("the all-plugins scope always is");
        let r = offers
            .resolve(uri)
            .ok_or_else(|| resources::not_found(uri))?;
        let plugin = r.plugin.clone();
        self.run(&plugin, resources::read(uri, r), control).await
    }

    /// Gets `prompt` of `plugin` with `arguments` outside any protocol (`toolhost prompt`,
    /// the chat's slash commands), on the request path of a `prompts/get`. The result is the
    /// MCP `GetPromptResult`, as JSON text.
    pub async fn get_prompt(
        self: &Arc<Self>,
        plugin: &str,
        prompt: &str,
        arguments: serde_json::Map<String, Value>,
        control: Arc<CallControl>,
    ) -> Result<String, CallError> {
        self.run(plugin, prompts::get(prompt, arguments), control)
            .await
    }

    /// Runs `method` on `plugin` as a request without a client, and waits for its outcome
    /// (`toolhost call`, `read` and `prompt`).
    pub(crate) async fn run(
        self: &Arc<Self>,
        plugin: &str,
        method: Box<dyn Method>,
        control: Arc<CallControl>,
    ) -> Result<String, CallError> {
        let id = RawValue::from_string("0".to_string()).expect("valid JSON");
        let request = self.unkeyed(plugin, &id, method, control);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let respond = move |answer: Answer<'_>| {
            let _ = tx.send(answer.into_outcome());
        };
        request.start(Box::new(respond), false);
        rx.await.expect("a request always answers")
    }
}

/// `completion/complete`: no suggestions. A plugin declares its prompts' arguments and its
/// templates' variables but no values for them, so there is nothing to complete from.
pub(super) fn complete(id: &RawValue) -> Reply {
    Reply::result(
        id,
        &serde_json::json!({"completion": {"values": [], "total": 0, "hasMore": false}}),
    )
}

/// Adds the `resources` and `prompts` capabilities to an `initialize` result, for a server
/// that has them: a client asks only a server that declares them.
pub(super) fn declare(result: &mut Value, resources: bool, prompts: bool) {
    let caps = &mut result["capabilities"];
    if resources {
        caps["resources"] = serde_json::json!({"subscribe": true, "listChanged": true});
    }
    if prompts {
        caps["prompts"] = serde_json::json!({"listChanged": true});
    }
}

/// Which `notifications/*/list_changed` a change of the plugin set makes due: one decision
/// for every front end, which only delivers them. Tools whenever a plugin the server serves
/// changed; resources and prompts while the server offers them or did before the change (so
/// a client re-lists what went away too). It keeps what each server offered when its clients
/// last heard: the all-plugins server's under `""`, each plugin's under its name.
pub struct ListChanges(HashMap<String, (bool, bool)>);

/// The lists a change made due, by server ([`ListChanges::follow`]).
#[derive(Default)]
pub struct Due(HashMap<String, Vec<&'static str>>);

impl ListChanges {
    /// What every server of `registry` offers now.
    pub fn of(registry: &Registry) -> Self {
        let mut changes = ListChanges(HashMap::new());
        changes.follow(registry, None);
        changes
    }

    /// Waits for the next change in `events`: the event (`None`: some were lost) and the
    /// lists it made due; `None` once the registry is gone.
    pub async fn next(
        &mut self,
        registry: &Registry,
        events: &mut broadcast::Receiver<RegistryEvent>,
    ) -> Option<(Option<RegistryEvent>, Due)> {
        let event = match events.recv().await {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(_)) => None,
            Err(broadcast::error::RecvError::Closed) => return None,
        };
        let due = self.follow(registry, event.as_ref());
        Some((event, due))
    }

    /// The lists `event` changed, by server (`None`: events were lost, so every server's
    /// may have changed).
    pub fn follow(&mut self, registry: &Registry, event: Option<&RegistryEvent>) -> Due {
        let serving = registry.serving();
        let changed: Vec<String> = match event {
            Some(RegistryEvent::Failed { .. }) => return Due::default(),
            Some(
                RegistryEvent::Added { name, .. }
                | RegistryEvent::Replaced { name, .. }
                | RegistryEvent::Removed { name, .. }
                | RegistryEvent::Changed { name },
            ) => vec![name.clone()],
            None => self
                .0
                .keys()
                .filter(|k| !k.is_empty())
                .cloned()
                .chain(serving.versions().iter().map(|v| v.name().to_string()))
                .collect(),
        };
        let mut due = HashMap::new();
        for name in changed.into_iter().chain([String::new()]) {
            let now = match name.as_str() {
                "" => lists_of(serving.offers()),
                name => serving
                    .get(name)
                    .map(|v| lists_of(v.offers()))
                    .unwrap_or_default(),
            };
            let before = self.0.insert(name.clone(), now).unwrap_or_default();
            let mut lists = vec!["tools"];
            lists.extend((now.1 || before.1).then_some("prompts"));
            lists.extend((now.0 || before.0).then_some("resources"));
            due.insert(name, lists);
        }
        Due(due)
    }
}

impl Due {
    /// The lists of the server of `scope` that changed (`tools`, `resources`, `prompts`): what
    /// its clients are told.
    pub fn of(&self, scope: Scope<'_>) -> &[&'static str] {
        self.0.get(scope.key()).map_or(&[], Vec::as_slice)
    }
}

/// Whether `offers` has (resources, prompts).
fn lists_of(offers: &Offers) -> (bool, bool) {
    (offers.has_resources(), offers.has_prompts())
}
