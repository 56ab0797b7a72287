//! A plugin's manifest as host-owned data, and the naming rules the CLI depends on.
//!
//! The serde derives are how a worker process hands its manifest to the host (as JSON, in its
//! first frame); the MCP shape of a tool is written by `tool_json`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
pub use toolhost_plugin::extras::{Extras, RequestError};

/// MCP tool annotations; `None` means "not stated".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotations {
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
}

/// One tool, copied out of the plugin library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Annotations,
    pub meta: Option<Map<String, Value>>,
}

/// What a plugin declared, copied out of the plugin library.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub description: String,
    pub tools: Vec<ToolInfo>,
    pub stateful: bool,
    /// What it offers besides tools (absent for plugins built before the ABI could say).
    #[serde(default, skip_serializing_if = "Extras::is_empty")]
    pub extras: Extras,
}

/// Longest `mcp__<plugin>__<tool>` we accept. The CLI drops names over 128 characters; 64 keeps
/// a margin for other MCP clients and model APIs.
pub const MAX_QUALIFIED_NAME: usize = 64;

/// Most tools one plugin may declare. The caps on declarations bound what one plugin costs the
/// host (its catalog, each `tools/list`) and what a client must page through; a plugin over
/// one is refused at load, naming the cap and its count. Far above what a model can choose
/// among.
pub const MAX_TOOLS: usize = 1000;
/// Most prompts one plugin may declare (see [`MAX_TOOLS`]).
pub const MAX_PROMPTS: usize = 1000;
/// Most resources and resource templates, together, one plugin may declare (see
/// [`MAX_TOOLS`]; resources a plugin lists itself are paged and not counted).
pub const MAX_RESOURCES: usize = 1000;
/// Most bytes of a plugin's declarations read as JSON before parsing them (its resources,
/// prompts and hooks; a worker's manifest): a longer text refuses the load unparsed.
pub const MAX_DECLARATION_BYTES: usize = 16 << 20;

/// A manifest that breaks a rule the CLI depends on (docs/protocol.md §1.5, §6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("{kind} name is empty")]
    EmptyName { kind: &'static str },
    #[error(
        "{kind} name `{name}` contains {found:?}; only letters, digits, `_` and `-` are allowed"
    )]
    BadCharacter {
        kind: &'static str,
        name: String,
        found: char,
    },
    /// `qualified` is cut to 80 characters in the message (a name may be 10 KB).
    #[error(
        "{kind} name `{}` has {} characters; at most {MAX_QUALIFIED_NAME} are allowed",
        cut(.qualified),
        .qualified.len()
    )]
    TooLong {
        kind: &'static str,
        qualified: String,
    },
    #[error("tool `{tool}`: the input schema's root must be an object schema")]
    InputNotAnObject { tool: String },
    /// An input schema whose check the host cannot bound (see `model::schema`).
    #[error("tool `{tool}` of plugin `{plugin}` is refused: the host cannot check its arguments safely: {why}")]
    UncheckableSchema {
        plugin: String,
        tool: String,
        why: String,
    },
    /// The name declared once loaded is not the one the file carries, by which its settings
    /// were found before it ran.
    #[error(
        "it declared the name `{declared}` when loaded, but its file names it `{exported}`; \
         rebuild it"
    )]
    NameMismatch { exported: String, declared: String },
    /// More declarations of one kind than a plugin may have ([`MAX_TOOLS`] and its siblings).
    #[error("it declares {count} {what}; a plugin may declare at most {max}")]
    TooMany {
        what: &'static str,
        count: usize,
        max: usize,
    },
    /// Declarations longer than [`MAX_DECLARATION_BYTES`], refused unparsed.
    #[error("its {what} take {bytes} bytes; at most {MAX_DECLARATION_BYTES} are read")]
    TooLarge { what: &'static str, bytes: usize },
}

/// `Err` naming the cap when `count` declarations of `what` are more than `max`.
pub fn check_count(what: &'static str, count: usize, max: usize) -> Result<(), ManifestError> {
    if count > max {
        return Err(ManifestError::TooMany { what, count, max });
    }
    Ok(())
}

/// Checks a name a client sees (a plugin's, a tool's, a prompt's): letters, digits, `_` and
/// `-` only (the CLI silently rewrites anything else to `_`, and keeps only the first of two
/// names that then collide; a client shows a prompt's name as a command). The one rule for
/// every such name: nothing a terminal acts on, no path, no line break reaches a client.
pub fn check_name(kind: &'static str, name: &str) -> Result<(), ManifestError> {
    if name.is_empty() {
        return Err(ManifestError::EmptyName { kind });
    }
    if let Some(found) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        // A name of 10 KB is cut in the message; it is refused whole.
        let name = cut(name);
        return Err(ManifestError::BadCharacter { kind, name, found });
    }
    Ok(())
}

/// `name`'s first 80 characters for a message, control and bidirectional characters escaped
/// (the message reaches log lines and terminals).
fn cut(name: &str) -> String {
    let mut out: String = name.chars().take(80).flat_map(char::escape_debug).collect();
    if name.chars().nth(80).is_some() {
        out.push_str("...");
    }
    out
}

