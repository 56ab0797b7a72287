//! `#[hook]`, `#[permission]` and `export_plugin!`'s `hooks: [..]` as a plugin crate uses them:
//! a plugin of hooks only, `#[cfg]` on entries, paths into modules, names given, events named
//! or left to the input's type, `Result` returns.

use serde_json::json;
use toolhost_plugin::{
    __private::PluginEntry,
    hooks::{PostToolUse, PreToolUse, SessionStart},
    prelude::*,
    testing::TestContext,
};

/// The event left out: the input's type names it.
#[hook(matcher = "Edit|Write")]
pub fn no_env_files(input: PreToolUse) -> HookOutcome<PreToolUse> {
    match input.tool_input["file_path"].as_str() {
        Some(path) if path.ends_with(".env") => HookOutcome::deny("not the .env file"),
        _ => HookOutcome::allow(),
    }
}

/// Never compiled: its entry must vanish with it.
#[cfg(any())]
#[hook(Stop)]
pub fn missing(_: toolhost_plugin::hooks::Stop) -> HookOutcome<toolhost_plugin::hooks::Stop> {
    HookOutcome::no_opinion()
}

pub mod more {
    use super::*;

    /// A `Result`: an `Err` is the hook's failure.
    #[hook(PostToolUse, name = "audit")]
    pub fn post(input: PostToolUse, ctx: &Context) -> Result<HookOutcome<PostToolUse>, String> {
        if input.tool_name.is_empty() {
            return Err("no tool".into());
        }
        ctx.info(&input.tool_name);
        Ok(HookOutcome::no_opinion())
    }

    /// Greets each session.
    #[hook(SessionStart, matcher = "startup")]
    pub fn hello(_: SessionStart) -> HookOutcome<SessionStart> {
        HookOutcome::no_opinion().with_context("hello")
    }
}

#[permission(name = "reads")]
pub fn reads_are_fine(check: PermissionCheck) -> Result<Permission, std::io::Error> {
    Ok(if check.tool_name == "Read" {
        Permission::allow()
    } else {
        Permission::no_opinion()
    })
}

export_plugin! {
    name: "hooks-test",
    hooks: [
        no_env_files,
        #[cfg(any())]
        missing,
        more::post,
        #[cfg(all())]
        more::hello,
        reads_are_fine,
    ],
}

#[test]
fn a_plugin_of_hooks_only_declares_them_in_order() {
    let mut def = __ToolhostPlugin::define();
    assert!(def.tool_names().is_empty());
    assert_eq!(
        def.hook_names(),
        ["no_env_files", "audit", "hello", "reads"]
    );
    let extras = serde_json::to_value(def.extras_mut().clone()).unwrap();
    assert_eq!(
        extras,
        json!({
            "hooks": [
                {"id": "no_env_files", "event": "PreToolUse", "matcher": "Edit|Write"},
                {"id": "audit", "event": "PostToolUse"},
                {"id": "hello", "event": "SessionStart", "matcher": "startup"},
            ],
            "permission": true,
        })
    );
}

#[test]
fn hooks_run_on_their_events_json() {
    let ctx = TestContext::new();
    let out = no_env_files::hook()
        .run(
            json!({"tool_name": "Write", "tool_input": {"file_path": "/w/.env"}}),
            &ctx,
        )
        .unwrap();
    assert_eq!(
        out,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
               "permissionDecision": "deny", "permissionDecisionReason": "not the .env file"}})
    );
    assert_eq!(
        more::post::hook()
            .run(json!({"tool_name": "Read"}), &ctx)
            .unwrap(),
        json!({})
    );
    assert_eq!(ctx.logs()[0].1, "Read");
    let e = more::post::hook()
        .run(json!({"tool_name": ""}), &ctx)
        .unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (-32603, "no tool"));
    assert_eq!(
        reads_are_fine::hook()
            .run(
                json!({"tool_name": "Read", "input": {"file_path": "/x"}}),
                &ctx
            )
            .unwrap(),
        json!({"behavior": "allow"})
    );
    let def = more::hello::hook();
    assert_eq!(
        (def.id(), def.event(), def.matcher(), def.is_policy()),
        ("hello", Some("SessionStart"), Some("startup"), false)
    );
}
