//! Plugin hooks served to Claude Code's own `mcp_tool` hooks (docs/protocol.md §15.2): the
//! `toolhost serve` process answering `tools/call` of its hidden `hook` tool as the CLI sends
//! it, and `toolhost event` answering the events the CLI cannot send there.

mod common;

use std::{
    io::Write as _,
    process::{ChildStdin, Stdio},
    sync::mpsc::Receiver,
    time::{Duration, Instant},
};

use serde_json::{json, Value};

const STEP: Duration = Duration::from_secs(30);

/// A running `toolhost serve` on a plugin folder.
struct Serve {
    child: std::process::Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: i64,
}

impl Serve {
    fn start(plugins: &std::path::Path, runtime: &std::path::Path) -> Serve {
        let mut child = common::toolhost(&["serve"], plugins)
            .env("XDG_RUNTIME_DIR", runtime)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = common::lines_of(child.stdout.take().unwrap());
        let mut serve = Serve {
            child,
            stdin,
            lines,
            next_id: 0,
        };
        serve.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "claude-code", "version": "2.1.332"}}),
        );
        serve.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    fn send(&mut self, msg: Value) {
        writeln!(self.stdin, "{msg}").unwrap();
    }

    /// Sends a request and returns its reply (notifications on the way are skipped).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.request_with_id(msg, id)
    }

    /// Sends `msg` and returns the first reply with id `id`.
    fn request_with_id(&mut self, msg: Value, id: i64) -> Value {
        self.send(msg);
        self.wait_for(id)
    }

    /// The next reply with id `id` (other lines are skipped).
    fn wait_for(&mut self, id: i64) -> Value {
        let deadline = Instant::now() + STEP;
        loop {
            let line = common::next_line_by(&self.lines, deadline, "a reply").expect("serve ended");
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg["id"] == id {
                return msg;
            }
        }
    }

    /// A call of the hook tool with `arguments` as the CLI fills them in; the answer's text.
    fn hook(&mut self, arguments: Value) -> (bool, String) {
        let reply = self.request(
            "tools/call",
            json!({"name": "hook", "arguments": arguments}),
        );
        let result = &reply["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        (result["isError"] == true, text.to_string())
    }

    fn tool_names(&mut self) -> Vec<String> {
        let reply = self.request("tools/list", json!({}));
        reply["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The arguments the CLI makes of the plugin's template for a Bash event: every object field
/// as JSON text, every missing one as "".
fn bash_event(event: &str, command: &str, cwd: &str) -> Value {
    let tool_input = json!({"command": command}).to_string();
    json!({
        "hook_event_name": event,
        "text": {"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": cwd,
                 "prompt_id": "", "permission_mode": "default", "agent_id": "", "agent_type": "",
                 "tool_name": "Bash", "tool_use_id": "toolu_1"},
        "json": {"tool_input": tool_input, "effort": "", "mcp_server": "",
                 "permission_suggestions": ""},
    })
}

fn prompt_event(cwd: &str) -> Value {
    json!({
        "hook_event_name": "UserPromptSubmit",
        "text": {"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": cwd,
                 "prompt": "hello", "source": ""},
        "json": {"effort": ""},
    })
}

fn answer(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// A folder with guard (log off) and the named other plugins.
fn folder(plugins: &[&str]) -> tempfile::TempDir {
    let dir = common::plugin_dir(plugins);
    let file = dir.path().join("toolhost.toml");
    std::fs::write(&file, "[plugin.guard]\nconfig = { log = \"\" }\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    dir
}

/// A git work tree on branch `topic`, for guard's prompt hook.
fn repo() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    std::fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/topic\n").unwrap();
    repo
}

#[test]
fn the_hidden_hook_tool_answers_with_every_plugins_hooks_and_policies() {
    let plugins = folder(&["guard", "calc", "hooky"]);
    let runtime = common::shadow_dir();
    let repo = repo();
    let cwd = repo.path().to_str().unwrap();
    let mut serve = Serve::start(plugins.path(), runtime.path());

    // The model never sees the tool.
    let names = serve.tool_names();
    assert!(names.contains(&"calc__add".to_string()), "{names:?}");
    assert!(!names.iter().any(|n| n == "hook"), "{names:?}");

    // guard refuses, with its reason in the form a command hook prints.
    let (err, text) = serve.hook(bash_event("PreToolUse", "rm -rf /", cwd));
    assert!(!err, "{text}");
    let refusal = answer(&text);
    assert_eq!(refusal["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = refusal["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(reason.starts_with("denied by guard: "), "{reason}");
    assert!(reason.contains("rm -rf"), "{reason}");
    // No opinion: an empty answer.
    let (_, text) = serve.hook(bash_event("PreToolUse", "ls", cwd));
    assert_eq!(answer(&text), json!({}));

    // A hook that fails counts as its plugin's `on_error` (deny for PreToolUse), with the
    // reason the model sees.
    let (_, text) = serve.hook(bash_event("PreToolUse", "HOOKY_PANIC", cwd));
    let refusal = answer(&text);
    assert_eq!(refusal["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = refusal["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.starts_with("denied by hooky: its hook by_command failed"),
        "{reason}"
    );

    // The prompt hook adds the branch of the work tree the CLI names.
    let (_, text) = serve.hook(prompt_event(cwd));
    let context = answer(&text)["hookSpecificOutput"]["additionalContext"].clone();
    assert!(context.as_str().unwrap().contains("topic"), "{text}");

    // A PermissionRequest no hook decides goes to the permission policies: guard's refuses
    // the same commands, as the hook's decision.
    let (_, text) = serve.hook(bash_event("PermissionRequest", "rm -rf ~", cwd));
    let decision = &answer(&text)["hookSpecificOutput"];
    assert_eq!(decision["hookEventName"], "PermissionRequest");
    assert_eq!(decision["decision"]["behavior"], "deny", "{text}");
    let message = decision["decision"]["message"].as_str().unwrap();
    assert!(message.starts_with("denied by guard: "), "{message}");
    // Every policy defers: no decision, the CLI asks as it would.
    let (_, text) = serve.hook(bash_event("PermissionRequest", "ls", cwd));
    assert_eq!(answer(&text), json!({}));

    // What the server cannot read is an error result, which the CLI counts as the hook
    // failing (`onFailure`), never as an allow.
    let (err, text) = serve.hook(json!({"hook_event_name": "BeforeTea"}));
    assert!(err, "{text}");
    assert!(text.contains("hook_event_name"), "{text}");
    let mut bad = bash_event("PreToolUse", "rm -rf /", cwd);
    bad["json"]["tool_input"] = json!("{\"command\": ");
    let (err, text) = serve.hook(bad);
    assert!(err, "{text}");
    assert!(text.contains("json.tool_input"), "{text}");

    // The server goes on serving tools.
    let reply = serve.request(
        "tools/call",
        json!({"name": "calc__add", "arguments": {"x": 2, "y": 3}}),
    );
    assert_eq!(reply["result"]["content"][0]["text"], "5");
}

#[test]
fn a_plugins_hooks_share_its_state_and_follow_the_folder() {
    let plugins = folder(&["calc"]);
    let runtime = common::shadow_dir();
    let repo = repo();
    let cwd = repo.path().to_str().unwrap();
    let mut serve = Serve::start(plugins.path(), runtime.path());
    let (_, text) = serve.hook(prompt_event(cwd));
    assert_eq!(answer(&text), json!({}), "no hook plugin yet");

    // A hook plugin dropped into the folder answers from the next event on.
    let built = common::built_plugins();
    let name = common::lib_file("hooky");
    let staged = plugins.path().join(".hooky.tmp");
    std::fs::copy(built.join(&name), &staged).unwrap();
    std::fs::rename(&staged, plugins.path().join(&name)).unwrap();
    common::poll_until(STEP, "hooky's tool appears", || {
        serve.tool_names().contains(&"hooky__remember".to_string())
    });
    let (_, text) = serve.hook(prompt_event(cwd));
    assert_eq!(
        answer(&text)["hookSpecificOutput"]["additionalContext"],
        "hooky was here"
    );
    // What its tool stores, its hook tells: one plugin, one state.
    let reply = serve.request(
        "tools/call",
        json!({"name": "hooky__remember", "arguments": {"word": "teal"}}),
    );
    assert_eq!(reply["result"]["content"][0]["text"], "remembered teal");
    let (_, text) = serve.hook(prompt_event(cwd));
    assert_eq!(
        answer(&text)["hookSpecificOutput"]["additionalContext"],
        "hooky was here; it remembers teal"
    );

    // Removed: its hooks stop with it.
    std::fs::remove_file(plugins.path().join(&name)).unwrap();
    common::poll_until(STEP, "hooky's tool goes", || {
        !serve.tool_names().contains(&"hooky__remember".to_string())
    });
    let (_, text) = serve.hook(prompt_event(cwd));
    assert_eq!(answer(&text), json!({}));
}

/// `toolhost event` answers as the served hook does, the input on stdin as a command hook
/// gets it; `toolhost hook ... -` reads stdin too.
#[test]
fn the_event_command_and_hook_read_the_input_from_stdin() {
    let plugins = folder(&["guard", "hooky"]);
    let runtime = common::shadow_dir();
    let repo = repo();
    let run = |args: &[&str], stdin: &str| {
        let mut child = common::toolhost(args, plugins.path())
            .env("XDG_RUNTIME_DIR", runtime.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            common::text(&out.stdout),
            common::text(&out.stderr),
        )
    };
    let start = json!({"hook_event_name": "UserPromptSubmit", "session_id": "s",
                       "transcript_path": "/t", "cwd": repo.path(), "prompt": "hi"});
    let (code, out, err) = run(&["event"], &start.to_string());
    assert_eq!(code, Some(0), "{err}");
    let context = answer(&out)["hookSpecificOutput"]["additionalContext"].clone();
    let context = context.as_str().unwrap();
    // Both plugins' hooks, in plugin-name order.
    assert!(
        context.contains("topic") && context.contains("hooky was here"),
        "{context}"
    );

    let ask = json!({"hook_event_name": "PermissionRequest", "session_id": "s",
                     "transcript_path": "/t", "cwd": "/", "tool_name": "Bash",
                     "tool_input": {"command": "git push --force"}});
    let (_, out, _) = run(&["event", "-"], &ask.to_string());
    let decision = &answer(&out)["hookSpecificOutput"]["decision"];
    assert_eq!(decision["behavior"], "deny", "{out}");

    let bash = r#"{"tool_name":"Bash","tool_input":{"command":"rm -rf /"}}"#;
    let (code, out, err) = run(&["hook", "guard", "PreToolUse", "-"], bash);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        answer(&out)["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );

    let (code, _, err) = run(&["event"], r#"{"hook_event_name": "BeforeTea"}"#);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("hook_event_name"), "{err}");
    let (code, _, err) = run(&["event"], "not json");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not valid JSON"), "{err}");
}

/// A served hook event is its `tools/call` request, as on every front end: a second request
/// under its id while it runs is refused, and `notifications/cancelled` withdraws it (the
/// answer is then an error result, which the CLI counts as the hook failing, never an allow).
#[test]
fn a_served_event_is_its_request_refused_twice_and_withdrawn_by_a_cancel() {
    let plugins = folder(&["hooky"]);
    let runtime = common::shadow_dir();
    let mut serve = Serve::start(plugins.path(), runtime.path());
    let hang = bash_event("PreToolUse", "HOOKY_HANG", "/");
    let call = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "hook", "arguments": hang}})
    };
    serve.send(call(50));
    // The same id again while the first hangs in hooky.
    let twice = serve.request_with_id(call(50), 50);
    assert_eq!(twice["error"]["code"], -32600, "{twice}");
    assert!(
        twice["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already in flight"),
        "{twice}"
    );
    serve.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": 50, "reason": "the user pressed Esc"}}),
    );
    let reply = serve.wait_for(50);
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("cancelled"), "{text}");
    // The id is free again, and the server goes on answering hooks.
    let (_, text) = serve.hook(bash_event("PreToolUse", "ls", "/"));
    assert_eq!(answer(&text), json!({}));
}
