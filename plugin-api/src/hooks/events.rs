//! The hook events of a tool call (the others are in `session_events.rs`) and the traits of
//! every event: one input type per Claude Code hook event, with the field names the CLI sends.
//!
//! Fields as in the Python `claude-agent-sdk` (`types.py`, `*HookInput`) and the TypeScript
//! SDK (`sdk.d.ts`). Fields the CLI adds later, or that are rarely needed, are kept in `other`
//! (`mcp_server`, `prompt_id`, `effort`, `duration_ms`, ...): nothing the CLI sends is lost.

use serde::{de::MapAccess, Deserialize, Serialize};
use serde_json::{Map, Value};

/// A Claude Code hook event: the input type of a `#[hook]` function. Implemented by each
/// event type of [`hooks`](crate::hooks), which name the event by their type (and default
/// to their own `hook_event_name`); the CLI's fields that the type does not name are in
/// its `other`.
///
/// ```
/// use toolhost_plugin::hooks::{HookEvent, PreToolUse, Stop};
///
/// assert_eq!(PreToolUse::NAME, "PreToolUse");
/// assert_eq!(Stop::default().hook_event_name(), "Stop");
///
/// let input: PreToolUse = serde_json::from_value(toolhost_plugin::testing::json!({
///     "hook_event_name": "PreToolUse", "tool_name": "Bash", "effort": "high",
/// })).unwrap();
/// assert_eq!(input.tool_name, "Bash");
/// assert_eq!(input.other["effort"], "high");
/// ```
pub trait HookEvent: serde::de::DeserializeOwned + Serialize + 'static {
    /// The event's name as the CLI writes it (`hook_event_name`, the keys of `initialize`'s
    /// `hooks`).
    const NAME: &'static str;

    /// The `hook_event_name` the input carried (empty when it carried none).
    fn hook_event_name(&self) -> &str;
}

/// Events whose output may carry `hookSpecificOutput.additionalContext` (text the model sees):
/// [`HookOutcome::with_context`](super::HookOutcome::with_context). Its implementors are the
/// events the CLI reads it on; on the others `with_context` does not compile.
///
/// ```
/// use toolhost_plugin::hooks::{HookOutcome, SessionStart};
///
/// let out = HookOutcome::<SessionStart>::no_opinion().with_context("branch: main");
/// assert_eq!(out.to_json()["hookSpecificOutput"]["additionalContext"], "branch: main");
/// ```
///
/// ```compile_fail,E0599
/// use toolhost_plugin::hooks::{HookOutcome, SessionEnd};
///
/// // The CLI reads no context when a session ends.
/// let out = HookOutcome::<SessionEnd>::no_opinion().with_context("bye");
/// ```
pub trait AddsContext: HookEvent {}

/// Events whose output may carry `decision: "block"` with a `reason`:
/// [`HookOutcome::block`](super::HookOutcome::block). Its implementors are the events the CLI
/// reads it on; on the others `block` does not compile (PreToolUse has
/// [`HookOutcome::deny`](super::HookOutcome::deny)).
///
/// ```
/// use toolhost_plugin::hooks::{HookOutcome, UserPromptSubmit};
///
/// let out = HookOutcome::<UserPromptSubmit>::block("no keys in prompts");
/// assert_eq!(out.to_json(), toolhost_plugin::testing::json!({"decision": "block", "reason": "no keys in prompts"}));
/// ```
///
/// ```compile_fail,E0599
/// use toolhost_plugin::hooks::{HookOutcome, PreToolUse};
///
/// let out = HookOutcome::<PreToolUse>::block("use deny");
/// ```
pub trait Blocks: HookEvent {}

use super::{
    input::{events, field_key, missing, read_field, take, Key},
    session_events::{
        Notification, SessionStart, Stop, SubagentStart, SubagentStop, UserPromptSubmit,
    },
};

