//! Changing the plugin's catalog while it runs: tools and prompts added and removed at run
//! time, beside those the plugin declares (`#[tool]`, `#[prompt]`), which stay.
//!
//! [`Context::catalog`](crate::Context::catalog) in a call, or [`catalog()`] anywhere (a
//! thread the plugin started in `on_load`, say), gives the [`Catalog`]. Each change tells the
//! host, which reads the catalog again and tells its clients that the list changed
//! (`notifications/tools/list_changed`); a client sees the new tool in its next `tools/list`.
//! A hot reload starts from the new library's declarations again: tools added at run time are
//! gone then.
//!
//! ```no_run
//! use toolhost_plugin::{prelude::*, ToolDef};
//!
//! #[derive(serde::Deserialize, JsonSchema)]
//! struct Word {
//!     word: String,
//! }
//!
//! /// Adds a tool that shouts.
//! #[tool]
//! fn unlock(ctx: &Context) -> Result<String, String> {
//!     let shout = ToolDef::new("shout", |w: Word| w.word.to_uppercase()).description("Says a word loudly.");
//!     ctx.catalog().add_tool(shout).map_err(|e| e.to_string())?;
//!     Ok("`shout` is yours now".into())
//! }
//! # export_plugin!();
//! # fn main() {}
//! ```

use std::{
    fmt,
    sync::{Arc, RwLock},
};

use abi_stable::std_types::RStr;
use serde_json::{json, Value};

use crate::{extras::PromptDecl, log, prompt::PromptDef, tool::ToolDef};

/// Why a change of the catalog was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogError {
    /// The host predates run-time catalogs (it would never show the change).
    Unsupported,
    /// The plugin is not loaded by a host (a unit test, or a thread after `unload`).
    NotLoaded,
    /// The tool or prompt cannot be added: says why (its name is one of the plugin's own, its
    /// schema's root is not an object, ...).
    Invalid(String),
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogError::Unsupported => {
                f.write_str("the host is older than run-time catalog changes (update toolhost)")
            }
            CatalogError::NotLoaded => f.write_str("the plugin is not loaded by a host"),
            CatalogError::Invalid(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for CatalogError {}

/// The tools and prompts added at run time.
#[derive(Default)]
struct Added {
    tools: Vec<Arc<ToolDef>>,
    prompts: Vec<Arc<PromptDef>>,
    generation: u64,
}

// A plain static, as the plugin's runtime: `unload` empties it.
static ADDED: RwLock<Option<Added>> = RwLock::new(None);

fn added<T>(f: impl FnOnce(&mut Added) -> T) -> T {
    let mut guard = ADDED.write().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Added::default))
}

/// The plugin's catalog, to change at run time (see the [module](self)).
#[derive(Debug, Clone, Copy)]
pub struct Catalog {
    _private: (),
}

/// The plugin's catalog, from anywhere in the plugin (see the [module](self)).
pub fn catalog() -> Catalog {
    Catalog { _private: () }
}

/// The host's `catalog_changed`, or why there is none.
fn host_hook() -> Result<impl Fn(&str), CatalogError> {
    let host = log::host().ok_or(CatalogError::NotLoaded)?;
    let changed = host
        .vtable
        .catalog_changed()
        .ok_or(CatalogError::Unsupported)?;
    Ok(move |what: &str| changed(host.data, RStr::from_str(what)))
}

impl Catalog {
    /// Adds `tool` (or replaces the one added before under its name) and tells the host.
    /// The plugin's own tools cannot be replaced.
    pub fn add_tool(&self, tool: ToolDef) -> Result<(), CatalogError> {
        let tell = host_hook()?;
        tool.validate().map_err(CatalogError::Invalid)?;
        if crate::plugin::declares_tool(&tool.name) {
            return Err(CatalogError::Invalid(format!(
                "tool `{}` is one of the plugin's own tools",
                tool.name
            )));
        }
        added(|a| {
            a.tools.retain(|t| t.name != tool.name);
            a.tools.push(Arc::new(tool));
            a.generation += 1;
        });
        tell("tools");
        Ok(())
    }

    /// Removes tool `name` added at run time; `false` if there was none (the plugin's own
    /// tools stay).
    pub fn remove_tool(&self, name: &str) -> Result<bool, CatalogError> {
        let tell = host_hook()?;
        let removed = added(|a| {
            let before = a.tools.len();
            a.tools.retain(|t| t.name != name);
            let removed = a.tools.len() != before;
            a.generation += u64::from(removed);
            removed
        });
        if removed {
            tell("tools");
        }
        Ok(removed)
    }

