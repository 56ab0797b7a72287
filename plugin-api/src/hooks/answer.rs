//! A hook's output as the CLI reads it (Claude Code's hook output): the `hooks/run` answer a
//! plugin writes, and the `hook_callback` response the host writes after merging the answers
//! of every matching plugin. One type for both sides, so the writer ([`HookOutcome`]) and the
//! reader (the host's merge) cannot drift apart.
//!
//! [`HookOutcome`]: super::HookOutcome

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::permission::{Permission, PermissionUpdate};

/// A hook output: the fields every event reads, and `hookSpecificOutput`. Fields the CLI does
/// not read at the top level (`async`, ...) are not kept. A hook builds it through
/// [`HookOutcome`](super::HookOutcome) and reads it back with
/// [`HookOutcome::answer`](super::HookOutcome::answer) (in tests, say).
///
/// ```
/// use toolhost_plugin::hooks::{HookOutcome, PermissionDecision, PreToolUse};
///
/// let out = HookOutcome::<PreToolUse>::deny("no").with_context("see the rules");
/// let answer = out.answer();
/// assert_eq!(answer.continue_, None);
/// let specific = answer.hook_specific_output.as_ref().unwrap();
/// assert_eq!(specific.hook_event_name, "PreToolUse");
/// assert_eq!(specific.permission_decision, Some(PermissionDecision::Deny));
/// assert_eq!(specific.additional_context.as_deref(), Some("see the rules"));
/// assert!(!specific.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", expecting = "a hook output (a JSON object)")]
pub struct HookAnswer {
    /// `false` ends the turn (after the tool, on PreToolUse).
    #[serde(rename = "continue", default, skip_serializing_if = "Option::is_none")]
    pub continue_: Option<bool>,
    /// What the user sees when `continue` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Hides the hook's output from the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress_output: Option<bool>,
    /// `"block"` refuses, with [`HookAnswer::reason`]; the CLI's other value (`"approve"`)
    /// refuses nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// A message the user sees, not the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_message: Option<String>,
    /// Why a `block`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The event's own fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_specific_output: Option<HookSpecific>,
}

/// `hookSpecificOutput`: the fields only some events read. Fields not named here
/// (`updatedMCPToolOutput`, ...) are kept in `other`, in order. Example: [`HookAnswer`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookSpecific {
    /// The event answered (the CLI checks it against the event it asked about).
    #[serde(default)]
    pub hook_event_name: String,
    /// PreToolUse (and PreSkillShellCommand): allow, deny, ask or defer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision: Option<PermissionDecision>,
    /// Why: the model sees a deny's, the user an ask's or an allow's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_decision_reason: Option<String>,
    /// PreToolUse: the input the tool runs on instead of the model's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Text the model sees with the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
    /// PermissionRequest: the answer in the user's place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<RequestDecision>,
    /// PostToolUse: the output the model sees instead of the tool's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_tool_output: Option<Value>,
    /// MessageDisplay: what the user sees instead of the flush's `delta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_content: Option<String>,
    /// Every other field.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl HookSpecific {
    /// Whether it says nothing (`hookEventName` aside).
    pub fn is_empty(&self) -> bool {
        self.permission_decision.is_none()
            && self.permission_decision_reason.is_none()
            && self.updated_input.is_none()
            && self.additional_context.is_none()
            && self.decision.is_none()
            && self.updated_tool_output.is_none()
            && self.display_content.is_none()
            && self.other.is_empty()
    }
}

/// A PreToolUse `permissionDecision`: what [`HookOutcome::allow`](super::HookOutcome::allow),
/// [`deny`](super::HookOutcome::deny) and [`ask`](super::HookOutcome::ask) set. Example:
/// [`HookAnswer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionDecision {
    /// Runs the tool without asking.
    Allow,
    /// Refuses the tool.
    Deny,
    /// Asks the user.
    Ask,
    /// No decision (as if the hook were not there).
    Defer,
}

