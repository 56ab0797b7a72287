//! One input type per Claude Code hook event, with the field names the CLI sends.
//!
//! Fields as in the Python `claude-agent-sdk` (`types.py`, `*HookInput`) and the TypeScript
//! SDK (`sdk.d.ts`). Fields the CLI adds later, or that are rarely needed, are kept in `other`
//! (`mcp_server`, `prompt_id`, `effort`, `duration_ms`, ...): nothing the CLI sends is lost.

use serde::{de::MapAccess, Deserialize, Serialize};
use serde_json::{Map, Value};

/// A Claude Code hook event: the input type of a `#[hook]` function.
pub trait HookEvent: serde::de::DeserializeOwned + Serialize + 'static {
    /// The event's name as the CLI writes it (`hook_event_name`, the keys of `initialize`'s
    /// `hooks`).
    const NAME: &'static str;

    /// The `hook_event_name` the input carried (empty when it carried none).
    fn hook_event_name(&self) -> &str;
}

/// Events whose output may carry `hookSpecificOutput.additionalContext` (text the model sees):
/// [`HookOutcome::with_context`](super::HookOutcome::with_context).
pub trait AddsContext: HookEvent {}

/// Events whose output may carry `decision: "block"` with a `reason`:
/// [`HookOutcome::block`](super::HookOutcome::block).
pub trait Blocks: HookEvent {}

/// A key of an event's input, borrowed from the input when it has no escapes.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }

    fn into_string(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_string(),
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = Key<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(s))
            }

            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s.to_string()))
            }

            fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(s))
            }
        }
        d.deserialize_str(Text)
    }
}

/// Reads field `name`'s value into `slot`; a second one is an error, as derived code has it.
fn take<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    name: &'static str,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(serde::de::Error::duplicate_field(name));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}

/// A field the input lacks: its default if its attributes (`attrs`, as written) give it
/// `#[serde(default)]`, else the error derived code gives.
fn missing<T: Default, E: serde::de::Error>(name: &'static str, attrs: &str) -> Result<T, E> {
    if attrs.contains("serde(default") {
        Ok(T::default())
    } else {
        Err(E::missing_field(name))
    }
}

/// The name of a field in the input: `as "name"` if given, else the field's.
macro_rules! field_key {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident, $key:literal) => {
        $key
    };
}

/// Reads a field's value into its slot (`$with`: a `deserialize_with` function).
macro_rules! read_field {
    ($map:ident, $slot:ident, $key:expr, $ty:ty) => {
        take(&mut $slot, $key, &mut $map)?
    };
    ($map:ident, $slot:ident, $key:expr, $ty:ty, $with:path) => {{
        struct Via($ty);
        impl<'de> Deserialize<'de> for Via {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                $with(d).map(Via)
            }
        }
        let mut via: Option<Via> = $slot.take().map(Via);
        take(&mut via, $key, &mut $map)?;
        $slot = via.map(|v| v.0);
    }};
}

/// Defines each event struct: the common fields of every hook input, the event's own, and
/// `other` for the rest; `Default` fills `hook_event_name` with the event's name.
macro_rules! events {
    ($(
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$fattr:meta])* $field:ident $(as $key:literal)? : $ty:ty $([$with:path])?, )*
        }
    )*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Serialize)]
        pub struct $name {
            /// The session's id.
            #[serde(default)]
            pub session_id: String,
            /// The session's transcript (a JSONL file).
            #[serde(default)]
            pub transcript_path: String,
            /// The working folder of the session.
            #[serde(default)]
            pub cwd: String,
            /// `default`, `acceptEdits`, `plan`, `bypassPermissions`, `dontAsk`, `auto`.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub permission_mode: Option<String>,
            /// The event's name, as the CLI sent it.
            #[serde(default)]
            pub hook_event_name: String,
            $( $(#[$fattr])* $(#[serde(rename = $key)])? pub $field: $ty, )*
            /// Every other field the CLI sent.
            #[serde(flatten)]
            pub other: Map<String, Value>,
        }

        // By hand rather than derived: a derived `#[serde(flatten)]` buffers the whole input
        // (every key and value copied) before the fields get it; this reads it once.
        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Fields;
                impl<'de> serde::de::Visitor<'de> for Fields {
                    type Value = $name;

                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str(concat!("struct ", stringify!($name)))
                    }

                    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<$name, A::Error> {
                        let mut session_id = None;
                        let mut transcript_path = None;
                        let mut cwd = None;
                        let mut permission_mode = None;
                        let mut hook_event_name = None;
                        $( let mut $field: Option<$ty> = None; )*
                        let mut other = Map::new();
                        while let Some(key) = map.next_key::<Key<'de>>()? {
                            match key.as_str() {
                                "session_id" => take(&mut session_id, "session_id", &mut map)?,
                                "transcript_path" => {
                                    take(&mut transcript_path, "transcript_path", &mut map)?
                                }
                                "cwd" => take(&mut cwd, "cwd", &mut map)?,
                                "permission_mode" => {
                                    take(&mut permission_mode, "permission_mode", &mut map)?
                                }
                                "hook_event_name" => {
                                    take(&mut hook_event_name, "hook_event_name", &mut map)?
                                }
                                $( field_key!($field $(, $key)?) => {
                                    read_field!(map, $field, field_key!($field $(, $key)?), $ty $(, $with)?)
                                } )*
                                _ => {
                                    other.insert(key.into_string(), map.next_value()?);
                                }
                            }
                        }
                        Ok($name {
                            session_id: session_id.unwrap_or_default(),
                            transcript_path: transcript_path.unwrap_or_default(),
                            cwd: cwd.unwrap_or_default(),
                            permission_mode: permission_mode.unwrap_or_default(),
                            hook_event_name: hook_event_name.unwrap_or_default(),
                            $( $field: match $field {
                                Some(v) => v,
                                None => missing(
                                    field_key!($field $(, $key)?),
                                    stringify!($($fattr)*),
                                )?,
                            }, )*
                            other,
                        })
                    }
                }
                d.deserialize_map(Fields)
            }
        }

        impl HookEvent for $name {
            const NAME: &'static str = stringify!($name);

            fn hook_event_name(&self) -> &str {
                &self.hook_event_name
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name {
                    session_id: String::new(),
                    transcript_path: String::new(),
                    cwd: String::new(),
                    permission_mode: None,
                    hook_event_name: stringify!($name).to_string(),
                    $( $field: Default::default(), )*
                    other: Map::new(),
                }
            }
        }
    )*};
}

