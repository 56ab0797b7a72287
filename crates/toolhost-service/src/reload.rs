//! Carries hot reloads into the conversation: a replaced plugin gets
//! `notifications/tools/list_changed` (and `resources/list_changed`, `prompts/list_changed`
//! when it offers them), an added or removed one a new `mcp_set_servers`.

use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use super::{sdk_server_set, SessionHandle};
use crate::{
    handler::{list_changed, Due, ListChanges, NoticeOut, Router, Scope, Servers},
    registry::{Registry, RegistryEvent},
};

/// Follows `events` until the registry goes away, telling the CLI about each change and
/// `report`ing it in one line. `external` holds the `--mcp-config` servers. With `allow`, the
/// plugins' tools are pre-allowed: a plugin added later is allowed too, together with the
/// rules in `allow` (the user's `--allowed-tools`).
pub async fn follow_registry(
    registry: Arc<Registry>,
    mut events: broadcast::Receiver<RegistryEvent>,
    session: SessionHandle,
    external: Map<String, Value>,
    allow: Option<Vec<String>>,
    report: impl Fn(String) + Send + 'static,
) {
    let mut changes = ListChanges::of(&registry);
    // Each sdk server's clients hear of the lists of their plugin that changed.
    let announce = |due: &Due, name: &str| {
        for kind in due.of(Scope::Server(name)) {
            session.notify_server(name, &list_changed(kind));
        }
    };
    while let Some((event, due)) = changes.next(&registry, &mut events).await {
        let Some(event) = event else {
            // Events were lost: bring the CLI in line with the current state.
            tracing::warn!("missed plugin events; resending every server");
            set_servers(&registry, &session, &external).await;
            for p in registry.plugins() {
                announce(&due, p.name());
            }
            report("plugins changed: tool set refreshed".into());
            continue;
        };
        match event {
            RegistryEvent::Replaced { name, file } => {
                announce(&due, &name);
                report(format!(
                    "plugin {name} reloaded from {}: tools re-listed",
                    file.display()
                ));
            }
            RegistryEvent::Changed { name } => {
                announce(&due, &name);
                report(format!("plugin {name} changed its tools: re-listed"));
            }
            RegistryEvent::Added { name, .. } => {
                set_servers(&registry, &session, &external).await;
                if let Some(extra) = &allow {
                    allow_plugins(&registry, &session, extra).await;
                }
                report(format!("plugin {name} added"));
            }
            RegistryEvent::Removed { name, .. } => {
                set_servers(&registry, &session, &external).await;
                report(format!("plugin {name} removed"));
            }
            RegistryEvent::Failed { file, error } => {
                report(format!(
                    "plugin file {} failed to load: {error}",
                    file.display()
                ));
            }
        }
    }
}

/// Passes plugins' notifications to the CLI's client of each plugin's sdk server (see
/// `Router::notices_of`), until the session's output ends.
pub async fn follow_notices(router: Arc<Router>, session: SessionHandle) {
    router
        .notices_of(Servers::EachPlugin, String::new())
        .pass(session)
        .await
}

impl NoticeOut for SessionHandle {
    async fn idle(&self) -> bool {
        self.out.idle().await
    }

    fn send(&self, plugin: &str, message: String) {
        self.notify_server(plugin, &message);
    }
}

async fn set_servers(registry: &Registry, session: &SessionHandle, external: &Map<String, Value>) {
    let servers = sdk_server_set(&registry.plugins(), external);
    let request = json!({"subtype": "mcp_set_servers", "servers": servers});
    match session.request(&request).await {
        Ok(answer) => {
            if let Some(errors) = answer.get("errors").and_then(Value::as_object) {
                for (name, e) in errors {
                    tracing::warn!("the CLI could not add server {name}: {e}");
                }
            }
        }
        Err(e) => tracing::warn!("mcp_set_servers failed: {e}"),
    }
}

/// `--allowedTools` is fixed at start-up, so a plugin added later is allowed through the
/// flag-settings layer (`apply_flag_settings`, which the CLI merges into its configuration).
/// The rule list is complete, in case the layer's `permissions` replaces the start-up rules.
async fn allow_plugins(registry: &Registry, session: &SessionHandle, extra: &[String]) {
    let mut rules: Vec<String> = registry
        .plugins()
        .iter()
        .map(|p| format!("mcp__{}", p.name()))
        .collect();
    rules.extend(extra.iter().cloned());
    let request = json!({
        "subtype": "apply_flag_settings",
        "settings": {"permissions": {"allow": rules}},
    });
    if let Err(e) = session.request(&request).await {
        tracing::warn!("could not allow the new plugin's tools: {e}");
    }
}
