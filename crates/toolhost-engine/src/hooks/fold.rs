//! How the answers of several plugins' hooks make one answer to the CLI (docs/protocol.md
//! §14.6): in plugin-name order, the first deny wins and names its plugin, contexts are
//! joined, an updated input is what the next hook sees; a hook that fails counts as its
//! plugin's `on_error`. A hook's answer is read once into the SDK's [`HookAnswer`], the type
//! the SDK writes it with, and the merged answer is one too.

use serde_json::{json, Map, Value};
use toolhost_plugin::{
    extras::method,
    hooks::{HookAnswer, HookSpecific, PermissionDecision, RequestDecision},
};

use super::{events::is_tool_event, table::Matched};
use crate::config::OnError;

/// Folds the answers of a chain of hooks or policies into one.
pub trait Fold: Send + 'static {
    /// What one item answers, and what the answers make.
    type Answer;
    /// The plugin method each item is asked with.
    const METHOD: &'static str;
    /// The params for `item`, given the answers so far.
    fn params(&self, item: &Matched) -> String;
    /// Reads an answer from the text its plugin wrote (`Err`: why it is not one).
    fn read(text: &str) -> Result<Self::Answer, String>;
    /// Takes one plugin's answer; false ends the chain (a deny). `Err`: it cannot count,
    /// taken as a failure of the item (nothing of it was taken).
    fn absorb(&mut self, plugin: &str, answer: Self::Answer) -> Result<bool, String>;
    /// Records that `item`'s failure (`why`) denies.
    fn deny_failed(&mut self, item: &Matched, why: &str);
    /// Takes `item`'s answer (`Err`: why it failed); false ends the chain (a deny). A failure
    /// counts as its `on_error` says, the same for every fold.
    fn take(&mut self, item: &Matched, answer: Result<Self::Answer, String>) -> bool {
        let why = match answer.map(|a| self.absorb(&item.plugin, a)) {
            Ok(Ok(go_on)) => return go_on,
            Ok(Err(why)) | Err(why) => why,
        };
        warn_failed(item, &why);
        match item.on_error {
            OnError::Allow => true,
            OnError::Deny => {
                self.deny_failed(item, &why);
                false
            }
        }
    }
    /// [`Fold::take`] of an answer as the plugin wrote it.
    fn take_text(&mut self, item: &Matched, text: &str) -> bool {
        let answer = Self::read(text);
        self.take(item, answer)
    }
    /// The one answer.
    fn answer(self) -> Self::Answer;
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
    // `why` may quote the plugin (its panic, its answer): inert in the log.
    let why = crate::terminal::log_line(why, crate::plugin::LOG_MESSAGE_MAX);
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
    allow_decision: Option<RequestDecision>,
    contexts: Vec<String>,
    system_messages: Vec<String>,
    stop: Option<String>,
    suppress_output: bool,
    /// What else hooks said in `hookSpecificOutput` (`updatedToolOutput`, ...): the last one
    /// wins.
    rest: HookSpecific,
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

