//! Plugin hooks and permission policies served to Claude Code's own hooks (docs/protocol.md
//! §15): a Claude Code plugin written by `toolhost claude-plugin` registers, for each event,
//! an `mcp_tool` hook calling the hidden tool [`TOOL`] of the `toolhost serve` it runs, so the
//! running host answers every event: no process per event, the plugins' state shared with
//! their tools, and a reload applying from the next event. The router answers that tool on
//! the all-plugins server of every front end ([`hook_tool`]): stdio `serve`, `serve --http`
//! (a 2025-11-25 session or a 2026-07-28 request), isolated plugins alike.
//!
//! The CLI gives an `mcp_tool` hook no way to pass the whole hook input, only `${path}`
//! interpolation of its fields into string values, objects written as JSON. So the hook's
//! `input` names every field the event carries ([`hook_input_template`]), the structured
//! ones under `json`, and [`event_input`] reads them back into the input a `chat` hook gets.

use std::sync::Arc;

use serde_json::{json, value::RawValue, Map, Value};
use tokio::runtime::Handle;

use super::{Entered, Hooks};
use crate::{Client, Dispatch, Reply, Router};

/// The tool the hooks call. Not in `tools/list`: the model never sees it, and the CLI calls
/// a hook's tool whether or not its server listed it (§15.2). Plugin tools are always
/// `<plugin>__<tool>`, so no plugin's tool can take this name.
pub const TOOL: &str = "hook";

/// How a field of an event's input is interpolated and read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A string the event always carries (kept when empty).
    Text,
    /// A string the event may lack: an empty one is read as absent (the CLI interpolates a
    /// missing field as "").
    OptText,
    /// Anything else (objects, arrays, numbers, booleans): written as JSON by the CLI, parsed
    /// back; empty means absent.
    Json,
}

use Kind::{Json, OptText, Text};

/// The fields every event carries (CLI 2.1.332's base hook input).
const COMMON: &[(&str, Kind)] = &[
    ("session_id", Text),
    ("transcript_path", Text),
    ("cwd", Text),
    ("prompt_id", OptText),
    ("permission_mode", OptText),
    ("agent_id", OptText),
    ("agent_type", OptText),
    ("effort", Json),
];

/// An event's fields, each with its kind.
type Fields = &'static [(&'static str, Kind)];

