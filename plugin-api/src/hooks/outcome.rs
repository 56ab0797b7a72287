//! What a hook answers, typed by its event, and the JSON the CLI reads (`hook_callback`'s
//! response: Claude Code's hook output).

use std::{fmt, fmt::Display, marker::PhantomData};

use serde_json::Value;

use super::{
    answer::{HookAnswer, HookSpecific, PermissionDecision, RequestDecision},
    events::{AddsContext, Blocks, HookEvent, PostToolUse, PreToolUse},
    permission::Permission,
    session_events::{MessageDisplay, PermissionRequest},
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
    answer: HookAnswer,
    event: PhantomData<fn() -> E>,
}

// By hand: derives would ask `E` for the traits, and events need not implement them here.
impl<E> Clone for HookOutcome<E> {
    fn clone(&self) -> Self {
        HookOutcome {
            answer: self.answer.clone(),
            event: PhantomData,
        }
    }
}

impl<E> Default for HookOutcome<E> {
    fn default() -> Self {
        HookOutcome {
            answer: HookAnswer::default(),
            event: PhantomData,
        }
    }
}

impl<E> PartialEq for HookOutcome<E> {
    fn eq(&self, other: &Self) -> bool {
        self.answer == other.answer
    }
}

impl<E: HookEvent> fmt::Debug for HookOutcome<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HookOutcome<{}>({})", E::NAME, self.to_json())
    }
}

/// Every event.
///
/// ```
/// use toolhost_plugin::{hooks::{HookAnswer, Stop}, prelude::*, testing::json};
///
/// /// Ends the session's turn when the budget is spent, telling the user why.
/// #[hook(Stop)]
/// pub fn budget(_: Stop) -> HookOutcome<Stop> {
///     HookOutcome::stop("budget spent").with_system_message("3 of 3 hours used").suppress_output()
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let out = budget(Stop::default());
/// assert!(!out.is_no_opinion());
/// assert_eq!(out.to_json(), json!({
///     "continue": false, "stopReason": "budget spent",
///     "systemMessage": "3 of 3 hours used", "suppressOutput": true,
/// }));
/// assert_eq!(out.to_json_string(), out.to_json().to_string());
/// assert_eq!(out.answer().stop_reason.as_deref(), Some("budget spent"));
/// assert_eq!(HookOutcome::<Stop>::no_opinion().answer(), &HookAnswer::default());
///
/// // `with_stop` adds it to another answer: deny the tool, and end the turn.
/// let out = HookOutcome::deny("no").with_stop("stopping here");
/// assert_eq!(out.to_json()["continue"], false);
/// # }
/// ```
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
        self.answer.continue_ = Some(false);
        self.answer.stop_reason = Some(reason.into());
        self
    }

    /// A message shown to the user (`systemMessage`), not to the model.
    pub fn with_system_message(mut self, message: impl Into<String>) -> Self {
        self.answer.system_message = Some(message.into());
        self
    }

    /// Hides the hook's output from the transcript (`suppressOutput`).
    pub fn suppress_output(mut self) -> Self {
        self.answer.suppress_output = Some(true);
        self
    }

    /// Whether the outcome says nothing (`{}`).
    pub fn is_no_opinion(&self) -> bool {
        self.answer.is_empty()
    }

    /// The hook output, typed: what the host reads back.
    pub fn answer(&self) -> &HookAnswer {
        &self.answer
    }

    /// The hook output the CLI reads (the `hook_callback` response).
    pub fn to_json(&self) -> Value {
        self.answer.to_json()
    }

    /// The same, as text (the `hooks/run` answer).
    pub fn to_json_string(&self) -> String {
        self.answer.to_json_string()
    }

    /// `hookSpecificOutput`, made (naming the event) if it was not there.
    fn specific(&mut self) -> &mut HookSpecific {
        self.answer
            .hook_specific_output
            .get_or_insert_with(|| HookSpecific {
                hook_event_name: E::NAME.to_string(),
                ..HookSpecific::default()
            })
    }
}