events! {
    /// Before a tool runs (every tool: the CLI's built-ins `Bash`, `Edit`, `Read`, ... and MCP
    /// tools `mcp__server__tool`). May allow, deny or ask, rewrite the input, add context.
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
    PostToolBatch {
        /// The calls, in order.
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    }

    /// A prompt was submitted, before the model sees it. May block it or add context.
    UserPromptSubmit {
        /// The prompt's text.
        prompt: String,
    }

    /// The main agent is about to stop. May block (the model goes on, told the reason).
    Stop {
        /// A Stop hook already made the agent go on once: check it to avoid looping forever.
        #[serde(default)]
        stop_hook_active: bool,
        /// The text of the last assistant message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_assistant_message: Option<String>,
    }

    /// A sub-agent is about to stop. May block.
    SubagentStop {
        /// As for [`Stop::stop_hook_active`].
        #[serde(default)]
        stop_hook_active: bool,
        /// The sub-agent's id.
        #[serde(default)]
        agent_id: String,
        /// The sub-agent's transcript.
        #[serde(default)]
        agent_transcript_path: String,
        /// The sub-agent's type.
        #[serde(default)]
        agent_type: String,
        /// The text of the sub-agent's last message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_assistant_message: Option<String>,
    }

    /// A sub-agent starts. May add context.
    SubagentStart {
        /// The sub-agent's id.
        #[serde(default)]
        agent_id: String,
        /// The sub-agent's type.
        #[serde(default)]
        agent_type: String,
    }

    /// The conversation is about to be compacted.
    PreCompact {
        /// `manual` (`/compact`) or `auto`.
        #[serde(default)]
        trigger: String,
        /// The instructions given to `/compact`, if any.
        #[serde(default)]
        custom_instructions: Option<String>,
    }

    /// The CLI shows a notification. May add context.
    Notification {
        /// The notification's text.
        #[serde(default)]
        message: String,
        /// Its title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Its kind (`permission_prompt`, `idle_prompt`, ...).
        #[serde(default)]
        notification_type: String,
    }

    /// The CLI is about to ask for permission to run a tool. May decide in the user's place
    /// ([`HookOutcome::decide`](super::HookOutcome::decide)).
    PermissionRequest {
        /// The tool's name.
        tool_name: String,
        /// The tool's input.
        #[serde(default)]
        tool_input: Value,
        /// The rules the CLI would offer to add ("always allow ...").
        #[serde(default)]
        permission_suggestions: Vec<super::PermissionUpdate> [super::permission::null_as_empty],
        /// The sub-agent the call comes from; absent on the main thread.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_id: Option<String>,
        /// The agent's type, inside a sub-agent or with `--agent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_type: Option<String>,
    }

    /// The CLI displays part of an assistant message (observed on the CLI 2.1.328 to 2.1.332,
    /// once per flush of complete lines). May replace what is displayed
    /// ([`HookOutcome::with_display_content`](super::HookOutcome::with_display_content)); the
    /// model's message is unchanged.
    MessageDisplay {
        /// The turn's id.
        #[serde(default)]
        turn_id: String,
        /// The message's id (the same for each flush of one message).
        #[serde(default)]
        message_id: String,
        /// The flush's index within the message, from 0.
        #[serde(default)]
        index: u64,
        /// The message's last flush.
        #[serde(default)]
        is_final as "final": bool,
        /// The lines completed since the previous flush.
        #[serde(default)]
        delta: String,
    }

    /// A session starts (TypeScript SDK and settings hooks). May add context.
    SessionStart {
        /// `startup`, `resume`, `clear`, `compact` or `fork`.
        #[serde(default)]
        source: String,
        /// The model, when the CLI says.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The agent's type with `--agent`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_type: Option<String>,
    }

    /// A session ends (TypeScript SDK and settings hooks).
    SessionEnd {
        /// `clear`, `resume`, `logout`, `prompt_input_exit` or `other`.
        #[serde(default)]
        reason: String,
    }
}

/// One call of a [`PostToolBatch`].
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
