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
        "CARGO_BIN_EXE_toolhost-worker"
    )));
    let in_process = LoadedPlugin::load_with_config(&file, shadow.path(), &config)
        .unwrap_or_else(|e| panic!("{e}"));
    let staged = toolhost::plugin::Staged::copy(&file, shadow.path()).unwrap();
    let isolated = toolhost::worker::start_plugin(
        &file,
        staged,
        workers,
        Default::default(),
        &config,
        Arc::new(toolhost::plugin::Unfollowed),
    )
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
                    {"id": "log_failed_tool_use", "event": "PostToolUseFailure"},
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

/// In a sandbox, guard reads the branch beneath its `read` paths and writes its log beneath its
/// `write` paths; what it may not reach makes it say nothing, never fail the hook.
#[test]
fn guard_works_in_a_sandbox_within_its_paths() {
    use toolhost::worker::{PluginWorkerSettings, Sandbox};

    if let Err(why) = toolhost::worker::probe_sandbox().enforceable() {
        eprintln!("skipped: this kernel cannot enforce a sandbox ({why})");
        return;
    }
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    std::fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/sandboxed\n").unwrap();
    let hidden = tempfile::tempdir().unwrap();
    std::fs::create_dir(hidden.path().join(".git")).unwrap();
    std::fs::write(hidden.path().join(".git/HEAD"), "ref: refs/heads/hidden\n").unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("audit/guard.log");
    let outside = hidden.path().join("guard.log");

    let start = |log: &std::path::Path| {
        let config = json!({"log": log}).to_string();
        let source = move |name: &str| (name == "guard").then(|| config.clone());
        let shadow = common::shadow_dir();
        let file = common::built_plugins().join(common::lib_file("guard"));
        let staged = toolhost::plugin::Staged::copy(&file, shadow.path()).unwrap();
        let settings = PluginWorkerSettings {
            sandbox: Some(Sandbox {
                read: vec![repo.path().to_path_buf()],
                write: vec![logs.path().to_path_buf()],
                ..Default::default()
            }),
            ..Default::default()
        };
        let workers = Arc::new(toolhost::worker::WorkerConfig::new(env!(
            "CARGO_BIN_EXE_toolhost-worker"
        )));
        toolhost::worker::start_plugin(
            &file,
            staged,
            workers,
            settings,
            &source,
            Arc::new(toolhost::plugin::Unfollowed),
        )
        .unwrap_or_else(|e| panic!("{e}"))
    };
    let post = json!({"id": "log_tool_use", "input": {
        "hook_event_name": "PostToolUse", "session_id": "s", "tool_name": "Read",
        "tool_input": {"file_path": "/x"}, "tool_response": {}, "tool_use_id": "t",
    }});
    let prompt = |cwd: &std::path::Path| json!({"id": "git_branch", "input": {"hook_event_name": "UserPromptSubmit", "prompt": "hi", "cwd": cwd}});

    let p = start(&log);
    assert_eq!(request(&p, "hooks/run", post.clone()), Ok(json!({})));
    let line: Value = serde_json::from_str(std::fs::read_to_string(&log).unwrap().trim()).unwrap();
    assert_eq!(
        (&line["tool"], &line["session"]),
        (&json!("Read"), &json!("s"))
    );
    assert_eq!(
        request(&p, "hooks/run", prompt(repo.path())),
        Ok(json!({"hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": "The current git branch is `sandboxed`.",
        }}))
    );
    // Outside its `read` paths it cannot see the repository: no context, no failure.
    assert_eq!(
        request(&p, "hooks/run", prompt(hidden.path())),
        Ok(json!({}))
    );

    // A log outside its `write` paths: nothing written, the hook still answers.
    let p = start(&outside);
    assert_eq!(request(&p, "hooks/run", post), Ok(json!({})));
    assert!(!outside.exists());
}