/// The fields of each event beyond [`COMMON`], as the CLI's hook input schemas (2.1.328 to
/// 2.1.332) name them. Fields missing here are not passed: the SDK types keep them optional.
/// PreModelSwitch and PostModelSwitch have nothing beyond the common fields.
const OWN_FIELDS: &[(&[&str], Fields)] = &[
    (
        &["PreToolUse"],
        &[
            ("tool_name", Text),
            ("tool_input", Json),
            ("tool_use_id", Text),
            ("mcp_server", Json),
        ],
    ),
    (
        &["PostToolUse"],
        &[
            ("tool_name", Text),
            ("tool_input", Json),
            ("tool_response", Json),
            ("tool_use_id", Text),
            ("duration_ms", Json),
            ("mcp_server", Json),
        ],
    ),
    (
        &["PostToolUseFailure"],
        &[
            ("tool_name", Text),
            ("tool_input", Json),
            ("tool_use_id", Text),
            ("error", Text),
            ("is_interrupt", Json),
            ("duration_ms", Json),
            ("mcp_server", Json),
        ],
    ),
    (&["PostToolBatch"], &[("tool_calls", Json)]),
    (
        &["Notification"],
        &[
            ("message", Text),
            ("title", OptText),
            ("notification_type", Text),
        ],
    ),
    (
        &["UserPromptSubmit"],
        &[("prompt", Text), ("source", OptText)],
    ),
    (
        &["UserPromptExpansion"],
        &[
            ("expansion_type", Text),
            ("command_name", Text),
            ("command_args", Text),
            ("command_source", OptText),
            ("prompt", Text),
        ],
    ),
    (
        &["SessionStart"],
        &[
            ("source", Text),
            ("model", OptText),
            ("session_title", OptText),
            ("seconds_since_last_response", Json),
            ("context_tokens", Json),
        ],
    ),
    (&["SessionEnd"], &[("reason", Text)]),
    (
        &["Stop", "SubagentStop"],
        &[
            ("stop_hook_active", Json),
            ("agent_transcript_path", OptText),
            ("last_assistant_message", OptText),
            ("background_tasks", Json),
        ],
    ),
    (
        &["StopFailure"],
        &[
            ("error", Json),
            ("error_details", OptText),
            ("last_assistant_message", OptText),
        ],
    ),
    (&["SubagentStart"], &[]),
    (
        &["PreCompact"],
        &[("trigger", Text), ("custom_instructions", Json)],
    ),
    (
        &["PostCompact"],
        &[("trigger", Text), ("compact_summary", Text)],
    ),
    (
        &["PermissionRequest"],
        &[
            ("tool_name", Text),
            ("tool_input", Json),
            ("tool_use_id", OptText),
            ("permission_suggestions", Json),
            ("mcp_server", Json),
        ],
    ),
    (
        &["PermissionDenied"],
        &[
            ("tool_name", Text),
            ("tool_input", Json),
            ("tool_use_id", Text),
            ("reason", Text),
            ("mcp_server", Json),
        ],
    ),
    (&["Setup"], &[("trigger", Text)]),
    (
        &["TeammateIdle"],
        &[("teammate_name", Text), ("team_name", OptText)],
    ),
    (
        &["TaskCreated", "TaskCompleted"],
        &[
            ("task_id", Text),
            ("task_subject", Text),
            ("task_description", OptText),
            ("teammate_name", OptText),
            ("team_name", OptText),
        ],
    ),
    (
        &["Elicitation"],
        &[
            ("mcp_server_name", Text),
            ("message", Text),
            ("mode", OptText),
            ("url", OptText),
            ("elicitation_id", OptText),
            ("requested_schema", Json),
        ],
    ),
    (
        &["ElicitationResult"],
        &[
            ("mcp_server_name", Text),
            ("elicitation_id", OptText),
            ("mode", OptText),
            ("action", Text),
            ("content", Json),
        ],
    ),
    (
        &["ConfigChange"],
        &[("source", Text), ("file_path", OptText)],
    ),
    (&["WorktreeCreate"], &[("name", Text)]),
    (&["WorktreeRemove"], &[("worktree_path", Text)]),
    (
        &["InstructionsLoaded"],
        &[
            ("file_path", Text),
            ("memory_type", Text),
            ("load_reason", Text),
            ("globs", Json),
            ("trigger_file_path", OptText),
            ("parent_file_path", OptText),
        ],
    ),
    (&["CwdChanged"], &[("old_cwd", Text), ("new_cwd", Text)]),
    (&["FileChanged"], &[("file_path", Text), ("event", Text)]),
    (
        &["DirectoryAdded"],
        &[("directory", Text), ("source", Text)],
    ),
    (
        &["MessageDisplay"],
        &[
            ("turn_id", Text),
            ("message_id", Text),
            ("index", Json),
            ("final", Json),
            ("delta", Text),
        ],
    ),
    (
        &["PreSkillShellCommand"],
        &[("tool_name", Text), ("tool_input", Json)],
    ),
];

/// The fields of `event` beyond [`COMMON`] (none for an event not in [`OWN_FIELDS`]).
fn own_fields(event: &str) -> Fields {
    OWN_FIELDS
        .iter()
        .find(|(events, _)| events.contains(&event))
        .map_or(&[], |(_, fields)| fields)
}

/// The `input` of the `mcp_tool` hook for `event`: every field of the event as a `${field}`
/// placeholder, the strings under `text`, the rest under `json`.
pub fn hook_input_template(event: &str) -> Value {
    let (mut text, mut structured) = (Map::new(), Map::new());
    for &(name, kind) in COMMON.iter().chain(own_fields(event)) {
        let slot = if kind == Json {
            &mut structured
        } else {
            &mut text
        };
        slot.insert(name.to_string(), json!(format!("${{{name}}}")));
    }
    json!({"hook_event_name": event, "text": text, "json": structured})
}

/// The hook input the arguments of a [`TOOL`] call stand for: the inverse of
/// [`hook_input_template`] once the CLI filled it in.
pub fn event_input(arguments: &Value) -> Result<Value, String> {
    let event = arguments
        .get("hook_event_name")
        .and_then(Value::as_str)
        .filter(|e| super::EVENTS.contains(e))
        .ok_or_else(|| {
            format!(
                "`hook_event_name` must name a hook event (one of {})",
                super::EVENTS.join(", ")
            )
        })?;
    let mut input = Map::new();
    input.insert("hook_event_name".into(), json!(event));
    let section = |name: &str| arguments.get(name).and_then(Value::as_object);
    let (text, structured) = (section("text"), section("json"));
    // Only the event's own fields are read: nothing else reaches the plugins, and an error
    // names only fields of the table, never a client's text.
    for &(name, kind) in COMMON.iter().chain(own_fields(event)) {
        let from = if kind == Json { structured } else { text };
        let Some(value) = from.and_then(|s| s.get(name)) else {
            continue;
        };
        let value = match (kind, value) {
            (Json | OptText, Value::String(s)) if s.is_empty() => continue,
            (Json, Value::String(s)) => {
                serde_json::from_str(s).map_err(|e| format!("`json.{name}` is not JSON ({e})"))?
            }
            // Filled in by hand (tests): taken as it is.
            (Json, other) => other.clone(),
            (_, v @ Value::String(_)) => v.clone(),
            _ => return Err(format!("`text.{name}` must be a string")),
        };
        input.insert(name.to_string(), value);
    }
    Ok(Value::Object(input))
}

