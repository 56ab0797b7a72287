//! How the answers of several plugins' hooks make one answer to the CLI (docs/protocol.md
//! §14.6): in plugin-name order, the first deny wins and names its plugin, contexts are
//! joined, an updated input is what the next hook sees; a hook that fails counts as its
//! plugin's `on_error`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{json, Map, Value};
use toolhost_plugin::extras::method;

use super::{events::is_tool_event, table::Matched};
use crate::config::OnError;

/// Folds the answers of a chain of hooks or policies into one.
pub trait Fold: Send + 'static {
    /// The plugin method each item is asked with.
    fn method(&self) -> &'static str;
    /// The params for `item`, given the answers so far.
    fn params(&self, item: &Matched) -> String;
    /// Takes `item`'s answer (`Err`: why it failed); false ends the chain (a deny).
    fn take(&mut self, item: &Matched, answer: Result<Value, String>) -> bool;
    /// [`Fold::take`] of an answer as the plugin wrote it.
    fn take_text(&mut self, item: &Matched, text: &str) -> bool {
        let answer = serde_json::from_str(text).map_err(|e| format!("its output is not JSON: {e}"));
        self.take(item, answer)
    }
    /// The one answer.
    fn answer(self) -> Value;
}

/// A refusal: which plugin, and its reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Denied {
    pub plugin: String,
    pub reason: String,
}

impl Denied {
    /// `denied by guard: rm -rf is refused`: what the model and the terminal see.
    pub fn text(&self) -> String {
        format!("denied by {}: {}", self.plugin, self.reason)
    }
}

/// Warns that `item` failed, and what that counts as.
fn warn_failed(item: &Matched, why: &str) {
    let counts = match item.on_error {
        OnError::Deny => "denied (on_error = \"deny\")",
        OnError::Allow => "skipped (on_error = \"allow\")",
    };
    tracing::warn!(plugin = %item.plugin, "{} failed: {why}; {counts}", item.describe());
}

/// The answers of one event's hooks.
pub struct HookFold {
    event: String,
    /// The event's input as the next hook gets it (`tool_input` replaced by an update).
    input: EventInput,
    updated_input: bool,
    denied: Option<Denied>,
    /// The first `ask` (plugin, reason), and whether any hook allowed.
    ask: Option<(String, String)>,
    allow: bool,
    /// A PermissionRequest hook's allow decision (its `updatedPermissions`, ...).
    allow_decision: Option<Map<String, Value>>,
    contexts: Vec<String>,
    system_messages: Vec<String>,
    stop: Option<String>,
    suppress_output: bool,
    /// Other fields of `hookSpecificOutput` (`updatedToolOutput`, ...): the last one wins.
    other: Map<String, Value>,
}

/// An event's input: the CLI's text, until a hook changes its tool input.
enum EventInput {
    Raw(String),
    Parsed(Value),
}

impl EventInput {
    /// The input as a value, to change it.
    fn parsed(&mut self) -> Result<&mut Value, String> {
        if let EventInput::Raw(text) = self {
            let v = serde_json::from_str(text).map_err(|e| format!("the event's input: {e}"))?;
            *self = EventInput::Parsed(v);
        }
        match self {
            EventInput::Parsed(v) => Ok(v),
            EventInput::Raw(_) => unreachable!("parsed above"),
        }
    }

    /// The tool input as changed (only asked once it was).
    fn tool_input(&self) -> Value {
        match self {
            EventInput::Parsed(v) => v["tool_input"].clone(),
            EventInput::Raw(_) => Value::Null,
        }
    }
}

impl HookFold {
    /// The fold of an event whose input is `input`.
    pub fn new(event: &str, input: Value) -> Self {
        Self::with_input(event, EventInput::Parsed(input))
    }

    /// The fold of an event whose input is the JSON text `input`, as the CLI wrote it (passed
    /// to the hooks as it is unless one changes the tool input).
    pub fn raw(event: &str, input: String) -> Self {
        Self::with_input(event, EventInput::Raw(input))
    }

    fn with_input(event: &str, input: EventInput) -> Self {
        HookFold {
            event: event.to_string(),
            input,
            updated_input: false,
            denied: None,
            ask: None,
            allow: false,
            allow_decision: None,
            contexts: Vec::new(),
            system_messages: Vec::new(),
            stop: None,
            suppress_output: false,
            other: Map::new(),
        }
    }

