//! What a hook answers, typed by its event, and the JSON the CLI reads (`hook_callback`'s
//! response: Claude Code's hook output).

use std::{fmt, fmt::Display, marker::PhantomData};

use serde::Serialize;
use serde_json::Value;

use super::{
    events::{
        AddsContext, Blocks, HookEvent, MessageDisplay, PermissionRequest, PostToolUse, PreToolUse,
    },
    permission::{Decision, Permission},
};

/// A hook's answer for event `E`. [`HookOutcome::no_opinion`] (the default) changes nothing;
/// the constructors and `with_*` builders are only there for the events the CLI reads them on,
/// so `HookOutcome::<PostToolUse>::deny(..)` does not compile.
///
/// ```
/// use serde_json::json;
/// use toolhost_plugin::hooks::{HookOutcome, PreToolUse, UserPromptSubmit};
///
/// let out: HookOutcome<PreToolUse> = HookOutcome::deny("no force-push");
/// assert_eq!(out.to_json(), json!({"hookSpecificOutput": {
///     "hookEventName": "PreToolUse",
///     "permissionDecision": "deny",
///     "permissionDecisionReason": "no force-push",
/// }}));
///
/// let out = HookOutcome::<UserPromptSubmit>::no_opinion().with_context("branch: main");
/// assert_eq!(out.to_json(), json!({"hookSpecificOutput": {
///     "hookEventName": "UserPromptSubmit",
///     "additionalContext": "branch: main",
/// }}));
/// ```
pub struct HookOutcome<E> {
    stop_reason: Option<String>,
    suppress_output: bool,
    system_message: Option<String>,
    block_reason: Option<String>,
    permission_decision: Option<(&'static str, Option<String>)>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
    updated_tool_output: Option<Value>,
    decision: Option<Permission>,
    display_content: Option<String>,
    event: PhantomData<fn() -> E>,
}

// By hand: derives would ask `E` for the traits, and events need not implement them here.
impl<E> Clone for HookOutcome<E> {
    fn clone(&self) -> Self {
        HookOutcome {
            stop_reason: self.stop_reason.clone(),
            suppress_output: self.suppress_output,
            system_message: self.system_message.clone(),
            block_reason: self.block_reason.clone(),
            permission_decision: self.permission_decision.clone(),
            updated_input: self.updated_input.clone(),
            additional_context: self.additional_context.clone(),
            updated_tool_output: self.updated_tool_output.clone(),
            decision: self.decision.clone(),
            display_content: self.display_content.clone(),
            event: PhantomData,
        }
    }
}

impl<E> Default for HookOutcome<E> {
    fn default() -> Self {
        HookOutcome {
            stop_reason: None,
            suppress_output: false,
            system_message: None,
            block_reason: None,
            permission_decision: None,
            updated_input: None,
            additional_context: None,
            updated_tool_output: None,
            decision: None,
            display_content: None,
            event: PhantomData,
        }
    }
}

impl<E: HookEvent> PartialEq for HookOutcome<E> {
    fn eq(&self, other: &Self) -> bool {
        self.to_json() == other.to_json()
    }
}

impl<E: HookEvent> fmt::Debug for HookOutcome<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HookOutcome<{}>({})", E::NAME, self.to_json())
    }
}

/// Every event.
impl<E: HookEvent> HookOutcome<E> {
    /// No opinion: the CLI goes on as if the hook were not there (`{}`).
    pub fn no_opinion() -> Self {
        Self::default()
    }

    /// Ends the turn (`"continue": false`): the model does not go on, and the user sees
    /// `reason` (`stopReason`). On PreToolUse the tool still runs first (observed on the CLI
    /// 2.1.330): to keep it from running, deny it too (`HookOutcome::deny(..).with_stop(..)`).
    pub fn stop(reason: impl Into<String>) -> Self {
        Self::default().with_stop(reason)
    }

    /// [`HookOutcome::stop`] on top of this answer.
    pub fn with_stop(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }

    /// A message shown to the user (`systemMessage`), not to the model.
    pub fn with_system_message(mut self, message: impl Into<String>) -> Self {
        self.system_message = Some(message.into());
        self
    }

    /// Hides the hook's output from the transcript (`suppressOutput`).
    pub fn suppress_output(mut self) -> Self {
        self.suppress_output = true;
        self
    }

    /// Whether the outcome says nothing (`{}`).
    pub fn is_no_opinion(&self) -> bool {
        self.to_json() == Value::Object(Default::default())
    }