/// The router's answer to `client`'s `tools/call` `id` of [`TOOL`] with `arguments`: the
/// hooks' answer as the text a command hook would print, or an error result the CLI counts as
/// the hook failing (its `onFailure`). The event is the client's request `id`, so
/// `notifications/cancelled`, an HTTP client that goes away and a session's end withdraw it,
/// and an id in flight is refused, as for any request.
pub(crate) fn hook_tool(
    router: &Arc<Router>,
    client: &Client<'_>,
    id: &RawValue,
    arguments: Option<&RawValue>,
) -> Dispatch {
    let text = arguments.map_or("{}", RawValue::get);
    let input = serde_json::from_str(text)
        .map_err(|e| format!("the arguments are not JSON ({e})"))
        .and_then(|a| event_input(&a));
    let input = match input {
        Ok(input) => input,
        Err(e) => {
            tracing::warn!("a hook call toolhost cannot read: {e}");
            return Dispatch::Reply(Reply::result(id, &failed(&e)));
        }
    };
    let Ok(rt) = Handle::try_current() else {
        let e = "no runtime to run the hooks on";
        return Dispatch::Reply(Reply::result(id, &failed(e)));
    };
    let Some(entered) = Entered::new(router, client, id.to_owned()) else {
        return crate::in_flight::refused(id);
    };
    let hooks = Hooks::on(router.clone(), rt);
    let answering = async move {
        let result = match answer_as(&hooks, input, move || entered).await {
            Some(answer) => json!({"content": [{"type": "text", "text": answer.to_string()}]}),
            None => failed("the hook event was cancelled"),
        };
        Ok(result.to_string())
    };
    Dispatch::Later(id.to_owned(), Box::pin(answering))
}

/// The result of a hook call that failed for `why` (shown to the user by the CLI).
fn failed(why: &str) -> Value {
    json!({"content": [{"type": "text", "text": format!("toolhost: {why}")}], "isError": true})
}

/// The answer to an event in a run of its own (`toolhost event`), as [`hook_tool`] answers.
pub async fn answer(hooks: &Arc<Hooks>, input: Value) -> Value {
    let enter = || hooks.enter_run("hook");
    answer_as(hooks, input, enter)
        .await
        .unwrap_or_else(|| json!({}))
}