    /// The refusal, if a hook refused.
    pub fn denied(&self) -> Option<&Denied> {
        self.denied.as_ref()
    }

    fn deny(&mut self, plugin: &str, reason: String) {
        self.denied = Some(Denied {
            plugin: plugin.to_string(),
            reason,
        });
    }

    /// Reads one hook output; `Err` when it is not one.
    fn absorb(&mut self, plugin: &str, output: Value) -> Result<bool, String> {
        let mut out = match output {
            Value::Object(o) => o,
            other => {
                return Err(format!(
                    "its output is not a JSON object: {}",
                    brief(&other)
                ))
            }
        };
        let specific = match out.remove("hookSpecificOutput") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(o)) => o,
            Some(v) => {
                return Err(format!(
                    "hookSpecificOutput is not an object: {}",
                    brief(&v)
                ))
            }
        };
        let out = &out;
        let text = |o: &Map<String, Value>, key: &str| -> Result<Option<String>, String> {
            match o.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(v) => Err(format!("{key} is not a string: {}", brief(v))),
            }
        };
        let decision = text(out, "decision")?;
        let permission = text(&specific, "permissionDecision")?;
        if let Some(d) = &permission {
            if !["allow", "deny", "ask", "defer"].contains(&d.as_str()) {
                return Err(format!("unknown permissionDecision `{d}`"));
            }
        }
        let reason = text(&specific, "permissionDecisionReason")?.or(text(out, "reason")?);
        let context = text(&specific, "additionalContext")?;
        let system = text(out, "systemMessage")?;
        let stop_reason = text(out, "stopReason")?;
        // A PermissionRequest hook decides with `decision: {behavior, ...}`.
        let request_decision = match specific.get("decision") {
            Some(Value::Object(d)) => Some(d.clone()),
            None | Some(Value::Null) => None,
            Some(v) => return Err(format!("decision is not an object: {}", brief(v))),
        };

        if let Some(c) = context {
            self.contexts.push(c);
        }
        if let Some(m) = system {
            self.system_messages.push(m);
        }
        if out.get("continue") == Some(&Value::Bool(false)) && self.stop.is_none() {
            self.stop = Some(stop_reason.unwrap_or_default());
        }
        if out.get("suppressOutput") == Some(&Value::Bool(true)) {
            self.suppress_output = true;
        }
        let refused = decision.as_deref() == Some("block")
            || permission.as_deref() == Some("deny")
            || request_decision
                .as_ref()
                .is_some_and(|d| d.get("behavior") == Some(&json!("deny")));
        if refused {
            let message = request_decision
                .as_ref()
                .and_then(|d| d.get("message"))
                .and_then(Value::as_str)
                .map(str::to_string);
            let why = reason
                .or(message)
                .unwrap_or_else(|| "no reason given".into());
            self.deny(plugin, why);
            return Ok(false);
        }
        match permission.as_deref() {
            Some("ask") if self.ask.is_none() => {
                self.ask = Some((plugin.to_string(), reason.unwrap_or_default()));
            }
            Some("allow") => self.allow = true,
            _ => {}
        }
        let mut updated = specific.get("updatedInput").cloned();
        if let Some(d) = request_decision.filter(|d| d.get("behavior") == Some(&json!("allow"))) {
            updated = updated.or_else(|| d.get("updatedInput").cloned());
            self.allow_decision.get_or_insert(d);
        }
        if let Some(new_input) = updated.filter(|_| is_tool_event(&self.event)) {
            if !new_input.is_object() {
                return Err(format!(
                    "updatedInput is not an object: {}",
                    brief(&new_input)
                ));
            }
            self.input.parsed()?["tool_input"] = new_input;
            self.updated_input = true;
        }
        for (k, v) in specific {
            let known = [
                "hookEventName",
                "permissionDecision",
                "permissionDecisionReason",
                "additionalContext",
                "updatedInput",
                "decision",
            ];
            if !known.contains(&k.as_str()) {
                self.other.insert(k, v);
            }
        }
        Ok(true)
    }
}