/// A PermissionRequest hook's `decision`: [`Permission`] as the CLI reads it, with what else
/// it carried kept in `other`.
///
/// ```
/// use toolhost_plugin::{hooks::{Permission, RequestDecision}, testing::json};
///
/// let d = RequestDecision::of(&Permission::deny("not here").interrupt()).unwrap();
/// assert_eq!((d.behavior.as_str(), d.message.as_deref(), d.interrupt), ("deny", Some("not here"), Some(true)));
/// let d = RequestDecision::of(&Permission::allow().with_updated_input(json!({"x": 1}))).unwrap();
/// assert_eq!(d.updated_input, Some(json!({"x": 1})));
/// assert_eq!(RequestDecision::of(&Permission::no_opinion()), None);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestDecision {
    /// `allow` or `deny` (any other decides nothing).
    #[serde(default)]
    pub behavior: String,
    /// An allow's input for the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// An allow's rule changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_permissions: Option<Vec<PermissionUpdate>>,
    /// A deny's message (the model sees it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A deny that also stops the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupt: Option<bool>,
    /// Every other field.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl RequestDecision {
    /// The decision `permission` makes; `None` for [`Permission::NoOpinion`].
    pub fn of(permission: &Permission) -> Option<Self> {
        Some(match permission {
            Permission::Allow {
                updated_input,
                updated_permissions,
            } => RequestDecision {
                behavior: "allow".into(),
                updated_input: updated_input.clone(),
                updated_permissions: (!updated_permissions.is_empty())
                    .then(|| updated_permissions.clone()),
                ..Default::default()
            },
            Permission::Deny { message, interrupt } => RequestDecision {
                behavior: "deny".into(),
                message: Some(message.clone()),
                interrupt: interrupt.then_some(true),
                ..Default::default()
            },
            Permission::NoOpinion => return None,
        })
    }
}

