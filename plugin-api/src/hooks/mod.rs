//! Hooks and permission policies: a plugin's say in what Claude Code does, besides its tools.
//!
//! A **hook** is a function marked [`#[hook]`](macro@crate::hook) that takes one event's input
//! ([`PreToolUse`], [`PostToolUse`], [`UserPromptSubmit`], ...: the fields the CLI sends, by
//! their names) and optionally `&`[`Context`], and returns a [`HookOutcome`] for that event
//! (or a `Result` of one). toolhost registers the events with the `claude` CLI and runs every
//! matching hook of every plugin on each: before and after each tool call (the CLI's own, like
//! `Bash` and `Edit`, and every MCP tool), on each prompt, and so on.
//!
//! A **permission policy** is a function marked [`#[permission]`](macro@crate::permission) that
//! takes a [`PermissionCheck`] (the CLI's `can_use_tool` question: tool, input, suggested rules)
//! and returns a [`Permission`]: allow (optionally on another input), deny (with a message
//! the model sees, optionally interrupting the turn), or no opinion. Policies run before the
//! user is asked (`toolhost chat --ask`), and may settle the question without asking.
//!
//! Both are registered by their attribute (or named in [`export_plugin!`](crate::export_plugin)'s
//! `hooks: [..]` for a fixed list), take `&Context` and the plugin's `&Config`/`&State` as
//! they need, reload with the plugin, and are plain functions in tests.
//!
//! ```
//! use serde_json::json;
//! use toolhost_plugin::{hooks::{PostToolUse, PreToolUse}, prelude::*, testing::TestContext};
//!
//! /// Refuses force-pushes.
//! #[hook(PreToolUse, matcher = "Bash")]
//! pub fn no_force_push(input: PreToolUse) -> HookOutcome<PreToolUse> {
//!     let command = input.tool_input["command"].as_str().unwrap_or_default();
//!     if command.contains("push --force") {
//!         HookOutcome::deny("force-pushing is not allowed here")
//!     } else {
//!         HookOutcome::no_opinion()
//!     }
//! }
//!
//! /// Counts tool uses in the host's log.
//! #[hook(PostToolUse)]
//! pub fn audit(input: PostToolUse, ctx: &Context) -> HookOutcome<PostToolUse> {
//!     ctx.info(&format!("{} ran", input.tool_name));
//!     HookOutcome::no_opinion()
//! }
//!
//! /// Lets `cargo test` run without asking.
//! #[permission]
//! pub fn tests_are_fine(check: PermissionCheck) -> Permission {
//!     match check.input["command"].as_str() {
//!         Some("cargo test") if check.tool_name == "Bash" => Permission::allow(),
//!         _ => Permission::no_opinion(),
//!     }
//! }
//!
//! export_plugin! {
//!     name: "policy",
//!     hooks: [no_force_push, audit, tests_are_fine],
//! }
//!
//! # fn main() {
//! // Called directly, with a typed input:
//! let push = PreToolUse {
//!     tool_name: "Bash".into(),
//!     tool_input: json!({"command": "git push --force"}),
//!     ..Default::default()
//! };
//! assert_eq!(no_force_push(push), HookOutcome::deny("force-pushing is not allowed here"));
//!
//! // Or as the host runs it, on the event's JSON, answering the CLI's hook output:
//! let ctx = TestContext::new();
//! let out = no_force_push::hook()
//!     .run(json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}), &ctx)
//!     .unwrap();
//! assert_eq!(out, json!({}));
//! let check = PermissionCheck {
//!     tool_name: "Bash".into(),
//!     input: json!({"command": "cargo test"}),
//!     ..Default::default()
//! };
//! assert_eq!(tests_are_fine(check), Permission::allow());
//! # }
//! ```
//!
//! # Matchers
//!
//! `matcher` is a regular expression over tool names, as in Claude Code's settings
//! (`"Bash"`, `"Edit|Write"`, `"mcp__github__.*"`); without one the hook sees every tool. The
//! host matches (and checks that the expression compiles when the plugin loads); a hook is only
//! called for events it matches. On events without a tool, Claude Code matches other fields
//! (SessionStart's `source`, PreCompact's `trigger`, Notification's `notification_type`, the
//! sub-agent events' `agent_type`); toolhost does the same.
//!
//! # Failures
//!
//! A hook that panics, returns `Err`, takes too long or gets an input it cannot read
//! (a missing field) fails; what the host then does is the plugin's `on_error` setting in
//! `toolhost.toml` (by default: deny for PreToolUse hooks and policies, go on for the rest).