impl Fold for HookFold {
    fn method(&self) -> &'static str {
        method::HOOK_RUN
    }

    fn params(&self, item: &Matched) -> String {
        let id = serde_json::to_string(&item.hook).expect("a string");
        match &self.input {
            EventInput::Raw(text) => format!(r#"{{"id":{id},"input":{text}}}"#),
            EventInput::Parsed(v) => format!(r#"{{"id":{id},"input":{v}}}"#),
        }
    }

    /// The two answers most hooks give, without building a value: nothing (`{}`), and a
    /// PreToolUse deny with its reason and nothing else. Others go through [`Fold::take`].
    fn take_text(&mut self, item: &Matched, text: &str) -> bool {
        if text.trim() == "{}" {
            // An empty output changes nothing.
            return true;
        }
        if self.event == "PreToolUse" {
            if let Ok(Only { specific }) = serde_json::from_str::<Only<'_>>(text) {
                // `hookEventName` is not read, as in `absorb`.
                if specific.decision == "deny" {
                    let why = specific.reason.map(|r| r.into_owned());
                    self.deny(
                        &item.plugin,
                        why.unwrap_or_else(|| "no reason given".into()),
                    );
                    return false;
                }
            }
        }
        let answer = serde_json::from_str(text).map_err(|e| format!("its output is not JSON: {e}"));
        self.take(item, answer)
    }

    fn take(&mut self, item: &Matched, answer: Result<Value, String>) -> bool {
        let why = match answer.map(|output| self.absorb(&item.plugin, output)) {
            Ok(Ok(go_on)) => return go_on,
            Ok(Err(why)) | Err(why) => why,
        };
        warn_failed(item, &why);
        match item.on_error {
            OnError::Allow => true,
            OnError::Deny => {
                let hook = item.hook.as_deref().unwrap_or("?");
                self.deny(&item.plugin, format!("its hook {hook} failed: {why}"));
                false
            }
        }
    }

    fn answer(self) -> Value {
        let mut out = Map::new();
        if let Some(reason) = self.stop {
            out.insert("continue".into(), json!(false));
            if !reason.is_empty() {
                out.insert("stopReason".into(), json!(reason));
            }
        }
        if self.suppress_output {
            out.insert("suppressOutput".into(), json!(true));
        }
        if !self.system_messages.is_empty() {
            out.insert(
                "systemMessage".into(),
                json!(self.system_messages.join("\n")),
            );
        }
        let mut specific = self.other;
        let event = self.event.as_str();
        match (&self.denied, event) {
            (Some(d), "PreToolUse") => {
                specific.insert("permissionDecision".into(), json!("deny"));
                specific.insert("permissionDecisionReason".into(), json!(d.text()));
            }
            (Some(d), "PermissionRequest") => {
                specific.insert(
                    "decision".into(),
                    json!({"behavior": "deny", "message": d.text()}),
                );
            }
            (Some(d), _) => {
                out.insert("decision".into(), json!("block"));
                out.insert("reason".into(), json!(d.text()));
            }
            // PreSkillShellCommand (CLI 2.1.332) reads a PreToolUse-style decision, and an ask
            // keeps the skill's command from running (docs/protocol.md §14.3): passed on, not
            // dropped. Its updatedInput never counts (not a tool event).
            (None, "PreToolUse" | "PreSkillShellCommand") => {
                if let Some((plugin, reason)) = &self.ask {
                    specific.insert("permissionDecision".into(), json!("ask"));
                    let why = format!("asked by {plugin}: {reason}");
                    specific.insert("permissionDecisionReason".into(), json!(why));
                } else if self.allow {
                    specific.insert("permissionDecision".into(), json!("allow"));
                }
                if self.updated_input {
                    specific.insert("updatedInput".into(), self.input.tool_input());
                }
            }
            (None, "PermissionRequest") => {
                if let Some(mut d) = self.allow_decision {
                    if self.updated_input {
                        d.insert("updatedInput".into(), self.input.tool_input());
                    }
                    specific.insert("decision".into(), Value::Object(d));
                }
            }
            (None, _) => {}
        }
        if !self.contexts.is_empty() {
            specific.insert(
                "additionalContext".into(),
                json!(self.contexts.join("\n\n")),
            );
        }
        if !specific.is_empty() {
            specific.insert("hookEventName".into(), json!(event));
            out.insert("hookSpecificOutput".into(), Value::Object(specific));
        }
        Value::Object(out)
    }
}

/// The answers of the permission policies to one `can_use_tool` question.
pub struct PolicyFold {
    /// The question as the next policy gets it (`input` replaced by an update).
    request: Value,
    allowed: Option<Map<String, Value>>,
    denied: Option<Value>,
}

impl PolicyFold {
    /// `request`: the `can_use_tool` request's fields.
    pub fn new(request: Value) -> Self {
        PolicyFold {
            request,
            allowed: None,
            denied: None,
        }
    }