    /// Adds `prompt` (or replaces the one added before under its name) and tells the host.
    pub fn add_prompt(&self, prompt: PromptDef) -> Result<(), CatalogError> {
        let tell = host_hook()?;
        prompt.decl().map_err(CatalogError::Invalid)?;
        if prompt.name().trim().is_empty() {
            return Err(CatalogError::Invalid("a prompt has an empty name".into()));
        }
        if crate::plugin::declares_prompt(prompt.name()) {
            return Err(CatalogError::Invalid(format!(
                "prompt `{}` is one of the plugin's own prompts",
                prompt.name()
            )));
        }
        added(|a| {
            a.prompts.retain(|p| p.name() != prompt.name());
            a.prompts.push(Arc::new(prompt));
            a.generation += 1;
        });
        tell("prompts");
        Ok(())
    }

    /// Removes prompt `name` added at run time; `false` if there was none.
    pub fn remove_prompt(&self, name: &str) -> Result<bool, CatalogError> {
        let tell = host_hook()?;
        let removed = added(|a| {
            let before = a.prompts.len();
            a.prompts.retain(|p| p.name() != name);
            let removed = a.prompts.len() != before;
            a.generation += u64::from(removed);
            removed
        });
        if removed {
            tell("prompts");
        }
        Ok(removed)
    }
}

/// The tool `name` added at run time.
pub(crate) fn tool(name: &str) -> Option<Arc<ToolDef>> {
    let guard = ADDED.read().unwrap_or_else(|e| e.into_inner());
    guard
        .as_ref()?
        .tools
        .iter()
        .find(|t| t.name == name)
        .cloned()
}

/// The prompt `name` added at run time.
pub(crate) fn prompt(name: &str) -> Option<Arc<PromptDef>> {
    let guard = ADDED.read().unwrap_or_else(|e| e.into_inner());
    guard
        .as_ref()?
        .prompts
        .iter()
        .find(|p| p.name() == name)
        .cloned()
}

/// The answer to `toolhost/catalog`: the plugin's own `tools` and `prompts`, then those added.
pub(crate) fn answer(tools: &[ToolDef], prompts: &[PromptDecl]) -> String {
    let guard = ADDED.read().unwrap_or_else(|e| e.into_inner());
    let empty = Added::default();
    let added = guard.as_ref().unwrap_or(&empty);
    let tools: Vec<Value> = tools
        .iter()
        .chain(added.tools.iter().map(|t| &**t))
        .map(tool_json)
        .collect();
    let prompts: Vec<Value> = prompts
        .iter()
        .cloned()
        .chain(added.prompts.iter().filter_map(|p| p.decl().ok()))
        .map(|p| serde_json::to_value(p).unwrap_or(Value::Null))
        .collect();
    json!({"generation": added.generation, "tools": tools, "prompts": prompts}).to_string()
}

/// The declarations of the tools added so far (by `on_load`, for the manifest).
pub(crate) fn added_tool_decls() -> Vec<crate::abi::ToolDecl> {
    let guard = ADDED.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().map_or_else(Vec::new, |a| {
        a.tools
            .iter()
            .map(|t| crate::plugin::tool_decl(t))
            .collect()
    })
}

/// The declarations of the prompts added so far.
pub(crate) fn added_prompt_decls() -> Vec<PromptDecl> {
    let guard = ADDED.read().unwrap_or_else(|e| e.into_inner());
    guard.as_ref().map_or_else(Vec::new, |a| {
        a.prompts.iter().filter_map(|p| p.decl().ok()).collect()
    })
}

/// Forgets what was added (the plugin is unloaded).
pub(crate) fn clear() {
    ADDED.write().unwrap_or_else(|e| e.into_inner()).take();
}

/// A tool as MCP's `tools/list` shows it.
fn tool_json(t: &ToolDef) -> Value {
    let mut out = json!({
        "name": t.name,
        "description": t.description,
        "inputSchema": t.input_schema,
    });
    if let Some(title) = &t.title {
        out["title"] = json!(title);
    }
    if let Some(schema) = &t.output_schema {
        out["outputSchema"] = schema.clone();
    }
    let a = &t.annotations;
    let mut annotations = serde_json::Map::new();
    for (key, value) in [
        ("readOnlyHint", a.read_only),
        ("destructiveHint", a.destructive),
        ("idempotentHint", a.idempotent),
        ("openWorldHint", a.open_world),
    ] {
        if let abi_stable::std_types::RSome(v) = value {
            annotations.insert(key.into(), json!(v));
        }
    }
    if !annotations.is_empty() {
        out["annotations"] = Value::Object(annotations);
    }
    if !t.meta.is_empty() {
        out["_meta"] = Value::Object(t.meta.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Outside a host nothing changes: the plugin is told why.
    #[test]
    fn a_change_outside_a_host_is_refused() {
        let t = ToolDef::new("t", |_: crate::NoArgs| "x").description("T.");
        assert_eq!(catalog().add_tool(t), Err(CatalogError::NotLoaded));
        assert_eq!(catalog().remove_tool("t"), Err(CatalogError::NotLoaded));
        assert!(tool("t").is_none());
    }
}
