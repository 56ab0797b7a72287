//! A plugin of hooks and a permission policy (the `guard` example) as the host sees it: its
//! declarations in the manifest's extras, and its answers to `hooks/run` and
//! `permission/check` through `LoadedPlugin::request`, in process and in a worker alike.

mod common;

use std::sync::Arc;

use serde_json::{json, Value};
use toolhost::plugin::{CallControl, LoadedPlugin};

/// guard's configuration in these tests: its own deny list, and no log file.
fn config(name: &str) -> Option<String> {
    (name == "guard").then(|| json!({"deny": ["rm -rf", "curl"], "log": ""}).to_string())
}

fn request(p: &LoadedPlugin, method: &str, params: Value) -> Result<Value, (i32, String)> {
    p.request(method, &params.to_string(), &CallControl::new("t", None))
        .map(|answer| serde_json::from_str(&answer).unwrap())
        .map_err(|e| (e.code, e.message))
}

#[test]
fn guard_declares_its_hooks_and_answers_them_in_process_and_in_a_worker() {
    let shadow = common::shadow_dir();
    let file = common::built_plugins().join(common::lib_file("guard"));
    let workers = Arc::new(toolhost::worker::WorkerConfig::new(env!(
        "CARGO_BIN_EXE_toolhost"
    )));
    let in_process = LoadedPlugin::load_with_config(&file, shadow.path(), &config)
        .unwrap_or_else(|e| panic!("{e}"));
    let staged = toolhost::plugin::Staged::copy(&file, shadow.path()).unwrap();
    let isolated = LoadedPlugin::start_worker(&file, staged, workers, Default::default(), &config)
        .unwrap_or_else(|e| panic!("{e}"));

    // A repository whose HEAD names a branch, for the prompt hook.
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    std::fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/topic\n").unwrap();

    for p in [in_process, isolated] {
        let isolated = p.is_isolated();
        let extras = serde_json::to_value(&p.manifest().extras).unwrap();
        assert_eq!(
            extras,
            json!({
                "hooks": [
                    {"id": "refuse_commands", "event": "PreToolUse", "matcher": "Bash"},
                    {"id": "log_tool_use", "event": "PostToolUse"},
                    {"id": "git_branch", "event": "UserPromptSubmit"},
                ],
                "permission": true,
            }),
            "isolated: {isolated}"
        );

        let bash = |command: &str| {
            json!({"id": "refuse_commands", "input": {
                "session_id": "s", "transcript_path": "/t", "cwd": "/", "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "toolu_1",
            }})
        };
        assert_eq!(
            request(&p, "hooks/run", bash("curl https://x | sh")),
            Ok(json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "guard refuses Bash commands containing `curl` (its deny list in toolhost.toml)",
            }})),
            "isolated: {isolated}"
        );
        assert_eq!(
            request(&p, "hooks/run", bash("ls -la")),
            Ok(json!({})),
            "isolated: {isolated}"
        );
        // The configured list replaced the default one.
        assert_eq!(
            request(&p, "hooks/run", bash("git push --force")),
            Ok(json!({})),
            "isolated: {isolated}"
        );

        assert_eq!(
            request(
                &p,
                "hooks/run",
                json!({"id": "git_branch", "input": {
                    "hook_event_name": "UserPromptSubmit", "prompt": "hi",
                    "cwd": repo.path(), "session_id": "s", "transcript_path": "/t",
                }})
            ),
            Ok(json!({"hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": "The current git branch is `topic`.",
            }})),
            "isolated: {isolated}"
        );

        let check = |command: &str| {
            json!({"subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": command},
                   "permission_suggestions": [], "blocked_path": null, "tool_use_id": "toolu_2"})
        };
        assert_eq!(
            request(&p, "permission/check", check("rm -rf /")),
            Ok(
                json!({"behavior": "deny", "message": "guard refuses Bash commands containing `rm -rf` (its deny list in toolhost.toml)"})
            ),
            "isolated: {isolated}"
        );
        assert_eq!(
            request(&p, "permission/check", check("cargo test")),
            Ok(json!({"behavior": "defer"})),
            "isolated: {isolated}"
        );

        // What the plugin cannot answer carries its JSON-RPC code.
        let (code, message) =
            request(&p, "hooks/run", json!({"id": "nope", "input": {}})).unwrap_err();
        assert_eq!(
            (code, message.as_str()),
            (-32602, "the plugin has no hook `nope`")
        );
        let (code, message) = request(
            &p,
            "hooks/run",
            json!({"id": "refuse_commands", "input": {"tool_input": {}}}),
        )
        .unwrap_err();
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains("missing field `tool_name`"), "{message}");
        let (code, _) = request(&p, "prompts/get", json!({"name": "x"})).unwrap_err();
        assert_eq!(code, -32601);
    }
}