mod answer;
mod events;
mod input;
mod outcome;
mod permission;
mod register;
mod session_events;

use std::{borrow::Cow, sync::Arc};

use serde_json::Value;

pub use answer::{HookAnswer, HookSpecific, PermissionDecision, RequestDecision};
pub use events::{
    AddsContext, Blocks, HookEvent, PostToolBatch, PostToolUse, PostToolUseFailure, PreToolUse,
    ToolCall,
};
pub use outcome::{HookOutcome, IntoHookOutcome};
pub use permission::{
    IntoPermission, Permission, PermissionCheck, PermissionRule, PermissionUpdate,
};
pub use session_events::{
    MessageDisplay, Notification, PermissionRequest, PreCompact, SessionEnd, SessionStart, Stop,
    SubagentStart, SubagentStop, UserPromptSubmit,
};

use crate::{context::Context, extras::RequestError};

/// Runs a hook on its input's JSON text; its hook output's JSON text.
type EventRunner = Arc<dyn Fn(&str, &Context) -> Result<String, RequestError> + Send + Sync>;
/// Runs a policy on the `can_use_tool` request's JSON text.
type PolicyRunner = Arc<dyn Fn(&str, &Context) -> Result<Permission, RequestError> + Send + Sync>;

/// One hook or permission policy. `#[hook]` and `#[permission]` build these (the function's
/// module has a `hook()` returning it) and register them for
/// [`export_plugin!`](crate::export_plugin); [`HookDef::on`] and [`HookDef::policy`] build one
/// at run time (a module whose `hook()` returns one is listed in `export_plugin!`'s
/// `hooks: [..]`).
///
/// ```
/// use toolhost_plugin::{hooks::{HookDef, PreToolUse}, prelude::*, testing::{json, TestContext}};
///
/// /// Refuses `Write`.
/// #[hook(PreToolUse, matcher = "Write", name = "no_writes")]
/// pub fn refuse(_: PreToolUse) -> HookOutcome<PreToolUse> {
///     HookOutcome::deny("read-only session")
/// }
///
/// export_plugin!();
///
/// # fn main() {
/// let def = refuse::hook();
/// assert_eq!((def.id(), def.event(), def.matcher(), def.is_policy()),
///            ("no_writes", Some("PreToolUse"), Some("Write"), false));
/// let ctx = TestContext::new();
/// let out = def.run(json!({"hook_event_name": "PreToolUse", "tool_name": "Write"}), &ctx).unwrap();
/// assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "deny");
/// // An input for another event, or one that lacks a field, is an error.
/// assert!(def.run(json!({"hook_event_name": "Stop", "tool_name": "Write"}), &ctx).is_err());
/// assert!(def.run(json!({}), &ctx).is_err());
///
/// // Built at run time.
/// let audit = HookDef::on("audit", None, |input: PreToolUse, ctx: &Context| {
///     ctx.info(&input.tool_name);
///     HookOutcome::<PreToolUse>::no_opinion()
/// });
/// assert_eq!(audit.run(json!({"tool_name": "Bash"}), &ctx).unwrap(), json!({}));
/// assert_eq!(ctx.logs()[0].1, "Bash");
/// let yes = HookDef::policy("yes", |_: PermissionCheck, _: &Context| Permission::allow());
/// assert!(yes.is_policy() && yes.event().is_none());
/// assert_eq!(yes.run(json!({"tool_name": "Bash"}), &ctx).unwrap(), json!({"behavior": "allow"}));
/// # }
/// ```
#[derive(Clone)]
pub struct HookDef {
    pub(crate) id: Cow<'static, str>,
    pub(crate) kind: Kind,
}

