//! What the router derives once per plugin version: the serialized `tools/list` result and a
//! compiled argument validator per tool. Calls reuse them; a new version (hot reload) is
//! compiled on first use.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, Weak},
};

use serde_json::Value;

use crate::{
    model::tool_json,
    plugin::{LoadedPlugin, ToolInfo},
};

/// Derived data of one plugin version.
pub struct Compiled {
    // Identifies the version without keeping it loaded; while this `Weak` lives, the address
    // cannot be reused by another version, so pointer equality is exact.
    version: Weak<LoadedPlugin>,
    tools: HashMap<String, ToolCheck>,
    tools_list: String,
}

impl Compiled {
    fn new(plugin: &Arc<LoadedPlugin>) -> Self {
        let m = plugin.manifest();
        let tools = m
            .tools
            .iter()
            .map(|t| (t.name.clone(), ToolCheck::compile(t)))
            .collect();
        let list = serde_json::json!({"tools": m.tools.iter().map(tool_json).collect::<Vec<_>>()});
        Compiled {
            version: Arc::downgrade(plugin),
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

/// Checks a tool's arguments against its input schema.
pub struct ToolCheck {
    validator: Result<jsonschema::Validator, String>,
}

impl ToolCheck {
    fn compile(t: &ToolInfo) -> Self {
        ToolCheck {
            validator: jsonschema::validator_for(&t.input_schema).map_err(|e| e.to_string()),
        }
    }

    /// `Ok` when `args` (a JSON text) satisfies the schema; otherwise every violation, one
    /// per `; `-separated part, each prefixed by where it is.
    pub fn check(&self, tool: &str, args: &str) -> Result<(), String> {
        let validator = self.validator.as_ref().map_err(|e| {
            format!("tool `{tool}` cannot be called: its input schema is invalid: {e}")
        })?;
        let value: Value = serde_json::from_str(args)
            .map_err(|e| format!("invalid arguments for tool `{tool}`: not valid JSON: {e}"))?;
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

/// The compiled data of the current version of each plugin.
#[derive(Default)]
pub struct Catalog {
    entries: Mutex<HashMap<String, Arc<Compiled>>>,
}

impl Catalog {
    /// The compiled data of exactly this plugin version, compiling it on first use.
    pub fn get(&self, plugin: &Arc<LoadedPlugin>) -> Arc<Compiled> {
        let mut entries = self.entries.lock().unwrap();
        if let Some(c) = entries.get(plugin.name()) {
            if std::ptr::eq(c.version.as_ptr(), Arc::as_ptr(plugin)) {
                return c.clone();
            }
        }
        // Compiling under the lock is fine: it happens once per version, and a second caller
        // for the same version would otherwise compile it again.
        let c = Arc::new(Compiled::new(plugin));
        entries.insert(plugin.name().to_string(), c.clone());
        c
    }

    /// Forgets plugins that are no longer loaded.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.entries.lock().unwrap().retain(|name, _| keep(name));
    }
}