/// Checks the name of a tool or prompt `name` of plugin `plugin`: [`check_name`], and
/// `mcp__<plugin>__<name>` (how Claude Code names it) at most [`MAX_QUALIFIED_NAME`] long.
fn check_qualified(kind: &'static str, plugin: &str, name: &str) -> Result<(), ManifestError> {
    check_name(kind, name)?;
    let qualified = format!("mcp__{plugin}__{name}");
    if qualified.len() > MAX_QUALIFIED_NAME {
        return Err(ManifestError::TooLong { kind, qualified });
    }
    Ok(())
}

impl Manifest {
    /// Applies the naming rules to the plugin, each tool and each prompt, and the bounds of
    /// `model::schema` to each tool's input schema.
    pub fn validate(&self) -> Result<(), ManifestError> {
        check_name("plugin", &self.name)?;
        let e = &self.extras;
        check_count("tools", self.tools.len(), MAX_TOOLS)?;
        check_count("prompts", e.prompts.len(), MAX_PROMPTS)?;
        check_count(
            "resources and resource templates",
            e.resources.len() + e.resource_templates.len(),
            MAX_RESOURCES,
        )?;
        for t in &self.tools {
            check_qualified("tool", &self.name, &t.name)?;
            if t.input_schema.get("type").and_then(Value::as_str) != Some("object") {
                return Err(ManifestError::InputNotAnObject {
                    tool: t.name.clone(),
                });
            }
        }
        for p in &e.prompts {
            check_qualified("prompt", &self.name, &p.name)?;
        }
        // Last: the names are known good, the measure costs more.
        for t in &self.tools {
            if let Err(why) = super::schema::measure(&t.input_schema) {
                return Err(ManifestError::UncheckableSchema {
                    plugin: self.name.clone(),
                    tool: t.name.clone(),
                    why,
                });
            }
        }
        Ok(())
    }

    /// The tool called `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolInfo> {
        self.tools.iter().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn manifest(plugin: &str, tool: &str) -> Manifest {
        Manifest {
            name: plugin.into(),
            version: "1".into(),
            description: String::new(),
            tools: vec![ToolInfo {
                name: tool.into(),
                title: None,
                description: "d".into(),
                input_schema: json!({"type":"object"}),
                output_schema: None,
                annotations: Annotations::default(),
                meta: None,
            }],
            stateful: false,
            extras: Default::default(),
        }
    }

    #[test]
    fn names() {
        assert!(manifest("my-plugin_2", "Do_thing-3").validate().is_ok());
        let e = manifest("my.plugin", "x")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("plugin name `my.plugin` contains '.'"), "{e}");
        let e = manifest("p", "héllo").validate().unwrap_err().to_string();
        assert!(e.contains("tool name `héllo`"), "{e}");
        assert!(manifest("", "x")
            .validate()
            .unwrap_err()
            .to_string()
            .contains("empty"));
        // mcp__ + 20 + __ + 37 = 64 characters: allowed; one more is not.
        assert!(manifest(&"p".repeat(20), &"t".repeat(37))
            .validate()
            .is_ok());
        let e = manifest(&"p".repeat(20), &"t".repeat(38))
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("65 characters"), "{e}");
    }

    /// Prompt names follow the tool names' rule (issue 37 item 12): what reaches a client's
    /// `prompts/list` is letters, digits, `_` and `-`.
    #[test]
    fn prompt_names_follow_the_tool_names_rule() {
        let with_prompt = |name: &str| {
            let mut m = manifest("p", "t");
            m.extras.prompts.push(toolhost_plugin::extras::PromptDecl {
                name: name.into(),
                title: None,
                description: None,
                arguments: Vec::new(),
            });
            m.validate()
        };
        assert!(with_prompt("summarize_notes-2").is_ok());
        let long = "x".repeat(10_000);
        for bad in [
            "\x1b]0;title\x07",
            "bidi\u{202e}txt",
            "a/b",
            "../up",
            "two\nlines",
            "nul\0",
            "with space",
            &long,
            "",
        ] {
            let e = with_prompt(bad).expect_err(bad).to_string();
            assert!(e.contains("prompt name"), "{e}");
            assert!(e.len() < 300, "{e}");
        }
    }

    /// A schema the host cannot check safely refuses the plugin, naming plugin and tool.
    #[test]
    fn an_uncheckable_schema_is_refused_naming_plugin_and_tool() {
        let mut m = manifest("p", "loop");
        m.tools[0].input_schema = json!({
            "type": "object",
            "properties": {"s": {"$ref": "#/$defs/p", "minLength": 1}},
            "$defs": {
                "p": {"allOf": [{"$ref": "#/$defs/q"}]},
                "q": {"anyOf": [{"$ref": "#/$defs/p"}]},
            },
        });
        let e = m.validate().unwrap_err().to_string();
        assert!(
            e.starts_with("tool `loop` of plugin `p` is refused: the host cannot check"),
            "{e}"
        );
    }
}