events! {
    /// Before a tool runs (every tool: the CLI's built-ins `Bash`, `Edit`, `Read`, ... and MCP
    /// tools `mcp__server__tool`). May allow, deny or ask, rewrite the input, add context.
    ///
    /// ```
    /// use serde::Deserialize;
    /// use toolhost_plugin::{hooks::PreToolUse, prelude::*, testing::json};
    ///
    /// #[derive(Deserialize)]
    /// pub struct Rules {
    ///     /// Paths no tool may write.
    ///     protected: Vec<String>,
    /// }
    ///
    /// /// Keeps edits out of protected paths, and runs `ls` with `-a`.
    /// #[hook(PreToolUse, matcher = "Bash|Edit|Write")]
    /// pub fn guard(input: PreToolUse, rules: &Rules) -> HookOutcome<PreToolUse> {
    ///     let path = input.tool_input["file_path"].as_str().unwrap_or_default();
    ///     if rules.protected.iter().any(|p| path.starts_with(p.as_str())) {
    ///         return HookOutcome::deny(format!("{path} is protected"));
    ///     }
    ///     if input.tool_name == "Bash" && input.tool_input["command"] == "ls" {
    ///         return HookOutcome::allow().with_updated_input(json!({"command": "ls -a"}));
    ///     }
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin! { config: Rules }
    ///
    /// # fn main() {
    /// let rules = Rules { protected: vec!["/etc".into()] };
    /// let edit = PreToolUse {
    ///     tool_name: "Edit".into(),
    ///     tool_input: json!({"file_path": "/etc/hosts"}),
    ///     ..Default::default()
    /// };
    /// assert_eq!(guard(edit, &rules), HookOutcome::deny("/etc/hosts is protected"));
    /// let ls = PreToolUse { tool_name: "Bash".into(), tool_input: json!({"command": "ls"}), ..Default::default() };
    /// assert_eq!(guard(ls, &rules).answer().hook_specific_output.as_ref().unwrap().updated_input, Some(json!({"command": "ls -a"})));
    /// # }
    /// ```
    PreToolUse {
        /// The tool's name (`Bash`, `mcp__calc__add`).
        tool_name: String,
        /// The tool's input (`{"command": "ls"}` for `Bash`).
        #[serde(default)]
        tool_input: Value,
        /// The tool call's id.
        #[serde(default)]
        tool_use_id: String,
        /// The sub-agent the call comes from; absent on the main thread.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// The agent's type (`general-purpose`), inside a sub-agent or with `--agent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_type: Option<String>,
    }

    /// After a tool succeeded. May block (the model sees the reason), add context, replace the
    /// output the model sees.
    ///
    /// ```
    /// use toolhost_plugin::{hooks::PostToolUse, prelude::*, testing::{json, TestContext}};
    ///
    /// /// Hides secrets from what the model reads of a command's output.
    /// #[hook(PostToolUse, matcher = "Bash")]
    /// pub fn redact(input: PostToolUse) -> HookOutcome<PostToolUse> {
    ///     let out = input.tool_response["stdout"].as_str().unwrap_or_default();
    ///     if out.contains("SECRET=") {
    ///         let mut response = input.tool_response.clone();
    ///         response["stdout"] = json!("[redacted]");
    ///         return HookOutcome::no_opinion().with_updated_tool_output(response);
    ///     }
    ///     if input.tool_response["exit_code"] != 0 {
    ///         return HookOutcome::block("the command failed: read stderr before going on");
    ///     }
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new();
    /// let out = redact::hook()
    ///     .run(json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
    ///                 "tool_response": {"stdout": "SECRET=1", "exit_code": 0}}), &ctx)
    ///     .unwrap();
    /// assert_eq!(out["hookSpecificOutput"]["updatedToolOutput"]["stdout"], "[redacted]");
    /// let failed = PostToolUse { tool_response: json!({"stdout": "", "exit_code": 1}), ..Default::default() };
    /// assert_eq!(redact(failed).to_json()["decision"], "block");
    /// # }
    /// ```
    PostToolUse {
        /// The tool's name.
        tool_name: String,
        /// The tool's input.
        #[serde(default)]
        tool_input: Value,
        /// What the tool returned (for `Bash`: `{"stdout", "stderr", "interrupted", ...}`).
        #[serde(default)]
        tool_response: Value,
        /// The tool call's id.
        #[serde(default)]
        tool_use_id: String,
        /// The sub-agent the call comes from; absent on the main thread.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// The agent's type, inside a sub-agent or with `--agent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_type: Option<String>,
    }

    /// After a tool failed. May add context.
    ///
    /// ```
    /// use toolhost_plugin::{hooks::PostToolUseFailure, prelude::*};
    ///
    /// /// Reminds the model of the test command when a build fails.
    /// #[hook(PostToolUseFailure, matcher = "Bash")]
    /// pub fn hint(input: PostToolUseFailure) -> HookOutcome<PostToolUseFailure> {
    ///     if input.error.contains("cargo") && input.is_interrupt != Some(true) {
    ///         return HookOutcome::no_opinion().with_context("Run `cargo test -p <crate>` for one crate.");
    ///     }
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let failed = PostToolUseFailure { error: "cargo build failed".into(), ..Default::default() };
    /// assert_eq!(hint(failed).to_json()["hookSpecificOutput"]["additionalContext"], "Run `cargo test -p <crate>` for one crate.");
    /// assert!(hint(PostToolUseFailure::default()).is_no_opinion());
    /// # }
    /// ```
    PostToolUseFailure {
        /// The tool's name.
        tool_name: String,
        /// The tool's input.
        #[serde(default)]
        tool_input: Value,
        /// The tool call's id.
        #[serde(default)]
        tool_use_id: String,
        /// The error.
        #[serde(default)]
        error: String,
        /// Whether the user interrupted the tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        is_interrupt: Option<bool>,
        /// The sub-agent the call comes from; absent on the main thread.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// The agent's type, inside a sub-agent or with `--agent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_type: Option<String>,
    }

    /// After every tool call of one assistant message ran (observed on the CLI 2.1.328 to
    /// 2.1.332, after PostToolUse). May add context.
    ///
    /// ```
    /// use toolhost_plugin::{hooks::{PostToolBatch, ToolCall}, prelude::*};
    ///
    /// /// Notes when one message edited many files.
    /// #[hook(PostToolBatch)]
    /// pub fn many_edits(input: PostToolBatch) -> HookOutcome<PostToolBatch> {
    ///     let edits = input.tool_calls.iter().filter(|c| c.tool_name == "Edit").count();
    ///     if edits > 1 {
    ///         return HookOutcome::no_opinion().with_context(format!("{edits} files edited: run the tests."));
    ///     }
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let edit = ToolCall { tool_name: "Edit".into(), ..Default::default() };
    /// let batch = PostToolBatch { tool_calls: vec![edit.clone(), edit], ..Default::default() };
    /// assert_eq!(many_edits(batch).to_json()["hookSpecificOutput"]["additionalContext"], "2 files edited: run the tests.");
    /// # }
    /// ```
    PostToolBatch {
        /// The calls, in order.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    }
}

/// One call of a [`PostToolBatch`] (example there).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool's name.
    pub tool_name: String,
    /// The tool's input.
    #[serde(default)]
    pub tool_input: Value,
    /// The tool call's id.
    #[serde(default)]
    pub tool_use_id: String,
    /// What the tool returned, when it returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_response: Option<Value>,
    /// Every other field the CLI sent.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl AddsContext for PreToolUse {}
impl AddsContext for PostToolBatch {}
impl AddsContext for PostToolUse {}
impl AddsContext for PostToolUseFailure {}
impl AddsContext for UserPromptSubmit {}
impl AddsContext for SessionStart {}
impl AddsContext for Notification {}
impl AddsContext for SubagentStart {}
// `sdk.d.ts` has `StopHookSpecificOutput` and `SubagentStopHookSpecificOutput` with
// `additionalContext` (the Python SDK does not list them).
impl AddsContext for Stop {}
impl AddsContext for SubagentStop {}

impl Blocks for PostToolUse {}
impl Blocks for UserPromptSubmit {}
impl Blocks for Stop {}
impl Blocks for SubagentStop {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::hooks::session_events::*;

    #[test]
    fn inputs_read_the_clis_field_names_and_keep_the_rest() {
        let input: PreToolUse = serde_json::from_value(json!({
            "session_id": "s", "transcript_path": "/t.jsonl", "cwd": "/w",
            "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1",
            "mcp_server": {"name": "x"},
        }))
        .unwrap();
        assert_eq!(input.tool_name, "Bash");
        assert_eq!(input.tool_input["command"], "ls");
        assert_eq!(input.tool_use_id, "toolu_1");
        assert_eq!(input.cwd, "/w");
        assert_eq!(input.permission_mode.as_deref(), Some("default"));
        assert_eq!(input.other["mcp_server"], json!({"name": "x"}));
        // And back, unchanged.
        let back = serde_json::to_value(&input).unwrap();
        assert_eq!(back["other"], Value::Null);
        assert_eq!(back["mcp_server"], json!({"name": "x"}));
        assert_eq!(back["tool_input"], json!({"command": "ls"}));
    }

    #[test]
    fn a_missing_required_field_is_an_error_and_optional_ones_default() {
        let e = serde_json::from_value::<UserPromptSubmit>(json!({"cwd": "/"})).unwrap_err();
        assert!(e.to_string().contains("missing field `prompt`"), "{e}");
        let p: PermissionRequest = serde_json::from_value(
            json!({"tool_name": "Bash", "tool_input": {}, "permission_suggestions": null}),
        )
        .unwrap();
        assert!(p.permission_suggestions.is_empty());
        assert_eq!(Stop::default().hook_event_name, "Stop");
        assert_eq!(<SessionEnd as HookEvent>::NAME, "SessionEnd");
        let d: MessageDisplay = serde_json::from_value(
            json!({"turn_id": "t", "message_id": "m", "index": 2, "final": true, "delta": "hi\n"}),
        )
        .unwrap();
        assert!(d.is_final);
        assert_eq!((d.index, d.delta.as_str()), (2, "hi\n"));
        let b: PostToolBatch = serde_json::from_value(json!({"tool_calls": [
            {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_use_id": "t1", "tool_response": {"stdout": ""}},
        ]}))
        .unwrap();
        assert_eq!(b.tool_calls[0].tool_name, "Bash");
        assert_eq!(b.tool_calls[0].tool_response, Some(json!({"stdout": ""})));
    }

    #[test]
    fn keys_are_read_once_whatever_their_form() {
        // An escaped key is another key's name once unescaped; unknown ones keep their value.
        let p: PreToolUse = serde_json::from_str(
            r#"{"tool_\u006eame": "Bash", "x\"y": [1, {"z": null}], "cwd": "/"}"#,
        )
        .unwrap();
        assert_eq!((p.tool_name.as_str(), p.cwd.as_str()), ("Bash", "/"));
        assert_eq!(
            p.other,
            json!({"x\"y": [1, {"z": null}]})
                .as_object()
                .unwrap()
                .clone()
        );
        let twice = serde_json::from_str::<PreToolUse>(r#"{"tool_name": "a", "tool_name": "b"}"#);
        assert!(twice
            .unwrap_err()
            .to_string()
            .contains("duplicate field `tool_name`"));
        let e = serde_json::from_str::<PreToolUse>("[]").unwrap_err();
        assert!(e.to_string().contains("expected struct PreToolUse"), "{e}");
        // A field named otherwise in the input is read and written by that name.
        let d: MessageDisplay = serde_json::from_value(json!({"final": true})).unwrap();
        assert!(d.is_final);
        assert_eq!(serde_json::to_value(&d).unwrap()["final"], true);
        let twice = serde_json::from_str::<PermissionRequest>(
            r#"{"tool_name": "a", "permission_suggestions": null, "permission_suggestions": []}"#,
        );
        assert!(twice.is_err());
    }
}
