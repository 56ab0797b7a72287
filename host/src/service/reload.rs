//! Carries hot reloads into the conversation: a replaced plugin gets
//! `notifications/tools/list_changed` (and `resources/list_changed`, `prompts/list_changed`
//! when it offers them), an added or removed one a new `mcp_set_servers`.

use std::{collections::HashMap, sync::Arc};

use serde_json::{json, Map, Value};
use tokio::sync::broadcast::{self, error::RecvError};

use super::{sdk_server_set, SessionHandle};
use crate::{
    handler::{NoticeOut, Router, Servers},
    plugin::LoadedPlugin,
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
    let mut offered = Offered::of(&registry);
    loop {
        match events.recv().await {
            Ok(RegistryEvent::Replaced { name, file }) => {
                session.tools_list_changed(&name);
                offered.announce(&registry, &session, &name);
                report(format!(
                    "plugin {name} reloaded from {}: tools re-listed",
                    file.display()
                ));
            }
            Ok(RegistryEvent::Changed { name }) => {
                session.tools_list_changed(&name);
                offered.announce(&registry, &session, &name);
                report(format!("plugin {name} changed its tools: re-listed"));
            }
            Ok(RegistryEvent::Added { name, .. }) => {
                set_servers(&registry, &session, &external).await;
                if let Some(extra) = &allow {
                    allow_plugins(&registry, &session, extra).await;
                }
                report(format!("plugin {name} added"));
            }
            Ok(RegistryEvent::Removed { name, .. }) => {
                set_servers(&registry, &session, &external).await;
                report(format!("plugin {name} removed"));
            }
            Ok(RegistryEvent::Failed { file, error }) => {
                report(format!(
                    "plugin file {} failed to load: {error}",
                    file.display()
                ));
            }
            Err(RecvError::Lagged(n)) => {
                // Events were lost: bring the CLI in line with the current state.
                tracing::warn!("missed {n} plugin events; resending every server");
                set_servers(&registry, &session, &external).await;
                for p in registry.plugins() {
                    session.tools_list_changed(p.name());
                    offered.announce(&registry, &session, p.name());
                }
                report("plugins changed: tool set refreshed".into());
            }
            Err(RecvError::Closed) => break,
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

/// Whether each plugin offered resources and prompts when the CLI last heard of it: a
/// reload announces a list change of what the plugin offers now or offered before.
struct Offered(HashMap<String, (bool, bool)>);

impl Offered {
    fn of(registry: &Registry) -> Self {
        Offered(
            registry
                .plugins()
                .iter()
                .map(|p| (p.name().to_string(), offers(p)))
                .collect(),
        )
    }

    fn announce(&mut self, registry: &Registry, session: &SessionHandle, name: &str) {
        let now = registry.get(name).map(|p| offers(&p)).unwrap_or_default();
        let before = self.0.insert(name.to_string(), now).unwrap_or_default();
        if now.0 || before.0 {
            session.list_changed(name, "resources");
        }
        if now.1 || before.1 {
            session.list_changed(name, "prompts");
        }
    }
}

/// (resources, prompts) that `p` offers.
fn offers(p: &LoadedPlugin) -> (bool, bool) {
    let e = &p.manifest().extras;
    let resources =
        !(e.resources.is_empty() && e.resource_templates.is_empty()) || e.lists_resources;
    (resources, !e.prompts.is_empty())
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
