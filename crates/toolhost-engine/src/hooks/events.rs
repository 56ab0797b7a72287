//! The hook events toolhost registers with the CLI, and what a hook's matcher is matched
//! against in each (docs/protocol.md §14.1, §14.2).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Map, Value};

/// Every event the supported CLI versions accept: the 33 of 2.1.328 to 2.1.331, and
/// PreSkillShellCommand, which 2.1.332 adds (the older ones accept its registration and never
/// send it). Registered once each, matcher-less: which plugin hooks run is decided per event,
/// so hooks that a reload adds, changes or removes apply without restarting the CLI.
pub const EVENTS: [&str; 34] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PreModelSwitch",
    "PostModelSwitch",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
    "DirectoryAdded",
    "MessageDisplay",
    "PreSkillShellCommand",
];

/// The CLI's own limit on one callback, in seconds: only a backstop, since each hook has its
/// own (`hook_timeout`, 5 s by default). Past it the CLI withdraws the callback and, for
/// PreToolUse, does not run the tool (§14.4).
pub const BACKSTOP_SECS: u64 = 600;

/// The `hooks` of the `initialize` request: every event once, matcher-less, with callback id
/// `toolhost_<Event>`.
pub fn registration() -> Value {
    let hooks: Map<String, Value> = EVENTS
        .iter()
        .map(|e| {
            let entry = json!([{
                "matcher": null,
                "hookCallbackIds": [format!("toolhost_{e}")],
                "timeout": BACKSTOP_SECS,
            }]);
            (e.to_string(), entry)
        })
        .collect();
    Value::Object(hooks)
}

/// What toolhost reads of an event's input to pick its hooks, borrowed from the line: the
/// rest goes to the hooks as the CLI wrote it.
#[derive(Debug, Default, Deserialize)]
pub struct Head<'a> {
    #[serde(borrow, default)]
    pub hook_event_name: Cow<'a, str>,
    #[serde(borrow, default)]
    tool_name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    source: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reason: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    trigger: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    notification_type: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    agent_type: Option<Cow<'a, str>>,
}

impl<'a> Head<'a> {
    /// Reads the head of an input (a JSON object).
    pub fn read(input: &'a str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(input)
    }

    /// What a hook's `matcher` is matched against: the tool name for the tool events, the
    /// field Claude Code's own matchers use for a few others; `None` for the events a matcher
    /// does not apply to (every hook of the event runs).
    pub fn subject(&self) -> Option<&str> {
        let field = match self.hook_event_name.as_ref() {
            "PreToolUse"
            | "PostToolUse"
            | "PostToolUseFailure"
            | "PermissionRequest"
            | "PermissionDenied"
            | "PreSkillShellCommand" => &self.tool_name,
            "SessionStart" => &self.source,
            "SessionEnd" => &self.reason,
            "PreCompact" | "PostCompact" => &self.trigger,
            "Notification" => &self.notification_type,
            "SubagentStart" | "SubagentStop" => &self.agent_type,
            _ => return None,
        };
        field.as_deref()
    }
}

/// Whether hooks of `event` guard a tool call (their input carries `tool_input`, which an
/// `updatedInput` replaces for the next hook).
pub fn is_tool_event(event: &str) -> bool {
    matches!(event, "PreToolUse" | "PermissionRequest")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_is_registered_once_without_a_matcher() {
        let r = registration();
        let map = r.as_object().unwrap();
        assert_eq!(map.len(), EVENTS.len());
        assert_eq!(map.len(), 34);
        assert!(map.contains_key("PreSkillShellCommand"));
        assert_eq!(
            r["PreToolUse"],
            json!([{"matcher": null, "hookCallbackIds": ["toolhost_PreToolUse"], "timeout": 600}])
        );
    }

    #[test]
    fn the_subject_of_a_matcher_by_event() {
        let subject = |event: &str| {
            let input = json!({"hook_event_name": event, "tool_name": "Ba\\sh",
                               "source": "startup", "tool_input": {"x": [1]}})
            .to_string();
            Head::read(&input).unwrap().subject().map(str::to_string)
        };
        assert_eq!(subject("PreToolUse").as_deref(), Some("Ba\\sh"));
        assert_eq!(subject("PreSkillShellCommand").as_deref(), Some("Ba\\sh"));
        assert_eq!(subject("SessionStart").as_deref(), Some("startup"));
        assert_eq!(subject("UserPromptSubmit"), None);
        assert_eq!(subject("Notification"), None);
        assert!(Head::read("[1]").is_err());
    }
}
