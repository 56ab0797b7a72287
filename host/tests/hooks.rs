//! Hooks and permission policies through the router (`handler::hooks`): the hooks of every
//! plugin in name order, merged; failures following `on_error`; a hung hook in a worker timed
//! out or withdrawn. The guard example and the hooky fixture (plugins/fixtures/hooky).

mod common;

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use serde_json::{json, value::RawValue, Value};
use toolhost::{
    config::LiveConfig,
    handler::{
        hooks::{Denied, Hooks},
        Router,
    },
    registry::Registry,
};

/// A router over copies of `libs` with `toolhost.toml` holding `config`; every plugin in a
/// worker when `isolate`.
fn open(
    libs: &[&str],
    config: &str,
    isolate: bool,
) -> (Arc<Router>, (tempfile::TempDir, tempfile::TempDir)) {
    let plugins = common::plugin_dir(libs);
    let file = plugins.path().join("toolhost.toml");
    std::fs::write(&file, config).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let shadow = common::shadow_dir();
    let mut registry_config = common::registry_config(plugins.path(), shadow.path());
    registry_config.settings = Arc::new(LiveConfig::open(plugins.path(), None).unwrap());
    let mut workers = toolhost::worker::WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker"));
    workers.isolate_all = isolate;
    registry_config.workers = Some(Arc::new(workers));
    let registry = Registry::open(registry_config).expect("open the registry");
    (Router::new(registry, Default::default()), (plugins, shadow))
}