    /// The hook output the CLI reads (the `hook_callback` response).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.wire()).unwrap_or(Value::Null)
    }

    /// The same, as text (the `hooks/run` answer).
    pub fn to_json_string(&self) -> String {
        serde_json::to_string(&self.wire()).unwrap_or_else(|_| "{}".into())
    }

    fn wire(&self) -> Wire<'_> {
        let specific = Specific {
            hook_event_name: E::NAME,
            permission_decision: self.permission_decision.as_ref().map(|(d, _)| *d),
            permission_decision_reason: self
                .permission_decision
                .as_ref()
                .and_then(|(_, r)| r.as_deref()),
            updated_input: self.updated_input.as_ref(),
            additional_context: self.additional_context.as_deref(),
            updated_tool_output: self.updated_tool_output.as_ref(),
            decision: self
                .decision
                .as_ref()
                .filter(|d| **d != Permission::NoOpinion)
                .map(Decision),
            display_content: self.display_content.as_deref(),
        };
        Wire {
            continue_: self.stop_reason.as_ref().map(|_| false),
            stop_reason: self.stop_reason.as_deref(),
            suppress_output: self.suppress_output,
            decision: self.block_reason.as_ref().map(|_| "block"),
            system_message: self.system_message.as_deref(),
            reason: self.block_reason.as_deref(),
            hook_specific_output: (!specific.is_empty()).then_some(specific),
        }
    }
}

/// PreToolUse: the permission decision.
impl HookOutcome<PreToolUse> {
    /// Runs the tool without asking (`permissionDecision: "allow"`).
    pub fn allow() -> Self {
        Self::decision("allow", None)
    }

    /// Refuses the tool; the model sees `reason` (`permissionDecision: "deny"`).
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::decision("deny", Some(reason.into()))
    }

    /// Asks the user, showing `reason` (`permissionDecision: "ask"`).
    pub fn ask(reason: impl Into<String>) -> Self {
        Self::decision("ask", Some(reason.into()))
    }

    /// Runs the tool on `input` instead of the model's (`updatedInput`; the CLI applies it
    /// with an `allow`, or an `ask` the user accepts).
    pub fn with_updated_input(mut self, input: Value) -> Self {
        self.updated_input = Some(input);
        self
    }

    /// Replaces the decision's reason (`permissionDecisionReason`; for an `allow`, shown to
    /// the user). Does nothing without a decision.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        if let Some((_, r)) = &mut self.permission_decision {
            *r = Some(reason.into());
        }
        self
    }

    fn decision(decision: &'static str, reason: Option<String>) -> Self {
        HookOutcome {
            permission_decision: Some((decision, reason)),
            ..Self::default()
        }
    }
}

/// PostToolUse: what the model sees of the result.
impl HookOutcome<PostToolUse> {
    /// Replaces the tool's output before the model sees it (`updatedToolOutput`; for the CLI's
    /// built-in tools it must have the tool's output shape, or the CLI keeps the original).
    pub fn with_updated_tool_output(mut self, output: Value) -> Self {
        self.updated_tool_output = Some(output);
        self
    }
}

/// PermissionRequest: answering in the user's place.
impl HookOutcome<PermissionRequest> {
    /// Decides the permission request (`hookSpecificOutput.decision`);
    /// [`Permission::NoOpinion`] leaves it to the user.
    pub fn decide(permission: Permission) -> Self {
        HookOutcome {
            decision: Some(permission),
            ..Self::default()
        }
    }
}

/// MessageDisplay: what the user sees.
impl HookOutcome<MessageDisplay> {
    /// Shows `content` in place of the flush's `delta` (`displayContent`); the model's message
    /// is unchanged.
    pub fn with_display_content(mut self, content: impl Into<String>) -> Self {
        self.display_content = Some(content.into());
        self
    }
}

impl<E: AddsContext> HookOutcome<E> {
    /// Text the model sees with the event (`additionalContext`); called again, appends a line.
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        let context = context.into();
        self.additional_context = Some(match self.additional_context.take() {
            Some(before) => format!("{before}\n{context}"),
            None => context,
        });
        self
    }
}

impl<E: Blocks> HookOutcome<E> {
    /// `decision: "block"` with `reason`: PostToolUse tells the model `reason` about the
    /// result, UserPromptSubmit drops the prompt, Stop and SubagentStop make the agent go on.
    pub fn block(reason: impl Into<String>) -> Self {
        HookOutcome {
            block_reason: Some(reason.into()),
            ..Self::default()
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    continue_: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "is_false")]
    suppress_output: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hook_specific_output: Option<Specific<'a>>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Specific<'a> {
    hook_event_name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    permission_decision_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_input: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    additional_context: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_tool_output: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<Decision<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    display_content: Option<&'a str>,
}

impl Specific<'_> {
    fn is_empty(&self) -> bool {
        self.permission_decision.is_none()
            && self.updated_input.is_none()
            && self.additional_context.is_none()
            && self.updated_tool_output.is_none()
            && self.decision.is_none()
            && self.display_content.is_none()
    }
}

