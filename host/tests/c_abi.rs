//! Plugins of the plain C ABI (issue 40): the C example (plugins/c/) through every front end
//! and the seams a Rust plugin goes through (the CLI's commands, stdio `serve`, a worker
//! with `--isolate`, the sandbox, timeouts, hot replace), and the hostile C fixture
//! (plugins/fixtures/hostile-c/), whose every broken rule is refused with an error naming it
//! while the host keeps serving. The libraries are built here with `cc`
//! (`toolhost_test_support::foreign`).

mod common;

use std::{path::PathBuf, sync::Arc, time::Duration};

use serde_json::{json, Value};
use toolhost::plugin::{CallControl, CallResult, LoadError, LoadedPlugin};
use toolhost_test_support::foreign::build_c;

fn hello() -> PathBuf {
    build_c("plugins/c/hello.c", "hello_c", &[])
}

fn hostile(defines: &[&str]) -> PathBuf {
    build_c("plugins/fixtures/hostile-c/hostile.c", "hostile_c", defines)
}

fn load(file: &std::path::Path) -> Result<Arc<LoadedPlugin>, LoadError> {
    let shadow = common::shadow_dir();
    LoadedPlugin::load(file, shadow.path())
}

fn call(p: &LoadedPlugin, tool: &str, args: Value) -> CallResult {
    p.call(tool, &args.to_string(), &CallControl::new("t", None))
}

fn run(args: &[&str], plugins: &std::path::Path) -> (i32, String, String) {
    let out = common::toolhost(args, plugins).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        common::text(&out.stdout),
        common::text(&out.stderr),
    )
}

// ---------------------------------------------------------------------------------------------
// The C example.