fn pre_bash(command: &str) -> Value {
    json!({"session_id": "s", "cwd": "/", "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": command}, "tool_use_id": "toolu_1"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hooks_of_every_plugin_run_in_name_order_and_merge() {
    let config = "[plugin.guard]\nconfig = { log = \"\" }\n";
    let (router, _dirs) = open(&["calc", "guard", "hooky"], config, false);
    let hooks = Hooks::new(router);
    assert_eq!(hooks.table().plugins().len(), 2, "calc declares none");

    // guard (first by name) refuses: the chain ends there.
    let o = hooks.run_event(pre_bash("rm -rf /tmp/x"), None).await;
    assert_eq!(o.matched, 2);
    let Some(Denied { plugin, reason }) = &o.denied else {
        panic!("{o:?}")
    };
    assert_eq!(plugin, "guard");
    assert!(reason.contains("`rm -rf`"), "{reason}");
    assert_eq!(
        o.answer.to_json()["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        o.answer.to_json()
    );

    // guard has no opinion; hooky rewrites the command.
    let o = hooks.run_event(pre_bash("ls HOOKY_REWRITE"), None).await;
    assert_eq!(
        o.answer.to_json(),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"command": "echo rewritten by hooky"}}})
    );
    // Only one plugin's hooks.
    let o = hooks
        .run_event(pre_bash("ls HOOKY_REWRITE"), Some("guard"))
        .await;
    assert_eq!((o.matched, o.answer.to_json()), (1, json!({})));
    // Matchers: hooky's PreToolUse hook is for Bash only.
    let read = json!({"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {}});
    assert_eq!(hooks.run_event(read, None).await.matched, 0);

    // Contexts of both plugins, joined in name order.
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    std::fs::write(repo.path().join(".git/HEAD"), "ref: refs/heads/topic\n").unwrap();
    let prompt = json!({"hook_event_name": "UserPromptSubmit", "prompt": "hi",
                        "cwd": repo.path(), "session_id": "s"});
    let o = hooks.run_event(prompt, None).await;
    let context = o.answer.to_json()["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (first, second) = context.split_once("\n\n").expect("two contexts");
    assert!(first.contains("topic"), "{context}");
    assert_eq!(second, "hooky was here");

    // Permission policies: guard refuses, and has no opinion otherwise.
    let question = |command: &str| {
        json!({"subtype": "can_use_tool", "tool_name": "Bash",
               "input": {"command": command}, "tool_use_id": "toolu_1"})
    };
    let answer = hooks.check_permission(question("rm -rf /")).await.unwrap();
    assert_eq!(answer["behavior"], "deny", "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .starts_with("denied by guard: guard refuses"),
        "{answer}"
    );
    assert_eq!(hooks.check_permission(question("ls")).await, None);
}

/// A deny ends the chain: the plugins after the one that refused do not run, and their
/// allow (hooky's rewrite) cannot clear the deny, which names the first plugin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deny_ends_the_chain_before_the_later_plugins_run() {
    let config = "[plugin.guard]\nconfig = { log = \"\" }\n";
    let (router, _dirs) = open(&["guard", "hooky"], config, false);
    let hooks = Hooks::new(router);
    let marks = tempfile::tempdir().unwrap();

    // The control: guard lets it through, so hooky runs (and leaves its mark).
    let ran = marks.path().join("allowed");
    let command = format!("ls HOOKY_REWRITE HOOKY_TOUCH={}", ran.display());
    let o = hooks.run_event(pre_bash(&command), None).await;
    assert!(ran.exists(), "hooky did not run after guard let it through");
    assert_eq!(
        o.answer.to_json()["hookSpecificOutput"]["permissionDecision"],
        "allow",
        "{}",
        o.answer.to_json()
    );

    // guard (first by name) refuses: hooky must not run, and its allow must not count.
    let ran = marks.path().join("denied");
    let command = format!("rm -rf /tmp/x HOOKY_REWRITE HOOKY_TOUCH={}", ran.display());
    let o = hooks.run_event(pre_bash(&command), None).await;
    assert!(
        !ran.exists(),
        "hooky ran after guard denied: the chain did not end at the deny"
    );
    assert_eq!(o.matched, 2);
    let Some(Denied { plugin, reason }) = &o.denied else {
        panic!("not denied: {}", o.answer.to_json())
    };
    assert_eq!(plugin, "guard");
    assert!(reason.contains("`rm -rf`"), "{reason}");
    let answer = o.answer.to_json();
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(
        specific["permissionDecision"],
        "deny",
        "{}",
        o.answer.to_json()
    );
    assert!(
        specific["permissionDecisionReason"]
            .as_str()
            .is_some_and(|r| r.starts_with("denied by guard: ")),
        "{}",
        o.answer.to_json()
    );
    assert!(
        specific.get("updatedInput").is_none(),
        "{}",
        o.answer.to_json()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_hooks_follow_on_error_and_a_hung_one_is_timed_out_or_withdrawn() {
    let config = "[plugin.hooky]\nhook_timeout = 0.5\n";
    let (router, _dirs) = open(&["hooky"], config, true);
    let hooks = Hooks::new(router.clone());

    // A panic and output that is no hook output: denied (PreToolUse's default), naming hooky.
    for (command, why) in [
        (
            "HOOKY_PANIC",
            "`hooks/run` panicked: hooky panics on purpose",
        ),
        ("HOOKY_GARBAGE", "updatedInput is not an object"),
        (
            "HOOKY_HANG",
            "hooks/run by_command of plugin hooky timed out after 500ms",
        ),
    ] {
        let o = hooks.run_event(pre_bash(command), None).await;
        let denied = o
            .denied
            .unwrap_or_else(|| panic!("{command}: {}", o.answer.to_json()));
        assert_eq!(denied.plugin, "hooky");
        assert!(
            denied.reason.starts_with("its hook by_command failed: ")
                && denied.reason.contains(why),
            "{command}: {}",
            denied.reason
        );
    }
    // The worker that hung was replaced: hooks go on.
    let post = json!({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                      "tool_input": {}, "tool_response": {}});
    let o = hooks.run_event(post.clone(), None).await;
    assert_eq!(
        o.answer.to_json()["hookSpecificOutput"]["additionalContext"],
        "hooky saw Bash"
    );

    // Withdrawn while it hangs: its request is cancelled and nothing is answered.
    let answered = Arc::new(AtomicBool::new(false));
    let flag = answered.clone();
    let input = RawValue::from_string(pre_bash("HOOKY_HANG").to_string()).unwrap();
    let run = hooks.callback("cb-1", &input, move |_| flag.store(true, Ordering::SeqCst));
    // Run where the session's reading thread would run it.
    let mut run = run.expect("the first hook runs on the reading thread");
    let rt = tokio::runtime::Handle::current();
    let reader = std::thread::spawn(move || {
        let _rt = rt.enter();
        run.run();
    });
    common::poll_until(Duration::from_secs(10), "the hook to start", || {
        router.calls_in_flight() == 1
    });
    assert!(hooks.cancel("cb-1"));
    assert!(!hooks.cancel("cb-1"), "withdrawn once");
    // A worker's hook that ignores its cancellation ends with its worker.
    common::join_within(reader, Duration::from_secs(30), "the withdrawn hook");
    assert_eq!(router.calls_in_flight(), 0);
    assert!(
        !answered.load(Ordering::SeqCst),
        "a withdrawn callback was answered"
    );
    let o = hooks.run_event(post, None).await;
    assert_eq!(
        o.answer.to_json()["hookSpecificOutput"]["additionalContext"],
        "hooky saw Bash"
    );

    // on_error = "allow": the same failures let the call through.
    let file = router.registry().dir().join("toolhost.toml");
    std::fs::write(
        &file,
        "[plugin.hooky]\nhook_timeout = 0.5\non_error = \"allow\"\n",
    )
    .unwrap();
    router.registry().config().settings.reload().unwrap();
    let o = hooks.run_event(pre_bash("HOOKY_PANIC"), None).await;
    assert_eq!((o.denied, o.answer.to_json()), (None, json!({})));
}

/// A session (`chat`'s control loop) with guard's hooks and policy: callbacks answered by the
/// hooks, permission questions settled by the policy before the person is asked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_callbacks_and_asks_policies_before_the_person() {
    use std::sync::atomic::AtomicUsize;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use toolhost::{
        service::{PermissionHandler, Session},
        transport::{read_lines, Writer},
    };

    let config = "[plugin.guard]\nconfig = { log = \"\" }\n";
    let (router, _dirs) = open(&["guard"], config, false);
    let hooks = Hooks::new(router.clone());
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let person: PermissionHandler = Arc::new(move |_q| {
        count.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(json!({"behavior": "allow", "updatedInput": {"command": "ls"}})) })
    });
    let (mut cli_out, host_in) = tokio::io::duplex(1 << 16);
    let (host_out, cli_in) = tokio::io::duplex(1 << 16);
    let session = Session::start_hooked(
        read_lines(BufReader::new(host_in)),
        Writer::spawn(host_out),
        router,
        Some(person),
        Some(hooks),
    )
    .unwrap();
    let mut from_host = BufReader::new(cli_in).lines();
    let mut ask = async |line: Value| -> Value {
        cli_out
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(60), from_host.next_line())
            .await
            .expect("answered in time")
            .unwrap()
            .expect("the host's output is open");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(
            answer["response"]["request_id"], line["request_id"],
            "{answer}"
        );
        answer["response"]["response"].clone()
    };
    let callback = |id: &str, input: Value| {
        json!({"type": "control_request", "request_id": id, "request": {
            "subtype": "hook_callback", "callback_id": "toolhost_PreToolUse",
            "input": input, "tool_use_id": "toolu_1"}})
    };
    let answer = ask(callback("h1", pre_bash("rm -rf /"))).await;
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    let read = json!({"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {}});
    assert_eq!(ask(callback("h2", read)).await, json!({}));

    let question = |id: &str, command: &str| {
        json!({"type": "control_request", "request_id": id, "request": {
            "subtype": "can_use_tool", "tool_name": "Bash", "input": {"command": command},
            "permission_suggestions": [], "tool_use_id": "toolu_2"}})
    };
    let answer = ask(question("q1", "rm -rf /")).await;
    assert_eq!(answer["behavior"], "deny", "{answer}");
    assert_eq!(asked.load(Ordering::SeqCst), 0, "settled without asking");
    let answer = ask(question("q2", "ls -la")).await;
    assert_eq!(
        answer,
        json!({"behavior": "allow", "updatedInput": {"command": "ls"}})
    );
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "guard had no opinion: the person was asked"
    );
    drop(cli_out);
    session.close().await;
}