/// Why `answer` refuses, if it does: `decision: "block"`, `permissionDecision: "deny"` or a
/// PermissionRequest decision `deny`.
fn refusal(answer: &HookAnswer, specific: &HookSpecific) -> Option<String> {
    let request = specific.decision.as_ref().filter(|d| d.behavior == "deny");
    let refused = answer.decision.as_deref() == Some("block")
        || specific.permission_decision == Some(PermissionDecision::Deny)
        || request.is_some();
    refused.then(|| {
        let reason = specific.permission_decision_reason.as_ref();
        let message = request.and_then(|d| d.message.as_ref());
        let why = reason.or(answer.reason.as_ref()).or(message);
        why.map_or_else(|| "no reason given".into(), String::clone)
    })
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
            rest: HookSpecific::default(),
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

    /// The tool input an answer gives the next hook (`updatedInput`, or a PermissionRequest
    /// allow's): only for the events that guard a tool call.
    fn new_input(&self, specific: &mut HookSpecific) -> Result<Option<Value>, String> {
        let allow = specific.decision.as_ref().filter(|d| d.behavior == "allow");
        let from_decision = allow.and_then(|d| d.updated_input.clone());
        let new_input = specific.updated_input.take().or(from_decision);
        match new_input.filter(|_| is_tool_event(&self.event)) {
            Some(v) if !v.is_object() => {
                Err(format!("updatedInput is not an object: {}", brief(&v)))
            }
            new_input => Ok(new_input),
        }
    }

    /// Keeps the fields the merge does not read: the last hook's win.
    fn keep_rest(&mut self, specific: HookSpecific) {
        let HookSpecific {
            updated_tool_output,
            display_content,
            other,
            ..
        } = specific;
        if updated_tool_output.is_some() {
            self.rest.updated_tool_output = updated_tool_output;
        }
        if display_content.is_some() {
            self.rest.display_content = display_content;
        }
        self.rest.other.extend(other);
    }

    /// The decision the answer carries, in the event's own form (§14.6).
    fn decide(&mut self, out: &mut HookAnswer, specific: &mut HookSpecific) {
        let deny = self.denied.as_ref().map(Denied::text);
        match (deny, self.event.as_str()) {
            (Some(why), "PreToolUse") => {
                specific.permission_decision = Some(PermissionDecision::Deny);
                specific.permission_decision_reason = Some(why);
            }
            (Some(why), "PermissionRequest") => {
                specific.decision = Some(RequestDecision {
                    behavior: "deny".into(),
                    message: Some(why),
                    ..RequestDecision::default()
                });
            }
            (Some(why), _) => {
                out.decision = Some("block".into());
                out.reason = Some(why);
            }
            // PreSkillShellCommand (CLI 2.1.332) reads a PreToolUse-style decision, and an ask
            // keeps the skill's command from running (docs/protocol.md §14.3): passed on, not
            // dropped. Its updatedInput never counts (not a tool event).
            (None, "PreToolUse" | "PreSkillShellCommand") => {
                if let Some((plugin, reason)) = &self.ask {
                    specific.permission_decision = Some(PermissionDecision::Ask);
                    specific.permission_decision_reason =
                        Some(format!("asked by {plugin}: {reason}"));
                } else if self.allow {
                    specific.permission_decision = Some(PermissionDecision::Allow);
                }
                if self.updated_input {
                    specific.updated_input = Some(self.input.tool_input());
                }
            }
            (None, "PermissionRequest") => {
                if let Some(mut d) = self.allow_decision.take() {
                    if self.updated_input {
                        d.updated_input = Some(self.input.tool_input());
                    }
                    specific.decision = Some(d);
                }
            }
            (None, _) => {}
        }
    }
}

impl Fold for HookFold {
    type Answer = HookAnswer;
    const METHOD: &'static str = method::HOOK_RUN;

    /// `{"id":<hook>,"input":<the input>}`, the input as the CLI wrote it unless it changed.
    fn params(&self, item: &Matched) -> String {
        let changed;
        let input = match &self.input {
            EventInput::Raw(text) => text.as_str(),
            EventInput::Parsed(v) => {
                changed = v.to_string();
                &changed
            }
        };
        let mut params = String::with_capacity(input.len() + 64);
        params.push_str(r#"{"id":"#);
        params.push_str(&serde_json::to_string(&item.hook).expect("a string"));
        params.push_str(r#","input":"#);
        params.push_str(input);
        params.push('}');
        params
    }

    fn read(text: &str) -> Result<HookAnswer, String> {
        HookAnswer::from_json(text)
    }

    /// Merges one hook's answer; `Err` when it cannot count (an `updatedInput` that is not an
    /// object), before anything of it was taken.
    fn absorb(&mut self, plugin: &str, mut answer: HookAnswer) -> Result<bool, String> {
        let mut specific = answer.hook_specific_output.take().unwrap_or_default();
        let refused = refusal(&answer, &specific);
        let new_input = match refused {
            None => self.new_input(&mut specific)?,
            Some(_) => None,
        };
        self.contexts.extend(specific.additional_context.take());
        self.system_messages.extend(answer.system_message);
        if answer.continue_ == Some(false) && self.stop.is_none() {
            self.stop = Some(answer.stop_reason.unwrap_or_default());
        }
        self.suppress_output |= answer.suppress_output == Some(true);
        if let Some(why) = refused {
            self.deny(plugin, why);
            return Ok(false);
        }
        match specific.permission_decision {
            Some(PermissionDecision::Ask) if self.ask.is_none() => {
                let reason = specific.permission_decision_reason.take().or(answer.reason);
                self.ask = Some((plugin.to_string(), reason.unwrap_or_default()));
            }
            Some(PermissionDecision::Allow) => self.allow = true,
            _ => {}
        }
        if let Some(d) = specific.decision.take().filter(|d| d.behavior == "allow") {
            self.allow_decision.get_or_insert(d);
        }
        if let Some(new_input) = new_input {
            self.input.parsed()?["tool_input"] = new_input;
            self.updated_input = true;
        }
        self.keep_rest(specific);
        Ok(true)
    }

    fn deny_failed(&mut self, item: &Matched, why: &str) {
        let hook = item.hook.as_deref().unwrap_or("?");
        self.deny(&item.plugin, format!("its hook {hook} failed: {why}"));
    }

    fn answer(mut self) -> HookAnswer {
        let mut out = HookAnswer {
            continue_: self.stop.as_ref().map(|_| false),
            stop_reason: self.stop.take().filter(|r| !r.is_empty()),
            suppress_output: self.suppress_output.then_some(true),
            system_message: (!self.system_messages.is_empty())
                .then(|| self.system_messages.join("\n")),
            ..HookAnswer::default()
        };
        let mut specific = std::mem::take(&mut self.rest);
        self.decide(&mut out, &mut specific);
        if !self.contexts.is_empty() {
            specific.additional_context = Some(self.contexts.join("\n\n"));
        }
        if !specific.is_empty() {
            specific.hook_event_name = self.event;
            out.hook_specific_output = Some(specific);
        }
        out
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
}

impl Fold for PolicyFold {
    type Answer = Value;
    const METHOD: &'static str = method::PERMISSION_CHECK;

    fn params(&self, _item: &Matched) -> String {
        self.request.to_string()
    }

    fn read(text: &str) -> Result<Value, String> {
        serde_json::from_str(text).map_err(|e| format!("its output is not JSON: {e}"))
    }

    fn absorb(&mut self, plugin: &str, answer: Value) -> Result<bool, String> {
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
                brief(&answer)
            )),
        }
    }