/// `list`, `call`, `read`, `prompt` and `hook` of the CLI serve the C plugin with the exact
/// results a Rust plugin gives: the host checks its arguments against its schema, and its
/// error results are errors.
#[test]
fn the_cli_lists_calls_reads_prompts_and_hooks_a_c_plugin() {
    let plugins = common::plugin_dir_of(&[&hello()]);
    let dir = plugins.path();
    let (code, out, err) = run(&["list", "--json"], dir);
    assert_eq!(code, 0, "{err}");
    let list: Value = serde_json::from_str(&out).unwrap();
    let plugin = &list["plugins"][0];
    assert_eq!(plugin["name"], "hello_c", "{list}");
    assert_eq!(plugin["version"], "0.1.0", "{list}");

    let (code, out, err) = run(&["call", "hello_c", "add", r#"{"a":2,"b":3.5}"#], dir);
    // `call` prints the structured content when there is one.
    assert_eq!((code, out.trim()), (0, r#"{"sum":5.5}"#), "{err}");
    let (code, out, _) = run(
        &["call", "hello_c", "echo", r#"{"text":"hé \"q\"\n"}"#],
        dir,
    );
    assert_eq!((code, out.as_str()), (0, "hé \"q\"\n\n"));
    // The host's schema check, as for any plugin.
    let (code, out, _) = run(&["call", "hello_c", "add", r#"{"a":"two"}"#], dir);
    assert_eq!(code, 1);
    assert!(
        out.starts_with("invalid arguments for tool `add`: "),
        "{out}"
    );
    // An error result of the plugin's own.
    let (code, out, _) = run(
        &["call", "hello_c", "read_file", r#"{"path":"/nonexistent"}"#],
        dir,
    );
    assert_eq!((code, out.trim()), (1, "cannot open the file"));

    let (code, out, err) = run(&["read", "hello://greeting"], dir);
    assert_eq!((code, out.trim()), (0, "Hello from C!"), "{err}");

    let (code, out, err) = run(&["prompt", "hello_c.greet", "name=Ada", "--json"], dir);
    assert_eq!(code, 0, "{err}");
    let prompt: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        prompt,
        json!({"description":"A greeting","messages":[{"role":"user",
            "content":{"type":"text","text":"Ada"}}]})
    );
    let (code, _, err) = run(&["prompt", "hello_c.greet"], dir);
    assert_ne!(code, 0, "a missing required argument is refused: {err}");

    let bash =
        |command: &str| json!({"tool_name":"Bash","tool_input":{"command":command}}).to_string();
    let (code, out, err) = run(&["hook", "hello_c", "PreToolUse", &bash("rm -rf /")], dir);
    assert_eq!(code, 0, "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    let (code, out, err) = run(&["hook", "hello_c", "PreToolUse", &bash("ls")], dir);
    assert_eq!(code, 0, "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert!(answer.get("hookSpecificOutput").is_none(), "{answer}");
}

/// Over stdio `serve`: the MCP shapes of its tools (schemas, annotations), its results
/// (`structuredContent`, `isError`), its resources and prompts, exactly.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_serve_gives_a_c_plugin_s_exact_mcp_shapes() {
    let plugins = common::plugin_dir_of(&[&hello()]);
    let shadow = common::shadow_dir();
    let registry =
        toolhost::registry::Registry::open(common::registry_config(plugins.path(), shadow.path()))
            .unwrap();
    let router = toolhost::handler::Router::new(registry, Default::default());
    let (mut pipe, _) = common::stdio::Pipe::open(router, false, json!({})).await;
    let list = pipe.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    // `serve` offers every plugin's tools at once, named `<plugin>__<tool>`.
    let add = tools
        .iter()
        .find(|t| t["name"] == "hello_c__add")
        .expect("add");
    assert_eq!(
        add,
        &json!({"name":"hello_c__add","description":"Adds two numbers",
            "inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},
            "outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]},
            "annotations":{"readOnlyHint":true}})
    );
    let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "hello_c__add",
            "hello_c__echo",
            "hello_c__wait",
            "hello_c__read_file",
            "hello_c__crash"
        ]
    );

    let r = pipe
        .request(
            "tools/call",
            json!({"name":"hello_c__add","arguments":{"a":1,"b":2}}),
        )
        .await;
    assert_eq!(
        r["result"],
        json!({"content":[{"type":"text","text":"3"}],"structuredContent":{"sum":3}})
    );
    let r = pipe
        .request(
            "tools/call",
            json!({"name":"hello_c__read_file","arguments":{"path":"/nonexistent"}}),
        )
        .await;
    assert_eq!(
        r["result"],
        json!({"content":[{"type":"text","text":"cannot open the file"}],"isError":true})
    );
    let r = pipe.request("resources/list", json!({})).await;
    assert_eq!(
        r["result"]["resources"],
        json!([{"uri":"hello://greeting","name":"greeting","mimeType":"text/plain"}])
    );
    let r = pipe
        .request("resources/read", json!({"uri":"hello://greeting"}))
        .await;
    assert_eq!(
        r["result"],
        json!({"contents":[{"uri":"hello://greeting","mimeType":"text/plain","text":"Hello from C!"}]})
    );
    let r = pipe.request("prompts/list", json!({})).await;
    assert_eq!(
        r["result"]["prompts"],
        json!([{"name":"hello_c__greet","description":"Greets someone","arguments":[{"name":"name","required":true}]}])
    );
    pipe.end().await;
}

/// A stuck call (the `wait` tool runs until cancelled) is stopped by its timeout: the tool
/// sees the cancellation through `is_cancelled` and returns.
#[test]
fn a_stuck_c_call_is_stopped_by_its_timeout() {
    let plugins = common::plugin_dir_of(&[&hello()]);
    let (code, out, err) = run(
        &[
            "call",
            "hello_c",
            "wait",
            "{}",
            "--plugin-timeout",
            "hello_c=0.2",
        ],
        plugins.path(),
    );
    assert_eq!(
        (code, out.trim()),
        (1, "tool wait timed out after 200ms"),
        "{err}"
    );
    // In process too: the control's cancellation reaches the plugin, which returns.
    let p = load(&hello()).unwrap();
    let control = Arc::new(CallControl::new("t", None));
    let c2 = control.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        c2.cancel();
    });
    let r = p.call("wait", "{}", &control);
    canceller.join().unwrap();
    assert!(r.is_error);
    assert_eq!(r.text(), "cancelled");
}

/// With `--isolate`, a segfault in the C code ends only its worker: the call fails, and the
/// next one runs in a new worker.
#[tokio::test(flavor = "multi_thread")]
async fn a_segfault_in_c_is_survived_with_isolate() {
    let plugins = common::plugin_dir_of(&[&hello()]);
    let shadow = common::shadow_dir();
    let mut config = common::registry_config(plugins.path(), shadow.path());
    let mut workers = toolhost::worker::WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost"));
    workers.isolate_all = true;
    config.workers = Some(Arc::new(workers));
    let registry = toolhost::registry::Registry::open(config).unwrap();
    let router = toolhost::handler::Router::new(registry.clone(), Default::default());
    let (mut pipe, _) = common::stdio::Pipe::open(router, false, json!({})).await;
    let first = registry.lease("hello_c").await.unwrap().worker_pid();
    assert!(first.is_some(), "hello_c runs in a worker");
    let r = pipe
        .request(
            "tools/call",
            json!({"name":"hello_c__crash","arguments":{}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    let r = pipe
        .request(
            "tools/call",
            json!({"name":"hello_c__add","arguments":{"a":40,"b":2}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"], json!({"sum":42}), "{r}");
    let second = registry.lease("hello_c").await.unwrap().worker_pid();
    assert!(second.is_some() && second != first, "{first:?} {second:?}");
    pipe.end().await;
}

/// A sandboxed C plugin cannot read a file outside the paths it was given, and can inside.
/// (Run as an unprivileged user, as host/tests/sandbox.rs says, to see Landlock alone refuse.)
#[test]
fn a_sandboxed_c_plugin_is_refused_a_file_outside_its_paths() {
    use toolhost::worker::{PluginWorkerSettings, Sandbox, WorkerConfig, WorkerPlugin};
    if toolhost::worker::probe_sandbox().enforceable().is_err() {
        eprintln!("skipped: this kernel cannot enforce a sandbox");
        return;
    }
    let allowed = common::private_dir(0o755);
    let inside = allowed.path().join("inside.txt");
    std::fs::write(&inside, "inside").unwrap();
    let outside_dir = common::private_dir(0o755);
    let outside = outside_dir.path().join("outside.txt");
    std::fs::write(&outside, "outside").unwrap();
    let settings = PluginWorkerSettings {
        sandbox: Some(Sandbox {
            read: vec![allowed.path().to_path_buf()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let shadow = common::shadow_dir();
    let file = hello();
    let staged = toolhost::plugin::Staged::copy(&file, shadow.path()).unwrap();
    let workers = Arc::new(WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost")));
    let p = WorkerPlugin::start(&file, staged, workers, settings, &|_| None).unwrap();
    let read = |path: &std::path::Path| {
        p.call(
            "read_file",
            &json!({"path": path}).to_string(),
            &CallControl::new("t", None),
        )
    };
    let r = read(&inside);
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "inside");
    let r = read(&outside);
    assert!(r.is_error, "{}", r.text());
    assert_eq!(r.text(), "cannot open the file");
}

/// A new build put in place replaces the running version (a call of the old one in flight
/// finishes on it), as for a Rust plugin.
#[tokio::test(flavor = "multi_thread")]
async fn a_c_plugin_is_replaced_in_place() {
    use common::registry::{follow, replaced, Folder};
    let folder = Folder::new();
    let v1 = std::fs::read(hello()).unwrap();
    let v2 = std::fs::read(build_c(
        "plugins/c/hello.c",
        "hello_c",
        &["GREETING=\"Hello again\""],
    ))
    .unwrap();
    folder.put("libhello_c.so", &v1);
    let reg = toolhost::registry::Registry::open(folder.config()).unwrap();
    let (mut rx, _watch) = follow(&reg);
    let read = |reg: Arc<toolhost::registry::Registry>| async move {
        let lease = reg.lease("hello_c").await.unwrap();
        tokio::task::spawn_blocking(move || {
            lease
                .request(
                    "resources/read",
                    r#"{"uri":"hello://greeting","name":"greeting","variables":{}}"#,
                    &CallControl::new("t", None),
                )
                .unwrap()
        })
        .await
        .unwrap()
    };
    assert!(read(reg.clone()).await.contains("Hello from C!"));
    // A call in flight on the first version.
    let lease = reg.lease("hello_c").await.unwrap();
    let control = Arc::new(CallControl::new("inflight", None));
    let c2 = control.clone();
    let inflight = tokio::task::spawn_blocking(move || lease.call("wait", "{}", &c2));
    folder.put("libhello_c.so", &v2);
    replaced(&mut rx, "hello_c").await;
    assert!(read(reg.clone()).await.contains("Hello again"));
    control.cancel();
    let r = inflight.await.unwrap();
    assert_eq!(r.text(), "cancelled", "the old version finished its call");
}

// ---------------------------------------------------------------------------------------------
// The hostile fixture.

/// Every reply that breaks a rule is refused with an error naming the plugin; replies that
/// keep the rules pass, and the plugin keeps serving after each refusal.
#[test]
fn hostile_replies_are_refused_naming_the_plugin() {
    let p = load(&hostile(&[])).unwrap();
    let refused = [
        ("bad_utf8", "plugin hostile_c handed back its reply to `tools/call` as text that is not valid UTF-8"),
        ("huge_len", "plugin hostile_c handed back its reply to `tools/call` with a length of 9223372036854775808 bytes, more than any buffer can hold"),
        ("null_ptr", "plugin hostile_c handed back its reply to `tools/call` as a NULL pointer with a length of 10 bytes"),
        ("refuses", "plugin hostile_c declares tool `refuses` but refused to run it: no such tool"),
        ("wrong_shape", "plugin hostile_c's tool `wrong_shape` answered with a reply that is not an MCP CallToolResult: missing field `content`"),
        ("wrong_output", "plugin hostile_c's tool `wrong_output` answered with structuredContent that does not match its outputSchema: at /sum: "),
        ("own_buffer", "plugin hostile_c handed back its reply to `tools/call` in the host's own memory"),
    ];
    for (tool, wanted) in refused {
        let r = call(&p, tool, json!({}));
        assert!(r.is_error, "{tool}: {}", r.text());
        assert!(r.text().starts_with(wanted), "{tool}: {}", r.text());
        let fine = call(&p, "fine", json!({}));
        assert_eq!(
            (fine.is_error, fine.text().as_str()),
            (false, "fine"),
            "after {tool}"
        );
    }
    // Its length, not a NUL, ends a reply: the junk after it is not read.
    let r = call(&p, "exact", json!({}));
    assert_eq!((r.is_error, r.text().as_str()), (false, "exact"));
    // A request's answer that is not a JSON object.
    let e = p
        .request(
            "resources/read",
            r#"{"uri":"hostile://r","name":"r","variables":{}}"#,
            &CallControl::new("t", None),
        )
        .unwrap_err();
    assert_eq!(
        e.message,
        "plugin hostile_c answered `resources/read` with text that is not a JSON object"
    );
}

/// A call's handle is checked on every use: from a thread the host never started it works
/// while the call lives; after the call returned, or made up, it does nothing and says so.
#[test]
fn call_handles_are_checked_not_trusted() {
    let p = load(&hostile(&[])).unwrap();
    let status = |tool: &str| call(&p, tool, json!({})).text();
    assert_eq!(status("foreign_live"), "live=0");
    assert_eq!(status("keep_handle"), "kept=0");
    assert_eq!(status("use_stale"), "stale=-1");
    assert_eq!(status("forged"), "forged=-1");
    assert_eq!(status("fine"), "fine");
}

/// A table or manifest that breaks the ABI refuses the load, saying why; the other plugins of
/// the folder load and serve.
#[test]
fn broken_tables_and_lying_manifests_are_refused_at_load() {
    let cases = [
        ("LIE_NAME", "someone_else"),
        (
            "LIE_STATEFUL",
            "says it is stateful, but its table has no save_state and restore_state",
        ),
        ("DUP_TOOL", "tool `fine` is in its manifest twice"),
        ("NULL_TABLE", "its C-ABI table is NULL"),
        ("NO_FREE", "its C-ABI table has no `free`"),
        (
            "SMALL_SIZE",
            "its C-ABI table says it has 8 bytes, fewer than a version-1 table's",
        ),
        (
            "FUTURE_VERSION",
            "it was built for version 99 of the C ABI; this host speaks version 1",
        ),
        (
            "MANIFEST_UTF8",
            "plugin hostile_c handed back its manifest as text that is not valid UTF-8",
        ),
        (
            "MANIFEST_HUGE",
            "with a length of 9223372036854775808 bytes, more than any buffer can hold",
        ),
        (
            "MANIFEST_NULL",
            "handed back its manifest as a NULL pointer with a length of 100 bytes",
        ),
    ];
    for (define, wanted) in cases {
        let e = load(&hostile(&[define])).unwrap_err();
        let shown = toolhost::error::one_line(&e);
        assert!(shown.contains(wanted), "{define}: {shown}");
    }
    // In one folder with a good plugin: the good one serves, each broken one is reported.
    let files: Vec<PathBuf> = ["NULL_TABLE", "MANIFEST_HUGE"]
        .iter()
        .map(|d| hostile(&[d]))
        .collect();
    let plugins = common::private_dir(0o755);
    for (i, f) in files.iter().enumerate() {
        let dest = plugins.path().join(format!("libhostile_c{i}.so"));
        std::fs::copy(f, &dest).unwrap();
    }
    std::fs::copy(hello(), plugins.path().join("libhello_c.so")).unwrap();
    let (code, out, err) = run(
        &["call", "hello_c", "add", r#"{"a":1,"b":1}"#],
        plugins.path(),
    );
    assert_eq!((code, out.trim()), (0, r#"{"sum":2}"#), "{err}");
}
