//! One input type per Claude Code hook event, with the field names the CLI sends.
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

    /// A prompt was submitted, before the model sees it. May block it or add context.
    ///
    /// ```
    /// use toolhost_plugin::{hooks::UserPromptSubmit, prelude::*};
    ///
    /// /// Drops prompts that paste a key; tells the model the working folder otherwise.
    /// #[hook(UserPromptSubmit)]
    /// pub fn screen(input: UserPromptSubmit) -> HookOutcome<UserPromptSubmit> {
    ///     if input.prompt.contains("sk-") {
    ///         return HookOutcome::block("the prompt holds what looks like an API key");
    ///     }
    ///     HookOutcome::no_opinion().with_context(format!("Working folder: {}", input.cwd))
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let key = UserPromptSubmit { prompt: "use sk-123".into(), ..Default::default() };
    /// assert_eq!(screen(key).to_json()["decision"], "block");
    /// let fine = UserPromptSubmit { prompt: "hi".into(), cwd: "/src".into(), ..Default::default() };
    /// assert_eq!(screen(fine).to_json()["hookSpecificOutput"]["additionalContext"], "Working folder: /src");
    /// # }
    /// ```
    UserPromptSubmit {
        /// The prompt's text.
        prompt: String,
    }

    /// The main agent is about to stop. May block (the model goes on, told the reason).
    ///
    /// ```
    /// use toolhost_plugin::{hooks::Stop, prelude::*};
    ///
    /// /// Makes the agent go on once if it stops without mentioning tests.
    /// #[hook(Stop)]
    /// pub fn tested(input: Stop) -> HookOutcome<Stop> {
    ///     let said = input.last_assistant_message.as_deref().unwrap_or_default();
    ///     if !input.stop_hook_active && !said.contains("test") {
    ///         return HookOutcome::block("Run the tests before stopping.");
    ///     }
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// assert_eq!(tested(Stop::default()), HookOutcome::block("Run the tests before stopping."));
    /// // Once made to go on, it lets the agent stop: no loop.
    /// assert!(tested(Stop { stop_hook_active: true, ..Default::default() }).is_no_opinion());
    /// # }
    /// ```
    Stop {
        /// A Stop hook already made the agent go on once: check it to avoid looping forever.
        #[serde(default)]
        stop_hook_active: bool,
        /// The text of the last assistant message.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_assistant_message: Option<String>,
    }

    /// A sub-agent is about to stop. May block.
    ///
    /// ```
    /// use toolhost_plugin::{hooks::SubagentStop, prelude::*};
    ///
    /// /// Logs which sub-agents finished.
    /// #[hook(SubagentStop)]
    /// pub fn finished(input: SubagentStop, ctx: &Context) -> HookOutcome<SubagentStop> {
    ///     ctx.info(&format!("{} ({}) finished", input.agent_type, input.agent_id));
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = toolhost_plugin::testing::TestContext::new();
    /// let done = SubagentStop { agent_id: "a1".into(), agent_type: "explore".into(), ..Default::default() };
    /// assert!(finished(done, &ctx).is_no_opinion());
    /// assert_eq!(ctx.logs()[0].1, "explore (a1) finished");
    /// # }
    /// ```
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
    ///
    /// ```
    /// use toolhost_plugin::{hooks::SubagentStart, prelude::*};
    ///
    /// /// Tells reviewing sub-agents the house rules.
    /// #[hook(SubagentStart, matcher = "review.*")]
    /// pub fn rules(_: SubagentStart) -> HookOutcome<SubagentStart> {
    ///     HookOutcome::no_opinion().with_context("Rules: no unwrap in library code.")
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let start = SubagentStart { agent_type: "reviewer".into(), ..Default::default() };
    /// assert!(!rules(start).is_no_opinion());
    /// assert_eq!(rules::hook().matcher(), Some("review.*"));
    /// # }
    /// ```
    SubagentStart {
        /// The sub-agent's id.
        #[serde(default)]
        agent_id: String,
        /// The sub-agent's type.
        #[serde(default)]
        agent_type: String,
    }

    /// The conversation is about to be compacted.
    ///
    /// ```
    /// use toolhost_plugin::{hooks::PreCompact, prelude::*};
    ///
    /// /// Tells the user when the conversation is compacted on its own.
    /// #[hook(PreCompact, matcher = "auto")]
    /// pub fn compacting(input: PreCompact) -> HookOutcome<PreCompact> {
    ///     HookOutcome::no_opinion().with_system_message(format!("compacting ({})", input.trigger))
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let auto = PreCompact { trigger: "auto".into(), ..Default::default() };
    /// assert_eq!(compacting(auto).to_json()["systemMessage"], "compacting (auto)");
    /// # }
    /// ```
    PreCompact {
        /// `manual` (`/compact`) or `auto`.
        #[serde(default)]
        trigger: String,
        /// The instructions given to `/compact`, if any.
        #[serde(default)]
        custom_instructions: Option<String>,
    }

    /// The CLI shows a notification. May add context.
    ///
    /// ```
    /// use toolhost_plugin::{hooks::Notification, prelude::*};
    ///
    /// /// Forwards permission prompts to the host's log (a desktop notifier would go here).
    /// #[hook(Notification, matcher = "permission_prompt")]
    /// pub fn forward(input: Notification, ctx: &Context) -> HookOutcome<Notification> {
    ///     ctx.warn(&format!("{}: {}", input.title.as_deref().unwrap_or("Claude"), input.message));
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = toolhost_plugin::testing::TestContext::new();
    /// let asked = Notification { message: "May I run make?".into(), ..Default::default() };
    /// forward(asked, &ctx);
    /// assert_eq!(ctx.logs()[0].1, "Claude: May I run make?");
    /// # }
    /// ```
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
    ///
    /// ```
    /// use toolhost_plugin::{hooks::PermissionRequest, prelude::*, testing::json};
    ///
    /// /// Allows reads in the user's place; leaves the rest to the user.
    /// #[hook(PermissionRequest)]
    /// pub fn reads(input: PermissionRequest) -> HookOutcome<PermissionRequest> {
    ///     match input.tool_name.as_str() {
    ///         "Read" | "Grep" => HookOutcome::decide(Permission::allow()),
    ///         "Bash" if input.tool_input["command"] == "rm -rf /" => {
    ///             HookOutcome::decide(Permission::deny("no").interrupt())
    ///         }
    ///         _ => HookOutcome::decide(Permission::no_opinion()),
    ///     }
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let read = PermissionRequest { tool_name: "Read".into(), ..Default::default() };
    /// assert_eq!(reads(read).to_json()["hookSpecificOutput"]["decision"], json!({"behavior": "allow"}));
    /// let other = PermissionRequest { tool_name: "Edit".into(), ..Default::default() };
    /// assert!(reads(other).is_no_opinion());
    /// # }
    /// ```
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
    ///
    /// ```
    /// use toolhost_plugin::{hooks::MessageDisplay, prelude::*};
    ///
    /// /// Shows the user a shorter form of long lines.
    /// #[hook(MessageDisplay)]
    /// pub fn shorten(input: MessageDisplay) -> HookOutcome<MessageDisplay> {
    ///     if input.delta.chars().count() > 20 {
    ///         let short: String = input.delta.chars().take(20).collect();
    ///         return HookOutcome::no_opinion().with_display_content(format!("{short}..."));
    ///     }
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let flush = MessageDisplay { delta: "a".repeat(30), is_final: true, ..Default::default() };
    /// assert_eq!(shorten(flush).to_json()["hookSpecificOutput"]["displayContent"], format!("{}...", "a".repeat(20)));
    /// # }
    /// ```
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
    ///
    /// ```
    /// use toolhost_plugin::{hooks::SessionStart, prelude::*};
    ///
    /// /// Tells the model which session this is, and how it started.
    /// #[hook(SessionStart, matcher = "startup|resume")]
    /// pub fn today(input: SessionStart) -> HookOutcome<SessionStart> {
    ///     HookOutcome::no_opinion().with_context(format!("Session {} ({}).", input.session_id, input.source))
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let start = SessionStart { session_id: "s1".into(), source: "startup".into(), ..Default::default() };
    /// assert_eq!(today(start).to_json()["hookSpecificOutput"]["additionalContext"], "Session s1 (startup).");
    /// # }
    /// ```
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
    ///
    /// ```
    /// use toolhost_plugin::{hooks::SessionEnd, prelude::*, testing::{json, TestContext}};
    ///
    /// /// Logs why sessions end.
    /// #[hook(SessionEnd)]
    /// pub fn ended(input: SessionEnd, ctx: &Context) -> HookOutcome<SessionEnd> {
    ///     ctx.info(&format!("session ended: {}", input.reason));
    ///     HookOutcome::no_opinion()
    /// }
    ///
    /// export_plugin!();
    ///
    /// # fn main() {
    /// let ctx = TestContext::new();
    /// let out = ended::hook().run(json!({"hook_event_name": "SessionEnd", "reason": "logout"}), &ctx).unwrap();
    /// assert_eq!(out, json!({}));
    /// assert_eq!(ctx.logs()[0].1, "session ended: logout");
    /// # }
    /// ```
    SessionEnd {
        /// `clear`, `resume`, `logout`, `prompt_input_exit` or `other`.
        #[serde(default)]
        reason: String,
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