    fn absorb(&mut self, plugin: &str, answer: &Value) -> Result<bool, String> {
        let behavior = answer["behavior"].as_str().unwrap_or_default();
        match behavior {
            "deny" => {
                let message = answer["message"].as_str().unwrap_or("no reason given");
                let denied = Denied {
                    plugin: plugin.to_string(),
                    reason: message.to_string(),
                };
                let mut d = json!({"behavior": "deny", "message": denied.text()});
                if answer["interrupt"] == json!(true) {
                    d["interrupt"] = json!(true);
                }
                self.denied = Some(d);
                Ok(false)
            }
            "allow" => {
                match answer.get("updatedInput") {
                    None | Some(Value::Null) => {}
                    Some(i @ Value::Object(_)) => self.request["input"] = i.clone(),
                    Some(v) => return Err(format!("updatedInput is not an object: {}", brief(v))),
                }
                if self.allowed.is_none() {
                    let mut a = answer.as_object().cloned().unwrap_or_default();
                    a.remove("updatedInput");
                    self.allowed = Some(a);
                }
                Ok(true)
            }
            "defer" => Ok(true),
            _ => Err(format!(
                "its answer is not allow, deny or defer: {}",
                brief(answer)
            )),
        }
    }
}

impl Fold for PolicyFold {
    fn method(&self) -> &'static str {
        method::PERMISSION_CHECK
    }

    fn params(&self, _item: &Matched) -> String {
        self.request.to_string()
    }

    fn take(&mut self, item: &Matched, answer: Result<Value, String>) -> bool {
        let why = match answer.map(|a| self.absorb(&item.plugin, &a)) {
            Ok(Ok(go_on)) => return go_on,
            Ok(Err(why)) | Err(why) => why,
        };
        warn_failed(item, &why);
        match item.on_error {
            OnError::Allow => true,
            OnError::Deny => {
                let denied = Denied {
                    plugin: item.plugin.clone(),
                    reason: format!("its permission policy failed: {why}"),
                };
                self.denied = Some(json!({"behavior": "deny", "message": denied.text()}));
                false
            }
        }
    }

    /// The settled answer, or `null` when every policy deferred.
    fn answer(self) -> Value {
        if let Some(d) = self.denied {
            return d;
        }
        match self.allowed {
            Some(mut a) => {
                a.insert("updatedInput".into(), self.request["input"].clone());
                Value::Object(a)
            }
            None => Value::Null,
        }
    }
}

/// An output that is only a `hookSpecificOutput` with a decision and perhaps its reason.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Only<'a> {
    #[serde(borrow, rename = "hookSpecificOutput")]
    specific: OnlyDecision<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OnlyDecision<'a> {
    #[serde(borrow, rename = "hookEventName")]
    _event: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "permissionDecision")]
    decision: Cow<'a, str>,
    #[serde(borrow, rename = "permissionDecisionReason")]
    reason: Option<Cow<'a, str>>,
}

