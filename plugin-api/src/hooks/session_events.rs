//! The hook events without a tool call: the conversation, sub-agents, compaction,
//! notifications, permissions, the messages shown, and the session itself.

use serde::{de::MapAccess, Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    events::HookEvent,
    input::{events, field_key, missing, read_field, take, Key},
};

events! {

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