impl HookAnswer {
    /// Reads a hook output from its JSON text; the error says whether it is not JSON, or which
    /// field is not what a hook output has.
    pub fn from_json(text: &str) -> Result<Self, String> {
        // The plain parse first: tracking the path costs on every answer, and it is only
        // needed for the message.
        let e = match serde_json::from_str(text) {
            Ok(answer) => return Ok(answer),
            Err(e) => e,
        };
        if !e.is_data() {
            return Err(format!("its output is not JSON: {e}"));
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        let e = match serde_path_to_error::deserialize::<_, HookAnswer>(de) {
            Ok(answer) => return Ok(answer),
            Err(e) => e,
        };
        let path = e.path().to_string();
        let inner = e.inner().to_string();
        // serde_json appends the position in the text, which only adds noise here.
        let inner = inner.find(" at line ").map_or(&inner[..], |i| &inner[..i]);
        Err(if path == "." || path.is_empty() {
            format!("its output is not a hook output: {inner}")
        } else {
            format!("its output is not a hook output: `{path}`: {inner}")
        })
    }

    /// Whether it says nothing (`{}`).
    pub fn is_empty(&self) -> bool {
        *self == HookAnswer::default()
    }

    /// The output as the CLI reads it.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The same, as text.
    pub fn to_json_string(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::hooks::{events::*, session_events::*, HookOutcome, PermissionRule};

    /// Every field of the type, each set.
    fn every_field() -> HookAnswer {
        let mut other = Map::new();
        other.insert("updatedMCPToolOutput".into(), json!([{"type": "text"}]));
        HookAnswer {
            continue_: Some(false),
            stop_reason: Some("stop".into()),
            suppress_output: Some(true),
            decision: Some("block".into()),
            system_message: Some("shown".into()),
            reason: Some("why".into()),
            hook_specific_output: Some(HookSpecific {
                hook_event_name: "PreToolUse".into(),
                permission_decision: Some(PermissionDecision::Ask),
                permission_decision_reason: Some("sure?".into()),
                updated_input: Some(json!({"command": "ls"})),
                additional_context: Some("ctx".into()),
                decision: Some(RequestDecision {
                    behavior: "allow".into(),
                    updated_input: Some(json!({"a": 1})),
                    updated_permissions: Some(vec![PermissionUpdate::add_rules(
                        [PermissionRule::new("Bash", Some("ls:*"))],
                        "allow",
                        "session",
                    )]),
                    message: Some("m".into()),
                    interrupt: Some(true),
                    other: other.clone(),
                }),
                updated_tool_output: Some(json!({"stdout": "x"})),
                display_content: Some("shown instead".into()),
                other,
            }),
        }
    }

    #[test]
    fn every_field_reads_back_as_written_under_the_clis_names() {
        let answer = every_field();
        let text = answer.to_json_string();
        assert_eq!(HookAnswer::from_json(&text), Ok(answer.clone()));
        // The CLI's names, and each typed field as itself, not in `other`.
        let v = answer.to_json();
        let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            keys(&v),
            [
                "continue",
                "stopReason",
                "suppressOutput",
                "decision",
                "systemMessage",
                "reason",
                "hookSpecificOutput"
            ]
        );
        assert_eq!(
            keys(&v["hookSpecificOutput"]),
            [
                "hookEventName",
                "permissionDecision",
                "permissionDecisionReason",
                "updatedInput",
                "additionalContext",
                "decision",
                "updatedToolOutput",
                "displayContent",
                "updatedMCPToolOutput"
            ]
        );
        assert_eq!(
            keys(&v["hookSpecificOutput"]["decision"]),
            [
                "behavior",
                "updatedInput",
                "updatedPermissions",
                "message",
                "interrupt",
                "updatedMCPToolOutput"
            ]
        );
        // And from the CLI's JSON back to the same text: nothing of hookSpecificOutput lost.
        let read: HookAnswer = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(read.to_json(), v);
        // Top-level fields the CLI does not read are not kept; null is absent.
        assert_eq!(
            HookAnswer::from_json(r#"{"async": true, "reason": null, "hookSpecificOutput": null}"#),
            Ok(HookAnswer::default())
        );
    }

    /// What the SDK's builders write, the reader reads back whole: a field written but not
    /// read (landing in `other`, or dropped) fails here.
    #[test]
    fn every_outcome_the_sdk_writes_reads_back_typed() {
        let answers = [
            HookOutcome::<PreToolUse>::ask("sure?")
                .with_updated_input(json!({"command": "ls"}))
                .with_context("c")
                .with_stop("s")
                .with_system_message("m")
                .suppress_output()
                .answer()
                .clone(),
            HookOutcome::<PreToolUse>::deny("no").answer().clone(),
            HookOutcome::<PreToolUse>::allow()
                .with_reason("ok")
                .answer()
                .clone(),
            HookOutcome::<PostToolUse>::block("bad")
                .with_updated_tool_output(json!({"stdout": "x"}))
                .with_context("c")
                .answer()
                .clone(),
            HookOutcome::<MessageDisplay>::no_opinion()
                .with_display_content("d")
                .answer()
                .clone(),
            HookOutcome::decide(
                Permission::allow()
                    .with_updated_input(json!({"command": "ls"}))
                    .with_updated_permissions([PermissionUpdate::set_mode(
                        "acceptEdits",
                        "session",
                    )]),
            )
            .answer()
            .clone(),
            HookOutcome::decide(Permission::deny("no").interrupt())
                .answer()
                .clone(),
        ];
        for answer in answers {
            let read = HookAnswer::from_json(&answer.to_json_string()).unwrap();
            assert_eq!(read, answer);
            let specific = read.hook_specific_output.unwrap_or_default();
            assert!(specific.other.is_empty(), "{specific:?}");
            assert!(specific.decision.is_none_or(|d| d.other.is_empty()));
        }
    }

    #[test]
    fn a_wrong_output_names_its_field() {
        assert_eq!(
            HookAnswer::from_json(r#"{"hookSpecificOutput": {"decision": {"interrupt": 1}}}"#),
            Err(
                "its output is not a hook output: `hookSpecificOutput.decision.interrupt`: \
                 invalid type: integer `1`, expected a boolean"
                    .into()
            )
        );
        assert_eq!(
            HookAnswer::from_json(r#"{"continue": "no"}"#),
            Err(
                "its output is not a hook output: `continue`: invalid type: string \"no\", \
                 expected a boolean"
                    .into()
            )
        );
        assert!(HookAnswer::from_json("{")
            .unwrap_err()
            .starts_with("its output is not JSON: "));
    }
}