    fn deny_failed(&mut self, item: &Matched, why: &str) {
        let denied = Denied {
            plugin: item.plugin.clone(),
            reason: format!("its permission policy failed: {why}"),
        };
        self.denied = Some(json!({"behavior": "deny", "message": denied.text()}));
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

    /// Takes `output` as its plugin would write it.
    fn take<F: Fold>(f: &mut F, item: &Matched, output: Value) -> bool {
        f.take_text(item, &output.to_string())
    }

    /// The merged answer as the CLI reads it.
    fn answer(f: HookFold) -> Value {
        f.answer().to_json()
    }

    #[test]
    fn the_first_deny_wins_and_names_its_plugin() {
        let mut f = pre(json!({"command": "rm -rf /"}));
        let ctx = json!({"hookSpecificOutput": {"additionalContext": "A"}});
        assert!(take(&mut f, &item("audit", OnError::Allow), ctx));
        assert!(!take(
            &mut f,
            &item("guard", OnError::Deny),
            deny("rm -rf is refused")
        ));
        assert_eq!(
            f.denied().unwrap().text(),
            "denied by guard: rm -rf is refused"
        );
        assert_eq!(
            answer(f),
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "denied by guard: rm -rf is refused",
                "additionalContext": "A"}})
        );
        // `decision: "block"` refuses too; for other events it is the answer's form.
        let mut f = HookFold::new("UserPromptSubmit", json!({"prompt": "x"}));
        assert!(!take(
            &mut f,
            &item("p", OnError::Allow),
            json!({"decision": "block", "reason": "no"})
        ));
        assert_eq!(
            answer(f),
            json!({"decision": "block", "reason": "denied by p: no"})
        );
    }

    #[test]
    fn contexts_join_updated_input_chains_and_ask_beats_allow() {
        let mut f = pre(json!({"command": "ls"}));
        let first = json!({"hookSpecificOutput": {"permissionDecision": "allow",
            "updatedInput": {"command": "ls -a"}, "additionalContext": "one"},
            "systemMessage": "s1"});
        assert!(take(&mut f, &item("a", OnError::Deny), first));
        // The next hook sees the updated input.
        let params: Value = serde_json::from_str(&f.params(&item("b", OnError::Deny))).unwrap();
        assert_eq!(params["input"]["tool_input"], json!({"command": "ls -a"}));
        assert_eq!(params["id"], "h");
        let second = json!({"hookSpecificOutput": {"permissionDecision": "ask",
            "permissionDecisionReason": "sure?", "additionalContext": "two",
            "updatedInput": {"command": "ls -al"}}, "systemMessage": "s2",
            "continue": false, "stopReason": "enough", "suppressOutput": true});
        assert!(take(&mut f, &item("b", OnError::Deny), second));
        assert!(take(&mut f, &item("c", OnError::Deny), json!({})));
        assert_eq!(
            answer(f),
            json!({"continue": false, "stopReason": "enough", "suppressOutput": true,
                "systemMessage": "s1\ns2",
                "hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "ask", "permissionDecisionReason": "asked by b: sure?",
                    "updatedInput": {"command": "ls -al"}, "additionalContext": "one\n\ntwo"}})
        );
        // Nothing said: an empty answer.
        let mut f = HookFold::new("Stop", json!({}));
        assert!(take(&mut f, &item("a", OnError::Allow), json!({})));
        assert_eq!(answer(f), json!({}));
        // Other specific fields pass, the last one winning.
        let mut f = HookFold::new("PostToolUse", json!({}));
        let out = |v: &str| json!({"hookSpecificOutput": {"updatedToolOutput": v}});
        take(&mut f, &item("a", OnError::Allow), out("A"));
        take(&mut f, &item("b", OnError::Allow), out("B"));
        assert_eq!(
            answer(f),
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": "B"}})
        );
    }

    /// Fields the merge does not know pass through `hookSpecificOutput` (the last hook's
    /// value), fields it only reads for some events are dropped from the others, and
    /// top-level fields the CLI does not read are dropped (docs/protocol.md §14.6).
    #[test]
    fn unknown_specific_fields_pass_and_the_last_one_wins() {
        let mut f = HookFold::new("PostToolUse", json!({}));
        let a = json!({"async": true, "hookSpecificOutput": {"updatedMCPToolOutput": [1],
            "x": "a", "displayContent": "d1", "updatedInput": {"n": 1},
            "permissionDecision": "ask"}});
        let b = json!({"hookSpecificOutput": {"x": {"b": null}, "displayContent": "d2"}});
        assert!(take(&mut f, &item("a", OnError::Deny), a));
        assert!(take(&mut f, &item("b", OnError::Deny), b));
        assert_eq!(
            answer(f),
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                "updatedMCPToolOutput": [1], "x": {"b": null}, "displayContent": "d2"}})
        );
    }

    /// What the SDK writes, a chain of one hook answers unchanged: every field the SDK's
    /// outcome sets is read by the merge and written back (a field the merge dropped, or
    /// moved, fails here). Refusals and asks are rewritten to name the plugin, as §14.6 says.
    #[test]
    fn a_lone_hooks_answer_passes_the_merge_unchanged() {
        use toolhost_plugin::hooks::{
            HookOutcome, MessageDisplay, Permission, PermissionRequest, PermissionUpdate,
            PostToolUse, PreToolUse, UserPromptSubmit,
        };
        let tool = json!({"tool_name": "Bash", "tool_input": {"command": "ls"}});
        let cases = [
            (
                "PreToolUse",
                HookOutcome::<PreToolUse>::allow()
                    .with_updated_input(json!({"command": "ls -a"}))
                    .with_context("c")
                    .with_stop("s")
                    .with_system_message("m")
                    .suppress_output()
                    .to_json_string(),
            ),
            (
                "PostToolUse",
                HookOutcome::<PostToolUse>::no_opinion()
                    .with_updated_tool_output(json!({"stdout": "x"}))
                    .with_context("c")
                    .to_json_string(),
            ),
            (
                "MessageDisplay",
                HookOutcome::<MessageDisplay>::no_opinion()
                    .with_display_content("d")
                    .to_json_string(),
            ),
            (
                "UserPromptSubmit",
                HookOutcome::<UserPromptSubmit>::no_opinion()
                    .with_context("c")
                    .to_json_string(),
            ),
            (
                "PermissionRequest",
                HookOutcome::<PermissionRequest>::decide(
                    Permission::allow()
                        .with_updated_input(json!({"command": "ls -a"}))
                        .with_updated_permissions([PermissionUpdate::set_mode(
                            "acceptEdits",
                            "session",
                        )]),
                )
                .to_json_string(),
            ),
        ];
        for (event, text) in cases {
            let mut f = HookFold::new(event, tool.clone());
            assert!(f.take_text(&item("p", OnError::Deny), &text), "{text}");
            assert_eq!(f.answer().to_json_string(), text, "{event}");
        }
        // A refusal keeps its form, naming the plugin.
        let mut f = HookFold::new("UserPromptSubmit", tool);
        let block = HookOutcome::<UserPromptSubmit>::block("no").to_json_string();
        assert!(!f.take_text(&item("p", OnError::Deny), &block));
        assert_eq!(
            f.answer().to_json_string(),
            r#"{"decision":"block","reason":"denied by p: no"}"#
        );
    }

    /// Every failure names the field at fault; the answer is not taken at all (no context of
    /// a failed hook reaches the model).
    #[test]
    fn a_failed_hook_follows_on_error() {
        for (text, why) in [
            (
                "not json",
                "its output is not JSON: expected ident at line 1 column 2",
            ),
            (
                "\"yes\"",
                "its output is not a hook output: invalid type: string \"yes\", expected a \
                 hook output (a JSON object)",
            ),
            (
                r#"{"hookSpecificOutput": {"permissionDecision": "maybe"}}"#,
                "its output is not a hook output: `hookSpecificOutput.permissionDecision`: \
                 unknown variant `maybe`, expected one of `allow`, `deny`, `ask`, `defer`",
            ),
            (
                r#"{"hookSpecificOutput": {"additionalContext": 3}}"#,
                "its output is not a hook output: `hookSpecificOutput.additionalContext`: \
                 invalid type: integer `3`, expected a string",
            ),
            (
                r#"{"systemMessage": "s", "hookSpecificOutput": {"additionalContext": "c",
                    "updatedInput": "ls"}}"#,
                "updatedInput is not an object: \"ls\"",
            ),
        ] {
            let mut open = pre(json!({}));
            assert!(open.take_text(&item("p", OnError::Allow), text));
            assert_eq!(answer(open), json!({}), "{why}");
            let mut closed = pre(json!({}));
            assert!(!closed.take_text(&item("p", OnError::Deny), text));
            assert_eq!(
                closed.denied().unwrap().text(),
                format!("denied by p: its hook h failed: {why}")
            );
        }
        // A plugin that failed to answer at all.
        let mut closed = pre(json!({}));
        assert!(!closed.take(&item("p", OnError::Deny), Err("it panicked".into())));
        assert_eq!(
            closed.denied().unwrap().text(),
            "denied by p: its hook h failed: it panicked"
        );
    }

    #[test]
    fn a_deny_counts_even_with_a_bad_updated_input() {
        // A refusal is not undone by what else the answer carries: `on_error = "allow"` must
        // not turn it into a pass.
        let mut f = pre(json!({"command": "rm"}));
        let out = json!({"hookSpecificOutput": {"permissionDecision": "deny",
            "updatedInput": 3}, "reason": "r"});
        assert!(!take(&mut f, &item("g", OnError::Allow), out));
        assert_eq!(f.denied().unwrap().text(), "denied by g: r");
    }

    #[test]
    fn a_skill_shell_command_ask_is_passed_on_and_a_deny_blocks() {
        let input = json!({"hook_event_name": "PreSkillShellCommand", "tool_name": "Bash",
            "tool_input": {"command": "ls"}});
        let mut f = HookFold::new("PreSkillShellCommand", input.clone());
        let ask = json!({"hookSpecificOutput": {"permissionDecision": "ask",
            "permissionDecisionReason": "sure?", "updatedInput": {"command": "pwd"}}});
        assert!(take(&mut f, &item("a", OnError::Deny), ask));
        assert_eq!(
            answer(f),
            json!({"hookSpecificOutput": {"hookEventName": "PreSkillShellCommand",
                "permissionDecision": "ask", "permissionDecisionReason": "asked by a: sure?"}})
        );
        let mut f = HookFold::new("PreSkillShellCommand", input);
        let deny = json!({"hookSpecificOutput": {"permissionDecision": "deny",
            "permissionDecisionReason": "no"}});
        assert!(!take(&mut f, &item("g", OnError::Deny), deny));
        assert_eq!(
            answer(f),
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
            "updatedInput": {"command": "ls -a"}, "updatedPermissions": [], "extra": 1}}});
        assert!(take(&mut f, &item("a", OnError::Deny), allow));
        // The next hook sees the decision's input.
        let params: Value = serde_json::from_str(&f.params(&item("b", OnError::Deny))).unwrap();
        assert_eq!(params["input"]["tool_input"], json!({"command": "ls -a"}));
        assert_eq!(
            answer(f),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "allow", "updatedInput": {"command": "ls -a"},
                    "updatedPermissions": [], "extra": 1}}})
        );
        let mut f = HookFold::new("PermissionRequest", json!({"tool_input": {}}));
        let deny =
            json!({"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "m"}}});
        assert!(!take(&mut f, &item("g", OnError::Deny), deny));
        assert_eq!(
            answer(f)["hookSpecificOutput"]["decision"],
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
