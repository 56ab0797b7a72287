//! What a plugin offers besides tools, and the requests that reach it, as they cross the ABI.
//!
//! The declarations travel as one JSON object ([`Extras`], the ABI's `extras`) and each
//! request as a method name with JSON params (the ABI's `request`): resources, prompts and
//! hooks are MCP or Claude Code JSON shapes already, and JSON lets a newer plugin add a field
//! an older host simply does not read. Plugin authors never touch this module: the
//! `#[resource]`, `#[prompt]` and `#[hook]` definitions fill it.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The methods a host may send through the ABI's `request`, and what their params are.
///
/// ```
/// use toolhost_plugin::extras::method;
///
/// assert_eq!(method::RESOURCES_READ, "resources/read");
/// assert_eq!(method::HOOK_RUN, "hooks/run");
/// ```
pub mod method {
    /// `{"cursor"?}` → `{"resources": [ResourceDecl], "nextCursor"?}`: the plugin's dynamic
    /// list (asked only when [`super::Extras::lists_resources`]).
    pub const RESOURCES_LIST: &str = "resources/list";
    /// `{"uri", "name", "variables": {..}}` → an MCP `ReadResourceResult`. `name` is the
    /// resource or template the host matched `uri` to, `variables` the template's values
    /// (percent-decoded; empty for a resource with a fixed URI).
    pub const RESOURCES_READ: &str = "resources/read";
    /// `{"name", "arguments": {..}}` → an MCP `GetPromptResult`.
    pub const PROMPTS_GET: &str = "prompts/get";
    /// `{"id", "input": {..}}` → the hook's output, as Claude Code's `hook_callback`
    /// response. `id` is a [`super::HookDecl::id`], `input` the event's input as the CLI sent it.
    pub const HOOK_RUN: &str = "hooks/run";
    /// The `can_use_tool` request's fields, as the CLI sent them → `{"behavior": "allow" |
    /// "deny" | "defer", ..}` (`defer`: the plugin has no opinion).
    pub const PERMISSION_CHECK: &str = "permission/check";
    /// `{}` → `{"generation": N, "tools": [MCP Tool], "prompts": [MCP Prompt]}`: the plugin's
    /// catalog now, its own tools and prompts with those added at run time
    /// ([`crate::catalog`]); asked by the host after the plugin's `catalog_changed`. Plugins
    /// built before it answer [`super::code::METHOD_NOT_FOUND`].
    pub const CATALOG: &str = "toolhost/catalog";
}

/// JSON-RPC error codes a plugin's answer may carry (example: [`RequestError`]).
pub mod code {
    /// The params do not fit the method (a missing prompt argument, say).
    pub const INVALID_PARAMS: i32 = -32602;
    /// The plugin does not answer this method (it predates it, or declares nothing for it).
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// The plugin failed (a panic, an error of its own).
    pub const INTERNAL_ERROR: i32 = -32603;
    /// MCP's "resource not found".
    pub const RESOURCE_NOT_FOUND: i32 = -32002;
}

