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
use toolhost_test_support::foreign::{build_c, examples};

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
// The examples in C, Go and Zig (`foreign::examples`: the same plugin three times, those
// whose compilers are here, all of them under CI), through the same tests.

/// `list`, `call`, `read`, `prompt` and `hook` of the CLI serve each example with the exact
/// results a Rust plugin gives: the host checks its arguments against its schema, and its
/// error results are errors.
#[test]
fn the_cli_lists_calls_reads_prompts_and_hooks_each_example() {
    for e in examples() {
        let plugins = common::plugin_dir_of(&[&e.file]);
        let dir = plugins.path();
        let name = e.name;
        let (code, out, err) = run(&["list", "--json"], dir);
        assert_eq!(code, 0, "{name}: {err}");
        let list: Value = serde_json::from_str(&out).unwrap();
        let plugin = &list["plugins"][0];
        assert_eq!(plugin["name"], name, "{list}");
        assert_eq!(plugin["version"], "0.1.0", "{list}");

        let (code, out, err) = run(&["call", name, "add", r#"{"a":2,"b":3.5}"#], dir);
        // `call` prints the structured content when there is one.
        assert_eq!((code, out.trim()), (0, r#"{"sum":5.5}"#), "{name}: {err}");
        let (code, out, _) = run(&["call", name, "echo", r#"{"text":"hé \"q\"\n"}"#], dir);
        assert_eq!((code, out.as_str()), (0, "hé \"q\"\n\n"), "{name}");
        // The host's schema check, as for any plugin.
        let (code, out, _) = run(&["call", name, "add", r#"{"a":"two"}"#], dir);
        assert_eq!(code, 1, "{name}");
        assert!(
            out.starts_with("invalid arguments for tool `add`: "),
            "{name}: {out}"
        );
        // An error result of the plugin's own.
        let (code, out, _) = run(
            &["call", name, "read_file", r#"{"path":"/nonexistent"}"#],
            dir,
        );
        assert_eq!((code, out.trim()), (1, "cannot open the file"), "{name}");

        // The size limit, measured on the reply the plugin handed back.
        let long = json!({ "text": "x".repeat(300) }).to_string();
        let (code, out, _) = run(
            &["call", name, "echo", &long, "--max-result-bytes", "100"],
            dir,
        );
        assert_eq!(
            (code, out.trim()),
            (1, "tool `echo` returned 355 bytes, over the 100 bytes limit (raise it with --max-result-bytes)"),
            "{name}"
        );

        let (code, out, err) = run(&["read", e.uri], dir);
        assert_eq!((code, out.trim()), (0, e.greeting), "{name}: {err}");

        let greet = format!("{name}.greet");
        let (code, out, err) = run(&["prompt", &greet, "name=Ada", "--json"], dir);
        assert_eq!(code, 0, "{name}: {err}");
        let prompt: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            prompt,
            json!({"description":"A greeting","messages":[{"role":"user",
                "content":{"type":"text","text":"Ada"}}]}),
            "{name}"
        );
        let (code, _, err) = run(&["prompt", &greet], dir);
        assert_ne!(
            code, 0,
            "{name}: a missing required argument is refused: {err}"
        );

        let bash = |command: &str| {
            json!({"tool_name":"Bash","tool_input":{"command":command}}).to_string()
        };
        let (code, out, err) = run(&["hook", name, "PreToolUse", &bash("rm -rf /")], dir);
        assert_eq!(code, 0, "{name}: {err}");
        let answer: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"], "deny",
            "{name}: {answer}"
        );
        let (code, out, err) = run(&["hook", name, "PreToolUse", &bash("ls")], dir);
        assert_eq!(code, 0, "{name}: {err}");
        let answer: Value = serde_json::from_str(&out).unwrap();
        assert!(
            answer.get("hookSpecificOutput").is_none(),
            "{name}: {answer}"
        );
    }
}

/// Over stdio `serve`: the MCP shapes of each example's tools (schemas, annotations), its
/// results (`structuredContent`, `isError`), its resources and prompts, exactly.
#[tokio::test(flavor = "multi_thread")]
async fn stdio_serve_gives_each_example_s_exact_mcp_shapes() {
    for e in examples() {
        let name = e.name;
        let plugins = common::plugin_dir_of(&[&e.file]);
        let shadow = common::shadow_dir();
        let registry = toolhost::registry::Registry::open(common::registry_config(
            plugins.path(),
            shadow.path(),
        ))
        .unwrap();
        let router = toolhost::handler::Router::new(registry, Default::default());
        let (mut pipe, _) = common::stdio::Pipe::open(router, false, json!({})).await;
        let list = pipe.request("tools/list", json!({})).await;
        let tools = list["result"]["tools"].as_array().unwrap();
        // `serve` offers every plugin's tools at once, named `<plugin>__<tool>`.
        let add = tools
            .iter()
            .find(|t| t["name"] == format!("{name}__add"))
            .expect("add");
        assert_eq!(
            add,
            &json!({"name":format!("{name}__add"),"description":"Adds two numbers",
                "inputSchema":{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]},
                "outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]},
                "annotations":{"readOnlyHint":true}})
        );
        let names: Vec<_> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        let wanted: Vec<_> = ["add", "echo", "wait", "read_file", "crash"]
            .iter()
            .map(|t| format!("{name}__{t}"))
            .collect();
        assert_eq!(names, wanted);

        let tool = |t: &str| format!("{name}__{t}");
        let r = pipe
            .request(
                "tools/call",
                json!({"name":tool("add"),"arguments":{"a":1,"b":2}}),
            )
            .await;
        assert_eq!(
            r["result"],
            json!({"content":[{"type":"text","text":"3"}],"structuredContent":{"sum":3}}),
            "{name}"
        );
        let r = pipe
            .request(
                "tools/call",
                json!({"name":tool("read_file"),"arguments":{"path":"/nonexistent"}}),
            )
            .await;
        assert_eq!(
            r["result"],
            json!({"content":[{"type":"text","text":"cannot open the file"}],"isError":true}),
            "{name}"
        );
        let r = pipe.request("resources/list", json!({})).await;
        assert_eq!(
            r["result"]["resources"],
            json!([{"uri":e.uri,"name":"greeting","mimeType":"text/plain"}]),
            "{name}"
        );
        let r = pipe.request("resources/read", json!({"uri":e.uri})).await;
        assert_eq!(
            r["result"],
            json!({"contents":[{"uri":e.uri,"mimeType":"text/plain","text":e.greeting}]}),
            "{name}"
        );
        let r = pipe.request("prompts/list", json!({})).await;
        assert_eq!(
            r["result"]["prompts"],
            json!([{"name":tool("greet"),"description":"Greets someone",
                "arguments":[{"name":"name","required":true}]}]),
            "{name}"
        );
        pipe.end().await;
    }
}

/// A stuck call (the `wait` tool runs until cancelled) is stopped by its timeout: the tool
/// sees the cancellation through `is_cancelled` and returns.
#[test]
fn a_stuck_call_of_each_example_is_stopped_by_its_timeout() {
    for e in examples() {
        let name = e.name;
        let plugins = common::plugin_dir_of(&[&e.file]);
        let timeout = format!("{name}=0.2");
        let (code, out, err) = run(
            &["call", name, "wait", "{}", "--plugin-timeout", &timeout],
            plugins.path(),
        );
        assert_eq!(
            (code, out.trim()),
            (1, "tool `wait` timed out after 200ms"),
            "{name}: {err}"
        );
        // In process too: the control's cancellation reaches the plugin, which returns.
        let p = load(&e.file).unwrap();
        let control = Arc::new(CallControl::new("t", None));
        let c2 = control.clone();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            c2.cancel();
        });
        let r = p.call("wait", "{}", &control);
        canceller.join().unwrap();
        assert!(r.is_error, "{name}");
        assert_eq!(r.text(), "cancelled", "{name}");
    }
}

/// With `--isolate`, a segfault in an example's code ends only its worker: the call fails,
/// and the next one runs in a new worker.
#[tokio::test(flavor = "multi_thread")]
async fn a_segfault_in_each_example_is_survived_with_isolate() {
    for e in examples() {
        let name = e.name;
        let plugins = common::plugin_dir_of(&[&e.file]);
        let shadow = common::shadow_dir();
        let mut config = common::registry_config(plugins.path(), shadow.path());
        let mut workers =
            toolhost::worker::WorkerConfig::new(env!("CARGO_BIN_EXE_toolhost-worker"));
        workers.isolate_all = true;
        config.workers = Some(Arc::new(workers));
        let registry = toolhost::registry::Registry::open(config).unwrap();
        let router = toolhost::handler::Router::new(registry.clone(), Default::default());
        let (mut pipe, _) = common::stdio::Pipe::open(router, false, json!({})).await;
        let first = registry.lease(name).await.unwrap().worker_pid();
        assert!(first.is_some(), "{name} runs in a worker");
        let r = pipe
            .request(
                "tools/call",
                json!({"name":format!("{name}__crash"),"arguments":{}}),
            )
            .await;
        assert_eq!(r["result"]["isError"], true, "{name}: {r}");
        let r = pipe
            .request(
                "tools/call",
                json!({"name":format!("{name}__add"),"arguments":{"a":40,"b":2}}),
            )
            .await;
        assert_eq!(
            r["result"]["structuredContent"],
            json!({"sum":42}),
            "{name}: {r}"
        );
        let second = registry.lease(name).await.unwrap().worker_pid();
        assert!(
            second.is_some() && second != first,
            "{name}: {first:?} {second:?}"
        );
        pipe.end().await;
    }
}

/// A sandboxed example (`[plugin.NAME.sandbox] read = [a folder]`, a worker Landlock
/// confines) served by `toolhost call` run as an unprivileged user: it reads a file inside
/// its paths, and is refused one outside them that the same user reads without the sandbox
/// (so the refusal is the sandbox's, not the file's permissions). Run as root, the CLI runs
/// as the user `toolhost-probe` ([`common::unprivileged_user`]). Skipped where the kernel
/// cannot enforce a sandbox, except under `CI=true`, where that fails.
#[cfg(target_os = "linux")]
#[test]
fn a_sandboxed_example_is_refused_a_file_outside_its_paths_as_an_unprivileged_user() {
    use std::os::unix::{fs::PermissionsExt, process::CommandExt};
    if let Err(why) = toolhost::worker::probe_sandbox().enforceable() {
        let why = format!("this kernel cannot enforce a sandbox: {why}");
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let user = common::unprivileged_user();
    // Everything the user needs, in one folder it can reach (the checkout may not be).
    let work = common::private_dir(0o755);
    let dir = |name: &str, mode: u32| {
        let d = work.path().join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        d
    };
    // Both binaries, as installed: the host starts the worker beside it.
    let bin_dir = dir("bin", 0o755);
    let bin = bin_dir.join("toolhost");
    for built in [
        env!("CARGO_BIN_EXE_toolhost"),
        env!("CARGO_BIN_EXE_toolhost-worker"),
    ] {
        let built = std::path::Path::new(built);
        let to = bin_dir.join(built.file_name().unwrap());
        std::fs::hard_link(built, &to)
            .or_else(|_| std::fs::copy(built, &to).map(drop))
            .unwrap();
    }
    // Its own: the host refuses a runtime (shadow) folder of another user's.
    let home = dir("home", 0o700);
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&home, Some(uid), Some(gid)).unwrap();
    }
    let allowed = dir("allowed", 0o755);
    let inside = allowed.join("inside.txt");
    std::fs::write(&inside, "inside").unwrap();
    let outside = dir("elsewhere", 0o755).join("outside.txt");
    std::fs::write(&outside, "outside").unwrap();
    for f in [&inside, &outside] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let secret = work.path().join("secret.txt");
    std::fs::write(&secret, "root's").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    for e in examples() {
        let name = e.name;
        let plugins = dir(name, 0o755);
        let lib = plugins.join(e.file.file_name().unwrap());
        std::fs::copy(&e.file, &lib).unwrap();
        std::fs::set_permissions(&lib, std::fs::Permissions::from_mode(0o644)).unwrap();
        let read = |path: &std::path::Path| {
            let args = json!({ "path": path }).to_string();
            let mut cmd = std::process::Command::new(&bin);
            cmd.args(["call", name, "read_file", &args, "--plugins"])
                .arg(&plugins)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("HOME", &home)
                .env("XDG_RUNTIME_DIR", &home)
                .current_dir(&home);
            if let Some((uid, gid)) = user {
                cmd.uid(uid).gid(gid);
            }
            let out = cmd.output().unwrap();
            (
                out.status.code(),
                common::text(&out.stdout).trim().to_string(),
                common::text(&out.stderr),
            )
        };
        let (code, out, err) = read(&outside);
        assert_eq!(
            (code, out.as_str()),
            (Some(0), "outside"),
            "{name}: the user reads it unconfined: {err}"
        );
        if user.is_some() {
            // Not root: a file only root may read is refused it, sandbox or not.
            let (code, out, err) = read(&secret);
            assert_eq!(
                (code, out.as_str()),
                (Some(1), "cannot open the file"),
                "{name}: {err}"
            );
        }
        let toml = plugins.join("toolhost.toml");
        std::fs::write(
            &toml,
            format!("[plugin.{name}.sandbox]\nread = [{:?}]\n", allowed),
        )
        .unwrap();
        std::fs::set_permissions(&toml, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (code, out, err) = read(&inside);
        assert_eq!((code, out.as_str()), (Some(0), "inside"), "{name}: {err}");
        let (code, out, err) = read(&outside);
        assert_eq!(
            (code, out.as_str()),
            (Some(1), "cannot open the file"),
            "{name}: {err}"
        );
    }
}

/// A new build put in place replaces the running version, and a call of the old one in
/// flight finishes on it, as for a Rust plugin.
#[tokio::test(flavor = "multi_thread")]
async fn each_example_is_replaced_in_place() {
    use common::registry::{follow, replaced, variant, Folder};
    for e in examples() {
        let name = e.name;
        let folder = Folder::new();
        let v1 = std::fs::read(&e.file).unwrap();
        let file = format!("lib{name}.so");
        folder.put(&file, &v1);
        let reg = toolhost::registry::Registry::open(folder.config()).unwrap();
        let (mut rx, _watch) = follow(&reg);
        let old = reg.lease(name).await.unwrap();
        let old_hash = *old.hash();
        // A call in flight on the first version.
        let control = Arc::new(CallControl::new("inflight", None));
        let c2 = control.clone();
        let inflight = tokio::task::spawn_blocking(move || old.call("wait", "{}", &c2));
        folder.put(&file, &variant(&v1, 2));
        replaced(&mut rx, name).await;
        let new = reg.lease(name).await.unwrap();
        assert_ne!(*new.hash(), old_hash, "{name}: the new build serves");
        let r = common::registry::call(&reg, name, "add", json!({"a":1,"b":1})).await;
        assert_eq!(common::registry::structured(&r), json!({"sum":2}), "{name}");
        control.cancel();
        let r = inflight.await.unwrap();
        assert_eq!(
            r.text(),
            "cancelled",
            "{name}: the old version finished its call"
        );
    }
}

/// `serve --http` (a stateless 2026-07-28 request) and a `chat` session (the CLI's
/// `mcp_message` control requests) serve each example's tools as they serve a Rust plugin's.
#[tokio::test(flavor = "multi_thread")]
async fn http_and_chat_serve_each_example() {
    for e in examples() {
        let name = e.name;
        let server = common::http::Setup::of_files(&[&e.file]).start().await;
        let r = server
            .modern(
                "/mcp",
                1,
                "tools/call",
                json!({"name":format!("{name}__add"),"arguments":{"a":20,"b":22}}),
            )
            .send()
            .await;
        assert_eq!(r.status, 200, "{name}: {}", r.body);
        assert_eq!(
            r.json()["result"]["structuredContent"],
            json!({"sum":42}),
            "{name}: {}",
            r.body
        );
        server.stop().await;

        let mut cli =
            common::cli::Cli::session(common::open_router_of(&[&e.file], Default::default()));
        cli.request(
            "c1",
            name,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                "params":{"name":"echo","arguments":{"text":"over chat"}}}),
        )
        .await;
        let (_, reply) = cli.reply("c1", Duration::from_secs(60)).await;
        assert_eq!(
            reply["result"]["content"][0]["text"], "over chat",
            "{name}: {reply}"
        );
        cli.close().await;
    }
}

/// The C example's second build says something else: a replaced version's code really
/// changes.
#[tokio::test(flavor = "multi_thread")]
async fn a_rebuilt_c_plugin_answers_with_its_new_code() {
    use common::registry::{follow, replaced, Folder};
    let folder = Folder::new();
    let v2 = build_c(
        "plugins/c/hello.c",
        "hello_c",
        &["GREETING=\"Hello again\""],
    );
    folder.put("libhello_c.so", &std::fs::read(hello()).unwrap());
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
    folder.put("libhello_c.so", &std::fs::read(v2).unwrap());
    replaced(&mut rx, "hello_c").await;
    assert!(read(reg.clone()).await.contains("Hello again"));
}

// ---------------------------------------------------------------------------------------------
// The hostile fixture.

/// A call of hostile tool `tool` is an error result starting `wanted` (naming the plugin),
/// and the plugin keeps serving after it.
fn refused(tool: &str, wanted: &str) {
    let p = load(&hostile(&[])).unwrap();
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

/// Each rule a reply can break, one test each (so that each is seen failing on its own
/// without its check).
macro_rules! refused {
    ($($test:ident: $tool:literal => $wanted:literal;)*) => {$(
        #[test]
        fn $test() {
            refused($tool, $wanted);
        }
    )*};
}

refused! {
    a_reply_that_is_not_utf8_is_refused: "bad_utf8" =>
        "plugin hostile_c handed back its reply to `tools/call` as text that is not valid UTF-8";
    a_reply_length_of_2_to_the_63_is_refused: "huge_len" =>
        "plugin hostile_c handed back its reply to `tools/call` with a length of 9223372036854775808 bytes, more than any buffer can hold";
    a_null_reply_with_a_length_is_refused: "null_ptr" =>
        "plugin hostile_c handed back its reply to `tools/call` as a NULL pointer with a length of 10 bytes";
    a_declared_tool_it_refuses_is_named_a_lie: "refuses" =>
        "plugin hostile_c declares tool `refuses` but refused to run it: no such tool";
    a_reply_that_is_no_call_tool_result_is_refused: "wrong_shape" =>
        "plugin hostile_c's tool `wrong_shape` answered with a reply that is not an MCP CallToolResult: missing field `content`";
    structured_content_off_its_output_schema_is_refused: "wrong_output" =>
        "plugin hostile_c's tool `wrong_output` answered with structuredContent that does not match its outputSchema: at /sum: ";
    a_reply_in_the_host_s_own_memory_is_never_freed_by_the_plugin: "own_buffer" =>
        "plugin hostile_c handed back its reply to `tools/call` in the host's own memory";
}

/// Its length, not a NUL, ends a reply: the junk after it is not read.
#[test]
fn a_reply_ends_at_its_length_not_at_a_nul() {
    let p = load(&hostile(&[])).unwrap();
    let r = call(&p, "exact", json!({}));
    assert_eq!((r.is_error, r.text().as_str()), (false, "exact"));
}

/// A request's answer that is not a JSON object is refused.
#[test]
fn a_request_answer_that_is_not_an_object_is_refused() {
    let p = load(&hostile(&[])).unwrap();
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

/// The status of hostile tool `tool` (its text `what=N`).
fn status_of(p: &LoadedPlugin, tool: &str) -> String {
    call(p, tool, json!({})).text()
}

/// A live call's handle works from a thread the host never started.
#[test]
fn a_live_call_s_handle_works_from_a_plugin_thread() {
    let p = load(&hostile(&[])).unwrap();
    assert_eq!(status_of(&p, "foreign_live"), "live=0");
}

/// After its call returned, a handle used from a thread of the plugin's own does nothing and
/// says so; the plugin keeps serving.
#[test]
fn a_call_s_handle_is_stale_once_the_call_returned() {
    let p = load(&hostile(&[])).unwrap();
    assert_eq!(status_of(&p, "keep_handle"), "kept=0");
    assert_eq!(status_of(&p, "use_stale"), "stale=-1");
    assert_eq!(status_of(&p, "fine"), "fine");
}

/// A handle the host never gave names nothing.
#[test]
fn a_made_up_handle_names_nothing() {
    let p = load(&hostile(&[])).unwrap();
    assert_eq!(status_of(&p, "forged"), "forged=-1");
    assert_eq!(status_of(&p, "fine"), "fine");
}

/// Loading the hostile fixture built with `define` fails with an error containing `wanted`.
fn load_refused(define: &str, wanted: &str) {
    let e = load(&hostile(&[define])).unwrap_err();
    let shown = toolhost::error::one_line(&e);
    assert!(shown.contains(wanted), "{define}: {shown}");
}

/// Each way a table or manifest breaks the ABI refuses the load, saying why: one test each.
macro_rules! load_refused {
    ($($test:ident: $define:literal => $wanted:literal;)*) => {$(
        #[test]
        fn $test() {
            load_refused($define, $wanted);
        }
    )*};
}

load_refused! {
    a_manifest_naming_another_plugin_is_refused: "LIE_NAME" => "someone_else";
    a_stateful_manifest_without_state_functions_is_refused: "LIE_STATEFUL" =>
        "its manifest says it is stateful, but its table has no save_state and restore_state";
    a_tool_declared_twice_is_refused: "DUP_TOOL" => "tool `fine` is in its manifest twice";
    a_null_table_is_refused: "NULL_TABLE" => "its C-ABI table is NULL";
    a_table_without_free_is_refused: "NO_FREE" => "its C-ABI table has no `free`";
    a_table_smaller_than_version_1_is_refused: "SMALL_SIZE" =>
        "its C-ABI table says it has 8 bytes, fewer than a version-1 table's";
    a_table_of_a_future_version_is_refused: "FUTURE_VERSION" =>
        "it was built for version 99 of the C ABI; this host speaks version 1";
    a_manifest_that_is_not_utf8_is_refused: "MANIFEST_UTF8" =>
        "plugin hostile_c handed back its manifest as text that is not valid UTF-8";
    a_manifest_length_of_2_to_the_63_is_refused: "MANIFEST_HUGE" =>
        "with a length of 9223372036854775808 bytes, more than any buffer can hold";
    a_null_manifest_with_a_length_is_refused: "MANIFEST_NULL" =>
        "handed back its manifest as a NULL pointer with a length of 100 bytes";
}

/// Broken plugins in one folder with a good one: the good one serves.
#[test]
fn broken_c_plugins_leave_the_others_serving() {
    let files: Vec<PathBuf> = ["NULL_TABLE", "MANIFEST_HUGE", "LIE_STATEFUL"]
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
    let (code, out, _) = run(&["list"], plugins.path());
    assert_eq!(code, 0);
    assert!(out.contains("hello_c"), "{out}");
}

/// A C plugin gets its `config` from toolhost.toml (by the name its file carries), and
/// `doctor` reports C plugins as it reports Rust ones: what each offers, or why it is refused.
#[test]
fn config_and_doctor_serve_c_plugins() {
    let plugins = common::plugin_dir_of(&[&hostile(&[]), &hello()]);
    let toml = plugins.path().join("toolhost.toml");
    std::fs::write(
        &toml,
        "[plugin.hostile_c]\nconfig = { greeting = \"hi\" }\n",
    )
    .unwrap();
    let (code, out, err) = run(&["call", "hostile_c", "config", "{}"], plugins.path());
    assert_eq!((code, out.trim()), (0, r#"{"greeting":"hi"}"#), "{err}");
    std::fs::remove_file(&toml).unwrap();
    let broken = common::plugin_dir_of(&[&hello()]);
    std::fs::copy(hostile(&["NO_FREE"]), broken.path().join("libhostile_c.so")).unwrap();
    let (_, out, err) = run(&["doctor", "--claude", "/bin/true"], broken.path());
    let all = format!("{out}{err}");
    assert!(
        all.contains("hello_c 0.1.0, 5 tools (add, echo, wait, read_file, crash), 1 hook"),
        "{all}"
    );
    assert!(all.contains("its C-ABI table has no `free`"), "{all}");
}

/// A stateful C plugin hands its state to its next version: `save_state` of one, then
/// `restore_state` of the next, as the registry does across a reload.
#[test]
fn a_c_plugin_s_state_crosses_a_reload() {
    let file = hostile(&["WITH_STATE"]);
    let old = load(&file).unwrap();
    assert!(old.manifest().stateful);
    let state = old.save_state().expect("it keeps state");
    assert_eq!(state, b"state-of-hostile_c");
    let new = load(&file).unwrap();
    new.restore_state(&state).unwrap();
    assert_eq!(call(&new, "config", json!({})).text(), "state-of-hostile_c");
}