#[derive(Clone)]
pub(crate) enum Kind {
    Event {
        event: &'static str,
        matcher: Option<Cow<'static, str>>,
        run: EventRunner,
    },
    Policy(PolicyRunner),
}

impl HookDef {
    /// A hook for event `E` named `id`, for the tools `matcher` matches (all without one).
    pub fn on<E, O, F>(
        id: impl Into<Cow<'static, str>>,
        matcher: Option<&'static str>,
        f: F,
    ) -> Self
    where
        E: HookEvent,
        O: IntoHookOutcome<E>,
        F: Fn(E, &Context) -> O + Send + Sync + 'static,
    {
        let run = move |input: &str, ctx: &Context| -> Result<String, RequestError> {
            let input: E = decode(input, E::NAME)?;
            // A host that routes an event to the wrong hook would get a well-formed answer for
            // the wrong event.
            let name = input.hook_event_name();
            if !name.is_empty() && name != E::NAME {
                return Err(RequestError::invalid_params(format!(
                    "this hook handles {}, not {name}",
                    E::NAME
                )));
            }
            let outcome = f(input, ctx)
                .into_hook_outcome()
                .map_err(RequestError::internal)?;
            Ok(outcome.to_json_string())
        };
        HookDef {
            id: id.into(),
            kind: Kind::Event {
                event: E::NAME,
                matcher: matcher.map(Cow::Borrowed),
                run: Arc::new(run),
            },
        }
    }

    /// A permission policy named `id`.
    pub fn policy<O, F>(id: impl Into<Cow<'static, str>>, f: F) -> Self
    where
        O: IntoPermission,
        F: Fn(PermissionCheck, &Context) -> O + Send + Sync + 'static,
    {
        let run = move |params: &str, ctx: &Context| -> Result<Permission, RequestError> {
            let check: PermissionCheck = decode(params, "a permission check")?;
            f(check, ctx)
                .into_permission()
                .map_err(RequestError::internal)
        };
        HookDef {
            id: id.into(),
            kind: Kind::Policy(Arc::new(run)),
        }
    }

    /// Its name (the function's).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Its event (`PreToolUse`, ...); `None` for a permission policy.
    pub fn event(&self) -> Option<&'static str> {
        match &self.kind {
            Kind::Event { event, .. } => Some(event),
            Kind::Policy(_) => None,
        }
    }

    /// Its matcher, if it has one.
    pub fn matcher(&self) -> Option<&str> {
        match &self.kind {
            Kind::Event { matcher, .. } => matcher.as_deref(),
            Kind::Policy(_) => None,
        }
    }

    /// Whether it is a permission policy.
    pub fn is_policy(&self) -> bool {
        matches!(self.kind, Kind::Policy(_))
    }

    /// Runs it as the host would: `input` is the event's input as the CLI sends it (for a
    /// policy, the `can_use_tool` request), the answer the hook's output as the CLI reads it
    /// (for a policy, [`Permission::to_json`]). For tests; the matcher is not applied.
    pub fn run(&self, input: Value, ctx: &Context) -> Result<Value, RequestError> {
        let text = input.to_string();
        let answer = match &self.kind {
            Kind::Event { run, .. } => run(&text, ctx)?,
            Kind::Policy(run) => run(&text, ctx)?.to_json().to_string(),
        };
        serde_json::from_str(&answer).map_err(|e| RequestError::internal(e.to_string()))
    }
}

/// The input as `T`; the error names the field that does not fit.
fn decode<T: serde::de::DeserializeOwned>(json: &str, what: &str) -> Result<T, RequestError> {
    crate::tool::decode_args::<T>(json).map_err(|e| {
        RequestError::invalid_params(e.replacen(
            "invalid arguments",
            &format!("{what}: invalid input"),
            1,
        ))
    })
}