/// `toolhost hook`, `list` and `doctor` on a folder with guard, hooky and text.
#[test]
fn the_hook_command_list_and_doctor() {
    let plugins = common::plugin_dir(&["guard", "hooky", "text"]);
    let file = plugins.path().join("toolhost.toml");
    std::fs::write(&file, "[plugin.guard]\nconfig = { log = \"\" }\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let runtime = common::shadow_dir();
    let run = |args: &[&str]| {
        let out = common::toolhost(args, plugins.path())
            .env("XDG_RUNTIME_DIR", runtime.path())
            .output()
            .unwrap();
        (
            out.status.code(),
            common::text(&out.stdout),
            common::text(&out.stderr),
        )
    };
    let bash = r#"{"tool_name":"Bash","tool_input":{"command":"rm -rf /"}}"#;
    let (code, out, err) = run(&["hook", "guard", "PreToolUse", bash]);
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{out}"
    );
    // Only the named plugin's hooks: hooky would rewrite this one.
    let rewrite = r#"{"tool_name":"Bash","tool_input":{"command":"HOOKY_REWRITE"}}"#;
    let (_, out, _) = run(&["hook", "guard", "PreToolUse", rewrite]);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), json!({}));
    let (_, out, _) = run(&["hook", "hooky", "PreToolUse", rewrite]);
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["updatedInput"],
        json!({"command": "echo rewritten by hooky"})
    );
    let question = r#"{"tool_name":"Bash","input":{"command":"ls"}}"#;
    let (_, out, _) = run(&["hook", "guard", "permission", question]);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"behavior": "defer"})
    );
    // Mistakes are named.
    let (code, _, err) = run(&["hook", "guard", "Stop"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("plugin guard has no Stop hook"), "{err}");
    let (code, _, err) = run(&["hook", "guard", "BeforeTea"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("`BeforeTea` is not an event the CLI sends"),
        "{err}"
    );
    let (code, _, err) = run(&["hook", "text", "permission"]);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("plugin text has no permission policy"),
        "{err}"
    );
    // hooky's policy decides what its command says.
    let question = r#"{"tool_name":"Bash","input":{"command":"touch x # HOOKY_DENY"}}"#;
    let (_, out, _) = run(&["hook", "hooky", "permission", question]);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap(),
        json!({"behavior": "deny", "message": "denied by hooky: hooky's policy refuses HOOKY_DENY"})
    );

    let (_, out, _) = run(&["list"]);
    assert!(
        out.contains("  hook PreToolUse [Bash]: refuse_commands\n"),
        "{out}"
    );
    assert!(
        out.contains("  hook UserPromptSubmit: mark_prompt\n"),
        "{out}"
    );
    assert!(out.contains("  permission policy\n"), "{out}");
    let (_, out, _) = run(&["list", "--json"]);
    let listed: Value = serde_json::from_str(&out).unwrap();
    let guard = &listed["plugins"][0];
    assert_eq!(guard["permission"], true, "{guard}");
    assert_eq!(
        guard["hooks"][0],
        json!({"id": "refuse_commands", "event": "PreToolUse", "matcher": "Bash"})
    );
    let (_, out, _) = run(&["doctor"]);
    let line = out
        .lines()
        .find(|l| l.contains("libguard"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains(": guard 0.1.0, 0 tools (), ")
            && line.contains(" hooks (PreToolUse Bash, PostToolUse")
            && line.contains("), a permission policy;")
            && line.starts_with("✓"),
        "{line}"
    );
}
