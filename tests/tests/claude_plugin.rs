//! The Claude Code plugin that `toolhost claude-plugin` writes, in the user's own `claude -p`
//! (docs/protocol.md §15.3): validated by the CLI, tried for a session with `--plugin-dir`,
//! installed for good with `claude plugin marketplace add` and `claude plugin install`. Only
//! the model is faked; the plugin's `.mcp.json` runs the real `toolhost serve` and its hooks
//! call that running server.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use serde_json::{json, Value};
use toolhost_e2e::{
    artifacts, cli_test, sdk::user_turn, ApiRequest, FakeApi, Proc, Sandbox, ToolResult, STEP,
};

/// Every tool of the plugin's server: `mcp__plugin_toolhost_toolhost__<plugin>__<tool>`.
const TOOLS: &str = "mcp__plugin_toolhost_toolhost";

/// The branch of the work dir's repository, which guard's UserPromptSubmit hook reports.
const BRANCH: &str = "e2e-plugin-branch";

/// What guard's hook adds to the prompt in a repository on [`BRANCH`].
fn branch_context() -> String {
    format!("UserPromptSubmit hook additional context: The current git branch is `{BRANCH}`.")
}

/// A plugin tool's name as the model sees it.
fn tool(name: &str) -> String {
    format!("{TOOLS}__{name}")
}

/// A sandbox with `plugins` whose work dir is a git repository on [`BRANCH`] (guard reads
/// `.git/HEAD`), and guard's log off.
fn sandbox(plugins: &[&str]) -> Sandbox {
    let sandbox = Sandbox::new(plugins);
    sandbox.write_config("[plugin.guard]\nconfig = { log = \"\" }\n");
    let git = sandbox.work_dir().join(".git");
    fs::create_dir_all(&git).unwrap();
    fs::write(git.join("HEAD"), format!("ref: refs/heads/{BRANCH}\n")).unwrap();
    sandbox
}

/// Runs `cmd` to its end (bounded by [`STEP`]); its exit code and its stdout and stderr joined.
fn run(name: &str, cmd: Command, stdin: Option<&str>) -> (Option<i32>, String) {
    let mut proc = Proc::spawn(name, cmd);
    if let Some(text) = stdin {
        proc.send_line(text);
    }
    proc.close_stdin();
    let status = proc.wait_exit(STEP);
    (
        status.code(),
        format!("{}\n{}", proc.stdout(), proc.stderr()),
    )
}

/// `toolhost claude-plugin --out <sandbox>/claude-plugin --plugins <sandbox plugins>`, as a new
/// user runs it; returns the plugin's folder.
fn write_plugin(sandbox: &Sandbox) -> PathBuf {
    let out = sandbox.path().join("claude-plugin");
    let mut cmd = sandbox.clean_command(&artifacts().toolhost, None);
    cmd.arg("claude-plugin")
        .arg("--out")
        .arg(&out)
        .arg("--plugins")
        .arg(sandbox.plugin_dir());
    let (code, output) = run("toolhost claude-plugin", cmd, None);
    assert_eq!(code, Some(0), "{output}");
    assert!(
        output.contains(&format!("claude --plugin-dir {}", out.display())),
        "{output}"
    );
    out
}

/// `claude ARGS` (a `claude plugin ...` command) in the sandbox: exit code and output.
fn claude(sandbox: &Sandbox, args: &[&str], stdin: Option<&str>) -> (Option<i32>, String) {
    let mut cmd = sandbox.clean_command(&sandbox.claude, None);
    cmd.args(args);
    run("claude", cmd, stdin)
}