/// Everything a plugin declares besides its tools. Absent fields are empty: a plugin that
/// offers no resources writes none.
///
/// ```
/// use toolhost_plugin::extras::{Extras, HookDecl, PromptArgumentDecl, PromptDecl, ResourceDecl, TemplateDecl};
/// use toolhost_plugin::testing::json;
///
/// let extras = Extras {
///     resources: vec![ResourceDecl { uri: "notes://index".into(), name: "index".into(), ..Default::default() }],
///     resource_templates: vec![TemplateDecl {
///         uri_template: "notes://{id}".into(),
///         name: "note".into(),
///         mime_type: Some("text/markdown".into()),
///         ..Default::default()
///     }],
///     ..Default::default()
/// };
/// assert_eq!(serde_json::to_value(&extras).unwrap(), json!({
///     "resources": [{"uri": "notes://index", "name": "index"}],
///     "resourceTemplates": [{"uriTemplate": "notes://{id}", "name": "note", "mimeType": "text/markdown"}],
/// }));
/// assert!(!extras.is_empty());
/// assert!(Extras::default().is_empty());
///
/// // As a plugin's prompts and hooks declare themselves.
/// let extras = Extras {
///     prompts: vec![PromptDecl {
///         name: "review".into(),
///         arguments: vec![PromptArgumentDecl { name: "file".into(), required: true, ..Default::default() }],
///         ..Default::default()
///     }],
///     hooks: vec![HookDecl {
///         id: "guard".into(),
///         event: "PreToolUse".into(),
///         matcher: Some("Bash".into()),
///         ..Default::default()
///     }],
///     permission: true,
///     ..Default::default()
/// };
/// assert_eq!(serde_json::to_value(&extras).unwrap(), json!({
///     "prompts": [{"name": "review", "arguments": [{"name": "file", "required": true}]}],
///     "hooks": [{"id": "guard", "event": "PreToolUse", "matcher": "Bash"}],
///     "permission": true,
/// }));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Extras {
    /// Resources with a fixed URI (MCP `Resource`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceDecl>,
    /// Resources named by a URI template (MCP `ResourceTemplate`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_templates: Vec<TemplateDecl>,
    /// The plugin lists further resources itself ([`method::RESOURCES_LIST`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub lists_resources: bool,
    /// MCP `Prompt`s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prompts: Vec<PromptDecl>,
    /// Claude Code hooks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookDecl>,
    /// The plugin has a permission policy ([`method::PERMISSION_CHECK`]).
    #[serde(default, skip_serializing_if = "is_false")]
    pub permission: bool,
    /// The tools that may run as MCP tasks, by name (`#[tool(task = "optional")]`). Here
    /// rather than in the ABI's `ToolDecl`, whose layout older hosts read: an older host
    /// ignores the field and calls those tools as any other.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub task_support: BTreeMap<String, TaskSupport>,
    /// The task tools that ask before they become tasks (`#[tool(task = "...", ask_first)]`):
    /// a client of the tasks extension gets their questions in rounds, and their task only
    /// from [`crate::Context::start_task`] on. An older host ignores the field.
    #[serde(
        default,
        rename = "taskStart",
        skip_serializing_if = "BTreeSet::is_empty"
    )]
    pub ask_first: BTreeSet<String>,
}

/// The reserved method of the ask [`crate::Context::start_task`] sends through the ABI's
/// `ask`: `{"start_task": {"method": START_TASK, "params": {}}}`. A host that knows it answers
/// `{}` (promoting the call to a task when it may); any other refuses it, which the SDK reads
/// as "go on as you are".
pub const START_TASK: &str = "toolhost/startTask";

/// The text of the error result a tool's panic is answered with. The host tells a panic (a
/// task that `failed`) from the tool's own error (a task `completed` with `isError`) by it.
///
/// ```
/// use toolhost_plugin::extras::{is_panic_text, panic_text};
///
/// let text = panic_text("export", "disk on fire");
/// assert_eq!(text, "tool `export` panicked: disk on fire");
/// assert!(is_panic_text("export", &text));
/// assert!(!is_panic_text("import", &text));
/// ```
pub fn panic_text(tool: &str, message: &str) -> String {
    format!("tool `{tool}` panicked: {message}")
}

/// Whether `text` is [`panic_text`] of `tool`.
pub fn is_panic_text(tool: &str, text: &str) -> bool {
    text.strip_prefix("tool `")
        .and_then(|t| t.strip_prefix(tool))
        .is_some_and(|t| t.starts_with("` panicked: "))
}

/// Whether a tool may, or must, run as an MCP task (the `execution.taskSupport` of
/// `tools/list`): the client then gets a task id at once and asks for the result later.
///
/// ```
/// use toolhost_plugin::extras::{Extras, TaskSupport};
/// use toolhost_plugin::testing::json;
///
/// let mut extras = Extras::default();
/// extras.task_support.insert("export".into(), TaskSupport::Optional);
/// assert_eq!(serde_json::to_value(&extras).unwrap(), json!({"taskSupport": {"export": "optional"}}));
/// assert_eq!(TaskSupport::Required.as_str(), "required");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// The client chooses: a plain call, or a task.
    Optional,
    /// Only as a task: a client that cannot run tasks is refused.
    Required,
}

impl TaskSupport {
    /// Its MCP name (`"optional"`, `"required"`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Extras {
    /// Whether the plugin offers nothing besides tools.
    pub fn is_empty(&self) -> bool {
        *self == Extras::default()
    }
}

/// An MCP `Resource` (example: [`Extras`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDecl {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of its contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// An MCP `ResourceTemplate` (RFC 6570 `{var}` expressions; example: [`Extras`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateDecl {
    /// The template (see [`uri_template`](crate::uri_template)).
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its resources hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of its resources' contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// An MCP `Prompt` (as [`PromptDef`](crate::PromptDef) declares it; example: [`Extras`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptDecl {
    /// Its name.
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgumentDecl>,
}

