//! The hook events toolhost registers with the CLI, and what a hook's matcher is matched
//! against in each (docs/protocol.md §14.1, §14.2).

use serde_json::{json, Map, Value};

/// Every event the supported CLI versions accept (2.1.328 to 2.1.331 list the same 33).
/// Registered once each, matcher-less: which plugin hooks run is decided per event, so hooks
/// that a reload adds, changes or removes apply without restarting the CLI.
pub const EVENTS: [&str; 33] = [
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

/// What a hook's `matcher` is matched against for `event`: the tool name for the tool events,
/// the field Claude Code's own matchers use for a few others; `None` for the events a
/// matcher does not apply to (every hook of the event runs).
pub fn subject<'a>(event: &str, input: &'a Value) -> Option<&'a str> {
    let field = match event {
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure" | "PermissionRequest"
        | "PermissionDenied" => "tool_name",
        "SessionStart" => "source",
        "SessionEnd" => "reason",
        "PreCompact" | "PostCompact" => "trigger",
        "Notification" => "notification_type",
        "SubagentStart" | "SubagentStop" => "agent_type",
        _ => return None,
    };
    input[field].as_str()
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
        assert_eq!(
            r["PreToolUse"],
            json!([{"matcher": null, "hookCallbackIds": ["toolhost_PreToolUse"], "timeout": 600}])
        );
    }

    #[test]
    fn the_subject_of_a_matcher_by_event() {
        let input = json!({"tool_name": "Bash", "source": "startup"});
        assert_eq!(subject("PreToolUse", &input), Some("Bash"));
        assert_eq!(subject("SessionStart", &input), Some("startup"));
        assert_eq!(subject("UserPromptSubmit", &input), None);
        assert_eq!(subject("Notification", &input), None);
    }
}