/// The answer to an event, in the form a command hook prints, its hooks run as the request
/// `enter` registers: every matching plugin hook runs as in `chat`; a PermissionRequest no
/// hook decided also asks the permission policies. `None` if it was withdrawn.
async fn answer_as(
    hooks: &Arc<Hooks>,
    input: Value,
    enter: impl FnOnce() -> Entered,
) -> Option<Value> {
    let event = input["hook_event_name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let outcome = hooks.outcome(&input.to_string(), None, enter).await?;
    let mut answer = outcome.answer.to_json();
    if event != "PermissionRequest" || decided(&answer) {
        return Some(answer);
    }
    let mut question = json!({
        "subtype": "can_use_tool",
        "tool_name": input["tool_name"],
        "input": input["tool_input"],
    });
    for field in ["tool_use_id", "permission_suggestions", "agent_id"] {
        if let Some(v) = input.get(field) {
            question[field] = v.clone();
        }
    }
    if let Some(decision) = hooks.check_permission(question).await {
        let decision = permission_decision(decision);
        if !answer.is_object() {
            answer = json!({});
        }
        answer["hookSpecificOutput"] = json!({
            "hookEventName": "PermissionRequest",
            "decision": decision,
        });
    }
    Some(answer)
}

/// Whether a PermissionRequest answer carries a decision already.
fn decided(answer: &Value) -> bool {
    answer
        .pointer("/hookSpecificOutput/decision/behavior")
        .is_some()
}

/// A policy's `can_use_tool` answer as a PermissionRequest hook's `decision`: the same
/// `behavior`, `allow` with its `updatedInput` (and `updatedPermissions`), `deny` with its
/// `message` (and `interrupt`).
fn permission_decision(policy: Value) -> Value {
    let keep: &[&str] = match policy["behavior"].as_str() {
        Some("allow") => &["behavior", "updatedInput", "updatedPermissions"],
        _ => &["behavior", "message", "interrupt"],
    };
    let mut decision = Map::new();
    for k in keep {
        if let Some(v) = policy.get(*k) {
            decision.insert(k.to_string(), v.clone());
        }
    }
    Value::Object(decision)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the CLI does with a template: `${path}` replaced by the field (objects as JSON,
    /// missing ones as "").
    fn fill(template: &Value, input: &Value) -> Value {
        match template {
            Value::String(s) => {
                let name = s.trim_start_matches("${").trim_end_matches('}');
                if name == s {
                    return template.clone();
                }
                match &input[name] {
                    Value::Null => json!(""),
                    Value::String(v) => json!(v),
                    other => json!(other.to_string()),
                }
            }
            Value::Object(m) => {
                Value::Object(m.iter().map(|(k, v)| (k.clone(), fill(v, input))).collect())
            }
            other => other.clone(),
        }
    }

    #[test]
    fn an_interpolated_template_reads_back_as_the_input() {
        let input = json!({
            "hook_event_name": "PreToolUse",
            "session_id": "s", "transcript_path": "/t", "cwd": "/w",
            "permission_mode": "default",
            "tool_name": "Bash", "tool_input": {"command": "rm -rf /", "n": [1, {"x": null}]},
            "tool_use_id": "toolu_1",
        });
        let args = fill(&hook_input_template("PreToolUse"), &input);
        assert_eq!(
            args["json"]["tool_input"],
            json!(input["tool_input"].to_string())
        );
        assert_eq!(event_input(&args).unwrap(), input);
    }

    #[test]
    fn empty_strings_stay_only_where_the_event_always_has_the_field() {
        let input = json!({"hook_event_name": "UserPromptSubmit", "session_id": "s",
                           "transcript_path": "", "cwd": "/w", "prompt": ""});
        let args = fill(&hook_input_template("UserPromptSubmit"), &input);
        let back = event_input(&args).unwrap();
        assert_eq!(back["prompt"], json!(""));
        assert_eq!(back["transcript_path"], json!(""));
        assert!(back.get("agent_id").is_none(), "{back}");
        assert!(back.get("source").is_none(), "{back}");
    }

    #[test]
    fn every_event_has_a_template_with_its_name() {
        for event in super::super::EVENTS {
            let t = hook_input_template(event);
            assert_eq!(t["hook_event_name"], json!(event));
            assert_eq!(t["text"]["session_id"], json!("${session_id}"));
        }
        let t = hook_input_template("PermissionRequest");
        assert_eq!(
            t["json"]["permission_suggestions"],
            json!("${permission_suggestions}")
        );
    }

    #[test]
    fn fields_the_event_does_not_have_are_left_out() {
        let args = json!({"hook_event_name": "Stop",
                          "text": {"cwd": "/w", "tool_name": "Bash", "\u{1b}]0;x": "y"},
                          "json": {"tool_input": "{}", "stop_hook_active": "true"}});
        assert_eq!(
            event_input(&args).unwrap(),
            json!({"hook_event_name": "Stop", "cwd": "/w", "stop_hook_active": true})
        );
    }

    #[test]
    fn bad_arguments_are_refused_with_the_reason() {
        let e = event_input(&json!({"hook_event_name": "Nope"})).unwrap_err();
        assert!(e.contains("hook_event_name"), "{e}");
        let e = event_input(&json!({"hook_event_name": "PreToolUse",
                                    "json": {"tool_input": "{not json"}}))
        .unwrap_err();
        assert!(e.contains("json.tool_input"), "{e}");
        let e =
            event_input(&json!({"hook_event_name": "PreToolUse", "text": {"cwd": 3}})).unwrap_err();
        assert!(e.contains("text.cwd"), "{e}");
    }

    #[test]
    fn a_policy_answer_becomes_a_permission_request_decision() {
        let allow = json!({"behavior": "allow", "updatedInput": {"a": 1}, "toolUseID": "x"});
        assert_eq!(
            permission_decision(allow),
            json!({"behavior": "allow", "updatedInput": {"a": 1}})
        );
        let deny = json!({"behavior": "deny", "message": "no", "interrupt": true});
        assert_eq!(permission_decision(deny.clone()), deny);
        assert!(decided(
            &json!({"hookSpecificOutput": {"decision": {"behavior": "deny"}}})
        ));
        assert!(!decided(&json!({})));
    }
}