/// PreToolUse: the permission decision.
///
/// ```
/// use toolhost_plugin::{hooks::{PermissionDecision, PreToolUse}, prelude::*, testing::json};
///
/// /// Lets reads run without asking, asks before pushes, refuses deletes, quiets `npm`.
/// #[hook(PreToolUse)]
/// pub fn gate(input: PreToolUse) -> HookOutcome<PreToolUse> {
///     let command = input.tool_input["command"].as_str().unwrap_or_default();
///     match input.tool_name.as_str() {
///         "Read" => HookOutcome::allow().with_reason("reads are fine"),
///         "Bash" if command.starts_with("git push") => HookOutcome::ask("pushing to the remote"),
///         "Bash" if command.starts_with("rm ") => HookOutcome::deny("no deleting"),
///         "Bash" if command.starts_with("npm ") => HookOutcome::allow()
///             .with_updated_input(json!({"command": format!("{command} --silent")})),
///         _ => HookOutcome::no_opinion(),
///     }
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let bash = |command: &str| PreToolUse {
///     tool_name: "Bash".into(),
///     tool_input: json!({"command": command}),
///     ..Default::default()
/// };
/// let read = gate(PreToolUse { tool_name: "Read".into(), ..Default::default() });
/// let specific = read.answer().hook_specific_output.clone().unwrap();
/// assert_eq!(specific.permission_decision, Some(PermissionDecision::Allow));
/// assert_eq!(specific.permission_decision_reason.as_deref(), Some("reads are fine"));
/// assert_eq!(gate(bash("git push")), HookOutcome::ask("pushing to the remote"));
/// assert_eq!(gate(bash("rm x")), HookOutcome::deny("no deleting"));
/// let npm = gate(bash("npm test")).to_json();
/// assert_eq!(npm["hookSpecificOutput"]["updatedInput"], json!({"command": "npm test --silent"}));
/// assert!(gate(bash("ls")).is_no_opinion());
/// # }
/// ```
impl HookOutcome<PreToolUse> {
    /// Runs the tool without asking (`permissionDecision: "allow"`).
    pub fn allow() -> Self {
        Self::decision(PermissionDecision::Allow, None)
    }

    /// Refuses the tool; the model sees `reason` (`permissionDecision: "deny"`).
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::decision(PermissionDecision::Deny, Some(reason.into()))
    }

    /// Asks the user, showing `reason` (`permissionDecision: "ask"`).
    pub fn ask(reason: impl Into<String>) -> Self {
        Self::decision(PermissionDecision::Ask, Some(reason.into()))
    }

    /// Runs the tool on `input` instead of the model's (`updatedInput`; the CLI applies it
    /// with an `allow`, or an `ask` the user accepts).
    pub fn with_updated_input(mut self, input: Value) -> Self {
        self.specific().updated_input = Some(input);
        self
    }

    /// Replaces the decision's reason (`permissionDecisionReason`; for an `allow`, shown to
    /// the user). Does nothing without a decision.
    pub fn with_reason(mut self, reason: impl Into<String>) -> Self {
        if let Some(s) = &mut self.answer.hook_specific_output {
            if s.permission_decision.is_some() {
                s.permission_decision_reason = Some(reason.into());
            }
        }
        self
    }

    fn decision(decision: PermissionDecision, reason: Option<String>) -> Self {
        let mut out = Self::default();
        let specific = out.specific();
        specific.permission_decision = Some(decision);
        specific.permission_decision_reason = reason;
        out
    }
}

/// PostToolUse: what the model sees of the result (example:
/// [`PostToolUse`](crate::hooks::PostToolUse)).
impl HookOutcome<PostToolUse> {
    /// Replaces the tool's output before the model sees it (`updatedToolOutput`; for the CLI's
    /// built-in tools it must have the tool's output shape, or the CLI keeps the original).
    pub fn with_updated_tool_output(mut self, output: Value) -> Self {
        self.specific().updated_tool_output = Some(output);
        self
    }
}

/// PermissionRequest: answering in the user's place (example:
/// [`PermissionRequest`](crate::hooks::PermissionRequest)).
impl HookOutcome<PermissionRequest> {
    /// Decides the permission request (`hookSpecificOutput.decision`);
    /// [`Permission::NoOpinion`] leaves it to the user.
    pub fn decide(permission: Permission) -> Self {
        let mut out = Self::default();
        if let Some(decision) = RequestDecision::of(&permission) {
            out.specific().decision = Some(decision);
        }
        out
    }
}

/// MessageDisplay: what the user sees (example:
/// [`MessageDisplay`](crate::hooks::MessageDisplay)).
impl HookOutcome<MessageDisplay> {
    /// Shows `content` in place of the flush's `delta` (`displayContent`); the model's message
    /// is unchanged.
    pub fn with_display_content(mut self, content: impl Into<String>) -> Self {
        self.specific().display_content = Some(content.into());
        self
    }
}

/// The events that add context for the model (example: [`AddsContext`]).
impl<E: AddsContext> HookOutcome<E> {
    /// Text the model sees with the event (`additionalContext`); called again, appends a line.
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        let context = context.into();
        let slot = &mut self.specific().additional_context;
        *slot = Some(match slot.take() {
            Some(before) => format!("{before}\n{context}"),
            None => context,
        });
        self
    }
}

/// The events that block (example: [`Blocks`]).
impl<E: Blocks> HookOutcome<E> {
    /// `decision: "block"` with `reason`: PostToolUse tells the model `reason` about the
    /// result, UserPromptSubmit drops the prompt, Stop and SubagentStop make the agent go on.
    pub fn block(reason: impl Into<String>) -> Self {
        let mut out = Self::default();
        out.answer.decision = Some("block".into());
        out.answer.reason = Some(reason.into());
        out
    }
}

/// What a `#[hook]` function for event `E` may return: a [`HookOutcome<E>`], or
/// `Result<HookOutcome<E>, Err>` with `Err: Display` (an `Err` is the plugin's failure: the
/// host applies its `on_error`, and the message names the plugin).
///
/// ```
/// use toolhost_plugin::{hooks::{IntoHookOutcome, UserPromptSubmit}, prelude::*, testing::{json, TestContext}};
///
/// /// Adds the project's notes to each prompt; fails when they cannot be read.
/// #[hook(UserPromptSubmit)]
/// pub fn notes(input: UserPromptSubmit) -> std::io::Result<HookOutcome<UserPromptSubmit>> {
///     let notes = std::fs::read_to_string(format!("{}/NOTES.md", input.cwd))?;
///     Ok(HookOutcome::no_opinion().with_context(notes))
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let e = notes::hook().run(json!({"prompt": "hi", "cwd": "/no/such/folder"}), &TestContext::new());
/// assert!(e.is_err());
/// let ok = HookOutcome::<UserPromptSubmit>::no_opinion();
/// assert_eq!(ok.clone().into_hook_outcome(), Ok(ok));
/// # }
/// ```
pub trait IntoHookOutcome<E> {
    /// The outcome, or the failure's message.
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
    use crate::hooks::{events::*, session_events::*, PermissionUpdate};

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
