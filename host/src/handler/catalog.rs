//! What the router derives once per plugin version: the serialized `tools/list` result and a
//! compiled argument validator per tool. It is kept on the version itself
//! ([`LoadedPlugin::derived`]), so the lease of a call finds it without a second lookup, and a
//! new version (hot reload) is compiled on first use.

use std::{collections::HashMap, sync::OnceLock};

use serde_json::Value;

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
