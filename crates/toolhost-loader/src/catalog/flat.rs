//! The flat catalog of `toolhost serve`: every plugin's tools under one server, built once
//! per set of plugin versions. (What is derived per version, the `tools/list` of one plugin
//! and its argument checks, is [`super::Tools`].)

use std::{collections::HashMap, sync::Arc};

use serde_json::Value;

use super::flat_name;
use crate::{model::tool_json_of, plugin::LoadedPlugin};

/// The tools of every plugin as one server (`toolhost serve`), named `<plugin>__<tool>`, for
/// one set of plugin versions.
///
/// Plugin names may contain `__` themselves, so two tools can get the same flat name (plugin
/// `a` with tool `b__c`, plugin `a__b` with tool `c`). The first in plugin-name order keeps
/// it; the other is left out of the list and reported (see [`FlatCatalog::collisions`]).
/// Calls resolve through the same map, so what is listed is what is called.
pub struct FlatCatalog {
    /// Flat name → (plugin, tool).
    by_name: HashMap<String, (String, String)>,
    /// The listed tools, for pages of `tools/list`, and the whole list serialized.
    tools: Vec<Value>,
    tools_list: String,
    collisions: Vec<FlatCollision>,
}

/// A tool left out of the flat catalog because an earlier one has its flat name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "tool `{tool}` of plugin `{plugin}` is not served: its name `{flat}` is already tool \
     `{kept_tool}` of plugin `{kept_plugin}` (rename one of them)"
)]
pub struct FlatCollision {
    pub flat: String,
    pub plugin: String,
    pub tool: String,
    pub kept_plugin: String,
    pub kept_tool: String,
}

impl FlatCatalog {
    /// The catalog of `plugins` (sorted by name, as the registry lists them).
    pub fn build(plugins: &[Arc<LoadedPlugin>]) -> Self {
        let mut by_name: HashMap<String, (String, String)> = HashMap::new();
        let mut tools = Vec::new();
        let mut collisions = Vec::new();
        for p in plugins {
            for t in &p.manifest().tools {
                let flat = flat_name(p.name(), &t.name);
                if let Some((kept_plugin, kept_tool)) = by_name.get(&flat) {
                    collisions.push(FlatCollision {
                        flat,
                        plugin: p.name().to_string(),
                        tool: t.name.clone(),
                        kept_plugin: kept_plugin.clone(),
                        kept_tool: kept_tool.clone(),
                    });
                    continue;
                }
                let mut v = tool_json_of(t, &p.manifest().extras);
                v["name"] = Value::from(flat.as_str());
                tools.push(v);
                by_name.insert(flat, (p.name().to_string(), t.name.clone()));
            }
        }
        FlatCatalog {
            by_name,
            tools_list: serde_json::json!({ "tools": tools }).to_string(),
            tools,
            collisions,
        }
    }

    /// The plugin and tool behind flat name `flat`.
    pub fn resolve(&self, flat: &str) -> Option<(&str, &str)> {
        self.by_name
            .get(flat)
            .map(|(p, t)| (p.as_str(), t.as_str()))
    }

    /// The `tools/list` result, serialized.
    pub fn tools_list(&self) -> &str {
        &self.tools_list
    }

    /// The listed tools, in order.
    pub fn tools(&self) -> &[Value] {
        &self.tools
    }

    /// The tools left out because their flat name was taken.
    pub fn collisions(&self) -> &[FlatCollision] {
        &self.collisions
    }
}