/// An MCP `PromptArgument`: what [`PromptDef::arguments`](crate::PromptDef::arguments) gives,
/// one per field of the prompt's arguments.
///
/// ```
/// use toolhost_plugin::{prelude::*, testing::json};
///
/// /// Explain a piece of code.
/// #[prompt]
/// fn explain(
///     /// The code.
///     code: String,
///     /// For whom (default: a programmer).
///     audience: Option<String>,
/// ) -> String {
///     format!("Explain to {}: {code}", audience.as_deref().unwrap_or("a programmer"))
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let args = explain::prompt().arguments().unwrap().to_vec();
/// assert_eq!(serde_json::to_value(&args).unwrap(), json!([
///     {"name": "code", "description": "The code.", "required": true},
///     {"name": "audience", "description": "For whom (default: a programmer)."},
/// ]));
/// # }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgumentDecl {
    /// The argument's name (the field's, as serde names it).
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is (the field's doc comment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the client must give it (a field that is not `Option` or `#[serde(default)]`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
}

/// One hook: which event it handles, for which tools (what a [`HookDef`](crate::hooks::HookDef)
/// declares to the host; example: [`Extras`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookDecl {
    /// Names the hook in [`method::HOOK_RUN`] (the function's name).
    pub id: String,
    /// The Claude Code event (`PreToolUse`, `UserPromptSubmit`, ...).
    pub event: String,
    /// A regular expression over tool names, for the tool events; `None` matches every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// Anything else the hook declares, kept for newer hosts.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

/// Why a plugin did not answer a request: a JSON-RPC error (see [`code`]). A test meets it as
/// the error of [`HookDef::run`](crate::hooks::HookDef::run).
///
/// ```
/// use toolhost_plugin::{extras::{code, RequestError}, hooks::Stop, prelude::*, testing::{json, TestContext}};
///
/// /// Fails on purpose.
/// #[hook(Stop)]
/// pub fn broken(_: Stop) -> Result<HookOutcome<Stop>, String> {
///     Err("the rules file is missing".into())
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let e = broken::hook().run(json!({}), &TestContext::new()).unwrap_err();
/// assert_eq!(e, RequestError::internal("the rules file is missing"));
/// assert_eq!(e.code, code::INTERNAL_ERROR);
/// assert_eq!(RequestError::invalid_params("no `id`").code, code::INVALID_PARAMS);
/// assert_eq!(RequestError::method_not_found("x/y").message, "the plugin does not answer `x/y`");
/// assert_eq!(RequestError::new(code::RESOURCE_NOT_FOUND, "gone").to_string(), "gone");
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestError {
    /// The JSON-RPC error code (one of [`code`]).
    pub code: i32,
    /// What went wrong, for the client.
    pub message: String,
}

impl RequestError {
    /// An error with this code and message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RequestError {
            code,
            message: message.into(),
        }
    }

    /// The params do not fit the method.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    /// The plugin failed.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(code::INTERNAL_ERROR, message)
    }

    /// The plugin does not answer `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            code::METHOD_NOT_FOUND,
            format!("the plugin does not answer `{method}`"),
        )
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RequestError {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn declarations_are_mcp_shapes_and_absent_fields_are_empty() {
        let extras = Extras {
            resources: vec![ResourceDecl {
                uri: "notes://index".into(),
                name: "index".into(),
                mime_type: Some("text/markdown".into()),
                ..Default::default()
            }],
            resource_templates: vec![TemplateDecl {
                uri_template: "notes://{id}".into(),
                name: "note".into(),
                ..Default::default()
            }],
            prompts: vec![PromptDecl {
                name: "explain".into(),
                arguments: vec![PromptArgumentDecl {
                    name: "x".into(),
                    required: true,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let v = serde_json::to_value(&extras).unwrap();
        assert_eq!(
            v,
            json!({
                "resources": [{"uri": "notes://index", "name": "index", "mimeType": "text/markdown"}],
                "resourceTemplates": [{"uriTemplate": "notes://{id}", "name": "note"}],
                "prompts": [{"name": "explain", "arguments": [{"name": "x", "required": true}]}],
            })
        );
        assert_eq!(serde_json::from_value::<Extras>(v).unwrap(), extras);
        let none: Extras = serde_json::from_str("{}").unwrap();
        assert!(none.is_empty());
        assert_eq!(serde_json::to_string(&none).unwrap(), "{}");
    }

    #[test]
    fn fields_a_newer_plugin_adds_are_read_as_absent_or_kept() {
        let e: Extras = serde_json::from_value(json!({
            "somethingNew": [1],
            "hooks": [{"id": "guard", "event": "PreToolUse", "matcher": "Bash", "later": 3}],
        }))
        .unwrap();
        assert_eq!(e.hooks[0].matcher.as_deref(), Some("Bash"));
        assert_eq!(e.hooks[0].other["later"], 3);
    }
}
