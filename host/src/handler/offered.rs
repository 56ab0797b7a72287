//! The router's side of resources and prompts: which methods go to them, the offers of each
//! scope (the registry snapshot's), and reading a resource or getting a prompt outside any
//! protocol.

use std::sync::Arc;

use serde_json::{value::RawValue, Value};

use super::{
    prompts, resources, Answer, CallError, Dispatch, Method, Offers, Reply, Request, Router, Scope,
};
use crate::{
    model::{ErrorCode, Family, InvalidParams},
    plugin::CallControl,
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

    /// Runs `method` on `plugin` as a request without a client, and waits for its outcome.
    async fn run(
        self: &Arc<Self>,
        plugin: &str,
        method: Box<dyn Method>,
        control: Arc<CallControl>,
    ) -> Result<String, CallError> {
        let id = RawValue::from_string("0".to_string()).expect("valid JSON");
        let request = Request::new(
            self.clone(),
            plugin.to_string(),
            id,
            None,
            control,
            None,
            method,
        );
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