/// What a `#[hook]` function for event `E` may return: a [`HookOutcome<E>`], or
/// `Result<HookOutcome<E>, Err>` with `Err: Display` (an `Err` is the plugin's failure: the
/// host applies its `on_error`, and the message names the plugin).
pub trait IntoHookOutcome<E> {
    fn into_hook_outcome(self) -> Result<HookOutcome<E>, String>;
}

impl<E> IntoHookOutcome<E> for HookOutcome<E> {
    fn into_hook_outcome(self) -> Result<HookOutcome<E>, String> {
        Ok(self)
    }
}

impl<E, Err: Display> IntoHookOutcome<E> for Result<HookOutcome<E>, Err> {
    fn into_hook_outcome(self) -> Result<HookOutcome<E>, String> {
        self.map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::hooks::{events::*, PermissionUpdate};

    #[test]
    fn no_opinion_is_an_empty_object() {
        let out = HookOutcome::<PreToolUse>::no_opinion();
        assert_eq!(out.to_json_string(), "{}");
        assert!(out.is_no_opinion());
        assert!(!HookOutcome::allow().is_no_opinion());
    }

    #[test]
    fn pre_tool_use_decisions_and_updated_input() {
        assert_eq!(
            HookOutcome::allow()
                .with_updated_input(json!({"command": "ls"}))
                .with_context("a")
                .with_context("b")
                .to_json(),
            json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "allow",
                "updatedInput": {"command": "ls"}, "additionalContext": "a\nb",
            }})
        );
        assert_eq!(
            HookOutcome::allow().with_reason("read-only").to_json(),
            json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "allow",
                "permissionDecisionReason": "read-only",
            }})
        );
        assert!(HookOutcome::<PreToolUse>::no_opinion()
            .with_reason("x")
            .is_no_opinion());
        assert_eq!(
            HookOutcome::ask("sure?").to_json(),
            json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "ask",
                "permissionDecisionReason": "sure?",
            }})
        );
    }

    #[test]
    fn common_fields_use_the_clis_names() {
        let out = HookOutcome::<Stop>::stop("enough")
            .with_system_message("bye")
            .suppress_output();
        assert_eq!(
            out.to_json(),
            json!({"continue": false, "stopReason": "enough", "systemMessage": "bye", "suppressOutput": true})
        );
        assert_eq!(
            HookOutcome::deny("no").with_stop("halt").to_json(),
            json!({"continue": false, "stopReason": "halt", "hookSpecificOutput": {
                "hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no",
            }})
        );
        assert_eq!(
            HookOutcome::<MessageDisplay>::no_opinion()
                .with_display_content("[redacted]")
                .to_json(),
            json!({"hookSpecificOutput": {"hookEventName": "MessageDisplay", "displayContent": "[redacted]"}})
        );
        assert_eq!(
            HookOutcome::<PostToolBatch>::no_opinion()
                .with_context("2 calls")
                .to_json(),
            json!({"hookSpecificOutput": {"hookEventName": "PostToolBatch", "additionalContext": "2 calls"}})
        );
        assert_eq!(
            HookOutcome::<UserPromptSubmit>::block("no secrets").to_json(),
            json!({"decision": "block", "reason": "no secrets"})
        );
        assert_eq!(
            HookOutcome::<PostToolUse>::block("bad")
                .with_updated_tool_output(json!({"stdout": "x"}))
                .to_json(),
            json!({"decision": "block", "reason": "bad", "hookSpecificOutput": {
                "hookEventName": "PostToolUse", "updatedToolOutput": {"stdout": "x"},
            }})
        );
    }

    #[test]
    fn permission_request_decisions() {
        assert_eq!(
            HookOutcome::decide(
                Permission::allow().with_updated_permissions([PermissionUpdate::set_mode(
                    "acceptEdits",
                    "session"
                )])
            )
            .to_json(),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {
                "behavior": "allow",
                "updatedPermissions": [{"type": "setMode", "mode": "acceptEdits", "destination": "session"}],
            }}})
        );
        assert_eq!(
            HookOutcome::decide(Permission::deny("no").interrupt()).to_json(),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                   "decision": {"behavior": "deny", "message": "no", "interrupt": true}}})
        );
        assert!(HookOutcome::decide(Permission::NoOpinion).is_no_opinion());
    }
}