/// A value shortened for a message.
fn brief(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn item(plugin: &str, on_error: OnError) -> Matched {
        Matched {
            plugin: plugin.into(),
            hook: Some("h".into()),
            timeout: Duration::from_secs(5),
            on_error,
            broken: None,
        }
    }

    fn pre(input: Value) -> HookFold {
        HookFold::new(
            "PreToolUse",
            json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": input}),
        )
    }

    fn deny(reason: &str) -> Value {
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "deny", "permissionDecisionReason": reason}})
    }

    #[test]
    fn the_first_deny_wins_and_names_its_plugin() {
        let mut f = pre(json!({"command": "rm -rf /"}));
        let ctx = json!({"hookSpecificOutput": {"additionalContext": "A"}});
        assert!(f.take(&item("audit", OnError::Allow), Ok(ctx)));
        assert!(!f.take(&item("guard", OnError::Deny), Ok(deny("rm -rf is refused"))));
        assert_eq!(
            f.denied().unwrap().text(),
            "denied by guard: rm -rf is refused"
        );
        assert_eq!(
            f.answer(),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "denied by guard: rm -rf is refused",
                "additionalContext": "A"}})
        );
        // `decision: "block"` refuses too; for other events it is the answer's form.
        let mut f = HookFold::new("UserPromptSubmit", json!({"prompt": "x"}));
        assert!(!f.take(
            &item("p", OnError::Allow),
            Ok(json!({"decision": "block", "reason": "no"}))
        ));
        assert_eq!(
            f.answer(),
            json!({"decision": "block", "reason": "denied by p: no"})
        );
    }

    #[test]
    fn contexts_join_updated_input_chains_and_ask_beats_allow() {
        let mut f = pre(json!({"command": "ls"}));
        let first = json!({"hookSpecificOutput": {"permissionDecision": "allow",
            "updatedInput": {"command": "ls -a"}, "additionalContext": "one"},
            "systemMessage": "s1"});
        assert!(f.take(&item("a", OnError::Deny), Ok(first)));
        // The next hook sees the updated input.
        let params: Value = serde_json::from_str(&f.params(&item("b", OnError::Deny))).unwrap();
        assert_eq!(params["input"]["tool_input"], json!({"command": "ls -a"}));
        assert_eq!(params["id"], "h");
        let second = json!({"hookSpecificOutput": {"permissionDecision": "ask",
            "permissionDecisionReason": "sure?", "additionalContext": "two",
            "updatedInput": {"command": "ls -al"}}, "systemMessage": "s2",
            "continue": false, "stopReason": "enough", "suppressOutput": true});
        assert!(f.take(&item("b", OnError::Deny), Ok(second)));
        assert!(f.take(&item("c", OnError::Deny), Ok(json!({}))));
        assert_eq!(
            f.answer(),
            json!({"continue": false, "stopReason": "enough", "suppressOutput": true,
                "systemMessage": "s1\ns2",
                "hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "ask", "permissionDecisionReason": "asked by b: sure?",
                    "updatedInput": {"command": "ls -al"}, "additionalContext": "one\n\ntwo"}})
        );
        // Nothing said: an empty answer.
        let mut f = HookFold::new("Stop", json!({}));
        assert!(f.take(&item("a", OnError::Allow), Ok(json!({}))));
        assert_eq!(f.answer(), json!({}));
        // Other specific fields pass, the last one winning.
        let mut f = HookFold::new("PostToolUse", json!({}));
        let out = |v: &str| json!({"hookSpecificOutput": {"updatedToolOutput": v}});
        f.take(&item("a", OnError::Allow), Ok(out("A")));
        f.take(&item("b", OnError::Allow), Ok(out("B")));
        assert_eq!(
            f.answer(),
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "B"}})
        );
    }

    #[test]
    fn an_answer_as_text_folds_as_its_value() {
        for text in [
            "{}",
            " {} ",
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no \"rm\""}}"#,
            r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":null}}"#,
            r#"{"hookSpecificOutput":{"permissionDecision":"deny"},"reason":"r"}"#,
            r#"{"hookSpecificOutput":{"permissionDecision":"deny","additionalContext":"c"}}"#,
            r#"{"hookSpecificOutput":{"permissionDecision":"allow","permissionDecisionReason":"ok"}}"#,
            r#"{"hookSpecificOutput":{"permissionDecision":"maybe"}}"#,
            "[]",
            "not json",
        ] {
            for on_error in [OnError::Allow, OnError::Deny] {
                let mut as_text = pre(json!({"command": "ls"}));
                let mut as_value = pre(json!({"command": "ls"}));
                let value =
                    serde_json::from_str(text).map_err(|e| format!("its output is not JSON: {e}"));
                assert_eq!(
                    as_text.take_text(&item("p", on_error), text),
                    as_value.take(&item("p", on_error), value),
                    "{text}"
                );
                assert_eq!(as_text.denied(), as_value.denied(), "{text}");
                assert_eq!(as_text.answer(), as_value.answer(), "{text}");
            }
        }
    }

    #[test]
    fn a_failed_hook_follows_on_error() {
        for (answer, why) in [
            (Err("it panicked".to_string()), "it panicked"),
            (Ok(json!("yes")), "its output is not a JSON object: \"yes\""),
            (
                Ok(json!({"hookSpecificOutput": {"permissionDecision": "maybe"}})),
                "unknown permissionDecision `maybe`",
            ),
            (
                Ok(json!({"hookSpecificOutput": {"additionalContext": 3}})),
                "additionalContext is not a string: 3",
            ),
        ] {
            let mut open = pre(json!({}));
            assert!(open.take(&item("p", OnError::Allow), answer.clone()));
            assert_eq!(open.answer(), json!({}), "{why}");
            let mut closed = pre(json!({}));
            assert!(!closed.take(&item("p", OnError::Deny), answer));
            assert_eq!(
                closed.denied().unwrap().text(),
                format!("denied by p: its hook h failed: {why}")
            );
        }
    }

    #[test]
    fn a_skill_shell_command_ask_is_passed_on_and_a_deny_blocks() {
        let input = json!({"hook_event_name": "PreSkillShellCommand", "tool_name": "Bash",
            "tool_input": {"command": "ls"}});
        let mut f = HookFold::new("PreSkillShellCommand", input.clone());
        let ask = json!({"hookSpecificOutput": {"permissionDecision": "ask",
            "permissionDecisionReason": "sure?"}});
        assert!(f.take(&item("a", OnError::Deny), Ok(ask)));
        assert_eq!(
            f.answer(),
            json!({"hookSpecificOutput": {"hookEventName": "PreSkillShellCommand",
                "permissionDecision": "ask", "permissionDecisionReason": "asked by a: sure?"}})
        );
        let mut f = HookFold::new("PreSkillShellCommand", input);
        let deny = json!({"hookSpecificOutput": {"permissionDecision": "deny",
            "permissionDecisionReason": "no"}});
        assert!(!f.take(&item("g", OnError::Deny), Ok(deny)));
        assert_eq!(
            f.answer(),
            json!({"decision": "block", "reason": "denied by g: no"})
        );
    }

    #[test]
    fn permission_request_hooks_decide_with_a_decision_object() {
        let mut f = HookFold::new(
            "PermissionRequest",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        );
        let allow = json!({"hookSpecificOutput": {"decision": {"behavior": "allow",
            "updatedInput": {"command": "ls -a"}, "updatedPermissions": []}}});
        assert!(f.take(&item("a", OnError::Deny), Ok(allow)));
        assert_eq!(
            f.answer(),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedInput": {"command": "ls -a"},
                    "updatedPermissions": []}}})
        );
        let mut f = HookFold::new("PermissionRequest", json!({"tool_input": {}}));
        let deny =
            json!({"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "m"}}});
        assert!(!f.take(&item("g", OnError::Deny), Ok(deny)));
        assert_eq!(
            f.answer()["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "denied by g: m"})
        );
    }

    #[test]
    fn policies_settle_or_defer() {
        let question = json!({"subtype": "can_use_tool", "tool_name": "Bash",
            "input": {"command": "ls"}, "tool_use_id": "t"});
        // Every policy defers: no answer.
        let mut f = PolicyFold::new(question.clone());
        assert!(f.take(&item("a", OnError::Deny), Ok(json!({"behavior": "defer"}))));
        assert_eq!(f.answer(), Value::Null);
        // An allow with an update, passed on to the next; a later deny still wins.
        let mut f = PolicyFold::new(question.clone());
        let allow = json!({"behavior": "allow", "updatedInput": {"command": "ls -a"},
            "updatedPermissions": [{"type": "addRules"}]});
        assert!(f.take(&item("a", OnError::Deny), Ok(allow)));
        let params: Value = serde_json::from_str(&f.params(&item("b", OnError::Deny))).unwrap();
        assert_eq!(params["input"], json!({"command": "ls -a"}));
        assert_eq!(params["tool_use_id"], "t");
        assert!(f.take(&item("b", OnError::Deny), Ok(json!({"behavior": "defer"}))));
        assert_eq!(
            f.answer(),
            json!({"behavior": "allow", "updatedInput": {"command": "ls -a"},
                "updatedPermissions": [{"type": "addRules"}]})
        );
        let mut f = PolicyFold::new(question.clone());
        assert!(f.take(&item("a", OnError::Deny), Ok(json!({"behavior": "allow"}))));
        let deny = json!({"behavior": "deny", "message": "no", "interrupt": true});
        assert!(!f.take(&item("b", OnError::Deny), Ok(deny)));
        assert_eq!(
            f.answer(),
            json!({"behavior": "deny", "message": "denied by b: no", "interrupt": true})
        );
        // A failed policy: closed by default, open when configured.
        let mut f = PolicyFold::new(question.clone());
        assert!(!f.take(
            &item("a", OnError::Deny),
            Ok(json!({"behavior": "perhaps"}))
        ));
        assert_eq!(
            f.answer()["message"],
            "denied by a: its permission policy failed: its answer is not allow, deny or \
             defer: {\"behavior\":\"perhaps\"}"
        );
        let mut f = PolicyFold::new(question);
        assert!(f.take(&item("a", OnError::Allow), Err("timed out".into())));
        assert_eq!(f.answer(), Value::Null);
    }
}
