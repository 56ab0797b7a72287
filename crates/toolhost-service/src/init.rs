//! The SDK `initialize` request (with the servers' manifests) and the server set for
//! `mcp_set_servers`: what the `claude` CLI needs to know of the plugins.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::{handler::Router, model::SESSION_PROTOCOL_VERSION, plugin::LoadedPlugin};

/// The `initialize` control request registering each plugin as an sdk server
/// (`sdkMcpServers`), with its tool timeout (`sdkMcpServerConfigs`) and its manifest
/// (`sdkMcpServerManifests`, docs/protocol.md §9) so the CLI skips the handshake round trips.
pub fn initialize_request(router: &Router, plugins: &[Arc<LoadedPlugin>]) -> Value {
    let names: Vec<&str> = plugins.iter().map(|p| p.name()).collect();
    let mut configs = Map::new();
    let mut manifests = Map::new();
    for p in plugins {
        // A second more than ours: our own timeout then answers first, with a result naming
        // the tool, and cancels the call in the plugin; the CLI's is only the backstop.
        let ms = router.timeout_for(p.name()).as_millis() as u64 + 1000;
        configs.insert(p.name().to_string(), json!({ "timeout": ms }));
        manifests.insert(p.name().to_string(), server_manifest(router, p));
    }
    json!({
        "subtype": "initialize",
        "hooks": null,
        "sdkMcpServers": names,
        "sdkMcpServerConfigs": configs,
        "sdkMcpServerManifests": manifests,
    })
}

/// The manifest the CLI accepts in `initialize.sdkMcpServerManifests` (docs/protocol.md §9) so it skips
/// the handshake round trips for this server.
pub fn server_manifest(router: &Router, plugin: &LoadedPlugin) -> Value {
    json!({
        "initializeResult": router.initialize_result(Some(plugin), SESSION_PROTOCOL_VERSION, false),
        "toolsListResult": router.tools_list_result(plugin),
    })
}

/// The complete server set for `mcp_set_servers`: every plugin as an sdk server plus the
/// external servers (which the CLI would otherwise drop: the set replaces them too).
pub fn sdk_server_set(plugins: &[Arc<LoadedPlugin>], external: &Map<String, Value>) -> Value {
    let mut servers = external.clone();
    for p in plugins {
        servers.insert(
            p.name().to_string(),
            json!({"type": "sdk", "name": p.name()}),
        );
    }
    Value::Object(servers)
}