/// One `claude -p PROMPT --output-format stream-json --verbose ARGS` run to a successful end:
/// its stream-json lines.
fn print_mode(sandbox: &Sandbox, fake: &FakeApi, prompt: &str, args: &[&str]) -> Vec<Value> {
    let mut cmd = sandbox.clean_command(&sandbox.claude, Some(fake));
    cmd.args(["-p", prompt, "--output-format", "stream-json", "--verbose"])
        .args(args);
    let mut proc = Proc::spawn("claude -p", cmd);
    proc.finish();
    proc.stdout_lines()
        .iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A multi-turn `claude -p` session reading user turns as stream-json on stdin.
fn session(sandbox: &Sandbox, fake: &FakeApi, args: &[&str]) -> Proc {
    let mut cmd = sandbox.clean_command(&sandbox.claude, Some(fake));
    cmd.args([
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
    ])
    .args(args);
    Proc::spawn("claude -p (stream-json)", cmd)
}

/// Sends a user turn and waits for its `result` line; returns the result's text.
fn turn(cli: &mut Proc, text: &str) -> String {
    cli.send_json(&user_turn(text));
    let result = cli.wait_json(&format!("the result of {text:?}"), STEP, |v| {
        v["type"] == "result"
    });
    result["result"].as_str().unwrap_or_default().to_string()
}

/// A `CALL` prompt of the fake's call policy.
fn call(calls: Value) -> String {
    format!("CALL {calls}")
}

/// Whether any system text of `req` holds `needle`.
fn has_context(req: &ApiRequest, needle: &str) -> bool {
    req.system_texts().iter().any(|t| t.contains(needle))
}

/// guard's refusal of a Bash command with `rm -rf`, as the model gets it.
const GUARD_REFUSAL: &str = "PreToolUse:Bash hook error: denied by guard: guard refuses Bash \
                             commands containing `rm -rf` (its deny list in toolhost.toml)";

#[track_caller]
fn assert_ok(result: &ToolResult, content: &str) {
    assert!(
        !result.is_error && result.content == content,
        "expected {content:?}: {result:?}"
    );
}

/// The `SessionStart:startup` hook's response line: the plugin's `hooks/event.sh` ran
/// `toolhost event` (that event has no MCP server to call).
#[track_caller]
fn assert_session_start_answered(lines: &[Value]) {
    let started = lines
        .iter()
        .find(|l| l["subtype"] == "hook_response" && l["hook_name"] == "SessionStart:startup")
        .unwrap_or_else(|| panic!("no SessionStart:startup hook response in {lines:#?}"));
    assert_eq!(started["exit_code"], 0, "{started}");
    assert_eq!(started["outcome"], "success", "{started}");
}

/// The `init` line's MCP servers.
fn mcp_servers(lines: &[Value]) -> Value {
    lines
        .iter()
        .find(|l| l["subtype"] == "init")
        .map(|l| l["mcp_servers"].clone())
        .unwrap_or_default()
}

cli_test!(
    /// A new user's flow with `--plugin-dir`: `claude plugin validate` accepts the written
    /// plugin; the model calls a tool of every example plugin and gets the right results;
    /// guard refuses `rm -rf` through Bash although Bash is allowed, and adds the branch; with
    /// Bash not allowed, the PermissionRequest hook reaches hooky's permission policy, which
    /// allows one command and refuses another.
    fn a_plugin_dir_session_has_every_plugin_and_its_hooks_and_policies() {
        let sandbox = sandbox(&["calc", "text", "notes", "guard", "hooky"]);
        let plugin = write_plugin(&sandbox);
        let dir = plugin.to_str().unwrap();
        let (code, output) = claude(&sandbox, &["plugin", "validate", dir], None);
        assert_eq!(code, Some(0), "{output}");
        assert!(output.contains("✔ Validation passed"), "{output}");

        let fake = FakeApi::call_policy();
        let marker = sandbox.work_dir().join("marker");
        let prompt = call(json!([
            ["Bash", {"command": "touch marker && rm -rf marker-dir"}],
            [tool("calc__add"), {"x": 2, "y": 3}],
            [tool("text__upper"), {"text": "abc"}],
            [tool("notes__add_note"), {"text": "Buy milk"}],
            [tool("notes__list_notes"), {}],
            // The hidden tool the hooks call is not the model's to call: a forged event.
            [tool("hook"), {"hook_event_name": "UserPromptSubmit", "text": {"prompt": "x"}}],
        ]));
        let allowed = format!("Bash,{TOOLS}");
        let lines = print_mode(
            &sandbox,
            &fake,
            &prompt,
            &["--plugin-dir", dir, "--allowedTools", &allowed],
        );
        assert_eq!(
            mcp_servers(&lines),
            json!([{"name": "plugin:toolhost:toolhost", "status": "connected", "source": "plugin"}])
        );
        assert_session_start_answered(&lines);
        let first = fake.request(0);
        for name in ["calc__add", "text__upper", "notes__add_note"] {
            assert!(first.offers(&tool(name)), "{:?}", first.tool_names());
        }
        assert!(!first.offers(&tool("hook")), "the hook tool is offered");
        assert!(
            has_context(&first, &branch_context()),
            "{:?}",
            first.system_texts()
        );
        let refused = fake.tool_result("toolu_01");
        assert!(refused.is_error, "{refused:?}");
        assert_eq!(refused.content, GUARD_REFUSAL);
        assert!(!marker.exists(), "the refused command ran");
        assert_ok(&fake.tool_result("toolu_02"), "5");
        assert_ok(&fake.tool_result("toolu_03"), "ABC");
        assert_ok(
            &fake.tool_result("toolu_04"),
            r#"{"id":1,"text":"Buy milk"}"#,
        );
        assert_ok(
            &fake.tool_result("toolu_05"),
            r#"{"notes":[{"id":1,"text":"Buy milk"}]}"#,
        );
        let forged = fake.tool_result("toolu_06");
        assert!(
            forged.is_error && forged.content.contains("No such tool available"),
            "{forged:?}"
        );

        // Bash not allowed: guard's PreToolUse has no opinion on these, so the CLI asks its
        // PermissionRequest hook, which the plugins' permission policies answer.
        let prompt = call(json!([
            ["Bash", {"command": "touch allowed # HOOKY_ALLOW"}],
            ["Bash", {"command": "touch denied # HOOKY_DENY"}],
            ["Bash", {"command": "touch nobody-decided"}],
        ]));
        let lines = print_mode(
            &sandbox,
            &fake,
            &prompt,
            &["--plugin-dir", dir, "--allowedTools", TOOLS],
        );
        let work = sandbox.work_dir();
        assert!(work.join("allowed").exists(), "{lines:#?}");
        assert!(!fake.tool_result("toolu_07").is_error);
        let denied = fake.tool_result("toolu_08");
        assert!(denied.is_error, "{denied:?}");
        assert_eq!(
            denied.content,
            "denied by hooky: hooky's policy refuses HOOKY_DENY"
        );
        assert!(!work.join("denied").exists());
        // No policy decided: the CLI's own answer in -p, a refusal.
        assert!(fake.tool_result("toolu_09").is_error);
        assert!(!work.join("nobody-decided").exists());
    }
);

cli_test!(
    /// Prompts and resources in `-p`: a plugin prompt typed as a slash command expands (the
    /// model gets its text); an @-mention of a resource attaches nothing (docs/protocol.md
    /// §15.3 says why), while the CLI's ReadMcpResourceTool reads it. The asserts on what
    /// does not work pin the CLI's behaviour: one that fails means the CLI changed, and
    /// §15.3 with it.
    fn prompts_expand_and_resources_are_read_by_tool_not_by_mention() {
        let sandbox = sandbox(&["notes"]);
        let plugin = write_plugin(&sandbox);
        let fake = FakeApi::call_policy();
        // The resource tools need no --allowedTools entry: the CLI asks no permission for them.
        let mut cli = session(
            &sandbox,
            &fake,
            &[
                "--plugin-dir",
                plugin.to_str().unwrap(),
                "--allowedTools",
                TOOLS,
            ],
        );
        let note = "Buy milk and eggs";
        turn(
            &mut cli,
            &call(json!([[tool("notes__add_note"), {"text": note}]])),
        );

        turn(
            &mut cli,
            "/mcp__plugin_toolhost_toolhost__notes__summarize 1 5",
        );
        let expanded = fake.last_request().last_user_text();
        assert!(
            expanded.contains(&format!(
                "Summarize this note in at most 5 words:\n\n{note}"
            )),
            "{expanded}"
        );

        let index = format!("- [1](notes://1): {note}");
        for mention in [
            "@plugin:toolhost:toolhost:notes://index",
            "@\"plugin:toolhost:toolhost:notes://index\"",
            "@toolhost:notes://index",
        ] {
            let n = fake.requests().len();
            turn(&mut cli, &format!("what does {mention} say?"));
            let asked = fake.request(n);
            assert!(
                asked.last_user_text().contains(mention),
                "{}",
                asked.last_user_text()
            );
            assert!(
                !asked.body.to_string().contains(&index),
                "{mention} was attached: update docs/protocol.md §15.3"
            );
        }

        // The model reads any of them with the CLI's resource tool, a note added after the
        // connection too, although the CLI's list of the server's resources stays the one
        // it got at the connection (a `notifications/resources/list_changed` refreshes
        // nothing), which is also the list an @-mention must find its URI in.
        let server = "plugin:toolhost:toolhost";
        turn(
            &mut cli,
            &call(json!([
                ["ReadMcpResourceTool", {"server": server, "uri": "notes://index"}],
                ["ReadMcpResourceTool", {"server": server, "uri": "notes://1"}],
                ["ListMcpResourcesTool", {}],
            ])),
        );
        // In completion order: by id.
        let results = fake.last_request().tool_results();
        assert_eq!(results.len(), 3, "{results:#?}");
        assert!(results.iter().all(|r| !r.is_error), "{results:#?}");
        let (read_index, read_note) = (fake.tool_result("toolu_02"), fake.tool_result("toolu_03"));
        assert!(read_index.content.contains(&index), "{read_index:?}");
        let text = format!("\"text\":\"{note}\"");
        assert!(read_note.content.contains(&text), "{read_note:?}");
        let listed = fake.tool_result("toolu_04").content;
        assert!(listed.contains("\"uri\":\"notes://index\""), "{listed}");
        assert!(
            !listed.contains("notes://1"),
            "the CLI listed the new note: update docs/protocol.md §15.3\n{listed}"
        );
        cli.finish();
    }
);

/// Sends the turns `prompt` makes (given their number) until the fake's last request of one
/// satisfies `done`: the server reloads on its own schedule (a file watcher).
fn probe_until(
    cli: &mut Proc,
    fake: &FakeApi,
    what: &str,
    prompt: impl Fn(usize) -> String,
    done: impl Fn(&ApiRequest) -> bool,
) {
    for probe in 0..40 {
        turn(cli, &prompt(probe));
        if done(&fake.last_request()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!("no turn showed {what}\n{}", cli.report());
}

cli_test!(
    /// A tool plugin and a hook plugin dropped into the folder mid-session: the next turns
    /// offer and call the new tools, and the new hooks answer from the next event (hooky adds
    /// its context to the prompt and rewrites the Bash command), with no restart. Once
    /// removed, the hooks are gone from the next event, and a call of a removed tool fails
    /// (the CLI still offers it: docs/protocol.md §15.3).
    fn plugins_added_mid_session_are_used_from_the_next_turn() {
        let sandbox = sandbox(&["calc", "guard"]);
        let plugin = write_plugin(&sandbox);
        let fake = FakeApi::call_policy();
        let allowed = format!("Bash,{TOOLS}");
        let mut cli = session(
            &sandbox,
            &fake,
            &[
                "--plugin-dir",
                plugin.to_str().unwrap(),
                "--allowedTools",
                &allowed,
            ],
        );
        let offered = turn(&mut cli, "before");
        assert!(offered.contains(&tool("calc__add")), "{offered}");
        assert!(!offered.contains(&tool("text__upper")), "{offered}");
        assert!(!has_context(&fake.last_request(), "hooky was here"));

        sandbox.add_plugin("text");
        sandbox.add_plugin("hooky");
        probe_until(
            &mut cli,
            &fake,
            "text's tools and hooky's context",
            |n| format!("probe {n}"),
            |req| req.offers(&tool("text__upper")) && has_context(req, "hooky was here"),
        );
        let calls = call(json!([
            [tool("text__upper"), {"text": "abc"}],
            ["Bash", {"command": "echo HOOKY_REWRITE"}],
        ]));
        turn(&mut cli, &calls);
        assert_ok(&fake.tool_result("toolu_01"), "ABC");
        assert_ok(&fake.tool_result("toolu_02"), "rewritten by hooky");

        sandbox.remove_plugin("text");
        sandbox.remove_plugin("hooky");
        let gone = |req: &ApiRequest| {
            let results = req.tool_results();
            results.len() == 2
                && results.iter().any(|r| r.content == "HOOKY_REWRITE")
                && results.iter().any(|r| {
                    r.is_error
                        && r.content
                            .contains(&format!("No such tool available: {}", tool("text__upper")))
                })
        };
        probe_until(
            &mut cli,
            &fake,
            "text and hooky gone",
            |_| calls.clone(),
            gone,
        );
        assert!(
            fake.last_request().offers(&tool("text__upper")),
            "the CLI stopped offering a removed tool: update docs/protocol.md §15.3"
        );
        cli.finish();
    }
);

/// A `toolhost` stand-in that notes each run (its arguments and how many
/// `CLAUDE_PLUGIN_OPTION_*` variables it got) in `log`, then runs the real one.
fn logging_toolhost(dir: &Path, log: &Path) -> PathBuf {
    let script = dir.join("toolhost-logged");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\n\
             echo \"$(env | grep -c '^CLAUDE_PLUGIN_OPTION_') $*\" >> '{}'\n\
             exec '{}' \"$@\"\n",
            log.display(),
            artifacts().toolhost.display()
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    }
    script
}

cli_test!(
    /// Installed for good in a scratch HOME, with the two commands the plugin prints: the
    /// install asks nothing when not interactive (the options stay unset), and a plain
    /// `claude -p` has the tools and guard's hooks (the plugin's defaults). Options set later
    /// with `claude plugin configure` reach both the server and the command hook.
    fn installed_for_good_a_plain_session_has_the_tools_and_guard() {
        let sandbox = sandbox(&["calc", "guard"]);
        let plugin = write_plugin(&sandbox);
        let dir = plugin.to_str().unwrap();
        let (code, output) = claude(&sandbox, &["plugin", "marketplace", "add", dir], None);
        assert_eq!(code, Some(0), "{output}");
        let (code, output) = claude(&sandbox, &["plugin", "install", "toolhost@toolhost"], None);
        assert_eq!(code, Some(0), "{output}");
        assert!(
            output.contains("Successfully installed plugin: toolhost@toolhost (scope: user)"),
            "{output}"
        );
        assert!(
            output.contains("3 userConfig options not yet set (2 required)"),
            "{output}"
        );
        let claude_dir = sandbox.path().join("home/.claude");
        let settings: Value =
            serde_json::from_str(&fs::read_to_string(claude_dir.join("settings.json")).unwrap())
                .unwrap();
        assert_eq!(settings["enabledPlugins"]["toolhost@toolhost"], true);
        assert_eq!(
            settings["extraKnownMarketplaces"]["toolhost"]["source"],
            json!({"source": "directory", "path": dir})
        );
        assert!(settings.get("pluginConfigs").is_none(), "{settings}");
        let installed: Value = serde_json::from_str(
            &fs::read_to_string(claude_dir.join("plugins/installed_plugins.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            installed["plugins"]["toolhost@toolhost"][0]["scope"],
            "user"
        );

        let fake = FakeApi::call_policy();
        let prompt = call(json!([
            ["Bash", {"command": "rm -rf marker-dir"}],
            [tool("calc__add"), {"x": 2, "y": 3}],
        ]));
        let allowed = format!("Bash,{TOOLS}");
        let lines = print_mode(&sandbox, &fake, &prompt, &["--allowedTools", &allowed]);
        assert_session_start_answered(&lines);
        assert_eq!(fake.tool_result("toolu_01").content, GUARD_REFUSAL);
        assert_ok(&fake.tool_result("toolu_02"), "5");
        assert!(has_context(&fake.request(0), &branch_context()));

        // The user's own choices: another binary (this stand-in) and folder.
        let log = sandbox.path().join("toolhost.log");
        let binary = logging_toolhost(sandbox.path(), &log);
        let folder = sandbox.path().join("other-plugins");
        fs::create_dir_all(&folder).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            fs::set_permissions(&folder, fs::Permissions::from_mode(0o755)).unwrap();
        }
        let text = artifacts().plugin_dir.join(toolhost_e2e::lib_name("text"));
        fs::copy(text, folder.join(toolhost_e2e::lib_name("text"))).unwrap();
        let values = json!({"toolhost": binary, "plugins": folder}).to_string();
        let (code, output) = claude(
            &sandbox,
            &["plugin", "configure", "toolhost@toolhost", "--values-stdin"],
            Some(&values),
        );
        assert_eq!(code, Some(0), "{output}");
        let n = fake.requests().len();
        let lines = print_mode(&sandbox, &fake, "which tools?", &[]);
        assert_session_start_answered(&lines);
        let offered = fake.request(n).mcp_tool_names();
        assert!(offered.contains(&tool("text__upper")), "{offered:?}");
        assert!(!offered.contains(&tool("calc__add")), "{offered:?}");
        let log = fs::read_to_string(&log).unwrap();
        let folder = folder.display();
        // The server gets the options substituted in `.mcp.json`; the command hook
        // (SessionStart, SessionEnd) sees them as CLAUDE_PLUGIN_OPTION_TOOLHOST and _PLUGINS.
        assert!(
            log.lines()
                .any(|l| l == format!("0 serve --plugins {folder}")),
            "{log}"
        );
        let events = log
            .lines()
            .filter(|l| *l == format!("2 event --plugins {folder}"))
            .count();
        assert_eq!(events, 2, "{log}");
    }
);

cli_test!(
    /// The hooks fail closed: when the plugin's server cannot start (here a plugin folder
    /// others may write, which `serve` refuses), every tool call the PreToolUse hook guards is
    /// refused with the CLI's `onFailure: "block"` message pointing at `/mcp`, and nothing
    /// runs; guard is not there to check, so nothing may pass unchecked.
    fn a_server_that_cannot_start_refuses_every_tool_call() {
        let sandbox = sandbox(&["calc", "guard"]);
        let plugin = write_plugin(&sandbox);
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(sandbox.plugin_dir(), fs::Permissions::from_mode(0o777)).unwrap();
        }
        let fake = FakeApi::call_policy();
        let marker = sandbox.work_dir().join("marker");
        let prompt = call(json!([["Bash", {"command": "touch marker"}]]));
        let lines = print_mode(
            &sandbox,
            &fake,
            &prompt,
            &[
                "--plugin-dir",
                plugin.to_str().unwrap(),
                "--allowedTools",
                "Bash",
            ],
        );
        let servers = mcp_servers(&lines);
        assert_eq!(servers[0]["name"], "plugin:toolhost:toolhost", "{servers}");
        assert_ne!(servers[0]["status"], "connected", "{servers}");
        let refused = fake.tool_result("toolu_01");
        assert!(refused.is_error, "{refused:?}");
        assert!(
            refused
                .content
                .contains("[plugin:toolhost:toolhost/hook]: failed; blocking")
                && refused.content.contains("/mcp"),
            "{refused:?}"
        );
        assert!(!marker.exists(), "the unchecked command ran");
    }
);

cli_test!(
    /// Issue 37 item 14: after putting in the options, the CLI expands `${NAME}` in
    /// `.mcp.json` (`claude mcp list` shows what it runs), with no escape: a plugin folder
    /// named with `${...}` is served as another folder, or not at all. So `toolhost
    /// claude-plugin` refuses such paths, and writes nothing.
    fn the_cli_expands_variables_in_the_options_so_such_paths_are_refused() {
        let sandbox = sandbox(&["calc"]);
        let plugin = write_plugin(&sandbox);
        let manifest = plugin.join(".claude-plugin/plugin.json");
        let folder = sandbox.plugin_dir().to_str().unwrap().to_string();
        let (parent, name) = folder.rsplit_once('/').unwrap();
        let text = fs::read_to_string(&manifest).unwrap();
        let default = format!("\"default\": {}", json!(folder));
        assert!(text.contains(&default), "{text}");
        let named = format!(
            "\"default\": {}",
            json!(format!("{parent}/${{E2E_FOLDER}}"))
        );
        fs::write(&manifest, text.replace(&default, &named)).unwrap();
        let mut cmd = sandbox.clean_command(&sandbox.claude, None);
        cmd.arg("--plugin-dir")
            .arg(&plugin)
            .args(["mcp", "list"])
            .env("E2E_FOLDER", name);
        let (_, output) = run("claude mcp list", cmd, None);
        assert!(
            output.contains(&format!("serve --plugins {folder} - ✔ Connected")),
            "{output}"
        );

        let odd = sandbox.path().join("${E2E_FOLDER}");
        fs::create_dir(&odd).unwrap();
        let out = sandbox.path().join("refused-plugin");
        let mut cmd = sandbox.clean_command(&artifacts().toolhost, None);
        cmd.arg("claude-plugin")
            .arg("--out")
            .arg(&out)
            .arg("--plugins")
            .arg(&odd);
        let (code, output) = run("toolhost claude-plugin", cmd, None);
        assert_ne!(code, Some(0), "{output}");
        assert!(
            output.contains("holds `${`, which Claude Code expands"),
            "{output}"
        );
        assert!(!out.exists(), "nothing is written");
    }
);

cli_test!(
    /// Issue 40: the C-ABI examples (C, and Go and Zig where their compilers are: always
    /// under CI) in the user's own `claude` through the written plugin: the model calls their
    /// tools and gets their exact results, an error result of theirs is an error, it reads
    /// their resources with the CLI's resource tool, and their PreToolUse hook refuses
    /// `rm -rf` through Bash although Bash is allowed (the first deny in plugin-name order
    /// is hello_c's).
    fn c_abi_plugins_serve_the_user_s_claude_through_the_plugin() {
        let examples = toolhost_test_support::foreign::examples();
        let sandbox = Sandbox::new(&[]);
        for e in &examples {
            sandbox.put_plugin_file(&e.file, &toolhost_e2e::lib_name(e.name));
        }
        let plugin = write_plugin(&sandbox);
        let fake = FakeApi::call_policy();
        let marker = sandbox.work_dir().join("marker");
        let server = "plugin:toolhost:toolhost";
        let mut calls = vec![json!(["Bash", {"command": "touch marker && rm -rf marker-dir"}])];
        for e in &examples {
            let named = |t: &str| tool(&format!("{}__{t}", e.name));
            calls.extend([
                json!([named("add"), {"a": 2, "b": 3.5}]),
                json!([named("echo"), {"text": format!("hi from {}", e.name)}]),
                json!([named("read_file"), {"path": "/nonexistent"}]),
                json!(["ReadMcpResourceTool", {"server": server, "uri": e.uri}]),
            ]);
        }
        let allowed = format!("Bash,{TOOLS}");
        let lines = print_mode(
            &sandbox,
            &fake,
            &call(Value::Array(calls)),
            &[
                "--plugin-dir",
                plugin.to_str().unwrap(),
                "--allowedTools",
                &allowed,
            ],
        );
        assert_eq!(
            mcp_servers(&lines),
            json!([{"name": server, "status": "connected", "source": "plugin"}])
        );
        let refused = fake.tool_result("toolu_01");
        assert!(refused.is_error, "{refused:?}");
        assert_eq!(
            refused.content,
            "PreToolUse:Bash hook error: denied by hello_c: hello_c does not let rm -rf run"
        );
        assert!(!marker.exists(), "the refused command ran");
        for (i, e) in examples.iter().enumerate() {
            let id = |n: usize| format!("toolu_{:02}", 2 + 4 * i + n);
            let name = e.name;
            // The CLI shows the model a structured result as its structuredContent.
            assert_ok(&fake.tool_result(&id(0)), r#"{"sum":5.5}"#);
            assert_ok(&fake.tool_result(&id(1)), &format!("hi from {name}"));
            let failed = fake.tool_result(&id(2));
            assert!(failed.is_error, "{name}: {failed:?}");
            assert_eq!(failed.content, "cannot open the file", "{name}");
            let read = fake.tool_result(&id(3));
            assert!(!read.is_error, "{name}: {read:?}");
            assert!(read.content.contains(e.greeting), "{name}: {read:?}");
        }
    }
);
