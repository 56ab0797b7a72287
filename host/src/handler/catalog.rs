//! What the router derives once per plugin version: the serialized `tools/list` result and a
//! compiled argument validator per tool. It is kept on the version itself
//! ([`LoadedPlugin::derived`]), so the lease of a call finds it without a second lookup, and a
//! new version (hot reload) is compiled on first use. And the flat catalog of `toolhost serve`,
//! every plugin's tools under one server, rebuilt whenever a plugin version changes.

use std::{
    collections::HashMap,
    sync::{Arc, OnceLock, Weak},
};

use serde_json::Value;

use super::flat_name;
use crate::{
    model::{tool_json, ToolInfo},
    plugin::LoadedPlugin,
};

/// Derived data of one plugin version.
pub struct Compiled {
    tools: HashMap<String, ToolCheck>,
    tools_list: String,
}

impl Compiled {
    /// The compiled data of `plugin`, compiled on first use.
    pub fn of(plugin: &LoadedPlugin) -> &Compiled {
        plugin.derived(Compiled::new)
    }

    fn new(plugin: &LoadedPlugin) -> Self {
        let m = plugin.manifest();
        let tools = m
            .tools
            .iter()
            .map(|t| (t.name.clone(), ToolCheck::compile(t)))
            .collect();
        let list = serde_json::json!({"tools": m.tools.iter().map(tool_json).collect::<Vec<_>>()});
        Compiled {
            tools,
            tools_list: list.to_string(),
        }
    }

    /// The `tools/list` result, serialized.
    pub fn tools_list(&self) -> &str {
        &self.tools_list
    }

    /// The argument check of tool `name`, if the plugin has it.
    pub fn tool(&self, name: &str) -> Option<&ToolCheck> {
        self.tools.get(name)
    }
}

/// The tools of every plugin as one server (`toolhost serve`), named `<plugin>__<tool>`, for
/// one set of plugin versions.
///
/// Plugin names may contain `__` themselves, so two tools can get the same flat name (plugin
/// `a` with tool `b__c`, plugin `a__b` with tool `c`). The first in plugin-name order keeps
/// it; the other is left out of the list and reported (see [`FlatCatalog::collisions`]).
/// Calls resolve through the same map, so what is listed is what is called.
pub struct FlatCatalog {
    /// The versions this catalog was built from. Weak: a catalog must not keep a replaced
    /// version loaded, and a live `Weak` also keeps its address from being reused.
    versions: Vec<Weak<LoadedPlugin>>,
    /// Flat name → (plugin, tool).
    by_name: HashMap<String, (String, String)>,
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
                let mut v = tool_json(t);
                v["name"] = Value::from(flat.as_str());
                tools.push(v);
                by_name.insert(flat, (p.name().to_string(), t.name.clone()));
            }
        }
        FlatCatalog {
            versions: plugins.iter().map(Arc::downgrade).collect(),
            by_name,
            tools_list: serde_json::json!({ "tools": tools }).to_string(),
            collisions,
        }
    }

    /// Whether this catalog was built from exactly these versions.
    pub fn is_of(&self, plugins: &[Arc<LoadedPlugin>]) -> bool {
        self.versions.len() == plugins.len()
            && self
                .versions
                .iter()
                .zip(plugins)
                .all(|(w, p)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(p)))
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

    /// The tools left out because their flat name was taken.
    pub fn collisions(&self) -> &[FlatCollision] {
        &self.collisions
    }
}

/// Checks a tool's arguments against its input schema.
///
/// The validator is compiled at the tool's first call, not when the plugin is listed:
/// compiling costs about a millisecond per tool (more for the first), which would otherwise
/// delay every handshake and `tools/list`.
pub struct ToolCheck {
    schema: Value,
    validator: OnceLock<Result<jsonschema::Validator, String>>,
}

impl ToolCheck {
    fn compile(t: &ToolInfo) -> Self {
        ToolCheck {
            schema: t.input_schema.clone(),
            validator: OnceLock::new(),
        }
    }

    /// `Ok` when `args` (a JSON text) satisfies the schema; otherwise every violation, one
    /// per `; `-separated part, each prefixed by where it is.
    pub fn check(&self, tool: &str, args: &str) -> Result<(), String> {
        let validator = self
            .validator
            .get_or_init(|| jsonschema::validator_for(&self.schema).map_err(|e| e.to_string()));
        let validator = validator.as_ref().map_err(|e| {
            format!("tool `{tool}` cannot be called: its input schema is invalid: {e}")
        })?;
        let value: Value = serde_json::from_str(args)
            .map_err(|e| format!("invalid arguments for tool `{tool}`: not valid JSON: {e}"))?;
        // The common case first: `is_valid` stops at nothing and builds no error values;
        // every violation is collected only for arguments that fail.
        if validator.is_valid(&value) {
            return Ok(());
        }
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| {
                let at = e.instance_path.to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "invalid arguments for tool `{tool}`: {}",
                problems.join("; ")
            ))
        }
    }
}
